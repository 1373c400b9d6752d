// The fleet's evaluator (internal to src/pool): a training job's best layout on a set of cards, a serving job's
// fewest cards on a group; memoised per (job, cards). Used by the policy and the baseline (fleet_assign.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuplan/fleet.h"

namespace gpuplan::fleet {

// Cards per pool group (size = the pool's groups).
using Counts = std::vector<int64_t>;

std::vector<FleetGpus> ToGpus(const Counts& c);
int64_t Total(const Counts& c);
// A group's cards form whole nodes past one node: n < gpus_per_node, or a multiple of it.
bool ValidShape(const Pool& pool, const Counts& c);

struct TrainEval {
  bool ok = false;
  double tokens_per_s = 0;
  std::string layout;                   // one line
  std::vector<std::string> placement;   // per stage
  Counts used;                          // the cards the layout uses (a planner may leave some of those given idle)
  std::string why;                      // !ok: why no layout runs on these cards
};

struct ServeEval {
  bool ok = false;
  int64_t group = -1;                   // the group of the cards (the slowest one for mixed cards)
  int64_t tp = 1, replicas = 0, gpus = 0;
  double output_tokens_per_s = 0;
  std::string layout, why;
};

class Evaluator {
 public:
  Evaluator(const Fleet& fleet, const Catalog& catalog, const Calibration& cal,
            const std::vector<ServingEngineProfile>& engines, const FleetOptions& options);
  // The best layout of training job `j` on cards `c` (memoised).
  const TrainEval& Train(size_t j, const Counts& c);
  // The fewest cards of group g (at most `free` of them) that serve job j's load within its SLA.
  ServeEval ServeOnGroup(size_t j, size_t g, int64_t free);
  // Job j served on given cards (the baseline): replicas of the best tp on the slowest of the cards' types.
  ServeEval ServeOnCards(size_t j, const Counts& c);
  // Useful model FLOP/s of job j at `tokens_per_s` (tokens x the model's FLOPs per token: comparable across jobs).
  double UsefulFlops(size_t j, double tokens_per_s) const;
  // Price of the cards per hour; nullopt when a used group is unpriced.
  std::optional<double> UsdPerHour(const Counts& c) const;
  // Dense peak FLOP/s of one card of group g (the job's precision); orders groups from the fastest.
  double CardPeak(size_t j, size_t g) const;
  int64_t evaluations() const { return evaluations_; }
  const Fleet& fleet() const { return fleet_; }

 private:
  TrainEval Search(size_t j, const Counts& c);
  ServeEval ServeAt(size_t j, size_t g, int64_t tp, int64_t replicas, int64_t gpus_per_node);
  const Fleet& fleet_;
  Catalog catalog_;                     // with the pool's own links
  const Calibration& cal_;
  const std::vector<ServingEngineProfile>& engines_;
  const FleetOptions& options_;
  std::map<std::pair<size_t, Counts>, TrainEval> memo_;
  int64_t evaluations_ = 0;
};

}  // namespace gpuplan::fleet
