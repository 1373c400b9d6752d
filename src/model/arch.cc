// Parameter counts from the architecture. Mirrors docs/model/memory.md §1 one-to-one.
#include <algorithm>
#include <cmath>

#include "gpuplan/arch.h"

namespace gpuplan {

namespace {

int64_t NormParams(const Arch& a) {
  // LayerNorm: gamma (+ beta); RMSNorm: gamma only.
  return a.hidden * ((a.norm == NormKind::kLayerNorm && a.norm_bias) ? 2 : 1);
}

int64_t MlpParams(const Arch& a, int64_t ffn) {
  const int64_t matrices = a.MlpMatrices() * a.hidden * ffn;
  // Biases: one per output feature of each matrix (the up/gate matrices output ffn, down outputs h).
  const int64_t biases = a.linear_bias ? (a.MlpMatrices() - 1) * ffn + a.hidden : 0;
  return matrices + biases;
}

// §1.1 attention matrices (+ biases). Standard: W_q (h x q), W_k (h x k), W_v (h x v), W_o (o x h).
int64_t AttnParams(const Arch& a) {
  const int64_t h = a.hidden;
  if (a.IsMla()) {
    // MLA (DeepSeek-V2 §2.1): q straight from h or through a rank-q_lora bottleneck; one shared
    // down-projection to the kv latent plus the shared rotary key; up-projection of the latent to
    // every head's k_nope and v; W_o from the heads' v.
    const int64_t q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * a.QDim() : h * a.QDim();
    const int64_t kv_down = h * (a.kv_lora_rank + a.qk_rope_head_dim);
    const int64_t kv_up = a.kv_lora_rank * a.heads * (a.qk_nope_head_dim + a.v_head_dim);
    // attention_bias puts biases on q_a_proj, kv_a_proj_with_mqa and o_proj only.
    const int64_t bias = (a.linear_bias || a.qkv_bias) ? a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim + h : 0;
    return q + kv_down + kv_up + a.ODim() * h + bias;
  }
  int64_t n = h * a.QDim() + h * a.KvDim() + h * a.VDim() + a.ODim() * h;
  if (a.linear_bias) {
    n += a.QDim() + a.KvDim() + a.VDim() + h;
  } else if (a.qkv_bias) {
    n += a.QDim() + a.KvDim() + a.VDim();
  }
  return n;
}

// §1.1 norms of one layer: norms_per_layer hidden-sized norms, q/k norms of head_dim, MLA's
// RMSNorms on the q and kv latents.
int64_t LayerNormParams(const Arch& a) {
  int64_t n = a.norms_per_layer * NormParams(a);
  if (a.qk_norm) n += 2 * a.HeadDim();
  if (a.IsMla()) n += a.kv_lora_rank + a.q_lora_rank;
  return n;
}

}  // namespace

ParamCounts CountParams(const Arch& a) {
  ParamCounts c;
  const int64_t h = a.hidden;
  c.embedding = a.vocab * h + (a.position == PositionKind::kLearned ? a.max_positions * h : 0);
  c.lm_head = a.tied_embeddings ? 0 : a.vocab * h;
  c.final_norm = NormParams(a);
  c.attn_per_layer = AttnParams(a);
  c.norm_per_layer = LayerNormParams(a);
  c.dense_mlp_per_layer = MlpParams(a, a.Ffn());
  if (a.IsMoe()) {
    c.expert_per_layer = a.experts * MlpParams(a, a.MoeFfn());
    c.shared_expert_per_layer = a.shared_experts * MlpParams(a, a.MoeFfn());
    c.router_per_layer = h * a.experts + (a.router_bias ? a.experts : 0);
  }
  const int64_t dense_layers = a.layers - a.MoeLayers();
  const int64_t moe_layer =
      c.attn_per_layer + c.norm_per_layer + c.expert_per_layer + c.shared_expert_per_layer +
      c.router_per_layer;
  const int64_t dense_layer = c.attn_per_layer + c.norm_per_layer + c.dense_mlp_per_layer;
  const int64_t outside = c.embedding + c.lm_head + c.final_norm;
  c.total = outside + dense_layers * dense_layer + a.MoeLayers() * moe_layer;
  const int64_t active_experts = a.IsMoe() ? a.experts_per_token * MlpParams(a, a.MoeFfn()) : 0;
  c.active = c.total - a.MoeLayers() * (c.expert_per_layer - active_experts);

  if (a.params_override > 0) {
    // A raw count: keep the synthesized shape's split but rescale the layers to hit the count.
    const auto target = static_cast<int64_t>(std::llround(a.params_override));
    const int64_t per_layer = std::max<int64_t>(0, (target - outside) / std::max<int64_t>(1, a.layers));
    const int64_t shape_layer = std::max<int64_t>(1, dense_layer);
    c.attn_per_layer = per_layer * c.attn_per_layer / shape_layer;
    c.norm_per_layer = per_layer * c.norm_per_layer / shape_layer;
    c.dense_mlp_per_layer = per_layer - c.attn_per_layer - c.norm_per_layer;
    c.total = target;
    c.active = target;
  }
  return c;
}

bool IsKnownLoraTarget(const std::string& n) {
  return n == "q_proj" || n == "k_proj" || n == "v_proj" || n == "o_proj" || n == "gate_proj" ||
         n == "up_proj" || n == "down_proj" || n == "all-linear" || n == "q_a_proj" || n == "q_b_proj" ||
         n == "kv_a_proj_with_mqa" || n == "kv_b_proj";
}

int64_t CountLoraParams(const Arch& a, const LoraSpec& lora) {
  // A LoRA pair on a d_in x d_out matrix adds r * (d_in + d_out) parameters (Hu et al. 2021 §4).
  const int64_t r = lora.rank;
  const int64_t h = a.hidden;
  auto has = [&](const std::string& t) {
    return std::find(lora.targets.begin(), lora.targets.end(), t) != lora.targets.end() ||
           std::find(lora.targets.begin(), lora.targets.end(), "all-linear") != lora.targets.end();
  };
  int64_t per_layer = 0;
  if (a.IsMla()) {
    // DeepSeek module names; PEFT adapts only the modules that exist (no k_proj/v_proj in MLA).
    if (a.q_lora_rank == 0 && has("q_proj")) per_layer += r * (h + a.QDim());
    if (a.q_lora_rank > 0 && has("q_a_proj")) per_layer += r * (h + a.q_lora_rank);
    if (a.q_lora_rank > 0 && has("q_b_proj")) per_layer += r * (a.q_lora_rank + a.QDim());
    if (has("kv_a_proj_with_mqa")) per_layer += r * (h + a.kv_lora_rank + a.qk_rope_head_dim);
    if (has("kv_b_proj")) per_layer += r * (a.kv_lora_rank + a.heads * (a.qk_nope_head_dim + a.v_head_dim));
  } else {
    if (has("q_proj")) per_layer += r * (h + a.QDim());
    if (has("k_proj")) per_layer += r * (h + a.KvDim());
    if (has("v_proj")) per_layer += r * (h + a.VDim());
  }
  if (has("o_proj")) per_layer += r * (a.ODim() + h);
  // MLP adapters: per expert for MoE layers (PEFT wraps every expert's linear).
  const int64_t dense_layers = a.layers - a.MoeLayers();
  auto mlp = [&](int64_t ffn) {
    int64_t n = 0;
    if (has("gate_proj") && a.GatedMlp()) n += r * (h + ffn);
    if (has("up_proj")) n += r * (h + ffn);
    if (has("down_proj")) n += r * (ffn + h);
    return n;
  };
  const int64_t experts_per_moe_layer = a.experts + a.shared_experts;
  return a.layers * per_layer + dense_layers * mlp(a.Ffn()) +
         a.MoeLayers() * experts_per_moe_layer * mlp(a.MoeFfn());
}

Status ValidateArch(const Arch& a, const Location& where) {
  auto bad = [&](const std::string& key, const std::string& why) {
    Location l = where;
    l.key = where.key.empty() ? key : where.key + "." + key;
    return Status::BadInput(l, why);
  };
  if (a.params_override > 0) {
    if (!std::isfinite(a.params_override) || a.params_override > 1e15)
      return bad("params", "must be a finite count below 1e15");
    return Status::Ok();
  }
  if (a.layers <= 0) return bad("layers", "must be > 0");
  if (a.hidden <= 0) return bad("hidden", "must be > 0");
  if (a.heads <= 0) return bad("heads", "must be > 0");
  if (a.vocab <= 0) return bad("vocab", "must be > 0");
  if (a.kv_heads < 0) return bad("kv_heads", "must be >= 0");
  if (a.head_dim < 0) return bad("head_dim", "must be >= 0");
  if (a.ffn_hidden < 0) return bad("ffn_hidden", "must be >= 0");
  if (a.norms_per_layer < 0 || a.norms_per_layer > 8) return bad("norms_per_layer", "must be in 0..8");
  for (int64_t v : {a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim})
    if (v < 0) return bad("mla", "latent ranks and head dims must be >= 0");
  if (a.IsMla() && (a.HeadDim() <= 0 || a.v_head_dim <= 0))
    return bad("mla", "multi-head latent attention needs qk_nope_head_dim + qk_rope_head_dim > 0 and v_head_dim > 0");
  if (!a.IsMla() && a.head_dim == 0 && a.hidden % a.heads != 0)
    return bad("heads", "must divide hidden (" + std::to_string(a.hidden) + ") unless head_dim is set");
  if (a.KvHeads() > a.heads || a.heads % a.KvHeads() != 0)
    return bad("kv_heads", "must divide heads (" + std::to_string(a.heads) + ")");
  if (a.GatedMlp() && a.ffn_hidden == 0)
    return bad("ffn_hidden", "is required for a gated (swiglu/geglu) MLP");
  if (a.experts < 0) return bad("experts", "must be >= 0");
  if (a.IsMoe()) {
    if (a.experts_per_token <= 0 || a.experts_per_token > a.experts)
      return bad("experts_per_token", "must be in 1..experts");
    if (a.dense_layers < 0 || a.dense_layers > a.layers)
      return bad("dense_layers", "must be in 0..layers");
  }
  if (a.position == PositionKind::kLearned && a.max_positions <= 0)
    return bad("max_positions", "must be > 0 with learned positions");
  // Guard against overflow in counts: keep every dimension in a sane range.
  const int64_t kMax = int64_t{1} << 24;
  for (int64_t v : {a.layers, a.hidden, a.heads, a.vocab, a.Ffn(), a.MoeFfn(), a.experts, a.max_positions, a.HeadDim(),
                    a.VHeadDim(), a.q_lora_rank, a.kv_lora_rank})
    if (v > kMax) return bad("shape", "dimension " + std::to_string(v) + " is beyond 2^24");
  return Status::Ok();
}

Arch ArchFromParamCount(double params) {
  // Llama-like aspect ratio: layers = hidden / 128 and 12 * layers * hidden^2 ≈ params,
  // so hidden ≈ (128 * params / 12)^(1/3), rounded to a multiple of 128 (docs/model/memory.md §1.3).
  Arch a;
  a.name = "params";
  double h = std::cbrt(128.0 * params / 12.0);
  a.hidden = std::max<int64_t>(128, static_cast<int64_t>(std::llround(h / 128.0)) * 128);
  a.layers = std::max<int64_t>(1, std::llround(params / (12.0 * a.hidden * a.hidden)));
  a.heads = a.hidden / 128;
  a.kv_heads = a.heads;
  a.ffn_hidden = 4 * a.hidden;
  a.mlp = MlpKind::kGelu;
  a.vocab = 32000;
  a.params_override = params;
  return a;
}

std::string ToString(MlpKind k) {
  switch (k) {
    case MlpKind::kGelu: return "gelu";
    case MlpKind::kSwiGlu: return "swiglu";
    case MlpKind::kGeGlu: return "geglu";
  }
  return "swiglu";
}
std::string ToString(NormKind k) { return k == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"; }
std::string ToString(PositionKind k) {
  switch (k) {
    case PositionKind::kLearned: return "learned";
    case PositionKind::kRotary: return "rotary";
    case PositionKind::kAlibi: return "alibi";
  }
  return "rotary";
}

}  // namespace gpuplan
