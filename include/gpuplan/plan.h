// The planner: enumerate instance x nodes x layout, prune, estimate, rank, Pareto front.
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/estimate.h"
#include "gpuplan/reliability.h"

namespace gpuplan {

enum class Tier { kSingleCard, kSingleNode, kMultiNode };  // one card / one node / several nodes
std::string ToString(Tier t);

struct CostBreakdown {
  double compute_usd = 0;       // price x nodes x billed hours
  double billed_hours = 0;      // the wall-clock, or whole capacity-block increments covering it
  double storage_usd = 0;       // dataset + kept checkpoints on the object store, for the wall-clock
  double checkpoint_fs_usd = 0; // parallel FS capacity provisioned for checkpoint throughput
  double requests_usd = 0;      // object-store PUT fees
  double subtotal_usd = 0;      // compute + storage + checkpoint FS + requests
  double with_rerun_usd = 0;    // subtotal x rerun factor: what to budget
  bool price_known = true;
  std::string price_kind;       // on-demand | spot | capacity-block
  double price_per_node_hour = 0;
  std::string price_date;       // the date of the price used (spot: spot_price_date)
};

struct StoragePlan {
  std::string dataset_home;     // object store row id (or "unknown ...")
  std::string shared_fs;        // parallel FS row id (or "none in catalog")
  std::string local_cache;      // "local NVMe x.x TB per node" or why not
  double dataset_bytes = 0;
  CheckpointSizes checkpoint;   // sizes by content (reliability.h R§2)
  std::optional<CheckpointTarget> target;  // chosen checkpoint target; nullopt = none with a write rate
  int64_t targets_compared = 0; // how many targets were priced for this plan
};

enum class CheckState { kOk, kWarn, kUnknown };
std::string ToString(CheckState c);

struct HostCheck {
  std::string name;
  CheckState state = CheckState::kUnknown;
  std::string detail;
};

// The best row re-estimated at fp8 (planner.md §2): shown, never ranked; the user validates its numerics.
struct Fp8WhatIf {
  double step_time_s = 0;
  double time_s = 0;             // wall-clock at fp8 (same setup, nodes, layout and checkpoint targets)
  double cost_usd = 0;           // with the rerun factor, as the row's cost
  bool price_known = true;
  std::string note;              // "numerics: validate the loss curve before a long run"
};

struct Plan {
  InstanceSpec instance;
  int64_t nodes = 0;
  Job job;                      // the full layout (parallel, micro-batch, precision, offload, ...)
  StepEstimate estimate;
  double memory_bytes = 0;      // peak per GPU (predicted)
  double memory_headroom = 0;   // the headroom the fit was judged with (fraction of capacity)
  // Wall-clock (reliability.h R§5): time_s is what the user waits and what is ranked and priced.
  double time_s = 0;
  double train_s = 0;           // the steps alone
  StartupBreakdown startup;
  WallClock wall;
  EventRates rates;
  CostBreakdown cost;
  Tier tier = Tier::kSingleCard;
  bool rdma_required = false;
  std::optional<double> min_inter_node_gbps;  // for exposed comm <= comm_share_max of the step; nullopt = single node or unreachable
  bool comm_share_unreachable = false;        // even 6.4 Tb/s per node keeps comm above comm_share_max
  double comm_share_max = 0;                  // the limit used (data/efficiency.csv comm_share_max)
  std::string network_cause;                  // the communication part behind the requirement, and its link
  StoragePlan storage;
  std::vector<HostCheck> host;
  std::vector<std::string> warnings;  // spot price implausibly low, spot capacity scarce, ...
  std::string bottleneck;
  std::string network;          // link id used between nodes
  // The engine that runs it (data/engines.csv): job.training.framework's export format, which
  // expresses this layout unchanged, and its family (megatron | deepspeed | fsdp | hf).
  std::string engine;
  std::string engine_family;
  bool family_best = false;     // the best row of its family
  bool beyond_top = false;      // shown after the top rows because it is its family's best
  std::optional<Fp8WhatIf> fp8_what_if;  // the best row only: bf16 on a GPU with fp8, fp8 not asked for
};

// A counted reason a candidate or a setup was dropped; `code` is stable for scripts.
struct Rejection {
  std::string code;
  std::string reason;
  int64_t count = 0;
};

struct PlanResult {
  std::vector<Plan> plans;      // best first by the objective
  std::vector<Plan> pareto;     // wall-clock vs cost, non-dominated, fastest first
  int64_t considered = 0;       // candidates enumerated
  int64_t evaluated = 0;        // candidates that reached the estimator
  std::vector<Rejection> rejected;          // by code, then reason
  std::vector<std::string> notes;           // e.g. instances with unknown prices
  std::string relax;            // when nothing is feasible: which constraint to relax and by how much
  std::string relax_code;       // no_instance | memory | deadline | budget | deadline_and_budget | "" (feasible)
  double memory_headroom = 0;   // the headroom used, and where it came from
  std::string memory_headroom_source;
  double wall_s = 0;
};

struct PlanOptions {
  int threads = 2;                       // Default: 2 (both cores of the reference machine).
  std::atomic<int64_t>* progress = nullptr;  // Default: none (candidates done, for a progress bar).
  std::atomic<int64_t>* progress_total = nullptr;  // Default: none (set before the search starts).
  std::string today;                     // Default: "" = the system clock's date (UTC), YYYY-MM-DD; for price ages.
  // Set by another thread to stop the search between work items: PlanJob then returns an infeasible status
  // ("cancelled"). Default: none (never cancelled; results do not depend on it otherwise).
  const std::atomic<bool>* cancel = nullptr;
  // The most work items (instance type x node count x variant: the progress unit) the caller lets one search
  // cover; a larger search is refused (infeasible) before it starts. Default: 0 = no limit.
  int64_t max_items = 0;
};

// "tp2 pp4x10 dp32 z1 offload:optimizer": the plan table's layout column (and every artefact's header).
std::string LayoutString(const Job& job);

// Searches the catalog for the job. The job's parallel/cluster keys that the user set are pins.
Result<PlanResult> PlanJob(const Job& job, const Catalog& catalog, const Calibration& cal,
                           const PlanOptions& options = {});

}  // namespace gpuplan
