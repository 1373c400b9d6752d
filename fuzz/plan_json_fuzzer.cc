// PLAN.json as `gpuplan plan --json` writes it and as a user may edit it: JobFromPlanJson for the
// first row, then LaunchPlanFromPlanJson against the built-in catalog. A wrong type, a schema it
// does not know, a 1e308 time or cost, an unknown GPU or a 100k-deep document is a located bad input.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "gpuplan/launch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  static const Calibration cal = [] {
    auto c = Calibration::Load("");
    if (!c.ok()) fuzz::Die("built-in calibration: " + c.status().ToString());
    return *c;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::Guard([&] {
    auto row = JobFromPlanJson(text, "PLAN.json", 1);
    fuzz::CheckStatus(row.status(), "JobFromPlanJson");
    if (!row.ok()) return;
    fuzz::Finite(row->time_s, "time_s");
    fuzz::Finite(row->step_time_s, "step_time_s");
    fuzz::Finite(row->cost_usd, "cost_usd");
    auto lp = LaunchPlanFromPlanJson(text, "PLAN.json", 1, fuzz::BuiltinCatalog(), cal);
    fuzz::CheckStatus(lp.status(), "LaunchPlanFromPlanJson");
    if (!lp.ok()) return;
    fuzz::Finite(lp->step_time_s, "plan step_time_s");
    fuzz::Finite(lp->time_s, "plan time_s");
  });
}
