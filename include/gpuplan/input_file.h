// The one reader for every file a user names: job YAML/JSON, config.json, catalog, calibration and
// validation CSVs. It reads regular files only (a FIFO, a device such as /dev/zero or /dev/urandom,
// a directory or a socket is refused at once, never read), and only up to a size cap.
#pragma once

#include <cstdint>
#include <map>
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

// In-memory input files for one thread (the web server, docs/web.md): while an overlay is alive on a
// thread, ReadInputFile there reads the overlay's files by exact name and refuses every other path without
// touching the filesystem ("path: not readable here: ..."). A request's posted job, pool or PLAN.json thus
// goes through the same parsers as a file, and no path named in a request is ever opened. Nested overlays
// are not supported (the inner one replaces the outer until it ends).
class ScopedInputOverlay {
 public:
  explicit ScopedInputOverlay(std::map<std::string, std::string> files, std::string refusal = "");
  ~ScopedInputOverlay();
  ScopedInputOverlay(const ScopedInputOverlay&) = delete;
  ScopedInputOverlay& operator=(const ScopedInputOverlay&) = delete;

  const std::map<std::string, std::string>& files() const { return files_; }
  const std::string& refusal() const { return refusal_; }

 private:
  std::map<std::string, std::string> files_;
  std::string refusal_;  // Default: "" = a built-in sentence (files are posted, never named)
  const ScopedInputOverlay* previous_;
};

// Whether a path names an input file, and whether it is a directory: the filesystem's answer, or the
// overlay's (a posted file exists; nothing is a directory) while one is alive on this thread.
bool InputPathExists(const std::string& path);
bool InputPathIsDirectory(const std::string& path);

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
