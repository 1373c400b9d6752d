// Calibration CSV overrides: Calibration::Load(file), then every value must be finite and the
// models must stay finite on a reference job with the overridden constants.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"

namespace {
const gpuplan::Job& ReferenceJob() {
  static const gpuplan::Job job = [] {
    auto j = gpuplan::ParseJobText(
        "model: {preset: llama-2-7b}\n"
        "training: {seq_len: 4096, global_batch: 64, tokens: 1.0e9, recompute: selective}\n"
        "parallel: {zero: 3}\n"
        "cluster: {gpu: a100-sxm-80gb, num_gpus: 16, gpus_per_node: 8}\n",
        "reference.yaml");
    if (!j.ok()) gpuplan::fuzz::Die("reference job: " + j.status().ToString());
    return *j;
  }();
  return job;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuplan;
  static fuzz::ScratchFile file("-calibration.csv");
  return fuzz::Guard([&] {
    auto cal = Calibration::Load(file.Write(data, size));
    fuzz::CheckStatus(cal.status(), "Calibration::Load");
    if (!cal.ok()) return;
    for (const auto& [key, value] : cal->values()) fuzz::Finite(value, "calibration " + key);
    fuzz::ExerciseJob(ReferenceJob(), fuzz::BuiltinCatalog(), *cal);
  });
}
