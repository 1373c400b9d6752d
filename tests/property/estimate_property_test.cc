// Properties of the step-time model (seed printed).
#include <gtest/gtest.h>

#include <random>

#include "gpuplan/estimate.h"

namespace gpuplan {
namespace {

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

uint64_t Seed() {
  uint64_t seed = std::random_device{}();
  std::printf("property seed: %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

template <typename T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> xs) {
  return *(xs.begin() + std::uniform_int_distribution<size_t>(0, xs.size() - 1)(rng));
}

Job RandomJob(std::mt19937_64& rng) {
  Job j;
  j.arch = *FindPreset(Pick<const char*>(rng, {"gpt2", "llama-2-7b", "llama-3-8b", "llama-2-13b", "mixtral-8x7b"}));
  j.training.seq_len = Pick<int64_t>(rng, {1024, 2048, 4096});
  j.training.micro_batch = Pick<int64_t>(rng, {1, 2, 4});
  j.training.recompute = Pick(rng, {Recompute::kNone, Recompute::kSelective, Recompute::kFull});
  j.parallel.tp = Pick<int64_t>(rng, {1, 2, 4});
  j.parallel.pp = Pick<int64_t>(rng, {1, 2, 4});
  j.parallel.dp = Pick<int64_t>(rng, {1, 2, 4, 8});
  j.parallel.zero = Pick(rng, {0, 1, 2, 3});
  j.parallel.vpp = j.parallel.pp > 1 ? Pick<int64_t>(rng, {1, 2}) : 1;
  j.training.global_batch = j.training.micro_batch * j.parallel.dp * Pick<int64_t>(rng, {1, 4, 16});
  j.cluster.gpu = Pick<const char*>(rng, {"a100-sxm-80gb", "h100-sxm-80gb", "l40s-48gb"});
  j.cluster.gpus_per_node = Pick<int64_t>(rng, {1, 2, 8});
  j.cluster.network = Pick<const char*>(rng, {"tcp-10g", "tcp-25g", "roce-200g", "ib-ndr"});
  return j;
}

TEST(EstimateProperty, MoreBandwidthNeverSlowsAStep) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  int checked = 0;
  const char* nets[] = {"tcp-1g", "tcp-10g", "tcp-25g", "tcp-100g"};
  for (int i = 0; i < 300; ++i) {
    Job j = RandomJob(rng);
    if (!FinalizeJob(j).ok()) continue;
    double prev = 1e300;
    for (const char* net : nets) {
      Job k = j;
      k.cluster.network = net;
      auto hw = ResolveHardware(k, Cat(), Calibration::Builtin());
      ASSERT_TRUE(hw.ok()) << hw.status().ToString();
      const double t = EstimateStep(k, *hw).step_time_s;
      EXPECT_LE(t, prev * (1 + 1e-12)) << "seed " << seed << " case " << i << " " << net;
      prev = t;
    }
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST(EstimateProperty, MoreGpusAtFixedGlobalBatchNeverRaiseFlopsPerGpu) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 200; ++i) {
    Job j = RandomJob(rng);
    j.training.global_batch = 256;
    j.parallel.dp = 1;
    if (!FinalizeJob(j).ok()) continue;
    double prev = 1e300;
    for (int64_t dp : {1, 2, 4, 8, 16}) {
      Job k = j;
      k.parallel.dp = dp;
      k.cluster.num_gpus = 0;
      if (!FinalizeJob(k).ok()) continue;
      auto hw = ResolveHardware(k, Cat(), Calibration::Builtin());
      ASSERT_TRUE(hw.ok());
      const StepEstimate e = EstimateStep(k, *hw);
      const double per_gpu = e.hardware_flops_per_step / k.cluster.num_gpus;
      EXPECT_LE(per_gpu, prev * (1 + 1e-9)) << "seed " << seed << " case " << i << " dp " << dp;
      prev = per_gpu;
    }
  }
}

// frameworks.md §1-§3, §6: torch.compile only swaps eager op costs for fused ones (element traffic,
// kernels, host ops, loss, fp8 casts), so it never makes a step slower, for any framework.
TEST(EstimateProperty, CompileNeverSlowsAStep) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    Job j = RandomJob(rng);
    j.training.framework = Pick(rng, {Framework::kGeneric, Framework::kMegatron, Framework::kTorchtitan,
                                      Framework::kLlmFoundry, Framework::kHfTrainer, Framework::kUnsloth});
    if (j.cluster.gpu == "h100-sxm-80gb") j.training.precision = Pick(rng, {Precision::kBf16, Precision::kFp8});
    if (!FinalizeJob(j).ok()) continue;
    Job c = j;
    c.training.compile = true;
    auto hw = ResolveHardware(j, Cat(), Calibration::Builtin());
    auto hwc = ResolveHardware(c, Cat(), Calibration::Builtin());
    ASSERT_TRUE(hw.ok() && hwc.ok());
    EXPECT_LE(EstimateStep(c, *hwc).step_time_s, EstimateStep(j, *hw).step_time_s * (1 + 1e-12))
        << "seed " << seed << " case " << i << " " << ToString(j.training.framework);
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST(EstimateProperty, BubbleFractionMatchesFormula) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 200; ++i) {
    Job j = RandomJob(rng);
    j.parallel.pp = Pick<int64_t>(rng, {2, 4, 8});
    j.parallel.vpp = Pick<int64_t>(rng, {1, 2});
    j.arch = *FindPreset("llama-2-13b");  // 40 layers: divisible by pp*vpp up to 8*... checked below
    if (!FinalizeJob(j).ok()) continue;
    auto hw = ResolveHardware(j, Cat(), Calibration::Builtin());
    ASSERT_TRUE(hw.ok());
    const StepEstimate e = EstimateStep(j, *hw);
    const double p = static_cast<double>(j.parallel.pp), v = static_cast<double>(j.parallel.vpp);
    const double m = static_cast<double>(e.grad_accum);
    // P§1: (p - 1)/v micro-batch times of the stages without the output layer; without the head (its share of
    // compute taken out) the share of compute + bubble is the paper's (p - 1) / (m v + p - 1).
    const double t_mb = e.breakdown.compute_s / m, t_head = e.head_compute_s / m;
    ASSERT_GT(t_head, 0);
    ASSERT_LT(t_head, t_mb);
    EXPECT_NEAR(e.breakdown.bubble_s, (p - 1) / v * (t_mb - t_head), 1e-9 * e.breakdown.bubble_s) << "seed " << seed << " case " << i;
    const double body = e.breakdown.compute_s - e.head_compute_s;
    const double fraction = e.breakdown.bubble_s / (e.breakdown.bubble_s + body);
    EXPECT_NEAR(fraction, (p - 1) / (m * v + p - 1), 1e-9) << "seed " << seed << " case " << i;
  }
}

TEST(EstimateProperty, BusBandwidthFactorForAllReduce) {
  // busbw = algbw x 2(n-1)/n: with a pure-bandwidth ring the bus bandwidth is the link's.
  Job j;
  j.arch = *FindPreset("gpt2");
  j.cluster.gpu = "h100-sxm-80gb";
  auto hw = ResolveHardware(j, Cat(), Calibration::Builtin());
  ASSERT_TRUE(hw.ok());
  hw->k.collective_latency_s = 0;
  for (int64_t n : {2, 4, 8}) {
    const double bytes = 1e9;
    const double t = CollectiveTime(Collective::kAllReduce, bytes, n, n, *hw);
    const double algbw = bytes / t;
    EXPECT_NEAR(BusBandwidth(Collective::kAllReduce, bytes, n, n, *hw), algbw * 2.0 * (n - 1) / n, 1e-6 * algbw);
  }
}


// pipeline.md §4: for random layouts, pipeline hops that cross nodes are priced on the network
// (a slower inter-node link makes the exposed pp time strictly larger); a pipeline that fits in
// one node is untouched by it.
TEST(EstimateProperty, PipelineHopsAcrossNodesArePricedOnTheNetwork) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  int crossing = 0, inside = 0;
  for (int i = 0; i < 300; ++i) {
    Job j;
    j.arch = *FindPreset(Pick<const char*>(rng, {"gpt2", "llama-2-7b", "llama-2-13b"}));
    j.training.seq_len = Pick<int64_t>(rng, {1024, 2048});
    j.training.micro_batch = Pick<int64_t>(rng, {1, 2});
    j.parallel.tp = Pick<int64_t>(rng, {1, 2, 4, 8});
    j.parallel.pp = Pick<int64_t>(rng, {2, 3, 4, 8});
    j.parallel.dp = Pick<int64_t>(rng, {1, 2, 4});
    j.parallel.zero = Pick(rng, {0, 1});
    j.parallel.vpp = Pick<int64_t>(rng, {1, 2});
    j.parallel.sequence_parallel = j.parallel.tp > 1 && Pick(rng, {false, true});
    j.training.global_batch = j.training.micro_batch * j.parallel.dp * Pick<int64_t>(rng, {8, 16});
    j.cluster.gpu = "a100-sxm-80gb";
    j.cluster.gpus_per_node = Pick<int64_t>(rng, {2, 4, 8, 16});
    if (j.arch.layers < j.parallel.pp * j.parallel.vpp || !FinalizeJob(j).ok()) continue;
    auto at = [&](const char* net, int64_t nics) {
      Job k = j;
      k.cluster.network = net;
      k.cluster.nics_per_node = nics;
      auto hw = ResolveHardware(k, Cat(), Calibration::Builtin());
      EXPECT_TRUE(hw.ok()) << hw.status().ToString();
      return EstimateStep(k, *hw);
    };
    const StepEstimate slow = at("tcp-10g", 1), fast = at("ib-ndr", j.cluster.gpus_per_node);
    EXPECT_EQ(slow.comm.pp_cross_boundaries, fast.comm.pp_cross_boundaries);
    EXPECT_GE(slow.step_time_s, fast.step_time_s * (1 - 1e-12)) << "seed " << seed << " case " << i;
    if (j.cluster.num_gpus <= j.cluster.gpus_per_node) {
      ++inside;
      EXPECT_EQ(slow.comm.pp_cross_boundaries, 0) << "seed " << seed << " case " << i;
      EXPECT_DOUBLE_EQ(slow.step_time_s, fast.step_time_s) << "seed " << seed << " case " << i;
    } else {
      ++crossing;
      EXPECT_GT(slow.comm.pp_cross_boundaries, 0) << "seed " << seed << " case " << i;
      EXPECT_GT(slow.breakdown.pp_comm_s, fast.breakdown.pp_comm_s) << "seed " << seed << " case " << i;
      EXPECT_GT(slow.step_time_s, fast.step_time_s) << "seed " << seed << " case " << i;
      EXPECT_GT(slow.comm.pp_cross_node_bytes, 0);
    }
  }
  EXPECT_GT(crossing, 20);
  EXPECT_GT(inside, 5);
}
}  // namespace
}  // namespace gpuplan
