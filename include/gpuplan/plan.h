// The planner: enumerate instance x nodes x layout, prune, estimate, rank, Pareto front.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "gpuplan/estimate.h"

namespace gpuplan {

enum class Tier { kSingleCard, kSingleNode, kMultiNode };  // the seeds' L1 / L2 / L3
std::string ToString(Tier t);

struct CostBreakdown {
  double compute_usd = 0;
  double storage_usd = 0;       // dataset + kept checkpoints for the run's duration
  double requests_usd = 0;      // object-store PUT/GET fees
  double subtotal_usd = 0;      // compute + storage + requests
  double with_rerun_usd = 0;    // subtotal x rerun factor: what to budget
  bool price_known = true;
  std::string price_kind;       // on-demand | spot
  double price_per_node_hour = 0;
};

struct StoragePlan {
  std::string dataset_home;     // object store row id (or "unknown")
  std::string shared_fs;        // parallel FS row id (or "none in catalog")
  std::string local_cache;      // "local NVMe x.x TB per node" or why not
  double dataset_bytes = 0;
  double stage_time_s = -1;     // -1 = unknown throughput
  double checkpoint_bytes = 0;
  double checkpoint_write_s = -1;   // -1 = unknown throughput
  std::string checkpoint_target;    // storage row the checkpoints are written to
  double suggested_interval_min = 0;  // Young's sqrt(2 x write x MTBF); 0 = unknown
};

struct HostCheck {
  std::string name;
  bool ok = true;
  std::string detail;
};

struct Plan {
  InstanceSpec instance;
  int64_t nodes = 0;
  Job job;                      // the full layout (parallel, micro-batch, ...)
  StepEstimate estimate;
  double memory_bytes = 0;      // peak per GPU
  double time_to_train_s = 0;
  CostBreakdown cost;
  Tier tier = Tier::kSingleCard;
  bool rdma_required = false;
  double min_inter_node_gbps = 0;  // for exposed comm <= 20% of the step (0 = single node)
  StoragePlan storage;
  std::vector<HostCheck> host;
  // Reliability (docs/model/planner.md §6): failures expected over the run at the catalog failure
  // rate, and the share of wall time that is useful work with the checkpoint interval used.
  double expected_failures = 0;
  double goodput = 1;
  double lost_hours = 0;
  std::string bottleneck;
  std::string network;          // link id used between nodes
};

struct PlanResult {
  std::vector<Plan> plans;      // best first by the objective
  std::vector<Plan> pareto;     // time vs cost, non-dominated, fastest first
  int64_t considered = 0;       // candidates enumerated
  int64_t evaluated = 0;        // candidates that reached the estimator
  std::map<std::string, int64_t> rejected;  // reason -> count
  std::vector<std::string> notes;           // e.g. instances with unknown prices
  std::string relax;            // when nothing is feasible: which constraint to relax and by how much
  double wall_s = 0;
};

struct PlanOptions {
  int threads = 2;                       // Default: 2 (both cores of the reference machine).
  std::atomic<int64_t>* progress = nullptr;  // Default: none (candidates done, for a progress bar).
  int64_t* progress_total = nullptr;     // Default: none (set before the search starts).
};

// Searches the catalog for the job. The job's parallel/cluster keys that the user set are pins.
Result<PlanResult> PlanJob(const Job& job, const Catalog& catalog, const Calibration& cal,
                           const PlanOptions& options = {});

}  // namespace gpuplan
