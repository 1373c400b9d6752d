// The held-out measurement files (validation/heldout/*.csv, validation/heldout/README.md): rows
// gathered from published runs the shared validation files do not have. This checks that they parse
// into jobs as documented and that `gpuplan validate` predicts them end to end without a crash; it
// does not bound the model's error (that is the report's job, and it moves with the model).
#include <gtest/gtest.h>

#include "../test_util.h"
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "gpuplan/catalog.h"
#include "gpuplan/validation_rows.h"

namespace gpuplan {
namespace {

const std::string kDir = std::string(GPUPLAN_SOURCE_DIR) + "/validation/heldout/";

using testing_util::Exec;
using testing_util::Proc;

bool Has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

TEST(HeldOut, RunsRowsParseIntoJobs) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  auto rows = ReadMeasuredRows(kDir + "runs.csv", *cat);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  int usable = 0, interleaved = 0;
  for (const auto& r : *rows) {
    // Every row is predicted or carries its reason (never dropped silently).
    EXPECT_TRUE(r.usable || !r.skip_reason.empty()) << "runs.csv:" << r.line;
    if (!r.usable) continue;
    ++usable;
    const Framework f = r.job.training.framework;
    if (Has(r.source, "Megatron-Bridge")) EXPECT_EQ(f, Framework::kMegatronBridge) << r.line;
    else if (Has(r.source, "NVIDIA/NeMo")) EXPECT_EQ(f, Framework::kNemo) << r.line;
    else if (Has(r.source, "torchtitan")) EXPECT_EQ(f, Framework::kTorchtitan) << r.line;
    else if (Has(r.source, "torchtune")) EXPECT_EQ(f, Framework::kTorchtune) << r.line;
    // The tables' VP column (notes vp=N) is the interleaved schedule of the pipeline.
    if (Has(r.model_name, "70B") && Has(r.source, "Megatron-Bridge") && r.job.parallel.pp == 4 && r.job.parallel.tp == 4)
      EXPECT_EQ(r.job.parallel.vpp, 5) << r.line;
    interleaved += r.job.parallel.vpp > 1;
  }
  EXPECT_GE(usable, 60);
  EXPECT_GE(interleaved, 10);
}

TEST(HeldOut, MemoryRowsParseIntoJobs) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  auto rows = ReadMeasuredRows(kDir + "memory.csv", *cat);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  int usable = 0;
  for (const auto& r : *rows) {
    EXPECT_TRUE(r.usable || !r.skip_reason.empty()) << "memory.csv:" << r.line;
    usable += r.usable;
    if (r.usable) EXPECT_GT(r.unit_bytes, 0) << r.line;
  }
  EXPECT_GE(usable, 6);
}

TEST(HeldOut, ValidatePredictsBothFiles) {
  const Proc r = Exec("validate " + kDir + "runs.csv " + kDir + "memory.csv --all");
  ASSERT_FALSE(r.signaled) << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "throughput (tokens/s per GPU), all usable rows")) << r.out;
  EXPECT_TRUE(Has(r.out, "peak memory rows")) << r.out;
}

}  // namespace
}  // namespace gpuplan
