// End-to-end robustness (issue 8): the real binary on special files, non-UTF-8 text under --json and
// flag values that are not wholly valid. Every run is fork/exec'd with a 10 s alarm that survives the
// exec, so a hang (a FIFO open waiting for a writer, /dev/urandom read to the end) is a failure by
// SIGALRM, never a blocked CI job. Nothing here depends on timing otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

struct Proc {
  int exit_code = -1;
  int signal = 0;     // SIGALRM: it hung past the guard
  std::string out;    // stdout + stderr
};

constexpr unsigned kHangGuardS = 10;

Proc Gpuplan(const std::vector<std::string>& args) {
  Proc r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    std::string bin = GPUPLAN_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    alarm(kHangGuardS);  // pending alarms survive execv: a hung gpuplan dies of SIGALRM
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    r.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

std::string Temp(const std::string& name) { return ::testing::TempDir() + "/robustness_" + name; }

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = Temp(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Exit 1 with the path as the location and the message naming what it is.
void ExpectRefused(const std::vector<std::string>& args, const std::string& path, const std::string& what) {
  const Proc r = Gpuplan(args);
  ASSERT_EQ(r.signal, 0) << "signal " << r.signal << (r.signal == SIGALRM ? " (hung)" : "") << ": " << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  // At the file itself, or (a config.json named by --config / model.config) at the key that named it.
  const bool at_file = r.out.find("gpuplan: " + path + ": cannot read " + what) != std::string::npos;
  const bool at_key = r.out.find("'" + path + "': cannot read " + what) != std::string::npos;
  EXPECT_TRUE(at_file || at_key) << r.out;
}

TEST(Robustness, SpecialFilesAsInputsAreRefusedNotRead) {
  // /dev/zero ended in std::bad_alloc (exit 3); /dev/urandom hung.
  for (const char* dev : {"/dev/zero", "/dev/urandom"}) {
    ExpectRefused({"memory", dev}, dev, "a character device");
    ExpectRefused({"memory", "--config", dev}, dev, "a character device");
    ExpectRefused({"memory", "--model", "gpt2", "--catalog", dev}, dev, "a character device");
    ExpectRefused({"estimate", "--model", "gpt2", "--calibration", dev}, dev, "a character device");
  }
  ExpectRefused({"memory", ::testing::TempDir()}, ::testing::TempDir(), "a directory");
}

TEST(Robustness, FifoAsAnInputIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = Temp("fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused({"memory", fifo}, fifo, "a FIFO");
  ExpectRefused({"memory", "--config", fifo}, fifo, "a FIFO");
  const std::string job = Write("fifo_config.yaml", "model:\n  config: " + fifo + "\n");
  const Proc r = Gpuplan({"memory", job});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out.rfind("gpuplan: " + job + ":2: model.config: '" + fifo + "': cannot read a FIFO", 0), 0u) << r.out;
  ExpectRefused({"memory", "--model", "gpt2", "--catalog", fifo}, fifo, "a FIFO");
  std::filesystem::remove(fifo);
}

// Every --json output must parse as JSON, whatever bytes the input held (exit 3 before).
nlohmann::json ParseJson(const Proc& r) {
  EXPECT_NE(r.exit_code, 3) << r.out;
  EXPECT_EQ(r.signal, 0) << r.out;
  try {
    return nlohmann::json::parse(r.out);  // throws on invalid UTF-8
  } catch (const std::exception& ex) {
    ADD_FAILURE() << "not valid JSON (" << ex.what() << "): " << r.out;
    return {};
  }
}

TEST(Robustness, NonUtf8WithJsonIsValidJson) {
  const std::string bad_name = Temp("\xff\xfe.yaml");
  nlohmann::json j = ParseJson(Gpuplan({"memory", bad_name, "--json"}));
  EXPECT_EQ(j["error"]["code"], "bad_input");
  const std::string bad_key = Write("badkey.yaml", "model:\n  pres\xc3" "et: gpt2\n");
  j = ParseJson(Gpuplan({"memory", bad_key, "--json"}));
  EXPECT_EQ(j["error"]["code"], "bad_input");
  EXPECT_EQ(j["error"]["location"], bad_key + ":2");
  j = ParseJson(Gpuplan({"memory", "--model", "gpt2", "--gpu", "h100\x80", "--json"}));
  EXPECT_EQ(j["error"]["key"], "--gpu");
  j = ParseJson(Gpuplan({"memory", "--model", "gpt2", "--name", "caf\xe9" "", "--json"}));
  EXPECT_TRUE(j.contains("model")) << j.dump();
  j = ParseJson(Gpuplan({"plan", "--model", "gpt2", "--tokens", "1e9", "--clouds", "\xff", "--json"}));
  EXPECT_EQ(j["error"]["code"], "bad_input");
}

TEST(Robustness, ThreadsFlagIsWhollyParsed) {
  for (const char* v : {"2abc", "0x2", "2.5", " 2", ""}) {
    const Proc r = Gpuplan({"plan", "--model", "gpt2", "--tokens", "1e9", "--threads", v});
    EXPECT_EQ(r.exit_code, 1) << "'" << v << "': " << r.out;
    EXPECT_NE(r.out.find("--threads"), std::string::npos) << r.out;
  }
}

TEST(Robustness, JsonEqualsNoDoesNotPrintJson) {
  // It printed JSON before. A switch takes no value: --json=VALUE is refused, in plain text.
  for (const char* flag : {"--json=no", "--json=false", "--json=true"}) {
    const Proc r = Gpuplan({"memory", "--model", "gpt2", flag});
    EXPECT_EQ(r.exit_code, 1) << flag << ": " << r.out;
    EXPECT_EQ(r.out.rfind("gpuplan: command line: --json: takes no value", 0), 0u) << r.out;
  }
  const Proc help = Gpuplan({"memory", "--help=no"});
  EXPECT_EQ(help.exit_code, 1) << help.out;
  const Proc on = Gpuplan({"memory", "--model", "gpt2", "--json"});
  EXPECT_EQ(on.exit_code, 0) << on.out;
  EXPECT_EQ(ParseJson(on)["model"]["name"], "gpt2");
}

TEST(Robustness, EmptyFlagValueIsAnError) {
  // --calibration= ran with the built-in calibration; --catalog= said "cannot open" with no flag.
  for (const char* flag : {"--catalog=", "--calibration=", "--format="}) {
    const Proc r = Gpuplan({"estimate", "--model", "gpt2", flag});
    EXPECT_EQ(r.exit_code, 1) << flag << ": " << r.out;
    EXPECT_NE(r.out.find("command line: " + std::string(flag).substr(0, std::string(flag).size() - 1) + ": needs a value"),
              std::string::npos)
        << r.out;
  }
}

TEST(Robustness, MemoryRejectsUnknownNetworkLinkAndStorageAsEstimateDoes) {
  for (const char* flag : {"--network", "--intra-node", "--storage"}) {
    for (const char* cmd : {"memory", "estimate"}) {
      const Proc r = Gpuplan({cmd, "--model", "gpt2", flag, "no-such-thing"});
      EXPECT_EQ(r.exit_code, 1) << cmd << " " << flag << ": " << r.out;
      EXPECT_NE(r.out.find(std::string("command line: ") + flag + ": unknown"), std::string::npos) << r.out;
    }
  }
  const std::string job = Write("net.yaml", "model: {preset: gpt2}\ncluster: {network: no-such-net}\n");
  const Proc r = Gpuplan({"memory", job});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(job + ":2: cluster.network: unknown link"), std::string::npos) << r.out;
}

TEST(Robustness, ParamCountOverflowAtTheDocumentedMaximum) {
  // --params 1e12 and params: 1e15 wrapped int64 before and printed garbage with exit 0.
  for (const char* p : {"9e11", "1e12", "1e15"}) {
    const Proc r = Gpuplan({"memory", "--params", p, "--json"});
    EXPECT_EQ(r.exit_code, 2) << p << ": " << r.out;  // far too big for one GPU, said with every number
    const nlohmann::json j = ParseJson(r);
    EXPECT_EQ(j["model"]["params"].get<double>(), std::stod(p)) << r.out;
    EXPECT_GT(j["per_gpu"]["total_bytes"].get<double>(), 0) << r.out;
  }
}

}  // namespace
