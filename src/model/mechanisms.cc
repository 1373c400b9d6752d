// Engine mechanisms as the engines run them: TP-communication overlap (F§5), Megatron's
// scatter-gather of pipeline sends (P§4), DeepSpeed ZeRO-3's parameter gathers (N§9) and
// Transformer Engine's fp8 casts (F§6). EstimateStep calls each from the line it replaces.
#include "mechanisms.h"

#include <algorithm>
#include <cmath>

namespace gpuplan {

double TpExposedShare(const EfficiencyConstants& k, bool sequence_parallel, double tp) {
  if (k.tp_userbuffers && sequence_parallel && tp > 1) return 1 / tp;
  return 1 - k.tp_overlap;
}

double PipelineSendBytes(const EfficiencyConstants& k, const ParallelSpec& p, double activation_bytes) {
  const double tp = static_cast<double>(std::max<int64_t>(1, p.tp));
  // With SP the activation between stages is already sequence-sharded; without it Megatron-LM
  // (scatter_gather_tensors_in_pipeline) sends split_tensor_into_1d_equal_chunks: 1/tp per rank.
  if (p.sequence_parallel || k.pp_scatter_gather) return activation_bytes / tp;
  return activation_bytes;
}

double PipelineGatherTime(const EfficiencyConstants& k, const ParallelSpec& p, int64_t tp_per_node,
                          double activation_bytes, double microbatches, const HardwareContext& hw) {
  if (p.pp <= 1 || p.tp <= 1 || p.sequence_parallel || !k.pp_scatter_gather) return 0;
  // gather_split_1d_tensor on every receive: the forward activation and the backward gradient,
  // per micro-batch and virtual stage.
  const double receives = 2.0 * static_cast<double>(std::max<int64_t>(1, p.vpp));
  return microbatches * receives * CollectiveTime(Collective::kAllGather, activation_bytes, p.tp, tp_per_node, hw);
}

double DeepSpeedGatherTime(double bytes, int64_t n_i, int64_t per_node_i, double gathers, const HardwareContext& hw) {
  if (n_i <= 1 || bytes <= 0) return 0;
  const double n = static_cast<double>(n_i);
  const int64_t per_node = std::max<int64_t>(1, std::min(per_node_i, n_i));
  if (per_node >= n_i) return CollectiveTime(Collective::kAllGather, bytes, n_i, per_node, hw);
  // One flat ring over the dp group: each rank receives (n - 1)/n of the bytes, and a rank whose
  // ring neighbour is on another node moves all of it through one NIC port.
  const double port_bytes_per_s = hw.inter.bw_bytes_per_s_per_dir * hw.k.inter_eff / (hw.rdma ? 1.0 : hw.k.tcp_penalty);
  const double steps_latency = (n - 1) * (hw.k.collective_latency_s + hw.inter.latency_s.value_or(0));
  return (n - 1) / n * bytes / port_bytes_per_s + gathers * steps_latency;
}

Fp8CastTime Fp8CastLayerTime(const Arch& a, const EfficiencyConstants& k, double T, double rep, double t,
                             double f_act, double hbm) {
  const double h = static_cast<double>(a.hidden);
  // Forward inputs of the linears: the normed inputs of qkv and fc1 (2h), the attention output
  // (q width) and the activation output (f_act). Backward: the gradients of the linears' outputs.
  const double norm_out = 2 * h / rep, attn_out = a.QDim() / t, act_out = f_act / t;
  const double qkv_grad = (a.QDim() + 2.0 * a.KvDim()) / t, resid_grad = 2 * h / rep;
  const double fc1_grad = (a.MlpMatrices() - 1) * f_act / t;
  Fp8CastTime c;
  if (!k.fp8_fused_producers) {
    c.fwd_s = T * (norm_out + attn_out + act_out) * k.fp8_cast_bytes / hbm;
    c.bwd_s = T * (qkv_grad + resid_grad + fc1_grad) * k.fp8_cast_bytes / hbm;
    return c;
  }
  // Transformer Engine: LayerNormLinear / LayerNormMLP write the norm's and the activation's fp8
  // output (and its transpose) from the norm / activation kernel, and the fc1 gradient comes out
  // of the fused dact-cast-transpose; the attention output and the other output gradients pass
  // through a standalone cast-transpose.
  c.fwd_s = T * ((norm_out + act_out) * k.fp8_cast_bytes + attn_out * k.fp8_standalone_cast_bytes) / hbm;
  c.bwd_s = T * (fc1_grad * k.fp8_cast_bytes + (qkv_grad + resid_grad) * k.fp8_standalone_cast_bytes) / hbm;
  return c;
}

}  // namespace gpuplan
