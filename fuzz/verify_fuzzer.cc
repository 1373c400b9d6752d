// Tool outputs as users paste them (nccl-tests, perftest, ibstat, nvidia-smi, lspci, fio, dcgmi,
// NCCL_DEBUG logs): ParseToolOutput on the text, then every reading must be a finite number and
// carry a location. The reader takes any bytes: a wrong paste is an unrecognised output, never a crash.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "gpuplan/toolout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::Guard([&] {
    ToolOutput out = ParseToolOutput(text, "paste.txt");
    for (const auto& r : out.readings) {
      fuzz::Finite(r.value, "reading " + r.metric);
      if (r.where.file != "paste.txt") fuzz::Die("reading " + r.metric + " located in '" + r.where.file + "'");
    }
    (void)FlattenReadings({out});
  });
}
