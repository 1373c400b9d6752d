// Helpers shared by the tests.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"
#include "gpuplan/serving.h"

namespace gpuplan::testing_util {

// True in a build under AddressSanitizer (GCC defines __SANITIZE_ADDRESS__; clang answers __has_feature).
constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

// How many random cases a property test draws: `full` in the plain build, `sanitized` under the sanitizers,
// where one plan search runs 5-30x slower. The same properties over fewer draws (each run's seed is new and
// printed, and the plain build draws them all); the sanitizer stage looks for memory and UB errors on the
// paths, not for the rare draw. GPUPLAN_PROPERTY_CASES=full draws `full` in any build.
inline int PropertyCases(int full, int sanitized) {
  const char* env = std::getenv("GPUPLAN_PROPERTY_CASES");
  if (env != nullptr && std::string(env) == "full") return full;
  return kSanitized ? sanitized : full;
}

// A temporary file name of its own for this process and call: ctest runs a test binary's cases as parallel
// processes, so a fixed name written by two cases at once reads the other's rows.
inline std::string UniqueTempPath(const std::string& stem, const std::string& ext) {
  static int calls = 0;
  return ::testing::TempDir() + "/" + stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(calls++) + ext;
}

// The built-in catalog and serving-engine profiles, loaded once per test binary.
inline const Catalog& BuiltinCatalog() {
  static const Catalog c = *LoadCatalog();
  return c;
}
inline const std::vector<ServingEngineProfile>& BuiltinServingEngines() {
  static const std::vector<ServingEngineProfile> e = *LoadServingEngines();
  return e;
}

// A finalized job from YAML text; failures are test failures with the parser's message.
inline Job MakeJob(const std::string& yaml) {
  auto j = ParseJobText(yaml, "test.yaml");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  Job job = j.ok() ? *j : Job{};
  Status st = FinalizeJob(job);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return job;
}

// The job's hardware from the built-in catalog and calibration (a failure is a test failure).
inline HardwareContext Hw(const Job& j) {
  static const Catalog cat = *LoadCatalog();
  auto hw = ResolveHardware(j, cat, Calibration::Builtin());
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  return hw.ok() ? *hw : HardwareContext{};
}

#ifdef GPUPLAN_BINARY
// The gpuplan binary run with `args` (stdout and stderr together), for tests whose target defines
// GPUPLAN_BINARY.
struct Proc {
  int exit_code = -1;
  bool signaled = false;
  std::string out;  // stdout + stderr
};

inline Proc Exec(const std::string& args) {
  Proc r;
  const std::string cmd = std::string(GPUPLAN_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.signaled = WIFSIGNALED(status);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}
#endif

}  // namespace gpuplan::testing_util
