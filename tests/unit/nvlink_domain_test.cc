// NVLink domains larger than a node (GB200/GB300 NVL72), and the accelerators added to the catalog
// for issue 18 (docs/model/communication.md §6, data/gpus.csv).
#include <gtest/gtest.h>

#include "../test_util.h"
#include "gpuplan/estimate.h"

namespace gpuplan {
namespace {

using testing_util::Hw;
using testing_util::MakeJob;

// An MLPerf-Training-like Llama 2 70B LoRA on one GB200 NVL72 rack: 18 trays of 4 GPUs, TP 8
// (Megatron/NeMo LoRA target names), DP 9.
std::string Nvl72Job(const std::string& cluster_extra) {
  return "model: {preset: llama-2-70b}\n"
         "training: {method: lora, lora: {rank: 16, targets: [linear_qkv, linear_proj]}, seq_len: 8192, micro_batch: 1,"
         " global_batch: 9, recompute: full}\n"
         "parallel: {tp: 8, sequence_parallel: true}\n"
         "cluster: {gpu: gb200, num_gpus: 72" + cluster_extra + "}\n";
}

TEST(NvlinkDomain, Gb200TraysFormOneNvl72Domain) {
  const Job trays = MakeJob(Nvl72Job(", gpus_per_node: 4"));
  const HardwareContext hw = Hw(trays);
  EXPECT_EQ(hw.intra.id, "nvswitch-nvlink5");
  EXPECT_EQ(NvlinkDomainGpus(trays, hw), 72);
  const StepEstimate e = EstimateStep(trays, hw);
  EXPECT_FALSE(e.comm.tp_crosses_nodes);
  EXPECT_FALSE(e.comm.dp_crosses_nodes);
  // The same rack described as one 72-GPU node communicates identically.
  const Job rack = MakeJob(Nvl72Job(", gpus_per_node: 72"));
  const StepEstimate r = EstimateStep(rack, Hw(rack));
  EXPECT_DOUBLE_EQ(e.comm.tp_s, r.comm.tp_s);
  EXPECT_DOUBLE_EQ(e.comm.dp_s, r.comm.dp_s);
  // Trays without the NVLink domain (nvlink_domain = the node): TP 8 spans two trays over the NICs.
  const Job split = MakeJob(Nvl72Job(", gpus_per_node: 4, nvlink_domain: 4"));
  const HardwareContext hs = Hw(split);
  EXPECT_EQ(NvlinkDomainGpus(split, hs), 4);
  const StepEstimate s = EstimateStep(split, hs);
  EXPECT_TRUE(s.comm.tp_crosses_nodes);
  EXPECT_GT(s.comm.tp_s, 2 * e.comm.tp_s);
  EXPECT_GT(s.tokens_per_s, 0);
  EXPECT_LT(s.tokens_per_s, e.tokens_per_s);
}

TEST(NvlinkDomain, LimitsAndBadValues) {
  auto fin = [](const std::string& yaml) -> Status {
    auto j = ParseJobText("model: {preset: llama-2-70b}\n" + yaml, "job.yaml");
    if (!j.ok()) return j.status();
    Job job = *j;
    return FinalizeJob(job);
  };
  EXPECT_TRUE(fin("cluster: {gpu: gb200, gpus_per_node: 72, num_gpus: 144}\nparallel: {tp: 8}\n").ok());
  const Status over = fin("cluster: {gpu: gb200, gpus_per_node: 73, num_gpus: 146}\n");
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.ToString().find("cluster.gpus_per_node"), std::string::npos) << over.ToString();
  const Status odd = fin("cluster: {gpu: gb200, gpus_per_node: 4, nvlink_domain: 70, num_gpus: 72}\n");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.ToString().find("job.yaml:2: cluster.nvlink_domain: must be a whole number of nodes"), std::string::npos)
      << odd.ToString();
  // A PCIe part keeps its node as the domain; an H100 HGX node too (no nvlink_domain_gpus).
  const Job h100 = MakeJob("model: {preset: llama-2-70b}\ncluster: {gpu: h100, gpus_per_node: 8, num_gpus: 16}\nparallel: {tp: 8}\n");
  EXPECT_EQ(NvlinkDomainGpus(h100, Hw(h100)), 8);
}

// Ascend 910C: planned on its own HCCS link in bf16, with Huawei's figures (LOW-CONFIDENCE rows).
TEST(ChinaAccelerators, Ascend910cIsPlannedOnHccs) {
  const Job j = MakeJob("model: {preset: llama-3-8b}\ncluster: {gpu: ascend 910c, gpus_per_node: 8, num_gpus: 8}\n"
                        "parallel: {zero: 1}\ntraining: {seq_len: 4096, micro_batch: 1}\n");
  const HardwareContext hw = Hw(j);
  EXPECT_EQ(hw.intra.id, "hccs-910c");
  EXPECT_EQ(hw.intra.kind, "hccs");
  const StepEstimate e = EstimateStep(j, hw);
  EXPECT_GT(e.tokens_per_s_per_gpu, 0);
  EXPECT_LT(e.mfu, 1);
}

TEST(ChinaAccelerators, UnknownFiguresAreRefusedNotGuessed) {
  static const Catalog cat = *LoadCatalog();
  for (const char* gpu : {"kunlunxin-p800", "cambricon-mlu590", "rtx-pro-6000-blackwell-ws-96gb"}) {
    ASSERT_TRUE(cat.FindGpu(gpu).ok()) << gpu;
    Job j = MakeJob(std::string("model: {preset: llama-3-8b}\ncluster: {gpu: ") + gpu + ", num_gpus: 1}\ntraining: {precision: fp16}\n");
    auto hw = ResolveHardware(j, cat, Calibration::Builtin());
    ASSERT_FALSE(hw.ok()) << gpu;
    EXPECT_NE(hw.status().ToString().find("known"), std::string::npos) << hw.status().ToString();
  }
  for (const char* gpu : {"rtx a6000", "a40", "a30", "gb300", "l20", "ascend-910b", "rtx-pro-6000-blackwell-96gb"}) {
    Job j = MakeJob(std::string("model: {preset: llama-3-8b}\ncluster: {gpu: ") + gpu + ", num_gpus: 1}\n");
    auto hw = ResolveHardware(j, cat, Calibration::Builtin());
    EXPECT_TRUE(hw.ok()) << gpu << ": " << hw.status().ToString();
  }
}

}  // namespace
}  // namespace gpuplan
