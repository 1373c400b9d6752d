// Where to look when a job is slow or fails: symptoms and measurements in, likely causes out,
// ranked, each with the model's numbers and the check that would confirm it (docs/diagnose.md).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/job.h"
#include "gpuplan/status.h"

namespace gpuplan {

enum class Symptom { kOom, kNcclTimeout, kSlowMultinode, kSlowCheckpoint, kLossNan };
std::string ToString(Symptom s);
std::optional<Symptom> ParseSymptom(const std::string& name);
const std::vector<std::string>& SymptomNames();

// What the user saw; every field is optional.
struct Observations {
  std::optional<double> gpu_util_pct;            // nvidia-smi utilization.gpu, averaged
  std::optional<double> cpu_util_pct;            // host CPU busy, all cores
  std::optional<double> tokens_per_s;            // measured, the whole job
  Location tokens_per_s_from;                    // the log line it was read from (or the flag)
  std::optional<double> host_cores_per_gpu;      // vCPUs per GPU on the host
  std::optional<double> loader_tokens_per_s_per_core;  // the data pipeline's rate on one core (probe --bench cpu)
  std::optional<double> checkpoint_s;            // measured time of one checkpoint save
  std::optional<std::string> nccl_transport;     // "NET/Socket", "NET/IB", "NET/IB/GDRDMA", "P2P", ... (a NCCL log)
  Location nccl_transport_from;
  std::vector<Symptom> symptoms;
  // From tool outputs (diagnose --file, read by verify's parsers):
  struct BusBw {
    double gb_per_s = 0;        // nccl-tests bus bandwidth at the largest message
    std::string op = "all_reduce";
    int64_t ranks = 0, nodes = 0;
    double bytes = 0;
    Location where;
  };
  std::optional<BusBw> busbw;
  int throttled_gpus = 0;                        // nvidia-smi -q: thermal or HW slowdown active
  Location throttled_from;
  std::optional<Location> ib_completion_error;   // a NCCL log's IB completion error
};

struct Cause {
  std::string id;        // stable: data_loader, network_no_rdma, network_slow, oom_model, ...
  std::string title;     // one line
  std::string evidence;  // with the model's numbers
  std::string confirm;   // the check that would confirm it (a command)
  std::string fix;       // what to change
  std::string source;    // the docs/troubleshooting.md section it comes from
  double score = 0;      // 0..1, how strongly the evidence points here
};

struct Diagnosis {
  double expected_tokens_per_s = 0;
  double expected_step_s = 0;
  std::optional<double> measured_over_expected;  // tokens_per_s / expected
  std::optional<double> band_p90;                // the model's own p90 error for this kind of job
  std::vector<Cause> causes;                     // most likely first; ties in docs/troubleshooting.md's order
};

// Ranks the causes for the job's symptoms and observations with numbers from the model
// (EstimateStep, EstimateMemory, what-if re-estimates on other fabrics).
Result<Diagnosis> Diagnose(const Job& job, const Catalog& catalog, const Calibration& cal, const Observations& obs);

// The median tokens/s of a training log: lines like "tokens/s: 4100", "4,100 tok/s",
// "tps: 4100", "tokens_per_second=4.1e3" (numbers read whole, exponent included); the location
// is the median line. A rate outside data/reading_ranges.csv's tokens/s row (0, negative, 1e308)
// or a line too long to be a log line is a warning at its line, not a rate. Bad input when no
// line carries a rate in range (located at the first warning when there is one).
struct LogRate {
  double tokens_per_s = 0;
  Location where;
  int lines = 0;
  std::vector<std::pair<Location, std::string>> warnings;  // lines not read, and why
};
Result<LogRate> ReadTokensPerSecond(const std::string& text, const std::string& file);

}  // namespace gpuplan
