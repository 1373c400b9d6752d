// Printers of one job over a mixed pool (docs/model/pools.md): `estimate --pool` (one PoolEstimate) and
// `plan --pool` (a PoolPlanResult), as text (<= 120 columns, or Markdown) and JSON, from the same fields.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gpuplan/pool.h"
#include "gpuplan/pool_plan.h"

namespace gpuplan {

// "pool h800-h20: 32 GPUs: 16 x h800-80gb (h800) + 16 x h20-96gb (h20)" (usable GPUs per group).
std::string PoolHeader(const Pool& pool);
// The stages, consecutive stages on one group merged: "h800 x16 (tp4 dp1 pp4: 11,11,11,11) | h20 x16 (tp4 dp1 pp4:
// 4,4,4,4)"; a stage spread over groups is named by all of them ("h800+h20 x8 (...)").
std::string PoolStagesString(const Pool& pool, const PoolEstimate& e);

// The layout, the stage table (stage, card, GPUs, tp, dp, blocks, micro-batch time, memory per GPU / capacity), the
// placement, the step split, time, cost and the idle cards.
std::string PoolEstimateToText(const Pool& pool, const PoolEstimate& e, bool markdown);
// {"pool", "layout", "stages": [{gpu, group, gpus, tp, dp, layers, microbatch_s, memory_bytes, capacity_bytes, parts}],
//  "breakdown", "step_time_s", "tokens_per_s", "mfu", "time_to_train_s", "cost_usd", "cost_per_hour_usd",
//  "idle": [{group, gpus, why}], "placement", "fits", "not_fit_reason"}
nlohmann::json PoolEstimateToJson(const Pool& pool, const PoolEstimate& e);

// `plan --pool`: the header, the ranked plans, the best plan's stages, its idle cards and the rejections.
std::string PoolPlanToText(const Pool& pool, const PoolPlanResult& r, bool markdown);
// {"pool", "plans": [PoolEstimateToJson + "engine_note"], "rejections": [{code, reason, count}], "candidates",
//  "search_s"}
nlohmann::json PoolPlanToJson(const Pool& pool, const PoolPlanResult& r);

}  // namespace gpuplan
