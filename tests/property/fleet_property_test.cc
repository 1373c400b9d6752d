// The fleet never overcommits (issue 20): over random pools (types, nodes, nodes_available), random jobs (small
// training jobs with and without deadlines, a small service) and random arrivals, at no time do the cards held in a
// group exceed its usable cards, under the policy or the baseline; every allocation is whole nodes past one node;
// a job starts no earlier than it arrives (seed printed).
#include <gtest/gtest.h>

#include <cstdlib>

#include <cstdio>
#include <random>

#include "gpuplan/fleet.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

uint64_t Seed() {
  const char* env = std::getenv("GPUPLAN_SEED");  // a printed seed, replayed
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("property seed: %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

template <typename T>
const T& Pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

std::string RandomFleet(std::mt19937_64& rng, int* jobs) {
  static const std::vector<std::string> kGpus = {"a100-sxm-80gb", "v100-sxm-32gb", "rtx4090-24gb", "rtx3090-24gb",
                                                 "h100-sxm-80gb", "l40s-48gb"};
  static const std::vector<int> kPerNode = {1, 2, 4, 8};
  std::string s = "pool:\n  pool: random\n  groups:\n";
  const int groups = std::uniform_int_distribution<int>(1, 4)(rng);
  for (int g = 0; g < groups; ++g) {
    const int nodes = std::uniform_int_distribution<int>(1, 3)(rng);
    s += "    - {name: g" + std::to_string(g) + ", gpu: " + Pick(rng, kGpus) + ", nodes: " + std::to_string(nodes) +
         ", gpus_per_node: " + std::to_string(Pick(rng, kPerNode)) +
         ", nodes_available: " + std::to_string(std::uniform_int_distribution<int>(1, nodes)(rng)) +
         (rng() % 2 ? ", price_per_gpu_hour: " + std::to_string(1 + rng() % 3) : std::string()) + "}\n";
  }
  s += "horizon_hours: 1000\njobs:\n";
  *jobs = std::uniform_int_distribution<int>(1, 5)(rng);
  for (int j = 0; j < *jobs; ++j) {
    s += "  - name: j" + std::to_string(j) + "\n";
    if (rng() % 5 == 0) {
      s += "    kind: serving\n    model: {preset: gpt2}\n"
           "    serving: {input_len: 200, output_len: 50, request_rate: " + std::to_string(1 + rng() % 20) +
           ", ttft_p90_ms: 2000}\n";
      continue;
    }
    s += "    kind: training\n    priority: " + std::to_string(rng() % 3) + "\n";
    if (rng() % 2) s += "    deadline_hours: " + std::to_string(1 + rng() % 48) + "\n";
    s += "    model: {preset: gpt2}\n    training: {seq_len: 512, global_batch: " + std::to_string(8 << (rng() % 4)) +
         ", tokens: " + std::to_string(1 + rng() % 50) + "e8}\n";
    if (rng() % 3 == 0) s += "    cluster: {num_gpus: " + std::to_string(1 << (rng() % 4)) + "}\n";
  }
  return s;
}

void CheckSchedule(const Fleet& f, const FleetSchedule& s, uint64_t seed) {
  for (const auto& a : s.assignments) {
    EXPECT_GE(a.start_s + 1e-9, a.arrival_s) << "seed " << seed << " " << a.job;
    for (const auto& x : a.gpus) {
      const PoolGroup& g = f.pool.groups[x.group];
      EXPECT_GT(x.count, 0) << "seed " << seed;
      EXPECT_TRUE(x.count <= g.gpus_per_node || x.count % g.gpus_per_node == 0) << "seed " << seed << " " << a.job;
    }
    // The cards held when `a` starts, per group.
    std::vector<int64_t> held(f.pool.groups.size(), 0);
    for (const auto& b : s.assignments) {
      const bool running = b.start_s <= a.start_s && (b.kind == FleetJobKind::kServing || b.end_s > a.start_s);
      if (!running) continue;
      for (const auto& x : b.gpus) held[x.group] += x.count;
    }
    for (size_t g = 0; g < held.size(); ++g)
      EXPECT_LE(held[g], f.pool.groups[g].GpusUsable())
          << "seed " << seed << ": " << s.policy << " overcommits group " << f.pool.groups[g].name << " at " << a.start_s << " s";
  }
  EXPECT_LE(s.utilization, 1 + 1e-9) << "seed " << seed;
  EXPECT_GE(s.utilization, 0) << "seed " << seed;
}

TEST(FleetPropertyTest, NeverOvercommitsAnyGroup) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  const Catalog& catalog = testing_util::BuiltinCatalog();
  for (int i = 0, n = testing_util::PropertyCases(25, 6); i < n; ++i) {
    int jobs = 0;
    const std::string text = RandomFleet(rng, &jobs);
    auto f = ParseFleetText(text, "random.yaml", catalog);
    ASSERT_TRUE(f.ok()) << "seed " << seed << ": " << f.status().ToString() << "\n" << text;
    std::vector<FleetArrival> arrivals;
    if (rng() % 2) {
      for (int k = 0, m = std::uniform_int_distribution<int>(1, 6)(rng); k < m; ++k) {
        FleetArrival a;
        a.job = static_cast<size_t>(rng() % static_cast<uint64_t>(jobs));
        a.name = "a" + std::to_string(k);
        a.arrival_s = static_cast<double>(rng() % 20000);
        arrivals.push_back(a);
      }
      std::stable_sort(arrivals.begin(), arrivals.end(), [](const auto& x, const auto& y) { return x.arrival_s < y.arrival_s; });
    }
    auto r = PlanFleet(*f, catalog, Calibration::Builtin(), testing_util::BuiltinServingEngines(), arrivals);
    ASSERT_TRUE(r.ok()) << "seed " << seed << ": " << r.status().ToString();
    CheckSchedule(*f, r->policy, seed);
    CheckSchedule(*f, r->baseline, seed);
  }
}

}  // namespace
}  // namespace gpuplan
