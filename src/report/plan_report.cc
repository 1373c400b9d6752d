#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gpuplan/data.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {
std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }
std::string F(const char* fmt, double a, double b) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}
std::string Hours(double s) { return F(s < 3600 * 48 ? "%.1f h" : "%.0f h", s / 3600); }
std::string Kind(const Plan& p) { return p.cost.price_kind == "on-demand" ? "" : " (" + p.cost.price_kind + ")"; }
std::string Usd(const CostBreakdown& c, double v) { return c.price_known ? F("$%.0f", v) : "unknown"; }
std::string Layout(const Plan& p) { return LayoutString(p.job); }

nlohmann::json OrNull(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json TargetJson(const Plan& p) {
  if (!p.storage.target) return nullptr;
  const CheckpointTarget& t = *p.storage.target;
  return {{"id", t.id}, {"kind", t.kind}, {"write_bytes_per_s", t.write_bytes_per_s}, {"stall_s", t.stall_s},
          {"durable_s", t.durable_s}, {"final_save_s", t.final_save_s},
          {"provisioned_bytes", t.provisioned_bytes > 0 ? nlohmann::json(t.provisioned_bytes) : nlohmann::json(nullptr)},
          {"usd_per_hour", OrNull(t.usd_per_hour)}, {"detail", t.detail}, {"assumed", t.assumed}, {"async", t.async},
          {"node_local", t.node_local}};
}

nlohmann::json Fp8WhatIfJson(const Plan& p) {
  if (!p.fp8_what_if) return nullptr;
  const Fp8WhatIf& f = *p.fp8_what_if;
  return {{"step_time_s", f.step_time_s}, {"time_s", f.time_s},
          {"cost_usd", f.price_known ? nlohmann::json(f.cost_usd) : nlohmann::json(nullptr)}, {"note", f.note}};
}

// "step 1.52 s, 31.0 h, $1,234 (the same row at fp8; numerics: ...)": the best row's fp8 what-if.
std::string Fp8WhatIfLine(const Plan& p) {
  const Fp8WhatIf& f = *p.fp8_what_if;
  return F("step %.2f s, ", f.step_time_s) + Hours(f.time_s) + ", " + (f.price_known ? F("$%.0f", f.cost_usd) : "cost unknown") +
         " (the same row at fp8; " + f.note + ")";
}

// The efficiency note and the error band of a plan's GPU (PlanPrintContext).
struct PlanTrust {
  ExpectedError expected;
  std::string efficiency_note;
};
PlanTrust Trust(const Plan& p, const PlanPrintContext& ctx) {
  PlanTrust t;
  if (!ctx.catalog) return t;
  const Calibration& cal = ctx.cal ? *ctx.cal : Calibration::Builtin();
  auto hw = ResolveHardware(p.job, *ctx.catalog, cal);
  if (!hw.ok()) return t;
  t.expected = ExpectedErrorFor(p.job, hw->gpu.family);
  t.efficiency_note = hw->efficiency_note;
  return t;
}

// The row's whole job as dotted keys: `gpuplan export PLAN.json --plan N` reads it back.
nlohmann::json JobKeysJson(const Job& job) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : JobToKeys(job)) j[k] = v;
  return j;
}

nlohmann::json PlanJson(const Plan& p, const PlanPrintContext& ctx) {
  const PlanTrust trust = Trust(p, ctx);
  const CostBreakdown& c = p.cost;
  nlohmann::json host = nlohmann::json::array();
  for (const auto& h : p.host) host.push_back({{"check", h.name}, {"state", ToString(h.state)}, {"detail", h.detail}});
  const ParallelSpec& q = p.job.parallel;
  const WallClock& w = p.wall;
  auto usd = [&](double v) { return c.price_known ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const CheckpointSizes& cs = p.storage.checkpoint;
  return {
      {"instance", p.instance.id},
      {"provider", p.instance.provider},
      {"gpu", p.instance.gpu_id},
      {"nodes", p.nodes},
      {"gpus", p.job.cluster.num_gpus},
      {"tier", ToString(p.tier)},
      {"engine", p.engine},
      {"engine_family", p.engine_family},
      {"family_best", p.family_best},
      {"beyond_top", p.beyond_top},
      {"precision", ToString(p.job.training.precision)},
      {"job", JobKeysJson(p.job)},
      {"parallel", {{"tp", q.tp}, {"pp", q.pp}, {"vpp", q.vpp}, {"dp", q.dp}, {"cp", q.cp}, {"zero", q.zero},
                    {"sequence_parallel", q.sequence_parallel}, {"offload", ToString(q.offload)}}},
      {"micro_batch", p.job.training.micro_batch},
      {"grad_accum_steps", p.estimate.grad_accum},
      {"recompute", ToString(p.job.training.recompute)},
      {"step_time_s", p.estimate.step_time_s},
      {"tokens_per_s", p.estimate.tokens_per_s},
      {"mfu", p.estimate.mfu},
      {"memory_per_gpu_bytes", p.memory_bytes},
      {"memory_headroom", p.memory_headroom},
      {"time_s", p.time_s},
      {"train_s", p.train_s},
      {"startup_s", p.startup.Total()},
      {"checkpoint_stall_s", w.checkpoint_stall_s},
      {"expected_lost_s", w.expected_lost_s},
      {"final_save_s", w.final_save_s},
      {"goodput", w.goodput},
      {"startup", {{"provision_s", p.startup.provision_s}, {"image_pull_s", p.startup.image_pull_s},
                   {"weights_s", p.startup.weights_s}, {"dataset_s", p.startup.dataset_s}}},
      {"gpu_hours", p.time_s * static_cast<double>(p.job.cluster.num_gpus) / 3600},
      {"cost_usd", usd(c.with_rerun_usd)},
      {"cost_breakdown",
       {{"price_kind", c.price_kind}, {"price_per_node_hour", usd(c.price_per_node_hour)},
        {"compute_usd", usd(c.compute_usd)}, {"billed_hours", c.billed_hours}, {"storage_usd", c.storage_usd}, {"checkpoint_fs_usd", c.checkpoint_fs_usd},
        {"requests_usd", c.requests_usd}, {"subtotal_usd", usd(c.subtotal_usd)}, {"with_rerun_usd", usd(c.with_rerun_usd)},
        {"price_known", c.price_known}, {"price_date", c.price_date}}},
      {"network", {{"link", p.network}, {"rdma_required", p.nodes > 1 ? nlohmann::json(p.rdma_required) : nlohmann::json(nullptr)},
                   {"min_inter_node_gbps", OrNull(p.min_inter_node_gbps)}, {"comm_share_unreachable", p.comm_share_unreachable},
                   {"network_cause", p.network_cause}}},
      {"storage",
       {{"dataset_home", p.storage.dataset_home.rfind("unknown", 0) == 0 ? nlohmann::json(nullptr) : nlohmann::json(p.storage.dataset_home)},
        {"shared_fs", p.storage.shared_fs == "none in catalog" ? nlohmann::json(nullptr) : nlohmann::json(p.storage.shared_fs)},
        {"local_nvme_bytes_per_node", OrNull(p.instance.local_nvme_bytes)}, {"local_cache", p.storage.local_cache},
        {"dataset_bytes", p.storage.dataset_bytes}}},
      {"checkpoint",
       {{"full_state_bytes", cs.full_state_bytes}, {"weights_only_bytes", cs.weights_only_bytes},
        {"intermediate_bytes", cs.intermediate_bytes}, {"final_bytes", cs.final_bytes}, {"final_content", cs.final_content},
        {"interval_s", p.storage.target ? nlohmann::json(w.interval_s) : nlohmann::json(nullptr)}, {"checkpoints", w.checkpoints},
        {"interval_floored", w.interval_floored}, {"targets_compared", p.storage.targets_compared}, {"target", TargetJson(p)}}},
      {"host_checks", host},
      {"reliability",
       {{"expected_failures", w.expected_failures}, {"expected_interruptions", w.expected_interruptions},
        {"failures_per_hour", p.rates.failures_per_s * 3600}, {"interruptions_per_node_hour", p.rates.interruptions_per_node_hour},
        {"interruption_rate_source", p.rates.interruption_source.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.rates.interruption_source)},
        {"converges", w.converges}}},
      {"warnings", p.warnings},
      {"bottleneck", p.bottleneck},
      {"fp8_what_if", Fp8WhatIfJson(p)},
      {"expected_error", ExpectedErrorToJson(trust.expected)},
      {"efficiency_note", trust.efficiency_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(trust.efficiency_note)},
  };
}
nlohmann::json Precisions(const Constraints& c) {
  nlohmann::json out = nlohmann::json::array();
  for (Precision p : c.precisions) out.push_back(ToString(p));
  return out;
}
nlohmann::json Rejected(const PlanResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& x : r.rejected) out.push_back({{"code", x.code}, {"reason", x.reason}, {"count", x.count}});
  return out;
}
}  // namespace

nlohmann::json PlanToJson(const PlanResult& r, const Job& job, const PlanPrintContext& ctx) {
  nlohmann::json plans = nlohmann::json::array(), pareto = nlohmann::json::array();
  for (const auto& p : r.plans) plans.push_back(PlanJson(p, ctx));
  for (const auto& p : r.pareto) pareto.push_back(PlanJson(p, ctx));
  nlohmann::json inputs = JobToJson(job);
  const Constraints& c = job.constraints;
  inputs["constraints"] = {{"deadline_hours", c.deadline_hours}, {"budget_usd", c.budget_usd}, {"max_gpus", c.max_gpus},
                           {"clouds", c.clouds}, {"gpus", c.gpus}, {"precisions", Precisions(c)}, {"spot", ToString(c.spot)},
                           {"min_memory_headroom", job.IsSet("constraints.min_memory_headroom") ? nlohmann::json(c.min_memory_headroom) : nlohmann::json(nullptr)}, {"objective", ToString(c.objective)},
                           {"rerun_factor", c.rerun_factor}};
  return {{"version", kVersion}, {"schema", kJsonSchemaVersion}, {"model_fingerprint", ModelFingerprint()},
          {"inputs", inputs}, {"plans", plans},
          {"pareto", pareto}, {"considered", r.considered}, {"evaluated", r.evaluated}, {"rejected", Rejected(r)},
          {"notes", r.notes}, {"relax", r.relax.empty() ? nlohmann::json(nullptr) : nlohmann::json({{"code", r.relax_code}, {"message", r.relax}})},
          {"memory_headroom", {{"fraction", r.memory_headroom}, {"source", r.memory_headroom_source}}},
          {"wall_s", r.wall_s}};
}

namespace {
std::string Price(const CostBreakdown& c) {
  return c.price_kind + F(" $%.2f/node-h", c.price_per_node_hour) + ", price date " +
         (c.price_date.empty() ? std::string("undated") : c.price_date);
}

std::string TimeLine(const Plan& p) {
  const WallClock& w = p.wall;
  return Hours(p.time_s) + " wall-clock = start-up " + F("%.2f h", p.startup.Total() / 3600) + " + training " +
         F("%.2f h", p.train_s / 3600) + " + checkpoint stalls " + F("%.2f h", w.checkpoint_stall_s / 3600) +
         " + expected lost work and restarts " + F("%.2f h", w.expected_lost_s / 3600) + " + final save " +
         F("%.2f h", w.final_save_s / 3600) + F("; goodput %.1f%%", 100 * w.goodput) +
         F("; %.0f GPU-hours", p.time_s * static_cast<double>(p.job.cluster.num_gpus) / 3600) +
         F(", step %.2f s, MFU %.1f%%", p.estimate.step_time_s, 100 * p.estimate.mfu);
}

std::string StartupLine(const Plan& p) {
  const StartupBreakdown& s = p.startup;
  return F("%.0f s provisioning + %.0f s image pull", s.provision_s, s.image_pull_s) + F(" + %.0f s base weights", s.weights_s) +
         F(" + %.0f s dataset staging (per node, in parallel)", s.dataset_s);
}

std::string CheckpointLine(const Plan& p) {
  const CheckpointSizes& cs = p.storage.checkpoint;
  const WallClock& w = p.wall;
  std::string s = F("%.1f GB resumable state each", cs.intermediate_bytes / 1e9);
  if (!p.storage.target) return s + "; the pinned storage has no write rate: none written, a failure restarts from the start";
  const CheckpointTarget& t = *p.storage.target;
  s += " to " + t.id + " (" + t.detail + (t.assumed ? "; rate assumed" : "") + ")";
  s += F(t.async ? ", async: %.0f s stall, durable after %.0f s" : ", %.0f s stall, durable after %.0f s", t.stall_s, t.durable_s);
  if (w.checkpoints > 0) s += F("; every %.0f min (%.0f checkpoints", w.interval_s / 60, static_cast<double>(w.checkpoints)) +
                              (p.job.IsSet("training.checkpoint_interval_min") ? ", pinned interval)"
                               : w.interval_floored ? ", the floor checkpoint_interval_floor_s: Young's interval from the failure + interruption rate is shorter)"
                                                    : ", Young's interval from the failure + interruption rate)");
  else if (p.job.IsSet("training.checkpoint_interval_min"))
    s += F("; every %.0f min (pinned; the run is shorter: no periodic checkpoint)", w.interval_s / 60);
  else s += "; the run is shorter than the Young interval: no periodic checkpoint";
  s += "; final save " + cs.final_content + F(" %.1f GB in %.0f s", cs.final_bytes / 1e9, t.final_save_s);
  s += F("; best of %.0f targets", static_cast<double>(p.storage.targets_compared));
  if (t.usd_per_hour && *t.usd_per_hour > 0) s += F(", capacity $%.2f/h", *t.usd_per_hour);
  else if (!t.usd_per_hour) s += ", capacity price unknown";
  return s;
}

std::string ReliabilityLine(const Plan& p) {
  std::string s = F("%.2f failures expected (Llama 3 rate, %.2g per GPU-hour)", p.wall.expected_failures,
                    p.rates.failures_per_s * 3600 / static_cast<double>(p.job.cluster.num_gpus));
  if (p.cost.price_kind == "spot")
    s += F("; %.2f spot interruptions expected (%.2g per node-hour, ", p.wall.expected_interruptions, p.rates.interruptions_per_node_hour) +
         p.rates.interruption_source + ")";
  if (!p.wall.converges) s += "; losses outrun progress at this rate";
  return s;
}

// The ranked plans. Wide (--wide, Markdown): every column. Default text: the columns that decide, narrow
// enough for a 120-column terminal (nodes x GPUs per node in one cell, recompute and offload abbreviated
// in the layout; MFU and goodput are in the recommended setup, --wide and the JSON).
std::string CompactLayout(const Plan& p) {
  std::string s = Layout(p);
  if (const size_t at = s.find("offload:"); at != std::string::npos) {
    std::string o = s.substr(at + 8);
    if (o.rfind("optimizer", 0) == 0) o = "opt" + o.substr(9);
    s = s.substr(0, at) + "off:" + o;
  }
  const Recompute rc = p.job.training.recompute;
  if (rc != Recompute::kNone) s += " rc:" + ToString(rc);
  return s;
}

// The framework that runs the row as it is; * marks its engine family's best row.
std::string Engine(const Plan& p) { return ToString(p.job.training.framework) + (p.family_best ? "*" : ""); }

std::string PlansTable(const PlanResult& r, bool wide, bool md) {
  std::vector<std::vector<std::string>> rows;
  int rank = 1;
  for (const auto& p : r.plans) {
    const std::string mb = std::to_string(p.job.training.micro_batch) + "x" + std::to_string(p.estimate.grad_accum);
    const std::string gib = F("%.1f", p.memory_bytes / (1024.0 * 1024 * 1024));
    if (wide)
      rows.push_back({std::to_string(rank++), Engine(p), p.instance.id + Kind(p), std::to_string(p.nodes), std::to_string(p.job.cluster.num_gpus),
                      Layout(p), mb, ToString(p.job.training.recompute), ToString(p.job.training.precision), gib,
                      F("%.1f%%", 100 * p.estimate.mfu), Hours(p.time_s), F("%.0f%%", 100 * p.wall.goodput), Usd(p.cost, p.cost.with_rerun_usd)});
    else
      rows.push_back({std::to_string(rank++), Engine(p), p.instance.id + Kind(p), std::to_string(p.nodes) + "x" + std::to_string(p.job.cluster.num_gpus / std::max<int64_t>(p.nodes, 1)),
                      CompactLayout(p), mb, ToString(p.job.training.precision), gib, Hours(p.time_s), Usd(p.cost, p.cost.with_rerun_usd)});
  }
  if (wide)
    return RenderTable({"#", "engine", "instance", "nodes", "GPUs", "layout", "mb x accum", "recompute", "prec", "mem GiB", "MFU", "time", "goodput",
                        "cost (x rerun)"},
                       rows, md);
  return RenderTable({"#", "engine", "instance", "nodes x GPUs", "layout", "mb x accum", "prec", "mem GiB", "time", "cost"}, rows, false);
}

// Rejections that are the search's own bookkeeping: layouts that cannot exist as written, not a choice a
// user can change. The default text sums them up in one sentence; --explain (and the JSON) list each.
std::string LayoutSentence(const std::string& code, const Job& job) {
  if (code == "batch_not_divisible")
    return "the global batch " + std::to_string(job.training.global_batch) + " is not divisible by micro-batch x dp";
  if (code == "tp_crosses_nodes") return "tensor parallel would cross nodes";
  if (code == "ep_layout") return "the experts do not divide over the layout";
  if (code == "recompute_dominated") return "a lighter recompute already fits at that micro-batch";
  if (code == "engine_layout") return "the engine would not express the layout (data/engines.csv lists what each runs)";
  if (code == "interleaved_microbatches") return "Megatron's interleaved schedule would get fewer micro-batches than pp";
  return "";
}

std::string RejectedText(const PlanResult& r, const Job& job, bool md, bool explain) {
  std::string out = md ? "\n### Rejected candidates\n\n" : "\nrejected, by reason\n";
  std::vector<std::vector<std::string>> rows;
  if (md || explain) {
    for (const auto& x : r.rejected) rows.push_back({x.code, x.reason, std::to_string(x.count)});
    return out + RenderTable({"code", "reason", "count"}, rows, md);
  }
  int64_t layouts = 0;
  std::string why;
  size_t count_w = 0;
  for (const auto& x : r.rejected) {
    const std::string s = LayoutSentence(x.code, job);
    if (s.empty()) {
      rows.push_back({WithThousands(x.count), x.reason});
      count_w = std::max(count_w, rows.back()[0].size());
      continue;
    }
    layouts += x.count;
    why += (why.empty() ? "" : "; ") + s + " (" + WithThousands(x.count) + ")";
  }
  for (const auto& row : rows) out += "  " + std::string(count_w - row[0].size(), ' ') + row[0] + "  " + row[1] + "\n";
  if (layouts > 0)
    out += "  and " + WithThousands(layouts) + " layouts that cannot run as written: " + why + " (plan --explain lists the search's codes)\n";
  if (rows.empty() && layouts == 0) out += "  none\n";
  return out;
}

const char* kLegend =
    "legend: tpN tensor parallel; ppN pipeline stages, ppNxV = V interleaved virtual stages per rank; dpN data parallel; "
    "cpN context parallel; zN ZeRO stage (z3 = FSDP full shard); offload:optimizer (off:opt) = ZeRO-Offload, optimizer+params = ZeRO-Infinity; "
    "rc:selective|full = activation recompute; nodes x GPUs = nodes x GPUs per node; "
    "mb x accum = micro-batch x gradient-accumulation steps; time = wall-clock (start-up, training, checkpoint stalls, expected lost work "
    "and restarts, final save); cost = wall-clock x price x nodes + storage, x rerun factor; objective balanced = wall-clock x cost\n";
}  // namespace

std::string PlanToText(const PlanResult& r, const Job& job, bool md, const PlanPrintContext& ctx) {
  std::string out;
  char buf[600];
  std::snprintf(buf, sizeof buf, "%s%s, %s, %s tokens at seq %lld, global batch %lld; objective %s\n",
                md ? "## Plan for " : "plan for ", job.arch.name.c_str(), ToString(job.training.method).c_str(),
                FormatCount(job.training.tokens).c_str(), static_cast<long long>(job.training.seq_len),
                static_cast<long long>(job.training.global_batch), ToString(job.constraints.objective).c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "searched %lld candidates (%lld estimated) in %.2f s; memory headroom %.1f%% (%s)\n\n",
                static_cast<long long>(r.considered), static_cast<long long>(r.evaluated), r.wall_s, 100 * r.memory_headroom,
                r.memory_headroom_source.c_str());
  out += buf;
  if (r.plans.empty()) {
    out += "no plan meets the constraints [" + r.relax_code + "]: " + r.relax + "\n";
  } else {
    out += PlansTable(r, md || ctx.wide, md);
    out += "engine: the framework that runs the row as it is (* its family's best); export with --to megatron, deepspeed\n"
           "(hf-trainer too), accelerate (fsdp, unsloth), torchtitan or torchrun (torchtune, llm-foundry): JSON plans[].engine\n";
    const Plan& p = r.plans.front();
    const CostBreakdown& c = p.cost;
    out += md ? "\n### Recommended setup\n\n" : "\nrecommended setup\n-----------------\n";
    auto line = [&](const std::string& k, const std::string& v) { out += (md ? "- **" + k + "**: " : "  " + k + ": ") + v + "\n"; };
    line("tier", ToString(p.tier));
    line("instance", p.instance.id + Kind(p) + " x " + std::to_string(p.nodes) + " (" + std::to_string(p.instance.gpu_count) + " x " +
                         p.instance.gpu_id + " per node, " + p.job.cluster.intra_node + " inside)");
    line("layout", Layout(p) + (p.job.parallel.sequence_parallel ? " + sequence parallel" : "") + ", micro-batch " +
                       std::to_string(p.job.training.micro_batch) + " x " + std::to_string(p.estimate.grad_accum) +
                       " accumulation, recompute " + ToString(p.job.training.recompute) + ", " + ToString(p.job.training.precision));
    if (p.nodes > 1) {
      std::string net = p.network + (p.rdma_required ? " — RDMA required" : " — RDMA not required");
      const std::string limit = F("%.0f%%", 100 * p.comm_share_max), cause = p.network_cause.empty() ? "" : " (" + p.network_cause + ")";
      if (p.min_inter_node_gbps) net += ", needs >= " + F(*p.min_inter_node_gbps >= 100 ? "%.0f" : "%.2g", *p.min_inter_node_gbps) + " Gb/s per node" + cause + " to keep communication under " + limit;
      else if (p.comm_share_unreachable) net += ", communication stays above " + limit + " of the step at any bandwidth" + cause;
      line("network", net);
    } else {
      line("network", "single node: no inter-node network needed");
    }
    std::string host;
    for (const auto& h : p.host) host += (host.empty() ? "" : "; ") + ToString(h.state) + " " + h.name + ": " + h.detail;
    line("host", host);
    line("storage", "dataset (" + F("%.2f TB", p.storage.dataset_bytes / 1e12) + ") in " + p.storage.dataset_home + ", staged to " +
                        p.storage.local_cache + "; shared FS: " + p.storage.shared_fs);
    line("start-up", StartupLine(p));
    line("checkpoints", CheckpointLine(p));
    line("time", TimeLine(p));
    line("reliability", ReliabilityLine(p));
    if (c.price_known) {
      std::snprintf(buf, sizeof buf, "compute $%.0f (%s billed, %s) + storage $%.0f + checkpoint FS $%.0f + requests $%.0f = $%.0f; x%.2f rerun/debug factor = $%.0f to budget",
                    c.compute_usd, Hours(c.billed_hours * 3600).c_str(), Price(c).c_str(), c.storage_usd, c.checkpoint_fs_usd, c.requests_usd,
                    c.subtotal_usd, job.constraints.rerun_factor, c.with_rerun_usd);
      line("cost", buf);
    } else {
      line("cost", "unknown: the catalog has no price for " + p.instance.id + " (add one with --catalog)");
    }
    for (const auto& w : p.warnings) line("warning", w);
    line("bottleneck", p.bottleneck);
    if (p.fp8_what_if) line("fp8 what-if", Fp8WhatIfLine(p));
    if (ctx.catalog) {
      const PlanTrust trust = Trust(p, ctx);
      std::string e = ExpectedErrorLine(trust.expected);
      line("expected error", e.substr(e.find(": ") + 2));
      if (!trust.efficiency_note.empty()) line("note", trust.efficiency_note);
    }
  }
  if (!r.pareto.empty()) {
    out += md ? "\n### Pareto front (wall-clock vs cost)\n\n" : "\npareto front (wall-clock vs cost)\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : r.pareto)
      rows.push_back({p.instance.id + Kind(p), std::to_string(p.job.cluster.num_gpus),
                      Layout(p), Hours(p.time_s), Usd(p.cost, p.cost.with_rerun_usd)});
    out += RenderTable({"instance", "GPUs", "layout", "time", "cost"}, rows, md);
  }
  out += RejectedText(r, job, md, ctx.explain);
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  out += "\n" + std::string(kLegend);
  return out;
}

}  // namespace gpuplan
