#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpuplan {

namespace {

// The text as a message can quote it: printable ASCII kept, other bytes as \xNN, cut at 40 bytes.
std::string Quoted(std::string_view text) {
  std::string out = "'";
  const size_t n = std::min<size_t>(text.size(), 40);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (text.size() > n) out += "...";
  return out + "'";
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The decimal grammar: [+-] (digits [. digits*] | . digits) [(e|E) [+-] digits].
bool IsDecimal(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

}  // namespace

Result<double> ParseDecimal(std::string_view text, const Location& where) {
  if (text.empty()) return Status::BadInput(where, "expected a number, got an empty value");
  if (!IsDecimal(text))
    return Status::BadInput(where, "expected a decimal number, got " + Quoted(text));
  std::string_view body = text[0] == '+' ? text.substr(1) : text;
  double v = 0;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && !std::isfinite(v)))
    return Status::BadInput(where, "number out of range: " + Quoted(text));
  if (ec != std::errc() || end != body.data() + body.size())
    return Status::BadInput(where, "expected a decimal number, got " + Quoted(text));
  return v + 0.0;  // -0 -> 0
}

Status CheckRange(double v, const Location& where, NumberRange range) {
  if (!std::isfinite(v)) return Status::BadInput(where, "must be a finite number");
  const bool low = range.min_exclusive ? !(v > range.min) : !(v >= range.min);
  if (!low && v <= range.max) return Status::Ok();
  if (range.min_exclusive && range.max >= 1e15)
    return Status::BadInput(where, "must be > " + Num(range.min) + " and <= " + Num(range.max) + ", got " + Num(v));
  return Status::BadInput(where, "must be in " + std::string(range.min_exclusive ? "(" : "[") + Num(range.min) +
                                     ", " + Num(range.max) + "], got " + Num(v));
}

Result<double> ParseDecimalIn(std::string_view text, const Location& where, NumberRange range) {
  auto v = ParseDecimal(text, where);
  if (!v.ok()) return v;
  GPUPLAN_RETURN_IF_ERROR(CheckRange(*v, where, range));
  return v;
}

Result<int64_t> ParseInteger(std::string_view text, const Location& where, int64_t min, int64_t max) {
  auto v = ParseDecimal(text, where);
  if (!v.ok()) return v.status();
  if (*v != std::floor(*v)) return Status::BadInput(where, "expected a whole number, got " + Quoted(text));
  // Bounds are compared as doubles first so that the cast below is always defined.
  if (*v < static_cast<double>(min) || *v > static_cast<double>(max) || !(std::fabs(*v) < 9.2e18))
    return Status::BadInput(where, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                                       Num(*v));
  const int64_t n = static_cast<int64_t>(*v);
  if (n < min || n > max)  // max near 2^63 rounds up as a double
    return Status::BadInput(where, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                                       std::to_string(n));
  return n;
}

int CsvTable::Column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {
// Every column name appears once: a second "price" column would silently shadow the first.
Status CheckHeader(const std::vector<std::string>& header, const std::string& file, int line) {
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i].empty()) continue;  // unnamed columns (trailing commas) are never read
    auto [it, fresh] = seen.emplace(header[i], i);
    if (!fresh)
      return Status::BadInput({file, line, header[i]}, "duplicate column: header columns " + std::to_string(it->second + 1) +
                                                           " and " + std::to_string(i + 1) + " are both '" + header[i] + "'");
  }
  return Status::Ok();
}
}  // namespace

Result<CsvTable> ParseCsv(const std::string& text, const std::string& file) {
  CsvTable t;
  t.file = file;
  std::vector<std::string> fields;
  std::string cur;
  bool in_quotes = false, row_has_data = false;
  int line = 1, row_line = 1;
  auto end_row = [&]() -> Status {
    fields.push_back(cur);
    cur.clear();
    if (t.header.empty()) {
      t.header = fields;
      GPUPLAN_RETURN_IF_ERROR(CheckHeader(t.header, file, row_line));
    } else if (!(fields.size() == 1 && fields[0].empty())) {
      if (fields.size() != t.header.size())
        return Status::BadInput({file, row_line, ""},
                                "row has " + std::to_string(fields.size()) + " fields, header has " +
                                    std::to_string(t.header.size()));
      t.rows.push_back({row_line, fields});
    }
    fields.clear();
    row_has_data = false;
    return Status::Ok();
  };
  // A UTF-8 byte-order mark (Excel's "CSV UTF-8" writes one) is not part of the first column name.
  const size_t start = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  for (size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    if (!row_has_data) {
      row_line = line;
      row_has_data = true;
    }
    if (c == '\0') {  // a NUL never belongs to a CSV cell ("80\0junk" must not read as 80)
      const size_t col = fields.size();
      const std::string key = col < t.header.size() ? t.header[col] : "";
      return Status::BadInput({file, line, key}, "NUL byte in the cell (not a text file?); CSV files are UTF-8 text");
    }
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        cur += c;
      }
      continue;
    }
    if (c == '"') {
      in_quotes = true;
    } else if (c == ',') {
      fields.push_back(cur);
      cur.clear();
    } else if (c == '\r') {
      // tolerate CRLF
    } else if (c == '\n') {
      GPUPLAN_RETURN_IF_ERROR(end_row());
      ++line;
    } else {
      cur += c;
    }
  }
  if (in_quotes) return Status::BadInput({file, row_line, ""}, "unterminated quoted field");
  if (row_has_data) GPUPLAN_RETURN_IF_ERROR(end_row());
  if (t.header.empty()) return Status::BadInput({file, 1, ""}, "empty file: a header is required");
  return t;
}

Result<std::string> ReadTextFile(const std::string& path) {
  return ReadInputFile(path);  // regular files only, under kMaxInputFileBytes: never a FIFO, a device or a 100 MB log
}

Result<CsvTable> ReadCsvFile(const std::string& path) {
  auto text = ReadInputFile(path);  // regular files only, under kMaxInputFileBytes
  if (!text.ok()) return text.status();
  return ParseCsv(*text, path);
}

std::string CsvRecord::Str(const std::string& col) const {
  int i = t_.Column(col);
  return i < 0 ? std::string() : r_.fields[i];
}

namespace {
bool IsUnknownCell(const std::string& s) { return s.empty() || s == "unknown" || s == "none" || s == "n/a"; }
}  // namespace

Result<std::optional<double>> CsvRecord::OptNumber(const std::string& col) const {
  return OptNumber(col, NumberRange{});
}

Result<std::optional<double>> CsvRecord::OptNumber(const std::string& col, NumberRange range) const {
  const std::string s = Str(col);
  if (IsUnknownCell(s)) return std::optional<double>();
  auto v = ParseDecimal(s, Where(col));
  if (!v.ok()) {
    std::string why = v.status().reason();
    const std::string grammar = "expected a decimal number, got ";
    if (why.rfind(grammar, 0) == 0) why = "expected a decimal number (or unknown/none), got " + why.substr(grammar.size());
    return Status::BadInput(Where(col), why);
  }
  GPUPLAN_RETURN_IF_ERROR(CheckRange(*v, Where(col), range));
  return std::optional<double>(*v);
}

Result<double> CsvRecord::Number(const std::string& col) const { return Number(col, NumberRange{}); }

Result<double> CsvRecord::Number(const std::string& col, NumberRange range) const {
  auto v = OptNumber(col, range);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return Status::BadInput(Where(col), "a number is required");
  return **v;
}

Result<std::optional<int64_t>> CsvRecord::OptInteger(const std::string& col, int64_t min, int64_t max) const {
  const std::string s = Str(col);
  if (IsUnknownCell(s)) return std::optional<int64_t>();
  auto v = ParseInteger(s, Where(col), min, max);
  if (!v.ok()) return v.status();
  return std::optional<int64_t>(*v);
}

Result<bool> CsvRecord::YesNo(const std::string& col) const {
  std::string s = Str(col);
  if (s == "yes" || s == "true" || s == "1") return true;
  if (s == "no" || s == "false" || s == "0") return false;
  return Status::BadInput(Where(col), "expected yes or no, got '" + s + "'");
}

}  // namespace gpuplan
