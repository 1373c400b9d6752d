// Issue 16 item 3: every plan the planner ranks can be launched as it is. For random jobs and
// frameworks (generic included), each row's engine expresses its layout (CannotExpress empty), the
// row's framework picks that engine, and a named framework's rows all run on its engine (seed printed).
#include <gtest/gtest.h>

#include <random>

#include "../test_util.h"
#include "gpuplan/engines.h"
#include "gpuplan/launch.h"
#include "gpuplan/plan.h"

namespace gpuplan {
namespace {

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

TEST(EnginePlanProperty, EveryRankedPlanExportsToItsEngine) {
  const uint64_t seed = std::random_device{}();
  std::printf("property seed: %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<const char*> xs) {
    return std::string(*(xs.begin() + std::uniform_int_distribution<size_t>(0, xs.size() - 1)(rng)));
  };
  for (int i = 0, n = testing_util::PropertyCases(8, 3); i < n; ++i) {
    const std::string framework = pick({"generic", "megatron", "deepspeed", "hf-trainer", "torchtitan", "fsdp", "nemo", "torchtune"});
    const std::string method = framework == "megatron" || framework == "nemo" || framework == "torchtitan" ? "full" : pick({"full", "lora"});
    std::string yaml = "model: {preset: " + pick({"llama-2-7b", "llama-3-8b", "llama-2-13b", "qwen2.5-72b", "mpt-7b"}) + "}\ntraining: {method: " +
                       method + ", seq_len: " + pick({"2048", "4096"}) + ", global_batch: " + pick({"64", "256"}) +
                       ", tokens: 1e9" + (framework == "generic" ? "" : ", framework: " + framework) +
                       "}\nconstraints: {max_gpus: " + pick({"8", "32", "64"}) + ", gpus: [" + pick({"h100", "a100-80gb", "l40s", "a800"}) +
                       "], objective: " + pick({"time", "cost"}) + "}\n";
    auto job = ParseJobText(yaml, "random.yaml");
    ASSERT_TRUE(job.ok()) << yaml << job.status().ToString();
    auto r = PlanJob(*job, Cat(), Calibration::Builtin());
    if (!r.ok()) {  // a named engine that cannot train the job at all (ALiBi on Megatron) is bad input, said so
      EXPECT_EQ(r.status().code(), StatusCode::kBadInput) << yaml << r.status().ToString();
      EXPECT_NE(r.status().reason().find("cannot express"), std::string::npos) << r.status().ToString();
      continue;
    }
    for (size_t n = 0; n < r->plans.size(); ++n) {
      const Plan& p = r->plans[n];
      const auto format = ParseExportFormat(p.engine);
      ASSERT_TRUE(format.has_value()) << p.engine;
      EXPECT_EQ(DefaultEngine(p.job), *format) << "seed " << seed << " row " << n + 1;
      const LaunchPlan lp = LaunchPlanFromPlan(p, Cat(), "row");
      EXPECT_EQ(CannotExpress(*format, lp), "") << "seed " << seed << "\n" << yaml << "row " << n + 1 << ": " << LayoutString(p.job);
      if (framework != "generic") EXPECT_EQ(ToString(p.job.training.framework), framework) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace gpuplan
