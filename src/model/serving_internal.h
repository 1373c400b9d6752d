// Shared by the serving model's files (src/model/serving*.cc); docs/model/serving.md.
#pragma once

#include "gpuplan/memory.h"
#include "gpuplan/serving.h"

namespace gpuplan {

// The engine's limits as the job resolves them (serving.* keys, else the profile's defaults).
struct ServingLimits {
  double memory_fraction = 0.9;
  int64_t max_num_seqs = 256, max_num_batched_tokens = 8192, max_model_len = 0;
};
ServingLimits ResolveLimits(const Job& job, const GpuSpec& gpu, const ServingEngineProfile& e);

struct ServingWeights {
  double per_gpu_bytes = 0;  // the fullest GPU
  double layer_bytes = 0;    // one average decoder layer on one GPU
  double head_bytes = 0;     // the output layer (+ final norm) on one GPU
  double total_bytes = 0;    // the whole model
};
ServingWeights WeightsPerGpu(const Arch& a, WeightFormat w, int64_t tp, int64_t pp, const Calibration& cal);
double ActivationPeakBytes(const Arch& a, const ServingEngineProfile& e, int64_t tp, int64_t batched_tokens,
                           int64_t max_seqs);
ServingMemory StartupMemory(const Job& job, const GpuSpec& gpu, const ServingEngineProfile& e, const ServingLimits& lim,
                            const Calibration& cal);
int64_t KvCapacityTokens(double kv_bytes, double per_token_per_gpu, int64_t block_size);

}  // namespace gpuplan
