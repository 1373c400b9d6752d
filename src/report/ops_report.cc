// `gpuplan estimate --ops`: one layer's ops and the passes they fold into (docs/model/compute.md §7).
#include <cstdio>
#include <string>
#include <vector>

#include "gpuplan/finetune.h"
#include "gpuplan/ops.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {

struct OpsView {
  double tokens = 0, seq_len = 0, layers = 0;
  std::vector<Op> layer, head;
  LayerPasses passes;
};

OpsView View(const Job& job, const HardwareContext& hw) {
  OpsView v;
  v.tokens = MicroBatchTokens(job);
  v.seq_len = ComputeSeqLen(job.training);
  v.layers = static_cast<double>((job.arch.layers + job.parallel.pp - 1) / job.parallel.pp);
  v.layer = LayerOps(job, hw, v.tokens, v.seq_len);
  v.head = HeadOps(job, hw, v.tokens);
  v.passes = FoldLayer(v.layer, job, hw.k);
  return v;
}

std::string Row(const Op& op, const EfficiencyConstants& k) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%-22s %-11s %-5s %5.2f %10.4g %10.4g %10.4g %7.3g %9.4g %9.4g\n", std::string(op.name).c_str(),
                ToString(op.kind).c_str(), std::string(op.section).c_str(), op.layer_share, op.fwd_flops / 1e9, op.bwd_flops / 1e9,
                op.hbm_bytes / 1e6, op.fwd_kernels, OpForwardSeconds(op, k) * 1e3, OpBackwardSeconds(op, k) * 1e3);
  return buf;
}

nlohmann::json OpJson(const Op& op, const EfficiencyConstants& k) {
  return {{"name", std::string(op.name)}, {"kind", ToString(op.kind)}, {"section", std::string(op.section)}, {"layer_share", op.layer_share},
          {"fwd_flops", op.fwd_flops}, {"bwd_flops", op.bwd_flops}, {"hbm_bytes", op.hbm_bytes},
          {"fwd_kernels", op.fwd_kernels}, {"bwd_kernels", op.bwd_kernels}, {"fwd_host_ops", op.fwd_host_ops},
          {"bwd_host_ops", op.bwd_host_ops}, {"fwd_s", OpForwardSeconds(op, k)}, {"bwd_s", OpBackwardSeconds(op, k)},
          {"selective_recompute_share", op.selective_share}};
}

}  // namespace

std::string OpsToText(const Job& job, const HardwareContext& hw) {
  const OpsView v = View(job, hw);
  const LayerPasses& p = v.passes;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "\nOne layer's ops, one micro-batch of %.6g tokens per GPU, x%.0f layers on this stage "
                "(docs/model/compute.md §7)\n",
                v.tokens, v.layers);
  std::string out = buf;
  out += "op                     kind        form  share  fwd GFLOP  bwd GFLOP     HBM MB kernels    fwd ms    bwd ms\n";
  for (const Op& op : v.layer) out += Row(op, hw.k);
  std::snprintf(buf, sizeof buf, "layer forward  %.4g ms = max(GPU %.4g, host %.4g); backward %.4g ms = max(GPU %.4g, host %.4g)\n",
                p.fwd_s * 1e3, p.gpu_fwd_s * 1e3, p.host_fwd_s * 1e3, p.bwd_s * 1e3, p.gpu_bwd_s * 1e3, p.host_bwd_s * 1e3);
  out += buf;
  std::snprintf(buf, sizeof buf, "layer recompute %.4g ms; FLOPs forward %.4g G, backward %.4g G, recompute %.4g G\n",
                p.recompute_s * 1e3, p.fwd_flops / 1e9, p.bwd_flops / 1e9, p.recompute_flops / 1e9);
  out += buf;
  out += "output layer (last stage):\n";
  for (const Op& op : v.head) out += Row(op, hw.k);
  std::snprintf(buf, sizeof buf,
                "micro-batch compute = (%.0f x (forward + backward + recompute) + output layer) x framework_overhead "
                "%.3g (C§4)\n",
                v.layers, hw.k.framework_overhead);
  return out + buf;
}

nlohmann::json OpsToJson(const Job& job, const HardwareContext& hw) {
  const OpsView v = View(job, hw);
  const LayerPasses& p = v.passes;
  nlohmann::json layer = nlohmann::json::array(), head = nlohmann::json::array();
  for (const Op& op : v.layer) layer.push_back(OpJson(op, hw.k));
  for (const Op& op : v.head) head.push_back(OpJson(op, hw.k));
  return {{"tokens_per_micro_batch", v.tokens}, {"layers_on_stage", v.layers}, {"layer", layer}, {"head", head},
          {"layer_passes",
           {{"fwd_s", p.fwd_s}, {"bwd_s", p.bwd_s}, {"recompute_s", p.recompute_s}, {"gpu_fwd_s", p.gpu_fwd_s},
            {"gpu_bwd_s", p.gpu_bwd_s}, {"host_fwd_s", p.host_fwd_s}, {"host_bwd_s", p.host_bwd_s},
            {"fwd_flops", p.fwd_flops}, {"bwd_flops", p.bwd_flops}, {"recompute_flops", p.recompute_flops}}},
          {"framework_overhead", hw.k.framework_overhead}};
}

}  // namespace gpuplan
