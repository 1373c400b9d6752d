// Fine-tuning terms of the step (docs/model/finetune.md, FT§n; C§ = docs/model/compute.md).
#include "gpuplan/finetune.h"

#include <algorithm>
#include <cmath>

#include "gpuplan/memory.h"
#include "gpuplan/ops.h"

namespace gpuplan {

namespace {

// C§2 the same GEMM time as the layer's other ops (ops.h GemmTime).
inline double Gemm(double m, double n, double k, double peak, const EfficiencyConstants& c) {
  return GemmTime(m, n, k, peak, c);
}

// Adapters and dequantized weights run in 16 bits even in fp8 recipes (PEFT keeps LoRA layers
// out of fp8 autocast); fp32 training runs them in fp32.
double Peak16(const Job& job, const HardwareContext& hw) {
  const Precision p = job.training.precision == Precision::kFp32 ? Precision::kFp32 : Precision::kBf16;
  if (auto v = hw.gpu.PeakFlops(p)) return *v;
  return hw.gpu.PeakFlops(job.training.precision).value_or(1e12);
}

bool Targets(const LoraSpec& l, const char* name) { return LoraTargets(l, name); }

// One adapted projection: its input and output width on this GPU, the tokens it sees per
// micro-batch and how many copies of it a layer has (experts).
struct Proj {
  double in, out, tokens, copies;
};

// FT§1 the adapted projections of one (average) layer, as CountLoraParams counts them.
int AdaptedProjections(const Job& job, double T, Proj* out) {
  const Arch& a = job.arch;
  const LoraSpec& l = job.training.lora;
  const double t = static_cast<double>(job.parallel.tp), h = static_cast<double>(a.hidden);
  int n = 0;
  auto add = [&](const char* name, double in, double o, double tokens, double copies) {
    if (copies > 0 && Targets(l, name)) out[n++] = {in, o, tokens, copies};
  };
  if (a.IsMla()) {
    if (a.q_lora_rank == 0) add("q_proj", h, a.QDim() / t, T, 1);
    add("q_a_proj", h, static_cast<double>(a.q_lora_rank), T, a.q_lora_rank > 0 ? 1 : 0);
    add("q_b_proj", static_cast<double>(a.q_lora_rank), a.QDim() / t, T, a.q_lora_rank > 0 ? 1 : 0);
    add("kv_a_proj_with_mqa", h, static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim), T, 1);
    add("kv_b_proj", static_cast<double>(a.kv_lora_rank),
        static_cast<double>(a.heads * (a.qk_nope_head_dim + a.v_head_dim)) / t, T, 1);
  } else {
    add("q_proj", h, a.QDim() / t, T, 1);
    add("k_proj", h, a.KvDim() / t, T, 1);
    add("v_proj", h, a.VDim() / t, T, 1);
    add("linear_qkv", h, static_cast<double>(a.QDim() + a.KvDim() + a.VDim()) / t, T, 1);  // FT§0 fused q/k/v
  }
  add("o_proj", a.ODim() / t, h, T, 1);
  // MLP adapters: dense layers see every token; a MoE layer wraps every expert's linears, each
  // routed expert seeing T x k / E tokens on average and a shared expert all T (fractions of a
  // layer weighted by how many layers are MoE).
  const double moe_frac = a.IsMoe() ? static_cast<double>(a.MoeLayers()) / a.layers : 0;
  auto mlp = [&](double ffn, double tokens, double copies) {
    if (a.GatedMlp()) add("gate_proj", h, ffn / t, tokens, copies);
    add("up_proj", h, ffn / t, tokens, copies);
    add("linear_fc1", h, (a.GatedMlp() ? 2 : 1) * ffn / t, tokens, copies);  // FT§0 fused gate + up
    add("down_proj", ffn / t, h, tokens, copies);
  };
  mlp(static_cast<double>(a.Ffn()), T, 1 - moe_frac);
  if (moe_frac > 0) {
    const double local_experts = static_cast<double>(a.experts) / job.parallel.ep;
    mlp(static_cast<double>(a.MoeFfn()), T * a.experts_per_token / a.experts, moe_frac * local_experts);
    mlp(static_cast<double>(a.MoeFfn()), T, moe_frac * a.shared_experts);
  }
  return n;
}

}  // namespace

AdapterCost AdapterLayerCost(const Job& job, const HardwareContext& hw, double tokens) {
  AdapterCost c;
  if (!IsAdapterMethod(job.training.method)) return c;
  const EfficiencyConstants& k = hw.k;
  const double peak = Peak16(job, hw);
  const double r = static_cast<double>(job.training.lora.rank);
  const double ab = ActivationBytesPerElement(job.training.precision);
  const double bw = *hw.gpu.mem_bw_bytes_per_s * k.hbm_eff;
  const bool dora = job.training.method == Method::kDora;
  Proj p[16];
  const int n = AdaptedProjections(job, tokens, p);
  for (int i = 0; i < n; ++i) {
    const double in = p[i].in, out = p[i].out, T = p[i].tokens, w = p[i].copies;
    // FT§1 forward: x·A (T x in -> r), (xA)·B (r -> out), the scaling and the add into the base
    // output (PEFT LoRA Linear.forward): 5 element accesses of the T x out output.
    double fwd = Gemm(T, r, in, peak, k) + Gemm(T, out, r, peak, k) + 5 * T * out * ab / bw;
    // Backward: dX_B = g·Bᵀ, dB = gᵀ·(xA), dX = dX_B·A, dA = dX_Bᵀ·x; the scaling's gradient
    // (2 accesses of T x out) and the input gradient added to the base's (3 of T x in).
    double bwd = Gemm(T, r, out, peak, k) + Gemm(out, r, T, peak, k) + Gemm(T, in, r, peak, k) +
                 Gemm(r, in, T, peak, k) + (2 * T * out + 3 * T * in) * ab / bw;
    double ff = 2 * T * r * (in + out), bf = 4 * T * r * (in + out);
    double fk = 2, bk = 2, fg = 2, bg = 4;
    if (dora) {
      // FT§2 DoRA (Liu et al. 2024 §4.1; PEFT DoraLinearLayer.forward): every forward builds
      // B·A through an identity (lora_B(lora_A(eye(in)))), adds it to W and takes the column norm
      // of W + s·BA (7 accesses of the in x out weight, 1 write of the eye), then rescales the
      // output by magnitude / norm: 7 more accesses of T x out forward and 7 backward.
      fwd += Gemm(in, r, in, peak, k) + Gemm(in, out, r, peak, k) + (7 * in * out + in * in + 7 * T * out) * ab / bw;
      bwd += 7 * T * out * ab / bw;
      ff += 2 * in * in * r + 2 * in * r * out;
      fk += 10, bk += 8, fg += 2;
    }
    c.fwd_s += w * fwd, c.bwd_s += w * bwd;
    c.fwd_flops += w * ff, c.bwd_flops += w * bf;
    c.fwd_gemms += w * fg, c.bwd_gemms += w * bg;
    c.fwd_kernels += w * fk, c.bwd_kernels += w * bk;
  }
  return c;
}

namespace {

// FT§3 frozen linear weights of one (average) layer held by this GPU.
double LayerLinearParams(const Job& job) {
  const Arch& a = job.arch;
  const double t = static_cast<double>(job.parallel.tp), h = static_cast<double>(a.hidden);
  double attn;
  if (a.IsMla()) {
    const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + static_cast<double>(a.q_lora_rank) * a.QDim() : h * a.QDim();
    attn = q + h * (a.kv_lora_rank + a.qk_rope_head_dim) +
           static_cast<double>(a.kv_lora_rank) * a.heads * (a.qk_nope_head_dim + a.v_head_dim) + a.ODim() * h;
  } else {
    attn = h * (a.QDim() + a.KvDim() + a.VDim()) + a.ODim() * h;
  }
  const double moe_frac = a.IsMoe() ? static_cast<double>(a.MoeLayers()) / a.layers : 0;
  const double dense = a.MlpMatrices() * h * a.Ffn();
  const double experts = static_cast<double>(a.experts) / job.parallel.ep + a.shared_experts;
  const double moe = experts * a.MlpMatrices() * h * a.MoeFfn();
  return (attn + (1 - moe_frac) * dense + moe_frac * moe) / t;
}

double CountedPasses(const Job& job) { return job.training.recompute == Recompute::kFull ? 3.0 : 2.0; }

}  // namespace

double DequantPassesPerMicroBatch(const Job& job) {
  if (job.training.method != Method::kQlora) return 0;
  const double rc = job.training.recompute == Recompute::kFull ? 1.0 : 0.0;
  switch (job.training.quant) {
    case BaseQuant::kNf4:   // bitsandbytes MatMul4Bit: forward and backward each dequantize
    case BaseQuant::kAwq:   // AutoAWQ WQLinearMMFunction: the same
      return 2 + rc;
    case BaseQuant::kGptq:  // torch path: autograd keeps the dequantized weight for backward
      return 1 + rc;
    case BaseQuant::kInt8:  // LLM.int8: int8 GEMM forward; backward dequantizes CB for grad_A
      return 1;
  }
  return 2 + rc;
}

double DequantPassTime(const Job& job, const HardwareContext& hw) {
  if (job.training.method != Method::kQlora) return 0;
  const double wb = 2;  // the 16-bit weight the dequantization writes
  double bytes = 0, eff = hw.k.hbm_eff;
  switch (job.training.quant) {
    case BaseQuant::kNf4:
      // bitsandbytes dequantize_4bit: 4-bit codes (0.5 B), absmax in 8 bits per 64-block with an
      // fp32 second-level constant per 256 blocks (double quantization), 16-bit write; the kernel
      // reaches dequant_eff.nf4 of the memory bandwidth (data/efficiency.csv).
      bytes = 0.5 + 1.0 / 64 + 4.0 / (64 * 256) + wb;
      eff = hw.k.dequant_eff_nf4;
      break;
    case BaseQuant::kAwq:
      // AutoAWQ dequantize_weights_cuda: 4-bit codes, fp16 scale and 4-bit zero per 128-group.
      bytes = 0.5 + 2.0 / 128 + 0.5 / 128 + wb;
      eff = hw.k.dequant_eff_awq;
      break;
    case BaseQuant::kGptq:
      // AutoGPTQ QuantLinear torch path (x rows >= kernel_switch_threshold): shift to int32 (0.5 r
      // + 4 w), cast to int8 (4 r + 1 w), mask (1 + 1), gather zeros (1 w), subtract (2 r + 1 w),
      // gather scales (2 w), multiply (1 + 2 r + 2 w): 22.5 B per weight, eager elementwise.
      bytes = 22.5;
      break;
    case BaseQuant::kInt8:
      // bitsandbytes MatMul8bitLt backward: CB.to(dtype) (1 r + 2 w) then mul_ by SCB (2 r + 2 w).
      bytes = 1 + wb + 2 * wb;
      break;
  }
  return LayerLinearParams(job) * bytes / (*hw.gpu.mem_bw_bytes_per_s * eff);
}

double DequantLayerTime(const Job& job, const HardwareContext& hw) {
  if (job.training.method != Method::kQlora) return 0;
  return DequantPassTime(job, hw) * DequantPassesPerMicroBatch(job) / CountedPasses(job);
}

double ExpectedLongestSample(double mean, double cap, int64_t n) {
  if (cap <= 0) return 0;
  if (mean >= cap) return cap;
  if (n <= 1 || mean <= 0) return std::max(0.0, mean);
  // FT§4 maximum-entropy length law on [0, cap] with this mean: density ∝ exp(-u x / cap); its
  // mean is cap (1/u - 1/(e^u - 1)), decreasing in u (u = 0: uniform). Bisection on u.
  const double target = mean / cap;
  auto frac = [](double u) { return std::abs(u) < 1e-6 ? 0.5 - u / 12 : 1 / u - 1 / std::expm1(u); };
  double lo = -1e7, hi = 1e7;  // mean / cap from 1e-7 to 1 - 1e-7
  for (int i = 0; i < 120; ++i) {
    const double mid = 0.5 * (lo + hi);
    (frac(mid) > target ? lo : hi) = mid;
  }
  const double u = 0.5 * (lo + hi);
  // E[max of n] = ∫0^cap (1 - F(x)^n) dx, F(x) = (1 - e^{-u x/cap}) / (1 - e^{-u}); Simpson over
  // [0, y_max] in y = x / cap, where past y_max = (ln n + 30) / u the integrand is below e^-30.
  auto cdf = [&](double y) {
    if (std::abs(u) < 1e-6) return y;
    if (u > 0) return std::expm1(-u * y) / std::expm1(-u);
    return std::exp(u * (1 - y)) * std::expm1(u * y) / std::expm1(u);  // rising density, no overflow
  };
  const double y_max = u > 0 ? std::min(1.0, (std::log(static_cast<double>(n)) + 30) / u) : 1.0;
  const int steps = 256;
  double s = 0;
  for (int i = 0; i <= steps; ++i) {
    const double y = y_max * i / steps;
    const double f = 1 - std::pow(cdf(y), static_cast<double>(n));
    s += f * (i == 0 || i == steps ? 1 : (i % 2 ? 4 : 2));
  }
  s *= y_max;
  return std::clamp(cap * s / (3.0 * steps), mean, cap);
}

double ComputeSeqLen(const TrainingSpec& t) {
  const double cap = static_cast<double>(t.seq_len);
  if (t.padding != Padding::kPadToLongest || t.tokens_per_sample <= 0) return cap;
  return ExpectedLongestSample(static_cast<double>(t.tokens_per_sample), cap, t.micro_batch);
}

double UsefulTokensPerSequence(const TrainingSpec& t) {
  if (t.padding == Padding::kPacked || t.tokens_per_sample <= 0) return static_cast<double>(t.seq_len);
  return static_cast<double>(std::min(t.tokens_per_sample, t.seq_len));
}

bool FusedOptimizer(const Job& job) {
  // FT§5 which AdamW each framework instantiates (docs/model/finetune.md lists the sources).
  switch (job.training.framework) {
    case Framework::kMegatron:    // Megatron-LM: Transformer Engine / Apex FusedAdam
    case Framework::kNemo:        // NeMo: Megatron-Core's distributed optimizer, FusedAdam
    case Framework::kMegatronBridge:  // Megatron-Bridge: Megatron-Core's optimizer, as NeMo
    case Framework::kDeepspeed:   // DeepSpeed FusedAdam for "AdamW"
    case Framework::kTorchtitan:  // torchtitan optimizer.implementation = "fused"
    case Framework::kTorchtune:   // torchtune recipe configs: torch.optim.AdamW fused: True
      return true;
    case Framework::kGeneric:     // plain PyTorch: torch.optim.AdamW's default (foreach on CUDA)
    case Framework::kHfTrainer:   // TrainingArguments.optim "adamw_torch": torch.optim.AdamW (foreach)
    case Framework::kFsdp:        // torch.optim.AdamW defaults (foreach on CUDA)
    case Framework::kLlmFoundry:  // composer DecoupledAdamW: per-tensor torch ops
    case Framework::kUnsloth:     // HF Trainer underneath
      return false;
  }
  return true;
}

double OptimizerStepBytesPerParam(const Job& job, double grad_bytes, double weight_bytes) {
  // FT§5 element accesses per parameter x bytes of the tensor accessed.
  const TrainingSpec& tr = job.training;
  const bool pure = tr.precision != Precision::kFp32 && tr.master_weights == MasterWeights::kNone;
  const double master = tr.precision == Precision::kFp32 || pure ? 0 : 4;
  const double pb = master > 0 ? master : weight_bytes;           // the tensor the update lands on
  const double gb = grad_bytes;
  const double s = pure ? weight_bytes : 4;                       // one full-size state element
  const double copy_fused = master > 0 ? 2 * weight_bytes : 0;    // 16-bit copy read + written
  const double copy_unfused = master > 0 ? master + weight_bytes : 0;  // a copy_ from the master
  switch (tr.optimizer) {
    case Optimizer::kAdamW:
      // Fused: p, m, v read and written, g read. torch foreach (_multi_tensor_adamw): weight decay
      // mul_ (p 2), lerp_ (m 2, g 1), mul_ + addcmul_ (v 4, g 2), sqrt/div_/add_ into a temporary
      // (v 1, tmp 5), addcdiv_ (p 2, m 1, tmp 1).
      return FusedOptimizer(job) ? 2 * pb + gb + 4 * s + copy_fused
                                 : 4 * pb + 3 * gb + 3 * s + 5 * s + 6 * s + copy_unfused;
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit:
      // bitsandbytes blockwise 8-bit kernel (one fused kernel whatever the framework): m, v in one
      // byte each with an fp32 absmax per 256-block, read and written. Paging moves states only
      // under memory pressure (not modelled).
      return 2 * pb + gb + 2 * 2 * (1 + 4.0 / 256) + copy_fused;
    case Optimizer::kAdafactor:
      // HF transformers Adafactor.step, in fp32: grad.float() (when 16-bit), grad²+eps (8), row and
      // column means (8), the factored estimate (4), × grad (12), RMS (4), clip div_ (8), × lr (8),
      // p.add_ (12); a 16-bit parameter is converted to fp32 and back (pb + 4, 4 + pb).
      return (gb < 4 ? gb + 4 : 0) + 64 + (master > 0 ? copy_unfused : pb < 4 ? 2 * (pb + 4) : 0);
    case Optimizer::kSgd:
      // momentum: buf mul_ (2) and add_ (2 + g), p add_ (p 2, buf 1).
      return 2 * pb + gb + 5 * s + copy_unfused;
  }
  return 2 * pb + gb + 4 * s + copy_fused;
}

double OptimizerStepTime(const Job& job, const HardwareContext& hw, double params, double grad_bytes,
                         double weight_bytes) {
  const EfficiencyConstants& k = hw.k;
  if (job.parallel.offload == Offload::kNone) {
    // FT§5 the structural count, anchored on the calibrated fused mixed-precision AdamW
    // (optimizer_bytes_per_param, 30 B = this count for that optimizer).
    constexpr double kFusedMixedAdamW = 30;
    const double bytes = OptimizerStepBytesPerParam(job, grad_bytes, weight_bytes) * k.optimizer_bytes_per_param / kFusedMixedAdamW;
    // optimizer_in_backward (torchtune's post-accumulate-grad hooks) runs each parameter's step
    // as its gradient is ready: the same bytes, once per step (job validation refuses it with
    // gradient accumulation, as torchtune does), so the same time; what it saves is memory.
    return params * bytes / (*hw.gpu.mem_bw_bytes_per_s * k.hbm_eff);
  }
  // C§5 offload: gradients down and weights up over PCIe, then CPU-Adam on the host's vCPUs
  // (memory-bandwidth bound, cpu_adam_params_per_s_per_vcpu); unknown vCPUs -> the host minimum.
  const double vcpus = job.cluster.cpu_cores_per_gpu > 0 ? static_cast<double>(job.cluster.cpu_cores_per_gpu)
                                                         : hw.cal.Get("host_vcpus_per_gpu_min");
  return params * (grad_bytes + weight_bytes) / hw.host_bytes_per_s +
         params / (vcpus * hw.cal.Get("cpu_adam_params_per_s_per_vcpu"));
}

double ActivationOffloadTime(const Job& job, const HardwareContext& hw, double layers, double fwd_compute_s,
                             double bwd_compute_s) {
  if (!job.training.activation_offload) return 0;
  // FT§6 every saved activation goes down to host memory in forward and comes back in backward
  // over the GPU's PCIe link, on a side stream: exposed only where the copy outlasts the pass.
  const double saved = LayerActivationBytes(job, job.arch.IsMoe()).saved_bytes * layers;
  const double one_way = saved / hw.host_bytes_per_s;
  return std::max(0.0, one_way - fwd_compute_s) + std::max(0.0, one_way - bwd_compute_s);
}

}  // namespace gpuplan
