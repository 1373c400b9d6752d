// Round trip (issue 10 §3): export a random pinned job to every engine format that can express its
// layout, import the files back, and get the same layout, batch and precision.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>

#include "../test_util.h"
#include "gpuplan/launch.h"

namespace gpuplan {
namespace {

namespace fs = std::filesystem;

struct Case {
  ExportFormat format;
  std::vector<std::string> files;  // the artefacts that carry the layout, read back by import
  bool carries_layout;             // false: only the world size (torchrun)
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {ExportFormat::kDeepspeed, {"ds_config.json", "launch.sh"}, true},
      {ExportFormat::kAccelerate, {"accelerate.yaml", "launch.sh"}, true},  // the batch is the script's args
      {ExportFormat::kMegatron, {"megatron-args.sh", "launch.sh"}, true},
      {ExportFormat::kTorchtitan, {"torchtitan.toml", "launch.sh"}, true},
      {ExportFormat::kTorchrun, {"launch.sh"}, false},
  };
  return cases;
}

Job RandomJob(std::mt19937& rng) {
  auto pick = [&](std::vector<int64_t> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  const int64_t gpn = pick({2, 4, 8});
  const int64_t tp = std::min(gpn, pick({1, 1, 2, 4})), pp = pick({1, 1, 2, 4}), dp = pick({1, 2, 4});
  const int64_t vpp = pp > 1 ? pick({1, 2}) : 1;
  const int64_t mb = pick({1, 2}), accum = pick({1, 2, 4});
  const int zero = static_cast<int>(pick({0, 1, 2, 3}));
  const std::string prec = pick({0, 1}) ? "bf16" : "fp16";
  std::string yaml = "model: {preset: llama-3-8b}\n";
  yaml += "training: {seq_len: 2048, micro_batch: " + std::to_string(mb) + ", global_batch: " + std::to_string(mb * dp * accum) +
          ", precision: " + prec + ", recompute: " + (pick({0, 1}) ? "full" : "none") + "}\n";
  yaml += "parallel: {tp: " + std::to_string(tp) + ", pp: " + std::to_string(pp) + ", vpp: " + std::to_string(vpp) +
          ", dp: " + std::to_string(dp) + ", zero: " + std::to_string(pp > 1 ? std::min(zero, 1) : zero) + "}\n";
  yaml += "cluster: {gpu: h100-sxm-80gb, gpus_per_node: " + std::to_string(gpn) + ", num_gpus: " + std::to_string(tp * pp * dp) + "}\n";
  auto parsed = ParseJobText(yaml, "random.yaml");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  Job j = parsed.ok() ? *parsed : Job{};
  if (!FinalizeJob(j).ok()) return Job{};
  return j;
}

LaunchPlan PlanOf(const Job& j) {
  LaunchPlan lp;
  lp.job = j;
  lp.gpus_per_node = std::min(j.cluster.gpus_per_node, j.cluster.num_gpus);
  lp.nodes = (j.cluster.num_gpus + j.cluster.gpus_per_node - 1) / j.cluster.gpus_per_node;
  lp.grad_accum = GradAccumSteps(j);
  lp.origin = "roundtrip test";
  lp.step_time_s = 1;
  lp.memory_per_gpu_bytes = 1e9;
  lp.gpu_memory_bytes = 80e9;
  if (lp.nodes > 1) {
    lp.network.id = "ib-ndr";
    lp.network.kind = "infiniband";
    lp.nics_per_node = 8;
    lp.gpudirect_rdma = true;
  }
  return lp;
}

TEST(LaunchRoundTrip, ExportThenImportKeepsLayoutBatchPrecision) {
  static const Catalog catalog = *LoadCatalog();
  std::mt19937 rng(1001);
  const fs::path root = fs::temp_directory_path() / ("gpuplan-roundtrip-" + std::to_string(::getpid()));
  int exported = 0, refused = 0;
  for (int i = 0; i < 60; ++i) {
    const Job job = RandomJob(rng);
    if (job.cluster.num_gpus == 0) continue;
    for (const Case& c : Cases()) {
      LaunchPlan lp = PlanOf(job);
      // import reads torchtitan's v0.2.x TOML; main's Python config (the default export) is code.
      if (c.format == ExportFormat::kTorchtitan) lp.engine_version = "0.2";
      SCOPED_TRACE(ToString(c.format) + ": " + JobToYaml(job));
      if (!CannotExpress(c.format, lp).empty()) {
        auto refusal = ExportEngine(c.format, lp, catalog);
        EXPECT_FALSE(refusal.ok()) << "CannotExpress says no, but the export succeeded";
        ++refused;
        continue;
      }
      auto files = ExportEngine(c.format, lp, catalog);
      ASSERT_TRUE(files.ok()) << files.status().ToString();
      const fs::path dir = root / (std::to_string(i) + "-" + ToString(c.format));
      ASSERT_TRUE(WriteArtifacts(*files, dir.string()).ok());
      std::vector<std::string> paths;
      for (const auto& f : c.files) paths.push_back((dir / f).string());
      Job base;
      base.arch = job.arch;
      base.cluster.gpu = job.cluster.gpu;
      auto back = ImportFiles(paths, base);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      Job b = back->job;
      ASSERT_TRUE(FinalizeJob(b).ok());
      EXPECT_EQ(b.cluster.num_gpus, job.cluster.num_gpus);
      if (!c.carries_layout) continue;
      EXPECT_EQ(b.parallel.tp, job.parallel.tp);
      EXPECT_EQ(b.parallel.pp, job.parallel.pp);
      EXPECT_EQ(b.parallel.dp, job.parallel.dp);
      EXPECT_EQ(b.parallel.zero, job.parallel.zero);
      if (c.format != ExportFormat::kTorchtitan) EXPECT_EQ(b.parallel.vpp, job.parallel.vpp);  // titan: layers per stage
      EXPECT_EQ(b.training.micro_batch, job.training.micro_batch);
      EXPECT_EQ(b.training.global_batch, job.training.global_batch);
      EXPECT_EQ(b.training.precision, job.training.precision);
      ++exported;
    }
  }
  std::error_code ec;
  fs::remove_all(root, ec);
  EXPECT_GT(exported, 100);  // the property held on many layouts, not on none
  EXPECT_GT(refused, 0);     // and some layouts were refused by some format
}

}  // namespace
}  // namespace gpuplan
