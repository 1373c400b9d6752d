// The one reader for every file a user names: job YAML/JSON, config.json, catalog, calibration and
// validation CSVs. It reads regular files only (a FIFO, a device such as /dev/zero or /dev/urandom,
// a directory or a socket is refused at once, never read), and only up to a size cap.
#pragma once

#include <cstdint>
#include <string>

#include "gpuplan/status.h"

namespace gpuplan {

// The largest input file gpuplan reads. The biggest real inputs (the full catalog CSVs, a
// DeepSeek-V3 config.json) are well under 1 MiB; 64 MiB leaves room for generated catalogs and
// validation sets while keeping a wrong path (a disk image, a log) from exhausting memory.
inline constexpr int64_t kMaxInputFileBytes = int64_t{64} << 20;

// The whole file as bytes. Errors are bad input at {path, 0, ""}: "cannot open file: <why>",
// "not a regular file (a FIFO)", "file is N bytes, over the 64 MiB input limit".
Result<std::string> ReadInputFile(const std::string& path, int64_t max_bytes = kMaxInputFileBytes);

// Checks that text read from a file is text: a NUL byte is an error at its line (YAML and JSON
// parsers otherwise report it as a bad escape or stop reading there).
Status CheckNoNulBytes(const std::string& text, const std::string& file);

// yaml-cpp (0.7) loops forever on a ',' outside every [ ] / { } at the top of a document ("{},",
// "- 1\n,", '"x",'). Refused first, with its line: a ',' that starts a line, or that follows a
// top-level closing bracket or quoted string, outside brackets and quotes. Valid YAML and JSON
// never have one (JSON's commas are all inside brackets; a block mapping's ',' is inside a value).
Status CheckNoStrayComma(const std::string& text, const std::string& file);

// The deepest nesting of [ ] / { } gpuplan reads in a JSON text. nlohmann::json parses by recursion:
// a 100k-deep document (a hand-edited or hostile ledger row, a PLAN.json) would overflow the stack.
// Real documents nest a handful of levels (a PLAN.json row's job, a measurement's context).
inline constexpr int kMaxJsonDepth = 128;

// Refuses JSON nested deeper than max_depth (brackets inside strings do not count) at the line where
// it goes too deep: `file:line: key: nested deeper than 128 levels`. Call before nlohmann::json::parse.
Status CheckJsonDepth(const std::string& text, const Location& where, int max_depth = kMaxJsonDepth);

}  // namespace gpuplan
