// Small text helpers shared by the parsers and the command line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuplan {

// Levenshtein distance, for "did you mean ...?" suggestions.
size_t EditDistance(const std::string& a, const std::string& b);
std::string Lower(std::string s);
// "a, b,c" -> {"a", "b", "c"}; empty items are kept (callers reject them with a location).
std::vector<std::string> SplitList(const std::string& s, char sep = ',');
// The code points of UTF-8 text. A byte that does not start a well-formed sequence (a stray continuation byte, a cut
// sequence, an overlong form, a surrogate, a value past U+10FFFF) is returned alone as -1 - byte, so callers choose:
// quote the raw byte, or replace it with U+FFFD.
std::vector<int64_t> Utf8CodePoints(std::string_view s);
// Appends code point `cp` (0 .. U+10FFFF) as UTF-8.
void AppendUtf8(std::string& out, int64_t cp);

}  // namespace gpuplan
