// gpuplan validate's metric conversion, grouping, split and error bands (docs/validation.md), on
// synthetic rows written to the test's temp dir: every expected value is computed from the row's
// own inputs or from the estimator, never copied from an output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "gpuplan/error_bands.h"
#include "gpuplan/estimate.h"
#include "gpuplan/memory.h"
#include "gpuplan/plan.h"
#include "gpuplan/report.h"
#include "gpuplan/validation.h"

namespace gpuplan {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

const Catalog& Cat() {
  static const Catalog c = [] {
    auto r = LoadCatalog();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Catalog{};
  }();
  return c;
}

const char* kHeader =
    "source,model_name,params_B,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,gpu,num_gpus,gpus_per_node,interconnect,"
    "tp,pp,dp,cp,zero_or_fsdp,micro_batch,global_batch,recompute,precision,measured_metric,measured_value,unit,notes\n";

// A Llama-2-7B row on one A100 80GB with the given seq_len, batch, metric and notes.
std::string Row(const std::string& metric, double value, const std::string& unit, const std::string& notes, int seq_len = 512,
                int micro = 1, int global = 8, int gpus = 1, const std::string& source = "github:example/finetune@abc:README.md") {
  char buf[1200];
  std::snprintf(buf, sizeof buf,
                "%s,Llama-2-7B,6.74,32,4096,32,32,11008,32000,%d,A100 80GB SXM,%d,8,single node,1,1,%d,1,none,%d,%d,none,bf16,%s,%g,%s,\"%s\"\n",
                source.c_str(), seq_len, gpus, gpus, micro, global, metric.c_str(), value, unit.c_str(), notes.c_str());
  return buf;
}

std::string WriteCsv(const std::string& name, const std::string& rows) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << kHeader << rows;
  return path;
}

ValidationReport Validate(const std::string& name, const std::string& rows) {
  auto rep = ValidateRuns({WriteCsv(name, rows)}, Cat(), Calibration::Builtin());
  EXPECT_TRUE(rep.ok()) << rep.status().ToString();
  return rep.ok() ? *rep : ValidationReport{};
}

const char* kLora = "method=lora; rank=16; alpha=32; targets=q_proj,v_proj; compile=false; seq_len_kind=fixed; framework=HF Trainer";

TEST(ValidationReport, StepTimeIsGlobalBatchTimesSequenceOverSeconds) {
  const ValidationReport rep = Validate("step.csv", Row("step_time_s", 2.0, "s/optimizer step", kLora, 512, 1, 8));
  ASSERT_EQ(rep.rows.size(), 1u);
  const ValidatedRow& v = rep.rows[0];
  ASSERT_TRUE(v.used) << v.reason;
  EXPECT_FALSE(v.memory);
  EXPECT_DOUBLE_EQ(v.measured_tokens_per_s_per_gpu, 8.0 * 512 / 2.0 / 1);
  auto hw = ResolveHardware(v.row.job, Cat(), Calibration::Builtin());
  ASSERT_TRUE(hw.ok());
  EXPECT_DOUBLE_EQ(v.predicted_tokens_per_s_per_gpu, EstimateStep(v.row.job, *hw).tokens_per_s_per_gpu);
  EXPECT_NEAR(v.error, v.predicted_tokens_per_s_per_gpu / v.measured_tokens_per_s_per_gpu - 1, 1e-12);
  EXPECT_EQ(v.method, "lora");
  EXPECT_EQ(v.framework, "hf-trainer");
}

TEST(ValidationReport, IterationTimeCountsEveryGpu) {
  // vTrain: 2 GPUs data parallel, global batch 16 of 1024 tokens in 0.5 s.
  const ValidationReport rep =
      Validate("iter.csv", Row("iteration_time_s", 0.5, "s", "framework=Megatron-DeepSpeed", 1024, 8, 16, 2));
  ASSERT_EQ(rep.rows.size(), 1u);
  ASSERT_TRUE(rep.rows[0].used) << rep.rows[0].reason;
  EXPECT_DOUBLE_EQ(rep.rows[0].measured_tokens_per_s_per_gpu, 16.0 * 1024 / 0.5 / 2);
}

TEST(ValidationReport, EpochTimeNeedsSamplesPerEpoch) {
  const std::string with = Row("epoch_time_s", 100, "s/epoch (1024 samples)", kLora, 512, 1, 2, 1);
  const std::string without = Row("epoch_time_s", 100, "s/epoch", kLora, 512, 1, 4, 1);
  const ValidationReport rep = Validate("epoch.csv", with + without);
  ASSERT_EQ(rep.rows.size(), 2u);
  ASSERT_TRUE(rep.rows[0].used) << rep.rows[0].reason;
  EXPECT_DOUBLE_EQ(rep.rows[0].measured_tokens_per_s_per_gpu, 1024.0 * 512 / 100 / 1);
  EXPECT_FALSE(rep.rows[1].used);
  EXPECT_NE(rep.rows[1].reason.find("samples per epoch"), std::string::npos) << rep.rows[1].reason;
}

TEST(ValidationReport, CappedSequenceCountsUsefulTokensOrIsSkipped) {
  const std::string capped =
      "method=lora; rank=16; alpha=32; targets=q_proj,v_proj; seq_len_kind=max_cap (samples truncated at seq_len); "
      "packing=false (padded to max); mean_tokens_per_sample=200; framework=plain PyTorch loop";
  const std::string no_mean =
      "method=lora; rank=16; alpha=32; targets=q_proj,v_proj; seq_len_kind=max_cap (samples truncated at seq_len); "
      "packing=false; framework=plain PyTorch loop";
  const ValidationReport rep = Validate("cap.csv", Row("throughput_tokens_per_sec_per_gpu", 3000, "tokens/s/GPU", capped, 1024, 4, 4) +
                                                     Row("throughput_tokens_per_sec_per_gpu", 3000, "tokens/s/GPU", no_mean, 1024, 4, 4));
  ASSERT_EQ(rep.rows.size(), 2u);
  const ValidatedRow& v = rep.rows[0];
  ASSERT_TRUE(v.used) << v.reason;
  EXPECT_EQ(v.basis, "useful tokens/s");
  auto hw = ResolveHardware(v.row.job, Cat(), Calibration::Builtin());
  ASSERT_TRUE(hw.ok());
  const StepEstimate e = EstimateStep(v.row.job, *hw);
  EXPECT_DOUBLE_EQ(v.predicted_tokens_per_s_per_gpu, e.useful_tokens_per_s_per_gpu);
  EXPECT_LT(v.predicted_tokens_per_s_per_gpu, e.tokens_per_s_per_gpu) << "a padded step's useful tokens are fewer";
  // Without the mean the row is skipped, never read as fixed-length.
  EXPECT_FALSE(rep.rows[1].used);
  EXPECT_NE(rep.rows[1].reason.find("cap"), std::string::npos) << rep.rows[1].reason;
}

TEST(ValidationReport, MemoryRowsCompareTheStatisticTheSourceMeasured) {
  const std::string lora = std::string(kLora) + "; memory_stat=torch.cuda.max_memory_allocated()";
  const std::string reserved = std::string(kLora) + "; memory_stat=peak reserved";
  const ValidationReport rep = Validate("mem.csv", Row("peak_memory_per_gpu", 20, "GB", lora) +
                                                     Row("peak_memory_per_gpu", 20, "GiB", reserved, 512, 1, 16));
  ASSERT_EQ(rep.rows.size(), 2u);
  const ValidatedRow& a = rep.rows[0];
  const ValidatedRow& r = rep.rows[1];
  ASSERT_TRUE(a.used && r.used) << a.reason << " / " << r.reason;
  EXPECT_TRUE(a.memory && r.memory);
  EXPECT_DOUBLE_EQ(a.measured_tokens_per_s_per_gpu, 20e9 / kGiB);
  EXPECT_DOUBLE_EQ(r.measured_tokens_per_s_per_gpu, 20.0);
  const MemoryBreakdown ma = EstimateMemory(a.row.job, Calibration::Builtin(), false);
  const MemoryBreakdown mr = EstimateMemory(r.row.job, Calibration::Builtin(), false);
  EXPECT_EQ(a.basis, "allocated");
  EXPECT_DOUBLE_EQ(a.predicted_tokens_per_s_per_gpu, ma.allocated_bytes / kGiB);
  EXPECT_EQ(r.basis, "reserved");
  EXPECT_DOUBLE_EQ(r.predicted_tokens_per_s_per_gpu, mr.reserved_bytes / kGiB);
  EXPECT_EQ(rep.memory.rows, 2);
  EXPECT_EQ(rep.overall.rows, 0);
}

TEST(ValidationReport, ARunUnderTwoMetricsCountsOnceButTwoRanksAreTwoRuns) {
  const std::string rank32 = "method=lora; rank=32; alpha=32; targets=q_proj,v_proj; compile=false; seq_len_kind=fixed; framework=HF Trainer";
  // The same run as step time and as tokens/s; a second run differing only in the LoRA rank.
  const ValidationReport rep = Validate("dedupe.csv", Row("step_time_s", 2.0, "s/optimizer step", kLora) +
                                                        Row("throughput_tokens_per_sec_per_gpu", 2048, "tokens/s/GPU", kLora) +
                                                        Row("step_time_s", 2.1, "s/optimizer step", rank32));
  ASSERT_EQ(rep.rows.size(), 3u);
  EXPECT_FALSE(rep.rows[0].used) << "the direct tokens/s row represents the run";
  EXPECT_NE(rep.rows[0].reason.find("same run"), std::string::npos);
  EXPECT_TRUE(rep.rows[1].used);
  EXPECT_TRUE(rep.rows[2].used) << rep.rows[2].reason;
  EXPECT_EQ(rep.overall.rows, 2);
}

TEST(ValidationReport, ScaleGroupBoundaries) {
  EXPECT_EQ(ScaleGroup(1), "1 GPU");
  EXPECT_EQ(ScaleGroup(2), "2-8 GPUs");
  EXPECT_EQ(ScaleGroup(8), "2-8 GPUs");
  EXPECT_EQ(ScaleGroup(9), "9-64 GPUs");
  EXPECT_EQ(ScaleGroup(64), "9-64 GPUs");
  EXPECT_EQ(ScaleGroup(65), "65-512 GPUs");
  EXPECT_EQ(ScaleGroup(512), "65-512 GPUs");
  EXPECT_EQ(ScaleGroup(513), ">512 GPUs");
}

TEST(ValidationReport, GroupsCoverEveryUsedRowOnceInEachDimension) {
  const std::string full = "method=full; compile=false; seq_len_kind=fixed; framework=HF Trainer";
  const ValidationReport rep = Validate("groups.csv", Row("step_time_s", 2.0, "s/optimizer step", kLora) +
                                                        Row("step_time_s", 4.0, "s/optimizer step", full, 512, 1, 8, 1) +
                                                        Row("step_time_s", 3.0, "s/optimizer step", full, 512, 1, 16, 2) +
                                                        Row("peak_memory_per_gpu", 30, "GB", full));
  ASSERT_EQ(rep.overall.rows, 3);
  std::set<std::string> dims;
  for (const auto& g : rep.groups) {
    dims.insert(g.dimension);
    int t = 0, m = 0;
    for (const auto& s : g.throughput) t += s.rows;
    for (const auto& s : g.memory) m += s.rows;
    EXPECT_EQ(t, rep.overall.rows) << g.dimension;
    EXPECT_EQ(m, rep.memory.rows) << g.dimension;
  }
  EXPECT_EQ(dims, (std::set<std::string>{"framework", "GPU family", "method", "scale", "source"}));
  const auto& method = rep.groups[2];
  ASSERT_EQ(method.dimension, "method");
  ASSERT_EQ(method.throughput.size(), 2u);
  EXPECT_EQ(method.throughput[0].group, "full");
  EXPECT_EQ(method.throughput[0].rows, 2);
  EXPECT_EQ(method.throughput[1].group, "lora");
  const auto& scale = rep.groups[3];
  ASSERT_EQ(scale.throughput.size(), 2u);
  EXPECT_EQ(scale.throughput[0].group, "1 GPU");
  EXPECT_EQ(scale.throughput[1].group, "2-8 GPUs");
  // Scales are listed in GPU-count order (alphabetically "65-512" would precede "9-64").
  std::string rows;
  for (int gpus : {1, 16, 128, 1024}) rows += Row("step_time_s", 2.0, "s/optimizer step", kLora, 512, 1, 8 * gpus, gpus);
  const ValidationReport scales = Validate("scales.csv", rows);
  std::vector<std::string> order;
  for (const auto& g : scales.groups)
    if (g.dimension == "scale")
      for (const auto& s : g.throughput) order.push_back(s.group);
  EXPECT_EQ(order, (std::vector<std::string>{"1 GPU", "9-64 GPUs", "65-512 GPUs", ">512 GPUs"}));
  for (const auto& v : rep.rows) EXPECT_EQ(v.gpu_family, "ampere");
}

TEST(ValidationReport, SplitIsByConfigurationAndSummarizedSeparately) {
  // The rule depends only on repository, model, GPU and GPU count: other columns do not move a row.
  MeasuredRow a;
  a.source = "github:example/x@abc:README.md (table 1)";
  a.model_name = "m";
  a.job.cluster.gpu = "a100-sxm-80gb";
  a.job.cluster.num_gpus = 8;
  MeasuredRow b = a;
  b.source = "github:example/x@def:other.md";
  b.metric = "step_time_s";
  b.job.training.seq_len = 4096;
  EXPECT_EQ(InHeldOutSet(a), InHeldOutSet(b));
  // Across many configurations about a third is held out, both sides non-empty.
  int held = 0;
  for (int i = 0; i < 300; ++i) {
    a.model_name = "model-" + std::to_string(i);
    held += InHeldOutSet(a);
  }
  EXPECT_GT(held, 60);
  EXPECT_LT(held, 140);
  EXPECT_NE(SplitRule().find("0 mod 3"), std::string::npos);
  // The report's fit and held-out summaries partition the used rows.
  std::string rows;
  for (int gpus : {1, 2, 4, 8, 16, 32}) rows += Row("step_time_s", 2.0, "s/optimizer step", kLora, 512, 1, 8 * gpus, gpus);
  const ValidationReport rep = Validate("split.csv", rows);
  EXPECT_EQ(rep.fit_throughput.rows + rep.held_out_throughput.rows, rep.overall.rows);
  int held_rows = 0;
  for (const auto& v : rep.rows)
    if (v.used) {
      EXPECT_EQ(v.held_out, InHeldOutSet(v.row));
      held_rows += v.held_out;
    }
  EXPECT_EQ(held_rows, rep.held_out_throughput.rows);
  // By framework: every row on its side, under its framework.
  int fit_rows = 0, out_rows = 0;
  for (const auto& s : rep.split_by_framework.throughput) {
    EXPECT_EQ(s.group.rfind("hf-trainer: ", 0), 0u) << s.group;
    (s.group == "hf-trainer: held out" ? out_rows : fit_rows) += s.rows;
  }
  EXPECT_EQ(fit_rows, rep.fit_throughput.rows);
  EXPECT_EQ(out_rows, rep.held_out_throughput.rows);
}

TEST(ValidationReport, BandsLookupFallsBackToCoarserGroups) {
  const std::string csv =
      "kind,framework,gpu_family,method,rows,median_abs,p90_abs,mean_signed\n"  // no p90_under: reads p90_abs
      "throughput,megatron,hopper,full,12,0.05,0.10,0.01\n"
      "throughput,megatron,ampere,full,3,0.30,0.40,0.30\n"  // too few rows: skipped
      "throughput,megatron,*,full,20,0.06,0.12,0.02\n"
      "throughput,*,*,lora,8,0.15,0.25,0.10\n"
      "throughput,*,*,*,100,0.10,0.20,0.00\n"
      "memory,*,*,*,4,0.1,0.2,0.0\n";  // too few rows: no memory band at all
  auto bands = ErrorBands::Parse(csv, "bands.csv");
  ASSERT_TRUE(bands.ok()) << bands.status().ToString();
  auto exact = bands->Nearest("throughput", "megatron", "hopper", "full");
  ASSERT_TRUE(exact);
  EXPECT_DOUBLE_EQ(exact->p90_abs, 0.10);
  auto family_small = bands->Nearest("throughput", "megatron", "ampere", "full");
  ASSERT_TRUE(family_small);
  EXPECT_EQ(family_small->Group(), "framework=megatron x method=full");
  auto open_gpu = bands->Nearest("throughput", "megatron", "", "full");
  ASSERT_TRUE(open_gpu);
  EXPECT_DOUBLE_EQ(open_gpu->p90_abs, 0.12);
  auto by_method = bands->Nearest("throughput", "nemo", "hopper", "lora");
  ASSERT_TRUE(by_method);
  EXPECT_EQ(by_method->Group(), "method=lora");
  auto all = bands->Nearest("throughput", "nemo", "hopper", "qlora");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->Group(), "all runs");
  EXPECT_FALSE(bands->Nearest("memory", "megatron", "hopper", "full"));
  EXPECT_DOUBLE_EQ(exact->p90_under, exact->p90_abs);
  EXPECT_FALSE(ErrorBands::Parse("kind,framework\nthroughput,x\n", "bad.csv").ok());
  EXPECT_FALSE(ErrorBands::Parse(std::string(csv) + "speed,*,*,*,9,0.1,0.2,0\n", "bad.csv").ok());
}

TEST(ValidationReport, BandsOfAReportHaveEveryLevelAndRoundTrip) {
  std::string rows;
  for (int i = 0; i < 6; ++i) rows += Row("step_time_s", 2.0 + 0.1 * i, "s/optimizer step", kLora, 512, 1, 8 * (i + 1));
  const ValidationReport rep = Validate("bands.csv", rows);
  ASSERT_EQ(rep.overall.rows, 6);
  auto find = [&](const std::string& fw, const std::string& fam, const std::string& m) -> const ErrorBand* {
    for (const auto& b : rep.bands)
      if (b.kind == "throughput" && b.framework == fw && b.gpu_family == fam && b.method == m) return &b;
    return nullptr;
  };
  // The p90 of under-prediction, from the rows' own errors.
  std::vector<double> under;
  for (const auto& v : rep.rows)
    if (v.used) under.push_back(std::max(0.0, -v.error));
  std::sort(under.begin(), under.end());
  const double idx = 0.9 * (under.size() - 1);
  const double p90_under = under[static_cast<size_t>(idx)] + (under[static_cast<size_t>(idx) + 1] - under[static_cast<size_t>(idx)]) * (idx - std::floor(idx));
  for (const auto* b : {find("hf-trainer", "ampere", "lora"), find("hf-trainer", "*", "lora"), find("*", "*", "lora"), find("*", "*", "*")}) {
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->rows, 6);
    EXPECT_NEAR(b->p90_abs, rep.overall.p90_abs, 1e-12);
    EXPECT_NEAR(b->p90_under, p90_under, 1e-12);
  }
  auto parsed = ErrorBands::Parse(ErrorBandsToCsv(rep.bands), "written.csv");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->bands().size(), rep.bands.size());
  auto near = parsed->Nearest("throughput", "hf-trainer", "ampere", "lora");
  ASSERT_TRUE(near);
  EXPECT_NEAR(near->p90_abs, rep.overall.p90_abs, 1e-4);
}

TEST(ValidationReport, ShippedBandsParse) {
  // Aborts if data/error_bands.csv is malformed; every shipped band is a fraction.
  for (const auto& b : ErrorBands::Builtin().bands()) {
    EXPECT_GE(b.p90_abs, b.median_abs) << b.Group();
    EXPECT_GT(b.rows, 0) << b.Group();
  }
}

TEST(ValidationReport, EstimateJsonCarriesTheBandFields) {
  Job job;
  job.arch = *FindPreset("llama-2-7b");
  job.cluster.gpu = "a100-sxm-80gb";
  job.cluster.num_gpus = 1;
  job.training.method = Method::kLora;
  ASSERT_TRUE(FinalizeJob(job).ok());
  auto hw = ResolveHardware(job, Cat(), Calibration::Builtin());
  ASSERT_TRUE(hw.ok());
  const StepEstimate step = EstimateStep(job, *hw);
  EstimateReport r{job, *hw, step, BuildMemoryReport(job, hw->gpu, Calibration::Builtin()), "", {}, std::nullopt};
  const nlohmann::json j = EstimateToJson(r);
  ASSERT_TRUE(j.contains("expected_error"));
  ASSERT_TRUE(j["expected_error"].contains("step_time"));
  ASSERT_TRUE(j["expected_error"].contains("memory"));
  ASSERT_TRUE(j.contains("efficiency_note"));
  const ExpectedError e = ExpectedErrorFor(job, hw->gpu.family);
  EXPECT_EQ(j["expected_error"]["step_time"].is_null(), !e.throughput.has_value());
  EXPECT_EQ(j["expected_error"]["memory"].is_null(), !e.memory.has_value());
  EXPECT_NE(EstimateToText(r, false).find("expected error: step time"), std::string::npos);
  // With a band the JSON carries its numbers and group; without one, null.
  ErrorBand b{"throughput", "generic", "ampere", "lora", 9, 0.05, 0.2, -0.03};
  const nlohmann::json with = ExpectedErrorToJson({b, std::nullopt});
  EXPECT_DOUBLE_EQ(with["step_time"]["p90_abs"].get<double>(), 0.2);
  EXPECT_EQ(with["step_time"]["rows"].get<int>(), 9);
  EXPECT_EQ(with["step_time"]["group"], "framework=generic x gpu=ampere x method=lora");
  EXPECT_TRUE(with["memory"].is_null());
  EXPECT_NE(ExpectedErrorLine({b, std::nullopt}).find("step time ±20% (p90 of 9 validated runs"), std::string::npos);
}

// The planner's default headroom is the margin of memory.md §6.1 (MemoryHeadroomFor: a memory
// group with >= memory_headroom_min_rows runs, capped), and an explicit constraint still wins.
TEST(ValidationReport, PlannerHeadroomIsTheMemoryBand) {
  auto parsed = ParseJobFile(std::string(GPUPLAN_SOURCE_DIR) + "/examples/7b-lora-one-card.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto plan = PlanJob(*parsed, Cat(), Calibration::Builtin(), PlanOptions{1, nullptr, nullptr});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto gpu = Cat().FindGpu(parsed->cluster.gpu);
  ASSERT_TRUE(gpu.ok());
  const MemoryHeadroom h = MemoryHeadroomFor(*parsed, gpu->family, Calibration::Builtin());
  EXPECT_DOUBLE_EQ(plan->memory_headroom, h.fraction);
  EXPECT_EQ(plan->memory_headroom_source, h.source);
  if (h.band) {
    EXPECT_LE(h.band->p90_under, h.band->p90_abs);
    EXPECT_NE(plan->memory_headroom_source.find(h.band->Group()), std::string::npos) << plan->memory_headroom_source;
  }
  Job pinned = *parsed;
  ASSERT_TRUE(SetJobKey(pinned, "constraints.min_memory_headroom", "0.07", {"test", 0, "x"}).ok());
  auto p2 = PlanJob(pinned, Cat(), Calibration::Builtin(), PlanOptions{1, nullptr, nullptr});
  ASSERT_TRUE(p2.ok());
  EXPECT_DOUBLE_EQ(p2->memory_headroom, 0.07);
}

TEST(ValidationReport, MemoryRowsArePredicted) {
  auto rep = ValidateRuns({std::string(GPUPLAN_SHARED_DIR) + "/validation/memory.csv"}, Cat(), Calibration::Builtin());
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_GT(rep->memory.rows, 10);
}

// An unreadable cell skips its row with a warning naming file:line: column, and the other rows are
// predicted; two rows of the same metric are two runs even when their columns read alike.
TEST(ValidationReport, UnreadableCellSkipsTheRowNotTheFile) {
  std::string bad = Row("throughput_tokens_per_sec_per_gpu", 3000, "tokens/s", kLora);
  bad.replace(bad.find(",32,4096,"), 9, ",3x,4096,");  // layers "3x"
  const ValidationReport rep = Validate("unreadable.csv", Row("throughput_tokens_per_sec_per_gpu", 3000, "tokens/s", kLora) + bad +
                                                              Row("throughput_tokens_per_sec_per_gpu", 3100, "tokens/s", kLora));
  ASSERT_EQ(rep.rows.size(), 3u);
  EXPECT_TRUE(rep.rows[0].used);
  EXPECT_FALSE(rep.rows[1].used);
  EXPECT_NE(rep.rows[1].row.unreadable.find("unreadable.csv:3: layers:"), std::string::npos) << rep.rows[1].row.unreadable;
  EXPECT_NE(rep.rows[1].reason.find("unreadable cell"), std::string::npos) << rep.rows[1].reason;
  // Rows 2 and 4 read alike and report the same metric: two runs (a recipe the columns do not
  // show), both predicted; the same run under another metric is still predicted once.
  EXPECT_TRUE(rep.rows[2].used) << rep.rows[2].reason;
  EXPECT_EQ(rep.overall.rows, 2);
  const ValidationReport mfu = Validate("two_metrics.csv", Row("throughput_tokens_per_sec_per_gpu", 3000, "tokens/s", kLora) +
                                                                Row("model_tflops_per_gpu", 100, "TFLOPS", kLora));
  EXPECT_EQ(mfu.overall.rows, 1);
  EXPECT_NE(mfu.rows[1].reason.find("another metric"), std::string::npos) << mfu.rows[1].reason;
  EXPECT_NE(ValidationToText(rep, false).find("rows skipped for an unreadable cell: 1"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan
