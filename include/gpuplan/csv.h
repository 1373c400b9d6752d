// A small RFC 4180 CSV reader that remembers the line each row starts on.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/status.h"

namespace gpuplan {

// The one number parser of the project (CSV cells, job files, flags). Decimal only: an optional
// sign, digits with an optional fraction, an optional exponent ("80", "-1.5", ".5", "2e3", "1E-6").
// The whole text must be the number: no spaces, no hex ("0x1000"), no inf/nan, no trailing junk
// ("80abc", "80\0junk"), and the value must be finite ("1e999" is out of range). -0 reads as 0.
// Errors are BadInput at `where` and quote the text (non-printable bytes as \xNN).
Result<double> ParseDecimal(std::string_view text, const Location& where);

// A closed or half-open range for a parsed value; "> 0" is {0, max, /*min_exclusive=*/true}.
struct NumberRange {
  double min = 0;               // Default: 0.
  double max = 1e15;            // Default: 1e15 (far above any catalog or job quantity).
  bool min_exclusive = false;   // Default: false (min itself is allowed).
};
// ParseDecimal, then the range: "must be > 0, got 0" / "must be in [1, 6], got 99".
Result<double> ParseDecimalIn(std::string_view text, const Location& where, NumberRange range);
Status CheckRange(double v, const Location& where, NumberRange range);
// ParseDecimal, then a whole number in [min, max] ("1.5" and "0.5" are errors, "2e3" is 2000).
// Magnitudes from 9.2e18 up are range errors whatever the bounds: the cast to int64 is always defined.
Result<int64_t> ParseInteger(std::string_view text, const Location& where, int64_t min, int64_t max);

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
  // A number (ParseDecimal) >= 0, or nullopt for "unknown"/"none"/"n/a"/"" (Status on anything else).
  Result<std::optional<double>> OptNumber(const std::string& col) const;
  Result<double> Number(const std::string& col) const;  // required
  // The same with an explicit range (error at this cell when outside it).
  Result<std::optional<double>> OptNumber(const std::string& col, NumberRange range) const;
  Result<double> Number(const std::string& col, NumberRange range) const;
  // A whole number in [min, max], or nullopt for an empty/unknown cell.
  Result<std::optional<int64_t>> OptInteger(const std::string& col, int64_t min, int64_t max) const;
  Result<bool> YesNo(const std::string& col) const;     // yes/no/true/false
  Location Where(const std::string& col) const { return {t_.file, r_.line, col}; }

 private:
  const CsvTable& t_;
  const CsvRow& r_;
};

}  // namespace gpuplan
