// Predicted peak memory vs measured peak reserved memory (shared/validation/memory.csv).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gpuplan/memory.h"
#include "gpuplan/validation_rows.h"

namespace gpuplan {
namespace {

TEST(MemoryValidation, TorchtitanPeakReserved) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  auto rows = ReadMeasuredRows(std::string(GPUPLAN_SHARED_DIR) + "/validation/memory.csv", *cat);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::vector<double> errors;
  double ratio_sum = 0;
  std::printf("%-5s %-16s %7s %3s %3s %3s %3s %-9s %9s %9s %7s\n", "line", "model", "seq", "tp", "pp", "dp", "cp",
              "recompute", "pred_GiB", "meas_GiB", "err_%");
  for (const auto& r : *rows) {
    if (!r.usable) {
      std::printf("%-5d skipped: %s (%s)\n", r.line, r.skip_reason.c_str(), r.model_name.c_str());
      continue;
    }
    if (r.metric != "peak_memory_reserved_per_gpu") {
      std::printf("%-5d skipped: metric %s is not a peak memory\n", r.line, r.metric.c_str());
      continue;
    }
    const double pred = EstimateMemory(r.job).total_bytes / (1024.0 * 1024 * 1024);
    const double err = (pred - r.measured) / r.measured;
    errors.push_back(std::fabs(err));
    ratio_sum += r.measured / pred;
    std::printf("%-5d %-16s %7lld %3lld %3lld %3lld %3lld %-9s %9.1f %9.1f %+7.1f\n", r.line, r.model_name.c_str(),
                static_cast<long long>(r.job.training.seq_len), static_cast<long long>(r.job.parallel.tp),
                static_cast<long long>(r.job.parallel.pp), static_cast<long long>(r.job.parallel.dp),
                static_cast<long long>(r.job.parallel.cp), ToString(r.job.training.recompute).c_str(), pred,
                r.measured, 100 * err);
  }
  ASSERT_GE(errors.size(), 15u);
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  const double worst = errors.back();
  std::printf("rows %zu  median |err| %.1f%%  max |err| %.1f%%  mean measured/predicted %.3f\n", errors.size(),
              100 * median, 100 * worst, ratio_sum / errors.size());
  EXPECT_LE(median, 0.10);
  EXPECT_LE(worst, 0.25);
}

}  // namespace
}  // namespace gpuplan
