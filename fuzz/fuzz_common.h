// Shared checks for the libFuzzer harnesses (fuzz/README.md). A harness feeds one input to a
// parser; a bad-input or infeasible Status is a correct answer. It aborts (a crash libFuzzer
// saves) on: an exception escaping the library, an internal (exit 3) Status, or a non-finite
// number in a result the library accepted.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"
#include "gpuplan/memory.h"
#include "gpuplan/status.h"

namespace gpuplan::fuzz {

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "FUZZ FAILURE: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Bad input (exit 1) and infeasible (exit 2) are answers; internal (exit 3) is a defect.
inline void CheckStatus(const Status& st, const char* what) {
  if (st.ok() || st.code() == StatusCode::kBadInput || st.code() == StatusCode::kInfeasible) return;
  Die(std::string(what) + " returned an internal error (exit 3) on user input: " + st.ToString());
}

inline void Finite(double v, const std::string& name) {
  if (!std::isfinite(v)) Die("non-finite " + name + " = " + std::to_string(v) + " in an accepted result");
}
inline void Finite(const std::optional<double>& v, const std::string& name) {
  if (v) Finite(*v, name);
}

// One scratch file per process: the parsers that take only paths read the input from it.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& suffix) {
    const char* dir = std::getenv("TMPDIR");
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (dir && *dir ? dir : "/tmp");
    path_ = base + "/gpuplan-fuzz-" + std::to_string(getpid()) + suffix;
  }
  ~ScratchFile() { unlink(path_.c_str()); }
  const std::string& Write(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) Die("cannot write scratch file " + path_);
    if (size > 0 && std::fwrite(data, 1, size, f) != size) Die("short write to " + path_);
    std::fclose(f);
    return path_;
  }

 private:
  std::string path_;
};

inline const Catalog& BuiltinCatalog() {
  static const Catalog c = [] {
    auto r = LoadCatalog();
    if (!r.ok()) Die("built-in catalog does not load: " + r.status().ToString());
    return *r;
  }();
  return c;
}

inline void CheckJobNumbers(const Job& j) {
  const TrainingSpec& t = j.training;
  Finite(t.tokens, "training.tokens");
  Finite(t.samples, "training.samples");
  Finite(t.epochs, "training.epochs");
  Finite(t.lora.alpha, "training.lora.alpha");
  Finite(t.data_bytes_per_token, "training.data_bytes_per_token");
  Finite(t.checkpoint_interval_min, "training.checkpoint_interval_min");
  Finite(j.cluster.oversubscription, "cluster.oversubscription");
  Finite(j.constraints.deadline_hours, "constraints.deadline_hours");
  Finite(j.constraints.budget_usd, "constraints.budget_usd");
  Finite(j.constraints.min_memory_headroom, "constraints.min_memory_headroom");
  Finite(j.constraints.rerun_factor, "constraints.rerun_factor");
  Finite(j.arch.params_override, "model.params");
}

inline void CheckMemory(const MemoryBreakdown& m) {
  Finite(m.weights_bytes, "memory.weights_bytes");
  Finite(m.gradients_bytes, "memory.gradients_bytes");
  Finite(m.optimizer_bytes, "memory.optimizer_bytes");
  Finite(m.activations_bytes, "memory.activations_bytes");
  Finite(m.buffers_bytes, "memory.buffers_bytes");
  Finite(m.overhead_bytes, "memory.overhead_bytes");
  Finite(m.total_bytes, "memory.total_bytes");
  Finite(m.host_bytes, "memory.host_bytes");
  Finite(m.params_on_gpu, "memory.params_on_gpu");
  for (const auto& it : m.items) Finite(it.bytes, "memory item '" + it.name + "'");
}

inline void CheckStep(const StepEstimate& e) {
  if (!e.feasible) return;  // a needed hardware number is unknown: the numbers are not claimed
  const StepBreakdown& b = e.breakdown;
  for (auto [v, n] : {std::pair{b.compute_s, "compute_s"}, {b.tp_comm_s, "tp_comm_s"}, {b.cp_comm_s, "cp_comm_s"},
                      {b.pp_comm_s, "pp_comm_s"}, {b.dp_comm_s, "dp_comm_s"}, {b.ep_comm_s, "ep_comm_s"},
                      {b.bubble_s, "bubble_s"}, {b.data_s, "data_s"}, {b.optimizer_s, "optimizer_s"},
                      {b.checkpoint_s, "checkpoint_s"}, {b.overhead_s, "overhead_s"}})
    Finite(v, std::string("step.") + n);
  for (auto [v, n] : {std::pair{e.step_time_s, "step_time_s"}, {e.tokens_per_step, "tokens_per_step"},
                      {e.tokens_per_s, "tokens_per_s"}, {e.tokens_per_s_per_gpu, "tokens_per_s_per_gpu"},
                      {e.model_flops_per_token, "model_flops_per_token"},
                      {e.hardware_flops_per_step, "hardware_flops_per_step"}, {e.mfu, "mfu"}, {e.hfu, "hfu"},
                      {e.model_tflops_per_gpu, "model_tflops_per_gpu"}, {e.time_to_train_s, "time_to_train_s"},
                      {e.gpu_hours, "gpu_hours"}, {e.checkpoint_bytes, "checkpoint_bytes"},
                      {e.checkpoint_write_s, "checkpoint_write_s"}, {e.peak_flops, "peak_flops"}})
    Finite(v, std::string("step.") + n);
}

// FinalizeJob, then (if it is accepted) the memory and step models on it.
inline void ExerciseJob(Job job, const Catalog& catalog, const Calibration& cal) {
  Status st = FinalizeJob(job);
  CheckStatus(st, "FinalizeJob");
  if (!st.ok()) return;
  CheckJobNumbers(job);
  CheckMemory(EstimateMemory(job, cal));
  auto hw = ResolveHardware(job, catalog, cal);
  CheckStatus(hw.status(), "ResolveHardware");
  if (!hw.ok()) return;
  CheckStep(EstimateStep(job, *hw));
}

// Runs body; an exception that escapes it is a defect (the CLI would end with exit 3 or terminate).
template <typename F>
int Guard(F&& body) {
  try {
    body();
  } catch (const std::exception& ex) {
    Die(std::string("exception escaped: ") + ex.what());
  } catch (...) {
    Die("non-std exception escaped");
  }
  return 0;
}

}  // namespace gpuplan::fuzz
