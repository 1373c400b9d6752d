// Default text output fits a terminal: lines longer than kTextWidth columns wrap at spaces with a hanging
// indent. Markdown, CSV and JSON are never wrapped (they are read by programs or renderers).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuplan {

constexpr size_t kTextWidth = 120;

// Columns a line takes on a terminal: one per code point, two for East Asian wide characters (CJK).
size_t DisplayWidth(std::string_view line);

// Every line of `text` wider than `width` broken at spaces. A continuation is indented past the line's
// "key: " label (`  checkpoints: ...`, `note: ...`, `   evidence: ...`) when that label is short, else four
// columns past the line's own indent; a word longer than the room left is cut. Lines that fit, and the
// text's trailing newline, are kept as they are.
// `hanging_indent`, when given, is the continuation indent of every wrapped line instead.
std::string FitWidth(const std::string& text, size_t width = kTextWidth, size_t hanging_indent = std::string::npos);

// A command line (`prefix` + `command`) broken only before an option ("--x"), so an option and its value
// stay on one line; continuation lines are indented `indent` columns. The result ends without a newline.
std::string WrapCommand(const std::string& prefix, const std::string& command, size_t indent, size_t width = kTextWidth);

}  // namespace gpuplan
