// Calibration constants (data/calibration.csv): every number with its source or fit report.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "gpuplan/csv.h"
#include "gpuplan/status.h"

namespace gpuplan {

// The range a calibration key may take (its rule in src/core/calibration.cc); nullopt = not a key.
std::optional<NumberRange> CalibrationKeyRange(const std::string& key);

class Calibration {
 public:
  // The built-in data/calibration.csv, plus an optional user file of the same header.
  static Result<Calibration> Load(const std::string& override_file = "");
  static const Calibration& Builtin();  // aborts only if the shipped file is broken (unit-tested)
  double Get(const std::string& key) const;  // programmer error if absent (unit-tested keys)
  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  void Set(const std::string& key, double v) { values_[key] = v; }
  const std::map<std::string, double>& values() const { return values_; }

 private:
  std::map<std::string, double> values_;
};

}  // namespace gpuplan
