// Plans Llama-3-8B and Llama-3-70B serving (1000 in / 200 out at 10 req/s, TTFT p90 <= 500 ms) over
// the whole catalog; prints candidates, estimates, estimates per second and wall time. No assertions.
#include <chrono>
#include <cstdio>

#include "gpuplan/serving_plan.h"

int main() {
  using namespace gpuplan;
  auto cat = LoadCatalog();
  auto engines = LoadServingEngines();
  if (!cat.ok() || !engines.ok()) return 1;
  std::printf("%-14s %10s %10s %10s %12s %8s\n", "model", "candidates", "estimates", "wall_s", "estimates/s", "feasible");
  for (const char* preset : {"llama-3-8b", "llama-3-70b"}) {
    auto job = ParseJobText(std::string("model: {preset: ") + preset + "}\n", "bench.yaml");
    if (!job.ok()) return 1;
    job->serving.load = ServingLoad::kRequestRate;
    job->serving.request_rate = 10;
    job->serving.ttft_p90_ms = 500;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = PlanServing(*job, *cat, Calibration::Builtin(), *engines);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) return 1;
    std::printf("%-14s %10lld %10lld %10.3f %12.0f %8lld\n", preset, static_cast<long long>(r->considered),
                static_cast<long long>(r->evaluated), wall, r->evaluated / wall, static_cast<long long>(r->feasible));
  }
  return 0;
}
