// Shared by the tool-output parsers (src/verify/toolout*.cc); not part of the public API.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/strings.h"
#include "gpuplan/toolout.h"

namespace gpuplan::toolout {

struct Line {
  int number = 0;  // 1-based
  std::string text;
};

std::vector<Line> SplitLines(const std::string& text);
std::string Trim(std::string_view s);
std::vector<std::string> Tokens(std::string_view s);
bool Contains(std::string_view s, std::string_view what);
bool StartsWith(std::string_view s, std::string_view what);
// A whole-token number ("189.60", "1e+00", "-1"); nullopt for "N/A", "", "12abc".
std::optional<double> Number(std::string_view s);
std::optional<long long> Integer(std::string_view s);
// "%.6g" without trailing noise, for context values.
std::string Num(double v);
// The plausible range of a reading in `unit` (data/reading_ranges.csv); nullopt for a unit not listed.
struct ReadingRange {
  double min = 0, max = 0;
};
std::optional<ReadingRange> RangeOf(const std::string& unit);

// Adds readings and warnings to one output.
class Builder {
 public:
  Builder(ToolOutput& out) : out_(out) {}  // NOLINT
  // A value outside data/reading_ranges.csv for its unit (or nan/inf) is a warning at its line, never a
  // reading: the returned record is then a scratch one that nothing keeps.
  Reading& Add(const std::string& metric, double value, const std::string& unit, int line);
  Reading& AddState(const std::string& metric, const std::string& text, int line);
  void Warn(int line, const std::string& message);
  ToolOutput& out() { return out_; }

 private:
  ToolOutput& out_;
  Reading scratch_;
};

// Markdown noise of a pasted output removed: "> " quote markers, "**bold**"; "```" fences become "".
std::string StripMarkdown(const std::string& s);
// "[1,0]<stdout>:" (mpirun --tag-output, after any indentation) and "0: " (srun --label) prefixes removed.
std::string StripRankPrefix(const std::string& s);
// Lines a tool prints when it failed (data/failure_lines.csv): one failure_line reading per line.
void ScanFailureLines(const std::vector<Line>& lines, ToolOutput& out);

// Detectors (each true when the text is that kind) and parsers, one per tool family.
bool LooksLikeNcclTests(const std::vector<Line>& lines);
bool LooksLikeNcclDebug(const std::vector<Line>& lines);
bool LooksLikePerftest(const std::vector<Line>& lines);
bool LooksLikePerftestTable(const std::vector<Line>& lines);
void ParseNcclTests(const std::vector<Line>& lines, ToolOutput& out);
void ParseNcclDebug(const std::vector<Line>& lines, ToolOutput& out);
void ParsePerftest(const std::vector<Line>& lines, ToolOutput& out);
void ParsePerftestTable(const std::vector<Line>& lines, ToolOutput& out);

bool LooksLikeTopo(const std::vector<Line>& lines, bool* p2p);
bool IsTopoPciOnly(const std::vector<Line>& lines);  // `nvidia-smi topo -mp` (PCIe view: no NV# possible)
void ParseTopoPci(const std::vector<Line>& lines, ToolOutput& out);
bool LooksLikeNvidiaSmiTable(const std::vector<Line>& lines);
bool LooksLikeNvidiaSmiQuery(const std::vector<Line>& lines);
bool LooksLikeNvlinkStatus(const std::vector<Line>& lines);
void ParseTopo(const std::vector<Line>& lines, ToolOutput& out);
void ParseP2p(const std::vector<Line>& lines, ToolOutput& out);
void ParseNvidiaSmiTable(const std::vector<Line>& lines, ToolOutput& out);
void ParseNvidiaSmiQuery(const std::vector<Line>& lines, ToolOutput& out);
void ParseNvlinkStatus(const std::vector<Line>& lines, ToolOutput& out);

bool LooksLikeLspci(const std::vector<Line>& lines);
bool LooksLikeIbstat(const std::vector<Line>& lines);
bool LooksLikeDcgmi(const std::vector<Line>& lines);
bool LooksLikeDcgmiNvlink(const std::vector<Line>& lines);
void ParseDcgmiNvlink(const std::vector<Line>& lines, ToolOutput& out);
bool LooksLikeFio(const std::string& text);
void ParseLspci(const std::vector<Line>& lines, ToolOutput& out);
void ParseIbstat(const std::vector<Line>& lines, ToolOutput& out);
void ParseDcgmi(const std::vector<Line>& lines, ToolOutput& out);
void ParseFio(const std::string& text, ToolOutput& out);

}  // namespace gpuplan::toolout
