// A small RFC 4180 CSV reader that remembers the line each row starts on.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuplan/status.h"

namespace gpuplan {

struct CsvRow {
  int line = 0;                      // 1-based line the row starts on.
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string file;                  // Name used in error messages.
  std::vector<std::string> header;
  std::vector<CsvRow> rows;
  int Column(const std::string& name) const;  // -1 if absent.
};

// Parses text; every row must have as many fields as the header.
Result<CsvTable> ParseCsv(const std::string& text, const std::string& file);
Result<CsvTable> ReadCsvFile(const std::string& path);
Result<std::string> ReadTextFile(const std::string& path);

// Typed access to a row by column name, with "file:line: column: reason" errors.
class CsvRecord {
 public:
  CsvRecord(const CsvTable& t, const CsvRow& r) : t_(t), r_(r) {}
  std::string Str(const std::string& col) const;  // "" when the column is absent
  bool Has(const std::string& col) const { return t_.Column(col) >= 0; }
  // A number, or nullopt for "unknown"/"none"/"" (Status on anything else).
  Result<std::optional<double>> OptNumber(const std::string& col) const;
  Result<double> Number(const std::string& col) const;  // required
  Result<bool> YesNo(const std::string& col) const;     // yes/no/true/false
  Location Where(const std::string& col) const { return {t_.file, r_.line, col}; }

 private:
  const CsvTable& t_;
  const CsvRow& r_;
};

}  // namespace gpuplan
