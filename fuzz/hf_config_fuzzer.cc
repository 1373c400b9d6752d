// Hugging Face config.json: ArchFromHfConfig (it reads a path, so the input goes to a scratch
// file), then the parameter count and a default job on the shape through the models.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  static fuzz::ScratchFile file("-config.json");
  return fuzz::Guard([&] {
    auto arch = ArchFromHfConfig(file.Write(data, size));
    fuzz::CheckStatus(arch.status(), "ArchFromHfConfig");
    if (!arch.ok()) return;
    const ParamCounts pc = CountParams(*arch);
    if (pc.total < 0 || pc.active < 0 || pc.active > pc.total)
      fuzz::Die("parameter counts out of range: total " + std::to_string(pc.total) + ", active " +
                std::to_string(pc.active));
    Job job;
    job.arch = *arch;
    fuzz::ExerciseJob(job, fuzz::BuiltinCatalog(), Calibration::Builtin());
  });
}
