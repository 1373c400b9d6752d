// Helpers shared by the tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gpuplan/job.h"

namespace gpuplan::testing_util {

// A finalized job from YAML text; failures are test failures with the parser's message.
inline Job MakeJob(const std::string& yaml) {
  auto j = ParseJobText(yaml, "test.yaml");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  Job job = j.ok() ? *j : Job{};
  Status st = FinalizeJob(job);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return job;
}

}  // namespace gpuplan::testing_util
