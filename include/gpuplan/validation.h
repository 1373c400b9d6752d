// Predicting published runs and summarizing the error (gpuplan validate, docs/validation.md).
#pragma once

#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/error_bands.h"
#include "gpuplan/validation_rows.h"

namespace gpuplan {

struct ValidatedRow {
  MeasuredRow row;
  bool used = false;
  std::string reason;             // why not used (skip reason, duplicate run, unconvertible metric)
  bool memory = false;            // a peak-memory row (GiB) rather than a throughput row
  double measured_tokens_per_s_per_gpu = 0;   // or measured GiB for memory rows
  double predicted_tokens_per_s_per_gpu = 0;  // or predicted GiB (of the statistic the row measured)
  double predicted_mfu = 0;
  double error = 0;               // (predicted - measured) / measured
  // What was compared: "tokens/s", "useful tokens/s" (non-padding, or at the stated mean sample
  // length), or the memory statistic ("reserved", "allocated", "device total", "reserved (stat not named)").
  std::string basis;
  // The groups of the row (docs/validation.md "Groups"), set for every row with a job.
  std::string framework;          // ToString(job.training.framework)
  std::string gpu_family;         // catalog family of the GPU
  std::string method;             // ToString(job.training.method)
  std::string scale;              // ScaleGroup(num_gpus)
  bool held_out = false;          // in the held-out part of the stated split (InHeldOutSet)
  // A run that ran, called out of memory: the predicted device total (EstimateMemory's total_bytes,
  // what `gpuplan memory` compares) above the GPU's memory; set for memory and throughput rows.
  double predicted_total_gib = 0;
  bool called_oom = false;
};

struct ErrorSummary {
  std::string group;              // source, GPU, framework, ... (the table says which)
  int rows = 0;
  double median_abs = 0, p90_abs = 0, mean_signed = 0;
};

// One dimension of grouping (framework, GPU family, method, scale, source), for throughput rows
// and for memory rows.
struct GroupTable {
  std::string dimension;          // "framework", "GPU family", "method", "scale", "source"
  std::vector<ErrorSummary> throughput, memory;
};

struct ValidationReport {
  std::vector<ValidatedRow> rows;
  ErrorSummary overall;           // throughput rows
  ErrorSummary memory;            // peak-memory rows
  std::vector<ErrorSummary> by_source, by_gpu;  // throughput rows
  std::vector<GroupTable> groups;               // framework, GPU family, method, scale, source
  // The stated train/test split (SplitRule()): error on the fitting subset and on the held-out rest.
  ErrorSummary fit_throughput, held_out_throughput, fit_memory, held_out_memory;
  GroupTable split_by_framework;  // "<framework>: fit" / "<framework>: held out" (per-framework constants)
  // data/error_bands.csv: framework x family x method, framework x method, method, all runs.
  std::vector<ErrorBand> bands;
  // Peak memory split by the sign of the error: over-prediction costs users GPUs, under-prediction
  // an OOM ("memory over-predicted" / "memory under-predicted"; a zero error counts as over).
  std::vector<ErrorSummary> memory_sides;
  // Measured runs the model calls out of memory: memory rows and throughput rows (runs that ran).
  int memory_rows_called_oom = 0, throughput_rows_called_oom = 0;
};

// Predicts every usable row of a runs.csv-format file in tokens/s per GPU.
// Several files (e.g. runs.csv and memory.csv) are predicted together and summarized once.
Result<ValidationReport> ValidateRuns(const std::vector<std::string>& paths, const Catalog& catalog, const Calibration& cal);

// The scale group of a run: "1 GPU", "2-8 GPUs", "9-64 GPUs", "65-512 GPUs", ">512 GPUs".
std::string ScaleGroup(int64_t num_gpus);

// The stated split: a row is held out when FNV-1a-64 of "repository|model_name|gpu|num_gpus"
// (the source's repository, the model column, the catalog GPU id, the GPU count) is 0 mod 3; the
// rest is the fitting subset. Whole configurations of one study stay on one side, and every
// source with several models or GPU counts has rows on both.
bool InHeldOutSet(const MeasuredRow& row);
std::string SplitRule();  // the rule above in one sentence, printed in every report

// The source's repository ("github:owner/repo@c:path (...)" -> "owner/repo"); other sources up to
// the first ' ' or '@'.
std::string SourceRepository(const std::string& source);

}  // namespace gpuplan
