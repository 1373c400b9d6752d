// calibrate: a recorded measurement becomes a calibration override, and the model loaded with that
// override reproduces the measurement it came from (issue 11: "calibrate then estimate
// --calibration moves a prediction toward the measured value").
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "../test_util.h"
#include "gpuplan/calibrate.h"
#include "gpuplan/ops.h"
#include "gpuplan/ledger.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;
namespace fs = std::filesystem;

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

struct TempLedger {
  fs::path dir = fs::temp_directory_path() / ("gpuplan-cal-" + std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
  std::unique_ptr<Ledger> ledger;
  TempLedger() {
    fs::create_directories(dir);
    auto l = Ledger::Open((dir / "ledger.db").string());
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    ledger = std::move(l).value();
  }
  ~TempLedger() {
    ledger.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::vector<Measurement> Record(const std::string& kind, double value, const std::string& unit, const std::string& ctx) {
    MeasurementBatch b;
    b.machine = "node-01";
    b.pool = "a100-ib";
    b.tool = "test";
    b.raw_sha256 = Sha256Hex(kind);
    b.items = {{kind, value, unit, ctx}};
    auto ids = ledger->RecordMeasurements(b);
    EXPECT_TRUE(ids.ok()) << ids.status().ToString();
    MeasurementFilter f;
    f.pool = "a100-ib";
    return *ledger->Measurements(f);
  }
};

// The CSV written, read back by the same loader --calibration uses.
Calibration Reloaded(const CalibrateResult& r, const fs::path& dir) {
  const fs::path p = dir / "my-calibration.csv";
  std::ofstream(p) << CalibrationOverridesToCsv(r.overrides);
  auto cal = Calibration::Load(p.string());
  EXPECT_TRUE(cal.ok()) << cal.status().ToString();
  return cal.ok() ? *cal : Calibration::Builtin();
}

const Job& TwoNodes() {
  static const Job j = MakeJob("model: {preset: llama-3-8b}\nparallel: {zero: 1}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 16, network: ib-hdr}\n");
  return j;
}

TEST(Calibrate, MeasuredBusbwSetsTheFabricEfficiencyAndTheModelReproducesIt) {
  TempLedger t;
  const double bytes = double(int64_t{1} << 30);
  auto hw = ResolveHardware(TwoNodes(), Cat(), Calibration::Builtin());
  ASSERT_TRUE(hw.ok());
  const double model = BusBandwidth(Collective::kAllReduce, bytes, 16, 8, *hw) / 1e9;
  const double measured = 0.7 * model;  // a fabric delivering less than the catalog says
  auto ms = t.Record("busbw_gb_per_s", measured, "GB/s", R"({"op":"all_reduce","ranks":16,"nodes":2,"bytes":1073741824})");
  auto r = CalibrateFromMeasurements(TwoNodes(), Cat(), Calibration::Builtin(), ms);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->overrides.size(), 1u);
  EXPECT_EQ(r->overrides[0].key, "link_eff.infiniband");
  EXPECT_LT(r->overrides[0].value, r->overrides[0].before);
  const Calibration cal = Reloaded(*r, t.dir);
  auto hw2 = ResolveHardware(TwoNodes(), Cat(), cal);
  ASSERT_TRUE(hw2.ok());
  EXPECT_NEAR(BusBandwidth(Collective::kAllReduce, bytes, 16, 8, *hw2) / 1e9, measured, 0.01 * measured);
  // The step time moves with it: a slower fabric, a slower (or equal) step.
  EXPECT_GE(EstimateStep(TwoNodes(), *hw2).step_time_s, EstimateStep(TwoNodes(), *hw).step_time_s);
  // The CSV row cites the measurement.
  EXPECT_NE(CalibrationOverridesToCsv(r->overrides).find("ledger row " + std::to_string(ms[0].id)), std::string::npos);
}

TEST(Calibrate, MeasuredTokensPerSecondSetsTheFrameworkFactor) {
  TempLedger t;
  auto hw = ResolveHardware(TwoNodes(), Cat(), Calibration::Builtin());
  ASSERT_TRUE(hw.ok());
  const double model = EstimateStep(TwoNodes(), *hw).tokens_per_s;
  const double measured = 0.8 * model;
  auto r = CalibrateFromMeasurements(TwoNodes(), Cat(), Calibration::Builtin(), t.Record("tokens_per_s", measured, "tokens/s", "{}"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->overrides.size(), 1u);
  EXPECT_EQ(r->overrides[0].key, "framework_overhead");
  const Calibration cal = Reloaded(*r, t.dir);
  auto hw2 = ResolveHardware(TwoNodes(), Cat(), cal);
  const double after = EstimateStep(TwoNodes(), *hw2).tokens_per_s;
  EXPECT_LT(std::abs(after - measured), std::abs(model - measured));  // toward the measurement
  EXPECT_NEAR(after, measured, 0.01 * measured);
}

TEST(Calibrate, GemmSetsThisGpusMatmulCeiling) {
  TempLedger t;
  auto r = CalibrateFromMeasurements(TwoNodes(), Cat(), Calibration::Builtin(),
                                     t.Record("gemm_tflops", 250, "TFLOP/s", R"({"m":8192,"n":8192,"k":8192})"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->overrides.size(), 1u);
  EXPECT_EQ(r->overrides[0].key, "matmul_eff_max.a100-sxm-80gb");
  auto hw = ResolveHardware(TwoNodes(), Cat(), Reloaded(*r, t.dir));
  ASSERT_TRUE(hw.ok());
  const double d = 8192, shape = d / (d + hw->k.matmul_dim_half);
  EXPECT_NEAR(*hw->gpu.PeakFlops(Precision::kBf16) * hw->k.clock_factor * hw->k.matmul_eff_max * shape / 1e12, 250, 1);
}

// MX§7 a profiler's per-layer forward time: the scale makes the model's layer forward (GPU) equal to it, at the
// context's tp and micro-batch; the step of the calibrated job is longer for a slower layer.
TEST(Calibrate, LayerForwardTimeSetsThisGpusLayerScale) {
  TempLedger t;
  const Job& job = TwoNodes();
  auto r = CalibrateFromMeasurements(job, Cat(), Calibration::Builtin(),
                                     t.Record("layer_forward_s", 0.012, "s", R"({"tp":1,"micro_batch":2})"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->overrides.size(), 1u) << (r->skipped.empty() ? "" : r->skipped[0]);
  EXPECT_EQ(r->overrides[0].key, "layer_time_scale.a100-sxm-80gb");
  Job at = job;
  at.parallel.tp = 1, at.training.micro_batch = 2;
  auto hw = ResolveHardware(at, Cat(), Reloaded(*r, t.dir));
  ASSERT_TRUE(hw.ok());
  const double seq = static_cast<double>(at.training.seq_len);
  EXPECT_NEAR(FoldLayer(LayerOps(at, *hw, MicroBatchTokens(at), seq), at, hw->k).gpu_fwd_s, 0.012, 1e-7);  // the CSV keeps 6 significant digits
  auto base = ResolveHardware(job, Cat(), Calibration::Builtin());
  auto scaled = ResolveHardware(job, Cat(), Reloaded(*r, t.dir));
  ASSERT_TRUE(base.ok() && scaled.ok());
  EXPECT_GT(EstimateStep(job, *scaled).step_time_s, EstimateStep(job, *base).step_time_s);
  TempLedger t2;  // a context tp that is not a whole number: skipped with the reason
  auto bad = CalibrateFromMeasurements(job, Cat(), Calibration::Builtin(),
                                       t2.Record("layer_forward_s", 0.01, "s", R"({"tp":0.5})"));
  ASSERT_TRUE(bad.ok());
  EXPECT_TRUE(bad->overrides.empty());
  ASSERT_EQ(bad->skipped.size(), 1u);
  EXPECT_NE(bad->skipped[0].find("tp / micro_batch"), std::string::npos) << bad->skipped[0];
}

TEST(Calibrate, AnUnusableKindIsSkippedWithItsReason) {
  TempLedger t;
  auto r = CalibrateFromMeasurements(TwoNodes(), Cat(), Calibration::Builtin(), t.Record("cpu_cores", 64, "count", "{}"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->overrides.empty());
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_NE(r->skipped[0].find("cpu_cores"), std::string::npos);
}

TEST(Calibrate, AMeasurementBeyondTheKeysRangeIsClampedAndSaysSo) {
  TempLedger t;
  auto r = CalibrateFromMeasurements(TwoNodes(), Cat(), Calibration::Builtin(),
                                     t.Record("busbw_gb_per_s", 1e6, "GB/s", R"({"op":"all_reduce","ranks":16,"nodes":2,"bytes":1073741824})"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->overrides.size(), 1u);
  EXPECT_NE(r->overrides[0].note.find("clamped"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan
