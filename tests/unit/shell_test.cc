// The shell reader of gpuplan import (src/launch/import/shell.cc): the words it builds equal bash's
// own on random scripts of the constructs launch scripts use (arrays with quoted multi-word
// elements expanded quoted and unquoted, ${VAR:-"x"}, ${VAR:=x}, $(( )), if/else on decidable
// tests), and it stays bounded on hostile input (doubling values, deep nesting, huge text).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "../../src/launch/import/shell.h"

namespace gpuplan::import_detail {
namespace {

struct Read {
  Status status = Status::Ok();
  std::vector<Command> commands;
  ShellState st;
  std::vector<std::pair<Location, std::string>> notes;
};

Read ReadText(const std::string& text) {
  Read r;
  ShellReader reader(text, "t.sh", r.st, 0, true);
  r.status = reader.Read(r.commands);
  r.notes = reader.notes;
  return r;
}

std::vector<std::string> Texts(const Command& c, size_t from = 0) {
  std::vector<std::string> out;
  for (size_t i = from; i < c.size(); ++i) out.push_back(c[i].text);
  return out;
}

// bash's output of the script (stdout), run with no environment of its own.
std::string Bash(const std::string& script) {
  char path[] = "/tmp/gpuplan_shell_test_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << script;
  const std::string cmd = std::string("env -i bash --norc --noprofile ") + path;
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  if (p) pclose(p);
  unlink(path);
  return out;
}

// The reader's words of its last command `printf '<%s>' ...`, as bash prints them.
std::string Reader(const std::string& script, std::string& error) {
  Read r = ReadText(script);
  if (!r.status.ok()) return error = r.status.ToString(), "";
  if (r.commands.empty()) return error = "no command", "";
  const Command& c = r.commands.back();
  std::string out;
  for (size_t i = 2; i < c.size(); ++i) {
    if (!c[i].unresolved.empty()) error = "unresolved: " + c[i].unresolved;
    out += "<" + c[i].text + ">";
  }
  return out;
}

TEST(ShellReader, UnquotedArrayElementsAreSplitQuotedKept) {
  Read r = ReadText("A=()\nA+=(\n  \"--fp8-format hybrid\"\n  \"--vocab-size 128256\"\n)\ncmd ${A[@]}\ncmd \"${A[@]}\"\n");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.commands.size(), 2u);
  EXPECT_EQ(Texts(r.commands[0], 1), (std::vector<std::string>{"--fp8-format", "hybrid", "--vocab-size", "128256"}));
  EXPECT_EQ(Texts(r.commands[1], 1), (std::vector<std::string>{"--fp8-format hybrid", "--vocab-size 128256"}));
}

TEST(ShellReader, UnknownPartsAreSplitAndMarked) {
  Read r = ReadText("P=\"${GPUPLAN_X}/cache\"\nA=(\"--cache $P\" \"--n 2\")\ncmd ${A[@]}\n");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const Command& c = r.commands.back();
  ASSERT_EQ(Texts(c, 1), (std::vector<std::string>{"--cache", "$GPUPLAN_X/cache", "--n", "2"}));
  EXPECT_TRUE(c[1].unresolved.empty());
  EXPECT_NE(c[2].unresolved.find("GPUPLAN_X"), std::string::npos);
  EXPECT_TRUE(c[3].unresolved.empty());
  EXPECT_EQ(c[1].line, 2);  // the array element's own line
}

TEST(ShellReader, DefaultLosesItsQuotes) {
  Read r = ReadText("S=${SHARDING:-\"optim_grads_params\"}\nN=${SLURM_NNODES:-\"1\"}\nM=${M:-'a b'}\n");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.st.vars["S"].text, "optim_grads_params");
  EXPECT_EQ(r.st.vars["N"].text, "1");
  EXPECT_EQ(r.st.vars["M"].text, "a b");
  EXPECT_TRUE(r.st.vars["N"].unresolved.empty());
}

TEST(ShellReader, IfTakesTheBranchTheValuesSelect) {
  Read r = ReadText(
      "DTYPE=fp8\nX=()\nif [[ \"$DTYPE\" == \"fp8\" ]]; then\n  X+=(--fp8)\nelse\n  X+=(--bf16)\nfi\n"
      "if [ ! -f \"$P\" ]; then\n  echo missing\n  exit 1\nfi\n"
      "if [ 3 -gt 5 ] || [ -z \"\" ]; then Y=1; else Y=2; fi\ncmd ${X[@]} $Y\n");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.commands.size(), 1u);  // the guard's echo/exit are not read; no "[" command
  EXPECT_EQ(Texts(r.commands[0]), (std::vector<std::string>{"cmd", "--fp8", "1"}));
}

TEST(ShellReader, UndecidableTestReadsTheFirstBranchWithANote) {
  Read r = ReadText("if [ -n \"$WANDB_KEY\" ]; then\n  A=(--wandb)\nelse\n  A=(--none)\nfi\ncmd ${A[@]}\n");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Texts(r.commands.back()), (std::vector<std::string>{"cmd", "--wandb"}));
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].first.line, 1);
  EXPECT_NE(r.notes[0].second.find("WANDB_KEY"), std::string::npos) << r.notes[0].second;
}

TEST(ShellReader, ArithmeticAndAssignDefault) {
  Read r = ReadText("G=8\nN=2\nW=$(($G*$N))\nV=$(( (G + 2) * 3 - N % 2 ))\nE=${E:=x y}\ncmd $W $V $E\n");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Texts(r.commands.back()), (std::vector<std::string>{"cmd", "16", "30", "x", "y"}));
}

TEST(ShellReader, DoublingStopsWithALocatedError) {
  std::string s = "A=x\n";
  for (int i = 0; i < 40; ++i) s += "A=$A$A\n";
  Read r = ReadText(s);
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.location().file, "t.sh");
  EXPECT_GT(r.status.location().line, 1);
  std::string a = "A=(x)\n";
  for (int i = 0; i < 40; ++i) a += "A+=(\"${A[@]}\")\n";
  r = ReadText(a);
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.reason().find("array"), std::string::npos);
}

TEST(ShellReader, DeepNestingIsBoundedNotACrash) {
  const std::string deep_arith = "X=$((" + std::string(100000, '(') + "1" + std::string(100000, ')') + "))\ncmd $X\n";
  Read r = ReadText(deep_arith);  // no crash: either an error or an unresolved word
  if (r.status.ok()) {
    ASSERT_FALSE(r.commands.empty());
    EXPECT_FALSE(r.commands.back().back().unresolved.empty());
  }
  std::string nested = "X=";
  for (int i = 0; i < 100000; ++i) nested += "${U:-";
  nested += "x" + std::string(100000, '}') + "\n";
  r = ReadText(nested);
  EXPECT_FALSE(r.status.ok());
  r = ReadText(std::string(5 << 20, '#'));
  EXPECT_FALSE(r.status.ok());
}

// The import fuzzer's timeouts (fuzz/regressions/import/shell-*-timeout.sh) scaled up: a default
// holding a long run of quote pairs, arrays left open with stray operators and `NAME=(` spliced in,
// a test of many `!`. Each ends with words or a located error; the reader's loops always advance
// (a loop that did not ran forever on a stray `(` in an array). The ctest TIMEOUT guards the time.
TEST(ShellReader, FuzzerTimeoutShapesScaledUpEnd) {
  for (int n : {10000, 100000}) {
    std::string pairs;
    for (int i = 0; i < n; ++i) pairs += "''";
    Read r = ReadText("A=(\n --master_addr ${MASTER_ADDR:-local" + pairs + "host}\n)\ntorchrun ${A[@]} x.py\n");
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_FALSE(r.commands.empty());
    EXPECT_EQ(Texts(r.commands.back()), (std::vector<std::string>{"torchrun", "--master_addr", "localhost", "x.py"}));
    r = ReadText("torchrun --master_addr \"${MASTER_ADDR:-local" + pairs + "host}\" x.py\n");  // quoted: '' kept, as bash
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.commands.back().size(), 4u);
    EXPECT_TRUE(r.commands.back()[2].text == "local" + pairs + "host");

    std::string spliced;  // DISTRIBUTED_ARGS=( opened again and again inside itself, never closed
    for (int i = 0; i < n / 10; ++i) spliced += "DISTRIBUTED_ARGS=(\n    --nproc_per_node $G ( ; & | < x\n";
    r = ReadText(spliced + "torchrun ${DIS 1.5e-4 \\\n --bf16\n");
    ASSERT_FALSE(r.status.ok());
    EXPECT_EQ(r.status.location().file, "t.sh");
    EXPECT_GT(r.status.location().line, 0);
    r = ReadText(spliced);
    ASSERT_FALSE(r.status.ok());
    EXPECT_NE(r.status.reason().find("never closed"), std::string::npos) << r.status.ToString();

    std::string bangs = "X=1\nif [ ";
    const int nbang = n / 2 + 1;  // under the command's word bound
    for (int i = 0; i < nbang; ++i) bangs += "! ";
    r = ReadText(bangs + "\"$X\" = 1 ]; then\n  echo even\nelse\n  echo odd\nfi\n");
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.commands.size(), 1u);
    EXPECT_EQ(Texts(r.commands[0]), (std::vector<std::string>{"echo", nbang % 2 ? "odd" : "even"}));
  }
}

// ---- random scripts against bash ----

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  std::string Script() {
    std::string s = "V0=a\nV1='b c'\nV2=\nN0=3\nA0=()\nA1=(x \"y z\")\n";
    const int n = Pick(3, 9);
    for (int i = 0; i < n; ++i) s += Statement(0);
    s += "printf '<%s>' START";  // printf with no argument still prints its format once
    for (int i = 0, k = Pick(1, 5); i < k; ++i) s += " " + Use();
    return s + "\n";
  }

 private:
  int Pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <class T>
  const T& One(const std::vector<T>& v) { return v[Pick(0, static_cast<int>(v.size()) - 1)]; }
  std::string Var() { return One<std::string>({"V0", "V1", "V2"}); }
  std::string Arr() { return One<std::string>({"A0", "A1"}); }
  std::string Value() {  // the right side of NAME=
    switch (Pick(0, 9)) {
      case 0: return One<std::string>({"plain", "--flag", "'two words'", "\"q  r\"", "x\\ y"});
      case 1: return "$" + Var();
      case 2: return "\"${" + Var() + "}-s\"";
      case 3: return "${GPUPLAN_UNSET:-\"" + One<std::string>({"d e", "1", "optim"}) + "\"}";
      case 4: return "${GPUPLAN_UNSET:-" + One<std::string>({"plain", "$V0", "'s q'", "x  y", "$V1"}) + "}";
      case 5: return "$((N0 " + One<std::string>({"+", "*", "-", "%"}) + " " + std::to_string(Pick(1, 9)) + "))";
      case 6: return "$(( ($N0 + " + std::to_string(Pick(0, 5)) + ") * 2 ))";
      case 7: return "${" + Var() + ":-fallback}";
      case 8: {
        const std::string inner = "${" + Arr() + One<std::string>({"[*]}", "[@]}"});
        return Pick(0, 1) ? "\"" + inner + "\"" : inner + "x";
      }
      default: return "pre${" + Var() + "}post";
    }
  }
  std::string Element() {
    switch (Pick(0, 7)) {
      case 0: return One<std::string>({"--fp8-format", "\"--fp8-format hybrid\"", "'--split 99,1,0'", "--x=1"});
      case 1: return "$" + Var();
      case 2: return "\"$" + Var() + "\"";
      case 3: return "${" + Arr() + "[@]}";
      case 4: return "\"${" + Arr() + "[@]}\"";
      case 5: return "\"--vocab-size $N0\"";
      case 6: return "$((N0+1))";
      default: return "${GPUPLAN_UNSET:-\"a b\"}";
    }
  }
  std::string Test() {
    switch (Pick(0, 5)) {
      case 0: return "[ \"$" + Var() + "\" = \"a\" ]";
      case 1: return "[[ \"$" + Var() + "\" == \"b c\" ]]";
      case 2: return "[ -z \"$" + Var() + "\" ]";
      case 3: return "[ \"$N0\" -gt " + std::to_string(Pick(0, 6)) + " ]";
      case 4: return "[ -n \"$" + Var() + "\" ] && [ \"$N0\" -le 4 ]";
      default: return "[ ! \"$" + Var() + "\" != \"a\" ] || [ \"$N0\" -eq 3 ]";
    }
  }
  std::string Statement(int depth) {
    const int k = Pick(0, depth < 2 ? 9 : 7);
    if (k <= 2) return Var() + "=" + Value() + "\n";
    if (k == 3) return "export " + Var() + "=" + Value() + "\n";
    if (k <= 5 || k == 7) {
      std::string s = Arr() + (Pick(0, 1) ? "+=(" : "=(");
      for (int i = 0, n = Pick(0, 4); i < n; ++i) s += (i ? (Pick(0, 1) ? " \\\n  " : "\n  ") : "") + Element();
      return s + ")\n";
    }
    if (k == 6) return "N0=$((N0 + " + std::to_string(Pick(1, 3)) + "))\n";
    std::string s = "if " + Test() + "; then\n";
    for (int i = 0, n = Pick(1, 2); i < n; ++i) s += "  " + Statement(depth + 1);
    if (Pick(0, 1)) {
      s += "elif " + Test() + "; then\n  " + Statement(depth + 1);
    }
    if (Pick(0, 1)) {
      s += "else\n";
      for (int i = 0, n = Pick(1, 2); i < n; ++i) s += "  " + Statement(depth + 1);
    }
    return s + "fi\n";
  }
  std::string Use() {
    switch (Pick(0, 7)) {
      case 0: return "${" + Arr() + "[@]}";
      case 1: return "\"${" + Arr() + "[@]}\"";
      case 2: return "$" + Var();
      case 3: return "\"$" + Var() + "\"";
      case 4: return "x${" + Var() + "}y";
      case 5: return "\"${" + Arr() + "[*]}\"";
      case 6: return "${#" + Arr() + "[@]}";
      default: return "--n=$N0";
    }
  }
  std::mt19937 rng_;
};

TEST(ShellReaderProperty, RandomScriptsGiveBashsWords) {
  int compared = 0;
  for (uint32_t seed = 1; seed <= 500; ++seed) {
    const std::string script = Gen(seed).Script();
    std::string error;
    const std::string ours = Reader(script, error);
    ASSERT_TRUE(error.empty()) << "seed " << seed << ": " << error << "\n" << script;
    ASSERT_EQ(ours, Bash(script)) << "seed " << seed << "\n" << script;
    ++compared;
  }
  EXPECT_EQ(compared, 500);
}

}  // namespace
}  // namespace gpuplan::import_detail
