// End-to-end: the real binary, its exit codes and messages; a fuzz-style pass over bad inputs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Proc {
  int exit_code = -1;
  bool signaled = false;
  std::string out;  // stdout + stderr
};

Proc Exec(const std::string& args) {
  Proc r;
  const std::string cmd = std::string(GPUPLAN_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.signaled = WIFSIGNALED(status);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Cli, MemoryJsonHasTheContractKeys) {
  Proc r = Exec("memory --model llama-2-7b --gpu a100-80gb --seq-len 2048 --json");
  ASSERT_EQ(r.exit_code, 2) << "does not fit: exit 2, with every number still there\n" << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["params"], 6738415616);
  for (const char* k : {"weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "buffers_bytes",
                        "overhead_bytes", "total_bytes"})
    EXPECT_TRUE(j["per_gpu"].contains(k)) << k;
  EXPECT_EQ(j["gpu"]["id"], "a100-sxm-80gb");
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_FALSE(j["suggestions"].empty());
  EXPECT_EQ(j["error"]["code"], "infeasible");
}

TEST(Cli, MemoryTextNamesFitAndSteps) {
  Proc r = Exec("memory --model llama-2-7b --gpu a100-80gb");
  ASSERT_EQ(r.exit_code, 2) << r.out;
  // The needed total is the memory model's (it moves with the model); the sentence and the card's
  // capacity are the interface.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(gpuplan: does not fit: \d+\.\d\d GiB per GPU needed, a100-sxm-80gb has 80\.00 GiB)")))
      << r.out;
  EXPECT_NE(r.out.find("DOES NOT FIT"), std::string::npos);
  EXPECT_NE(r.out.find("ZeRO"), std::string::npos);
  Proc q = Exec("memory --model llama-2-7b --method qlora --gpu rtx4090 --recompute full");
  ASSERT_EQ(q.exit_code, 0) << q.out;
  EXPECT_NE(q.out.find("FITS"), std::string::npos) << q.out;
}

TEST(Cli, ParamsFlagAndJobFile) {
  Proc r = Exec("memory --params 7.5e9 --num-gpus 64 --zero 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["model"]["params"], 7500000000);
  std::string job = Write("job.yaml", "model:\n  preset: mistral-7b\ntraining:\n  method: lora\n  seq_len: 1024\ncluster:\n  gpu: l40s\n");
  Proc f = Exec("memory " + job + " --json");
  ASSERT_EQ(f.exit_code, 0) << f.out;
  EXPECT_EQ(nlohmann::json::parse(f.out)["gpu"]["id"], "l40s-48gb");
}

TEST(Cli, ModelsAndCatalogList) {
  Proc m = Exec("models");
  ASSERT_EQ(m.exit_code, 0);
  EXPECT_NE(m.out.find("6,738,415,616"), std::string::npos);
  Proc g = Exec("catalog gpus --format csv");
  ASSERT_EQ(g.exit_code, 0);
  EXPECT_NE(g.out.find("h100-sxm-80gb"), std::string::npos);
}

TEST(Cli, BadInputIsExit1WithLocation) {
  std::string job = Write("bad.yaml", "model:\n  preset: llama-2-7b\nparallel:\n  tp: 3\n");
  Proc r = Exec("memory " + job);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("bad.yaml:4: parallel.tp: tp=3 does not divide heads=32"), std::string::npos) << r.out;
  Proc f = Exec("memory --model gpt2 --sq-len 5");
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_NE(f.out.find("did you mean --seq-len"), std::string::npos) << f.out;
  Proc c = Exec("memroy");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.out.find("did you mean 'memory'"), std::string::npos);
  Proc g = Exec("memory --model gpt2 --gpu h900");
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_NE(g.out.find("unknown GPU 'h900'"), std::string::npos) << g.out;
}

TEST(Cli, EstimateJsonHasTheContractKeys) {
  Proc r = Exec("estimate --model llama-2-7b --gpu a100-80gb --num-gpus 8 --zero 3 --seq-len 2048 --global-batch 64 --tokens 1e9 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"step_time_s", "tokens_per_s_per_gpu", "tokens_per_s", "mfu", "hfu", "model_tflops_per_gpu",
                        "time_to_train_s", "gpu_hours", "breakdown_s", "bottleneck", "memory"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"compute", "tp_comm", "cp_comm", "pp_comm", "dp_comm", "bubble", "data", "optimizer", "checkpoint"})
    EXPECT_TRUE(j["breakdown_s"].contains(k)) << k;
  EXPECT_TRUE(j["memory"]["per_gpu"].contains("total_bytes"));
  EXPECT_GT(j["time_to_train_s"].get<double>(), 0);
  Proc t = Exec("estimate --model llama-2-7b --num-gpus 2 --gpus-per-node 1 --network tcp-1g --zero 3");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("bottleneck: communication limits this job"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("ZeRO-3 weight gathers and gradient sync over"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("(default)"), std::string::npos) << "defaulted links are printed as such";
}

TEST(Cli, SetupThatDoesNotFitIsExit2WithEveryNumber) {
  Proc t = Exec("estimate --model llama-2-7b --num-gpus 2 --gpus-per-node 1 --network tcp-25g");
  EXPECT_EQ(t.exit_code, 2) << t.out;
  EXPECT_NE(t.out.find("step "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("DOES NOT FIT"), std::string::npos) << t.out;
  Proc j = Exec("estimate --model llama-2-7b --num-gpus 2 --gpus-per-node 1 --network tcp-25g --json");
  ASSERT_EQ(j.exit_code, 2) << j.out;
  auto o = nlohmann::json::parse(j.out);
  EXPECT_FALSE(o["memory"]["fits"].get<bool>());
  EXPECT_GT(o["step_time_s"].get<double>(), 0);
  EXPECT_EQ(o["error"]["code"], "infeasible");
}

TEST(Cli, JsonErrorsAreJson) {
  for (const char* args : {"memory --model nope --json", "estimate --model llama-2-7b --tp 3 --format json",
                           "memory --model gpt2 --sq-len 5 --json", "catalog nothing --json"}) {
    Proc r = Exec(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << args << "\n" << r.out;
    EXPECT_EQ(j["error"]["code"], "bad_input") << args;
    EXPECT_TRUE(j["error"]["message"].is_string()) << args;
    EXPECT_TRUE(j["error"].contains("location") && j["error"].contains("key")) << args;
  }
  std::string job = Write("badjson.yaml", "model:\n  preset: llama-2-7b\nparallel:\n  tp: 3\n");
  auto j = nlohmann::json::parse(Exec("estimate " + job + " --json").out);
  EXPECT_EQ(j["error"]["location"], job + ":4");
  EXPECT_EQ(j["error"]["key"], "parallel.tp");
}

TEST(Cli, JsonUsesNullForUnknowns) {
  Proc r = Exec("estimate --model llama-2-7b --num-gpus 8 --zero 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["time_to_train_s"].is_null()) << "no token count: unknown, not 0";
  EXPECT_TRUE(j["gpu_hours"].is_null());
  EXPECT_TRUE(j["breakdown_s"]["data"].is_null()) << "no storage: not modelled";
  EXPECT_TRUE(j["checkpoint"]["write_s"].is_null());
  EXPECT_TRUE(j["inputs"]["training"]["tokens"].is_null());
  EXPECT_TRUE(j["inputs"]["cluster"]["network"].is_null());
  EXPECT_TRUE(j["hardware"]["storage"].is_null());
}

TEST(Cli, PlanFlagsAreRefusedByMemoryAndEstimate) {
  for (const char* flag : {"--deadline-hours 3", "--budget-usd 100", "--spot allowed", "--objective cost", "--clouds aws",
                           "--max-gpus 8", "--top 3"}) {
    for (const char* cmd : {"memory", "estimate"}) {
      Proc r = Exec(std::string(cmd) + " --model llama-2-7b --num-gpus 8 --zero 3 " + flag);
      EXPECT_EQ(r.exit_code, 1) << cmd << " " << flag << "\n" << r.out;
      EXPECT_NE(r.out.find("'gpuplan plan' takes it"), std::string::npos) << r.out;
    }
  }
  // A job file's constraints section is for plan and stays accepted.
  EXPECT_EQ(Exec("memory " + std::string(GPUPLAN_SOURCE_DIR) + "/examples/7b-full-finetune-1node.yaml").exit_code, 0);
}

TEST(Cli, ModelMessagesSayHowToGetThere) {
  Proc repo = Exec("memory --model meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(repo.exit_code, 1);
  EXPECT_NE(repo.out.find("download its config.json"), std::string::npos) << repo.out;
  EXPECT_NE(repo.out.find("pass --model path/to/config.json"), std::string::npos) << repo.out;
  EXPECT_NE(repo.out.find("--model llama-2-7b"), std::string::npos) << "the close preset\n" << repo.out;
  Proc missing = Exec("memory --model /nonexistent/config.json");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("no such file '/nonexistent/config.json'"), std::string::npos) << missing.out;
  EXPECT_NE(missing.out.find("pass --model path/to/config.json"), std::string::npos) << missing.out;
  Proc path = Exec("memory --model " + std::string(GPUPLAN_SOURCE_DIR) + "/tests/fixtures/hf/llama-2-7b.json --json");
  EXPECT_EQ(nlohmann::json::parse(path.out)["model"]["params"], 6738415616) << "--model takes a config.json path";
  Proc typo = Exec("memory --model llama2-7b");
  EXPECT_NE(typo.out.find("did you mean 'llama-2-7b'"), std::string::npos) << typo.out;
  Proc flag = Exec("estimate --model llama-2-7b --numgpus 8");
  EXPECT_EQ(flag.exit_code, 1);
  EXPECT_NE(flag.out.find("did you mean --num-gpus"), std::string::npos) << flag.out;
}

TEST(Cli, TabIndentationIsNamed) {
  std::string job = Write("tabs.yaml", "model:\n  preset: llama-2-7b\ntraining:\n  seq_len: 512\n\tmicro_batch: 2\n");
  Proc r = Exec("memory " + job);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("tabs.yaml:5: tab character in indentation; YAML indents with spaces"), std::string::npos) << r.out;
}

TEST(Cli, CatalogCsvIsACatalogFile) {
  for (const std::string kind : {"gpus", "links", "instances", "storage"}) {
    Proc a = Exec("catalog " + kind + " --format csv");
    ASSERT_EQ(a.exit_code, 0) << a.out;
    std::ifstream data(std::string(GPUPLAN_SOURCE_DIR) + "/data/" + kind + ".csv");
    std::string header;
    std::getline(data, header);
    EXPECT_EQ(a.out.substr(0, a.out.find('\n')), header) << kind;
    const std::string path = Write(kind + "-printed.csv", a.out);
    Proc b = Exec("catalog " + kind + " --format csv --catalog " + path);
    ASSERT_EQ(b.exit_code, 0) << b.out;
    EXPECT_EQ(a.out, b.out) << kind << ": loaded back, the same rows";
    Proc t = Exec("catalog " + kind + " --catalog " + path);
    EXPECT_EQ(t.out, Exec("catalog " + kind).out) << kind;
  }
}

TEST(Cli, SamplesAndEpochs) {
  Proc r = Exec("estimate --model llama-2-7b --num-gpus 8 --zero 3 --seq-len 512 --samples 50000 --epochs 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["inputs"]["training"]["tokens"].get<double>(), 50000.0 * 3 * 512);
  EXPECT_GT(j["time_to_train_s"].get<double>(), 0);
  Proc both = Exec("estimate --model llama-2-7b --samples 50000 --tokens 1e9");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.out.find("--tokens on the command line"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find("--samples on the command line"), std::string::npos) << both.out;
}

// The README's "Use" examples, with the exit code each is documented to give.
TEST(Cli, ReadmeExamplesExitAsDocumented) {
  const std::string dir = std::string("cd ") + GPUPLAN_SOURCE_DIR + " && ";
  for (const auto& [args, code] : std::vector<std::pair<std::string, int>>{
           {"memory examples/7b-full-finetune-1node.yaml", 0},
           {"memory --model llama-3-8b --method qlora --gpu rtx4090 --json", 0},
           {"memory --params 7.5e9 --num-gpus 64 --zero 2", 0},
           {"estimate examples/7b-full-finetune-1node.yaml", 0},
           {"estimate --model llama-2-7b --num-gpus 2 --gpus-per-node 1 --network tcp-25g --zero 3", 0},
           {"estimate --model llama-2-7b --num-gpus 2 --gpus-per-node 1 --network tcp-25g", 2},
       }) {
    const std::string cmd = dir + GPUPLAN_BINARY + " " + args + " >/dev/null 2>&1";
    const int status = std::system(cmd.c_str());
    EXPECT_EQ(WEXITSTATUS(status), code) << args;
  }
}

// Issue 7: V100/T4 have no bf16; memory and estimate say so and point at fp16.
TEST(Cli, Bf16OnVoltaIsAnErrorThatSuggestsFp16) {
  for (const char* cmd : {"memory", "estimate"}) {
    Proc r = Exec(std::string(cmd) + " --model llama-2-7b --gpu v100 --precision bf16 --method lora");
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("--precision fp16"), std::string::npos) << r.out;
    Proc ok = Exec(std::string(cmd) + " --model llama-2-7b --gpu v100-sxm-32gb --precision fp16 --method qlora");
    EXPECT_EQ(ok.exit_code, 0) << cmd << ": " << ok.out;
  }
}

// Issue 7: estimate reports the same wall-clock split as plan.
TEST(Cli, EstimateReportsTheWallClockSplit) {
  Proc r = Exec("estimate --model llama-2-7b --num-gpus 8 --zero 3 --tokens 1e9 --storage aws-s3-standard --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"time_s", "train_s", "startup_s", "checkpoint_stall_s", "expected_lost_s", "final_save_s", "goodput"})
    ASSERT_TRUE(j.contains(k) && j[k].is_number()) << k;
  EXPECT_GE(j["time_s"].get<double>(), j["train_s"].get<double>() + j["startup_s"].get<double>());
  EXPECT_NEAR(j["goodput"].get<double>(), j["train_s"].get<double>() / j["time_s"].get<double>(), 1e-12);
  Proc none = Exec("estimate --model llama-2-7b --num-gpus 8 --zero 3 --json");
  ASSERT_EQ(none.exit_code, 0) << none.out;
  EXPECT_TRUE(nlohmann::json::parse(none.out)["time_s"].is_null()) << "no tokens: no wall-clock";
}

TEST(Cli, PlanReportsAndJson) {
  std::string job = Write("plan.yaml",
                          "model: {preset: llama-2-13b}\ntraining: {seq_len: 4096, global_batch: 128, tokens: 2e9}\n"
                          "constraints: {max_gpus: 16, objective: cost, deadline_hours: 200}\n");
  Proc r = Exec("plan " + job + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["plans"].empty());
  for (const char* k : {"instance", "nodes", "gpus", "parallel", "micro_batch", "step_time_s", "time_s", "train_s", "startup_s",
                        "checkpoint_stall_s", "expected_lost_s", "goodput", "cost_usd",
                        "cost_breakdown", "tier", "network", "storage", "checkpoint", "bottleneck"})
    EXPECT_TRUE(j["plans"][0].contains(k)) << k;
  EXPECT_TRUE(j.contains("pareto"));
  EXPECT_GT(j["considered"].get<int64_t>(), 0);
  ASSERT_TRUE(j["rejected"].is_array());
  for (const auto& x : j["rejected"]) EXPECT_TRUE(x.contains("code") && x.contains("reason") && x.contains("count"));
  Proc md = Exec("plan " + job + " --format md");
  ASSERT_EQ(md.exit_code, 0);
  EXPECT_NE(md.out.find("### Recommended setup"), std::string::npos);
  EXPECT_EQ(md.out.find("\r["), std::string::npos) << "no progress bar when piped";
  Proc none = Exec("plan " + job + " --deadline-hours 0.01");
  EXPECT_EQ(none.exit_code, 2) << none.out;
  EXPECT_NE(none.out.find("relax constraints.deadline_hours"), std::string::npos) << none.out;
  Proc bad = Exec("plan " + job + " --budget-usd -3");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("--budget-usd: must be > 0 USD"), std::string::npos) << bad.out;
}

TEST(Cli, ValidateWritesReportAndHonoursThresholds) {
  const std::string out = ::testing::TempDir() + "/validation.md";
  Proc r = Exec("validate " + std::string(GPUPLAN_SHARED_DIR) + "/validation/runs.csv --write " + out + " --max-median 0.15 --max-p90 0.35");
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(r.out.size() > 2000 ? r.out.size() - 2000 : 0);
  std::ifstream f(out);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("## Summary"), std::string::npos);
  Proc strict = Exec("validate " + std::string(GPUPLAN_SHARED_DIR) + "/validation/runs.csv --write - --max-median 0.0001");
  EXPECT_EQ(strict.exit_code, 2);
}

TEST(Cli, EstimateCarriesTheExpectedErrorBand) {
  Proc r = Exec("estimate --model llama-2-7b --gpu a100-80gb --method lora --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("expected_error")) << r.out;
  for (const char* k : {"step_time", "memory"}) {
    ASSERT_TRUE(j["expected_error"].contains(k)) << k;
    const auto& b = j["expected_error"][k];
    if (b.is_null()) continue;  // no validated group: null, never a made-up band
    for (const char* f : {"p90_abs", "median_abs", "mean_signed", "rows", "group"}) EXPECT_TRUE(b.contains(f)) << k << "." << f;
    EXPECT_GE(b["rows"].get<int>(), 5);
  }
  EXPECT_TRUE(j.contains("efficiency_note"));
  Proc t = Exec("estimate --model llama-2-7b --gpu a100-80gb --method lora");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("expected error: step time"), std::string::npos) << t.out;
}

TEST(Cli, ValidateWritesErrorBandsWhereAsked) {
  const std::string bands = ::testing::TempDir() + "/bands.csv";
  std::remove(bands.c_str());
  Proc r = Exec("validate " + std::string(GPUPLAN_SHARED_DIR) + "/validation/peft_runs.csv --write - --bands " + bands);
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(r.out.size() > 2000 ? r.out.size() - 2000 : 0);
  std::ifstream f(bands);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("kind,framework,gpu_family,method,rows,median_abs,p90_abs,mean_signed,p90_under\n", 0), 0u) << text;
  EXPECT_NE(text.find("\nthroughput,*,*,*,"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmemory,*,*,*,"), std::string::npos) << text;
  EXPECT_NE(r.out.find("throughput held-out"), std::string::npos) << "the split is printed";
  const std::string peft = std::string(GPUPLAN_SHARED_DIR) + "/validation/peft_runs.csv --write -";
  Proc bias = Exec("validate " + peft + " --max-bias 0");
  EXPECT_EQ(bias.exit_code, 2) << "no group is exactly unbiased";
  EXPECT_NE(bias.out.find("largest bias: "), std::string::npos) << bias.out.substr(bias.out.size() > 500 ? bias.out.size() - 500 : 0);
  EXPECT_EQ(Exec("validate " + peft + " --max-bias 1000 --max-memory-median 1000").exit_code, 0);
  EXPECT_EQ(Exec("validate " + peft + " --max-memory-median 0").exit_code, 2);
}

TEST(Cli, FuzzBadInputsNeverCrash) {
  const std::string good =
      "model:\n  preset: llama-3-8b\ntraining:\n  seq_len: 4096\n  micro_batch: 2\n  recompute: selective\n"
      "parallel:\n  tp: 2\n  zero: 1\ncluster:\n  gpu: h100\n  num_gpus: 8\n";
  const std::string good_json =
      R"({"model": {"preset": "llama-3-8b"}, "training": {"seq_len": 4096, "micro_batch": 2}, "parallel": {"tp": 2}, "cluster": {"num_gpus": 8}})";
  std::vector<std::string> cases;
  for (size_t cut = 1; cut < good.size(); cut += 7) cases.push_back(good.substr(0, cut) + "\n  : [\n");
  for (size_t cut = 1; cut < good_json.size(); cut += 9) cases.push_back(good_json.substr(0, cut));
  std::mt19937 rng(12345);
  const std::string junk = "{}[]:,\"'-!&*|>%@`\t\n#";
  for (int i = 0; i < 20; ++i) {
    std::string s = good;
    for (int k = 0; k < 4; ++k) s[rng() % s.size()] = junk[rng() % junk.size()];
    cases.push_back(s);
  }
  for (const char* absurd : {"1e308", "-1", "0", "99999999999999999999", "nan", "inf", "3.5", "0x10", "[]", "{a: 1}"}) {
    cases.push_back("model: {preset: gpt2}\ntraining: {seq_len: " + std::string(absurd) + "}\n");
    cases.push_back("model: {preset: gpt2}\ncluster: {num_gpus: " + std::string(absurd) + "}\n");
    cases.push_back("model: {layers: " + std::string(absurd) + ", hidden: 64, heads: 4, vocab: 10, mlp: gelu}\n");
    cases.push_back(R"({"model": {"params": )" + std::string(absurd) + "}}");
  }
  int n = 0, ok_runs = 0;
  for (const auto& text : cases) {
    std::string path = Write("fuzz" + std::to_string(n) + ".yaml", text);
    const char* cmd = n % 3 == 0 ? "memory " : n % 3 == 1 ? "estimate " : "plan ";
    ++n;
    Proc r = Exec(cmd + path);
    ASSERT_FALSE(r.signaled) << "crashed on:\n" << text;
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 2)
        << "exit " << r.exit_code << " on:\n" << text << "\n" << r.out;
    if (r.exit_code != 0) {
      EXPECT_NE(r.out.find("gpuplan: "), std::string::npos) << text;
    } else {
      ++ok_runs;  // a mutation can still be a valid job (e.g. a comment)
    }
  }
  std::printf("fuzz cases: %d, accepted as valid: %d\n", n, ok_runs);
  EXPECT_LT(ok_runs, n / 2);
  // Absurd but well-formed constraints are errors too.
  for (const char* c : {"budget_usd: -1", "deadline_hours: 0", "max_gpus: 0", "clouds: [nowhere]", "gpus: [h900]",
                        "objective: fastest", "rerun_factor: 0.5", "min_memory_headroom: 2"}) {
    std::string path = Write("constraint.yaml", "model: {preset: gpt2}\ntraining: {global_batch: 8, tokens: 1e8}\nconstraints: {" +
                                                    std::string(c) + "}\n");
    Proc r = Exec("plan " + path);
    EXPECT_FALSE(r.signaled) << c;
    EXPECT_EQ(r.exit_code, 1) << c << "\n" << r.out;
    EXPECT_NE(r.out.find("constraint.yaml:3: constraints."), std::string::npos) << c << "\n" << r.out;
  }
}

}  // namespace
