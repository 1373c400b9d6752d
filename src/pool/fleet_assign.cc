// The fleet's policies (docs/fleet.md "The assignment", "The baseline", "Simulation"): arrivals and completions
// replayed in time order; at each event the waiting jobs get free cards. The heterogeneity-aware policy: serving
// first, deadline jobs in earliest-deadline order, the rest by marginal useful throughput. The baseline: first come,
// first served, type-blind. Running jobs keep their cards until they end (no preemption, no resizing).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "fleet_eval.h"

namespace gpuplan {
namespace {

using fleet::Counts;
using fleet::Evaluator;
using fleet::ServeEval;
using fleet::TrainEval;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSecondsPerHour = 3600;

std::string Str(int64_t v) { return std::to_string(v); }
std::string Hours(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g h", s / kSecondsPerHour);
  return buf;
}

struct Instance {
  size_t job = 0;
  std::string name;
  double arrival_s = 0, tokens = 0, deadline_s = 0;  // deadline_s: 0 = none (seconds after arrival)
  int64_t ask = 0;                                   // the baseline's request (cards)
};

// One replay: the free cards, what each instance holds, and its assignment.
struct Sim {
  Evaluator& ev;
  const Fleet& fleet;
  const std::vector<Instance>& inst;
  Counts free;
  std::vector<Counts> held;
  std::vector<FleetAssignment> out;
  std::vector<bool> placed, done;
};

bool Serving(const Sim& s, size_t i) { return s.fleet.jobs[s.inst[i].job].kind == FleetJobKind::kServing; }
int64_t Priority(const Sim& s, size_t i) { return s.fleet.jobs[s.inst[i].job].priority; }

void Start(Sim& s, size_t i, const Counts& c, double t, double time_s, double tokens_per_s, const std::string& layout,
           const std::vector<std::string>& placement) {
  FleetAssignment& a = s.out[i];
  a.gpus = fleet::ToGpus(c);
  a.start_s = t;
  a.time_s = time_s;
  a.end_s = t + time_s;
  a.tokens_per_s = tokens_per_s;
  a.layout = layout;
  a.placement = placement;
  for (size_t g = 0; g < c.size(); ++g) s.free[g] -= c[g];
  s.held[i] = c;
  s.placed[i] = true;
}

// A training job holds the cards its layout uses (the policy) or all it took (the baseline: it asked for them).
void StartTraining(Sim& s, size_t i, const Counts& c, double t, const TrainEval& e) {
  Start(s, i, c, t, s.inst[i].tokens / e.tokens_per_s, e.tokens_per_s, e.layout, e.placement);
}

// ---- the policy -------------------------------------------------------------------------------------------------

// (a) a serving job: on each group, the fewest cards meeting the SLA; the best value among groups (the lowest price
// per hour where every candidate is priced, then the fewest cards).
bool PlaceServing(Sim& s, size_t i, double t) {
  std::optional<ServeEval> best;
  std::string why;
  for (size_t g = 0; g < s.free.size(); ++g) {
    if (s.free[g] == 0) continue;
    ServeEval e = s.ev.ServeOnGroup(s.inst[i].job, g, s.free[g]);
    if (!e.ok) {
      why += (why.empty() ? "" : "; ") + s.fleet.pool.groups[g].name + ": " + e.why;
      continue;
    }
    auto key = [&](const ServeEval& x) {
      Counts c(s.free.size(), 0);
      c[static_cast<size_t>(x.group)] = x.gpus;
      return std::make_pair(s.ev.UsdPerHour(c).value_or(kInf), x.gpus);
    };
    if (!best || key(e) < key(*best)) best = e;
  }
  if (!best) {
    s.out[i].note = "no free cards meet its load and SLA (" + (why.empty() ? std::string("no card is free") : why) + ")";
    return false;
  }
  Counts c(s.free.size(), 0);
  c[static_cast<size_t>(best->group)] = best->gpus;
  Start(s, i, c, t, 0, best->output_tokens_per_s, best->layout, {});
  s.out[i].note.clear();
  return true;
}

// Allocations tried for a training job on the free cards: each group alone (1, 2, 4, ... cards within a node, then
// whole nodes), the free cards of any two groups together, and those of the fastest 2, 3, ... groups together.
std::vector<Counts> Candidates(const Sim& s, size_t job) {
  const size_t n = s.free.size();
  std::vector<Counts> out;
  for (size_t g = 0; g < n; ++g) {
    const int64_t per = s.fleet.pool.groups[g].gpus_per_node, f = s.free[g];
    std::set<int64_t> sizes;
    for (int64_t k = 1; k < per && k <= f; k *= 2) sizes.insert(k);
    if (f > 0 && f < per) sizes.insert(f);
    for (int64_t k = per; k <= f; k += per) sizes.insert(k);
    for (int64_t k : sizes) {
      Counts c(n, 0);
      c[g] = k;
      out.push_back(c);
    }
  }
  std::vector<size_t> order(n);
  for (size_t g = 0; g < n; ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.ev.CardPeak(job, a) > s.ev.CardPeak(job, b); });
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      if (s.free[a] == 0 || s.free[b] == 0) continue;
      Counts c(n, 0);
      for (size_t g : {a, b}) {
        const int64_t per = s.fleet.pool.groups[g].gpus_per_node, f = s.free[g];
        c[g] = f > per ? f - f % per : f;
      }
      out.push_back(c);
    }
  Counts acc(n, 0);
  int used = 0;
  for (size_t g : order) {
    const int64_t per = s.fleet.pool.groups[g].gpus_per_node, f = s.free[g];
    if (f == 0) continue;
    acc[g] = f > per ? f - f % per : f;
    if (++used >= 2) out.push_back(acc);
  }
  return out;
}

// (b) a deadline job: the smallest allocation (price per hour, then cards) whose best layout ends by the deadline.
bool PlaceDeadline(Sim& s, size_t i, double t) {
  const Instance& in = s.inst[i];
  std::vector<Counts> cands = Candidates(s, in.job);
  std::stable_sort(cands.begin(), cands.end(), [&](const Counts& a, const Counts& b) {
    return std::make_pair(s.ev.UsdPerHour(a).value_or(kInf), fleet::Total(a)) <
           std::make_pair(s.ev.UsdPerHour(b).value_or(kInf), fleet::Total(b));
  });
  double fastest = kInf;
  for (const Counts& c : cands) {
    const TrainEval& e = s.ev.Train(in.job, c);
    if (!e.ok) continue;
    const double time_s = in.tokens / e.tokens_per_s;
    fastest = std::min(fastest, time_s);
    if (t + time_s <= in.arrival_s + in.deadline_s) {
      StartTraining(s, i, e.used, t, e);
      return true;
    }
  }
  // Why not: the fastest of the free cards, and the whole pool.
  Counts all(s.free.size(), 0);
  for (size_t g = 0; g < all.size(); ++g) all[g] = s.fleet.pool.groups[g].GpusUsable();
  const TrainEval& whole = s.ev.Train(in.job, all);
  std::string why = "deadline " + Hours(in.deadline_s) + " from its arrival; ";
  why += fastest < kInf ? "the fastest allocation of the free cards takes " + Hours(fastest)
                        : std::string("no allocation of the free cards runs it");
  if (t > in.arrival_s) why += " and it waited " + Hours(t - in.arrival_s);
  why += whole.ok ? "; the whole pool (" + Str(s.fleet.pool.GpusUsable()) + " cards) would take " + Hours(in.tokens / whole.tokens_per_s)
                  : "; it does not run on the whole pool either (" + whole.why + ")";
  s.out[i].note = why;
  return false;
}

// An allocation grown by `add` (cards per group): nullopt when a group's cards would not be whole nodes.
std::optional<Counts> Grown(const Sim& s, const Counts& c, const Counts& add) {
  Counts next = c;
  for (size_t g = 0; g < c.size(); ++g) next[g] += add[g];
  if (next == c || !fleet::ValidShape(s.fleet.pool, next)) return std::nullopt;
  return next;
}

// (c) the rest: each job in priority order first at its smallest allocation that runs (cards, then price), then,
// step by step, the candidate allocation of the free cards (Candidates) that adds the most useful throughput per
// card to one job's allocation, until no step adds any.
void PlaceRest(Sim& s, std::vector<size_t>& rest, double t) {
  std::vector<std::pair<size_t, Counts>> got;
  for (size_t i : rest) {
    std::vector<Counts> cands = Candidates(s, s.inst[i].job);
    std::stable_sort(cands.begin(), cands.end(), [&](const Counts& a, const Counts& b) {
      return std::make_pair(fleet::Total(a), s.ev.UsdPerHour(a).value_or(kInf)) <
             std::make_pair(fleet::Total(b), s.ev.UsdPerHour(b).value_or(kInf));
    });
    std::string why = "no free cards";
    for (const Counts& c : cands) {
      const TrainEval& e = s.ev.Train(s.inst[i].job, c);
      if (!e.ok) {
        why = e.why;
        continue;
      }
      for (size_t g = 0; g < c.size(); ++g) s.free[g] -= e.used[g];
      got.push_back({i, e.used});
      break;
    }
    if (got.empty() || got.back().first != i)
      s.out[i].note = (s.out[i].note.empty() ? "" : s.out[i].note + "; ") + "waits for cards (" + why + ")";
  }
  // Each step hands a job more cards than it holds, so the loop ends within the pool's cards.
  for (;;) {
    double best_gain = 0;
    size_t best_k = 0;
    Counts best_next;
    for (size_t k = 0; k < got.size(); ++k) {
      const auto& [i, c] = got[k];
      const double now = s.ev.UsefulFlops(s.inst[i].job, s.ev.Train(s.inst[i].job, c).tokens_per_s);
      for (const Counts& add : Candidates(s, s.inst[i].job)) {
        auto next = Grown(s, c, add);
        if (!next) continue;
        const TrainEval& e = s.ev.Train(s.inst[i].job, *next);
        // A plan that holds no more cards than now is no step (and could cycle): each step must grow the job.
        if (!e.ok || fleet::Total(e.used) <= fleet::Total(c)) continue;
        const double gain = (s.ev.UsefulFlops(s.inst[i].job, e.tokens_per_s) - now) / static_cast<double>(fleet::Total(add));
        if (gain > best_gain) best_gain = gain, best_k = k, best_next = e.used;
      }
    }
    if (best_gain <= 0) break;
    Counts& c = got[best_k].second;
    for (size_t g = 0; g < c.size(); ++g) s.free[g] -= best_next[g] - c[g];
    c = best_next;
  }
  for (const auto& [i, c] : got) {
    for (size_t g = 0; g < c.size(); ++g) s.free[g] += c[g];  // Start takes them again
    const TrainEval& e = s.ev.Train(s.inst[i].job, c);
    StartTraining(s, i, e.used, t, e);
  }
}

void PolicyRound(Sim& s, std::vector<size_t>& waiting, double t) {
  auto by_priority = [&](size_t a, size_t b) {
    return std::make_pair(-Priority(s, a), s.inst[a].arrival_s) < std::make_pair(-Priority(s, b), s.inst[b].arrival_s);
  };
  std::vector<size_t> serving, deadline, rest;
  for (size_t i : waiting) {
    s.out[i].note.clear();  // each round says afresh why a job still waits
    (Serving(s, i) ? serving : s.inst[i].deadline_s > 0 ? deadline : rest).push_back(i);
  }
  std::stable_sort(serving.begin(), serving.end(), by_priority);
  for (size_t i : serving) PlaceServing(s, i, t);
  std::stable_sort(deadline.begin(), deadline.end(), [&](size_t a, size_t b) {
    return std::make_pair(s.inst[a].arrival_s + s.inst[a].deadline_s, -Priority(s, a)) <
           std::make_pair(s.inst[b].arrival_s + s.inst[b].deadline_s, -Priority(s, b));
  });
  for (size_t i : deadline)
    if (!PlaceDeadline(s, i, t)) rest.push_back(i);
  std::stable_sort(rest.begin(), rest.end(), by_priority);
  PlaceRest(s, rest, t);
  std::erase_if(waiting, [&](size_t i) { return s.placed[i]; });
}

// ---- the baseline -----------------------------------------------------------------------------------------------

// The asked cards from the groups in the order listed, whatever their type (whole nodes past one node).
std::optional<Counts> TakeInOrder(const Sim& s, int64_t ask) {
  Counts c(s.free.size(), 0);
  for (size_t g = 0; g < c.size() && ask > 0; ++g) {
    const int64_t per = s.fleet.pool.groups[g].gpus_per_node;
    int64_t n = std::min(s.free[g], ask);
    if (n > per) n -= n % per;
    c[g] = n;
    ask -= n;
  }
  if (ask > 0) return std::nullopt;
  return c;
}

void FcfsRound(Sim& s, std::vector<size_t>& waiting, double t) {
  while (!waiting.empty()) {
    const size_t i = waiting.front();
    const Instance& in = s.inst[i];
    if (in.ask <= 0) {
      s.out[i].note = "the policy placed it nowhere, so it has no card count to ask for";
      waiting.erase(waiting.begin());
      continue;
    }
    auto c = TakeInOrder(s, in.ask);
    if (!c) break;  // first come, first served: the head of the queue waits, and so does everyone behind it
    if (Serving(s, i)) {
      const ServeEval e = s.ev.ServeOnCards(in.job, *c);
      Start(s, i, *c, t, 0, e.output_tokens_per_s, e.layout.empty() ? "(does not serve)" : e.layout, {});
      if (!e.ok) s.out[i].deadline_met = false, s.out[i].note = "misses its SLA on these cards: " + e.why;
    } else {
      const TrainEval& e = s.ev.Train(in.job, *c);
      if (e.ok) StartTraining(s, i, *c, t, e);
      else s.out[i].note = "does not run on the " + Str(in.ask) + " cards it took: " + e.why;
    }
    waiting.erase(waiting.begin());
  }
}

// ---- the replay -------------------------------------------------------------------------------------------------

template <typename Round>
void Replay(Sim& s, Round round) {
  const size_t n = s.inst.size();
  size_t next = 0;
  std::vector<size_t> waiting;
  for (;;) {
    double t = next < n ? s.inst[next].arrival_s : kInf;
    for (size_t i = 0; i < n; ++i)
      if (s.placed[i] && !s.done[i] && !Serving(s, i)) t = std::min(t, s.out[i].end_s);
    if (t == kInf) break;
    for (size_t i = 0; i < n; ++i) {
      if (!s.placed[i] || s.done[i] || Serving(s, i) || s.out[i].end_s > t) continue;
      for (size_t g = 0; g < s.free.size(); ++g) s.free[g] += s.held[i][g];
      s.done[i] = true;
    }
    while (next < n && s.inst[next].arrival_s <= t) waiting.push_back(next++);
    round(s, waiting, t);
  }
  for (size_t i : waiting)
    if (s.out[i].note.empty()) s.out[i].note = "never placed: the pool has no cards it runs on";
}

FleetSchedule Finish(Sim& s, const std::string& policy) {
  FleetSchedule out;
  out.policy = policy;
  out.pool_gpus = s.fleet.pool.GpusUsable();
  double horizon = s.fleet.horizon_hours * kSecondsPerHour;
  if (horizon <= 0)
    for (size_t i = 0; i < s.inst.size(); ++i)
      if (s.placed[i] && !Serving(s, i)) horizon = std::max(horizon, s.out[i].end_s);
  out.horizon_s = horizon;
  double completion = 0;
  int completed = 0;
  bool priced = true;
  double cost = 0;
  for (size_t i = 0; i < s.inst.size(); ++i) {
    FleetAssignment& a = s.out[i];
    if (!s.placed[i]) {  // never started: no time on any card
      a.deadline_met = false;
      a.start_s = a.end_s = a.arrival_s;
      a.time_s = 0;
      out.assignments.push_back(a);
      continue;
    }
    if (Serving(s, i)) a.end_s = std::max(a.start_s, horizon), a.time_s = a.end_s - a.start_s;
    const double held = std::max(0.0, std::min(a.end_s, horizon) - std::min(a.start_s, horizon));
    out.busy_gpu_s += static_cast<double>(fleet::Total(s.held[i])) * held;
    if (auto usd = s.ev.UsdPerHour(s.held[i])) a.cost_usd = *usd * a.time_s / kSecondsPerHour;
    else priced = false;
    if (a.cost_usd) cost += *a.cost_usd;
    if (!Serving(s, i)) {
      completion += a.end_s - a.arrival_s, ++completed;
      if (a.has_deadline) {
        a.deadline_met = a.end_s - a.arrival_s <= s.inst[i].deadline_s;
        if (a.deadline_met) a.note.clear();
        else if (a.note.empty()) a.note = "ends " + Hours(a.end_s - a.arrival_s) + " after arrival; deadline " + Hours(s.inst[i].deadline_s);
      }
    }
    out.assignments.push_back(a);
  }
  out.utilization = out.pool_gpus > 0 && horizon > 0 ? out.busy_gpu_s / (static_cast<double>(out.pool_gpus) * horizon) : 0;
  out.avg_completion_s = completed ? completion / completed : 0;
  if (priced) out.cost_usd = cost;
  return out;
}

Sim NewSim(Evaluator& ev, const Fleet& fleet, const std::vector<Instance>& inst) {
  Sim s{ev, fleet, inst, {}, {}, {}, {}, {}};
  for (const auto& g : fleet.pool.groups) s.free.push_back(g.GpusUsable());
  s.held.assign(inst.size(), Counts(fleet.pool.groups.size(), 0));
  s.placed.assign(inst.size(), false);
  s.done.assign(inst.size(), false);
  for (const Instance& in : inst) {
    FleetAssignment a;
    a.job = in.name;
    a.job_index = in.job;
    a.kind = fleet.jobs[in.job].kind;
    a.arrival_s = in.arrival_s;
    a.has_deadline = in.deadline_s > 0;
    s.out.push_back(a);
  }
  return s;
}

std::vector<Instance> Instances(const Fleet& fleet, const std::vector<FleetArrival>& arrivals) {
  std::vector<FleetArrival> all = arrivals;
  if (all.empty())
    for (size_t j = 0; j < fleet.jobs.size(); ++j) all.push_back({j, fleet.jobs[j].name, 0, 0, -1});
  std::vector<Instance> out;
  for (const FleetArrival& a : all) {
    const FleetJob& fj = fleet.jobs[a.job];
    Instance in;
    in.job = a.job;
    in.name = a.name.empty() ? fj.name : a.name;
    in.arrival_s = a.arrival_s;
    in.tokens = a.tokens > 0 ? a.tokens : fj.job.training.tokens;
    const double deadline_h = a.deadline_hours >= 0 ? a.deadline_hours : fj.deadline_hours;
    in.deadline_s = fj.kind == FleetJobKind::kTraining ? deadline_h * kSecondsPerHour : 0;
    in.ask = fj.ask_gpus;
    out.push_back(in);
  }
  return out;
}

}  // namespace

Result<FleetResult> PlanFleet(const Fleet& fleet, const Catalog& catalog, const Calibration& cal,
                              const std::vector<ServingEngineProfile>& engines, const std::vector<FleetArrival>& arrivals,
                              const FleetOptions& options) {
  if (fleet.pool.groups.empty()) return Status::BadInput({fleet.file, 0, "pool"}, "the pool has no groups");
  Evaluator ev(fleet, catalog, cal, engines, options);
  std::vector<Instance> inst = Instances(fleet, arrivals);
  FleetResult r;
  Sim policy = NewSim(ev, fleet, inst);
  Replay(policy, PolicyRound);
  r.policy = Finish(policy, "heterogeneity-aware");
  // The baseline asks for what the job names (cluster.num_gpus), else for as many cards as the policy gave it.
  for (size_t i = 0; i < inst.size(); ++i)
    if (inst[i].ask == 0) inst[i].ask = fleet::Total(policy.held[i]);
  Sim fcfs = NewSim(ev, fleet, inst);
  Replay(fcfs, FcfsRound);
  r.baseline = Finish(fcfs, "fcfs-type-blind");
  for (const FleetAssignment& a : r.policy.assignments) {
    if (a.gpus.empty()) r.missed.push_back(a.job + ": not placed: " + a.note);
    else if (!a.deadline_met) r.missed.push_back(a.job + ": " + (a.kind == FleetJobKind::kServing ? "SLA: " : "deadline: ") + a.note);
  }
  r.notes.push_back("running jobs keep their cards until they end (no preemption, no resizing); serving jobs hold theirs "
                    "to the horizon (" + Hours(r.policy.horizon_s) + ")");
  if (!options.layout)
    r.notes.push_back(options.quick ? "layouts: the built-in quick search (tp, pp in 1/2/4/8 over all the job's cards, even "
                                      "layer split)"
                                    : "layouts: the pool planner's best plan on each allocation (plan --pool)");
  r.evaluations = ev.evaluations();
  return r;
}

}  // namespace gpuplan
