// Parameter counts from the architecture. Mirrors docs/model/memory.md §1 one-to-one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <regex>

#include <fnmatch.h>

#include "gpuplan/arch.h"
#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

// Every count is summed in 128 bits: ValidateArch bounds each dimension by 2^24 and a term has at
// most five of them (layers x experts x hidden x ffn x 3), far inside 2^127, so the sums below are
// exact for any shape, accepted or not; only accepted shapes (total <= kMaxParamCount) are narrowed.
using Wide = __int128;

Wide NormParams(const Arch& a) {
  // LayerNorm: gamma (+ beta); RMSNorm: gamma only.
  return Wide{a.hidden} * ((a.norm == NormKind::kLayerNorm && a.norm_bias) ? 2 : 1);
}

Wide MlpParams(const Arch& a, int64_t ffn) {
  const Wide matrices = Wide{a.MlpMatrices()} * a.hidden * ffn;
  // Biases: one per output feature of each matrix (the up/gate matrices output ffn, down outputs h).
  const Wide biases = a.linear_bias ? Wide{a.MlpMatrices() - 1} * ffn + a.hidden : 0;
  return matrices + biases;
}

// §1.1 DeepSeek-V3.2's lightning indexer (DeepSeek-V3.2-Exp report §2.1): its queries from the q
// latent (q_lora_rank x heads·d), one shared key (h x d) with a LayerNorm (weight + bias), and a
// per-head weight (h x heads).
Wide IndexerParams(const Arch& a) {
  if (a.index_heads == 0) return 0;
  const Wide q_in = a.q_lora_rank > 0 ? a.q_lora_rank : a.hidden;
  return q_in * a.index_heads * a.index_head_dim + Wide{a.hidden} * a.index_head_dim + 2 * Wide{a.index_head_dim} +
         Wide{a.hidden} * a.index_heads;
}

// §1.1 attention matrices (+ biases). Standard: W_q (h x q), W_k (h x k), W_v (h x v), W_o (o x h).
Wide AttnParams(const Arch& a) {
  const Wide h = a.hidden;
  if (a.IsMla()) {
    // MLA (DeepSeek-V2 §2.1): q straight from h or through a rank-q_lora bottleneck; one shared
    // down-projection to the kv latent plus the shared rotary key; up-projection of the latent to
    // every head's k_nope and v; W_o from the heads' v.
    const Wide q = a.q_lora_rank > 0 ? h * a.q_lora_rank + Wide{a.q_lora_rank} * a.QDim() : h * a.QDim();
    const Wide kv_down = h * (Wide{a.kv_lora_rank} + a.qk_rope_head_dim);
    const Wide kv_up = Wide{a.kv_lora_rank} * a.heads * (Wide{a.qk_nope_head_dim} + a.v_head_dim);
    // attention_bias puts biases on q_a_proj, kv_a_proj_with_mqa and o_proj only.
    const Wide bias =
        (a.linear_bias || a.qkv_bias) ? Wide{a.q_lora_rank} + a.kv_lora_rank + a.qk_rope_head_dim + h : 0;
    return q + kv_down + kv_up + Wide{a.ODim()} * h + bias + IndexerParams(a);
  }
  Wide n = h * a.QDim() + h * a.KvDim() + h * a.VDim() + Wide{a.ODim()} * h;
  if (a.linear_bias) {
    n += Wide{a.QDim()} + a.KvDim() + a.VDim() + h;
  } else if (a.qkv_bias) {
    n += Wide{a.QDim()} + a.KvDim() + a.VDim();
  }
  if (a.attn_sinks) n += a.heads;  // gpt-oss: one learned sink logit per head
  return n;
}

// §1.1 norms of one layer: norms_per_layer hidden-sized norms, q/k norms of head_dim, MLA's
// RMSNorms on the q and kv latents.
Wide LayerNormParams(const Arch& a) {
  Wide n = Wide{a.norms_per_layer} * NormParams(a);
  if (a.qk_norm) n += a.qk_norm_full_width ? Wide{a.QDim()} + a.KvDim() : Wide{2} * a.HeadDim();
  if (a.IsMla()) n += Wide{a.kv_lora_rank} + a.q_lora_rank;
  return n;
}

// ParamCounts, in 128 bits.
struct WideCounts {
  Wide embedding = 0, lm_head = 0, final_norm = 0, attn_per_layer = 0, norm_per_layer = 0, dense_mlp_per_layer = 0,
       expert_per_layer = 0, shared_expert_per_layer = 0, router_per_layer = 0, dense_layer = 0, moe_layer = 0,
       outside = 0, mtp = 0, vision = 0, total = 0, active = 0;
};

// §1.1 one multi-token-prediction module: a decoder layer of the model's last kind, the projection
// of [embedding; hidden] (2h x h) and three norms (DeepSeek: enorm, hnorm, shared_head.norm; MiMo:
// token, hidden and final norms), plus the embedding and head copies DeepSeek-V3's checkpoint stores.
Wide MtpModuleParams(const Arch& a, const WideCounts& c) {
  const Wide h = a.hidden;
  const Wide layer = a.MoeLayers() > 0 ? c.moe_layer : c.dense_layer;
  return layer + 2 * h * h + 3 * NormParams(a) + (a.mtp_own_embedding ? 2 * Wide{a.vocab} * h : 0);
}

WideCounts CountWide(const Arch& a) {
  WideCounts c;
  const Wide h = a.hidden;
  c.embedding = Wide{a.vocab} * h + (a.position == PositionKind::kLearned ? Wide{a.max_positions} * h : 0);
  c.lm_head = a.tied_embeddings ? 0 : Wide{a.vocab} * h;
  c.final_norm = NormParams(a);
  c.attn_per_layer = AttnParams(a);
  c.norm_per_layer = LayerNormParams(a);
  c.dense_mlp_per_layer = MlpParams(a, a.Ffn());
  Wide active_experts = 0;
  if (a.IsMoe()) {
    const Wide expert = MlpParams(a, a.MoeFfn());
    c.expert_per_layer = Wide{a.experts} * expert;
    c.shared_expert_per_layer = Wide{a.shared_experts} *
                                    (a.shared_expert_ffn > 0 ? MlpParams(a, a.shared_expert_ffn) : expert) +
                                (a.shared_expert_gate ? h : 0);
    c.router_per_layer = h * a.experts + (a.router_bias ? a.experts : 0);
    active_experts = Wide{a.experts_per_token} * expert;
  }
  const Wide dense_layers = Wide{a.layers} - a.MoeLayers();
  c.moe_layer = c.attn_per_layer + c.norm_per_layer + c.expert_per_layer + c.shared_expert_per_layer +
                c.router_per_layer;
  c.dense_layer = c.attn_per_layer + c.norm_per_layer + c.dense_mlp_per_layer;
  c.outside = c.embedding + c.lm_head + c.final_norm;
  const Wide idle_experts = c.expert_per_layer - active_experts;  // per MoE layer, per token
  c.mtp = Wide{a.mtp_layers} * MtpModuleParams(a, c);
  c.vision = a.include_vision ? a.vision_params : 0;
  c.total = c.outside + dense_layers * c.dense_layer + Wide{a.MoeLayers()} * c.moe_layer + c.mtp + c.vision;
  c.active = c.total - (Wide{a.MoeLayers()} + (a.MoeLayers() > 0 ? a.mtp_layers : 0)) * idle_experts;
  return c;
}

// Exact for every accepted shape; a shape ValidateArch refuses saturates instead of wrapping.
int64_t Narrow(Wide v) {
  constexpr Wide kMax = std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v > kMax ? kMax : v < -kMax ? -kMax : v);
}

std::string Count(Wide v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(v));
  return buf;
}

}  // namespace

ParamCounts CountParams(const Arch& a) {
  const WideCounts w = CountWide(a);
  ParamCounts c;
  c.embedding = Narrow(w.embedding);
  c.lm_head = Narrow(w.lm_head);
  c.final_norm = Narrow(w.final_norm);
  c.attn_per_layer = Narrow(w.attn_per_layer);
  c.norm_per_layer = Narrow(w.norm_per_layer);
  c.dense_mlp_per_layer = Narrow(w.dense_mlp_per_layer);
  c.expert_per_layer = Narrow(w.expert_per_layer);
  c.shared_expert_per_layer = Narrow(w.shared_expert_per_layer);
  c.router_per_layer = Narrow(w.router_per_layer);
  c.mtp = Narrow(w.mtp);
  c.vision = Narrow(w.vision);
  c.total = Narrow(w.total);
  c.active = Narrow(w.active);

  if (a.params_override > 0) {
    // A raw count: keep the synthesized shape's split but rescale the layers to hit the count.
    const double clamped = std::min(a.params_override, static_cast<double>(kMaxParamCount));
    const Wide target = std::llround(clamped);
    const Wide per_layer = std::max<Wide>(0, (target - w.outside) / std::max<int64_t>(1, a.layers));
    const Wide shape_layer = std::max<Wide>(1, w.dense_layer);
    const Wide attn = per_layer * w.attn_per_layer / shape_layer;
    const Wide norm = per_layer * w.norm_per_layer / shape_layer;
    c.attn_per_layer = Narrow(attn);
    c.norm_per_layer = Narrow(norm);
    c.dense_mlp_per_layer = Narrow(per_layer - attn - norm);
    c.total = Narrow(target);
    c.active = Narrow(target);
  }
  return c;
}

// compute.md §1: the keys one query attends in a layer with a window of w tokens, at length s.
// Not causal (the model-FLOPs convention): s for full attention, min(s, w) with a window. Causal
// (what a flash kernel computes, averaged over the positions, continuous form): s/2 for full
// attention; a sliding window w - w²/(2s) once s > w; chunks of w: each full chunk's w/2, weighted
// by its tokens, and the last partial chunk's r/2.
static double KeysPerQuery(double s, double w, bool chunked, bool causal) {
  if (w <= 0 || s <= w) return causal ? s / 2 : s;
  if (!causal) return w;
  if (!chunked) return w - w * w / (2 * s);
  const double full_chunks = std::floor(s / w), rest = s - full_chunks * w;
  return (full_chunks * w * w / 2 + rest * rest / 2) / s;
}

double AttendedKeysPerQuery(const Arch& a, double seq_len, bool causal) {
  const double full = KeysPerQuery(seq_len, 0, false, causal);
  if (a.attn_window <= 0 || a.windowed_layers <= 0 || a.layers <= 0) return full;
  const double windowed = KeysPerQuery(seq_len, static_cast<double>(a.attn_window), a.attn_chunked, causal);
  const double share = static_cast<double>(a.windowed_layers) / static_cast<double>(a.layers);
  return share * windowed + (1 - share) * full;
}

namespace {

// FT§0 one adaptable linear of a layer under one framework's name. `module` is gpuplan's name
// (the Hugging Face projection, or the fused linear_qkv / linear_fc1 of Megatron-Core), `scheme`
// the framework whose names globs and regular expressions are matched against ("" = exact only),
// `path` the module's parent in that framework's model (for PEFT-style regular expressions).
struct LoraName {
  const char* module;
  const char* name;
  const char* scheme;
  const char* path;
};

constexpr const char* kHfAttn = "model.layers.0.self_attn.";
constexpr const char* kHfMlp = "model.layers.0.mlp.";
constexpr const char* kTtAttn = "layers.0.attn.";
constexpr const char* kTtMlp = "layers.0.mlp.";
constexpr const char* kMcAttn = "decoder.layers.0.self_attention.";
constexpr const char* kMcMlp = "decoder.layers.0.mlp.";

constexpr LoraName kLoraNames[] = {
    // Hugging Face transformers (Llama, Mistral, Qwen, Gemma; PEFT target_modules) and DeepSeek MLA.
    {"q_proj", "q_proj", "hf", kHfAttn},
    {"k_proj", "k_proj", "hf", kHfAttn},
    {"v_proj", "v_proj", "hf", kHfAttn},
    {"o_proj", "o_proj", "hf", kHfAttn},
    {"gate_proj", "gate_proj", "hf", kHfMlp},
    {"up_proj", "up_proj", "hf", kHfMlp},
    {"down_proj", "down_proj", "hf", kHfMlp},
    {"q_a_proj", "q_a_proj", "hf", kHfAttn},
    {"q_b_proj", "q_b_proj", "hf", kHfAttn},
    {"kv_a_proj_with_mqa", "kv_a_proj_with_mqa", "hf", kHfAttn},
    {"kv_b_proj", "kv_b_proj", "hf", kHfAttn},
    // torchtune (lora_attn_modules; apply_lora_to_mlp adapts w1 = gate, w2 = down, w3 = up).
    {"q_proj", "q_proj", "torchtune", kTtAttn},
    {"k_proj", "k_proj", "torchtune", kTtAttn},
    {"v_proj", "v_proj", "torchtune", kTtAttn},
    {"o_proj", "output_proj", "torchtune", kTtAttn},
    {"gate_proj", "w1", "torchtune", kTtMlp},
    {"down_proj", "w2", "torchtune", kTtMlp},
    {"up_proj", "w3", "torchtune", kTtMlp},
    // Megatron-Core / NeMo / Megatron-Bridge LoRA target_modules: q, k, v in one linear; gate and up in one.
    {"linear_qkv", "linear_qkv", "megatron", kMcAttn},
    {"o_proj", "linear_proj", "megatron", kMcAttn},
    {"linear_fc1", "linear_fc1", "megatron", kMcMlp},
    {"down_proj", "linear_fc2", "megatron", kMcMlp},
    // Other Hugging Face families' module names (exact names only): fused q/k/v (Phi-3, GPT-NeoX,
    // Falcon, Baichuan, MPT, GPT-2), fused or plain first MLP matrix, output projections.
    {"linear_qkv", "qkv_proj", "", ""},
    {"linear_qkv", "query_key_value", "", ""},
    {"linear_qkv", "w_pack", "", ""},
    {"linear_qkv", "wqkv", "", ""},
    {"linear_qkv", "c_attn", "", ""},
    {"linear_fc1", "gate_up_proj", "", ""},
    {"linear_fc1", "dense_h_to_4h", "", ""},
    {"linear_fc1", "c_fc", "", ""},
    {"linear_fc1", "fc1", "", ""},
    {"down_proj", "dense_4h_to_h", "", ""},
    {"down_proj", "fc2", "", ""},
    {"down_proj", "c_proj", "", ""},  // GPT-2's c_proj is both the attention output and the MLP down
    {"o_proj", "c_proj", "", ""},
    {"o_proj", "dense", "", ""},
    {"o_proj", "out_proj", "", ""},
};

// gpuplan's module names in the order they are stored.
constexpr const char* kLoraModules[] = {"q_proj",   "k_proj",    "v_proj",   "linear_qkv", "o_proj",
                                        "gate_proj", "up_proj",  "linear_fc1", "down_proj", "q_a_proj",
                                        "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "all-linear"};

bool IsRegexTarget(const std::string& t) {
  return t.find_first_of("\\()|[]^$+{}") != std::string::npos || t.find(".*") != std::string::npos ||
         t.find(".+") != std::string::npos;
}

bool Has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The modules one target names. A glob or regular expression is matched against each
// framework's names (and, for a regular expression, the module's path in that framework's model,
// PEFT's re.fullmatch); when it names both separate and fused forms of the same projections (*
// matches q_proj and linear_qkv) the separate ones are meant. Throws std::regex_error.
std::vector<std::string> MatchTarget(const std::string& target) {
  std::vector<std::string> out;
  const std::string t = Lower(target);
  if (t == "all-linear" || t == "all_linear") return {"all-linear"};
  const bool regex = IsRegexTarget(t), glob = !regex && t.find_first_of("*?") != std::string::npos;
  std::regex re;
  if (regex) re = std::regex(t, std::regex::ECMAScript | std::regex::icase);
  for (const auto& n : kLoraNames) {
    bool hit = false;
    if (!regex && !glob) hit = t == n.name;
    else if (n.scheme[0] == '\0') hit = false;
    else if (glob) hit = fnmatch(t.c_str(), n.name, 0) == 0;
    else hit = std::regex_match(std::string(n.name), re) || std::regex_match(std::string(n.path) + n.name, re);
    if (hit && !Has(out, n.module)) out.push_back(n.module);
  }
  if (regex || glob) {
    auto drop = [&](const char* fused, std::initializer_list<const char*> parts) {
      for (const char* p : parts)
        if (Has(out, p)) out.erase(std::remove(out.begin(), out.end(), fused), out.end());
    };
    drop("linear_qkv", {"q_proj", "k_proj", "v_proj"});
    drop("linear_fc1", {"gate_proj", "up_proj"});
  }
  return out;
}

}  // namespace

bool IsKnownLoraTarget(const std::string& n) {
  return std::any_of(std::begin(kLoraModules), std::end(kLoraModules), [&](const char* m) { return n == m; });
}

bool LoraTargets(const LoraSpec& lora, const std::string& name) {
  if (Has(lora.targets, name)) return true;
  return name != "linear_qkv" && name != "linear_fc1" && Has(lora.targets, "all-linear");
}

Result<std::vector<std::string>> ResolveLoraTargets(const std::vector<std::string>& names, const Location& where) {
  std::vector<std::string> modules;
  for (const auto& name : names) {
    std::vector<std::string> m;
    try {
      m = MatchTarget(name);
    } catch (const std::regex_error& e) {
      return Status::BadInput(where, "LoRA target '" + name + "' is not a valid regular expression (" + e.what() + ")");
    }
    if (m.empty())
      return Status::BadInput(where, "unknown LoRA target '" + name + "' (Hugging Face q_proj,k_proj,v_proj,o_proj,gate_proj,"
                                     "up_proj,down_proj; torchtune output_proj,w1,w2,w3; Megatron linear_qkv,linear_proj,"
                                     "linear_fc1,linear_fc2; a glob like *_proj; a regular expression; or all-linear)");
    for (const auto& x : m)
      if (!Has(modules, x)) modules.push_back(x);
  }
  for (const auto& [fused, parts] : {std::pair<const char*, const char*>{"linear_qkv", "q_proj,k_proj,v_proj"},
                                     {"linear_fc1", "gate_proj,up_proj"}})
    for (const auto& p : SplitList(parts + std::string(",all-linear")))
      if (Has(modules, fused) && Has(modules, p))
        return Status::BadInput(where, std::string("LoRA targets name the same projections twice: ") + fused +
                                           " (fused) and " + p + " (separate); use one framework's names");
  std::vector<std::string> ordered;
  for (const char* m : kLoraModules)
    if (Has(modules, m)) ordered.push_back(m);
  return ordered;
}

int64_t CountLoraParams(const Arch& a, const LoraSpec& lora) {
  // A LoRA pair on a d_in x d_out matrix adds r * (d_in + d_out) parameters (Hu et al. 2021 §4).
  const Wide r = lora.rank;
  const int64_t h = a.hidden;
  auto has = [&](const char* t) { return LoraTargets(lora, t); };
  Wide per_layer = 0;
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
    // FT§0 one adapter on the fused q/k/v linear: one A of h x r, one B of r x (q + k + v).
    if (has("linear_qkv")) per_layer += r * (h + a.QDim() + a.KvDim() + a.VDim());
  }
  if (has("o_proj")) per_layer += r * (a.ODim() + h);
  // MLP adapters: per expert for MoE layers (PEFT wraps every expert's linear).
  const int64_t dense_layers = a.layers - a.MoeLayers();
  auto mlp = [&](int64_t ffn) {
    Wide n = 0;
    if (has("gate_proj") && a.GatedMlp()) n += r * (h + ffn);
    if (has("up_proj")) n += r * (h + ffn);
    // FT§0 the fused first MLP linear (gate and up of a gated MLP, up otherwise).
    if (has("linear_fc1")) n += r * (h + Wide{a.GatedMlp() ? 2 : 1} * ffn);
    if (has("down_proj")) n += r * (ffn + h);
    return n;
  };
  const int64_t experts_per_moe_layer = a.experts + a.shared_experts;
  return Narrow(Wide{a.layers} * per_layer + Wide{dense_layers} * mlp(a.Ffn()) +
                Wide{a.MoeLayers()} * experts_per_moe_layer * mlp(a.MoeFfn()));
}

// The rotary base, norm epsilon and rope scaling read from a preset, a config.json or job keys.
static Status ValidateRope(const Arch& a) {
  auto bad = [](const char* key, const std::string& why) { return Status::BadInput({"", 0, key}, why); };
  if (!std::isfinite(a.rope_theta) || a.rope_theta <= 1 || a.rope_theta > 1e12) return bad("rope_theta", "must be in (1, 1e12]");
  if (!std::isfinite(a.norm_eps) || a.norm_eps <= 0 || a.norm_eps > 0.1) return bad("norm_eps", "must be in (0, 0.1]");
  if (a.rope_scaling == RopeScaling::kNone) return Status::Ok();
  if (!std::isfinite(a.rope_factor) || a.rope_factor < 1 || a.rope_factor > 1e4)
    return bad("rope_factor", "must be in 1..1e4 with rope_scaling " + ToString(a.rope_scaling));
  if (a.rope_original_max_positions < 0 || a.rope_original_max_positions > (int64_t{1} << 24))
    return bad("rope_original_max_positions", "must be in 0..2^24");
  if (a.rope_scaling != RopeScaling::kLlama3) return Status::Ok();
  // Llama 3.1 (transformers _compute_llama3_parameters): low < high, both > 0, original positions given.
  // Equal factors (Llama 4 Scout: 1 and 1) leave no smoothed band; transformers only warns.
  if (!(a.rope_low_freq_factor > 0) || !(a.rope_high_freq_factor >= a.rope_low_freq_factor) || !std::isfinite(a.rope_high_freq_factor))
    return bad("rope_high_freq_factor", "llama3 rope scaling needs 0 < rope_low_freq_factor <= rope_high_freq_factor");
  if (a.rope_original_max_positions <= 0) return bad("rope_original_max_positions", "must be > 0 with llama3 rope scaling");
  return Status::Ok();
}

// Every dimension in a sane range (so that CountWide is exact), then the count itself.
static Status ValidateSizes(const Arch& a, const Location& where) {
  auto bad = [&](const std::string& key, const std::string& why) {
    Location l = where;
    l.key = where.key.empty() ? key : where.key + "." + key;
    return Status::BadInput(l, why);
  };
  const int64_t kMax = int64_t{1} << 24;
  const std::pair<const char*, int64_t> dims[] = {
      {"layers", a.layers},           {"hidden", a.hidden},
      {"heads", a.heads},             {"kv_heads", a.kv_heads},
      {"head_dim", a.HeadDim()},      {"v_head_dim", a.VHeadDim()},
      {"ffn_hidden", a.Ffn()},        {"moe_ffn_hidden", a.MoeFfn()},
      {"vocab", a.vocab},             {"max_positions", a.max_positions},
      {"experts", a.experts},         {"experts_per_token", a.experts_per_token},
      {"shared_experts", a.shared_experts}, {"q_lora_rank", a.q_lora_rank},
      {"kv_lora_rank", a.kv_lora_rank}, {"qk_nope_head_dim", a.qk_nope_head_dim},
      {"qk_rope_head_dim", a.qk_rope_head_dim}, {"shared_expert_ffn", a.shared_expert_ffn},
      {"index_heads", a.index_heads},   {"index_head_dim", a.index_head_dim},
      {"attn_window", a.attn_window}};
  for (const auto& [key, v] : dims)
    if (v > kMax) return bad(key, std::to_string(v) + " is beyond 2^24 (" + std::to_string(kMax) + ")");
  const WideCounts w = CountWide(a);
  if (w.total > kMaxParamCount) {
    // Named after the product that made it: the vocabulary tables or the layers.
    const Wide vocab_tables = w.embedding + w.lm_head;
    const Wide in_layers = w.total - w.outside;
    if (vocab_tables >= in_layers)
      return bad(a.position == PositionKind::kLearned && Wide{a.max_positions} > a.vocab ? "max_positions" : "vocab",
                 "the embedding tables alone hold " + Count(vocab_tables) + " parameters; the limit is " +
                     Count(kMaxParamCount));
    const Wide per_layer = std::max(w.dense_layer, w.moe_layer);
    if (per_layer > kMaxParamCount) {
      // One layer alone is beyond the limit: its biggest part names the key.
      const char* key = w.expert_per_layer >= std::max(w.attn_per_layer, w.dense_mlp_per_layer) ? "experts"
                        : w.dense_mlp_per_layer >= w.attn_per_layer                           ? "ffn_hidden"
                                                                                               : "hidden";
      return bad(key, "one layer holds " + Count(per_layer) + " parameters; the limit is " + Count(kMaxParamCount));
    }
    return bad("layers", std::to_string(a.layers) + " layers of up to " +
                             Count(std::max(w.dense_layer, w.moe_layer)) + " parameters give " + Count(w.total) +
                             " parameters; the limit is " + Count(kMaxParamCount));
  }
  return Status::Ok();
}

Status ValidateArch(const Arch& a, const Location& where) {
  auto bad = [&](const std::string& key, const std::string& why) {
    Location l = where;
    l.key = where.key.empty() ? key : where.key + "." + key;
    return Status::BadInput(l, why);
  };
  if (a.params_override > 0) {
    if (!std::isfinite(a.params_override) || a.params_override > static_cast<double>(kMaxParamCount))
      return bad("params", "must be a finite count of at most 1e15");
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
  if (a.mtp_layers < 0 || a.mtp_layers > 64) return bad("mtp_layers", "must be in 0..64");
  if (a.vision_params < 0) return bad("vision_params", "must be >= 0");
  if (a.attn_window < 0) return bad("attn_window", "must be >= 0");
  if (a.windowed_layers < 0 || a.windowed_layers > a.layers) return bad("windowed_layers", "must be in 0..layers");
  if (a.shared_expert_ffn < 0) return bad("shared_expert_ffn", "must be >= 0");
  if (a.index_heads < 0 || a.index_head_dim < 0 || (a.index_heads > 0) != (a.index_head_dim > 0))
    return bad("index_heads", "the indexer needs both index_heads and index_head_dim > 0, or neither");
  if (a.position == PositionKind::kLearned && a.max_positions <= 0)
    return bad("max_positions", "must be > 0 with learned positions");
  if (Status st = ValidateRope(a); !st.ok()) return bad(st.location().key, st.reason());
  return ValidateSizes(a, where);
}

Arch ArchFromParamCount(double params) {
  // Llama-like aspect ratio: layers = hidden / 128 and 12 * layers * hidden^2 ≈ params,
  // so hidden ≈ (128 * params / 12)^(1/3), rounded to a multiple of 128 (docs/model/memory.md §1.3).
  Arch a;
  a.name = "params";
  // The shape from a count in the accepted range (ValidateArch refuses params_override outside it),
  // so that no cast below sees an out-of-range double.
  const double shaped = std::clamp(std::isfinite(params) ? params : 1e3, 1e3, static_cast<double>(kMaxParamCount));
  double h = std::cbrt(128.0 * shaped / 12.0);
  a.hidden = std::max<int64_t>(128, static_cast<int64_t>(std::llround(h / 128.0)) * 128);
  a.layers = std::max<int64_t>(1, std::llround(shaped / (12.0 * a.hidden * a.hidden)));
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
std::string ToString(RopeScaling k) {
  switch (k) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLlama3: return "llama3";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kDynamic: return "dynamic";
    case RopeScaling::kYarn: return "yarn";
    case RopeScaling::kLongRope: return "longrope";
  }
  return "none";
}

Result<RopeScaling> ParseRopeScaling(const std::string& s, const Location& where) {
  for (RopeScaling k : {RopeScaling::kNone, RopeScaling::kLlama3, RopeScaling::kLinear, RopeScaling::kDynamic,
                        RopeScaling::kYarn, RopeScaling::kLongRope})
    if (s == ToString(k)) return k;
  if (s == "default") return RopeScaling::kNone;  // transformers' name for plain rotary
  if (s == "su") return RopeScaling::kLongRope;    // Phi-3's first name for longrope
  return Status::BadInput(where, "unknown rope scaling '" + s + "' (none, llama3, linear, dynamic, yarn, longrope)");
}

std::string ToString(PositionKind k) {
  switch (k) {
    case PositionKind::kLearned: return "learned";
    case PositionKind::kRotary: return "rotary";
    case PositionKind::kAlibi: return "alibi";
  }
  return "rotary";
}

}  // namespace gpuplan
