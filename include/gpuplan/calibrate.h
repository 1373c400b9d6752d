// gpuplan calibrate: measurements of a pool (the ledger) turned into the calibration overrides that
// --calibration reads, each row citing the measurement it came from (docs/calibrate.md).
#pragma once

#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/job.h"
#include "gpuplan/ledger.h"

namespace gpuplan {

// One calibration override and where it came from.
struct CalibrationOverride {
  std::string key;          // a calibration key (data/calibration.csv, data/efficiency.csv)
  double value = 0;         // fitted so that the model gives the measured value
  double before = 0;        // the value the model used before
  std::string unit;
  std::string measured;     // "busbw_gb_per_s = 181.2 GB/s"
  std::string model_before; // what the model gave before, in the measurement's unit
  Measurement from;         // the measurement (ledger row)
  std::string note;         // e.g. "clamped at the key's bound 1.0"
};

struct CalibrateResult {
  std::vector<CalibrationOverride> overrides;
  std::vector<std::string> skipped;  // measurements that calibrate nothing, each with why
};

// The job says what hardware the pool is (GPU, GPUs per node, network) and, for a measured step
// time or tokens/s, the job that ran. Measurements of one kind and context use their median;
// kinds calibrate:
//   busbw_gb_per_s / busbw_peak_gb_per_s (nccl-tests; context op, ranks, nodes, bytes)
//       -> link_eff.<inter kind> (several nodes) or the intra-node link's key (one node)
//   gemm_tflops (context m, n, k or size)         -> matmul_eff_max.<gpu id>
//   storage_seq_write_mb_per_s (local disk)       -> local_nvme_write_bytes_per_s_per_node
//   step_time_s / tokens_per_s (context: the job) -> framework_overhead
// Each key is solved by bisection within its allowed range so that the model reproduces the
// measurement (the closed form where there is one); a measurement the model cannot reach at the
// bound is clamped there and says so.
Result<CalibrateResult> CalibrateFromMeasurements(const Job& job, const Catalog& catalog, const Calibration& base,
                                                  const std::vector<Measurement>& measurements);

// The overrides as a calibration CSV (key,value,unit,source,date,notes), which
// `Calibration::Load(file)` reads; the source column cites the ledger row.
std::string CalibrationOverridesToCsv(const std::vector<CalibrationOverride>& overrides);

// The overrides applied to a calibration (what estimate/plan --ledger use directly).
void ApplyOverrides(const std::vector<CalibrationOverride>& overrides, Calibration& cal);

}  // namespace gpuplan
