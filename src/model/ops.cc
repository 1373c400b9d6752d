// One layer as a list of ops and the passes as folds over it. Section numbers: docs/model/
// compute.md (C§), frameworks.md (F§), finetune.md (FT§); compute.md §7 lists every op.
#include "gpuplan/ops.h"
#include "mechanisms.h"

#include <algorithm>

#include "gpuplan/finetune.h"

namespace gpuplan {

namespace {

// What every op of a layer shares: the shape on this GPU and the rates its kernels run at.
struct OpContext {
  double T = 0, s = 0, t = 1, h = 0, ab = 2;
  double rep = 1;       // C§3 norms and residuals: / tp with sequence parallelism, else replicated
  double moe_frac = 0;  // share of the layers that are MoE
  double f_act = 0;     // C§3 MLP elements activated per token: f, or f_moe x (k + S) in a MoE model
  double run_mm = 0, run16 = 0;  // H§1 matmul / 16-bit rates at the sustained clock
  double hbm = 0;       // achievable HBM bytes/s
  double bwd_lin = 2;   // C§4 backward GEMMs per forward GEMM: 1 for a frozen base
};

OpContext MakeContext(const Job& job, const HardwareContext& hw, double tokens, double seq_len) {
  const Arch& a = job.arch;
  const TrainingSpec& tr = job.training;
  const EfficiencyConstants& k = hw.k;
  OpContext c;
  c.T = tokens, c.s = seq_len, c.t = static_cast<double>(job.parallel.tp), c.h = static_cast<double>(a.hidden);
  c.ab = ActivationBytesPerElement(tr.precision);
  c.rep = job.parallel.sequence_parallel ? c.t : 1.0;
  const bool moe = a.IsMoe();
  c.moe_frac = moe ? static_cast<double>(a.MoeLayers()) / a.layers : 0;
  c.f_act = moe ? a.MoeFfn() * (a.experts_per_token + a.shared_experts) : static_cast<double>(a.Ffn());
  const double peak_mm = hw.gpu.PeakFlops(tr.precision).value_or(0);
  // Attention and the output layer run in 16-bit even in fp8 recipes (Transformer Engine, torchao).
  const double peak16 = tr.precision == Precision::kFp32 ? peak_mm
                        : hw.gpu.PeakFlops(Precision::kBf16).value_or(peak_mm);
  c.run_mm = peak_mm * k.clock_factor, c.run16 = peak16 * k.clock_factor;
  c.hbm = hw.gpu.mem_bw_bytes_per_s.value_or(0) * k.hbm_eff;
  c.bwd_lin = IsAdapterMethod(tr.method) ? 1.0 : 2.0;
  return c;
}

// C§2 a GEMM op of `share` of the layers: m x n x k at `peak`; backward bwd_lin x forward
// (input gradient, and the weight gradient unless the base is frozen, C§4).
Op GemmOp(std::string_view name, double m, double n, double kd, double peak, double share, const OpContext& c,
          const EfficiencyConstants& k) {
  Op op{name, OpKind::kGemm, "C§2", share};
  op.fwd_flops = share * 2 * m * n * kd;
  op.fwd_s = share * GemmTime(m, n, kd, peak, k);
  op.bwd_flops = c.bwd_lin * op.fwd_flops;
  op.bwd_s = c.bwd_lin * op.fwd_s;
  op.hbm_bytes = share * (m * kd + kd * n + m * n) * c.ab;
  op.weight_elems = share * kd * n;
  return op;
}

// C§3 / F§1 a memory-bound elementwise op moving `elems` elements (read + written) forward, with
// `kernels` launches; backward 2x both.
Op ElementwiseOp(std::string_view name, std::string_view section, double elems, double kernels,
                 const OpContext& c) {
  Op op{name, OpKind::kElementwise, section};
  op.hbm_bytes = elems * c.ab;
  op.fwd_s = op.hbm_bytes / c.hbm;
  op.bwd_s = 2 * op.fwd_s;
  op.fwd_kernels = kernels, op.bwd_kernels = 2 * kernels;
  return op;
}

// C§2 the attention projections: fused q,k,v and o_proj.
void ProjectionOps(const Job& job, const HardwareContext& hw, const OpContext& c, std::vector<Op>& ops) {
  const Arch& a = job.arch;
  const double T = c.T, t = c.t, h = c.h;
  ops.push_back(GemmOp("qkv_proj", T, (a.QDim() + 2.0 * a.KvDim()) / t, h, c.run_mm, 1, c, hw.k));
  ops.push_back(GemmOp("o_proj", T, h, a.QDim() / t, c.run_mm, 1, c, hw.k));
}

// C§2 the MLP: up (gate and up as one GEMM) and down on the dense layers; on the MoE layers the
// router at the 16-bit peak and the routed experts as grouped GEMMs over T x (k + S) rows.
void MlpOps(const Job& job, const HardwareContext& hw, const OpContext& c, std::vector<Op>& ops) {
  const Arch& a = job.arch;
  const double T = c.T, t = c.t, h = c.h, dense = 1 - c.moe_frac;
  if (dense > 0) {
    const double up_n = (a.MlpMatrices() - 1) * static_cast<double>(a.Ffn()) / t;
    ops.push_back(GemmOp("mlp_up", T, up_n, h, c.run_mm, dense, c, hw.k));
    ops.push_back(GemmOp("mlp_down", T, h, a.Ffn() / t, c.run_mm, dense, c, hw.k));
  }
  if (c.moe_frac > 0) {
    // Routed experts as grouped GEMMs over the T x k routed tokens (+ shared experts).
    const double routed = T * (a.experts_per_token + a.shared_experts);
    const double mup = (a.MlpMatrices() - 1) * static_cast<double>(a.MoeFfn()) / t;
    ops.push_back(GemmOp("moe_router", T, static_cast<double>(a.experts), h, c.run16, c.moe_frac, c, hw.k));
    ops.push_back(GemmOp("expert_up", routed, mup, h, c.run_mm, c.moe_frac, c, hw.k));
    ops.push_back(GemmOp("expert_down", routed, h, a.MoeFfn() / t, c.run_mm, c.moe_frac, c, hw.k));
  }
}

// C§2 attention core: QK^T and AV, 2 x 2 x T x (keys attended) x (a d) / t, at the attention
// kernel's efficiency; one non-GEMM launch (F§2). Backward: AttentionBackwardFactor x forward.
Op AttentionCoreOp(const Job& job, const HardwareContext& hw, const OpContext& c) {
  const Arch& a = job.arch;
  const TrainingSpec& tr = job.training;
  const EfficiencyConstants& k = hw.k;
  const double T = c.T, s = c.s, t = c.t;
  Op op{"attention_core", OpKind::kAttention, "C§2"};
  op.fwd_flops = 4 * T * AttendedKeys(job, s) * a.QDim() / t;
  const double attn_eff = tr.flash_attention ? k.flash_eff : k.eager_attn_eff;
  op.fwd_s = op.fwd_flops / (c.run16 * attn_eff);
  op.hbm_bytes = T * (a.QDim() + 2.0 * a.KvDim() + a.ODim()) / t * c.ab;
  if (!tr.flash_attention && k.fused_softmax) {
    // F§4 Megatron's unfused-attention path: QK^T and AV as batched GEMMs and one fused
    // scale-mask-softmax kernel; the T x s x heads/t scores are written by the QK^T GEMM, read and
    // written by the softmax and read by AV (elementwise.attention_scores_fused per score), and the
    // pass takes the longer of that traffic and the GEMM FLOPs at the matmul ceiling.
    const double scores = T * s * a.heads / t;
    op.hbm_bytes = scores * k.e_scores * c.ab;
    op.fwd_s = std::max(op.fwd_flops / (c.run16 * k.matmul_eff_max), op.hbm_bytes / c.hbm);
  }
  const double beta = AttentionBackwardFactor(tr);
  op.bwd_flops = beta * op.fwd_flops, op.bwd_s = beta * op.fwd_s;
  op.fwd_kernels = 1, op.bwd_kernels = 2;
  return op;
}

// C§3 / F§1 elementwise traffic (norms, residual adds, rotary, activation): the elements each op
// reads and writes as the framework runs it (fused, eager or compiled), and F§2 its launches.
void ElementwiseOps(const Job& job, const HardwareContext& hw, const OpContext& c, std::vector<Op>& ops) {
  const Arch& a = job.arch;
  const EfficiencyConstants& k = hw.k;
  const double T = c.T, t = c.t, h = c.h, rep = c.rep;
  const bool layernorm = a.norm == NormKind::kLayerNorm, rotary = a.position == PositionKind::kRotary;
  const double norms = static_cast<double>(a.norms_per_layer);
  ops.push_back(ElementwiseOp("norms", "C§3", T * norms * (layernorm ? k.e_norm_ln : k.e_norm) * h / rep,
                              norms * (layernorm ? k.n_norm_ln : k.n_norm), c));
  ops.push_back(ElementwiseOp("residual_adds", "C§3", T * 2 * k.e_residual * h / rep, 2 * k.n_residual, c));
  if (rotary) ops.push_back(ElementwiseOp("rope", "C§3", T * k.e_rope * (a.QDim() + a.KvDim()) / t, 2 * k.n_rope, c));
  const double e_act = a.GatedMlp() ? k.e_act : k.e_gelu, n_act = a.GatedMlp() ? k.n_act : k.n_gelu;
  ops.push_back(ElementwiseOp("activation", "C§3", T * e_act * c.f_act / t, n_act, c));
  // F§1 autocast over fp32 parameters: the fp32 residual stream, and each forward casts every
  // local weight of the layer to 16 bits again.
  if (k.e_fp32_residual > 0) ops.push_back(ElementwiseOp("fp32_residual", "F§1", T * k.e_fp32_residual * h / rep, 0, c));
  if (k.e_weight_cast > 0) {
    const double layer_weights = (h * (a.QDim() + 2.0 * a.KvDim()) + a.QDim() * h) / t + a.MlpMatrices() * h * c.f_act / t;
    ops.push_back(ElementwiseOp("autocast_weight_cast", "F§1", layer_weights * k.e_weight_cast, 0, c));
  }
}

// F§6 fp8: each linear's input is quantized in forward and its output gradient in backward,
// at fp8_cast_bytes per element for the recipe.
Op Fp8CastOp(const Job& job, const HardwareContext& hw, const OpContext& c) {
  const Arch& a = job.arch;
  const EfficiencyConstants& k = hw.k;
  const double T = c.T, t = c.t, rep = c.rep, f_act = c.f_act, hbm = c.hbm;
  Op op{"fp8_casts", OpKind::kCast, "F§6"};
  // F§6 Transformer Engine's fused producers vs standalone cast-transposes (mechanisms.cc).
  const Fp8CastTime cast = Fp8CastLayerTime(a, k, T, rep, t, f_act, hbm);
  op.fwd_s = cast.fwd_s;
  op.bwd_s = cast.bwd_s;
  op.hbm_bytes = op.fwd_s * hbm;
  return op;
}

// FT§1-3 LoRA-family adapters and a quantized base's dequantization (finetune.md); F§2 the
// adapters' own launches add to the host's ops and the GPU's kernel gaps.
void FinetuneOps(const Job& job, const HardwareContext& hw, const OpContext& c, std::vector<Op>& ops) {
  if (IsAdapterMethod(job.training.method)) {
    const AdapterCost adapter = AdapterLayerCost(job, hw, c.T);
    Op op{"lora_adapters", OpKind::kAdapter, "FT§1"};
    op.fwd_s = adapter.fwd_s, op.bwd_s = adapter.bwd_s;
    op.fwd_flops = adapter.fwd_flops, op.bwd_flops = adapter.bwd_flops;
    op.fwd_kernels = adapter.fwd_kernels, op.bwd_kernels = adapter.bwd_kernels;
    op.fwd_host_ops = adapter.fwd_gemms + adapter.fwd_kernels;
    op.bwd_host_ops = adapter.bwd_gemms + adapter.bwd_kernels;
    op.full_recompute_flops = false;  // F_rc counts the base's FLOPs (C§4)
    ops.push_back(op);
  }
  if (const double t_dequant = DequantLayerTime(job, hw); t_dequant > 0) {
    Op op{"dequant_base", OpKind::kDequant, "FT§3"};
    op.fwd_s = op.bwd_s = t_dequant;
    ops.push_back(op);
  }
}

// C§4 selective recompute as a share of each op's forward: op-level SAC with flash attention
// reruns half the matmuls and every pointwise op; Korthikanti's (eager) the attention core.
double SelectiveShare(OpKind kind, bool flash) {
  if (flash) return kind == OpKind::kGemm ? 0.5 : kind == OpKind::kElementwise ? 1.0 : 0.0;
  return kind == OpKind::kAttention ? 1.0 : 0.0;
}

}  // namespace

std::string ToString(OpKind k) {
  switch (k) {
    case OpKind::kGemm: return "gemm";
    case OpKind::kAttention: return "attention";
    case OpKind::kElementwise: return "elementwise";
    case OpKind::kCast: return "cast";
    case OpKind::kDequant: return "dequant";
    case OpKind::kAdapter: return "adapter";
    case OpKind::kLoss: return "loss";
  }
  return "gemm";
}

double AttentionBackwardFactor(const TrainingSpec& tr) { return tr.flash_attention ? 2.5 : 2.0; }

double AttendedKeys(const Job& job, double seq_len) {
  // Causal flash kernels skip the masked half and, with a sliding or chunked window, the blocks
  // outside it (C§1 AttendedKeysPerQuery); eager attention computes the full matrix and masks it.
  return job.training.flash_attention ? AttendedKeysPerQuery(job.arch, seq_len, /*causal=*/true) : seq_len;
}

double GemmTime(double m, double n, double k, double peak_flops, const EfficiencyConstants& c) {
  const double d = std::min({m, n, k});
  const double eff = c.matmul_eff_max * d / (d + c.matmul_dim_half);
  return 2 * m * n * k / (peak_flops * eff) + c.matmul_fixed_s;
}

double MicroBatchTokens(const Job& job) {
  return static_cast<double>(job.training.micro_batch) * ComputeSeqLen(job.training) / job.parallel.cp;
}

std::vector<Op> LayerOps(const Job& job, const HardwareContext& hw, double tokens, double seq_len) {
  const OpContext c = MakeContext(job, hw, tokens, seq_len);
  std::vector<Op> ops;
  ops.reserve(24);
  ProjectionOps(job, hw, c, ops);
  MlpOps(job, hw, c, ops);
  ops.push_back(AttentionCoreOp(job, hw, c));
  ElementwiseOps(job, hw, c, ops);
  if (job.training.precision == Precision::kFp8) ops.push_back(Fp8CastOp(job, hw, c));
  FinetuneOps(job, hw, c, ops);
  const bool flash = job.training.flash_attention;
  for (Op& op : ops) op.selective_share = SelectiveShare(op.kind, flash);
  return ops;
}

std::vector<Op> HeadOps(const Job& job, const HardwareContext& hw, double tokens) {
  const Arch& a = job.arch;
  const OpContext c = MakeContext(job, hw, tokens, 0);
  // C§2 output layer on the last stage (the slowest stage carries it), at the 16-bit peak.
  std::vector<Op> ops = {GemmOp("logits", tokens, a.vocab / c.t, c.h, c.run16, 1, c, hw.k)};
  // F§3 cross-entropy over the T x V/t logits, forward and backward together, memory-bound; the
  // step's forward share (communication.md N§4 overlap) leaves it to the backward.
  Op loss{"loss", OpKind::kLoss, "F§3"};
  loss.hbm_bytes = tokens * a.vocab / c.t * hw.k.loss_bytes_per_logit;
  loss.bwd_s = loss.hbm_bytes / c.hbm;
  ops.push_back(loss);
  return ops;
}

double OpForwardSeconds(const Op& op, const EfficiencyConstants& k) { return op.fwd_s + op.fwd_kernels * k.kernel_gap_s; }
double OpBackwardSeconds(const Op& op, const EfficiencyConstants& k) { return op.bwd_s + op.bwd_kernels * k.kernel_gap_s; }

LayerPasses FoldLayer(const std::vector<Op>& ops, const Job& job, const EfficiencyConstants& k) {
  LayerPasses p;
  // F§2 the host dispatches host_ops_per_layer ops per forward (2x backward) plus the ops' own;
  // a pass takes the longer of GPU and host.
  double gpu_fwd = 0, gpu_bwd = 0, host_fwd = k.host_ops_per_layer, host_bwd = 2 * k.host_ops_per_layer;
  double selective_s = 0, selective_flops = 0, full_flops = 0;
  for (const Op& op : ops) {
    gpu_fwd += OpForwardSeconds(op, k), gpu_bwd += OpBackwardSeconds(op, k);
    host_fwd += op.fwd_host_ops, host_bwd += op.bwd_host_ops;
    p.fwd_flops += op.fwd_flops, p.bwd_flops += op.bwd_flops;
    selective_s += op.selective_share * op.fwd_s, selective_flops += op.selective_share * op.fwd_flops;
    if (op.full_recompute_flops) full_flops += op.fwd_flops;
    if (op.kind == OpKind::kAttention) p.attention_fwd_s += op.fwd_s;
  }
  // H§3 a measured per-layer time scales the layer's GPU work (not the host's, not the head's).
  gpu_fwd *= k.layer_time_scale, gpu_bwd *= k.layer_time_scale;
  p.gpu_fwd_s = gpu_fwd, p.gpu_bwd_s = gpu_bwd;
  p.host_fwd_s = host_fwd * k.cpu_op_s, p.host_bwd_s = host_bwd * k.cpu_op_s;
  p.fwd_s = std::max(p.host_fwd_s, gpu_fwd);
  p.bwd_s = std::max(p.host_bwd_s, gpu_bwd);
  // C§4 recompute: full reruns the forward; selective each op's share of it.
  switch (job.training.recompute) {
    case Recompute::kNone: break;
    case Recompute::kFull: p.recompute_s = p.fwd_s, p.recompute_flops = full_flops; break;
    case Recompute::kSelective: p.recompute_s = selective_s, p.recompute_flops = selective_flops; break;
  }
  return p;
}

double UnscaledLayerForwardSeconds(const Job& job, const HardwareContext& hw) {
  const double seq = static_cast<double>(job.training.seq_len);
  return FoldLayer(LayerOps(job, hw, MicroBatchTokens(job), seq), job, hw.k).gpu_fwd_s / hw.k.layer_time_scale;
}

}  // namespace gpuplan
