// Seed 003's LoRA example against its measured neighbours in shared/validation/peft_runs.csv
// (issue 9: "within the range its measured neighbours support; QLoRA slower than LoRA").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "../test_util.h"

#include "gpuplan/estimate.h"
#include "gpuplan/validation_rows.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

// Measured tokens/s per GPU of one-GPU LoRA runs of 6-8B dense models on an A100, read from the
// file (step_time_s rows at fixed sequence length: global_batch x seq_len / step).
std::vector<double> NeighbourRates(const Catalog& cat, Method method) {
  auto rows = ReadMeasuredRows(std::string(GPUPLAN_SHARED_DIR) + "/validation/peft_runs.csv", cat);
  EXPECT_TRUE(rows.ok());
  std::vector<double> out;
  if (!rows.ok()) return out;
  for (const auto& r : *rows) {
    const Job& j = r.job;
    if (!r.usable || r.metric != "step_time_s" || r.seq_len_kind != "fixed") continue;
    if (j.cluster.num_gpus != 1 || j.cluster.gpu.rfind("a100", 0) != 0 || j.training.method != method) continue;
    const double n = static_cast<double>(CountParams(j.arch).total);
    if (n < 6e9 || n > 8.5e9) continue;
    out.push_back(static_cast<double>(j.training.global_batch * j.training.seq_len) / r.measured);
  }
  return out;
}

double Rate(const std::string& yaml, const Catalog& cat) {
  Job j = MakeJob(yaml);
  auto hw = ResolveHardware(j, cat, Calibration::Builtin());
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  return hw.ok() ? EstimateStep(j, *hw).tokens_per_s_per_gpu : 0;
}

// Seed 003 §3.1: Llama-2-7B LoRA, 50k samples x 512 tokens x 3 epochs on one A100, batch 16 per card
// with 4 accumulation steps (its DeepSpeed config), gradient checkpointing as its 40 GB advice says.
const char* kSeed003 =
    "model: {preset: llama-2-7b}\n"
    "training: {method: %s, framework: hf-trainer, seq_len: 512, micro_batch: 16, global_batch: 64, recompute: full, "
    "samples: 50000, epochs: 3}\n"
    "cluster: {gpu: a100-sxm-80gb, num_gpus: 1}\n";
// The same job in its measured neighbours' recipe (Qwen README: micro-batch 1 x 8 accumulation,
// rank 64 on every linear, gradient checkpointing), so the comparison is like with like.
const char* kSeed003NeighbourRecipe =
    "model: {preset: llama-2-7b}\n"
    "training: {method: %s, framework: hf-trainer, seq_len: 512, micro_batch: 1, global_batch: 8, recompute: full, "
    "lora: {rank: 64, targets: [all-linear]}}\n"
    "cluster: {gpu: a100-sxm-80gb, num_gpus: 1}\n";

std::string Seed(const char* method, const char* recipe = kSeed003) {
  char buf[512];
  std::snprintf(buf, sizeof buf, recipe, method);
  return buf;
}

TEST(FinetuneValidation, Seed003LoraIsWithinItsMeasuredNeighbours) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  const std::vector<double> n = NeighbourRates(*cat, Method::kLora);
  ASSERT_GE(n.size(), 6u) << "peft_runs.csv: expected Qwen-7B LoRA rows on one A100";
  const auto [lo, hi] = std::minmax_element(n.begin(), n.end());
  const double like = Rate(Seed("lora", kSeed003NeighbourRecipe), *cat);
  const double as_written = Rate(Seed("lora"), *cat);
  std::printf("seed 003 LoRA in the neighbours' recipe: %.0f tokens/s per GPU; measured neighbours %.0f..%.0f (%zu rows)\n",
              like, *lo, *hi, n.size());
  std::printf("seed 003 LoRA as written (micro-batch 16, rank 16 on q/k/v/o): %.0f tokens/s per GPU; the author's figure ~3,000\n",
              as_written);
  EXPECT_GE(like, *lo);
  EXPECT_LE(like, *hi);
  // The seed's own figure (its author's ~3,000 tokens/s per card, a rough one) within 30%; the
  // issue's starting point was 6,585 (+120%).
  EXPECT_NEAR(as_written, 3000, 0.3 * 3000);
  // Its larger micro-batch and lighter adapters make it faster than the neighbours' recipe.
  EXPECT_GT(as_written, like);
}

TEST(FinetuneValidation, Seed003QloraIsSlowerThanLora) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  const double lora = Rate(Seed("lora"), *cat), qlora = Rate(Seed("qlora"), *cat);
  std::printf("seed 003: LoRA %.0f, QLoRA %.0f tokens/s per GPU\n", lora, qlora);
  EXPECT_LT(qlora, lora);
  // The measured neighbours say the same (Qwen-7B Q-LoRA vs LoRA on one A100).
  const std::vector<double> nl = NeighbourRates(*cat, Method::kLora), nq = NeighbourRates(*cat, Method::kQlora);
  ASSERT_FALSE(nl.empty());
  ASSERT_FALSE(nq.empty());
  EXPECT_LT(*std::max_element(nq.begin(), nq.end()), *std::max_element(nl.begin(), nl.end()));
}

}  // namespace
}  // namespace gpuplan
