// Every real config.json of ../shared/fixtures/hf-configs against the exact parameter counts of its
// SOURCES.md (computed with each architecture's modelling code and checked against a second source):
// which files are exact, which are refused and why. Also the mechanisms those files brought: windows
// in the FLOPs, multi-token prediction and vision towers counted when asked, active parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "../test_util.h"
#include "gpuplan/arch.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"
#include "gpuplan/report.h"

namespace gpuplan {
namespace {

const std::string kDir = std::string(GPUPLAN_SHARED_DIR) + "/fixtures/hf-configs/";

struct Reference {
  int64_t total = 0;     // the whole model (language model + vision tower for the two VL files)
  int64_t language = 0;  // the language model alone, where SOURCES.md gives it (else 0)
};

// The "Exact reference parameter counts" table: | `file.json` | 1,234 | 567 |.
std::map<std::string, Reference> ReadReferences() {
  std::ifstream in(kDir + "SOURCES.md");
  EXPECT_TRUE(in.good()) << kDir << "SOURCES.md";
  std::map<std::string, Reference> out;
  const std::regex row(R"(^\| `([^`]+\.json)` \| ([0-9,]+) \| ([0-9,]*) *\|)");
  auto number = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), ','), s.end());
    return s.empty() ? int64_t{0} : std::stoll(s);
  };
  std::string line;
  for (std::smatch m; std::getline(in, line);)
    if (std::regex_search(line, m, row)) out[m[1]] = {number(m[2]), number(m[3])};
  return out;
}

Arch Read(const std::string& file) {
  auto a = ArchFromHfConfig(kDir + file);
  EXPECT_TRUE(a.ok()) << file << ": " << a.status().ToString();
  return a.ok() ? *a : Arch{};
}

// The hybrid families gpuplan does not model; each refusal names what is missing and how to
// describe the shape instead.
const std::set<std::string> kRefused = {"qwen3-next-80b-a3b.json", "nemotron-h-56b.json", "nemotron-super-49b.json"};

TEST(HfConfigs, EveryReferenceCountIsExactOrRefusedWithAReason) {
  const auto refs = ReadReferences();
  ASSERT_EQ(refs.size(), 63u) << "SOURCES.md's table of exact counts";
  int exact = 0;
  std::string report;
  for (const auto& [file, ref] : refs) {
    auto a = ArchFromHfConfig(kDir + file);
    if (!a.ok()) {
      report += "  refused " + file + ": " + a.status().ToString() + "\n";
      EXPECT_TRUE(kRefused.count(file)) << file << ": " << a.status().ToString();
      EXPECT_NE(a.status().ToString().find("model.layers"), std::string::npos) << "say how to describe the shape";
      continue;
    }
    EXPECT_FALSE(kRefused.count(file)) << file << " is now read: take it out of kRefused";
    const int64_t want = ref.language > 0 ? ref.language : ref.total;
    const int64_t got = CountParams(*a).total;
    EXPECT_EQ(got, want) << file;
    if (got == want) ++exact;
    else report += "  inexact " + file + ": " + std::to_string(got) + " vs " + std::to_string(want) + "\n";
  }
  EXPECT_GE(exact, 58) << report;
  EXPECT_EQ(exact, 60) << report;
  std::printf("%d of %zu config.json files exact\n%s", exact, refs.size(), report.c_str());
}

TEST(HfConfigs, UnknownModelTypeSaysHowToDescribeTheShape) {
  auto a = ArchFromHfConfig(kDir + "nemotron-h-56b.json");
  ASSERT_FALSE(a.ok());
  const std::string msg = a.status().ToString();
  EXPECT_NE(msg.find("Mamba2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model_type"), std::string::npos) << msg;  // file:line: model_type: reason
  EXPECT_NE(msg.find(":"), std::string::npos);
  const std::string path = testing_util::UniqueTempPath("unknown", ".json");
  std::ofstream(path) << "{\n  \"model_type\": \"falcon_mamba\",\n  \"hidden_size\": 64\n}\n";
  auto u = ArchFromHfConfig(path);
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().ToString().find(path + ":2: model_type: unsupported model_type 'falcon_mamba'"), std::string::npos)
      << u.status().ToString();
  EXPECT_NE(u.status().ToString().find("model.experts"), std::string::npos);
}

TEST(HfConfigs, VisionTowersCountWhenAsked) {
  // Qwen2.5-VL 7B: 8.29B on its HF page with the vision tower, 7.62B the language model alone.
  const auto refs = ReadReferences();
  for (const char* file : {"qwen2.5-vl-7b.json", "qwen3-vl-8b.json"}) {
    Arch a = Read(file);
    EXPECT_EQ(CountParams(a).total, refs.at(file).language) << file;
    a.include_vision = true;
    EXPECT_EQ(CountParams(a).total, refs.at(file).total) << file;
    EXPECT_EQ(CountParams(a).vision, refs.at(file).total - refs.at(file).language);
  }
  // Gemma 3 4B: SigLIP 416,866,032 + projector 2,950,272 (keras-hub gemma3_4b vs gemma3_4b_text).
  auto g3 = ArchFromHfConfig(std::string(GPUPLAN_SOURCE_DIR) + "/tests/fixtures/hf/gemma-3-4b.json");
  ASSERT_TRUE(g3.ok()) << g3.status().ToString();
  EXPECT_EQ(g3->vision_params, 416866032 + 2950272);
  // Through the job key; a model without a counted tower refuses the key at its line.
  const std::string job = "model:\n  config: " + kDir + "qwen2.5-vl-7b.json\n  include_vision: true\n";
  Job j = testing_util::MakeJob(job);
  EXPECT_EQ(CountParams(j.arch).total, 8292166656);
  Result<Job> text_only = ParseJobText("model:\n  config: " + kDir + "llama3.1-8b.json\n  include_vision: true\n", "j.yaml");
  Job tj = text_only.ok() ? *text_only : Job{};
  ASSERT_TRUE(text_only.ok());
  Status st = FinalizeJob(tj);
  EXPECT_NE(st.ToString().find("j.yaml:3: model.include_vision: "), std::string::npos) << st.ToString();
}

TEST(HfConfigs, MtpModulesCountWhenAsked) {
  // DeepSeek-V3: 671B main model; "the total size on Hugging Face is 685B, which includes ... 14B of
  // the Multi-Token Prediction (MTP) Module weights" (README); README_WEIGHTS: "11.5B unique
  // parameters (excluding the shared 0.9B Embedding and 0.9B output Head)", which the checkpoint's
  // layer 61 stores again.
  Arch a = Read("deepseek-v3-671b.json");
  EXPECT_EQ(CountParams(a).total, 671026419200);
  a.mtp_layers = 1;
  const ParamCounts c = CountParams(a);
  EXPECT_NEAR(c.total / 1e9, 685, 0.6);
  const int64_t copies = 2 * int64_t{129280} * 7168;
  EXPECT_NEAR((c.mtp - copies) / 1e9, 11.5, 0.15);
  EXPECT_GT(c.active, CountParams(Read("deepseek-v3-671b.json")).active);
  // MiMo-7B: one dense MTP layer (num_nextn_predict_layers 1) through the job key.
  Job j = testing_util::MakeJob("model:\n  config: " + kDir + "mimo-7b.json\n  mtp_layers: 1\n");
  const ParamCounts m = CountParams(j.arch);
  EXPECT_EQ(m.total, 7622619136 + m.mtp);
  EXPECT_EQ(m.mtp, m.dense_mlp_per_layer + m.attn_per_layer + m.norm_per_layer + 2 * 4096 * 4096 + 3 * 4096);
}

TEST(HfConfigs, ActiveParametersOfTheMoeFiles) {
  // Model cards: gpt-oss "5.13B / 3.61B active without the embedding"; Qwen1.5-MoE 2.7B activated;
  // Llama 4 17B active; MiniMax-M2 "10B active"; DeepSeekMoE 16B 2.8B activated.
  auto active = [](const char* f, bool without_embedding) {
    const ParamCounts c = CountParams(Read(f));
    return (c.active - (without_embedding ? c.embedding : 0)) / 1e9;
  };
  EXPECT_NEAR(active("gpt-oss-120b.json", true), 5.13, 0.01);
  EXPECT_NEAR(active("gpt-oss-20b.json", true), 3.61, 0.01);
  EXPECT_NEAR(active("qwen1.5-moe-a2.7b.json", false), 2.7, 0.05);
  EXPECT_NEAR(active("llama4-scout-17b-16e.json", false), 17.2, 0.1);
  EXPECT_NEAR(active("llama4-maverick-17b-128e.json", false), 17.2, 0.1);
  EXPECT_NEAR(active("minimax-m2.5-229b.json", true), 10.0, 0.5);  // 10.4B without the embedding
  EXPECT_NEAR(active("deepseek-moe-16b.json", false), 2.8, 0.05);
}

TEST(HfConfigs, ActiveParametersInTheJson) {
  Job j = testing_util::MakeJob("model:\n  config: " + kDir + "mixtral-8x7b.json\n");
  const nlohmann::json js = JobToJson(j);
  EXPECT_EQ(js["model"]["params"].get<int64_t>(), 46702792704);
  EXPECT_NEAR(js["model"]["active_params"].get<int64_t>() / 1e9, 12.9, 0.05);  // "12.9B active"
}

TEST(HfConfigs, WindowsReadFromTheConfigs) {
  const Arch g2 = Read("gemma2-9b.json");
  EXPECT_EQ(g2.attn_window, 4096);
  EXPECT_EQ(g2.windowed_layers, 21);  // 42 layers, every other one local
  const Arch g3 = Read("gemma3-1b.json");
  EXPECT_EQ(g3.attn_window, 512);
  EXPECT_EQ(g3.windowed_layers, 22);  // 26 layers, 5 local : 1 global
  const Arch oss = Read("gpt-oss-20b.json");
  EXPECT_EQ(oss.attn_window, 128);
  EXPECT_EQ(oss.windowed_layers, 12);
  const Arch scout = Read("llama4-scout-17b-16e.json");
  EXPECT_TRUE(scout.attn_chunked);
  EXPECT_EQ(scout.attn_window, 8192);
  EXPECT_EQ(scout.windowed_layers, 36);  // 3 of 4 layers use rope and chunks
  EXPECT_EQ(Read("qwen2.5-7b.json").attn_window, 0);  // use_sliding_window false
  EXPECT_EQ(Read("mistral-7b-v0.3.json").attn_window, 0);  // sliding_window null
  EXPECT_EQ(Read("starcoder2-7b.json").windowed_layers, 32);
}

// compute.md §1: model FLOPs 6N + 6·L·(q+o)·keys, with keys = s on full layers and min(s, w) on
// windowed ones (the convention of MaxText's Gemma 2/3 counts).
TEST(HfConfigs, WindowedFlopsPerToken) {
  auto unwindowed = [](Arch a) {
    a.attn_window = 0;
    a.windowed_layers = 0;
    return a;
  };
  const Arch g2 = Read("gemma2-9b.json");
  const double w2 = ModelFlopsPerToken(g2, 8192), f2 = ModelFlopsPerToken(unwindowed(g2), 8192);
  // 21 of 42 layers attend 4096 of 8192 keys: a quarter of the attention term goes.
  const double attn2 = 6.0 * 42 * (4096 + 4096) * 8192;
  EXPECT_NEAR(f2 - w2, attn2 / 4, 1e3);
  EXPECT_NEAR(f2 / w2 - 1, 0.062, 0.002);  // the unwindowed count is 6% too high at 8k
  const Arch g3 = Read("gemma3-1b.json");
  const double w3 = ModelFlopsPerToken(g3, 32768), f3 = ModelFlopsPerToken(unwindowed(g3), 32768);
  const double attn3 = 6.0 * 26 * (1024 + 1024) * 32768;
  EXPECT_NEAR(f3 - w3, attn3 * 22 / 26 * (1 - 512.0 / 32768), 1e3);
  EXPECT_NEAR(f3 / w3 - 1, 1.13, 0.01);  // +113% at 32k
  // Below the window nothing changes.
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(g2, 4096), ModelFlopsPerToken(unwindowed(g2), 4096));
}

TEST(HfConfigs, AttendedKeysPerQueryCausalAndChunked) {
  Arch a;
  a.layers = 4;
  EXPECT_DOUBLE_EQ(AttendedKeysPerQuery(a, 8192, false), 8192);
  EXPECT_DOUBLE_EQ(AttendedKeysPerQuery(a, 8192, true), 4096);
  a.attn_window = 4096;
  a.windowed_layers = 4;
  // Sliding: the first w positions see i keys, the rest w: w - w²/(2s) on average.
  EXPECT_DOUBLE_EQ(AttendedKeysPerQuery(a, 8192, true), 4096 - 4096.0 * 4096 / (2 * 8192));
  EXPECT_DOUBLE_EQ(AttendedKeysPerQuery(a, 8192, false), 4096);
  a.attn_chunked = true;  // two full chunks of 4096: 2048 on average
  EXPECT_DOUBLE_EQ(AttendedKeysPerQuery(a, 8192, true), 2048);
  a.windowed_layers = 2;  // half the layers full (4096), half chunked (2048)
  EXPECT_DOUBLE_EQ(AttendedKeysPerQuery(a, 8192, true), 3072);
  EXPECT_DOUBLE_EQ(AttendedKeysPerQuery(a, 2048, true), 1024);  // shorter than the window: full
}

// The step's attention core (flash kernels skip what the window masks) drops with the window too.
TEST(HfConfigs, WindowShortensTheStepsAttention) {
  auto job = [](bool window) {
    Job j = testing_util::MakeJob("model:\n  config: " + kDir + "gemma3-1b.json\ntraining:\n  seq_len: 32768\n"
                                  "cluster:\n  gpu: h100-sxm\n  num_gpus: 1\n");
    if (!window) j.arch.windowed_layers = j.arch.attn_window = 0;
    return j;
  };
  const Job with = job(true), without = job(false);
  const StepEstimate e1 = EstimateStep(with, testing_util::Hw(with));
  const StepEstimate e0 = EstimateStep(without, testing_util::Hw(without));
  EXPECT_LT(e1.step_time_s, e0.step_time_s * 0.8);
  EXPECT_LT(e1.model_flops_per_token, e0.model_flops_per_token);
}

// glm4_moe (GLM-4.5/4.6/4.7): the trimmed GLM-4.7 file has no reference count in SOURCES.md, only the
// card's "355B total / 32B active"; the count is held to 1% of it (the file drops attention_bias and
// use_qk_norm, a few million parameters). The glm-4.6 and glm-4.5-air presets (data/models.csv) are
// the same family: 4.6 is 4.7's shape with its q/k/v biases and q/k norms, 4.5-Air the card's 106B / 12B.
TEST(HfConfigs, Glm4MoeReadsSharedExpertsAndDenseFirstLayers) {
  const Arch a = Read("glm4.7-355b-trimmed.json");
  EXPECT_EQ(a.layers, 92);
  EXPECT_EQ(a.dense_layers, 3);
  EXPECT_EQ(a.experts, 160);
  EXPECT_EQ(a.shared_experts, 1);
  EXPECT_EQ(a.moe_ffn_hidden, 1536);
  EXPECT_EQ(a.ffn_hidden, 12288);
  EXPECT_TRUE(a.router_bias);
  const ParamCounts c = CountParams(a);
  EXPECT_NEAR(c.total / 355e9, 1.0, 0.01) << c.total;
  // The cards' active counts leave the embedding and the head out (gpt-oss's card says so; GLM's agrees).
  EXPECT_NEAR((c.active - c.embedding - c.lm_head) / 32e9, 1.0, 0.01) << c.active;
  auto g46 = FindPreset("glm-4.6");
  ASSERT_TRUE(g46.ok()) << g46.status().ToString();
  const ParamCounts p46 = CountParams(*g46);
  EXPECT_GT(p46.total, c.total);  // + q/k/v biases and q/k norms
  EXPECT_NEAR(static_cast<double>(p46.total) / c.total, 1.0, 0.001);
  auto air = FindPreset("glm-4.5-air");
  ASSERT_TRUE(air.ok()) << air.status().ToString();
  const ParamCounts pa = CountParams(*air);
  EXPECT_NEAR(pa.total / 106e9, 1.0, 0.02) << pa.total;
  EXPECT_NEAR((pa.active - pa.embedding - pa.lm_head) / 12e9, 1.0, 0.02) << pa.active;
  std::printf("glm4.7 file %.2fB (active %.2fB); glm-4.6 preset %.2fB; glm-4.5-air preset %.2fB (active %.2fB)\n",
              c.total / 1e9, c.active / 1e9, p46.total / 1e9, pa.total / 1e9, pa.active / 1e9);
}

}  // namespace
}  // namespace gpuplan
