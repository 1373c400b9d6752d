// Printers: one record, many formats (text table, JSON, Markdown). No model logic here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gpuplan/catalog.h"
#include "gpuplan/error_bands.h"
#include "gpuplan/job.h"
#include "gpuplan/memory.h"

namespace gpuplan {

constexpr const char* kVersion = "0.3.0";
constexpr int kJsonSchemaVersion = 1;

std::string FormatGiB(double bytes);   // "12.34"
std::string FormatCount(double n);     // "6.74B", "124.4M"
std::string WithThousands(int64_t n);  // "6,738,415,616"
std::string FormatNumber(const char* printf_format, double v);  // one number, printf-style

// The job's inputs as JSON (recorded in every JSON output).
nlohmann::json JobToJson(const Job& job);

struct MemoryReport {
  Job job;
  GpuSpec gpu;
  MemoryBreakdown memory;
  std::vector<MemorySuggestion> suggestions;
  bool fits = false;           // total <= the GPU's capacity
  MemoryHeadroom headroom;     // the margin `plan` keeps free (MemoryHeadroomFor)
  bool inside_margin = false;  // fits, but above capacity x (1 - headroom): `plan` rejects this layout
};

// "DOES NOT FIT", "fits, but inside the model's error (plan needs >= 20% free)" or "fits".
std::string MemoryFitWords(const MemoryReport& r);

// The breakdown, the fit against the GPU's capacity and the margin `plan` keeps (the saving steps
// fit within that margin), in one place.
MemoryReport BuildMemoryReport(const Job& job, const GpuSpec& gpu, const Calibration& cal);
nlohmann::json MemoryToJson(const MemoryReport& r);
std::string MemoryToText(const MemoryReport& r, bool markdown);

// A plain aligned table; markdown switches to pipes.
std::string RenderTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        bool markdown);

}  // namespace gpuplan

#include "gpuplan/estimate.h"
#include "gpuplan/reliability.h"
#include "gpuplan/validation.h"

namespace gpuplan {

struct EstimateReport {
  Job job;
  HardwareContext hw;
  StepEstimate estimate;
  MemoryReport memory;
  std::string bottleneck;
  std::vector<WhatIf> what_ifs;  // the re-estimates behind the bottleneck sentence's claims
  std::optional<JobWallClock> wall;  // the wall-clock split (reliability.h R§5); nullopt without tokens
};

// How far to trust a number: the validated error band of the job's nearest group
// (data/error_bands.csv) as one line ("expected error: step time ±X% (p90 of N validated runs:
// group), memory ±Y% (...)") and as JSON ({"step_time": {...} | null, "memory": {...} | null}).
std::string ExpectedErrorLine(const ExpectedError& e);
nlohmann::json ExpectedErrorToJson(const ExpectedError& e);

nlohmann::json EstimateToJson(const EstimateReport& r);
std::string EstimateToText(const EstimateReport& r, bool markdown);
// `gpuplan estimate --ops`: one layer's ops (include/gpuplan/ops.h) with FLOPs, HBM bytes, kernels
// and forward/backward seconds, the passes they fold into, and the output layer's ops.
std::string OpsToText(const Job& job, const HardwareContext& hw);
nlohmann::json OpsToJson(const Job& job, const HardwareContext& hw);

// Validation: a terminal table and the Markdown page docs/validation.md.
std::string ValidationToText(const ValidationReport& r, bool all_rows);
// `cal` (the constants in force) is listed at the end so a report says what produced it.
std::string ValidationToMarkdown(const ValidationReport& r, const std::string& input_path, const Calibration& cal);

}  // namespace gpuplan

#include "gpuplan/plan.h"

namespace gpuplan {

// What the printers add to each plan that the search does not carry: its GPU's efficiency note
// and the validated error band of its group. With a null catalog neither is resolved (the JSON
// fields are null).
struct PlanPrintContext {
  const Catalog* catalog = nullptr;      // Default: none.
  const Calibration* cal = nullptr;      // Default: none (Calibration::Builtin() when a catalog is given).
  bool explain = false;                  // Default: false. Text: every rejection code of the search, not the summary.
  bool wide = false;                     // Default: false. Text: every column of the plans table (MFU, goodput, ...).
};
nlohmann::json PlanToJson(const PlanResult& r, const Job& job, const PlanPrintContext& ctx = {});
std::string PlanToText(const PlanResult& r, const Job& job, bool markdown, const PlanPrintContext& ctx = {});

}  // namespace gpuplan

#include "gpuplan/serving.h"

namespace gpuplan {

// `gpuplan serving`: one record, two printers (src/report/serving_report.cc).
struct ServingReport {
  Job job;
  GpuSpec gpu;
  ServingEngineProfile engine;  // the profile the estimate used (how the memory table reads)
  ServingEstimate estimate;
  std::string launch;  // the engine's launch line for the flags the estimate assumed ("" = none)
};
// The keys (kv_cache_bytes_per_token, kv_cache_capacity_tokens, max_concurrency, ttft_s and
// tpot_s {mean, p90}, output_tokens_per_s[_per_gpu], requests_per_s, cost_per_million_output_tokens_usd,
// bottleneck) plus the start-up memory, the decode step and the notes; latency, throughput and cost
// are null when the model does not fit, cost is null when unpriced.
nlohmann::json ServingToJson(const ServingReport& r);
// At most kTextWidth columns once PrintFitted wraps the prose lines (tables fit as they are).
std::string ServingToText(const ServingReport& r, bool markdown);

}  // namespace gpuplan
