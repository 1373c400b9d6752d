// The quoting of values written into generated files (gpuplan/quote.h): each quoted form read back
// by the real reader of its context (bash, yaml-cpp, nlohmann::json) gives the value unchanged.
#include "gpuplan/quote.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "gpuplan/launch.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

// Values a job's name, path or id may carry: newlines, quotes, $( ), backticks, #, ;, control bytes, UTF-8.
const std::vector<std::string>& Nasty() {
  static const std::vector<std::string> v = {
      "plain-name_1.0", "", "two words", "evil\ntouch PWNED", "it's", "say \"hi\"", "$(touch PWNED)", "`touch PWNED`",
      "a#b", "a;touch PWNED", "back\\slash", "tab\there", "cr\rlf", "bell\x07", "del\x7f", "}{${X}", "'\"'\"",
      "\xc3\xa9t\xc3\xa9", "\xe2\x80\xa8sep", "bad\xff" "byte", "-starts-with-dash", "*?[glob]", "~user", "a\n#b\n'c'\n$(d)\n`e`"};
  return v;
}

std::string RunShell(const std::string& cmd) {
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return "<popen failed>";
  std::string out;
  char buf[256];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  return out;
}

TEST(Quote, ShellWordReadsBackInBash) {
  for (const auto& v : Nasty()) {
    SCOPED_TRACE(v);
    // The word goes through bash -c inside single quotes of its own: escape those for popen's sh.
    std::string script = "printf %s " + ShellWord(v);
    std::string outer = "'";
    for (char c : script) outer += c == '\'' ? std::string("'\\''") : std::string(1, c);
    EXPECT_EQ(RunShell("bash -c " + outer + "'"), v);
  }
}

TEST(Quote, ShellWordIsOnePrintableLine) {
  for (const auto& v : Nasty()) {
    const std::string w = ShellWord(v);
    for (char c : w) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << w;
  }
  EXPECT_EQ(ShellWord("train.py"), "train.py");
  EXPECT_EQ(ShellWord(""), "''");
}

TEST(Quote, DoubleQuotedReadsBackInBash) {
  for (const auto& v : {std::string("$(touch PWNED)"), std::string("`x` \"y\" \\z $HOME")}) {
    std::string script = "printf %s \"" + ShellDoubleQuoted(v) + "\"";
    std::string outer = "'";
    for (char c : script) outer += c == '\'' ? std::string("'\\''") : std::string(1, c);
    EXPECT_EQ(RunShell("bash -c " + outer + "'"), v);
  }
}

TEST(Quote, CommentLineCannotEndTheComment) {
  for (const auto& v : Nasty()) {
    const std::string c = CommentLine(v);
    EXPECT_EQ(c.find('\n'), std::string::npos) << c;
    EXPECT_EQ(c.find('\r'), std::string::npos) << c;
    EXPECT_EQ(c.find("\xe2\x80\xa8"), std::string::npos) << c;
  }
  EXPECT_EQ(CommentLine("evil\ntouch PWNED"), "evil\\ntouch PWNED");
  EXPECT_EQ(CommentLine("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");  // valid UTF-8 kept
  EXPECT_EQ(CommentLine("bad\xff"), "bad\\xFF");
}

// Invalid UTF-8 cannot be a YAML/JSON/TOML string: those read back with U+FFFD (tested below).
bool ValidUtf8Sample(const std::string& v) { return v.find('\xff') == std::string::npos; }

TEST(Quote, YamlScalarReadsBack) {
  for (const auto& v : Nasty()) {
    if (!ValidUtf8Sample(v)) continue;
    SCOPED_TRACE(v);
    const YAML::Node n = YAML::Load("key: " + YamlScalar(v) + "\n");
    EXPECT_EQ(n["key"].as<std::string>(), v);
  }
}

TEST(Quote, JsonStringReadsBack) {
  for (const auto& v : Nasty()) {
    if (!ValidUtf8Sample(v)) continue;
    SCOPED_TRACE(v);
    EXPECT_EQ(nlohmann::json::parse(JsonString(v)).get<std::string>(), v);
  }
  // An invalid byte is replaced, never thrown on.
  EXPECT_EQ(nlohmann::json::parse(JsonString("a\xff")).get<std::string>(), "a\xef\xbf\xbd");
}

TEST(Quote, TomlStringHasNoRawControlCharacters) {
  for (const auto& v : Nasty()) {
    const std::string t = TomlString(v);
    ASSERT_GE(t.size(), 2u);
    EXPECT_EQ(t.front(), '"');
    EXPECT_EQ(t.back(), '"');
    for (char c : t) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << t;
  }
  EXPECT_EQ(TomlString("a\"b\n"), "\"a\\\"b\\n\"");
}

TEST(Quote, DnsLabelIsADns1035Label) {
  const std::regex label("[a-z]([-a-z0-9]{0,61}[a-z0-9])?");
  for (const auto& v : Nasty()) EXPECT_TRUE(std::regex_match(DnsLabel(v), label)) << DnsLabel(v);
  EXPECT_TRUE(std::regex_match(DnsLabel(std::string(200, 'x') + "-" + std::string(100, '-')), label));
  EXPECT_EQ(DnsLabel("My_Run.7"), "my-run-7");
  EXPECT_EQ(DnsLabel("7b"), "gpuplan-7b");
}

TEST(Quote, PlainValue) {
  EXPECT_TRUE(PlainValue("checkpoints/run-1"));
  EXPECT_FALSE(PlainValue(""));
  EXPECT_FALSE(PlainValue("a b"));
  EXPECT_FALSE(PlainValue("a\nb"));
  EXPECT_FALSE(PlainValue("$(x)"));
}

// Through the engines: a checkpoint folder, model name and origin that are not plain words stay inside
// their quoting (the Bridge override file, read by word splitting, says them in a comment instead).
TEST(Quote, EnginesKeepUserTextQuoted) {
  LaunchPlan p;
  p.job = testing_util::MakeJob("model: {preset: llama-2-7b}\ncluster: {gpu: h100, gpus_per_node: 8, num_gpus: 8}\n");
  p.job.arch.name = "evil\ntouch PWNED";
  p.checkpoint_dir = "ck pts\n$(touch PWNED)";
  p.origin = "job\ntouch PWNED.yaml";
  p.step_time_s = 1;
  static const Catalog catalog = *LoadCatalog();
  for (ExportFormat f : {ExportFormat::kMegatron, ExportFormat::kTorchtitan, ExportFormat::kDeepspeed}) {
    auto files = ExportEngine(f, p, catalog);
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    for (const auto& a : *files) {
      SCOPED_TRACE(a.name);
      EXPECT_EQ(a.content.find("\ntouch PWNED"), std::string::npos) << a.content;
      if (a.name == "bridge-overrides.txt") {
        EXPECT_EQ(a.content.find("\ncheckpoint.save="), std::string::npos);
        EXPECT_NE(a.content.find("# checkpoint.save=PATH"), std::string::npos);
      }
      if (a.name == "torchtitan.toml") EXPECT_NE(a.content.find("folder = \"ck pts\\n$(touch PWNED)\""), std::string::npos) << a.content;
      if (a.name == "megatron-args.sh") EXPECT_NE(a.content.find("--save $'ck pts\\n$(touch PWNED)'"), std::string::npos) << a.content;
    }
  }
}

}  // namespace
}  // namespace gpuplan
