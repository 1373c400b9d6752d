// The engines a plan runs on (data/engines.csv): for each training framework, the export format
// that launches it and the layouts it can express. One table, read by the planner (it searches
// only what the job's engine expresses, docs/model/planner.md §2) and by `gpuplan export` (it
// refuses what the format cannot say, docs/export.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/job.h"
#include "gpuplan/status.h"

namespace gpuplan {

// When Megatron-style sequence parallelism is used: never, as the layout says, whenever tp > 1,
// or whenever tp > 1 and ep > 1 (Megatron's rule).
enum class SeqParallelRule { kNo, kOptional, kWithTp, kWithTpEp };
// Pipeline stages: none; stages that divide the layers evenly; any split.
enum class PipelineRule { kNo, kEven, kUneven };

struct EngineCaps {
  Framework framework = Framework::kGeneric;
  std::string id;                       // the framework's name (data/engines.csv id)
  std::string export_format;            // deepspeed | accelerate | megatron | torchtitan | torchrun
  std::string family;                   // megatron | deepspeed | fsdp | hf: the plan table's groups
  bool tp = false, tp_across_nodes = false;
  SeqParallelRule sequence_parallel = SeqParallelRule::kNo;
  PipelineRule pp = PipelineRule::kNo;
  bool vpp = false, cp = false, ep = false;
  bool interleaved_min_microbatches_pp = false;  // interleaved (vpp > 1) needs micro-batches per step >= pp
  std::vector<int> zero;                      // ZeRO stages with data parallelism (dp x cp > 1)
  std::vector<int> zero_with_model_parallel;  // ... when tp, cp, pp or ep > 1 as well
  std::optional<int> offload_optimizer_min_zero;  // nullopt: no optimizer offload
  std::optional<int> offload_params_min_zero;     // nullopt: no parameter offload
  bool optimizer_offload_with_tp = false;   // optimizer-only offload together with tp/cp
  bool adapters = false;                    // LoRA / QLoRA / DoRA
  bool alibi = false;                       // ALiBi positions
  std::vector<Precision> precisions;
  std::vector<Fp8Recipe> fp8_recipes;
  std::string source, date;
  Location where;                           // data/engines.csv:line
};

// The built-in table (data/engines.csv), one row per framework except generic. Exits through
// Status at load: a bad cell is "data/engines.csv:LINE: column: reason".
Result<std::vector<EngineCaps>> ParseEngines(const std::string& csv_text, const std::string& file);
const std::vector<EngineCaps>& Engines();
// The row of a framework; nullptr for generic (no engine: the planner ranks every family).
const EngineCaps* EngineFor(Framework f);
// The row an export format expresses exactly (the format's own engine: megatron, deepspeed,
// fsdp for accelerate, torchtitan); nullptr for torchrun and the wrappers (no layout to refuse).
const EngineCaps* EngineForFormat(const std::string& format);
// The frameworks the planner ranks when the job names none: one per engine family
// (megatron, deepspeed, fsdp and torchtitan, hf-trainer).
std::vector<Framework> GenericPlanningEngines();

// What the engine cannot express about the job as a whole (method, positions, precision), ""
// when it can. `name` is how the engine is called in the sentence ("deepspeed", "accelerate").
std::string EngineCannotTrain(const EngineCaps& e, const Job& job, const std::string& name);
// What it cannot express about the job's parallel layout on nodes of `gpus_per_node` GPUs, "" when
// it can: "<name> cannot express <what> (<field> <value>): use <formats that can, or the fix>".
std::string EngineCannotLayout(const EngineCaps& e, const Job& job, int64_t gpus_per_node, const std::string& name);
// The same as a yes/no, for the planner's inner loop (no strings built).
bool EngineExpressesLayout(const EngineCaps& e, const Job& job, int64_t gpus_per_node);
// Whether the engine runs the job's interleaved schedule with its micro-batches per step
// (GradAccumSteps): Megatron's needs at least pp of them (data/engines.csv interleaved_min_microbatches).
bool EngineRunsInterleavedMicrobatches(const EngineCaps& e, const Job& job);
// Megatron's --microbatch-group-size-per-virtual-pipeline-stage for M micro-batches on pp stages:
// the smallest G in [pp, M] with M % G == 0 or M % G >= pp (pp itself when M % pp == 0); 0 when M < pp.
int64_t MegatronMicrobatchGroup(int64_t microbatches, int64_t pp);
// Whether sequence parallelism is on for a layout of tp ranks the planner proposes (unless pinned).
bool EngineSequenceParallel(const EngineCaps& e, int64_t tp);

}  // namespace gpuplan
