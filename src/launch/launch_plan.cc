// PLACEHOLDER (issue 10, being written by the lead): LaunchPlan from a plan row, a pinned job, PLAN.json.
#include "gpuplan/launch.h"
#include "gpuplan/plan.h"
namespace gpuplan {
LaunchPlan LaunchPlanFromPlan(const Plan&, const Catalog&, const std::string&) { return {}; }
Result<LaunchPlan> LaunchPlanFromJob(const Job&, const Catalog&, const Calibration&, const std::string&, const std::string&) {
  return Status::Internal("not built yet");
}
Result<PlanRowJob> JobFromPlanJson(const std::string&, const std::string&, int64_t) { return Status::Internal("not built yet"); }
}  // namespace gpuplan
