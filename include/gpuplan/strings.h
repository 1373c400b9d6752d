// Small text helpers shared by the parsers and the command line.
#pragma once

#include <string>
#include <vector>

namespace gpuplan {

// Levenshtein distance, for "did you mean ...?" suggestions.
size_t EditDistance(const std::string& a, const std::string& b);
std::string Lower(std::string s);
// "a, b,c" -> {"a", "b", "c"}; empty items are kept (callers reject them with a location).
std::vector<std::string> SplitList(const std::string& s, char sep = ',');

}  // namespace gpuplan
