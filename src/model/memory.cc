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
  if (stage == 0) sp.dense += (pc.embedding + pc.vision) / t;  // [hfconfig] a counted vision tower feeds stage 0
  if (stage == pp - 1) {
    sp.dense += pc.final_norm + pc.mtp / t;  // [hfconfig] MTP modules sit after the last layer (Megatron)
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

// §3.1 fp32 statistics a norm keeps per token: LayerNorm mean and rstd, RMSNorm rstd.
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
// §4.3 / N§4 DeepSpeed casts a 16-bit gradient bucket to fp32 for the reduction (fp32_allreduce,
// communication_data_type fp32: engine.py allreduce_bucket).
double ReduceBytesPerParam(const Job& j) { return j.training.fp32_allreduce ? std::max(4.0, GradBytesPerParam(j)) : GradBytesPerParam(j); }
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

namespace {

// The per-framework facts of data/frameworks.csv the memory model reads (framework.<name>.loss,
// the default cross-entropy kind, framework.<name>.mem_*, and the fused kernels), their keys built
// once (no string is built per estimate).
struct FrameworkMemKeys {
  std::string loss_kind, loss_chunks, loss_standard_bytes;
  std::string fused_norm, fused_act, fp8_saved_inputs, fp8_params;
};
const FrameworkMemKeys& MemKeys(Framework f) {
  static const std::vector<FrameworkMemKeys> keys = [] {
    std::vector<FrameworkMemKeys> out;
    for (const auto& n : FrameworkNames()) {
      const std::string p = "framework." + n + ".";
      out.push_back({p + "loss", p + "mem_loss_chunks", p + "mem_loss_standard_bytes_per_logit", p + "fused_norm",
                     p + "fused_act", p + "mem_fp8_saved_inputs", p + "mem_fp8_params"});
    }
    return out;
  }();
  return keys[static_cast<size_t>(f)];
}

// §3.1/§3.2/§2.1 which kernels keep what for backward: the framework's flags (data/frameworks.csv),
// else framework.generic's.
struct FusedKernels {
  bool norm = false;              // one-kernel norm: keeps its input and the fp32 statistics, not x-hat
  bool act = false;               // fused gated activation: keeps gate and up, recomputes act(gate) x up
  bool fp8_saved_inputs = false;  // Transformer Engine fp8 linears keep their inputs in fp8
  bool fp8_params = false;        // fp8 weights without a 16-bit copy (Megatron fp8_param_gather)
  bool frozen_norms = false;      // the LoRA family: a norm's weight is frozen, so w * x-hat keeps no x-hat
};
FusedKernels ResolveFusedFlags(const Calibration& cal, Framework f) {
  const FrameworkMemKeys& k = MemKeys(f);
  const FrameworkMemKeys& g = MemKeys(Framework::kGeneric);
  auto flag = [&](const std::string& key, const std::string& generic) {
    return (cal.Has(key) ? cal.Get(key) : cal.Has(generic) ? cal.Get(generic) : 0.0) > 0.5;
  };
  return {flag(k.fused_norm, g.fused_norm), flag(k.fused_act, g.fused_act), flag(k.fp8_saved_inputs, g.fp8_saved_inputs),
          flag(k.fp8_params, g.fp8_params)};
}
// The job's kernels: torch.compile (Inductor's min-cut partitioner recomputes pointwise chains, as
// a fused kernel does) and training.fused_ops add to the framework's; fp8 flags only under fp8.
FusedKernels FusedFor(const Job& job, const Calibration& cal) {
  static const std::vector<FusedKernels> builtin = [] {
    std::vector<FusedKernels> out;
    for (size_t i = 0; i < FrameworkNames().size(); ++i)
      out.push_back(ResolveFusedFlags(Calibration::Builtin(), static_cast<Framework>(i)));
    return out;
  }();
  const TrainingSpec& tr = job.training;
  FusedKernels f = &cal == &Calibration::Builtin() ? builtin[static_cast<size_t>(tr.framework)]
                                                   : ResolveFusedFlags(cal, tr.framework);
  f.norm = f.norm || tr.compile || (tr.fused_ops & kFusedNorm) != 0;
  f.act = f.act || tr.compile || (tr.fused_ops & kFusedAct) != 0;
  f.fp8_saved_inputs = f.fp8_saved_inputs && tr.precision == Precision::kFp8;
  f.fp8_params = f.fp8_params && tr.precision == Precision::kFp8;
  f.frozen_norms = IsAdapterMethod(tr.method);
  return f;
}

// §3.1 norms: a fused norm (LayerNorm's native kernel, Transformer Engine, Liger, Inductor) keeps
// its input and the next linear keeps its output: 2 x sbh. RMSNorm as written in Llama-style
// code (x * rsqrt(mean(x^2)) * w) also keeps x-hat for w's gradient: 3 x sbh, unless w is frozen.
double NormSaved(const Arch& a, const FusedKernels& f) {
  return a.norm == NormKind::kLayerNorm || f.norm || f.frozen_norms ? 2.0 : 3.0;
}
// Eager RMSNorm upcasts first (HF LlamaRMSNorm, torchtune RMSNorm: x.to(float32)): in a 16-bit run
// the input it keeps is that fp32 copy, (4 - ab) bytes per element more than counted in ab.
double NormUpcastBytes(const Arch& a, const FusedKernels& f, double ab) {
  return a.norm == NormKind::kLayerNorm || f.norm || ab >= 4 ? 0.0 : 4.0 - ab;
}

// §3 the shape every saved-tensor term of one layer reads.
struct ActShape {
  double t, rep, s_local, s_full, b, sb, sbh, ab, heads_local;
  // bytes of a saved linear input: Transformer Engine fp8 keeps the quantized input (1 B; a
  // column-parallel input under sequence parallelism keeps row- and column-wise copies, 2 B).
  double in_ab_col, in_ab_row;
  bool flash;
};
ActShape ShapeOf(const Job& job, const FusedKernels& f) {
  const TrainingSpec& tr = job.training;
  ActShape x{};
  x.t = static_cast<double>(job.parallel.tp);
  x.s_local = static_cast<double>(tr.seq_len) / job.parallel.cp;
  x.s_full = static_cast<double>(tr.seq_len);
  x.b = static_cast<double>(tr.micro_batch);
  x.ab = ActivationBytesPerElement(tr.precision);
  x.rep = job.parallel.sequence_parallel ? x.t : 1.0;  // replicated across TP unless SP
  x.in_ab_row = f.fp8_saved_inputs ? 1.0 : x.ab;
  x.in_ab_col = f.fp8_saved_inputs ? (x.rep > 1 ? 2.0 : 1.0) : x.ab;
  x.sb = x.s_local * x.b;
  x.sbh = x.sb * job.arch.hidden;
  x.flash = tr.flash_attention;
  x.heads_local = job.arch.heads / x.t;
  return x;
}

// §3.3 a frozen linear keeps no input: autograd needs a linear's input only for its weight's
// gradient. Under the LoRA family the projections without an adapter do not keep theirs (the
// attention and MLP norm outputs, o_proj's and down_proj's inputs).
struct KeptInputs {
  bool qkv = true, o = true, gate_up = true, down = true;
};
KeptInputs KeptLinearInputs(const TrainingSpec& tr) {
  if (!IsAdapterMethod(tr.method)) return {};
  auto adapted = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (LoraTargets(tr.lora, n)) return true;
    return false;
  };
  return {adapted({"q_proj", "k_proj", "v_proj", "linear_qkv"}), adapted({"o_proj"}),
          adapted({"gate_proj", "up_proj", "linear_fc1"}), adapted({"down_proj"})};
}

// §3.1 attention block of one layer: each saved tensor by name.
struct AttentionSaved {
  double norm_io = 0, norm_stats = 0, q = 0, kv = 0, ctx = 0, proj_input = 0, qk_norm = 0, mla = 0;
  double scores = 0, lse = 0, dropout = 0, dropout_scores = 0;
  double Sum() const {
    return norm_io + norm_stats + q + kv + ctx + proj_input + qk_norm + mla + scores + lse + dropout + dropout_scores;
  }
};
AttentionSaved AttentionBlock(const Arch& a, const ActShape& x, const FusedKernels& f, const KeptInputs& kept) {
  AttentionSaved s;
  const double ns = NormSaved(a, f), norms = static_cast<double>(a.norms_per_layer);  // 2; Gemma 2/3: 4
  // per norm: input (and x-hat), and its output as the next linear's input (fp8 under TE); the
  // two pre-norms' outputs only where a linear that reads them trains its weight (§3.3)
  const double unread = (kept.qkv ? 0 : 1) + (kept.gate_up ? 0 : 1);
  s.norm_io = (norms * ((ns - 1) * x.ab + x.in_ab_col + NormUpcastBytes(a, f, x.ab)) - unread * x.in_ab_col) * x.sbh / x.rep;
  s.norm_stats = norms * NormStatsBytesPerToken(a) * x.sb / x.rep;  // fp32 rstd (+ mean)
  s.q = x.sb * a.QDim() / x.t * x.ab;
  // k and v (their own widths under MLA); eager attention repeats GQA kv heads to every q head.
  s.kv = x.sb * (x.flash ? a.KvDim() + a.VDim() : a.QDim() + a.ODim()) / x.t * x.ab;
  // o_proj input / attention output: flash attention keeps its output for backward; eager attention's
  // is kept only by a trained o_proj.
  if (x.flash || kept.o) s.ctx = x.sb * a.ODim() / x.t * x.ab;
  // Transformer Engine's o_proj keeps its own fp8 cast of the attention output.
  if (x.in_ab_row < x.ab && kept.o) s.proj_input = x.sb * a.ODim() / x.t * x.in_ab_row;
  // q/k norms (Qwen3, Gemma 3): the pre-norm q and k and x-hat, fp32 rstd per head.
  if (a.qk_norm) s.qk_norm = (ns - 1) * x.sb * (a.QDim() + a.KvDim()) / x.t * x.ab + 4 * x.sb * (a.heads + a.KvHeads()) / x.t;
  // MLA latents (replicated across TP): the kv latent and the shared rotary key, the q latent,
  // each latent's norm tensors.
  if (a.IsMla())
    s.mla = (x.sb * (a.kv_lora_rank + a.qk_rope_head_dim + a.q_lora_rank) + ns * x.sb * (a.kv_lora_rank + a.q_lora_rank)) * x.ab;
  // Eager softmax runs in fp32 and keeps its output; a 16-bit run also keeps the cast copy.
  const double score_bytes = 4 + (x.ab < 4 ? x.ab : 0);
  const double score_elems = x.heads_local * x.s_local * x.s_full * x.b;
  if (!x.flash) s.scores = score_elems * score_bytes;
  if (x.flash) s.lse = x.heads_local * x.sb * 4;  // flash: fp32 log-sum-exp
  if (a.dropout) {
    s.dropout = 2 * x.sbh / x.rep * 1;  // two 1-byte masks
    if (!x.flash) s.dropout_scores = score_elems * (1 + x.ab);  // mask + output
  }
  return s;
}

// §3.2 MLP block: gated (swiglu/geglu) keeps gate, up, act and product, a fused kernel only gate
// and up (and the product as the down projection's input, fp8 under TE); gelu: input and output.
double MlpBlock(const Arch& a, const ActShape& x, bool moe_layer, const FusedKernels& f, const KeptInputs& kept) {
  const double per_f = a.GatedMlp() ? (f.act ? 3 : 4) : 2;
  const double per_f_bytes = (per_f - 1) * x.ab + (kept.down ? x.in_ab_row : 0);  // the last: down_proj's input
  if (!moe_layer) return per_f_bytes * x.sb * a.Ffn() / x.t;
  const double k = static_cast<double>(a.experts_per_token);
  return (k + a.shared_experts) * per_f_bytes * x.sb * a.MoeFfn() / x.t  // expert intermediates
         + k * x.sbh / x.rep * x.ab                                    // permuted inputs
         + x.sb * a.experts * 4;                                       // fp32 router logits
}

// §3.3 LoRA adapters: the rank-r intermediate of every adapted projection; DoRA (PEFT's
// DoraLinearLayer) rescales the output by the magnitude over the (detached) weight norm,
// (m/||W'|| - 1) * base + m/||W'|| * lora * scale: the product saves the base output and the
// adapter output of every adapted projection, 2 x sb x d_out.
double AdapterBlock(const Job& job, const ActShape& x) {
  const TrainingSpec& tr = job.training;
  if (!IsAdapterMethod(tr.method)) return 0;
  int targets = 0;  // Megatron's fused linear_qkv / linear_fc1 carry one adapter each (FT§0)
  for (const auto& name : {"q_proj", "k_proj", "v_proj", "linear_qkv", "o_proj", "gate_proj", "up_proj", "linear_fc1", "down_proj"})
    targets += LoraTargets(tr.lora, name) ? 1 : 0;
  double lora = targets * x.sb * tr.lora.rank * x.ab;
  if (tr.method == Method::kDora) lora += 2 * x.sb * AdaptedProjections(job).out_sum * x.ab;
  return lora;
}

// §3.4 op-level selective checkpointing (torchtitan): keep the layer input, the attention output
// and every other matmul output; recompute norms and pointwise ops.
double OpLevelSelective(const Arch& a, const ActShape& x, bool moe_layer) {
  std::vector<double> mm = {x.sb * a.QDim() / x.t, x.sb * a.KvDim() / x.t, x.sb * a.VDim() / x.t, x.sbh / x.rep};
  const double f = moe_layer ? a.MoeFfn() * (a.experts_per_token + a.shared_experts) : a.Ffn();
  if (a.GatedMlp()) mm.push_back(x.sb * f / x.t);
  mm.push_back(x.sb * f / x.t);
  mm.push_back(x.sbh / x.rep);
  double kept = 0;
  for (size_t i = 0; i < mm.size(); i += 2) kept += mm[i];
  return (x.sbh / x.rep + kept) * x.ab;
}

}  // namespace

// §3: saved activations of one layer for one micro-batch.
LayerActivation LayerActivationBytes(const Job& job, bool moe_layer, const Calibration& cal) {
  const Arch& a = job.arch;
  const FusedKernels fused = FusedFor(job, cal);
  const ActShape x = ShapeOf(job, fused);
  const KeptInputs kept = KeptLinearInputs(job.training);
  const AttentionSaved attn = AttentionBlock(a, x, fused, kept);
  const double mlp = MlpBlock(a, x, moe_layer, fused, kept);
  const double lora = AdapterBlock(job, x);
  LayerActivation out;
  // §4 sequence parallelism (Korthikanti et al. 2022 §4.2.2): backward all-gathers the sharded
  // inputs of the column-parallel linears again (attention and MLP input, s x b x h each) and
  // the row-parallel outputs are full-sequence partial sums before their reduce-scatter.
  if (job.parallel.sequence_parallel && x.t > 1) out.sp_gather_bytes = 3 * x.sbh * x.ab * (1 - 1 / x.t);
  out.full_bytes = attn.Sum() + mlp + lora;
  switch (job.training.recompute) {
    case Recompute::kNone: out.saved_bytes = out.full_bytes; break;
    case Recompute::kSelective:
      // Korthikanti et al. 2022 §4.2: recompute the attention core (the s^2 terms) only; with
      // flash attention, torchtitan's op-level policy (§3.4).
      out.saved_bytes = !x.flash ? out.full_bytes - attn.scores - attn.dropout_scores
                                 : OpLevelSelective(a, x, moe_layer) + attn.ctx + attn.lse + lora + attn.dropout;
      break;
    case Recompute::kFull: out.saved_bytes = x.sbh / x.rep * x.ab; break;  // the layer input (Korthikanti §4.1: 2sbh)
  }
  return out;
}

LayerActivation LayerActivationBytes(const Job& job, bool moe_layer) {
  return LayerActivationBytes(job, moe_layer, Calibration::Builtin());
}

namespace {

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
namespace {

// One estimate in progress: the facts every term reads, and the breakdown the terms add to
// (memory as a fold over terms, each a section of docs/model/memory.md).
struct MemoryFold {
  const Job& job;
  const Calibration& cal;
  const MemoryConstants& kc;
  bool detail;
  StageParams sp;
  FusedKernels fused;
  double shard = 1, eshard = 1, wb = 2, gb = 2, ob = 12, t = 1;
  bool paged = false;
  MemoryBreakdown m;
  double optimizer_paged = 0;           // optimizer bytes in unified memory (outside the caching allocator)
  double stored_bytes_per_param = 0;    // of the weights as stored (a quantized base: its average)
  LayerActivation dense_act, moe_act;
  double inflight = 1, loss_transient = 0, recompute_ws = 0;

  MemoryFold(const Job& j, const Calibration& c, const MemoryConstants& k, bool d, int stage)
      : job(j), cal(c), kc(k), detail(d), sp(ParamsOnGpu(j, stage)), fused(FusedFor(j, c)) {
    m.stage = stage;
    m.total_params = CountParams(j.arch).total;
    m.params_on_gpu = sp.dense + sp.expert;
    shard = ShardDp(j);
    eshard = ShardExpert(j);
    wb = WeightBytesPerParam(j);
    gb = GradBytesPerParam(j);
    ob = OptimizerBytesPerParam(j);
    t = static_cast<double>(j.parallel.tp);
    paged = j.training.optimizer == Optimizer::kPagedAdamW8bit;
    stored_bytes_per_param = wb;
  }

  // §2.2 ZeRO: stage 1 shards optimizer states, 2 also gradients, 3 also weights, over dp*cp.
  double Sharded(double bytes_per_param, int from_stage) const {
    const bool on = job.parallel.zero >= from_stage;
    return bytes_per_param * (sp.dense / (on ? shard : 1.0) + sp.expert / (on ? eshard : 1.0));
  }
  const char* ZeroNote() const { return job.parallel.zero > 0 ? " / (dp*cp) under ZeRO" : ""; }
};

// Explanations are built only when asked for (the search calls the estimate millions of times).
#define ADD(f, cat, name, bytes, formula)                                           \
  do {                                                                              \
    if ((f).detail && (bytes) > 0) (f).m.items.push_back({cat, name, bytes, formula}); \
  } while (0)

// §2.1 fp8 parameters (Megatron fp8_param_gather, Transformer Engine Float8Tensor weights): the
// linear matrices are stored in fp8 with no 16-bit copy; the distributed optimizer keeps the fp32
// master. The bytes saved against 16-bit weights.
double Fp8ParamSaving(const MemoryFold& f) {
  if (!f.fused.fp8_params || f.wb <= 1) return 0;
  const bool z3 = f.job.parallel.zero >= 3;
  return (f.wb - 1) * ((f.sp.linear - f.sp.expert) / (z3 ? f.shard : 1.0) + f.sp.expert / (z3 ? f.eshard : 1.0));
}

// §2.1 / §2.3 / §2.5 full training: weights, gradients, optimizer states. Offload (ZeRO-Offload,
// FSDP CPUOffloadPolicy) keeps the sharded gradients and optimizer states in host memory.
void AddFullModelStates(MemoryFold& f) {
  const Job& job = f.job;
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  const double params = f.sp.dense + f.sp.expert;
  f.m.trainable_params = f.m.total_params;
  const double fp8_saving = Fp8ParamSaving(f), weights = f.Sharded(f.wb, 3) - fp8_saving;
  if (par.offload == Offload::kOptimizerParams) {
    f.m.host_bytes += weights;
  } else if (fp8_saving > 0) {
    f.m.weights_bytes = weights;
    ADD(f, "weights", "weights (fp8 linears, 16-bit rest)", weights,
        Fmt("1 B x %.4g linear + %.0f B x %.4g other params", f.sp.linear, f.wb, params - f.sp.linear) + (par.zero >= 3 ? f.ZeroNote() : ""));
  } else {
    f.m.weights_bytes = weights;
    ADD(f, "weights", "weights (" + ToString(tr.precision == Precision::kFp32 ? Precision::kFp32 : Precision::kBf16) + ")", weights,
        Fmt("%.0f B x %.4g params", f.wb, params) + (par.zero >= 3 ? f.ZeroNote() : ""));
  }
  // §2.5 optimizer in backward: each parameter's step runs as soon as its gradient is reduced
  // (torchtune optimizer_in_bwd), so one layer's gradients (or the embedding's) are live at once.
  const double in_bwd_params = std::max(f.sp.layer, static_cast<double>(job.arch.vocab) * job.arch.hidden / f.t);
  if (tr.optimizer_in_backward) {
    f.m.gradients_bytes = f.gb * in_bwd_params / (par.zero >= 2 ? f.shard : 1.0);
    ADD(f, "gradients", "gradients of one layer (optimizer step in backward)", f.m.gradients_bytes,
        Fmt("%.0f B x %.4g params (the largest of a layer and the embedding)", f.gb, in_bwd_params));
  } else if (par.offload != Offload::kNone) {
    // §2.3 DeepSpeed stage_1_and_2.py copy_grads_in_partition: with cpu_offload the reduced
    // partition goes to the host fp32 buffer (no GPU grads_in_partition); FSDP2 CPUOffloadPolicy
    // copies sharded gradients device-to-host in backward. The GPU keeps the reduce bucket (§4).
    f.m.host_bytes += f.Sharded(f.gb, 2);
  } else {
    f.m.gradients_bytes = f.Sharded(f.gb, 2);
    ADD(f, "gradients", f.gb == 4 ? "gradients (fp32)" : "gradients (16-bit)", f.m.gradients_bytes,
        Fmt("%.0f B x %.4g params", f.gb, params) + (par.zero >= 2 ? f.ZeroNote() : ""));
  }
  const double opt = f.Sharded(f.ob, 1);
  if (par.offload != Offload::kNone) {
    f.m.host_bytes += opt;
    return;
  }
  f.m.optimizer_bytes = opt;
  if (f.paged) f.optimizer_paged = opt;
  const bool master = f.wb == 2 && tr.master_weights == MasterWeights::kFp32;
  ADD(f, "optimizer", "optimizer states (" + ToString(tr.optimizer) + (master ? ", fp32 master" : "") + (f.paged ? ", paged" : "") + ")",
      opt, Fmt("%.4g B x %.4g params", f.ob, params) + (par.zero >= 1 ? f.ZeroNote() : ""));
}

// §2.4 LoRA: the frozen base in the compute dtype (QLoRA: quantized linears); returns its bytes
// on this GPU before ZeRO-3.
double AddFrozenBase(MemoryFold& f) {
  const Arch& a = f.job.arch;
  const TrainingSpec& tr = f.job.training;
  const double base_div = f.job.parallel.zero >= 3 ? f.shard : 1.0;
  const double params_gpu = f.sp.dense + f.sp.expert;
  double base = 0;
  if (tr.method == Method::kQlora) {
    const double qb = QuantBytesPerParam(tr.quant, static_cast<double>(a.hidden));
    base = f.sp.linear * qb + (params_gpu - f.sp.linear) * f.wb;
    ADD(f, "weights", "frozen base (" + ToString(tr.quant) + " linears + quantization constants, 16-bit rest)", base / base_div,
        Fmt("%.4g linear params x %.4f B + %.4g other x %.0f B", f.sp.linear, qb, params_gpu - f.sp.linear, f.wb));
  } else {
    base = params_gpu * f.wb;
    ADD(f, "weights", "frozen base weights", base / base_div, Fmt("%.0f B x %.4g params", f.wb, params_gpu));
  }
  f.stored_bytes_per_param = params_gpu > 0 ? base / params_gpu : f.wb;
  return base;
}

// §2.4 LoRA / DoRA: frozen base, trainable adapters (DoRA adds a magnitude vector per adapted
// projection) with their gradients and optimizer states.
void AddAdapterModelStates(MemoryFold& f) {
  const Arch& a = f.job.arch;
  const TrainingSpec& tr = f.job.training;
  const ParallelSpec& par = f.job.parallel;
  const double base = AddFrozenBase(f);
  const double base_div = par.zero >= 3 ? f.shard : 1.0;
  const double lora_total = static_cast<double>(CountLoraParams(a, tr.lora));
  const double magnitudes = tr.method == Method::kDora ? AdaptedProjections(f.job).out_sum * f.sp.layers : 0;
  const double adapters = lora_total * f.sp.layers / a.layers / par.tp + magnitudes;
  f.m.trainable_params =
      static_cast<int64_t>(lora_total + (tr.method == Method::kDora ? magnitudes * f.t * a.layers / f.sp.layers : 0));
  const double adapter_w = adapters * f.wb / base_div;
  ADD(f, "weights", tr.method == Method::kDora ? "DoRA adapters + magnitude vectors" : "LoRA adapters", adapter_w,
      Fmt("%.0f B x %.4g adapter params", f.wb, adapters));
  // §2.3 parameter offload (FSDP cpu_offload, ZeRO-3 offload_param): the frozen base lives in
  // host memory and is gathered layer by layer (§4).
  if (par.offload == Offload::kOptimizerParams) f.m.host_bytes += base / base_div;
  f.m.weights_bytes = (par.offload == Offload::kOptimizerParams ? 0 : base / base_div) + adapter_w;
  const double live_adapters = tr.optimizer_in_backward ? adapters / std::max<int64_t>(1, f.sp.layers) : adapters;
  f.m.gradients_bytes = live_adapters * f.gb / (par.zero >= 2 ? f.shard : 1.0);
  ADD(f, "gradients", "adapter gradients", f.m.gradients_bytes, Fmt("%.0f B x %.4g", f.gb, live_adapters));
  const double opt = adapters * f.ob / (par.zero >= 1 ? f.shard : 1.0);
  if (par.offload != Offload::kNone) {
    f.m.host_bytes += opt;
    return;
  }
  f.m.optimizer_bytes = opt;
  if (f.paged) f.optimizer_paged = opt;
  ADD(f, "optimizer", "adapter optimizer states", opt, Fmt("%.4g B x %.4g", f.ob, adapters));
}

// §3.5 activations: layers on this stage x micro-batches in flight (1F1B: pp - stage; the
// interleaved schedule's first stage holds (1 + (pp-1)/(pp*vpp)) x pp); §3.7 activation offload.
void AddLayerActivations(MemoryFold& f, int stage) {
  const Job& job = f.job;
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  const int64_t accum = std::max<int64_t>(1, GradAccumSteps(job));
  f.m.inflight_microbatches = std::min<int64_t>(par.pp - stage, accum);
  double interleave = 1.0;
  if (par.vpp > 1 && stage == 0 && accum >= par.pp)
    interleave = 1.0 + static_cast<double>(par.pp - 1) / static_cast<double>(par.pp * par.vpp);
  f.dense_act = LayerActivationBytes(job, false, f.cal);
  f.moe_act = job.arch.IsMoe() ? LayerActivationBytes(job, true, f.cal) : f.dense_act;
  const double per_mb = (f.sp.layers - f.sp.moe_layers) * f.dense_act.saved_bytes + f.sp.moe_layers * f.moe_act.saved_bytes;
  f.inflight = static_cast<double>(f.m.inflight_microbatches) * interleave;
  const double layer_acts = per_mb * f.inflight;
  if (tr.activation_offload) {
    // §3.7 activation offload (torchtune OffloadActivations, FSDP CPU offload of checkpoints):
    // saved layer activations live in pinned host memory; the GPU holds the layer being
    // offloaded and the one being brought back (two layers).
    f.m.host_bytes += layer_acts;
    const double resident = std::min(layer_acts, 2 * std::max(f.dense_act.saved_bytes, f.moe_act.saved_bytes));
    f.m.activations_bytes = resident;
    ADD(f, "activations", "transformer layers (offloaded to host; two layers resident)", resident,
        Fmt("2 x %.4g B/layer on the GPU; %.4g B in host memory", f.dense_act.saved_bytes, layer_acts));
    return;
  }
  f.m.activations_bytes = layer_acts;
  ADD(f, "activations", std::string("transformer layers (") + (tr.recompute == Recompute::kNone ? "no" : ToString(tr.recompute).c_str()) + " recompute)",
      f.m.activations_bytes,
      Fmt("%.4g B/layer x %.0f layers x %.3g micro-batches in flight", f.dense_act.saved_bytes, static_cast<double>(f.sp.layers), f.inflight));
}

// §3.6 embedding and output: token ids on the first stage; final norm, int64 targets and the
// cross-entropy's saved logits on the last (its backward working set is a §4 transient).
void AddEmbeddingAndLoss(MemoryFold& f, int stage) {
  const Job& job = f.job;
  const Arch& a = job.arch;
  const ParallelSpec& par = job.parallel;
  const double s_local = static_cast<double>(job.training.seq_len) / par.cp;
  const double sb = s_local * job.training.micro_batch;
  const double ab = ActivationBytesPerElement(job.training.precision);
  const double rep = par.sequence_parallel ? f.t : 1.0;
  if (stage == 0) {
    // int64 token ids saved by the embedding (+ position ids for a learned position table).
    const double ids = (sb * 8 + (a.position == PositionKind::kLearned ? s_local * 8 : 0)) * f.inflight;
    f.m.activations_bytes += ids;
    ADD(f, "activations", "token ids (int64)", ids, Fmt("8 B x %.4g tokens", sb * f.inflight));
  }
  if (stage != par.pp - 1) return;
  const LossMemory loss = ResolveLoss(job, f.cal, f.kc);
  const double logits = sb * a.vocab / f.t;
  // the final norm's output is kept by the output projection unless it is frozen (§3.3)
  const double ns = NormSaved(a, f.fused) - (IsLora(job) ? 1 : 0);
  const double norm = (ns * ab + NormUpcastBytes(a, f.fused, ab)) * sb * a.hidden / rep + NormStatsBytesPerToken(a) * sb / rep + 8 * sb;
  const double head = norm + loss.saved_bytes_per_logit * logits;
  f.m.activations_bytes += head;
  ADD(f, "activations", "final norm + int64 targets + " + ToString(loss.kind) + " cross-entropy's saved logits", head,
      Fmt("%.0f x %.4g x %.0f B + ", ns, sb * a.hidden, ab) + Fmt("%.3g B x %.4g tokens x vocab / tp", loss.saved_bytes_per_logit, sb));
  f.loss_transient = loss.transient_bytes_per_logit * logits;
}

// §4 the largest transient of the backward pass: the loss backward or one layer's recompute.
void AddBackwardTransient(MemoryFold& f) {
  const Recompute rc = f.job.training.recompute;
  const LayerActivation& ws_layer = f.sp.moe_layers > 0 ? f.moe_act : f.dense_act;
  const LayerActivation& d = f.dense_act;
  f.recompute_ws = rc == Recompute::kFull        ? ws_layer.full_bytes + ws_layer.sp_gather_bytes
                   : rc == Recompute::kSelective ? d.full_bytes - d.saved_bytes + d.sp_gather_bytes
                                                 : 0;
  const double transient = std::max(f.loss_transient, f.recompute_ws);
  if (transient <= 0) return;
  f.m.buffers_bytes += transient;
  const bool loss = f.loss_transient >= f.recompute_ws;
  const double sb = static_cast<double>(f.job.training.seq_len) / f.job.parallel.cp * f.job.training.micro_batch;
  const double vocab = static_cast<double>(f.job.arch.vocab);
  ADD(f, "buffers", loss ? "cross-entropy working set (loss backward)" : "recompute working set (one layer)", transient,
      loss ? Fmt("%.3g B x %.4g tokens x vocab %.0f / tp", f.loss_transient / std::max(1.0, sb * vocab / f.t), sb, vocab)
           : "one layer's activations rebuilt in backward");
}

// §4.3 bytes per gradient of the fp32 copy DeepSpeed makes of a 16-bit bucket for the reduction (0: none).
double ReduceCastBytes(const MemoryFold& f) {
  const double r = ReduceBytesPerParam(f.job);
  return r > f.gb ? r : 0;
}

// §4.1-§4.2 sharding buffers: ZeRO-3/FSDP gathered layers and unsharded gradients, FSDP with
// pipeline parallelism, DeepSpeed's ZeRO-1/2 reduce bucket.
void AddShardingBuffers(MemoryFold& f) {
  const Job& job = f.job;
  const ParallelSpec& par = job.parallel;
  const bool lora = IsLora(job);
  const bool gathers = (par.zero >= 3 && f.shard > 1) || par.offload == Offload::kOptimizerParams;
  if (gathers && par.pp > 1) {
    // §4.2 FSDP with pipeline parallelism (torchtitan): parameters stay unsharded between the
    // micro-batches of a step (reshard_after_forward=False) and gradients accumulate unsharded
    // until the last micro-batch's reduce-scatter: the whole stage in the compute dtype, twice.
    const double stage_params = f.sp.dense + f.sp.expert;
    const double g = stage_params * (f.wb + (lora ? 0 : f.wb));
    f.m.buffers_bytes += g;
    ADD(f, "buffers", "FSDP+PP: unsharded stage weights + accumulated unsharded grads", g,
        Fmt("%.4g params x (%.0f B + %.0f B)", stage_params, f.wb, lora ? 0.0 : f.wb));
  } else if (gathers) {
    const double layers = f.kc.zero3_prefetch_layers;
    // A quantized base is gathered as stored (fsdp_qlora packs the 4-bit weights in a 16-bit
    // storage dtype so FSDP can shard and gather them). §4.1 the largest unit: the embedding and
    // the output projection are units of their own (V x h / tp, 16-bit), in flight with the
    // prefetched layers when larger than a layer; its unsharded gradient likewise.
    const double layer_b = f.sp.layer * f.stored_bytes_per_param;
    const double head = static_cast<double>(job.arch.vocab) * job.arch.hidden / f.t;
    const double g = (layers - 1) * layer_b + std::max(layer_b, head * f.wb) + (lora ? 0 : std::max(f.sp.layer, head) * f.gb);
    f.m.buffers_bytes += g;
    ADD(f, "buffers", "ZeRO-3/FSDP unsharded units (gathered weights + unsharded grads)", g,
        Fmt("%.0f x max(layer %.3g, V*h %.3g) x %.3g B + grads", layers, f.sp.layer, head, f.stored_bytes_per_param));
  } else if ((par.zero == 1 || par.zero == 2) && job.training.framework != Framework::kMegatron &&
             job.training.framework != Framework::kNemo &&
             job.training.framework != Framework::kMegatronBridge) {
    // DeepSpeed ZeRO-1/2 (stage_1_and_2.py, contiguous_gradients): the reduce bucket is allocated
    // at reduce_bucket_size elements whatever the number of trainable parameters or GPUs.
    // Megatron's distributed optimizer reduces from its contiguous grad buffer instead.
    // §4.3 with communication_data_type fp32 the bucket is cast to fp32 for the reduction.
    const double cast = ReduceCastBytes(f);
    const double bucket = f.kc.zero_bucket_elements * (f.gb + cast);
    f.m.buffers_bytes += bucket;
    ADD(f, "buffers", cast > 0 ? "ZeRO reduce bucket + its fp32 cast" : "ZeRO reduce bucket", bucket,
        cast > 0 ? Fmt("%.3g elements x (%.0f B + %.0f B)", f.kc.zero_bucket_elements, f.gb, cast)
                 : Fmt("%.3g elements x %.0f B", f.kc.zero_bucket_elements, f.gb));
  }
}

// §4.3 DeepSpeed without ZeRO (engine.py allreduce_bucket): after the last backward the gradients are
// flattened into buckets of up to zero_bucket_elements (a 16-bit copy) and, with fp32_allreduce, cast
// to fp32 for the all-reduce. The activations and the backward transient are freed by then, so only
// what exceeds them raises the peak.
void AddReduceTransient(MemoryFold& f) {
  const Job& job = f.job;
  const ParallelSpec& par = job.parallel;
  if (job.training.framework != Framework::kDeepspeed || par.zero != 0 || par.dp * par.cp <= 1 || IsLora(job)) return;
  const double elements = std::min(f.sp.dense + f.sp.expert, f.kc.zero_bucket_elements);
  const double cast = ReduceCastBytes(f);
  const double reduce = elements * (f.gb + cast);
  const double freed = f.m.activations_bytes + std::max(f.loss_transient, f.recompute_ws);
  if (reduce <= freed) return;
  f.m.buffers_bytes += reduce - freed;
  ADD(f, "buffers", "gradient all-reduce bucket after backward, above the activations it replaces", reduce - freed,
      Fmt("%.4g elements x (%.0f B flat copy + %.0f B fp32 cast) - %.4g B freed", elements, f.gb, cast, freed));
}

// §4 adapter buffers: QLoRA dequantizes one matrix at a time; DoRA forms B x A and W + s x B x A
// of one projection at a time, for the weight norm.
void AddAdapterBuffers(MemoryFold& f) {
  const TrainingSpec& tr = f.job.training;
  if (tr.method == Method::kQlora) {
    const double deq = f.sp.largest_matrix * f.wb;
    f.m.buffers_bytes += deq;
    ADD(f, "buffers", "quantized base: one dequantized matrix", deq,
        Fmt("largest matrix %.4g params x %.0f B", f.sp.largest_matrix, f.wb));
  }
  if (tr.method == Method::kDora) {
    const double w = 2 * AdaptedProjections(f.job).largest_matrix * ActivationBytesPerElement(tr.precision);
    f.m.buffers_bytes += w;
    ADD(f, "buffers", "DoRA combined weight of one projection (for its norm)", w, "2 x d_out x d_in x activation bytes");
  }
}

// §5 the caching allocator: what is allocated once (model states) and what churns every step
// (activations, buffers), and what the allocator holds beyond the live tensors.
void AddAllocator(MemoryFold& f) {
  MemoryBreakdown& m = f.m;
  const MemoryConstants& kc = f.kc;
  const double static_alloc = m.weights_bytes + m.gradients_bytes + (m.optimizer_bytes - f.optimizer_paged);
  const double churn = m.activations_bytes + m.buffers_bytes;
  const double rounding = StaticRoundingBytes(f.job, f.sp, f.shard);
  // The loss backward's vocab-sized tensors and the recompute's layer-sized ones are live at
  // different times (allocated counts the larger), but the caching allocator cannot hand the
  // blocks of one to the other once long-lived tensors (gradients, reduce-scatter outputs) are
  // placed between them: reserved holds both working sets.
  const double unshared = std::min(f.loss_transient, f.recompute_ws);
  // Model states are allocated once, but while they are built (weights loaded, cast or
  // quantized, optimizer states created lazily at the first step) their temporaries leave cached
  // blocks the step's tensors do not fit into: a fitted share of the states.
  const double state_frag = kc.state_fragmentation * static_alloc;
  const double frag = unshared + state_frag + kc.fragmentation * churn;
  const double ctx = kc.cuda_context_bytes;
  const double nccl = f.job.cluster.num_gpus > 1 ? kc.nccl_buffers_bytes : 0;
  m.allocated_bytes = static_alloc + churn;
  m.reserved_bytes = m.allocated_bytes + rounding + frag;
  m.paged_bytes = f.optimizer_paged;
  m.overhead_bytes = ctx + nccl + rounding + frag;
  ADD(f, "overhead", "CUDA context + kernels", ctx, "calibration cuda_context_bytes");
  ADD(f, "overhead", "NCCL communicator buffers", nccl, "calibration nccl_buffers_bytes");
  ADD(f, "overhead", "caching allocator: 2 MiB rounding of model-state tensors", rounding, "1 MiB x state tensors above 10 MiB");
  ADD(f, "overhead", "caching allocator: cached blocks of the other working set (loss vs recompute)", unshared,
      "min(loss backward, one layer's recompute)");
  ADD(f, "overhead", "caching allocator: cached blocks left while the model states were built", state_frag,
      Fmt("%.2f x model states", kc.state_fragmentation));
  ADD(f, "overhead", "caching allocator: fragmentation of per-step tensors", frag - unshared - state_frag,
      Fmt("%.2f x (activations + buffers)", kc.fragmentation));
}

#undef ADD

}  // namespace

MemoryBreakdown EstimateMemoryForStage(const Job& job, int stage, const Calibration& cal, bool detail) {
  MemoryConstants scratch;
  MemoryFold f(job, cal, ConstantsFor(cal, scratch), detail, stage);
  if (IsLora(job)) AddAdapterModelStates(f);
  else AddFullModelStates(f);
  AddLayerActivations(f, stage);
  AddEmbeddingAndLoss(f, stage);
  AddBackwardTransient(f);
  AddShardingBuffers(f);
  AddReduceTransient(f);
  AddAdapterBuffers(f);
  AddAllocator(f);
  MemoryBreakdown& m = f.m;
  m.total_bytes = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.activations_bytes + m.buffers_bytes + m.overhead_bytes;
  return m;
}


MemoryBreakdown EstimateMemory(const Job& job, const Calibration& cal, bool detail) {
  MemoryBreakdown best = EstimateMemoryForStage(job, 0, cal, detail);
  if (job.parallel.pp > 1) {
    MemoryBreakdown last = EstimateMemoryForStage(job, static_cast<int>(job.parallel.pp - 1), cal, detail);
    if (last.total_bytes > best.total_bytes) best = std::move(last);
  }
  return best;
}

namespace {
// §6 one memory-saving step: the job with one change, kept when it saves memory.
struct Suggester {
  const Job& job;
  const Calibration& cal;
  double capacity_bytes, base;
  std::vector<MemorySuggestion> out;
  void consider(const std::string& step, const std::string& change, Job j) {
    if (!FinalizeJob(j).ok()) return;
    MemorySuggestion s;
    s.step = step;
    s.change = change;
    s.total_bytes = EstimateMemory(j, cal).total_bytes;
    s.saved_bytes = base - s.total_bytes;
    s.fits = s.total_bytes <= capacity_bytes;
    s.num_gpus = j.cluster.num_gpus;
    if (s.saved_bytes > 0) out.push_back(s);
  }
};

// Precision, recompute, micro-batch and the cross-entropy kind.
void SuggestComputeSteps(Suggester& g) {
  const Job& job = g.job;
  const TrainingSpec& tr = job.training;
  auto consider = [&](const std::string& step, const std::string& change, Job j) { g.consider(step, change, std::move(j)); };
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
}

// Optimizer states, optimizer in backward.
void SuggestOptimizerSteps(Suggester& g) {
  const Job& job = g.job;
  const TrainingSpec& tr = job.training;
  auto consider = [&](const std::string& step, const std::string& change, Job j) { g.consider(step, change, std::move(j)); };
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
}

// Sharding, offload, pure 16-bit states, adapters, more GPUs.
void SuggestShardingSteps(Suggester& g) {
  const Job& job = g.job;
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  const Calibration& cal = g.cal;
  const double base = g.base, capacity_bytes = g.capacity_bytes;
  auto consider = [&](const std::string& step, const std::string& change, Job j) { g.consider(step, change, std::move(j)); };
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
}
}  // namespace

std::vector<MemorySuggestion> SuggestMemorySavings(const Job& job, double capacity_bytes, const Calibration& cal) {
  Suggester g{job, cal, capacity_bytes, EstimateMemory(job, cal).total_bytes, {}};
  SuggestComputeSteps(g);
  SuggestOptimizerSteps(g);
  SuggestShardingSteps(g);
  return g.out;
}

}  // namespace gpuplan
