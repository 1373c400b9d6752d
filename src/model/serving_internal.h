// Shared by the serving model's files (src/model/serving*.cc); docs/model/serving.md.
#pragma once

#include "gpuplan/estimate.h"
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

// S§3 what EstimateServing resolves once and every step evaluation reads.
struct ServingContext {
  Job job;                  // InferenceJob
  HardwareContext hw;
  ServingEngineProfile engine;
  ServingLimits lim;
  ServingWeights weights;
  double weight_bpp = 2;    // stored bytes per quantised parameter
  double kv_per_token_gpu = 0;
  double hbm = 0;           // achievable HBM bytes/s
  double step_fixed_s = 0, step_per_seq_s = 0, graph_gap_s = 0;
  double frontend_s = 0;    // S§4 per request: HTTP, tokenisation, the first token's detokenisation
  int64_t stage_layers = 0;
};

// S§3 one engine step: `batch` decode tokens at `context` keys each and `prefill` prompt tokens of
// prompts `prompt_len` long (serving.cc).
StepTime ServingStep(const ServingContext& c, double batch, double context, double prefill, double prompt_len);

// S§7 a finite list of requests through one replica, step by step (serving_sim.cc).
struct SimulatedRun {
  Latency ttft_s, tpot_s;
  double makespan_s = 0;
  double output_tokens = 0, input_tokens = 0, requests = 0;
  double mean_running = 0;     // decode batch averaged over the steps' time
  int64_t steps = 0, preemptions = 0;
  StepTime mean_step;          // the step at the time-averaged batch and context (for the bottleneck)
};
SimulatedRun SimulateRequests(const ServingContext& c, const std::vector<double>& input_lens,
                              const std::vector<double>& output_lens, int64_t kv_capacity_tokens);

}  // namespace gpuplan
