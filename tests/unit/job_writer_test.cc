// JobToYaml / JobToKeys: the job written back reads back to the same job (the keys `import` prints,
// every `plan --json` row carries, and `export PLAN.json` reads back).
#include <gtest/gtest.h>

#include <random>

#include "gpuplan/arch.h"
#include "gpuplan/job.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

std::map<std::string, std::string> Keys(const Job& j) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : JobToKeys(j)) m[k] = v;
  return m;
}

// Writes the job, reads it back, writes again: the same keys, and the fields that matter equal.
void ExpectRoundTrip(const Job& job) {
  const std::string yaml = JobToYaml(job);
  auto back = ParseJobText(yaml, "written.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
  Job b = *back;
  ASSERT_TRUE(FinalizeJob(b).ok()) << yaml;
  EXPECT_EQ(Keys(job), Keys(b)) << yaml;
  EXPECT_EQ(b.parallel.tp, job.parallel.tp);
  EXPECT_EQ(b.parallel.pp, job.parallel.pp);
  EXPECT_EQ(b.parallel.dp, job.parallel.dp);
  EXPECT_EQ(b.parallel.vpp, job.parallel.vpp);
  EXPECT_EQ(b.parallel.zero, job.parallel.zero);
  EXPECT_EQ(b.parallel.offload, job.parallel.offload);
  EXPECT_EQ(b.training.micro_batch, job.training.micro_batch);
  EXPECT_EQ(b.training.global_batch, job.training.global_batch);
  EXPECT_EQ(b.training.precision, job.training.precision);
  EXPECT_EQ(b.training.tokens, job.training.tokens);
  EXPECT_EQ(b.arch.layers, job.arch.layers);
  EXPECT_EQ(b.arch.hidden, job.arch.hidden);
  EXPECT_EQ(b.cluster.num_gpus, job.cluster.num_gpus);
}

TEST(JobWriter, PresetIsWrittenByName) {
  const Job j = MakeJob("model: {preset: llama-3-8b}\ncluster: {num_gpus: 8}\n");
  const auto k = Keys(j);
  EXPECT_EQ(k.at("model.preset"), "llama-3-8b");
  EXPECT_EQ(k.count("model.layers"), 0u);
  ExpectRoundTrip(j);
}

TEST(JobWriter, CustomShapeIsWrittenField_by_field) {
  const Job j = MakeJob(
      "model: {name: mine, layers: 12, hidden: 1024, heads: 16, kv_heads: 4, ffn_hidden: 2816, vocab: 32000}\n"
      "cluster: {num_gpus: 4, gpus_per_node: 4}\n");
  const auto k = Keys(j);
  EXPECT_EQ(k.count("model.preset"), 0u);
  EXPECT_EQ(k.at("model.layers"), "12");
  EXPECT_EQ(k.at("model.kv_heads"), "4");
  ExpectRoundTrip(j);
}

TEST(JobWriter, AdapterAndFusedOpsAndQuotedValues) {
  const Job j = MakeJob(
      "model: {preset: llama-2-7b}\n"
      "training: {method: qlora, quant: gptq, lora: {rank: 64, alpha: 16, targets: [q_proj, v_proj]}, fused_ops: [norm, loss], tokens: 1.5e8}\n"
      "parallel: {offload: optimizer+params, zero: 3}\ncluster: {num_gpus: 2, gpu: a100-sxm-80gb}\n");
  const auto k = Keys(j);
  EXPECT_EQ(k.at("training.lora.targets"), "q_proj,v_proj");
  EXPECT_EQ(k.at("training.fused_ops"), "norm,loss");
  EXPECT_EQ(std::stod(k.at("training.tokens")), 1.5e8);
  ExpectRoundTrip(j);
}

// Property: random pinned layouts on random presets round-trip.
TEST(JobWriter, RandomJobsRoundTrip) {
  std::mt19937 rng(20261201);
  const std::vector<std::string> presets = {"llama-3-8b", "llama-3-70b", "llama-2-7b", "mixtral-8x7b"};
  auto pick = [&](std::vector<int64_t> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  for (int i = 0; i < 200; ++i) {
    const int64_t tp = pick({1, 2, 4, 8}), pp = pick({1, 2, 4}), dp = pick({1, 2, 3, 8}), mb = pick({1, 2, 4});
    const int64_t accum = pick({1, 2, 8});
    const int zero = static_cast<int>(pick({0, 1, 2, 3}));
    std::string yaml = "model: {preset: " + presets[static_cast<size_t>(pick({0, 1, 2, 3}))] + "}\n";
    yaml += "training: {micro_batch: " + std::to_string(mb) + ", global_batch: " + std::to_string(mb * dp * accum) +
            ", precision: " + std::string(pick({0, 1}) ? "bf16" : "fp16") + ", recompute: " + (pick({0, 1}) ? "full" : "none") + "}\n";
    yaml += "parallel: {tp: " + std::to_string(tp) + ", pp: " + std::to_string(pp) + ", dp: " + std::to_string(dp) +
            ", zero: " + std::to_string(zero) + ", sequence_parallel: " + (tp > 1 ? "true" : "false") + "}\n";
    yaml += "cluster: {gpus_per_node: 8}\n";
    auto parsed = ParseJobText(yaml, "random.yaml");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << yaml;
    Job j = *parsed;
    if (!FinalizeJob(j).ok()) continue;  // e.g. a layout the model's layers do not split into
    ExpectRoundTrip(j);
  }
}

// The serving section reads back to the same serving spec, the load by the key that chose it.
void ExpectServingRoundTrip(const Job& job) {
  ExpectRoundTrip(job);
  auto back = ParseJobText(JobToYaml(job), "written.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const ServingSpec& a = job.serving;
  const ServingSpec& b = back->serving;
  EXPECT_EQ(b.engine, a.engine);
  EXPECT_EQ(b.engine_version, a.engine_version);
  EXPECT_EQ(b.weights, a.weights);
  EXPECT_EQ(b.kv_dtype, a.kv_dtype);
  EXPECT_EQ(b.gpu_memory_utilization, a.gpu_memory_utilization);
  EXPECT_EQ(b.max_model_len, a.max_model_len);
  EXPECT_EQ(b.max_num_seqs, a.max_num_seqs);
  EXPECT_EQ(b.max_num_batched_tokens, a.max_num_batched_tokens);
  EXPECT_EQ(b.input_len, a.input_len);
  EXPECT_EQ(b.output_len, a.output_len);
  EXPECT_EQ(b.input_len_p90, a.input_len_p90);
  EXPECT_EQ(b.output_len_p90, a.output_len_p90);
  EXPECT_EQ(b.load, a.load);
  EXPECT_EQ(b.concurrency, a.concurrency);
  EXPECT_EQ(b.request_rate, a.request_rate);
  EXPECT_EQ(b.num_requests, a.num_requests);
  EXPECT_EQ(b.frontend, a.frontend);
  EXPECT_EQ(b.ttft_p90_ms, a.ttft_p90_ms);
  EXPECT_EQ(b.tpot_p90_ms, a.tpot_p90_ms);
  EXPECT_EQ(b.target_output_tokens_per_s, a.target_output_tokens_per_s);
}

TEST(JobWriter, ServingSectionRoundTrips) {
  ExpectServingRoundTrip(MakeJob(
      "model: {preset: llama-3-8b}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 4}\nparallel: {tp: 2}\n"
      "serving: {engine: sglang, engine_version: '0.4', weights: fp8, kv_dtype: fp8, gpu_memory_utilization: 0.88,\n"
      "          max_model_len: 8192, max_num_seqs: 128, max_num_batched_tokens: 4096, input_len: 1500.5, output_len: 300,\n"
      "          input_len_p90: 3000, output_len_p90: 600, request_rate: 7.25, ttft_p90_ms: 500, tpot_p90_ms: 50,\n"
      "          target_output_tokens_per_s: 20000}\n"));
  ExpectServingRoundTrip(MakeJob("model: {preset: llama-3-8b}\nserving: {max_throughput: true, weights: int4-gptq}\n"));
  ExpectServingRoundTrip(MakeJob("model: {preset: llama-3-8b}\nserving: {concurrency: 16}\n"));
  ExpectServingRoundTrip(MakeJob("model: {preset: llama-3-8b}\nserving: {num_requests: 1000, output_len_p90: 450, frontend: false}\n"));
}

TEST(JobWriter, TrainingJobWritesNoServingKeys) {
  const auto k = Keys(MakeJob("model: {preset: llama-3-8b}\ncluster: {num_gpus: 8}\n"));
  for (const auto& [key, value] : k) EXPECT_NE(key.rfind("serving.", 0), 0u) << key;
}

TEST(JobWriter, ServingLoadIsWrittenByItsKey) {
  const auto k = Keys(MakeJob("model: {preset: llama-3-8b}\nserving: {request_rate: 3}\n"));
  EXPECT_EQ(k.at("serving.request_rate"), "3");
  EXPECT_EQ(k.count("serving.concurrency"), 0u);
  EXPECT_EQ(k.count("serving.max_throughput"), 0u);
}

}  // namespace
}  // namespace gpuplan
