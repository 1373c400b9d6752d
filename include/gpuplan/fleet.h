// Fleets (docs/fleet.md): one pool shared by many jobs. Training jobs (tokens, optional deadlines and priorities)
// and serving jobs (a request rate and an SLA) get cards of the pool's groups, each job at its best layout on what
// it is given; the same jobs under a type-blind first-come-first-served policy are the baseline.
//
//   auto fleet = LoadFleetFile("examples/fleet-lab.yaml", catalog);        // the pool and the jobs
//   auto r = PlanFleet(*fleet, catalog, cal, engines, {});                 // r->policy, r->baseline
//   // r->policy.assignments[i].gpus: [{pool group, count}], layout, time_s, cost_usd, deadline_met
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/job.h"
#include "gpuplan/pool.h"
#include "gpuplan/serving.h"

namespace gpuplan {

enum class FleetJobKind { kTraining, kServing };
std::string ToString(FleetJobKind k);  // training | serving

struct FleetJob {
  std::string name;                 // unique in the fleet
  FleetJobKind kind = FleetJobKind::kTraining;
  int64_t priority = 0;             // Default: 0; higher is served first within its step (docs/fleet.md)
  double deadline_hours = 0;        // Default: 0 = none (training only): hours from the job's arrival
  Job job;                          // the job's sections (model, training, parallel, serving); not finalized
  int64_t ask_gpus = 0;             // cluster.num_gpus when the job names it: what it asks FCFS for
                                    // (0 = as many as the policy gives it)
  Location where;                   // the job's line in the fleet file
};

struct Fleet {
  std::string file;
  Pool pool;
  std::vector<FleetJob> jobs;       // in the order listed: the first-come-first-served order
  double horizon_hours = 0;         // Default: 0 = until the last training job ends (serving jobs run for it)
};

// Parses a fleet file (YAML/JSON):
//   pool: PATH (relative to the fleet file) | {pool, groups: [...]} (a pool file's schema)
//   horizon_hours: H (optional; needed when every job serves)
//   jobs:
//     - {name, kind: training|serving, priority?, deadline_hours?, job: PATH | model/training/parallel/serving}
// Errors carry file:line: key.
Result<Fleet> ParseFleetText(const std::string& text, const std::string& file, const Catalog& catalog);
Result<Fleet> LoadFleetFile(const std::string& path, const Catalog& catalog);

// One arrival of a trace: a fleet job (by index), when it arrives, and optionally its own size.
struct FleetArrival {
  size_t job = 0;                   // index into Fleet::jobs
  std::string name;                 // Default: the job's name (#k appended when it arrives again)
  double arrival_s = 0;
  double tokens = 0;                // Default: 0 = the job's training.tokens
  double deadline_hours = -1;       // Default: < 0 = the job's deadline_hours
};

// A trace file (CSV with a header): arrival_s,job[,name][,tokens][,deadline_hours]; `job` names a fleet job.
Result<std::vector<FleetArrival>> ParseFleetTrace(const std::string& text, const std::string& file, const Fleet& fleet);
Result<std::vector<FleetArrival>> LoadFleetTrace(const std::string& path, const Fleet& fleet);

struct FleetGpus {
  size_t group = 0;                 // pool group index
  int64_t count = 0;
};

struct FleetAssignment {
  std::string job;                  // the job's (or the arrival's) name
  size_t job_index = 0;             // into Fleet::jobs
  FleetJobKind kind = FleetJobKind::kTraining;
  std::vector<FleetGpus> gpus;      // empty: never placed (note says why)
  std::string layout;               // one line: "tp 2 x pp 1 x dp 8 on a100 (16)", "3 x tp 1 bf16 on rtx4090"
  std::vector<std::string> placement;  // training: one line per stage (EstimateOnPool's)
  double arrival_s = 0, start_s = 0, end_s = 0;
  double time_s = 0;                // training: time to train on its cards; serving: start to the horizon
  double tokens_per_s = 0;          // training: tokens/s; serving: output tokens/s served
  std::optional<double> cost_usd;   // the cards' prices x time_s (nullopt when a used group is unpriced)
  bool has_deadline = false;
  bool deadline_met = true;         // false: a deadline missed, or a serving SLA the cards cannot meet
  std::string note;                 // why a deadline is missed or a job is not placed, in words
};

struct FleetSchedule {
  std::string policy;               // "heterogeneity-aware" | "fcfs-type-blind"
  std::vector<FleetAssignment> assignments;  // in arrival order
  double horizon_s = 0;             // the fleet's horizon, or the last training job's end
  double busy_gpu_s = 0;            // sum of cards x the time each is held within the horizon
  int64_t pool_gpus = 0;            // usable cards of the pool
  double utilization = 0;           // busy_gpu_s / (pool_gpus x horizon_s)
  double avg_completion_s = 0;      // training jobs: mean of end - arrival (placed jobs)
  std::optional<double> cost_usd;   // sum of the jobs' costs (nullopt when any is unpriced)
};

struct FleetResult {
  FleetSchedule policy, baseline;
  std::vector<std::string> missed;  // "job: why" for each deadline (or SLA) the policy cannot meet
  std::vector<std::string> notes;   // assumptions a user should know
  int64_t evaluations = 0;          // layouts evaluated (each allocation's best layout, memoised)
};

struct FleetOptions {
  // The layout of a training job on the cards it is given. Default: empty = the pool planner (PlanOnPool, its best
  // plan on exactly those cards), or the built-in quick search when `quick` is set. Returns the best estimate or why
  // none fits.
  std::function<Result<PoolEstimate>(const Job& job, const Pool& cards, const Catalog& catalog, const Calibration& cal)>
      layout;
  bool quick = false;  // Default: false. true: the built-in search (tp, pp in 1/2/4/8 over all the cards, even split):
                       // faster, and blind to uneven splits
};

// Assigns the fleet's cards to its jobs (docs/fleet.md): serving first at the fewest cards of the best-value type
// meeting the SLA; deadline jobs in earliest-deadline order at the smallest allocation that meets the deadline;
// the rest of the cards by marginal useful throughput. `arrivals` empty = every job at t = 0 (the static fleet).
// Jobs that find no cards wait for the next completion. The baseline is the same arrivals under first-come-first-
// served, each job taking the cards it asks for from the groups in the order listed.
Result<FleetResult> PlanFleet(const Fleet& fleet, const Catalog& catalog, const Calibration& cal,
                              const std::vector<ServingEngineProfile>& engines,
                              const std::vector<FleetArrival>& arrivals = {}, const FleetOptions& options = {});

// The pool restricted to `gpus` (each group's cards as nodes of that group; a part of one node is one smaller
// node): what a job's layout may use. Group order follows the pool's.
Pool CardsPool(const Pool& pool, const std::vector<FleetGpus>& gpus);

}  // namespace gpuplan
