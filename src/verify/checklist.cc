// The validation list (docs/troubleshooting.md#validation-list) for one plan: the commands to run on the user's cluster, the file
// to save each output to (what `gpuplan verify` reads back), and the number each should reach — the
// same numbers verify compares with, computed by running the checks on the plan's own expectations.
#include <cmath>

#include "gpuplan/checks.h"
#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {

std::string Fmt(double v) { return FormatNumber(v >= 100 || v == std::floor(v) ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v); }

std::string SizeFlag(double bytes) {  // nccl-tests -b/-e accept K/M/G suffixes
  if (bytes >= 1073741824) return Fmt(bytes / 1073741824) + "G";
  if (bytes >= 1048576) return Fmt(bytes / 1048576) + "M";
  return Fmt(bytes);
}

// The numbers `verify --plan` would hold a reading to: every rule that applies, with its expectation.
std::string Expectations(const ToolKind kind, const std::string& tool, const std::string& metric, std::map<std::string, std::string> context,
                         const PlanContext& plan, const Catalog& catalog, const std::vector<CheckRule>& rules) {
  ToolOutput out;
  out.file = "(expected)";
  out.kind = kind;
  out.tool = tool;
  Reading r;
  r.kind = kind, r.tool = tool, r.metric = metric, r.context = std::move(context);
  out.readings.push_back(r);
  VerifyOptions o;
  o.rules = rules;
  o.plan = plan;
  o.catalog = &catalog;
  const VerifyReport rep = RunChecks({out}, o);
  std::string s, from;
  for (const auto& c : rep.results) {
    if (!c.expected || c.id.empty()) continue;
    const CheckRule* rule = nullptr;
    for (const auto& x : rules)
      if (x.id == c.id) rule = &x;
    const bool upper = rule && rule->op == "<=";
    s += (s.empty() ? "" : ", ") + std::string(upper ? "<= " : ">= ") + Fmt(*c.expected) + " " + c.unit + " (" + (rule ? rule->severity : "") +
         (upper ? " above: " : " below: ") + c.id + ")";
    if (from.empty()) from = c.expected_from;
  }
  return s.empty() ? "no threshold applies: record it" : s + "; " + from;
}

std::string Launcher(const LaunchPlan& lp, const std::string& prog) {
  const int64_t ranks = lp.nodes * lp.gpus_per_node;
  return "mpirun -np " + std::to_string(ranks) + " -N " + std::to_string(lp.gpus_per_node) +
         " --hostfile hosts.txt --bind-to none -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET -x LD_LIBRARY_PATH " + prog;
}

std::string Srun(const LaunchPlan& lp, const std::string& prog) {
  return "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET srun -N " + std::to_string(lp.nodes) + " --ntasks-per-node=" + std::to_string(lp.gpus_per_node) +
         " --gpus-per-node=" + std::to_string(lp.gpus_per_node) + " --mpi=pmix " + prog;
}

ChecklistStep Collectives(const PlanContext& pc, const StepEstimate& est, const Catalog& catalog, const std::vector<CheckRule>& rules,
                          const std::string& op) {
  const LaunchPlan& lp = pc.plan;
  const double traffic = std::max(est.comm.dp_bytes, 1073741824.0);
  double e = 1073741824;
  while (e < traffic && e < 17179869184.0) e *= 2;
  const std::string prog = "./build/" + op + "_perf -b 8 -e " + SizeFlag(e) + " -f 2 -g 1 -c 1 -n 50";
  ChecklistStep s;
  s.title = op + "_perf across all " + std::to_string(lp.nodes * lp.gpus_per_node) + " GPUs (nccl-tests)";
  if (lp.nodes > 1) {
    s.commands = {Launcher(lp, prog) + " > nccl-" + op + ".txt 2>&1", "# or under Slurm: " + Srun(lp, prog) + " > nccl-" + op + ".txt 2>&1"};
  } else {
    s.commands = {"NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET ./build/" + op + "_perf -b 8 -e " + SizeFlag(e) + " -f 2 -g " +
                  std::to_string(lp.gpus_per_node) + " -c 1 -n 50 > nccl-" + op + ".txt 2>&1"};
  }
  s.save_as = "nccl-" + op + ".txt";
  std::map<std::string, std::string> ctx = {{"op", op}, {"ranks", std::to_string(lp.nodes * lp.gpus_per_node)}, {"nodes", std::to_string(lp.nodes)},
                                            {"msg_bytes", FormatNumber("%.0f", e)}, {"gpu_name", pc.hw.gpu.id}};
  s.expect = "peak busbw " + Expectations(ToolKind::kNcclTests, op + "_perf", "busbw_peak_gb_per_s", ctx, pc, catalog, rules) + "; #wrong 0";
  s.why = "the plan's data-parallel traffic is " + FormatNumber("%.2f", est.comm.dp_bytes / 1e9) + " GB per GPU per step: -e " + SizeFlag(e) +
          " (" + (est.comm.dp_bytes > e ? std::string("capped at 16G, the largest size the clouds' checks run") : std::string("covers one step's traffic")) + "); flags as AWS's and GCP's health checks run them (awslabs nccl-tests README, GCP cluster-health-scanner); all_reduce_perf is the standard cluster check (docs/troubleshooting.md#slow-network)";
  return s;
}

// Each stage below is one step of docs/troubleshooting.md#validation-list (plus the RDMA and storage checks).
ChecklistStep TinyJob(const LaunchPlan& lp, const HardwareContext& hw, bool amd, const std::string& plan_file) {
  return {"a tiny job first (a few steps)",
          {"gpuplan export " + plan_file + " --to torchrun --out run/   # then run/launch.sh on each node, ~5 steps",
           std::string(amd ? "rocm-smi --showmeminfo vram" : "nvidia-smi --query-gpu=index,memory.used,memory.total,utilization.gpu --format=csv -l 5") +
               "   # while it runs"},
          "",
          "memory per GPU about " + FormatGiB(lp.memory_per_gpu_bytes) + " GiB of " + FormatGiB(hw.gpu.memory_bytes) + " GiB; step about " +
              FormatNumber("%.2f", lp.step_time_s) + " s",
          "a job of a few steps proves one card computes and its memory matches the plan (docs/troubleshooting.md#validation-list)"};
}

ChecklistStep Topology(const HardwareContext& hw, bool amd, bool multi) {
  ChecklistStep s{"GPU topology (nvidia-smi topo -m)", {"nvidia-smi topo -m > topo.txt"}, "topo.txt", "", "confirm the GPU-GPU links and NVLink (docs/troubleshooting.md#nvlink)"};
  if (amd) s.commands = {"rocm-smi --showtopo > topo-rocm.txt   # gpuplan verify does not read rocm-smi yet; nvidia-smi only"}, s.save_as = "";
  const double nv = hw.gpu.nvlink_bytes_per_s_per_dir.value_or(0);
  if (!amd && nv > 0 && hw.gpu.intra_link.find("nvlink") != std::string::npos) {
    const double per_link = hw.gpu.intra_link == "nvlink5" ? 50 : 25;
    s.expect = "NV" + Fmt(std::round(nv / 1e9 / per_link)) + " between GPUs (" + Fmt(nv / 1e9) + " GB/s per direction at " + Fmt(per_link) +
               " GB/s per link)" + (hw.intra.kind == "nvswitch" ? " on every pair (NVSwitch)" : "");
    s.commands.push_back("nvidia-smi nvlink -s > nvlink.txt");
  } else if (!amd) {
    s.expect = "no NV#: GPU pairs over PCIe (PIX/PXB best, SYS across sockets); the plan assumes " + hw.intra.id;
  }
  if (multi) s.expect += "; each GPU's nearest NIC PIX (the NIC on its PCIe switch, for full GPUDirect RDMA)";
  return s;
}

// data/gpu_ecc.csv: the cards without ECC memory (GeForce); a GPU not listed has ECC.
bool HasEcc(const std::string& gpu_id) {
  auto t = ParseCsv(std::string(EmbeddedData("gpu_ecc.csv")), "data/gpu_ecc.csv");
  if (!t.ok()) return true;
  for (const auto& row : t->rows) {
    CsvRecord rec(*t, row);
    if (rec.Str("gpu") == gpu_id) return rec.Str("ecc") != "no";
  }
  return true;
}

ChecklistStep Clocks(const HardwareContext& hw) {
  if (!HasEcc(hw.gpu.id))
    return {"clocks and throttle reasons (nvidia-smi -q), under load",
            {"nvidia-smi -q -d CLOCK,PERFORMANCE > clocks.txt   # while the collectives run", "nvidia-smi -q > nvsmi-q.txt"},
            "clocks.txt nvsmi-q.txt",
            "no thermal or HW slowdown active; temperature <= 80 C (" + hw.gpu.id + " has no ECC memory: nvidia-smi shows ECC N/A; data/gpu_ecc.csv)",
            "over about 80 C the clock drops (docs/troubleshooting.md#throttling)"};
  return {"clocks, throttle reasons, ECC and retired pages (nvidia-smi -q), under load",
          {"nvidia-smi -q -d CLOCK,PERFORMANCE > clocks.txt   # while the collectives run", "nvidia-smi -q > nvsmi-q.txt"},
          "clocks.txt nvsmi-q.txt",
          "no thermal or HW slowdown active; ECC uncorrectable 0; no pending retired pages or row remaps; temperature <= 80 C",
          "over about 80 C the clock drops (docs/troubleshooting.md#throttling)"};
}

ChecklistStep Pcie(const HardwareContext& hw, bool amd) {
  std::string speed;
  if (hw.gpu.pcie_gen)
    speed = ", Speed " + std::string(*hw.gpu.pcie_gen >= 5 ? "32" : *hw.gpu.pcie_gen >= 4 ? "16" : "8") + "GT/s (PCIe gen " + Fmt(*hw.gpu.pcie_gen) + ") as LnkCap";
  return {"PCIe link width and speed (lspci -vv)",
          {std::string("sudo lspci -vv -d ") + (amd ? "1002:" : "10de:") + " | grep -E '^[0-9a-f]|LnkCap:|LnkSta:' > lspci.txt   # under load"},
          "lspci.txt", "LnkSta Width x16" + speed,
          "x8 costs 15%+, x4 cannot keep the card busy; idle links train down (ASPM), so read it under load (docs/troubleshooting.md#pcie-link)"};
}

std::vector<ChecklistStep> Rdma(const PlanContext& pc, const Catalog& catalog, const std::vector<CheckRule>& rules) {
  const LaunchPlan& lp = pc.plan;
  const LinkSpec& link = lp.network;
  const double nics = lp.nics_per_node > 0 ? static_cast<double>(lp.nics_per_node) : pc.hw.nics_per_node;
  if (link.kind == "efa")
    return {{"EFA devices", {"fi_info -p efa -t FI_EP_RDM > efa.txt"}, "",
             Fmt(nics) + " EFA devices listed (perftest needs RC verbs, which EFA does not offer: the collectives below measure it)",
             "AWS EFA docs (verify EFA: all EFA NICs used); docs/troubleshooting.md#no-rdma"}};
  if (link.kind != "infiniband" && link.kind != "roce")
    return {{"inter-node network", {"# " + link.id + ": no RDMA verbs; the collectives below measure it"}, "", "", "docs/troubleshooting.md#no-rdma"}};
  const std::string flags = "-d mlx5_0 -F --report_gbits --perform_warm_up -D 10" + std::string(link.kind == "roce" ? " -x 3" : "") +
                            (lp.gpudirect_rdma ? " --use_cuda=0" : "");
  const std::map<std::string, std::string> ctx = {{"msg_bytes", "65536"}, {"device", "mlx5_0"}};
  return {{"RDMA ports (ibstat)", {"ibstat > ibstat.txt"}, "ibstat.txt",
           Fmt(nics) + " ports State Active at " + Fmt(pc.line_rate_gbit_per_s.value_or(0)) + " Gb/s (" + link.id + ")",
           "check every node's network with ping and ibstat (docs/troubleshooting.md#nccl-timeout)"},
          {"RDMA bandwidth per NIC (ib_write_bw), node 1 -> node 2, for every HCA",
           {"# node 1 (server):  ib_write_bw " + flags, "# node 2 (client):  ib_write_bw " + flags + " NODE1 > ib_write_bw-mlx5_0.txt"},
           "ib_write_bw-mlx5_0.txt",
           "BW average " + Expectations(ToolKind::kPerftest, "ib_write_bw", "bw_avg_gbit_per_s", ctx, pc, catalog, rules),
           "ib_write_bw at >= 80% of the line rate (docs/troubleshooting.md#slow-network); flags as Azure's health check (Azure/azurehpc-health-checks; -x 3 is the usual RoCE v2 GID index)"}};
}

ChecklistStep Transport(const PlanContext& pc) {
  const LaunchPlan& lp = pc.plan;
  const double nics = lp.nics_per_node > 0 ? static_cast<double>(lp.nics_per_node) : pc.hw.nics_per_node;
  const std::string want = lp.network.kind == "tcp"   ? "NET/Socket (the plan is on TCP)"
                           : lp.network.kind == "efa" ? "NET/OFI with 'Selected Provider is efa', " + Fmt(nics) + " devices"
                                                      : "NET/IB with " + Fmt(nics) + " devices and channels 'via NET/IB/N/GDRDMA'";
  return {"the transport NCCL picked (NCCL_DEBUG=INFO in the runs above)", {"grep -E 'NET/|via |GDR|NCCL WARN' nccl-all_reduce.txt"}, "nccl-all_reduce.txt",
          want + "; never NET/Socket across nodes on an RDMA fabric; no 'Got completion ... with error'",
          "NCCL timeouts come from no RDMA or blocked ports; NCCL_DEBUG=INFO shows which (docs/troubleshooting.md#nccl-timeout)"};
}

ChecklistStep Storage(const HardwareContext& hw) {
  std::string expect = "record it: the ledger keeps it";
  if (hw.storage && hw.storage->read_bytes_per_s)
    expect = "sequential read >= " + Fmt(0.8 * *hw.storage->read_bytes_per_s / 1e6) + " MB/s (80% of " + hw.storage->id + ", data/storage.csv)";
  return {"storage where the data and checkpoints live (fio)",
          {"fio --name=seqread --directory=DATA_DIR --rw=read --bs=1M --size=4G --numjobs=4 --iodepth=32 --ioengine=libaio --direct=1 --group_reporting --output-format=json > fio-read.json",
           "fio --name=randread --directory=DATA_DIR --rw=randread --bs=4k --size=1G --numjobs=8 --iodepth=32 --ioengine=libaio --direct=1 --group_reporting --output-format=json > fio-randread.json"},
          "fio-read.json fio-randread.json", expect,
          "slow checkpoints come from low IOPS or many small files; local NVMe is fastest (docs/troubleshooting.md#slow-checkpoint)"};
}

ChecklistStep Checkpoint(const StepEstimate& est) {
  std::string expect = "the resumed step's loss continues the curve";
  if (est.checkpoint_bytes > 0)
    expect = "about " + FormatGiB(est.checkpoint_bytes) + " GiB" +
             (est.checkpoint_write_s > 0 ? ", written in about " + FormatNumber("%.0f", est.checkpoint_write_s) + " s" : "") + "; " + expect;
  return {"save one checkpoint and load it back",
          {"# from the tiny job: save a checkpoint, restart from it, and compare the loss of the next step"}, "", expect, "docs/troubleshooting.md#validation-list (step 4)"};
}

ChecklistStep Profiler(const LaunchPlan& lp, const StepEstimate& est) {
  return {"profile the first minutes (torch.profiler or nsys)", {"# wrap a few training steps in torch.profiler.profile(...) and look at the GPU timeline"}, "",
          "step about " + FormatNumber("%.2f", lp.step_time_s) + " s, " + FormatNumber("%.0f", lp.tokens_per_s) + " tokens/s, MFU " +
              FormatNumber("%.0f", est.mfu * 100) + "%; GPU busy, data-parallel communication overlapped with the backward pass",
          "GPU utilisation below 50% points at data loading (docs/troubleshooting.md#data-loading)"};
}

}  // namespace

Result<std::vector<ChecklistStep>> BuildChecklist(const PlanContext& pc, const Catalog& catalog, const std::vector<CheckRule>& rules,
                                                  const std::string& plan_file) {
  const LaunchPlan& lp = pc.plan;
  const HardwareContext& hw = pc.hw;
  const StepEstimate est = EstimateStep(lp.job, hw);
  const bool multi = lp.nodes > 1;
  const bool amd = hw.gpu.vendor == "amd";
  std::vector<ChecklistStep> steps = {TinyJob(lp, hw, amd, plan_file), Topology(hw, amd, multi)};
  if (!amd) steps.push_back(Clocks(hw));
  steps.push_back(Pcie(hw, amd));
  if (multi)
    for (auto& s : Rdma(pc, catalog, rules)) steps.push_back(std::move(s));
  if (lp.nodes * lp.gpus_per_node > 1) {
    steps.push_back(Collectives(pc, est, catalog, rules, "all_reduce"));
    if (lp.job.parallel.zero >= 1 || multi) steps.push_back(Collectives(pc, est, catalog, rules, "all_gather"));
    if (multi) steps.push_back(Transport(pc));
  }
  steps.push_back(Storage(hw));
  if (!amd)
    steps.push_back({"GPU diagnostics (dcgmi diag)", {"dcgmi diag -r 2 > dcgmi.txt"}, "dcgmi.txt", "every test Pass",
                     "level 2 is the clouds' epilogue check (AWS ~2.5-10.5 min; DCGM docs); docs/troubleshooting.md#hardware-fault"});
  steps.push_back(Checkpoint(est));
  steps.push_back(Profiler(lp, est));
  return steps;
}

}  // namespace gpuplan
