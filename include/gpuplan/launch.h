// From a plan to a running job: launch artefacts for the engines users run (export), and the
// reverse, a job from the configs they already have (import). docs/export.md lists every format,
// its version and the plan field behind every emitted key.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/job.h"
#include "gpuplan/status.h"

namespace gpuplan {

// One pinned, estimated job on concrete nodes: what every artefact describes.
struct LaunchPlan {
  Job job;                          // finalized: parallel/training/cluster are the plan's layout
  int64_t nodes = 1;
  int64_t gpus_per_node = 8;        // processes per node (= job.cluster.gpus_per_node)
  int64_t grad_accum = 1;           // GradAccumSteps(job)
  std::string instance;             // catalog instance id; "" = the user's own machines
  std::string instance_type;        // the provider's name (p5.48xlarge); "" = own machines
  std::string provider;             // aws | gcp | azure | ... ; "" = own machines
  std::string region;               // the instance row's region; "" = unknown
  bool spot = false;                // priced as spot
  LinkSpec network;                 // the inter-node link (id "" = single node)
  int64_t nics_per_node = 0;        // RDMA NICs per node (0 = unknown or none)
  bool gpudirect_rdma = false;
  // What the plan expects (the artefacts' header and docs/export.md).
  double step_time_s = 0;
  double tokens_per_s = 0;
  double memory_per_gpu_bytes = 0;
  double gpu_memory_bytes = 0;
  double time_s = 0;                // wall-clock (plan) or time to train (pinned job); 0 = no token count
  std::optional<double> cost_usd;   // with the rerun factor; nullopt = unknown or own machines
  std::string origin;               // "plan #1 of examples/70b-full-finetune.yaml", "pinned job x.yaml", ...
  std::string note;                 // why this plan and not the first (a format's limits), "" = none
  // The checkpoint policy (docs/model/reliability.md R§3), carried into every engine that can say it.
  double checkpoint_interval_s = 3600;  // training.checkpoint_interval_min x 60 (a plan row: its chosen interval)
  bool checkpoint_async = false;        // training.checkpoint_async (a plan row: as the planner chose)
  std::string checkpoint_dir = "checkpoints";  // where the engine saves (relative to the run's directory)
  std::string checkpoint_target;        // the plan's target ("local NVMe -> aws-s3-standard"); "" = the user's
  // What the user launches (flags of `gpuplan export`).
  std::string script = "train.py";  // the training entry point (megatron: pretrain_gpt.py)
  std::vector<std::string> script_args;
  int64_t port = 29500;             // rendezvous / master port
  std::string job_name = "gpuplan";
  std::string image;                // container image (kubernetes); "" = a placeholder to fill in
  // --engine-version: the engine release the files are written for; "" = the version each format pins
  // (docs/export.md "Pinned versions"); torchtitan "0.2" = the v0.2.x TOML instead of main's Python config.
  std::string engine_version;
  // The fabric table (--fabric-env FILE): a user's copy of data/fabric_env.csv that replaces it.
  std::string fabric_env_file;      // "" = the built-in data/fabric_env.csv
  std::string fabric_env_text;      // that file's text
};

struct Plan;
struct Calibration;
// The launch plan of a planner row (origin: "plan #1 of FILE").
LaunchPlan LaunchPlanFromPlan(const Plan& plan, const Catalog& catalog, const std::string& origin);
// A fully pinned job (cluster.num_gpus set), estimated as `gpuplan estimate` does it; on the
// user's own machines unless `instance` names a catalog row. Exit 2 when it does not fit.
Result<LaunchPlan> LaunchPlanFromJob(const Job& job, const Catalog& catalog, const Calibration& cal,
                                     const std::string& origin, const std::string& instance = "");
// One row of `gpuplan plan --json` output (1-based index into "plans"), as a pinned job read back
// from the row's "job" object, with the row's instance.
struct PlanRowJob {
  Job job;
  std::string instance;
  bool spot = false;
  double time_s = 0;                // the row's wall-clock
  std::optional<double> cost_usd;   // the row's cost with the rerun factor (null = unknown)
  double step_time_s = 0;           // what the row predicted (export re-estimates and compares)
  std::string checkpoint_target;    // the row's checkpoint target id ("" = none)
  std::string model_fingerprint;    // of the gpuplan that wrote the file
};
Result<PlanRowJob> JobFromPlanJson(const std::string& text, const std::string& file, int64_t index);
// Whether a file's text is `gpuplan plan --json` output (a JSON object with a "plans" array).
bool IsPlanJson(const std::string& text);
// Row `index` of a PLAN.json as a LaunchPlan: the row's job re-estimated by this build (the note
// says when the step moved by more than 1%), its instance, spot pricing, wall-clock and cost kept.
Result<LaunchPlan> LaunchPlanFromPlanJson(const std::string& text, const std::string& file, int64_t index, const Catalog& catalog,
                                          const Calibration& cal);

enum class ExportFormat { kDeepspeed, kAccelerate, kTorchrun, kMegatron, kTorchtitan, kSlurm, kKubernetes, kSkypilot, kFabric };
std::string ToString(ExportFormat f);
std::optional<ExportFormat> ParseExportFormat(const std::string& name);
const std::vector<std::string>& ExportFormatNames();
// The engines (the formats that carry a layout and a per-node launch.sh); slurm, kubernetes and
// skypilot wrap one of them (--engine), fabric is the NCCL environment alone.
bool IsEngine(ExportFormat f);
// The engine a wrapper uses when --engine is not given: the job's framework's export format
// (data/engines.csv: megatron/nemo -> megatron, torchtitan -> torchtitan, deepspeed/hf-trainer ->
// deepspeed, fsdp/unsloth -> accelerate, torchtune/llm-foundry -> torchrun), else (generic) the
// first engine that can express the layout (megatron for pp/vpp/cp, else deepspeed).
ExportFormat DefaultEngine(const Job& job);

struct Artifact {
  std::string name;                 // file name inside --out DIR (no directories)
  std::string content;
  bool executable = false;          // written 0755 (shell scripts)
};

// What a format cannot express for this plan's layout ("" = it can), e.g. "deepspeed's config has
// no pipeline parallelism (pp 4): use --to megatron or torchtitan". Export refuses such a plan
// (exit 1) when it is pinned; when it comes from the planner, PinsForFormat re-plans instead.
// The checks are the format's own engine's row of data/engines.csv (gpuplan/engines.h).
std::string CannotExpress(ExportFormat engine, const LaunchPlan& plan);
// The job keys a format pins so that the planner only proposes layouts it can express: its own
// engine as training.framework (accelerate: fsdp); empty for torchrun (it can express all).
std::vector<std::pair<std::string, std::string>> PinsForFormat(ExportFormat engine);

// The header every artefact starts with: the gpuplan version, the origin, the instance, nodes,
// layout, expected step time and memory. Each line starts with `comment` ("# ", "// ").
std::vector<std::string> HeaderLines(const LaunchPlan& plan);
std::string CommentHeader(const LaunchPlan& plan, const std::string& comment);

// The NCCL/fabric environment for the plan's network (data/fabric_env.csv): fabric.env, a shell
// file of `export VAR=value` lines, each with a comment saying why; `source` lines where a cloud
// ships its own profile.
Result<Artifact> FabricEnv(const LaunchPlan& plan, const Catalog& catalog);
// The fabric table a plan uses: (text, file name) of --fabric-env FILE, else data/fabric_env.csv.
Result<std::pair<std::string, std::string>> FabricTable(const LaunchPlan& plan);
// The same from another fabric file (a future --fabric-env FILE): its text and the name used in
// errors ("file:line: column: reason").
Result<Artifact> FabricEnv(const LaunchPlan& plan, const Catalog& catalog, const std::string& csv_text,
                           const std::string& file);

// What a row of data/fabric_env.csv does (docs/export.md "Fabric environment").
enum class FabricAction {
  kExport,          // export VAR=value
  kDefault,         // export VAR="${VAR:-value}" (the user's own value wins)
  kPrepend,         // export VAR="value${VAR:+:$VAR}" (paths)
  kSource,          // source FILE (a cloud's own profile; variable = the file)
  kNote,            // a comment only: what not to set, what to set only when ...
  kK8sResource,     // the pod's RDMA device resource (variable = name, "" = none; value = count or nics_per_node)
  kK8sGpuResource,  // the pod's accelerator resource name (variable: nvidia.com/gpu, amd.com/gpu, ...)
  kSkyAccelerator,  // SkyPilot's accelerator name for the GPU (value)
  kSkyNetworkTier,  // SkyPilot resources.network_tier (value)
};
struct FabricSetting {
  FabricAction action = FabricAction::kNote;
  std::string variable;  // environment variable; the file for kSource; the resource name for kK8sResource
  std::string value;
  std::string why, source, date;
  Location where;        // the row it came from
};
// The rows that apply to the plan, in file order: the environment rows of its fabric (the
// provider's own rows when there are any, else the generic ones), and for each single-value action
// (k8s resource, SkyPilot names) the most specific matching row only.
Result<std::vector<FabricSetting>> FabricSettings(const LaunchPlan& plan, const Catalog& catalog,
                                                  const std::string& csv_text, const std::string& file);

// Every file of one format. Engines emit their config(s), launch.sh (the per-node command, which
// reads GPUPLAN_HEAD, GPUPLAN_PORT, GPUPLAN_JOB_ID, GPUPLAN_NODE_RANK and TORCHRUN from the
// environment) and fabric.env; wrappers add their own file to the engine's.
Result<std::vector<Artifact>> ExportEngine(ExportFormat engine, const LaunchPlan& plan, const Catalog& catalog);
Result<std::vector<Artifact>> ExportWrapper(ExportFormat wrapper, ExportFormat engine, const LaunchPlan& plan,
                                            const Catalog& catalog);
// The wrapper's own files around the engine's (ExportWrapper = ExportEngine + these): slurm
// gpuplan.sbatch; kubernetes trainjob.yaml, pytorchjob.yaml and configmap.yaml (carrying
// engine_files); skypilot sky.yaml.
Result<std::vector<Artifact>> WrapperFiles(ExportFormat wrapper, const LaunchPlan& plan, const Catalog& catalog,
                                           const std::vector<Artifact>& engine_files);
Result<std::vector<Artifact>> ExportArtifacts(ExportFormat format, const std::optional<ExportFormat>& engine,
                                              const LaunchPlan& plan, const Catalog& catalog);

// Writes the artefacts into dir: every file to a temporary name first, then renamed into place,
// so an error leaves no half-written file (and nothing of a failed export).
Status WriteArtifacts(const std::vector<Artifact>& files, const std::string& dir);

// ---- import ----

// What an imported file is (detected from its content, never its name).
enum class ImportKind { kDeepspeedConfig, kAccelerateConfig, kTorchtitanToml, kMegatronArgs, kLaunchLine };
std::string ToString(ImportKind k);

struct ImportNote {
  Location where;                   // file:line: key
  std::string message;
};

struct ImportResult {
  Job job;                          // the job the files describe (not finalized); set_keys say what was read
  std::vector<std::pair<std::string, ImportKind>> files;  // each file and what it was read as
  std::vector<ImportNote> unknown;  // keys gpuplan does not model: listed, never silently dropped
  std::vector<ImportNote> unresolved;  // "auto" values no other input resolved
  std::vector<ImportNote> notes;    // how a value was derived ("auto" resolved from ...)
};

// Reads the files in order into one job, starting from `base` (the --model/--gpu/... flags).
// Contradictions (train_batch_size != micro x accumulation x dp) are errors at file:line.
Result<ImportResult> ImportFiles(const std::vector<std::string>& paths, const Job& base);
Result<ImportKind> DetectImportKind(const std::string& text, const std::string& file);

// JobToYaml / JobToKeys (the job written back as a job file) are in gpuplan/job.h.

}  // namespace gpuplan
