// The serving planner (`gpuplan serving JOB.yaml --plan`): every priced instance of the catalog x tensor
// and pipeline parallel x weight format x KV dtype, each with as many replicas as the load needs,
// estimated with EstimateServing at the target load, held to the SLA (TTFT p90, TPOT p90), ranked by
// cost per million output tokens. docs/model/serving.md "The planner" states the search.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/plan.h"
#include "gpuplan/serving.h"

namespace gpuplan {

// One ranked setup: an instance row x nodes, the layout of each replica, and the estimate at the
// target load.
struct ServingPlan {
  InstanceSpec instance;
  std::string price_kind;            // on-demand | spot
  double usd_per_node_hour = 0;
  std::string price_date;
  int64_t nodes = 0;                 // instances rented (whole instances are billed)
  int64_t gpus = 0;                  // nodes x GPUs per instance
  int64_t tp = 1, pp = 1;
  int64_t replicas = 1;              // engine instances (data parallel); fills the rented GPUs
  int64_t replicas_needed = 1;       // the fewest that meet the load and the SLA
  WeightFormat weights = WeightFormat::kBf16;
  KvDtype kv_dtype = KvDtype::kAuto;
  Job job;                           // the pinned job: gpu, gpus_per_node, num_gpus, tp/pp/dp, serving.*
  ServingEstimate estimate;          // at the target load, split over `replicas`
  double usd_per_hour = 0;           // nodes x usd_per_node_hour
  double output_tokens_per_s = 0;    // served, all replicas (= the target load when it is met)
  double cost_per_million_output_tokens_usd = 0;  // usd_per_hour / (output_tokens_per_s x 3600) x 1e6
  double cost_per_million_input_tokens_usd = 0;   // the same hour over the input tokens served
  std::string launch_line;           // ServingLaunchLine for one replica (filled by the front end: src/launch)
};

struct ServingPlanResult {
  std::vector<ServingPlan> plans;    // one per (instance, price kind), its cheapest layout; cheapest per million
                                     // output tokens first, ties by TTFT p90
  std::vector<Rejection> rejected;   // by code, then reason; counts of candidates
  int64_t considered = 0;            // candidates (instance group x tp x pp x weights x KV dtype)
  int64_t evaluated = 0;             // EstimateServing calls
  int64_t feasible = 0;              // layouts x setups meeting the SLA (plans: the best per setup, constraints.top)
  double target_requests_per_s = 0;  // the load planned for (0 = one replica at its maximum throughput)
  std::string engine, engine_version;
  std::vector<std::string> notes;
  std::string relax;                 // nothing feasible: what would be (the model's alternatives, the SLA)
  std::string relax_code;            // does_not_fit | sla | no_instance | all_rejected | "" (feasible)
  double wall_s = 0;
};

struct ServingPlanOptions {
  std::string today;                 // Default: "" = the system clock (price ages).
};

// Searches the catalog for job.serving. Pins (set keys) restrict the axes: cluster.gpu,
// cluster.gpus_per_node, cluster.num_gpus, parallel.tp/pp/dp, serving.weights, serving.kv_dtype;
// constraints.gpus, clouds, spot and max_gpus filter. Errors: bad input only (an unknown engine,
// no load target with an SLA that needs one); an infeasible search is a result without plans.
Result<ServingPlanResult> PlanServing(const Job& job, const Catalog& catalog, const Calibration& cal,
                                      const std::vector<ServingEngineProfile>& engines,
                                      const ServingPlanOptions& options = {});

}  // namespace gpuplan
