#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../test_util.h"
#include "gpuplan/arch.h"
#include "gpuplan/memory.h"

namespace gpuplan {
namespace {

int64_t PresetParams(const std::string& name) {
  auto a = FindPreset(name);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? CountParams(*a).total : -1;
}

std::string Fixture(const std::string& f) { return std::string(GPUPLAN_SOURCE_DIR) + "/tests/fixtures/hf/" + f; }

TEST(Arch, ExactPresetCounts) {
  EXPECT_EQ(PresetParams("llama-2-7b"), 6738415616);
  EXPECT_EQ(PresetParams("llama-3-8b"), 8030261248);
  EXPECT_EQ(PresetParams("mistral-7b"), 7241732096);
  EXPECT_EQ(PresetParams("qwen2.5-7b"), 7615616512);
  EXPECT_EQ(PresetParams("gpt2"), 124439808);
  EXPECT_EQ(PresetParams("mixtral-8x7b"), 46702792704);
}

TEST(Arch, MixtralActiveParams) {
  auto a = FindPreset("mixtral-8x7b");
  ASSERT_TRUE(a.ok());
  const double active = static_cast<double>(CountParams(*a).active);
  EXPECT_NEAR(active / 1e9, 12.9, 0.05);  // Mistral: "12.9B active parameters per token"
}

TEST(Arch, KnownPublishedTotals) {
  // Meta and Mosaic model cards (rounded), as a sanity check of the other presets.
  EXPECT_NEAR(PresetParams("llama-2-13b") / 1e9, 13.0, 0.1);
  EXPECT_NEAR(PresetParams("llama-2-70b") / 1e9, 69.0, 0.1);
  EXPECT_NEAR(PresetParams("llama-3-70b") / 1e9, 70.6, 0.1);
  EXPECT_NEAR(PresetParams("llama-3.1-405b") / 1e9, 405.9, 0.2);
  EXPECT_NEAR(PresetParams("qwen2.5-72b") / 1e9, 72.7, 0.1);
  // GPT-3 "175B" counts 174.6B with its 50257-token vocabulary and 2048 learned positions.
  EXPECT_NEAR(PresetParams("gpt3-175b") / 1e9, 174.6, 0.1);
  EXPECT_NEAR(PresetParams("mpt-7b") / 1e9, 6.65, 0.05);
  EXPECT_NEAR(PresetParams("mpt-30b") / 1e9, 29.96, 0.1);
}

TEST(Arch, HfConfigCountsMatchPresets) {
  struct Case { const char* file; int64_t params; };
  for (const Case& c : {Case{"llama-2-7b.json", 6738415616}, Case{"llama-3-8b.json", 8030261248},
                        Case{"mistral-7b.json", 7241732096}, Case{"qwen2.5-7b.json", 7615616512},
                        Case{"gpt2.json", 124439808}, Case{"mixtral-8x7b.json", 46702792704}}) {
    auto a = ArchFromHfConfig(Fixture(c.file));
    ASSERT_TRUE(a.ok()) << c.file << ": " << a.status().ToString();
    EXPECT_EQ(CountParams(*a).total, c.params) << c.file;
  }
}

TEST(Arch, GptNeoxPythia160m) {
  auto a = ArchFromHfConfig(Fixture("pythia-160m.json"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  // EleutherAI Pythia-160M: 162,322,944 parameters (untied in/out embeddings, biases everywhere).
  EXPECT_EQ(CountParams(*a).total, 162322944);
}

TEST(Arch, HfConfigErrorsCarryLocation) {
  auto a = ArchFromHfConfig(Fixture("bad-type.json"));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().ToString().find("bad-type.json:3: hidden_size"), std::string::npos) << a.status().ToString();
  auto missing = ArchFromHfConfig(Fixture("does-not-exist.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().ToString().find("cannot open"), std::string::npos);
}

// Exact counts for the Qwen3, DeepSeek-V2/V3 and Gemma 2/3 families. Every expected integer was
// computed independently in python3 from the modelling code's shapes (transformers
// modeling_qwen3.py, modeling_qwen3_moe.py, modeling_deepseek.py, modeling_gemma2.py,
// modeling_gemma3.py), with glu(h, f) = 3 h f:
//   Qwen3:    L * (h*H*d + 2*h*KV*d + H*d*h + 2*d [q/k norms] + 2*h + glu(h, f)) + V*h*(tied ? 1 : 2) + h
//   Gemma2/3: L * (h*H*d + 2*h*KV*d + H*d*h [+ 2*d Gemma 3] + 4*h + glu(h, f)) + V*h + h   (tied)
//   DeepSeek: q = h*H*192 (V2-Lite) or h*ql + ql + ql*H*192; kv = h*(512+64) + 512 + 512*H*(128+128);
//             o = H*128*h; dense layer = attn + 2*h + glu(h, f); MoE layer = attn + 2*h
//             + (E + S)*glu(h, m) + E*h [+ E V3 bias]; total = k_dense*dense + (L-k_dense)*moe + 2*V*h + h.
int64_t HfParams(const std::string& file, int64_t* active = nullptr, Arch* out = nullptr) {
  auto a = ArchFromHfConfig(Fixture(file));
  EXPECT_TRUE(a.ok()) << file << ": " << a.status().ToString();
  if (!a.ok()) return -1;
  if (active) *active = CountParams(*a).active;
  if (out) *out = *a;
  return CountParams(*a).total;
}

TEST(Arch, Qwen3DenseCountsMatchModelCards) {
  // Qwen3-8B model card (huggingface.co/Qwen/Qwen3-8B): 8.2B parameters, 6.95B non-embedding.
  Arch a;
  EXPECT_EQ(HfParams("qwen3-8b.json", nullptr, &a), 8190735360);
  EXPECT_TRUE(a.qk_norm);
  EXPECT_FALSE(a.qkv_bias);
  EXPECT_NEAR((8190735360 - 2 * 151936 * 4096) / 1e9, 6.95, 0.005);
  // Qwen3-0.6B card: 0.6B, 0.44B non-embedding; head_dim 128 while hidden / heads = 64; tied.
  EXPECT_EQ(HfParams("qwen3-0.6b.json", nullptr, &a), 596049920);
  EXPECT_EQ(a.QDim(), 2048);
  EXPECT_NEAR((596049920 - 151936 * 1024) / 1e9, 0.44, 0.005);
}

TEST(Arch, Qwen3MoeCountsMatchModelCard) {
  // Qwen3-30B-A3B card: 30.5B total, 3.3B activated, 29.9B non-embedding.
  int64_t active = 0;
  EXPECT_EQ(HfParams("qwen3-30b-a3b.json", &active), 30532122624);
  EXPECT_EQ(active, 3353032704);
  EXPECT_NEAR((30532122624 - 2 * 151936 * 2048) / 1e9, 29.9, 0.05);
}

TEST(Arch, DeepseekV2LiteMlaCountMatchesModelCard) {
  // DeepSeek-V2-Lite card (huggingface.co/deepseek-ai/DeepSeek-V2-Lite) and the DeepSeek-V2 paper
  // (arXiv:2405.04434, appendix B): 15.7B total, 2.4B activated. DeepSeek's activated count leaves
  // out the input embedding (a table lookup): 2,661,150,208 - 102400*2048 = 2,451,435,008.
  int64_t active = 0;
  Arch a;
  EXPECT_EQ(HfParams("deepseek-v2-lite.json", &active, &a), 15706484224);
  EXPECT_EQ(active, 2661150208);
  EXPECT_NEAR((active - CountParams(a).embedding) / 1e9, 2.45, 0.05);
  EXPECT_TRUE(a.IsMla());
  EXPECT_EQ(a.q_lora_rank, 0);  // "q_lora_rank": null -> a full q_proj
  EXPECT_EQ(a.dense_layers, 1);
  EXPECT_EQ(a.HeadDim(), 192);
  EXPECT_EQ(a.ODim(), 16 * 128);
  EXPECT_FALSE(a.router_bias);  // topk_method greedy
}

TEST(Arch, DeepseekV3CountExcludesMtpModule) {
  // DeepSeek-V3 card and report (arXiv:2412.19437): 671B total, 37B activated; the checkpoint's 685B
  // adds the 14B multi-token-prediction module, which is not counted (transformers does not build
  // it). Activated without the embedding: 37,552,297,472 - 129280*7168 = 36,625,618,432.
  int64_t active = 0;
  Arch a;
  EXPECT_EQ(HfParams("deepseek-v3.json", &active, &a), 671026419200);
  EXPECT_EQ(active, 37552297472);
  EXPECT_NEAR((active - CountParams(a).embedding) / 1e9, 37.0, 0.5);
  EXPECT_TRUE(a.router_bias);  // e_score_correction_bias: 256 per MoE layer
  EXPECT_EQ(CountParams(a).router_per_layer, 256 * 7168 + 256);
  EXPECT_EQ(a.dense_layers, 3);
}

TEST(Arch, Gemma2CountMatchesModelCard) {
  // google/gemma-2-9b on Hugging Face: 9.24B parameters; tie_word_embeddings absent = tied.
  Arch a;
  EXPECT_EQ(HfParams("gemma-2-9b.json", nullptr, &a), 9241705984);
  EXPECT_TRUE(a.tied_embeddings);
  EXPECT_EQ(a.norms_per_layer, 4);
  EXPECT_EQ(a.mlp, MlpKind::kGeGlu);
  EXPECT_EQ(a.QDim(), 4096);  // 16 heads x 256, hidden 3584
}

TEST(Arch, Gemma3TextCountsMatchPublished) {
  // Gemma 3 1B (text only): keras-hub gemma3_1b preset lists 999,885,952 parameters.
  EXPECT_EQ(HfParams("gemma-3-1b.json"), 999885952);
  // Gemma 3 4B (Gemma3ForConditionalGeneration): the language model from text_config, with
  // Gemma3TextConfig defaults for the keys it omits (heads 8, kv 4, head_dim 256, vocab 262208).
  // Gemma 3 technical report Table 1: 3,209M non-embedding parameters; with keras-hub's 262144-token
  // vocabulary its gemma3_4b_text preset is 3,880,099,328 = this count - 64*2560. The SigLIP vision
  // tower (416,866,032) and projector (2,950,272) are not counted: 4,300,079,472 with them ("4.3B").
  Arch a;
  EXPECT_EQ(HfParams("gemma-3-4b.json", nullptr, &a), 3880263168);
  EXPECT_EQ(3880263168 - CountParams(a).embedding, 3209010688);
  EXPECT_TRUE(a.qk_norm);
  EXPECT_EQ(3880263168 - 64 * 2560, 3880099328);
}

TEST(Arch, NewPresetsMatchTheirConfigs) {
  for (const auto& [preset, file] : {std::pair{"qwen3-8b", "qwen3-8b.json"}, {"deepseek-v2-lite", "deepseek-v2-lite.json"},
                                     {"deepseek-v3", "deepseek-v3.json"}, {"gemma-2-9b", "gemma-2-9b.json"}}) {
    int64_t active = 0, preset_active = 0;
    const int64_t total = HfParams(file, &active);
    EXPECT_EQ(PresetParams(preset), total) << preset;
    auto a = FindPreset(preset);
    if (a.ok()) preset_active = CountParams(*a).active;
    EXPECT_EQ(preset_active, active) << preset;
  }
}

TEST(Arch, HfConfigFolderAndMissingFile) {
  // A checkpoint folder reads the config.json inside it and is named after the folder.
  const std::string dir = ::testing::TempDir() + "/Qwen3-8B";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(Fixture("qwen3-8b.json"), dir + "/config.json",
                             std::filesystem::copy_options::overwrite_existing);
  auto a = ArchFromHfConfig(dir);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->name, "Qwen3-8B");
  EXPECT_EQ(CountParams(*a).total, 8190735360);
  // A missing file says how to get one.
  auto missing = ArchFromHfConfig(dir + "/nope.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().reason().find("resolve/main/config.json"), std::string::npos) << missing.status().ToString();
}

TEST(Arch, LoraOnMlaUsesDeepseekModules) {
  auto a = ArchFromHfConfig(Fixture("deepseek-v2-lite.json"));
  ASSERT_TRUE(a.ok());
  LoraSpec lora;
  lora.rank = 8;
  lora.targets = {"q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"};
  // r * [(2048 + 16*192) + (2048 + 576) + (512 + 16*256) + (16*128 + 2048)] * 27 layers
  EXPECT_EQ(CountLoraParams(*a, lora), 8 * ((2048 + 3072) + (2048 + 576) + (512 + 4096) + (2048 + 2048)) * 27);
  lora.targets = {"k_proj", "v_proj"};  // no such modules in MLA
  EXPECT_EQ(CountLoraParams(*a, lora), 0);
}

TEST(Arch, MlaActivationsUseLatentAndHeadWidths) {
  // docs/model/memory.md §3.1 for DeepSeek-V2-Lite's dense layer, flash attention, no recompute,
  // 16-bit, t = 1: norms 2 x (3 sbh x 2 B + 2 B of the fp32 upcast input) + 2 x 4 sb; q sb x 16*192; k + v sb x (16*192 + 16*128);
  // o_proj input sb x 16*128; kv latent + rotary key sb x (512 + 64) and its norm 3 x sb x 512;
  // log-sum-exp 16 x sb x 4 B; SwiGLU 4 x sb x 10944.
  Job j = testing_util::MakeJob(
      "model: {preset: deepseek-v2-lite}\ntraining: {seq_len: 1024, micro_batch: 1, flash_attention: true, recompute: none}\n");
  const double sb = 1024, h = 2048;
  const double expected = 2 * (3 * 2 + 2) * sb * h + 2 * 4 * sb + sb * 3072 * 2 + sb * (3072 + 2048) * 2 + sb * 2048 * 2 +
                          (sb * (512 + 64) + 3 * sb * 512) * 2 + 16 * sb * 4 + 4 * sb * 10944 * 2;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(j, false).saved_bytes, expected);
}

TEST(Arch, SandwichAndQkNormActivations) {
  // Gemma 2: four norms per layer (3 sbh x 2 B + the fp32 upcast's 2 B each + 4 sb B rstd); q 16*256, k/v 8*256 each wide.
  Job j = testing_util::MakeJob(
      "model: {preset: gemma-2-9b}\ntraining: {seq_len: 1024, micro_batch: 1, flash_attention: true, recompute: none}\n");
  const double sb = 1024, h = 3584;
  const double expected = 4 * (3 * 2 + 2) * sb * h + 4 * 4 * sb + sb * 4096 * 2 + sb * 4096 * 2 + sb * 4096 * 2 +
                          16 * sb * 4 + 4 * sb * 14336 * 2;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(j, false).saved_bytes, expected);
  // Qwen3: q/k norms add the pre-norm q, k and x-hat (2 x sb x (4096 + 1024) x 2 B) and fp32 rstd per head.
  Job q = testing_util::MakeJob(
      "model: {preset: qwen3-8b}\ntraining: {seq_len: 1024, micro_batch: 1, flash_attention: true, recompute: none}\n");
  const double qh = 4096;
  const double q_expected = 2 * (3 * 2 + 2) * sb * qh + 2 * 4 * sb + sb * 4096 * 2 + sb * 2048 * 2 + sb * 4096 * 2 +
                            2 * sb * (4096 + 1024) * 2 + 4 * sb * (32 + 8) + 32 * sb * 4 + 4 * sb * 12288 * 2;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(q, false).saved_bytes, q_expected);
}

TEST(Arch, LoraCountMatchesPeft) {
  auto a = FindPreset("llama-2-7b");
  ASSERT_TRUE(a.ok());
  LoraSpec lora;
  lora.rank = 8;
  lora.targets = {"q_proj", "v_proj"};
  EXPECT_EQ(CountLoraParams(*a, lora), 4194304);  // PEFT print_trainable_parameters for this setup
  lora.targets = {"all-linear"};
  lora.rank = 16;
  // r * (sum of in+out over q,k,v,o,gate,up,down) * 32 layers
  const int64_t per_layer = 16 * ((4096 + 4096) * 4 + (4096 + 11008) * 3);
  EXPECT_EQ(CountLoraParams(*a, lora), 32 * per_layer);
}

// FT§0 every framework's names for the same projections give the same count: Llama-3 8B, rank 8
// on q and v is 3,407,872 trainable parameters (PEFT print_trainable_parameters, widely quoted:
// 8 x ((4096 + 4096) + (4096 + 1024)) x 32 layers).
TEST(Arch, LoraTargetsInEveryFrameworksNames) {
  auto a = FindPreset("llama-3-8b");
  ASSERT_TRUE(a.ok());
  auto count = [&](const std::vector<std::string>& names) -> int64_t {
    auto t = ResolveLoraTargets(names, {"job.yaml", 3, "training.lora.targets"});
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.status().ToString());
    if (!t.ok()) return -1;
    LoraSpec l;
    l.rank = 8;
    l.targets = *t;
    return CountLoraParams(*a, l);
  };
  EXPECT_EQ(count({"q_proj", "v_proj"}), 3407872);
  EXPECT_EQ(count({"q_proj", "v_proj"}), 8 * ((4096 + 4096) + (4096 + 1024)) * 32);
  // torchtune's default Llama-3 8B LoRA: q, v, output_proj and the MLP (w1, w2, w3).
  const int64_t hf_all = count({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
  EXPECT_EQ(count({"q_proj", "v_proj", "output_proj", "w1", "w2", "w3"}),
            count({"q_proj", "v_proj", "o_proj", "gate_proj", "down_proj", "up_proj"}));
  EXPECT_EQ(count({"q_proj", "k_proj", "v_proj", "output_proj", "w1", "w2", "w3"}), hf_all);
  EXPECT_EQ(count({"all-linear"}), hf_all);
  EXPECT_EQ(count({"*_proj"}), hf_all);                      // glob over HF names (linear_proj is o_proj too)
  EXPECT_EQ(count({"*"}), hf_all);                           // separate projections, not also the fused ones
  EXPECT_EQ(count({".*\\.(q_proj|v_proj)"}), 3407872);       // PEFT regex over module paths
  EXPECT_EQ(count({"model.layers.*.self_attn.(q|v)_proj"}), 3407872);
  // Megatron-Core: one adapter on the fused qkv (h -> q + 2 kv) and on fc1 (h -> 2 ffn).
  const int64_t h = 4096, kv = 1024, ffn = 14336;
  EXPECT_EQ(count({"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"}),
            8 * 32 * ((h + h + 2 * kv) + (h + h) + (h + 2 * ffn) + (ffn + h)));
  EXPECT_EQ(count({"linear_*"}), count({"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"}));
  EXPECT_EQ(count({"qkv_proj", "gate_up_proj"}), count({"linear_qkv", "linear_fc1"}));  // Phi-3's fused names
}

TEST(Arch, LoraTargetsRefusedWithTheName) {
  const Location at{"job.yaml", 3, "training.lora.targets"};
  for (const auto& [names, want] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"qproj"}, "unknown LoRA target 'qproj'"},
           {{"*_weight"}, "unknown LoRA target '*_weight'"},
           {{"(q_proj"}, "not a valid regular expression"},
           {{"linear_qkv", "q_proj"}, "same projections twice"},
           {{"all-linear", "linear_fc1"}, "same projections twice"}}) {
    auto r = ResolveLoraTargets(names, at);
    ASSERT_FALSE(r.ok()) << names[0];
    EXPECT_NE(r.status().ToString().find("job.yaml:3: training.lora.targets:"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().ToString().find(want), std::string::npos) << r.status().ToString();
  }
}

TEST(Arch, ParamOverrideIsExact) {
  Arch a = ArchFromParamCount(7.5e9);
  EXPECT_EQ(CountParams(a).total, 7500000000);
  EXPECT_TRUE(ValidateArch(a, {}).ok());
}

TEST(Arch, ValidateRejectsInconsistentShapes) {
  Arch a = *FindPreset("llama-3-8b");
  a.kv_heads = 5;
  EXPECT_FALSE(ValidateArch(a, {}).ok());
  a = *FindPreset("gpt2");
  a.heads = 7;
  EXPECT_FALSE(ValidateArch(a, {}).ok());
}

TEST(Arch, UnknownPresetListsKnownOnes) {
  auto a = FindPreset("llama-9-1b");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().reason().find("llama-2-7b"), std::string::npos);
}

// Issue 8 (robustness): config.json and parameter-count classes.

std::string WriteConfig(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string ConfigError(const std::string& name, const std::string& text) {
  auto a = ArchFromHfConfig(WriteConfig(name, text));
  return a.ok() ? "" : a.status().ToString();
}

const char* kTinyLlama =
    R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, )"
    R"("intermediate_size": 128, "vocab_size": 100, "num_key_value_heads": KV})";

std::string Tiny(const std::string& kv) {
  std::string t = kTinyLlama;
  return t.replace(t.find("KV"), 2, kv);
}

TEST(Arch, HfConfigDuplicateKeysAreAnErrorNamingTheKey) {
  // nlohmann/yaml-cpp keep the first value, Python/HF the last: neither silently.
  const std::string e = ConfigError("dup.json", "{\"model_type\": \"llama\",\n \"hidden_size\": 64,\n \"hidden_size\": 128}");
  EXPECT_NE(e.find("dup.json:3: hidden_size: key given twice (first on line 2)"), std::string::npos) << e;
  const std::string nested = ConfigError("dup2.json", R"({"model_type": "gemma3", "text_config": {"head_dim": 1, "head_dim": 2}})");
  EXPECT_NE(nested.find("text_config.head_dim: key given twice"), std::string::npos) << nested;
}

TEST(Arch, HfConfigZeroKvHeadsAndZeroExpertsAreErrors) {
  EXPECT_TRUE(ArchFromHfConfig(WriteConfig("kv2.json", Tiny("2"))).ok());
  EXPECT_NE(ConfigError("kv0.json", Tiny("0")).find("kv0.json:1: num_key_value_heads: must be in [1, "), std::string::npos)
      << ConfigError("kv0.json", Tiny("0"));
  std::string mixtral = Tiny("2");
  mixtral.replace(mixtral.find("\"llama\""), 7, "\"mixtral\", \"num_local_experts\": 0, \"num_experts_per_tok\": 2");
  EXPECT_NE(ConfigError("mx0.json", mixtral).find("num_local_experts: must be in [1, "), std::string::npos)
      << ConfigError("mx0.json", mixtral);
}

TEST(Arch, HfConfigShapeErrorsHaveTheKeysLine) {
  // ValidateArch's errors ("heads must divide hidden", the count limit) were at no line.
  const std::string e = ConfigError("heads.json", "{\"model_type\": \"llama\",\n \"hidden_size\": 64,\n "
                                                  "\"num_hidden_layers\": 2,\n \"num_attention_heads\": 3,\n "
                                                  "\"intermediate_size\": 128,\n \"vocab_size\": 100}");
  EXPECT_NE(e.find("heads.json:4: num_attention_heads: must divide hidden"), std::string::npos) << e;
  const std::string big = ConfigError("big.json", "{\"model_type\": \"llama\", \"hidden_size\": 16384,\n "
                                                  "\"num_hidden_layers\": 16000000,\n \"num_attention_heads\": 128,\n "
                                                  "\"intermediate_size\": 65536, \"vocab_size\": 100}");
  EXPECT_NE(big.find("big.json:2: num_hidden_layers: 16000000 layers of up to"), std::string::npos) << big;
}

TEST(Arch, HfConfigNonFiniteAndHugeValuesNameTheKey) {
  for (const char* v : {"Infinity", "NaN", "1e300", "0x10", "-1", "2.5"}) {
    const std::string e = ConfigError("nf.json", Tiny(v));
    EXPECT_NE(e.find("nf.json:1: num_key_value_heads: "), std::string::npos) << v << ": " << e;
  }
}

TEST(Arch, HfConfigYamlAliasExpansionIsRefusedNotWalked) {
  std::string t = "model_type: llama\nx0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i < 12; ++i) {
    t += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) t += (k ? ", *a" : "*a") + std::to_string(i - 1);
    t += "]\n";
  }
  EXPECT_NE(ConfigError("laughs.json", t).find("more than 1000000 values"), std::string::npos);
}

TEST(Arch, HfConfigStrayCommaIsRefusedNotAHang) {
  alarm(60);  // yaml-cpp loops forever on "{...},": a hang fails by SIGALRM
  const std::string e = ConfigError("comma.json", std::string(kTinyLlama).replace(std::string(kTinyLlama).find("KV"), 2, "2") + ",\n");
  alarm(0);
  EXPECT_NE(e.find("comma.json:1: a ',' outside any [ ] or { } list"), std::string::npos) << e;
}

TEST(Arch, HfConfigTextProblemsArePlainMessages) {
  EXPECT_NE(ConfigError("deep.json", "{\"a\": " + std::string(3000, '[') + std::string(3000, ']') + "}")
                .find("nesting deeper than 64 levels"),
            std::string::npos);
  EXPECT_NE(ConfigError("nul.json", std::string("{\"model_type\": \"lla\0ma\"}", 24)).find("NUL byte"), std::string::npos);
  auto dev = ArchFromHfConfig("/dev/urandom");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().reason().find("character device"), std::string::npos) << dev.status().ToString();
}

// An exact count for a big shape, summed independently here in 128 bits.
TEST(Arch, ParamCountOverflowBigShapesAreExact) {
  Arch a;
  a.layers = 4096;
  a.hidden = 65536;
  a.heads = 512;
  a.ffn_hidden = 262144;
  a.vocab = 1 << 20;
  a.mlp = MlpKind::kGelu;
  ASSERT_TRUE(ValidateArch(a, {}).ok());
  const __int128 h = a.hidden, f = a.ffn_hidden;
  const __int128 per_layer = 4 * h * h + 2 * h * f + 2 * h;  // q,k,v,o; up, down; two RMSNorms
  const __int128 expected = 2 * __int128{a.vocab} * h + h + __int128{a.layers} * per_layer;
  EXPECT_EQ(CountParams(a).total, static_cast<int64_t>(expected));
  EXPECT_LE(CountParams(a).total, kMaxParamCount);
  // Eight times the layers crosses 1e15: refused at the key, not printed as garbage.
  a.layers = 32768;
  Status st = ValidateArch(a, {"job.yaml", 0, "model"});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.location().key, "model.layers") << st.ToString();
}

TEST(Arch, ParamCountOverflowFromParamCountAcrossTheAcceptedRange) {
  for (double p : {1e3, 1e6, 7.5e9, 9e11, 1e12, 1e13, 2.5e14, 1e15}) {
    Arch a = ArchFromParamCount(p);
    EXPECT_TRUE(ValidateArch(a, {}).ok()) << p;
    const ParamCounts c = CountParams(a);
    EXPECT_EQ(c.total, static_cast<int64_t>(p)) << p;
    EXPECT_GE(c.attn_per_layer, 0) << p;
    EXPECT_GE(c.norm_per_layer, 0) << p;
    EXPECT_GE(c.dense_mlp_per_layer, 0) << p;
    EXPECT_LE(c.attn_per_layer + c.norm_per_layer + c.dense_mlp_per_layer, c.total) << p;
  }
  // Out of the accepted range the shape stays finite and ValidateArch refuses the count.
  for (double p : {1e16, 1e300, std::numeric_limits<double>::infinity()}) {
    Arch a = ArchFromParamCount(p);
    EXPECT_FALSE(ValidateArch(a, {}).ok()) << p;
    EXPECT_GT(a.hidden, 0);
    EXPECT_GT(a.layers, 0);
  }
}

// ---- rope_theta, the norm epsilon and rope_scaling (the engines' model flags) ----

TEST(Arch, HfConfigCarriesRopeThetaNormEpsilonAndScaling) {
  auto l31 = ArchFromHfConfig(Fixture("llama-3.1-70b.json"));
  ASSERT_TRUE(l31.ok()) << l31.status().ToString();
  EXPECT_EQ(l31->rope_theta, 500000);
  EXPECT_EQ(l31->norm_eps, 1e-5);
  EXPECT_EQ(l31->rope_scaling, RopeScaling::kLlama3);
  EXPECT_EQ(l31->rope_factor, 8);
  EXPECT_EQ(l31->rope_low_freq_factor, 1);
  EXPECT_EQ(l31->rope_high_freq_factor, 4);
  EXPECT_EQ(l31->rope_original_max_positions, 8192);
  auto l2 = ArchFromHfConfig(Fixture("llama-2-7b.json"));  // no rope_theta key: LlamaConfig's 10000
  ASSERT_TRUE(l2.ok());
  EXPECT_EQ(l2->rope_theta, 10000);
  EXPECT_EQ(l2->rope_scaling, RopeScaling::kNone);
  auto l3 = ArchFromHfConfig(Fixture("llama-3-8b.json"));
  ASSERT_TRUE(l3.ok());
  EXPECT_EQ(l3->rope_theta, 500000);
  EXPECT_EQ(l3->rope_scaling, RopeScaling::kNone);
  auto q = ArchFromHfConfig(Fixture("qwen2.5-7b.json"));  // a trimmed config without the keys: Qwen2Config's defaults
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->rope_theta, 10000);
  EXPECT_EQ(q->norm_eps, 1e-6);
  auto mx = ArchFromHfConfig(Fixture("mixtral-8x7b.json"));  // MixtralConfig's defaults
  ASSERT_TRUE(mx.ok());
  EXPECT_EQ(mx->rope_theta, 1e6);
  EXPECT_EQ(mx->norm_eps, 1e-5);
  auto d = ArchFromHfConfig(Fixture("deepseek-v3.json"));  // "type": "yarn"
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->rope_scaling, RopeScaling::kYarn);
  EXPECT_EQ(d->rope_factor, 40);
  EXPECT_EQ(d->rope_original_max_positions, 4096);
  auto g = ArchFromHfConfig(Fixture("gpt2.json"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->norm_eps, 1e-5);
}

TEST(Arch, PresetsCarryTheRopeAndEpsilonOfTheirConfigs) {
  // The fixtures that carry rope_theta, the epsilon and rope_scaling verbatim.
  for (const auto& [preset, file] :
       {std::pair{"llama-3.1-70b", "llama-3.1-70b.json"}, {"qwen3-8b", "qwen3-8b.json"}, {"deepseek-v3", "deepseek-v3.json"},
        {"deepseek-v2-lite", "deepseek-v2-lite.json"}, {"gemma-2-9b", "gemma-2-9b.json"}}) {
    auto p = FindPreset(preset);
    auto h = ArchFromHfConfig(Fixture(file));
    ASSERT_TRUE(p.ok() && h.ok()) << preset;
    EXPECT_EQ(p->rope_theta, h->rope_theta) << preset;
    EXPECT_EQ(p->norm_eps, h->norm_eps) << preset;
    EXPECT_EQ(p->rope_scaling, h->rope_scaling) << preset;
    EXPECT_EQ(p->rope_factor, h->rope_factor) << preset;
    EXPECT_EQ(p->rope_low_freq_factor, h->rope_low_freq_factor) << preset;
    EXPECT_EQ(p->rope_high_freq_factor, h->rope_high_freq_factor) << preset;
    EXPECT_EQ(p->rope_original_max_positions, h->rope_original_max_positions) << preset;
  }
  // The rest, from the published config.json each row cites (trimmed fixtures leave the keys out).
  struct Published { const char* preset; double theta, eps; };
  for (const Published& c : {Published{"llama-2-70b", 10000, 1e-5}, {"llama-3-70b", 500000, 1e-5}, {"llama-3-8b", 500000, 1e-5},
                             {"mistral-7b", 10000, 1e-5}, {"mixtral-8x7b", 1e6, 1e-5}, {"qwen2.5-7b", 1e6, 1e-6},
                             {"qwen2.5-72b", 1e6, 1e-5}}) {
    auto p = FindPreset(c.preset);
    ASSERT_TRUE(p.ok()) << c.preset;
    EXPECT_EQ(p->rope_theta, c.theta) << c.preset;
    EXPECT_EQ(p->norm_eps, c.eps) << c.preset;
    EXPECT_EQ(p->rope_scaling, RopeScaling::kNone) << c.preset;
  }
  EXPECT_EQ(ArchFromHfConfig(Fixture("llama-3-8b.json"))->rope_theta, FindPreset("llama-3-8b")->rope_theta);
  // Every row of data/models.csv loads (a bad rope cell would drop its row).
  auto l31 = FindPreset("llama-3.1-8b");
  ASSERT_TRUE(l31.ok());
  EXPECT_EQ(l31->rope_scaling, RopeScaling::kLlama3);
  EXPECT_EQ(Presets().size(), 25u);  // the data rows of data/models.csv
}

TEST(Arch, HfConfigRopeErrorsAndTransformers5Layout) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::string base = R"({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
 "intermediate_size": 512, "vocab_size": 1000,)";
  auto bad = ArchFromHfConfig(write("rope-bad.json", base + "\n \"rope_scaling\": {\"rope_type\": \"warp\", \"factor\": 2}}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().location().line, 3) << bad.status().ToString();
  EXPECT_NE(bad.status().reason().find("warp"), std::string::npos);
  auto missing = ArchFromHfConfig(write("rope-llama3.json", base + "\n \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}"));
  ASSERT_FALSE(missing.ok());  // llama3 needs its frequency factors
  EXPECT_EQ(missing.status().location().key, "rope_scaling") << missing.status().ToString();
  auto eps = ArchFromHfConfig(write("rope-eps.json", base + "\n \"rms_norm_eps\": 0}"));
  ASSERT_FALSE(eps.ok());
  EXPECT_EQ(eps.status().location().key, "rms_norm_eps") << eps.status().ToString();
  auto v5 = ArchFromHfConfig(write("rope-v5.json", base + R"(
 "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})"));
  ASSERT_TRUE(v5.ok()) << v5.status().ToString();
  EXPECT_EQ(v5->rope_theta, 500000);
  EXPECT_EQ(v5->rope_factor, 32);
  EXPECT_EQ(v5->rope_scaling, RopeScaling::kLlama3);
}

}  // namespace
}  // namespace gpuplan
