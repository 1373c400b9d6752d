// Invariants of the op list (include/gpuplan/ops.h): its FLOPs equal the closed forms of
// docs/model/compute.md, the passes fold it as the page says, and EstimateStep's FLOPs are the fold.
#include <gtest/gtest.h>

#include "../test_util.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gpuplan/ops.h"
#include "gpuplan/report.h"

namespace gpuplan {
namespace {

using testing_util::Hw;
using testing_util::MakeJob;

Job PresetJob(const std::string& preset, const std::string& training = "", const std::string& parallel = "{tp: 2}") {
  return MakeJob("model: {preset: " + preset + "}\ntraining: {seq_len: 4096, micro_batch: 2, global_batch: 64" +
                 (training.empty() ? "" : ", " + training) + "}\nparallel: " + parallel +
                 "\ncluster: {gpu: h100, num_gpus: 8}\n");
}

double Sum(const std::vector<Op>& ops, double Op::*field, OpKind only, bool all_kinds = false) {
  double s = 0;
  for (const Op& op : ops)
    if (all_kinds || op.kind == only) s += op.*field;
  return s;
}
double SumAll(const std::vector<Op>& ops, double Op::*field) { return Sum(ops, field, OpKind::kGemm, true); }

// compute.md §2: 2T(h(q + 2kv) + q·h)/t + (1 − φ)·2T·M·h·f/t + φ·(2R·M·h·f_moe/t + 2T·h·E) + 4·T·s·q/t·c.
double ClosedFormForwardFlops(const Job& j, double T, double s) {
  const Arch& a = j.arch;
  const double t = static_cast<double>(j.parallel.tp), h = static_cast<double>(a.hidden);
  const double q = static_cast<double>(a.QDim()), kv = static_cast<double>(a.KvDim()), M = a.MlpMatrices();
  const double phi = a.IsMoe() ? static_cast<double>(a.MoeLayers()) / a.layers : 0;
  const double R = T * (a.experts_per_token + a.shared_experts);
  const double c = j.training.flash_attention ? 0.5 : 1.0;
  return 2 * T * (h * (q + 2 * kv) + q * h) / t + (1 - phi) * 2 * T * M * h * a.Ffn() / t +
         phi * (2 * R * M * h * a.MoeFfn() / t + 2 * T * h * a.experts) + 4 * T * s * q / t * c;
}

// compute.md §2 with a window: a sliding layer's causal queries see w - w^2/(2s) keys on average
// (s > w), a full layer s/2; the attention core of the list is 4·T·q/t times their layer average.
TEST(OpsWindowed, AttentionCoreCountsTheWindow) {
  Job j = PresetJob("llama-3-8b", "flash_attention: true");
  j.arch.attn_window = 1024;
  j.arch.windowed_layers = j.arch.layers / 2;
  const double T = MicroBatchTokens(j), s = 4096, w = 1024, t = static_cast<double>(j.parallel.tp);
  const double keys = 0.5 * (s / 2) + 0.5 * (w - w * w / (2 * s));
  const std::vector<Op> ops = LayerOps(j, Hw(j), T, s);
  EXPECT_NEAR(Sum(ops, &Op::fwd_flops, OpKind::kAttention) / (4 * T * keys * j.arch.QDim() / t), 1.0, 1e-12);
  Job eager = j;
  eager.training.flash_attention = false;  // eager attention computes every key, then masks
  const std::vector<Op> e = LayerOps(eager, Hw(eager), T, s);
  EXPECT_NEAR(Sum(e, &Op::fwd_flops, OpKind::kAttention) / (4 * T * s * j.arch.QDim() / t), 1.0, 1e-12);
}

class OpsClosedForm : public ::testing::TestWithParam<const char*> {};

TEST_P(OpsClosedForm, ForwardFlopsOfTheListAreTheClosedForm) {
  for (const char* attn : {"flash_attention: true", "flash_attention: false"}) {
    const Job j = PresetJob(GetParam(), attn);
    const double T = MicroBatchTokens(j), s = static_cast<double>(j.training.seq_len);
    const std::vector<Op> ops = LayerOps(j, Hw(j), T, s);
    EXPECT_NEAR(SumAll(ops, &Op::fwd_flops) / ClosedFormForwardFlops(j, T, s), 1.0, 1e-12) << GetParam() << " " << attn;
  }
}

TEST_P(OpsClosedForm, BackwardGemmsAreTwiceForwardAndOnceForAFrozenBase) {
  const Job full = PresetJob(GetParam());
  const std::vector<Op> f = LayerOps(full, Hw(full), MicroBatchTokens(full), 4096);
  EXPECT_NEAR(Sum(f, &Op::bwd_flops, OpKind::kGemm) / Sum(f, &Op::fwd_flops, OpKind::kGemm), 2.0, 1e-12);
  EXPECT_NEAR(Sum(f, &Op::bwd_flops, OpKind::kAttention) / Sum(f, &Op::fwd_flops, OpKind::kAttention),
              AttentionBackwardFactor(full.training), 1e-12);
  const Job lora = PresetJob(GetParam(), "method: lora");
  const std::vector<Op> l = LayerOps(lora, Hw(lora), MicroBatchTokens(lora), 4096);
  EXPECT_NEAR(Sum(l, &Op::bwd_flops, OpKind::kGemm) / Sum(l, &Op::fwd_flops, OpKind::kGemm), 1.0, 1e-12);
  EXPECT_GT(Sum(l, &Op::fwd_flops, OpKind::kAdapter), 0);  // LoRA is an op of its own
}

// Dense MHA, GQA, MoE, MLA + MoE (DeepSeek-V2-Lite, full-rank q) and MLA with a q LoRA (DeepSeek-V3).
INSTANTIATE_TEST_SUITE_P(Presets, OpsClosedForm,
                         ::testing::Values("llama-2-7b", "llama-3-8b", "mixtral-8x7b", "deepseek-v2-lite", "deepseek-v3"));

LayerPasses Fold(const Job& j) {
  const HardwareContext hw = Hw(j);
  return FoldLayer(LayerOps(j, hw, MicroBatchTokens(j), 4096), j, hw.k);
}

TEST(OpsPasses, FullRecomputeAddsExactlyTheForward) {
  const LayerPasses p = Fold(PresetJob("llama-3-8b", "recompute: full"));
  EXPECT_DOUBLE_EQ(p.recompute_s, p.fwd_s);
  EXPECT_DOUBLE_EQ(p.recompute_flops, p.fwd_flops);
  EXPECT_EQ(Fold(PresetJob("llama-3-8b", "recompute: none")).recompute_s, 0);
}

// H§3 a measured per-layer time scales the layer's GPU work only: FLOPs, host time and the head stay.
TEST(OpsPasses, LayerTimeScaleScalesTheLayersGpuTimeOnly) {
  const Job j = PresetJob("llama-3-8b", "recompute: none");
  HardwareContext hw = Hw(j);
  const LayerPasses base = FoldLayer(LayerOps(j, hw, MicroBatchTokens(j), 4096), j, hw.k);
  const std::vector<Op> head = HeadOps(j, hw, MicroBatchTokens(j));
  hw.k.layer_time_scale = 2.5;
  const LayerPasses scaled = FoldLayer(LayerOps(j, hw, MicroBatchTokens(j), 4096), j, hw.k);
  EXPECT_NEAR(scaled.gpu_fwd_s, 2.5 * base.gpu_fwd_s, 1e-15);
  EXPECT_NEAR(scaled.gpu_bwd_s, 2.5 * base.gpu_bwd_s, 1e-15);
  EXPECT_DOUBLE_EQ(scaled.host_fwd_s, base.host_fwd_s);
  EXPECT_DOUBLE_EQ(scaled.fwd_flops, base.fwd_flops);
  const std::vector<Op> head2 = HeadOps(j, hw, MicroBatchTokens(j));
  ASSERT_EQ(head.size(), head2.size());
  for (size_t i = 0; i < head.size(); ++i) EXPECT_DOUBLE_EQ(head[i].fwd_s, head2[i].fwd_s);
}

TEST(OpsPasses, SelectiveRecomputeAddsLessThanFull) {
  for (const char* attn : {"flash_attention: true", "flash_attention: false"}) {
    const LayerPasses full = Fold(PresetJob("llama-3-8b", std::string("recompute: full, ") + attn));
    const LayerPasses sel = Fold(PresetJob("llama-3-8b", std::string("recompute: selective, ") + attn));
    EXPECT_GT(sel.recompute_s, 0) << attn;
    EXPECT_LT(sel.recompute_s, full.recompute_s) << attn;
    EXPECT_LT(sel.recompute_flops, full.recompute_flops) << attn;
  }
}

TEST(OpsPasses, MechanismsAreOpsOfTheirOwn) {
  auto names = [](const Job& j) {
    std::vector<std::string> n;
    for (const Op& op : LayerOps(j, Hw(j), MicroBatchTokens(j), 4096)) n.push_back(std::string(op.name));
    return n;
  };
  auto has = [](const std::vector<std::string>& n, const std::string& x) {
    return std::find(n.begin(), n.end(), x) != n.end();
  };
  EXPECT_FALSE(has(names(PresetJob("llama-3-8b")), "fp8_casts"));
  EXPECT_TRUE(has(names(PresetJob("llama-3-8b", "precision: fp8")), "fp8_casts"));
  EXPECT_TRUE(has(names(PresetJob("llama-3-8b", "method: lora")), "lora_adapters"));
  EXPECT_TRUE(has(names(PresetJob("llama-3-8b", "method: qlora")), "dequant_base"));
  EXPECT_TRUE(has(names(PresetJob("mixtral-8x7b")), "moe_router"));
  EXPECT_FALSE(has(names(PresetJob("mixtral-8x7b")), "mlp_up"));  // every layer is MoE
  for (const Op& op : LayerOps(PresetJob("gpt2"), Hw(PresetJob("gpt2")), 8192, 4096)) {
    EXPECT_FALSE(op.section.empty()) << op.name;
    EXPECT_GE(op.fwd_s, 0) << op.name;
    EXPECT_GE(op.bwd_s, op.fwd_s) << op.name;
  }
}

TEST(OpsPasses, AttendedKeysAreHalfTheSequenceForCausalFlash) {
  EXPECT_DOUBLE_EQ(AttendedKeys(PresetJob("llama-3-8b", "flash_attention: true"), 4096), 2048);
  EXPECT_DOUBLE_EQ(AttendedKeys(PresetJob("llama-3-8b", "flash_attention: false"), 4096), 4096);
}

// EstimateStep's hardware FLOPs are the fold: m·(L_s·(F_fwd + F_bwd + F_rc)·G + F_head·G/p).
TEST(OpsPasses, EstimateStepFlopsAreTheFold) {
  for (const char* training : {"recompute: full", "recompute: selective", "method: lora", "precision: fp8"}) {
    const Job j = PresetJob("llama-3-8b", training, "{tp: 2, pp: 2}");
    const HardwareContext hw = Hw(j);
    const double T = MicroBatchTokens(j);
    const LayerPasses p = FoldLayer(LayerOps(j, hw, T, 4096), j, hw.k);
    double head = 0;
    for (const Op& op : HeadOps(j, hw, T)) head += op.fwd_flops + op.bwd_flops;
    const StepEstimate e = EstimateStep(j, hw);
    const double L = (j.arch.layers + 1) / 2, G = 8, m = static_cast<double>(e.grad_accum);
    const double fold = m * (L * (p.fwd_flops + p.bwd_flops + p.recompute_flops) * G + head * G / 2);
    EXPECT_NEAR(e.hardware_flops_per_step / fold, 1.0, 1e-12) << training;
    EXPECT_NEAR(e.recompute_flops_per_step, m * L * p.recompute_flops * G, 1e-6 * fold) << training;
  }
}

// The step's compute is the fold of the passes: more layers' work (recompute) never makes it faster.
TEST(OpsPasses, RecomputeNeverShortensTheStep) {
  const double none = EstimateStep(PresetJob("llama-3-8b", "recompute: none"), Hw(PresetJob("llama-3-8b"))).breakdown.compute_s;
  const Job sel = PresetJob("llama-3-8b", "recompute: selective"), full = PresetJob("llama-3-8b", "recompute: full");
  EXPECT_GT(EstimateStep(sel, Hw(sel)).breakdown.compute_s, none);
  EXPECT_GT(EstimateStep(full, Hw(full)).breakdown.compute_s, EstimateStep(sel, Hw(sel)).breakdown.compute_s);
}

// `gpuplan estimate --ops`: every op is printed, within 120 columns, and the JSON sums to the fold.
TEST(OpsReport, TextListsEveryOpWithin120ColumnsAndJsonSumsToTheFold) {
  const Job j = PresetJob("mixtral-8x7b", "precision: fp8, recompute: selective");
  const HardwareContext hw = Hw(j);
  const std::string text = OpsToText(j, hw);
  for (const Op& op : LayerOps(j, hw, MicroBatchTokens(j), 4096)) EXPECT_NE(text.find(std::string(op.name) + " "), std::string::npos) << op.name;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    EXPECT_LE(nl - start, 120u) << text.substr(start, nl - start);
  const nlohmann::json js = OpsToJson(j, hw);
  double fwd = 0;
  for (const auto& op : js["layer"]) fwd += op["fwd_flops"].get<double>();
  EXPECT_NEAR(fwd / js["layer_passes"]["fwd_flops"].get<double>(), 1.0, 1e-12);
  EXPECT_EQ(js["head"].size(), 2u);
}

}  // namespace
}  // namespace gpuplan
