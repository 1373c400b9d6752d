// Fine-tuning step terms (docs/model/finetune.md, FT§n): each test checks a direction or a value
// computed from the page's formula, never a copied prediction.
#include <gtest/gtest.h>

#include "../test_util.h"

#include <cmath>
#include <string>

#include "gpuplan/finetune.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

using testing_util::Hw;

Job Lora(const std::string& training, const std::string& gpu = "a100-sxm-80gb") {
  return MakeJob("model: {preset: llama-2-7b}\ntraining: {" + training + "}\ncluster: {gpu: " + gpu + ", num_gpus: 1}\n");
}

TEST(Finetune, PaddingToMaxTrainsOnlyTheSampleTokens) {
  Job packed = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: lora, seq_len: 1024, samples: 1000, tokens_per_sample: 256}\n");
  Job padded = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: lora, seq_len: 1024, tokens_per_sample: 256, padding: max_length}\n");
  EXPECT_EQ(UsefulTokensPerSequence(packed.training), 1024);
  EXPECT_EQ(UsefulTokensPerSequence(padded.training), 256);
  EXPECT_EQ(ComputeSeqLen(padded.training), 1024);
}

// FT§1: the adapter GEMMs' FLOPs are 2·T·r·(in + out) forward and twice that backward per matrix.
TEST(Finetune, AdapterFlopsFollowTheRankAndTheTargets) {
  Job j = Lora("method: lora, seq_len: 1024, lora: {rank: 16, targets: [q_proj, v_proj]}");
  const double T = 1024;
  const AdapterCost c = AdapterLayerCost(j, Hw(j), T);
  const double per_matrix = 2 * T * 16 * (4096 + 4096);  // llama-2-7b: q and v are 4096 x 4096
  EXPECT_DOUBLE_EQ(c.fwd_flops, 2 * per_matrix);
  EXPECT_DOUBLE_EQ(c.bwd_flops, 2 * 2 * per_matrix);
  EXPECT_EQ(c.fwd_gemms, 4);
  EXPECT_EQ(c.bwd_gemms, 8);
  EXPECT_GT(c.fwd_s, 0);
  EXPECT_GT(c.bwd_s, c.fwd_s);  // four GEMMs against two
}

TEST(Finetune, AdapterTimeGrowsWithRankAndTargets) {
  auto cost = [](const std::string& lora) {
    Job j = Lora("method: lora, seq_len: 2048, lora: {" + lora + "}");
    const AdapterCost c = AdapterLayerCost(j, Hw(j), 2048);
    return c.fwd_s + c.bwd_s;
  };
  EXPECT_LT(cost("rank: 8, targets: [q_proj, v_proj]"), cost("rank: 128, targets: [q_proj, v_proj]"));
  EXPECT_LT(cost("rank: 16, targets: [q_proj, v_proj]"), cost("rank: 16, targets: [q_proj, k_proj, v_proj, o_proj]"));
  EXPECT_LT(cost("rank: 16, targets: [q_proj, k_proj, v_proj, o_proj]"), cost("rank: 16, targets: [all-linear]"));
  // And the step: more adapted matrices, a slower step.
  Job few = Lora("method: lora, seq_len: 2048, lora: {rank: 16, targets: [q_proj, v_proj]}");
  Job all = Lora("method: lora, seq_len: 2048, lora: {rank: 16, targets: [all-linear]}");
  EXPECT_LT(EstimateStep(few, Hw(few)).step_time_s, EstimateStep(all, Hw(all)).step_time_s);
  // A full fine-tune has no adapters.
  Job full = Lora("method: full, seq_len: 2048");
  EXPECT_EQ(AdapterLayerCost(full, Hw(full), 2048).fwd_s, 0);
}

// FT§2: DoRA adds the weight norm of W + s·BA and the magnitude rescale to every adapted matrix.
TEST(Finetune, DoraIsSlowerThanLora) {
  Job lora = Lora("method: lora, seq_len: 512, micro_batch: 4, lora: {rank: 32, targets: [q_proj, v_proj]}");
  Job dora = Lora("method: dora, seq_len: 512, micro_batch: 4, lora: {rank: 32, targets: [q_proj, v_proj]}");
  const AdapterCost l = AdapterLayerCost(lora, Hw(lora), 2048), d = AdapterLayerCost(dora, Hw(dora), 2048);
  EXPECT_GT(d.fwd_s, l.fwd_s);
  EXPECT_GT(d.bwd_s, l.bwd_s);
  EXPECT_GT(d.fwd_flops, l.fwd_flops);
  EXPECT_GT(EstimateStep(dora, Hw(dora)).step_time_s, EstimateStep(lora, Hw(lora)).step_time_s);
}

// FT§3: NF4 moves 0.5 B of codes + the double-quantized absmax and writes 16 bits per weight, at
// dequant_eff.nf4 of the memory bandwidth; llama-2-7b holds 4·4096² + 3·4096·11008 linear weights
// per layer.
TEST(Finetune, Nf4DequantizationIsMemoryBound) {
  Job q = Lora("method: qlora, seq_len: 2048");
  const HardwareContext hw = Hw(q);
  const double params = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008;
  const double bytes = 0.5 + 1.0 / 64 + 4.0 / (64 * 256) + 2;
  const double expect = params * bytes / (*hw.gpu.mem_bw_bytes_per_s * hw.cal.Get("dequant_eff.nf4"));
  EXPECT_NEAR(DequantPassTime(q, hw), expect, 1e-9 * expect);
  // Forward and backward dequantize; a full recompute dequantizes once more.
  EXPECT_EQ(DequantPassesPerMicroBatch(q), 2);
  Job qr = Lora("method: qlora, seq_len: 2048, recompute: full");
  EXPECT_EQ(DequantPassesPerMicroBatch(qr), 3);
  // GPTQ's torch path keeps the dequantized weight for backward: one pass fewer.
  Job g = Lora("method: qlora, quant: gptq, seq_len: 2048, recompute: full");
  EXPECT_EQ(DequantPassesPerMicroBatch(g), 2);
  Job lora = Lora("method: lora, seq_len: 2048");
  EXPECT_EQ(DequantLayerTime(lora, Hw(lora)), 0);
}

TEST(Finetune, QloraIsSlowerThanLoraByTheDequantTerm) {
  for (const char* extra : {"", ", recompute: full", ", quant: gptq, recompute: full", ", quant: awq", ", quant: int8"}) {
    Job lora = Lora(std::string("method: lora, seq_len: 4096") + (std::string(extra).find("recompute") != std::string::npos ? ", recompute: full" : ""));
    Job qlora = Lora(std::string("method: qlora, seq_len: 4096") + extra);
    const HardwareContext hw = Hw(qlora);
    const StepEstimate l = EstimateStep(lora, Hw(lora)), q = EstimateStep(qlora, hw);
    EXPECT_GT(q.step_time_s, l.step_time_s) << extra;
    // The gap is the dequantization: every layer, every micro-batch, each pass that dequantizes.
    const double gap = static_cast<double>(q.grad_accum) * qlora.arch.layers * DequantPassesPerMicroBatch(qlora) *
                       DequantPassTime(qlora, hw) * hw.k.framework_overhead;
    EXPECT_NEAR(q.step_time_s - l.step_time_s, gap, 0.02 * gap) << extra;
  }
}

// FT§4: the maximum-entropy length law on [0, cap] with a given mean.
TEST(Finetune, ExpectedLongestSampleMatchesClosedForms) {
  EXPECT_DOUBLE_EQ(ExpectedLongestSample(300, 1024, 1), 300);     // one sample: its mean
  EXPECT_DOUBLE_EQ(ExpectedLongestSample(2000, 1024, 8), 1024);   // at the cap
  // mean = cap/2: the law is uniform, and the longest of 2 uniforms on [0, c] averages 2c/3.
  EXPECT_NEAR(ExpectedLongestSample(512, 1024, 2), 1024.0 * 2 / 3, 0.5);
  // Far below the cap the law is exponential: E[max of n] = mean x (1 + 1/2 + ... + 1/n).
  EXPECT_NEAR(ExpectedLongestSample(100, 100000, 4), 100 * (1 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4), 1.0);
  // A mean above half the cap (rising density): still between the mean and the cap.
  const double high = ExpectedLongestSample(900, 1024, 4);
  EXPECT_GT(high, 900);
  EXPECT_LT(high, 1024);
  // More samples per micro-batch, a longer longest one; never past the cap.
  double prev = 0;
  for (int64_t n : {1, 2, 4, 8, 16, 64}) {
    const double v = ExpectedLongestSample(200, 768, n);
    EXPECT_GT(v, prev);
    EXPECT_LE(v, 768);
    prev = v;
  }
}

TEST(Finetune, PaddingWastesComputeByTheComputedRatio) {
  const std::string base = "method: lora, seq_len: 2048, micro_batch: 8, tokens_per_sample: 256";
  Job packed = Lora(base + ", samples: 1000");
  Job max_len = Lora(base + ", padding: max_length");
  Job longest = Lora(base + ", padding: longest");
  const StepEstimate p = EstimateStep(packed, Hw(packed)), m = EstimateStep(max_len, Hw(max_len)),
                     l = EstimateStep(longest, Hw(longest));
  // Packed: every computed token is a sample token. Padded to max: 256 of every 2048.
  EXPECT_DOUBLE_EQ(p.useful_tokens_per_s_per_gpu, p.tokens_per_s_per_gpu);
  EXPECT_NEAR(m.useful_tokens_per_s_per_gpu / m.tokens_per_s_per_gpu, 256.0 / 2048, 1e-12);
  // Same step work when padded to max as packed, so useful throughput drops by the same ratio.
  EXPECT_NEAR(m.useful_tokens_per_s_per_gpu / p.useful_tokens_per_s_per_gpu, 256.0 / 2048, 1e-9);
  // Padded to the longest: computed at the expected longest of 8, between the two.
  const double s = ComputeSeqLen(longest.training);
  EXPECT_NEAR(s, ExpectedLongestSample(256, 2048, 8), 1e-9);
  EXPECT_GT(s, 256);
  EXPECT_LT(s, 2048);
  EXPECT_NEAR(l.useful_tokens_per_s_per_gpu / l.tokens_per_s_per_gpu, 256.0 / s, 1e-12);
  EXPECT_GT(l.useful_tokens_per_s_per_gpu, m.useful_tokens_per_s_per_gpu);
  EXPECT_LT(l.useful_tokens_per_s_per_gpu, p.useful_tokens_per_s_per_gpu);
}

// FT§5: bytes per parameter of the optimizer step.
TEST(Finetune, OptimizerBytesFollowTheOptimizerAndMaster) {
  auto bytes = [](const std::string& training) {
    Job j = Lora("method: full, " + training);
    return OptimizerStepBytesPerParam(j, GradBytesPerParam(j), WeightBytesPerParam(j));
  };
  // The C§5 anchor: fused mixed-precision AdamW reads w, g, m, v, master and writes w, m, v, master.
  EXPECT_DOUBLE_EQ(bytes("framework: torchtitan"), 30);
  EXPECT_DOUBLE_EQ(bytes("framework: torchtitan, master_weights: none"), 14);  // bf16 p, g, m, v
  EXPECT_GT(bytes("framework: hf-trainer"), bytes("framework: torchtitan"));    // foreach temporaries
  EXPECT_LT(bytes("framework: torchtitan, optimizer: adamw-8bit"), bytes("framework: torchtitan"));
  EXPECT_DOUBLE_EQ(bytes("optimizer: paged-adamw-8bit"), bytes("optimizer: adamw-8bit"));
  EXPECT_GT(bytes("framework: torchtitan, optimizer: adafactor"), bytes("framework: torchtitan"));  // fp32 ops, unfused
  EXPECT_LT(bytes("master_weights: none"), bytes(""));
}

TEST(Finetune, OptimizerInBackwardMovesTheSameBytes) {
  Job once = Lora("method: full, seq_len: 1024, micro_batch: 1, global_batch: 1, framework: torchtune");
  Job fused = Lora("method: full, seq_len: 1024, micro_batch: 1, global_batch: 1, framework: torchtune, optimizer_in_backward: true");
  const double p = 1e9;
  EXPECT_DOUBLE_EQ(OptimizerStepTime(fused, Hw(fused), p, 2, 2), OptimizerStepTime(once, Hw(once), p, 2, 2));
  // The 8-bit optimizer's step is shorter than AdamW's; master_weights none shorter still than fp32.
  Job eight = Lora("method: full, seq_len: 1024, framework: torchtune, optimizer: adamw-8bit");
  EXPECT_LT(OptimizerStepTime(eight, Hw(eight), p, 2, 2), OptimizerStepTime(once, Hw(once), p, 2, 2));
  Job pure = Lora("method: full, seq_len: 1024, framework: torchtune, master_weights: none");
  EXPECT_LT(OptimizerStepTime(pure, Hw(pure), p, 2, 2), OptimizerStepTime(once, Hw(once), p, 2, 2));
}

// FT§6: offloaded activations cross PCIe on a side stream; compute hides them.
TEST(Finetune, ActivationOffloadHidesBehindCompute) {
  Job j = Lora("method: lora, seq_len: 4096, activation_offload: true");
  const HardwareContext hw = Hw(j);
  const double exposed = ActivationOffloadTime(j, hw, 32);
  EXPECT_GT(exposed, 0);
  EXPECT_NEAR(ActivationOffloadTime(j, hw, 32, exposed / 4, exposed / 4), exposed / 2, 1e-9 * exposed);
  EXPECT_EQ(ActivationOffloadTime(j, hw, 32, exposed, exposed), 0);
  Job off = Lora("method: lora, seq_len: 4096");
  EXPECT_EQ(ActivationOffloadTime(off, Hw(off), 32), 0);
}

}  // namespace
}  // namespace gpuplan
