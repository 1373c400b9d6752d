#include "gpuplan/calibration.h"

#include <cstdio>
#include <cstdlib>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"

namespace gpuplan {

namespace {
Status LoadInto(const CsvTable& t, std::map<std::string, double>& out) {
  if (t.Column("key") < 0 || t.Column("value") < 0)
    return Status::BadInput({t.file, 1, ""}, "a calibration file has columns key,value,...");
  for (const auto& row : t.rows) {
    CsvRecord r(t, row);
    auto v = r.Number("value");
    if (!v.ok()) return v.status();
    out[r.Str("key")] = *v;
  }
  return Status::Ok();
}
}  // namespace

Result<Calibration> Calibration::Load(const std::string& override_file) {
  Calibration c;
  for (const char* name : {"calibration.csv", "efficiency.csv"}) {
    std::string_view text = EmbeddedData(name);
    if (text.empty()) continue;
    auto t = ParseCsv(std::string(text), std::string("data/") + name);
    if (!t.ok()) return t.status();
    GPUPLAN_RETURN_IF_ERROR(LoadInto(*t, c.values_));
  }
  if (!override_file.empty()) {
    auto t = ReadCsvFile(override_file);
    if (!t.ok()) return t.status();
    GPUPLAN_RETURN_IF_ERROR(LoadInto(*t, c.values_));
  }
  return c;
}

const Calibration& Calibration::Builtin() {
  static const Calibration c = [] {
    auto r = Load();
    if (!r.ok()) {
      std::fprintf(stderr, "internal: %s\n", r.status().ToString().c_str());
      std::abort();
    }
    return *r;
  }();
  return c;
}

double Calibration::Get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    std::fprintf(stderr, "internal: calibration key '%s' missing from data\n", key.c_str());
    std::abort();
  }
  return it->second;
}

}  // namespace gpuplan
