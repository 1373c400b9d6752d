// Inference serving: KV cache, capacity as the engine sizes it at start-up, prefill and decode as
// passes over the training model's op lists, continuous batching and queueing, cost per token.
// docs/model/serving.md (S§n) mirrors this file one-to-one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"

namespace gpuplan {

// One serving engine at one version (data/serving_engines.csv): how it sizes its KV cache at
// start-up and schedules requests. Every row names its source (the engine's code or docs).
struct ServingEngineProfile {
  std::string engine;               // vllm, sglang, tensorrt-llm, generic
  std::string version;              // e.g. "0.19"; rows of one engine are ordered oldest first
  int64_t block_size = 16;          // tokens per KV block (capacity rounds down to whole blocks)
  // S§2 the memory fraction: its flag, its default, and what it is a fraction of: "total" = device
  // memory (vLLM gpu_memory_utilization, SGLang mem_fraction_static: budget = f x total - used),
  // "free" = the memory left after weights and the profile run (TensorRT-LLM
  // kv_cache_free_gpu_mem_fraction: KV = f x free).
  std::string memory_fraction_key;
  double memory_fraction_default = 0.9;
  std::string memory_fraction_of = "total";
  // S§2 CUDA graphs: captured before the KV cache is sized (their memory comes out of the budget)
  // or after (vLLM >= 0.19: outside it); and their size: bytes per captured batch size per layer.
  bool cuda_graph_before_kv = false;
  double cuda_graph_bytes = 0;      // per GPU (calibrated; 0 when the engine runs eager)
  // S§2 memory outside the torch allocator (NCCL buffers, CUDA context beyond the first): one GPU
  // and tensor-parallel ranks.
  double non_torch_bytes_tp1 = 0, non_torch_bytes_tp = 0;
  // S§2 the profile run's activation peak: a forward of max_num_batched_tokens tokens; bytes per
  // token per unit of (hidden + mlp intermediate / tp), plus the sampler's logits.
  double activation_bytes_per_token_elem = 0;
  double activation_fixed_bytes = 0;
  // The sampler's peak on the last pipeline stage: bytes per (sequence x vocab entry) for
  // min(max_num_seqs, max_num_batched_tokens) dummy sequences (fp32 logits and the sampler's
  // copies); the profile peak is the larger of the forward and the sampler (S§2, calibrated).
  double activation_sampler_bytes_per_seq_vocab = 0;
  // S§4 scheduler defaults: sequences in flight, tokens per step (chunked prefill budget), on large
  // GPUs (>= large_gpu_min_bytes and not in small_gpu_families) and on the others.
  int64_t max_num_seqs_large = 256, max_num_seqs_small = 256;
  int64_t max_num_batched_tokens_large = 8192, max_num_batched_tokens_small = 2048;
  double large_gpu_min_bytes = 0;
  std::string large_gpu_excludes;   // GPU names containing this are never large (vLLM: "a100")
  bool chunked_prefill = true;      // prefill chunks share steps with decodes (Sarathi-Serve)
  std::string launch_command;       // vllm serve | python3 -m sglang.launch_server | trtllm-serve | ""
  std::string source, date, notes;
  // Set by FindServingEngine when the asked version has no row of its own and an older one stands in.
  std::string version_note;
  Location where;
};

// The built-in data/serving_engines.csv (and user rows of the same header through overrides).
Result<std::vector<ServingEngineProfile>> LoadServingEngines(const std::vector<std::string>& override_files = {});
// The profile for engine at version ("" = its newest row); an error names the known versions.
Result<ServingEngineProfile> FindServingEngine(const std::vector<ServingEngineProfile>& engines,
                                               const std::string& engine, const std::string& version,
                                               const Location& where);

// S§1 bytes of one parameter stored at a weight format (int4 formats include their group scales).
double WeightBytesPerParam(WeightFormat w, const Calibration& cal);
// Why this GPU cannot run weights in this format ("" when it can): fp8 needs fp8 support
// (or a Marlin-style weight-only kernel, data), fp4 needs Blackwell.
std::string WeightFormatProblem(WeightFormat w, const GpuSpec& gpu);

// S§1 KV bytes per token for the whole model at the KV dtype: 2 x L x kv_heads x head_dim x bytes
// (MHA/GQA/MQA), (kv_lora_rank + qk_rope_head_dim) x L x bytes (MLA).
double KvBytesPerToken(const Arch& arch, KvDtype kv, Precision compute);
// The same on one GPU: kv_heads split over tp (at least one head per rank), MLA replicated on
// every rank, layers split over pp.
double KvBytesPerTokenPerGpu(const Arch& arch, KvDtype kv, Precision compute, int64_t tp, int64_t pp);

// S§2 one GPU's memory at engine start-up and the KV cache it leaves.
struct ServingMemory {
  double device_bytes = 0;          // what the engine sees (catalog memory)
  double budget_bytes = 0;          // memory fraction x device (or x free, "free" engines)
  double weights_bytes = 0;
  double activation_bytes = 0;      // the profile run's peak
  double non_torch_bytes = 0;
  double cuda_graph_bytes = 0;      // counted in the budget only when cuda_graph_before_kv
  double kv_bytes = 0;              // what is left for the KV cache (may be negative: does not fit)
};

// S§3 one step of the engine: decode for `batch` sequences at `context` tokens each, plus
// `prefill_tokens` prompt tokens chunked into the same step. Folded over LayerOps/HeadOps.
struct StepTime {
  double total_s = 0;
  double weights_read_s = 0;        // weights (and touched experts) streamed from HBM
  double kv_read_s = 0;             // KV cache read by the attention of decode tokens
  double compute_s = 0;             // GEMM + attention math beyond what overlaps the reads
  double tp_comm_s = 0;             // all-reduces per layer (and pp hops)
  double overhead_s = 0;            // host scheduling, sampler, kernel launches (calibrated)
};

struct Latency {
  double mean = 0, p90 = 0;
};

struct ServingEstimate {
  std::string engine, engine_version;
  ServingMemory memory;             // per GPU
  double kv_bytes_per_token = 0;    // whole model
  double kv_bytes_per_token_per_gpu = 0;
  int64_t kv_capacity_tokens = 0;   // per replica, whole blocks, as the engine logs it
  int64_t max_model_len = 0;
  int64_t max_num_seqs = 0, max_num_batched_tokens = 0;
  double max_concurrency = 0;       // kv_capacity_tokens / max_concurrency_at_tokens
  double max_concurrency_at_tokens = 0;
  double concurrency = 0;           // sequences running per replica in the modelled steady state
  Latency ttft_s, tpot_s;
  double frontend_s = 0;            // of the TTFT: the server's front end (HTTP, tokenisation), S§4
  StepTime decode_step;             // the steady-state step
  double prefill_s = 0;             // one mean prompt's prefill alone
  double output_tokens_per_s = 0, output_tokens_per_s_per_gpu = 0, input_tokens_per_s = 0;
  double requests_per_s = 0;
  // S§7 serving.num_requests: the simulated batch (0 steps when the load is a steady state).
  int64_t simulated_steps = 0, simulated_preemptions = 0;
  double makespan_s = 0;            // first request in to last token out, per replica
  int64_t num_gpus = 0, replicas = 1;
  std::optional<double> usd_per_gpu_hour;  // price used (nullopt: unpriced)
  std::string price_instance;       // the catalog instance the price comes from
  std::optional<double> cost_per_million_output_tokens_usd, cost_per_million_input_tokens_usd;
  bool fits = true;                 // false: weights + reserves exceed the budget, or no room for one sequence
  std::string fit_problem;          // why not, with the numbers
  std::vector<std::string> what_would_fit;  // computed alternatives (quantise, more cards, tp)
  bool saturated = false;           // the request rate is above what the setup serves
  std::string bottleneck;           // one sentence
  std::vector<std::string> notes;   // assumptions a user should know (efficiency borrowed, ...)
};

// The whole serving estimate for job.serving on job.cluster.gpu with job.parallel tp/pp and dp
// replicas. Errors: bad combinations (fp4 on a GPU without it, tp not dividing heads, ...).
Result<ServingEstimate> EstimateServing(const Job& job, const Catalog& catalog, const Calibration& cal,
                                        const std::vector<ServingEngineProfile>& engines);

// S§7 the lengths of n requests whose mean and p90 are given: all `mean` when p90 <= mean, else a
// lognormal with that mean and p90 read at the n quantiles (k + 0.5) / n (rescaled to the mean),
// request i taking quantile (i x m) mod n for m coprime to n near order_share x n (no sort by length).
std::vector<double> RequestLengths(double mean, double p90, int64_t n, double order_share);

// The engine's launch line for this job (vllm serve ..., python3 -m sglang.launch_server ...,
// trtllm-serve ...): the flags the estimate assumed.
std::string ServingLaunchLine(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine);

}  // namespace gpuplan
