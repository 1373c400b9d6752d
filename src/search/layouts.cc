// §3 pruning, §2 the layouts of one work item, §5 pricing at wall-clock (docs/model/planner.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "stages.h"

namespace gpuplan::search {

double Score(Objective o, double time_s, const CostBreakdown& c) {
  const double inf = 1e300;
  switch (o) {
    case Objective::kTime: return time_s;
    case Objective::kCost: return c.price_known ? c.with_rerun_usd : inf;
    case Objective::kBalanced: return c.price_known ? time_s * c.with_rerun_usd : inf;
  }
  return time_s;
}

const char* HotRejectCode(int r) {
  static const char* const codes[] = {"batch_not_divisible", "memory", "tp_crosses_nodes", "ep_layout", "recompute_dominated", "engine_layout",
                                            "interleaved_microbatches"};
  return codes[r];
}
const char* HotRejectReason(int r) {
  static const char* const reasons[] = {"global batch not divisible by dp x micro-batch", "does not fit GPU memory (with the headroom)",
                                        "tp crosses nodes", "ep does not fit the layout",
                                        "more recompute where a lighter recompute already fits at this micro-batch (never faster)",
                                        "a layout the engine cannot express (data/engines.csv)",
                                        "interleaved stages with fewer micro-batches per step than pp (Megatron's schedule, data/engines.csv)"};
  return reasons[r];
}

namespace {
// §4 the bill of one run at its wall-clock: compute, object-store capacity (dataset + kept
// checkpoints), the provisioned checkpoint file system and the PUTs of every checkpoint.
CostBreakdown Bill(const Context& ctx, const Setup& su, const Item& it, const WallClock& w, const CheckpointTarget* t) {
  CostBreakdown c;
  c.price_known = su.price.has_value();
  c.price_kind = su.price_kind;
  c.price_per_node_hour = su.price.value_or(0);
  c.price_date = su.price_date;
  const double hours = w.time_s / 3600;
  // A capacity block is billed in whole increments (AWS: 24 h), used or not.
  c.billed_hours = su.billing_increment_s > 0 ? std::ceil(w.time_s / su.billing_increment_s) * su.billing_increment_s / 3600 : hours;
  c.compute_usd = c.price_per_node_hour * static_cast<double>(it.nodes) * c.billed_hours;
  if (it.object_usd_per_gb_month) {
    // Checkpoints are held (and PUT) on the object store only when it is their target.
    const bool uses_object = t && (t->kind.find("object") != std::string::npos || t->kind.find("upload") != std::string::npos);
    const double held = it.dataset_bytes + (uses_object ? it.kept_checkpoint_bytes : 0);
    c.storage_usd = held / 1e9 * *it.object_usd_per_gb_month * hours / (24 * 30);
    if (uses_object)
      c.requests_usd = (static_cast<double>(w.checkpoints) * it.puts_per_checkpoint + it.puts_final_save) / 1000 * it.usd_per_1k_put;
  }
  if (t) c.checkpoint_fs_usd = t->usd_per_hour.value_or(0) * hours;
  c.subtotal_usd = c.compute_usd + c.storage_usd + c.checkpoint_fs_usd + c.requests_usd;
  c.with_rerun_usd = c.subtotal_usd * ctx.job.constraints.rerun_factor;
  return c;
}
}  // namespace

namespace {
// R§3: an async copy of a target is worth its host-memory snapshot only where the synchronous save
// matters: its stalls exceed checkpoint_async_min_stall_share of the training time, or (spot) the
// synchronous save is not durable within the reclaim notice.
bool AsyncWorthIt(const Context& ctx, const CheckpointTarget& t, WallClockInputs in, bool spot) {
  in.stall_s = t.sync_stall_s;
  in.durable_s = std::max(t.sync_stall_s, t.durable_s - t.stall_s);
  const WallClock sync = ComputeWallClock(in);
  if (spot && in.rates.reclaim_notice_s > 0 && in.durable_s > in.rates.reclaim_notice_s) return true;
  return in.train_s > 0 && sync.checkpoint_stall_s / in.train_s > ctx.cal.Get("checkpoint_async_min_stall_share");
}
}  // namespace

bool FitsReclaimNotice(const CheckpointTarget* t, const EventRates& r) {
  if (r.reclaim_notice_s <= 0) return true;
  return t && (t->async || t->durable_s <= r.reclaim_notice_s);
}

RunOutcome PriceRun(const Context& ctx, const Setup& su, const Item& it, double train_s) {
  WallClockInputs in;
  in.train_s = train_s;
  in.startup_s = it.startup.Total();
  in.rates = it.rates;
  if (ctx.pinned("training.checkpoint_interval_min")) in.pinned_interval_s = ctx.job.training.checkpoint_interval_min * 60;
  in.min_interval_s = ctx.cal.Get("checkpoint_interval_floor_s");
  const bool spot = su.price_kind == "spot";
  RunOutcome best;
  bool have = false;
  std::tuple<bool, bool, bool, double, double, double> best_key;
  const int n = static_cast<int>(it.targets.size());
  for (int ti = (n == 0 ? -1 : 0); ti < n; ++ti) {
    const CheckpointTarget* t = ti >= 0 ? &it.targets[static_cast<size_t>(ti)] : nullptr;
    if (t && t->async && !ctx.pinned("training.checkpoint_async") && !AsyncWorthIt(ctx, *t, in, spot)) continue;
    in.stall_s = t ? t->stall_s : 0;
    in.durable_s = t ? t->durable_s : 0;
    in.final_save_s = t ? t->final_save_s : 0;
    RunOutcome o;
    o.wall = ComputeWallClock(in);
    o.cost = Bill(ctx, su, it, o.wall, t);
    o.target = ti;
    o.score = Score(ctx.job.constraints.objective, o.wall.time_s, o.cost);
    if (!o.wall.converges) o.score = std::numeric_limits<double>::infinity();
    // Order: converging first; on spot, a save that fits the reclaim notice (async or fast enough);
    // on cost, a target whose capacity price is unknown (it would look free) after the priced ones;
    // then the objective, time, cost.
    const bool late = spot && !FitsReclaimNotice(t, in.rates);
    const bool unpriced = t && !t->usd_per_hour && ctx.job.constraints.objective != Objective::kTime;
    const auto key = std::make_tuple(!o.wall.converges, late, unpriced, o.score, o.wall.time_s, o.cost.with_rerun_usd);
    if (!have || key < best_key) {
      best = o;
      best_key = key;
    }
    have = true;
  }
  return best;
}

namespace {
// Per item, before any layout: no layout beats every GEMM at the matmul ceiling, plus start-up.
bool PrunedByBound(const Context& ctx, const Setup& su, const Item& it, const Variant& v, SearchState& st) {
  const Constraints& con = ctx.job.constraints;
  const double gpus = static_cast<double>(it.nodes * su.inst.gpu_count);
  const double peak = v.hw.gpu.PeakFlops(v.precision).value_or(0);
  const double lb_s = ctx.job.training.tokens * ctx.mflops / (gpus * peak * v.hw.k.matmul_eff_max) + it.startup.Total();
  if (con.deadline_hours > 0 && lb_s > con.deadline_hours * 3600) {
    st.rejects.Add("deadline_bound", "misses deadline (even at peak, with start-up; whole setup pruned)");
    return true;
  }
  const double lb_usd = su.price.value_or(0) * static_cast<double>(it.nodes) * lb_s / 3600 * con.rerun_factor;
  if (con.budget_usd > 0 && su.price && lb_usd > con.budget_usd) {
    st.rejects.Add("budget_bound", "over budget (even at peak, with start-up; whole setup pruned)");
    return true;
  }
  return false;
}


// The fastest layout of an item so far (§5: for one item every outcome is monotone in the steps'
// time, so the fastest layout is also the cheapest and the best balanced one).
struct Fastest {
  bool found = false;
  ParallelSpec par;
  int64_t micro_batch = 0;
  Recompute recompute = Recompute::kNone;
  double memory_bytes = 0, train_s = 0;
};

// The micro-batch and offload loop of one (tp, cp, pp, vpp, zero, recompute): the first offload
// level that fits; memory does not fall as the micro-batch grows, so a miss ends the loop.
// Micro-batches up to `dominated_upto` already fitted without offload at a lighter recompute,
// which is never slower at the same micro-batch: they are skipped (counted as considered).
// Returns the largest micro-batch that fits without offload (0 = none).
int64_t TryMicroBatches(const Context& ctx, const LayoutSpace& sp, const Variant& v, Job& j, int64_t dominated_upto, Fastest& best,
                        SearchState& st) {
  const int64_t dp = j.parallel.dp, gb = ctx.job.training.global_batch;
  const double cap = v.hw.gpu.memory_bytes * (1 - ctx.headroom);
  int64_t fit_plain = 0;
  for (int64_t mb : sp.mbs) {
    ++st.considered;
    if (gb % (dp * mb) != 0) { ++st.hot[kBatchNotDivisible]; continue; }
    if (mb <= dominated_upto) { ++st.hot[kDominated]; fit_plain = mb; continue; }
    j.training.micro_batch = mb;
    // Fewer micro-batches per step as mb grows: once below pp, none of the larger ones runs either.
    if (!EngineRunsInterleavedMicrobatches(*v.engine, j)) { ++st.hot[kInterleavedMicrobatches]; break; }
    double mem = 0;
    bool fits = false;
    for (Offload o : sp.offloads) {
      // The offload kinds the engine expresses at this ZeRO stage (data/engines.csv).
      j.parallel.offload = o;
      if (!EngineExpressesLayout(*v.engine, j, NvlinkDomainGpus(j.cluster, v.hw.gpu, v.hw.intra))) continue;
      mem = EstimateMemory(j, ctx.cal, false).total_bytes;
      if ((fits = mem <= cap)) break;
    }
    if (!fits) { ++st.hot[kMemory]; break; }
    if (j.parallel.offload == Offload::kNone) fit_plain = mb;
    st.any_fits_memory = true;
    ++st.evaluated;
    const StepEstimate e = EstimateStep(j, v.hw);
    if (!e.feasible || !(e.step_time_s > 0) || !std::isfinite(e.step_time_s)) {
      st.rejects.Add("estimate_infeasible", "step time unknown: " + e.infeasible_reason);
      continue;
    }
    // The checkpoint stall is the reliability layer's (R§5), not the step's.
    const double steps = ctx.job.training.tokens / e.tokens_per_step;
    const double train_s = steps * (e.step_time_s - e.breakdown.checkpoint_s);
    if (!best.found || train_s < best.train_s || (train_s == best.train_s && mem < best.memory_bytes))
      best = {true, j.parallel, mb, j.training.recompute, mem, train_s};
  }
  return fit_plain;
}

// §5 the item's fastest layout priced at wall-clock with its best checkpoint target, then the
// deadline and the budget (both monotone in the steps' time, so checked once per item).
void PriceFastest(const Context& ctx, const Setup& su, const Item& it, size_t item, const Fastest& f, SearchState& st) {
  const Constraints& con = ctx.job.constraints;
  const RunOutcome run = PriceRun(ctx, su, it, f.train_s);
  if (!run.wall.converges) {
    st.rejects.Add("reliability_diverges", "failures and interruptions outrun progress (no target checkpoints fast enough)");
    return;
  }
  if (con.deadline_hours > 0 && run.wall.time_s > con.deadline_hours * 3600) {
    st.rejects.Add("deadline", "misses deadline (wall-clock of the setup's fastest layout)");
    return;
  }
  if (con.budget_usd > 0 && !su.price) { st.rejects.Add("price_unknown", "price unknown (budget set)"); return; }
  if (con.budget_usd > 0 && run.cost.with_rerun_usd > con.budget_usd) {
    st.rejects.Add("budget", "over budget (wall-clock cost of the setup's fastest layout)");
    return;
  }
  st.best.push_back({true, item, f.par, f.micro_batch, f.recompute, f.memory_bytes, f.train_s, run, su.price.has_value()});
}

// The lowest ZeRO stage the engine runs with these model-parallel degrees.
int LowestZero(const EngineCaps& e, int64_t tp, int64_t cp, int64_t pp, int64_t ep) {
  const std::vector<int>& z = tp > 1 || cp > 1 || pp > 1 || ep > 1 ? e.zero_with_model_parallel : e.zero;
  return z.empty() ? 0 : *std::min_element(z.begin(), z.end());
}

// The divisors of the layers per stage that Megatron's interleaving accepts (L % (pp·v) = 0).
std::vector<int64_t> VirtualStages(const LayoutSpace& sp, int64_t layers, int64_t pp) {
  if (!sp.vpps.empty()) return sp.vpps;
  std::vector<int64_t> out = {1};
  if (pp == 1) return out;
  for (int64_t v = 2; pp * v <= layers; ++v)
    if (layers % (pp * v) == 0) out.push_back(v);
  return out;
}
}  // namespace

void SearchItem(const Context& ctx, const LayoutSpace& sp, const std::vector<Setup>& setups, const std::vector<Variant>& variants,
                const std::vector<Item>& items, size_t item, SearchState& st) {
  const Item& it = items[item];
  const Variant& v = variants[it.variant];
  const Setup& su = setups[v.setup];
  if (PrunedByBound(ctx, su, it, v, st)) return;
  const Arch& a = ctx.job.arch;
  const int64_t per = su.inst.gpu_count, gpus = it.nodes * per;
  Job j = ctx.job;
  j.training.precision = v.precision;
  j.training.framework = v.engine->framework;
  j.cluster.gpu = su.inst.gpu_id;
  j.cluster.gpus_per_node = per;
  j.cluster.num_gpus = gpus;
  j.cluster.intra_node = su.intra;
  j.cluster.network = su.network;
  j.cluster.nics_per_node = su.nics;
  if (su.inst.vcpus && !ctx.pinned("cluster.cpu_cores_per_gpu"))
    j.cluster.cpu_cores_per_gpu = static_cast<int64_t>(*su.inst.vcpus / static_cast<double>(per));
  Fastest best;
  // N§6 tensor parallelism stays inside an NVLink domain (the node, or an NVL72 rack of trays).
  const int64_t domain = NvlinkDomainGpus(j.cluster, v.hw.gpu, v.hw.intra);
  for (int64_t tp : sp.tps) {
    if (gpus % tp) continue;
    if (tp > domain && !ctx.job.constraints.allow_tp_across_nodes) { ++st.hot[kTpCrossesNodes]; continue; }
    for (int64_t cp : sp.cps)
      for (int64_t pp : sp.pps) {
        if (gpus % (tp * cp * pp)) continue;
        const int64_t dp = gpus / (tp * cp * pp);
        if (ctx.pinned("parallel.dp") && dp != ctx.job.parallel.dp) continue;
        if (ctx.job.parallel.ep > 1 && (ctx.job.parallel.ep > dp * tp || a.experts % ctx.job.parallel.ep != 0)) {
          ++st.hot[kEpLayout];
          continue;
        }
        for (int64_t vpp : VirtualStages(sp, a.layers, pp)) {
          if (pp * vpp > a.layers || (vpp > 1 && pp == 1)) continue;
          for (int zero : sp.zeros) {
            // Without data parallelism the stage means nothing: only the engine's lowest is tried.
            if (dp * cp == 1 && zero != LowestZero(*v.engine, tp, cp, pp, ctx.job.parallel.ep)) continue;
            int64_t dominated_upto = 0;  // sp.rcs runs from the lightest recompute up
            for (Recompute rc : sp.rcs) {
              j.parallel.tp = tp;
              j.parallel.pp = pp;
              j.parallel.cp = cp;
              j.parallel.dp = dp;
              j.parallel.vpp = vpp;
              j.parallel.zero = zero;
              // Sequence parallel as the engine runs tp (a pin stands, and is checked); ep as the job says.
              j.parallel.sequence_parallel = ctx.pinned("parallel.sequence_parallel") ? tp > 1 && ctx.job.parallel.sequence_parallel
                                                                                       : EngineSequenceParallel(*v.engine, tp);
              j.parallel.ep = ctx.job.parallel.ep;
              j.parallel.offload = Offload::kNone;
              j.training.recompute = rc;
              // The most micro-batches per step this layout can have (the smallest micro-batch).
              j.training.micro_batch = *std::min_element(sp.mbs.begin(), sp.mbs.end());
              if (!EngineRunsInterleavedMicrobatches(*v.engine, j)) { ++st.hot[kInterleavedMicrobatches]; continue; }
              if (!EngineExpressesLayout(*v.engine, j, per)) { ++st.hot[kEngineLayout]; continue; }
              dominated_upto = std::max(dominated_upto, TryMicroBatches(ctx, sp, v, j, dominated_upto, best, st));
            }
          }
        }
      }
  }
  if (best.found) PriceFastest(ctx, su, it, item, best, st);
}

}  // namespace gpuplan::search
