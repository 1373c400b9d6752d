// Printers of `gpuplan serving --plan`: one ServingPlanResult, a text report (<= 120 columns) and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gpuplan/serving_plan.h"

namespace gpuplan {

// The ranked table (GPU x count, tp, replicas, weights/KV dtype, TTFT p90, TPOT p90, tokens/s,
// $/M output tokens), each plan's launch line, then the rejections grouped by reason.
std::string ServingPlanToText(const ServingPlanResult& r, const Job& job);
nlohmann::json ServingPlanToJson(const ServingPlanResult& r, const Job& job);

}  // namespace gpuplan
