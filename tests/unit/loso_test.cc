// Leave-one-source-out in gpuplan validate (docs/validation.md "Leave-one-source-out"): the fold of a
// row, the constants it is predicted with, the warnings of a stale or incomplete fit file, and the
// report it leads with. Synthetic rows of two sources, written to the test's temp dir.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "gpuplan/data.h"
#include "gpuplan/estimate.h"
#include "gpuplan/report.h"
#include "gpuplan/validation.h"

namespace gpuplan {
namespace {

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

const char* kSourceA = "github:team-a/bench@abc:README.md (table 1)";
const char* kSourceB = "github:team-b/results@def:data/runs.csv";

// A Llama-2-7B full fine-tune on `gpus` A100 80GB: a throughput row, or a peak-memory row.
std::string Row(const std::string& source, int gpus, const std::string& metric, double value, const std::string& unit) {
  char buf[1200];
  std::snprintf(buf, sizeof buf,
                "\"%s\",Llama-2-7B,6.74,32,4096,32,32,11008,32000,2048,A100 80GB SXM,%d,8,single node,1,1,%d,1,none,1,%d,full,bf16,%s,%g,%s,"
                "\"framework=Megatron-DeepSpeed\"\n",
                source.c_str(), gpus, gpus, 8 * gpus, metric.c_str(), value, unit.c_str());
  return buf;
}

std::string TwoSources() {
  std::string rows;
  for (int gpus : {1, 2, 4, 8}) {
    rows += Row(kSourceA, gpus, "throughput_tokens_per_sec_per_gpu", 2500 + 100 * gpus, "tokens/s/GPU");
    rows += Row(kSourceB, gpus, "throughput_tokens_per_sec_per_gpu", 2000 + 50 * gpus, "tokens/s/GPU");
  }
  rows += Row(kSourceB, 8, "peak_memory_reserved", 40, "GiB");
  return rows;
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// A fits file: fold A's constants (fitted without A) and fold B's differ, so a row predicted with
// the wrong fold's constants shows.
std::string Fits(const std::string& fingerprint, bool with_b = true) {
  std::string t = "fold,key,value,rows,model_fingerprint,source,date\n";
  t += "(all sources),framework_overhead,1.2,9," + fingerprint + ",in-sample,2026-12-01\n";
  t += "team-a/bench,framework_overhead,1.0,4," + fingerprint + ",fit on every source but this one,2026-12-01\n";
  t += "team-a/bench,allocator_fragmentation,0.05,4," + fingerprint + ",prior: no other source,2026-12-01\n";
  if (with_b) {
    t += "team-b/results,framework_overhead,1.6,5," + fingerprint + ",fit on every source but this one,2026-12-01\n";
    t += "team-b/results,allocator_fragmentation,0.2,5," + fingerprint + ",fit on every source but this one,2026-12-01\n";
  }
  return t;
}

ValidationReport Validate(const LosoFits* fits) {
  auto rep = ValidateRuns({Write("loso_runs.csv", std::string(kHeader) + TwoSources())}, Cat(), Calibration::Builtin(), fits);
  EXPECT_TRUE(rep.ok()) << rep.status().ToString();
  return rep.ok() ? *rep : ValidationReport{};
}

LosoFits ReadFits(const std::string& text) {
  auto f = ReadLosoFits(Write("loso_fits.csv", text));
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? *f : LosoFits{};
}

// The prediction of a used row under `cal` (the statistic and basis it was compared on).
double Predict(const ValidatedRow& v, const Calibration& cal) {
  if (v.memory) {
    auto mb = EstimateMemory(v.row.job, cal, false);
    return mb.reserved_bytes / (1024.0 * 1024 * 1024);
  }
  auto hw = ResolveHardware(v.row.job, Cat(), cal);
  EXPECT_TRUE(hw.ok());
  return EstimateStep(v.row.job, *hw).tokens_per_s_per_gpu;
}

TEST(Loso, FoldIsTheRepositoryOrThePaper) {
  EXPECT_EQ(LosoFold(kSourceA), "team-a/bench");
  EXPECT_EQ(LosoFold("github:team-a/bench@ffff:docs/other.md"), "team-a/bench");
  EXPECT_EQ(LosoFold("paper: Rajbhandari et al. 2020 'ZeRO: Memory Optimizations' (SC20), Table 3"),
            "paper: Rajbhandari et al. 2020");
}

TEST(Loso, EveryRowIsPredictedWithTheConstantsFittedWithoutItsSource) {
  const LosoFits fits = ReadFits(Fits(ModelFingerprint()));
  const ValidationReport rep = Validate(&fits);
  ASSERT_TRUE(rep.has_loso);
  EXPECT_TRUE(rep.loso_warnings.empty()) << rep.loso_warnings.front();
  int checked = 0;
  for (const auto& v : rep.rows) {
    ASSERT_TRUE(v.used) << v.reason;
    ASSERT_TRUE(v.loso);
    const std::string own = LosoFold(v.row.source);
    EXPECT_EQ(v.fold, own);
    // The constants of the row's own fold, i.e. the ones fitted on every OTHER source.
    Calibration cal = Calibration::Builtin();
    for (const auto& [k, x] : fits.values.at(own)) cal.Set(k, x);
    EXPECT_NEAR(v.loso_predicted, Predict(v, cal), 1e-9 * std::fabs(v.loso_predicted)) << v.row.line;
    EXPECT_NEAR(v.loso_error, v.loso_predicted / v.measured_tokens_per_s_per_gpu - 1, 1e-12);
    // Never the other fold's, nor the in-sample fit's.
    for (const auto& [fold, kv] : fits.values) {
      if (fold == own) continue;
      Calibration other = Calibration::Builtin();
      for (const auto& [k, x] : kv) other.Set(k, x);
      EXPECT_GT(std::fabs(v.loso_predicted - Predict(v, other)), 1e-6 * std::fabs(v.loso_predicted)) << fold;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);
  EXPECT_EQ(rep.loso_throughput.rows, 8);
  EXPECT_EQ(rep.loso_memory.rows, 1);
}

TEST(Loso, BandsComeFromTheLeaveOneSourceOutErrors) {
  const LosoFits fits = ReadFits(Fits(ModelFingerprint()));
  const ValidationReport rep = Validate(&fits);
  const ValidationReport in_sample = Validate(nullptr);
  for (const auto& b : rep.bands) {
    if (b.kind != "throughput" || b.Group() != "all runs") continue;
    EXPECT_NEAR(b.median_abs, rep.loso_throughput.median_abs, 1e-12);
    EXPECT_NEAR(b.mean_signed, rep.loso_throughput.mean_signed, 1e-12);
  }
  for (const auto& b : in_sample.bands) {
    if (b.kind == "throughput" && b.Group() == "all runs") {
      EXPECT_NEAR(b.median_abs, in_sample.overall.median_abs, 1e-12);
    }
  }
  EXPECT_NE(rep.loso_throughput.median_abs, in_sample.overall.median_abs);
}

TEST(Loso, StaleOrIncompleteFitsAreSaid) {
  const LosoFits stale = ReadFits(Fits("000000000000", /*with_b=*/false));
  const ValidationReport rep = Validate(&stale);
  ASSERT_EQ(rep.loso_warnings.size(), 2u);
  EXPECT_NE(rep.loso_warnings[0].find("fingerprint 000000000000"), std::string::npos);
  EXPECT_NE(rep.loso_warnings[1].find("no fit without team-b/results (5 rows)"), std::string::npos);
  for (const auto& v : rep.rows) EXPECT_EQ(v.loso, v.fold == "team-a/bench");
  EXPECT_EQ(rep.loso_throughput.rows, 4);
  const std::string md = ValidationToMarkdown(rep, "loso_runs.csv", Calibration::Builtin());
  EXPECT_NE(md.find("**Stale:** no fit without team-b/results"), std::string::npos);
}

TEST(Loso, ReportLeadsWithTheLeaveOneSourceOutTable) {
  const LosoFits fits = ReadFits(Fits(ModelFingerprint()));
  const ValidationReport rep = Validate(&fits);
  const std::string md = ValidationToMarkdown(rep, "loso_runs.csv", Calibration::Builtin());
  const size_t loso = md.find("## Leave-one-source-out"), summary = md.find("## Summary"), split = md.find("## Train/test split");
  ASSERT_NE(loso, std::string::npos);
  EXPECT_LT(loso, summary);
  EXPECT_LT(summary, split);
  for (const char* s : {"### Leave-one-source-out by source", "### Leave-one-source-out by framework",
                        "### Leave-one-source-out by GPU family", "### Leave-one-source-out by method", "| team-a/bench ",
                        "| team-b/results ", "### Constants across the folds", "leave-one-source-out errors"})
    EXPECT_NE(md.find(s), std::string::npos) << s;
  // The headline row: rows and median of the LOSO errors, printed as computed from the rows.
  char want[200];
  std::snprintf(want, sizeof want, "| throughput  | leave-one-source-out |    8 |");
  EXPECT_NE(md.find(want), std::string::npos) << md.substr(loso, 1500);
  // allocator_fragmentation: fitted in one fold, at its prior in the other.
  EXPECT_NE(md.find("prior in 1 fold(s)"), std::string::npos);
  // Every predicted row names its source and its leave-one-source-out error.
  EXPECT_NE(md.find("| source "), std::string::npos);
  EXPECT_NE(md.find("LOSO error"), std::string::npos);
  const std::string text = ValidationToText(rep, false);
  EXPECT_NE(text.find("leave-one-source-out"), std::string::npos);
}

TEST(Loso, BadFitsFileSaysWhere) {
  auto bad_key = ReadLosoFits(Write("bad1.csv", "fold,key,value,rows,model_fingerprint,source,date\nx,framework_overhed,1,1,a,s,d\n"));
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.status().ToString().find("bad1.csv:2: key:"), std::string::npos) << bad_key.status().ToString();
  auto bad_value = ReadLosoFits(Write("bad2.csv", "fold,key,value,rows,model_fingerprint,source,date\nx,hbm_eff,7,1,a,s,d\n"));
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.status().ToString().find("bad2.csv:2: value:"), std::string::npos) << bad_value.status().ToString();
  auto no_col = ReadLosoFits(Write("bad3.csv", "fold,key,value\nx,hbm_eff,0.5\n"));
  ASSERT_FALSE(no_col.ok());
}

TEST(Loso, OverAndUnderApart) {
  const OverUnder o = SplitOverUnder({0.1, 0.3, -0.2, -0.4, -0.6});
  EXPECT_DOUBLE_EQ(o.share_over, 0.4);
  EXPECT_DOUBLE_EQ(o.median_over, 0.2);
  EXPECT_DOUBLE_EQ(o.median_under, 0.4);
}

}  // namespace
}  // namespace gpuplan
