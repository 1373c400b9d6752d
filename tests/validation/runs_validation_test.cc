// Predicted tokens/s per GPU vs published runs (shared/validation/runs.csv): the error bound that
// docs/validation.md claims. Prints every row.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "gpuplan/data.h"
#include "gpuplan/error_bands.h"

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

std::vector<std::string> PublishedFiles() {
  std::vector<std::string> files;
  for (const char* f : {"runs.csv", "memory.csv", "runs_vtrain.csv", "peft_runs.csv"})
    files.push_back(std::string(GPUPLAN_SHARED_DIR) + "/validation/" + f);
  return files;
}

std::string ReadSource(const std::string& rel) {
  std::ifstream f(std::string(GPUPLAN_SOURCE_DIR) + "/" + rel);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// docs/validation.md states the project's error and data/error_bands.csv the bands every estimate
// prints: both must come from a run of the code and data being tested. Regenerate them with
// `bash scripts/validate.sh` when this fails.
TEST(RunsValidation, PublishedReportIsCurrent) {
  const std::string text = ReadSource("docs/validation.md");
  ASSERT_FALSE(text.empty()) << "docs/validation.md is missing";
  const std::string tag = "model fingerprint ";
  const auto at = text.find(tag);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(text.substr(at + tag.size(), 12), ModelFingerprint())
      << "src/model or data/ changed since docs/validation.md was generated: run bash scripts/validate.sh";
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  // The bands come from the leave-one-source-out errors: the per-source fits must be current too.
  auto fits = ReadLosoFits(std::string(GPUPLAN_SOURCE_DIR) + "/data/loso_fits.csv");
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  auto rep = ValidateRuns(PublishedFiles(), *cat, Calibration::Builtin(), &*fits);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  for (const auto& w : rep->loso_warnings)
    ADD_FAILURE() << "data/loso_fits.csv: " << w << " (then bash scripts/validate.sh)";
  EXPECT_EQ(ReadSource("data/error_bands.csv"), ErrorBandsToCsv(rep->bands))
      << "data/error_bands.csv is not what validate gives on the published files: run bash scripts/validate.sh";
  EXPECT_EQ(std::string(EmbeddedData("error_bands.csv")), ReadSource("data/error_bands.csv"))
      << "the build embeds another data/error_bands.csv: rebuild";
}

// docs/validation.md lists every group of every dimension (small ones marked, never hidden), the
// split, and the error on each side of it.
TEST(RunsValidation, ReportListsEveryGroupAndTheSplit) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  auto rep = ValidateRuns(PublishedFiles(), *cat, Calibration::Builtin());
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  const std::string md = ValidationToMarkdown(*rep, "published files", Calibration::Builtin());
  EXPECT_NE(md.find(SplitRule()), std::string::npos);
  EXPECT_GT(rep->fit_throughput.rows, 0);
  EXPECT_GT(rep->held_out_throughput.rows, 0);
  EXPECT_GT(rep->fit_memory.rows, 0);
  EXPECT_GT(rep->held_out_memory.rows, 0);
  int small = 0;
  for (const auto& g : rep->groups)
    for (const auto* list : {&g.throughput, &g.memory})
      for (const auto& s : *list) {
        EXPECT_NE(md.find("| " + s.group + (s.rows < kMinBandRows ? " (fewer than 5 rows)" : "") + " "), std::string::npos)
            << g.dimension << ": " << s.group;
        small += s.rows < kMinBandRows;
      }
  EXPECT_GT(small, 0) << "the published files have small groups: they must be listed";
  // The fine-tuning file's rows are predicted, by method.
  bool lora = false, qlora = false;
  for (const auto& g : rep->groups)
    if (g.dimension == "method")
      for (const auto& s : g.throughput) lora |= s.group == "lora", qlora |= s.group == "qlora";
  EXPECT_TRUE(lora && qlora);
}

}  // namespace
}  // namespace gpuplan
