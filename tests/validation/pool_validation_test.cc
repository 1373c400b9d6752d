// Runs with pinned stage layouts (docs/model/pools.md, docs/validation.md "Mixed pools"): every row of
// ../shared/validation/hetero_homog_runs.csv whose system and cards validation/pools/hardware.csv maps is
// predicted; a gpu_mix of several card types becomes one pool group per type in the order listed, each with its
// own node size, intra-node link and network; a label the hardware file does not map is skipped with its name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "gpuplan/pool_validation.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

const std::string kSrc = GPUPLAN_SOURCE_DIR;
const std::string kRuns = std::string(GPUPLAN_SHARED_DIR) + "/validation/hetero_homog_runs.csv";

Result<PoolValidationReport> Validate(const std::vector<std::string>& files) {
  return ValidatePoolRuns(files, kSrc + "/validation/pools/hardware.csv", kSrc + "/validation/pools/models.csv",
                          testing_util::BuiltinCatalog(), Calibration::Builtin());
}

TEST(PoolValidation, EveryAmpRowIsPredicted) {
  auto rep = Validate({kRuns});
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  int64_t amp = 0;
  for (const auto& r : rep->rows) {
    if (r.system != "AMP") continue;
    ++amp;
    EXPECT_EQ(r.skip, "") << "row " << r.id;
    EXPECT_GT(r.predicted_s, 0) << "row " << r.id;
  }
  EXPECT_GT(amp, 40);
}

// A mixed row: the homogeneous row 57's layout on 12 V100 + 4 T4, written three ways.
TEST(PoolValidation, AMixOfCardTypesIsOnePoolGroupPerType) {
  std::ifstream in(kRuns);
  std::string header, line, row57;
  std::getline(in, header);
  while (std::getline(in, line))
    if (line.rfind("57,", 0) == 0) row57 = line;
  ASSERT_FALSE(row57.empty());
  const std::string path = (std::filesystem::temp_directory_path() / ("gpuplan-mix-" + std::to_string(::getpid()) + ".csv")).string();
  {
    std::ofstream out(path);
    out << header << "\n";
    for (const std::string mix : {"T4-16GB:16", "V100-16GB:12+T4-16GB:4", "\"V100:12, T4:4\"", "A100-80GB:12+T4-16GB:4"}) {
      std::string r = row57;
      r.replace(r.find("T4-16GB:16"), 10, mix);
      out << r << "\n";
    }
  }
  auto rep = Validate({path});
  std::filesystem::remove(path);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->rows.size(), 4u);
  const auto& homog = rep->rows[0];
  const auto& mixed = rep->rows[1];
  EXPECT_EQ(homog.skip, "");
  EXPECT_EQ(mixed.skip, "");
  EXPECT_EQ(rep->rows[2].skip, "");  // labels matched ignoring the memory suffix
  EXPECT_DOUBLE_EQ(rep->rows[2].predicted_s, mixed.predicted_s);
  // Three V100 stages then a T4 stage behind a 10 Gbps hop: not the all-T4 time.
  EXPECT_NE(mixed.predicted_s, homog.predicted_s);
  EXPECT_NE(rep->rows[3].skip.find("no hardware mapping for A100-80GB"), std::string::npos) << rep->rows[3].skip;
}

// One run has one engine: card types whose hardware rows disagree on it are skipped with the reason, never mixed.
TEST(PoolValidation, CardTypesWithDifferentEngineSettingsAreSkipped) {
  const std::string dir = std::filesystem::temp_directory_path() / ("gpuplan-hw-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ifstream hin(kSrc + "/validation/pools/hardware.csv"), rin(kRuns);
  std::ofstream hout(dir + "/hardware.csv"), rout(dir + "/runs.csv");
  for (std::string l; std::getline(hin, l);) {
    if (l.rfind("AMP,V100-16GB,", 0) == 0) l.replace(l.find(",deepspeed,fp16,false,"), 22, ",deepspeed,fp16,true,");
    hout << l << "\n";
  }
  std::string line;
  std::getline(rin, line);
  rout << line << "\n";
  while (std::getline(rin, line))
    if (line.rfind("57,", 0) == 0) rout << line.replace(line.find("T4-16GB:16"), 10, "V100-16GB:12+T4-16GB:4") << "\n";
  hout.close(), rout.close();
  auto rep = ValidatePoolRuns({dir + "/runs.csv"}, dir + "/hardware.csv", kSrc + "/validation/pools/models.csv",
                              testing_util::BuiltinCatalog(), Calibration::Builtin());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->rows.size(), 1u);
  EXPECT_NE(rep->rows[0].skip.find("different engine settings"), std::string::npos) << rep->rows[0].skip;
}

// MX§7 a card's measured per-layer forward time: the scale is that time over the model's GPU time of the layer
// (derived from the profile, not the runs); every AMP row is predicted a second time with it; a bad cell is an
// error at its line and column.
TEST(PoolValidation, MeasuredLayerTimesGiveASecondPrediction) {
  auto rep = Validate({kRuns});
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  for (const auto& r : rep->rows) {
    if (r.system != "AMP") {
      EXPECT_EQ(r.calibrated_s, 0) << "row " << r.id;  // no measured layer time for its cards
      continue;
    }
    EXPECT_GT(r.calibrated_s, r.predicted_s) << "row " << r.id;  // the T4 layer is measured slower than modelled
    EXPECT_NE(r.scales.find("t4-16gb x"), std::string::npos) << r.scales;
  }
  const std::string md = PoolValidationToMarkdown(*rep);
  EXPECT_NE(md.find("with measured layer time s"), std::string::npos);

  const std::string dir = std::filesystem::temp_directory_path() / ("gpuplan-lt-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ifstream hin(kSrc + "/validation/pools/hardware.csv");
  std::ofstream hout(dir + "/hardware.csv");
  int line_no = 0, t4_line = 0;
  for (std::string l; std::getline(hin, l);) {
    ++line_no;
    if (l.rfind("AMP,T4-16GB,", 0) == 0) l.replace(l.find(",5.698,"), 7, ",-1,"), t4_line = line_no;
    hout << l << "\n";
  }
  hout.close();
  auto bad = ValidatePoolRuns({kRuns}, dir + "/hardware.csv", kSrc + "/validation/pools/models.csv",
                              testing_util::BuiltinCatalog(), Calibration::Builtin());
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("hardware.csv:" + std::to_string(t4_line) + ": layer_forward_ms"), std::string::npos)
      << bad.status().ToString();
}

}  // namespace
}  // namespace gpuplan
