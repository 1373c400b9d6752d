// Where a LaunchPlan comes from: a planner row, a fully pinned job, or one row of a PLAN.json
// written by `gpuplan plan --json` (docs/export.md "Which plan").
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "gpuplan/estimate.h"
#include "gpuplan/input_file.h"
#include "gpuplan/launch.h"
#include "gpuplan/memory.h"
#include "gpuplan/plan.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {

void FillInstance(LaunchPlan& lp, const InstanceSpec& inst) {
  lp.instance = inst.id;
  lp.instance_type = inst.instance;
  lp.provider = inst.provider;
  lp.region = inst.region == "unknown" ? "" : inst.region;
  lp.nics_per_node = inst.nics ? static_cast<int64_t>(*inst.nics) : 0;
  lp.gpudirect_rdma = inst.gpudirect_rdma != "no" && inst.rdma != "no";  // as the planner reads the row (enumerate.cc)
}

// The job's checkpoint policy (a plan row's job carries the planner's choice).
void FillCheckpointPolicy(LaunchPlan& lp, const Job& job) {
  lp.checkpoint_interval_s = job.training.checkpoint_interval_min * 60;
  lp.checkpoint_async = job.training.checkpoint_async;
}

}  // namespace

LaunchPlan LaunchPlanFromPlan(const Plan& p, const Catalog& catalog, const std::string& origin) {
  LaunchPlan lp;
  lp.job = p.job;
  lp.nodes = p.nodes;
  lp.gpus_per_node = p.job.cluster.gpus_per_node;
  lp.grad_accum = p.estimate.grad_accum;
  FillInstance(lp, p.instance);
  lp.spot = p.cost.price_kind == "spot";
  if (p.nodes > 1 && !p.network.empty())
    if (auto link = catalog.FindLink(p.network); link.ok()) lp.network = *link;
  lp.step_time_s = p.estimate.step_time_s;
  lp.tokens_per_s = p.estimate.tokens_per_s;
  lp.memory_per_gpu_bytes = p.memory_bytes;
  if (auto gpu = catalog.FindGpu(p.job.cluster.gpu); gpu.ok()) lp.gpu_memory_bytes = gpu->memory_bytes;
  lp.time_s = p.time_s;
  if (p.cost.price_known) lp.cost_usd = p.cost.with_rerun_usd;
  lp.origin = origin;
  FillCheckpointPolicy(lp, p.job);
  if (p.storage.target) lp.checkpoint_target = p.storage.target->id;
  return lp;
}

Result<LaunchPlan> LaunchPlanFromJob(const Job& job, const Catalog& catalog, const Calibration& cal, const std::string& origin,
                                     const std::string& instance) {
  LaunchPlan lp;
  lp.job = job;
  if (!instance.empty()) {
    auto inst = catalog.FindInstance(instance);
    if (!inst.ok()) return Status::BadInput({"command line", 0, "--instance"}, inst.status().reason());
    FillInstance(lp, *inst);
    // The instance is the hardware: its GPU, GPUs per node and, unless the job names them, its
    // network link and NIC count (as the planner resolves an instance row).
    lp.job.cluster.gpu = inst->gpu_id;
    if (inst->gpu_count > 0 && !job.IsSet("cluster.gpus_per_node")) lp.job.cluster.gpus_per_node = inst->gpu_count;
    if (!job.IsSet("cluster.network") && !inst->network_link.empty() && inst->network_link != "unknown")
      lp.job.cluster.network = inst->network_link;
    if (!job.IsSet("cluster.nics_per_node") && inst->nics) lp.job.cluster.nics_per_node = static_cast<int64_t>(*inst->nics);
    if (!job.IsSet("cluster.gpudirect_rdma")) lp.job.cluster.gpudirect_rdma = inst->gpudirect_rdma != "no" && inst->rdma != "no";
  }
  auto hw = ResolveHardware(lp.job, catalog, cal);
  if (!hw.ok()) return hw.status();
  const StepEstimate est = EstimateStep(lp.job, *hw);
  if (!est.feasible) return Status::Infeasible(est.infeasible_reason);
  const MemoryReport mem = BuildMemoryReport(lp.job, hw->gpu, cal);
  if (!mem.fits)
    return Status::Infeasible("does not fit: " + FormatGiB(mem.memory.total_bytes) + " GiB per GPU needed, " + hw->gpu.id + " has " +
                              FormatGiB(hw->gpu.memory_bytes) + " GiB (`gpuplan memory` lists the saving steps); nothing exported");
  const int64_t gpn = lp.job.cluster.gpus_per_node;
  lp.gpus_per_node = std::min(gpn, lp.job.cluster.num_gpus);
  lp.nodes = (lp.job.cluster.num_gpus + gpn - 1) / gpn;
  lp.grad_accum = est.grad_accum;
  if (lp.nodes > 1) {
    lp.network = hw->inter;
    if (instance.empty()) {
      lp.nics_per_node = static_cast<int64_t>(std::llround(hw->nics_per_node));
      lp.gpudirect_rdma = hw->rdma;
    }
  }
  lp.step_time_s = est.step_time_s;
  lp.tokens_per_s = est.tokens_per_s;
  lp.memory_per_gpu_bytes = mem.memory.total_bytes;
  lp.gpu_memory_bytes = hw->gpu.memory_bytes;
  lp.time_s = est.time_to_train_s;
  lp.origin = origin;
  FillCheckpointPolicy(lp, lp.job);
  return lp;
}

namespace {

// The line of the n-th (0-based; the first when there are fewer) occurrence of "key": nlohmann does not
// say where a value was, and a PLAN.json written by `gpuplan plan --json` has one key per line.
int LineOfKey(const std::string& text, const std::string& key, size_t nth) {
  const std::string needle = "\"" + key + "\"";
  std::vector<size_t> hits;
  for (size_t pos = text.find(needle); pos != std::string::npos && hits.size() <= nth; pos = text.find(needle, pos + 1)) hits.push_back(pos);
  if (hits.empty()) return 1;
  const size_t at = hits[std::min(nth, hits.size() - 1)];
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// A number of a row: absent is `fallback`; present it is a finite number in [0, max] (seconds, dollars).
Result<double> RowNumber(const nlohmann::json& row, const char* key, double fallback, double max, const Location& at) {
  if (!row.contains(key) || row[key].is_null()) return fallback;
  if (!row[key].is_number()) return Status::BadInput(at, "expected a number, got " + std::string(row[key].type_name()));
  const double v = row[key].get<double>();
  if (!std::isfinite(v) || v < 0 || v > max)
    return Status::BadInput(at, "must be a number in 0.." + FormatNumber("%g", max) + ", got " + FormatNumber("%g", v) +
                                    " (an edited file? re-run `gpuplan plan --json`)");
  return v;
}

constexpr double kMaxPlanSeconds = 1e11;  // ~3,000 years: past any training run
constexpr double kMaxPlanUsd = 1e12;

Result<PlanRowJob> RowJob(const nlohmann::json& doc, const std::string& text, const std::string& file, int64_t index) {
  if (doc.contains("schema")) {
    const auto& v = doc["schema"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kJsonSchemaVersion)
      return Status::BadInput({file, LineOfKey(text, "schema", 0), "schema"},
                              "PLAN.json schema " + v.dump() + " is not one this gpuplan reads (1.." + std::to_string(kJsonSchemaVersion) +
                                  "): written by a newer gpuplan, or edited; re-run `gpuplan plan --json`");
  }
  const auto& plans = doc["plans"];
  if (plans.empty()) return Status::Infeasible(file + ": the plan found no feasible setup; nothing to export");
  if (index < 1 || index > static_cast<int64_t>(plans.size()))
    return Status::BadInput({"command line", 0, "--plan"}, "must be in 1.." + std::to_string(plans.size()) + " (rows of " + file + ")");
  const size_t i = static_cast<size_t>(index - 1);
  const auto& row = plans[i];
  const std::string where = "plans[" + std::to_string(i) + "]";
  if (!row.is_object() || !row.contains("job") || !row["job"].is_object())
    return Status::BadInput({file, LineOfKey(text, "job", i), where + ".job"},
                            "the row has no \"job\" object (written by gpuplan before 0.3.0?): re-run `gpuplan plan --json`");
  PlanRowJob out;
  for (const auto& [key, value] : row["job"].items()) {
    const Location at{file, LineOfKey(text, key, i), where + ".job." + key};
    if (!value.is_string()) return Status::BadInput(at, "expected a string value, got " + std::string(value.type_name()));
    if (Status st = SetJobKey(out.job, key, value.get<std::string>(), at); !st.ok()) return st;
  }
  if (row.contains("instance") && !row["instance"].is_null()) {
    if (!row["instance"].is_string())
      return Status::BadInput({file, LineOfKey(text, "instance", i), where + ".instance"}, "expected a string (a catalog instance id)");
    out.instance = row["instance"].get<std::string>();
  }
  if (row.contains("cost_breakdown") && row["cost_breakdown"].is_object() && row["cost_breakdown"].contains("price_kind") &&
      row["cost_breakdown"]["price_kind"].is_string())
    out.spot = row["cost_breakdown"]["price_kind"].get<std::string>() == "spot";
  auto num = [&](const char* key, double max) { return RowNumber(row, key, 0.0, max, {file, LineOfKey(text, key, i), where + "." + key}); };
  auto time_s = num("time_s", kMaxPlanSeconds);
  if (!time_s.ok()) return time_s.status();
  out.time_s = *time_s;
  auto step_s = num("step_time_s", kMaxPlanSeconds);
  if (!step_s.ok()) return step_s.status();
  out.step_time_s = *step_s;
  if (row.contains("cost_usd") && !row["cost_usd"].is_null()) {
    auto cost = num("cost_usd", kMaxPlanUsd);
    if (!cost.ok()) return cost.status();
    out.cost_usd = *cost;
  }
  if (row.contains("checkpoint") && row["checkpoint"].is_object() && row["checkpoint"].contains("target") &&
      row["checkpoint"]["target"].is_object() && row["checkpoint"]["target"].contains("id") && row["checkpoint"]["target"]["id"].is_string())
    out.checkpoint_target = row["checkpoint"]["target"]["id"].get<std::string>();
  if (doc.contains("model_fingerprint") && doc["model_fingerprint"].is_string()) out.model_fingerprint = doc["model_fingerprint"].get<std::string>();
  out.job.source = file;
  return out;
}

}  // namespace

Result<PlanRowJob> JobFromPlanJson(const std::string& text, const std::string& file, int64_t index) {
  GPUPLAN_RETURN_IF_ERROR(CheckJsonDepth(text, {file, 1, ""}));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number past double's range (2e308)
    return Status::BadInput({file, 1, ""}, std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("plans") || !doc["plans"].is_array())
    return Status::BadInput({file, 1, "plans"}, "not the output of `gpuplan plan --json` (no \"plans\" array)");
  try {
    return RowJob(doc, text, file, index);
  } catch (const nlohmann::json::exception& e) {  // a type the checks above missed: still the file's fault
    return Status::BadInput({file, 1, ""}, std::string("not a PLAN.json gpuplan reads: ") + e.what());
  }
}

bool IsPlanJson(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{' && text.find("\"plans\"") != std::string::npos;
}

Result<LaunchPlan> LaunchPlanFromPlanJson(const std::string& text, const std::string& file, int64_t index, const Catalog& catalog,
                                          const Calibration& cal) {
  auto row = JobFromPlanJson(text, file, index);
  if (!row.ok()) return row.status();
  Job job = row->job;
  // Errors about the row's job or instance (an unknown GPU, an instance not in the catalog) are the file's.
  const std::string where = "plans[" + std::to_string(index - 1) + "]";
  auto relocate = [&](const Status& st) {
    if (st.code() != StatusCode::kBadInput) return st;
    const Location& at = st.location();
    if (at.file == "command line" && at.key == "--instance")
      return Status::BadInput({file, LineOfKey(text, "instance", static_cast<size_t>(index - 1)), where + ".instance"}, st.reason());
    if (!at.file.empty() && at.file != file && at.file != "command line") return st;
    if (at.file == file && at.line > 0) return st;
    const std::string key = at.key.empty() ? "job" : at.key;
    return Status::BadInput({file, LineOfKey(text, key, static_cast<size_t>(index - 1)), where + ".job." + key}, st.reason());
  };
  if (Status st = FinalizeJob(job); !st.ok()) return relocate(st);
  auto lp = LaunchPlanFromJob(job, catalog, cal, "plan #" + std::to_string(index) + " of " + file, row->instance);
  if (!lp.ok()) return relocate(lp.status());
  lp->spot = row->spot;
  if (row->time_s > 0) lp->time_s = row->time_s;
  lp->cost_usd = row->cost_usd;
  lp->checkpoint_target = row->checkpoint_target;
  if (row->step_time_s > 0 && std::abs(lp->step_time_s / row->step_time_s - 1) > 0.01)
    lp->note = "the step time is this gpuplan's re-estimate (" + FormatNumber("%.3f", lp->step_time_s) + " s); " + file + " said " +
               FormatNumber("%.3f", row->step_time_s) + " s (written by model fingerprint " + row->model_fingerprint + ")";
  return lp;
}

}  // namespace gpuplan
