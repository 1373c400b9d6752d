// Step time: compute roofline, exposed communication, pipeline bubble, optimizer, data and
// checkpoint stalls. Section numbers refer to docs/model/compute.md (C§), communication.md (N§),
// pipeline.md (P§) and io.md (I§).
#include "gpuplan/estimate.h"
#include "gpuplan/finetune.h"
#include "gpuplan/job_keys.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace gpuplan {

namespace {

double CalOr(const Calibration& cal, const std::string& key, const std::string& fallback_key) {
  return cal.Has(key) ? cal.Get(key) : cal.Get(fallback_key);
}

std::string LinkClass(const LinkSpec& l) {
  if (l.kind == "nvswitch") return "nvswitch";
  if (l.id == "nvlink-bridge") return "nvlink-bridge";
  return l.kind;
}

// F§0 a framework's constant: framework.<name>.<mechanism>, else the neutral eager-PyTorch
// baseline framework.generic.<mechanism> (data/frameworks.csv).
double FwOr(const Calibration& cal, const std::string& fw, const std::string& mech) {
  return CalOr(cal, "framework." + fw + "." + mech, "framework.generic." + mech);
}

// F§1-F§7 the mechanisms of the job's framework, once per hardware resolution.
void ResolveFramework(const TrainingSpec& tr, const GpuSpec& g, const Calibration& cal, EfficiencyConstants& k) {
  const std::string fw = ToString(tr.framework);
  // F§1/F§2 torch.compile (Inductor) fuses each pointwise chain into one kernel: every op counts
  // as fused whatever the framework's eager modules are.
  // training.fused_ops adds the model code's own fused kernels (Liger, flash-attn ops) to the framework's.
  auto fused = [&](const char* op) {
    const std::string o = op;
    const int bit = o == "norm" ? kFusedNorm : o == "rope" ? kFusedRope : o == "act" ? kFusedAct : 0;
    return tr.compile || (tr.fused_ops & bit) != 0 || FwOr(cal, fw, "fused_" + o) > 0.5;
  };
  // LayerNorm is one native kernel even in eager PyTorch (F.layer_norm); eager RMSNorm is a chain
  // of ops (HF LlamaRMSNorm): EstimateStep picks e_norm_ln / n_norm_ln for LayerNorm models.
  k.e_norm_ln = cal.Get("elementwise.norm_fused");
  k.n_norm_ln = cal.Get("kernels.norm_fused");
  k.e_norm = fused("norm") ? cal.Get("elementwise.norm_fused") : cal.Get("elementwise.rmsnorm_eager");
  k.n_norm = fused("norm") ? cal.Get("kernels.norm_fused") : cal.Get("kernels.rmsnorm_eager");
  k.e_rope = fused("rope") ? cal.Get("elementwise.rope_fused") : cal.Get("elementwise.rope_eager");
  k.n_rope = fused("rope") ? cal.Get("kernels.rope_fused") : cal.Get("kernels.rope_eager");
  k.e_act = fused("act") ? cal.Get("elementwise.glu_fused") : cal.Get("elementwise.glu_eager");
  k.n_act = fused("act") ? cal.Get("kernels.glu_fused") : cal.Get("kernels.glu_eager");
  k.e_gelu = cal.Get("elementwise.gelu");
  k.n_gelu = cal.Get("kernels.gelu");
  k.e_residual = cal.Get("elementwise.residual");
  // F§1 autocast over fp32 parameters (Composer amp_bf16 with FSDP mixed_precision DEFAULT): the
  // residual stream stays fp32 and each forward casts every weight to bf16 again.
  if (FwOr(cal, fw, "autocast_fp32_params") > 0.5) {
    k.e_fp32_residual = cal.Get("elementwise.fp32_residual_extra");
    k.e_weight_cast = cal.Get("elementwise.autocast_weight_cast");
  }
  k.n_residual = cal.Get("kernels.residual");
  // F§2 launch costs: CUDA graphs replay the step without host dispatch.
  const bool graphs = FwOr(cal, fw, "cuda_graphs") > 0.5;
  k.kernel_gap_s = cal.Get(graphs ? "kernel_gap_s.cuda_graphs" : "kernel_gap_s");
  k.cpu_op_s = graphs ? 0.0 : cal.Get("cpu_op_s");
  // The ops one layer's forward dispatches from the host (views, casts, dropout and RNG included):
  // the framework's eager modules, or the compiled graph's kernel launches.
  k.host_ops_per_layer = FwOr(cal, fw, tr.compile ? "compiled_host_ops_per_layer" : "host_ops_per_layer");
  // F§3 cross-entropy: the job's loss, or the framework's default (1 standard, 2 chunked, 3 fused).
  LossKind loss = tr.loss;
  if (loss == LossKind::kAuto) {
    const double d = tr.compile ? 3 : FwOr(cal, fw, "loss");
    loss = d > 2.5 ? LossKind::kFused : d > 1.5 ? LossKind::kChunked : LossKind::kStandard;
  }
  k.loss_bytes_per_logit = cal.Get(loss == LossKind::kFused     ? "loss_bytes_per_logit.fused"
                                   : loss == LossKind::kChunked ? "loss_bytes_per_logit.chunked"
                                                                : "loss_bytes_per_logit.standard");
  // F§4 attention kernel: 3 = FlashAttention-3 / cuDNN fused attention where the family has a
  // measured value for it (Hopper), else FlashAttention-2.
  const std::string fam = g.family.empty() ? "default" : g.family;
  if (FwOr(cal, fw, "attention_kernel") > 2.5 && cal.Has("flash3_attention_eff." + fam))
    k.flash_eff = cal.Get("flash3_attention_eff." + fam);
  // F§5 overlap of data-parallel traffic with compute, and TP userbuffers.
  const std::string dp_key = "framework." + fw + ".dp_overlap";
  k.dp_overlap = cal.Has(dp_key) ? cal.Get(dp_key) : cal.Get("dp_comm_overlap");
  k.nccl_overlap_slowdown = cal.Get("nccl_overlap_slowdown");
  k.tp_userbuffers = FwOr(cal, fw, "tp_comm_overlap") > 0.5;
  k.fused_softmax = FwOr(cal, fw, "fused_softmax") > 0.5;
  k.e_scores = cal.Get("elementwise.attention_scores_fused");
  // F§6 fp8: extra bytes per quantized element for the recipe (fused casts when compiled).
  if (tr.precision == Precision::kFp8) {
    const std::string r = ToString(tr.fp8_recipe);
    const std::string which = tr.compile || FwOr(cal, fw, "fused_fp8_cast") > 0.5 ? "fused" : "eager";
    k.fp8_cast_bytes = cal.Get("fp8_cast_bytes." + r + "." + which);
  }
  // F§7 fixed per-step work (logging, callbacks, loss sync) of the framework's loop.
  k.step_fixed_s = FwOr(cal, fw, "step_fixed_s");
  // F§9 ZeRO-3 as DeepSpeed runs it: per-module pre/post hooks that fetch and release parameters,
  // each a run of host ops at the host dispatch cost (F§2's cpu_op_s; none under CUDA graphs).
  k.zero3_hook_s = FwOr(cal, fw, "zero3_host_ops_per_module") * k.cpu_op_s;
}

EfficiencyConstants ResolveConstants(const GpuSpec& g, const LinkSpec& intra, const LinkSpec& inter, Precision p,
                                     const Calibration& cal) {
  EfficiencyConstants k;
  const std::string fam = g.family.empty() ? "default" : g.family;
  // A GPU's own MAMF (GB200 runs its dies at a higher clock than HGX B200) before its family's.
  const std::string mm = cal.Has("matmul_eff_max." + g.id) ? "matmul_eff_max." + g.id : "matmul_eff_max." + fam;
  k.matmul_eff_max = p == Precision::kFp8 && cal.Has(mm + ".fp8") ? cal.Get(mm + ".fp8") : CalOr(cal, mm, "matmul_eff_max.default");
  // H§1 a power-limited part sustains a lower clock than the part its catalog peaks come from.
  k.clock_factor = cal.Has("sustained_clock_factor." + g.id) ? cal.Get("sustained_clock_factor." + g.id) : 1.0;
  // C§2 GEMM shape constants of the family (fit to its microbench.csv GEMM rows), else the default.
  k.matmul_dim_half = CalOr(cal, "matmul_dim_half." + fam, "matmul_dim_half");
  k.matmul_fixed_s = CalOr(cal, "matmul_fixed_s." + fam, "matmul_fixed_s");
  k.flash_eff = CalOr(cal, "flash_attention_eff." + fam, "flash_attention_eff.default");
  k.eager_attn_eff = CalOr(cal, "eager_attention_eff." + fam, "eager_attention_eff.default");
  k.hbm_eff = cal.Get("hbm_eff");
  k.dequant_eff_nf4 = cal.Get("dequant_eff.nf4");
  k.dequant_eff_awq = cal.Get("dequant_eff.awq");
  k.framework_overhead = cal.Get("framework_overhead");
  const std::string ic = LinkClass(intra);
  // NVLink generation first (nvlink3), then the link class (nvlink, pcie, ...).
  const std::string gen = intra.id.find("nvlink3") != std::string::npos ? "nvlink3" : "";
  if (ic == "nvswitch" || ic == "nvlink") k.intra_eff = CalOr(cal, "link_eff." + gen, "link_eff.nvlink");
  else k.intra_eff = CalOr(cal, "link_eff." + ic, "link_eff.pcie");
  k.intra_allreduce_eff = k.intra_eff;
  if (ic == "nvswitch") k.intra_allreduce_eff = CalOr(cal, "link_eff." + intra.id + ".all_reduce", "link_eff.nvswitch.all_reduce");
  k.inter_eff = CalOr(cal, "link_eff." + inter.kind, "link_eff.tcp");
  k.tcp_penalty = cal.Get("tcp_host_copy_penalty");
  k.hierarchical_inter_factor = cal.Get("hierarchical_inter_factor");
  k.collective_latency_s = cal.Get("collective_latency_s");
  k.tp_overlap = cal.Get("tp_comm_overlap");
  k.dp_overlap = cal.Get("dp_comm_overlap");
  k.cp_overlap = cal.Get("cp_comm_overlap");
  k.pp_overlap = cal.Get("pp_comm_overlap");
  k.optimizer_bytes_per_param = cal.Get("optimizer_bytes_per_param");
  return k;
}

// H§2 which constants used for this GPU are not measured on its family: "" when all are.
std::string EfficiencyNote(const GpuSpec& g, const TrainingSpec& tr, const Calibration& cal, const EfficiencyConstants& k) {
  const std::string fam = g.family.empty() ? "default" : g.family;
  // Measured means measured on this GPU's silicon: the flags are keyed by GPU id (an A10G or RTX
  // 3090 is family ampere but not the A100's GA100 die).
  auto flag = [&](const std::string& what) { return cal.Has(what + "." + g.id); };
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    return std::string(b);
  };
  std::vector<std::string> parts;
  if (!flag("mamf_measured"))
    parts.push_back("matmul ceiling " + num(k.matmul_eff_max) + " is assumed or borrowed from its family (no MAMF measurement for " + g.id + ")");
  else if (tr.precision == Precision::kFp8 && !cal.Has("matmul_eff_max." + fam + ".fp8"))
    parts.push_back("fp8 matmul ceiling " + num(k.matmul_eff_max) + " is the bf16 MAMF ratio (no fp8 MAMF for " + g.id + ")");
  if (!flag("attention_measured"))
    parts.push_back("attention efficiency " + num(tr.flash_attention ? k.flash_eff : k.eager_attn_eff) +
                    " is borrowed or assumed (no attention measurement for " + g.id + ")");
  if (!flag("gemm_measured"))
    parts.push_back("GEMM shape constants (d_half " + num(k.matmul_dim_half) + ", fixed " + num(k.matmul_fixed_s * 1e6) +
                    " us) are borrowed (no GEMM microbenchmark for " + g.id + ")");
  if (!flag("hbm_measured"))
    parts.push_back("hbm_eff " + num(k.hbm_eff) + " is the A100/H100 copy benchmark's (none for " + g.id + ")");
  if (k.clock_factor != 1)
    parts.push_back("compute runs at a sustained-clock factor of " + num(k.clock_factor) +
                    " for its power limit (power^" + num(cal.Get("power_clock_exponent")) + ", docs/model/frameworks.md H§1)");
  if (parts.empty()) return "";
  std::string out = g.id + ": ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

}  // namespace

Result<HardwareContext> ResolveHardware(const Job& job, const Catalog& catalog, const Calibration& cal) {
  HardwareContext hw;
  hw.cal = cal;
  const ClusterSpec& c = job.cluster;
  auto where = [&](const std::string& key) {
    auto it = job.set_keys.find(key);
    return it != job.set_keys.end() ? it->second : Location{job.source, 0, key};
  };
  auto gpu = catalog.FindGpu(c.gpu);
  if (!gpu.ok()) return Status::BadInput(where("cluster.gpu"), gpu.status().reason());
  hw.gpu = *gpu;
  // N§5 intra-node default: the GPU's NVLink through NVSwitch on 4+-GPU baseboards, a bridge for
  // pairs, otherwise PCIe of the GPU's generation.
  std::string intra_id = c.intra_node;
  if (intra_id.empty()) {
    hw.intra_default = true;
    const std::string& l = hw.gpu.intra_link;
    if (l.rfind("nvlink", 0) == 0 && l != "nvlink-bridge") {
      intra_id = c.gpus_per_node > 2 && l != "nvlink2" ? "nvswitch-" + l : l;
    } else if (l == "nvlink-bridge" && c.gpus_per_node <= 2) {
      intra_id = "nvlink-bridge";
    } else if (l == "xgmi") {
      intra_id = hw.gpu.id.find("mi250") != std::string::npos ? "xgmi-mi250x" : "xgmi-mi300x";
    } else if (auto own = catalog.FindLink(l); own.ok() && own->kind != "pcie") {
      intra_id = l;  // N§5 the GPU's own fabric row (Huawei HCCS, ...)
    } else {
      const int gen = static_cast<int>(hw.gpu.pcie_gen.value_or(4));
      intra_id = "pcie" + std::to_string(gen) + "-x16";
    }
  }
  auto intra = catalog.FindLink(intra_id);
  if (!intra.ok()) return Status::BadInput(where("cluster.intra_node"), intra.status().reason());
  hw.intra = *intra;
  hw.intra_bytes_per_s = hw.intra.bw_bytes_per_s_per_dir;
  if (hw.intra.id == "nvlink-bridge") hw.intra_bytes_per_s = hw.gpu.nvlink_bytes_per_s_per_dir.value_or(0);
  // N§5 a GPU whose own NVLink is slower than the fabric row (A800, H800: 200 GB/s per direction
  // on an NVLink3/4 baseboard) runs at its own rate.
  if ((hw.intra.kind == "nvlink" || hw.intra.kind == "nvswitch") && hw.gpu.nvlink_bytes_per_s_per_dir &&
      *hw.gpu.nvlink_bytes_per_s_per_dir > 0)
    hw.intra_bytes_per_s = std::min(hw.intra_bytes_per_s, *hw.gpu.nvlink_bytes_per_s_per_dir);
  if (hw.intra_bytes_per_s <= 0)
    return Status::BadInput(where("cluster.intra_node"), "link '" + hw.intra.id + "' has no known bandwidth for " + hw.gpu.id);
  // N§5 network default: datacenter NVLink parts get one InfiniBand port per GPU (NDR for Hopper
  // and newer, HDR for Ampere/Volta: the DGX reference designs); PCIe cards get 25 GbE TCP.
  std::string net_id = c.network;
  if (net_id.empty()) {
    hw.inter_default = true;
    const std::string& f = hw.gpu.family;
    const bool dc = (hw.gpu.intra_link.rfind("nvlink", 0) == 0 && hw.gpu.intra_link != "nvlink-bridge") ||
                    hw.gpu.intra_link == "xgmi" || hw.gpu.family == "gaudi";
    net_id = !dc ? "tcp-25g" : (f == "ampere" || f == "volta") ? "ib-hdr" : "ib-ndr";
  }
  auto inter = catalog.FindLink(net_id);
  if (!inter.ok()) return Status::BadInput(where("cluster.network"), inter.status().reason());
  hw.inter = *inter;
  if (hw.inter.bw_bytes_per_s_per_dir <= 0)
    return Status::BadInput(where("cluster.network"), "link '" + hw.inter.id + "' has no known bandwidth");
  const bool rdma_fabric = hw.inter.kind == "infiniband" || hw.inter.kind == "roce" || hw.inter.kind == "efa" ||
                           hw.inter.kind == "tcpx" || hw.inter.kind == "tcpxo";
  hw.rdma = rdma_fabric && c.gpudirect_rdma;
  const bool tcp = hw.inter.kind == "tcp";
  hw.nics_per_node = c.nics_per_node > 0 ? static_cast<double>(c.nics_per_node)
                     : tcp                ? 1.0
                                          : static_cast<double>(c.gpus_per_node);
  hw.inter_bytes_per_s_per_gpu =
      hw.inter.bw_bytes_per_s_per_dir * hw.nics_per_node / static_cast<double>(c.gpus_per_node) / c.oversubscription;
  if (!c.storage.empty()) {
    auto st = catalog.FindStorage(c.storage);
    if (!st.ok()) return Status::BadInput(where("cluster.storage"), st.status().reason());
    hw.storage = *st;
  }
  const int pcie_gen = static_cast<int>(hw.gpu.pcie_gen.value_or(4));
  auto host = catalog.FindLink("pcie" + std::to_string(pcie_gen) + "-x16");
  if (!host.ok()) return Status::Internal("catalog lacks pcie" + std::to_string(pcie_gen) + "-x16");
  hw.host_bytes_per_s = host->bw_bytes_per_s_per_dir * cal.Get("link_eff.pcie");
  // N§5 no peer-to-peer DMA (GeForce): every byte goes GPU -> host memory -> GPU and crosses
  // PCIe twice, so GPU-to-GPU traffic gets at most half the GPU's PCIe line rate.
  if (!hw.gpu.p2p) hw.intra_bytes_per_s = std::min(hw.intra_bytes_per_s, host->bw_bytes_per_s_per_dir / 2);
  auto ndr = catalog.FindLink("ib-ndr");
  if (ndr.ok()) hw.rdma_reference_bytes_per_s = ndr->bw_bytes_per_s_per_dir * cal.Get("link_eff.infiniband");
  if (const std::string why = hw.gpu.PrecisionProblem(job.training.precision); !why.empty()) {
    // At the key that made the clash: the precision if given, else the GPU choice (the default precision).
    Location at = job.IsSet("training.precision") ? where("training.precision")
                  : job.IsSet("cluster.gpu")      ? where("cluster.gpu")
                                                  : Location{"command line", 0, "--precision"};
    if (at.file.empty() && at.line == 0) at.file = "command line";
    return Status::BadInput(at, why);
  }
  if (!hw.gpu.PeakFlops(job.training.precision))
    return Status::BadInput(where("training.precision"),
                            "GPU '" + hw.gpu.id + "' has no known dense " + ToString(job.training.precision) +
                                " peak (data/gpus.csv says unknown or unsupported)");
  if (!hw.gpu.mem_bw_bytes_per_s)
    return Status::BadInput({hw.gpu.where.file, hw.gpu.where.line, "mem_bw_gb_per_s"},
                            "GPU '" + hw.gpu.id + "' has no known memory bandwidth; the step estimate needs it");
  hw.k = ResolveConstants(hw.gpu, hw.intra, hw.inter, job.training.precision, cal);
  // H§1 a user's power limit (cluster.power_limit_w) below the board power the peaks are rated at:
  // sustained clock ~ power^power_clock_exponent (the same law as the catalog's power-limited rows).
  if (job.cluster.power_limit_w > 0) {
    if (!hw.gpu.tdp_w)
      return Status::BadInput(where("cluster.power_limit_w"), "GPU '" + hw.gpu.id + "' has no rated board power (tdp_w) to scale from");
    if (job.cluster.power_limit_w < *hw.gpu.tdp_w)
      hw.k.clock_factor *= std::pow(job.cluster.power_limit_w / *hw.gpu.tdp_w, cal.Get("power_clock_exponent"));
  }
  ResolveFramework(job.training, hw.gpu, cal, hw.k);
  hw.efficiency_note = EfficiencyNote(hw.gpu, job.training, cal, hw.k);
  return hw;
}

double ModelFlopsPerToken(const Arch& a, int64_t seq_len, bool frozen_base) {
  // C§1 llm-foundry convention: 6 x every (active) parameter + 12 x L x h x s; its benchmark
  // table's NumParams include the learned position table, and so does this count.
  // A frozen base (LoRA/QLoRA) skips the weight gradients: 4N instead of 6N (C§4).
  // The attention term is 6·L·s·(q·k width + attention-output width): 12·L·h·s whenever both are
  // h (every Llama/Qwen2/Mixtral/GPT-2 shape); Gemma's explicit head_dim and MLA differ (C§1).
  const double n = static_cast<double>(CountParams(a).active);
  const double widths = static_cast<double>(a.QDim() + a.ODim());
  return (frozen_base ? 4 : 6) * n + 6.0 * a.layers * widths * static_cast<double>(seq_len);
}

namespace {

struct GroupPlacement {
  int64_t tp_per_node, cp_per_node, ep_per_node;
};

// N§6 rank order tp (innermost), cp, dp (ep inside dp), pp (outermost), as Megatron-LM lays it out,
// in NVLink domains of g GPUs (the node, or an NVL72 rack).
GroupPlacement Place(const Job& j, int64_t g) {
  const ParallelSpec& p = j.parallel;
  GroupPlacement gp;
  gp.tp_per_node = std::min(p.tp, g);
  const int64_t after_tp = std::max<int64_t>(1, g / p.tp);
  gp.cp_per_node = std::min(p.cp, after_tp);
  const int64_t after_cp = std::max<int64_t>(1, after_tp / p.cp);
  gp.ep_per_node = std::min(p.ep, after_cp);
  // pp is outermost: where its hops cross nodes is PipelineP2P's (communication.cc, P§4).
  return gp;
}

// C§2 time of a GEMM of m x n x k at efficiency eff_max x d/(d + d_half) plus fixed time.
inline double GemmTime(double m, double n, double k, double peak, const EfficiencyConstants& c) {
  const double d = std::min({m, n, k});
  const double eff = c.matmul_eff_max * d / (d + c.matmul_dim_half);
  return 2 * m * n * k / (peak * eff) + c.matmul_fixed_s;
}

}  // namespace

StepEstimate EstimateStep(const Job& job, const HardwareContext& hw) {
  StepEstimate e;
  const Arch& a = job.arch;
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  const EfficiencyConstants& k = hw.k;
  const double t = static_cast<double>(par.tp);
  const double peak_mm = *hw.gpu.PeakFlops(tr.precision);
  // Attention and the output layer run in 16-bit even in fp8 recipes (Transformer Engine, torchao).
  const double peak16 = tr.precision == Precision::kFp32 ? peak_mm
                        : hw.gpu.PeakFlops(Precision::kBf16).value_or(peak_mm);
  e.peak_flops = peak_mm;
  // H§1 the rates the kernels run at: the catalog peaks times the sustained-clock factor of a
  // power-limited part (MFU stays against the catalog peak).
  const double run_mm = peak_mm * k.clock_factor, run16 = peak16 * k.clock_factor;
  // The length a micro-batch is computed at: seq_len unless samples are padded only to the
  // longest of their micro-batch (docs/model/finetune.md).
  const double s = ComputeSeqLen(tr);
  const double T = static_cast<double>(tr.micro_batch) * s / par.cp;  // tokens per micro-batch per GPU
  const double ab = ActivationBytesPerElement(tr.precision);
  const int64_t layers = (a.layers + par.pp - 1) / par.pp;
  const double L = static_cast<double>(layers);
  e.grad_accum = std::max<int64_t>(1, GradAccumSteps(job));
  const double m = static_cast<double>(e.grad_accum);
  const bool moe = a.IsMoe();
  const double moe_frac = moe ? static_cast<double>(a.MoeLayers()) / a.layers : 0;
  const double h = static_cast<double>(a.hidden);

  // ---- C§2 matmuls of one layer, forward, local to this GPU.
  double t_lin_fwd = GemmTime(T, (a.QDim() + 2.0 * a.KvDim()) / t, h, run_mm, k)  // fused q,k,v
                     + GemmTime(T, h, a.QDim() / t, run_mm, k);                    // o_proj
  double flops_lin_fwd = 2 * T * (h * (a.QDim() + 2.0 * a.KvDim()) + a.QDim() * h) / t;
  const double up_n = (a.MlpMatrices() - 1) * static_cast<double>(a.Ffn()) / t;
  const double t_dense_mlp = GemmTime(T, up_n, h, run_mm, k) + GemmTime(T, h, a.Ffn() / t, run_mm, k);
  const double f_dense_mlp = 2 * T * a.MlpMatrices() * h * a.Ffn() / t;
  double t_mlp = t_dense_mlp, f_mlp = f_dense_mlp;
  if (moe) {
    // Routed experts as grouped GEMMs over the T x k routed tokens (+ shared experts).
    const double routed = T * (a.experts_per_token + a.shared_experts);
    const double mup = (a.MlpMatrices() - 1) * static_cast<double>(a.MoeFfn()) / t;
    const double t_moe = GemmTime(routed, mup, h, run_mm, k) + GemmTime(routed, h, a.MoeFfn() / t, run_mm, k) +
                         GemmTime(T, static_cast<double>(a.experts), h, run16, k);
    const double f_moe = 2 * routed * a.MlpMatrices() * h * a.MoeFfn() / t + 2 * T * h * a.experts;
    t_mlp = (1 - moe_frac) * t_dense_mlp + moe_frac * t_moe;
    f_mlp = (1 - moe_frac) * f_dense_mlp + moe_frac * f_moe;
  }
  t_lin_fwd += t_mlp;
  flops_lin_fwd += f_mlp;
  // C§2 attention core: QK^T and AV, 2 x 2 x T x s x (a d) / t; causal flash kernels skip the
  // masked half; eager attention computes the full matrix.
  const double causal = tr.flash_attention ? 0.5 : 1.0;
  const double flops_attn_fwd = 4 * T * s * a.QDim() / t * causal;
  const double attn_eff = tr.flash_attention ? k.flash_eff : k.eager_attn_eff;
  const double hbm = *hw.gpu.mem_bw_bytes_per_s * k.hbm_eff;
  double t_attn_fwd = flops_attn_fwd / (run16 * attn_eff);
  if (!tr.flash_attention && k.fused_softmax) {
    // F§4 Megatron's unfused-attention path: QK^T and AV as batched GEMMs and one fused
    // scale-mask-softmax kernel; the T x s x heads/t scores are written by the QK^T GEMM, read and
    // written by the softmax and read by AV (elementwise.attention_scores_fused per score), and the
    // pass takes the longer of that traffic and the GEMM FLOPs at the matmul ceiling.
    const double scores = T * s * a.heads / t;
    t_attn_fwd = std::max(flops_attn_fwd / (run16 * k.matmul_eff_max), scores * k.e_scores * ab / hbm);
  }
  const double attn_bwd_factor = tr.flash_attention ? 2.5 : 2.0;  // FlashAttention-2 §4.1: 5 vs 2 matmuls
  // C§3 / F§1 elementwise traffic (norms, residual adds, rotary, activation), memory-bound: the
  // elements each op reads and writes as the framework runs it (fused, eager or compiled).
  const double rep = par.sequence_parallel ? t : 1.0;
  const bool layernorm = a.norm == NormKind::kLayerNorm, rotary = a.position == PositionKind::kRotary;
  const double norms = static_cast<double>(a.norms_per_layer);
  const double f_act = moe ? a.MoeFfn() * (a.experts_per_token + a.shared_experts) : static_cast<double>(a.Ffn());
  const double e_act = a.GatedMlp() ? k.e_act : k.e_gelu, n_act = a.GatedMlp() ? k.n_act : k.n_gelu;
  const double elem_elems =
      T * ((norms * (layernorm ? k.e_norm_ln : k.e_norm) + 2 * k.e_residual) * h / rep +
           (rotary ? k.e_rope * (a.QDim() + a.KvDim()) / t : 0.0) + e_act * f_act / t);
  // Weight casts of autocast over fp32 parameters: per forward pass, every local weight of the layer.
  const double layer_weights = (h * (a.QDim() + 2.0 * a.KvDim()) + a.QDim() * h) / t +
                               a.MlpMatrices() * h * (moe ? a.MoeFfn() * (a.experts_per_token + a.shared_experts) : a.Ffn()) / t;
  const double t_elem_fwd =
      (elem_elems + T * k.e_fp32_residual * h / rep) * ab / hbm + layer_weights * k.e_weight_cast * ab / hbm;
  // F§2 launch costs of one layer's forward: each non-GEMM kernel leaves the GPU idle for
  // kernel_gap_s (GEMMs carry matmul_fixed_s), and the host dispatches the layer's ops in
  // host_ops_per_layer x cpu_op_s; a pass takes the longer of GPU and host (backward: 2x).
  const double kernels = norms * (layernorm ? k.n_norm_ln : k.n_norm) + 2 * k.n_residual +
                         (rotary ? 2 * k.n_rope : 0.0) + n_act + 1;
  const double host_fwd = k.host_ops_per_layer * k.cpu_op_s;
  const double gap_fwd = kernels * k.kernel_gap_s;
  // F§6 fp8: each linear's input is quantized in forward and its output gradient in backward,
  // at fp8_cast_bytes per element for the recipe.
  double t_cast_fwd = 0, t_cast_bwd = 0;
  if (tr.precision == Precision::kFp8) {
    t_cast_fwd = T * (2 * h / rep + a.QDim() / t + f_act / t) * k.fp8_cast_bytes / hbm;
    t_cast_bwd = T * ((a.QDim() + 2.0 * a.KvDim()) / t + 2 * h / rep + (a.MlpMatrices() - 1) * f_act / t) *
                 k.fp8_cast_bytes / hbm;
  }
  // Output layer on the last stage (the slowest stage carries it).
  const double t_logits_fwd = GemmTime(T, a.vocab / t, h, run16, k);
  // F§3 cross-entropy over the T x V/t logits, forward and backward, memory-bound.
  const double t_loss = T * a.vocab / t * k.loss_bytes_per_logit / hbm;
  const double flops_logits_fwd = 2 * T * h * a.vocab / t;

  // C§4 backward: input gradients (1x forward) and weight gradients (1x) per linear; a frozen
  // LoRA/QLoRA base computes no weight gradients (the adapters' rank-r GEMMs are negligible).
  const bool frozen_base = IsAdapterMethod(tr.method);
  const double bwd_lin = frozen_base ? 1.0 : 2.0;
  // LoRA-family adapters and a quantized base's dequantization, per layer and pass (finetune.md).
  const AdapterCost adapter = AdapterLayerCost(job, hw, T);
  const double t_dequant = DequantLayerTime(job, hw);
  // F§2 the adapters' own launches (finetune.md) add to the host's ops and the GPU's kernel gaps.
  const double host_lora_fwd = (adapter.fwd_gemms + adapter.fwd_kernels) * k.cpu_op_s;
  const double host_lora_bwd = (adapter.bwd_gemms + adapter.bwd_kernels) * k.cpu_op_s;
  double t_layer_fwd = std::max(host_fwd + host_lora_fwd, t_lin_fwd + t_attn_fwd + t_elem_fwd + gap_fwd + t_cast_fwd +
                                                              adapter.fwd_s + adapter.fwd_kernels * k.kernel_gap_s + t_dequant);
  double t_layer_bwd = std::max(2 * host_fwd + host_lora_bwd,
                                bwd_lin * t_lin_fwd + attn_bwd_factor * t_attn_fwd + 2 * (t_elem_fwd + gap_fwd) +
                                    adapter.bwd_kernels * k.kernel_gap_s +
                                                  t_cast_bwd + adapter.bwd_s + t_dequant);
  double t_recompute = 0, flops_recompute = 0;
  switch (tr.recompute) {
    case Recompute::kNone: break;
    case Recompute::kFull:
      t_recompute = t_layer_fwd;
      flops_recompute = flops_lin_fwd + flops_attn_fwd;
      break;
    case Recompute::kSelective:
      if (tr.flash_attention) {  // op-level SAC: half the matmuls and the pointwise ops again
        t_recompute = 0.5 * t_lin_fwd + t_elem_fwd;
        flops_recompute = 0.5 * flops_lin_fwd;
      } else {                   // Korthikanti: the attention core again
        t_recompute = t_attn_fwd;
        flops_recompute = flops_attn_fwd;
      }
      break;
  }
  // C§4 the output layer: forward, input gradient and (unless the base is frozen) weight gradient.
  const double logits_passes = frozen_base ? 2 : 3;
  // FT§6 offloaded activations move on a side stream behind this micro-batch's forward and backward.
  const double t_mb_compute =
      (L * (t_layer_fwd + t_layer_bwd + t_recompute) + logits_passes * t_logits_fwd + t_loss) * k.framework_overhead +
      ActivationOffloadTime(job, hw, L, L * t_layer_fwd * k.framework_overhead,
                            L * (t_layer_bwd + t_recompute) * k.framework_overhead);
  const double t_mb_fwd = (L * t_layer_fwd + t_logits_fwd) * k.framework_overhead;
  const double t_mb_bwd = t_mb_compute - t_mb_fwd;
  // Every GPU runs its stage's layers; only the last stage's GPUs run the output layer.
  const double num_gpus = static_cast<double>(job.cluster.num_gpus);
  e.hardware_flops_per_step =
      m * (L * ((1 + bwd_lin) * flops_lin_fwd + (1 + attn_bwd_factor) * flops_attn_fwd + flops_recompute +
                adapter.fwd_flops + adapter.bwd_flops) * num_gpus +
           logits_passes * flops_logits_fwd * num_gpus / par.pp);

  StepBreakdown& b = e.breakdown;
  b.compute_s = m * t_mb_compute;
  const int64_t domain = NvlinkDomainGpus(job, hw);
  const GroupPlacement gp = Place(job, domain);
  CommDetail& cd = e.comm;
  cd.tp_crosses_nodes = par.tp > domain;

  // ---- N§4 tensor parallel: 2 all-reduces of T x h per layer forward and 2 backward (+2 for a
  // full recompute); with SP the same bytes move as all-gather + reduce-scatter.
  if (par.tp > 1) {
    const double msg = T * h * ab;
    const double per_layer = (4 + (tr.recompute == Recompute::kFull ? 2 : 0));
    // Without SP: all-reduces (NVLS-capable switches reduce in the fabric). With SP: an all-gather
    // and a reduce-scatter of the same bytes, which get no in-switch reduction.
    const double t_one = par.sequence_parallel
                             ? CollectiveTime(Collective::kAllGather, msg, par.tp, gp.tp_per_node, hw) +
                                   CollectiveTime(Collective::kReduceScatter, msg, par.tp, gp.tp_per_node, hw)
                             : CollectiveTime(Collective::kAllReduce, msg, par.tp, gp.tp_per_node, hw);
    cd.tp_bytes = m * L * per_layer * msg;
    cd.tp_s = m * L * per_layer * t_one;
    // F§5 TE userbuffers (sequence parallel): each all-gather / reduce-scatter is split into tp
    // chunks pipelined with the GEMM's chunks; only the first chunk's transfer is exposed.
    b.tp_comm_s = (k.tp_userbuffers && par.sequence_parallel ? 1 / t : 1 - k.tp_overlap) * cd.tp_s;
  }
  // ---- N§4 context parallel: ring passing of K and V (cp - 1 steps forward, twice backward).
  if (par.cp > 1) {
    const double kv_block = 2 * T * a.KvDim() / t * ab;
    const double t_step = CollectiveTime(Collective::kSendRecv, kv_block, par.cp, gp.cp_per_node, hw);
    cd.cp_bytes = m * L * 3 * (par.cp - 1) * kv_block;
    cd.cp_s = m * L * 3 * (par.cp - 1) * t_step;
    const double attn_time = m * L * (1 + attn_bwd_factor) * t_attn_fwd;
    b.cp_comm_s = std::max(0.0, cd.cp_s - k.cp_overlap * attn_time);
  }
  // ---- N§4 pipeline: activations T x h (/t with SP) each way per micro-batch and virtual stage.
  // P§4 placed as Megatron-LM places ranks: a boundary whose neighbours sit on different nodes
  // goes over the node's NICs, shared by every rank of the node that sends across; the pipeline is
  // paced by its slowest hop. The next micro-batch's compute hides pp_comm_overlap of it, but
  // never more than that share of the compute there is.
  if (par.pp > 1) {
    PipelineP2P(par, domain, T * h * ab / rep, m, hw, cd);
    b.pp_comm_s = cd.pp_s - k.pp_overlap * std::min(cd.pp_s, b.compute_s);
  }
  // ---- N§4 expert parallel: dispatch + combine all-to-all, forward and backward.
  if (moe && par.ep > 1) {
    const double msg = T * a.experts_per_token * h * ab;
    const double t_one = CollectiveTime(Collective::kAllToAll, msg, par.ep, gp.ep_per_node, hw);
    const double moe_layers = L * moe_frac;
    cd.ep_bytes = m * moe_layers * 4 * msg;
    cd.ep_s = m * moe_layers * 4 * t_one;
    b.ep_comm_s = cd.ep_s;
  }
  // ---- N§4 data parallel / ZeRO / FSDP over dp x cp.
  const int64_t dpn = par.dp * par.cp;
  const ParamCounts pc = CountParams(a);
  const bool lora = IsAdapterMethod(tr.method);
  const double params_local = static_cast<double>(pc.total) / (t * par.pp);
  const double trainable_local = lora ? static_cast<double>(CountLoraParams(a, tr.lora)) / (t * par.pp) : params_local;
  const double gbytes = GradBytesPerParam(job), wbytes = WeightBytesPerParam(job);
  if (dpn > 1) {
    const int64_t dp_per_node = std::min<int64_t>(dpn, std::max<int64_t>(1, domain / par.tp));
    cd.dp_crosses_nodes = dp_per_node < dpn;
    const double G = trainable_local * gbytes, W = (lora ? params_local : trainable_local) * wbytes;
    cd.dp_busbw_bytes_per_s = BusBandwidth(Collective::kAllReduce, G, dpn, dp_per_node, hw);
    const double ov = k.dp_overlap;
    if (par.zero == 1) {
      // ZeRO-1: reduce-scatter the gradients and all-gather the updated weights once per step:
      // the same 2 x volume as an all-reduce (ZeRO paper §7).
      const double t_rs = CollectiveTime(Collective::kReduceScatter, G, dpn, dp_per_node, hw);
      const double t_ag = CollectiveTime(Collective::kAllGather, trainable_local * wbytes, dpn, dp_per_node, hw);
      cd.dp_bytes = G + trainable_local * wbytes;
      cd.dp_s = t_rs + t_ag;
      b.dp_comm_s = std::max(0.0, t_rs - ov * t_mb_bwd) + std::max(0.0, t_ag - ov * t_mb_fwd);
    } else if (par.zero == 0) {
      const double t_ar = CollectiveTime(Collective::kAllReduce, G, dpn, dp_per_node, hw);
      cd.dp_bytes = 2 * G;
      cd.dp_s = t_ar;
      b.dp_comm_s = std::max(0.0, t_ar - ov * t_mb_bwd);  // overlapped with the last backward

    } else if (par.zero == 2) {
      const double t_rs = CollectiveTime(Collective::kReduceScatter, G, dpn, dp_per_node, hw);
      const double t_ag = CollectiveTime(Collective::kAllGather, trainable_local * wbytes, dpn, dp_per_node, hw);
      cd.dp_bytes = m * G + trainable_local * wbytes;
      cd.dp_s = m * t_rs + t_ag;
      b.dp_comm_s = m * std::max(0.0, t_rs - ov * t_mb_bwd) + std::max(0.0, t_ag - ov * t_mb_fwd);
    } else {
      // FSDP / ZeRO-3: all-gather weights in forward and again in backward, reduce-scatter grads,
      // every micro-batch (the weights are resharded after each pass).
      const double t_ag = CollectiveTime(Collective::kAllGather, W, dpn, dp_per_node, hw);
      const double t_rs = CollectiveTime(Collective::kReduceScatter, G, dpn, dp_per_node, hw);
      cd.dp_bytes = m * (2 * W + G);
      cd.dp_s = m * (2 * t_ag + t_rs);
      b.dp_comm_s = m * (std::max(0.0, t_ag - ov * t_mb_fwd) + std::max(0.0, t_ag + t_rs - ov * t_mb_bwd));
    }
  }
  // F§5 NCCL kernels that overlap compute occupy SMs and HBM: the hidden share of the DP traffic
  // still costs nccl_overlap_slowdown of its duration (counted with the DP traffic it comes from).
  b.dp_comm_s += k.nccl_overlap_slowdown * std::max(0.0, cd.dp_s - b.dp_comm_s);
  // ---- P§1 bubble: (p - 1) / v micro-batch times (Narayanan et al. 2021 §2.2).
  if (par.pp > 1) b.bubble_s = static_cast<double>(par.pp - 1) / par.vpp * t_mb_compute;
  // ---- C§5 optimizer step: memory-bound pass over the local (sharded) trainable parameters.
  const double opt_params = trainable_local / (par.zero >= 1 ? static_cast<double>(dpn) : 1.0);
  b.optimizer_s = OptimizerStepTime(job, hw, opt_params, gbytes, wbytes);
  b.overhead_s = k.step_fixed_s;
  // F§9 DeepSpeed ZeRO-3's parameter hooks run on the host for every module in every pass (forward,
  // recompute, backward) of every micro-batch, one GPU or many: serial host time the GPU waits on.
  if (par.zero == 3 && k.zero3_hook_s > 0) {
    const double modules = L * (4.0 + a.MlpMatrices() + a.norms_per_layer) + 2;  // + embedding, head
    const double passes = tr.recompute == Recompute::kFull ? 3 : 2;
    b.overhead_s += m * modules * passes * k.zero3_hook_s;
  }
  const double pre_io = b.Total();
  // ---- I§1 data loading: the step's tokens read from storage, overlapped with the step.
  const double nodes = std::ceil(static_cast<double>(job.cluster.num_gpus) / job.cluster.gpus_per_node);
  e.tokens_per_step = static_cast<double>(tr.global_batch) * s;
  if (hw.storage && hw.storage->read_bytes_per_s) {
    const double bw = *hw.storage->read_bytes_per_s * (hw.storage->throughput_scope == "per-node" || hw.storage->tier == "local-nvme" ? nodes : 1.0);
    const double t_read = e.tokens_per_step * tr.data_bytes_per_token / bw;
    b.data_s = std::max(0.0, t_read - pre_io);
  }
  // ---- I§2 checkpoints: size, write time on the storage tier, stall amortized per step.
  const double ckpt_per_param = tr.checkpoint_full_state && !lora ? wbytes + OptimizerBytesPerParam(job) : wbytes;
  e.checkpoint_bytes = lora ? static_cast<double>(CountLoraParams(a, tr.lora)) * 16 : static_cast<double>(pc.total) * ckpt_per_param;
  if (hw.storage && hw.storage->write_bytes_per_s) {
    const double bw = *hw.storage->write_bytes_per_s * (hw.storage->throughput_scope == "per-node" || hw.storage->tier == "local-nvme" ? nodes : 1.0);
    e.checkpoint_write_s = e.checkpoint_bytes / bw;
    // Async: only the device-to-host copy of this GPU's shard stalls training.
    const double stall = tr.checkpoint_async ? e.checkpoint_bytes / job.cluster.num_gpus / hw.host_bytes_per_s : e.checkpoint_write_s;
    const double steps_between = tr.checkpoint_interval_min * 60 / pre_io;
    b.checkpoint_s = stall / std::max(1.0, steps_between);
  }
  e.step_time_s = b.Total();
  const double gpus = static_cast<double>(job.cluster.num_gpus);
  e.tokens_per_s = e.tokens_per_step / e.step_time_s;
  e.tokens_per_s_per_gpu = e.tokens_per_s / gpus;
  e.useful_tokens_per_s_per_gpu = e.tokens_per_s_per_gpu * UsefulTokensPerSequence(tr) / s;
  e.model_flops_per_token = ModelFlopsPerToken(a, tr.seq_len, lora);
  e.mfu = e.tokens_per_s_per_gpu * e.model_flops_per_token / peak_mm;
  // HFU: the model FLOPs plus what recompute executes again (Korthikanti et al. 2022 §5).
  e.recompute_flops_per_step = m * L * flops_recompute * gpus;
  e.hfu = e.mfu + e.recompute_flops_per_step / e.step_time_s / gpus / peak_mm;
  e.model_tflops_per_gpu = e.tokens_per_s_per_gpu * e.model_flops_per_token / 1e12;
  if (tr.tokens > 0) {
    e.time_to_train_s = tr.tokens / e.tokens_per_s;
    e.gpu_hours = e.time_to_train_s * gpus / 3600;
  }
  return e;
}

namespace {
std::string ShortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
// 3 significant digits, without an exponent below a million.
std::string Rate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 1000 && v < 1e6 ? "%.0f" : "%.3g", v);
  return buf;
}
}  // namespace

std::vector<CommPart> CommParts(const Job& job, const HardwareContext& hw, const StepEstimate& e) {
  const StepBreakdown& b = e.breakdown;
  const ParallelSpec& p = job.parallel;
  const int64_t g = job.cluster.gpus_per_node;
  auto link = [&](bool inter) {
    char rate[96];
    // N§5 the rate one GPU gets inside a node (a GPU whose NVLink is cut, A800 or H800, runs below
    // its fabric's row), a node's NICs together between nodes.
    if (inter)
      std::snprintf(rate, sizeof rate, " (inter-node, %s Gb/s per node)",
                    Rate(hw.inter_bytes_per_s_per_gpu * static_cast<double>(g) * 8 / 1e9).c_str());
    else
      std::snprintf(rate, sizeof rate, " (intra-node, %.3g GB/s per GPU)", hw.intra_bytes_per_s / 1e9);
    return (inter ? hw.inter.name : hw.intra.name) + rate;
  };
  // N§6 placement: tp innermost, then cp, then dp (ep inside dp), pp outermost, in NVLink domains.
  const int64_t domain = NvlinkDomainGpus(job, hw);
  const bool cp_inter = p.tp * p.cp > domain, ep_inter = p.tp * p.cp * p.ep > domain;
  const bool pp_inter = e.comm.pp_crosses_nodes && e.comm.pp_cross_s >= e.comm.pp_intra_s;
  std::vector<CommPart> parts = {
      {"tp", "tensor-parallel collectives", b.tp_comm_s, e.comm.tp_crosses_nodes, link(e.comm.tp_crosses_nodes)},
      {"cp", "context-parallel K/V exchange", b.cp_comm_s, cp_inter, link(cp_inter)},
      {"pp", "pipeline send/recv", b.pp_comm_s, pp_inter, link(pp_inter)},
      {"dp", p.zero == 3 ? "ZeRO-3 weight gathers and gradient sync" : "data-parallel gradient sync", b.dp_comm_s,
       e.comm.dp_crosses_nodes, link(e.comm.dp_crosses_nodes)},
      {"ep", "expert all-to-all", b.ep_comm_s, ep_inter, link(ep_inter)},
  };
  std::erase_if(parts, [](const CommPart& c) { return c.exposed_s <= 0; });
  std::stable_sort(parts.begin(), parts.end(), [](const CommPart& x, const CommPart& y) { return x.exposed_s > y.exposed_s; });
  return parts;
}

namespace {

// The job as a user would restate it: keys gpuplan derived (dp, global batch) are derived again.
Job Underived(const Job& job) {
  Job j = job;
  if (!j.IsSet("parallel.dp")) j.parallel.dp = 0;
  if (!j.IsSet("training.global_batch")) j.training.global_batch = 0;
  return j;
}

// One claim: the job with `changes` (job keys, as `gpuplan estimate` flags set them), finalized,
// its hardware resolved again (when the catalog is at hand) and its step estimated again.
std::optional<WhatIf> Rerun(const Job& job, const Catalog* catalog, const HardwareContext& hw,
                            std::vector<std::pair<std::string, std::string>> changes) {
  Job j = Underived(job);
  WhatIf w;
  for (const auto& [key, value] : changes) {
    if (!SetJobKey(j, key, value, {"what-if", 0, key}).ok()) return std::nullopt;
    const JobKey* k = FindJobKey(key);
    w.flags += (w.flags.empty() ? "--" : " --") + (k ? k->flag : key) + " " + value;
  }
  if (!FinalizeJob(j).ok()) return std::nullopt;
  HardwareContext h = hw;
  if (catalog != nullptr) {
    auto r = ResolveHardware(j, *catalog, hw.cal);
    if (!r.ok()) return std::nullopt;
    h = *r;
  }
  w.changes = std::move(changes);
  w.step_time_s = EstimateStep(j, h).step_time_s;
  w.memory_bytes = EstimateMemory(j, hw.cal).total_bytes;
  w.fits = w.memory_bytes <= h.gpu.memory_bytes;
  return w;
}

// What-ifs worth naming for the largest part: each applies to the job as it is, and is kept only
// if it fits in memory and cuts the step by at least 5%.
std::vector<WhatIf> Candidates(const std::string& top, const Job& job, const Catalog* catalog,
                               const HardwareContext& hw, const StepEstimate& e) {
  using Changes = std::vector<std::pair<std::string, std::string>>;
  struct Try { int group; Changes changes; };  // within a group, a later try must beat the earlier
  std::vector<Try> tries;
  const ParallelSpec& p = job.parallel;
  const TrainingSpec& t = job.training;
  const std::string n = std::to_string(job.cluster.num_gpus);
  // RDMA on an RDMA fabric with GPUDirect off, else the NDR InfiniBand row, for traffic that
  // crosses nodes without it.
  auto try_rdma = [&](bool crosses) {
    if (crosses && !hw.rdma && catalog != nullptr) {
      const bool rdma_fabric = hw.inter.kind == "infiniband" || hw.inter.kind == "roce" || hw.inter.kind == "efa";
      if (rdma_fabric && !job.cluster.gpudirect_rdma) {
        tries.push_back({0, {{"cluster.gpudirect_rdma", "true"}}});
      } else if (catalog->FindLink("ib-ndr").ok()) {
        Changes c = {{"cluster.network", "ib-ndr"}};
        if (!job.cluster.gpudirect_rdma) c.push_back({"cluster.gpudirect_rdma", "true"});
        tries.push_back({0, c});
      }
    }
  };
  if (top == "dp") {
    try_rdma(e.comm.dp_crosses_nodes);
    if (p.zero == 3) tries.push_back({1, {{"parallel.zero", "2"}}});
    if (p.zero >= 2) tries.push_back({1, {{"parallel.zero", "1"}}});
    if (t.global_batch % (2 * t.micro_batch * p.dp) == 0)
      tries.push_back({2, {{"training.micro_batch", std::to_string(2 * t.micro_batch)}}});
  } else if (top == "comm") {
    // Exposed communication at or above comm_share_max: every lever on it, each re-estimated.
    const bool inter = e.comm.dp_crosses_nodes || e.comm.pp_crosses_nodes || e.comm.tp_crosses_nodes;
    try_rdma(inter);
    if (p.zero == 3) tries.push_back({1, {{"parallel.zero", "2"}}});
    if (p.zero >= 2) tries.push_back({1, {{"parallel.zero", "1"}}});
    // tp inside a node when it crosses nodes, else half of it (dp takes the rest).
    const int64_t tp = e.comm.tp_crosses_nodes ? job.cluster.gpus_per_node : p.tp / 2;
    if (p.tp > 1 && tp >= 1 && p.tp % tp == 0) {
      Changes c = {{"parallel.tp", std::to_string(tp)}, {"parallel.dp", std::to_string(p.dp * (p.tp / tp))}, {"cluster.num_gpus", n}};
      if (tp == 1 && p.sequence_parallel) c.push_back({"parallel.sequence_parallel", "false"});
      tries.push_back({2, c});
    }
    if (t.global_batch % (2 * t.micro_batch * p.dp) == 0)
      tries.push_back({3, {{"training.micro_batch", std::to_string(2 * t.micro_batch)}}});
    if (inter && hw.nics_per_node < static_cast<double>(job.cluster.gpus_per_node))
      tries.push_back({4, {{"cluster.nics_per_node", std::to_string(job.cluster.gpus_per_node)}}});
  } else if (top == "tp" && p.tp > 1) {
    const int64_t tp = e.comm.tp_crosses_nodes ? job.cluster.gpus_per_node : p.tp / 2;
    if (tp >= 1 && p.tp % tp == 0) {
      Changes c = {{"parallel.tp", std::to_string(tp)}, {"parallel.dp", std::to_string(p.dp * (p.tp / tp))}, {"cluster.num_gpus", n}};
      if (tp == 1 && p.sequence_parallel) c.push_back({"parallel.sequence_parallel", "false"});
      tries.push_back({0, c});
    }
  } else if (top == "bubble") {
    tries.push_back({0, {{"parallel.vpp", std::to_string(2 * p.vpp)}}});
    if (t.micro_batch > 1 && t.micro_batch % 2 == 0)
      tries.push_back({1, {{"training.micro_batch", std::to_string(t.micro_batch / 2)}}});
  } else if (top == "data" && catalog != nullptr) {
    for (const auto& s : catalog->storage)
      if (s.tier == "local-nvme" && s.read_bytes_per_s && (!hw.storage || s.provider == hw.storage->provider)) {
        tries.push_back({0, {{"cluster.storage", s.id}}});
        break;
      }
  } else if (top == "checkpoint") {
    if (!t.checkpoint_async) tries.push_back({0, {{"training.checkpoint_async", "true"}}});
    tries.push_back({0, {{"training.checkpoint_interval_min", ShortNumber(4 * t.checkpoint_interval_min)}}});
  }
  // A job that fits is only offered changes that still fit; one that does not fit is told the
  // times anyway (with "does not fit").
  const bool base_fits = EstimateMemory(job, hw.cal).total_bytes <= hw.gpu.memory_bytes;
  std::vector<WhatIf> out;
  std::map<int, double> best;
  for (auto& tr : tries) {
    auto w = Rerun(job, catalog, hw, std::move(tr.changes));
    if (!w || (base_fits && !w->fits)) continue;
    const double bar = 0.95 * (best.count(tr.group) ? best[tr.group] : e.step_time_s);
    if (w->step_time_s >= bar) continue;
    best[tr.group] = w->step_time_s;
    out.push_back(std::move(*w));
  }
  return out;
}

}  // namespace

BottleneckReport AnalyzeBottleneck(const Job& job, const Catalog* catalog, const HardwareContext& hw,
                                   const StepEstimate& e) {
  const StepBreakdown& b = e.breakdown;
  struct Part { const char* name; double s; };
  const Part parts[] = {{"compute", b.compute_s}, {"tp", b.tp_comm_s}, {"cp", b.cp_comm_s}, {"pp", b.pp_comm_s},
                        {"dp", b.dp_comm_s}, {"ep", b.ep_comm_s}, {"bubble", b.bubble_s}, {"data", b.data_s},
                        {"optimizer", b.optimizer_s}, {"checkpoint", b.checkpoint_s}};
  const Part* top = &parts[0];
  for (const auto& p : parts) if (p.s > top->s) top = &p;
  const double share = 100 * top->s / e.step_time_s;
  char buf[640];
  // N§8 exposed communication at or above comm_share_max of the step limits the job, whichever
  // single part is largest.
  const std::vector<CommPart> comm = CommParts(job, hw, e);
  double comm_s = 0;
  for (const auto& c : comm) comm_s += c.exposed_s;
  const double comm_share = comm_s / e.step_time_s, comm_max = hw.cal.Get("comm_share_max");
  std::string top_name = comm_share >= comm_max ? "comm" : top->name;
  if (top_name == "comm") {
    std::string split;
    for (const auto& c : comm) {
      const double pct = 100 * c.exposed_s / e.step_time_s;
      split += (split.empty() ? "" : ", ") + c.part + " " + (pct < 1 ? std::string("<1") : ShortNumber(std::round(pct))) + "%";
    }
    std::snprintf(buf, sizeof buf,
                  "communication limits this job: exposed communication is %.0f%% of the %.3g s step (%s; the limit "
                  "used is %.0f%%), the largest %s over %s; MFU %.0f%%",
                  100 * comm_share, e.step_time_s, split.c_str(), 100 * comm_max, comm[0].what.c_str(), comm[0].link.c_str(),
                  100 * e.mfu);
  } else if (top_name == "compute" && share < 50) {
    // Largest, but not most of the step: name what else there is rather than say "compute-bound".
    const Part* second = nullptr;
    for (const auto& p : parts)
      if (&p != top && (second == nullptr || p.s > second->s)) second = &p;
    std::snprintf(buf, sizeof buf,
                  "compute is the largest part but only %.0f%% of the %.3g s step (MFU %.0f%%); next is %s at %.0f%%",
                  share, e.step_time_s, 100 * e.mfu, second->name, 100 * second->s / e.step_time_s);
  } else if (top_name == "compute") {
    std::snprintf(buf, sizeof buf,
                  "compute-bound: matmuls and attention are %.0f%% of the %.3g s step (MFU %.0f%% of %s's %.0f TFLOP/s %s peak); "
                  "exposed communication is %.0f%% of it",
                  share, e.step_time_s, 100 * e.mfu, hw.gpu.id.c_str(), e.peak_flops / 1e12,
                  ToString(job.training.precision).c_str(), 100 * comm_share);
  } else if (top_name == "dp") {
    std::snprintf(buf, sizeof buf, "exposed data-parallel %s over %s%s is %.0f%% of the step (%.3g s of %.3g s)",
                  job.parallel.zero == 3 ? "ZeRO-3 weight gathers and gradient sync" : "gradient sync",
                  e.comm.dp_crosses_nodes ? hw.inter.name.c_str() : hw.intra.name.c_str(),
                  e.comm.dp_crosses_nodes && !hw.rdma ? " without RDMA" : "", share, b.dp_comm_s, e.step_time_s);
  } else if (top_name == "tp") {
    std::snprintf(buf, sizeof buf, "tensor-parallel all-reduces are %.0f%% of the step (%.3g s of %.3g s) over %s", share,
                  b.tp_comm_s, e.step_time_s, e.comm.tp_crosses_nodes ? hw.inter.name.c_str() : hw.intra.name.c_str());
  } else if (top_name == "bubble") {
    std::snprintf(buf, sizeof buf, "the pipeline bubble is %.0f%% of the step (pp %lld, %lld micro-batches, vpp %lld)",
                  share, static_cast<long long>(job.parallel.pp), static_cast<long long>(e.grad_accum),
                  static_cast<long long>(job.parallel.vpp));
  } else if (top_name == "data") {
    std::snprintf(buf, sizeof buf, "data loading stalls %.0f%% of the step on %s", share,
                  hw.storage ? hw.storage->id.c_str() : "storage");
  } else if (top_name == "checkpoint") {
    std::snprintf(buf, sizeof buf, "checkpoint writes stall %.0f%% of the time (%.3g GB per checkpoint, %.3g s to write)",
                  share, e.checkpoint_bytes / 1e9, e.checkpoint_write_s);
  } else {
    std::snprintf(buf, sizeof buf, "%s is the largest part of the step: %.0f%% (%.3g s of %.3g s)", top->name, share,
                  top->s, e.step_time_s);
  }
  BottleneckReport r{buf, top_name == "compute" ? std::vector<WhatIf>{} : Candidates(top_name, job, catalog, hw, e)};
  // Every number claimed is a re-estimate of the job with that change (WhatIf).
  for (size_t i = 0; i < r.what_ifs.size(); ++i) {
    const WhatIf& w = r.what_ifs[i];
    r.sentence += (i == 0 ? ": " : "; ") + w.flags + " would cut the step to " + ShortNumber(w.step_time_s) + " s (" +
                  ShortNumber(w.memory_bytes / (1024.0 * 1024.0 * 1024.0)) + " GiB per GPU, " +
                  (w.fits ? "fits)" : "does not fit)");
  }
  if (r.what_ifs.empty() && top_name != "compute")
    r.sentence += "; no single change gpuplan tries (" + std::string(top_name == "comm" ? "RDMA, a lower ZeRO stage, a smaller tp, a larger micro-batch, more NICs"
                                                                    : top_name == "dp" ? "RDMA, a lower ZeRO stage, a larger micro-batch"
                                                                    : top_name == "tp" ? "a smaller tp"
                                                                    : top_name == "bubble" ? "more interleaving or micro-batches"
                                                                    : top_name == "data" ? "local NVMe"
                                                                    : top_name == "checkpoint" ? "async or rarer checkpoints"
                                                                                               : "none for this part") +
                  ") cuts the step by 5% and fits";
  return r;
}

std::string Bottleneck(const Job& job, const HardwareContext& hw, const StepEstimate& e) {
  return AnalyzeBottleneck(job, nullptr, hw, e).sentence;
}

}  // namespace gpuplan
