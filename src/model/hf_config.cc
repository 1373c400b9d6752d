// Hugging Face config.json -> Arch. One reader per model family, each mirroring the family's
// modelling code in transformers (docs/model/memory.md §1.1). yaml-cpp reads the JSON so that
// errors carry a line number.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include "gpuplan/arch.h"
#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"

namespace gpuplan {

namespace {

struct Reader {
  const YAML::Node root;
  const std::string& file;
  Location At(const std::string& key) const {
    const YAML::Node n = root[key];
    return {file, n && n.Mark().line >= 0 ? n.Mark().line + 1 : 0, key};
  }
  bool Has(const std::string& key) const { return root[key] && !root[key].IsNull(); }
  // A whole number in [min, 1e9] through the project's number parser (decimal, finite: no
  // Infinity/NaN as Python's json writes them, no hex).
  Result<int64_t> Int(const std::string& key, int64_t min = 0) const {
    if (!Has(key)) return Status::BadInput({file, 0, key}, "missing in config.json");
    if (!root[key].IsScalar()) return Status::BadInput(At(key), "expected a number");
    return ParseInteger(root[key].Scalar(), At(key), min, 1'000'000'000);
  }
  // A finite decimal (rope_theta, rms_norm_eps), or the fallback when missing or null.
  Result<double> RealOr(const std::string& key, double fallback) const {
    if (!Has(key)) return fallback;
    if (!root[key].IsScalar()) return Status::BadInput(At(key), "expected a number");
    return ParseDecimal(root[key].Scalar(), At(key));
  }
  // A missing key and JSON null (DeepSeek-V2-Lite's "q_lora_rank": null) both give the fallback.
  Result<int64_t> IntOr(const std::string& key, int64_t fallback, int64_t min = 0) const {
    return Has(key) ? Int(key, min) : Result<int64_t>(fallback);
  }
  Result<bool> BoolOr(const std::string& key, bool fallback) const {
    if (!Has(key)) return fallback;
    try {
      return root[key].as<bool>();
    } catch (const YAML::Exception&) {
      return Status::BadInput(At(key), "expected true or false");
    }
  }
  Result<std::string> StrOr(const std::string& key, const std::string& fallback) const {
    if (!Has(key)) return fallback;
    try {
      return root[key].as<std::string>();
    } catch (const YAML::Exception&) {
      return Status::BadInput(At(key), "expected a string");
    }
  }
  Result<std::vector<int64_t>> IntList(const std::string& key) const {
    std::vector<int64_t> out;
    if (!Has(key)) return out;
    if (!root[key].IsSequence()) return Status::BadInput(At(key), "expected a list of layer indices");
    for (const auto& n : root[key]) {
      if (!n.IsScalar()) return Status::BadInput(At(key), "expected a list of layer indices");
      auto v = ParseInteger(n.Scalar(), At(key), 0, 1'000'000'000);
      if (!v.ok()) return v.status();
      out.push_back(*v);
    }
    return out;
  }
};

#define ASSIGN_OR_RETURN(lhs, expr)     \
  do {                                  \
    auto _r = (expr);                   \
    if (!_r.ok()) return _r.status();   \
    lhs = *_r;                          \
  } while (0)

// Llama-style decoders: llama, mistral, mixtral, qwen2, qwen3 (modeling_qwen3.py: q_norm and k_norm
// of head_dim, head_dim its own key) and qwen3_moe.
Status ReadLlamaFamily(const Reader& r, const std::string& type, Arch& a) {
  const bool qwen3 = type == "qwen3" || type == "qwen3_moe";
  ASSIGN_OR_RETURN(a.hidden, r.Int("hidden_size"));
  ASSIGN_OR_RETURN(a.layers, r.Int("num_hidden_layers"));
  ASSIGN_OR_RETURN(a.heads, r.Int("num_attention_heads"));
  // Given, 0 is an error: Arch reads kv_heads 0 as "same as heads", which the file did not say.
  ASSIGN_OR_RETURN(a.kv_heads, r.IntOr("num_key_value_heads", a.heads, 1));
  ASSIGN_OR_RETURN(a.head_dim, r.IntOr("head_dim", qwen3 ? 128 : 0));  // Qwen3Config default 128
  ASSIGN_OR_RETURN(a.ffn_hidden, r.Int("intermediate_size"));
  ASSIGN_OR_RETURN(a.vocab, r.Int("vocab_size"));
  ASSIGN_OR_RETURN(a.tied_embeddings, r.BoolOr("tie_word_embeddings", false));
  a.mlp = MlpKind::kSwiGlu;
  a.norm = NormKind::kRmsNorm;
  a.position = PositionKind::kRotary;
  a.qk_norm = qwen3;
  // Qwen2 always has q/k/v biases (modeling_qwen2.py); Llama and Qwen3 have them with attention_bias.
  bool attention_bias = false;
  ASSIGN_OR_RETURN(attention_bias, r.BoolOr("attention_bias", false));
  a.qkv_bias = type == "qwen2" || attention_bias;
  if (type == "mixtral") {
    ASSIGN_OR_RETURN(a.experts, r.Int("num_local_experts", 1));  // 0 would silently make it dense
    ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
  }
  if (type == "qwen3_moe") {
    // Layer i is MoE unless listed in mlp_only_layers, when (i + 1) % decoder_sparse_step == 0.
    ASSIGN_OR_RETURN(a.experts, r.IntOr("num_experts", 0, 1));  // given: a MoE needs experts
    if (a.experts == 0) return Status::Ok();
    ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
    ASSIGN_OR_RETURN(a.moe_ffn_hidden, r.Int("moe_intermediate_size"));
    int64_t step = 1;
    std::vector<int64_t> mlp_only;
    ASSIGN_OR_RETURN(step, r.IntOr("decoder_sparse_step", 1));
    ASSIGN_OR_RETURN(mlp_only, r.IntList("mlp_only_layers"));
    int64_t moe_layers = 0;
    for (int64_t i = 0; i < a.layers; ++i) {
      const bool listed = std::find(mlp_only.begin(), mlp_only.end(), i) != mlp_only.end();
      if (!listed && step > 0 && (i + 1) % step == 0) ++moe_layers;
    }
    a.dense_layers = a.layers - moe_layers;  // counted exactly; placed first (memory.md §1.2)
  }
  return Status::Ok();
}

// DeepSeek-V2/V3 (modeling_deepseek.py): multi-head latent attention and fine-grained MoE with
// shared experts; layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.
// The multi-token-prediction module (num_nextn_predict_layers) is not counted: transformers does
// not build it and DeepSeek's published 671B for V3 leaves its 14B out.
Status ReadDeepseek(const Reader& r, const std::string& type, Arch& a) {
  ASSIGN_OR_RETURN(a.hidden, r.Int("hidden_size"));
  ASSIGN_OR_RETURN(a.layers, r.Int("num_hidden_layers"));
  ASSIGN_OR_RETURN(a.heads, r.Int("num_attention_heads"));
  ASSIGN_OR_RETURN(a.ffn_hidden, r.Int("intermediate_size"));
  ASSIGN_OR_RETURN(a.vocab, r.Int("vocab_size"));
  ASSIGN_OR_RETURN(a.tied_embeddings, r.BoolOr("tie_word_embeddings", false));
  ASSIGN_OR_RETURN(a.q_lora_rank, r.IntOr("q_lora_rank", 0));
  ASSIGN_OR_RETURN(a.kv_lora_rank, r.Int("kv_lora_rank"));
  ASSIGN_OR_RETURN(a.qk_nope_head_dim, r.Int("qk_nope_head_dim"));
  ASSIGN_OR_RETURN(a.qk_rope_head_dim, r.Int("qk_rope_head_dim"));
  ASSIGN_OR_RETURN(a.v_head_dim, r.Int("v_head_dim"));
  ASSIGN_OR_RETURN(a.qkv_bias, r.BoolOr("attention_bias", false));
  a.kv_heads = a.heads;  // every head gets its own k and v from the shared latent
  a.mlp = MlpKind::kSwiGlu;
  a.norm = NormKind::kRmsNorm;
  a.position = PositionKind::kRotary;
  ASSIGN_OR_RETURN(a.experts, r.IntOr("n_routed_experts", 0, 1));  // null: dense; given: >= 1
  if (a.experts == 0) return Status::Ok();
  ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
  ASSIGN_OR_RETURN(a.shared_experts, r.IntOr("n_shared_experts", 0));
  ASSIGN_OR_RETURN(a.moe_ffn_hidden, r.Int("moe_intermediate_size"));
  int64_t first_dense = 0, freq = 1;
  ASSIGN_OR_RETURN(first_dense, r.IntOr("first_k_dense_replace", 0));
  ASSIGN_OR_RETURN(freq, r.IntOr("moe_layer_freq", 1));
  int64_t moe_layers = 0;
  for (int64_t i = 0; i < a.layers; ++i)
    if (i >= first_dense && freq > 0 && i % freq == 0) ++moe_layers;
  a.dense_layers = a.layers - moe_layers;
  // noaux_tc routing adds e_score_correction_bias per expert (always present in V3).
  std::string topk_method;
  ASSIGN_OR_RETURN(topk_method, r.StrOr("topk_method", type == "deepseek_v3" ? "noaux_tc" : "greedy"));
  a.router_bias = type == "deepseek_v3" || topk_method == "noaux_tc";
  return Status::Ok();
}

// Gemma 1/2/3 (modeling_gemma*.py): head_dim its own key, GeGLU MLP, tied embeddings; Gemma 2
// and 3 add post-attention and post-feedforward norms (4 per layer), Gemma 3 q/k norms. Logit
// soft-capping has no parameters. gemma3_text keys left out of a config take Gemma3TextConfig's
// defaults (the multimodal checkpoints' text_config lists only what differs).
Status ReadGemma(const Reader& r, const std::string& type, Arch& a) {
  const bool g3 = type == "gemma3_text";
  ASSIGN_OR_RETURN(a.hidden, g3 ? r.IntOr("hidden_size", 2304) : r.Int("hidden_size"));
  ASSIGN_OR_RETURN(a.layers, g3 ? r.IntOr("num_hidden_layers", 26) : r.Int("num_hidden_layers"));
  ASSIGN_OR_RETURN(a.heads, g3 ? r.IntOr("num_attention_heads", 8) : r.Int("num_attention_heads"));
  ASSIGN_OR_RETURN(a.kv_heads, r.IntOr("num_key_value_heads", g3 ? 4 : a.heads, 1));
  ASSIGN_OR_RETURN(a.head_dim, r.IntOr("head_dim", 256));
  ASSIGN_OR_RETURN(a.ffn_hidden, g3 ? r.IntOr("intermediate_size", 9216) : r.Int("intermediate_size"));
  ASSIGN_OR_RETURN(a.vocab, g3 ? r.IntOr("vocab_size", 262208) : r.Int("vocab_size"));
  ASSIGN_OR_RETURN(a.tied_embeddings, r.BoolOr("tie_word_embeddings", true));
  bool attention_bias = false;
  ASSIGN_OR_RETURN(attention_bias, r.BoolOr("attention_bias", false));
  a.qkv_bias = attention_bias;
  a.mlp = MlpKind::kGeGlu;
  a.norm = NormKind::kRmsNorm;
  a.position = PositionKind::kRotary;
  a.norms_per_layer = type == "gemma" ? 2 : 4;
  a.qk_norm = g3;
  return Status::Ok();
}

Status ReadGpt2(const Reader& r, Arch& a) {
  ASSIGN_OR_RETURN(a.layers, r.Int("n_layer"));
  ASSIGN_OR_RETURN(a.hidden, r.Int("n_embd"));
  ASSIGN_OR_RETURN(a.heads, r.Int("n_head"));
  ASSIGN_OR_RETURN(a.ffn_hidden, r.IntOr("n_inner", 4 * a.hidden));
  ASSIGN_OR_RETURN(a.vocab, r.Int("vocab_size"));
  ASSIGN_OR_RETURN(a.max_positions, r.IntOr("n_positions", 1024));
  ASSIGN_OR_RETURN(a.tied_embeddings, r.BoolOr("tie_word_embeddings", true));
  a.kv_heads = a.heads;
  a.mlp = MlpKind::kGelu;
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.linear_bias = true;
  a.position = PositionKind::kLearned;
  return Status::Ok();
}

Status ReadGptNeox(const Reader& r, Arch& a) {
  ASSIGN_OR_RETURN(a.layers, r.Int("num_hidden_layers"));
  ASSIGN_OR_RETURN(a.hidden, r.Int("hidden_size"));
  ASSIGN_OR_RETURN(a.heads, r.Int("num_attention_heads"));
  ASSIGN_OR_RETURN(a.ffn_hidden, r.IntOr("intermediate_size", 4 * a.hidden));
  ASSIGN_OR_RETURN(a.vocab, r.Int("vocab_size"));
  ASSIGN_OR_RETURN(a.tied_embeddings, r.BoolOr("tie_word_embeddings", false));
  bool bias = true;
  ASSIGN_OR_RETURN(bias, r.BoolOr("attention_bias", true));
  a.kv_heads = a.heads;
  a.mlp = MlpKind::kGelu;
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.linear_bias = bias;
  a.position = PositionKind::kRotary;
  return Status::Ok();
}

// The defaults transformers uses when a key is left out: rope_theta and the norm epsilon of each
// family's config class (LlamaConfig 10000 / 1e-6, MixtralConfig 1e6 / 1e-5, GPT2Config 1e-5, ...).
struct RopeDefaults {
  double theta;
  double eps;
};
RopeDefaults FamilyRopeDefaults(const std::string& type) {
  if (type == "mixtral") return {1e6, 1e-5};
  if (type == "gpt2" || type == "gpt_neox") return {10000, 1e-5};
  return {10000, 1e-6};  // llama, mistral, qwen2, qwen3(_moe), deepseek_v2/v3, gemma 1/2/3
}

// rope_scaling {rope_type|type, factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}; null, {} and "default" are plain rotary.
Status ReadRopeScaling(const Reader& r, const std::string& key, Arch& a) {
  const YAML::Node n = r.root[key];
  if (!n || n.IsNull() || (n.IsMap() && n.size() == 0)) return Status::Ok();
  if (!n.IsMap()) return Status::BadInput(r.At(key), "expected an object or null");
  const Reader in{n, r.file};
  std::string type;
  ASSIGN_OR_RETURN(type, in.StrOr("rope_type", ""));
  if (type.empty()) ASSIGN_OR_RETURN(type, in.StrOr("type", "default"));
  auto kind = ParseRopeScaling(type, r.At(key));
  if (!kind.ok()) return kind.status();
  a.rope_scaling = *kind;
  if (a.rope_scaling == RopeScaling::kNone) return Status::Ok();
  ASSIGN_OR_RETURN(a.rope_factor, in.RealOr("factor", 0));
  ASSIGN_OR_RETURN(a.rope_low_freq_factor, in.RealOr("low_freq_factor", 0));
  ASSIGN_OR_RETURN(a.rope_high_freq_factor, in.RealOr("high_freq_factor", 0));
  ASSIGN_OR_RETURN(a.rope_original_max_positions, in.IntOr("original_max_position_embeddings", 0));
  return Status::Ok();
}

// rope_theta (gpt_neox: rotary_emb_base), the norm epsilon (rms_norm_eps, layer_norm_eps,
// layer_norm_epsilon) and rope_scaling; transformers 5 nests theta and scaling in rope_parameters.
Status ReadRope(const Reader& top, const std::string& type, Arch& a) {
  const bool nested = top.root["rope_parameters"] && top.root["rope_parameters"].IsMap();
  const Reader rope = nested ? Reader{top.root["rope_parameters"], top.file} : top;
  const RopeDefaults d = FamilyRopeDefaults(type);
  ASSIGN_OR_RETURN(a.rope_theta, rope.RealOr(type == "gpt_neox" ? "rotary_emb_base" : "rope_theta", d.theta));
  const char* eps_key = type == "gpt2" ? "layer_norm_epsilon" : type == "gpt_neox" ? "layer_norm_eps" : "rms_norm_eps";
  ASSIGN_OR_RETURN(a.norm_eps, top.RealOr(eps_key, d.eps));
  // transformers 5: rope_parameters {rope_type, rope_theta, factor, ...} in one object.
  return ReadRopeScaling(top, nested ? "rope_parameters" : "rope_scaling", a);
}

// Named after the checkpoint folder (".../Llama-2-7b-hf/config.json") or the file's stem.
std::string NameFromPath(std::string stem, const std::string& type) {
  if (auto slash = stem.find_last_of('/'); slash != std::string::npos) {
    const std::string file = stem.substr(slash + 1);
    const std::string dir = stem.substr(0, slash);
    stem = file == "config.json" ? dir.substr(dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/') + 1) : file;
  }
  if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json") stem = stem.substr(0, stem.size() - 5);
  return stem.empty() ? type : stem;
}

constexpr const char* kSupported =
    "llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gemma, gemma2, gemma3_text, "
    "gemma3, gpt2, gpt_neox";

Status ReadShape(const Reader& r, const std::string& type, Arch& a);

Status ReadFamily(const Reader& r, const std::string& type, Arch& a) {
  GPUPLAN_RETURN_IF_ERROR(ReadShape(r, type, a));
  if (type == "gemma3") return ReadRope(Reader{r.root["text_config"], r.file}, "gemma3_text", a);
  return ReadRope(r, type, a);
}

Status ReadShape(const Reader& r, const std::string& type, Arch& a) {
  if (type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "qwen3" ||
      type == "qwen3_moe")
    return ReadLlamaFamily(r, type, a);
  if (type == "deepseek_v2" || type == "deepseek_v3") return ReadDeepseek(r, type, a);
  if (type == "gemma" || type == "gemma2" || type == "gemma3_text") return ReadGemma(r, type, a);
  if (type == "gemma3") {
    // Gemma3ForConditionalGeneration: the language model is text_config; the SigLIP vision tower
    // (vision_config, ~417M) and the projector are not counted (docs/model/memory.md §1.1).
    if (!r.root["text_config"] || !r.root["text_config"].IsMap())
      return Status::BadInput(r.At("text_config"), "a gemma3 config needs a text_config object");
    return ReadGemma(Reader{r.root["text_config"], r.file}, "gemma3_text", a);
  }
  if (type == "gpt2") return ReadGpt2(r, a);
  if (type == "gpt_neox") return ReadGptNeox(r, a);
  return Status::BadInput(r.At("model_type"),
                          "unsupported model_type '" + type + "' (supported: " + kSupported + ")");
}

// Deeper than any config.json (text_config.rope_scaling is 3); yaml-cpp's own guard, far deeper,
// is reported as this limit too.
constexpr int kMaxNesting = 64;

int LineOf(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

// Duplicate keys are an error naming the key: yaml-cpp (like nlohmann::json) answers the first
// value, Python's json and so transformers the last; neither is silently right. Nesting is bounded.
// Far more values than any config.json (DeepSeek-V3's is ~60; id2label tables a few thousand).
// YAML aliases (yaml-cpp reads YAML too) share nodes: a few lines can expand to billions on a walk.
constexpr int64_t kMaxNodes = 1000000;

Status CheckTree(const YAML::Node& n, const std::string& prefix, int depth, const std::string& file, int64_t& budget) {
  if (depth > kMaxNesting)
    return Status::BadInput({file, LineOf(n), ""}, "nesting deeper than " + std::to_string(kMaxNesting) + " levels");
  if (--budget < 0)
    return Status::BadInput({file, LineOf(n), ""}, "more than " + std::to_string(kMaxNodes) +
                                                       " values (YAML aliases expanding?); not a config.json");
  if (n.IsMap()) {
    std::map<std::string, int> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = prefix + (it->first.IsScalar() ? it->first.Scalar() : std::string("?"));
      if (auto [pos, fresh] = seen.emplace(key, LineOf(it->first)); !fresh)
        return Status::BadInput({file, LineOf(it->first), key},
                                "key given twice (first on line " + std::to_string(pos->second) +
                                    "); Hugging Face would keep the last value, this reader the first: remove one");
      GPUPLAN_RETURN_IF_ERROR(CheckTree(it->second, key + ".", depth + 1, file, budget));
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n) GPUPLAN_RETURN_IF_ERROR(CheckTree(item, prefix, depth + 1, file, budget));
  }
  return Status::Ok();
}

// A ValidateArch error ("heads: must divide hidden") at the line of the config.json key it came
// from (the family's name for it, in text_config for gemma3), else at the object's first line.
Status AtConfigKey(const Status& st, const Reader& r, const std::string& type) {
  static const std::map<std::string, std::vector<std::string>> kNames = {
      {"layers", {"num_hidden_layers", "n_layer"}},
      {"hidden", {"hidden_size", "n_embd"}},
      {"heads", {"num_attention_heads", "n_head"}},
      {"kv_heads", {"num_key_value_heads"}},
      {"head_dim", {"head_dim", "qk_nope_head_dim", "qk_rope_head_dim"}},
      {"v_head_dim", {"v_head_dim", "head_dim"}},
      {"ffn_hidden", {"intermediate_size", "n_inner", "hidden_size", "n_embd"}},
      {"moe_ffn_hidden", {"moe_intermediate_size", "intermediate_size"}},
      {"vocab", {"vocab_size"}},
      {"max_positions", {"n_positions"}},
      {"experts", {"num_local_experts", "num_experts", "n_routed_experts"}},
      {"experts_per_token", {"num_experts_per_tok"}},
      {"shared_experts", {"n_shared_experts"}},
      {"dense_layers", {"first_k_dense_replace", "mlp_only_layers", "decoder_sparse_step"}},
      {"q_lora_rank", {"q_lora_rank"}},
      {"kv_lora_rank", {"kv_lora_rank"}},
      {"qk_nope_head_dim", {"qk_nope_head_dim"}},
      {"qk_rope_head_dim", {"qk_rope_head_dim"}},
      {"mla", {"kv_lora_rank"}},
      {"rope_theta", {"rope_theta", "rotary_emb_base"}},
      {"norm_eps", {"rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon"}},
      {"rope_factor", {"rope_scaling", "rope_parameters"}},
      {"rope_high_freq_factor", {"rope_scaling", "rope_parameters"}},
      {"rope_original_max_positions", {"rope_scaling", "rope_parameters"}},
      {"shape", {"hidden_size", "n_embd"}}};
  const YAML::Node obj = type == "gemma3" && r.root["text_config"] ? r.root["text_config"] : r.root;
  const std::string prefix = type == "gemma3" ? "text_config." : "";
  const Reader in{obj, r.file};
  if (auto it = kNames.find(st.location().key); it != kNames.end())
    for (const auto& name : it->second)
      if (in.Has(name)) return Status::BadInput({r.file, in.At(name).line, prefix + name}, st.reason());
  return Status::BadInput({r.file, LineOf(obj) > 0 ? LineOf(obj) : 1, st.location().key}, st.reason());
}

}  // namespace

Result<Arch> ArchFromHfConfig(const std::string& given) {
  std::error_code ec;
  const std::string path = std::filesystem::is_directory(given, ec) ? given + "/config.json" : given;
  auto text = ReadInputFile(path);
  if (!text.ok()) {
    if (!std::filesystem::exists(path, ec))
      return Status::BadInput({path, 0, ""},
                              "cannot open file (download the checkpoint's config.json, e.g. "
                              "https://huggingface.co/ORG/NAME/resolve/main/config.json, and pass its path)");
    return text.status();  // a FIFO, a device, a directory, too big, unreadable: said as such
  }
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(*text, path));
  GPUPLAN_RETURN_IF_ERROR(CheckNoStrayComma(*text, path));  // yaml-cpp would loop forever on it
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::DeepRecursion& ex) {
    return Status::BadInput({path, ex.mark.line + 1, ""}, "nesting deeper than " + std::to_string(kMaxNesting) + " levels");
  } catch (const YAML::Exception& ex) {
    return Status::BadInput({path, ex.mark.line + 1, ""}, "cannot parse config.json: " + ex.msg);
  }
  if (!root.IsMap()) return Status::BadInput({path, 1, ""}, "config.json must be a JSON object");
  int64_t budget = kMaxNodes;
  GPUPLAN_RETURN_IF_ERROR(CheckTree(root, "", 0, path, budget));
  Reader r{root, path};
  std::string type;
  ASSIGN_OR_RETURN(type, r.StrOr("model_type", ""));
  Arch a;
  a.name = NameFromPath(path, type);
  GPUPLAN_RETURN_IF_ERROR(ReadFamily(r, type, a));
  if (Status st = ValidateArch(a, {path, 0, ""}); !st.ok()) return AtConfigKey(st, r, type);
  return a;
}

}  // namespace gpuplan
