// Engine mechanisms (src/model/mechanisms.cc): TP-communication overlap as a job key and the
// megatron-bridge framework (frameworks.md F§5), Megatron's scatter-gather of pipeline sends
// (pipeline.md P§4), DeepSpeed ZeRO-3's flat-ring gathers (communication.md N§9) and Transformer
// Engine's fp8 casts (frameworks.md F§6).
#include <gtest/gtest.h>

#include <string>

#include "../test_util.h"

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

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

Estimated Estimate(const std::string& yaml) {
  Estimated r;
  r.job = MakeJob(yaml);
  auto hw = ResolveHardware(r.job, Cat(), Calibration::Builtin());
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  if (!hw.ok()) return r;
  r.hw = *hw;
  r.e = EstimateStep(r.job, r.hw);
  return r;
}

// Llama 3 70B on 4 H100 nodes, tp 8 with sequence parallel, pp 2.
std::string Tp8(const std::string& training, const std::string& parallel = "sequence_parallel: true") {
  return "model: {preset: llama-3-70b}\ntraining: {seq_len: 4096, micro_batch: 1, global_batch: 32" + training +
         "}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 32}\nparallel: {tp: 8, pp: 2, " + parallel + "}\n";
}

// F§5 the job key overrides the framework's default; megatron-bridge defaults on, megatron off.
TEST(Mechanisms, TpCommOverlapIsAJobKeyWithAFrameworkDefault) {
  const Estimated mega = Estimate(Tp8(", framework: megatron"));
  const Estimated mega_on = Estimate(Tp8(", framework: megatron, tp_comm_overlap: true"));
  const Estimated bridge = Estimate(Tp8(", framework: megatron-bridge"));
  const Estimated bridge_off = Estimate(Tp8(", framework: megatron-bridge, tp_comm_overlap: false"));
  ASSERT_GT(mega.e.breakdown.tp_comm_s, 0);
  EXPECT_NEAR(mega_on.e.breakdown.tp_comm_s, mega.e.breakdown.tp_comm_s / 8, 1e-9);
  EXPECT_NEAR(bridge.e.breakdown.tp_comm_s, mega_on.e.breakdown.tp_comm_s, 1e-9);
  EXPECT_NEAR(bridge_off.e.breakdown.tp_comm_s, mega.e.breakdown.tp_comm_s, 1e-9);
  EXPECT_LT(bridge.e.step_time_s, bridge_off.e.step_time_s);
  // Without sequence parallel there is no userbuffers path: the key changes nothing.
  const Estimated nosp = Estimate(Tp8(", framework: megatron, tp_comm_overlap: true", "sequence_parallel: false"));
  const Estimated nosp_off = Estimate(Tp8(", framework: megatron", "sequence_parallel: false"));
  EXPECT_DOUBLE_EQ(nosp.e.breakdown.tp_comm_s, nosp_off.e.breakdown.tp_comm_s);
}

TEST(Mechanisms, TpCommOverlapRejectsOtherValues) {
  Job j;
  EXPECT_FALSE(SetJobKey(j, "training.tp_comm_overlap", "sometimes", {"job.yaml", 3, "training.tp_comm_overlap"}).ok());
  EXPECT_TRUE(SetJobKey(j, "training.tp_comm_overlap", "auto", {"job.yaml", 3, "training.tp_comm_overlap"}).ok());
  EXPECT_EQ(j.training.tp_comm_overlap, -1);
  EXPECT_TRUE(SetJobKey(j, "training.tp_comm_overlap", "true", {"job.yaml", 3, "training.tp_comm_overlap"}).ok());
  EXPECT_EQ(j.training.tp_comm_overlap, 1);
}

// P§4 without SP Megatron sends 1/tp of the activation per rank and all-gathers it on receipt;
// a framework without the optimisation sends the whole activation.
TEST(Mechanisms, MegatronScattersPipelineSendsWithoutSequenceParallel) {
  const Estimated mega = Estimate(Tp8(", framework: megatron", "sequence_parallel: false"));
  const Estimated bridge = Estimate(Tp8(", framework: megatron-bridge", "sequence_parallel: false"));
  ASSERT_GT(bridge.e.comm.pp_bytes, 0);
  EXPECT_NEAR(mega.e.comm.pp_bytes, bridge.e.comm.pp_bytes / 8, 1e-6 * bridge.e.comm.pp_bytes);
  // The cross-node hop carries 1/tp: its time shrinks although the receivers' all-gathers are added.
  EXPECT_LT(mega.e.comm.pp_cross_s, bridge.e.comm.pp_cross_s);
  // With SP both send 1/tp and nothing is gathered.
  const Estimated mega_sp = Estimate(Tp8(", framework: megatron"));
  const Estimated bridge_sp = Estimate(Tp8(", framework: megatron-bridge"));
  EXPECT_DOUBLE_EQ(mega_sp.e.comm.pp_s, bridge_sp.e.comm.pp_s);
}

std::string Zero3(const std::string& framework, int gpus) {
  return "model: {preset: llama-2-13b}\ntraining: {seq_len: 2048, micro_batch: 2, framework: " + framework +
         "}\ncluster: {gpu: a100-sxm-80gb, num_gpus: " + std::to_string(gpus) + "}\nparallel: {zero: 3}\n";
}

// N§9 DeepSpeed's flat-ring gathers across nodes run at one port per rank: slower than FSDP's
// multi-rail gathers; across nodes the gap grows with the node's ports.
TEST(Mechanisms, DeepSpeedZero3GathersAcrossNodesAreSlowerThanFsdp) {
  const Estimated ds = Estimate(Zero3("deepspeed", 32));
  const Estimated fsdp = Estimate(Zero3("fsdp", 32));
  EXPECT_GT(ds.e.comm.dp_s, 3 * fsdp.e.comm.dp_s);
  EXPECT_GT(ds.e.breakdown.dp_comm_s, fsdp.e.breakdown.dp_comm_s);
  EXPECT_TRUE(ds.hw.k.zero3_flat_gathers);
  EXPECT_FALSE(fsdp.hw.k.zero3_flat_gathers);
  // Inside one node both are NVLink all-gathers of the same bytes (the overlap differs).
  const Estimated ds1 = Estimate(Zero3("deepspeed", 8));
  const Estimated fsdp1 = Estimate(Zero3("fsdp", 8));
  EXPECT_LT(ds1.e.comm.dp_s, 1.1 * fsdp1.e.comm.dp_s);
  EXPECT_GE(ds1.e.breakdown.dp_comm_s, fsdp1.e.breakdown.dp_comm_s);
}

// F§6 Transformer Engine's delayed scaling: the norm and activation producers emit fp8 themselves,
// so the casts cost less than one value for every quantized element would.
TEST(Mechanisms, TransformerEngineFusesOnlyTheProducerCasts) {
  const std::string job = "model: {preset: llama-3-8b}\ntraining: {seq_len: 4096, micro_batch: 1, precision: fp8, "
                          "fp8_recipe: delayed, framework: megatron}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n";
  const Estimated te = Estimate(job);
  EXPECT_TRUE(te.hw.k.fp8_fused_producers);
  EXPECT_EQ(te.hw.k.fp8_standalone_cast_bytes, Calibration::Builtin().Get("fp8_cast_bytes.delayed.standalone"));
  const Estimated eager = Estimate(job.substr(0, job.find("framework: megatron")) + "framework: generic}\n"
                                   "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n");
  EXPECT_FALSE(eager.hw.k.fp8_fused_producers);
  const Estimated compiled = Estimate(job.substr(0, job.find("framework: megatron")) +
                                      "framework: megatron, compile: true}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n");
  EXPECT_FALSE(compiled.hw.k.fp8_fused_producers) << "compiled casts keep the one fused value";
}

}  // namespace
}  // namespace gpuplan
