// Rows of published measurements (shared/validation/runs.csv and memory.csv share the columns)
// turned into jobs. How free-text columns are read is documented in docs/validation.md.
#pragma once

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
  bool compiled = false;     // torch.compile in the notes
  bool fsdp_pure_bf16 = false;  // FSDP mixed_precision=PURE (bf16 grads/reduce)
  bool dp_overlap = true;    // gradient reduce overlapped with backward
};

// Reads every row; rows that cannot be modelled come back with usable=false and the reason.
Result<std::vector<MeasuredRow>> ReadMeasuredRows(const std::string& path, const Catalog& catalog);

}  // namespace gpuplan
