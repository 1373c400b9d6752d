// Randomized property test (seed printed): parameter counts never overflow for any accepted shape.
// Each dimension is bounded by 2^24 but their products are not; before issue 8 a big shape wrapped
// int64 and printed garbage with exit 0. Shapes are drawn log-uniformly up to the bounds, so most
// of them are refused for their count; every accepted one must be exact.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gpuplan/arch.h"

namespace gpuplan {
namespace {

using Wide = __int128;

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  bool Coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng); }
  // 1..max, log-uniform, with the bound itself one time in eight.
  int64_t Dim(int64_t max) {
    if (Coin(0.125)) return max;
    const double e = std::uniform_real_distribution<double>(0, std::log2(static_cast<double>(max)))(rng);
    return std::max<int64_t>(1, std::min<int64_t>(max, static_cast<int64_t>(std::exp2(e))));
  }
  Arch RandomArch() {
    constexpr int64_t kDim = int64_t{1} << 24;
    Arch a;
    a.layers = Dim(kDim);
    a.heads = Dim(1 << 14);
    a.head_dim = Dim(1 << 12);
    a.hidden = Coin() ? a.heads * a.head_dim : Dim(kDim);
    if (a.hidden > kDim) a.hidden = kDim;
    a.kv_heads = Coin() ? a.heads : 1;
    a.vocab = Dim(kDim);
    a.mlp = Coin() ? MlpKind::kGelu : Coin() ? MlpKind::kSwiGlu : MlpKind::kGeGlu;
    a.ffn_hidden = a.mlp == MlpKind::kGelu && Coin() ? 0 : Dim(kDim);
    a.norm = Coin() ? NormKind::kLayerNorm : NormKind::kRmsNorm;
    a.norm_bias = Coin();
    a.linear_bias = Coin(0.3);
    a.qkv_bias = Coin(0.3);
    a.tied_embeddings = Coin();
    a.norms_per_layer = Coin() ? 2 : 4;
    a.qk_norm = Coin(0.3);
    if (Coin(0.2)) {
      a.position = PositionKind::kLearned;
      a.max_positions = Dim(kDim);
    }
    if (Coin(0.4)) {
      a.experts = Dim(1 << 16);
      a.experts_per_token = std::max<int64_t>(1, Dim(a.experts));
      a.shared_experts = Coin() ? 0 : Dim(16);
      a.moe_ffn_hidden = Coin() ? 0 : Dim(kDim);
      a.dense_layers = Coin() ? 0 : std::min(a.layers, Dim(8));
      a.router_bias = Coin();
    }
    if (Coin(0.2)) {  // MLA
      a.kv_lora_rank = Dim(1 << 14);
      a.q_lora_rank = Coin() ? 0 : Dim(1 << 14);
      a.qk_nope_head_dim = Dim(1 << 10);
      a.qk_rope_head_dim = Dim(1 << 8);
      a.v_head_dim = Dim(1 << 10);
      a.kv_heads = a.heads;
    }
    return a;
  }
};

// The total recomputed from the split in 128 bits: a wrapped product would not add up.
Wide Recount(const Arch& a, const ParamCounts& c) {
  const Wide moe_layers = a.MoeLayers(), dense_layers = a.layers - a.MoeLayers();
  return Wide{c.embedding} + c.lm_head + c.final_norm +
         dense_layers * (Wide{c.attn_per_layer} + c.norm_per_layer + c.dense_mlp_per_layer) +
         moe_layers * (Wide{c.attn_per_layer} + c.norm_per_layer + c.expert_per_layer + c.shared_expert_per_layer +
                       c.router_per_layer);
}

// An independent count for the plain case (standard attention, no biases, RMSNorm, rotary, dense),
// in long double: a refusal for the count must be a true one.
long double PlainTotal(const Arch& a) {
  const long double h = a.hidden, q = static_cast<long double>(a.heads) * a.HeadDim();
  const long double kv = static_cast<long double>(a.KvHeads()) * a.HeadDim();
  const long double layer = h * q * 2 + h * kv * 2 + a.MlpMatrices() * h * a.Ffn() + a.norms_per_layer * h +
                            (a.qk_norm ? 2.0L * a.HeadDim() : 0.0L);
  return a.vocab * h * (a.tied_embeddings ? 1 : 2) + h + a.layers * layer;
}

bool Plain(const Arch& a) {
  return !a.IsMla() && !a.IsMoe() && !a.linear_bias && !a.qkv_bias && a.norm == NormKind::kRmsNorm &&
         a.position != PositionKind::kLearned;
}

TEST(ArchProperty, ParamCountsNeverOverflowForAnyAcceptedShape) {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  Gen g(seed);
  int accepted = 0, refused_for_count = 0;
  for (int i = 0; i < 20000; ++i) {
    const Arch a = g.RandomArch();
    const Status st = ValidateArch(a, {"job.yaml", 0, "model"});
    if (!st.ok()) {
      ASSERT_EQ(st.code(), StatusCode::kBadInput);
      ASSERT_FALSE(st.location().key.empty()) << "seed " << seed << ": " << st.ToString();
      const bool for_count = st.reason().find("the limit is 1e+15") != std::string::npos;
      refused_for_count += for_count;
      if (for_count && Plain(a)) {
        ASSERT_GT(PlainTotal(a), 1e15L) << "seed " << seed << ": a false refusal: " << st.ToString();
      }
      continue;
    }
    ++accepted;
    const ParamCounts c = CountParams(a);
    for (int64_t part : {c.embedding, c.lm_head, c.final_norm, c.attn_per_layer, c.norm_per_layer,
                         c.dense_mlp_per_layer, c.expert_per_layer, c.shared_expert_per_layer, c.router_per_layer})
      ASSERT_GE(part, 0) << "seed " << seed << " shape " << i;
    ASSERT_GT(c.total, 0) << "seed " << seed;
    ASSERT_LE(c.total, kMaxParamCount) << "seed " << seed;
    ASSERT_EQ(Wide{c.total}, Recount(a, c)) << "seed " << seed << " shape " << i;
    ASSERT_GT(c.active, 0) << "seed " << seed;
    ASSERT_LE(c.active, c.total) << "seed " << seed;
    if (Plain(a)) {
      ASSERT_EQ(static_cast<long double>(c.total), PlainTotal(a)) << "seed " << seed << " shape " << i;
    }
    // LoRA adapters of any accepted rank on an accepted shape: never negative (saturated at worst,
    // and the job refuses a count beyond 1e15 at training.lora.rank).
    LoraSpec lora;
    lora.rank = g.Dim(1 << 16);
    lora.targets = {"all-linear"};
    ASSERT_GE(CountLoraParams(a, lora), 0) << "seed " << seed;
  }
  // The draw must exercise both sides of the limit or the property says nothing.
  EXPECT_GT(accepted, 500);
  EXPECT_GT(refused_for_count, 500);
}

TEST(ArchProperty, RawParamCountsAreExactOverTheAcceptedRange) {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(3, 15);
  for (int i = 0; i < 5000; ++i) {
    const double p = std::round(std::pow(10.0, exponent(rng)));
    const Arch a = ArchFromParamCount(p);
    ASSERT_TRUE(ValidateArch(a, {}).ok()) << "seed " << seed << " params " << p;
    const ParamCounts c = CountParams(a);
    ASSERT_EQ(c.total, static_cast<int64_t>(p)) << "seed " << seed << " params " << p;
    ASSERT_GE(c.attn_per_layer, 0);
    ASSERT_GE(c.norm_per_layer, 0);
    ASSERT_GE(c.dense_mlp_per_layer, 0) << "seed " << seed << " params " << p;
  }
}

}  // namespace
}  // namespace gpuplan
