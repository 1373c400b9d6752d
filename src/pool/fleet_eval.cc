// The fleet's evaluator (docs/fleet.md "Each job's layout"): a training job's best layout on the cards it is
// given, and a serving job's fewest replicas meeting its SLA on a group's cards.
#include "fleet_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gpuplan/estimate.h"
#include "gpuplan/pool_plan.h"

namespace gpuplan::fleet {
namespace {

constexpr int64_t kSplits[] = {1, 2, 4, 8};  // tp and pp tried by the built-in search (powers of two, as engines use)

std::string Str(int64_t v) { return std::to_string(v); }

std::string Num(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// bf16 on a card without it trains in fp16 (the planner's rule, constraints.precisions) unless the job pins it.
bool UseFp16(const Job& job, const Pool& cards, const Catalog& catalog) {
  if (job.training.precision != Precision::kBf16 || job.IsSet("training.precision")) return false;
  for (const auto& g : cards.groups) {
    auto gpu = catalog.FindGpu(g.gpu);
    if (gpu.ok() && !gpu->bf16_supported) return true;
  }
  return false;
}

// The job laid out as tp x pp x dp over all of `cards` (even split), finalized; nullopt when the combination is
// not a valid job (dp does not divide the global batch, tp does not divide the heads, ...).
std::optional<Job> LaidOut(const Job& base, const Pool& cards, int64_t tp, int64_t pp, int64_t total, bool fp16) {
  Job j = base;
  j.set_keys.erase("parallel.dp");
  j.set_keys.erase("cluster.num_gpus");
  j.set_keys.erase("parallel.layer_split");
  j.parallel.tp = tp, j.parallel.pp = pp, j.parallel.dp = total / (tp * pp * j.parallel.cp);
  j.parallel.layer_split.clear();
  j.parallel.vpp = 1;
  j.cluster.num_gpus = total;
  j.cluster.gpu = cards.groups.front().gpu;
  j.cluster.gpus_per_node = cards.groups.front().gpus_per_node;
  if (fp16) j.training.precision = Precision::kFp16;
  if (j.parallel.dp < 1 || j.parallel.dp * tp * pp * j.parallel.cp != total) return std::nullopt;
  if (!FinalizeJob(j).ok()) return std::nullopt;
  return j;
}

std::string LayoutLine(const PoolEstimate& e, const Pool& cards) {
  const PoolLayout& l = e.layout;
  std::string s = "tp " + Str(l.tp) + " x pp " + Str(l.pp) + " x dp " + Str(l.dp);
  if (l.cp > 1) s += " x cp " + Str(l.cp);
  if (l.pp > 1) {
    s += ", blocks";
    for (size_t i = 0; i < l.layer_split.size(); ++i) s += (i ? "/" : " ") + Str(l.layer_split[i]);
  }
  s += " on";
  for (size_t i = 0; i < l.order.size(); ++i)
    s += (i ? " + " : " ") + cards.groups[l.order[i]].name + " (" + Str(l.nodes[i] * cards.groups[l.order[i]].gpus_per_node) + ")";
  return s;
}

// The pool planner's best plan on exactly these cards (the fleet decides the count: no num_gpus or dp pin).
Result<PoolEstimate> Planned(const Job& job, const Pool& cards, const Catalog& catalog, const Calibration& cal) {
  Job j = job;
  for (const char* k : {"cluster.num_gpus", "parallel.dp", "parallel.layer_split"}) j.set_keys.erase(k);
  j.cluster.num_gpus = 0, j.parallel.dp = 0;
  j.parallel.layer_split.clear();
  if (UseFp16(job, cards, catalog)) j.training.precision = Precision::kFp16;
  PoolPlanOptions o;
  o.top = 1;
  auto r = PlanOnPool(j, cards, catalog, cal, o);
  if (!r.ok()) return r.status();
  if (r->plans.empty()) {
    std::string why = "no layout fits";
    if (!r->rejections.empty()) why += ": " + r->rejections.front().reason;
    return Status::Infeasible(why);
  }
  return r->plans.front().estimate;
}

// The cards a layout places, per pool group (ranks fill the groups of `order` node by node, as LayoutFromJob does).
Counts UsedCards(const Pool& pool, const Pool& cards, const PoolLayout& l) {
  Counts used(pool.groups.size(), 0);
  int64_t left = l.Gpus();
  for (size_t i = 0; i < l.order.size() && left > 0; ++i) {
    const PoolGroup& g = cards.groups[l.order[i]];
    const int64_t n = std::min(left, l.nodes[i] * g.gpus_per_node);
    for (size_t p = 0; p < pool.groups.size(); ++p)
      if (pool.groups[p].name == g.name) used[p] += n;
    left -= n;
  }
  return used;
}

}  // namespace

std::vector<FleetGpus> ToGpus(const Counts& c) {
  std::vector<FleetGpus> out;
  for (size_t g = 0; g < c.size(); ++g)
    if (c[g] > 0) out.push_back({g, c[g]});
  return out;
}

int64_t Total(const Counts& c) {
  int64_t n = 0;
  for (int64_t v : c) n += v;
  return n;
}

bool ValidShape(const Pool& pool, const Counts& c) {
  for (size_t g = 0; g < c.size(); ++g) {
    const int64_t per = pool.groups[g].gpus_per_node;
    if (c[g] < 0 || c[g] > pool.groups[g].GpusUsable() || (c[g] > per && c[g] % per != 0)) return false;
  }
  return true;
}

Evaluator::Evaluator(const Fleet& fleet, const Catalog& catalog, const Calibration& cal,
                     const std::vector<ServingEngineProfile>& engines, const FleetOptions& options)
    : fleet_(fleet), catalog_(WithPoolLinks(catalog, fleet.pool)), cal_(cal), engines_(engines), options_(options) {}

const TrainEval& Evaluator::Train(size_t j, const Counts& c) {
  auto key = std::make_pair(j, c);
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  return memo_.emplace(key, Search(j, c)).first->second;
}

// The built-in search: every tp and pp of kSplits (or the job's pins) over all the cards, the even split, the
// fastest layout that fits each card's memory. A plugged-in planner (options.layout) replaces it.
TrainEval Evaluator::Search(size_t j, const Counts& c) {
  TrainEval out;
  const Job& base = fleet_.jobs[j].job;
  const Pool cards = CardsPool(fleet_.pool, ToGpus(c));
  const int64_t total = Total(c);
  if (cards.groups.empty()) {
    out.why = "no cards";
    return out;
  }
  std::optional<PoolEstimate> best;
  if (options_.layout || !options_.quick) {
    ++evaluations_;
    auto e = options_.layout ? options_.layout(base, cards, catalog_, cal_) : Planned(base, cards, catalog_, cal_);
    if (e.ok()) best = *e;
    else out.why = e.status().reason();
  } else {
    const bool fp16 = UseFp16(base, cards, catalog_);
    for (int64_t tp : kSplits) {
      if (base.IsSet("parallel.tp") && tp != base.parallel.tp) continue;
      bool tp_ok = true;
      for (const auto& g : cards.groups) tp_ok &= g.gpus_per_node % tp == 0;
      if (!tp_ok) continue;
      for (int64_t pp : kSplits) {
        if ((base.IsSet("parallel.pp") && pp != base.parallel.pp) || total % (tp * pp) != 0) continue;
        auto job = LaidOut(base, cards, tp, pp, total, fp16);
        if (!job) continue;
        auto layout = LayoutFromJob(*job, cards);
        if (!layout.ok()) continue;
        ++evaluations_;
        auto e = EstimateOnPool(*job, cards, *layout, catalog_, cal_);
        if (!e.ok()) {
          if (out.why.empty()) out.why = e.status().reason();
          continue;
        }
        if (!e->fits) {
          out.why = e->not_fit_reason;
          continue;
        }
        if (!best || e->tokens_per_s > best->tokens_per_s) best = *e;
      }
    }
  }
  if (!best) {
    if (out.why.empty()) out.why = "no tp x pp x dp layout of " + Str(total) + " cards suits the job (batch, heads)";
    return out;
  }
  out.ok = true;
  out.used = UsedCards(fleet_.pool, cards, best->layout);
  out.tokens_per_s = best->tokens_per_s;
  out.layout = LayoutLine(*best, cards);
  out.placement = best->placement;
  return out;
}

ServeEval Evaluator::ServeAt(size_t j, size_t g, int64_t tp, int64_t replicas, int64_t gpus_per_node) {
  ServeEval out;
  const PoolGroup& grp = fleet_.pool.groups[g];
  Job job = fleet_.jobs[j].job;
  job.cluster.gpu = grp.gpu;
  job.cluster.gpus_per_node = std::min(gpus_per_node, tp * replicas);
  job.cluster.intra_node = grp.intra_node;
  job.cluster.network = grp.network;
  job.parallel.tp = tp, job.parallel.pp = 1, job.parallel.dp = replicas;
  job.cluster.num_gpus = tp * replicas;
  const ServingSpec& s = job.serving;
  const double rate = s.target_output_tokens_per_s > 0 && s.output_len > 0 ? s.target_output_tokens_per_s / s.output_len
                                                                           : s.request_rate;
  job.serving.load = ServingLoad::kRequestRate;
  job.serving.request_rate = rate;
  auto gpu = catalog_.FindGpu(grp.gpu);
  if (gpu.ok() && !job.IsSet("serving.weights") && !gpu->bf16_supported) job.serving.weights = WeightFormat::kFp16;
  ++evaluations_;
  auto e = EstimateServing(job, catalog_, cal_, engines_);
  out.group = static_cast<int64_t>(g), out.tp = tp, out.replicas = replicas, out.gpus = tp * replicas;
  if (!e.ok()) {
    out.why = e.status().reason();
    return out;
  }
  if (!e->fits) out.why = e->fit_problem;
  else if (e->saturated) out.why = Num("%.3g", rate) + " req/s saturates " + Str(replicas) + " replica(s)";
  else if (s.ttft_p90_ms > 0 && e->ttft_s.p90 * 1e3 > s.ttft_p90_ms)
    out.why = "TTFT p90 " + Num("%.0f", e->ttft_s.p90 * 1e3) + " ms > SLA " + Num("%.0f", s.ttft_p90_ms) + " ms";
  else if (s.tpot_p90_ms > 0 && e->tpot_s.p90 * 1e3 > s.tpot_p90_ms)
    out.why = "TPOT p90 " + Num("%.1f", e->tpot_s.p90 * 1e3) + " ms > SLA " + Num("%.1f", s.tpot_p90_ms) + " ms";
  out.ok = out.why.empty();
  out.output_tokens_per_s = e->output_tokens_per_s;
  out.layout = Str(replicas) + " x tp " + Str(tp) + " " + ToString(job.serving.weights) + " on " + grp.name + " (" +
               Str(tp * replicas) + "), TTFT p90 " + Num("%.0f", e->ttft_s.p90 * 1e3) + " ms, TPOT p90 " +
               Num("%.1f", e->tpot_s.p90 * 1e3) + " ms";
  return out;
}

// Per tp (within a node, dividing the heads): replicas doubled until the SLA is met, then bisected down to the
// fewest; the fewest cards over the tps.
ServeEval Evaluator::ServeOnGroup(size_t j, size_t g, int64_t free) {
  const PoolGroup& grp = fleet_.pool.groups[g];
  const Job& job = fleet_.jobs[j].job;
  ServeEval best;
  best.why = "no card of " + grp.name + " is free";
  for (int64_t tp : kSplits) {
    if (tp > grp.gpus_per_node || grp.gpus_per_node % tp != 0 || job.arch.heads % tp != 0 || tp > free) continue;
    if (job.IsSet("parallel.tp") && tp != job.parallel.tp) continue;
    const int64_t r_max = free / tp;
    int64_t lo = 0, hi = 1;
    ServeEval at_hi = ServeAt(j, g, tp, hi, grp.gpus_per_node);
    while (!at_hi.ok && hi < r_max && at_hi.why.find("does not fit") == std::string::npos) {
      lo = hi;
      hi = std::min(hi * 2, r_max);
      at_hi = ServeAt(j, g, tp, hi, grp.gpus_per_node);
    }
    if (!at_hi.ok) {
      if (!best.ok) best = at_hi;
      continue;
    }
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      ServeEval e = ServeAt(j, g, tp, mid, grp.gpus_per_node);
      if (e.ok) hi = mid, at_hi = e;
      else lo = mid;
    }
    if (!best.ok || at_hi.gpus < best.gpus) best = at_hi;
  }
  return best;
}

ServeEval Evaluator::ServeOnCards(size_t j, const Counts& c) {
  // The slowest card type among them paces every replica placed on it (type-blind: the replicas are spread).
  size_t slow = 0;
  bool any = false;
  for (size_t g = 0; g < c.size(); ++g)
    if (c[g] > 0 && (!any || CardPeak(j, g) < CardPeak(j, slow))) slow = g, any = true;
  ServeEval best;
  best.why = "no cards";
  if (!any) return best;
  const int64_t total = Total(c);
  int64_t min_node = std::numeric_limits<int64_t>::max();
  for (size_t g = 0; g < c.size(); ++g)
    if (c[g] > 0) min_node = std::min(min_node, std::min(c[g], fleet_.pool.groups[g].gpus_per_node));
  for (int64_t tp : kSplits) {
    if (tp > min_node || fleet_.jobs[j].job.arch.heads % tp != 0) continue;
    ServeEval e = ServeAt(j, slow, tp, total / tp, fleet_.pool.groups[slow].gpus_per_node);
    if (e.ok || !best.ok) {
      if (!best.ok || e.output_tokens_per_s > best.output_tokens_per_s) best = e;
    }
    if (best.ok) break;
  }
  return best;
}

double Evaluator::UsefulFlops(size_t j, double tokens_per_s) const {
  const Job& job = fleet_.jobs[j].job;
  return tokens_per_s * ModelFlopsPerToken(job.arch, job.training.seq_len, IsAdapterMethod(job.training.method));
}

std::optional<double> Evaluator::UsdPerHour(const Counts& c) const {
  double usd = 0;
  for (size_t g = 0; g < c.size(); ++g) {
    if (c[g] == 0) continue;
    if (!fleet_.pool.groups[g].price_per_gpu_hour) return std::nullopt;
    usd += static_cast<double>(c[g]) * *fleet_.pool.groups[g].price_per_gpu_hour;
  }
  return usd;
}

double Evaluator::CardPeak(size_t j, size_t g) const {
  auto gpu = catalog_.FindGpu(fleet_.pool.groups[g].gpu);
  if (!gpu.ok()) return 0;
  const Precision p = fleet_.jobs[j].job.training.precision;
  auto peak = gpu->PeakFlops(p);
  if (!peak && p == Precision::kBf16) peak = gpu->PeakFlops(Precision::kFp16);
  return peak.value_or(0);
}

}  // namespace gpuplan::fleet
