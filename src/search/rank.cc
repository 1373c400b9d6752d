// §5 ranking by the objective at wall-clock, and the time-vs-cost Pareto front (planner.md §5).
#include <algorithm>
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

std::vector<Candidate> TopWithFamilies(const std::vector<Variant>& variants, const std::vector<Item>& items,
                                       const std::vector<Candidate>& ranked, size_t top) {
  std::vector<Candidate> out(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(std::min(top, ranked.size())));
  std::vector<std::string> seen;
  for (const auto& c : out) seen.push_back(variants[items[c.item].variant].engine->family);
  for (size_t i = out.size(); i < ranked.size(); ++i) {
    const std::string& f = variants[items[ranked[i].item].variant].engine->family;
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
    seen.push_back(f);
    out.push_back(ranked[i]);
  }
  return out;
}

}  // namespace gpuplan::search
