// The web API (src/server/, docs/web.md) on a real socket: every route and status, the JSON of each route
// against the built `gpuplan` binary's --json for the same files, and bad requests that must leave the server
// answering /healthz.
#include <gtest/gtest.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/server.h"
#include "../test_util.h"

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string Example(const std::string& name) { return ReadFile(std::string(GPUPLAN_SOURCE_DIR) + "/examples/" + name); }

// A server on a free loopback port for the life of the object.
class TestServer {
 public:
  explicit TestServer(gpuplan::server::ServerOptions opt = {}) {
    opt.port = 0;
    server_ = std::make_unique<gpuplan::server::WebServer>(opt);
    const gpuplan::Status st = server_->Bind();
    EXPECT_TRUE(st.ok()) << st.ToString();
    thread_ = std::thread([this] { server_->Run(); });
    for (int i = 0; i < 100 && !Client().Get("/healthz"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ~TestServer() {
    server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(600, 0);
    c.set_write_timeout(60, 0);
    return c;
  }
  int port() const { return server_->port(); }

 private:
  std::unique_ptr<gpuplan::server::WebServer> server_;
  std::thread thread_;
};

TestServer& Shared() {
  static TestServer* s = new TestServer();
  return *s;
}

struct Answer {
  int status = -1;
  std::string body;
};

Answer Post(const std::string& path, const std::string& body, const std::string& type = "application/json") {
  auto res = Shared().Client().Post(path.c_str(), body, type.c_str());
  if (!res) return {};
  return {res->status, res->body};
}

Answer Get(const std::string& path) {
  auto res = Shared().Client().Get(path.c_str());
  if (!res) return {};
  return {res->status, res->body};
}

struct Proc {
  int exit_code = -1;
  std::string out;  // stdout only: the --json document
};

// The built binary in a folder of its own holding `files`: the same names the API gives posted content, so
// every field that names an input file (locations, "origin", "fleet") reads the same in both answers.
Proc RunCli(const std::string& args, const std::map<std::string, std::string>& files) {
  static int calls = 0;
  const fs::path dir = fs::path(::testing::TempDir()) / ("web_api_" + std::to_string(::getpid()) + "_" + std::to_string(calls++));
  fs::create_directories(dir);
  for (const auto& [name, text] : files) std::ofstream(dir / name, std::ios::binary) << text;
  const std::string cmd = "cd '" + dir.string() + "' && " + std::string(GPUPLAN_BINARY) + " " + args + " 2>/dev/null";
  Proc r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  fs::remove_all(dir);
  return r;
}

// Fields that differ between two runs of the same input: a search's own wall-clock time (plan's wall_s,
// plan --pool's search_s).
const char* const kRunTimes[] = {"wall_s", "search_s"};

void DropRunTimes(Json& j) {
  if (j.is_object()) {
    for (const char* k : kRunTimes) j.erase(k);
    for (auto& [k, v] : j.items()) DropRunTimes(v);
  } else if (j.is_array()) {
    for (auto& v : j) DropRunTimes(v);
  }
}

int StatusFor(int exit_code) { return exit_code == 0 ? 200 : exit_code == 1 ? 400 : exit_code == 2 ? 422 : 500; }

// POST /api/<route> with `body` against `gpuplan <cli_args>` run beside `files`: same status (from the exit
// code) and the same JSON, wall_s aside.
void ExpectSameAsCli(const std::string& route, const Json& body, const std::string& cli_args,
                     const std::map<std::string, std::string>& files) {
  SCOPED_TRACE(route + ": gpuplan " + cli_args);
  const Proc cli = RunCli(cli_args, files);
  const Answer api = Post("/api/" + route, body.dump());
  ASSERT_EQ(api.status, StatusFor(cli.exit_code)) << api.body.substr(0, 2000) << "\nCLI:\n" << cli.out.substr(0, 2000);
  Json a = Json::parse(api.body), c = Json::parse(cli.out);
  DropRunTimes(a);
  DropRunTimes(c);
  EXPECT_EQ(a, c) << "API:\n" << a.dump(2).substr(0, 3000) << "\nCLI:\n" << c.dump(2).substr(0, 3000);
  bool timed = false;
  for (const char* k : kRunTimes) timed = timed || api.body.find(std::string("\"") + k + "\"") != std::string::npos;
  if (!timed) EXPECT_EQ(api.body, cli.out) << "the bytes the CLI prints";
}

enum class Kind { kTraining, kServing, kPool, kFleet, kOther };

Kind KindOf(const std::string& text) {
  const YAML::Node n = YAML::Load(text);
  if (n["jobs"]) return Kind::kFleet;
  if (n["groups"]) return Kind::kPool;
  if (n["serving"]) return Kind::kServing;
  if (n["model"]) return Kind::kTraining;
  return Kind::kOther;
}

std::vector<std::string> Examples() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(std::string(GPUPLAN_SOURCE_DIR) + "/examples"))
    if (e.path().extension() == ".yaml") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WebApi, TrainingExamplesEqualTheCli) {
  int n = 0;
  for (const auto& name : Examples()) {
    const std::string text = Example(name);
    if (KindOf(text) != Kind::kTraining || text.find("\npool") != std::string::npos) continue;
    SCOPED_TRACE(name);
    const Json body = {{"job", text}};
    const std::map<std::string, std::string> files = {{"job.yaml", text}};
    ExpectSameAsCli("memory", body, "memory job.yaml --json", files);
    ExpectSameAsCli("estimate", body, "estimate job.yaml --json", files);
    ++n;
    // Under the sanitizers a search runs 5-30x slower: the two largest searches are left to the plain build.
    if (gpuplan::testing_util::kSanitized && (name == "175b-pretraining.yaml" || name == "70b-full-finetune.yaml")) continue;
    ExpectSameAsCli("plan", body, "plan job.yaml --json", files);
    ExpectSameAsCli("export", {{"job", text}, {"flags", {{"to", "torchrun"}}}}, "export job.yaml --to torchrun --json", files);
  }
  EXPECT_GE(n, 6) << "the training examples";
}

TEST(WebApi, ServingExamplesEqualTheCli) {
  int n = 0;
  for (const auto& name : Examples()) {
    const std::string text = Example(name);
    if (KindOf(text) != Kind::kServing) continue;
    SCOPED_TRACE(name);
    const std::map<std::string, std::string> files = {{"job.yaml", text}};
    ExpectSameAsCli("serving", {{"job", text}}, "serving job.yaml --json", files);
    ExpectSameAsCli("serving", {{"job", text}, {"flags", {{"plan", true}}}}, "serving job.yaml --plan --json", files);
    ExpectSameAsCli("export", {{"job", text}, {"flags", {{"to", "vllm"}}}}, "export job.yaml --to vllm --json", files);
    ++n;
  }
  EXPECT_GE(n, 3) << "the serving examples";
}

TEST(WebApi, PoolExamplesEqualTheCli) {
  const std::string job = Example("pool-32b-h800-h20.yaml"), pool = Example("pool-h800-h20.yaml");
  const std::map<std::string, std::string> files = {{"job.yaml", job}, {"pool.yaml", pool}};
  ExpectSameAsCli("estimate", {{"job", job}, {"pool", pool}}, "estimate job.yaml --pool pool.yaml --json", files);
  ExpectSameAsCli("plan", {{"job", job}, {"pool", pool}}, "plan job.yaml --pool pool.yaml --json", files);
  const std::string lab = Example("pool-lab-mixed.yaml"), seven = Example("7b-full-finetune-1node.yaml");
  ExpectSameAsCli("plan", {{"job", seven}, {"pool", lab}}, "plan job.yaml --pool pool.yaml --json", {{"job.yaml", seven}, {"pool.yaml", lab}});
}

TEST(WebApi, JobAsAnObjectEqualsTheSameJobAsJson) {
  const Json job = {{"model", {{"preset", "llama-2-7b"}}},
                    {"training", {{"method", "full"}, {"seq_len", 2048}, {"global_batch", 64}, {"tokens", 1e9}}},
                    {"cluster", {{"gpu", "a100-80gb"}, {"num_gpus", 8}}}};
  // The API names an object job job.json and prints it as DumpJson does (indent 2, keys sorted).
  ExpectSameAsCli("estimate", {{"job", job}}, "estimate job.json --json", {{"job.json", job.dump(2) + "\n"}});
  ExpectSameAsCli("estimate", {{"job", job}, {"flags", {{"gpu", "h100-sxm"}, {"micro-batch", 2}}}},
                  "estimate job.json --gpu h100-sxm --micro-batch 2 --json", {{"job.json", job.dump(2) + "\n"}});
}

TEST(WebApi, FleetEqualsTheCli) {
  std::string fleet = Example("fleet-lab.yaml");
  const std::string pool = Example("pool-lab-mixed.yaml");
  // The pool posted beside the fleet, by the name the API gives it.
  const std::string by_name = std::regex_replace(fleet, std::regex("pool: pool-lab-mixed.yaml"), "pool: pool.yaml");
  ExpectSameAsCli("fleet", {{"fleet", by_name}, {"pool", pool}}, "fleet fleet.yaml --json", {{"fleet.yaml", by_name}, {"pool.yaml", pool}});
  // Each fleet run is seconds of pool searches: under the sanitizers (5-30x slower) the first comparison only.
  if (gpuplan::testing_util::kSanitized) return;
  // The pool inline in the fleet.
  std::string indented;
  std::istringstream lines(pool);
  for (std::string line; std::getline(lines, line);) indented += "  " + line + "\n";
  const std::string inline_pool = std::regex_replace(fleet, std::regex("pool: pool-lab-mixed.yaml\n"), "pool:\n" + indented);
  ExpectSameAsCli("fleet", {{"fleet", inline_pool}}, "fleet fleet.yaml --json", {{"fleet.yaml", inline_pool}});
  // A trace, posted.
  const std::string trace = Example("fleet-lab-trace.csv");
  ExpectSameAsCli("fleet", {{"fleet", inline_pool}, {"trace", trace}}, "fleet fleet.yaml --simulate trace.csv --json",
                  {{"fleet.yaml", inline_pool}, {"trace.csv", trace}});
}

// An nccl-tests all_reduce_perf output of one 8-GPU node, written for this test.
const char* kNcclOutput =
    "# nThread 1 nGpus 8 minBytes 1073741824 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid   1000 on node-a device  0 [0x07] NVIDIA H100 80GB HBM3\n"
    "#  Rank  7 Group  0 Pid   1000 on node-a device  7 [0xdb] NVIDIA H100 80GB HBM3\n"
    "#\n"
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "  1073741824     268435456     float     sum      -1   4490.1  239.13  418.48      0   4482.6  239.53  419.18      0\n"
    "  2147483648     536870912     float     sum      -1   8868.3  242.16  423.78      0   8860.0  242.38  424.17      0\n"
    "  4294967296    1073741824     float     sum      -1    17620  243.75  426.57      0    17605  243.96  426.93      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 423.18\n";

TEST(WebApi, VerifyEqualsTheCli) {
  ExpectSameAsCli("verify", {{"outputs", {{"allreduce.txt", kNcclOutput}}}}, "verify allreduce.txt --json", {{"allreduce.txt", kNcclOutput}});
  const std::string job = Example("7b-full-finetune-1node.yaml");
  ExpectSameAsCli("verify", {{"outputs", {{"allreduce.txt", kNcclOutput}}}, {"job", job}}, "verify --plan job.yaml allreduce.txt --json",
                  {{"allreduce.txt", kNcclOutput}, {"job.yaml", job}});
  // An output gpuplan does not read: exit 1, 400, the CLI's JSON still.
  ExpectSameAsCli("verify", {{"outputs", {{"notes.txt", "hello\n"}}}}, "verify notes.txt --json", {{"notes.txt", "hello\n"}});
}

TEST(WebApi, ExportOfAPlanJsonEqualsTheCli) {
  const std::string job = Example("13b-full-finetune-1node.yaml");
  const Proc plan = RunCli("plan job.yaml --json", {{"job.yaml", job}});
  ASSERT_EQ(plan.exit_code, 0);
  ExpectSameAsCli("export", {{"plan", plan.out}, {"flags", {{"to", "deepspeed"}}}}, "export plan.json --to deepspeed --json",
                  {{"plan.json", plan.out}});
  ExpectSameAsCli("export", {{"plan", Json::parse(plan.out)}, {"flags", {{"to", "deepspeed"}, {"plan", 2}}}},
                  "export plan.json --to deepspeed --plan 2 --json", {{"plan.json", Json::parse(plan.out).dump(2) + "\n"}});
}

TEST(WebApi, CatalogAndModelsEqualTheCli) {
  for (const char* kind : {"gpus", "instances", "links", "storage"}) {
    const Answer api = Get(std::string("/api/catalog/") + kind);
    const Proc cli = RunCli(std::string("catalog ") + kind + " --json", {});
    EXPECT_EQ(api.status, 200) << kind;
    EXPECT_EQ(api.body, cli.out) << kind;
  }
  const Answer models = Get("/api/models");
  EXPECT_EQ(models.status, 200);
  EXPECT_EQ(models.body, RunCli("models --json", {}).out);
  EXPECT_EQ(Get("/api/catalog/prices").status, 404);
}

TEST(WebApi, StatusCodes) {
  EXPECT_EQ(Get("/healthz").status, 200);
  const Answer page = Get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<html"), std::string::npos);
  EXPECT_EQ(Get("/index.html").body, page.body);
  // 400: a flag that does not exist, with the key path and the reason in the CLI's error object.
  const Answer bad = Post("/api/estimate", R"({"job": {"model": {"preset": "llama-2-7b"}}, "flags": {"gpuu": "h100"}})");
  EXPECT_EQ(bad.status, 400);
  const Json e = Json::parse(bad.body);
  EXPECT_EQ(e["error"]["code"], "bad_input");
  EXPECT_EQ(e["error"]["key"], "flags.gpuu");
  EXPECT_EQ(e["error"]["location"], "request");
  // 400 from the command: the key and line of the posted job.
  const Answer bad_key = Post("/api/memory", Json{{"job", "model:\n  preset: llama-2-7b\ntraining:\n  seq_len: -4\n"}}.dump());
  EXPECT_EQ(bad_key.status, 400);
  EXPECT_EQ(Json::parse(bad_key.body)["error"]["key"], "training.seq_len");
  EXPECT_EQ(Json::parse(bad_key.body)["error"]["location"], "job.yaml:4");
  // 404: no such route or file.
  EXPECT_EQ(Get("/nope.js").status, 404);
  EXPECT_EQ(Post("/api/nope", "{}").status, 404);
  EXPECT_EQ(Json::parse(Get("/nope.js").body)["error"]["code"], "bad_input");
  // 413: over 1 MiB.
  const Answer big = Post("/api/estimate", "{\"job\": \"" + std::string(gpuplan::server::kMaxBodyBytes + 10, 'a') + "\"}");
  EXPECT_EQ(big.status, 413);
  EXPECT_TRUE(Json::parse(big.body).contains("error"));
  // 415: not JSON by its content type (a form post from another site).
  EXPECT_EQ(Post("/api/estimate", "{}", "text/plain").status, 415);
  // 422: does not fit, with every number still there.
  const Answer no_fit = Post("/api/memory", R"({"job": {"model": {"preset": "llama-3-70b"}, "cluster": {"gpu": "rtx4090-24gb"}}})");
  EXPECT_EQ(no_fit.status, 422);
  EXPECT_EQ(Json::parse(no_fit.body)["error"]["code"], "infeasible");
  EXPECT_TRUE(Json::parse(no_fit.body).contains("per_gpu"));
}

TEST(WebApi, NoFileIsEverOpened) {
  // Flags that name files or write them are refused by name.
  for (const char* flag : {"ledger", "catalog", "calibration", "from", "out", "pool", "config", "serving-engines", "fabric-env", "threads"}) {
    const Answer a = Post("/api/export", Json{{"job", {{"model", {{"preset", "llama-2-7b"}}}}}, {"flags", {{flag, "/etc/passwd"}}}}.dump());
    EXPECT_EQ(a.status, 400) << flag;
    EXPECT_EQ(Json::parse(a.body)["error"]["key"], std::string("flags.") + flag) << a.body;
  }
  // Paths inside posted files: a model config, a fleet's pool and job, an export's PLAN.json are not read.
  const char* secret = "/etc/passwd";
  ASSERT_TRUE(fs::exists(secret));
  for (const Json& job : {Json{{"model", {{"config", secret}}}}, Json{{"model", {{"preset", "/etc/hostname.json"}}}}}) {
    const Answer a = Post("/api/memory", Json{{"job", job}}.dump());
    EXPECT_EQ(a.status, 400) << a.body;
    EXPECT_EQ(a.body.find("root:"), std::string::npos);
  }
  const Answer fleet = Post("/api/fleet", Json{{"fleet", std::string("pool: ") + secret + "\njobs: []\n"}}.dump());
  EXPECT_EQ(fleet.status, 400) << fleet.body;
  EXPECT_NE(Json::parse(fleet.body)["error"]["message"].get<std::string>().find("not readable here"), std::string::npos) << fleet.body;
  const Answer export_path = Post("/api/export", Json{{"plan", secret}, {"flags", {{"to", "torchrun"}}}}.dump());
  EXPECT_EQ(export_path.status, 400) << export_path.body;
  // Path traversal on the page's files.
  for (const char* path : {"/../etc/passwd", "/%2e%2e/etc/passwd", "/..%2f..%2fetc/passwd", "/web/../../etc/passwd", "/./index.html/../../x"}) {
    const Answer a = Get(path);
    EXPECT_EQ(a.status, 404) << path;
    EXPECT_EQ(a.body.find("root:"), std::string::npos) << path;
  }
  // Another Host: a page on another site reaching the loopback server by its own name (DNS rebinding).
  auto res = Shared().Client().Get("/healthz", {{"Host", "attacker.example:8600"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
}

TEST(WebApi, BadRequestsLeaveTheServerAnswering) {
  const std::string deep(200000, '[');
  const std::vector<std::string> bodies = {
      "", "{", "[1,2", "null", "42", "\"job\"", "{\"job\": 5}", "{\"job\": null}", "{\"flags\": []}", "{\"job\": {}, \"flags\": 3}",
      R"({"job": {"model": {"preset": "llama-2-7b"}}, "flags": {"gpu": {"a": 1}}})",
      R"({"job": {"model": {"preset": "llama-2-7b"}}, "flags": {"tokens": 1e308}})",
      R"({"job": {"model": {"preset": "llama-2-7b"}}, "flags": {"tokens": -1}})",
      R"({"job": {"model": {"preset": "llama-2-7b"}}, "flags": {"global-batch": 9223372036854775808}})",
      R"({"job": {"model": {"preset": "llama-2-7b"}}, "flags": {"seq-len": 1e999}})",
      R"({"job": {"model": {"preset": "llama-2-7b"}, "training": {"seq_len": "abc", "tokens": 1e308}}})",
      R"({"job": {"model": {"preset": "llama-2-7b"}, "cluster": {"num_gpus": 9223372036854775807}}})",
      R"({"job": {"model": {"preset": "llama-2-7b"}, "training": {"global_batch": -1}}})",
      R"({"job": "model: [unclosed"})", R"({"job": "{},"})", R"({"job": "\u0000"})", "{\"job\": \"\xff\xfe\"}",
      R"({"job": {"model": {"preset": "llama-2-7b"}}, "unknown": 1})", deep, "{\"job\": " + deep + "}",
  };
  for (int round = 0; round < 1000 / static_cast<int>(bodies.size()) + 1; ++round)
    for (size_t i = 0; i < bodies.size(); ++i) {
      const std::string route = i % 3 == 0 ? "estimate" : i % 3 == 1 ? "memory" : "plan";
      const Answer a = Post("/api/" + route, bodies[i]);
      ASSERT_GE(a.status, 400) << bodies[i].substr(0, 200) << " -> " << a.status << " " << a.body.substr(0, 300);
      ASSERT_LT(a.status, 500) << bodies[i].substr(0, 200) << " -> " << a.body.substr(0, 300);
      EXPECT_NO_THROW((void)Json::parse(a.body)) << bodies[i].substr(0, 200);
    }
  // A 10 MiB body.
  const Answer huge = Post("/api/estimate", std::string(10 << 20, ' '));
  EXPECT_EQ(huge.status, 413);
  EXPECT_EQ(Get("/healthz").status, 200);
}

TEST(WebApi, LargeSearchRefusedUnlessStreamed) {
  gpuplan::server::ServerOptions opt;
  opt.max_plan_items = 50;
  TestServer small(opt);
  // A search of a second or two in the plain build (progress events every 200 ms); a shorter one under the sanitizers.
  const std::string example = gpuplan::testing_util::kSanitized ? "13b-full-finetune-1node.yaml" : "70b-full-finetune.yaml";
  const std::string body = Json{{"job", Example(example)}}.dump();
  auto res = small.Client().Post("/api/plan", body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 422) << res->body;
  EXPECT_NE(Json::parse(res->body)["error"]["message"].get<std::string>().find("over the limit of 50"), std::string::npos);
  // Streamed: progress events, then the result, with no limit.
  std::string events;
  auto streamed = small.Client().Post("/api/plan?stream=1", httplib::Headers{}, body, "application/json");
  ASSERT_TRUE(streamed);
  EXPECT_EQ(streamed->status, 200);
  events = streamed->body;
  if (!gpuplan::testing_util::kSanitized) EXPECT_NE(events.find("event: progress"), std::string::npos);
  const size_t at = events.find("event: result\ndata: ");
  ASSERT_NE(at, std::string::npos) << events.substr(0, 500);
  const Json last = Json::parse(events.substr(at + 20, events.find('\n', at + 20) - at - 20));
  EXPECT_EQ(last["status"], 200);
  EXPECT_EQ(last["exit_code"], 0);
  const Proc cli = RunCli("plan job.yaml --json", {{"job.yaml", Example(example)}});
  Json a = last["result"], c = Json::parse(cli.out);
  DropRunTimes(a);
  DropRunTimes(c);
  EXPECT_EQ(a, c);
}

TEST(WebApi, ClosingAStreamCancelsTheSearch) {
  TestServer s;
  // The largest example's search over every GPU of the catalog: seconds, long enough to be cancelled.
  const std::string body = Json{{"job", Example("175b-pretraining.yaml")}, {"flags", {{"max-gpus", 16384}}}}.dump();
  // A raw socket: the request, the first progress event, then close (httplib's client reads to the end).
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(s.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string request = "POST /api/plan/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string got;
  char buf[4096];
  while (got.find("event: progress") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  EXPECT_NE(got.find("event: progress"), std::string::npos) << got;
  EXPECT_EQ(got.find("event: result"), std::string::npos) << "the search ended before it could be cancelled: make it larger";
  Json health;
  for (int i = 0; i < 200; ++i) {
    health = Json::parse(s.Client().Get("/healthz")->body);
    if (health["streams_cancelled"] == 1 && health["commands_running"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(health["streams_cancelled"], 1) << health.dump();
  EXPECT_EQ(health["commands_running"], 0) << health.dump();
}

TEST(WebApi, ConcurrentRequestsGiveTheSameAnswers) {
  const std::string body = Json{{"job", Example("7b-full-finetune-1node.yaml")}}.dump();
  const std::string expected = Post("/api/estimate", body).body;
  std::vector<std::thread> threads;
  std::atomic<int> same{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i)
        if (Post("/api/estimate", body).body == expected) ++same;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(same, 80);
}

}  // namespace

namespace {

// The binary itself: `gpuplan web --port 0` prints its URL, answers, and exits 0 on SIGINT and on SIGTERM.
void BinaryStopsOn(int sig) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    ::execl(GPUPLAN_BINARY, GPUPLAN_BINARY, "web", "--port", "0", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string line;
  char c;
  while (line.find('\n') == std::string::npos && ::read(out[0], &c, 1) == 1) line += c;
  ::close(out[0]);
  const size_t at = line.find("http://127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << line;
  const int port = std::stoi(line.substr(at + 17));
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ::kill(pid, sig);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by the signal instead of stopping";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(WebBinary, StopsCleanlyOnSigint) { BinaryStopsOn(SIGINT); }
TEST(WebBinary, StopsCleanlyOnSigterm) { BinaryStopsOn(SIGTERM); }

}  // namespace
