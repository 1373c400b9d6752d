// Issue 16 item 3: every row the planner ranks exports unchanged to the row's engine. For a named
// framework every top row runs on its engine's format; with none, each row names its engine and
// `gpuplan export PLAN.json --to ENGINE --plan N` takes it without re-planning.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace {

struct Proc {
  int exit_code = -1;
  std::string out;
};

Proc Exec(const std::string& args) {
  Proc r;
  const std::string cmd = std::string("cd " GPUPLAN_SOURCE_DIR " && ") + GPUPLAN_BINARY + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

// plan --json into a file; the parsed document.
nlohmann::json PlanJson(const std::string& args, const std::string& file) {
  Proc r = Exec("plan " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  std::ofstream(file) << r.out;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// Exports row n (1-based) to `format`: exit 0, no note that another plan was taken.
void ExportsUnchanged(const std::string& file, int n, const std::string& format) {
  Proc r = Exec("export " + file + " --to " + format + " --plan " + std::to_string(n) + " --json");
  ASSERT_EQ(r.exit_code, 0) << "row " << n << " --to " << format << ": " << r.out.substr(0, 1000);
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out.substr(0, 500);
  const std::string note = j.value("note", "");
  EXPECT_EQ(note.find("not expressible"), std::string::npos) << note;
  EXPECT_EQ(note.find("best setup"), std::string::npos) << note;
}

TEST(EngineExport, TopFiveRowsOfEachFrameworkExportToItsFormat) {
  const std::pair<const char*, const char*> cases[] = {{"hf-trainer", "deepspeed"}, {"deepspeed", "deepspeed"}, {"megatron", "megatron"}};
  for (const auto& [framework, format] : cases) {
    const std::string file = ::testing::TempDir() + "/plan-70b-" + framework + ".json";
    const auto doc = PlanJson(std::string("examples/70b-full-finetune.yaml --gpus h100 --framework ") + framework, file);
    ASSERT_TRUE(doc.contains("plans")) << framework;
    ASSERT_FALSE(doc["plans"].empty()) << framework;
    for (int n = 1; n <= 5 && n <= static_cast<int>(doc["plans"].size()); ++n) {
      EXPECT_EQ(doc["plans"][n - 1]["engine"], format) << framework << " row " << n;
      ExportsUnchanged(file, n, format);
    }
  }
}

TEST(EngineExport, WithoutAFrameworkEachRowNamesItsEngineAndEveryFamilyHasARow) {
  const std::string file = ::testing::TempDir() + "/plan-70b-generic.json";
  const auto doc = PlanJson("examples/70b-full-finetune.yaml --gpus h100", file);
  ASSERT_TRUE(doc.contains("plans"));
  std::set<std::string> families;
  const auto& plans = doc["plans"];
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::string engine = plans[i]["engine"];
    families.insert(plans[i]["engine_family"].get<std::string>());
    ExportsUnchanged(file, static_cast<int>(i + 1), engine);
  }
  for (const char* f : {"megatron", "deepspeed", "fsdp", "hf"}) EXPECT_TRUE(families.count(f)) << "no row for family " << f;
}

TEST(EngineExport, HfTrainerNeverPlansPipelines) {
  const std::string file = ::testing::TempDir() + "/plan-13b-hf.json";
  const auto doc = PlanJson("examples/13b-full-finetune-1node.yaml --framework hf-trainer", file);
  ASSERT_TRUE(doc.contains("plans"));
  for (const auto& p : doc["plans"]) {
    EXPECT_EQ(p["parallel"]["pp"], 1);
    EXPECT_EQ(p["parallel"]["vpp"], 1);
    EXPECT_EQ(p["parallel"]["tp"], 1);
  }
}

TEST(EngineExport, NoFp8UnlessTheJobAsksForIt) {
  const std::string file = ::testing::TempDir() + "/plan-13b.json";
  const auto doc = PlanJson("examples/13b-full-finetune-1node.yaml", file);
  ASSERT_TRUE(doc.contains("plans"));
  ASSERT_FALSE(doc["plans"].empty());
  for (const auto& p : doc["plans"]) EXPECT_NE(p["precision"], "fp8");
  const auto fp8 = PlanJson("examples/13b-full-finetune-1node.yaml --gpus h100 --precision fp8", file + ".fp8");
  ASSERT_TRUE(fp8.contains("plans"));
  for (const auto& p : fp8["plans"]) EXPECT_EQ(p["precision"], "fp8");
}

TEST(EngineExport, EngineFlagRestrictsAndConflictsWithAnotherFramework) {
  const std::string file = ::testing::TempDir() + "/plan-13b-titan.json";
  const auto doc = PlanJson("examples/13b-full-finetune-1node.yaml --engine torchtitan", file);
  ASSERT_TRUE(doc.contains("plans"));
  for (const auto& p : doc["plans"]) EXPECT_EQ(p["engine"], "torchtitan");
  Proc bad = Exec("plan examples/13b-full-finetune-1node.yaml --engine megatron --framework deepspeed");
  EXPECT_EQ(bad.exit_code, 1);
  Proc unknown = Exec("plan examples/13b-full-finetune-1node.yaml --engine colossal");
  EXPECT_EQ(unknown.exit_code, 1);
}

// Issue 17: the planner's own interleaved rows (the 175B example) export to torchtitan layouts that
// pass torchtitan's stage-count check (distributed/pipeline_parallel.py): ceil((layers + first_less +
// last_less) / layers_per_stage) stages, a multiple of pp; in main's Python config and the 0.2 TOML.
int64_t Assigned(const std::string& text, const std::string& key, int64_t missing) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex("(^|\\n)\\s*(par\\.)?" + key + " = (\\d+)"))) return std::stoll(m[3]);
  return missing;
}

TEST(EngineExport, InterleavedTorchtitanExportsPassTheStageCheck) {
  for (const std::string version : {"", " --engine-version 0.2"}) {
    const std::string dir = ::testing::TempDir() + "/tt175" + (version.empty() ? "main" : "v02");
    std::filesystem::remove_all(dir);
    Proc r = Exec("export examples/175b-pretraining.yaml --to torchtitan --out " + dir + version + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 1000);
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object());
    const auto& job = j["job"];
    const int64_t pp = std::stoll(job["parallel.pp"].get<std::string>());
    const int64_t vpp = job.contains("parallel.vpp") ? std::stoll(job["parallel.vpp"].get<std::string>()) : 1;
    std::ifstream in(dir + (version.empty() ? "/gpuplan_torchtitan.py" : "/torchtitan.toml"));
    ASSERT_TRUE(in.good()) << dir;
    std::stringstream text;
    text << in.rdbuf();
    // gpt3-175b is no built-in flavor: the file states its shape ("layers 96, hidden ...").
    std::smatch m;
    const std::string body = text.str();
    ASSERT_TRUE(std::regex_search(body, m, std::regex("layers (\\d+), hidden"))) << body;
    const int64_t layers = std::stoll(m[1]);
    if (pp <= 1) continue;
    const int64_t first = Assigned(text.str(), "pipeline_parallel_first_stage_less_layers", 1);
    const int64_t last = Assigned(text.str(), "pipeline_parallel_last_stage_less_layers", 1);
    if (vpp > 1) {
      const int64_t per = Assigned(text.str(), "pipeline_parallel_layers_per_stage", 0);
      ASSERT_GT(per, 0) << text.str();
      const int64_t stages = (layers + first + last + per - 1) / per;
      EXPECT_EQ(stages % pp, 0) << layers << " layers, pp " << pp << ", " << per << " per stage, less " << first << "/" << last;
      EXPECT_EQ(stages, pp * vpp);
    }
  }
}

TEST(EngineExport, EngineVersionIsTorchtitansOnly) {
  EXPECT_EQ(Exec("export --model llama-3-8b --num-gpus 8 --zero 3 --to accelerate --engine-version 0.2").exit_code, 1);
  EXPECT_EQ(Exec("export --model llama-3-8b --num-gpus 8 --zero 3 --to torchtitan --engine-version 9").exit_code, 1);
  Proc ok = Exec("export --model llama-3-8b --num-gpus 8 --zero 3 --to torchtitan --engine-version 0.2");
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_NE(ok.out.find("written for torchtitan v0.2.2"), std::string::npos) << ok.out.substr(0, 2000);
}

}  // namespace
