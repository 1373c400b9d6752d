#include <cmath>
#include <cstdio>

#include "gpuplan/data.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {
std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }
std::string Hours(double s) { return F(s < 3600 * 48 ? "%.1f h" : "%.0f h", s / 3600); }
std::string Usd(const CostBreakdown& c, double v) { return c.price_known ? F("$%.0f", v) : "unknown"; }
std::string Layout(const Plan& p) {
  const ParallelSpec& q = p.job.parallel;
  std::string s = "tp" + std::to_string(q.tp) + " pp" + std::to_string(q.pp);
  if (q.vpp > 1) s += "x" + std::to_string(q.vpp);
  s += " dp" + std::to_string(q.dp);
  if (q.cp > 1) s += " cp" + std::to_string(q.cp);
  s += " z" + std::to_string(q.zero);
  if (q.ep > 1) s += " ep" + std::to_string(q.ep);
  if (q.offload != Offload::kNone) s += " offload:" + ToString(q.offload);
  return s;
}

nlohmann::json PlanJson(const Plan& p) {
  const CostBreakdown& c = p.cost;
  nlohmann::json host = nlohmann::json::array();
  for (const auto& h : p.host) host.push_back({{"check", h.name}, {"ok", h.ok}, {"detail", h.detail}});
  const ParallelSpec& q = p.job.parallel;
  return {
      {"instance", p.instance.id},
      {"provider", p.instance.provider},
      {"gpu", p.instance.gpu_id},
      {"nodes", p.nodes},
      {"gpus", p.job.cluster.num_gpus},
      {"tier", ToString(p.tier)},
      {"parallel", {{"tp", q.tp}, {"pp", q.pp}, {"vpp", q.vpp}, {"dp", q.dp}, {"cp", q.cp}, {"zero", q.zero},
                    {"sequence_parallel", q.sequence_parallel}}},
      {"micro_batch", p.job.training.micro_batch},
      {"grad_accum_steps", p.estimate.grad_accum},
      {"recompute", ToString(p.job.training.recompute)},
      {"step_time_s", p.estimate.step_time_s},
      {"tokens_per_s", p.estimate.tokens_per_s},
      {"mfu", p.estimate.mfu},
      {"memory_per_gpu_bytes", p.memory_bytes},
      {"time_to_train_s", p.time_to_train_s},
      {"gpu_hours", p.time_to_train_s * p.job.cluster.num_gpus / 3600},
      {"cost_usd", c.price_known ? nlohmann::json(c.with_rerun_usd) : nlohmann::json(nullptr)},
      {"cost_breakdown",
       {{"price_kind", c.price_kind}, {"price_per_node_hour", c.price_known ? nlohmann::json(c.price_per_node_hour) : nlohmann::json(nullptr)},
        {"compute_usd", c.compute_usd}, {"storage_usd", c.storage_usd}, {"requests_usd", c.requests_usd},
        {"subtotal_usd", c.subtotal_usd}, {"with_rerun_usd", c.with_rerun_usd}, {"price_known", c.price_known},
        {"price_date", p.instance.price_date}}},
      {"network", {{"link", p.network}, {"rdma_required", p.rdma_required}, {"min_inter_node_gbps", p.min_inter_node_gbps}}},
      {"storage",
       {{"dataset_home", p.storage.dataset_home}, {"shared_fs", p.storage.shared_fs}, {"local_cache", p.storage.local_cache},
        {"dataset_bytes", p.storage.dataset_bytes}, {"stage_time_s", p.storage.stage_time_s}}},
      {"checkpoint",
       {{"bytes", p.storage.checkpoint_bytes}, {"write_s", p.storage.checkpoint_write_s}, {"target", p.storage.checkpoint_target},
        {"suggested_interval_min", p.storage.suggested_interval_min}}},
      {"host_checks", host},
      {"reliability", {{"expected_failures", p.expected_failures}, {"goodput", p.goodput}, {"lost_hours", p.lost_hours}}},
      {"bottleneck", p.bottleneck},
  };
}
}  // namespace

nlohmann::json PlanToJson(const PlanResult& r, const Job& job) {
  nlohmann::json plans = nlohmann::json::array(), pareto = nlohmann::json::array();
  for (const auto& p : r.plans) plans.push_back(PlanJson(p));
  for (const auto& p : r.pareto) pareto.push_back(PlanJson(p));
  nlohmann::json inputs = JobToJson(job);
  const Constraints& c = job.constraints;
  inputs["constraints"] = {{"deadline_hours", c.deadline_hours}, {"budget_usd", c.budget_usd}, {"max_gpus", c.max_gpus},
                           {"clouds", c.clouds}, {"gpus", c.gpus}, {"spot", ToString(c.spot)},
                           {"min_memory_headroom", c.min_memory_headroom}, {"objective", ToString(c.objective)},
                           {"rerun_factor", c.rerun_factor}};
  return {{"version", kVersion}, {"schema", kJsonSchemaVersion}, {"model_fingerprint", ModelFingerprint()},
          {"inputs", inputs}, {"plans", plans},
          {"pareto", pareto}, {"considered", r.considered}, {"evaluated", r.evaluated}, {"rejected", r.rejected},
          {"notes", r.notes}, {"relax", r.relax.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.relax)},
          {"wall_s", r.wall_s}};
}

std::string PlanToText(const PlanResult& r, const Job& job, bool md) {
  std::string out;
  char buf[600];
  std::snprintf(buf, sizeof buf, "%s%s, %s, %s tokens at seq %lld, global batch %lld; objective %s%s\n",
                md ? "## Plan for " : "plan for ", job.arch.name.c_str(), ToString(job.training.method).c_str(),
                FormatCount(job.training.tokens).c_str(), static_cast<long long>(job.training.seq_len),
                static_cast<long long>(job.training.global_batch), ToString(job.constraints.objective).c_str(), md ? "" : "");
  out += buf;
  std::snprintf(buf, sizeof buf, "searched %lld candidates (%lld estimated) in %.2f s\n\n", static_cast<long long>(r.considered),
                static_cast<long long>(r.evaluated), r.wall_s);
  out += buf;
  if (r.plans.empty()) {
    out += "no plan meets the constraints: " + r.relax + "\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    int rank = 1;
    for (const auto& p : r.plans)
      rows.push_back({std::to_string(rank++), p.instance.id + (p.cost.price_kind == "spot" ? " (spot)" : ""),
                      std::to_string(p.nodes), std::to_string(p.job.cluster.num_gpus), Layout(p),
                      std::to_string(p.job.training.micro_batch) + "x" + std::to_string(p.estimate.grad_accum),
                      ToString(p.job.training.recompute), F("%.1f", p.memory_bytes / (1024.0 * 1024 * 1024)),
                      F("%.1f%%", 100 * p.estimate.mfu), Hours(p.time_to_train_s), Usd(p.cost, p.cost.with_rerun_usd)});
    out += RenderTable({"#", "instance", "nodes", "GPUs", "layout", "mb x accum", "recompute", "mem GiB", "MFU", "time", "cost (x rerun)"}, rows, md);
    const Plan& p = r.plans.front();
    const CostBreakdown& c = p.cost;
    out += md ? "\n### Recommended setup\n\n" : "\nrecommended setup\n-----------------\n";
    auto line = [&](const std::string& k, const std::string& v) { out += (md ? "- **" + k + "**: " : "  " + k + ": ") + v + "\n"; };
    line("tier", ToString(p.tier));
    line("instance", p.instance.id + " x " + std::to_string(p.nodes) + " (" + std::to_string(p.instance.gpu_count) + " x " +
                         p.instance.gpu_id + " per node, " + p.job.cluster.intra_node + " inside)");
    line("layout", Layout(p) + (p.job.parallel.sequence_parallel ? " + sequence parallel" : "") + ", micro-batch " +
                       std::to_string(p.job.training.micro_batch) + " x " + std::to_string(p.estimate.grad_accum) +
                       " accumulation, recompute " + ToString(p.job.training.recompute));
    if (p.nodes > 1) {
      std::string net = p.network + (p.rdma_required ? " — RDMA required" : " — RDMA not required");
      if (p.min_inter_node_gbps > 0) net += F(", needs >= %.0f Gb/s per node to keep communication under 20%% of the step", p.min_inter_node_gbps);
      else if (p.min_inter_node_gbps < 0) net += ", communication stays above 20% of the step at any bandwidth";
      line("network", net);
    } else {
      line("network", "single node: no inter-node network needed");
    }
    std::string host;
    for (const auto& h : p.host) host += (host.empty() ? "" : "; ") + std::string(h.ok ? "ok " : "WARN ") + h.name + ": " + h.detail;
    line("host", host);
    line("storage", "dataset (" + F("%.2f TB", p.storage.dataset_bytes / 1e12) + ") in " + p.storage.dataset_home +
                        (p.storage.stage_time_s > 0 ? ", staged in " + Hours(p.storage.stage_time_s) : ", staging time unknown") +
                        " to " + p.storage.local_cache + "; shared FS: " + p.storage.shared_fs);
    line("checkpoints", F("%.1f GB each", p.storage.checkpoint_bytes / 1e9) +
                            (p.storage.checkpoint_write_s > 0
                                 ? " to " + p.storage.checkpoint_target + ", " + F("%.0f s to write", p.storage.checkpoint_write_s) +
                                       F(", suggested every %.0f min (Young's formula, Llama 3 failure rate)", p.storage.suggested_interval_min)
                                 : ", write time unknown (no storage throughput for this provider in the catalog): no interval suggested"));
    line("time", Hours(p.time_to_train_s) + F(", %.0f GPU-hours", p.time_to_train_s * p.job.cluster.num_gpus / 3600) +
                     F(", step %.2f s", p.estimate.step_time_s) + F(", MFU %.1f%%", 100 * p.estimate.mfu));
    line("reliability", F("%.2f failures expected over the run", p.expected_failures) +
                            F(" (Llama 3 rate); goodput %.1f%%", 100 * p.goodput) +
                            F(", about %.1f h lost to checkpoints, lost work and restarts", p.lost_hours) +
                            (p.cost.price_kind == "spot" ? "; spot interruptions are not priced (rates unknown)" : ""));
    if (c.price_known) {
      std::snprintf(buf, sizeof buf, "compute $%.0f (%s $%.2f/node-h, price date %s) + storage $%.0f + requests $%.0f = $%.0f; x%.2f rerun/debug factor = $%.0f to budget",
                    c.compute_usd, c.price_kind.c_str(), c.price_per_node_hour, p.instance.price_date.c_str(), c.storage_usd,
                    c.requests_usd, c.subtotal_usd, job.constraints.rerun_factor, c.with_rerun_usd);
      line("cost", buf);
    } else {
      line("cost", "unknown: the catalog has no price for " + p.instance.id + " (add one with --catalog)");
    }
    line("bottleneck", p.bottleneck);
  }
  if (!r.pareto.empty()) {
    out += md ? "\n### Pareto front (time vs cost)\n\n" : "\npareto front (time vs cost)\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : r.pareto)
      rows.push_back({p.instance.id + (p.cost.price_kind == "spot" ? " (spot)" : ""), std::to_string(p.job.cluster.num_gpus),
                      Layout(p), Hours(p.time_to_train_s), Usd(p.cost, p.cost.with_rerun_usd)});
    out += RenderTable({"instance", "GPUs", "layout", "time", "cost"}, rows, md);
  }
  out += md ? "\n### Rejected candidates\n\n" : "\nrejected, by reason\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [k, v] : r.rejected) rows.push_back({k, std::to_string(v)});
  out += RenderTable({"reason", "count"}, rows, md);
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace gpuplan
