#include <gtest/gtest.h>

#include "gpuplan/arch.h"

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
