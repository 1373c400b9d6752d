// data/pipeline_splits.csv: which option of which engine takes pipeline stages of uneven size, from which
// release (docs/export.md "Uneven pipeline stages"). Read only by `gpuplan export`: outside the model
// fingerprint.
#include "gpuplan/pipeline_split.h"

#include <algorithm>
#include <cctype>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"

namespace gpuplan {

namespace {

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

Status ReadRow(const CsvRecord& r, SplitForm& f) {
  f.engine = r.Str("engine");
  f.form = r.Str("form");
  f.keys = r.Str("keys");
  f.min_version = r.Str("min_version");
  f.splits = r.Str("splits");
  f.source = r.Str("source");
  f.commit = r.Str("commit");
  f.date = r.Str("date");
  f.notes = r.Str("notes");
  f.where = r.Where("engine");
  if (f.engine.empty()) return Status::BadInput(r.Where("engine"), "every row names an export format");
  if (f.form.empty()) return Status::BadInput(r.Where("form"), "every row names its form");
  if (f.splits != "any" && f.splits != "first_last" && f.splits != "none" && f.splits != "other")
    return Status::BadInput(r.Where("splits"), "expected any|first_last|none|other, got '" + f.splits + "'");
  int64_t v[3];
  if (!f.min_version.empty() && !ParseRelease(f.min_version, v))
    return Status::BadInput(r.Where("min_version"), "expected a release such as 0.13, core_v0.9.0 or v0.2.0, got '" + f.min_version + "'");
  if (f.source.empty()) return Status::BadInput(r.Where("source"), "every row needs a source (file:line)");
  if (f.commit.size() < 7) return Status::BadInput(r.Where("commit"), "every row needs the commit it was read at");
  if (f.date.size() != 10) return Status::BadInput(r.Where("date"), "expected YYYY-MM-DD");
  return Status::Ok();
}

// Whether `version` ("" = the pinned release, newer than every row) is at least `min_version`.
bool AtLeast(const std::string& version, const std::string& min_version) {
  if (version.empty() || min_version.empty()) return true;
  int64_t have[3], need[3];
  if (!ParseRelease(version, have) || !ParseRelease(min_version, need)) return false;
  return std::lexicographical_compare(need, need + 3, have, have + 3) || std::equal(need, need + 3, have);
}

bool Expresses(const SplitForm& f, const std::vector<int64_t>& split) {
  return f.splits == "any" || (f.splits == "first_last" && FirstLastLayerSplit(split));
}

std::string Short(const std::string& commit) { return commit.substr(0, 7); }

std::string Keys(const std::string& keys) {
  std::string out;
  for (char c : keys) out += c == ' ' ? std::string(", ") : std::string(1, c);
  return out;
}

// "0.13" of "core_r0.13.0": what --engine-version takes.
std::string MajorMinor(const std::string& release) {
  int64_t v[3];
  if (!ParseRelease(release, v)) return release;
  return std::to_string(v[0]) + "." + std::to_string(v[1]);
}

std::string Join(const std::vector<std::string>& items, const std::string& last_sep) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i == 0 ? "" : i + 1 == items.size() ? last_sep : ", ") + items[i];
  return s;
}

// Why none of the engine's rows expresses the split (rows with splits other are facts, not forms).
std::string Why(const std::vector<const SplitForm*>& rows, const std::string& version, const std::vector<int64_t>& split) {
  std::vector<std::string> why;
  for (const SplitForm* f : rows) {
    if (f->splits == "none") {
      why.push_back(f->notes + " (" + f->source + " @" + Short(f->commit) + ")");
    } else if (!Expresses(*f, split)) {
      why.push_back(Keys(f->keys) + " set only the first and the last stage (the stages between hold the same number of blocks)");
    } else if (!AtLeast(version, f->min_version)) {
      why.push_back(Keys(f->keys) + " first came in " + f->min_version + " (" + f->source + " @" + Short(f->commit) + ")");
    }
  }
  return Join(why, "; ");
}

SplitChoice Choose(const std::string& engine, const std::string& version, const std::vector<int64_t>& split, bool alternatives) {
  SplitChoice out;
  if (EvenLayerSplit(split)) return out;
  std::vector<const SplitForm*> rows;
  for (const SplitForm& f : PipelineSplits())
    if (f.engine == engine && f.splits != "other") rows.push_back(&f);
  if (rows.empty()) return out;
  for (const SplitForm* f : rows)
    if (Expresses(*f, split) && AtLeast(version, f->min_version)) {
      out.form = f;
      return out;
    }
  if (!alternatives) {
    out.refusal = "-";
    return out;
  }
  std::vector<std::string> use;
  // A later release of the same engine.
  for (const SplitForm* f : rows)
    if (Expresses(*f, split) && !AtLeast(version, f->min_version)) {
      use.push_back("--engine-version " + MajorMinor(f->min_version) + " or later (" + Keys(f->keys) + ")");
      break;
    }
  // Another engine, at the release its export pins.
  std::vector<std::string> seen = {engine};
  for (const SplitForm& f : PipelineSplits()) {
    if (std::find(seen.begin(), seen.end(), f.engine) != seen.end()) continue;
    seen.push_back(f.engine);
    const SplitChoice other = Choose(f.engine, "", split, false);
    if (other.form)
      use.push_back("--to " + f.engine + " (" + Keys(other.form->keys) +
                    (other.form->min_version.empty() ? "" : ", " + other.form->min_version + " or later") + ")");
  }
  out.refusal = engine + (version.empty() ? "" : " " + version) + " cannot express uneven pipeline stages (parallel.layer_split " +
                LayerSplitText(split) + "): " + Why(rows, version, split) + "; use " +
                (use.empty() ? "stages of one size (no parallel.layer_split)" : Join(use, " or "));
  return out;
}

}  // namespace

bool ParseRelease(const std::string& text, int64_t out[3]) {
  std::string s = text;
  for (const char* prefix : {"core_v", "core_r", "v"})
    if (s.rfind(prefix, 0) == 0) {
      s = s.substr(std::string(prefix).size());
      break;
    }
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot = s.find('.'); ; dot = s.find('.', start)) {
    parts.push_back(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || !AllDigits(parts[0]) || !AllDigits(parts[1]) || parts[0].size() > 6 || parts[1].size() > 6)
    return false;
  out[0] = std::stoll(parts[0]);
  out[1] = std::stoll(parts[1]);
  out[2] = 0;
  if (parts.size() == 3) {
    const std::string& p = parts[2];
    size_t digits = 0;
    while (digits < p.size() && digits < 6 && std::isdigit(static_cast<unsigned char>(p[digits]))) ++digits;
    const std::string rest = p.substr(digits);
    // "0.2.x", "0.13.0", "0.15.0rc7"
    if (p == "x") return true;
    if (digits == 0 || !(rest.empty() || (rest.rfind("rc", 0) == 0 && AllDigits(rest.substr(2))))) return false;
    out[2] = std::stoll(p.substr(0, digits));
  }
  return true;
}

Result<std::vector<SplitForm>> ParsePipelineSplits(const std::string& csv_text, const std::string& file) {
  auto t = ParseCsv(csv_text, file);
  if (!t.ok()) return t.status();
  for (const char* col : {"engine", "form", "keys", "min_version", "splits", "source", "commit", "date", "notes"})
    if (t->Column(col) < 0) return Status::BadInput({file, 1, col}, "missing column");
  std::vector<SplitForm> out;
  for (const auto& row : t->rows) {
    SplitForm f;
    if (Status st = ReadRow(CsvRecord(*t, row), f); !st.ok()) return st;
    out.push_back(std::move(f));
  }
  return out;
}

const std::vector<SplitForm>& PipelineSplits() {
  static const std::vector<SplitForm> table = [] {
    auto r = ParsePipelineSplits(std::string(EmbeddedData("pipeline_splits.csv")), "data/pipeline_splits.csv");
    return r.ok() ? *r : std::vector<SplitForm>{};
  }();
  return table;
}

bool EvenLayerSplit(const std::vector<int64_t>& split) {
  return std::all_of(split.begin(), split.end(), [&](int64_t n) { return n == split.front(); });
}

bool FirstLastLayerSplit(const std::vector<int64_t>& split) {
  if (split.size() < 3) return true;
  return std::all_of(split.begin() + 1, split.end() - 1, [&](int64_t n) { return n == split[1]; });
}

std::string LayerSplitText(const std::vector<int64_t>& split) {
  std::string s;
  for (int64_t n : split) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

SplitChoice ChooseSplitForm(const std::string& engine, const std::string& version, const std::vector<int64_t>& split) {
  return Choose(engine, version, split, true);
}

std::string MegatronLayout(const std::vector<int64_t>& split, bool expanded) {
  std::string s;
  for (size_t i = 0; i < split.size(); ++i) {
    if (i > 0) s += "|";
    if (i == 0) s += "E";
    const int64_t n = split[i];
    if (expanded) s += std::string(static_cast<size_t>(std::max<int64_t>(n, 0)), 't');
    else if (n == 1) s += "t";
    else if (n > 1) s += "t*" + std::to_string(n);
    if (i + 1 == split.size()) s += "L";
  }
  return s;
}

}  // namespace gpuplan
