// Fine-tuning terms of the step time (docs/model/finetune.md mirrors this one-to-one, FT§n): the
// LoRA family's adapter GEMMs, a quantized base's dequantization, how samples shorter than
// seq_len fill a micro-batch (padding vs packing), the optimizer step and activation offload.
// EstimateStep calls these per layer.
#pragma once

#include "gpuplan/estimate.h"
#include "gpuplan/job.h"

namespace gpuplan {

// FT§1-2 adapter work of one transformer layer for one micro-batch of `tokens` tokens on this GPU.
// The seconds are GPU time: GEMMs at GemmTime's efficiency (with its fixed time per GEMM) and the
// adapters' elementwise traffic at hbm_eff. The op counts let a caller that models launch costs
// (F§2: kernel_gap_s per non-GEMM kernel, cpu_op_s per host-dispatched op) add them.
struct AdapterCost {
  double fwd_s = 0, bwd_s = 0;          // seconds (forward; backward incl. adapter weight grads)
  double fwd_flops = 0, bwd_flops = 0;  // as executed
  double fwd_gemms = 0, bwd_gemms = 0;  // GEMM launches (their fixed time is in the seconds)
  double fwd_kernels = 0, bwd_kernels = 0;  // non-GEMM kernels (elementwise, reductions)
};
AdapterCost AdapterLayerCost(const Job& job, const HardwareContext& hw, double tokens);

// FT§3 seconds to dequantize one layer's frozen quantized base, averaged over the passes
// EstimateStep adds it to (forward, backward, and the recompute with full recompute): a kernel
// that dequantizes in every pass (bitsandbytes NF4, AWQ) gives its per-pass time; GPTQ's torch
// path (the backward reuses the saved 16-bit weight) and int8 (only the backward dequantizes)
// are spread over the counted passes. 0 for an unquantized base.
double DequantLayerTime(const Job& job, const HardwareContext& hw);
// FT§3 the same for one pass that dequantizes, and how many of a micro-batch's passes do.
double DequantPassTime(const Job& job, const HardwareContext& hw);
double DequantPassesPerMicroBatch(const Job& job);

// FT§4 the sequence length one micro-batch is computed at (seq_len when packed or padded to max;
// the expected longest sample of the micro-batch when padded to the longest).
double ComputeSeqLen(const TrainingSpec& t);
// Non-padding tokens per sequence slot (what a user counts as trained tokens).
double UsefulTokensPerSequence(const TrainingSpec& t);
// FT§4 expected longest of n samples whose lengths follow the maximum-entropy law on [1, cap]
// with the given mean (a truncated exponential); exposed for tests.
double ExpectedLongestSample(double mean, double cap, int64_t n);

// FT§5 HBM bytes the optimizer step moves per trainable parameter, for the job's optimizer,
// master-weight choice and the framework's implementation (one fused kernel or torch's foreach
// sequence), with grad_bytes / weight_bytes per parameter as EstimateStep keeps them.
double OptimizerStepBytesPerParam(const Job& job, double grad_bytes, double weight_bytes);
// True when the job's framework runs AdamW as one fused kernel (FT§5 table).
bool FusedOptimizer(const Job& job);

// FT§5 the optimizer step over `params` local trainable parameters (after ZeRO sharding): on the
// GPU a memory-bound pass; with parallel.offload gradients down and weights up over PCIe and
// CPU-Adam on the host's vCPUs. grad_bytes / weight_bytes per parameter. With
// training.optimizer_in_backward the same bytes run inside every backward (each micro-batch).
double OptimizerStepTime(const Job& job, const HardwareContext& hw, double params, double grad_bytes,
                         double weight_bytes);

// FT§6 exposed seconds per micro-batch of moving saved activations to host memory and back
// (training.activation_offload) for `layers` layers on this GPU; 0 when off. The copies run on
// their own CUDA stream (torchtune OffloadActivations, use_streams): the device-to-host copies
// hide behind `fwd_compute_s` of forward compute and the prefetch behind `bwd_compute_s` of
// backward; with no compute given they are fully exposed.
double ActivationOffloadTime(const Job& job, const HardwareContext& hw, double layers, double fwd_compute_s = 0,
                             double bwd_compute_s = 0);

}  // namespace gpuplan
