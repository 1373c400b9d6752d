// Hugging Face config.json -> Arch (llama, mistral, mixtral, qwen2, gpt2, gpt_neox families).
// yaml-cpp reads the JSON so that errors carry a line number.
#include <yaml-cpp/yaml.h>

#include <cmath>

#include "gpuplan/arch.h"
#include "gpuplan/csv.h"

namespace gpuplan {

namespace {

struct Reader {
  const YAML::Node& root;
  const std::string& file;
  Location At(const std::string& key) const {
    const YAML::Node n = root[key];
    return {file, n && n.Mark().line >= 0 ? n.Mark().line + 1 : 0, key};
  }
  bool Has(const std::string& key) const { return root[key] && !root[key].IsNull(); }
  Result<int64_t> Int(const std::string& key) const {
    if (!Has(key)) return Status::BadInput({file, 0, key}, "missing in config.json");
    try {
      double v = root[key].as<double>();
      if (v < 0 || v != std::floor(v) || v > 1e9) return Status::BadInput(At(key), "expected a whole number >= 0");
      return static_cast<int64_t>(v);
    } catch (const YAML::Exception&) {
      return Status::BadInput(At(key), "expected a number");
    }
  }
  Result<int64_t> IntOr(const std::string& key, int64_t fallback) const {
    return Has(key) ? Int(key) : Result<int64_t>(fallback);
  }
  Result<bool> BoolOr(const std::string& key, bool fallback) const {
    if (!Has(key)) return fallback;
    try {
      return root[key].as<bool>();
    } catch (const YAML::Exception&) {
      return Status::BadInput(At(key), "expected true or false");
    }
  }
};

#define ASSIGN_OR_RETURN(lhs, expr)     \
  do {                                  \
    auto _r = (expr);                   \
    if (!_r.ok()) return _r.status();   \
    lhs = *_r;                          \
  } while (0)

}  // namespace

Result<Arch> ArchFromHfConfig(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& ex) {
    return Status::BadInput({path, ex.mark.line + 1, ""}, "cannot parse config.json: " + ex.msg);
  }
  if (!root.IsMap()) return Status::BadInput({path, 1, ""}, "config.json must be a JSON object");
  Reader r{root, path};
  std::string type;
  try {
    type = r.Has("model_type") ? root["model_type"].as<std::string>() : "";
  } catch (const YAML::Exception&) {
    return Status::BadInput(r.At("model_type"), "expected a string");
  }
  Arch a;
  // Name it after the checkpoint folder (".../Llama-2-7b-hf/config.json") or the file's stem.
  {
    std::string stem = path;
    if (auto slash = stem.find_last_of('/'); slash != std::string::npos) {
      const std::string file = stem.substr(slash + 1);
      const std::string dir = stem.substr(0, slash);
      stem = file == "config.json" ? dir.substr(dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/') + 1) : file;
    }
    if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json") stem = stem.substr(0, stem.size() - 5);
    a.name = stem.empty() ? type : stem;
  }
  if (type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2") {
    ASSIGN_OR_RETURN(a.hidden, r.Int("hidden_size"));
    ASSIGN_OR_RETURN(a.layers, r.Int("num_hidden_layers"));
    ASSIGN_OR_RETURN(a.heads, r.Int("num_attention_heads"));
    ASSIGN_OR_RETURN(a.kv_heads, r.IntOr("num_key_value_heads", a.heads));
    ASSIGN_OR_RETURN(a.head_dim, r.IntOr("head_dim", 0));
    ASSIGN_OR_RETURN(a.ffn_hidden, r.Int("intermediate_size"));
    ASSIGN_OR_RETURN(a.vocab, r.Int("vocab_size"));
    ASSIGN_OR_RETURN(a.tied_embeddings, r.BoolOr("tie_word_embeddings", false));
    a.mlp = MlpKind::kSwiGlu;
    a.norm = NormKind::kRmsNorm;
    a.position = PositionKind::kRotary;
    // Qwen2 always has q/k/v biases (modeling_qwen2.py); Llama has them with attention_bias.
    bool attention_bias = false;
    ASSIGN_OR_RETURN(attention_bias, r.BoolOr("attention_bias", false));
    a.qkv_bias = type == "qwen2" || attention_bias;
    if (type == "mixtral") {
      ASSIGN_OR_RETURN(a.experts, r.Int("num_local_experts"));
      ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
    }
  } else if (type == "gpt2") {
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
  } else if (type == "gpt_neox") {
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
  } else {
    return Status::BadInput(r.At("model_type"),
                            "unsupported model_type '" + type + "' (supported: llama, mistral, mixtral, qwen2, gpt2, gpt_neox)");
  }
  GPUPLAN_RETURN_IF_ERROR(ValidateArch(a, {path, 0, ""}));
  return a;
}

}  // namespace gpuplan
