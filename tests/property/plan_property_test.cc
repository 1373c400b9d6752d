// Planner properties: constraints hold, the Pareto front is non-dominated, more budget never
// makes the best time worse (seed printed).
#include <gtest/gtest.h>

#include <random>

#include "../test_util.h"
#include "gpuplan/plan.h"

namespace gpuplan {
namespace {

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

Job RandomJob(std::mt19937_64& rng) {
  auto pick = [&](std::initializer_list<const char*> xs) {
    return *(xs.begin() + std::uniform_int_distribution<size_t>(0, xs.size() - 1)(rng));
  };
  const std::string yaml = std::string("model: {preset: ") + pick({"llama-2-7b", "llama-3-8b", "llama-2-13b", "mistral-7b"}) +
                           "}\ntraining: {method: " + pick({"full", "lora"}) + ", seq_len: " + pick({"1024", "2048", "4096"}) +
                           ", global_batch: " + pick({"64", "128", "256"}) + ", tokens: " + pick({"1e8", "1e9", "5e9"}) +
                           "}\nconstraints: {max_gpus: " + pick({"8", "32", "64"}) + ", objective: " + pick({"time", "cost", "balanced"}) +
                           ", deadline_hours: " + pick({"5", "24", "200"}) + ", budget_usd: " + pick({"300", "2000", "50000"}) + ", spot: " + pick({"no", "allowed"}) + "}\n";
  auto j = ParseJobText(yaml, "random.yaml");
  EXPECT_TRUE(j.ok()) << yaml << j.status().ToString();
  return *j;
}

uint64_t Seed() {
  const uint64_t seed = std::random_device{}();
  std::printf("property seed: %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

TEST(PlanProperty, NoPlanViolatesAConstraint) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int i = 0, n = testing_util::PropertyCases(12, 4); i < n; ++i) {
    const Job j = RandomJob(rng);
    auto r = PlanJob(j, Cat(), Calibration::Builtin());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Constraints& c = j.constraints;
    for (const auto* list : {&r->plans, &r->pareto})
      for (const auto& p : *list) {
        EXPECT_LE(p.job.cluster.num_gpus, c.max_gpus) << "seed " << seed;
        EXPECT_LE(p.time_s, c.deadline_hours * 3600 * (1 + 1e-9)) << "seed " << seed;
        EXPECT_TRUE(p.cost.price_known) << "budget set: unknown prices are excluded";
        // The budget bounds the whole bill (compute + storage + requests) times the rerun factor.
        EXPECT_LE(p.cost.with_rerun_usd, c.budget_usd * (1 + 1e-6)) << "seed " << seed;
        EXPECT_LE(p.job.parallel.tp, p.instance.gpu_count);
        // Wall-clock is the time: it covers start-up and the steps, goodput is their ratio, and the
        // compute bill is price x nodes x wall-clock.
        EXPECT_GE(p.time_s, (p.train_s + p.startup.Total()) * (1 - 1e-12)) << "seed " << seed;
        EXPECT_NEAR(p.wall.goodput, p.train_s / p.time_s, 1e-12) << "seed " << seed;
        EXPECT_NEAR(p.cost.compute_usd, p.cost.price_per_node_hour * static_cast<double>(p.nodes) * p.cost.billed_hours,
                    1e-9 * p.cost.compute_usd) << "seed " << seed;
        if (p.cost.price_kind == "capacity-block") EXPECT_GE(p.cost.billed_hours, p.time_s / 3600 * (1 - 1e-12));
        else EXPECT_NEAR(p.cost.billed_hours, p.time_s / 3600, 1e-9 * p.time_s) << "seed " << seed;
        EXPECT_NEAR(p.cost.with_rerun_usd, p.cost.subtotal_usd * c.rerun_factor, 1e-9 * p.cost.subtotal_usd);
        EXPECT_LE(p.memory_bytes, p.instance.gpu_count > 0 ? 1e30 : 0);
      }
  }
}

TEST(PlanProperty, ParetoFrontIsNonDominated) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int i = 0, n = testing_util::PropertyCases(8, 3); i < n; ++i) {
    Job j = RandomJob(rng);
    j.constraints.budget_usd = 0;
    j.constraints.deadline_hours = 0;
    auto r = PlanJob(j, Cat(), Calibration::Builtin());
    ASSERT_TRUE(r.ok());
    const auto& f = r->pareto;
    for (size_t a = 0; a < f.size(); ++a)
      for (size_t b = 0; b < f.size(); ++b) {
        if (a == b) continue;
        const bool dominates = f[b].time_s <= f[a].time_s &&
                               f[b].cost.with_rerun_usd <= f[a].cost.with_rerun_usd &&
                               (f[b].time_s < f[a].time_s || f[b].cost.with_rerun_usd < f[a].cost.with_rerun_usd);
        EXPECT_FALSE(dominates) << "seed " << seed << ": pareto[" << b << "] dominates pareto[" << a << "]";
      }
  }
}

TEST(PlanProperty, MoreBudgetNeverMakesTheBestTimeWorse) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int i = 0, n = testing_util::PropertyCases(6, 2); i < n; ++i) {
    Job j = RandomJob(rng);
    j.constraints.objective = Objective::kTime;
    j.constraints.deadline_hours = 0;
    double prev = 1e300;
    for (double budget : {200.0, 1000.0, 5000.0, 50000.0}) {
      j.constraints.budget_usd = budget;
      auto r = PlanJob(j, Cat(), Calibration::Builtin());
      ASSERT_TRUE(r.ok());
      const double best = r->plans.empty() ? 1e300 : r->plans.front().time_s;
      EXPECT_LE(best, prev * (1 + 1e-12)) << "seed " << seed << " budget " << budget;
      prev = best;
    }
  }
}

}  // namespace
}  // namespace gpuplan
