// data/serving_engines.csv: how each serving engine, at each version, sizes its KV cache at
// start-up and schedules requests (docs/model/serving.md S§2, S§4).
#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/serving.h"
#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

const char* const kColumns[] = {
    "engine", "version", "block_size", "memory_fraction_key", "memory_fraction_default", "memory_fraction_of",
    "cuda_graph_before_kv", "cuda_graph_bytes", "non_torch_bytes_tp1", "non_torch_bytes_tp",
    "activation_bytes_per_token_elem", "activation_fixed_bytes", "activation_sampler_bytes_per_seq_vocab",
    "max_num_seqs_large", "max_num_seqs_small", "max_num_batched_tokens_large", "max_num_batched_tokens_small",
    "large_gpu_min_bytes", "large_gpu_excludes", "chunked_prefill", "launch_command", "source", "date", "notes"};

constexpr double kMaxBytes = 1e15;        // far above any device's memory
constexpr double kMaxBytesPerElem = 1e6;  // bytes per token x element: a typo guard, not physics
constexpr int64_t kMaxTokens = int64_t{1} << 30;

// "0.19.0", "v0.19", "0.19.2rc1", "0.19.0+cu128" -> {0, 19, 0}: the leading dotted numbers.
std::optional<std::vector<int64_t>> VersionParts(const std::string& text) {
  std::string s = text;
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) s.erase(0, 1);
  std::vector<int64_t> parts;
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    int64_t v = 0;
    size_t digits = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && digits < 9; ++i, ++digits) v = v * 10 + (s[i] - '0');
    if (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;  // > 9 digits
    parts.push_back(v);
    if (i + 1 < s.size() && s[i] == '.' && std::isdigit(static_cast<unsigned char>(s[i + 1]))) ++i;
    else break;
  }
  if (parts.empty()) return std::nullopt;
  return parts;
}

// -1, 0, 1 comparing versions part by part; a missing part counts as 0 ("0.19" == "0.19.0").
int CompareVersions(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int64_t x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

// Whether `row` names a version family `asked` belongs to: its parts are a prefix of asked's.
bool VersionPrefix(const std::vector<int64_t>& row, const std::vector<int64_t>& asked) {
  return row.size() <= asked.size() && std::equal(row.begin(), row.end(), asked.begin());
}

template <class T>
Status Into(Result<T> parsed, T& out) {
  if (!parsed.ok()) return parsed.status();
  out = std::move(*parsed);
  return Status::Ok();
}

Status Bytes(const CsvRecord& r, const std::string& col, double& out) {
  return Into(r.Number(col, NumberRange{0, kMaxBytes}), out);
}

Status Count(const CsvRecord& r, const std::string& col, int64_t& out) {
  auto v = r.OptInteger(col, 1, kMaxTokens);
  if (!v.ok()) return v.status();
  if (!*v) return Status::BadInput(r.Where(col), "must be a whole number >= 1");
  out = **v;
  return Status::Ok();
}

// A row's version: digits separated by single dots ("0.19", "1.0", "1").
bool IsDottedVersion(const std::string& s) {
  if (s.empty() || s.front() == '.' || s.back() == '.' || s.find("..") != std::string::npos) return false;
  return s.size() <= 32 && VersionParts(s).has_value() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

Status ReadIdentity(const CsvRecord& r, ServingEngineProfile& e) {
  e.engine = r.Str("engine");
  if (e.engine.empty() || e.engine != Lower(e.engine) ||
      !std::all_of(e.engine.begin(), e.engine.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }))
    return Status::BadInput(r.Where("engine"), "expected a lower-case name (letters, digits, '-'), got '" + e.engine + "'");
  e.version = r.Str("version");
  if (!IsDottedVersion(e.version))
    return Status::BadInput(r.Where("version"), "expected a dotted version such as 0.19, got '" + e.version + "'");
  return Status::Ok();
}

Status ReadMemory(const CsvRecord& r, ServingEngineProfile& e) {
  e.memory_fraction_key = r.Str("memory_fraction_key");
  if (e.memory_fraction_key.empty()) return Status::BadInput(r.Where("memory_fraction_key"), "must name the engine's flag");
  GPUPLAN_RETURN_IF_ERROR(Into(r.Number("memory_fraction_default", NumberRange{0, 1, true}), e.memory_fraction_default));
  e.memory_fraction_of = r.Str("memory_fraction_of");
  if (e.memory_fraction_of != "total" && e.memory_fraction_of != "free")
    return Status::BadInput(r.Where("memory_fraction_of"), "expected total or free, got '" + e.memory_fraction_of + "'");
  GPUPLAN_RETURN_IF_ERROR(Into(r.YesNo("cuda_graph_before_kv"), e.cuda_graph_before_kv));
  GPUPLAN_RETURN_IF_ERROR(Bytes(r, "cuda_graph_bytes", e.cuda_graph_bytes));
  GPUPLAN_RETURN_IF_ERROR(Bytes(r, "non_torch_bytes_tp1", e.non_torch_bytes_tp1));
  GPUPLAN_RETURN_IF_ERROR(Bytes(r, "non_torch_bytes_tp", e.non_torch_bytes_tp));
  GPUPLAN_RETURN_IF_ERROR(Into(r.Number("activation_bytes_per_token_elem", NumberRange{0, kMaxBytesPerElem}), e.activation_bytes_per_token_elem));
  GPUPLAN_RETURN_IF_ERROR(Bytes(r, "activation_fixed_bytes", e.activation_fixed_bytes));
  return Into(r.Number("activation_sampler_bytes_per_seq_vocab", NumberRange{0, kMaxBytesPerElem}),
              e.activation_sampler_bytes_per_seq_vocab);
}

Status ReadScheduler(const CsvRecord& r, ServingEngineProfile& e) {
  GPUPLAN_RETURN_IF_ERROR(Count(r, "block_size", e.block_size));
  GPUPLAN_RETURN_IF_ERROR(Count(r, "max_num_seqs_large", e.max_num_seqs_large));
  GPUPLAN_RETURN_IF_ERROR(Count(r, "max_num_seqs_small", e.max_num_seqs_small));
  GPUPLAN_RETURN_IF_ERROR(Count(r, "max_num_batched_tokens_large", e.max_num_batched_tokens_large));
  GPUPLAN_RETURN_IF_ERROR(Count(r, "max_num_batched_tokens_small", e.max_num_batched_tokens_small));
  GPUPLAN_RETURN_IF_ERROR(Bytes(r, "large_gpu_min_bytes", e.large_gpu_min_bytes));
  e.large_gpu_excludes = r.Str("large_gpu_excludes");
  if (e.large_gpu_excludes != Lower(e.large_gpu_excludes))
    return Status::BadInput(r.Where("large_gpu_excludes"), "expected a lower-case name fragment, got '" + e.large_gpu_excludes + "'");
  GPUPLAN_RETURN_IF_ERROR(Into(r.YesNo("chunked_prefill"), e.chunked_prefill));
  e.launch_command = r.Str("launch_command");
  return Status::Ok();
}

bool IsDate(const std::string& s) {
  if (s == "undated") return true;
  auto digits = [&](size_t from, size_t n) {
    return std::all_of(s.begin() + from, s.begin() + from + n, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  if (s.size() == 7) return digits(0, 4) && s[4] == '-' && digits(5, 2);
  return s.size() == 10 && digits(0, 4) && s[4] == '-' && digits(5, 2) && s[7] == '-' && digits(8, 2);
}

Result<ServingEngineProfile> ReadRow(const CsvRecord& r) {
  ServingEngineProfile e;
  GPUPLAN_RETURN_IF_ERROR(ReadIdentity(r, e));
  GPUPLAN_RETURN_IF_ERROR(ReadMemory(r, e));
  GPUPLAN_RETURN_IF_ERROR(ReadScheduler(r, e));
  e.source = r.Str("source");
  if (e.source.empty()) return Status::BadInput(r.Where("source"), "every row needs a source");
  e.date = r.Str("date");
  if (!IsDate(e.date)) return Status::BadInput(r.Where("date"), "expected YYYY-MM-DD, YYYY-MM or undated, got '" + e.date + "'");
  e.notes = r.Str("notes");
  e.where = r.Where("engine");
  return e;
}

Status CheckHeader(const CsvTable& t) {
  for (const char* col : kColumns)
    if (t.Column(col) < 0) return Status::BadInput(Location{t.file, 1, col}, "missing column (the header needs every column of data/serving_engines.csv)");
  return Status::Ok();
}

// Adds one file's rows: (engine, version) already loaded (from the built-in table) is replaced,
// the same pair twice in one file is an error naming both lines.
Status AddRows(const CsvTable& t, std::vector<ServingEngineProfile>& out) {
  GPUPLAN_RETURN_IF_ERROR(CheckHeader(t));
  std::vector<std::pair<std::string, int>> seen;  // "engine version" -> line in this file
  for (const auto& row : t.rows) {
    auto e = ReadRow(CsvRecord(t, row));
    if (!e.ok()) return e.status();
    for (const auto& [k, line] : seen)
      if (k == e->engine + " " + e->version)
        return Status::BadInput(e->where, "duplicate row for " + e->engine + " " + e->version + ": line " + std::to_string(line) +
                                              " of this file has it too (one row per engine and version)");
    seen.emplace_back(e->engine + " " + e->version, row.line);
    auto same = std::find_if(out.begin(), out.end(), [&](const ServingEngineProfile& x) {
      return x.engine == e->engine && CompareVersions(*VersionParts(x.version), *VersionParts(e->version)) == 0;
    });
    if (same != out.end()) *same = std::move(e).value();
    else out.push_back(std::move(e).value());
  }
  return Status::Ok();
}

// Engines in first-seen order, each engine's rows oldest first.
void SortRows(std::vector<ServingEngineProfile>& rows) {
  std::vector<std::string> order;
  for (const auto& r : rows)
    if (std::find(order.begin(), order.end(), r.engine) == order.end()) order.push_back(r.engine);
  std::stable_sort(rows.begin(), rows.end(), [&](const ServingEngineProfile& a, const ServingEngineProfile& b) {
    if (a.engine != b.engine)
      return std::find(order.begin(), order.end(), a.engine) < std::find(order.begin(), order.end(), b.engine);
    return CompareVersions(*VersionParts(a.version), *VersionParts(b.version)) < 0;
  });
}

std::string KnownEngines(const std::vector<ServingEngineProfile>& engines) {
  std::vector<std::string> names;
  for (const auto& e : engines)
    if (std::find(names.begin(), names.end(), e.engine) == names.end()) names.push_back(e.engine);
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string KnownVersions(const std::vector<const ServingEngineProfile*>& rows) {
  std::string out;
  for (const auto* r : rows) out += (out.empty() ? "" : ", ") + r->version;
  return out;
}

}  // namespace

Result<std::vector<ServingEngineProfile>> LoadServingEngines(const std::vector<std::string>& override_files) {
  std::vector<ServingEngineProfile> rows;
  const std::string_view text = EmbeddedData("serving_engines.csv");
  if (text.empty()) return Status::Internal("data/serving_engines.csv is not compiled in");
  auto t = ParseCsv(std::string(text), "data/serving_engines.csv");
  if (!t.ok()) return t.status();
  GPUPLAN_RETURN_IF_ERROR(AddRows(*t, rows));
  for (const auto& path : override_files) {
    auto o = ReadCsvFile(path);
    if (!o.ok()) return o.status();
    GPUPLAN_RETURN_IF_ERROR(AddRows(*o, rows));
  }
  SortRows(rows);
  return rows;
}

Result<ServingEngineProfile> FindServingEngine(const std::vector<ServingEngineProfile>& engines, const std::string& engine,
                                               const std::string& version, const Location& where) {
  const std::string name = Lower(engine);
  std::vector<const ServingEngineProfile*> rows;  // oldest first (LoadServingEngines sorts them)
  for (const auto& e : engines)
    if (e.engine == name) rows.push_back(&e);
  if (rows.empty()) return Status::BadInput(where, "unknown serving engine '" + engine + "' (known: " + KnownEngines(engines) + ")");
  if (version.empty()) return *rows.back();
  const auto asked = VersionParts(version);
  if (!asked)
    return Status::BadInput(where, "'" + version + "' is not a version of " + name + " (known: " + KnownVersions(rows) + ")");
  // The row whose version is a prefix of the one asked ("0.19" for "0.19.2"), else the newest
  // row not newer than it (rows are oldest first, so the last that qualifies).
  const ServingEngineProfile* best = nullptr;
  for (const auto* r : rows)
    if (CompareVersions(*VersionParts(r->version), *asked) <= 0 || VersionPrefix(*VersionParts(r->version), *asked)) best = r;
  if (!best)
    return Status::BadInput(where, name + " " + version + " is older than every profile gpuplan has (known: " + KnownVersions(rows) + ")");
  ServingEngineProfile out = *best;
  if (!VersionPrefix(*VersionParts(best->version), *asked))
    out.version_note = name + " " + version + " has no profile of its own: the " + best->version +
                       " profile (the newest not newer) is used";
  return out;
}

}  // namespace gpuplan
