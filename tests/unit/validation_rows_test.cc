// Published rows read into jobs (src/core/validation_rows.cc).
#include <gtest/gtest.h>

#include "gpuplan/arch.h"
#include "gpuplan/catalog.h"
#include "gpuplan/csv.h"

#include <map>
#include "gpuplan/validation_rows.h"

namespace gpuplan {
namespace {

TEST(ValidationRows, RunsCsvRowsAreUsable) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  auto rows = ReadMeasuredRows(std::string(GPUPLAN_SHARED_DIR) + "/validation/runs.csv", *cat);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  int usable = 0;
  for (const auto& r : *rows) {
    usable += r.usable;
    if (!r.usable) continue;
    const Framework f = r.job.training.framework;
    if (r.source.find("llm-foundry") != std::string::npos) EXPECT_EQ(f, Framework::kLlmFoundry) << r.line;
    else if (r.source.find("torchtitan") != std::string::npos) EXPECT_EQ(f, Framework::kTorchtitan) << r.line;
    else if (r.source.find("Megatron-LM") != std::string::npos) EXPECT_EQ(f, Framework::kMegatron) << r.line;
  }
  EXPECT_GT(usable, 200);
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// The family conventions the reader applies (MLP kind, biases, head_dim, tied embeddings) give each
// fine-tuning row's published parameter count: a wrong family shows up as a count off by > 3%.
TEST(ValidationRows, PeftRowShapesGiveThePublishedParameterCounts) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  const std::string path = std::string(GPUPLAN_SHARED_DIR) + "/validation/peft_runs.csv";
  auto rows = ReadMeasuredRows(path, *cat);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  auto table = ReadCsvFile(path);
  ASSERT_TRUE(table.ok());
  std::map<int, double> published;
  for (const auto& row : table->rows) {
    CsvRecord r(*table, row);
    published[row.line] = std::stod(r.Str("params_B")) * 1e9;
  }
  int checked = 0;
  for (const auto& r : *rows) {
    if (!r.usable) continue;
    const double n = static_cast<double>(CountParams(r.job.arch).total);
    EXPECT_NEAR(n / published[r.line], 1.0, 0.03) << r.model_name << " line " << r.line << ": " << n;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(ValidationRows, FineTuningNotesSetTheJob) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  auto rows = ReadMeasuredRows(std::string(GPUPLAN_SHARED_DIR) + "/validation/peft_runs.csv", *cat);
  ASSERT_TRUE(rows.ok());
  int qlora = 0, gptq = 0, pure = 0, capped = 0;
  for (const auto& r : *rows) {
    if (!r.usable) continue;
    const TrainingSpec& t = r.job.training;
    if (r.metric.rfind("peak_memory", 0) == 0) EXPECT_NE(r.unit_bytes, 0) << r.line << " unit " << r.unit;
    if (t.method == Method::kQlora) ++qlora;
    if (t.method == Method::kQlora && t.quant == BaseQuant::kGptq) ++gptq;
    if (t.master_weights == MasterWeights::kNone) ++pure;
    if (r.seq_len_kind == "max_cap") {
      ++capped;
      // A throughput row with a cap is computed at its stated mean length, never at the cap.
      if (r.metric.rfind("peak_memory", 0) != 0) EXPECT_GT(r.mean_tokens_per_sample, 0) << r.line;
    }
    if (IsAdapterMethod(t.method)) EXPECT_FALSE(t.lora.targets.empty()) << r.line;
  }
  EXPECT_GT(qlora, 10);
  EXPECT_GT(gptq, 10);  // Qwen's Int4 rows
  EXPECT_GT(pure, 10);  // litgpt bf16-true, fsdp_qlora pure bf16
  EXPECT_GT(capped, 5);
}

TEST(ValidationRows, GpuNamesInProseMapToTheCatalog) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  auto rows = ReadMeasuredRows(std::string(GPUPLAN_SHARED_DIR) + "/validation/runs_vtrain.csv", *cat);
  ASSERT_TRUE(rows.ok());
  int usable = 0;
  for (const auto& r : *rows) {
    usable += r.usable;
    if (r.usable) EXPECT_EQ(r.job.cluster.gpu, "a100-sxm-80gb");
    if (r.usable) EXPECT_EQ(r.job.training.framework, Framework::kMegatron);
  }
  EXPECT_EQ(usable, 1440);
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

TEST(ValidationRows, GpuProseVariants) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"A100 80GB SXM", "a100-sxm-80gb"},
      {"A100 80GB (form factor not stated)", "a100-sxm-80gb"},
      {"A100 40GB PCIe", "a100-pcie-40gb"},
      {"A100-SXM4-80GB", "a100-sxm-80gb"},
      {"H100 80GB (doc: 8xH100 80GB, form factor not stated)", "h100-sxm-80gb"},
      {"H100 SXM5 80GB", "h100-sxm-80gb"},
      {"H200 SXM 141GB", "h200-sxm-141gb"},
      {"B200 (HGX, 1000 W)", "b200-180gb"},
      {"GB200 NVL72", "gb200-186gb"},
      {"Tesla V100-SXM2-32GB", "v100-sxm-32gb"},
      {"RTX 3090 (power-limited to 280 W)", "rtx3090-24gb"},
      {"NVIDIA GeForce RTX 4090", "rtx4090-24gb"},
  };
  for (const auto& [text, id] : cases) {
    auto got = MatchGpuName(*cat, text);
    ASSERT_TRUE(got.has_value()) << text;
    EXPECT_EQ(*got, id) << text;
  }
  EXPECT_FALSE(MatchGpuName(*cat, "not stated").has_value());
  EXPECT_FALSE(MatchGpuName(*cat, "not stated (doc: 2X40GB GPUs)").has_value());
}

}  // namespace
}  // namespace gpuplan
