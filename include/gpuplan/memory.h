// Training memory per GPU, broken down (docs/model/memory.md mirrors this one-to-one).
#pragma once

#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/job.h"

namespace gpuplan {

// One explained line of the breakdown.
struct MemoryItem {
  std::string category;  // weights|gradients|optimizer|activations|buffers|overhead
  std::string name;      // e.g. "optimizer states (fp32 master + m + v)"
  double bytes = 0;
  std::string formula;   // e.g. "12 B x 6.74e9 params / dp 8"
};

struct MemoryBreakdown {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double buffers_bytes = 0;
  double overhead_bytes = 0;
  double total_bytes = 0;
  // What PyTorch reports: peak allocated (torch.cuda.max_memory_allocated: live tensors) and peak
  // reserved (max_memory_reserved: allocated + the caching allocator's cached blocks). total_bytes
  // is what the GPU must hold (reserved + CUDA context + NCCL buffers, as nvidia-smi shows).
  double allocated_bytes = 0;
  double reserved_bytes = 0;
  double paged_bytes = 0;         // of optimizer_bytes: CUDA unified memory (paged optimizers), resident
                                  // on the GPU but outside the caching allocator (in total, not reserved)
  double host_bytes = 0;          // CPU memory needed by offload (per GPU)
  double params_on_gpu = 0;       // parameters held by this GPU's model-parallel shard (before ZeRO)
  int64_t total_params = 0;
  int64_t trainable_params = 0;
  int stage = 0;                  // pipeline stage this breakdown is for (the peak one)
  int64_t inflight_microbatches = 1;
  std::vector<MemoryItem> items;
};

// The numbers of one layer's saved activations, for one micro-batch (bytes); exposed for tests.
struct LayerActivation {
  double saved_bytes = 0;         // kept from forward to backward under the recompute policy
  double full_bytes = 0;          // what the layer saves with no recompute (the recompute working set)
  // Sequence parallelism: the full-sequence tensors a layer's backward materializes beyond its
  // saved ones (the two all-gathered inputs of the column-parallel linears and one row-parallel
  // output before its reduce-scatter), part of the recompute working set.
  double sp_gather_bytes = 0;
};
LayerActivation LayerActivationBytes(const Job& job, bool moe_layer);
// The same with a calibration's framework flags (data/frameworks.csv fused_norm, fused_act, mem_fp8_*).
LayerActivation LayerActivationBytes(const Job& job, bool moe_layer, const Calibration& cal);

// §3.6 the cross-entropy's logit-sized tensors, per logit element (tokens x vocab / tp), for the
// job's loss (training.loss; auto = the framework's default, data/frameworks.csv mem_loss_*).
struct LossMemory {
  LossKind kind = LossKind::kStandard;   // the kind after resolving auto
  double saved_bytes_per_logit = 0;      // kept from forward to backward (an activation)
  double transient_bytes_per_logit = 0;  // live only during the loss backward (a buffer)
  double chunks = 1;                     // chunked: chunks the logits are computed in
};
LossMemory ResolveLossMemory(const Job& job, const Calibration& cal = Calibration::Builtin());

// Peak over pipeline stages (first and last stage differ by embedding/logits).
// detail=false skips the explained items (the totals are identical): the search's fast path.
MemoryBreakdown EstimateMemory(const Job& job, const Calibration& cal = Calibration::Builtin(), bool detail = true);
MemoryBreakdown EstimateMemoryForStage(const Job& job, int stage, const Calibration& cal, bool detail = true);

// A memory-saving step and what it gives.
struct MemorySuggestion {
  std::string step;          // "recompute: full"
  std::string change;        // the key=value changes, e.g. "training.recompute=full"
  double total_bytes = 0;    // per-GPU total after the change
  double saved_bytes = 0;    // relative to the current job
  bool fits = false;
  int64_t num_gpus = 0;      // GPUs the change needs (more-GPU steps change it)
};

// Steps in order of cost (precision, recompute, micro-batch, ZeRO, offload, LoRA/QLoRA, more GPUs),
// each applied alone to the job.
std::vector<MemorySuggestion> SuggestMemorySavings(const Job& job, double capacity_bytes,
                                                   const Calibration& cal = Calibration::Builtin());

// Bytes per element of stored weights, gradients and activations for a precision.
double WeightBytesPerParam(const Job& job);
double GradBytesPerParam(const Job& job);
// Bytes per gradient element in the data-parallel reduction (4 with training.fp32_allreduce).
double ReduceBytesPerParam(const Job& job);
double OptimizerBytesPerParam(const Job& job);
double ActivationBytesPerElement(Precision p);

}  // namespace gpuplan
