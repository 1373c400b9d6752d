// Golden outputs of whole commands. GPUPLAN_UPDATE_GOLDEN=1 rewrites the expected files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

std::string RunGpuplan(const std::string& args) {
  const std::string cmd = std::string("cd ") + GPUPLAN_SOURCE_DIR + " && " + GPUPLAN_BINARY + " " + args + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = p ? pclose(p) : -1;
  return out + "[exit " + std::to_string(WEXITSTATUS(status)) + "]\n";
}

std::string Trim(const std::string& s) {
  const auto a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The planner prints how long its search took; that one number is masked.
std::string MaskWallTime(const std::string& s) {
  static const std::regex search_time(R"(estimated\) in [0-9.]+ s)"), json_wall(R"("wall_s": [0-9.eE+-]+)");
  return std::regex_replace(std::regex_replace(s, search_time, "estimated) in <wall> s"), json_wall, "\"wall_s\": \"<wall>\"");
}

TEST(Golden, WholeOutputsMatch) {
  const std::string dir = std::string(GPUPLAN_SOURCE_DIR) + "/tests/golden/";
  std::ifstream cases(dir + "cases.txt");
  ASSERT_TRUE(cases.good());
  const bool update = std::getenv("GPUPLAN_UPDATE_GOLDEN") != nullptr;
  std::string line;
  int checked = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto bar = line.find('|');
    const std::string name = Trim(line.substr(0, bar)), args = Trim(line.substr(bar + 1));
    const std::string got = MaskWallTime(RunGpuplan(args));
    const std::string path = dir + name + ".out";
    if (update) {
      std::ofstream(path) << got;
      continue;
    }
    std::ifstream f(path);
    ASSERT_TRUE(f.good()) << "missing " << path << " (run with GPUPLAN_UPDATE_GOLDEN=1)";
    std::stringstream want;
    want << f.rdbuf();
    EXPECT_EQ(got, want.str()) << name << ": gpuplan " << args;
    ++checked;
  }
  if (!update) EXPECT_GE(checked, 5);
}

}  // namespace
