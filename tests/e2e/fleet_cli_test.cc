// gpuplan fleet through the binary (docs/fleet.md): --json's keys, exit 2 with the report when a deadline cannot be
// met, exit 1 on a bad flag. The library's side is tests/unit/fleet_test.cc.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "../fleet_jobs.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

using testing_util::ThreeJobs;

const std::string kSrc = GPUPLAN_SOURCE_DIR;

TEST(FleetCli, CommandLineJsonAndExitCodes) {
  auto ok = testing_util::Exec("fleet " + kSrc + "/examples/fleet-lab.yaml --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  auto j = nlohmann::json::parse(ok.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << ok.out;
  for (const char* k : {"assignments", "utilization", "baseline", "missed"}) EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_EQ(j["assignments"].size(), 3u);
  for (const auto& a : j["assignments"]) {
    for (const char* k : {"job", "gpus", "layout", "time_s", "cost_usd", "deadline_met"}) EXPECT_TRUE(a.contains(k)) << k;
    for (const auto& g : a["gpus"]) EXPECT_TRUE(g.contains("pool") && g.contains("count"));
  }
  EXPECT_TRUE(j["baseline"].contains("utilization"));
  EXPECT_TRUE(j["baseline"].contains("assignments"));
  // An impossible deadline: exit 2, the report still printed, with which job and why.
  const std::string path = testing_util::UniqueTempPath("fleet_deadline", ".yaml");
  std::ofstream(path) << ThreeJobs("0.01");
  auto missed = testing_util::Exec("fleet " + path);
  EXPECT_EQ(missed.exit_code, 2) << missed.out;
  EXPECT_NE(missed.out.find("CANNOT MEET finetune"), std::string::npos) << missed.out;
  EXPECT_NE(missed.out.find("Baseline"), std::string::npos) << missed.out;
  auto bad = testing_util::Exec("fleet " + path + " --export yarn --out /tmp/x");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
}

}  // namespace
}  // namespace gpuplan
