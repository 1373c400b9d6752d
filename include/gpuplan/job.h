// The training job: model, training recipe, parallel layout and cluster. Parsed from YAML/JSON
// job files and CLI flags; every field is validated with the location it came from.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/arch.h"
#include "gpuplan/status.h"

namespace gpuplan {

enum class Method { kPretrain, kFull, kLora, kQlora, kDora };
enum class Precision { kFp32, kFp16, kBf16, kFp8 };
enum class Optimizer { kAdamW, kAdamW8bit, kPagedAdamW8bit, kAdafactor, kSgd };
// The training framework: what differs between them (fused kernels, overlap, loss, per-step
// overheads) is data (data/frameworks.csv), keyed by this name (docs/model/frameworks.md).
enum class Framework { kGeneric, kMegatron, kNemo, kTorchtitan, kTorchtune, kFsdp, kDeepspeed, kLlmFoundry, kHfTrainer, kUnsloth,
                       kMegatronBridge };
// fp32: mixed precision with an fp32 master copy; none: parameters and optimizer states in the
// compute dtype (torchtune's single-device bf16 recipes).
enum class MasterWeights { kFp32, kNone };
// Cross-entropy: standard materializes fp32 logits for the whole micro-batch; chunked computes
// them a chunk at a time (torchtune, Liger); fused never materializes them (Liger/Unsloth/
// torch.compile fusion). kAuto: the framework's default (data/frameworks.csv).
enum class LossKind { kAuto, kStandard, kChunked, kFused };
// The frozen base of a QLoRA run: bitsandbytes NF4 (default), GPTQ/AWQ 4-bit, or int8.
enum class BaseQuant { kNf4, kGptq, kAwq, kInt8 };
// FP8 scaling recipe (Transformer Engine / torchao).
enum class Fp8Recipe { kTensorwise, kDelayed, kRowwise, kMxfp8 };
// How samples shorter than seq_len fill a micro-batch: packed into full sequences, padded to
// seq_len, or padded to the longest sample of the micro-batch (HF's dynamic padding).
enum class Padding { kPacked, kPadToMax, kPadToLongest };

// LoRA-family methods: the base is frozen and only adapters train.
inline bool IsAdapterMethod(Method m) { return m == Method::kLora || m == Method::kQlora || m == Method::kDora; }
enum class Recompute { kNone, kSelective, kFull };
enum class Offload { kNone, kOptimizer, kOptimizerParams };

struct TrainingSpec {
  Method method = Method::kFull;          // Default: full fine-tune.
  int64_t seq_len = 2048;                 // Default: 2048 tokens.
  int64_t micro_batch = 1;                // Default: 1 sequence per GPU per micro-step.
  int64_t global_batch = 0;               // Default: 0 = micro_batch * dp (no accumulation).
  double tokens = 0;                      // Default: 0 (no time-to-train); or derived from samples below.
  // The fine-tuning way to say how much: tokens = samples x epochs x tokens_per_sample
  // (ApplyDatasetSize). Giving both tokens and samples is an error.
  double samples = 0;                     // Default: 0 = not given (use tokens).
  double epochs = 0;                      // Default: 0 = 1 epoch when samples is given.
  int64_t tokens_per_sample = 0;          // Default: 0 = seq_len (each sample padded/truncated to one sequence;
                                          // give the mean length when samples are packed).
  Precision precision = Precision::kBf16; // Default: bf16 mixed precision.
  Optimizer optimizer = Optimizer::kAdamW;  // Default: AdamW.
  Recompute recompute = Recompute::kNone;   // Default: none.
  bool flash_attention = true;            // Default: true (no s^2 score matrix is stored).
  bool fp32_grads = false;                // Default: false (grads in the compute dtype, ZeRO paper);
                                          // true models Megatron's fp32 main_grad / FSDP fp32 reduce.
  bool fp32_allreduce = false;            // Default: false (gradients reduced in their own dtype); true: 16-bit
                                          // gradients cast to fp32 for the data-parallel reduction (DeepSpeed
                                          // fp32_allreduce / communication_data_type fp32): 4 B per gradient
                                          // on the wire and an fp32 copy of the reduce bucket (docs/model).
  LoraSpec lora;                          // Used for lora/qlora.
  double data_bytes_per_token = 4;        // Default: 4 (pre-tokenized int32 ids read by the loader).
  double checkpoint_interval_min = 60;    // Default: 60 minutes between checkpoints.
  bool checkpoint_async = false;          // Default: false (training waits for the write).
  bool checkpoint_full_state = true;      // Default: true (weights + optimizer, resumable).
  Framework framework = Framework::kGeneric;  // Default: generic (no framework-specific mechanisms).
  bool compile = false;                   // Default: false (eager; true = torch.compile).
  MasterWeights master_weights = MasterWeights::kFp32;  // Default: fp32 master copy (mixed precision).
  bool optimizer_in_backward = false;     // Default: false (true: each parameter's step runs in backward).
  bool activation_offload = false;        // Default: false (true: saved activations go to host memory).
  LossKind loss = LossKind::kAuto;        // Default: the framework's cross-entropy.
  BaseQuant quant = BaseQuant::kNf4;      // Default: NF4 (QLoRA only).
  Fp8Recipe fp8_recipe = Fp8Recipe::kTensorwise;  // Default: tensorwise scaling (fp8 only).
  Padding padding = Padding::kPacked;     // Default: packed (every micro-batch is seq_len tokens).
  // Fused kernels the model code adds on top of the framework's (Liger kernels, flash-attn's fused
  // RMSNorm/rotary in a model's own code): a set of kFused* bits. Default: none beyond the framework's.
  int fused_ops = 0;
  // F§5 TP-communication overlap (Transformer Engine userbuffers, with sequence parallel): -1 = the
  // framework's default (framework.<name>.tp_comm_overlap, data/frameworks.csv), 0 off, 1 on.
  int tp_comm_overlap = -1;               // Default: -1 (the framework's).
};
constexpr int kFusedNorm = 1, kFusedRope = 2, kFusedAct = 4, kFusedLoss = 8;

struct ParallelSpec {
  int64_t tp = 1;                 // Default: 1 (tensor parallel).
  int64_t pp = 1;                 // Default: 1 (pipeline stages).
  int64_t dp = 0;                 // Default: 0 = num_gpus / (tp * pp * cp).
  int64_t cp = 1;                 // Default: 1 (context parallel).
  int64_t vpp = 1;                // Default: 1 (virtual stages per pipeline rank; >1 interleaves).
  int64_t ep = 1;                 // Default: 1 (expert parallel).
  bool sequence_parallel = false; // Default: false (Megatron SP with TP).
  int zero = 0;                   // Default: 0 (ZeRO stage; 3 = FSDP full shard).
  Offload offload = Offload::kNone;  // Default: none.
  // Transformer blocks per pipeline stage (size pp, sum = layers), for uneven stages on a mixed pool
  // (docs/model/pools.md). Default: empty = even (the remainder on the first stages).
  std::vector<int64_t> layer_split;
};

struct ClusterSpec {
  std::string gpu = "h100-sxm-80gb";  // Default: h100-sxm-80gb.
  int64_t num_gpus = 0;           // Default: 0 = tp * pp * cp * max(dp, 1).
  int64_t gpus_per_node = 8;      // Default: 8.
  // GPUs one NVLink/NVSwitch fabric joins (GB200/GB300 NVL72: 72 across 18 trays of 4); a multiple
  // of gpus_per_node. Default: 0 = the GPU's nvlink_domain_gpus (gpus.csv) on NVLink parts, else the node.
  int64_t nvlink_domain = 0;
  std::string intra_node;         // Default: "" = the GPU's own link (catalog).
  std::string network;            // Default: "" = by GPU class (docs/model/communication.md).
  int64_t nics_per_node = 0;      // Default: 0 = one per GPU (rail-optimized) on RDMA fabrics, one per node on TCP.
  bool gpudirect_rdma = true;     // Default: true (ignored on TCP).
  double oversubscription = 1.0;  // Default: 1.0 (non-blocking fabric).
  std::string storage;            // Default: "" = none (no data/checkpoint stall modelled; said in output).
  double power_limit_w = 0;       // Default: 0 = the GPU's rated board power (nvidia-smi -pl lowers it).
  int64_t cpu_cores_per_gpu = 0;  // Default: 0 = unknown (no host check); else checked against calibration host_vcpus_per_gpu_min.
};

// Inference serving (the `serving:` section; docs/model/serving.md). Weights as stored for the engine:
// bf16/fp16, fp8 (W8A8 on GPUs with fp8, else weight-only), int8 (W8A8), int4 AWQ/GPTQ (weight-only,
// group scales), fp4 (NVFP4/MXFP4, Blackwell).
enum class WeightFormat { kBf16, kFp16, kFp8, kInt8, kInt4Awq, kInt4Gptq, kFp4 };
// KV cache dtype: auto = the model's compute dtype (bf16/fp16), fp8 = e4m3/e5m2.
enum class KvDtype { kAuto, kFp8 };
// What load the estimate is asked at: a fixed number of users in flight (closed loop), a Poisson
// request rate (open loop), or the most the setup serves (all requests at once).
// kNumRequests: a finite list of requests sent at once (an offline batch), simulated step by step (S§7).
enum class ServingLoad { kConcurrency, kRequestRate, kMaxThroughput, kNumRequests };

struct ServingSpec {
  std::string engine = "vllm";        // Default: vllm (vllm | sglang | tensorrt-llm | generic).
  std::string engine_version;         // Default: "" = the newest profile of the engine.
  WeightFormat weights = WeightFormat::kBf16;  // Default: bf16.
  KvDtype kv_dtype = KvDtype::kAuto;  // Default: auto (the model dtype).
  double gpu_memory_utilization = 0;  // Default: 0 = the engine's default memory fraction.
  int64_t max_model_len = 0;          // Default: 0 = input_len_p90 + output_len_p90 (or the means).
  int64_t max_num_seqs = 0;           // Default: 0 = the engine's default for the GPU.
  int64_t max_num_batched_tokens = 0; // Default: 0 = the engine's default for the GPU.
  double input_len = 1000;            // Default: 1000 tokens (mean prompt).
  double output_len = 200;            // Default: 200 tokens (mean completion).
  double input_len_p90 = 0;           // Default: 0 = fixed lengths (p90 = mean).
  double output_len_p90 = 0;          // Default: 0 = fixed lengths.
  ServingLoad load = ServingLoad::kConcurrency;  // Default: concurrency.
  double concurrency = 1;             // Default: 1 request in flight.
  double request_rate = 0;            // Default: 0 (requests/s when load is request_rate).
  int64_t num_requests = 0;           // Default: 0 (requests sent at t=0 when load is num_requests).
  bool frontend = true;               // Default: true (an HTTP endpoint); false = the engine called directly (offline).
  // --plan: the SLA and the load target.
  double ttft_p90_ms = 0;             // Default: 0 = no TTFT bound.
  double tpot_p90_ms = 0;             // Default: 0 = no TPOT bound.
  double target_output_tokens_per_s = 0;  // Default: 0 = none (a request_rate target instead).
};

enum class Objective { kTime, kCost, kBalanced };
enum class SpotPolicy { kNo, kAllowed, kOnly };

// What the planner must respect (the `constraints:` section; flags mirror it).
struct Constraints {
  double deadline_hours = 0;        // Default: 0 = no deadline.
  double budget_usd = 0;            // Default: 0 = no budget limit.
  int64_t max_gpus = 1024;          // Default: 1024.
  std::vector<std::string> clouds;  // Default: all providers in the catalog.
  std::vector<std::string> gpus;    // Default: every GPU id.
  std::vector<Precision> precisions;  // Default: empty = bf16 (fp16 where the GPU has no bf16);
                                      // training.precision, when set, wins.
  SpotPolicy spot = SpotPolicy::kNo;  // Default: no (on-demand prices).
  double min_memory_headroom = 0.05;  // Default: unset = the p90 under-prediction of the nearest
                                      // validated group's memory band (data/error_bands.csv; else
                                      // calibration memory_model_error_margin); the 0.05 applies only
                                      // to callers that read it without checking IsSet.
  Objective objective = Objective::kBalanced;  // Default: balanced (time x cost).
  double rerun_factor = 1.3;        // Default: 1.3 (practitioners budget 1.3-1.5x the pure training time; docs/model/planner.md).
  bool allow_tp_across_nodes = false;  // Default: false.
  int64_t top = 10;                 // Default: 10 plans shown.
  double spot_price_ratio = 0.25;   // Default: unset = the catalog's spot price (a built-in one below
                                    // calibration spot_price_ratio_default x on-demand is planned at that share);
                                    // set: every spot setup at this share of on-demand.
  double spot_interruptions_per_node_hour = 0;  // Default: unset = data/calibration.csv
                                                // spot_interruptions_per_node_hour.<provider>.<family>.
};

// Where each key a user set came from (dotted key -> file:line). Shared between copies until one of them changes it:
// planners copy a job per candidate layout (millions in a pool or fleet search) and never touch these.
class KeyLocations {
 public:
  using Map = std::map<std::string, Location>;
  using const_iterator = Map::const_iterator;
  const_iterator begin() const { return map().begin(); }
  const_iterator end() const { return map().end(); }
  const_iterator find(const std::string& key) const { return map().find(key); }
  size_t count(const std::string& key) const { return map().count(key); }
  size_t size() const { return map().size(); }
  bool empty() const { return map().empty(); }
  const Location& at(const std::string& key) const { return map().at(key); }
  Location& operator[](const std::string& key) { return Own()[key]; }
  size_t erase(const std::string& key) { return count(key) ? Own().erase(key) : 0; }
  void erase(const_iterator it) { erase(std::string(it->first)); }  // by key: the iterator may be a shared map's
  void clear() { map_.reset(); }

 private:
  const Map& map() const {
    static const Map kEmpty;
    return map_ ? *map_ : kEmpty;
  }
  Map& Own() {
    if (!map_) map_ = std::make_shared<Map>();
    else if (map_.use_count() > 1) map_ = std::make_shared<Map>(*map_);
    else std::atomic_thread_fence(std::memory_order_acquire);  // after the last other owner's release
    return *map_;
  }
  std::shared_ptr<Map> map_;
};

struct Job {
  std::string source;     // file the job came from ("" = command line)
  Arch arch;
  TrainingSpec training;
  ParallelSpec parallel;
  ClusterSpec cluster;
  Constraints constraints;
  ServingSpec serving;  // used by `gpuplan serving`
  // Which keys the user set explicitly (dotted), so planners know what is pinned.
  KeyLocations set_keys;
  bool IsSet(const std::string& key) const { return set_keys.count(key) > 0; }
};

// Parses a YAML or JSON job file. Errors carry file:line: key.
Result<Job> ParseJobFile(const std::string& path);
Result<Job> ParseJobText(const std::string& text, const std::string& file_name);

// Sets one dotted key ("training.seq_len") from a string value, as the CLI flags do.
Status SetJobKey(Job& job, const std::string& key, const std::string& value, const Location& where);

// training.tokens from training.samples x epochs x tokens_per_sample when samples is given;
// an error when both tokens and samples are given. Idempotent; FinalizeJob calls it too.
Status ApplyDatasetSize(Job& job);

// Fills derived defaults (dp, num_gpus, global_batch) and validates the whole job.
Status FinalizeJob(Job& job);

struct Catalog;
// The catalog ids a job names explicitly (cluster.gpu, cluster.intra_node, cluster.network,
// cluster.storage) exist, each error at the key (file:line or flag) that named it. One check for
// every command: memory runs it, estimate's ResolveHardware and plan's pins resolve the same ids.
Status CheckCatalogIds(const Job& job, const Catalog& catalog);

// The job as a job file (YAML) that ParseJobText reads back to the same job: the model (a preset by
// name when the shape is the preset's), the batch, precision and layout always, every other key where
// it differs from the default or was set (src/core/job_writer.cc).
std::string JobToYaml(const Job& job);
// The same keys as dotted pairs ("parallel.tp", "2"), in the job-key table's order.
std::vector<std::pair<std::string, std::string>> JobToKeys(const Job& job);

// Micro-steps per optimizer step (gradient accumulation) = global_batch / (micro_batch * dp).
int64_t GradAccumSteps(const Job& job);

std::string ToString(Method m);
std::string ToString(Framework f);
std::string ToString(MasterWeights m);
std::string ToString(LossKind l);
std::string ToString(BaseQuant q);
std::string ToString(Fp8Recipe r);
std::string ToString(Padding p);
// "megatron" -> Framework::kMegatron; nullopt when unknown.
std::optional<Framework> ParseFramework(const std::string& name);
// Every framework name, in the enum's order (for help and reports).
const std::vector<std::string>& FrameworkNames();
std::string ToString(Precision p);
std::string ToString(Optimizer o);
std::string ToString(Recompute r);
std::string ToString(Offload o);
std::string ToString(Objective o);
std::string ToString(SpotPolicy s);
std::string ToString(WeightFormat w);  // bf16 fp16 fp8 int8 int4-awq int4-gptq fp4
std::string ToString(KvDtype k);       // auto fp8
std::string ToString(ServingLoad l);   // concurrency request_rate max_throughput num_requests

}  // namespace gpuplan
