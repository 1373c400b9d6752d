// Step time, throughput and time to train (docs/model/compute.md, communication.md, pipeline.md,
// io.md mirror this one-to-one).
#pragma once

#include <string>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/job.h"
#include "gpuplan/memory.h"

namespace gpuplan {

// Calibration constants resolved once for a GPU (hot-path friendly: no map lookups per estimate).
struct EfficiencyConstants {
  double matmul_eff_max = 0, matmul_dim_half = 0, matmul_fixed_s = 0;
  double flash_eff = 0, eager_attn_eff = 0, hbm_eff = 0;
  double framework_overhead = 1, step_fixed_s = 0;
  double zero3_hook_s = 0;
  double dequant_eff_nf4 = 0, dequant_eff_awq = 0;  // FT§3 share of memory bandwidth the dequant kernels reach  // F§9 host time per module per pass of the framework's ZeRO-3 parameter hooks
  double intra_eff = 0, intra_allreduce_eff = 0, inter_eff = 0;
  double tcp_penalty = 1, hierarchical_inter_factor = 1, collective_latency_s = 0;
  double tp_overlap = 0, dp_overlap = 0, cp_overlap = 0, pp_overlap = 0;
  double dp_overlap_zero0 = 0;  // F§5 the same without ZeRO (engines that all-reduce after the backward)
  double optimizer_bytes_per_param = 0;
  // Framework mechanisms (docs/model/frameworks.md F§n), resolved for the job's
  // training.framework and training.compile:
  // F§1 elementwise HBM traffic, in elements read + written per element of the op's tensor
  // (forward; backward 2x), and F§2 the kernels each op launches.
  double e_norm = 0, e_rope = 0, e_residual = 0, e_act = 0;  // e_act: per MLP element
  double n_norm = 0, n_rope = 0, n_residual = 0, n_act = 0;
  double e_norm_ln = 0, n_norm_ln = 0;  // LayerNorm: one native kernel even in eager PyTorch
  double e_gelu = 0, n_gelu = 0;        // GELU MLP: one kernel, fused or not
  double e_fp32_residual = 0, e_weight_cast = 0;  // F§1 autocast over fp32 parameters (0 when off)
  double nccl_overlap_slowdown = 0;     // F§5 compute slowdown per second of overlapped DP traffic
  double kernel_gap_s = 0;  // F§2 GPU-side idle per non-GEMM kernel
  double cpu_op_s = 0;      // F§2 host dispatch per op (0 under CUDA graphs)
  double host_ops_per_layer = 0;  // F§2 ops one layer's forward dispatches from the host
  double loss_bytes_per_logit = 0;  // F§3 cross-entropy HBM bytes per logit (forward + backward)
  bool tp_userbuffers = false;      // F§5 TP collectives split and overlapped with the GEMMs
  bool fused_softmax = false;       // F§4 non-flash attention as GEMMs + one fused softmax
  double e_scores = 0;              // F§4 elements moved per attention score on that path
  double fp8_cast_bytes = 0;        // F§6 extra bytes per fp8-quantized element
  double clock_factor = 1;          // H§1 sustained clock / the clock the catalog peaks assume
  double layer_time_scale = 1;      // H§3 measured / modelled GPU time of one layer (a profiler's per-layer time)
  // N§9 DeepSpeed ZeRO-3 parameter gathers (flat ring per module, one NIC port per rank across
  // nodes) instead of N§4's FSDP gathers, and the share of a pass's compute that hides them.
  bool zero3_flat_gathers = false;
  double zero3_gather_overlap = 0;
  double fp8_standalone_cast_bytes = 0;  // F§6 bytes per element of a standalone cast(-transpose)
  bool pp_scatter_gather = false;   // P§4 pipeline sends split 1/tp per rank without SP (all-gather after)
  bool fp8_fused_producers = false; // F§6 norm / activation kernels emit fp8 (Transformer Engine)
};

// The hardware a job runs on, resolved from the catalog (defaults by GPU, printed by the CLI).
struct HardwareContext {
  GpuSpec gpu;
  LinkSpec intra;              // GPU-to-GPU inside a node
  LinkSpec inter;              // node-to-node network, per NIC
  double intra_bytes_per_s = 0;  // per GPU, one direction (line rate)
  double inter_bytes_per_s_per_gpu = 0;  // NIC bandwidth available to one GPU (line rate, after oversubscription)
  double nics_per_node = 0;
  double host_bytes_per_s = 0;       // GPU <-> host (PCIe of the GPU's generation, achievable)
  double rdma_reference_bytes_per_s = 0;  // one NDR port per GPU, achievable: the "with RDMA" what-if
  bool rdma = false;           // RDMA-capable fabric with GPUDirect
  bool intra_default = false, inter_default = false;  // chosen by gpuplan, not the user
  std::optional<StorageSpec> storage;
  EfficiencyConstants k;
  // Non-empty when a constant used for this GPU is not measured for it (borrowed from another
  // family or an assumption): every output that uses the estimate prints it.
  std::string efficiency_note;
  Calibration cal;
};

Result<HardwareContext> ResolveHardware(const Job& job, const Catalog& catalog, const Calibration& cal);

struct StepBreakdown {
  double compute_s = 0;    // matmuls, attention, elementwise, recompute (all micro-batches)
  double tp_comm_s = 0;    // exposed tensor-parallel collectives
  double cp_comm_s = 0;    // exposed context-parallel K/V exchange
  double pp_comm_s = 0;    // exposed pipeline send/recv
  double dp_comm_s = 0;    // exposed data-parallel / ZeRO / FSDP traffic
  double ep_comm_s = 0;    // expert all-to-all
  double bubble_s = 0;     // pipeline fill and drain
  double data_s = 0;       // data-loader stall
  double optimizer_s = 0;  // optimizer step
  double checkpoint_s = 0; // checkpoint stall, amortized per step
  double overhead_s = 0;   // fixed per-step overhead (calibration)
  double Total() const {
    return compute_s + tp_comm_s + cp_comm_s + pp_comm_s + dp_comm_s + ep_comm_s + bubble_s + data_s +
           optimizer_s + checkpoint_s + overhead_s;
  }
};

// Unexposed volumes and times, for explanations.
struct CommDetail {
  double tp_bytes = 0, tp_s = 0;   // per step per GPU, before overlap
  double cp_bytes = 0, cp_s = 0;
  double pp_bytes = 0, pp_s = 0;
  double dp_bytes = 0, dp_s = 0;
  double ep_bytes = 0, ep_s = 0;
  bool dp_crosses_nodes = false, tp_crosses_nodes = false;
  double dp_busbw_bytes_per_s = 0;
  // P§4 pipeline hops with Megatron's rank order (pp outermost): stage boundaries (the
  // interleaved wrap from the last stage to the first included), those whose neighbours sit on
  // different nodes, the bytes the busiest node sends to other nodes per step, and the time of
  // the intra-node and the cross-node hops (pp_s is the slower of the two).
  int64_t pp_boundaries = 0, pp_cross_boundaries = 0;
  double pp_cross_node_bytes = 0, pp_intra_s = 0, pp_cross_s = 0;
  bool pp_crosses_nodes = false;
};

struct StepEstimate {
  StepBreakdown breakdown;
  CommDetail comm;
  double step_time_s = 0;
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  // Non-padding tokens per second per GPU: below tokens_per_s_per_gpu when samples shorter than
  // seq_len are padded (training.padding max_length / longest), equal when packed.
  double useful_tokens_per_s_per_gpu = 0;
  double model_flops_per_token = 0;     // 6N + 12·L·h·s (llm-foundry convention)
  double hardware_flops_per_step = 0;   // all GPUs, as executed (recompute, causal attention halved)
  double recompute_flops_per_step = 0;  // all GPUs
  double mfu = 0, hfu = 0;
  double model_tflops_per_gpu = 0;
  double time_to_train_s = 0, gpu_hours = 0;
  double checkpoint_bytes = 0, checkpoint_write_s = 0;
  double peak_flops = 0;                // per GPU at the training precision
  int64_t grad_accum = 1;
  double head_compute_s = 0;            // of breakdown.compute_s: the output layer (the last stage's alone)
  bool feasible = true;                 // false: a needed hardware number is unknown
  std::string infeasible_reason;
};

// Fast path for the search: no strings unless infeasible.
StepEstimate EstimateStep(const Job& job, const HardwareContext& hw);

// A change behind a bottleneck claim: job keys (as `gpuplan estimate` flags set them) and what
// EstimateStep / EstimateMemory give for the job with that change.
struct WhatIf {
  std::vector<std::pair<std::string, std::string>> changes;  // e.g. {"parallel.zero", "2"}
  std::string flags;         // the same as flags: "--zero 2"
  double step_time_s = 0;    // the changed job's step, re-estimated
  double memory_bytes = 0;   // the changed job's memory per GPU
  bool fits = false;
};
struct BottleneckReport {
  std::string sentence;          // the largest share of the step and what would shrink it
  std::vector<WhatIf> what_ifs;  // each "would cut the step to X" in the sentence, in order
};
// One exposed communication part of a step and the link it runs on (communication.md N§6/N§8).
struct CommPart {
  std::string part;       // tp, cp, pp, dp, ep
  std::string what;       // "pipeline send/recv", ...
  double exposed_s = 0;   // per step
  bool inter_node = false;
  std::string link;       // "<link name> (inter-node|intra-node, N GB/s per GPU)"
};
// The exposed parts, largest first (parts with none left out).
std::vector<CommPart> CommParts(const Job& job, const HardwareContext& hw, const StepEstimate& e);
// With a catalog, hardware changes (RDMA, local NVMe) are resolved from it as the flags would be;
// without one (nullptr) only job changes are tried.
BottleneckReport AnalyzeBottleneck(const Job& job, const Catalog* catalog, const HardwareContext& hw,
                                   const StepEstimate& e);
// AnalyzeBottleneck(job, nullptr, hw, e).sentence.
std::string Bottleneck(const Job& job, const HardwareContext& hw, const StepEstimate& e);

// Collective time for `bytes` (the full buffer, as nccl-tests' size) over a group of `n` ranks,
// `per_node` of them in each node (docs/model/communication.md §2-3).
enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
double CollectiveTime(Collective c, double bytes, int64_t n, int64_t per_node, const HardwareContext& hw);
// P§4 / N§7 the pipeline's send/recv per step: ranks placed tp, cp, dp fastest and pp slowest
// (Megatron-LM's order), `msg_bytes` per rank per hop, `micro_batches` per step; fills the pp_*
// fields of `cd` (pp_bytes per rank; pp_s = the slowest hop: intra-node, or the busiest node's
// NICs shared by every rank of it that sends across).
void PipelineP2P(const ParallelSpec& p, int64_t gpus_per_node, double msg_bytes, double micro_batches,
                 const HardwareContext& hw, CommDetail& cd);
// N§6 the GPUs that talk over the intra-node link: cluster.nvlink_domain, else the GPU's
// nvlink_domain_gpus (GB200 NVL72: 72) when its node link is NVLink/NVSwitch, else gpus_per_node.
// Collectives and pipeline hops place ranks in groups of this size ("node" in §2-§3).
int64_t NvlinkDomainGpus(const ClusterSpec& cluster, const GpuSpec& gpu, const LinkSpec& intra);
int64_t NvlinkDomainGpus(const Job& job, const HardwareContext& hw);
// nccl-tests bus bandwidth of that collective (bytes/s), for validation.
double BusBandwidth(Collective c, double bytes, int64_t n, int64_t per_node, const HardwareContext& hw);

// Model FLOPs per token: 6N + 12·L·h·s (N = every active parameter; MoE: top-k experts);
// 4N + 12·L·h·s when the base is frozen (LoRA/QLoRA: no weight gradients).
double ModelFlopsPerToken(const Arch& arch, int64_t seq_len, bool frozen_base = false);

}  // namespace gpuplan
