// §5 ranking by the objective at wall-clock, and the time-vs-cost Pareto front (planner.md §5).
#include <algorithm>
#include <cmath>
#include <string>

#include "stages.h"

namespace gpuplan::search {

// Ties break toward faster, RDMA fabrics, priced, cheaper, fewer nodes, then the item order
// (deterministic whatever the thread interleaving).
void Rank(const Context& ctx, const std::vector<Variant>& variants, const std::vector<Item>& items, std::vector<Candidate>& c) {
  auto rdma = [&](const Candidate& x) { return variants[items[x.item].variant].hw.rdma; };
  std::sort(c.begin(), c.end(), [&](const Candidate& x, const Candidate& y) {
    if (x.run.score != y.run.score) return x.run.score < y.run.score;
    if (x.run.wall.time_s != y.run.wall.time_s) return x.run.wall.time_s < y.run.wall.time_s;
    if (rdma(x) != rdma(y)) return rdma(x);
    if (x.price_known != y.price_known) return x.price_known;
    if (x.run.cost.with_rerun_usd != y.run.cost.with_rerun_usd) return x.run.cost.with_rerun_usd < y.run.cost.with_rerun_usd;
    if (items[x.item].nodes != items[y.item].nodes) return items[x.item].nodes < items[y.item].nodes;
    return x.item < y.item;
  });
}

// Priced candidates sorted by wall-clock (then cost), each kept if cheaper than the last kept.
std::vector<Candidate> ParetoFront(const std::vector<Candidate>& ranked) {
  std::vector<Candidate> priced;
  for (const auto& b : ranked)
    if (b.price_known) priced.push_back(b);
  std::sort(priced.begin(), priced.end(), [](const Candidate& x, const Candidate& y) {
    if (x.run.wall.time_s != y.run.wall.time_s) return x.run.wall.time_s < y.run.wall.time_s;
    if (x.run.cost.with_rerun_usd != y.run.cost.with_rerun_usd) return x.run.cost.with_rerun_usd < y.run.cost.with_rerun_usd;
    return x.item < y.item;
  });
  std::vector<Candidate> front;
  for (const auto& b : priced)
    if (front.empty() || b.run.cost.with_rerun_usd < front.back().run.cost.with_rerun_usd) front.push_back(b);
  return front;
}

namespace {
// The same setup, nodes, layout and wall-clock (within 0.1%) on another engine of equal efficiency (DeepSpeed
// and HF Trainer's DeepSpeed, say): one row says it.
bool SameRow(const std::vector<Variant>& variants, const std::vector<Item>& items, const Candidate& a, const Candidate& b) {
  const Item& x = items[a.item];
  const Item& y = items[b.item];
  const ParallelSpec& p = a.par;
  const ParallelSpec& q = b.par;
  return variants[x.variant].setup == variants[y.variant].setup && x.nodes == y.nodes && p.tp == q.tp && p.pp == q.pp &&
         p.vpp == q.vpp && p.cp == q.cp && p.dp == q.dp && p.zero == q.zero && p.offload == q.offload &&
         a.micro_batch == b.micro_batch && a.recompute == b.recompute &&
         std::abs(a.run.wall.time_s - b.run.wall.time_s) <= 1e-3 * a.run.wall.time_s;
}
}  // namespace

std::vector<Candidate> TopWithFamilies(const std::vector<Variant>& variants, const std::vector<Item>& items,
                                       const std::vector<Candidate>& ranked, size_t top) {
  std::vector<Candidate> out;
  std::vector<std::string> seen;
  auto family = [&](const Candidate& c) { return variants[items[c.item].variant].engine->family; };
  for (const auto& c : ranked) {
    if (out.size() >= top) break;
    if (std::any_of(out.begin(), out.end(), [&](const Candidate& o) { return SameRow(variants, items, o, c); })) continue;
    out.push_back(c);
    seen.push_back(family(c));
  }
  for (const auto& c : ranked) {
    if (std::find(seen.begin(), seen.end(), family(c)) != seen.end()) continue;
    seen.push_back(family(c));
    out.push_back(c);
  }
  return out;
}

}  // namespace gpuplan::search
