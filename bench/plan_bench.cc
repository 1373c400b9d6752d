// Plans a 70B pretraining job over the whole catalog with up to 1,024 GPUs and every parallel
// layout; prints candidates per second and wall time for 1 and 2 threads. No assertions on time.
#include <chrono>
#include <cstdio>

#include "gpuplan/plan.h"

int main() {
  using namespace gpuplan;
  auto cat = LoadCatalog();
  if (!cat.ok()) {
    std::fprintf(stderr, "%s\n", cat.status().ToString().c_str());
    return 1;
  }
  auto job = ParseJobText(
      "model: {preset: llama-3-70b}\n"
      "training: {method: pretrain, seq_len: 4096, global_batch: 1024, tokens: 1.5e12}\n"
      "constraints: {max_gpus: 1024, objective: balanced}\n",
      "bench.yaml");
  if (!job.ok()) return 1;
  std::printf("%-8s %12s %12s %10s %14s %8s\n", "threads", "candidates", "estimated", "wall_s", "candidates/s", "plans");
  double wall1 = 0;
  for (int threads : {1, 2}) {
    PlanOptions opt;
    opt.threads = threads;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = PlanJob(*job, *cat, Calibration::Builtin(), opt);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) return 1;
    if (threads == 1) wall1 = wall;
    std::printf("%-8d %12lld %12lld %10.3f %14.0f %8zu\n", threads, static_cast<long long>(r->considered),
                static_cast<long long>(r->evaluated), wall, r->considered / wall, r->plans.size());
  }
  std::printf("(target: under 1 s on 2 cores; 1-thread wall %.3f s)\n", wall1);
  return 0;
}
