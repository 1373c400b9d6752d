// Predicting published runs and summarizing the error (gpuplan validate, docs/validation.md).
#pragma once

#include <map>
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
  // Leave-one-source-out (docs/validation.md): the row's source (LosoFold) and, when the report was
  // given the per-source fits, the prediction with the constants fitted without that source.
  std::string fold;
  bool loso = false;              // predicted with its fold's constants
  double loso_predicted = 0;      // tokens/s per GPU or GiB, as predicted_tokens_per_s_per_gpu
  double loso_error = 0;          // (loso_predicted - measured) / measured
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

// The constants fitted without each source (data/loso_fits.csv, written by tools/fit_runs.py --loso):
// fold -> key -> value, with the model fingerprint and row count each fold was fitted at.
struct LosoFits {
  std::map<std::string, std::map<std::string, double>> values;  // fold -> calibration key -> value
  std::map<std::string, int> rows;                               // fold -> predicted rows at fit time
  std::map<std::string, bool> prior;                             // "fold|key" -> not fitted (no other source in scope)
  std::string fingerprint, date, file;
};
// Reads the file (`file:line: column: reason` on a bad cell or an unknown calibration key).
Result<LosoFits> ReadLosoFits(const std::string& path);
// The fold "(all sources)" of the file: the in-sample fit, for comparison only.
inline constexpr const char* kLosoInSample = "(all sources)";

// One constant across the folds: the spread of its fitted values (docs/validation.md).
struct LosoConstant {
  std::string key;
  double in_force = 0, in_sample = 0, min = 0, max = 0;
  int folds = 0, prior_folds = 0;  // folds fitted / folds left at the prior (no other source in scope)
  bool swings = false;             // max - min above 25% of max
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
  // Leave-one-source-out, when ValidateRuns had the fits: every usable row predicted with the
  // constants fitted without its source. Groups: source, framework, GPU family, method.
  bool has_loso = false;
  ErrorSummary loso_throughput, loso_memory;
  ErrorSummary in_sample_throughput, in_sample_memory;  // the same rows with the constants in force
  std::vector<GroupTable> loso_groups;
  GroupTable in_sample_by_source;  // the same rows by source, with the constants in force
  std::vector<LosoConstant> loso_constants;
  std::vector<std::string> loso_warnings;  // stale fit, sources without a fit
  // data/error_bands.csv: framework x family x method, framework x method, method, all runs; from
  // the leave-one-source-out errors when the report has them, else from the in-sample errors.
  std::vector<ErrorBand> bands;
  // Peak memory split by the sign of the error: over-prediction costs users GPUs, under-prediction
  // an OOM ("memory over-predicted" / "memory under-predicted"; a zero error counts as over).
  std::vector<ErrorSummary> memory_sides;
  // Measured runs the model calls out of memory: memory rows and throughput rows (runs that ran).
  int memory_rows_called_oom = 0, throughput_rows_called_oom = 0;
};

// Predicts every usable row of a runs.csv-format file in tokens/s per GPU.
// Several files (e.g. runs.csv and memory.csv) are predicted together and summarized once.
// With `loso`, every usable row is predicted a second time with the constants of its fold.
Result<ValidationReport> ValidateRuns(const std::vector<std::string>& paths, const Catalog& catalog, const Calibration& cal,
                                      const LosoFits* loso = nullptr);

// The leave-one-source-out fold of a source: the GitHub repository ("owner/repo"), else the text
// before the first " (", " '" or "," (a paper: "paper: Rajbhandari et al. 2020"). A repository's
// tables and result files are one team's measurements: they are left out together.
std::string LosoFold(const std::string& source);

// Over- and under-prediction apart: share of rows predicted high, median over-prediction (rows
// predicted high) and median under-prediction (rows predicted low, as a positive fraction).
struct OverUnder {
  double share_over = 0, median_over = 0, median_under = 0;
};
OverUnder SplitOverUnder(const std::vector<double>& signed_errors);

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
