// training.framework and the framework mechanisms (docs/model/frameworks.md).
#include <gtest/gtest.h>

#include "../test_util.h"

#include "gpuplan/job.h"

namespace gpuplan {
namespace {

TEST(Framework, EveryNameRoundTrips) {
  for (const auto& name : FrameworkNames()) {
    auto f = ParseFramework(name);
    ASSERT_TRUE(f.has_value()) << name;
    EXPECT_EQ(ToString(*f), name);
  }
  EXPECT_FALSE(ParseFramework("megatron-lm-typo").has_value());
}

}  // namespace
}  // namespace gpuplan
