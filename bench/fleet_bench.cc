// gpuplan fleet on the lab's 64-GPU, 4-type pool (examples/fleet-lab.yaml: a chat service, a deadline fine-tune, a
// pretraining run), the static assignment and the example trace (examples/fleet-lab-trace.csv), each with its
// baseline: timed as Google Benchmark iterations. Prints the layouts evaluated and the utilisation and completion
// ratios against the baseline; never asserts on time.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "gpuplan/fleet.h"

#ifndef GPUPLAN_SOURCE_DIR
#define GPUPLAN_SOURCE_DIR "."
#endif

namespace gpuplan {
namespace {

void BM_FleetLab(benchmark::State& state, bool simulate) {
  static const Catalog cat = *LoadCatalog();
  static const auto engines = *LoadServingEngines();
  const std::string src = GPUPLAN_SOURCE_DIR;
  auto fleet = LoadFleetFile(src + "/examples/fleet-lab.yaml", cat);
  if (!fleet.ok()) {
    state.SkipWithError(fleet.status().ToString().c_str());
    return;
  }
  std::vector<FleetArrival> arrivals;
  if (simulate) {
    auto t = LoadFleetTrace(src + "/examples/fleet-lab-trace.csv", *fleet);
    if (!t.ok()) {
      state.SkipWithError(t.status().ToString().c_str());
      return;
    }
    arrivals = *t;
  }
  FleetResult last;
  for (auto _ : state) {
    auto r = PlanFleet(*fleet, cat, Calibration::Builtin(), engines, arrivals);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    last = std::move(*r);
    benchmark::DoNotOptimize(last.policy.assignments.size());
  }
  state.counters["layouts"] = static_cast<double>(last.evaluations);
  std::printf("fleet-lab%s: %lld layout searches; utilisation %.3f vs baseline %.3f; last training end %.2f h vs %.2f h; "
              "average completion %.2f h vs %.2f h\n",
              simulate ? " (trace)" : "", static_cast<long long>(last.evaluations), last.policy.utilization,
              last.baseline.utilization, last.policy.horizon_s / 3600, last.baseline.horizon_s / 3600,
              last.policy.avg_completion_s / 3600, last.baseline.avg_completion_s / 3600);
}
BENCHMARK_CAPTURE(BM_FleetLab, static, false)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FleetLab, trace, true)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace gpuplan

BENCHMARK_MAIN();
