// One training job over a mixed pool (docs/model/pools.md MX§1-§5): the placement of ranks over the groups, every
// stage part as the homogeneous model of a job whose every stage were that part, and the pipeline folded from them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "gpuplan/pool.h"

namespace gpuplan {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

Location Where(const Job& job, const std::string& key) {
  auto it = job.set_keys.find(key);
  return it != job.set_keys.end() ? it->second : Location{job.source, 0, key};
}

// MX§1 the even split: floor(L / pp) blocks each, the remainder one more on the first stages.
std::vector<int64_t> EvenSplit(int64_t layers, int64_t pp) {
  std::vector<int64_t> s(static_cast<size_t>(pp), layers / pp);
  for (int64_t i = 0; i < layers % pp; ++i) ++s[static_cast<size_t>(i)];
  return s;
}

// The GPUs of each group in rank order: (pool group, GPUs) runs, node by node.
struct Run {
  size_t group;
  int64_t first, count;  // global rank range [first, first + count)
};

std::vector<Run> Runs(const Pool& pool, const PoolLayout& l) {
  std::vector<Run> runs;
  int64_t at = 0;
  for (size_t i = 0; i < l.order.size(); ++i) {
    const int64_t n = std::min(l.nodes[i] * pool.groups[l.order[i]].gpus_per_node, l.Gpus() - at);
    if (n > 0) runs.push_back({l.order[i], at, n});
    at += n;
  }
  return runs;
}

}  // namespace

Result<PoolLayout> LayoutFromJob(const Job& job, const Pool& pool) {
  const ParallelSpec& p = job.parallel;
  PoolLayout l;
  l.tp = p.tp, l.cp = p.cp, l.pp = p.pp, l.vpp = p.vpp;
  l.micro_batch = job.training.micro_batch;
  const int64_t mp = p.tp * p.cp * p.pp;
  if (job.IsSet("parallel.dp")) l.dp = p.dp;
  else if (job.IsSet("cluster.num_gpus")) l.dp = std::max<int64_t>(1, job.cluster.num_gpus / mp);
  else l.dp = std::max<int64_t>(1, pool.GpusUsable() / mp);
  if (l.Gpus() > pool.GpusUsable())
    return Status::BadInput(Where(job, job.IsSet("parallel.dp") ? "parallel.dp" : "parallel.tp"),
                            "the layout needs " + Str(l.Gpus()) + " GPUs (tp " + Str(l.tp) + " x cp " + Str(l.cp) + " x dp " +
                                Str(l.dp) + " x pp " + Str(l.pp) + ") but the pool offers " + Str(pool.GpusUsable()));
  l.layer_split = p.layer_split.empty() ? EvenSplit(job.arch.layers, l.pp) : p.layer_split;
  int64_t left = l.Gpus();
  for (size_t i = 0; i < pool.groups.size() && left > 0; ++i) {
    const PoolGroup& g = pool.groups[i];
    if (g.gpus_per_node % l.tp != 0)
      return Status::BadInput(Where(job, "parallel.tp"), "tp " + Str(l.tp) + " does not divide group '" + g.name +
                                                             "''s " + Str(g.gpus_per_node) +
                                                             " GPUs per node: a tensor-parallel group would span two nodes");
    const int64_t nodes = std::min(g.NodesUsable(), (left + g.gpus_per_node - 1) / g.gpus_per_node);
    l.order.push_back(i);
    l.nodes.push_back(nodes);
    left -= std::min(left, nodes * g.gpus_per_node);
  }
  return l;
}

Result<Job> FinalizeJobForPool(Job job, const Pool& pool) {
  auto layout = LayoutFromJob(job, pool);
  if (!layout.ok()) return layout.status();
  job.parallel.dp = layout->dp;
  job.cluster.num_gpus = layout->Gpus();
  if (!job.IsSet("cluster.gpu")) job.cluster.gpu = pool.groups[layout->order.front()].gpu;
  if (!job.IsSet("cluster.gpus_per_node")) job.cluster.gpus_per_node = pool.groups[layout->order.front()].gpus_per_node;
  GPUPLAN_RETURN_IF_ERROR(FinalizeJob(job));
  return job;
}

// MX§2 the job one stage part stands for: the part's card, network and node size, pp stages of `layers` blocks each.
Job PartJob(const Job& job, const PoolLayout& l, const PoolGroup& g, int64_t layers, const std::string& network,
            int64_t gpus_per_node) {
  Job j = job;
  j.cluster.gpu = g.gpu;
  j.cluster.gpus_per_node = gpus_per_node;
  j.cluster.intra_node = g.intra_node;
  j.cluster.network = network;
  j.cluster.nics_per_node = 0;
  j.cluster.nvlink_domain = 0;
  j.parallel.tp = l.tp, j.parallel.cp = l.cp, j.parallel.pp = l.pp, j.parallel.dp = l.dp, j.parallel.vpp = l.vpp;
  j.parallel.layer_split.clear();
  j.arch.layers = layers * l.pp;
  j.cluster.num_gpus = l.Gpus();
  j.training.micro_batch = l.micro_batch;
  return j;
}

Result<PoolEstimate> EstimateOnPool(const Job& job, const Pool& pool, const PoolLayout& layout, const Catalog& base_catalog,
                                    const Calibration& cal) {
  const Catalog catalog = WithPoolLinks(base_catalog, pool);
  PoolEstimate out;
  out.layout = layout;
  const PoolLayout& l = layout;
  if (static_cast<int64_t>(l.layer_split.size()) != l.pp)
    return Status::BadInput(Where(job, "parallel.layer_split"), "needs one entry per pipeline stage");
  const std::vector<Run> runs = Runs(pool, l);
  const int64_t per_stage = l.tp * l.cp * l.dp;
  double peak_sum = 0;
  std::vector<StepBreakdown> pace_b, after_b;
  double micro_batches = 1;  // per stage: the pacing part's step, the part with the most after it
  for (int64_t s = 0; s < l.pp; ++s) {
    StageEstimate st;
    st.stage = s;
    st.layers = l.layer_split[static_cast<size_t>(s)];
    const int64_t lo = s * per_stage, hi = lo + per_stage;
    // The parts: each group among the stage's ranks, and the slowest network among them (a replica set across
    // groups synchronises over the slower one).
    std::vector<std::pair<size_t, int64_t>> parts;
    for (const Run& r : runs) {
      const int64_t n = std::min(hi, r.first + r.count) - std::max(lo, r.first);
      if (n > 0) parts.push_back({r.group, n});
    }
    std::string network = pool.groups[parts.front().first].network;
    if (parts.size() > 1) {
      double slowest = std::numeric_limits<double>::infinity();
      for (const auto& [gi, n] : parts) {
        const PoolGroup& g = pool.groups[gi];
        auto hw = ResolveHardware(PartJob(job, l, g, st.layers, g.network, g.gpus_per_node), catalog, cal);
        if (!hw.ok()) return Status::BadInput(g.where, hw.status().reason());
        if (hw->inter_bytes_per_s_per_gpu < slowest) slowest = hw->inter_bytes_per_s_per_gpu, network = g.network;
      }
    }
    StepBreakdown pace, after;
    for (const auto& [gi, n] : parts) {
      const PoolGroup& g = pool.groups[gi];
      // A stage spread over groups crosses nodes for its data-parallel traffic: its GPUs per node are the part's.
      const int64_t gpn = parts.size() > 1 ? std::min(g.gpus_per_node, n) : g.gpus_per_node;
      const Job pj = PartJob(job, l, g, st.layers, parts.size() > 1 ? network : g.network, gpn);
      auto hw = ResolveHardware(pj, catalog, cal);
      if (!hw.ok()) return Status::BadInput(g.where, hw.status().reason());
      const StepEstimate e = EstimateStep(pj, *hw);
      if (!e.feasible) return Status::BadInput(g.where, e.infeasible_reason);
      StagePart part;
      part.group = gi, part.gpus = n, part.replicas = std::max<int64_t>(1, n / (l.tp * l.cp));
      StepBreakdown b = e.breakdown;
      if (s != l.pp - 1) b.compute_s -= e.head_compute_s;  // the output layer is the last stage's alone (P§1)
      part.microbatch_s = (b.compute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s) / static_cast<double>(e.grad_accum);
      part.memory = EstimateMemoryForStage(pj, static_cast<int>(s), cal, false);
      part.capacity_bytes = hw->gpu.memory_bytes;
      part.fits = part.memory.total_bytes <= part.capacity_bytes;
      peak_sum += static_cast<double>(n) * e.peak_flops;
      const double after_s = b.pp_comm_s + b.dp_comm_s + b.data_s + b.optimizer_s + b.checkpoint_s + b.overhead_s;
      if (st.parts.empty() || part.microbatch_s > st.microbatch_s) {
        st.pacing_part = st.parts.size(), st.microbatch_s = part.microbatch_s, pace = b;
        pace.compute_s /= static_cast<double>(e.grad_accum);  // per micro-batch: the fill and drain share
        micro_batches = static_cast<double>(e.grad_accum);    // the same on every part (same batch, dp, micro-batch)
      }
      if (st.parts.empty() || after_s > st.after_s) st.after_s = after_s, after = b;
      if (!part.fits && out.fits) {
        out.fits = false;
        char buf[240];
        std::snprintf(buf, sizeof buf, "stage %lld on %s (%s) needs %.1f GiB per GPU; the card has %.1f GiB",
                      static_cast<long long>(s), g.name.c_str(), g.gpu.c_str(), part.memory.total_bytes / 1073741824.0,
                      part.capacity_bytes / 1073741824.0);
        out.not_fit_reason = buf;
      }
      st.parts.push_back(std::move(part));
    }
    pace_b.push_back(pace), after_b.push_back(after);
    out.stages.push_back(std::move(st));
  }
  // MX§3 the pipeline: m micro-batches at the slowest stage's pace, the other stages' fill and drain (1/v of it
  // interleaved), then the traffic and work after the last micro-batch of the stage with the most of it.
  size_t slow = 0, last = 0;
  for (size_t s = 0; s < out.stages.size(); ++s) {
    if (out.stages[s].microbatch_s > out.stages[slow].microbatch_s) slow = s;
    if (out.stages[s].after_s > out.stages[last].after_s) last = s;
  }
  double fill = 0;
  for (size_t s = 0; s < out.stages.size(); ++s)
    if (s != slow) fill += pace_b[s].compute_s;
  const StepBreakdown& p = pace_b[slow];
  const StepBreakdown& a = after_b[last];
  StepBreakdown& b = out.breakdown;
  b.compute_s = p.compute_s * micro_batches;
  b.tp_comm_s = p.tp_comm_s, b.cp_comm_s = p.cp_comm_s, b.ep_comm_s = p.ep_comm_s;
  b.bubble_s = fill / static_cast<double>(l.vpp);
  b.pp_comm_s = a.pp_comm_s, b.dp_comm_s = a.dp_comm_s, b.data_s = a.data_s, b.optimizer_s = a.optimizer_s;
  b.checkpoint_s = a.checkpoint_s, b.overhead_s = a.overhead_s;
  out.step_time_s = b.Total();
  out.tokens_per_step = static_cast<double>(job.training.global_batch) * static_cast<double>(job.training.seq_len);
  out.tokens_per_s = out.tokens_per_step / out.step_time_s;
  const double mflops = ModelFlopsPerToken(job.arch, job.training.seq_len, IsAdapterMethod(job.training.method));
  out.mfu = peak_sum > 0 ? out.tokens_per_s * mflops / peak_sum : 0;
  if (job.training.tokens > 0) out.time_to_train_s = job.training.tokens / out.tokens_per_s;
  // Prices and the placement, group by group.
  double per_hour = 0;
  bool priced = true;
  std::map<size_t, int64_t> used;
  for (const Run& r : runs) used[r.group] += r.count;
  for (const auto& [gi, n] : used) {
    if (!pool.groups[gi].price_per_gpu_hour) priced = false;
    else per_hour += static_cast<double>(n) * *pool.groups[gi].price_per_gpu_hour;
  }
  if (priced) {
    out.cost_per_hour_usd = per_hour;
    if (out.time_to_train_s > 0) out.cost_usd = per_hour * out.time_to_train_s / 3600;
  }
  for (size_t gi = 0; gi < pool.groups.size(); ++gi) {
    const int64_t idle = pool.groups[gi].GpusUsable() - (used.count(gi) ? used[gi] : 0);
    if (idle > 0)
      out.idle.push_back({gi, idle, used.count(gi) ? "the layout places " + Str(l.Gpus()) + " GPUs and needs no more of them"
                                                   : "not in the layout (tp x cp x dp x pp = " + Str(l.Gpus()) + " GPUs)"});
  }
  for (const StageEstimate& st : out.stages) {
    std::string line = "stage " + Str(st.stage) + ": " + Str(st.layers) + " blocks" +
                       (st.stage == 0 ? " + embedding" : "") + (st.stage == l.pp - 1 ? " + head" : "") + ", ranks " +
                       Str(st.stage * per_stage) + "-" + Str((st.stage + 1) * per_stage - 1) + " on ";
    for (size_t i = 0; i < st.parts.size(); ++i) {
      const PoolGroup& g = pool.groups[st.parts[i].group];
      line += (i ? " + " : "") + Str(st.parts[i].gpus) + " x " + g.gpu + " (" + g.name + ")";
    }
    out.placement.push_back(line);
  }
  return out;
}

}  // namespace gpuplan
