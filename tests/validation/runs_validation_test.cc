// Predicted tokens/s per GPU vs published runs (shared/validation/runs.csv): the error bound that
// docs/validation.md claims. Prints every row.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "gpuplan/data.h"

#include "gpuplan/report.h"
#include "gpuplan/validation.h"

namespace gpuplan {
namespace {

TEST(RunsValidation, TokensPerSecondPerGpu) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  auto rep = ValidateRuns({std::string(GPUPLAN_SHARED_DIR) + "/validation/runs.csv"}, *cat, Calibration::Builtin());
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  std::printf("%s", ValidationToText(*rep, false).c_str());
  EXPECT_GE(rep->overall.rows, 200);
  EXPECT_LE(rep->overall.median_abs, 0.15);
  EXPECT_LE(rep->overall.p90_abs, 0.35);
  // Every source family is predicted (no source silently dropped).
  bool foundry = false, megatron = false, titan = false;
  for (const auto& s : rep->by_source) {
    foundry |= s.group.find("llm-foundry") != std::string::npos;
    megatron |= s.group.find("Megatron-LM") != std::string::npos;
    titan |= s.group.find("torchtitan") != std::string::npos;
  }
  EXPECT_TRUE(foundry && megatron && titan);
  // Rows that are not predicted all carry a reason.
  for (const auto& r : rep->rows)
    if (!r.used) EXPECT_FALSE(r.reason.empty()) << "line " << r.row.line;
}

// docs/validation.md states the project's error: it must come from a run of the code and data
// being tested. Regenerate it with `bash scripts/validate.sh` when this fails.
TEST(RunsValidation, PublishedReportIsCurrent) {
  std::ifstream f(std::string(GPUPLAN_SOURCE_DIR) + "/docs/validation.md");
  ASSERT_TRUE(f.good()) << "docs/validation.md is missing";
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string tag = "model fingerprint ";
  const auto at = text.find(tag);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(text.substr(at + tag.size(), 12), ModelFingerprint())
      << "src/model or data/ changed since docs/validation.md was generated: run bash scripts/validate.sh";
}

}  // namespace
}  // namespace gpuplan
