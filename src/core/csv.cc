#include "gpuplan/csv.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpuplan {

int CsvTable::Column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

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
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!row_has_data) {
      row_line = line;
      row_has_data = true;
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
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::BadInput({path, 0, ""}, "cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<CsvTable> ReadCsvFile(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return ParseCsv(*text, path);
}

std::string CsvRecord::Str(const std::string& col) const {
  int i = t_.Column(col);
  return i < 0 ? std::string() : r_.fields[i];
}

Result<std::optional<double>> CsvRecord::OptNumber(const std::string& col) const {
  std::string s = Str(col);
  if (s.empty() || s == "unknown" || s == "none" || s == "n/a") return std::optional<double>();
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    return Status::BadInput(Where(col), "'" + s + "' is not a number (or unknown/none)");
  if (v < 0) return Status::BadInput(Where(col), "must be >= 0, got " + s);
  return std::optional<double>(v);
}

Result<double> CsvRecord::Number(const std::string& col) const {
  auto v = OptNumber(col);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return Status::BadInput(Where(col), "a number is required");
  return **v;
}

Result<bool> CsvRecord::YesNo(const std::string& col) const {
  std::string s = Str(col);
  if (s == "yes" || s == "true" || s == "1") return true;
  if (s == "no" || s == "false" || s == "0") return false;
  return Status::BadInput(Where(col), "expected yes or no, got '" + s + "'");
}

}  // namespace gpuplan
