// How many configurations `estimate` evaluates per second on one core (dense 70B), and the
// memory estimate's rate. Prints throughputs; never asserts on time.
#include <benchmark/benchmark.h>

#include "gpuplan/estimate.h"
#include "gpuplan/memory.h"

namespace gpuplan {
namespace {

struct Setup {
  std::vector<Job> jobs;
  HardwareContext hw;
};

const Setup& Jobs() {
  static const Setup s = [] {
    Setup out;
    const Catalog cat = *LoadCatalog();
    Job base;
    base.arch = *FindPreset("llama-3-70b");
    base.training.seq_len = 4096;
    base.training.global_batch = 1024;
    base.cluster.gpu = "h100-sxm-80gb";
    for (int64_t tp : {1, 2, 4, 8})
      for (int64_t pp : {1, 2, 4, 8})
        for (int64_t dp : {1, 2, 4, 8, 16, 32})
          for (int zero : {0, 1, 2, 3})
            for (int64_t mb : {1, 2, 4})
              for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
                Job j = base;
                j.parallel.tp = tp;
                j.parallel.pp = pp;
                j.parallel.dp = dp;
                j.parallel.zero = zero;
                j.training.micro_batch = mb;
                j.training.recompute = rc;
                if (FinalizeJob(j).ok()) out.jobs.push_back(j);
              }
    out.hw = *ResolveHardware(out.jobs.front(), cat, Calibration::Builtin());
    return out;
  }();
  return s;
}

void BM_EstimateStep70B(benchmark::State& state) {
  const Setup& s = Jobs();
  size_t i = 0;
  for (auto _ : state) {
    StepEstimate e = EstimateStep(s.jobs[i], s.hw);
    benchmark::DoNotOptimize(e.step_time_s);
    if (++i == s.jobs.size()) i = 0;
  }
  state.counters["configs_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EstimateStep70B);

void BM_EstimateMemory70B(benchmark::State& state) {
  const Setup& s = Jobs();
  const Calibration& cal = Calibration::Builtin();
  size_t i = 0;
  for (auto _ : state) {
    MemoryBreakdown m = EstimateMemory(s.jobs[i], cal, /*detail=*/false);
    benchmark::DoNotOptimize(m.total_bytes);
    if (++i == s.jobs.size()) i = 0;
  }
  state.counters["configs_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EstimateMemory70B);

}  // namespace
}  // namespace gpuplan

BENCHMARK_MAIN();
