// data/error_bands.csv: the validated error by group, and the nearest-group lookup.
#include "gpuplan/error_bands.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"

namespace gpuplan {

namespace {
constexpr const char* kHeader = "kind,framework,gpu_family,method,rows,median_abs,p90_abs,mean_signed,p90_under";
}  // namespace

std::string ErrorBand::Group() const {
  std::string g;
  auto add = [&](const char* k, const std::string& v) {
    if (v != "*") g += (g.empty() ? "" : " x ") + std::string(k) + "=" + v;
  };
  add("framework", framework);
  add("gpu", gpu_family);
  add("method", method);
  return g.empty() ? "all runs" : g;
}

Result<ErrorBands> ErrorBands::Parse(std::string_view text, const std::string& file_name) {
  ErrorBands out;
  if (text.find_first_not_of(" \r\n\t") == std::string_view::npos) return out;
  auto table = ParseCsv(std::string(text), file_name);
  if (!table.ok()) return table.status();
  for (const char* col : {"kind", "framework", "gpu_family", "method", "rows", "median_abs", "p90_abs", "mean_signed"})
    if (table->Column(col) < 0) return Status::BadInput({file_name, 1, col}, std::string("missing column (expected ") + kHeader + ")");
  for (const auto& row : table->rows) {
    CsvRecord r(*table, row);
    ErrorBand b;
    b.kind = r.Str("kind");
    if (b.kind != "throughput" && b.kind != "memory") return Status::BadInput(r.Where("kind"), "must be throughput or memory");
    b.framework = r.Str("framework");
    b.gpu_family = r.Str("gpu_family");
    b.method = r.Str("method");
    auto rows = r.OptInteger("rows", 0, 100'000'000);
    if (!rows.ok()) return rows.status();
    b.rows = static_cast<int>(rows->value_or(0));
    auto med = r.Number("median_abs", {0, 1e6});
    auto p90 = r.Number("p90_abs", {0, 1e6});
    auto mean = r.Number("mean_signed", {-1e6, 1e6});
    if (!med.ok()) return med.status();
    if (!p90.ok()) return p90.status();
    if (!mean.ok()) return mean.status();
    b.median_abs = *med;
    b.p90_abs = *p90;
    b.mean_signed = *mean;
    // p90_under was added later: a file without it reads p90_abs (the conservative bound).
    b.p90_under = b.p90_abs;
    if (r.Has("p90_under")) {
      auto under = r.Number("p90_under", {0, 1e6});
      if (!under.ok()) return under.status();
      b.p90_under = *under;
    }
    out.bands_.push_back(std::move(b));
  }
  return out;
}

const ErrorBands& ErrorBands::Builtin() {
  static const ErrorBands b = [] {
    auto r = Parse(EmbeddedData("error_bands.csv"), "data/error_bands.csv");
    if (!r.ok()) {
      std::fprintf(stderr, "internal: %s\n", r.status().ToString().c_str());
      std::abort();
    }
    return *r;
  }();
  return b;
}

std::optional<ErrorBand> ErrorBands::Nearest(const std::string& kind, const std::string& framework,
                                             const std::string& gpu_family, const std::string& method, int min_rows) const {
  struct Level { std::string fw, fam, m; };
  std::vector<Level> levels;
  if (!gpu_family.empty()) levels.push_back({framework, gpu_family, method});
  levels.push_back({framework, "*", method});
  levels.push_back({"*", "*", method});
  levels.push_back({"*", "*", "*"});
  for (const auto& l : levels)
    for (const auto& b : bands_)
      if (b.kind == kind && b.framework == l.fw && b.gpu_family == l.fam && b.method == l.m && b.rows >= min_rows) return b;
  return std::nullopt;
}

ExpectedError ExpectedErrorFor(const Job& job, const std::string& gpu_family, const ErrorBands& bands) {
  const std::string fw = ToString(job.training.framework), method = ToString(job.training.method);
  return {bands.Nearest("throughput", fw, gpu_family, method), bands.Nearest("memory", fw, gpu_family, method), fw, gpu_family};
}

bool BandIsBorrowed(const ErrorBand& band, const std::string& framework, const std::string& gpu_family) {
  if (framework.empty()) return false;
  return band.framework != framework || (!gpu_family.empty() && band.gpu_family != gpu_family);
}

MemoryHeadroom MemoryHeadroomFor(const Job& job, const std::string& gpu_family, const Calibration& cal, const ErrorBands& bands) {
  MemoryHeadroom h;
  if (job.IsSet("constraints.min_memory_headroom")) {
    h.fraction = job.constraints.min_memory_headroom;
    h.source = "constraints.min_memory_headroom";
    h.user_set = true;
    return h;
  }
  const int min_rows = static_cast<int>(cal.Get("memory_headroom_min_rows"));
  h.band = bands.Nearest("memory", ToString(job.training.framework), gpu_family, ToString(job.training.method), min_rows);
  if (!h.band) {
    h.fraction = cal.Get("memory_model_error_margin");
    h.source = "the memory model's p90 error over all validated runs (no memory group with " + std::to_string(min_rows) +
               " or more runs; docs/validation.md)";
    return h;
  }
  const double cap = cal.Get("memory_headroom_max");
  h.capped = h.band->p90_under > cap;
  h.fraction = std::min(h.band->p90_under, cap);
  char buf[300];
  std::snprintf(buf, sizeof buf, "p90 under-prediction %.0f%% on %d validated runs (%s)%s", 100 * h.band->p90_under, h.band->rows,
                h.band->Group().c_str(), h.capped ? (", capped at " + std::to_string(static_cast<int>(100 * cap + 0.5)) + "%").c_str() : "");
  h.source = buf;
  return h;
}

std::string ErrorBandsToCsv(const std::vector<ErrorBand>& bands) {
  std::string out = std::string(kHeader) + "\n";
  char buf[512];
  for (const auto& b : bands) {
    std::snprintf(buf, sizeof buf, "%s,%s,%s,%s,%d,%.4f,%.4f,%.4f,%.4f\n", b.kind.c_str(), b.framework.c_str(), b.gpu_family.c_str(),
                  b.method.c_str(), b.rows, b.median_abs, b.p90_abs, b.mean_signed, b.p90_under);
    out += buf;
  }
  return out;
}

}  // namespace gpuplan
