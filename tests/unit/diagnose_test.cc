// gpuplan diagnose: each cause is tested by the model (what-ifs, memory, checkpoint size), ranked.
#include <gtest/gtest.h>

#include "../test_util.h"
#include "gpuplan/diagnose.h"
#include "gpuplan/report.h"

#include <nlohmann/json.hpp>

namespace gpuplan {
namespace {

using testing_util::MakeJob;

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

Diagnosis DiagnoseJob(const Job& j, const Observations& o) {
  auto d = Diagnose(j, Cat(), Calibration::Builtin(), o);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? *d : Diagnosis{};
}

const Cause* Find(const Diagnosis& d, const std::string& id) {
  for (const auto& c : d.causes)
    if (c.id == id) return &c;
  return nullptr;
}

const Job& MultiNode() {
  static const Job j = MakeJob("model: {preset: llama-3-8b}\nparallel: {zero: 1}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 16}\n");
  return j;
}

TEST(Diagnose, BusyCpuAndIdleGpuPointAtTheDataLoaderFirst) {
  Observations o;
  o.gpu_util_pct = 30;
  o.cpu_util_pct = 97;
  o.host_cores_per_gpu = 4;
  o.loader_tokens_per_s_per_core = 500;  // the expected ~3,100 tokens/s per GPU then need > 6 cores
  const Diagnosis d = DiagnoseJob(MultiNode(), o);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes.front().id, "data_loader");
  EXPECT_GE(d.causes.front().score, 0.9);
  const double per_gpu = d.expected_tokens_per_s / 16;
  EXPECT_NE(d.causes.front().evidence.find(FormatNumber("%.1f", per_gpu / 500)), std::string::npos) << d.causes.front().evidence;
  ASSERT_NE(Find(d, "host_cores"), nullptr);  // 4 < the seed's 16 per GPU
}

TEST(Diagnose, NcclOnSocketsIsNoRdmaAndTheTcpWhatIfIsSlower) {
  Observations o;
  o.nccl_transport = "NET/Socket";
  o.nccl_transport_from = {"nccl.log", 42, ""};
  o.symptoms = {Symptom::kSlowMultinode};
  const Diagnosis d = DiagnoseJob(MultiNode(), o);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes.front().id, "network_no_rdma");
  EXPECT_NE(d.causes.front().evidence.find("nccl.log:42"), std::string::npos);
  EXPECT_NE(d.causes.front().evidence.find("TCP sockets"), std::string::npos);
}

TEST(Diagnose, AMeasurementMatchingTheTcpWhatIfRaisesTheNoRdmaCause) {
  Observations slow, fine;
  const Diagnosis base = DiagnoseJob(MultiNode(), {});
  slow.tokens_per_s = base.expected_tokens_per_s * 0.22;  // near the TCP what-if
  fine.tokens_per_s = base.expected_tokens_per_s * 0.75;
  const Diagnosis ds = DiagnoseJob(MultiNode(), slow), df = DiagnoseJob(MultiNode(), fine);
  const Cause* a = Find(ds, "network_no_rdma");
  const Cause* b = Find(df, "network_no_rdma");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_GT(a->score, b->score);
}

TEST(Diagnose, OomThatTheModelPredictsComesWithSavingSteps) {
  const Job j = MakeJob("model: {preset: llama-2-7b}\ncluster: {gpu: rtx4090, num_gpus: 1}\ntraining: {seq_len: 4096}\n");
  Observations o;
  o.symptoms = {Symptom::kOom};
  const Diagnosis d = DiagnoseJob(j, o);
  const Cause* c = Find(d, "oom_model");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(d.causes.front().id, "oom_model");
  EXPECT_NE(c->evidence.find("rtx4090"), std::string::npos);
}

TEST(Diagnose, OomThatTheModelSaysFitsIsAboutPeaksAndTheBand) {
  const Job j = MakeJob("model: {preset: llama-3-8b}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 1}\ntraining: {method: lora}\n");
  Observations o;
  o.symptoms = {Symptom::kOom};
  const Diagnosis d = DiagnoseJob(j, o);
  EXPECT_EQ(Find(d, "oom_model"), nullptr);
  ASSERT_NE(Find(d, "oom_fragmentation"), nullptr);
}

TEST(Diagnose, Fp16NanOnABf16GpuSaysBf16) {
  const Job j = MakeJob("model: {preset: llama-3-8b}\ntraining: {precision: fp16}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 8}\nparallel: {zero: 3}\n");
  Observations o;
  o.symptoms = {Symptom::kLossNan};
  const Diagnosis d = DiagnoseJob(j, o);
  const Cause* c = Find(d, "fp16_overflow");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->fix.find("bf16"), std::string::npos);
}

// bf16 has fp32's range: a NaN loss points at the data and at a bad card before overflow.
TEST(Diagnose, Bf16NanPutsDataAndBadMemoryBeforeOverflow) {
  const Job j = MakeJob("model: {preset: llama-3-8b}\ntraining: {precision: bf16}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 8}\nparallel: {zero: 3}\n");
  Observations o;
  o.symptoms = {Symptom::kLossNan};
  const Diagnosis d = DiagnoseJob(j, o);
  auto rank = [&](const std::string& id) {
    for (size_t i = 0; i < d.causes.size(); ++i)
      if (d.causes[i].id == id) return static_cast<int>(i);
    return -1;
  };
  ASSERT_GE(rank("nan_data"), 0);
  ASSERT_GE(rank("gpu_memory_errors"), 0);
  ASSERT_GE(rank("fp16_overflow"), 0);
  EXPECT_EQ(rank("nan_data"), 0);
  EXPECT_LT(rank("gpu_memory_errors"), rank("fp16_overflow"));
  EXPECT_NE(d.causes[static_cast<size_t>(rank("gpu_memory_errors"))].confirm.find("ECC"), std::string::npos);
  // In fp16 overflow stays first.
  const Diagnosis d16 = DiagnoseJob(MakeJob("model: {preset: llama-3-8b}\ntraining: {precision: fp16}\ncluster: {gpu: v100-sxm-32gb, num_gpus: 8}\nparallel: {zero: 3}\n"), o);
  ASSERT_FALSE(d16.causes.empty());
  EXPECT_EQ(d16.causes[0].id, "fp16_overflow");
}

TEST(Diagnose, AMeasurementInsideTheBandIsNoAnomaly) {
  const Diagnosis base = DiagnoseJob(MultiNode(), {});
  ASSERT_TRUE(base.causes.empty());
  Observations o;
  o.tokens_per_s = base.expected_tokens_per_s * 0.97;
  const Diagnosis d = DiagnoseJob(MultiNode(), o);
  ASSERT_NE(Find(d, "within_band"), nullptr);
  EXPECT_EQ(Find(d, "network_slow"), nullptr);
}

TEST(Diagnose, CheckpointSlowerThanTheStorageIsSmallFiles) {
  const Job j = MakeJob("model: {preset: llama-3-8b}\nparallel: {zero: 3}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 8, storage: aws-fsx-lustre-persistent2-ssd-125}\n");
  Observations o;
  o.symptoms = {Symptom::kSlowCheckpoint};
  const Diagnosis dq = DiagnoseJob(j, o);
  const Cause* quick = Find(dq, "checkpoint_storage");
  ASSERT_NE(quick, nullptr);
  o.checkpoint_s = 1e6;
  const Diagnosis dslow = DiagnoseJob(j, o);
  const Cause* slow = Find(dslow, "checkpoint_storage");
  ASSERT_NE(slow, nullptr);
  EXPECT_GT(slow->score, quick->score);
  EXPECT_NE(slow->evidence.find("IOPS"), std::string::npos);
}

TEST(Diagnose, AMeasuredBusbwBelowTheModelsIsASlowFabricWithBothNumbers) {
  auto hw = ResolveHardware(MultiNode(), Cat(), Calibration::Builtin());
  ASSERT_TRUE(hw.ok());
  const double bytes = double(int64_t{1} << 30);
  const double model = BusBandwidth(Collective::kAllReduce, bytes, 16, 8, *hw) / 1e9;
  Observations o;
  o.busbw = Observations::BusBw{0.4 * model, "all_reduce", 16, 2, bytes, {"ar.txt", 23, ""}};
  const Diagnosis d = DiagnoseJob(MultiNode(), o);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes.front().id, "network_slow");
  EXPECT_NE(d.causes.front().evidence.find("ar.txt:23"), std::string::npos);
  EXPECT_NE(d.causes.front().evidence.find(FormatNumber("%.1f", model)), std::string::npos) << d.causes.front().evidence;
  o.busbw->gb_per_s = 0.95 * model;  // as the model says: no slow-fabric cause
  const Diagnosis ok = DiagnoseJob(MultiNode(), o);
  EXPECT_EQ(Find(ok, "network_slow"), nullptr);
}

TEST(Diagnose, ThrottlingAndIbErrorsFromToolOutputs) {
  Observations o;
  o.throttled_gpus = 2;
  o.throttled_from = {"q.txt", 10, ""};
  o.ib_completion_error = Location{"nccl.log", 77, ""};
  const Diagnosis d = DiagnoseJob(MultiNode(), o);
  ASSERT_NE(Find(d, "gpu_throttled"), nullptr);
  ASSERT_NE(Find(d, "ib_errors"), nullptr);
  EXPECT_NE(Find(d, "ib_errors")->evidence.find("nccl.log:77"), std::string::npos);
}

TEST(Diagnose, TrainingLogRatesInSeveralSpellingsAndTheMedian) {
  auto r = ReadTokensPerSecond("step 1 loss 2.3 tokens/s: 4,000\nstep 2 | 4100 tok/s\nstep 3 tps=4,200.5\nnoise\n", "train.log");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->lines, 3);
  EXPECT_DOUBLE_EQ(r->tokens_per_s, 4100);
  EXPECT_EQ(r->where.line, 2);
  auto none = ReadTokensPerSecond("loss 2.3\nloss 2.2\n", "empty.log");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().location().file, "empty.log");
}

TEST(Diagnose, TrainingLogNumbersReadWholeAndAbsurdRatesWarned) {
  // Exponents are part of the number: 4.1e3 is 4100, never the mantissa 4.1 (or 1 for 1e308).
  auto r = ReadTokensPerSecond("lr 3e-4 tokens/s: 4.1e3\nstep 2 4,100 tok/s\nstep 3 tps=4.2E+03\n", "train.log");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->lines, 3);
  EXPECT_DOUBLE_EQ(r->tokens_per_s, 4100);
  EXPECT_TRUE(r->warnings.empty());
  // Out of data/reading_ranges.csv's tokens/s row: a warning at its line, not a rate.
  r = ReadTokensPerSecond("tokens/s: 1e308\ntokens/s: 4000\ntokens/s: -5\n1e999 tok/s\ntokens/s: 0\n", "train.log");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->lines, 1);
  EXPECT_DOUBLE_EQ(r->tokens_per_s, 4000);
  ASSERT_EQ(r->warnings.size(), 4u);
  EXPECT_EQ(r->warnings[0].first.line, 1);
  EXPECT_NE(r->warnings[0].second.find("1e308"), std::string::npos);
  EXPECT_EQ(r->warnings[1].first.line, 3);
  EXPECT_EQ(r->warnings[2].first.line, 4);
  EXPECT_EQ(r->warnings[3].first.line, 5);
  // Only absurd rates: bad input at the first one's line.
  auto bad = ReadTokensPerSecond("loss 2\ntokens/s: 1e308\n", "train.log");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().location().line, 2);
  EXPECT_NE(bad.status().reason().find("1e308"), std::string::npos);
  // A huge line (a binary blob) is skipped with a warning, not handed to the regex.
  r = ReadTokensPerSecond(std::string(100000, '7') + " tok/s\ntokens/s: 4000\n", "train.log");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->tokens_per_s, 4000);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0].first.line, 1);
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

std::string RunBinary(const std::string& args) {
  const std::string cmd = "(" + std::string(GPUPLAN_BINARY) + " " + args + ") 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) pclose(p);
  return out;
}

// The real NCCL log of a run on sockets (shared fixture) through the CLI: the no-RDMA cause first,
// citing the log's line.
TEST(DiagnoseCli, ANcclLogOnSocketsRanksNoRdmaFirst) {
  const std::string log = std::string(GPUPLAN_SHARED_DIR) + "/fixtures/tool-outputs/nccl-debug/03-net-socket-eth0.txt";
  const std::string out = RunBinary("diagnose --model llama-3-8b --gpu a100-sxm-80gb --num-gpus 16 --zero 1 --file " + log + " --json");
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  ASSERT_FALSE(j["causes"].empty()) << out;
  EXPECT_EQ(j["causes"][0]["id"], "network_no_rdma");
  EXPECT_NE(j["causes"][0]["evidence"].get<std::string>().find("03-net-socket-eth0.txt:"), std::string::npos);
}

TEST(DiagnoseCli, AFileThatIsNeitherIsBadInputWithItsName) {
  const std::string out = RunBinary("diagnose --model llama-3-8b --num-gpus 8 --file " + std::string(GPUPLAN_SOURCE_DIR) + "/README.md; echo rc=$?");
  EXPECT_NE(out.find("README.md"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=1"), std::string::npos) << out;
}

}  // namespace
}  // namespace gpuplan
