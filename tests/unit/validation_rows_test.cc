// Published rows read into jobs (src/core/validation_rows.cc).
#include <gtest/gtest.h>

#include "gpuplan/catalog.h"
#include "gpuplan/validation_rows.h"

namespace gpuplan {
namespace {

TEST(ValidationRows, RunsCsvRowsAreUsable) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  auto rows = ReadMeasuredRows(std::string(GPUPLAN_SHARED_DIR) + "/validation/runs.csv", *cat);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  int usable = 0;
  for (const auto& r : *rows) usable += r.usable;
  EXPECT_GT(usable, 200);
}

}  // namespace
}  // namespace gpuplan
