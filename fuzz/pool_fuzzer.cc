// Pool files and fleet files (YAML and JSON text): ParsePoolText (then a small job laid over the pool and estimated)
// or ParseFleetText, by the first byte. Unknown GPUs, deep nesting and huge counts must be bad input, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "gpuplan/fleet.h"
#include "gpuplan/pool.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  if (size == 0) return 0;
  return fuzz::Guard([&] {
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    const Catalog& catalog = fuzz::BuiltinCatalog();
    if (data[0] % 2) {
      auto fleet = ParseFleetText(text, "fuzz-fleet.yaml", catalog);
      fuzz::CheckStatus(fleet.status(), "ParseFleetText");
      return;
    }
    auto pool = ParsePoolText(text, "fuzz-pool.yaml", catalog);
    fuzz::CheckStatus(pool.status(), "ParsePoolText");
    if (!pool.ok()) return;
    static const Job kJob = [] {
      auto j = ParseJobText("model: {layers: 4, hidden: 256, heads: 4, vocab: 1000}\n"
                            "training: {seq_len: 512, global_batch: 8}\nparallel: {pp: 2}\n",
                            "fuzz-job.yaml");
      return j.ok() ? *j : Job{};
    }();
    auto job = FinalizeJobForPool(kJob, *pool);
    fuzz::CheckStatus(job.status(), "FinalizeJobForPool");
    if (!job.ok()) return;
    auto layout = LayoutFromJob(*job, *pool);
    fuzz::CheckStatus(layout.status(), "LayoutFromJob");
    if (!layout.ok()) return;
    auto est = EstimateOnPool(*job, *pool, *layout, catalog, Calibration::Builtin());
    fuzz::CheckStatus(est.status(), "EstimateOnPool");
    if (est.ok()) fuzz::Finite(est->step_time_s, "step_time_s");
  });
}
