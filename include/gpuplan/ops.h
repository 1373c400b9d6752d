// One transformer layer as a list of ops, and the training passes as folds over it
// (docs/model/compute.md §7 names each op and the formula section it comes from).
//
// A layer is the ops one GPU runs for one micro-batch: the GEMMs with their shapes, the attention
// core, the memory-bound elementwise ops (norms, residual adds, rotary, activation), fp8 casts,
// LoRA adapters and a quantized base's dequantization. Each op carries its forward and backward
// FLOPs and GPU seconds, its HBM traffic, its kernel launches and its host dispatches; a pass is a
// fold: forward, backward (input + weight gradients unless the base is frozen), recompute (full:
// the forward again; selective: each op's share of it). EstimateStep times a micro-batch by
// these folds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/estimate.h"
#include "gpuplan/job.h"

namespace gpuplan {

enum class OpKind { kGemm, kAttention, kElementwise, kCast, kDequant, kAdapter, kLoss };
std::string ToString(OpKind k);  // gemm, attention, elementwise, cast, dequant, adapter, loss

// One op of one average layer (MoE: an op of the MoE layers is weighted by their share of the
// layers, layer_share), for one micro-batch on one GPU (its tensor-parallel shard).
struct Op {
  std::string_view name;             // Default: "". (a literal: no allocation per estimate) e.g. "qkv_proj", "attention_core", "norms"
  OpKind kind = OpKind::kGemm;       // Default: gemm.
  std::string_view section;          // Default: "". docs/model section of its formula, e.g. "C§2"
  double layer_share = 1;            // Default: 1. share of the layers that run it (already in the numbers)
  double fwd_flops = 0, bwd_flops = 0;  // Default: 0. as executed (causal attention halved)
  double hbm_bytes = 0;              // Default: 0. forward HBM bytes read + written
  double weight_elems = 0;           // Default: 0. a GEMM's weight elements on this GPU (in hbm_bytes; serving reads them per step)
  double fwd_s = 0, bwd_s = 0;       // Default: 0. GPU seconds, launch gaps excluded
  double fwd_kernels = 0, bwd_kernels = 0;  // Default: 0. non-GEMM launches (F§2: kernel_gap_s each)
  double fwd_host_ops = 0, bwd_host_ops = 0;  // Default: 0. host dispatches beyond host_ops_per_layer
  double saved_bytes = 0;            // Default: 0. kept for backward (memory.md §3 counts it per layer)
  double selective_share = 0;        // Default: 0. share of fwd_s and fwd_flops selective recompute reruns
  bool full_recompute_flops = true;  // Default: true. its FLOPs count in F_rc under full recompute
};

// C§4 attention backward / forward: 2.5 for flash attention (FlashAttention-2 §4.1: 5 vs 2
// matmuls), 2 for eager attention.
double AttentionBackwardFactor(const TrainingSpec& tr);

// C§2 keys each query attends, averaged over the layer's queries: the hook for windowed
// attention. Causal flash kernels skip the masked half (s/2); eager attention computes all s.
double AttendedKeys(const Job& job, double seq_len);

// C§2 time of an m x n x k GEMM at matmul_eff_max x d/(d + d_half), d = min(m, n, k), plus
// matmul_fixed_s; `peak_flops` is the rate the GEMM runs at.
double GemmTime(double m, double n, double k, double peak_flops, const EfficiencyConstants& c);

// The tokens one micro-batch puts through this GPU's layers (micro_batch x ComputeSeqLen / cp).
double MicroBatchTokens(const Job& job);

// The ops of one average layer for `tokens` tokens per GPU at sequence length `seq_len` (the
// keys the attention core sees). hw must come from ResolveHardware (peaks and bandwidth known).
std::vector<Op> LayerOps(const Job& job, const HardwareContext& hw, double tokens, double seq_len);
// The output layer and the loss, on the last pipeline stage.
std::vector<Op> HeadOps(const Job& job, const HardwareContext& hw, double tokens);

// One layer's passes (seconds per micro-batch, FLOPs as executed).
struct LayerPasses {
  double fwd_s = 0, bwd_s = 0, recompute_s = 0;  // each pass the longer of GPU and host (F§2)
  double gpu_fwd_s = 0, gpu_bwd_s = 0;    // the ops' GPU seconds with their kernel gaps
  double host_fwd_s = 0, host_bwd_s = 0;  // the host's dispatch of the pass
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double attention_fwd_s = 0;  // the attention core's forward (communication.md N§4 hides CP under it)
};
double OpForwardSeconds(const Op& op, const EfficiencyConstants& k);   // fwd_s + its kernel gaps
double OpBackwardSeconds(const Op& op, const EfficiencyConstants& k);  // bwd_s + its kernel gaps
LayerPasses FoldLayer(const std::vector<Op>& ops, const Job& job, const EfficiencyConstants& k);
// MX§7 the model's GPU forward time of one layer of the job (one micro-batch at its seq_len), before
// layer_time_scale: what a profiler's per-layer forward time is compared with.
double UnscaledLayerForwardSeconds(const Job& job, const HardwareContext& hw);

}  // namespace gpuplan
