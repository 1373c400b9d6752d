// data/engines.csv: what each framework's engine can express (docs/model/frameworks.md §10).
// The checks below are the one place both the planner and `gpuplan export` ask.
#include "gpuplan/engines.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"

namespace gpuplan {

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

template <class T>
bool Has(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

Result<std::vector<int>> ZeroList(const CsvRecord& r, const std::string& col) {
  std::vector<int> out;
  for (const auto& w : Words(r.Str(col))) {
    auto z = ParseInteger(w, r.Where(col), 0, 3);
    if (!z.ok()) return z.status();
    out.push_back(static_cast<int>(*z));
  }
  if (out.empty()) return Status::BadInput(r.Where(col), "expected ZeRO stages 0-3 separated by spaces");
  return out;
}

Result<std::optional<int>> MinZero(const CsvRecord& r, const std::string& col) {
  if (r.Str(col) == "none") return std::optional<int>();
  auto z = ParseInteger(r.Str(col), r.Where(col), 0, 3);
  if (!z.ok()) return z.status();
  return std::optional<int>(static_cast<int>(*z));
}

template <class T>
Result<T> Choice(const CsvRecord& r, const std::string& col, const std::vector<std::pair<std::string, T>>& names) {
  std::string all;
  for (const auto& [n, v] : names) {
    if (r.Str(col) == n) return v;
    all += (all.empty() ? "" : ", ") + n;
  }
  return Status::BadInput(r.Where(col), "expected one of " + all + ", got '" + r.Str(col) + "'");
}

// A parsed cell into its field, or the cell's error.
template <class T>
Status Into(Result<T> parsed, T& out) {
  if (!parsed.ok()) return parsed.status();
  out = std::move(*parsed);
  return Status::Ok();
}

Status ReadRow(const CsvRecord& r, EngineCaps& e) {
  e.id = r.Str("id");
  auto f = ParseFramework(e.id);
  if (!f || *f == Framework::kGeneric) return Status::BadInput(r.Where("id"), "not a framework: '" + e.id + "'");
  e.framework = *f;
  e.export_format = r.Str("export");
  if (!Has<std::string>({"deepspeed", "accelerate", "megatron", "torchtitan", "torchrun"}, e.export_format))
    return Status::BadInput(r.Where("export"), "expected deepspeed|accelerate|megatron|torchtitan|torchrun");
  e.family = r.Str("family");
  if (!Has<std::string>({"megatron", "deepspeed", "fsdp", "hf"}, e.family))
    return Status::BadInput(r.Where("family"), "expected megatron|deepspeed|fsdp|hf");
  for (auto [col, out] : {std::pair<const char*, bool*>{"tp", &e.tp}, {"tp_across_nodes", &e.tp_across_nodes}, {"vpp", &e.vpp},
                          {"cp", &e.cp}, {"ep", &e.ep}, {"optimizer_offload_with_tp", &e.optimizer_offload_with_tp},
                          {"adapters", &e.adapters}, {"alibi", &e.alibi}}) {
    auto b = r.YesNo(col);
    if (!b.ok()) return b.status();
    *out = *b;
  }
  GPUPLAN_RETURN_IF_ERROR(Into(Choice<SeqParallelRule>(r, "sequence_parallel", {{"no", SeqParallelRule::kNo},
                                                                               {"optional", SeqParallelRule::kOptional},
                                                                               {"with_tp", SeqParallelRule::kWithTp},
                                                                               {"with_tp_ep", SeqParallelRule::kWithTpEp}}),
                               e.sequence_parallel));
  GPUPLAN_RETURN_IF_ERROR(Into(Choice<PipelineRule>(r, "pp", {{"no", PipelineRule::kNo}, {"even", PipelineRule::kEven},
                                                              {"uneven", PipelineRule::kUneven}}),
                               e.pp));
  GPUPLAN_RETURN_IF_ERROR(Into(Choice<bool>(r, "interleaved_min_microbatches", {{"none", false}, {"pp", true}}),
                               e.interleaved_min_microbatches_pp));
  GPUPLAN_RETURN_IF_ERROR(Into(ZeroList(r, "zero"), e.zero));
  GPUPLAN_RETURN_IF_ERROR(Into(ZeroList(r, "zero_with_model_parallel"), e.zero_with_model_parallel));
  GPUPLAN_RETURN_IF_ERROR(Into(MinZero(r, "offload_optimizer_min_zero"), e.offload_optimizer_min_zero));
  GPUPLAN_RETURN_IF_ERROR(Into(MinZero(r, "offload_params_min_zero"), e.offload_params_min_zero));
  for (const auto& w : Words(r.Str("precisions"))) {
    if (w == "fp32") e.precisions.push_back(Precision::kFp32);
    else if (w == "fp16") e.precisions.push_back(Precision::kFp16);
    else if (w == "bf16") e.precisions.push_back(Precision::kBf16);
    else if (w == "fp8") e.precisions.push_back(Precision::kFp8);
    else return Status::BadInput(r.Where("precisions"), "expected fp32|fp16|bf16|fp8 separated by spaces, got '" + w + "'");
  }
  for (const auto& w : Words(r.Str("fp8_recipes"))) {
    bool found = false;
    for (Fp8Recipe x : {Fp8Recipe::kTensorwise, Fp8Recipe::kDelayed, Fp8Recipe::kRowwise, Fp8Recipe::kMxfp8})
      if (ToString(x) == w) e.fp8_recipes.push_back(x), found = true;
    if (!found) return Status::BadInput(r.Where("fp8_recipes"), "expected tensorwise|delayed|rowwise|mxfp8, got '" + w + "'");
  }
  e.source = r.Str("source");
  e.date = r.Str("date");
  if (e.source.empty()) return Status::BadInput(r.Where("source"), "every row needs a source");
  e.where = r.Where("id");
  return Status::Ok();
}

// ---- the checks: each says whether the engine fails, and what and where in words ----

struct Gap {
  std::string what, field, value, fix;  // fix: when no other engine can express it either
};

struct Check {
  bool (*fails)(const EngineCaps&, const Job&, int64_t gpn);
  Gap (*explain)(const Job&, int64_t gpn);
};

bool ModelParallel(const ParallelSpec& q) { return q.tp > 1 || q.cp > 1 || q.pp > 1 || q.ep > 1; }
std::string Z(const Job& j) { return Str(j.parallel.zero); }
// "tp 2, cp 1, pp 1, ep 1": the model-parallel degrees a refusal names.
std::string Degrees(const Job& j) {
  const ParallelSpec& q = j.parallel;
  return "parallel.tp " + Str(q.tp) + ", cp " + Str(q.cp) + ", pp " + Str(q.pp) + ", ep " + Str(q.ep);
}

// The job as a whole.
const Check kJobChecks[] = {
    {[](const EngineCaps& e, const Job& j, int64_t) { return IsAdapterMethod(j.training.method) && !e.adapters; },
     [](const Job& j, int64_t) { return Gap{"adapter training", "training.method", ToString(j.training.method), "training.method full"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return j.arch.position == PositionKind::kAlibi && !e.alibi; },
     [](const Job&, int64_t) { return Gap{"ALiBi positions", "model.position", "alibi", "a RoPE model"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return !Has(e.precisions, j.training.precision); },
     [](const Job& j, int64_t) { return Gap{"this precision", "training.precision", ToString(j.training.precision), "training.precision bf16"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) {
       return j.training.precision == Precision::kFp8 && !Has(e.fp8_recipes, j.training.fp8_recipe);
     },
     [](const Job& j, int64_t) { return Gap{"this fp8 recipe", "training.fp8_recipe", ToString(j.training.fp8_recipe), "another recipe"}; }},
};

// The parallel layout.
const Check kLayoutChecks[] = {
    {[](const EngineCaps& e, const Job& j, int64_t) { return j.parallel.pp > 1 && e.pp == PipelineRule::kNo; },
     [](const Job& j, int64_t) { return Gap{"pipeline parallelism", "parallel.pp", Str(j.parallel.pp), "parallel.pp 1"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return j.parallel.vpp > 1 && !e.vpp; },
     [](const Job& j, int64_t) { return Gap{"interleaved pipeline stages", "parallel.vpp", Str(j.parallel.vpp), "parallel.vpp 1"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) {
       // An explicit parallel.layer_split says each stage's blocks: whether the engine takes that list is the
       // export's question (data/pipeline_splits.csv), not this divisibility.
       const ParallelSpec& q = j.parallel;
       return q.layer_split.empty() && (q.vpp > 1 || e.pp == PipelineRule::kEven) && j.arch.layers % (q.pp * q.vpp) != 0;
     },
     [](const Job& j, int64_t) {
       return Gap{"layers that do not divide into pipeline stages", "model.layers",
                  Str(j.arch.layers) + " over parallel.pp " + Str(j.parallel.pp) + " x parallel.vpp " + Str(j.parallel.vpp),
                  "a pp x vpp that divides the layers"};
     }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return !EngineRunsInterleavedMicrobatches(e, j); },
     [](const Job& j, int64_t) {
       return Gap{"an interleaved pipeline with fewer micro-batches per step than stages", "parallel.vpp",
                  Str(j.parallel.vpp) + " with " + Str(GradAccumSteps(j)) + " micro-batches < parallel.pp " + Str(j.parallel.pp),
                  "parallel.vpp 1 or a larger global batch"};
     }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return j.parallel.cp > 1 && !e.cp; },
     [](const Job& j, int64_t) { return Gap{"context parallelism", "parallel.cp", Str(j.parallel.cp), "parallel.cp 1"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return j.parallel.ep > 1 && !e.ep; },
     [](const Job& j, int64_t) { return Gap{"expert parallelism", "parallel.ep", Str(j.parallel.ep), "parallel.ep 1"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return j.parallel.tp > 1 && !e.tp; },
     [](const Job& j, int64_t) { return Gap{"tensor parallelism", "parallel.tp", Str(j.parallel.tp), "parallel.tp 1"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t gpn) { return j.parallel.tp > gpn && !e.tp_across_nodes; },
     [](const Job& j, int64_t gpn) {
       return Gap{"tensor parallelism across nodes", "parallel.tp", Str(j.parallel.tp) + " > " + Str(gpn) + " GPUs per node",
                  "tp within a node"};
     }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return j.parallel.sequence_parallel && e.sequence_parallel == SeqParallelRule::kNo; },
     [](const Job&, int64_t) { return Gap{"Megatron sequence parallelism", "parallel.sequence_parallel", "true", "parallel.sequence_parallel false"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) {
       return j.parallel.tp > 1 && !j.parallel.sequence_parallel && e.sequence_parallel == SeqParallelRule::kWithTp;
     },
     [](const Job&, int64_t) {
       return Gap{"tp without sequence parallelism (its TP plan shards norms on the sequence)", "parallel.sequence_parallel", "false",
                  "parallel.sequence_parallel true"};
     }},
    {[](const EngineCaps& e, const Job& j, int64_t) {
       return j.parallel.tp > 1 && j.parallel.ep > 1 && !j.parallel.sequence_parallel && e.sequence_parallel == SeqParallelRule::kWithTpEp;
     },
     [](const Job&, int64_t) {
       return Gap{"tp with ep without sequence parallelism", "parallel.sequence_parallel", "false", "parallel.sequence_parallel true"};
     }},
    {[](const EngineCaps& e, const Job& j, int64_t) { return !Has(e.zero, j.parallel.zero); },
     [](const Job& j, int64_t) { return Gap{"ZeRO-" + Z(j), "parallel.zero", Z(j), "another ZeRO stage"}; }},
    {[](const EngineCaps& e, const Job& j, int64_t) {
       return ModelParallel(j.parallel) && !Has(e.zero_with_model_parallel, j.parallel.zero);
     },
     [](const Job& j, int64_t) {
       return Gap{"ZeRO-" + Z(j) + " together with tp/cp/pp/ep", "parallel.zero", Z(j) + " with " + Degrees(j), "another ZeRO stage"};
     }},
    {[](const EngineCaps& e, const Job& j, int64_t) {
       const auto& m = e.offload_optimizer_min_zero;
       return j.parallel.offload == Offload::kOptimizer && (!m || j.parallel.zero < *m);
     },
     [](const Job& j, int64_t) {
       return Gap{"optimizer offload at this ZeRO stage", j.parallel.zero == 0 ? "parallel.offload" : "parallel.zero",
                  j.parallel.zero == 0 ? "optimizer with parallel.zero 0" : Z(j) + " with parallel.offload optimizer", "ZeRO-2"};
     }},
    {[](const EngineCaps& e, const Job& j, int64_t) {
       const auto& m = e.offload_params_min_zero;
       return j.parallel.offload == Offload::kOptimizerParams && (!m || j.parallel.zero < *m);
     },
     [](const Job& j, int64_t) {
       return Gap{"parameter offload at this ZeRO stage", "parallel.offload", "optimizer+params with parallel.zero " + Z(j), "ZeRO-3"};
     }},
    {[](const EngineCaps& e, const Job& j, int64_t) {
       return j.parallel.offload == Offload::kOptimizer && (j.parallel.tp > 1 || j.parallel.cp > 1) && !e.optimizer_offload_with_tp;
     },
     [](const Job& j, int64_t) {
       return Gap{"optimizer-only offload with tp/cp", "parallel.offload", "optimizer with " + Degrees(j), "parallel.offload none"};
     }},
};

// "<name> cannot express <what> (<field> <value>): use --to a or --to b" (the formats whose own
// engine passes the same check), else the fix.
std::string Sentence(const Check& c, const Job& j, int64_t gpn, const std::string& name) {
  const Gap g = c.explain(j, gpn);
  std::vector<std::string> can;
  for (const char* f : {"megatron", "torchtitan", "deepspeed", "accelerate"}) {
    const EngineCaps* other = EngineForFormat(f);
    // Stages of a given size (parallel.layer_split) need a pipeline: an engine without one is no way out.
    const bool split_without_pipeline = other && !j.parallel.layer_split.empty() && j.parallel.pp > 1 && other->pp == PipelineRule::kNo;
    if (other && f != name && !c.fails(*other, j, gpn) && !split_without_pipeline) can.push_back(std::string("--to ") + f);
  }
  std::string use;
  for (size_t i = 0; i < can.size(); ++i) use += (i == 0 ? "" : i + 1 == can.size() ? " or " : ", ") + can[i];
  return name + " cannot express " + g.what + " (" + g.field + " " + g.value + "): use " + (use.empty() ? g.fix : use);
}

}  // namespace

Result<std::vector<EngineCaps>> ParseEngines(const std::string& csv_text, const std::string& file) {
  auto t = ParseCsv(csv_text, file);
  if (!t.ok()) return t.status();
  std::vector<EngineCaps> out;
  for (const auto& row : t->rows) {
    EngineCaps e;
    if (Status st = ReadRow(CsvRecord(*t, row), e); !st.ok()) return st;
    if (std::any_of(out.begin(), out.end(), [&](const EngineCaps& x) { return x.framework == e.framework; }))
      return Status::BadInput(e.where, "duplicate framework '" + e.id + "'");
    out.push_back(std::move(e));
  }
  return out;
}

const std::vector<EngineCaps>& Engines() {
  static const std::vector<EngineCaps> table = [] {
    auto r = ParseEngines(std::string(EmbeddedData("engines.csv")), "data/engines.csv");
    return r.ok() ? *r : std::vector<EngineCaps>{};  // the data test fails on a bad built-in row
  }();
  return table;
}

const EngineCaps* EngineFor(Framework f) {
  for (const auto& e : Engines())
    if (e.framework == f) return &e;
  return nullptr;
}

const EngineCaps* EngineForFormat(const std::string& format) {
  const std::string id = format == "accelerate" ? "fsdp" : format;
  for (const auto& e : Engines())
    if (e.id == id && e.export_format == format) return &e;
  return nullptr;
}

std::vector<Framework> GenericPlanningEngines() {
  return {Framework::kMegatron, Framework::kDeepspeed, Framework::kTorchtitan, Framework::kFsdp, Framework::kHfTrainer};
}

std::string EngineCannotTrain(const EngineCaps& e, const Job& job, const std::string& name) {
  for (const Check& c : kJobChecks)
    if (c.fails(e, job, 0)) return Sentence(c, job, 0, name);
  return "";
}

std::string EngineCannotLayout(const EngineCaps& e, const Job& job, int64_t gpus_per_node, const std::string& name) {
  for (const Check& c : kLayoutChecks)
    if (c.fails(e, job, gpus_per_node)) return Sentence(c, job, gpus_per_node, name);
  return "";
}

bool EngineExpressesLayout(const EngineCaps& e, const Job& job, int64_t gpus_per_node) {
  for (const Check& c : kLayoutChecks)
    if (c.fails(e, job, gpus_per_node)) return false;
  return true;
}

bool EngineRunsInterleavedMicrobatches(const EngineCaps& e, const Job& job) {
  const ParallelSpec& q = job.parallel;
  if (q.vpp <= 1 || !e.interleaved_min_microbatches_pp || job.training.micro_batch <= 0 || q.dp <= 0) return true;
  return GradAccumSteps(job) >= q.pp;
}

int64_t MegatronMicrobatchGroup(int64_t microbatches, int64_t pp) {
  for (int64_t g = pp; g <= microbatches; ++g)
    if (microbatches % g == 0 || microbatches % g >= pp) return g;
  return 0;
}

bool EngineSequenceParallel(const EngineCaps& e, int64_t tp) { return tp > 1 && e.sequence_parallel != SeqParallelRule::kNo; }

}  // namespace gpuplan
