// FitWidth: default text output fits 120 columns without losing a word.
#include "gpuplan/text_width.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

namespace gpuplan {
namespace {

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string Words(const std::string& s) {  // the text with all runs of whitespace as one space
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\n') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

TEST(TextWidth, ShortLinesAreKept) {
  const std::string s = "plan for x\n  a: b\n\nno newline at the end";
  EXPECT_EQ(FitWidth(s), s);
}

TEST(TextWidth, LongKeyValueLineWrapsUnderItsLabel) {
  std::string v;
  for (int i = 0; i < 40; ++i) v += "word" + std::to_string(i) + " ";
  const std::string s = "  checkpoints: " + v + "\n";
  const std::string out = FitWidth(s, 60);
  const auto lines = Lines(out);
  ASSERT_GT(lines.size(), 1u);
  for (const auto& l : lines) EXPECT_LE(DisplayWidth(l), 60u) << l;
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(lines[i].rfind(std::string(15, ' ') + "w", 0), 0u) << lines[i];
  EXPECT_EQ(Words(out), Words(s));
  EXPECT_EQ(out.back(), '\n');
}

TEST(TextWidth, ExplicitHangingIndent) {
  const std::string s = "  --flag V                  " + std::string(30, 'a') + " " + std::string(100, 'b') + " c\n";
  const auto lines = Lines(FitWidth(s, 120, 28));
  ASSERT_EQ(lines.size(), 3u);  // the b-run is longer than the room left: cut
  EXPECT_EQ(lines[1].substr(0, 28), std::string(28, ' '));
}

TEST(TextWidth, WideCharactersCountTwice) {
  EXPECT_EQ(DisplayWidth("显存不足 OOM"), 12u);
  const std::string s = std::string(50, 'x') + " " + "通信超时通信超时通信超时通信超时通信超时通信超时通信超时通信超时";  // 50 + 1 + 64 columns
  for (const auto& l : Lines(FitWidth(s, 80))) EXPECT_LE(DisplayWidth(l), 80u);
}

// Property: for random text, every line fits, and no word is lost, split or reordered (words shorter than
// the room left are never cut).
TEST(TextWidth, RandomTextFitsAndKeepsEveryWord) {
  std::mt19937 rng(16);
  for (int trial = 0; trial < 300; ++trial) {
    std::string s;
    const int n_lines = 1 + static_cast<int>(rng() % 6);
    for (int l = 0; l < n_lines; ++l) {
      s += std::string(rng() % 6, ' ');
      if (rng() % 2) s += "key" + std::to_string(rng() % 100) + ": ";
      const int words = static_cast<int>(rng() % 60);
      for (int w = 0; w < words; ++w) s += std::string(1 + rng() % 14, static_cast<char>('a' + rng() % 26)) + (rng() % 5 ? " " : "  ");
      s += "\n";
    }
    const size_t width = 40 + rng() % 100;
    const std::string out = FitWidth(s, width);
    for (const auto& l : Lines(out)) EXPECT_LE(DisplayWidth(l), width) << l;
    EXPECT_EQ(Words(out), Words(s));
  }
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// A command wraps only before an option: a flag and its value stay on one line, within the width.
TEST(WrapCommand, BreaksOnlyBeforeOptions) {
  const std::string cmd = "vllm serve \"$MODEL\" --max-model-len 1200 --gpu-memory-utilization 0.90 --max-num-seqs 256 "
                          "--max-num-batched-tokens 2048 --quantization fp8 --kv-cache-dtype fp8";
  const std::string out = WrapCommand("  1. ", cmd, 9, 60);
  size_t start = 0;
  while (start <= out.size()) {
    const size_t end = std::min(out.find('\n', start), out.size());
    const std::string line = out.substr(start, end - start);
    EXPECT_LE(DisplayWidth(line), 60u) << line;
    if (start > 0) EXPECT_EQ(line.rfind("         --", 0), 0u) << line;
    start = end + 1;
  }
  EXPECT_NE(out.find("--max-num-batched-tokens 2048"), std::string::npos) << out;
  EXPECT_EQ(WrapCommand("launch: ", "a b", 8), "launch: a b");
}

}  // namespace
}  // namespace gpuplan
