// The planner's stages (docs/model/planner.md §1-§7): enumerate setups and work items, search the
// layouts of each item (prune, estimate, price at wall-clock), rank, describe, relax.
// Internal to src/search; the public API is include/gpuplan/plan.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/engines.h"
#include "gpuplan/plan.h"
#include "gpuplan/reliability.h"

namespace gpuplan::search {

// Counted rejections keyed by (code, reason); merged across threads.
class Rejects {
 public:
  void Add(const std::string& code, const std::string& reason, int64_t n = 1) { counts_[{code, reason}] += n; }
  void Merge(const Rejects& o) {
    for (const auto& [k, v] : o.counts_) counts_[k] += v;
  }
  std::vector<Rejection> List() const;

 private:
  std::map<std::pair<std::string, std::string>, int64_t> counts_;
};

// The inputs every stage reads.
struct Context {
  const Job& job;
  const Catalog& catalog;
  const Calibration& cal;
  double headroom = 0;       // fraction of GPU memory kept free (the memory model's margin by default)
  double mflops = 0;         // model FLOPs per token
  std::string today;         // YYYY-MM-DD: how old a catalog price is (PlanOptions::today or the clock)
  bool pinned(const char* key) const { return job.IsSet(key); }
};

// §1 one purchasable setup: an instance row at a price kind.
struct Setup {
  InstanceSpec inst;
  std::string price_kind;        // on-demand | spot
  std::optional<double> price;   // per node-hour
  std::string price_date;
  std::string price_note;        // why the price differs from the catalog row ("" = as listed)
  std::vector<int64_t> node_counts;  // capacity blocks: the sizes that can be booked (empty = any)
  double billing_increment_s = 0;    // capacity blocks: billed in whole increments (0 = per second)
  std::string intra, network;    // link ids ("" = default for the GPU)
  int64_t nics = 0;
  bool multi_node_ok = true;
  std::string gpu_family;
};

// §1 a setup at one training precision on one engine, with its hardware resolved once.
struct Variant {
  size_t setup = 0;
  Precision precision = Precision::kBf16;
  const EngineCaps* engine = nullptr;  // the framework that runs it (data/engines.csv); never null
  HardwareContext hw;
  CheckpointSizes sizes;
};

// §2 one work item: a variant on n nodes, with what does not depend on the layout.
struct Item {
  size_t variant = 0;
  int64_t nodes = 0;
  StartupBreakdown startup;
  std::vector<CheckpointTarget> targets;
  EventRates rates;
  // §4 the object-store bill, resolved once: capacity held (dataset + kept checkpoints) and the
  // PUTs of one checkpoint; nullopt price = no priced object store for the provider.
  std::optional<double> object_usd_per_gb_month;
  double dataset_bytes = 0;          // held on the object store for the run
  double kept_checkpoint_bytes = 0;  // held there too when checkpoints go to it
  double puts_per_checkpoint = 0, puts_final_save = 0;
  double usd_per_1k_put = 0;
};

// §2 the layout axes (pins restrict them).
struct LayoutSpace {
  std::vector<int64_t> tps, pps, cps, mbs, vpps;  // vpps empty = every depth that divides the layers
  std::vector<int> zeros;
  std::vector<Recompute> rcs;
  std::vector<Offload> offloads;  // tried in order, the next only when the previous does not fit
};

// §5 what a run costs and how long it takes with one checkpoint target.
struct RunOutcome {
  WallClock wall;
  CostBreakdown cost;
  int target = -1;  // index into Item::targets; -1 = none
  double score = 0;
};

// Per item: its best layout.
struct Candidate {
  bool found = false;
  size_t item = 0;
  ParallelSpec par;
  int64_t micro_batch = 0;
  Recompute recompute = Recompute::kNone;
  double memory_bytes = 0;
  double train_s = 0;
  RunOutcome run;
  bool price_known = false;
};

// Reasons counted in the innermost loops, by index (no string work per candidate).
enum HotReject { kBatchNotDivisible, kMemory, kTpCrossesNodes, kEpLayout, kDominated, kEngineLayout, kInterleavedMicrobatches,
                 kHotRejectCount };
const char* HotRejectCode(int r);
const char* HotRejectReason(int r);

struct SearchState {
  std::vector<Candidate> best;
  Rejects rejects;
  int64_t hot[kHotRejectCount] = {};
  int64_t considered = 0, evaluated = 0;
  bool any_fits_memory = false;
};

// §1 the engines the job is planned on: its framework's, else one per engine family.
std::vector<const EngineCaps*> PlanningEngines(const Job& job);
std::vector<Setup> EnumerateSetups(const Context& ctx, Rejects& rejects, std::vector<std::string>& notes);
// The job of a variant as its hardware is resolved: the setup's GPU, links and one node, at `p` on `engine`.
Job VariantJob(const Context& ctx, const Setup& su, const EngineCaps& engine, Precision p);
std::vector<Variant> ResolveVariants(const Context& ctx, const std::vector<Setup>& setups, Rejects& rejects);
// §2
std::vector<int64_t> NodeCounts(int64_t max_nodes);
std::vector<Item> EnumerateItems(const Context& ctx, const std::vector<Setup>& setups, const std::vector<Variant>& variants,
                                 Rejects& rejects);
LayoutSpace BuildLayoutSpace(const Context& ctx);
// §3-§5 one item: prune, estimate every layout, price each at wall-clock, keep the best.
void SearchItem(const Context& ctx, const LayoutSpace& space, const std::vector<Setup>& setups,
                const std::vector<Variant>& variants, const std::vector<Item>& items, size_t item, SearchState& st);
// §5 pricing at wall-clock for each checkpoint target; the best by the objective.
RunOutcome PriceRun(const Context& ctx, const Setup& su, const Item& it, double train_s);
// R§4 whether a save started on the spot reclaim notice is durable in time (async counts; on demand: true).
bool FitsReclaimNotice(const CheckpointTarget* t, const EventRates& r);
double Score(Objective o, double time_s, const CostBreakdown& c);
// §5 ranking and the Pareto front.
void Rank(const Context& ctx, const std::vector<Variant>& variants, const std::vector<Item>& items, std::vector<Candidate>& c);
std::vector<Candidate> ParetoFront(const std::vector<Candidate>& ranked);
// §5 the rows shown: the first `top`, then the best row of each engine family not among them.
std::vector<Candidate> TopWithFamilies(const std::vector<Variant>& variants, const std::vector<Item>& items,
                                       const std::vector<Candidate>& ranked, size_t top);
// §6 the whole setup of one candidate.
Plan Describe(const Context& ctx, const std::vector<Setup>& setups, const std::vector<Variant>& variants,
              const std::vector<Item>& items, const Candidate& c);
// §6 the best row's fp8 what-if (planner.md §2): a bf16 row on a GPU with fp8, when the job did not
// ask for fp8, re-estimated at fp8 on the same setup, nodes and layout; never ranked.
void AddFp8WhatIf(const Context& ctx, const std::vector<Setup>& setups, const std::vector<Variant>& variants,
                  const std::vector<Item>& items, const Candidate& c, Plan& p);

}  // namespace gpuplan::search
