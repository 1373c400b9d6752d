// Fine-tuning terms of the step time (docs/model/finetune.md mirrors this one-to-one): the LoRA
// family's adapter GEMMs, a quantized base's dequantization, and how samples shorter than
// seq_len fill a micro-batch (padding vs packing). EstimateStep calls these per layer.
#pragma once

#include "gpuplan/estimate.h"
#include "gpuplan/job.h"

namespace gpuplan {

// Adapter work of one transformer layer for one micro-batch of `tokens` tokens on this GPU.
struct AdapterCost {
  double fwd_s = 0, bwd_s = 0;          // seconds (forward; backward incl. adapter weight grads)
  double fwd_flops = 0, bwd_flops = 0;  // as executed
};
AdapterCost AdapterLayerCost(const Job& job, const HardwareContext& hw, double tokens);

// Seconds to dequantize one layer's frozen quantized base for one pass (forward, backward or
// recompute each dequantize again); 0 for an unquantized base.
double DequantLayerTime(const Job& job, const HardwareContext& hw);

// The sequence length one micro-batch is computed at (seq_len when packed or padded to max;
// shorter when padded to the longest sample of the micro-batch).
double ComputeSeqLen(const TrainingSpec& t);
// Non-padding tokens per sequence slot (what a user counts as trained tokens).
double UsefulTokensPerSequence(const TrainingSpec& t);

// C§5 the optimizer step over `params` local trainable parameters (after ZeRO sharding): on the
// GPU a memory-bound pass; with parallel.offload gradients down and weights up over PCIe and
// CPU-Adam on the host's vCPUs. grad_bytes / weight_bytes per parameter.
double OptimizerStepTime(const Job& job, const HardwareContext& hw, double params, double grad_bytes,
                         double weight_bytes);

// Exposed seconds per micro-batch of moving saved activations to host memory and back
// (training.activation_offload) for `layers` layers on this GPU; 0 when off.
double ActivationOffloadTime(const Job& job, const HardwareContext& hw, double layers);

}  // namespace gpuplan
