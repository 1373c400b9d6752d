// §6 the whole setup of one ranked candidate (planner.md §6): layout, wall-clock, bill, network,
// host checks, storage, warnings, bottleneck.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gpuplan/memory.h"
#include "stages.h"

namespace gpuplan::search {

namespace {
constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMinNodeBitsPerS = 0.05e9, kMaxNodeBitsPerS = 6400e9;

std::string Fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[300];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

double CommShare(const StepEstimate& e) {
  const StepBreakdown& b = e.breakdown;
  return (b.tp_comm_s + b.cp_comm_s + b.pp_comm_s + b.dp_comm_s + b.ep_comm_s) / e.step_time_s;
}

// The least per-node bandwidth that keeps exposed communication <= comm_share_max of the step
// (data/efficiency.csv), the part that needs it (the one the slower link grows most: pipeline hops
// or data-parallel sync across nodes), or the intra-node part that keeps communication above it at
// any bandwidth; and whether plain TCP (the fastest TCP link in the catalog, one port per GPU) can
// reach it.
void NetworkNeeds(const Context& ctx, const Setup& su, const HardwareContext& hw, Plan& p) {
  const double max_share = ctx.cal.Get("comm_share_max");
  p.comm_share_max = max_share;
  HardwareContext h2 = hw;
  h2.rdma = true;
  const double per = static_cast<double>(su.inst.gpu_count);
  double lo = kMinNodeBitsPerS / 8 / per, hi = kMaxNodeBitsPerS / 8 / per;  // per GPU, bytes/s
  auto at = [&](double per_gpu_bw) {
    h2.inter_bytes_per_s_per_gpu = per_gpu_bw;
    return EstimateStep(p.job, h2);
  };
  const StepEstimate fast = at(hi);
  if (CommShare(fast) > max_share) {
    p.comm_share_unreachable = true;
    const std::vector<CommPart> parts = CommParts(p.job, h2, fast);
    if (!parts.empty()) p.network_cause = parts[0].what + " over " + parts[0].link;
  } else {
    if (CommShare(at(lo)) <= max_share) hi = lo;
    for (int i = 0; i < 40 && hi > lo; ++i) {
      const double mid = std::sqrt(lo * hi);
      (CommShare(at(mid)) <= max_share ? hi : lo) = mid;
    }
    p.min_inter_node_gbps = hi * 8 * per / 1e9;
    // The cause: the inter-node part that grows most from the fastest link to the required one.
    const std::vector<CommPart> need = CommParts(p.job, h2, at(hi)), base = CommParts(p.job, h2, fast);
    double grown = -1;
    for (const auto& c : need) {
      if (!c.inter_node) continue;
      double before = 0;
      for (const auto& b : base) if (b.part == c.part) before = b.exposed_s;
      if (c.exposed_s - before > grown) grown = c.exposed_s - before, p.network_cause = c.what + " across nodes";
    }
  }
  double tcp_bw = 0;
  for (const auto& l : ctx.catalog.links)
    if (l.kind == "tcp") tcp_bw = std::max(tcp_bw, l.bw_bytes_per_s_per_dir);
  HardwareContext tcp = hw;
  tcp.rdma = false;
  tcp.inter_bytes_per_s_per_gpu = tcp_bw;
  tcp.k.inter_eff = ctx.cal.Get("link_eff.tcp");
  p.rdma_required = CommShare(EstimateStep(p.job, tcp)) > max_share;
}

// Host sizing: known facts are ok or warn; unknown facts say unknown (never ok).
void HostChecks(const Context& ctx, const Setup& su, const HardwareContext& hw, Plan& p) {
  const double g = static_cast<double>(su.inst.gpu_count);
  if (su.inst.vcpus) {
    const double per_gpu = *su.inst.vcpus / g, want = ctx.cal.Get("host_vcpus_per_gpu_min");
    p.host.push_back({"CPU", per_gpu >= want ? CheckState::kOk : CheckState::kWarn,
                      Fmt("%.0f vCPUs per GPU (want >= %.0f for data loading)", per_gpu, want)});
  } else {
    p.host.push_back({"CPU", CheckState::kUnknown, "vCPU count unknown for this instance"});
  }
  const double ratio = ctx.cal.Get("host_ram_per_gpu_memory_min");
  const double need = ratio * hw.gpu.memory_bytes * g;
  if (su.inst.ram_bytes) {
    p.host.push_back({"RAM", *su.inst.ram_bytes >= need ? CheckState::kOk : CheckState::kWarn,
                      Fmt("%.0f GiB RAM vs %.0f GiB (%.1fx GPU memory)", *su.inst.ram_bytes / kGiB, need / kGiB, ratio)});
  } else {
    p.host.push_back({"RAM", CheckState::kUnknown, Fmt("RAM size unknown (want >= %.0f GiB)", need / kGiB)});
  }
  const double dataset = p.storage.dataset_bytes / static_cast<double>(p.nodes);
  if (su.inst.local_nvme_bytes) {
    p.storage.local_cache = Fmt("local NVMe %.1f TB per node (dataset share %.2f TB ", *su.inst.local_nvme_bytes / 1e12, dataset / 1e12) +
                            (*su.inst.local_nvme_bytes >= dataset ? "fits)" : "does NOT fit)");
    p.host.push_back({"local NVMe", *su.inst.local_nvme_bytes >= dataset ? CheckState::kOk : CheckState::kWarn, p.storage.local_cache});
  } else {
    p.storage.local_cache = "local NVMe size unknown for this instance";
    p.host.push_back({"local NVMe", CheckState::kUnknown, p.storage.local_cache});
  }
}

void StorageHomes(const Context& ctx, const Setup& su, const Variant& v, const Item& it, const Candidate& c, Plan& p) {
  p.storage.dataset_bytes = ctx.job.training.tokens * ctx.job.training.data_bytes_per_token;
  p.storage.dataset_home = "unknown (no object store for " + su.inst.provider + " in the catalog)";
  p.storage.shared_fs = "none in catalog";
  for (const auto& s : ctx.catalog.storage) {
    if (s.provider != su.inst.provider) continue;
    if (s.tier == "object" && p.storage.dataset_home.rfind("unknown", 0) == 0) p.storage.dataset_home = s.id;
    if (s.tier == "parallel-fs" && p.storage.shared_fs == "none in catalog") p.storage.shared_fs = s.id;
  }
  p.storage.checkpoint = v.sizes;
  p.storage.targets_compared = static_cast<int64_t>(it.targets.size());
  if (c.run.target >= 0) {
    p.storage.target = it.targets[static_cast<size_t>(c.run.target)];
    if (p.storage.target->kind.find("parallel-fs") != std::string::npos) p.storage.shared_fs = p.storage.target->id;
  }
}

// Spot: the price looks like a lowest-AZ minimum, or multi-node capacity of this class is scarce.
void SpotWarnings(const Context& ctx, const Setup& su, Plan& p) {
  if (su.price_kind != "spot") return;
  if (!su.price_note.empty()) p.warnings.push_back("spot price " + su.price_note + " (spot_price_date " + su.price_date + ")");
  const double ratio = su.price && su.inst.on_demand_usd_per_hour ? *su.price / *su.inst.on_demand_usd_per_hour : 1;
  const double min_ratio = ctx.cal.Get("spot_price_ratio_min_plausible");
  if (ratio < min_ratio * (1 - 1e-9))
    p.warnings.push_back(Fmt("spot price is %.0f%% of on-demand, below the %.0f%% that spot usually costs: likely the cheapest zone's "
                             "price, not what a multi-hour job gets (spot_price_date ",
                             100 * ratio, 100 * min_ratio) + su.price_date + ")");
  if (p.nodes > 1 && ctx.cal.Has("spot_capacity_scarce." + su.gpu_family))
    p.warnings.push_back("spot capacity for " + std::to_string(p.nodes) + " nodes of " + su.inst.gpu_id +
                         " at once is scarce: expect queueing; the wall-clock does not include waiting for capacity");
  if (p.rates.interruption_source.rfind("spot_interruptions_per_node_hour.default", 0) == 0)
    p.warnings.push_back("no published interruption rate for " + su.inst.provider + ": the default (" +
                         Fmt("%.2g per node-hour", p.rates.interruptions_per_node_hour) + ") is assumed");
  const std::optional<CheckpointTarget>& t = p.storage.target;
  if (!FitsReclaimNotice(t ? &*t : nullptr, p.rates))
    p.warnings.push_back(Fmt("spot: a save on the %.0f s reclaim notice is not durable in time (%.0f s); "
                             "set training.checkpoint_async: true",
                             p.rates.reclaim_notice_s, t ? t->durable_s : 0.0));
}

// The plan's checkpoint policy carried in its job (exports read it back from the row's "job"):
// the interval in whole minutes (the pinned one as given) and async as chosen (R§3).
void SetCheckpointPolicy(const Context& ctx, Plan& p) {
  if (!p.storage.target) return;
  if (!ctx.pinned("training.checkpoint_interval_min"))
    p.job.training.checkpoint_interval_min = std::max(1.0, std::round(p.wall.interval_s / 60));
  p.job.training.checkpoint_async = p.storage.target->async;
  const CheckpointTarget& t = *p.storage.target;
  if (t.node_local)
    p.warnings.push_back("checkpoints stay on each node's " + std::string(t.kind == "local-nvme" ? "local NVMe" : "disk") +
                         ": a lost node loses its shard; copy them to shared or object storage");
}
}  // namespace

Plan Describe(const Context& ctx, const std::vector<Setup>& setups, const std::vector<Variant>& variants,
              const std::vector<Item>& items, const Candidate& c) {
  const Item& it = items[c.item];
  const Variant& v = variants[it.variant];
  const Setup& su = setups[v.setup];
  const HardwareContext& hw = v.hw;
  Plan p;
  p.instance = su.inst;
  p.nodes = it.nodes;
  p.job = ctx.job;
  p.job.training.precision = v.precision;
  p.job.training.framework = v.engine->framework;
  p.engine = v.engine->export_format;
  p.engine_family = v.engine->family;
  p.job.cluster.gpu = su.inst.gpu_id;
  p.job.cluster.gpus_per_node = su.inst.gpu_count;
  p.job.cluster.num_gpus = it.nodes * su.inst.gpu_count;
  p.job.cluster.intra_node = hw.intra.id;
  p.job.cluster.network = hw.inter.id;
  p.job.cluster.nics_per_node = static_cast<int64_t>(hw.nics_per_node);
  if (su.inst.vcpus && !ctx.pinned("cluster.cpu_cores_per_gpu"))
    p.job.cluster.cpu_cores_per_gpu = static_cast<int64_t>(*su.inst.vcpus / static_cast<double>(su.inst.gpu_count));
  p.job.parallel = c.par;
  p.job.training.micro_batch = c.micro_batch;
  p.job.training.recompute = c.recompute;
  p.network = it.nodes > 1 ? hw.inter.id : "none (single node)";
  p.estimate = EstimateStep(p.job, hw);
  p.memory_bytes = c.memory_bytes;
  p.memory_headroom = ctx.headroom;
  p.train_s = c.train_s;
  p.startup = it.startup;
  p.rates = it.rates;
  p.wall = c.run.wall;
  p.time_s = c.run.wall.time_s;
  p.cost = c.run.cost;
  const int64_t gpus = p.job.cluster.num_gpus;
  p.tier = gpus == 1 ? Tier::kSingleCard : it.nodes == 1 ? Tier::kSingleNode : Tier::kMultiNode;
  StorageHomes(ctx, su, v, it, c, p);
  HostChecks(ctx, su, hw, p);
  if (it.nodes > 1) NetworkNeeds(ctx, su, hw, p);
  SpotWarnings(ctx, su, p);
  // A price older than price_max_age_days (calibration) may no longer be what the provider charges.
  if (const auto age_days = PriceAgeDays(su.price_date, ctx.today); age_days && *age_days > ctx.cal.Get("price_max_age_days"))
    p.warnings.push_back("price dated " + su.price_date +
                         Fmt(" is %.0f months old: recheck the provider's price page (cost and ranking use it as listed)",
                             static_cast<double>(*age_days) / 30.44));
  if (su.price_kind == "capacity-block")
    p.warnings.push_back("capacity block: booked ahead for " + std::to_string(p.nodes) + " nodes and billed in whole " +
                         Fmt("%.0f h increments (%.0f h billed for the run); the wait until the block starts is not in the wall-clock",
                             su.billing_increment_s / 3600, p.cost.billed_hours));
  if (!p.storage.target)
    p.warnings.push_back("no checkpoint target for " + su.inst.provider + " (cluster.storage " + ctx.job.cluster.storage +
                         " has no write rate): a failure restarts the run from the start (the wall-clock counts that)");
  // Hardware what-ifs (RDMA, local NVMe) are resolved from the catalog, as the flags would be.
  p.bottleneck = AnalyzeBottleneck(p.job, &ctx.catalog, hw, p.estimate).sentence;
  SetCheckpointPolicy(ctx, p);  // after the estimate: the step is the search's
  return p;
}

void AddFp8WhatIf(const Context& ctx, const std::vector<Setup>& setups, const std::vector<Variant>& variants,
                  const std::vector<Item>& items, const Candidate& c, Plan& p) {
  const Item& it = items[c.item];
  const Variant& v = variants[it.variant];
  const Setup& su = setups[v.setup];
  const std::vector<Precision>& asked = ctx.job.constraints.precisions;
  if (v.precision != Precision::kBf16 || std::find(asked.begin(), asked.end(), Precision::kFp8) != asked.end()) return;
  if (!v.hw.gpu.fp8_supported || !v.hw.gpu.fp8_flops) return;
  const Method m = ctx.job.training.method;
  if (m != Method::kFull && m != Method::kPretrain) return;
  // The hardware as the planner resolves it for an fp8 variant of this setup and engine.
  const Job variant = VariantJob(ctx, su, *v.engine, Precision::kFp8);
  if (!EngineCannotTrain(*v.engine, variant, v.engine->id).empty()) return;
  const auto hw = ResolveHardware(variant, ctx.catalog, ctx.cal);
  if (!hw.ok()) return;
  Job row = p.job;
  row.training.precision = Precision::kFp8;
  if (EstimateMemory(row, ctx.cal, false).total_bytes > v.hw.gpu.memory_bytes * (1 - ctx.headroom)) return;
  const StepEstimate e = EstimateStep(row, *hw);
  if (!e.feasible || !(e.step_time_s > 0) || !std::isfinite(e.step_time_s)) return;
  const double train_s = ctx.job.training.tokens / e.tokens_per_step * (e.step_time_s - e.breakdown.checkpoint_s);
  if (!(train_s < p.train_s)) return;  // fp8 would not be faster here: nothing to weigh
  const RunOutcome run = PriceRun(ctx, su, it, train_s);
  if (!run.wall.converges) return;
  p.fp8_what_if = Fp8WhatIf{e.step_time_s, run.wall.time_s, run.cost.with_rerun_usd, run.cost.price_known,
                            "numerics: validate the loss curve before a long run"};
}

}  // namespace gpuplan::search

namespace gpuplan {

std::string LayoutString(const Job& job) {
  const ParallelSpec& q = job.parallel;
  std::string s = "tp" + std::to_string(q.tp) + " pp" + std::to_string(q.pp);
  if (q.vpp > 1) s += "x" + std::to_string(q.vpp);
  s += " dp" + std::to_string(q.dp);
  if (q.cp > 1) s += " cp" + std::to_string(q.cp);
  s += " z" + std::to_string(q.zero);
  if (q.ep > 1) s += " ep" + std::to_string(q.ep);
  if (q.offload != Offload::kNone) s += " offload:" + ToString(q.offload);
  return s;
}

}  // namespace gpuplan
