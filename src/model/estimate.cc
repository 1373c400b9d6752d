// Step time: compute roofline, exposed communication, pipeline bubble, optimizer, data and
// checkpoint stalls. Section numbers refer to docs/model/compute.md (C§), communication.md (N§),
// pipeline.md (P§) and io.md (I§).
#include "gpuplan/estimate.h"
#include "gpuplan/finetune.h"
#include "gpuplan/job_keys.h"
#include "gpuplan/ops.h"
#include "mechanisms.h"

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

// F§1-F§2 elementwise traffic and launch costs of the job's framework's kernels.
void ResolveFrameworkKernels(const TrainingSpec& tr, const Calibration& cal, EfficiencyConstants& k) {
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
}

// F§1-F§9 the mechanisms of the job's framework, once per hardware resolution.
void ResolveFramework(const TrainingSpec& tr, const GpuSpec& g, const Calibration& cal, EfficiencyConstants& k) {
  const std::string fw = ToString(tr.framework);
  ResolveFrameworkKernels(tr, cal, k);
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
  // Without ZeRO an engine may reduce the gradients only once the backward has returned (DeepSpeed).
  k.dp_overlap_zero0 = cal.Has(dp_key + ".zero0") ? cal.Get(dp_key + ".zero0") : k.dp_overlap;
  k.nccl_overlap_slowdown = cal.Get("nccl_overlap_slowdown");
  // training.tp_comm_overlap (auto: the framework's default, data/frameworks.csv).
  k.tp_userbuffers = tr.tp_comm_overlap >= 0 ? tr.tp_comm_overlap == 1 : FwOr(cal, fw, "tp_comm_overlap") > 0.5;
  // P§4 Megatron-LM's scatter-gather of pipeline sends without sequence parallelism.
  k.pp_scatter_gather = FwOr(cal, fw, "pp_scatter_gather") > 0.5;
  k.fused_softmax = FwOr(cal, fw, "fused_softmax") > 0.5;
  k.e_scores = cal.Get("elementwise.attention_scores_fused");
  // F§6 fp8: extra bytes per quantized element for the recipe (fused casts when compiled).
  if (tr.precision == Precision::kFp8) {
    const std::string r = ToString(tr.fp8_recipe);
    const std::string which = tr.compile || FwOr(cal, fw, "fused_fp8_cast") > 0.5 ? "fused" : "eager";
    k.fp8_cast_bytes = cal.Get("fp8_cast_bytes." + r + "." + which);
    // Transformer Engine (fused_fp8_cast, not compiled): only the norm / activation producers are
    // fused; the other casts are standalone cast-transposes (fp8_cast_bytes.<recipe>.standalone).
    k.fp8_fused_producers = !tr.compile && FwOr(cal, fw, "fused_fp8_cast") > 0.5 &&
                            cal.Has("fp8_cast_bytes." + r + ".standalone");
    if (k.fp8_fused_producers) k.fp8_standalone_cast_bytes = cal.Get("fp8_cast_bytes." + r + ".standalone");
  }
  // F§7 fixed per-step work (logging, callbacks, loss sync) of the framework's loop.
  k.step_fixed_s = FwOr(cal, fw, "step_fixed_s");
  // F§9 ZeRO-3 as DeepSpeed runs it: per-module pre/post hooks that fetch and release parameters,
  // each a run of host ops at the host dispatch cost (F§2's cpu_op_s; none under CUDA graphs).
  k.zero3_hook_s = FwOr(cal, fw, "zero3_host_ops_per_module") * k.cpu_op_s;
  // N§9 DeepSpeed's parameter gathers: a flat ring per module, and the share of compute hiding them.
  k.zero3_flat_gathers = FwOr(cal, fw, "zero3_flat_gathers") > 0.5;
  if (k.zero3_flat_gathers) k.zero3_gather_overlap = FwOr(cal, fw, "zero3_gather_overlap");
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
  // H§3 a per-layer time measured on this card (a profiler run) over the modelled one.
  k.layer_time_scale = cal.Has("layer_time_scale." + g.id) ? cal.Get("layer_time_scale." + g.id) : 1.0;
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
  k.dp_overlap_zero0 = k.dp_overlap;
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
  if (k.layer_time_scale != 1)
    parts.push_back("each layer's GPU time is scaled x" + num(k.layer_time_scale) +
                    " by a measured layer time (layer_time_scale, docs/model/pools.md MX§7)");
  if (parts.empty()) return "";
  std::string out = g.id + ": ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

// Where a job key was set (file:line), else the job's source.
Location KeyWhere(const Job& job, const std::string& key) {
  auto it = job.set_keys.find(key);
  return it != job.set_keys.end() ? it->second : Location{job.source, 0, key};
}

// The GPU-to-GPU link inside a node and its rate per GPU.
Status ResolveIntraLink(const Job& job, const Catalog& catalog, HardwareContext& hw) {
  const ClusterSpec& c = job.cluster;
  auto where = [&](const std::string& key) { return KeyWhere(job, key); };
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
  return Status::Ok();
}

// The network between nodes, its rate per GPU, the storage tier and the host link.
Status ResolveNetworkStorageHost(const Job& job, const Catalog& catalog, const Calibration& cal, HardwareContext& hw) {
  const ClusterSpec& c = job.cluster;
  auto where = [&](const std::string& key) { return KeyWhere(job, key); };
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
  return Status::Ok();
}

// The GPU has the numbers the step needs at the job's precision.
Status CheckGpuNumbers(const Job& job, const HardwareContext& hw) {
  auto where = [&](const std::string& key) { return KeyWhere(job, key); };
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
  return Status::Ok();
}

}  // namespace

Result<HardwareContext> ResolveHardware(const Job& job, const Catalog& catalog, const Calibration& cal) {
  HardwareContext hw;
  hw.cal = cal;
  auto where = [&](const std::string& key) { return KeyWhere(job, key); };
  auto gpu = catalog.FindGpu(job.cluster.gpu);
  if (!gpu.ok()) return Status::BadInput(where("cluster.gpu"), gpu.status().reason());
  hw.gpu = *gpu;
  if (Status st = ResolveIntraLink(job, catalog, hw); !st.ok()) return st;
  if (Status st = ResolveNetworkStorageHost(job, catalog, cal, hw); !st.ok()) return st;
  if (Status st = CheckGpuNumbers(job, hw); !st.ok()) return st;
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
  // [hfconfig: windows] C§1 keys per query: s on full layers, min(s, window) on windowed ones
  // (Gemma 2/3, Mistral, gpt-oss sliding windows, Llama 4 chunks), averaged over the layers.
  const double keys = AttendedKeysPerQuery(a, static_cast<double>(seq_len), /*causal=*/false);
  return (frozen_base ? 4 : 6) * n + 6.0 * a.layers * widths * keys;
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

// The quantities of one step that the compute fold and the communication blocks share.
struct StepContext {
  double t = 1, s = 0, T = 0, ab = 2, L = 0, m = 1, h = 0, rep = 1;
  double moe_frac = 0;
  bool moe = false;
  double peak_mm = 0;
  int64_t domain = 1;  // GPUs per NVLink domain
  GroupPlacement gp{};
  double attn_bwd_factor = 2, t_attn_fwd = 0;  // C§2 the attention core of one layer, forward
  double t_mb_compute = 0, t_mb_fwd = 0, t_mb_bwd = 0;  // C§4 one micro-batch and its two shares
  double t_mb_head = 0;  // of t_mb_compute: the output layer (the last stage's alone; P§1)
  double flops_recompute = 0;  // per layer and micro-batch
};

StepContext MakeStepContext(const Job& job, const HardwareContext& hw, StepEstimate& e) {
  const Arch& a = job.arch;
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  StepContext c;
  c.t = static_cast<double>(par.tp);
  c.peak_mm = *hw.gpu.PeakFlops(tr.precision);
  e.peak_flops = c.peak_mm;
  // The length a micro-batch is computed at: seq_len unless samples are padded only to the
  // longest of their micro-batch (docs/model/finetune.md).
  c.s = ComputeSeqLen(tr);
  c.T = MicroBatchTokens(job);  // tokens per micro-batch per GPU
  c.ab = ActivationBytesPerElement(tr.precision);
  const int64_t layers = (a.layers + par.pp - 1) / par.pp;
  c.L = static_cast<double>(layers);
  e.grad_accum = std::max<int64_t>(1, GradAccumSteps(job));
  c.m = static_cast<double>(e.grad_accum);
  c.moe = a.IsMoe();
  c.moe_frac = c.moe ? static_cast<double>(a.MoeLayers()) / a.layers : 0;
  c.h = static_cast<double>(a.hidden);
  c.rep = par.sequence_parallel ? c.t : 1.0;
  c.attn_bwd_factor = AttentionBackwardFactor(tr);
  c.domain = NvlinkDomainGpus(job, hw);  // N§6 the node, or an NVL72 rack
  c.gp = Place(job, c.domain);
  return c;
}

// C§4 one micro-batch as folds over the layer's ops (ops.h) and the head's, and the step's FLOPs
// as executed.
void ComputeMicroBatch(const Job& job, const HardwareContext& hw, StepContext& c, StepEstimate& e) {
  const EfficiencyConstants& k = hw.k;
  const double L = c.L;
  const LayerPasses layer = FoldLayer(LayerOps(job, hw, c.T, c.s), job, k);
  double head_fwd_s = 0, head_s = 0, head_flops = 0;
  for (const Op& op : HeadOps(job, hw, c.T)) {
    head_fwd_s += op.fwd_s, head_s += op.fwd_s + op.bwd_s;
    head_flops += op.fwd_flops + op.bwd_flops;
  }
  c.t_attn_fwd = layer.attention_fwd_s;
  c.flops_recompute = layer.recompute_flops;
  // FT§6 offloaded activations move on a side stream behind this micro-batch's forward and backward.
  c.t_mb_compute = (L * (layer.fwd_s + layer.bwd_s + layer.recompute_s) + head_s) * k.framework_overhead +
                   ActivationOffloadTime(job, hw, L, L * layer.fwd_s * k.framework_overhead,
                                         L * (layer.bwd_s + layer.recompute_s) * k.framework_overhead);
  c.t_mb_fwd = (L * layer.fwd_s + head_fwd_s) * k.framework_overhead;
  c.t_mb_head = head_s * k.framework_overhead;
  e.head_compute_s = c.m * c.t_mb_head;
  c.t_mb_bwd = c.t_mb_compute - c.t_mb_fwd;
  // Every GPU runs its stage's layers; only the last stage's GPUs run the output layer.
  const double num_gpus = static_cast<double>(job.cluster.num_gpus);
  e.hardware_flops_per_step =
      c.m * (L * (layer.fwd_flops + layer.bwd_flops + layer.recompute_flops) * num_gpus +
             head_flops * num_gpus / job.parallel.pp);
  e.breakdown.compute_s = c.m * c.t_mb_compute;
}

// ---- N§4 tensor parallel: 2 all-reduces of T x h per layer forward and 2 backward (+2 for a
// full recompute); with SP the same bytes move as all-gather + reduce-scatter.
void TensorParallelComm(const Job& job, const HardwareContext& hw, const StepContext& c, StepEstimate& e) {
  const ParallelSpec& par = job.parallel;
  const TrainingSpec& tr = job.training;
  const EfficiencyConstants& k = hw.k;
  const double T = c.T, h = c.h, ab = c.ab, m = c.m, L = c.L, t = c.t;
  const GroupPlacement& gp = c.gp;
  CommDetail& cd = e.comm;
  StepBreakdown& b = e.breakdown;
  cd.tp_crosses_nodes = par.tp > c.domain;
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
    // [mech] training.tp_comm_overlap / the framework's default, F§5 (mechanisms.cc).
    b.tp_comm_s = TpExposedShare(k, par.sequence_parallel, t) * cd.tp_s;
  }
}

// ---- N§4 context parallel: ring passing of K and V (cp - 1 steps forward, twice backward).
void ContextParallelComm(const Job& job, const HardwareContext& hw, const StepContext& c, StepEstimate& e) {
  const Arch& a = job.arch;
  const ParallelSpec& par = job.parallel;
  const EfficiencyConstants& k = hw.k;
  const double T = c.T, ab = c.ab, m = c.m, L = c.L, t = c.t;
  const double attn_bwd_factor = c.attn_bwd_factor, t_attn_fwd = c.t_attn_fwd;
  const GroupPlacement& gp = c.gp;
  CommDetail& cd = e.comm;
  StepBreakdown& b = e.breakdown;
  if (par.cp > 1) {
    const double kv_block = 2 * T * a.KvDim() / t * ab;
    const double t_step = CollectiveTime(Collective::kSendRecv, kv_block, par.cp, gp.cp_per_node, hw);
    cd.cp_bytes = m * L * 3 * (par.cp - 1) * kv_block;
    cd.cp_s = m * L * 3 * (par.cp - 1) * t_step;
    const double attn_time = m * L * (1 + attn_bwd_factor) * t_attn_fwd;
    b.cp_comm_s = std::max(0.0, cd.cp_s - k.cp_overlap * attn_time);
  }
}

// ---- N§4 pipeline: activations T x h (/t with SP) each way per micro-batch and virtual stage.
// P§4 placed as Megatron-LM places ranks: a boundary whose neighbours sit on different nodes
// goes over the node's NICs, shared by every rank of the node that sends across; the pipeline is
// paced by its slowest hop. The next micro-batch's compute hides pp_comm_overlap of it, but
// never more than that share of the compute there is.
void PipelineComm(const Job& job, const HardwareContext& hw, const StepContext& c, StepEstimate& e) {
  const ParallelSpec& par = job.parallel;
  const EfficiencyConstants& k = hw.k;
  const double T = c.T, h = c.h, ab = c.ab, m = c.m;
  const GroupPlacement& gp = c.gp;
  CommDetail& cd = e.comm;
  StepBreakdown& b = e.breakdown;
  if (par.pp > 1) {
    // [mech] P§4 Megatron-LM scatters a send 1/tp per rank without SP and the receiver all-gathers
    // it over the tp group (mechanisms.cc).
    PipelineP2P(par, c.domain, PipelineSendBytes(k, par, T * h * ab), m, hw, cd);
    cd.pp_s += PipelineGatherTime(k, par, gp.tp_per_node, T * h * ab, m, hw);
    b.pp_comm_s = cd.pp_s - k.pp_overlap * std::min(cd.pp_s, b.compute_s);
  }
}

// ---- N§4 expert parallel: dispatch + combine all-to-all, forward and backward.
void ExpertParallelComm(const Job& job, const HardwareContext& hw, const StepContext& c, StepEstimate& e) {
  const Arch& a = job.arch;
  const ParallelSpec& par = job.parallel;
  const double T = c.T, h = c.h, ab = c.ab, m = c.m, L = c.L;
  const bool moe = c.moe;
  const double moe_frac = c.moe_frac;
  const GroupPlacement& gp = c.gp;
  CommDetail& cd = e.comm;
  StepBreakdown& b = e.breakdown;
  if (moe && par.ep > 1) {
    const double msg = T * a.experts_per_token * h * ab;
    const double t_one = CollectiveTime(Collective::kAllToAll, msg, par.ep, gp.ep_per_node, hw);
    const double moe_layers = L * moe_frac;
    cd.ep_bytes = m * moe_layers * 4 * msg;
    cd.ep_s = m * moe_layers * 4 * t_one;
    b.ep_comm_s = cd.ep_s;
  }
}

// The parameters this GPU holds and updates, and their bytes (N§4 data parallel, C§5 optimizer).
struct ParamShard {
  int64_t dpn = 1;  // data-parallel x context-parallel ranks that share gradients
  bool lora = false;
  double params_local = 0, trainable_local = 0, gbytes = 0, wbytes = 0;
  double rbytes = 0;  // per gradient in the data-parallel reduction (N§4: fp32_allreduce)
};

ParamShard Shard(const Job& job) {
  const ParallelSpec& par = job.parallel;
  const double t = static_cast<double>(par.tp);
  ParamShard sh;
  sh.dpn = par.dp * par.cp;
  const ParamCounts pc = CountParams(job.arch);
  sh.lora = IsAdapterMethod(job.training.method);
  sh.params_local = static_cast<double>(pc.total) / (t * par.pp);
  sh.trainable_local =
      sh.lora ? static_cast<double>(CountLoraParams(job.arch, job.training.lora)) / (t * par.pp) : sh.params_local;
  sh.gbytes = GradBytesPerParam(job), sh.wbytes = WeightBytesPerParam(job);
  sh.rbytes = ReduceBytesPerParam(job);
  return sh;
}

// ---- N§4 data parallel / ZeRO / FSDP over dp x cp.
void DataParallelComm(const Job& job, const HardwareContext& hw, const StepContext& c, const ParamShard& sh,
                      StepEstimate& e) {
  const ParallelSpec& par = job.parallel;
  const EfficiencyConstants& k = hw.k;
  const double m = c.m, t_mb_fwd = c.t_mb_fwd, t_mb_bwd = c.t_mb_bwd, L = c.L;
  const Arch& a = job.arch;
  const int64_t dpn = sh.dpn;
  const bool lora = sh.lora;
  const double params_local = sh.params_local, trainable_local = sh.trainable_local, rbytes = sh.rbytes,
               wbytes = sh.wbytes;
  CommDetail& cd = e.comm;
  StepBreakdown& b = e.breakdown;
  if (dpn > 1) {
    const int64_t dp_per_node = std::min<int64_t>(dpn, std::max<int64_t>(1, c.domain / par.tp));
    cd.dp_crosses_nodes = dp_per_node < dpn;
    const double G = trainable_local * rbytes, W = (lora ? params_local : trainable_local) * wbytes;
    cd.dp_busbw_bytes_per_s = BusBandwidth(Collective::kAllReduce, G, dpn, dp_per_node, hw);
    const double ov = par.zero == 0 ? k.dp_overlap_zero0 : k.dp_overlap;
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
      // [mech] N§9 DeepSpeed: one flat-ring gather per module (4 + MLP matrices per layer, + embedding
      // and head), one NIC port per rank across nodes, hidden by zero3_gather_overlap (mechanisms.cc).
      const double gathers = L * (4.0 + a.MlpMatrices()) + 2;
      const double t_ag = k.zero3_flat_gathers ? DeepSpeedGatherTime(W, dpn, dp_per_node, gathers, hw)
                                               : CollectiveTime(Collective::kAllGather, W, dpn, dp_per_node, hw);
      const double ov3 = k.zero3_flat_gathers ? k.zero3_gather_overlap : ov;
      const double t_rs = CollectiveTime(Collective::kReduceScatter, G, dpn, dp_per_node, hw);
      cd.dp_bytes = m * (2 * W + G);
      cd.dp_s = m * (2 * t_ag + t_rs);
      b.dp_comm_s = m * (std::max(0.0, t_ag - ov3 * t_mb_fwd) + std::max(0.0, t_ag + t_rs - ov3 * t_mb_bwd));
    }
  }
  // F§5 NCCL kernels that overlap compute occupy SMs and HBM: the hidden share of the DP traffic
  // still costs nccl_overlap_slowdown of its duration (counted with the DP traffic it comes from).
  b.dp_comm_s += k.nccl_overlap_slowdown * std::max(0.0, cd.dp_s - b.dp_comm_s);
}

// ---- P§1 bubble, C§5 optimizer step and F§7/F§9 the framework's fixed and per-module host work.
void BubbleOptimizerOverhead(const Job& job, const HardwareContext& hw, const StepContext& c, const ParamShard& sh,
                             StepEstimate& e) {
  const Arch& a = job.arch;
  const TrainingSpec& tr = job.training;
  const ParallelSpec& par = job.parallel;
  const EfficiencyConstants& k = hw.k;
  const double m = c.m, L = c.L;
  StepBreakdown& b = e.breakdown;
  // ---- P§1 bubble: (p - 1) / v micro-batch times of the stages that fill and drain around the slowest
  // (Narayanan et al. 2021 §2.2); the slowest is the last (ceil(L/p) layers + the output layer), the others
  // hold no output layer.
  if (par.pp > 1) b.bubble_s = static_cast<double>(par.pp - 1) / par.vpp * (c.t_mb_compute - c.t_mb_head);
  // ---- C§5 optimizer step: memory-bound pass over the local (sharded) trainable parameters.
  const double opt_params = sh.trainable_local / (par.zero >= 1 ? static_cast<double>(sh.dpn) : 1.0);
  b.optimizer_s = OptimizerStepTime(job, hw, opt_params, sh.gbytes, sh.wbytes);
  b.overhead_s = k.step_fixed_s;
  // F§9 DeepSpeed ZeRO-3's parameter hooks run on the host for every module in every pass (forward,
  // recompute, backward) of every micro-batch, one GPU or many: serial host time the GPU waits on.
  if (par.zero == 3 && k.zero3_hook_s > 0) {
    const double modules = L * (4.0 + a.MlpMatrices() + a.norms_per_layer) + 2;  // + embedding, head
    const double passes = tr.recompute == Recompute::kFull ? 3 : 2;
    b.overhead_s += m * modules * passes * k.zero3_hook_s;
  }
}

// Storage bandwidth the job's nodes read or write at (per-node tiers and local NVMe scale with nodes).
double StorageBandwidth(const Job& job, const StorageSpec& st, double bytes_per_s) {
  const double nodes = std::ceil(static_cast<double>(job.cluster.num_gpus) / job.cluster.gpus_per_node);
  return bytes_per_s * (st.throughput_scope == "per-node" || st.tier == "local-nvme" ? nodes : 1.0);
}

// ---- I§1 data loading and I§2 checkpoint stalls, against the step before them (`pre_io`).
void IoStalls(const Job& job, const HardwareContext& hw, const StepContext& c, const ParamShard& sh, StepEstimate& e) {
  const TrainingSpec& tr = job.training;
  const bool lora = sh.lora;
  StepBreakdown& b = e.breakdown;
  const double pre_io = b.Total();
  // ---- I§1 data loading: the step's tokens read from storage, overlapped with the step.
  e.tokens_per_step = static_cast<double>(tr.global_batch) * c.s;
  if (hw.storage && hw.storage->read_bytes_per_s) {
    const double bw = StorageBandwidth(job, *hw.storage, *hw.storage->read_bytes_per_s);
    const double t_read = e.tokens_per_step * tr.data_bytes_per_token / bw;
    b.data_s = std::max(0.0, t_read - pre_io);
  }
  // ---- I§2 checkpoints: size, write time on the storage tier, stall amortized per step.
  const double ckpt_per_param = tr.checkpoint_full_state && !lora ? sh.wbytes + OptimizerBytesPerParam(job) : sh.wbytes;
  e.checkpoint_bytes = lora ? static_cast<double>(CountLoraParams(job.arch, tr.lora)) * 16
                            : static_cast<double>(CountParams(job.arch).total) * ckpt_per_param;
  if (hw.storage && hw.storage->write_bytes_per_s) {
    const double bw = StorageBandwidth(job, *hw.storage, *hw.storage->write_bytes_per_s);
    e.checkpoint_write_s = e.checkpoint_bytes / bw;
    // Async: only the device-to-host copy of this GPU's shard stalls training.
    const double stall = tr.checkpoint_async ? e.checkpoint_bytes / job.cluster.num_gpus / hw.host_bytes_per_s : e.checkpoint_write_s;
    const double steps_between = tr.checkpoint_interval_min * 60 / pre_io;
    b.checkpoint_s = stall / std::max(1.0, steps_between);
  }
}

// C§1 / C§6 throughput, MFU, HFU and time to train from the step.
void StepMetrics(const Job& job, const StepContext& c, StepEstimate& e) {
  const TrainingSpec& tr = job.training;
  e.step_time_s = e.breakdown.Total();
  const double gpus = static_cast<double>(job.cluster.num_gpus);
  e.tokens_per_s = e.tokens_per_step / e.step_time_s;
  e.tokens_per_s_per_gpu = e.tokens_per_s / gpus;
  e.useful_tokens_per_s_per_gpu = e.tokens_per_s_per_gpu * UsefulTokensPerSequence(tr) / c.s;
  e.model_flops_per_token = ModelFlopsPerToken(job.arch, tr.seq_len, IsAdapterMethod(tr.method));
  e.mfu = e.tokens_per_s_per_gpu * e.model_flops_per_token / c.peak_mm;
  // HFU: the model FLOPs plus what recompute executes again (Korthikanti et al. 2022 §5).
  e.recompute_flops_per_step = c.m * c.L * c.flops_recompute * gpus;
  e.hfu = e.mfu + e.recompute_flops_per_step / e.step_time_s / gpus / c.peak_mm;
  e.model_tflops_per_gpu = e.tokens_per_s_per_gpu * e.model_flops_per_token / 1e12;
  if (tr.tokens > 0) {
    e.time_to_train_s = tr.tokens / e.tokens_per_s;
    e.gpu_hours = e.time_to_train_s * gpus / 3600;
  }
}

}  // namespace

StepEstimate EstimateStep(const Job& job, const HardwareContext& hw) {
  StepEstimate e;
  StepContext c = MakeStepContext(job, hw, e);
  ComputeMicroBatch(job, hw, c, e);
  TensorParallelComm(job, hw, c, e);
  ContextParallelComm(job, hw, c, e);
  PipelineComm(job, hw, c, e);
  ExpertParallelComm(job, hw, c, e);
  const ParamShard sh = Shard(job);
  DataParallelComm(job, hw, c, sh, e);
  BubbleOptimizerOverhead(job, hw, c, sh, e);
  IoStalls(job, hw, c, sh, e);
  StepMetrics(job, c, e);
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

using Changes = std::vector<std::pair<std::string, std::string>>;
struct Try { int group; Changes changes; };  // within a group, a later try must beat the earlier

// RDMA on an RDMA fabric with GPUDirect off, else the NDR InfiniBand row, for traffic that
// crosses nodes without it.
void TryRdma(bool crosses, const Job& job, const Catalog* catalog, const HardwareContext& hw, std::vector<Try>& tries) {
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
}

// tp inside a node when it crosses nodes, else half of it (dp takes the rest); empty when none.
Changes SmallerTp(const Job& job, const StepEstimate& e) {
  const ParallelSpec& p = job.parallel;
  const int64_t tp = e.comm.tp_crosses_nodes ? job.cluster.gpus_per_node : p.tp / 2;
  if (p.tp <= 1 || tp < 1 || p.tp % tp != 0) return {};
  Changes c = {{"parallel.tp", std::to_string(tp)}, {"parallel.dp", std::to_string(p.dp * (p.tp / tp))},
               {"cluster.num_gpus", std::to_string(job.cluster.num_gpus)}};
  if (tp == 1 && p.sequence_parallel) c.push_back({"parallel.sequence_parallel", "false"});
  return c;
}

// The changes worth trying for the largest part, each applying to the job as it is.
std::vector<Try> Tries(const std::string& top, const Job& job, const Catalog* catalog, const HardwareContext& hw,
                       const StepEstimate& e) {
  std::vector<Try> tries;
  const ParallelSpec& p = job.parallel;
  const TrainingSpec& t = job.training;
  auto try_rdma = [&](bool crosses) { TryRdma(crosses, job, catalog, hw, tries); };
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
    if (Changes c = SmallerTp(job, e); !c.empty()) tries.push_back({2, c});
    if (t.global_batch % (2 * t.micro_batch * p.dp) == 0)
      tries.push_back({3, {{"training.micro_batch", std::to_string(2 * t.micro_batch)}}});
    if (inter && hw.nics_per_node < static_cast<double>(job.cluster.gpus_per_node))
      tries.push_back({4, {{"cluster.nics_per_node", std::to_string(job.cluster.gpus_per_node)}}});
  } else if (top == "tp" && p.tp > 1) {
    if (Changes c = SmallerTp(job, e); !c.empty()) tries.push_back({0, c});
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
  return tries;
}

// What-ifs worth naming for the largest part: each applies to the job as it is, and is kept only
// if it fits in memory and cuts the step by at least 5%.
std::vector<WhatIf> Candidates(const std::string& top, const Job& job, const Catalog* catalog,
                               const HardwareContext& hw, const StepEstimate& e) {
  std::vector<Try> tries = Tries(top, job, catalog, hw, e);
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

// N§8 the sentence for exposed communication at or above comm_share_max of the step.
std::string CommSentence(const std::vector<CommPart>& comm, double comm_share, double comm_max, const StepEstimate& e) {
  std::string split;
  for (const auto& c : comm) {
    const double pct = 100 * c.exposed_s / e.step_time_s;
    split += (split.empty() ? "" : ", ") + c.part + " " + (pct < 1 ? std::string("<1") : ShortNumber(std::round(pct))) + "%";
  }
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "communication limits this job: exposed communication is %.0f%% of the %.3g s step (%s; the limit "
                "used is %.0f%%), the largest %s over %s; MFU %.0f%%",
                100 * comm_share, e.step_time_s, split.c_str(), 100 * comm_max, comm[0].what.c_str(), comm[0].link.c_str(),
                100 * e.mfu);
  return buf;
}

void AppendWhatIfs(const std::string& top_name, BottleneckReport& r);

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
    std::snprintf(buf, sizeof buf, "%s", CommSentence(comm, comm_share, comm_max, e).c_str());
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
  AppendWhatIfs(top_name, r);
  return r;
}

namespace {
// Every number claimed is a re-estimate of the job with that change (WhatIf).
void AppendWhatIfs(const std::string& top_name, BottleneckReport& r) {
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
}
}  // namespace

std::string Bottleneck(const Job& job, const HardwareContext& hw, const StepEstimate& e) {
  return AnalyzeBottleneck(job, nullptr, hw, e).sentence;
}

}  // namespace gpuplan
