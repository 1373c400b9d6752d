// Configs and launch scripts `gpuplan import` reads (ds_config.json, accelerate YAML, torchtitan
// TOML, Megatron arguments, torchrun/deepspeed/accelerate launch scripts through the shell reader):
// ImportFiles on the input under the name its first byte picks, then the job pipeline on what it
// read. Deep nesting, huge numbers and unbounded expansions must be bad input, never a crash.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "gpuplan/launch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  static fuzz::ScratchFile files[] = {fuzz::ScratchFile("-ds_config.json"), fuzz::ScratchFile("-accelerate.yaml"),
                                      fuzz::ScratchFile("-train.toml"), fuzz::ScratchFile("-launch.sh")};
  if (size == 0) return 0;
  fuzz::ScratchFile& file = files[data[0] % 4];
  return fuzz::Guard([&] {
    auto r = ImportFiles({file.Write(data + 1, size - 1)}, Job{});
    fuzz::CheckStatus(r.status(), "ImportFiles");
    if (!r.ok()) return;
    fuzz::CheckJobNumbers(r->job);
  });
}
