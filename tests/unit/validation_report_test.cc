// gpuplan validate's grouping and error bands (docs/validation.md).
#include <gtest/gtest.h>

#include "gpuplan/validation.h"

namespace gpuplan {
namespace {

TEST(ValidationReport, MemoryRowsArePredicted) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  auto rep = ValidateRuns({std::string(GPUPLAN_SHARED_DIR) + "/validation/memory.csv"}, *cat, Calibration::Builtin());
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_GT(rep->memory.rows, 10);
}

}  // namespace
}  // namespace gpuplan
