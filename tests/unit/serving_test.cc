// The serving model (docs/model/serving.md): KV bytes per token exact for GQA, MQA and MLA, the
// start-up budget, and the properties the issue asks of it: more concurrency never lowers TPOT, a
// larger KV dtype never raises capacity, cost per token = price / throughput, capacity never
// negative and never above what memory allows.
#include <gtest/gtest.h>

#include "../test_util.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpuplan/serving.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

const Catalog& Cat() { return testing_util::BuiltinCatalog(); }
const std::vector<ServingEngineProfile>& Engines() { return testing_util::BuiltinServingEngines(); }

Job ServingJob(const std::string& preset, const std::string& gpu, int64_t tp = 1) {
  Job j = MakeJob("model: {preset: " + preset + "}\ncluster: {gpu: " + gpu + ", num_gpus: " + std::to_string(tp) +
                  "}\nparallel: {tp: " + std::to_string(tp) + "}\n");
  j.serving.input_len = 1000, j.serving.output_len = 200;
  return j;
}

ServingEstimate Est(const Job& j) {
  auto e = EstimateServing(j, Cat(), Calibration::Builtin(), Engines());
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : ServingEstimate{};
}

Arch Preset(const std::string& name) { return *FindPreset(name); }

TEST(ServingKv, BytesPerTokenExactForGqaMqaMla) {
  // S§1: 2 x L x H_kv x d x 2 bytes; MLA (kv_lora_rank + rope dim) x L x 2.
  EXPECT_EQ(KvBytesPerToken(Preset("llama-3-8b"), KvDtype::kAuto, Precision::kBf16), 131072.0);
  EXPECT_EQ(KvBytesPerToken(Preset("llama-3-70b"), KvDtype::kAuto, Precision::kBf16), 327680.0);
  EXPECT_EQ(KvBytesPerToken(Preset("mistral-7b"), KvDtype::kAuto, Precision::kBf16), 131072.0);
  EXPECT_EQ(KvBytesPerToken(Preset("deepseek-v2-lite"), KvDtype::kAuto, Precision::kBf16), 31104.0);
  Arch mqa = Preset("llama-3-8b");
  mqa.kv_heads = 1;
  EXPECT_EQ(KvBytesPerToken(mqa, KvDtype::kAuto, Precision::kBf16), 2.0 * 32 * 1 * 128 * 2);
  // An fp8 cache halves it.
  EXPECT_EQ(KvBytesPerToken(Preset("llama-3-70b"), KvDtype::kFp8, Precision::kBf16), 163840.0);
}

TEST(ServingKv, PerGpuSplitsHeadsReplicatesMlaSplitsLayers) {
  const Arch l70 = Preset("llama-3-70b");  // 8 KV heads, 80 layers
  EXPECT_EQ(KvBytesPerTokenPerGpu(l70, KvDtype::kAuto, Precision::kBf16, 2, 1), 163840.0);
  EXPECT_EQ(KvBytesPerTokenPerGpu(l70, KvDtype::kAuto, Precision::kBf16, 8, 1), 40960.0);
  // tp 16 > 8 heads: one (replicated) head per rank, as at tp 8.
  EXPECT_EQ(KvBytesPerTokenPerGpu(l70, KvDtype::kAuto, Precision::kBf16, 16, 1), 40960.0);
  EXPECT_EQ(KvBytesPerTokenPerGpu(l70, KvDtype::kAuto, Precision::kBf16, 1, 2), 163840.0);
  const Arch v2 = Preset("deepseek-v2-lite");
  EXPECT_EQ(KvBytesPerTokenPerGpu(v2, KvDtype::kAuto, Precision::kBf16, 4, 1), 31104.0);
}

TEST(ServingMemory, BudgetIsFractionOfDeviceLessUsed) {
  Job j = ServingJob("llama-3-8b", "h100");
  const ServingEstimate e = Est(j);
  const ServingMemory& m = e.memory;
  EXPECT_GT(m.weights_bytes, 14.5e9);  // 8.03B parameters in bf16
  EXPECT_LT(m.weights_bytes, 16.6e9);
  EXPECT_NEAR(m.kv_bytes, m.budget_bytes - m.weights_bytes - m.activation_bytes - m.non_torch_bytes -
                              (e.engine == "vllm" && m.cuda_graph_bytes > 0 ? 0 : 0), m.cuda_graph_bytes + 1);
  EXPECT_EQ(e.kv_capacity_tokens % 16, 0);
  EXPECT_LE(static_cast<double>(e.kv_capacity_tokens) * e.kv_bytes_per_token_per_gpu, m.kv_bytes);
}

TEST(ServingFit, SeventyBillionOnOne24GbCardDoesNotFitAndSaysWhatWould) {
  Job j = ServingJob("llama-3-70b", "rtx4090");
  const ServingEstimate e = Est(j);
  EXPECT_FALSE(e.fits);
  EXPECT_NE(e.fit_problem.find("weights"), std::string::npos) << e.fit_problem;
  ASSERT_FALSE(e.what_would_fit.empty());
}

TEST(ServingProperty, MoreConcurrencyNeverLowersTpot) {
  for (const auto& [preset, gpu, tp] : {std::tuple{"llama-3-8b", "h100", 1}, std::tuple{"llama-3-70b", "h100", 4},
                                        std::tuple{"mixtral-8x7b", "a100-sxm-80gb", 2},
                                        std::tuple{"deepseek-v2-lite", "h100", 1}, std::tuple{"qwen2.5-7b", "rtx4090", 1}}) {
    Job j = ServingJob(preset, gpu, tp);
    double last = 0;
    for (double c : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0}) {
      j.serving.concurrency = c;
      const ServingEstimate e = Est(j);
      if (!e.fits) break;
      EXPECT_GE(e.tpot_s.mean, last * (1 - 1e-9)) << preset << " at concurrency " << c;
      EXPECT_GE(e.tpot_s.p90, e.tpot_s.mean * (1 - 1e-9));
      EXPECT_GE(e.ttft_s.p90, e.ttft_s.mean * (1 - 1e-9));
      last = e.tpot_s.mean;
    }
  }
}

TEST(ServingProperty, LargerKvDtypeNeverRaisesCapacity) {
  for (const char* preset : {"llama-3-8b", "mistral-7b", "deepseek-v2-lite", "qwen2.5-72b"}) {
    Job j = ServingJob(preset, "h100", std::string(preset) == "qwen2.5-72b" ? 4 : 1);
    j.serving.kv_dtype = KvDtype::kFp8;
    const int64_t fp8 = Est(j).kv_capacity_tokens;
    j.serving.kv_dtype = KvDtype::kAuto;
    EXPECT_LE(Est(j).kv_capacity_tokens, fp8) << preset;
  }
}

TEST(ServingProperty, CostPerTokenIsPriceOverThroughput) {
  for (double c : {1.0, 8.0, 64.0}) {
    Job j = ServingJob("llama-3-8b", "h100");
    j.serving.concurrency = c;
    const ServingEstimate e = Est(j);
    ASSERT_TRUE(e.usd_per_gpu_hour.has_value());
    ASSERT_TRUE(e.cost_per_million_output_tokens_usd.has_value());
    const double expect = *e.usd_per_gpu_hour * e.num_gpus / 3600.0 / e.output_tokens_per_s * 1e6;
    EXPECT_NEAR(*e.cost_per_million_output_tokens_usd, expect, 1e-9 * expect);
    EXPECT_NEAR(e.output_tokens_per_s, e.requests_per_s * j.serving.output_len, 1e-9 * e.output_tokens_per_s);
  }
}

TEST(ServingProperty, CapacityNeverNegativeNorAboveMemory) {
  for (const char* gpu : {"h100", "a100-sxm-80gb", "rtx4090", "l40s", "h20"}) {
    for (double util : {0.3, 0.6, 0.9, 0.95}) {
      Job j = ServingJob("llama-3-8b", gpu);
      j.serving.gpu_memory_utilization = util;
      const ServingEstimate e = Est(j);
      EXPECT_GE(e.kv_capacity_tokens, 0);
      EXPECT_LE(static_cast<double>(e.kv_capacity_tokens) * e.kv_bytes_per_token_per_gpu,
                std::max(0.0, e.memory.device_bytes - e.memory.weights_bytes))
          << gpu << " " << util;
    }
  }
}

TEST(ServingLoad, RequestRateBeyondCapacitySaturates) {
  Job j = ServingJob("llama-3-8b", "h100");
  j.serving.load = ServingLoad::kMaxThroughput;
  const double most = Est(j).requests_per_s;
  j.serving.load = ServingLoad::kRequestRate;
  j.serving.request_rate = 2 * most;
  const ServingEstimate e = Est(j);
  EXPECT_TRUE(e.saturated);
  EXPECT_NE(e.bottleneck.find("exceeds"), std::string::npos) << e.bottleneck;
  j.serving.request_rate = 0.3 * most;
  const ServingEstimate ok = Est(j);
  EXPECT_FALSE(ok.saturated);
  EXPECT_NEAR(ok.requests_per_s, 0.3 * most, 1e-6 * most);
}

// S§7 the length lists: fixed without a p90; else the stated mean and (close to) the stated p90,
// every request a different quantile, not sorted by length.
TEST(ServingBatch, RequestLengthsKeepMeanAndP90) {
  const std::vector<double> fixed = RequestLengths(200, 0, 100, 0.618);
  for (double v : fixed) EXPECT_EQ(v, 200);
  const std::vector<double> v = RequestLengths(200, 400, 1000, 0.618);
  double sum = 0;
  for (double x : v) {
    sum += x;
    EXPECT_GE(x, 1);
  }
  EXPECT_NEAR(sum / 1000, 200, 1.0);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NEAR(sorted[899], 400, 40);
  EXPECT_NE(v, sorted);
  EXPECT_GT(sorted.back(), 3 * sorted[499]);  // a long tail
}

Job BatchJob(int64_t n) {
  Job j = ServingJob("llama-3-8b", "h100");
  j.serving.load = ServingLoad::kNumRequests;
  j.serving.num_requests = n;
  j.serving.input_len = 200, j.serving.output_len = 200;
  return j;
}

// S§7 a batch: every request is served (tokens / makespan), the first ones get their first token
// before the batch ends, and the tail of a spread of lengths stretches the makespan.
TEST(ServingBatch, SimulatesEveryRequest) {
  Job j = BatchJob(1000);
  const ServingEstimate e = Est(j);
  ASSERT_TRUE(e.fits);
  EXPECT_GT(e.simulated_steps, 200);
  EXPECT_GT(e.makespan_s, 0);
  EXPECT_NEAR(e.output_tokens_per_s, 1000 * 200 / e.makespan_s, 1e-6 * e.output_tokens_per_s);
  EXPECT_NEAR(e.requests_per_s, 1000 / e.makespan_s, 1e-9 * e.requests_per_s);
  EXPECT_LT(e.ttft_s.mean, e.makespan_s);
  EXPECT_GE(e.ttft_s.p90, e.ttft_s.mean * 0.999);
  EXPECT_GT(e.tpot_s.mean, 0);
  EXPECT_NE(e.bottleneck.find("1000 requests"), std::string::npos) << e.bottleneck;
  j.serving.output_len_p90 = 450;
  const ServingEstimate spread = Est(j);
  EXPECT_LT(spread.output_tokens_per_s, e.output_tokens_per_s);
}

// S§7 against the steady state: a long batch of fixed lengths approaches the full engine's
// throughput (S§4 max_throughput) from below (the ramp-up and the drain cost time).
TEST(ServingBatch, LongBatchApproachesSteadyState) {
  Job j = BatchJob(4000);
  j.serving.max_num_seqs = 256;
  const ServingEstimate batch = Est(j);
  j.serving.load = ServingLoad::kMaxThroughput;
  const ServingEstimate steady = Est(j);
  EXPECT_LT(batch.output_tokens_per_s, steady.output_tokens_per_s * 1.05);
  EXPECT_GT(batch.output_tokens_per_s, steady.output_tokens_per_s * 0.6);
}

// S§7 a small KV cache: admission waits for room (and decodes preempt the newest), so fewer
// sequences run and the batch takes longer; every request still finishes.
TEST(ServingBatch, KvCacheLimitsTheBatch) {
  Job j = BatchJob(500);
  j.serving.input_len = 1000, j.serving.output_len = 500;
  const ServingEstimate roomy = Est(j);
  j.serving.gpu_memory_utilization = 0.25;
  const ServingEstimate tight = Est(j);
  ASSERT_TRUE(tight.fits) << tight.fit_problem;
  EXPECT_LT(tight.concurrency, roomy.concurrency);
  EXPECT_GT(tight.makespan_s, roomy.makespan_s);
  EXPECT_NEAR(tight.output_tokens_per_s * tight.makespan_s, 500 * 500, 1.0);
}

// S§7 more requests in the batch never lower the mean TPOT (more sequences share each step).
TEST(ServingProperty, LargerBatchNeverLowersTpot) {
  double last = 0;
  for (int64_t n : {1, 4, 16, 64, 256}) {
    const ServingEstimate e = Est(BatchJob(n));
    EXPECT_GE(e.tpot_s.mean, last * (1 - 1e-9)) << n << " requests";
    last = e.tpot_s.mean;
  }
}

}  // namespace
}  // namespace gpuplan
