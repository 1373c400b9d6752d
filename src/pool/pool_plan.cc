// The planner over a mixed pool (docs/model/pools.md MX§6): enumerate the groups used, their GPUs and their order
// along the pipeline, tp, dp and the micro-batch; balance the layer split by each card's predicted micro-batch time
// under each card's memory; rank by step time, then cost per hour. Every stage part is priced exactly as
// EstimateOnPool prices it (PartJob + EstimateStep + EstimateMemoryForStage), through caches keyed by what the part
// depends on, so the search and the printed estimate agree.
#include "gpuplan/pool_plan.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "gpuplan/engines.h"
#include "gpuplan/error_bands.h"

namespace gpuplan {
namespace {

// Search bounds (MX§6.1), not model constants: every order of up to 4 used groups (the pools have at most
// four card types), and every node count of a group up to 8 nodes (a coarse ladder above).
constexpr size_t kMaxPermutedGroups = 4;
constexpr int64_t kEveryNodeCountUpTo = 8;

std::string Str(int64_t v) { return std::to_string(v); }
std::string Gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / 1073741824.0);
  return buf;
}
std::string Pct(double f) { return Str(static_cast<int64_t>(std::lround(100 * f))) + "%"; }

Location Where(const Job& job, const std::string& key) {
  auto it = job.set_keys.find(key);
  return it != job.set_keys.end() ? it->second : Location{job.source, 0, key};
}

// A cache key: up to 7 small integers (group, tp, dp, pp, blocks or stage, micro-batch, ...).
using Key = std::array<int64_t, 7>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// One stage part's time, as EstimateOnPool folds it (MX§3): the output layer's compute on the last stage only.
struct PartTime {
  bool ok = false;
  std::string why;             // EstimateStep's reason when it cannot price the part
  double microbatch_s = 0;     // compute + exposed tp/cp/ep per micro-batch: the stage's pace
  double fill_s = 0;           // compute per micro-batch: its share of the fill and drain
  double after_s = 0;          // pp/dp traffic, data, optimizer, checkpoint, fixed work after the last micro-batch
  double micro_batches = 1;
};

// The most blocks one stage holds on a card (the memory check with the headroom), and one block's need.
struct StageRoom {
  int64_t max_blocks = 0;
  double one_block_bytes = 0;
};

// What one group offers the search.
struct GroupInfo {
  bool usable = false;
  std::string why_not;         // the hardware could not be resolved for the job (no bf16 peak, ...)
  HardwareContext hw;
  int64_t cap_gpus = 0;        // usable GPUs, capped by options.group_gpus
  double headroom = 0;         // fraction of memory kept free
  std::string headroom_source;
  double budget_bytes = 0;     // capacity x (1 - headroom)
};

// A counted reason; the reason kept is the one of the candidate closest to passing (highest score).
struct Rejections {
  struct Entry {
    std::string code, reason;
    int64_t count = 0;
    double score = -std::numeric_limits<double>::infinity();
  };
  std::map<std::string, Entry> by_key;
  void Add(const std::string& code, const std::string& key, const std::string& reason, double score = 0, int64_t n = 1) {
    Entry& e = by_key[code + "\n" + key];
    e.code = code;
    e.count += n;
    if (score > e.score) e.score = score, e.reason = reason;
  }
  std::vector<Rejection> List() const {
    std::vector<Rejection> out;
    for (const auto& [k, e] : by_key) out.push_back({e.code, e.reason, e.count});
    return out;
  }
};

// One layout the search priced: groups in rank order with their GPUs, tp/dp/pp, split, micro-batch.
struct Candidate {
  std::vector<size_t> order;
  std::vector<int64_t> gpus;   // per entry of `order`
  int64_t tp = 1, dp = 1, pp = 1, micro_batch = 1;
  std::vector<int64_t> split;
  double step_s = 0;
  double cost_per_hour = 0;    // infinity when a used group is unpriced
  int64_t Gpus() const { return std::accumulate(gpus.begin(), gpus.end(), int64_t{0}); }
};

// The layout family being priced: tp, dp, micro-batch and the stages' groups in rank order.
struct Family {
  int64_t tp = 1, dp = 1, mb = 1, pp = 1;
  std::vector<size_t> order;
  std::vector<int64_t> gpus;
  std::vector<size_t> stage_group;  // pp entries
};

class Search {
 public:
  Search(const Job& base, const Pool& pool, const Catalog& catalog, const Calibration& cal, const PoolPlanOptions& options)
      : base_(base), pool_(pool), catalog_(catalog), cal_(cal), options_(options) {}

  Status Prepare();
  void Run();
  PoolPlanResult Finish(double search_s);

 private:
  // Enumeration (MX§6.1).
  std::vector<int64_t> TpChoices() const;
  std::vector<int64_t> DpChoices(int64_t tp) const;
  std::vector<int64_t> MicroBatches(int64_t dp) const;
  std::vector<int64_t> GroupCounts(size_t g, int64_t stage_gpus) const;
  void CountVectors(int64_t tp, int64_t dp, const std::vector<bool>& allowed);
  void Orders(int64_t tp, int64_t dp, const std::vector<int64_t>& counts);
  // Pricing one family (MX§6.2-§6.3).
  enum class Fit { kNo, kAtRoom, kFree };  // kFree: no stage of the split is at its memory room
  Fit Evaluate(Family& f, bool count_rejection);
  const PartTime& Time(size_t g, const Family& f, int64_t blocks, bool last);
  // The layout's own table of part times by (group, last stage or not, blocks), filled from the cache on first use.
  const PartTime& At(const Family& f, size_t g, int64_t blocks, bool last) {
    std::vector<const PartTime*>& row = table_[2 * g + (last ? 1 : 0)];
    if (static_cast<int64_t>(row.size()) <= blocks) row.resize(static_cast<size_t>(blocks) + 1, nullptr);
    const PartTime*& t = row[static_cast<size_t>(blocks)];
    if (!t) t = &Time(g, f, blocks, last);
    return *t;
  }
  StageRoom Room(size_t g, const Family& f, int64_t stage);
  double StepOf(const Family& f, const std::vector<int64_t>& split, bool* ok);
  bool Balance(Family& f, const std::vector<int64_t>& caps, std::vector<int64_t>& split);
  void Improve(Family& f, const std::vector<int64_t>& caps, std::vector<int64_t>& split, double& step);
  void RejectMemory(const Family& f, const std::vector<int64_t>& caps, const std::vector<StageRoom>& rooms);
  // Plans.
  Job PlanJob(const Candidate& c) const;
  PoolLayout LayoutOf(const Candidate& c) const;
  std::string IdleWhy(const Candidate& c, size_t g, int64_t used) const;
  std::string EngineNote(const PoolLayout& l) const;

  const Job& base_;
  const Pool& pool_;
  Catalog catalog_;
  const Calibration& cal_;
  const PoolPlanOptions& options_;
  std::vector<GroupInfo> groups_;
  int64_t max_gpus_ = 0;
  std::unordered_map<Key, PartTime, KeyHash> times_;
  std::unordered_map<Key, StageRoom, KeyHash> rooms_;
  void Keep(Candidate c);
  std::vector<Candidate> found_;  // the fastest candidates (bounded: Keep)
  // The fastest step among candidates that give group g exactly n GPUs: the idle cards' reasons.
  std::map<std::pair<size_t, int64_t>, double> best_by_count_;
  std::vector<std::vector<const PartTime*>> table_;
  std::vector<const PartTime*> step_parts_;  // StepOf's scratch  // per group: the current layout's part times by blocks
  Rejections rejections_;
  int64_t candidates_ = 0;
};

// ---- preparation: each group's hardware and memory budget, once ----

// The job a plan of tp `tp` runs: sequence parallel as pinned, or as the job's engine runs tp.
Job WithTp(const Job& base, int64_t tp) {
  Job j = base;
  j.parallel.tp = tp;
  const EngineCaps* e = EngineFor(base.training.framework);
  j.parallel.sequence_parallel = base.IsSet("parallel.sequence_parallel") || !e ? tp > 1 && base.parallel.sequence_parallel
                                                                                : EngineSequenceParallel(*e, tp);
  return j;
}

Status Search::Prepare() {
  catalog_ = WithPoolLinks(catalog_, pool_);
  max_gpus_ = options_.max_gpus > 0 ? options_.max_gpus : pool_.GpusUsable();
  if (base_.IsSet("cluster.num_gpus") && base_.cluster.num_gpus > 0) max_gpus_ = std::min(max_gpus_, base_.cluster.num_gpus);
  PoolLayout one;
  for (size_t g = 0; g < pool_.groups.size(); ++g) {
    const PoolGroup& pg = pool_.groups[g];
    GroupInfo info;
    info.cap_gpus = pg.GpusUsable();
    if (g < options_.group_gpus.size()) info.cap_gpus = std::min(info.cap_gpus, std::max<int64_t>(0, options_.group_gpus[g]));
    auto hw = ResolveHardware(PartJob(base_, one, pg, 1, pg.network, pg.gpus_per_node), catalog_, cal_);
    if (!hw.ok()) {
      info.why_not = hw.status().reason();
      rejections_.Add("hardware", pg.name, "group '" + pg.name + "' (" + pg.gpu + ") left out: " + info.why_not);
    } else {
      info.usable = true;
      info.hw = *hw;
      if (options_.headroom >= 0) {
        info.headroom = options_.headroom, info.headroom_source = "options";
      } else {
        const MemoryHeadroom h = MemoryHeadroomFor(base_, hw->gpu.family, cal_);
        info.headroom = h.fraction, info.headroom_source = h.source;
      }
      info.budget_bytes = hw->gpu.memory_bytes * (1 - info.headroom);
    }
    groups_.push_back(std::move(info));
  }
  return Status::Ok();
}

// ---- MX§6.1 the enumeration ----

std::vector<int64_t> Search::TpChoices() const {
  if (base_.IsSet("parallel.tp")) return {base_.parallel.tp};
  const Arch& a = base_.arch;
  int64_t widest = 1;
  for (const PoolGroup& g : pool_.groups) widest = std::max(widest, g.gpus_per_node);
  std::vector<int64_t> out;
  for (int64_t tp = 1; tp <= widest; ++tp) {
    if (a.heads % tp != 0 || (a.KvHeads() % tp != 0 && tp % a.KvHeads() != 0)) continue;
    bool some = false;
    for (const PoolGroup& g : pool_.groups) some |= g.gpus_per_node % tp == 0;
    if (some) out.push_back(tp);
  }
  return out;
}

std::vector<int64_t> Search::DpChoices(int64_t tp) const {
  if (base_.IsSet("parallel.dp")) return {base_.parallel.dp};
  std::vector<int64_t> out;
  const int64_t batch = base_.training.global_batch;
  for (int64_t dp = 1; tp * base_.parallel.cp * dp <= max_gpus_; ++dp)
    if (batch % dp == 0) out.push_back(dp);
  return out;
}

// Powers of two dividing the per-replica batch (smallest first), or the pinned micro-batch.
std::vector<int64_t> Search::MicroBatches(int64_t dp) const {
  const int64_t per_replica = base_.training.global_batch / dp;
  if (base_.IsSet("training.micro_batch")) {
    if (per_replica % base_.training.micro_batch == 0) return {base_.training.micro_batch};
    return {};
  }
  std::vector<int64_t> out;
  for (int64_t mb = 1; mb <= per_replica; mb *= 2)
    if (per_replica % mb == 0) out.push_back(mb);
  return out;
}

// The GPU counts a group may give (0 = unused): whole nodes, every count up to 8 nodes and a coarse ladder above
// (MX§6.1), each a whole number of stages; plus the most whole stages its cap holds when the cap is not whole nodes
// (that group must then be last in rank order: EstimateOnPool fills groups node by node).
std::vector<int64_t> Search::GroupCounts(size_t g, int64_t stage_gpus) const {
  const PoolGroup& pg = pool_.groups[g];
  const GroupInfo& info = groups_[g];
  std::vector<int64_t> out = {0};
  const int64_t nodes = info.cap_gpus / pg.gpus_per_node;
  std::vector<int64_t> ladder;
  for (int64_t n = 1; n <= nodes; ++n)
    if (n <= kEveryNodeCountUpTo || n == nodes || (n & (n - 1)) == 0 || n * 4 % nodes == 0) ladder.push_back(n);
  for (int64_t n : ladder)
    if (n * pg.gpus_per_node % stage_gpus == 0) out.push_back(n * pg.gpus_per_node);
  const int64_t partial = info.cap_gpus / stage_gpus * stage_gpus;
  if (partial > 0 && partial % pg.gpus_per_node != 0) out.push_back(partial);
  return out;
}

void Search::Run() {
  for (int64_t tp : TpChoices()) {
    std::vector<bool> allowed(pool_.groups.size(), false);
    for (size_t g = 0; g < pool_.groups.size(); ++g) {
      const PoolGroup& pg = pool_.groups[g];
      if (!groups_[g].usable || groups_[g].cap_gpus == 0) continue;
      if (pg.gpus_per_node % tp != 0) {
        rejections_.Add("tp_node", Str(tp) + " " + pg.name,
                        "tp " + Str(tp) + " does not divide the " + Str(pg.gpus_per_node) + " GPUs per node of " + pg.gpu +
                            " (group '" + pg.name + "'): a tensor-parallel group would span two nodes; the group sits out at tp " +
                            Str(tp));
        continue;
      }
      allowed[g] = true;
    }
    if (std::none_of(allowed.begin(), allowed.end(), [](bool b) { return b; })) continue;
    for (int64_t dp : DpChoices(tp)) CountVectors(tp, dp, allowed);
  }
}

// Every vector of per-group GPU counts (a whole number of stages each), then its orders.
void Search::CountVectors(int64_t tp, int64_t dp, const std::vector<bool>& allowed) {
  const int64_t stage_gpus = tp * base_.parallel.cp * dp;
  std::vector<std::vector<int64_t>> choices;
  for (size_t g = 0; g < pool_.groups.size(); ++g)
    choices.push_back(allowed[g] ? GroupCounts(g, stage_gpus) : std::vector<int64_t>{0});
  std::vector<size_t> at(choices.size(), 0);
  while (true) {
    std::vector<int64_t> counts;
    int64_t total = 0;
    for (size_t g = 0; g < choices.size(); ++g) counts.push_back(choices[g][at[g]]), total += counts.back();
    if (total > 0 && total <= max_gpus_) {
      const int64_t pp = total / stage_gpus;
      if (base_.IsSet("parallel.pp") && pp != base_.parallel.pp) {
        // a pinned pp: other stage counts are not candidates
      } else if (pp > base_.arch.layers) {
        rejections_.Add("pp_layers", "", "pp " + Str(pp) + " stages exceeds the " + Str(base_.arch.layers) +
                                             " blocks (a stage needs one): fewer GPUs per layout, or a larger tp or dp");
      } else {
        Orders(tp, dp, counts);
      }
    }
    size_t g = 0;
    while (g < at.size() && ++at[g] == choices[g].size()) at[g++] = 0;
    if (g == at.size()) break;
  }
}

// Every order of the used groups along the pipeline (at most 4! for four groups) at each micro-batch from the
// smallest up until memory stops it. A part's time depends on its position only through the output layer (the last
// stage's), and its memory room on the position: when an order balances without any stage at its room, no other order
// ending on the same group can do better, and those are skipped (they would be the same plan).
void Search::Orders(int64_t tp, int64_t dp, const std::vector<int64_t>& counts) {
  std::vector<size_t> used;
  for (size_t g = 0; g < counts.size(); ++g)
    if (counts[g] > 0) used.push_back(g);
  const int64_t stage_gpus = tp * base_.parallel.cp * dp;
  // More groups than kMaxPermutedGroups: the pool's order and its reverse only (5 groups would be 120 orders).
  std::vector<std::vector<size_t>> all;
  if (used.size() > kMaxPermutedGroups) {
    all = {used, std::vector<size_t>(used.rbegin(), used.rend())};
  } else {
    std::vector<size_t> order = used;
    do all.push_back(order);
    while (std::next_permutation(order.begin(), order.end()));
  }
  std::vector<std::vector<size_t>> orders;
  for (const std::vector<size_t>& order : all) {
    // A group given part of a node must be last (ranks fill groups node by node).
    bool ok = true;
    for (size_t i = 0; i + 1 < order.size(); ++i) ok &= counts[order[i]] % pool_.groups[order[i]].gpus_per_node == 0;
    if (ok) orders.push_back(order);
  }
  const std::vector<int64_t> mbs = MicroBatches(dp);
  if (mbs.empty())
    rejections_.Add("batch", Str(dp), "micro-batch " + Str(base_.training.micro_batch) + " does not divide the per-replica batch " +
                                          Str(base_.training.global_batch / dp) + " at dp " + Str(dp));
  for (size_t i = 0; i < mbs.size(); ++i) {
    bool any_fit = false;
    std::vector<size_t> settled;  // last groups of orders that balanced with room to spare
    for (const std::vector<size_t>& o : orders) {
      if (std::find(settled.begin(), settled.end(), o.back()) != settled.end()) continue;
      Family f;
      f.tp = tp, f.dp = dp, f.mb = mbs[i];
      for (size_t g : o) {
        f.order.push_back(g), f.gpus.push_back(counts[g]);
        for (int64_t st = 0; st < counts[g] / stage_gpus; ++st) f.stage_group.push_back(g);
      }
      f.pp = static_cast<int64_t>(f.stage_group.size());
      ++candidates_;
      // The smallest micro-batch that does not fit rejects the layout; a larger one only ends the ladder (memory grows
      // with the micro-batch).
      const Fit fit = Evaluate(f, i == 0);
      any_fit |= fit != Fit::kNo;
      if (fit == Fit::kFree) settled.push_back(o.back());
    }
    if (!any_fit) break;
  }
}

// ---- MX§6.2 pricing a stage part, cached ----

const PartTime& Search::Time(size_t g, const Family& f, int64_t blocks, bool last) {
  const Key key{static_cast<int64_t>(g), f.tp, f.dp, f.pp, blocks, f.mb, last ? 1 : 0};
  auto it = times_.find(key);
  if (it != times_.end()) return it->second;
  PoolLayout l;
  l.tp = f.tp, l.cp = base_.parallel.cp, l.dp = f.dp, l.pp = f.pp, l.vpp = 1, l.micro_batch = f.mb;
  const PoolGroup& pg = pool_.groups[g];
  const Job pj = PartJob(WithTp(base_, f.tp), l, pg, blocks, pg.network, pg.gpus_per_node);
  const StepEstimate e = EstimateStep(pj, groups_[g].hw);
  PartTime t;
  t.ok = e.feasible;
  t.why = e.infeasible_reason;
  StepBreakdown b = e.breakdown;
  if (!last) b.compute_s -= e.head_compute_s;  // the output layer is the last stage's alone (P§1)
  const double m = static_cast<double>(e.grad_accum);
  t.micro_batches = m;
  t.microbatch_s = (b.compute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s) / m;
  t.fill_s = b.compute_s / m;
  t.after_s = b.pp_comm_s + b.dp_comm_s + b.data_s + b.optimizer_s + b.checkpoint_s + b.overhead_s;
  return times_.emplace(key, std::move(t)).first->second;
}

// The most blocks stage `stage` holds on group g (binary search: memory grows with the blocks).
StageRoom Search::Room(size_t g, const Family& f, int64_t stage) {
  const Key key{static_cast<int64_t>(g), f.tp, f.dp, f.pp, stage, f.mb, 1};
  auto it = rooms_.find(key);
  if (it != rooms_.end()) return it->second;
  PoolLayout l;
  l.tp = f.tp, l.cp = base_.parallel.cp, l.dp = f.dp, l.pp = f.pp, l.vpp = 1, l.micro_batch = f.mb;
  const PoolGroup& pg = pool_.groups[g];
  const Job with_tp = WithTp(base_, f.tp);
  auto bytes = [&](int64_t blocks) {
    const Job pj = PartJob(with_tp, l, pg, blocks, pg.network, pg.gpus_per_node);
    return EstimateMemoryForStage(pj, static_cast<int>(stage), cal_, false).total_bytes;
  };
  StageRoom r;
  r.one_block_bytes = bytes(1);
  const double budget = groups_[g].budget_bytes;
  if (r.one_block_bytes <= budget) {
    int64_t lo = 1, hi = base_.arch.layers - (f.pp - 1);  // every other stage keeps one
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (bytes(mid) <= budget) lo = mid;
      else hi = mid - 1;
    }
    r.max_blocks = lo;
  }
  return rooms_.emplace(key, r).first->second;
}

// MX§3 as EstimateOnPool folds it: m micro-batches at the slowest stage's pace, the others' fill and drain, then the
// work after the last micro-batch of the stage with the most of it.
double Search::StepOf(const Family& f, const std::vector<int64_t>& split, bool* ok) {
  size_t slow = 0, last = 0;
  std::vector<const PartTime*>& t = step_parts_;
  t.resize(split.size());
  for (size_t s = 0; s < split.size(); ++s) {
    t[s] = &At(f, f.stage_group[s], split[s], s + 1 == split.size());
    if (!t[s]->ok) {
      *ok = false;
      return 0;
    }
    if (t[s]->microbatch_s > t[slow]->microbatch_s) slow = s;
    if (t[s]->after_s > t[last]->after_s) last = s;
  }
  double fill = 0;
  for (size_t s = 0; s < split.size(); ++s)
    if (s != slow) fill += t[s]->fill_s;
  *ok = true;
  return t[slow]->microbatch_s * t[slow]->micro_batches + fill + t[last]->after_s;
}

// MX§6.3 the split: one block per stage, then each further block to the stage whose micro-batch time after taking it
// is the smallest (ties: the smaller increase, then the earlier stage), within each stage's memory room. With time
// increasing in blocks this minimises the slowest stage's time (water-filling; AMP and Metis balance stages by
// predicted time the same way).
bool Search::Balance(Family& f, const std::vector<int64_t>& caps, std::vector<int64_t>& split) {
  split.assign(static_cast<size_t>(f.pp), 1);
  for (int64_t left = base_.arch.layers - f.pp; left > 0; --left) {
    size_t best = split.size();
    double best_t = 0, best_inc = 0;
    for (size_t s = 0; s < split.size(); ++s) {
      if (split[s] >= caps[s]) continue;
      const bool last = s + 1 == split.size();
      const PartTime& next = At(f, f.stage_group[s], split[s] + 1, last);
      if (!next.ok) continue;
      const double inc = next.microbatch_s - At(f, f.stage_group[s], split[s], last).microbatch_s;
      if (best == split.size() || next.microbatch_s < best_t || (next.microbatch_s == best_t && inc < best_inc))
        best = s, best_t = next.microbatch_s, best_inc = inc;
    }
    if (best == split.size()) return false;
    ++split[best];
  }
  return true;
}

// Single-block moves between groups while the step (the full fold, not only the pace) gets shorter. The step depends
// only on how many stages of each group hold how many blocks and on the last stage (the output layer's), so one stage
// per (group, last, blocks) class is tried as the giver and one with memory room per class as the taker: every move
// between groups, in a few evaluations.
void Search::Improve(Family& f, const std::vector<int64_t>& caps, std::vector<int64_t>& split, double& step) {
  if (f.order.size() < 2) return;
  // (group, last stage or not, blocks) -> one stage of that class
  using Class = std::tuple<size_t, bool, int64_t>;
  std::vector<std::pair<Class, size_t>> givers, takers;
  auto add = [](std::vector<std::pair<Class, size_t>>& v, Class cls, size_t s) {
    for (const auto& [c, _] : v)
      if (c == cls) return;
    v.push_back({cls, s});
  };
  for (int64_t round = 0; round < base_.arch.layers; ++round) {
    givers.clear(), takers.clear();
    for (size_t s = 0; s < split.size(); ++s) {
      const Class cls{f.stage_group[s], s + 1 == split.size(), split[s]};
      if (split[s] > 1) add(givers, cls, s);
      if (split[s] < caps[s]) add(takers, cls, s);
    }
    double best = step;
    size_t from = 0, to = 0;
    for (const auto& [gc, i] : givers)
      for (const auto& [tc, j] : takers) {
        if (std::get<0>(gc) == std::get<0>(tc)) continue;
        --split[i], ++split[j];
        bool ok = false;
        const double t = StepOf(f, split, &ok);
        ++split[i], --split[j];
        if (ok && t < best * (1 - 1e-12)) best = t, from = i, to = j;
      }
    if (best >= step) return;
    --split[from], ++split[to];
    step = best;
  }
}

void Search::RejectMemory(const Family& f, const std::vector<int64_t>& caps, const std::vector<StageRoom>& rooms) {
  const int64_t layers = base_.arch.layers;
  const int64_t room = std::accumulate(caps.begin(), caps.end(), int64_t{0});
  // The card to name: a stage that cannot hold one block, else the card whose stages hold the fewest.
  size_t worst = 0;
  for (size_t s = 0; s < caps.size(); ++s)
    if (caps[s] < caps[worst]) worst = s;
  const size_t g = f.stage_group[worst];
  const PoolGroup& pg = pool_.groups[g];
  const GroupInfo& info = groups_[g];
  const std::string card = pg.gpu + " (" + Gib(info.hw.gpu.memory_bytes) + ", " + Pct(info.headroom) + " kept free)";
  const std::string where = " (closest: tp " + Str(f.tp) + ", dp " + Str(f.dp) + ", pp " + Str(f.pp) + ", micro-batch " +
                            Str(f.mb) + ")";
  std::string reason;
  if (caps[worst] < 1)
    reason = "out of memory on " + card + " at any split: one block on stage " + Str(static_cast<int64_t>(worst)) + " needs " +
             Gib(rooms[worst].one_block_bytes) + " per GPU" + where;
  else
    reason = "out of memory on " + card + " at any split: " + Str(layers) + " blocks over " + Str(f.pp) + (f.pp == 1 ? " stage need " : " stages need ") +
             Str((layers + f.pp - 1) / f.pp) + " per stage; a stage on it holds at most " + Str(caps[worst]) + where;
  // Closest to fitting: the most blocks held per block needed; when a stage cannot hold one, the least need per budget.
  double score = static_cast<double>(room) / static_cast<double>(layers);
  if (caps[worst] < 1) score = -rooms[worst].one_block_bytes / info.budget_bytes;
  rejections_.Add("memory", pg.name, reason, score);
}

// One family at one micro-batch: the rooms, the balanced split, its step. False when it does not fit.
Search::Fit Search::Evaluate(Family& f, bool count_rejection) {
  table_.assign(2 * pool_.groups.size(), {});
  std::vector<int64_t> caps(static_cast<size_t>(f.pp));
  std::vector<StageRoom> rooms(caps.size());
  int64_t room = 0;
  bool one_each = true;
  for (size_t s = 0; s < caps.size(); ++s) {
    rooms[s] = Room(f.stage_group[s], f, static_cast<int64_t>(s));
    caps[s] = rooms[s].max_blocks;
    room += caps[s];
    one_each &= caps[s] >= 1;
  }
  if (!one_each || room < base_.arch.layers) {
    if (count_rejection) RejectMemory(f, caps, rooms);
    return Fit::kNo;
  }
  std::vector<int64_t> split;
  bool ok = Balance(f, caps, split);
  double step = ok ? StepOf(f, split, &ok) : 0;
  if (!ok) {
    const PartTime& t = Time(f.stage_group[0], f, 1, f.pp == 1);
    if (count_rejection) rejections_.Add("model", t.why, t.why.empty() ? "the model cannot price a stage of this layout" : t.why);
    return Fit::kNo;
  }
  Improve(f, caps, split, step);
  bool at_room = false;
  for (size_t s = 0; s < split.size(); ++s) at_room |= split[s] >= caps[s];
  Candidate c;
  c.order = f.order, c.gpus = f.gpus, c.tp = f.tp, c.dp = f.dp, c.pp = f.pp, c.micro_batch = f.mb;
  c.split = split;
  c.step_s = step;
  for (size_t i = 0; i < c.order.size(); ++i) {
    const auto& price = pool_.groups[c.order[i]].price_per_gpu_hour;
    c.cost_per_hour += price ? *price * static_cast<double>(c.gpus[i]) : std::numeric_limits<double>::infinity();
  }
  Keep(std::move(c));
  return at_room ? Fit::kAtRoom : Fit::kFree;
}

// ---- plans ----

// Candidates are kept by step (then cost) up to kKeptPerPlan x top (room for the orders of one plan that Finish folds
// into one); every candidate still counts into the per-group bests behind the idle cards' reasons.
constexpr int64_t kKeptPerPlan = 32;
bool Faster(const Candidate& a, const Candidate& b) {
  if (a.step_s != b.step_s) return a.step_s < b.step_s;
  return a.cost_per_hour < b.cost_per_hour;
}

void Search::Keep(Candidate c) {
  for (size_t i = 0; i < c.order.size(); ++i) {
    auto [it, fresh] = best_by_count_.emplace(std::make_pair(c.order[i], c.gpus[i]), c.step_s);
    if (!fresh) it->second = std::min(it->second, c.step_s);
  }
  const size_t keep = static_cast<size_t>(std::max<int64_t>(1, options_.top) * kKeptPerPlan);
  found_.push_back(std::move(c));
  if (found_.size() >= 2 * keep) {
    std::stable_sort(found_.begin(), found_.end(), Faster);
    found_.resize(keep);
  }
}

Job Search::PlanJob(const Candidate& c) const {
  Job j = WithTp(base_, c.tp);
  j.parallel.dp = c.dp, j.parallel.pp = c.pp, j.parallel.vpp = 1;
  j.parallel.layer_split = c.split;
  j.training.micro_batch = c.micro_batch;
  j.cluster.num_gpus = c.Gpus();
  return j;
}

PoolLayout Search::LayoutOf(const Candidate& c) const {
  PoolLayout l;
  l.order = c.order;
  for (size_t i = 0; i < c.order.size(); ++i) {
    const int64_t gpn = pool_.groups[c.order[i]].gpus_per_node;
    l.nodes.push_back((c.gpus[i] + gpn - 1) / gpn);
  }
  l.tp = c.tp, l.cp = base_.parallel.cp, l.dp = c.dp, l.pp = c.pp, l.vpp = 1;
  l.layer_split = c.split;
  l.micro_batch = c.micro_batch;
  return l;
}

// Why `used` of group g's usable GPUs is all this plan takes, in words a user can act on.
std::string Search::IdleWhy(const Candidate& c, size_t g, int64_t used) const {
  const PoolGroup& pg = pool_.groups[g];
  const GroupInfo& info = groups_[g];
  if (!info.usable) return "cannot run the job: " + info.why_not;
  if (info.cap_gpus <= used) return "held back by the search's per-group limit (" + Str(info.cap_gpus) + " GPUs)";
  if (c.Gpus() >= max_gpus_) return "the job may use at most " + Str(max_gpus_) + " GPUs of the pool";
  if (pg.gpus_per_node % c.tp != 0)
    return "this plan's tp " + Str(c.tp) + " does not divide its " + Str(pg.gpus_per_node) + " GPUs per node";
  double better = std::numeric_limits<double>::infinity();
  for (auto it = best_by_count_.lower_bound({g, used + 1}); it != best_by_count_.end() && it->first.first == g; ++it)
    better = std::min(better, it->second);
  char buf[200];
  if (std::isfinite(better)) {
    std::snprintf(buf, sizeof buf, "using more of them is slower: the best layout that does takes %.3f s per step (this plan %.3f s)",
                  better, c.step_s);
    return buf;
  }
  return "no layout that uses more of them fits in memory or fills whole stages of tp x cp x dp GPUs (see rejected)";
}

// MX§6.5 whether stock Megatron-LM runs the layout (tp, cp, dp uniform by construction; uneven stages by its options).
std::string Search::EngineNote(const PoolLayout& l) const {
  const std::vector<int64_t>& s = l.layer_split;
  const bool even = std::all_of(s.begin(), s.end(), [&](int64_t n) { return n == s.front(); });
  if (even) return "stock Megatron-LM: yes (uniform tp/dp, even stages)";
  bool middle_even = true;
  for (size_t i = 1; i + 1 < s.size(); ++i) middle_even &= s[i] == s[1];
  if (middle_even)
    return "stock Megatron-LM: yes, with --decoder-first-pipeline-num-layers " + Str(s.front()) +
           " --decoder-last-pipeline-num-layers " + Str(s.back());
  std::string layout = "E";
  for (size_t i = 0; i < s.size(); ++i) layout += (i ? "|" : "") + std::string("t*") + Str(s[i]);
  return "stock Megatron-LM: yes, with --pipeline-model-parallel-layout \"" + layout + "L\" (experimental in Megatron-Core)";
}

PoolPlanResult Search::Finish(double search_s) {
  std::stable_sort(found_.begin(), found_.end(), Faster);
  PoolPlanResult out;
  std::vector<std::string> seen;
  for (const Candidate& c : found_) {
    if (static_cast<int64_t>(out.plans.size()) >= std::max<int64_t>(1, options_.top)) break;
    // Orders of the same groups that give the same step are one plan (the first, in the pool's order).
    std::vector<std::pair<size_t, int64_t>> used;
    for (size_t i = 0; i < c.order.size(); ++i) used.push_back({c.order[i], c.gpus[i]});
    std::sort(used.begin(), used.end());
    std::string key = Str(c.tp) + "/" + Str(c.dp) + "/" + Str(c.micro_batch) + "/";
    for (const auto& [g, n] : used) key += Str(static_cast<int64_t>(g)) + ":" + Str(n) + ",";
    char step[40];
    std::snprintf(step, sizeof step, "%.9g", c.step_s);
    key += step;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    PoolPlan p;
    p.job = PlanJob(c);
    auto est = EstimateOnPool(p.job, pool_, LayoutOf(c), catalog_, cal_);
    if (!est.ok()) {
      rejections_.Add("model", est.status().reason(), est.status().reason());
      continue;
    }
    p.estimate = std::move(*est);
    for (IdleCards& idle : p.estimate.idle) {
      int64_t used_g = 0;
      for (size_t i = 0; i < c.order.size(); ++i)
        if (c.order[i] == idle.group) used_g = c.gpus[i];
      idle.why = IdleWhy(c, idle.group, used_g);
    }
    p.engine_note = EngineNote(p.estimate.layout);
    out.plans.push_back(std::move(p));
  }
  out.rejections = rejections_.List();
  out.candidates = candidates_;
  out.search_s = search_s;
  return out;
}

}  // namespace

Result<PoolPlanResult> PlanOnPool(const Job& job, const Pool& pool, const Catalog& catalog, const Calibration& cal,
                                  const PoolPlanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (pool.groups.empty()) return Status::BadInput({pool.file, 0, "groups"}, "the pool has no groups");
  if (job.training.global_batch <= 0)
    return Status::BadInput(Where(job, "training.global_batch"),
                            "the pool planner needs training.global_batch (sequences per optimizer step) so layouts are "
                            "compared at the same batch");
  if (job.IsSet("parallel.vpp") && job.parallel.vpp > 1)
    return Status::BadInput(Where(job, "parallel.vpp"),
                            "uneven stages with interleaving (vpp > 1) are not modelled; the pool planner needs parallel.vpp 1");
  // The job as every layout shares it: validated once at tp = pp = dp = 1 (layouts are checked as they are built).
  Job base = job;
  base.parallel.layer_split.clear();
  base.parallel.tp = 1, base.parallel.pp = 1, base.parallel.dp = 1, base.parallel.vpp = 1;
  base.parallel.sequence_parallel = false;
  base.cluster.num_gpus = 0;
  if (Status st = FinalizeJob(base); !st.ok()) return st;
  base.parallel = job.parallel;  // pins stay as given; each layout sets its own values
  base.parallel.layer_split.clear();
  base.parallel.vpp = 1;
  base.parallel.cp = std::max<int64_t>(1, job.parallel.cp);
  base.cluster.num_gpus = job.cluster.num_gpus;
  if (job.IsSet("parallel.tp") && (job.arch.heads % job.parallel.tp != 0))
    return Status::BadInput(Where(job, "parallel.tp"), "tp " + Str(job.parallel.tp) + " does not divide the " +
                                                           Str(job.arch.heads) + " heads");
  if (job.IsSet("parallel.dp") && job.training.global_batch % job.parallel.dp != 0)
    return Status::BadInput(Where(job, "parallel.dp"), "dp " + Str(job.parallel.dp) + " does not divide the global batch " +
                                                           Str(job.training.global_batch));
  // As PlanJob: a calibration that holds the built-in values is the built-in one, whose constants the memory model
  // resolves once (the fleet and the CLI pass a loaded copy even without --calibration).
  const Calibration& search_cal = cal.values() == Calibration::Builtin().values() ? Calibration::Builtin() : cal;
  Search search(base, pool, catalog, search_cal, options);
  if (Status st = search.Prepare(); !st.ok()) return st;
  search.Run();
  const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return search.Finish(search_s);
}

}  // namespace gpuplan
