// End-to-end: `gpuplan serving` on the examples: text and JSON, the issue's JSON keys, exit 2 with
// what would fit for a model that does not fit, and bad serving keys as file:line: key: reason.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gpuplan/text_width.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

using testing_util::Exec;
using testing_util::Proc;

const std::string kExample = std::string(GPUPLAN_SOURCE_DIR) + "/examples/serving-llama3-8b-vllm.yaml";
const std::string kNoFit = std::string(GPUPLAN_SOURCE_DIR) + "/examples/serving-llama3-70b-24gb.yaml";

// The JSON document of a run (stdout and stderr are joined; JSON goes alone to stdout).
nlohmann::json Json(const Proc& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

TEST(ServingCli, TextNamesEveryPartAndFits120Columns) {
  const Proc r = Exec("serving " + kExample);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* part : {"llama-3-8b on 1 x h100-sxm-80gb", "memory per GPU at start-up", "- weights", "= KV cache",
                           "KV-cache capacity", "max concurrency at", "TTFT mean / p90", "TPOT mean / p90",
                           "output tokens/s per GPU", "requests/s", "decode step", "bottleneck:"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(DisplayWidth(line), kTextWidth) << line;
}

TEST(ServingCli, JsonHasTheIssuesKeys) {
  const Proc r = Exec("serving " + kExample + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = Json(r);
  for (const char* key : {"kv_cache_bytes_per_token", "kv_cache_capacity_tokens", "max_concurrency", "ttft_s", "tpot_s",
                          "output_tokens_per_s", "output_tokens_per_s_per_gpu", "requests_per_s",
                          "cost_per_million_output_tokens_usd", "cost_per_million_input_tokens_usd", "bottleneck",
                          "memory_per_gpu", "weights_per_gpu_bytes", "kv_cache_per_gpu_bytes", "decode_step_s", "engine",
                          "notes", "inputs", "fits"})
    EXPECT_TRUE(j.contains(key)) << key;
  for (const char* lat : {"ttft_s", "tpot_s"}) {
    ASSERT_TRUE(j[lat].is_object()) << lat;
    EXPECT_TRUE(j[lat]["mean"].is_number()) << lat;
    EXPECT_TRUE(j[lat]["p90"].is_number()) << lat;
    EXPECT_LE(j[lat]["mean"].get<double>(), j[lat]["p90"].get<double>()) << lat;
  }
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_GT(j["kv_cache_capacity_tokens"].get<double>(), 0);
  // Llama-3-8B, bf16 KV: 2 x 32 layers x 8 KV heads x 128 x 2 bytes.
  EXPECT_EQ(j["kv_cache_bytes_per_token"].get<double>(), 131072);
  EXPECT_EQ(j["engine"]["name"], "vllm");
  EXPECT_EQ(j["inputs"]["serving"]["load"]["concurrency"], 16);
  EXPECT_TRUE(j["cost_per_million_output_tokens_usd"].is_number() || j["cost_per_million_output_tokens_usd"].is_null());
  EXPECT_EQ(j["cost_per_million_output_tokens_usd"].is_null(), j["price"]["usd_per_gpu_hour"].is_null());
}

TEST(ServingCli, ModelThatDoesNotFitIsExit2WithWhatWouldFit) {
  const Proc t = Exec("serving " + kNoFit);
  EXPECT_EQ(t.exit_code, 2) << t.out;
  EXPECT_NE(t.out.find("DOES NOT FIT"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("what would fit"), std::string::npos) << t.out;
  const Proc r = Exec("serving " + kNoFit + " --json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  const nlohmann::json j = Json(r);
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_TRUE(j["fit_problem"].is_string());
  EXPECT_FALSE(j["what_would_fit"].empty());
  EXPECT_EQ(j["error"]["code"], "infeasible");
  EXPECT_TRUE(j["ttft_s"]["mean"].is_null());
  EXPECT_TRUE(j["cost_per_million_output_tokens_usd"].is_null());
}

TEST(ServingCli, FlagsMirrorTheKeys) {
  const Proc a = Exec("serving --model llama-3-8b --gpu h100-sxm-80gb --concurrency 16 --json");
  const Proc b = Exec("serving " + kExample + " --json");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(Json(a)["kv_cache_capacity_tokens"], Json(b)["kv_cache_capacity_tokens"]);
  const Proc fp8 = Exec("serving " + kExample + " --kv-dtype fp8 --json");
  ASSERT_EQ(fp8.exit_code, 0) << fp8.out;
  EXPECT_EQ(Json(fp8)["kv_cache_bytes_per_token"].get<double>(), 65536);
}

TEST(ServingCli, BadServingKeysAreLocated) {
  const std::string path = ::testing::TempDir() + "/serving_bad.yaml";
  std::ofstream(path) << "model: {preset: llama-3-8b}\nserving:\n  concurrency: 4\n  request_rate: 2\n";
  const Proc r = Exec("serving " + path);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(path + ":4: serving.request_rate: give one load"), std::string::npos) << r.out;
  const Proc w = Exec("serving --model llama-3-8b --weights int3");
  EXPECT_EQ(w.exit_code, 1) << w.out;
  EXPECT_NE(w.out.find("--weights: expected one of bf16|"), std::string::npos) << w.out;
}

TEST(ServingCli, TrainingCommandsRefuseServingFlags) {
  for (const char* cmd : {"memory", "estimate"}) {
    const Proc r = Exec(std::string(cmd) + " --model llama-3-8b --concurrency 4");
    EXPECT_EQ(r.exit_code, 1) << cmd << r.out;
    EXPECT_NE(r.out.find("--concurrency: is a serving key"), std::string::npos) << r.out;
  }
}

TEST(ServingCli, HelpListsTheServingKeysNotTheTrainingOnes) {
  const Proc r = Exec("serving --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--kv-dtype"), std::string::npos);
  EXPECT_NE(r.out.find("--tp"), std::string::npos);
  EXPECT_EQ(r.out.find("--micro-batch"), std::string::npos);
  const Proc e = Exec("estimate --help");
  EXPECT_EQ(e.out.find("--kv-dtype"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan
