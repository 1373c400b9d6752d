// training.framework and the framework mechanisms (docs/model/frameworks.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "../test_util.h"

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

TEST(Framework, EveryNameRoundTrips) {
  for (const auto& name : FrameworkNames()) {
    auto f = ParseFramework(name);
    ASSERT_TRUE(f.has_value()) << name;
    EXPECT_EQ(ToString(*f), name);
  }
  EXPECT_FALSE(ParseFramework("megatron-lm-typo").has_value());
}

const Catalog& Cat() {
  static const Catalog c = [] {
    auto r = LoadCatalog();
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : Catalog{};
  }();
  return c;
}

struct Estimated {
  Job job;
  HardwareContext hw;
  StepEstimate e;
};

Estimated Estimate(const std::string& yaml, const Calibration& cal = Calibration::Builtin()) {
  Estimated r;
  r.job = MakeJob(yaml);
  auto hw = ResolveHardware(r.job, Cat(), cal);
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  if (!hw.ok()) return r;
  r.hw = *hw;
  r.e = EstimateStep(r.job, r.hw);
  return r;
}

// A calibration with some built-in keys overridden (the way --calibration does it).
Calibration With(const std::string& rows) {
  // One file per process and call: ctest runs this binary's cases side by side (a shared name raced).
  static int calls = 0;
  const std::string path = ::testing::TempDir() + "framework_test_cal-" + std::to_string(::getpid()) + "-" +
                           std::to_string(++calls) + ".csv";
  std::ofstream(path) << "key,value,unit,source,date,notes\n" << rows;
  auto c = Calibration::Load(path);
  std::remove(path.c_str());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : Calibration::Builtin();
}

std::string Llama8b(const std::string& training, const std::string& gpu = "h100-sxm-80gb") {
  return "model: {preset: llama-3-8b}\ntraining: {seq_len: 4096, micro_batch: 1" + training +
         "}\ncluster: {gpu: " + gpu + ", num_gpus: 8}\nparallel: {zero: 3}\n";
}

// F§1/F§4 Transformer Engine's fused norm, rotary and SwiGLU and cuDNN attention make the same
// Llama step faster than eager PyTorch modules.
TEST(Framework, MegatronFusedKernelsBeatGenericEager) {
  const Estimated generic = Estimate(Llama8b(", framework: generic"));
  const Estimated megatron = Estimate(Llama8b(", framework: megatron"));
  EXPECT_LT(megatron.e.breakdown.compute_s, generic.e.breakdown.compute_s);
  EXPECT_GT(megatron.hw.k.flash_eff, generic.hw.k.flash_eff) << "Hopper: FA3 / cuDNN fused attention vs FA2";
  EXPECT_LT(megatron.hw.k.e_norm, generic.hw.k.e_norm);
  EXPECT_LT(megatron.hw.k.e_rope, generic.hw.k.e_rope);
}

// F§1 torch.compile fuses every pointwise chain: the elementwise constants drop to the fused ones
// and the step shrinks; a framework already fused gains nothing from the element counts.
TEST(Framework, CompileShrinksTheElementwiseTerm) {
  const Estimated eager = Estimate(Llama8b(", framework: torchtitan"));
  const Estimated compiled = Estimate(Llama8b(", framework: torchtitan, compile: true"));
  EXPECT_LT(compiled.e.breakdown.compute_s, eager.e.breakdown.compute_s);
  const Calibration& cal = Calibration::Builtin();
  EXPECT_EQ(compiled.hw.k.e_norm, cal.Get("elementwise.norm_fused"));
  EXPECT_EQ(eager.hw.k.e_norm, cal.Get("elementwise.rmsnorm_eager"));
  EXPECT_EQ(compiled.hw.k.host_ops_per_layer, cal.Get("framework.generic.compiled_host_ops_per_layer"));
  const Estimated mega = Estimate(Llama8b(", framework: megatron"));
  EXPECT_EQ(mega.hw.k.e_norm, compiled.hw.k.e_norm);
}

// H§1 the 500 W H100 96 GB runs its compute at the sustained-clock factor; the same GPU without
// the power limit is faster, and MFU stays against the catalog peak.
TEST(Framework, PowerLimitedGpuIsSlowerThanUnlimited) {
  const std::string job = Llama8b(", framework: torchtitan", "h100-sxm-96gb");
  const Estimated limited = Estimate(job);
  const Estimated unlimited = Estimate(job, With("sustained_clock_factor.h100-sxm-96gb,1,factor,,,\n"));
  EXPECT_LT(limited.hw.k.clock_factor, 1.0);
  EXPECT_GT(limited.e.step_time_s, unlimited.e.step_time_s);
  // Matmuls and attention scale by 1/clock; memory-bound work does not: the step grows by less.
  EXPECT_LT(limited.e.step_time_s / unlimited.e.step_time_s, 1 / limited.hw.k.clock_factor + 1e-9);
  EXPECT_EQ(limited.e.peak_flops, unlimited.e.peak_flops);
  EXPECT_NE(limited.hw.efficiency_note.find("sustained-clock"), std::string::npos) << limited.hw.efficiency_note;
}

// F§2 CUDA graphs remove host dispatch: a small model at micro-batch 1 (host-bound) shrinks much
// more than a large model whose kernels keep the GPU busy.
TEST(Framework, CudaGraphsShrinkASmallModelMoreThanALargeOne) {
  const Calibration graphs = With("framework.generic.cuda_graphs,1,flag,,,\n");
  auto gain = [&](const std::string& yaml) {
    return Estimate(yaml, graphs).e.step_time_s / Estimate(yaml).e.step_time_s;
  };
  const double small = gain("model: {preset: gpt2}\ntraining: {seq_len: 512, micro_batch: 1}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 1}\n");
  const double large = gain("model: {preset: llama-2-13b}\ntraining: {seq_len: 4096, micro_batch: 2}\n"
                            "cluster: {gpu: a100-sxm-80gb, num_gpus: 8}\nparallel: {zero: 3}\n");
  EXPECT_LT(small, 1.0);
  EXPECT_LE(large, 1.0);
  EXPECT_LT(small, large - 0.1) << "small " << small << " large " << large;
}

// F§2 a host-bound layer pass takes host_ops_per_layer x cpu_op_s however few tokens it has:
// with full recompute a micro-batch is at least L x (forward + recompute + 2 x backward) host passes.
TEST(Framework, HostDispatchFloorsATinyMicroBatch) {
  const Estimated r = Estimate("model: {preset: gpt2}\ntraining: {seq_len: 128, micro_batch: 1, recompute: full, framework: megatron}\n"
                         "cluster: {gpu: h100-sxm-80gb, num_gpus: 1}\n");
  const double host_pass = r.hw.k.host_ops_per_layer * r.hw.k.cpu_op_s;
  const double floor = r.job.arch.layers * 4 * host_pass * r.hw.k.framework_overhead;
  EXPECT_GE(r.e.breakdown.compute_s, floor * (1 - 1e-9));
  EXPECT_LT(r.e.breakdown.compute_s, 1.5 * floor) << "a 128-token gpt2 micro-batch is host-bound";
}

// F§6 delayed scaling takes its scale from the amax history and TE fuses the cast: fewer bytes per
// quantized element than tensorwise dynamic scaling's amax pass + cast + transpose.
TEST(Framework, DelayedScalingCastsLessThanTensorwise) {
  const Estimated tensorwise = Estimate(Llama8b(", precision: fp8, fp8_recipe: tensorwise"));
  const Estimated delayed = Estimate(Llama8b(", precision: fp8, fp8_recipe: delayed"));
  EXPECT_LT(delayed.hw.k.fp8_cast_bytes, tensorwise.hw.k.fp8_cast_bytes);
  EXPECT_LT(delayed.e.step_time_s, tensorwise.e.step_time_s);
  const Estimated bf16 = Estimate(Llama8b(""));
  EXPECT_EQ(bf16.hw.k.fp8_cast_bytes, 0.0) << "no casts outside fp8";
}

// F§3 a fused cross-entropy moves fewer bytes per logit than the fp32-upcast standard loss.
TEST(Framework, FusedLossIsCheaperThanStandard) {
  const Estimated standard = Estimate(Llama8b(", loss: standard"));
  const Estimated fused = Estimate(Llama8b(", loss: fused"));
  EXPECT_LT(fused.hw.k.loss_bytes_per_logit, standard.hw.k.loss_bytes_per_logit);
  EXPECT_LT(fused.e.step_time_s, standard.e.step_time_s);
  // llm-foundry's default is the fused loss; generic's the standard one.
  EXPECT_EQ(Estimate(Llama8b(", framework: llm-foundry")).hw.k.loss_bytes_per_logit, fused.hw.k.loss_bytes_per_logit);
}

// F§5 TE userbuffers (NeMo's default) expose 1/tp of the TP traffic under sequence parallelism.
TEST(Framework, UserbuffersExposeOneChunkOfTensorParallelTraffic) {
  const std::string job =
      "model: {preset: llama-3-70b}\ntraining: {seq_len: 4096, micro_batch: 1, framework: %s}\n"
      "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\nparallel: {tp: 8, sequence_parallel: true}\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, job.c_str(), "nemo");
  const Estimated nemo = Estimate(buf);
  std::snprintf(buf, sizeof buf, job.c_str(), "generic");
  const Estimated generic = Estimate(buf);
  ASSERT_GT(nemo.e.comm.tp_s, 0);
  EXPECT_NEAR(nemo.e.breakdown.tp_comm_s, nemo.e.comm.tp_s / 8, 1e-12);
  EXPECT_NEAR(generic.e.breakdown.tp_comm_s, generic.e.comm.tp_s * (1 - generic.hw.k.tp_overlap), 1e-12);
}

// F§4 without flash attention Megatron runs QK^T / AV as GEMMs around one fused softmax, faster
// than PyTorch's standard attention (eager_attention_eff).
TEST(Framework, MegatronFusedSoftmaxBeatsStandardAttention) {
  auto run = [](const char* fw) {
    return Estimate(std::string("model: {preset: gpt3-175b}\ntraining: {seq_len: 2048, micro_batch: 1, flash_attention: false, "
                                "recompute: full, precision: fp16, framework: ") + fw +
                    "}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 64}\nparallel: {tp: 8, pp: 8}\n");
  };
  EXPECT_LT(run("megatron").e.breakdown.compute_s, run("generic").e.breakdown.compute_s);
}

// F§1 autocast over fp32 parameters (llm-foundry's amp_bf16 + FSDP DEFAULT) adds the fp32 residual
// stream and the per-forward weight casts.
TEST(Framework, AutocastOverFp32ParamsCostsElementwiseTime) {
  const std::string mpt = "model: {preset: mpt-7b}\ntraining: {seq_len: 2048, micro_batch: 4, framework: %s}\n"
                          "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\nparallel: {zero: 3}\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, mpt.c_str(), "llm-foundry");
  const Estimated foundry = Estimate(buf);
  const Estimated off = Estimate(buf, With("framework.llm-foundry.autocast_fp32_params,0,flag,,,\n"));
  EXPECT_GT(foundry.hw.k.e_fp32_residual, 0);
  EXPECT_GT(foundry.e.breakdown.compute_s, off.e.breakdown.compute_s);
}

// H§2 every constant borrowed or assumed for a GPU is named; a GPU measured throughout has none.
TEST(Framework, EfficiencyNoteNamesWhatIsNotMeasured) {
  const Estimated h100 = Estimate(Llama8b(""));
  EXPECT_EQ(h100.hw.efficiency_note, "");
  const Estimated b200 = Estimate(Llama8b("", "b200"));
  EXPECT_NE(b200.hw.efficiency_note.find("b200"), std::string::npos);
  EXPECT_NE(b200.hw.efficiency_note.find("attention efficiency"), std::string::npos) << b200.hw.efficiency_note;
  EXPECT_EQ(b200.hw.efficiency_note.find("matmul ceiling"), std::string::npos) << "B200's MAMF is measured";
  const Estimated l40s = Estimate(Llama8b("", "l40s"));
  EXPECT_NE(l40s.hw.efficiency_note.find("matmul ceiling"), std::string::npos) << l40s.hw.efficiency_note;
}

// Blackwell: its own MAMF, and attention no better than Hopper's share of the peak (no
// measurement), so its bf16 MFU stays below the MAMF ratio and not above Hopper's for the same job.
TEST(Framework, BlackwellMfuIsNotAboveHoppers) {
  const Estimated b200 = Estimate(Llama8b("", "b200"));
  const Estimated h100 = Estimate(Llama8b(""));
  EXPECT_LT(b200.e.mfu, b200.hw.k.matmul_eff_max);
  EXPECT_LE(b200.e.mfu, h100.e.mfu);
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

Estimated EstimateYaml(const std::string& yaml) {
  Job j = MakeJob(yaml);
  auto hw = ResolveHardware(j, Cat(), Calibration::Builtin());
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  return {j, hw.ok() ? *hw : HardwareContext{}, hw.ok() ? EstimateStep(j, *hw) : StepEstimate{}};
}

// H§1 a user's power limit scales compute by (limit / board power)^power_clock_exponent.
TEST(Framework, UserPowerLimitFollowsTheDatasheetLaw) {
  const std::string base = "model: {preset: llama-2-7b}\ntraining: {method: qlora}\ncluster: {gpu: rtx3090, num_gpus: 1";
  const Estimated full = EstimateYaml(base + "}\n");
  const Estimated capped = EstimateYaml(base + ", power_limit_w: 280}\n");
  const double tdp = *capped.hw.gpu.tdp_w;
  EXPECT_NEAR(capped.hw.k.clock_factor / full.hw.k.clock_factor,
              std::pow(280 / tdp, Calibration::Builtin().Get("power_clock_exponent")), 1e-12);
  EXPECT_GT(capped.e.step_time_s, full.e.step_time_s);
  // At or above the board power nothing changes.
  const Estimated above = EstimateYaml(base + ", power_limit_w: " + std::to_string(static_cast<int>(tdp) + 50) + "}\n");
  EXPECT_EQ(above.e.step_time_s, full.e.step_time_s);
}

// F§9 DeepSpeed's ZeRO-3 hooks: host ops per module per pass at the host dispatch cost; FSDP none.
TEST(Framework, DeepSpeedZero3HooksAreHostOpsPerModulePerPass) {
  const std::string job = "model: {preset: llama-2-7b}\ntraining: {framework: %s, seq_len: 512, micro_batch: 1, global_batch: 4, recompute: full}\n"
                          "parallel: {zero: 3}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 1}\n";
  char ds[512], fsdp[512];
  std::snprintf(ds, sizeof ds, job.c_str(), "deepspeed");
  std::snprintf(fsdp, sizeof fsdp, job.c_str(), "fsdp");
  const Estimated d = EstimateYaml(ds), f = EstimateYaml(fsdp);
  const Arch& a = d.job.arch;
  const double modules = a.layers * (4.0 + a.MlpMatrices() + a.norms_per_layer) + 2;
  const double expected = 4 /*micro-batches*/ * modules * 3 /*fwd, recompute, bwd*/ * 12 * d.hw.k.cpu_op_s;
  EXPECT_NEAR(d.e.breakdown.overhead_s - d.hw.k.step_fixed_s, expected, 1e-9);
  EXPECT_EQ(f.e.breakdown.overhead_s, f.hw.k.step_fixed_s);
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// training.fused_ops: the model code's own fused kernels (Liger, flash-attn ops) on top of the
// framework's make the step cheaper; a fused loss becomes the job's cross-entropy.
TEST(Framework, ModelFusedOpsShrinkTheEagerStep) {
  const std::string base = "model: {preset: llama-2-7b}\ntraining: {method: lora, framework: hf-trainer, seq_len: 1024%s}\n"
                           "cluster: {gpu: a100-sxm-80gb, num_gpus: 1}\n";
  char plain[512], fused[512], liger[512];
  std::snprintf(plain, sizeof plain, base.c_str(), "");
  std::snprintf(fused, sizeof fused, base.c_str(), ", fused_ops: [norm, rope]");
  std::snprintf(liger, sizeof liger, base.c_str(), ", fused_ops: [norm, rope, act, loss]");
  const Estimated p = EstimateYaml(plain), f = EstimateYaml(fused), l = EstimateYaml(liger);
  EXPECT_LT(f.hw.k.e_norm, p.hw.k.e_norm);
  EXPECT_LT(f.hw.k.e_rope, p.hw.k.e_rope);
  EXPECT_EQ(f.hw.k.e_act, p.hw.k.e_act);
  EXPECT_LT(f.e.step_time_s, p.e.step_time_s);
  EXPECT_LT(l.e.step_time_s, f.e.step_time_s);
  EXPECT_EQ(l.job.training.loss, LossKind::kFused);
}

}  // namespace
}  // namespace gpuplan
