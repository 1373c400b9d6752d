// Rows of published measurements (shared/validation/runs.csv and memory.csv share the columns)
// turned into jobs. How free-text columns are read is specified in docs/validation-rows.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/csv.h"
#include "gpuplan/job.h"

namespace gpuplan {

struct MeasuredRow {
  int line = 0;
  std::string file;          // the file the row came from
  std::string source;        // the row's source column
  std::string model_name;
  std::string metric;        // measured_metric
  double measured = 0;       // measured_value
  std::string unit;
  Job job;                   // the configuration, ready for the estimators
  bool usable = false;
  std::string skip_reason;   // why a row cannot be modelled (never dropped silently)
  std::string unreadable;    // a cell that could not be read: "file:line: column: reason" ("" = none)
  bool compiled = false;     // torch.compile in the notes
  bool fsdp_pure_bf16 = false;  // FSDP mixed_precision=PURE (bf16 grads/reduce)
  bool dp_overlap = true;    // gradient reduce overlapped with backward
  // Issue 9 row facts read from the notes (docs/validation.md says how):
  std::string framework_text;   // the notes' framework=..., or the source's repository
  std::string seq_len_kind = "fixed";  // fixed | max_cap (seq_len is a cap) | variable (no cap)
  double mean_tokens_per_sample = 0;   // non-padding tokens per sample, 0 = not stated
  double samples_per_epoch = 0;        // epoch_time_s rows: samples in one epoch, 0 = not stated
  // Memory rows: which statistic the source measured, and bytes per unit of measured_value.
  enum class MemoryStat { kUnknown, kReserved, kAllocated, kDeviceTotal };
  MemoryStat memory_stat = MemoryStat::kUnknown;
  double unit_bytes = 0;               // 1e9 for GB, 2^30 for GiB, 1e6 for MB, 2^20 for MiB
  std::string job_precision_text;      // the precision column as written
};

// A GPU as published prose names it ("A100 80GB SXM", "H100 80GB (form factor not stated)",
// "Tesla V100-SXM2-32GB"): the catalog id, or nullopt. An unstated form factor is SXM.
std::optional<std::string> MatchGpuName(const Catalog& catalog, const std::string& text);

// Reads every row; rows that cannot be modelled come back with usable=false and the reason.
Result<std::vector<MeasuredRow>> ReadMeasuredRows(const std::string& path, const Catalog& catalog);

}  // namespace gpuplan
