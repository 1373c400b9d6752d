// PlanServing: setups (the training planner's EnumerateSetups) -> hardware groups -> for each group,
// weight format x KV dtype x tp (x pp across nodes when one node cannot hold the model) -> the fewest
// replicas that serve the load within the SLA -> whole instances, filled with replicas -> priced,
// ranked by cost per million output tokens. docs/model/serving.md "The planner" mirrors the stages.
#include "gpuplan/serving_plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "gpuplan/strings.h"
#include "stages.h"

namespace gpuplan {

namespace {
using search::Rejects;
using search::Setup;

constexpr int64_t kTps[] = {1, 2, 4, 8};
constexpr int64_t kCrossNodePps[] = {2, 4, 8};

Location Loc(const Job& j, const std::string& key) {
  auto it = j.set_keys.find(key);
  return it != j.set_keys.end() ? it->second : Location{j.source, 0, key};
}

std::string Num(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// ---- the load -----------------------------------------------------------------------------------

// The request rate the plan must serve (requests/s): serving.target_output_tokens_per_s / output_len,
// else serving.request_rate under load request_rate; 0 = none (one replica, the job's own load).
double TargetRate(const ServingSpec& s) {
  if (s.target_output_tokens_per_s > 0 && s.output_len > 0) return s.target_output_tokens_per_s / s.output_len;
  if (s.load == ServingLoad::kRequestRate && s.request_rate > 0) return s.request_rate;
  return 0;
}

// ---- hardware groups ----------------------------------------------------------------------------

// Setups that estimate the same (GPU, GPUs per instance, links): estimated once, priced per setup.
struct Group {
  std::vector<size_t> setups;   // priced setups of this hardware
  GpuSpec gpu;
  int64_t gpus_per_node = 0;
  bool multi_node_ok = false;
  Job job;                      // the job the group's estimates mutate (never copied per candidate)
};

std::vector<Group> GroupSetups(const Job& job, const Catalog& catalog, const std::vector<Setup>& setups, Rejects& rejects) {
  std::map<std::tuple<std::string, int64_t, std::string, std::string, bool>, size_t> index;
  std::vector<Group> out;
  for (size_t i = 0; i < setups.size(); ++i) {
    const Setup& su = setups[i];
    if (!su.price) {
      rejects.Add("no_price", "instance skipped: the catalog has no price for it (add one with --catalog)");
      continue;
    }
    if (su.price_kind == "capacity-block") continue;  // booked for a fixed time: a serving fleet runs on demand or spot
    const auto key = std::make_tuple(su.inst.gpu_id, su.inst.gpu_count, su.intra, su.network, su.multi_node_ok);
    auto [it, added] = index.emplace(key, out.size());
    if (added) {
      Group g;
      g.gpu = *catalog.FindGpu(su.inst.gpu_id);  // EnumerateSetups keeps only GPUs of the catalog
      g.gpus_per_node = su.inst.gpu_count;
      g.multi_node_ok = su.multi_node_ok;
      g.job = job;
      g.job.cluster.gpu = su.inst.gpu_id;
      g.job.cluster.gpus_per_node = su.inst.gpu_count;
      g.job.cluster.intra_node = su.intra;
      g.job.cluster.network = su.network;
      g.job.cluster.nics_per_node = su.nics;
      out.push_back(std::move(g));
    }
    out[it->second].setups.push_back(i);
  }
  return out;
}

// ---- the axes -----------------------------------------------------------------------------------

std::vector<WeightFormat> WeightFormats(const Job& job, const GpuSpec& gpu) {
  if (job.IsSet("serving.weights")) return {job.serving.weights};
  return {gpu.bf16_supported ? WeightFormat::kBf16 : WeightFormat::kFp16, WeightFormat::kFp8, WeightFormat::kInt8,
          WeightFormat::kInt4Awq};
}

// An fp8 KV cache is planned where the GPU has fp8 (Ada, Hopper, Blackwell); elsewhere it is the
// user's pin only (the engine converts in software there).
std::vector<KvDtype> KvDtypes(const Job& job, const GpuSpec& gpu) {
  if (job.IsSet("serving.kv_dtype")) return {job.serving.kv_dtype};
  if (gpu.fp8_supported) return {KvDtype::kAuto, KvDtype::kFp8};
  return {KvDtype::kAuto};
}

std::vector<int64_t> Tps(const Job& job, int64_t gpus_per_node) {
  if (job.IsSet("parallel.tp")) return {job.parallel.tp};
  std::vector<int64_t> out;
  for (int64_t tp : kTps)
    if (tp <= gpus_per_node) out.push_back(tp);
  return out;
}

// ---- rejections, counted in the loops and worded once at the end ---------------------------------

enum class Miss { kNone, kSaturated, kTtft, kTpot };

// The candidate closest to passing, per (code, GPU): what the reason quotes.
struct Nearest {
  int64_t count = 0;
  double closeness = -std::numeric_limits<double>::infinity();  // larger = closer to passing
  int64_t tp = 1, pp = 1, replicas = 1;
  WeightFormat weights = WeightFormat::kBf16;
  KvDtype kv = KvDtype::kAuto;
  double value = 0, limit = 0, per_replica_rate = 0, capacity_rps = 0;
  std::string fit_problem;
  std::vector<std::string> what_would_fit;
};

class ServingRejects {
 public:
  void Add(const char* code, const std::string& gpu, double closeness, const Nearest& n) {
    Nearest& slot = by_[{code, gpu}];
    const int64_t count = slot.count + 1;
    if (closeness > slot.closeness) {
      slot = n;
      slot.closeness = closeness;
    }
    slot.count = count;
  }
  // (code, gpu) -> the nearest candidate; the report words it.
  const std::map<std::pair<std::string, std::string>, Nearest>& All() const { return by_; }

 private:
  std::map<std::pair<std::string, std::string>, Nearest> by_;
};

std::string Layout(const Nearest& n) {
  std::string s = "tp" + std::to_string(n.tp);
  if (n.pp > 1) s += " pp" + std::to_string(n.pp);
  return s + " " + ToString(n.weights) + (n.kv == KvDtype::kFp8 ? "/fp8 KV" : "");
}

std::string Reason(const std::string& code, const std::string& gpu, const Nearest& n, double rate) {
  const std::string who = gpu + " " + Layout(n) + ": ";
  if (code == "does_not_fit") return who + n.fit_problem;
  const std::string at = rate > 0 ? " at " + Num("%.3g", n.per_replica_rate) + " req/s per replica (" + std::to_string(n.replicas) +
                                        (n.replicas == 1 ? " replica" : " replicas, the most max_gpus allows") + ")"
                                  : " at the job's load";
  if (code == "saturated")
    return who + "the rate " + Num("%.3g", rate) + " req/s exceeds what " + std::to_string(n.replicas) + " replicas serve (" +
           Num("%.3g", n.capacity_rps) + " req/s each)";
  if (code == "ttft_sla") return who + "TTFT p90 " + Num("%.0f", n.value) + " ms > SLA " + Num("%.0f", n.limit) + " ms" + at;
  if (code == "tpot_sla") return who + "TPOT p90 " + Num("%.1f", n.value) + " ms > SLA " + Num("%.1f", n.limit) + " ms" + at;
  return who + code;
}

// ---- one candidate: weights x KV dtype x tp x pp on a group -------------------------------------

struct Search {
  const Catalog& catalog;
  const Calibration& cal;
  const std::vector<ServingEngineProfile>& engines;
  const ServingSpec& spec;       // the job's serving section (SLA, lengths)
  double rate = 0;               // the target, requests/s (0 = the job's own load, one replica)
  int64_t max_gpus = 1024;
  Rejects rejects;               // per setup / group reasons (few, worded where found)
  ServingRejects near;           // per candidate reasons (many, worded at the end)
  int64_t considered = 0, evaluated = 0;
  bool any_fits = false;
};

// The candidate's load on the group's job: `replicas` engines sharing the target rate.
void SetLayout(Job& j, int64_t tp, int64_t pp, int64_t replicas, double rate) {
  j.parallel.tp = tp;
  j.parallel.pp = pp;
  j.parallel.dp = replicas;
  j.cluster.num_gpus = tp * pp * replicas;
  if (rate > 0) {
    j.serving.load = ServingLoad::kRequestRate;
    j.serving.request_rate = rate;
  } else if (j.serving.load == ServingLoad::kNumRequests) {
    // The search stays on the steady-state model (S§4): a batch of requests is ranked by the
    // engine's full throughput; `gpuplan serving` simulates the batch itself (S§7).
    j.serving.load = ServingLoad::kMaxThroughput;
  }
}

Miss SlaMiss(const ServingSpec& s, const ServingEstimate& e) {
  if (e.saturated) return Miss::kSaturated;
  if (s.ttft_p90_ms > 0 && e.ttft_s.p90 * 1e3 > s.ttft_p90_ms) return Miss::kTtft;
  if (s.tpot_p90_ms > 0 && e.tpot_s.p90 * 1e3 > s.tpot_p90_ms) return Miss::kTpot;
  return Miss::kNone;
}

Result<ServingEstimate> Estimate(Search& s, Group& g, int64_t tp, int64_t pp, int64_t replicas) {
  SetLayout(g.job, tp, pp, replicas, s.rate);
  ++s.evaluated;
  return EstimateServing(g.job, s.catalog, s.cal, s.engines);
}

// Records why a candidate's best replica count still misses the SLA.
void RejectMiss(Search& s, const Group& g, const Nearest& base, Miss m, const ServingEstimate& e, int64_t replicas, double cap_rps) {
  Nearest n = base;
  n.replicas = replicas;
  n.per_replica_rate = s.rate / static_cast<double>(replicas);
  n.capacity_rps = cap_rps;
  if (m == Miss::kSaturated) {
    s.near.Add("saturated", g.gpu.id, cap_rps * static_cast<double>(replicas) / std::max(s.rate, 1e-12), n);
  } else if (m == Miss::kTtft) {
    n.value = e.ttft_s.p90 * 1e3;
    n.limit = s.spec.ttft_p90_ms;
    s.near.Add("ttft_sla", g.gpu.id, n.limit / n.value, n);
  } else {
    n.value = e.tpot_s.p90 * 1e3;
    n.limit = s.spec.tpot_p90_ms;
    s.near.Add("tpot_sla", g.gpu.id, n.limit / n.value, n);
  }
}

// The fewest replicas (within max_gpus, or the pinned count) whose estimate meets the SLA at the
// target rate: from what one replica's maximum throughput implies, doubling, then bisecting.
// nullopt = none does (the reason recorded).
std::optional<std::pair<int64_t, ServingEstimate>> FewestReplicas(Search& s, Group& g, const Job& job, const Nearest& base,
                                                                  int64_t tp, int64_t pp, const ServingEstimate& first) {
  const int64_t per = tp * pp;
  if (s.rate <= 0 || job.IsSet("parallel.dp") || job.IsSet("cluster.num_gpus")) {
    const int64_t r = g.job.parallel.dp;
    const Miss m = SlaMiss(s.spec, first);
    if (m == Miss::kNone) return std::make_pair(r, first);
    RejectMiss(s, g, base, m, first, r, first.requests_per_s / static_cast<double>(std::max<int64_t>(r, 1)));
    return std::nullopt;
  }
  const int64_t r_max = std::max<int64_t>(1, s.max_gpus / per);
  // One replica's capacity: its estimate at maximum throughput.
  const ServingLoad load = g.job.serving.load;
  g.job.serving.load = ServingLoad::kMaxThroughput;
  auto cap = Estimate(s, g, tp, pp, 1);
  g.job.serving.load = load;
  const double cap_rps = cap.ok() && cap->requests_per_s > 0 ? cap->requests_per_s : 0;
  int64_t lo = 0;  // a count known to miss (0 = none tried)
  int64_t hi = cap_rps > 0 ? std::max<int64_t>(1, static_cast<int64_t>(std::ceil(s.rate / cap_rps))) : 1;
  std::optional<ServingEstimate> at_hi;
  Miss last = Miss::kSaturated;
  ServingEstimate last_e = first;
  for (hi = std::min(hi, r_max);; hi = std::min(hi * 2, r_max)) {
    auto e = Estimate(s, g, tp, pp, hi);
    if (!e.ok()) break;
    last = SlaMiss(s.spec, *e);
    last_e = *e;
    if (last == Miss::kNone) {
      at_hi = *e;
      break;
    }
    lo = hi;
    if (hi == r_max) break;
  }
  if (!at_hi) {
    RejectMiss(s, g, base, last, last_e, lo > 0 ? lo : hi, cap_rps);
    return std::nullopt;
  }
  while (hi - lo > 1) {  // SLA misses shrink as replicas grow: bisect down to the fewest
    const int64_t mid = lo + (hi - lo) / 2;
    auto e = Estimate(s, g, tp, pp, mid);
    if (e.ok() && SlaMiss(s.spec, *e) == Miss::kNone) {
      hi = mid;
      at_hi = *e;
    } else {
      lo = mid;
    }
  }
  return std::make_pair(hi, *at_hi);
}

// One priced row per setup of the group, the rented instances filled with replicas.
void AddPlans(Search& s, Group& g, const std::vector<Setup>& setups, const Job& job, int64_t tp, int64_t pp, int64_t needed,
              ServingEstimate e, std::vector<ServingPlan>& out) {
  const int64_t per = tp * pp;
  const int64_t nodes = (needed * per + g.gpus_per_node - 1) / g.gpus_per_node;
  int64_t replicas = needed;
  const bool fill = !job.IsSet("parallel.dp") && !job.IsSet("cluster.num_gpus");
  if (fill) replicas = std::max(needed, std::min(nodes * g.gpus_per_node / per, s.max_gpus / per));
  if (replicas != needed) {
    auto filled = Estimate(s, g, tp, pp, replicas);
    if (filled.ok() && SlaMiss(s.spec, *filled) == Miss::kNone) e = *filled;
    else replicas = needed;
  }
  SetLayout(g.job, tp, pp, replicas, s.rate);
  for (size_t si : g.setups) {
    const Setup& su = setups[si];
    if (su.inst.nodes_available && nodes > *su.inst.nodes_available) {
      s.rejects.Add("nodes_available", "instance skipped: the setup needs more nodes than nodes_available");
      continue;
    }
    ServingPlan p;
    p.instance = su.inst;
    p.price_kind = su.price_kind;
    p.usd_per_node_hour = *su.price;
    p.price_date = su.price_date;
    p.nodes = nodes;
    p.gpus = nodes * g.gpus_per_node;
    p.tp = tp;
    p.pp = pp;
    p.replicas = replicas;
    p.replicas_needed = needed;
    p.weights = g.job.serving.weights;
    p.kv_dtype = g.job.serving.kv_dtype;
    p.job = g.job;
    p.estimate = e;
    p.usd_per_hour = static_cast<double>(nodes) * *su.price;
    p.output_tokens_per_s = e.output_tokens_per_s;
    p.cost_per_million_output_tokens_usd = e.output_tokens_per_s > 0 ? p.usd_per_hour / (e.output_tokens_per_s * 3600) * 1e6 : 0;
    p.cost_per_million_input_tokens_usd = e.input_tokens_per_s > 0 ? p.usd_per_hour / (e.input_tokens_per_s * 3600) * 1e6 : 0;
    p.estimate.usd_per_gpu_hour = *su.price / static_cast<double>(g.gpus_per_node);
    p.estimate.price_instance = su.inst.id;
    p.estimate.cost_per_million_output_tokens_usd = p.cost_per_million_output_tokens_usd;
    p.estimate.cost_per_million_input_tokens_usd = p.cost_per_million_input_tokens_usd;
    if (p.output_tokens_per_s <= 0) continue;  // nothing served: no price per token
    out.push_back(std::move(p));
  }
}

// One candidate (weights, KV dtype, tp, pp) on a group: fit, replicas, plans. Returns whether it fits.
bool SearchCandidate(Search& s, Group& g, const std::vector<Setup>& setups, const Job& job, int64_t tp, int64_t pp,
                     std::vector<ServingPlan>& out) {
  ++s.considered;
  Nearest base;
  base.tp = tp;
  base.pp = pp;
  base.weights = g.job.serving.weights;
  base.kv = g.job.serving.kv_dtype;
  int64_t r0 = 1;
  if (job.IsSet("parallel.dp")) r0 = job.parallel.dp;
  if (job.IsSet("cluster.num_gpus")) {
    if (job.cluster.num_gpus % (tp * pp) != 0) {
      s.rejects.Add("num_gpus_pin", "layout skipped: tp x pp does not divide the pinned cluster.num_gpus");
      return false;
    }
    r0 = job.cluster.num_gpus / (tp * pp);
  }
  if (r0 * tp * pp > s.max_gpus) {
    s.rejects.Add("max_gpus", "layout skipped: one replica needs more GPUs than constraints.max_gpus");
    return false;
  }
  auto first = Estimate(s, g, tp, pp, r0);
  if (!first.ok()) {
    s.rejects.Add("estimate_refused", first.status().reason());
    return false;
  }
  if (!first->fits) {
    base.fit_problem = first->fit_problem;
    base.what_would_fit = first->what_would_fit;
    s.near.Add("does_not_fit", g.gpu.id, first->memory.kv_bytes, base);
    return false;
  }
  s.any_fits = true;
  auto found = FewestReplicas(s, g, job, base, tp, pp, *first);
  if (found) AddPlans(s, g, setups, job, tp, pp, found->first, found->second, out);
  return true;
}

// Every candidate of one hardware group.
void SearchGroup(Search& s, Group& g, const std::vector<Setup>& setups, const Job& job, std::vector<ServingPlan>& out) {
  for (WeightFormat w : WeightFormats(job, g.gpu)) {
    if (const std::string why = WeightFormatProblem(w, g.gpu); !why.empty()) {
      s.rejects.Add("weights_unsupported", why);
      continue;
    }
    for (KvDtype kv : KvDtypes(job, g.gpu)) {
      g.job.serving.weights = w;
      g.job.serving.kv_dtype = kv;
      bool fits_one_node = false;
      for (int64_t tp : Tps(job, g.gpus_per_node)) {
        if (tp > g.gpus_per_node) {
          s.rejects.Add("tp_crosses_nodes", "layout skipped: tensor parallel larger than the GPUs of one instance");
          continue;
        }
        if (job.arch.heads % tp != 0) {
          s.rejects.Add("tp_heads", "layout skipped: tensor parallel does not divide the attention heads");
          continue;
        }
        const int64_t pp = job.IsSet("parallel.pp") ? job.parallel.pp : 1;
        fits_one_node |= SearchCandidate(s, g, setups, job, tp, pp, out) && pp == 1;
      }
      // Pipeline stages across instances, only when no layout inside one instance holds the model.
      if (fits_one_node || job.IsSet("parallel.pp") || !g.multi_node_ok) continue;
      const int64_t tp = job.IsSet("parallel.tp") ? job.parallel.tp : g.gpus_per_node;
      if (tp > g.gpus_per_node || job.arch.heads % tp != 0) continue;
      for (int64_t pp : kCrossNodePps)
        if (SearchCandidate(s, g, setups, job, tp, pp, out)) break;
    }
  }
}

// ---- rank, reasons, relax -----------------------------------------------------------------------

void RankPlans(std::vector<ServingPlan>& plans) {
  std::stable_sort(plans.begin(), plans.end(), [](const ServingPlan& a, const ServingPlan& b) {
    if (a.cost_per_million_output_tokens_usd != b.cost_per_million_output_tokens_usd)
      return a.cost_per_million_output_tokens_usd < b.cost_per_million_output_tokens_usd;
    if (a.estimate.ttft_s.p90 != b.estimate.ttft_s.p90) return a.estimate.ttft_s.p90 < b.estimate.ttft_s.p90;
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    return a.instance.id < b.instance.id;
  });
}

// One row per purchasable setup (instance, price kind): its cheapest layout (plans are ranked).
std::vector<ServingPlan> BestPerSetup(std::vector<ServingPlan> ranked) {
  std::vector<ServingPlan> out;
  std::map<std::pair<std::string, std::string>, bool> seen;
  for (auto& p : ranked)
    if (seen.emplace(std::make_pair(p.instance.id, p.price_kind), true).second) out.push_back(std::move(p));
  return out;
}

// The pins a does-not-fit answer lifts to say what would fit.
constexpr const char* kFitPins[] = {"serving.weights", "serving.kv_dtype", "cluster.num_gpus", "parallel.tp", "parallel.pp",
                                    "parallel.dp", "cluster.gpus_per_node"};

void Relax(const Search& s, const std::vector<Group>& groups, ServingPlanResult& out) {
  if (groups.empty()) {
    out.relax_code = "no_instance";
    out.relax = "no priced instance in the catalog matches the pins and filters (GPU, GPUs per node, clouds, spot): relax them, or "
                "price your own machines with --catalog FILE (instances.csv header)";
    return;
  }
  const Nearest* fit = nullptr;
  const Nearest* sla = nullptr;
  std::string fit_gpu, sla_code, sla_gpu;
  for (const auto& [key, n] : s.near.All()) {
    if (key.first == "does_not_fit") {
      if (!fit || n.closeness > fit->closeness) fit = &n, fit_gpu = key.second;
    } else if (!sla || n.closeness > sla->closeness) {
      sla = &n, sla_code = key.first, sla_gpu = key.second;
    }
  }
  if (!s.any_fits && fit) {
    out.relax_code = "does_not_fit";
    out.relax = "no setup fits: " + Reason("does_not_fit", fit_gpu, *fit, s.rate);
    std::string would;
    for (const auto& w : fit->what_would_fit) would += (would.empty() ? "" : "; ") + w;
    out.relax += would.empty() ? "; unpin serving.weights, parallel.tp or cluster.num_gpus to let the planner quantise or split the model"
                               : "; what would fit: " + would;
    return;
  }
  if (sla) {
    out.relax_code = "sla";
    out.relax = "setups fit, but none meets the SLA; the nearest: " + Reason(sla_code, sla_gpu, *sla, s.rate);
    if (sla_code == "ttft_sla") out.relax += ": relax serving.ttft_p90_ms to " + Num("%.0f", sla->value) + ", or raise constraints.max_gpus";
    if (sla_code == "tpot_sla") out.relax += ": relax serving.tpot_p90_ms to " + Num("%.1f", sla->value) + ", or raise constraints.max_gpus";
    if (sla_code == "saturated") out.relax += ": raise constraints.max_gpus or lower the rate";
    return;
  }
  out.relax_code = "all_rejected";
  out.relax = "every candidate was rejected: see the rejected table";
}

// Nothing fits as pinned: the cheapest setup the open search finds with the layout and format pins
// lifted (on the pinned GPU first, then on any), quoted in the relax message.
void AddWhatFits(const Job& job, const Catalog& catalog, const Calibration& cal, const std::vector<ServingEngineProfile>& engines,
                 ServingPlanResult& out) {
  Job open = job;
  bool lifted = false;
  for (const char* k : kFitPins) lifted |= open.set_keys.erase(k) > 0;
  if (!lifted) return;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt == 1 && open.set_keys.erase("cluster.gpu") == 0) return;
    auto r = PlanServing(open, catalog, cal, engines);
    if (!r.ok() || r->plans.empty()) continue;
    const ServingPlan& p = r->plans.front();
    out.relax += "; the cheapest that fits and meets the SLA: " + ToString(p.weights) + " weights on " + std::to_string(p.gpus) + " x " +
                 p.instance.gpu_id + " (tp" + std::to_string(p.tp) + (p.pp > 1 ? " pp" + std::to_string(p.pp) : "") + ", " +
                 std::to_string(p.replicas) + " replica" + (p.replicas == 1 ? "" : "s") + ", " + p.instance.id + ", $" +
                 Num("%.3f", p.cost_per_million_output_tokens_usd) + " per million output tokens)";
    return;
  }
}

Status ValidateServingInputs(const Job& job, const Catalog& catalog) {
  GPUPLAN_RETURN_IF_ERROR(CheckCatalogIds(job, catalog));
  for (const auto& g : job.constraints.gpus)
    if (auto spec = catalog.FindGpu(g); !spec.ok()) return Status::BadInput(Loc(job, "constraints.gpus"), spec.status().reason());
  if (job.serving.target_output_tokens_per_s < 0)
    return Status::BadInput(Loc(job, "serving.target_output_tokens_per_s"), "must be >= 0");
  if (job.IsSet("parallel.tp") && job.parallel.tp < 1) return Status::BadInput(Loc(job, "parallel.tp"), "must be >= 1");
  if (job.IsSet("parallel.pp") && job.parallel.pp < 1) return Status::BadInput(Loc(job, "parallel.pp"), "must be >= 1");
  return Status::Ok();
}
}  // namespace

Result<ServingPlanResult> PlanServing(const Job& job, const Catalog& catalog, const Calibration& cal,
                                      const std::vector<ServingEngineProfile>& engines, const ServingPlanOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  GPUPLAN_RETURN_IF_ERROR(ValidateServingInputs(job, catalog));
  auto profile = FindServingEngine(engines, job.serving.engine, job.serving.engine_version, Loc(job, "serving.engine"));
  if (!profile.ok()) return profile.status();
  ServingPlanResult out;
  out.engine = profile->engine;
  out.engine_version = profile->version;
  search::Context ctx{job, catalog, cal, 0, 0, ""};
  ctx.today = options.today.empty() ? TodayUtcIso() : options.today;
  Search s{catalog, cal, engines, job.serving, 0, 1024, {}, {}, 0, 0, false};
  s.rate = TargetRate(job.serving);
  s.max_gpus = std::max<int64_t>(1, job.constraints.max_gpus);
  out.target_requests_per_s = s.rate;
  if (s.rate <= 0)
    out.notes.push_back("no request rate or tokens/s target: each setup is one replica at the job's own load (serving.load)");

  const std::vector<Setup> setups = search::EnumerateSetups(ctx, s.rejects, out.notes);
  std::vector<Group> groups = GroupSetups(job, catalog, setups, s.rejects);
  std::vector<ServingPlan> plans;
  for (Group& g : groups) SearchGroup(s, g, setups, job, plans);
  RankPlans(plans);

  out.considered = s.considered;
  out.evaluated = s.evaluated;
  out.rejected = s.rejects.List();
  for (const auto& [key, n] : s.near.All()) out.rejected.push_back({key.first, Reason(key.first, key.second, n, s.rate), n.count});
  std::stable_sort(out.rejected.begin(), out.rejected.end(),
                   [](const Rejection& a, const Rejection& b) { return a.code < b.code; });
  out.feasible = static_cast<int64_t>(plans.size());
  plans = BestPerSetup(std::move(plans));
  if (plans.empty()) Relax(s, groups, out);
  if (plans.empty() && out.relax_code == "does_not_fit") AddWhatFits(job, catalog, cal, engines, out);
  const size_t top = static_cast<size_t>(std::max<int64_t>(1, job.constraints.top));
  if (plans.size() > top) {
    out.notes.push_back(std::to_string(plans.size()) + " setups meet the SLA; the " + std::to_string(top) +
                        " cheapest are listed (constraints.top)");
    plans.resize(top);
  }
  out.plans = std::move(plans);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace gpuplan
