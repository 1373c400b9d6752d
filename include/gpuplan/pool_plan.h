// The planner over a mixed pool (docs/model/pools.md MX§6): which groups to use, their order along the pipeline,
// tp, dp, pp, the layer split balanced by each card's predicted time, and the micro-batch; ranked by step time (then
// cost). Every rejected candidate family is counted with a reason a user can act on.
//
//   auto plans = PlanOnPool(job, pool, catalog, cal, {});   // plans->plans[0].estimate.stages, ->rejections
#pragma once

#include <string>
#include <vector>

#include "gpuplan/plan.h"
#include "gpuplan/pool.h"

namespace gpuplan {

struct PoolPlanOptions {
  int64_t top = 10;            // plans kept (ranked)
  double headroom = -1;        // fraction of each card's memory kept free; < 0 = the memory model's margin
                               // (MemoryHeadroomFor, by card family)
  int64_t max_gpus = 0;        // use at most this many GPUs of the pool (0 = all; the fleet gives a job a share)
  std::vector<int64_t> group_gpus;  // per pool group: at most this many of its GPUs (empty = all usable)
};

struct PoolPlan {
  PoolEstimate estimate;       // layout, stages (gpu, gpus, tp, dp, layers), time, cost, idle cards and why
  Job job;                     // the job with the plan's parallel.* (tp, pp, dp, layer_split) and micro-batch
  std::string engine_note;     // which engines can run it ("stock Megatron-LM: yes, with ..." or why not)
};

struct PoolPlanResult {
  std::vector<PoolPlan> plans;         // best first
  std::vector<Rejection> rejections;   // counted reasons (out of memory on the smallest card, a link too slow, ...)
  int64_t candidates = 0;              // layouts evaluated
  double search_s = 0;
};

// No layout fits: `plans` is empty and `rejections` say why (the CLI exits 2 with them). Bad input for a job the
// planner cannot take at all (no global batch, vpp > 1, a pinned tp or dp that cannot divide what it must).
Result<PoolPlanResult> PlanOnPool(const Job& job, const Pool& pool, const Catalog& catalog, const Calibration& cal,
                                  const PoolPlanOptions& options);

}  // namespace gpuplan
