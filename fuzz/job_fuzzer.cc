// Job files (YAML and JSON text): ParseJobText, then FinalizeJob and the memory/step models.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  return fuzz::Guard([&] {
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto job = ParseJobText(text, "fuzz.yaml");
    fuzz::CheckStatus(job.status(), "ParseJobText");
    if (!job.ok()) return;
    fuzz::CheckJobNumbers(*job);
    fuzz::ExerciseJob(*job, fuzz::BuiltinCatalog(), Calibration::Builtin());
  });
}
