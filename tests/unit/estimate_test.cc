// The seeds' worked examples and unit checks of the step-time model.
#include <gtest/gtest.h>

#include "../test_util.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "gpuplan/estimate.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

using testing_util::Hw;

// Seed 000 §3: syncing the gradients of a 7B model (fp16, 14 GB) between two machines.
double SevenBSyncSeconds(const std::string& network, int64_t nodes, int64_t per_node, const std::string& intra = "") {
  Job j = MakeJob("model: {preset: llama-2-7b}\ncluster: {gpu: a100-sxm-80gb, gpus_per_node: " + std::to_string(per_node) +
                  ", num_gpus: " + std::to_string(nodes * per_node) + ", network: " + network +
                  (intra.empty() ? "" : ", intra_node: " + intra) + "}\n");
  const double grad_bytes = 2.0 * 6738415616;
  return CollectiveTime(Collective::kAllReduce, grad_bytes, nodes * per_node, per_node, Hw(j));
}

TEST(Seeds, SevenBGradientSyncOverOneGbEIsMinutes) {
  const double t = SevenBSyncSeconds("tcp-1g", 2, 1);
  EXPECT_GT(t, 60);
  EXPECT_LT(t, 3600);
}

TEST(Seeds, SevenBGradientSyncOver25GbTcpIsAboutTenSeconds) {
  const double t = SevenBSyncSeconds("tcp-25g", 2, 1);
  EXPECT_GT(t, 3);
  EXPECT_LT(t, 20);
}

TEST(Seeds, SevenBGradientSyncOverNvlinkIsUnderASecond) {
  EXPECT_LT(SevenBSyncSeconds("ib-ndr", 1, 8), 1.0);
  EXPECT_LT(SevenBSyncSeconds("ib-ndr", 1, 2, "nvlink3"), 1.0);
}

TEST(Seeds, SevenBLoraOnOneA100TakesHours) {
  // Seed 001: LoRA on a 7B model, 76.8M tokens (e.g. 150k samples x 512 tokens), one A100.
  Job j = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: lora, seq_len: 512, micro_batch: 8, tokens: 7.68e7}\n"
                  "cluster: {gpu: a100-sxm-80gb, num_gpus: 1}\n");
  const StepEstimate e = EstimateStep(j, Hw(j));
  EXPECT_GT(e.time_to_train_s, 3600);       // not minutes
  EXPECT_LT(e.time_to_train_s, 24 * 3600);  // not days
}

TEST(Estimate, MfuOfABigDenseRunIsPlausible) {
  Job j = MakeJob("model: {preset: llama-3-70b}\ntraining: {seq_len: 4096, micro_batch: 1, global_batch: 1024, recompute: full}\n"
                  "parallel: {tp: 8, pp: 4, sequence_parallel: true, zero: 1}\ncluster: {gpu: h100, num_gpus: 512}\n");
  const StepEstimate e = EstimateStep(j, Hw(j));
  EXPECT_GT(e.mfu, 0.25);
  EXPECT_LT(e.mfu, 0.65);
  EXPECT_GT(e.hfu, e.mfu);  // full recompute adds a forward
  EXPECT_NEAR(e.tokens_per_s, e.tokens_per_s_per_gpu * 512, 1e-6 * e.tokens_per_s);
}

TEST(Estimate, ModelFlopsConvention) {
  Arch a = *FindPreset("llama-2-7b");
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(a, 2048), 6.0 * 6738415616 + 12.0 * 32 * 4096 * 2048);
}

TEST(Estimate, TcpWithoutRdmaIsSlowerThanRdmaAtSameRate) {
  Job tcp = MakeJob("model: {preset: llama-2-13b}\nparallel: {zero: 1}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 16, network: tcp-100g, nics_per_node: 8}\n");
  Job roce = MakeJob("model: {preset: llama-2-13b}\nparallel: {zero: 1}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 16, network: roce-100g, nics_per_node: 8}\n");
  EXPECT_GT(EstimateStep(tcp, Hw(tcp)).step_time_s, EstimateStep(roce, Hw(roce)).step_time_s);
}

TEST(Estimate, BottleneckNamesTheNetwork) {
  Job j = MakeJob("model: {preset: llama-2-7b}\ntraining: {seq_len: 2048, micro_batch: 1}\nparallel: {zero: 0}\n"
                  "cluster: {gpu: a100-sxm-80gb, num_gpus: 2, gpus_per_node: 1, network: tcp-25g}\n");
  const HardwareContext hw = Hw(j);
  const StepEstimate e = EstimateStep(j, hw);
  const std::string b = Bottleneck(j, hw, e);
  EXPECT_NE(b.find("data-parallel"), std::string::npos) << b;
  EXPECT_NE(b.find("RDMA"), std::string::npos) << b;
}

TEST(Estimate, UnknownPeakIsAClearError) {
  Job j = MakeJob("model: {preset: gpt2}\ntraining: {precision: fp8}\ncluster: {gpu: a100-sxm-80gb}\n");
  static const Catalog cat = *LoadCatalog();
  auto hw = ResolveHardware(j, cat, Calibration::Builtin());
  ASSERT_FALSE(hw.ok());
  EXPECT_NE(hw.status().reason().find("fp8"), std::string::npos);
}

TEST(Estimate, CheckpointStallShrinksWhenAsync) {
  const std::string base = "model: {preset: llama-2-7b}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 8, storage: aws-ebs-gp3}\n";
  Job sync = MakeJob(base + "training: {checkpoint_interval_min: 30}\n");
  Job async = MakeJob(base + "training: {checkpoint_interval_min: 30, checkpoint_async: true}\n");
  const double s = EstimateStep(sync, Hw(sync)).breakdown.checkpoint_s;
  const double a = EstimateStep(async, Hw(async)).breakdown.checkpoint_s;
  EXPECT_GT(s, 0);
  EXPECT_LT(a, s);
}


// ---- Bottleneck claims: each "would cut the step to X s" is the estimate a user gets by rerunning
// `gpuplan estimate` with the flags it names (regression: "RDMA would cut the step to 0.826 s"
// while `estimate --network ib-ndr` said 0.288 s).

using Keys = std::vector<std::pair<std::string, std::string>>;

const Catalog& Cat() {
  static const Catalog cat = *LoadCatalog();
  return cat;
}

struct Estimated {
  Job job;
  HardwareContext hw;
  StepEstimate e;
};

// The CLI's path: job keys as flags set them, FinalizeJob, ResolveHardware, EstimateStep.
Estimated EstimateWith(const Keys& keys) {
  Estimated r;
  for (const auto& [k, v] : keys) {
    Status st = SetJobKey(r.job, k, v, {"command line", 0, k});
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  Status st = FinalizeJob(r.job);
  EXPECT_TRUE(st.ok()) << st.ToString();
  auto hw = ResolveHardware(r.job, Cat(), Calibration::Builtin());
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  if (hw.ok()) r.hw = *hw;
  r.e = EstimateStep(r.job, r.hw);
  return r;
}

std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Every claim in the sentence, held against a second estimate with the changed input.
BottleneckReport HoldClaims(const Keys& keys) {
  const Estimated base = EstimateWith(keys);
  const BottleneckReport r = AnalyzeBottleneck(base.job, &Cat(), base.hw, base.e);
  for (const WhatIf& w : r.what_ifs) {
    Keys changed = keys;
    changed.insert(changed.end(), w.changes.begin(), w.changes.end());
    const Estimated again = EstimateWith(changed);
    EXPECT_NEAR(w.step_time_s, again.e.step_time_s, 1e-9 * again.e.step_time_s) << w.flags;
    EXPECT_NEAR(w.memory_bytes, EstimateMemory(again.job, Calibration::Builtin()).total_bytes, 1.0) << w.flags;
    EXPECT_LT(w.step_time_s, base.e.step_time_s) << "a claim cuts the step: " << w.flags;
    EXPECT_NE(r.sentence.find(w.flags + " would cut the step to " + Short(again.e.step_time_s) + " s"), std::string::npos)
        << r.sentence;
  }
  return r;
}

const Keys kSevenBOverTcp = {{"model.preset", "llama-2-7b"}, {"parallel.zero", "3"}, {"cluster.num_gpus", "2"},
                             {"cluster.gpus_per_node", "1"}, {"cluster.network", "tcp-25g"}};

TEST(Bottleneck, RdmaClaimIsTheEstimateWithRdma) {
  const BottleneckReport r = HoldClaims(kSevenBOverTcp);
  ASSERT_FALSE(r.what_ifs.empty()) << r.sentence;
  EXPECT_EQ(r.what_ifs[0].flags, "--network ib-ndr") << r.sentence;
  Keys rdma = kSevenBOverTcp;
  rdma.push_back({"cluster.network", "ib-ndr"});
  EXPECT_DOUBLE_EQ(r.what_ifs[0].step_time_s, EstimateWith(rdma).e.step_time_s);
}

TEST(Bottleneck, RdmaFabricWithGpuDirectOffIsToldToTurnItOn) {
  const BottleneckReport r = HoldClaims({{"model.preset", "llama-2-7b"}, {"parallel.zero", "3"}, {"cluster.num_gpus", "16"},
                                         {"cluster.network", "roce-100g"}, {"cluster.gpudirect_rdma", "false"}});
  ASSERT_FALSE(r.what_ifs.empty()) << r.sentence;
  EXPECT_EQ(r.what_ifs[0].flags, "--gpudirect-rdma true") << r.sentence;
}

TEST(Bottleneck, EachKindOfClaimHolds) {
  const std::vector<Keys> cases = {
      kSevenBOverTcp,
      {{"model.preset", "llama-2-7b"}, {"parallel.zero", "3"}, {"cluster.num_gpus", "2"}, {"cluster.gpus_per_node", "1"},
       {"cluster.network", "ib-ndr"}},                                              // ZeRO-2 instead of 3
      {{"model.preset", "llama-2-13b"}, {"cluster.num_gpus", "8"}, {"parallel.pp", "8"}},  // bubble: vpp
      {{"model.preset", "llama-2-13b"}, {"cluster.num_gpus", "8"}, {"parallel.zero", "3"},
       {"cluster.storage", "aws-ebs-gp3"}, {"training.checkpoint_interval_min", "10"}},    // checkpoint: async
      {{"model.preset", "llama-2-70b"}, {"cluster.num_gpus", "16"}, {"parallel.tp", "16"}, {"parallel.zero", "1"},
       {"cluster.network", "tcp-100g"}},                                            // tp across nodes
      {{"model.preset", "llama-2-13b"}, {"cluster.gpu", "l40s"}, {"cluster.num_gpus", "8"}, {"parallel.tp", "8"}},
  };
  int claims = 0;
  for (const auto& keys : cases) claims += static_cast<int>(HoldClaims(keys).what_ifs.size());
  EXPECT_GE(claims, 4) << "the cases above make at least four claims";
}

TEST(Bottleneck, SuggestionsApplyToTheJobAsItIs) {
  // A ZeRO-0 or ZeRO-1 job is never told to leave ZeRO-3.
  for (const char* zero : {"0", "1"}) {
    const BottleneckReport r = HoldClaims({{"model.preset", "gpt2"}, {"parallel.zero", zero}, {"cluster.num_gpus", "2"},
                                           {"cluster.gpus_per_node", "1"}, {"cluster.network", "tcp-25g"}});
    EXPECT_NE(r.sentence.find("data-parallel"), std::string::npos) << r.sentence;
    EXPECT_EQ(r.sentence.find("instead of 3"), std::string::npos) << r.sentence;
    EXPECT_EQ(r.sentence.find("--zero"), std::string::npos) << r.sentence;
    for (const WhatIf& w : r.what_ifs)
      for (const auto& [k, v] : w.changes) EXPECT_NE(k, "parallel.zero") << r.sentence;
  }
}

TEST(Bottleneck, WithoutACatalogNoHardwareClaims) {
  const Estimated base = EstimateWith(kSevenBOverTcp);
  const std::string b = Bottleneck(base.job, base.hw, base.e);
  EXPECT_EQ(b.find("ib-ndr"), std::string::npos) << b;
  EXPECT_EQ(b, AnalyzeBottleneck(base.job, nullptr, base.hw, base.e).sentence);
}

TEST(Bottleneck, CompressedComputeIsNotCalledComputeBound) {
  const Estimated base = EstimateWith({{"model.preset", "llama-2-70b"}, {"cluster.num_gpus", "64"}, {"parallel.tp", "16"},
                                 {"parallel.zero", "1"}});
  const std::string b = Bottleneck(base.job, base.hw, base.e);
  ASSERT_LT(base.e.breakdown.compute_s, 0.5 * base.e.step_time_s) << "the case needs compute to be under half the step";
  EXPECT_EQ(b.find("compute-bound"), std::string::npos) << b;
  // Communication at or above comm_share_max is what the sentence names (communication.md §8).
  const StepBreakdown& s = base.e.breakdown;
  const bool comm = (s.tp_comm_s + s.cp_comm_s + s.pp_comm_s + s.dp_comm_s + s.ep_comm_s) / base.e.step_time_s >=
                    Calibration::Builtin().Get("comm_share_max");
  EXPECT_NE(b.find(comm ? "communication limits this job" : "compute is the largest part but only"), std::string::npos) << b;
}

// ---- Pipeline hops on the network (pipeline.md §4): Megatron's rank order, cross-node boundaries
// priced on the node's NICs.

Keys Mpt30bPipeline(const std::string& network, const std::string& nics = "") {
  Keys k = {{"model.preset", "mpt-30b"},    {"training.method", "full"},     {"training.seq_len", "4096"},
            {"training.global_batch", "256"}, {"cluster.gpu", "a800"},       {"cluster.num_gpus", "32"},
            {"cluster.gpus_per_node", "8"},   {"parallel.tp", "2"},          {"parallel.pp", "8"},
            {"parallel.vpp", "6"},            {"parallel.zero", "1"},        {"parallel.sequence_parallel", "true"},
            {"cluster.network", network}};
  if (!nics.empty()) k.push_back({"cluster.nics_per_node", nics});
  return k;
}

TEST(Pipeline, TwoStagesPerNodeStillCrossNodesEveryOtherBoundary) {
  const Estimated tcp = EstimateWith(Mpt30bPipeline("tcp-25g"));
  // Nodes hold stages {0,1} {2,3} {4,5} {6,7}: 1->2, 3->4, 5->6 and the interleaved wrap 7->0 cross.
  EXPECT_EQ(tcp.e.comm.pp_boundaries, 8);
  EXPECT_EQ(tcp.e.comm.pp_cross_boundaries, 4);
  EXPECT_TRUE(tcp.e.comm.pp_crosses_nodes);
  // 128 micro-batches x 8 crossing senders per node x 6 hand-overs x 4096 x 7168 x 2 B / tp 2.
  const double msg = 4096.0 * 7168 * 2 / 2;
  EXPECT_NEAR(tcp.e.comm.pp_cross_node_bytes, 128 * 8 * 6 * msg * (1 - 1.0 / 48), 0.03 * 128 * 8 * 6 * msg);
  // The busiest node's bytes over one 25 GbE port at its efficiency and without RDMA.
  const double port = 3.125e9 * Calibration::Builtin().Get("link_eff.tcp") / Calibration::Builtin().Get("tcp_host_copy_penalty");
  EXPECT_NEAR(tcp.e.comm.pp_cross_s, tcp.e.comm.pp_cross_node_bytes / port, 0.01 * tcp.e.comm.pp_cross_s);
}

TEST(Pipeline, TheSlowNetworkShowsInTheStep) {
  const Estimated tcp = EstimateWith(Mpt30bPipeline("tcp-25g"));
  const Estimated ib = EstimateWith(Mpt30bPipeline("ib-hdr", "8"));
  EXPECT_GT(tcp.e.step_time_s, 1.5 * ib.e.step_time_s) << tcp.e.step_time_s << " vs " << ib.e.step_time_s;
  EXPECT_GT(tcp.e.breakdown.pp_comm_s, 20 * ib.e.breakdown.pp_comm_s);
}

TEST(Pipeline, AllStagesInOneNodeNeverTouchTheNetwork) {
  Keys k = {{"model.preset", "llama-2-7b"}, {"cluster.num_gpus", "8"}, {"parallel.tp", "2"}, {"parallel.pp", "4"},
            {"training.global_batch", "16"}};
  Keys slow = k, fast = k;
  slow.push_back({"cluster.network", "tcp-1g"});
  fast.push_back({"cluster.network", "ib-ndr"});
  const Estimated a = EstimateWith(slow), b = EstimateWith(fast);
  EXPECT_EQ(a.e.comm.pp_cross_boundaries, 0);
  EXPECT_GT(a.e.comm.pp_s, 0);
  EXPECT_DOUBLE_EQ(a.e.step_time_s, b.e.step_time_s);
}

TEST(Pipeline, OneStagePerNodeIsThePerGpuNicShare) {
  // S = g: every rank of a node crosses, and the busiest node's time is each rank's 2·m·v messages
  // over its NIC share (the placement before mixed layouts were modelled).
  const Estimated r = EstimateWith({{"model.preset", "llama-2-13b"}, {"cluster.num_gpus", "32"}, {"parallel.tp", "8"},
                                    {"parallel.pp", "4"}, {"training.global_batch", "32"}, {"cluster.network", "ib-ndr"}});
  ASSERT_EQ(r.e.comm.pp_cross_boundaries, 3);
  const double m = static_cast<double>(r.e.grad_accum), msg = r.e.comm.pp_bytes / (2 * m);
  const double per_gpu = r.hw.inter_bytes_per_s_per_gpu * r.hw.k.inter_eff;
  EXPECT_NEAR(r.e.comm.pp_cross_s, 2 * m * (msg / per_gpu + r.hw.k.collective_latency_s + r.hw.inter.latency_s.value_or(0)),
              1e-9 * r.e.comm.pp_cross_s);
}

// ---- Communication-limited steps (communication.md §8).

TEST(Bottleneck, FortyPercentCommunicationNamesCommunicationWithWhatIfs) {
  const Keys keys = {{"model.preset", "llama-3-70b"}, {"training.method", "full"}, {"training.seq_len", "4096"},
                     {"training.global_batch", "512"}, {"training.precision", "bf16"}, {"cluster.gpu", "h100"},
                     {"cluster.num_gpus", "32"}, {"parallel.tp", "8"}, {"parallel.zero", "3"},
                     {"training.recompute", "full"}, {"training.micro_batch", "1"}, {"cluster.network", "ib-ndr"},
                     {"cluster.nics_per_node", "8"}};
  const Estimated base = EstimateWith(keys);
  const StepBreakdown& b = base.e.breakdown;
  const double comm = b.tp_comm_s + b.cp_comm_s + b.pp_comm_s + b.dp_comm_s + b.ep_comm_s;
  ASSERT_GE(comm / base.e.step_time_s, Calibration::Builtin().Get("comm_share_max"));
  const BottleneckReport r = HoldClaims(keys);
  EXPECT_NE(r.sentence.find("communication limits this job"), std::string::npos) << r.sentence;
  EXPECT_EQ(r.sentence.find("not what limits"), std::string::npos) << r.sentence;
  ASSERT_FALSE(r.what_ifs.empty()) << r.sentence;
  bool zero = false;
  for (const WhatIf& w : r.what_ifs)
    for (const auto& [k, v] : w.changes) zero = zero || k == "parallel.zero";
  EXPECT_TRUE(zero) << r.sentence;
}

TEST(Bottleneck, TheThresholdIsData) {
  Keys keys = {{"model.preset", "llama-2-7b"}, {"cluster.num_gpus", "16"}, {"parallel.zero", "3"}, {"cluster.network", "ib-ndr"}};
  Estimated base = EstimateWith(keys);
  const StepBreakdown& b = base.e.breakdown;
  const double share = (b.tp_comm_s + b.cp_comm_s + b.pp_comm_s + b.dp_comm_s + b.ep_comm_s) / base.e.step_time_s;
  ASSERT_GT(share, 0.005);
  for (const double limit : {share * 0.9, std::min(1.0, share * 1.1)}) {
    Calibration cal = Calibration::Builtin();
    cal.Set("comm_share_max", limit);
    base.hw.cal = cal;
    const std::string s = AnalyzeBottleneck(base.job, nullptr, base.hw, base.e).sentence;
    EXPECT_EQ(s.find("communication limits this job") != std::string::npos, share >= limit) << limit << ": " << s;
  }
}

TEST(Bottleneck, CutNvlinkIsBlamedNotTheNetwork) {
  // H800: tp 8 over its 200 GB/s-per-direction NVLink, one node's worth of dp over 8 NDR ports.
  const Estimated r = EstimateWith({{"model.preset", "llama-2-13b"}, {"cluster.gpu", "h800"}, {"cluster.num_gpus", "16"},
                                    {"parallel.tp", "8"}, {"training.seq_len", "4096"}, {"training.micro_batch", "1"},
                                    {"training.global_batch", "64"}, {"parallel.zero", "1"}, {"cluster.network", "ib-ndr"}});
  const std::vector<CommPart> parts = CommParts(r.job, r.hw, r.e);
  ASSERT_FALSE(parts.empty());
  ASSERT_EQ(parts[0].part, "tp");
  EXPECT_FALSE(parts[0].inter_node);
  EXPECT_NE(parts[0].link.find("intra-node, 200 GB/s per GPU"), std::string::npos) << parts[0].link;
  const std::string s = AnalyzeBottleneck(r.job, &Cat(), r.hw, r.e).sentence;
  if (s.find("communication limits") != std::string::npos) {
    EXPECT_NE(s.find(r.hw.intra.name), std::string::npos) << s;
    EXPECT_EQ(s.find("over " + r.hw.inter.name), std::string::npos) << s;
  }
}
}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// N§4: DeepSpeed's fp32_allreduce (communication_data_type fp32) casts the 16-bit gradients to fp32 for the
// data-parallel reduction: twice the bytes on the wire, the gradients themselves stay 16-bit.
TEST(Estimate, Fp32AllreduceDoublesTheDataParallelVolumeOf16BitGradients) {
  const std::string base = "model: {preset: llama-2-7b}\ntraining: {precision: fp16, framework: deepspeed";
  const std::string cluster = "}\ncluster: {gpu: a100-sxm-80gb, num_gpus: 16, gpus_per_node: 8, network: tcp-100g}\n";
  const Job off = testing_util::MakeJob(base + cluster);
  const Job on = testing_util::MakeJob(base + ", fp32_allreduce: true" + cluster);
  const StepEstimate a = EstimateStep(off, testing_util::Hw(off)), b = EstimateStep(on, testing_util::Hw(on));
  EXPECT_DOUBLE_EQ(b.comm.dp_bytes, 2 * a.comm.dp_bytes);
  EXPECT_GT(b.breakdown.dp_comm_s, a.breakdown.dp_comm_s);
  EXPECT_DOUBLE_EQ(b.breakdown.compute_s, a.breakdown.compute_s);
  // fp32 gradients are already reduced in fp32: the key changes nothing there.
  const Job g32 = testing_util::MakeJob(base + ", fp32_grads: true" + cluster);
  const Job g32on = testing_util::MakeJob(base + ", fp32_grads: true, fp32_allreduce: true" + cluster);
  EXPECT_DOUBLE_EQ(EstimateStep(g32on, testing_util::Hw(g32on)).comm.dp_bytes,
                   EstimateStep(g32, testing_util::Hw(g32)).comm.dp_bytes);
}

}  // namespace
}  // namespace gpuplan
