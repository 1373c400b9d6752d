// How far to trust an estimate: the error that `gpuplan validate` measured on published runs, by
// group (data/error_bands.csv, written by `gpuplan validate --bands`; docs/validation.md explains
// the groups). Every estimate and plan prints the band of its nearest group.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/job.h"
#include "gpuplan/status.h"

namespace gpuplan {

// A group needs this many validated runs before its band is used (smaller groups are listed in
// docs/validation.md and data/error_bands.csv, never used as a band).
constexpr int kMinBandRows = 5;

// "*" in framework / gpu_family / method: any (a coarser group).
struct ErrorBand {
  std::string kind;        // throughput | memory
  std::string framework;   // ToString(Framework), or "*"
  std::string gpu_family;  // catalog family (hopper, ampere, ...), or "*"
  std::string method;      // ToString(Method), or "*"
  int rows = 0;            // validated runs in the group
  double median_abs = 0, p90_abs = 0, mean_signed = 0;  // fractions: (predicted - measured) / measured
  // p90 of max(0, -error): how far below the measurement 9 runs in 10 stay. A prediction p needs
  // headroom h >= -error to hold the run (p <= capacity x (1 - h) and measured = p / (1 + error)),
  // so this is the memory headroom that covers 9 runs in 10; over-predictions need none.
  double p90_under = 0;
  // "framework=megatron x gpu=hopper x method=full", "method=lora", "all runs".
  std::string Group() const;
};

class ErrorBands {
 public:
  // data/error_bands.csv as compiled in; empty when the file is empty or absent. Aborts only if the
  // shipped file is malformed (unit-tested).
  static const ErrorBands& Builtin();
  static Result<ErrorBands> Parse(std::string_view text, const std::string& file_name);
  // The nearest group with at least `min_rows` runs of `kind`: framework x family x method, then
  // framework x method, then method, then all runs. An empty family skips the first level.
  std::optional<ErrorBand> Nearest(const std::string& kind, const std::string& framework, const std::string& gpu_family,
                                   const std::string& method, int min_rows = kMinBandRows) const;
  const std::vector<ErrorBand>& bands() const { return bands_; }
  void Add(ErrorBand b) { bands_.push_back(std::move(b)); }

 private:
  std::vector<ErrorBand> bands_;
};

// The bands of a job on a GPU family (empty family: not pinned), nearest group each: what every
// estimate and plan prints and what the planner's default memory headroom uses.
struct ExpectedError {
  std::optional<ErrorBand> throughput;  // step time / tokens per second
  std::optional<ErrorBand> memory;      // peak memory per GPU
  // What was asked: the job's framework and GPU family (empty = not known; then no band is
  // called borrowed). Default: empty.
  std::string framework, gpu_family;
};

// True when `band` was measured on other frameworks or (with a known family) other GPU families
// than the job's: printed as "no validation for this family", never as a ± figure.
bool BandIsBorrowed(const ErrorBand& band, const std::string& framework, const std::string& gpu_family);
ExpectedError ExpectedErrorFor(const Job& job, const std::string& gpu_family, const ErrorBands& bands = ErrorBands::Builtin());

// The memory headroom a layout must leave free (docs/model/memory.md "The margin"): the user's
// constraints.min_memory_headroom when set; else the p90 under-prediction (signed error: an
// over-predicted run needs none) of the nearest memory group with at least
// memory_headroom_min_rows runs (calibration; falling back to the method's pooled band, then all
// runs), capped at memory_headroom_max; else memory_model_error_margin.
struct MemoryHeadroom {
  double fraction = 0;            // of GPU memory kept free
  std::string source;             // for users: where the fraction came from
  std::optional<ErrorBand> band;  // the group used, when one was
  bool capped = false;            // the band's p90 under-prediction exceeded memory_headroom_max
  bool user_set = false;          // constraints.min_memory_headroom
};
MemoryHeadroom MemoryHeadroomFor(const Job& job, const std::string& gpu_family, const Calibration& cal,
                                 const ErrorBands& bands = ErrorBands::Builtin());

// The CSV text of `bands` (the header Parse reads).
std::string ErrorBandsToCsv(const std::vector<ErrorBand>& bands);

}  // namespace gpuplan
