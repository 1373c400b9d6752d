// serving --plan: the acceptance (Llama-3-8B at 10 req/s under a 500 ms TTFT p90; 70B bf16
// pinned on one 24 GB card), the search's properties, and every flag a launch line emits is a fact
// of its engine's key table (data/engine_keys/*.csv).
#include <gtest/gtest.h>

#include "../test_util.h"

#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "gpuplan/csv.h"
#include "gpuplan/serving_export.h"
#include "gpuplan/serving_plan.h"

namespace gpuplan {
namespace {

const Catalog& Cat() { return testing_util::BuiltinCatalog(); }
const std::vector<ServingEngineProfile>& Engines() { return testing_util::BuiltinServingEngines(); }

void Pin(Job& j, const std::string& key) { j.set_keys[key] = Location{"test.yaml", 1, key}; }

// Llama-3-8B, 1000 in / 200 out at 10 requests/s, TTFT p90 <= 500 ms (the acceptance job).
Job Job8b(double ttft_ms = 500) {
  auto j = ParseJobText("model: {preset: llama-3-8b}\n", "test.yaml");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  Job job = *j;
  job.serving.input_len = 1000;
  job.serving.output_len = 200;
  job.serving.load = ServingLoad::kRequestRate;
  job.serving.request_rate = 10;
  job.serving.ttft_p90_ms = ttft_ms;
  job.constraints.top = 100000;
  return job;
}

ServingPlanResult Plan(const Job& job) {
  auto r = PlanServing(job, Cat(), Calibration::Builtin(), Engines());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ServingPlanResult{};
}

// Plans are one per purchasable setup (its cheapest layout).
using Key = std::pair<std::string, std::string>;
std::set<Key> Keys(const ServingPlanResult& r) {
  std::set<Key> out;
  for (const auto& p : r.plans) out.insert({p.instance.id, p.price_kind});
  return out;
}

TEST(ServingPlan, Llama8bAtTenRequestsPerSecondMeetsTheSlaPricedWithVllmLines) {
  const ServingPlanResult r = Plan(Job8b());
  ASSERT_FALSE(r.plans.empty()) << r.relax;
  EXPECT_DOUBLE_EQ(r.target_requests_per_s, 10);
  auto profile = FindServingEngine(Engines(), "vllm", "", {});
  ASSERT_TRUE(profile.ok());
  double last = 0;
  for (const auto& p : r.plans) {
    SCOPED_TRACE(p.instance.id);
    EXPECT_LE(p.estimate.ttft_s.p90 * 1e3, 500.0);
    EXPECT_FALSE(p.estimate.saturated);
    EXPECT_TRUE(p.estimate.fits);
    EXPECT_GT(p.usd_per_node_hour, 0);
    EXPECT_NEAR(p.output_tokens_per_s, 10 * 200, 1e-6 * 2000);  // the load served, all replicas
    EXPECT_GE(p.cost_per_million_output_tokens_usd, last);       // ranked cheapest first
    last = p.cost_per_million_output_tokens_usd;
    EXPECT_EQ(p.gpus, p.nodes * p.instance.gpu_count);
    EXPECT_LE(p.replicas * p.tp * p.pp, p.gpus);
    EXPECT_GE(p.replicas, p.replicas_needed);
    const std::string line = ServingLaunchLine(p.job, p.estimate, *profile);
    EXPECT_EQ(line.rfind("vllm serve meta-llama/Meta-Llama-3-8B ", 0), 0u) << line;  // the preset's repo
    EXPECT_NE(line.find("--max-model-len 1200"), std::string::npos) << line;
  }
}

TEST(ServingPlan, CostPerTokenIsPriceOverThroughput) {
  for (const auto& p : Plan(Job8b()).plans) {
    EXPECT_NEAR(p.usd_per_hour, p.usd_per_node_hour * static_cast<double>(p.nodes), 1e-9);
    EXPECT_NEAR(p.cost_per_million_output_tokens_usd, p.usd_per_hour / (p.output_tokens_per_s * 3600) * 1e6,
                1e-9 * p.cost_per_million_output_tokens_usd);
  }
}

TEST(ServingPlan, SeventyBBf16PinnedOnOne24GbCardReturnsNothingAndSaysWhatWouldFit) {
  auto j = ParseJobText("model: {preset: llama-3-70b}\n", "test.yaml");
  ASSERT_TRUE(j.ok());
  Job job = *j;
  job.cluster.gpu = "rtx4090-24gb";
  job.cluster.num_gpus = 1;
  job.serving.weights = WeightFormat::kBf16;
  for (const char* k : {"cluster.gpu", "cluster.num_gpus", "serving.weights"}) Pin(job, k);
  const ServingPlanResult r = Plan(job);
  EXPECT_TRUE(r.plans.empty());
  EXPECT_EQ(r.relax_code, "does_not_fit");
  EXPECT_NE(r.relax.find("rtx4090-24gb"), std::string::npos) << r.relax;
  // What would fit: the open search's cheapest setup (quantised and/or split), priced.
  EXPECT_NE(r.relax.find("the cheapest that fits"), std::string::npos) << r.relax;
  EXPECT_NE(r.relax.find("per million output tokens"), std::string::npos) << r.relax;
  bool counted = false;
  for (const auto& x : r.rejected) counted |= x.code == "does_not_fit" && x.count > 0;
  EXPECT_TRUE(counted);
}

TEST(ServingPlanProperty, ALooserSlaNeverRemovesAFeasiblePlan) {
  for (double ttft : {200.0, 500.0}) {
    const auto tight = Keys(Plan(Job8b(ttft)));
    const auto loose = Keys(Plan(Job8b(ttft * 4)));
    for (const auto& k : tight) EXPECT_TRUE(loose.count(k)) << k.first;
    EXPECT_GE(loose.size(), tight.size());
  }
}

TEST(ServingPlanProperty, MoreGpusNeverRemovesAFeasiblePlan) {
  Job small = Job8b();
  small.constraints.max_gpus = 2;
  Job large = Job8b();
  large.constraints.max_gpus = 64;
  const auto a = Keys(Plan(small)), b = Keys(Plan(large));
  for (const auto& k : a) EXPECT_TRUE(b.count(k)) << k.first;
}

TEST(ServingPlanProperty, EveryPlanRespectsItsPins) {
  Job job = Job8b(2000);
  job.cluster.gpu = "h100-sxm-80gb";
  job.parallel.tp = 2;
  job.serving.kv_dtype = KvDtype::kFp8;
  for (const char* k : {"cluster.gpu", "parallel.tp", "serving.kv_dtype"}) Pin(job, k);
  const ServingPlanResult r = Plan(job);
  ASSERT_FALSE(r.plans.empty()) << r.relax;
  for (const auto& p : r.plans) {
    EXPECT_EQ(p.instance.gpu_id, "h100-sxm-80gb");
    EXPECT_EQ(p.tp, 2);
    EXPECT_EQ(p.kv_dtype, KvDtype::kFp8);
  }
}

TEST(ServingPlan, OneRowPerPurchasableSetup) {
  const ServingPlanResult r = Plan(Job8b());
  EXPECT_EQ(Keys(r).size(), r.plans.size());
  EXPECT_GE(r.feasible, static_cast<int64_t>(r.plans.size()));
}

TEST(ServingPlan, AnImpossibleTtftSaysHowFarTheNearestSetupIs) {
  const ServingPlanResult r = Plan(Job8b(1));
  EXPECT_TRUE(r.plans.empty());
  EXPECT_EQ(r.relax_code, "sla");
  EXPECT_NE(r.relax.find("TTFT p90"), std::string::npos) << r.relax;
}

// ---- launch lines against the engines' key tables ----

std::set<std::string> Flags(const std::string& engine_file) {
  std::set<std::string> out;
  auto t = ReadCsvFile(std::string(GPUPLAN_SOURCE_DIR) + "/data/engine_keys/" + engine_file);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return out;
  for (const auto& row : t->rows) out.insert(CsvRecord(*t, row).Str("id"));
  return out;
}

TEST(ServingLaunch, EveryFlagEmittedIsInTheEnginesKeyTable) {
  auto j = ParseJobText("model: {preset: llama-3-8b}\n", "test.yaml");
  ASSERT_TRUE(j.ok());
  ServingEstimate e;
  e.max_model_len = 1200, e.max_num_seqs = 256, e.max_num_batched_tokens = 8192, e.replicas = 1;
  const std::vector<std::pair<std::string, std::string>> engines = {{"vllm", "vllm.csv"}, {"sglang", "sglang.csv"},
                                                                    {"tensorrt-llm", "tensorrt_llm.csv"}};
  for (const auto& [name, file] : engines) {
    const std::set<std::string> table = Flags(file);
    auto profile = FindServingEngine(Engines(), name, "", {});
    ASSERT_TRUE(profile.ok()) << name;
    int flags_seen = 0;
    for (WeightFormat w : {WeightFormat::kBf16, WeightFormat::kFp16, WeightFormat::kFp8, WeightFormat::kInt8, WeightFormat::kInt4Awq,
                           WeightFormat::kInt4Gptq, WeightFormat::kFp4})
      for (KvDtype kv : {KvDtype::kAuto, KvDtype::kFp8})
        for (int64_t tp : {1, 4})
          for (int64_t pp : {1, 2}) {
            Job job = *j;
            job.serving.weights = w, job.serving.kv_dtype = kv, job.parallel.tp = tp, job.parallel.pp = pp;
            for (const auto& word : ServingLaunchArgv(job, e, *profile)) {
              if (word.rfind("--", 0) != 0) continue;
              ++flags_seen;
              EXPECT_TRUE(table.count(word)) << name << ": " << word << " is not in data/engine_keys/" << file;
            }
          }
    EXPECT_GT(flags_seen, 0) << name;
  }
}

TEST(ServingLaunch, QuantizationValuesComeFromTheData) {
  auto awq = FindServingFlag("vllm", "weights", "int4-awq");
  ASSERT_TRUE(awq);
  EXPECT_EQ(awq->flag, "--quantization");
  EXPECT_EQ(awq->value, "awq_marlin");
  EXPECT_FALSE(FindServingFlag("vllm", "weights", "bf16"));  // the checkpoint's own dtype: no flag
  auto kv = FindServingFlag("sglang", "kv_dtype", "fp8");
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->value, "fp8_e4m3");
}

}  // namespace
}  // namespace gpuplan
