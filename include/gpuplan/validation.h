// Predicting published runs and summarizing the error (gpuplan validate, docs/validation.md).
#pragma once

#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/validation_rows.h"

namespace gpuplan {

struct ValidatedRow {
  MeasuredRow row;
  bool used = false;
  std::string reason;             // why not used (skip reason, duplicate run, unconvertible metric)
  bool memory = false;            // a peak-memory row (GiB) rather than a throughput row
  double measured_tokens_per_s_per_gpu = 0;   // or measured GiB for memory rows
  double predicted_tokens_per_s_per_gpu = 0;  // or predicted GiB for memory rows
  double predicted_mfu = 0;
  double error = 0;               // (predicted - measured) / measured
};

struct ErrorSummary {
  std::string group;              // source or GPU
  int rows = 0;
  double median_abs = 0, p90_abs = 0, mean_signed = 0;
};

struct ValidationReport {
  std::vector<ValidatedRow> rows;
  ErrorSummary overall;           // throughput rows
  ErrorSummary memory;            // peak-memory rows
  std::vector<ErrorSummary> by_source, by_gpu;
};

// Predicts every usable row of a runs.csv-format file in tokens/s per GPU.
// Several files (e.g. runs.csv and memory.csv) are predicted together and summarized once.
Result<ValidationReport> ValidateRuns(const std::vector<std::string>& paths, const Catalog& catalog, const Calibration& cal);

}  // namespace gpuplan
