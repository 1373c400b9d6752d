// Pool files and one job over a pool (docs/model/pools.md MX§1-§5): the file's errors at their lines, the placement
// of ranks over groups, a pool of one type giving exactly the homogeneous estimate, stages paced by their slowest
// card, memory checked per card.
#include <gtest/gtest.h>

#include <cmath>

#include "gpuplan/pool.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

const Catalog& Cat() { return testing_util::BuiltinCatalog(); }

Pool ParsePool(const std::string& text) {
  auto p = ParsePoolText(text, "pool.yaml", Cat());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : Pool{};
}

std::string PoolError(const std::string& text) {
  auto p = ParsePoolText(text, "pool.yaml", Cat());
  return p.ok() ? "" : p.status().ToString();
}

Job ParseJob(const std::string& text) {
  auto j = ParseJobText(text, "job.yaml");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? *j : Job{};
}

const char* kOneType =
    "groups:\n"
    "  - {name: a, gpu: a100-sxm-80gb, nodes: 2, gpus_per_node: 8, network: ib-hdr}\n";

// Llama-2-13B (40 blocks) at tp 2, pp 4; `parallel_extra` adds keys to the parallel section.
std::string Job13b(const std::string& parallel_extra = "") {
  return "model: {preset: llama-2-13b}\n"
         "training: {seq_len: 4096, micro_batch: 1, global_batch: 64, precision: bf16, recompute: selective}\n"
         "parallel: {tp: 2, pp: 4, zero: 1" + parallel_extra + "}\n";
}

TEST(PoolFile, ReadsGroupsNetworksAndPrices) {
  Pool p = ParsePool(
      "pool: lab\n"
      "groups:\n"
      "  - {name: a, gpu: a100-sxm-80gb, nodes: 2, gpus_per_node: 8, network: ib-hdr, price_per_node_hour: 8}\n"
      "  - {name: b, gpu: rtx4090-24gb, nodes: 3, gpus_per_node: 4, nodes_available: 2,\n"
      "     network: {kind: tcp, gbps: 25}}\n");
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.name, "lab");
  EXPECT_DOUBLE_EQ(*p.groups[0].price_per_gpu_hour, 1.0);
  EXPECT_FALSE(p.groups[1].price_per_gpu_hour.has_value());
  EXPECT_EQ(p.groups[1].GpusUsable(), 8);
  EXPECT_EQ(p.GpusUsable(), 24);
  ASSERT_EQ(p.links.size(), 1u);
  EXPECT_EQ(p.groups[1].network, p.links[0].id);
  EXPECT_DOUBLE_EQ(p.links[0].bw_bytes_per_s_per_dir, 25e9 / 8);
}

TEST(PoolFile, BadInputAtItsLine) {
  EXPECT_EQ(PoolError("groups:\n  - {name: a, gpu: no-such-gpu, nodes: 1, gpus_per_node: 8}\n").rfind("pool.yaml:2: groups.gpu: ", 0),
            0u);
  EXPECT_EQ(PoolError("groups:\n  - {name: a, gpu: t4-16gb, nodes: 0, gpus_per_node: 8}\n").rfind("pool.yaml:2: groups.nodes: ", 0),
            0u);
  EXPECT_EQ(PoolError("groups:\n  - name: a\n    gpu: t4-16gb\n    nodes: 1\n    gpus_per_node: 4\n    network: {kind: tcp}\n")
                .rfind("pool.yaml:6: network: needs gbps", 0),
            0u);
  EXPECT_NE(PoolError("groups:\n  - {name: a, gpu: t4-16gb, nodes: 1, gpus_per_node: 4}\n"
                      "  - {name: a, gpu: t4-16gb, nodes: 1, gpus_per_node: 4}\n")
                .find("pool.yaml:3: groups: group name 'a' is used twice"),
            std::string::npos);
  EXPECT_NE(PoolError("groups:\n  - {name: a, gpu: t4-16gb, nodes: 1, gpus_per_node: 4, colour: red}\n").find("unknown key"),
            std::string::npos);
  EXPECT_NE(PoolError("groups: []\n").find("needs a list of groups"), std::string::npos);
  EXPECT_NE(PoolError("groups:\n  - {name: a, gpu: t4-16gb, nodes: 1, gpus_per_node: 4, nodes_available: 2}\n").find("exceeds"),
            std::string::npos);
}

TEST(PoolLayoutTest, RanksFillTheGroupsInOrderWithTheEvenSplit) {
  Pool p = ParsePool(
      "groups:\n"
      "  - {name: fast, gpu: h800-80gb, nodes: 1, gpus_per_node: 8, network: ib-ndr}\n"
      "  - {name: slow, gpu: h20-96gb, nodes: 2, gpus_per_node: 8, network: ib-ndr}\n");
  Job j = ParseJob(Job13b(", dp: 2"));
  auto l = LayoutFromJob(j, p);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->Gpus(), 16);
  EXPECT_EQ(l->order, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(l->nodes, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(l->layer_split, (std::vector<int64_t>{10, 10, 10, 10}));
  // More GPUs than the pool has, and a tp that would split a node's tensor-parallel group.
  Job big = ParseJob(Job13b(", dp: 4"));
  EXPECT_FALSE(LayoutFromJob(big, ParsePool(kOneType)).ok());
  Pool fours = ParsePool("groups:\n  - {name: w, gpu: rtx4090-24gb, nodes: 6, gpus_per_node: 3}\n");
  auto bad = LayoutFromJob(j, fours);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().reason().find("span two nodes"), std::string::npos);
}

// A pool of one type is the homogeneous model, number for number.
TEST(PoolEstimateTest, OneTypeIsExactlyTheHomogeneousEstimate) {
  const Pool pool = ParsePool(kOneType);
  auto job = FinalizeJobForPool(ParseJob(Job13b() + "cluster: {network: ib-hdr}\n"), pool);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->parallel.dp, 2);
  auto layout = LayoutFromJob(*job, pool);
  ASSERT_TRUE(layout.ok());
  auto est = EstimateOnPool(*job, pool, *layout, Cat(), Calibration::Builtin());
  ASSERT_TRUE(est.ok()) << est.status().ToString();
  Job homog = *job;
  homog.cluster.gpu = "a100-sxm-80gb";
  auto hw = ResolveHardware(homog, Cat(), Calibration::Builtin());
  ASSERT_TRUE(hw.ok());
  const StepEstimate e = EstimateStep(homog, *hw);
  EXPECT_NEAR(est->step_time_s, e.step_time_s, 1e-9 * e.step_time_s);
  EXPECT_NEAR(est->breakdown.bubble_s, e.breakdown.bubble_s, 1e-9 * e.step_time_s);
  EXPECT_NEAR(est->tokens_per_s, e.tokens_per_s, 1e-6 * e.tokens_per_s);
  EXPECT_NEAR(est->mfu, e.mfu, 1e-9);
  const MemoryBreakdown m = EstimateMemory(homog, Calibration::Builtin(), false);
  double peak = 0;
  for (const auto& st : est->stages) peak = std::max(peak, st.parts[0].memory.total_bytes);
  EXPECT_NEAR(peak, m.total_bytes, 1e-6 * m.total_bytes);
  EXPECT_TRUE(est->idle.empty());
}

// A stage whose replicas sit on two card types is paced by the slower; moving blocks to the faster cards helps.
TEST(PoolEstimateTest, AStageIsPacedByItsSlowestCardAndMemoryIsCheckedPerCard) {
  const Pool pool = ParsePool(
      "groups:\n"
      "  - {name: fast, gpu: h800-80gb, nodes: 1, gpus_per_node: 8, network: ib-ndr}\n"
      "  - {name: slow, gpu: h20-96gb, nodes: 1, gpus_per_node: 8, network: ib-ndr}\n");
  auto job = FinalizeJobForPool(ParseJob("model: {preset: llama-2-13b}\n"
                                         "training: {seq_len: 4096, micro_batch: 1, global_batch: 64, recompute: selective}\n"
                                         "parallel: {tp: 8, pp: 2, zero: 1}\n"),
                                pool);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto even = LayoutFromJob(*job, pool);
  ASSERT_TRUE(even.ok());
  auto e_even = EstimateOnPool(*job, pool, *even, Cat(), Calibration::Builtin());
  ASSERT_TRUE(e_even.ok()) << e_even.status().ToString();
  ASSERT_EQ(e_even->stages.size(), 2u);
  EXPECT_GT(e_even->stages[1].microbatch_s, e_even->stages[0].microbatch_s);  // H20 slower at equal blocks
  PoolLayout skew = *even;
  skew.layer_split = {28, 12};
  auto e_skew = EstimateOnPool(*job, pool, skew, Cat(), Calibration::Builtin());
  ASSERT_TRUE(e_skew.ok());
  EXPECT_LT(e_skew->step_time_s, e_even->step_time_s);
  EXPECT_EQ(e_skew->placement.size(), 2u);
  // The same job on 24 GB cards: the stage does not fit, and the reason names the card.
  const Pool small = ParsePool("groups:\n  - {name: ws, gpu: rtx4090-24gb, nodes: 2, gpus_per_node: 8}\n");
  auto j2 = FinalizeJobForPool(ParseJob("model: {preset: llama-2-13b}\ntraining: {seq_len: 4096, global_batch: 64}\n"
                                        "parallel: {tp: 1, pp: 2, dp: 1}\n"),
                               small);
  ASSERT_TRUE(j2.ok()) << j2.status().ToString();
  auto e2 = EstimateOnPool(*j2, small, *LayoutFromJob(*j2, small), Cat(), Calibration::Builtin());
  ASSERT_TRUE(e2.ok());
  EXPECT_FALSE(e2->fits);
  EXPECT_NE(e2->not_fit_reason.find("rtx4090-24gb"), std::string::npos) << e2->not_fit_reason;
  EXPECT_EQ(e2->idle.size(), 1u);
}

TEST(PoolEstimateTest, LayerSplitMustAddUp) {
  const Pool pool = ParsePool(kOneType);
  auto j = ParseJobText(Job13b(",\n  layer_split: [10, 10, 10, 9]"), "job.yaml");
  ASSERT_TRUE(j.ok());
  auto f = FinalizeJobForPool(*j, pool);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().ToString().rfind("job.yaml:4: parallel.layer_split: adds up to 39 blocks", 0), 0u) << f.status().ToString();
}

}  // namespace
}  // namespace gpuplan
