// Uneven pipeline stages (parallel.layer_split) through `gpuplan export` (src/launch/pipeline_split.cc,
// data/pipeline_splits.csv): Megatron-LM gets its first/last-stage flags or its layout string, and the
// stages they build are the plan's (Megatron's own rules replayed here); torchtitan gets one module list
// per stage; DeepSpeed and an old Megatron-Core refuse, naming what can; every key is in its engine's table.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "gpuplan/csv.h"
#include "gpuplan/engines.h"
#include "gpuplan/launch.h"
#include "gpuplan/pipeline_split.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;
using Files = std::map<std::string, Artifact>;
using Split = std::vector<int64_t>;

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

// The 60-block 32B model of examples/pool-32b-h800-h20.yaml on 4 nodes of 8, tp 4, pp `split.size()`.
std::string Job60(const Split& split, int zero) {
  const int64_t pp = static_cast<int64_t>(split.size());
  std::string s = "model: {layers: 60, hidden: 6656, heads: 52, kv_heads: 4, ffn_hidden: 17920, vocab: 152064, mlp: swiglu, norm: rmsnorm}\n"
                  "training: {micro_batch: 1, global_batch: 256, seq_len: 4096, precision: bf16}\n"
                  "cluster: {num_gpus: " + std::to_string(4 * pp) + ", gpus_per_node: 8}\n"
                  "parallel: {tp: 4, sequence_parallel: true, pp: " + std::to_string(pp) + ", dp: 1, zero: " + std::to_string(zero) + ", layer_split: [" + LayerSplitText(split) + "]}\n";
  return s;
}

// ZeRO 1 (Megatron's distributed optimizer); torchtitan takes 2 or 3 with model parallelism.
LaunchPlan MakePlan(const Split& split, const std::string& version = "", int zero = 1) {
  LaunchPlan p;
  p.job = MakeJob(Job60(split, zero));
  p.gpus_per_node = std::min<int64_t>(8, p.job.cluster.num_gpus);
  p.nodes = p.job.cluster.num_gpus / p.gpus_per_node;
  p.grad_accum = GradAccumSteps(p.job);
  if (p.nodes > 1) p.network = *Cat().FindLink("ib-ndr");
  p.step_time_s = 10;
  p.memory_per_gpu_bytes = 60e9;
  p.gpu_memory_bytes = 80e9;
  p.origin = "export_split_test";
  p.engine_version = version;
  return p;
}

Files Export(ExportFormat f, const LaunchPlan& p) {
  auto r = ExportEngine(f, p, Cat());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  Files out;
  if (r.ok())
    for (const auto& a : *r) out[a.name] = a;
  return out;
}

// MEGATRON_ARGS as bash reads megatron-args.sh: one word per element.
std::vector<std::string> MegatronWords(const Files& files) {
  const auto path = std::filesystem::temp_directory_path() / ("gpuplan-split-" + std::to_string(::getpid()) + ".sh");
  std::ofstream(path) << files.at("megatron-args.sh").content;
  FILE* f = ::popen(("bash -c 'source \"$0\"; printf \"%s\\n\" \"${MEGATRON_ARGS[@]}\"' " + path.string()).c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (f && std::fgets(buf.data(), buf.size(), f)) out += buf.data();
  const int st = f ? ::pclose(f) : -1;
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  std::filesystem::remove(path);
  std::vector<std::string> words;
  std::istringstream in(out);
  for (std::string w; std::getline(in, w);) words.push_back(w);
  return words;
}

std::string After(const std::vector<std::string>& w, const std::string& flag) {
  for (size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i] == flag) return w[i + 1];
  return "";
}

// bridge-overrides.txt as key -> value.
std::map<std::string, std::string> BridgeOverrides(const Files& files) {
  std::map<std::string, std::string> o;
  std::istringstream in(files.at("bridge-overrides.txt").content);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    o[line.substr(0, eq)] = eq == std::string::npos ? "" : line.substr(eq + 1);
  }
  return o;
}

// ---- Megatron's own rules, replayed (read at d98e8a6, data/pipeline_splits.csv) ----

// pipeline_parallel_layer_layout.py parse_str_to_list: drop commas, unroll (x)*n then x*n, split on '|';
// the decoder blocks ('t') of each stage, after checking E is first and L last, once each.
Split BlocksOfLayout(std::string layout) {
  layout.erase(std::remove(layout.begin(), layout.end(), ','), layout.end());
  for (const std::regex& re : {std::regex(R"(\(([^)]+)\)\*(\d+))"), std::regex(R"((.)\*(\d+))")}) {
    std::smatch m;
    while (std::regex_search(layout, m, re)) {
      std::string rep;
      for (int i = 0; i < std::stoi(m[2].str()); ++i) rep += m[1].str();
      layout = m.prefix().str() + rep + m.suffix().str();
    }
  }
  EXPECT_EQ(layout.front(), 'E');
  EXPECT_EQ(layout.back(), 'L');
  EXPECT_EQ(std::count(layout.begin(), layout.end(), 'E'), 1);
  EXPECT_EQ(std::count(layout.begin(), layout.end(), 'L'), 1);
  Split blocks(1, 0);
  for (char c : layout) {
    if (c == '|') blocks.push_back(0);
    else if (c == 't') ++blocks.back();
    else EXPECT_TRUE(c == 'E' || c == 'L') << "not a layer character: " << c;
  }
  return blocks;
}

// transformer_block.py get_num_layers_to_build with --decoder-first/last-pipeline-num-layers (no vpp):
// each > 0, the rest shared evenly by the stages between, which must divide it.
Split BlocksOfFirstLast(int64_t layers, int64_t pp, std::optional<int64_t> first, std::optional<int64_t> last) {
  int64_t rest = layers, stages = pp;
  for (const auto& end : {first, last}) {
    if (!end) continue;
    EXPECT_GT(*end, 0);
    rest -= *end;
    --stages;
  }
  EXPECT_EQ(rest == 0, stages == 0) << "Megatron: middle layers without middle stages, or the reverse";
  if (stages > 0) EXPECT_EQ(rest % stages, 0) << "Megatron: the middle layers must divide over the middle stages";
  Split out(static_cast<size_t>(pp), stages > 0 ? rest / stages : 0);
  if (first) out.front() = *first;
  if (last) out.back() = *last;
  return out;
}

// The stages Megatron builds from the exported flags.
Split MegatronStages(const std::vector<std::string>& w) {
  const int64_t layers = std::stoll(After(w, "--num-layers")), pp = std::stoll(After(w, "--pipeline-model-parallel-size"));
  const std::string layout = After(w, "--pipeline-model-parallel-layout");
  if (!layout.empty()) return BlocksOfLayout(layout);
  std::optional<int64_t> first, last;
  if (!After(w, "--decoder-first-pipeline-num-layers").empty()) first = std::stoll(After(w, "--decoder-first-pipeline-num-layers"));
  if (!After(w, "--decoder-last-pipeline-num-layers").empty()) last = std::stoll(After(w, "--decoder-last-pipeline-num-layers"));
  if (!first && !last) {
    EXPECT_EQ(layers % pp, 0);
    return Split(static_cast<size_t>(pp), layers / pp);
  }
  return BlocksOfFirstLast(layers, pp, first, last);
}

const Split kSplit = {11, 11, 11, 11, 4, 4, 4, 4};  // examples/pool-32b-h800-h20.yaml

TEST(PipelineSplits, TheTableParsesAndEveryRowHasASourceCommitAndDate) {
  const auto& t = PipelineSplits();
  ASSERT_FALSE(t.empty()) << "data/pipeline_splits.csv did not parse";
  std::set<std::string> megatron;
  for (const SplitForm& f : t) {
    EXPECT_NE(f.source.find(':'), std::string::npos) << f.where.file << ":" << f.where.line;
    EXPECT_EQ(f.commit.size(), 40u) << f.where.file << ":" << f.where.line;
    EXPECT_EQ(f.date.size(), 10u) << f.where.file << ":" << f.where.line;
    if (f.engine == "megatron") megatron.insert(f.form + "@" + f.min_version);
  }
  EXPECT_TRUE(megatron.count("first_last@core_v0.9.0"));
  EXPECT_TRUE(megatron.count("layout@core_r0.13.0"));
  auto bad = ParsePipelineSplits("engine,form,keys,min_version,splits,source,commit,date,notes\nx,y,k,,some,f.py:1,abcdef0,2026-12-02,\n", "t.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().location().line, 2);
}

TEST(PipelineSplits, ReleasesParseInTheEnginesSpellings) {
  int64_t v[3];
  ASSERT_TRUE(ParseRelease("0.13", v));
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[1], 13);
  EXPECT_EQ(v[2], 0);
  ASSERT_TRUE(ParseRelease("core_r0.13.0", v));
  EXPECT_EQ(v[1], 13);
  ASSERT_TRUE(ParseRelease("core_v0.9.0", v));
  EXPECT_EQ(v[1], 9);
  ASSERT_TRUE(ParseRelease("core_v0.15.0rc7", v));
  EXPECT_EQ(v[1], 15);
  ASSERT_TRUE(ParseRelease("v0.2.2", v));
  EXPECT_EQ(v[2], 2);
  EXPECT_TRUE(ParseRelease("0.2.x", v));
  for (const char* bad : {"", "latest", "0", "13", "0.x", "1.2.3.4", "0.13.0-dev", "core_v"}) EXPECT_FALSE(ParseRelease(bad, v)) << bad;
}

TEST(PipelineSplits, ShapesAndTheLayoutString) {
  EXPECT_TRUE(EvenLayerSplit({}));
  EXPECT_TRUE(EvenLayerSplit({8, 8, 8}));
  EXPECT_FALSE(EvenLayerSplit(kSplit));
  EXPECT_TRUE(FirstLastLayerSplit({6, 8, 8, 8, 8, 8, 8, 6}));
  EXPECT_TRUE(FirstLastLayerSplit({40, 20}));
  EXPECT_FALSE(FirstLastLayerSplit(kSplit));
  EXPECT_EQ(MegatronLayout(kSplit, false), "Et*11|t*11|t*11|t*11|t*4|t*4|t*4|t*4L");
  EXPECT_EQ(MegatronLayout({1, 2}, false), "Et|t*2L");
  EXPECT_EQ(MegatronLayout({1, 2}, true), "Et|ttL");
  EXPECT_EQ(BlocksOfLayout(MegatronLayout(kSplit, false)), kSplit);
  EXPECT_EQ(BlocksOfLayout(MegatronLayout(kSplit, true)), kSplit);
  EXPECT_EQ(BlocksOfLayout("E|(tt|)*2,t*3L"), (Split{0, 2, 2, 3}));  // Megatron's own example form
}

TEST(PipelineSplits, AnExplicitSplitIsNotHeldToTheEvenDivisibility) {
  const LaunchPlan p = MakePlan(kSplit);  // 60 blocks over 8 stages: 60 % 8 != 0
  EXPECT_EQ(EngineCannotLayout(*EngineForFormat("megatron"), p.job, 8, "megatron"), "");
  EXPECT_EQ(CannotExpress(ExportFormat::kMegatron, p), "");
}

TEST(ExportSplit, MegatronWritesTheLayoutWhenAMiddleStageDiffers) {
  const Files f = Export(ExportFormat::kMegatron, MakePlan(kSplit));
  const auto w = MegatronWords(f);
  EXPECT_EQ(After(w, "--num-layers"), "60");
  EXPECT_EQ(After(w, "--pipeline-model-parallel-size"), "8");
  EXPECT_EQ(After(w, "--pipeline-model-parallel-layout"), "Et*11|t*11|t*11|t*11|t*4|t*4|t*4|t*4L");
  EXPECT_EQ(After(w, "--decoder-first-pipeline-num-layers"), "");
  EXPECT_EQ(After(w, "--decoder-last-pipeline-num-layers"), "");
  EXPECT_EQ(MegatronStages(w), kSplit);
  EXPECT_NE(f.at("megatron-args.sh").content.find("parallel.layer_split 11,11,11,11,4,4,4,4"), std::string::npos);
  const auto o = BridgeOverrides(f);
  ASSERT_TRUE(o.count("model.pipeline_model_parallel_layout"));
  std::string v = o.at("model.pipeline_model_parallel_layout");
  ASSERT_GE(v.size(), 2u);
  EXPECT_EQ(v.front(), '\'');
  EXPECT_EQ(v.back(), '\'');
  v = v.substr(1, v.size() - 2);
  EXPECT_EQ(v.find('*'), std::string::npos) << "read by word splitting: no glob characters";
  EXPECT_EQ(BlocksOfLayout(v), kSplit);
  EXPECT_FALSE(o.count("model.num_layers_in_first_pipeline_stage"));
}

TEST(ExportSplit, MegatronWritesFirstAndLastWhenOnlyThoseDiffer) {
  for (const Split& s : {Split{6, 8, 8, 8, 8, 8, 8, 6}, Split{4, 8, 8, 8, 8, 8, 8, 8}, Split{8, 8, 8, 8, 8, 8, 8, 4}, Split{40, 20},
                         Split{1, 59}, Split{20, 10, 10, 20}}) {
    SCOPED_TRACE(LayerSplitText(s));
    const Files f = Export(ExportFormat::kMegatron, MakePlan(s));
    const auto w = MegatronWords(f);
    EXPECT_EQ(After(w, "--pipeline-model-parallel-layout"), "");
    EXPECT_EQ(MegatronStages(w), s);
    const auto o = BridgeOverrides(f);
    EXPECT_EQ(o.count("model.num_layers_in_first_pipeline_stage") > 0, !After(w, "--decoder-first-pipeline-num-layers").empty());
    EXPECT_EQ(o.count("model.num_layers_in_last_pipeline_stage") > 0, !After(w, "--decoder-last-pipeline-num-layers").empty());
    if (o.count("model.num_layers_in_first_pipeline_stage"))
      EXPECT_EQ(o.at("model.num_layers_in_first_pipeline_stage"), After(w, "--decoder-first-pipeline-num-layers"));
  }
  const auto w = MegatronWords(Export(ExportFormat::kMegatron, MakePlan({4, 8, 8, 8, 8, 8, 8, 8})));
  EXPECT_EQ(After(w, "--decoder-first-pipeline-num-layers"), "4");
  EXPECT_EQ(After(w, "--decoder-last-pipeline-num-layers"), "") << "the last stage is a middle one: said by the rest";
}

TEST(ExportSplit, AnEvenSplitWritesNothingExtra) {
  const Files f = Export(ExportFormat::kMegatron, MakePlan({15, 15, 15, 15}));
  const auto w = MegatronWords(f);
  for (const char* flag : {"--pipeline-model-parallel-layout", "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"})
    EXPECT_EQ(After(w, flag), "") << flag;
  EXPECT_EQ(MegatronStages(w), (Split{15, 15, 15, 15}));
}

TEST(ExportSplit, AnOlderMegatronCoreWithoutTheLayoutRefusesAndSaysWhatCan) {
  for (const char* v : {"0.12", "core_v0.12.0"}) {
    auto r = ExportEngine(ExportFormat::kMegatron, MakePlan(kSplit, v), Cat());
    ASSERT_FALSE(r.ok()) << v;
    EXPECT_EQ(r.status().code(), StatusCode::kBadInput);
    const std::string why = r.status().ToString();
    EXPECT_NE(why.find("parallel.layer_split 11,11,11,11,4,4,4,4"), std::string::npos) << why;
    EXPECT_NE(why.find("--pipeline-model-parallel-layout first came in core_r0.13.0"), std::string::npos) << why;
    EXPECT_NE(why.find("--engine-version 0.13 or later"), std::string::npos) << why;
    EXPECT_NE(why.find("--to torchtitan"), std::string::npos) << why;
  }
  // The first/last form is older: 0.12 runs it; 0.8 has neither.
  const auto w = MegatronWords(Export(ExportFormat::kMegatron, MakePlan({6, 8, 8, 8, 8, 8, 8, 6}, "0.12")));
  EXPECT_EQ(After(w, "--decoder-first-pipeline-num-layers"), "6");
  auto old = ExportEngine(ExportFormat::kMegatron, MakePlan({6, 8, 8, 8, 8, 8, 8, 6}, "0.8"), Cat());
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().ToString().find("core_v0.9.0"), std::string::npos) << old.status().ToString();
  // 0.13 has the layout.
  EXPECT_EQ(MegatronStages(MegatronWords(Export(ExportFormat::kMegatron, MakePlan(kSplit, "core_r0.13.0")))), kSplit);
  auto bad = ExportEngine(ExportFormat::kMegatron, MakePlan(kSplit, "latest"), Cat());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("--engine-version"), std::string::npos);
}

TEST(ExportSplit, DeepspeedRefusesWithItsPartitionMethodAndNamesWhatCan) {
  const LaunchPlan p = MakePlan(kSplit);
  const std::string why = CannotExpress(ExportFormat::kDeepspeed, p);
  EXPECT_NE(why.find("deepspeed cannot express uneven pipeline stages (parallel.layer_split 11,11,11,11,4,4,4,4)"), std::string::npos) << why;
  EXPECT_NE(why.find("partition_method uniform|parameters|type:REGEX"), std::string::npos) << why;
  EXPECT_NE(why.find("deepspeed/runtime/pipe/module.py"), std::string::npos) << why;
  EXPECT_NE(why.find("--to megatron (--pipeline-model-parallel-layout, core_r0.13.0 or later)"), std::string::npos) << why;
  EXPECT_NE(why.find("--to torchtitan (module_fqns_per_model_part"), std::string::npos) << why;
  auto r = ExportEngine(ExportFormat::kDeepspeed, p, Cat());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kBadInput);
  // A first/last split names Megatron's older pair.
  const std::string fl = CannotExpress(ExportFormat::kDeepspeed, MakePlan({6, 8, 8, 8, 8, 8, 8, 6}));
  EXPECT_NE(fl.find("--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers, core_v0.9.0 or later"), std::string::npos) << fl;
}

// The module names of each stage of a torchtitan list, in order.
std::vector<std::vector<std::string>> TomlStages(const toml::table& t) {
  std::vector<std::vector<std::string>> out;
  const toml::array* a = t["parallelism"]["module_fqns_per_model_part"].as_array();
  EXPECT_TRUE(a);
  if (!a) return out;
  for (const auto& stage : *a) {
    out.emplace_back();
    for (const auto& name : *stage.as_array()) out.back().push_back(name.value<std::string>().value_or("?"));
  }
  return out;
}

TEST(ExportSplit, TorchtitanListsTheModulesOfEveryStage) {
  const Files f = Export(ExportFormat::kTorchtitan, MakePlan(kSplit, "0.2", 2));
  toml::table t;
  try {
    t = toml::parse(f.at("torchtitan.toml").content);
  } catch (const toml::parse_error& e) {
    FAIL() << e.what();
  }
  const auto stages = TomlStages(t);
  ASSERT_EQ(stages.size(), kSplit.size());
  int64_t layer = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    int64_t blocks = 0;
    for (const auto& n : stages[i]) {
      if (n.rfind("layers.", 0) != 0) continue;
      EXPECT_EQ(n, "layers." + std::to_string(layer++));
      ++blocks;
    }
    EXPECT_EQ(blocks, kSplit[i]) << "stage " << i;
  }
  EXPECT_EQ(stages.front().front(), "tok_embeddings");
  EXPECT_EQ(stages.back().back(), "output");  // v0.2.x's head (pipeline_parallel.py:333)
  EXPECT_FALSE(t["parallelism"]["pipeline_parallel_first_stage_less_layers"]);
  // main names the head lm_head.
  const Files m = Export(ExportFormat::kTorchtitan, MakePlan(kSplit, "", 2));
  const std::string py = m.at("gpuplan_torchtitan.py").content;
  EXPECT_NE(py.find("par.module_fqns_per_model_part = ["), std::string::npos) << py;
  EXPECT_NE(py.find("\"norm\", \"lm_head\"]"), std::string::npos) << py;
}

std::set<std::string> TableIds(const std::string& file) {
  std::set<std::string> out;
  auto t = ReadCsvFile(std::string(GPUPLAN_SOURCE_DIR) + "/data/engine_keys/" + file);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (t.ok())
    for (const auto& row : t->rows) out.insert(CsvRecord(*t, row).Str("id"));
  return out;
}

void TomlKeys(const toml::table& t, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [k, v] : t) {
    const std::string key = prefix + std::string(k.str());
    if (const toml::table* sub = v.as_table()) TomlKeys(*sub, key + ".", out);
    else out.push_back(key);
  }
}

TEST(ExportSplit, EveryFlagAndKeyEmittedIsInTheEnginesKeyTable) {
  const std::set<std::string> megatron = TableIds("megatron.csv"), bridge = TableIds("megatron_bridge.csv"),
                              titan = TableIds("torchtitan.csv");
  for (const Split& s : {kSplit, Split{6, 8, 8, 8, 8, 8, 8, 6}, Split{40, 20}, Split{15, 15, 15, 15}}) {
    SCOPED_TRACE(LayerSplitText(s));
    for (const auto& w : MegatronWords(Export(ExportFormat::kMegatron, MakePlan(s))))
      if (w.rfind("--", 0) == 0) EXPECT_TRUE(megatron.count(w)) << w << " is not in data/engine_keys/megatron.csv";
    for (const auto& [k, v] : BridgeOverrides(Export(ExportFormat::kMegatron, MakePlan(s))))
      EXPECT_TRUE(bridge.count(k)) << k << " is not in data/engine_keys/megatron_bridge.csv";
    const Files f = Export(ExportFormat::kTorchtitan, MakePlan(s, "0.2", 2));
    std::vector<std::string> keys;
    TomlKeys(toml::parse(f.at("torchtitan.toml").content), "", keys);
    for (const auto& k : keys) EXPECT_TRUE(titan.count(k)) << k << " is not in data/engine_keys/torchtitan.csv";
  }
}

}  // namespace
}  // namespace gpuplan
