#include <gtest/gtest.h>

#include <filesystem>

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
  // 16-bit, t = 1: norms 2 x 3 sbh x 2 B + 2 x 4 sb; q sb x 16*192; k + v sb x (16*192 + 16*128);
  // o_proj input sb x 16*128; kv latent + rotary key sb x (512 + 64) and its norm 3 x sb x 512;
  // log-sum-exp 16 x sb x 4 B; SwiGLU 4 x sb x 10944.
  Job j = testing_util::MakeJob(
      "model: {preset: deepseek-v2-lite}\ntraining: {seq_len: 1024, micro_batch: 1, flash_attention: true, recompute: none}\n");
  const double sb = 1024, h = 2048;
  const double expected = 2 * 3 * sb * h * 2 + 2 * 4 * sb + sb * 3072 * 2 + sb * (3072 + 2048) * 2 + sb * 2048 * 2 +
                          (sb * (512 + 64) + 3 * sb * 512) * 2 + 16 * sb * 4 + 4 * sb * 10944 * 2;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(j, false).saved_bytes, expected);
}

TEST(Arch, SandwichAndQkNormActivations) {
  // Gemma 2: four norms per layer (3 sbh x 2 B each + 4 sb B rstd); q 16*256, k/v 8*256 each wide.
  Job j = testing_util::MakeJob(
      "model: {preset: gemma-2-9b}\ntraining: {seq_len: 1024, micro_batch: 1, flash_attention: true, recompute: none}\n");
  const double sb = 1024, h = 3584;
  const double expected = 4 * 3 * sb * h * 2 + 4 * 4 * sb + sb * 4096 * 2 + sb * 4096 * 2 + sb * 4096 * 2 +
                          16 * sb * 4 + 4 * sb * 14336 * 2;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(j, false).saved_bytes, expected);
  // Qwen3: q/k norms add the pre-norm q, k and x-hat (2 x sb x (4096 + 1024) x 2 B) and fp32 rstd per head.
  Job q = testing_util::MakeJob(
      "model: {preset: qwen3-8b}\ntraining: {seq_len: 1024, micro_batch: 1, flash_attention: true, recompute: none}\n");
  const double qh = 4096;
  const double q_expected = 2 * 3 * sb * qh * 2 + 2 * 4 * sb + sb * 4096 * 2 + sb * 2048 * 2 + sb * 4096 * 2 +
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

}  // namespace
}  // namespace gpuplan
