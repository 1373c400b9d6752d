// Validation CSVs (the runs.csv / memory.csv columns): ValidateRuns on the input, which reads the
// rows into jobs and predicts each usable one. Every used row must carry finite numbers.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "gpuplan/validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  static fuzz::ScratchFile file("-runs.csv");
  return fuzz::Guard([&] {
    auto rep = ValidateRuns({file.Write(data, size)}, fuzz::BuiltinCatalog(), Calibration::Builtin());
    fuzz::CheckStatus(rep.status(), "ValidateRuns");
    if (!rep.ok()) return;
    for (const auto& r : rep->rows) {
      if (!r.used) continue;
      fuzz::Finite(r.row.measured, "measured_value");
      fuzz::Finite(r.measured_tokens_per_s_per_gpu, "measured per GPU");
      fuzz::Finite(r.predicted_tokens_per_s_per_gpu, "predicted per GPU");
      fuzz::Finite(r.predicted_mfu, "predicted MFU");
      fuzz::Finite(r.error, "error");
    }
    for (const ErrorSummary* s : {&rep->overall, &rep->memory}) {
      fuzz::Finite(s->median_abs, "median |error|");
      fuzz::Finite(s->p90_abs, "p90 |error|");
      fuzz::Finite(s->mean_signed, "mean error");
    }
  });
}
