// The seeds' worked examples and unit checks of the step-time model.
#include <gtest/gtest.h>

#include "../test_util.h"

#include "gpuplan/estimate.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

HardwareContext Hw(const Job& j) {
  static const Catalog cat = *LoadCatalog();
  auto hw = ResolveHardware(j, cat, Calibration::Builtin());
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  return *hw;
}

// Seed 000 §3: syncing the gradients of a 7B model (fp16, 14 GB) between two machines.
double SevenBSyncSeconds(const std::string& network, int64_t nodes, int64_t per_node, const std::string& intra = "") {
  Job j = MakeJob("model: {preset: llama-2-7b}\ncluster: {gpu: a100-sxm-80gb, gpus_per_node: " + std::to_string(per_node) +
                  ", num_gpus: " + std::to_string(nodes * per_node) + ", network: " + network +
                  (intra.empty() ? "" : ", intra_node: " + intra) + "}\n");
  const double grad_bytes = 2.0 * 6738415616;
  return CollectiveTime(Collective::kAllReduce, grad_bytes, nodes * per_node, per_node, Hw(j));
}

TEST(Seeds, SevenBGradientSyncOverOneGbEIsMinutes) {
  const double t = SevenBSyncSeconds("tcp-1g", 2, 1);
  EXPECT_GT(t, 60);
  EXPECT_LT(t, 3600);
}

TEST(Seeds, SevenBGradientSyncOver25GbTcpIsAboutTenSeconds) {
  const double t = SevenBSyncSeconds("tcp-25g", 2, 1);
  EXPECT_GT(t, 3);
  EXPECT_LT(t, 20);
}

TEST(Seeds, SevenBGradientSyncOverNvlinkIsUnderASecond) {
  EXPECT_LT(SevenBSyncSeconds("ib-ndr", 1, 8), 1.0);
  EXPECT_LT(SevenBSyncSeconds("ib-ndr", 1, 2, "nvlink3"), 1.0);
}

TEST(Seeds, SevenBLoraOnOneA100TakesHours) {
  // Seed 001: LoRA on a 7B model, 76.8M tokens (e.g. 150k samples x 512 tokens), one A100.
  Job j = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: lora, seq_len: 512, micro_batch: 8, tokens: 7.68e7}\n"
                  "cluster: {gpu: a100-sxm-80gb, num_gpus: 1}\n");
  const StepEstimate e = EstimateStep(j, Hw(j));
  EXPECT_GT(e.time_to_train_s, 3600);       // not minutes
  EXPECT_LT(e.time_to_train_s, 24 * 3600);  // not days
}

TEST(Estimate, MfuOfABigDenseRunIsPlausible) {
  Job j = MakeJob("model: {preset: llama-3-70b}\ntraining: {seq_len: 4096, micro_batch: 1, global_batch: 1024, recompute: full}\n"
                  "parallel: {tp: 8, pp: 4, sequence_parallel: true, zero: 1}\ncluster: {gpu: h100, num_gpus: 512}\n");
  const StepEstimate e = EstimateStep(j, Hw(j));
  EXPECT_GT(e.mfu, 0.25);
  EXPECT_LT(e.mfu, 0.65);
  EXPECT_GT(e.hfu, e.mfu);  // full recompute adds a forward
  EXPECT_NEAR(e.tokens_per_s, e.tokens_per_s_per_gpu * 512, 1e-6 * e.tokens_per_s);
}

TEST(Estimate, ModelFlopsConvention) {
  Arch a = *FindPreset("llama-2-7b");
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(a, 2048), 6.0 * 6738415616 + 12.0 * 32 * 4096 * 2048);
}

TEST(Estimate, TcpWithoutRdmaIsSlowerThanRdmaAtSameRate) {
  Job tcp = MakeJob("model: {preset: llama-2-13b}\nparallel: {zero: 1}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 16, network: tcp-100g, nics_per_node: 8}\n");
  Job roce = MakeJob("model: {preset: llama-2-13b}\nparallel: {zero: 1}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 16, network: roce-100g, nics_per_node: 8}\n");
  EXPECT_GT(EstimateStep(tcp, Hw(tcp)).step_time_s, EstimateStep(roce, Hw(roce)).step_time_s);
}

TEST(Estimate, BottleneckNamesTheNetwork) {
  Job j = MakeJob("model: {preset: llama-2-7b}\ntraining: {seq_len: 2048, micro_batch: 1}\nparallel: {zero: 0}\n"
                  "cluster: {gpu: a100-sxm-80gb, num_gpus: 2, gpus_per_node: 1, network: tcp-25g}\n");
  const HardwareContext hw = Hw(j);
  const StepEstimate e = EstimateStep(j, hw);
  const std::string b = Bottleneck(j, hw, e);
  EXPECT_NE(b.find("data-parallel"), std::string::npos) << b;
  EXPECT_NE(b.find("RDMA"), std::string::npos) << b;
}

TEST(Estimate, UnknownPeakIsAClearError) {
  Job j = MakeJob("model: {preset: gpt2}\ntraining: {precision: fp8}\ncluster: {gpu: a100-sxm-80gb}\n");
  static const Catalog cat = *LoadCatalog();
  auto hw = ResolveHardware(j, cat, Calibration::Builtin());
  ASSERT_FALSE(hw.ok());
  EXPECT_NE(hw.status().reason().find("fp8"), std::string::npos);
}

TEST(Estimate, CheckpointStallShrinksWhenAsync) {
  const std::string base = "model: {preset: llama-2-7b}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 8, storage: aws-ebs-gp3}\n";
  Job sync = MakeJob(base + "training: {checkpoint_interval_min: 30}\n");
  Job async = MakeJob(base + "training: {checkpoint_interval_min: 30, checkpoint_async: true}\n");
  const double s = EstimateStep(sync, Hw(sync)).breakdown.checkpoint_s;
  const double a = EstimateStep(async, Hw(async)).breakdown.checkpoint_s;
  EXPECT_GT(s, 0);
  EXPECT_LT(a, s);
}

}  // namespace
}  // namespace gpuplan
