// Mixed-pool validation: published runs with pinned layouts (AMP, Sailor; their rows in the hetero_homog_runs
// format) predicted through EstimateOnPool, with median error, rank correlation and failed runs flagged.
#pragma once

#include <string>
#include <vector>

#include "gpuplan/csv.h"
#include "gpuplan/pool.h"

namespace gpuplan {

struct PoolValidationRow {
  std::string id, source, system, model, gpu_mix, status, layout;
  bool failed_run = false;      // the run could not start (status FAILED_RUN)
  double measured_s = 0;        // s/iteration (0 = none)
  double predicted_s = 0;
  bool fits = true;             // every stage fits its card (the model's verdict)
  // H§3 the same run with each card's measured per-layer forward time (hardware.csv layer_forward_ms) as
  // layer_time_scale.<gpu>; 0 when a card of the run has no measured layer time.
  double calibrated_s = 0;
  bool calibrated_fits = true;
  std::string scales;           // "t4-16gb x3.21" per card, for the report
  std::string skip;             // why the row was not predicted ("" = predicted)
};

struct PoolValidationSummary {
  std::string system;
  std::vector<double> errors, measured, predicted;  // measured runs: predicted / measured - 1, and the pairs
  double median_abs = 0, spearman = 0;
  int64_t failed_runs = 0, failed_flagged = 0, measured_flagged = 0, skipped = 0;
  // The same with the measured layer times (rows whose cards all have one).
  std::vector<double> cal_errors, cal_measured, cal_predicted;
  double cal_median_abs = 0, cal_spearman = 0;
  int64_t cal_failed_runs = 0, cal_failed_flagged = 0;
};

struct PoolValidationReport {
  std::vector<PoolValidationRow> rows;
  std::vector<PoolValidationSummary> systems;
};

bool IsPoolRunsFile(const CsvTable& t);
// Spearman's rank correlation (average ranks for ties); 0 for fewer than 3 pairs.
double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b);
Result<PoolValidationReport> ValidatePoolRuns(const std::vector<std::string>& files, const std::string& hardware_csv,
                                              const std::string& models_csv, const Catalog& catalog, const Calibration& cal);
std::string PoolValidationToMarkdown(const PoolValidationReport& rep);

}  // namespace gpuplan
