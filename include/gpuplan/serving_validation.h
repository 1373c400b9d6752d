// Served runs -> serving jobs -> EstimateServing -> error by engine, GPU, metric and scenario
// (gpuplan validate on serving files; docs/validation.md "Serving").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/job.h"
#include "gpuplan/serving.h"
#include "gpuplan/validation.h"

namespace gpuplan {

// The two serving file formats, told apart by their header: the wide served-run table (one row per
// run, TTFT/TPOT/throughput columns: serving_runs.csv) and the long inference table (one metric
// per row: source, engine, ..., metric, value, unit: inference.csv).
enum class ServingFileKind { kNone, kServingRuns, kInferenceTable };
ServingFileKind DetectServingFile(const std::vector<std::string>& header);
ServingFileKind DetectServingFile(const std::string& path);  // kNone when unreadable

// One measured number of a run, in its source's own meaning. `metric` is one of
// ttft_mean_s, ttft_p50_s, ttft_p90_s, tpot_mean_s, tpot_p50_s, tpot_p90_s, itl_mean_s, itl_p50_s,
// e2e_latency_mean_s, output_tokens_per_s (all GPUs), output_tokens_per_s_per_gpu, requests_per_s.
struct ServingMeasure {
  std::string metric;
  double value = 0;
  std::string skip_reason;         // non-empty: read but not compared (e.g. TTFT the source calls unreliable)
};

// How the load was applied, as the source ran it.
enum class ServingScenario {
  kConcurrency,   // a fixed number of requests in flight (benchmark max_concurrency, a static batch)
  kBurst,         // num_requests sent at t=0 (request rate inf): TTFT is queueing
  kOffline,       // offline max-throughput (trtllm-bench, vLLM's offline throughput test)
  kRequestRate,   // Poisson arrivals at a rate
};
std::string ToString(ServingScenario s);  // concurrency burst offline request_rate

struct ServingRunRow {
  std::string file;
  int line = 0;
  std::string id, source, fold;    // fold: the leave-one-source-out group (the source group column, else LosoFold)
  std::string engine_text, model_text, gpu_text, precision_text, flags;
  Job job;                         // the serving job (model, GPU, tp/pp/dp, serving section)
  ServingScenario scenario = ServingScenario::kConcurrency;
  int64_t num_requests = 0;        // burst and offline: requests sent at once (0: not stated)
  std::string dataset;
  bool engine_only = false;        // measured in the engine's own benchmark, without an HTTP front end             // the prompt set (ShareGPT, random, ...) as the source names it
  std::vector<ServingMeasure> measures;
  bool usable = false;
  std::string skip_reason;         // why the whole row is not predicted
  std::string unreadable;          // file:line: column: reason of a cell that could not be read
};

struct ServingRowOptions {
  // Folders of Hugging Face config.json files, read for a model that has no preset: a file whose
  // name is the model's (org, quantisation and -Instruct suffixes dropped, '-' '_' and "moe-" ignored).
  std::vector<std::string> model_config_dirs;  // Default: none (presets only).
};

// Reads a serving file of either kind into jobs (one ServingRunRow per CSV row). A row that cannot
// be modelled is kept with its skip_reason; a file with neither header is an error at line 1.
Result<std::vector<ServingRunRow>> ReadServingRows(const std::string& path, const Catalog& catalog,
                                                   const ServingRowOptions& options = {});

// One compared number.
struct ServingCompared {
  size_t row = 0;                  // index into ServingValidationReport::rows
  std::string metric;              // ServingMeasure::metric
  std::string family;              // TTFT, TTFT p90, TPOT, TPOT p90, throughput, latency
  double measured = 0, predicted = 0, error = 0;  // error = (predicted - measured) / measured
  bool loso = false;
  double loso_predicted = 0, loso_error = 0;
};

struct ServingValidationReport {
  std::vector<ServingRunRow> rows;
  std::vector<std::string> row_reasons;   // per row: "" (predicted) or why not
  std::vector<ServingCompared> compared;
  int rows_total = 0, rows_predicted = 0;
  bool has_loso = false;
  std::vector<std::string> loso_warnings;
};

// Predicts every usable row with EstimateServing and compares each of its measures. With `loso`
// (fold -> calibration keys), every row is predicted a second time with its fold's constants.
Result<ServingValidationReport> ValidateServing(const std::vector<std::string>& paths, const Catalog& catalog,
                                                const Calibration& cal,
                                                const std::vector<ServingEngineProfile>& engines,
                                                const ServingRowOptions& options = {},
                                                const LosoFits* loso = nullptr);

// Median |error| of one group, over- and under-prediction apart.
struct ServingErrorSummary {
  std::string group;
  int n = 0;
  double median_abs = 0, p90_abs = 0;
  OverUnder sides;
};
// The compared numbers of `family` grouped by `dimension` (engine, GPU, scenario, source, all),
// with the in-sample (loso = false) or leave-one-source-out errors.
std::vector<ServingErrorSummary> SummarizeServing(const ServingValidationReport& r, const std::string& family,
                                                  const std::string& dimension, bool loso);
// The bars: TPOT, throughput, low-concurrency TTFT (concurrency <= kLowConcurrency) medians.
inline constexpr double kLowConcurrency = 8;
struct ServingHeadline {
  ServingErrorSummary tpot, throughput, ttft_low;
  double share_predicted = 0;
};
ServingHeadline ServingHeadlines(const ServingValidationReport& r, bool loso);

std::string ServingValidationToText(const ServingValidationReport& r, bool all_rows);
std::string ServingValidationToMarkdown(const ServingValidationReport& r, const std::string& inputs);
// Every compared number as CSV (id,fold,engine,gpu,scenario,family,metric,measured,predicted,error,
// loso_error): tools/fit_serving.py reads it.
std::string ServingComparedToCsv(const ServingValidationReport& r);

}  // namespace gpuplan
