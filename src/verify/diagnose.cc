// gpuplan diagnose: the common causes of a slow or failing run (docs/troubleshooting.md), with the model's numbers.
// Each cause is a hypothesis the model can test: a what-if re-estimate (the fabric NCCL fell back
// to, GPUDirect off), the memory model against the capacity, the checkpoint size against the
// storage, the data pipeline's rate against the host's cores (docs/diagnose.md).
#include <algorithm>
#include <cmath>
#include <regex>

#include "gpuplan/diagnose.h"
#include "gpuplan/error_bands.h"
#include "gpuplan/estimate.h"
#include "gpuplan/memory.h"
#include "gpuplan/report.h"
#include "toolout_internal.h"

namespace gpuplan {

namespace {

struct SymptomName {
  Symptom s;
  const char* name;
};
constexpr SymptomName kSymptoms[] = {{Symptom::kOom, "oom"},
                                     {Symptom::kNcclTimeout, "nccl-timeout"},
                                     {Symptom::kSlowMultinode, "slow-multinode"},
                                     {Symptom::kSlowCheckpoint, "slow-checkpoint"},
                                     {Symptom::kLossNan, "loss-nan"}};

// The table order of docs/troubleshooting.md: data loading, OOM, multi-node NCCL, checkpoint, numerics.
int TableOrder(const std::string& id) {
  static const std::vector<std::string> order = {"data_loader", "host_cores", "oom_model", "oom_fragmentation",
                                                 "network_no_rdma", "network_slow", "nccl_ports", "checkpoint_storage",
                                                 "nan_data", "gpu_memory_errors", "fp16_overflow", "gpu_throttled", "ib_errors", "intra_node_slow", "within_band"};
  auto it = std::find(order.begin(), order.end(), id);
  return static_cast<int>(it - order.begin());
}

bool Has(const Observations& o, Symptom s) { return std::find(o.symptoms.begin(), o.symptoms.end(), s) != o.symptoms.end(); }

std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }

std::string Tps(double v) { return WithThousands(static_cast<int64_t>(std::llround(v))) + " tokens/s"; }

// The job's tokens/s with one change (a what-if), or nullopt when it cannot be estimated.
std::optional<double> WhatIfTokens(Job job, const std::vector<std::pair<std::string, std::string>>& changes,
                                   const Catalog& catalog, const Calibration& cal) {
  for (const auto& [k, v] : changes)
    if (!SetJobKey(job, k, v, {"diagnose what-if", 0, k}).ok()) return std::nullopt;
  auto hw = ResolveHardware(job, catalog, cal);
  if (!hw.ok()) return std::nullopt;
  const StepEstimate e = EstimateStep(job, *hw);
  if (!e.feasible) return std::nullopt;
  return e.tokens_per_s;
}

void DataLoader(const Job& job, const Diagnosis& d, const Observations& o, const Calibration& cal, std::vector<Cause>& out) {
  const double per_gpu = d.expected_tokens_per_s / static_cast<double>(job.cluster.num_gpus);
  const double min_cores = cal.Get("host_vcpus_per_gpu_min");
  Cause c{"data_loader", "the data pipeline cannot feed the GPUs", "", "", "", "docs/troubleshooting.md#data-loading", 0};
  std::string ev;
  if (o.gpu_util_pct && *o.gpu_util_pct < 50) {
    ev += "GPU utilisation " + F("%.0f", *o.gpu_util_pct) + "% (below 50%)";
    c.score = 0.4;
    if (o.cpu_util_pct && *o.cpu_util_pct >= 80) {
      ev += " while the CPU is " + F("%.0f", *o.cpu_util_pct) + "% busy";
      c.score = 0.85;
    }
  }
  if (o.loader_tokens_per_s_per_core && *o.loader_tokens_per_s_per_core > 0) {
    const double need = per_gpu / *o.loader_tokens_per_s_per_core;
    ev += std::string(ev.empty() ? "" : "; ") + "at the expected " + Tps(per_gpu) + " per GPU the data loader needs " + F("%.1f", need) +
          " cores per GPU (" + Tps(*o.loader_tokens_per_s_per_core) + " per core measured)";
    if (o.host_cores_per_gpu) {
      ev += " and the host has " + F("%.0f", *o.host_cores_per_gpu);
      if (need > *o.host_cores_per_gpu) c.score = std::max(c.score, 0.9);
      else if (c.score > 0) c.score -= 0.2, ev += " (enough for the loader alone)";
    }
  }
  if (o.tokens_per_s && d.measured_over_expected && *d.measured_over_expected < 0.8 && c.score > 0)
    ev += "; measured " + Tps(*o.tokens_per_s) + " vs " + Tps(d.expected_tokens_per_s) + " expected";
  if (c.score == 0) return;
  c.evidence = ev;
  c.confirm = "watch `nvidia-smi dmon -s u` next to `top`: GPU utilisation dips while DataLoader workers are at 100%; "
              "`gpuplan probe --bench cpu` measures the pipeline's rate per core";
  c.fix = "raise DataLoader num_workers (and prefetch_factor, pin_memory), pre-tokenize and pack the data into large files, "
          "or rent a host with more vCPUs per GPU (docs/troubleshooting.md#data-loading: >= " + F("%.0f", min_cores) + ")";
  out.push_back(c);
  if (o.host_cores_per_gpu && *o.host_cores_per_gpu < min_cores)
    out.push_back({"host_cores", "too few host cores per GPU",
                   F("%.0f", *o.host_cores_per_gpu) + " vCPUs per GPU; too few vCPUs per GPU has been reported to drop an H100 from 90% to below 60% utilisation (want >= " +
                       F("%.0f", min_cores) + ", calibration host_vcpus_per_gpu_min)",
                   "`nproc` and `nvidia-smi -L` on one node", "an instance with >= " + F("%.0f", min_cores) + " vCPUs per GPU",
                   "docs/troubleshooting.md#data-loading", 0.5});
}

void Memory(const Job& job, const GpuSpec& gpu, const Observations& o, const Calibration& cal, std::vector<Cause>& out) {
  if (!Has(o, Symptom::kOom)) return;
  const MemoryBreakdown m = EstimateMemory(job, cal, false);
  const double cap = gpu.memory_bytes;
  if (m.total_bytes > cap) {
    std::string steps;
    int n = 0;
    for (const auto& s : SuggestMemorySavings(job, cap, cal)) {
      if (!s.fits || n >= 3) continue;
      steps += std::string(n++ ? "; " : "") + s.step + " -> " + FormatGiB(s.total_bytes) + " GiB";
    }
    out.push_back({"oom_model", "the job does not fit: the memory model agrees",
                   "the model needs " + FormatGiB(m.total_bytes) + " GiB per GPU, " + gpu.id + " has " + FormatGiB(cap) + " GiB",
                   "`gpuplan memory` with the same job lists each item", steps.empty() ? "more GPUs or a smaller micro-batch" : steps,
                   "docs/troubleshooting.md#oom", 0.9});
    return;
  }
  const ExpectedError band = ExpectedErrorFor(job, gpu.family);
  const double under = band.memory ? band.memory->p90_under : 0;
  out.push_back({"oom_fragmentation", "the model says it fits: peaks beyond the steady state",
                 "the model needs " + FormatGiB(m.total_bytes) + " of " + FormatGiB(cap) + " GiB (" + F("%.0f", 100 * (1 - m.total_bytes / cap)) +
                     "% free); the memory model under-predicts by up to " + F("%.0f", 100 * under) +
                     "% on 9 validated runs in 10 of this kind, and longer sequences, evaluation or checkpoint saving add peaks",
                 "`torch.cuda.max_memory_allocated()` and `max_memory_reserved()` per step; "
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to rule out fragmentation",
                 "expandable segments, recompute selective, a smaller micro-batch at the same global batch",
                 "docs/troubleshooting.md#oom", 0.5});
}

void Network(const Job& job, const HardwareContext& hw, const Diagnosis& d, const Observations& o, const Catalog& catalog,
             const Calibration& cal, std::vector<Cause>& out) {
  const bool multinode = job.cluster.num_gpus > job.cluster.gpus_per_node;
  const bool complaint = Has(o, Symptom::kNcclTimeout) || Has(o, Symptom::kSlowMultinode);
  if (!multinode && !complaint) return;
  const bool socket = o.nccl_transport && o.nccl_transport->find("Socket") != std::string::npos;
  if (multinode && (socket || complaint || (d.measured_over_expected && *d.measured_over_expected < 0.8))) {
    // What-if: NCCL on kernel TCP sockets over a cloud VPC NIC instead of the fabric assumed.
    std::string ev, best_id;
    double best_gap = 1e300, best_tps = 0;
    for (const char* id : {"tcp-25g", "tcp-100g"}) {
      auto t = WhatIfTokens(job, {{"cluster.network", id}, {"cluster.gpudirect_rdma", "false"}}, catalog, cal);
      if (!t) continue;
      const double gap = o.tokens_per_s ? std::abs(std::log(*t / *o.tokens_per_s)) : 0;
      if (gap < best_gap) best_gap = gap, best_id = id, best_tps = *t;
    }
    if (!best_id.empty()) {
      ev = "the model gives " + Tps(d.expected_tokens_per_s) + " on " + hw.inter.id + " and " + Tps(best_tps) + " if NCCL runs on TCP sockets (" +
           best_id + ")";
      if (o.tokens_per_s) ev += "; measured " + Tps(*o.tokens_per_s);
    }
    double score = socket ? 0.95 : 0.3;
    if (socket) ev = o.nccl_transport_from.file + (o.nccl_transport_from.line ? ":" + std::to_string(o.nccl_transport_from.line) : "") +
                     ": NCCL chose " + *o.nccl_transport + " (no RDMA); " + ev;
    if (!socket && o.tokens_per_s && best_gap < std::log(1.25)) score = 0.7;  // the measurement matches the TCP what-if
    if (hw.inter.kind == "tcp") {
      score = std::max(score, 0.6);
      ev += std::string(ev.empty() ? "" : "; ") + "the job's own network is TCP (" + hw.inter.id + ")";
    }
    out.push_back({"network_no_rdma", "inter-node traffic is not on RDMA", ev,
                   "run with NCCL_DEBUG=INFO and look for 'NET/IB' (RDMA; '/GDRDMA' with GPUDirect) vs 'NET/Socket'; "
                   "`ibstat` ports Active; `gpuplan verify` reads both",
                   "an instance with RDMA (InfiniBand, RoCE, EFA), the fabric's NCCL environment (`gpuplan export --to fabric`), "
                   "GPUDirect RDMA kernel module (nvidia-peermem)",
                   "docs/troubleshooting.md#nccl-timeout and #no-rdma", score});
  }
  if (Has(o, Symptom::kNcclTimeout))
    out.push_back({"nccl_ports", "NCCL cannot connect: ports blocked or the wrong interface",
                   "a timeout (not slowness) points at connectivity: NCCL needs TCP ports between all nodes for bootstrap and, on RDMA, the IB/RoCE ports",
                   "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET on every rank; `nc -zv` between nodes on the rendezvous port",
                   "open the security group between the nodes (all TCP within the group), set NCCL_SOCKET_IFNAME to the node's interface",
                   "docs/troubleshooting.md#nccl-timeout", 0.6});
  if (o.busbw && o.busbw->ranks >= 2) {
    // The measured collective against the model's bus bandwidth for it (docs/model/communication.md).
    const Observations::BusBw& b = *o.busbw;
    const Collective c = b.op == "all_gather" ? Collective::kAllGather
                         : b.op == "reduce_scatter" ? Collective::kReduceScatter
                         : b.op == "alltoall" ? Collective::kAllToAll
                                                : Collective::kAllReduce;
    const int64_t nodes = b.nodes > 0 ? b.nodes : (b.ranks + job.cluster.gpus_per_node - 1) / job.cluster.gpus_per_node;
    Job sized = job;
    sized.cluster.num_gpus = b.ranks;
    auto hw2 = ResolveHardware(sized, catalog, cal);
    if (hw2.ok()) {
      const double model = BusBandwidth(c, b.bytes > 0 ? b.bytes : double(int64_t{1} << 30), b.ranks, std::max<int64_t>(1, b.ranks / nodes), *hw2) / 1e9;
      const double ratio = b.gb_per_s / model;
      if (ratio < 0.8) {
        const std::string where = b.where.file + (b.where.line ? ":" + std::to_string(b.where.line) : "");
        out.push_back({nodes > 1 ? "network_slow" : "intra_node_slow",
                       nodes > 1 ? "the fabric delivers less than the model assumes" : "the GPUs' own links deliver less than the model assumes",
                       where + ": " + b.op + " bus bandwidth " + F("%.1f", b.gb_per_s) + " GB/s over " + std::to_string(b.ranks) + " ranks (" +
                           std::to_string(nodes) + " node" + (nodes == 1 ? "" : "s") + ") is " + F("%.0f", 100 * ratio) + "% of the " +
                           F("%.1f", model) + " GB/s the model gives for it on " + (nodes > 1 ? hw2->inter.id : hw2->intra.id),
                       "`gpuplan verify --plan ...` on the same output, ib_write_bw per NIC, NCCL_DEBUG=INFO for the transport",
                       "fix what verify fails; `gpuplan calibrate` from this busbw so the plan uses the measured rate",
                       "docs/troubleshooting.md#slow-network (all_reduce at 30% until the switch buffers were fixed; >= 80% of the rate)",
                       ratio < 0.5 ? 0.85 : 0.65});
        return;
      }
    }
  }
  if (multinode && d.measured_over_expected && *d.measured_over_expected < 0.8 && !socket) {
    out.push_back({"network_slow", "the fabric delivers less than the catalog's line rate",
                   "measured " + Tps(*o.tokens_per_s) + " is " + F("%.0f", 100 * *d.measured_over_expected) + "% of the " +
                       Tps(d.expected_tokens_per_s) + " expected on " + hw.inter.id,
                   "`gpuplan checklist` prints the all_reduce_perf and ib_write_bw runs and the busbw each should reach; `gpuplan verify` compares",
                   "fix what verify fails (ports down, x8 PCIe links, a rail missing, switch buffers); `gpuplan calibrate` from the measured busbw",
                   "docs/troubleshooting.md#slow-network (ib_write_bw >= 80% of line rate)", 0.45});
  }
}

void Checkpoint(const Job& job, const HardwareContext& hw, const Observations& o, const StepEstimate& e, std::vector<Cause>& out) {
  if (!Has(o, Symptom::kSlowCheckpoint)) return;
  std::string ev = "one checkpoint is " + F("%.1f", e.checkpoint_bytes / 1e9) + " GB";
  double score = 0.5;
  if (hw.storage && e.checkpoint_write_s > 0) {
    ev += "; at " + hw.storage->id + "'s write bandwidth the model expects " + F("%.0f", e.checkpoint_write_s) + " s";
    if (o.checkpoint_s && *o.checkpoint_s > 2 * e.checkpoint_write_s) {
      ev += ", measured " + F("%.0f", *o.checkpoint_s) + " s (" + F("%.1f", *o.checkpoint_s / e.checkpoint_write_s) + "x): small files or IOPS, not bandwidth";
      score = 0.8;
    }
  } else {
    ev += "; no storage given (cluster.storage), so the model has no write bandwidth to compare with";
  }
  out.push_back({"checkpoint_storage", "checkpoint writes are bound by the storage", ev,
                 "`fio` sequential write and small-file IOPS on the checkpoint path (`gpuplan probe --bench storage PATH`)",
                 "fewer, larger files (consolidated shards), a file system with more IOPS, asynchronous checkpointing (training.checkpoint_async)",
                 "docs/troubleshooting.md#slow-checkpoint", score});
}

// A NaN loss: in fp16 the usual cause is overflow; in bf16 (fp32's range) overflow is rare, and a
// batch of bad data or a card with memory errors comes first (Megatron-LM's rerun state machine
// re-runs the step to tell these apart: megatron/core/rerun_state_machine.py).
void Numerics(const Job& job, const GpuSpec& gpu, const Observations& o, std::vector<Cause>& out) {
  if (!Has(o, Symptom::kLossNan)) return;
  const bool fp16 = job.training.precision == Precision::kFp16;
  std::string ev = fp16 ? "the job trains in fp16 (max 65504): overflow without a loss scaler turns into inf/NaN"
                        : "the job trains in " + ToString(job.training.precision) + ", whose range is fp32's: overflow is the rarer cause";
  if (fp16 && gpu.bf16_supported) ev += "; " + gpu.id + " has bf16, whose range is fp32's";
  out.push_back({"nan_data", "a bad batch: an empty or corrupt sample, labels outside the vocabulary, a loss over zero tokens",
                 fp16 ? "a NaN that follows one batch is the data's, whatever the precision"
                      : "in " + ToString(job.training.precision) + " a NaN that starts at one step usually follows one batch",
                 "log the sample ids of each step; re-run the first NaN step's batch alone (same seed) and check it for empty "
                 "sequences, token ids >= vocab size and all-masked labels",
                 "drop or fix the samples; skip a step whose loss is not finite (Megatron --check-for-nan-in-loss-and-grad)",
                 "Megatron-LM megatron/core/rerun_state_machine.py (re-run a step to tell a data fault from a hardware fault)",
                 fp16 ? 0.45 : 0.6});
  out.push_back({"gpu_memory_errors", "a GPU with memory errors (a bad card)",
                 "a NaN that does not repeat when the same batch is re-run, or that follows one rank, points at the hardware",
                 "`nvidia-smi -q -d ECC,ROW_REMAPPER` on every node (uncorrectable ECC errors, pending row remaps); XID 48, 63, 64, "
                 "94 or 95 in `dmesg`; `dcgmi diag -r 3`",
                 "take the card out of the pool (a pending row remap clears on a GPU reset); resume from the last checkpoint",
                 "NVIDIA GPU Memory Error Management and XID Errors (docs.nvidia.com/deploy)", fp16 ? 0.4 : 0.5});
  out.push_back({"fp16_overflow", fp16 ? "fp16 overflow" : "numerical instability",
                 ev, "log the loss scale and the gradient norm per step; the first NaN step's inputs",
                 fp16 && gpu.bf16_supported ? "train in bf16 (training.precision: bf16)" : "dynamic loss scaling, gradient clipping, a lower learning rate",
                 "docs/troubleshooting.md#loss-nan (bf16, not fp16, on A100 and newer)", fp16 ? 0.7 : 0.3});
}

void Hardware(const Diagnosis& d, const Observations& o, std::vector<Cause>& out) {
  if (o.throttled_gpus > 0) {
    std::string ev = o.throttled_from.file + (o.throttled_from.line ? ":" + std::to_string(o.throttled_from.line) : "") + ": " +
                     std::to_string(o.throttled_gpus) + " GPU(s) with a thermal or hardware slowdown active";
    if (d.measured_over_expected) ev += "; measured " + F("%.0f", 100 * *d.measured_over_expected) + "% of the expected rate";
    out.push_back({"gpu_throttled", "GPUs are clocking down (thermal or hardware slowdown)", ev,
                   "`nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER` under load; `dcgmi diag -r 2`",
                   "cooling and airflow (above about 80 C the clock drops), the power cap (`nvidia-smi -pl`; cluster.power_limit_w "
                   "re-estimates at a cap), a failing card out of the pool",
                   "docs/troubleshooting.md#throttling", 0.75});
  }
  if (o.ib_completion_error) {
    const Location& w = *o.ib_completion_error;
    out.push_back({"ib_errors", "InfiniBand completion errors: a link or NIC is failing",
                   w.file + (w.line ? ":" + std::to_string(w.line) : "") + ": NCCL reported an IB completion error",
                   "`ibstat` (ports Active, rate), `ibv_devinfo`, the switch port counters (symbol errors, link downed)",
                   "reseat or replace the cable/NIC, take the node out of the pool until ib_write_bw passes",
                   "docs/troubleshooting.md#hardware-fault", 0.8});
  }
}

}  // namespace

std::string ToString(Symptom s) {
  for (const auto& x : kSymptoms)
    if (x.s == s) return x.name;
  return "?";
}

std::optional<Symptom> ParseSymptom(const std::string& name) {
  for (const auto& x : kSymptoms)
    if (name == x.name) return x.s;
  return std::nullopt;
}

const std::vector<std::string>& SymptomNames() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> n;
    for (const auto& x : kSymptoms) n.push_back(x.name);
    return n;
  }();
  return v;
}

Result<Diagnosis> Diagnose(const Job& job, const Catalog& catalog, const Calibration& cal, const Observations& obs) {
  auto hw = ResolveHardware(job, catalog, cal);
  if (!hw.ok()) return hw.status();
  const StepEstimate e = EstimateStep(job, *hw);
  if (!e.feasible) return Status::Infeasible(e.infeasible_reason);
  Diagnosis d;
  d.expected_tokens_per_s = e.tokens_per_s;
  d.expected_step_s = e.step_time_s;
  if (obs.tokens_per_s) d.measured_over_expected = *obs.tokens_per_s / e.tokens_per_s;
  const ExpectedError band = ExpectedErrorFor(job, hw->gpu.family);
  if (band.throughput) d.band_p90 = band.throughput->p90_abs;
  DataLoader(job, d, obs, cal, d.causes);
  Memory(job, hw->gpu, obs, cal, d.causes);
  Network(job, *hw, d, obs, catalog, cal, d.causes);
  Checkpoint(job, *hw, obs, e, d.causes);
  Numerics(job, hw->gpu, obs, d.causes);
  Hardware(d, obs, d.causes);
  if (d.measured_over_expected && d.band_p90 && std::abs(*d.measured_over_expected - 1) <= *d.band_p90 && obs.symptoms.empty())
    d.causes.push_back({"within_band", "no anomaly: the measurement is within the model's own error",
                        "measured " + Tps(*obs.tokens_per_s) + " is " + F("%+.0f", 100 * (*d.measured_over_expected - 1)) + "% from the " +
                            Tps(e.tokens_per_s) + " expected; the model's p90 error for this kind of job is ±" + F("%.0f", 100 * *d.band_p90) + "%",
                        "`gpuplan calibrate` from this run makes the next estimate start from it", "nothing to fix",
                        "data/error_bands.csv", 0.2});
  std::stable_sort(d.causes.begin(), d.causes.end(), [](const Cause& a, const Cause& b) {
    if (a.score != b.score) return a.score > b.score;
    return TableOrder(a.id) < TableOrder(b.id);
  });
  return d;
}

namespace {

// A log line longer than any line that carries a rate (1 MB of digits, a binary blob) is not read:
// std::regex matches by recursion and such a line would overflow the stack.
constexpr size_t kMaxLogLineBytes = 4096;

// The rate one log line states, its number read whole (digits, thousands commas, a fraction, an
// exponent: "4,100.5", "4.1e3", "1e308"); nullopt when the line states none.
std::optional<std::string> RateText(const std::string& line) {
  static const std::string kNumber = R"(([0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))";
  static const std::regex after(R"((?:tokens?/s(?:ec)?|tok/s|tps|tokens_per_s(?:ec(?:ond)?)?|throughput)\s*[:=]\s*(-?))" + kNumber,
                                std::regex::icase);
  static const std::regex before("(-?)" + kNumber + R"(\s*(?:tokens?/s(?:ec)?|tok/s)\b)", std::regex::icase);
  std::smatch m;
  if (std::regex_search(line, m, after)) return m[1].str() + m[2].str();
  if (std::regex_search(line, m, before)) return m[1].str() + m[2].str();
  return std::nullopt;
}

}  // namespace

Result<LogRate> ReadTokensPerSecond(const std::string& text, const std::string& file) {
  // Rates outside data/reading_ranges.csv's tokens/s row (0, a negative, 1e308, an overflow to inf)
  // are warnings at their line, never a number.
  const auto range = toolout::RangeOf("tokens/s");
  const double lo = range ? range->min : 1e-6, hi = range ? range->max : 1e15;
  LogRate out;
  std::vector<std::pair<double, int>> rates;
  int line_no = 0;
  for (size_t start = 0; start <= text.size();) {
    const size_t nl = text.find('\n', start);
    const size_t len = (nl == std::string::npos ? text.size() : nl) - start;
    ++line_no;
    const Location at{file, line_no, "tokens/s"};
    std::optional<std::string> num;
    if (len > kMaxLogLineBytes) out.warnings.push_back({at, "a line of " + std::to_string(len) + " characters: not read"});
    else num = RateText(text.substr(start, len));
    if (num) {
      num->erase(std::remove(num->begin(), num->end(), ','), num->end());
      const double v = std::strtod(num->c_str(), nullptr);
      if (std::isfinite(v) && v >= lo && v <= hi) rates.emplace_back(v, line_no);
      else out.warnings.push_back({at, *num + " tokens/s is beyond a training run's rate (" + FormatNumber("%g", lo) + ".." + FormatNumber("%g", hi) +
                                           ", data/reading_ranges.csv): not read"});
    }
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  if (rates.empty() && !out.warnings.empty())
    return Status::BadInput(out.warnings.front().first, "no tokens/s rate in range; " + out.warnings.front().second);
  if (rates.empty())
    return Status::BadInput({file, 0, ""}, "no line carries a tokens/s rate (expected e.g. 'tokens/s: 4100', '4,100 tok/s', 'tps: 4100')");
  std::vector<std::pair<double, int>> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  const auto& mid = sorted[sorted.size() / 2];
  out.tokens_per_s = mid.first;
  out.where = {file, mid.second, "tokens/s"};
  out.lines = static_cast<int>(rates.size());
  return out;
}

}  // namespace gpuplan
