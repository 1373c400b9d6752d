// Training memory per GPU. Each block cites the section of docs/model/memory.md it mirrors.
#include "gpuplan/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace gpuplan {

namespace {

std::string Fmt(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b, c, d);
  return buf;
}

bool IsLora(const Job& j) {
  return IsAdapterMethod(j.training.method);
}

// §2.4 QLoRA: NF4 (4 bits) + double-quantized constants: 8-bit absmax per 64 weights and an
// fp32 constant per 256 blocks -> 8/64 + 32/(64*256) bits (Dettmers et al. 2023 §3).
constexpr double kNf4BytesPerParam = 0.5;
constexpr double kNf4ConstBytesPerParam = (8.0 / 64.0 + 32.0 / (64.0 * 256.0)) / 8.0;
// §2.4 GPTQ / AWQ (AutoGPTQ, AutoAWQ packing at group size 128): 4-bit qweight, an fp16 scale and
// a 4-bit zero point per group of 128 weights -> 0.5 + (2 + 0.5) / 128 B.
constexpr double kGroup4BytesPerParam = 0.5 + (2.0 + 0.5) / 128.0;
// §2.4 bitsandbytes LLM.int8 (Dettmers et al. 2022 §3.2): int8 weights and one fp32 absmax per
// output row (4 B / d_in per weight, d_in = hidden).
constexpr double kInt8BytesPerParam = 1.0;

// §2.4 bytes per weight of a quantized frozen linear (with its constants); `hidden` for the
// per-row constants of int8.
double QuantBytesPerParam(BaseQuant q, double hidden) {
  switch (q) {
    case BaseQuant::kNf4: return kNf4BytesPerParam + kNf4ConstBytesPerParam;
    case BaseQuant::kGptq:
    case BaseQuant::kAwq: return kGroup4BytesPerParam;
    case BaseQuant::kInt8: return kInt8BytesPerParam + 4.0 / std::max(1.0, hidden);
  }
  return kNf4BytesPerParam + kNf4ConstBytesPerParam;
}

// §5 PyTorch CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): requests above
// kMinLargeAlloc (10 MiB) are rounded up to kRoundLarge (2 MiB): half a 2 MiB page lost per
// such tensor on average; smaller ones share 2 MiB / 20 MiB segments at 512 B granularity.
constexpr double kMinLargeAllocBytes = 10.0 * 1024 * 1024;
constexpr double kRoundLargeBytes = 2.0 * 1024 * 1024;

// The adapted projections of one dense layer: sum of output widths (DoRA's magnitude vectors and
// its extra saved outputs) and the largest d_in x d_out (DoRA's combined weight), per TP rank.
struct AdaptedDims {
  double out_sum = 0;
  double largest_matrix = 0;
  int count = 0;
};
AdaptedDims AdaptedProjections(const Job& job) {
  const Arch& a = job.arch;
  const double h = static_cast<double>(a.hidden), f = static_cast<double>(a.Ffn());
  const double t = static_cast<double>(job.parallel.tp);
  struct Proj { const char* name; double d_in, d_out; };
  const Proj projs[] = {{"q_proj", h, static_cast<double>(a.QDim())}, {"k_proj", h, static_cast<double>(a.KvDim())},
                        {"v_proj", h, static_cast<double>(a.VDim())}, {"o_proj", static_cast<double>(a.ODim()), h},
                        {"gate_proj", h, a.GatedMlp() ? f : 0.0},     {"up_proj", h, f},
                        {"down_proj", f, h}};
  AdaptedDims d;
  for (const auto& p : projs) {
    if (p.d_out <= 0) continue;
    bool on = false;
    for (const auto& tgt : job.training.lora.targets) on = on || tgt == p.name || tgt == "all-linear";
    if (!on) continue;
    ++d.count;
    d.out_sum += p.d_out / t;
    d.largest_matrix = std::max(d.largest_matrix, p.d_in * p.d_out / t);
  }
  return d;
}

struct StageParams {
  double dense = 0;   // parameters on this GPU that shard over dp*cp (after TP/PP split)
  double expert = 0;  // routed-expert parameters on this GPU (shard over dp*cp/ep)
  double linear = 0;  // of which: matrices of linear layers (quantizable by QLoRA)
  double layer = 0;   // one transformer layer's parameters on this GPU (for gather buffers)
  double largest_matrix = 0;
  int64_t layers = 0;
  int64_t moe_layers = 0;
};

// §1.2: what one GPU holds after tensor, pipeline and expert parallelism.
StageParams ParamsOnGpu(const Job& job, int stage) {
  const Arch& a = job.arch;
  const ParamCounts pc = CountParams(a);
  const double t = static_cast<double>(job.parallel.tp);
  const int64_t pp = job.parallel.pp;
  const double ep = static_cast<double>(job.parallel.ep);
  StageParams sp;
  sp.layers = (a.layers + pp - 1) / pp;  // uneven splits: the fuller stages hold ceil(L/pp)
  // Dense layers come first (DeepSeek-style); count the MoE layers that fall on this stage.
  const int64_t first = std::min<int64_t>(a.layers - sp.layers, stage * sp.layers), last = first + sp.layers;
  const int64_t dense_end = a.layers - a.MoeLayers();
  sp.moe_layers = std::max<int64_t>(0, last - std::max(first, dense_end));
  const int64_t dense_layers = sp.layers - sp.moe_layers;
  const double attn = pc.attn_per_layer / t, norm = static_cast<double>(pc.norm_per_layer);
  const double dense_layer = attn + pc.dense_mlp_per_layer / t + norm;
  const double moe_nonexpert = attn + norm + pc.router_per_layer + pc.shared_expert_per_layer / t;
  const double experts = pc.expert_per_layer / (ep * t);
  sp.dense = dense_layers * dense_layer + sp.moe_layers * moe_nonexpert;
  sp.expert = sp.moe_layers * experts;
  sp.linear = dense_layers * (attn + pc.dense_mlp_per_layer / t) +
              sp.moe_layers * (attn + pc.shared_expert_per_layer / t + experts);
  sp.layer = sp.moe_layers > 0 ? moe_nonexpert + experts : dense_layer;
  sp.largest_matrix =
      std::max(static_cast<double>(a.hidden) * a.Ffn(), static_cast<double>(a.hidden) * a.QDim()) / t;
  if (stage == 0) sp.dense += pc.embedding / t;
  if (stage == pp - 1) {
    sp.dense += pc.final_norm;
    // A tied head on a different stage than the embedding keeps its own copy (Megatron).
    if (!a.tied_embeddings) sp.dense += pc.lm_head / t;
    else if (pp > 1) sp.dense += static_cast<double>(a.vocab) * a.hidden / t;
  }
  return sp;
}

// §5 rounding of model-state tensors. Torch optimizers keep one state tensor per parameter and
// FSDP2 one shard per parameter; each above 10 MiB sits in a 2 MiB-rounded block and loses on
// average 1 MiB. Flat buffers (DeepSpeed ZeRO-1/2 partitions, Megatron's distributed optimizer)
// lose nothing. Counted per linear matrix of the layers on this GPU (the bulk of the tensors).
double StaticRoundingBytes(const Job& job, const StageParams& sp, double shard) {
  const Arch& a = job.arch;
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  const double mats = static_cast<double>(sp.layers) * (4 + (a.GatedMlp() ? 3 : 2));
  if (mats <= 0 || sp.linear <= 0) return 0;
  const double per_matrix = sp.linear / mats;  // parameters of an average matrix on this GPU
  auto lost = [&](double bytes_per_param, bool sharded, double copies) {
    const double tensor = per_matrix * bytes_per_param / (sharded ? shard : 1.0);
    return tensor > kMinLargeAllocBytes ? copies * mats * kRoundLargeBytes / 2 : 0.0;
  };
  const double wb = WeightBytesPerParam(job);
  if (IsAdapterMethod(tr.method)) {
    const double qb = tr.method == Method::kQlora ? QuantBytesPerParam(tr.quant, static_cast<double>(a.hidden)) : wb;
    return lost(qb, par.zero >= 3, 1);
  }
  double r = 0;
  if (par.offload != Offload::kOptimizerParams) r += lost(wb, par.zero >= 3, 1);
  if (!tr.optimizer_in_backward) r += lost(GradBytesPerParam(job), par.zero >= 3, 1);
  if (par.offload == Offload::kNone && (par.zero == 0 || par.zero >= 3) && tr.optimizer != Optimizer::kPagedAdamW8bit) {
    const bool pure = tr.master_weights == MasterWeights::kNone || tr.precision == Precision::kFp32;
    const double state = pure ? wb : 4;
    if (!pure) r += lost(4, par.zero >= 3, 1);  // fp32 master
    switch (tr.optimizer) {
      case Optimizer::kAdamW: r += lost(state, par.zero >= 3, 2); break;
      case Optimizer::kAdamW8bit: r += lost(1, par.zero >= 3, 2); break;
      case Optimizer::kSgd: r += lost(state, par.zero >= 3, 1); break;
      default: break;
    }
  }
  return r;
}

// §3.1 norms: LayerNorm (fused) keeps its input, the next linear keeps its output: 2 x sbh.
// RMSNorm as written in Llama-style code (x * rsqrt(mean(x^2)) * w) also keeps x-hat: 3 x sbh.
double NormSavedPerToken(const Arch& a) { return a.norm == NormKind::kLayerNorm ? 2.0 : 3.0; }
double NormStatsBytesPerToken(const Arch& a) { return a.norm == NormKind::kLayerNorm ? 8.0 : 4.0; }

double ShardDp(const Job& job) { return static_cast<double>(job.parallel.dp * job.parallel.cp); }
double ShardExpert(const Job& job) {
  return std::max(1.0, ShardDp(job) / static_cast<double>(job.parallel.ep));
}

}  // namespace

double ActivationBytesPerElement(Precision p) { return p == Precision::kFp32 ? 4.0 : 2.0; }

// §2.1 (ZeRO paper §3.1: mixed precision keeps fp16/bf16 weights and gradients and an fp32
// master copy with Adam's m and v: 2 + 2 + 12 = 16 bytes per parameter).
double WeightBytesPerParam(const Job& j) { return j.training.precision == Precision::kFp32 ? 4 : 2; }
double GradBytesPerParam(const Job& j) {
  return (j.training.precision == Precision::kFp32 || j.training.fp32_grads) ? 4 : 2;
}
double OptimizerBytesPerParam(const Job& j) {
  // master_weights none (torchtune's single-device bf16 recipes, litgpt bf16-true): no fp32
  // master, and torch optimizers create their states like the parameter (zeros_like): 16-bit.
  const bool pure = j.training.precision != Precision::kFp32 && j.training.master_weights == MasterWeights::kNone;
  const double master = j.training.precision == Precision::kFp32 || pure ? 0 : 4;  // fp32 master copy
  const double state = pure ? WeightBytesPerParam(j) : 4;  // one full-size optimizer state
  switch (j.training.optimizer) {
    case Optimizer::kAdamW: return master + 2 * state;  // m, v
    case Optimizer::kAdamW8bit: return master + 2;  // m, v in 8 bits (bitsandbytes, blockwise)
    case Optimizer::kPagedAdamW8bit: return master + 2;  // same states, in pageable unified memory
    // Adafactor (Shazeer & Stern 2018 §3, HF default beta1=None): no first moment, the second
    // moment factored into a row and a column vector per matrix: O(rows + cols), ~0 per param.
    case Optimizer::kAdafactor: return master;
    case Optimizer::kSgd: return master + state;    // momentum
  }
  return master + 2 * state;
}

// §3: saved activations of one layer for one micro-batch.
LayerActivation LayerActivationBytes(const Job& job, bool moe_layer) {
  const Arch& a = job.arch;
  const TrainingSpec& tr = job.training;
  const double t = static_cast<double>(job.parallel.tp);
  const double s_local = static_cast<double>(tr.seq_len) / job.parallel.cp;
  const double s_full = static_cast<double>(tr.seq_len);
  const double b = static_cast<double>(tr.micro_batch);
  const double ab = ActivationBytesPerElement(tr.precision);
  const double rep = job.parallel.sequence_parallel ? t : 1.0;  // replicated across TP unless SP
  const double sb = s_local * b;
  const double sbh = sb * a.hidden;
  const bool flash = tr.flash_attention;
  const double heads_local = a.heads / t;

  // §3.1 attention block
  const double norms = static_cast<double>(a.norms_per_layer);      // 2; Gemma 2/3: 4
  const double norm_io = norms * NormSavedPerToken(a) * sbh / rep * ab;  // per norm: input, output[, x-hat]
  const double norm_stats = norms * NormStatsBytesPerToken(a) * sb / rep;  // fp32 rstd (+ mean)
  const double q = sb * a.QDim() / t * ab;
  // k and v (their own widths under MLA); eager attention repeats GQA kv heads to every q head.
  const double kv = sb * (flash ? a.KvDim() + a.VDim() : a.QDim() + a.ODim()) / t * ab;
  const double ctx = sb * a.ODim() / t * ab;                        // o_proj input / attention output
  // q/k norms (Qwen3, Gemma 3): the pre-norm q and k and x-hat, fp32 rstd per head.
  const double qk_norm = a.qk_norm ? (NormSavedPerToken(a) - 1) * sb * (a.QDim() + a.KvDim()) / t * ab +
                                         4 * sb * (a.heads + a.KvHeads()) / t
                                   : 0;
  // MLA latents (replicated across TP): the kv latent and the shared rotary key, the q latent,
  // each latent's norm tensors.
  const double mla = a.IsMla() ? (sb * (a.kv_lora_rank + a.qk_rope_head_dim + a.q_lora_rank) +
                                  NormSavedPerToken(a) * sb * (a.kv_lora_rank + a.q_lora_rank)) * ab
                               : 0;
  // Eager softmax runs in fp32 and keeps its output; a 16-bit run also keeps the cast copy.
  const double score_bytes = 4 + (ab < 4 ? ab : 0);
  const double scores = flash ? 0 : heads_local * s_local * s_full * b * score_bytes;
  const double lse = flash ? heads_local * sb * 4 : 0;              // flash: fp32 log-sum-exp
  double dropout = 0, dropout_scores = 0;
  if (a.dropout) {
    dropout = 2 * sbh / rep * 1;                                    // two 1-byte masks
    if (!flash) dropout_scores = heads_local * s_local * s_full * b * (1 + ab);  // mask + output
  }
  // §3.2 MLP block
  const double per_expert_factor = a.GatedMlp() ? 4 : 2;  // swiglu/geglu: gate, up, act, product
  double mlp = 0;
  if (moe_layer) {
    const double k = static_cast<double>(a.experts_per_token);
    mlp = (k + a.shared_experts) * per_expert_factor * sb * a.MoeFfn() / t * ab  // expert intermediates
          + k * sbh / rep * ab                                                   // permuted inputs
          + sb * a.experts * 4;                                                  // fp32 router logits
  } else {
    mlp = per_expert_factor * sb * a.Ffn() / t * ab;
  }
  // §3.3 LoRA adapters: the rank-r intermediate of every adapted projection.
  double lora = 0;
  if (IsAdapterMethod(job.training.method)) {
    int targets = 0;
    for (const auto& name : {"q_proj", "k_proj", "v_proj", "linear_qkv", "o_proj", "gate_proj", "up_proj", "linear_fc1", "down_proj"})
      targets += LoraTargets(job.training.lora, name) ? 1 : 0;
    lora = targets * sb * tr.lora.rank * ab;
    // §3.3 DoRA (PEFT's DoraLinearLayer): the output is rescaled by the magnitude over the
    // (detached) weight norm, (m/||W'|| - 1) * base + m/||W'|| * lora * scale: the product saves
    // the base output and the adapter output of every adapted projection, 2 x sb x d_out.
    if (tr.method == Method::kDora) lora += 2 * sb * AdaptedProjections(job).out_sum * ab;
  }

  LayerActivation out;
  // §4 sequence parallelism (Korthikanti et al. 2022 §4.2.2): backward all-gathers the sharded
  // inputs of the column-parallel linears again (attention and MLP input, s x b x h each) and
  // the row-parallel outputs are full-sequence partial sums before their reduce-scatter.
  if (job.parallel.sequence_parallel && t > 1) out.sp_gather_bytes = 3 * sbh * ab * (1 - 1 / t);
  out.full_bytes =
      norm_io + norm_stats + q + kv + ctx + qk_norm + mla + scores + lse + dropout + dropout_scores + mlp + lora;
  switch (tr.recompute) {
    case Recompute::kNone:
      out.saved_bytes = out.full_bytes;
      break;
    case Recompute::kSelective:
      if (!flash) {
        // Korthikanti et al. 2022 §4.2: recompute the attention core (the s^2 terms) only.
        out.saved_bytes = out.full_bytes - scores - dropout_scores;
      } else {
        // §3.4 op-level selective checkpointing (torchtitan): keep the layer input, the
        // attention output and every other matmul output; recompute norms and pointwise ops.
        std::vector<double> mm = {sb * a.QDim() / t, sb * a.KvDim() / t, sb * a.VDim() / t,
                                  sbh / rep};
        const double f = moe_layer ? a.MoeFfn() * (a.experts_per_token + a.shared_experts) : a.Ffn();
        if (a.GatedMlp()) mm.push_back(sb * f / t);
        mm.push_back(sb * f / t);
        mm.push_back(sbh / rep);
        double kept = 0;
        for (size_t i = 0; i < mm.size(); i += 2) kept += mm[i];
        out.saved_bytes = (sbh / rep + kept) * ab + ctx + lse + lora + dropout;
      }
      break;
    case Recompute::kFull:
      // Only the layer input is kept (Korthikanti et al. 2022 §4.1: 2sbh per layer).
      out.saved_bytes = sbh / rep * ab;
      break;
  }
  return out;
}

namespace {

// The per-framework facts of data/frameworks.csv the memory model reads (framework.<name>.loss,
// the default cross-entropy kind, and framework.<name>.mem_*), their keys built once (no string
// is built per estimate).
struct FrameworkMemKeys {
  std::string loss_kind, loss_chunks, loss_standard_bytes;
};
const FrameworkMemKeys& MemKeys(Framework f) {
  static const std::vector<FrameworkMemKeys> keys = [] {
    std::vector<FrameworkMemKeys> out;
    for (const auto& n : FrameworkNames()) {
      const std::string p = "framework." + n + ".";
      out.push_back({p + "loss", p + "mem_loss_chunks", p + "mem_loss_standard_bytes_per_logit"});
    }
    return out;
  }();
  return keys[static_cast<size_t>(f)];
}

// A LossKind from its data code (1 standard, 2 chunked, 3 fused: data/frameworks.csv).
LossKind LossFromCode(double code) {
  return code >= 2.5 ? LossKind::kFused : code >= 1.5 ? LossKind::kChunked : LossKind::kStandard;
}

// The data/calibration.csv constants of this page, resolved once for the built-in calibration
// (the search calls EstimateMemory millions of times: no map lookup per call) and per call for
// any other (a user's --calibration copy).
struct MemoryConstants {
  double cuda_context_bytes, nccl_buffers_bytes, fragmentation, state_fragmentation;
  double zero3_prefetch_layers, zero_bucket_elements, loss_chunks;
};
MemoryConstants ResolveMemoryConstants(const Calibration& cal) {
  return {cal.Get("cuda_context_bytes"),    cal.Get("nccl_buffers_bytes"),   cal.Get("allocator_fragmentation"),
          cal.Get("allocator_state_fragmentation"), cal.Get("zero3_prefetch_layers"), cal.Get("zero_bucket_elements"),
          cal.Get("loss_chunks")};
}
const MemoryConstants& ConstantsFor(const Calibration& cal, MemoryConstants& scratch) {
  static const MemoryConstants builtin = ResolveMemoryConstants(Calibration::Builtin());
  if (&cal == &Calibration::Builtin()) return builtin;
  scratch = ResolveMemoryConstants(cal);
  return scratch;
}

}  // namespace

namespace {
LossMemory ResolveLoss(const Job& job, const Calibration& cal, const MemoryConstants& kc) {
  const TrainingSpec& tr = job.training;
  const double ab = ActivationBytesPerElement(tr.precision);
  LossMemory l;
  l.kind = tr.loss;
  const bool generic = tr.framework == Framework::kGeneric;
  const FrameworkMemKeys* k = generic ? nullptr : &MemKeys(tr.framework);
  if (l.kind == LossKind::kAuto) l.kind = k && cal.Has(k->loss_kind) ? LossFromCode(cal.Get(k->loss_kind)) : LossKind::kStandard;
  switch (l.kind) {
    case LossKind::kAuto:
    case LossKind::kStandard:
      if (tr.compile) {
        // torch.compile fuses log_softmax + nll: the fp32 input is saved, backward writes one
        // fp32 gradient and its 16-bit cast.
        l.saved_bytes_per_logit = 4;
        l.transient_bytes_per_logit = 4 + ab;
      } else {
        // eager: fp32 log-probabilities saved; in backward the nll gradient and the
        // log_softmax input gradient (two fp32 logit-sized tensors) are live with them.
        const double peak = k && cal.Has(k->loss_standard_bytes) ? cal.Get(k->loss_standard_bytes) : 12.0;
        l.saved_bytes_per_logit = std::min(4.0, peak);
        l.transient_bytes_per_logit = peak - l.saved_bytes_per_logit;
      }
      break;
    case LossKind::kChunked: {
      // the 16-bit logits of every chunk are kept; fp32 (log-probs + two gradients) for one
      // chunk at a time.
      const double chunks = k && cal.Has(k->loss_chunks) ? cal.Get(k->loss_chunks) : kc.loss_chunks;
      l.chunks = std::max(1.0, chunks);
      l.saved_bytes_per_logit = ab;
      l.transient_bytes_per_logit = 12.0 / l.chunks;
      break;
    }
    case LossKind::kFused:
      // the 16-bit logits, the gradient written in place (Unsloth's fast cross-entropy); Liger's
      // fused linear cross-entropy holds even less (a chunk).
      l.saved_bytes_per_logit = 0;
      l.transient_bytes_per_logit = ab;
      break;
  }
  return l;
}
}  // namespace

LossMemory ResolveLossMemory(const Job& job, const Calibration& cal) {
  MemoryConstants scratch;
  return ResolveLoss(job, cal, ConstantsFor(cal, scratch));
}

MemoryBreakdown EstimateMemoryForStage(const Job& job, int stage, const Calibration& cal, bool detail) {
  MemoryBreakdown m;
  const Arch& a = job.arch;
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  const StageParams sp = ParamsOnGpu(job, stage);
  const ParamCounts pc = CountParams(a);
  m.stage = stage;
  m.total_params = pc.total;
  m.params_on_gpu = sp.dense + sp.expert;
  const double shard = ShardDp(job), eshard = ShardExpert(job);
  const double wb = WeightBytesPerParam(job), gb = GradBytesPerParam(job), ob = OptimizerBytesPerParam(job);
  const double t = static_cast<double>(par.tp);
  const bool paged = tr.optimizer == Optimizer::kPagedAdamW8bit;
  MemoryConstants scratch;
  const MemoryConstants& kc = ConstantsFor(cal, scratch);
  // Explanations are built only when asked for (the search calls this millions of times).
#define ADD(cat, name, bytes, formula) \
  do {                                  \
    if (detail && (bytes) > 0) m.items.push_back({cat, name, bytes, formula}); \
  } while (0)
  // §2.2 ZeRO: stage 1 shards optimizer states, 2 also gradients, 3 also weights, over dp*cp.
  auto sharded = [&](double bytes_per_param, int from_stage) {
    const bool on = par.zero >= from_stage;
    return bytes_per_param * (sp.dense / (on ? shard : 1.0) + sp.expert / (on ? eshard : 1.0));
  };
  const char* zero_note = par.zero > 0 ? " / (dp*cp) under ZeRO" : "";
  // §2.5 optimizer in backward: each parameter's step runs as soon as its gradient is reduced
  // (torchtune optimizer_in_bwd), so one layer's gradients (or the embedding's) are live at once.
  const double in_bwd_params = std::max(sp.layer, static_cast<double>(a.vocab) * a.hidden / t);
  double optimizer_paged = 0;  // optimizer bytes in unified memory (outside the caching allocator)
  double stored_bytes_per_param = wb;  // of the weights as stored (a quantized base: its average)

  if (!IsLora(job)) {
    m.trainable_params = pc.total;
    if (par.offload == Offload::kOptimizerParams) {
      m.host_bytes += sharded(wb, 3);
    } else {
      m.weights_bytes = sharded(wb, 3);
      ADD("weights", "weights (" + ToString(tr.precision == Precision::kFp32 ? Precision::kFp32 : Precision::kBf16) + ")",
          m.weights_bytes, Fmt("%.0f B x %.4g params", wb, sp.dense + sp.expert) + (par.zero >= 3 ? zero_note : ""));
    }
    if (tr.optimizer_in_backward) {
      m.gradients_bytes = gb * in_bwd_params / (par.zero >= 2 ? shard : 1.0);
      ADD("gradients", "gradients of one layer (optimizer step in backward)", m.gradients_bytes,
          Fmt("%.0f B x %.4g params (the largest of a layer and the embedding)", gb, in_bwd_params));
    } else {
      m.gradients_bytes = sharded(gb, 2);
      ADD("gradients", gb == 4 ? "gradients (fp32)" : "gradients (16-bit)", m.gradients_bytes,
          Fmt("%.0f B x %.4g params", gb, sp.dense + sp.expert) + (par.zero >= 2 ? zero_note : ""));
    }
    const double opt = sharded(ob, 1);
    if (par.offload != Offload::kNone) {
      m.host_bytes += opt;
    } else {
      m.optimizer_bytes = opt;
      if (paged) optimizer_paged = opt;
      const bool master = wb == 2 && tr.master_weights == MasterWeights::kFp32;
      ADD("optimizer", "optimizer states (" + ToString(tr.optimizer) + (master ? ", fp32 master" : "") + (paged ? ", paged" : "") + ")",
          opt, Fmt("%.4g B x %.4g params", ob, sp.dense + sp.expert) + (par.zero >= 1 ? zero_note : ""));
    }
  } else {
    // §2.4 LoRA: frozen base in the compute dtype (QLoRA: quantized linears), trainable adapters
    // with their optimizer state (DoRA adds a magnitude vector per adapted projection).
    const double base_div = par.zero >= 3 ? shard : 1.0;
    const double params_gpu = sp.dense + sp.expert;
    double base = 0;
    if (tr.method == Method::kQlora) {
      const double qb = QuantBytesPerParam(tr.quant, static_cast<double>(a.hidden));
      base = sp.linear * qb + (params_gpu - sp.linear) * wb;
      ADD("weights", "frozen base (" + ToString(tr.quant) + " linears + quantization constants, 16-bit rest)", base / base_div,
          Fmt("%.4g linear params x %.4f B + %.4g other x %.0f B", sp.linear, qb, params_gpu - sp.linear, wb));
    } else {
      base = params_gpu * wb;
      ADD("weights", "frozen base weights", base / base_div, Fmt("%.0f B x %.4g params", wb, params_gpu));
    }
    const double lora_total = static_cast<double>(CountLoraParams(a, tr.lora));
    const double magnitudes = tr.method == Method::kDora ? AdaptedProjections(job).out_sum * sp.layers : 0;
    const double adapters = lora_total * sp.layers / a.layers / par.tp + magnitudes;
    m.trainable_params = static_cast<int64_t>(lora_total + (tr.method == Method::kDora ? magnitudes * t * a.layers / sp.layers : 0));
    const double adapter_w = adapters * wb / (par.zero >= 3 ? shard : 1.0);
    ADD("weights", tr.method == Method::kDora ? "DoRA adapters + magnitude vectors" : "LoRA adapters", adapter_w,
        Fmt("%.0f B x %.4g adapter params", wb, adapters));
    stored_bytes_per_param = params_gpu > 0 ? base / params_gpu : wb;
    if (par.offload == Offload::kOptimizerParams) {
      // §2.3 parameter offload (FSDP cpu_offload, ZeRO-3 offload_param): the frozen base lives in
      // host memory and is gathered layer by layer (§4).
      m.host_bytes += base / base_div;
      m.weights_bytes = adapter_w;
    } else {
      m.weights_bytes = base / base_div + adapter_w;
    }
    const double live_adapters = tr.optimizer_in_backward ? adapters / std::max<int64_t>(1, sp.layers) : adapters;
    m.gradients_bytes = live_adapters * gb / (par.zero >= 2 ? shard : 1.0);
    ADD("gradients", "adapter gradients", m.gradients_bytes, Fmt("%.0f B x %.4g", gb, live_adapters));
    const double opt = adapters * ob / (par.zero >= 1 ? shard : 1.0);
    if (par.offload != Offload::kNone) {
      m.host_bytes += opt;
    } else {
      m.optimizer_bytes = opt;
      if (paged) optimizer_paged = opt;
      ADD("optimizer", "adapter optimizer states", opt, Fmt("%.4g B x %.4g", ob, adapters));
    }
  }

  // §3.5 activations: layers on this stage x micro-batches in flight (1F1B: pp - stage).
  const int64_t accum = std::max<int64_t>(1, GradAccumSteps(job));
  m.inflight_microbatches = std::min<int64_t>(par.pp - stage, accum);
  double interleave = 1.0;
  if (par.vpp > 1 && stage == 0 && accum >= par.pp)
    interleave = 1.0 + static_cast<double>(par.pp - 1) / static_cast<double>(par.pp * par.vpp);
  const LayerActivation dense_act = LayerActivationBytes(job, false);
  const LayerActivation moe_act = a.IsMoe() ? LayerActivationBytes(job, true) : dense_act;
  const double per_mb = (sp.layers - sp.moe_layers) * dense_act.saved_bytes + sp.moe_layers * moe_act.saved_bytes;
  const double inflight = static_cast<double>(m.inflight_microbatches) * interleave;
  const double layer_acts = per_mb * inflight;
  if (tr.activation_offload) {
    // §3.7 activation offload (torchtune OffloadActivations, FSDP CPU offload of checkpoints):
    // saved layer activations live in pinned host memory; the GPU holds the layer being
    // offloaded and the one being brought back (two layers).
    m.host_bytes += layer_acts;
    const double resident = std::min(layer_acts, 2 * std::max(dense_act.saved_bytes, moe_act.saved_bytes));
    m.activations_bytes = resident;
    ADD("activations", "transformer layers (offloaded to host; two layers resident)", resident,
        Fmt("2 x %.4g B/layer on the GPU; %.4g B in host memory", dense_act.saved_bytes, layer_acts));
  } else {
    m.activations_bytes = layer_acts;
    ADD("activations", std::string("transformer layers (") + (tr.recompute == Recompute::kNone ? "no" : ToString(tr.recompute).c_str()) + " recompute)", m.activations_bytes,
        Fmt("%.4g B/layer x %.0f layers x %.3g micro-batches in flight", dense_act.saved_bytes,
            static_cast<double>(sp.layers), inflight));
  }
  const double s_local = static_cast<double>(tr.seq_len) / par.cp;
  const double sb = s_local * tr.micro_batch;
  const double ab = ActivationBytesPerElement(tr.precision);
  const double rep = par.sequence_parallel ? t : 1.0;
  if (stage == 0) {
    // int64 token ids saved by the embedding (+ position ids for a learned position table).
    const double ids = (sb * 8 + (a.position == PositionKind::kLearned ? s_local * 8 : 0)) * inflight;
    m.activations_bytes += ids;
    ADD("activations", "token ids (int64)", ids, Fmt("8 B x %.4g tokens", sb * inflight));
  }
  double loss_transient = 0;
  if (stage == par.pp - 1) {
    // §3.6 output: final norm input/output, and the cross-entropy's logit-sized tensors by kind.
    const LossMemory loss = ResolveLoss(job, cal, kc);
    const double logits = sb * a.vocab / t;
    const double norm = NormSavedPerToken(a) * sb * a.hidden / rep * ab + NormStatsBytesPerToken(a) * sb / rep + 8 * sb;
    const double head = norm + loss.saved_bytes_per_logit * logits;
    m.activations_bytes += head;
    ADD("activations", "final norm + int64 targets + " + ToString(loss.kind) + " cross-entropy's saved logits", head,
        Fmt("%.0f x %.4g x %.0f B + ", NormSavedPerToken(a), sb * a.hidden, ab) +
            Fmt("%.3g B x %.4g tokens x vocab / tp", loss.saved_bytes_per_logit, sb));
    loss_transient = loss.transient_bytes_per_logit * logits;
  }

  // §4 temporary buffers: the largest transient of the backward pass plus sharding buffers.
  const LayerActivation& ws_layer = sp.moe_layers > 0 ? moe_act : dense_act;
  const double recompute_ws =
      tr.recompute == Recompute::kFull        ? ws_layer.full_bytes + ws_layer.sp_gather_bytes
      : tr.recompute == Recompute::kSelective ? dense_act.full_bytes - dense_act.saved_bytes + dense_act.sp_gather_bytes
                                              : 0;
  const double transient = std::max(loss_transient, recompute_ws);
  if (transient > 0) {
    m.buffers_bytes += transient;
    ADD("buffers", loss_transient >= recompute_ws ? "cross-entropy working set (loss backward)" : "recompute working set (one layer)",
        transient, loss_transient >= recompute_ws ? Fmt("%.3g B x %.4g tokens x vocab %.0f / tp", loss_transient / std::max(1.0, sb * a.vocab / t), sb, static_cast<double>(a.vocab))
                                                  : "one layer's activations rebuilt in backward");
  }
  const bool gathers = (par.zero >= 3 && shard > 1) || par.offload == Offload::kOptimizerParams;
  if (gathers && par.pp > 1) {
    // §4.2 FSDP with pipeline parallelism (torchtitan): parameters stay unsharded between the
    // micro-batches of a step (reshard_after_forward=False) and gradients accumulate unsharded
    // until the last micro-batch's reduce-scatter: the whole stage in the compute dtype, twice.
    const double stage_params = sp.dense + sp.expert;
    const double g = stage_params * (wb + (IsLora(job) ? 0 : wb));
    m.buffers_bytes += g;
    ADD("buffers", "FSDP+PP: unsharded stage weights + accumulated unsharded grads", g,
        Fmt("%.4g params x (%.0f B + %.0f B)", stage_params, wb, IsLora(job) ? 0.0 : wb));
  } else if (gathers) {
    const double layers = kc.zero3_prefetch_layers;
    // A quantized base is gathered as stored (fsdp_qlora packs the 4-bit weights in a 16-bit
    // storage dtype so FSDP can shard and gather them).
    const double g = sp.layer * (layers * stored_bytes_per_param + (IsLora(job) ? 0 : gb));
    m.buffers_bytes += g;
    ADD("buffers", "ZeRO-3/FSDP unsharded layers (gathered weights + unsharded grads)", g,
        Fmt("%.0f layers x %.4g params x %.3g B + grads of one layer", layers, sp.layer, stored_bytes_per_param));
  } else if ((par.zero == 1 || par.zero == 2) && tr.framework != Framework::kMegatron && tr.framework != Framework::kNemo) {
    // DeepSpeed ZeRO-1/2 (stage_1_and_2.py, contiguous_gradients): the reduce bucket is allocated
    // at reduce_bucket_size elements whatever the number of trainable parameters or GPUs.
    // Megatron's distributed optimizer reduces from its contiguous grad buffer instead.
    const double bucket = kc.zero_bucket_elements * gb;
    m.buffers_bytes += bucket;
    ADD("buffers", "ZeRO reduce bucket", bucket, Fmt("%.3g elements x %.0f B", kc.zero_bucket_elements, gb));
  }
  if (tr.method == Method::kQlora) {
    const double deq = sp.largest_matrix * wb;
    m.buffers_bytes += deq;
    ADD("buffers", "quantized base: one dequantized matrix", deq, Fmt("largest matrix %.4g params x %.0f B", sp.largest_matrix, wb));
  }
  if (tr.method == Method::kDora) {
    // §4 DoRA: B x A and W + s x B x A of one projection at a time, for the weight norm.
    const double w = 2 * AdaptedProjections(job).largest_matrix * ab;
    m.buffers_bytes += w;
    ADD("buffers", "DoRA combined weight of one projection (for its norm)", w, "2 x d_out x d_in x activation bytes");
  }

  // §5 the caching allocator: what is allocated once (model states) and what churns every
  // step (activations, buffers), and what the allocator holds beyond the live tensors.
  const double static_alloc = m.weights_bytes + m.gradients_bytes + (m.optimizer_bytes - optimizer_paged);
  const double churn = m.activations_bytes + m.buffers_bytes;
  const double rounding = StaticRoundingBytes(job, sp, shard);
  // The loss backward's vocab-sized tensors and the recompute's layer-sized ones are live at
  // different times (allocated counts the larger), but the caching allocator cannot hand the
  // blocks of one to the other once long-lived tensors (gradients, reduce-scatter outputs) are
  // placed between them: reserved holds both working sets.
  const double unshared = std::min(loss_transient, recompute_ws);
  // Model states are allocated once, but while they are built (weights loaded, cast or
  // quantized, optimizer states created lazily at the first step) their temporaries leave cached
  // blocks the step's tensors do not fit into: a fitted share of the states.
  const double state_frag = kc.state_fragmentation * static_alloc;
  const double frag = unshared + state_frag + kc.fragmentation * churn;
  const double ctx = kc.cuda_context_bytes;
  const double nccl = job.cluster.num_gpus > 1 ? kc.nccl_buffers_bytes : 0;
  m.allocated_bytes = static_alloc + churn;
  m.reserved_bytes = m.allocated_bytes + rounding + frag;
  m.paged_bytes = optimizer_paged;
  m.overhead_bytes = ctx + nccl + rounding + frag;
  ADD("overhead", "CUDA context + kernels", ctx, "calibration cuda_context_bytes");
  ADD("overhead", "NCCL communicator buffers", nccl, "calibration nccl_buffers_bytes");
  ADD("overhead", "caching allocator: 2 MiB rounding of model-state tensors", rounding, "1 MiB x state tensors above 10 MiB");
  ADD("overhead", "caching allocator: cached blocks of the other working set (loss vs recompute)", unshared,
      "min(loss backward, one layer's recompute)");
  ADD("overhead", "caching allocator: cached blocks left while the model states were built", state_frag,
      Fmt("%.2f x model states", kc.state_fragmentation));
  ADD("overhead", "caching allocator: fragmentation of per-step tensors", frag - unshared - state_frag,
      Fmt("%.2f x (activations + buffers)", kc.fragmentation));
  m.total_bytes = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.activations_bytes + m.buffers_bytes + m.overhead_bytes;
  return m;
#undef ADD
}

MemoryBreakdown EstimateMemory(const Job& job, const Calibration& cal, bool detail) {
  MemoryBreakdown best = EstimateMemoryForStage(job, 0, cal, detail);
  if (job.parallel.pp > 1) {
    MemoryBreakdown last = EstimateMemoryForStage(job, static_cast<int>(job.parallel.pp - 1), cal, detail);
    if (last.total_bytes > best.total_bytes) best = std::move(last);
  }
  return best;
}

std::vector<MemorySuggestion> SuggestMemorySavings(const Job& job, double capacity_bytes, const Calibration& cal) {
  std::vector<MemorySuggestion> out;
  const double base = EstimateMemory(job, cal).total_bytes;
  auto consider = [&](const std::string& step, const std::string& change, Job j) {
    if (!FinalizeJob(j).ok()) return;
    MemorySuggestion s;
    s.step = step;
    s.change = change;
    s.total_bytes = EstimateMemory(j, cal).total_bytes;
    s.saved_bytes = base - s.total_bytes;
    s.fits = s.total_bytes <= capacity_bytes;
    s.num_gpus = j.cluster.num_gpus;
    if (s.saved_bytes > 0) out.push_back(s);
  };
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  if (tr.precision == Precision::kFp32) {
    Job j = job;
    j.training.precision = Precision::kBf16;
    consider("mixed precision (bf16)", "training.precision=bf16", j);
  }
  if (tr.recompute != Recompute::kFull) {
    if (tr.recompute == Recompute::kNone) {
      Job j = job;
      j.training.recompute = Recompute::kSelective;
      consider("selective activation recompute", "training.recompute=selective", j);
    }
    Job j = job;
    j.training.recompute = Recompute::kFull;
    consider("full activation recompute", "training.recompute=full", j);
  }
  if (tr.micro_batch > 1) {
    Job j = job;
    j.training.micro_batch = 1;
    consider("micro-batch 1 with gradient accumulation (same global batch)", "training.micro_batch=1", j);
  }
  // §3.6 the cross-entropy without fp32 logits for the whole micro-batch (each kept only when it
  // saves against the job's own loss; a job already on it saves nothing and is not listed).
  for (const auto& [kind, name, key] : {std::tuple{LossKind::kChunked, "chunked cross-entropy (torchtune / Liger style)", "chunked"},
                                        std::tuple{LossKind::kFused, "fused cross-entropy (Liger / Unsloth / torch.compile)", "fused"}}) {
    if (tr.loss == kind) continue;
    Job j = job;
    j.training.loss = kind;
    consider(name, std::string("training.loss=") + key, j);
  }
  if (tr.optimizer == Optimizer::kAdamW) {
    Job j = job;
    j.training.optimizer = Optimizer::kAdamW8bit;
    consider("8-bit AdamW states (bitsandbytes)", "training.optimizer=adamw-8bit", j);
  }
  if (!tr.optimizer_in_backward) {  // FinalizeJob refuses it with accumulation or offload
    Job j = job;
    j.training.optimizer_in_backward = true;
    consider("optimizer step in backward (gradients freed layer by layer)", "training.optimizer_in_backward=true", j);
  }
  for (int z = par.zero + 1; z <= 3 && par.dp * par.cp > 1; ++z) {
    Job j = job;
    j.parallel.zero = z;
    consider("ZeRO stage " + std::to_string(z) + (z == 3 ? " (FSDP full shard)" : ""),
             "parallel.zero=" + std::to_string(z), j);
  }
  if (par.offload == Offload::kNone) {
    Job j = job;
    j.parallel.offload = Offload::kOptimizer;
    consider("offload optimizer states to CPU (ZeRO-Offload)", "parallel.offload=optimizer", j);
    j.parallel.offload = Offload::kOptimizerParams;
    consider("offload optimizer and parameters to CPU (ZeRO-Infinity)", "parallel.offload=optimizer+params", j);
  }
  if (!tr.activation_offload) {
    Job j = job;
    j.training.activation_offload = true;
    consider("offload saved activations to host memory", "training.activation_offload=true", j);
  }
  if (tr.master_weights == MasterWeights::kFp32 && tr.precision != Precision::kFp32) {
    Job j = job;
    j.training.master_weights = MasterWeights::kNone;
    consider("pure 16-bit parameters and optimizer states (no fp32 master; a numerics risk)", "training.master_weights=none", j);
  }
  if (tr.method == Method::kFull || tr.method == Method::kPretrain) {
    if (job.arch.params_override == 0) {
      Job j = job;
      j.training.method = Method::kLora;
      consider("LoRA (frozen base, rank " + std::to_string(tr.lora.rank) + " adapters)", "training.method=lora", j);
      j.training.method = Method::kQlora;
      consider("QLoRA (4-bit NF4 base)", "training.method=qlora", j);
    }
  } else if (tr.method == Method::kLora) {
    Job j = job;
    j.training.method = Method::kQlora;
    consider("QLoRA (4-bit NF4 base)", "training.method=qlora", j);
  }
  // More GPUs (only when it does not fit): the smallest data-parallel size with ZeRO-3 that fits.
  for (int64_t dp = par.dp * 2; base > capacity_bytes && dp <= 4096; dp *= 2) {
    Job j = job;
    j.parallel.dp = dp;
    j.parallel.zero = 3;
    j.cluster.num_gpus = dp * par.tp * par.pp * par.cp;
    j.training.global_batch = 0;
    if (!FinalizeJob(j).ok()) break;
    if (EstimateMemory(j, cal).total_bytes <= capacity_bytes) {
      consider("shard over " + std::to_string(j.cluster.num_gpus) + " GPUs with ZeRO-3/FSDP",
               "parallel.dp=" + std::to_string(dp) + " parallel.zero=3", j);
      break;
    }
  }
  return out;
}

}  // namespace gpuplan
