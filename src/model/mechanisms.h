// Engine mechanisms priced as the engines run them (docs/model/communication.md N§9, pipeline.md
// P§4, frameworks.md F§5/F§6): each a function EstimateStep calls from its TP, PP, ZeRO-3 and fp8
// lines. Internal to src/model.
#pragma once

#include "gpuplan/estimate.h"
#include "gpuplan/job.h"

namespace gpuplan {

// F§5 share of the TP collectives left on the critical path: TE userbuffers (sequence parallel)
// split each all-gather / reduce-scatter into tp chunks pipelined with the GEMM's chunks, so only
// the first chunk's transfer is exposed (1/tp); otherwise 1 - tp_comm_overlap.
double TpExposedShare(const EfficiencyConstants& k, bool sequence_parallel, double tp);

// P§4 the bytes one rank sends per pipeline hand-over: the whole T x h activation, 1/tp of it
// with sequence parallel, and 1/tp of it without SP where the framework scatters the send across
// the tp ranks (Megatron-LM's scatter-gather optimisation).
double PipelineSendBytes(const EfficiencyConstants& k, const ParallelSpec& p, double activation_bytes);

// P§4 the receiver's all-gather of the scattered chunks over the tp group (NVLink), per step:
// 0 unless the scatter-gather path is taken.
double PipelineGatherTime(const EfficiencyConstants& k, const ParallelSpec& p, int64_t tp_per_node,
                          double activation_bytes, double microbatches, const HardwareContext& hw);

// N§9 DeepSpeed ZeRO-3's parameter all-gather of `bytes` over `n` data-parallel ranks: one flat
// ring over the whole group per module, each rank's whole share over its own NIC port when the
// group spans nodes (no hierarchical split across the node's ports), plus the ring's n - 1 steps
// of latency for each of the `gathers` collectives the pass issues.
double DeepSpeedGatherTime(double bytes, int64_t n, int64_t per_node, double gathers, const HardwareContext& hw);

// F§6 fp8 cast time of one layer, forward and backward, at hbm_bytes_per_s. With Transformer
// Engine (fp8_fused_producers) the norm and activation kernels emit fp8 and its transpose
// themselves (fused producers); the attention output and the linear outputs' gradients go through
// a standalone cast-transpose.
struct Fp8CastTime { double fwd_s = 0, bwd_s = 0; };
Fp8CastTime Fp8CastLayerTime(const Arch& a, const EfficiencyConstants& k, double tokens, double rep, double tp,
                             double f_act, double hbm_bytes_per_s);

}  // namespace gpuplan
