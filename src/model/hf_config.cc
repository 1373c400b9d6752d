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

// DeepSeek (v1, V2, V3): layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.
Status ReadDeepseekMoeLayers(const Reader& r, Arch& a) {
  int64_t first_dense = 0, freq = 1;
  ASSIGN_OR_RETURN(first_dense, r.IntOr("first_k_dense_replace", 0));
  ASSIGN_OR_RETURN(freq, r.IntOr("moe_layer_freq", 1));
  int64_t moe_layers = 0;
  for (int64_t i = 0; i < a.layers; ++i)
    if (i >= first_dense && freq > 0 && i % freq == 0) ++moe_layers;
  a.dense_layers = a.layers - moe_layers;
  return Status::Ok();
}

// The decoder core every Llama-style family shares: widths, heads, MLP, vocabulary.
Status ReadCore(const Reader& r, const std::string& type, Arch& a) {
  const bool qwen3 = type == "qwen3" || type == "qwen3_moe" || type == "qwen3_vl_text";
  ASSIGN_OR_RETURN(a.hidden, r.Int("hidden_size"));
  ASSIGN_OR_RETURN(a.layers, r.Int("num_hidden_layers"));
  ASSIGN_OR_RETURN(a.heads, r.Int("num_attention_heads"));
  // Given, 0 is an error: Arch reads kv_heads 0 as "same as heads", which the file did not say.
  ASSIGN_OR_RETURN(a.kv_heads, r.IntOr("num_key_value_heads", a.heads, 1));
  ASSIGN_OR_RETURN(a.head_dim, r.IntOr("head_dim", qwen3 ? 128 : 0));  // Qwen3Config default 128
  ASSIGN_OR_RETURN(a.ffn_hidden, r.Int("intermediate_size"));
  ASSIGN_OR_RETURN(a.vocab, r.Int("vocab_size"));
  // PretrainedConfig ties by default; LlamaConfig and most of its descendants do not.
  const bool tied_default = type == "cohere" || type == "starcoder2";
  ASSIGN_OR_RETURN(a.tied_embeddings, r.BoolOr("tie_word_embeddings", tied_default));
  a.mlp = MlpKind::kSwiGlu;
  a.norm = NormKind::kRmsNorm;
  a.position = PositionKind::kRotary;
  a.qk_norm = qwen3;
  // Qwen2 (and MiMo, Qwen2-MoE, Qwen2.5-VL) always has q/k/v biases (modeling_qwen2.py); the
  // others have them with attention_bias.
  const bool qwen2 = type == "qwen2" || type == "qwen2_moe" || type == "qwen2_5_vl" || type == "mimo";
  bool attention_bias = false;
  ASSIGN_OR_RETURN(attention_bias, r.BoolOr("attention_bias", false));
  a.qkv_bias = qwen2 || attention_bias;
  return Status::Ok();
}

// MoE layer placement of Qwen-MoE: layer i is MoE unless listed in mlp_only_layers, when
// (i + 1) % decoder_sparse_step == 0.
Status ReadQwenMoeLayers(const Reader& r, Arch& a) {
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
  return Status::Ok();
}

// The MoE keys of the Llama-style families: mixtral, gpt_oss, minimax_m2 (num_local_experts, every
// layer), qwen2_moe / qwen3_moe (num_experts; modeling_qwen2_moe.py adds a shared expert of its own
// size behind a sigmoid gate), deepseek v1 (modeling_deepseek.py: n_shared_experts of
// moe_intermediate_size after first_k_dense_replace dense layers) and glm4_moe (modeling_glm4_moe.py:
// the same keys and placement; the dense layers use intermediate_size).
Status ReadLlamaMoe(const Reader& r, const std::string& type, Arch& a) {
  if (type == "mixtral" || type == "gpt_oss" || type == "minimax_m2") {
    ASSIGN_OR_RETURN(a.experts, r.Int("num_local_experts", 1));  // 0 would silently make it dense
    ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
    if (type != "mixtral") a.moe_ffn_hidden = a.ffn_hidden;  // one size: intermediate_size is per expert
    return Status::Ok();
  }
  if (type == "qwen3_moe" || type == "qwen2_moe") {
    ASSIGN_OR_RETURN(a.experts, r.IntOr("num_experts", 0, 1));  // given: a MoE needs experts
    if (a.experts == 0) return Status::Ok();
    ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
    ASSIGN_OR_RETURN(a.moe_ffn_hidden, r.Int("moe_intermediate_size"));
    if (type == "qwen2_moe") {
      ASSIGN_OR_RETURN(a.shared_expert_ffn, r.IntOr("shared_expert_intermediate_size", 0));
      a.shared_experts = a.shared_expert_ffn > 0 ? 1 : 0;
      a.shared_expert_gate = a.shared_experts > 0;
    }
    return ReadQwenMoeLayers(r, a);
  }
  if (type != "deepseek" && type != "glm4_moe") return Status::Ok();
  ASSIGN_OR_RETURN(a.experts, r.IntOr("n_routed_experts", 0, 1));
  if (a.experts == 0) return Status::Ok();
  ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
  ASSIGN_OR_RETURN(a.shared_experts, r.IntOr("n_shared_experts", 0));
  ASSIGN_OR_RETURN(a.moe_ffn_hidden, r.Int("moe_intermediate_size"));
  return ReadDeepseekMoeLayers(r, a);
}

// The pieces of the Llama-style families that differ from Llama: OLMo 2's post-norms and full-width
// q/k norms (modeling_olmo2.py), Cohere's parallel block with one LayerNorm without bias and its
// optional full-width q/k norms (modeling_cohere.py), MiniMax-M2's per-layer q/k norms and routing
// bias, gpt-oss's biases, attention sinks and router bias (modeling_gpt_oss.py).
Status ReadLlamaVariant(const Reader& r, const std::string& type, Arch& a) {
  if (type == "olmo2") {
    a.qk_norm = a.qk_norm_full_width = true;  // q_norm over heads x d, k_norm over kv_heads x d
    a.norms_per_layer = 2;                    // post_attention and post_feedforward only
  } else if (type == "cohere") {
    a.norm = NormKind::kLayerNorm;  // CohereLayerNorm: weight only
    a.norms_per_layer = 1;          // attention and MLP read the same input_layernorm
    ASSIGN_OR_RETURN(a.qk_norm, r.BoolOr("use_qk_norm", false));
    a.qk_norm_full_width = a.qk_norm;
  } else if (type == "minimax_m2") {
    std::string qk_norm_type;
    ASSIGN_OR_RETURN(a.qk_norm, r.BoolOr("use_qk_norm", false));
    ASSIGN_OR_RETURN(qk_norm_type, r.StrOr("qk_norm_type", "per_layer"));
    a.qk_norm_full_width = qk_norm_type == "per_layer";
    ASSIGN_OR_RETURN(a.router_bias, r.BoolOr("use_routing_bias", false));
    int64_t shared = 0;
    ASSIGN_OR_RETURN(shared, r.IntOr("shared_intermediate_size", 0));
    if (shared > 0)
      return Status::BadInput(r.At("shared_intermediate_size"),
                              "a MiniMax shared expert is not modelled; describe the shape with model.* keys");
  } else if (type == "gpt_oss") {
    a.linear_bias = a.qkv_bias;  // attention_bias: q, k, v and o; the experts always have biases
    a.attn_sinks = true;
    a.router_bias = true;  // the router is a Linear with bias
  } else if (type == "glm4_moe") {
    // Glm4MoeAttention: q/k/v biases with attention_bias (o_proj never), q_norm and k_norm of head_dim
    // with use_qk_norm; Glm4MoeTopkRouter keeps e_score_correction_bias per expert (noaux_tc).
    // partial_rotary_factor rotates half of each head: no parameters, the same FLOPs to first order.
    ASSIGN_OR_RETURN(a.qk_norm, r.BoolOr("use_qk_norm", false));
    a.router_bias = a.experts > 0;
  } else if (type == "internlm2") {
    bool bias = false;
    ASSIGN_OR_RETURN(bias, r.BoolOr("bias", false));
    if (bias)
      return Status::BadInput(r.At("bias"), "internlm2 with bias: true (biases on wqkv and wo) is not modelled; "
                                            "describe the shape with model.* keys and model.qkv_bias");
  }
  return Status::Ok();
}

// Llama-style decoders: llama, mistral, mixtral, qwen2, qwen3 (modeling_qwen3.py: q_norm and k_norm
// of head_dim, head_dim its own key), qwen3_moe, qwen2_moe, phi3 (fused qkv_proj and gate_up_proj:
// the same matrices), internlm2 (wqkv), baichuan (W_pack; Baichuan2-7B), mimo (Qwen2 with an MTP
// module), deepseek (v1 MoE), glm4_moe (GLM-4.5/4.6/4.7), olmo2, cohere, minimax_m2, gpt_oss, and the language models of
// qwen2_5_vl (top level) and qwen3_vl (text_config).
Status ReadLlamaFamily(const Reader& r, const std::string& type, Arch& a) {
  GPUPLAN_RETURN_IF_ERROR(ReadCore(r, type, a));
  GPUPLAN_RETURN_IF_ERROR(ReadLlamaMoe(r, type, a));
  return ReadLlamaVariant(r, type, a);
}

// DeepSeek-V2/V3 (modeling_deepseek.py): multi-head latent attention and fine-grained MoE with
// shared experts; kimi_k2 is DeepseekV3ForCausalLM; deepseek_v32 adds the lightning indexer.
// The multi-token-prediction module (num_nextn_predict_layers) is counted only when asked
// (model.mtp_layers): transformers does not build it and DeepSeek's published 671B for V3 leaves
// its 14B out.
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
  if (type == "deepseek_v32") {
    ASSIGN_OR_RETURN(a.index_heads, r.Int("index_n_heads", 1));
    ASSIGN_OR_RETURN(a.index_head_dim, r.Int("index_head_dim", 1));
  }
  a.mtp_own_embedding = true;  // each MTP layer of the checkpoint stores embed_tokens and shared_head.head
  a.kv_heads = a.heads;  // every head gets its own k and v from the shared latent
  a.mlp = MlpKind::kSwiGlu;
  a.norm = NormKind::kRmsNorm;
  a.position = PositionKind::kRotary;
  ASSIGN_OR_RETURN(a.experts, r.IntOr("n_routed_experts", 0, 1));  // null: dense; given: >= 1
  if (a.experts == 0) return Status::Ok();
  ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
  ASSIGN_OR_RETURN(a.shared_experts, r.IntOr("n_shared_experts", 0));
  ASSIGN_OR_RETURN(a.moe_ffn_hidden, r.Int("moe_intermediate_size"));
  GPUPLAN_RETURN_IF_ERROR(ReadDeepseekMoeLayers(r, a));
  // noaux_tc routing adds e_score_correction_bias per expert (always present in V3).
  std::string topk_method;
  const bool v3 = type != "deepseek_v2";
  ASSIGN_OR_RETURN(topk_method, r.StrOr("topk_method", v3 ? "noaux_tc" : "greedy"));
  a.router_bias = v3 || topk_method == "noaux_tc";
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

// StarCoder2 (modeling_starcoder2.py): LayerNorm with bias, biases on every linear (use_bias), a
// 2-matrix GELU MLP (c_fc, c_proj), GQA, tied embeddings by default.
Status ReadStarcoder2(const Reader& r, Arch& a) {
  GPUPLAN_RETURN_IF_ERROR(ReadCore(r, "starcoder2", a));
  a.mlp = MlpKind::kGelu;
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  ASSIGN_OR_RETURN(a.linear_bias, r.BoolOr("use_bias", true));
  a.qkv_bias = false;  // covered by linear_bias
  return Status::Ok();
}

// ChatGLM2/3 (THUDM modeling_chatglm.py): query_key_value of heads x kv_channels plus 2 x
// multi_query_group_num x kv_channels (with add_qkv_bias), dense (no bias unless add_bias_linear),
// dense_h_to_4h of 2 x ffn_hidden_size (SwiGLU), RMSNorm, a separate output_layer.
Status ReadChatglm(const Reader& r, Arch& a) {
  ASSIGN_OR_RETURN(a.hidden, r.Int("hidden_size"));
  ASSIGN_OR_RETURN(a.layers, r.Int("num_layers"));
  ASSIGN_OR_RETURN(a.heads, r.Int("num_attention_heads"));
  ASSIGN_OR_RETURN(a.head_dim, r.IntOr("kv_channels", 0));
  bool mqa = false, rmsnorm = true, bias_linear = false;
  ASSIGN_OR_RETURN(mqa, r.BoolOr("multi_query_attention", false));
  ASSIGN_OR_RETURN(a.kv_heads, mqa ? r.Int("multi_query_group_num", 1) : Result<int64_t>(a.heads));
  ASSIGN_OR_RETURN(a.ffn_hidden, r.Int("ffn_hidden_size"));
  ASSIGN_OR_RETURN(a.vocab, r.Int("padded_vocab_size"));
  ASSIGN_OR_RETURN(a.tied_embeddings, r.BoolOr("tie_word_embeddings", false));
  ASSIGN_OR_RETURN(a.qkv_bias, r.BoolOr("add_qkv_bias", false));
  ASSIGN_OR_RETURN(bias_linear, r.BoolOr("add_bias_linear", false));
  ASSIGN_OR_RETURN(rmsnorm, r.BoolOr("rmsnorm", true));
  if (bias_linear || !rmsnorm)
    return Status::BadInput(r.At(bias_linear ? "add_bias_linear" : "rmsnorm"),
                            "ChatGLM with linear biases or LayerNorm (ChatGLM-6B v1) is not modelled; "
                            "describe the shape with model.* keys");
  a.mlp = MlpKind::kSwiGlu;
  a.norm = NormKind::kRmsNorm;
  a.position = PositionKind::kRotary;
  return Status::Ok();
}

// Llama 4 text (modeling_llama4.py): MoE every interleave_moe_layer_step-th layer (layer i when
// (i + 1) % step == 0) with one shared expert of intermediate_size; the dense layers use
// intermediate_size_mlp; the q/k norm is a parameter-free L2 norm.
Status ReadLlama4Text(const Reader& r, Arch& a) {
  GPUPLAN_RETURN_IF_ERROR(ReadCore(r, "llama4_text", a));
  a.qk_norm = false;
  ASSIGN_OR_RETURN(a.experts, r.Int("num_local_experts", 1));
  ASSIGN_OR_RETURN(a.experts_per_token, r.Int("num_experts_per_tok"));
  a.moe_ffn_hidden = a.ffn_hidden;
  a.shared_experts = 1;
  ASSIGN_OR_RETURN(a.ffn_hidden, r.IntOr("intermediate_size_mlp", a.ffn_hidden));
  int64_t step = 1;
  ASSIGN_OR_RETURN(step, r.IntOr("interleave_moe_layer_step", 1, 1));
  a.dense_layers = a.layers - a.layers / step;
  return Status::Ok();
}

// The windows of a family's attention (compute.md §1). layer_types (transformers >= 4.54: gpt-oss,
// Gemma 3, Qwen) lists each layer; otherwise: Gemma 2 alternates (even layers local), Gemma 3 has
// sliding_window_pattern - 1 local layers of every pattern, Llama 4 chunks every layer that uses
// rope (3 of 4, or no_rope_layers), Qwen windows the layers from max_window_layers on when
// use_sliding_window is true, and Mistral, Mixtral, Phi-3 and StarCoder2 every layer when
// sliding_window is given.
Status ReadWindows(const Reader& r, const std::string& type, Arch& a) {
  const bool llama4 = type == "llama4_text";
  ASSIGN_OR_RETURN(a.attn_window, llama4 ? r.IntOr("attention_chunk_size", 0)
                                         : r.IntOr("sliding_window", type == "gemma2" || type == "gemma3_text" ? 4096 : 0));
  a.attn_chunked = llama4;
  if (a.attn_window == 0) return Status::Ok();
  if (r.Has("layer_types") && r.root["layer_types"].IsSequence()) {
    for (const auto& n : r.root["layer_types"])
      if (n.IsScalar() && (n.Scalar() == "sliding_attention" || n.Scalar() == "chunked_attention")) ++a.windowed_layers;
  } else if (type == "gemma2") {
    a.windowed_layers = (a.layers + 1) / 2;
  } else if (type == "gemma3_text") {
    int64_t pattern = 6;
    ASSIGN_OR_RETURN(pattern, r.IntOr("sliding_window_pattern", 6, 1));
    a.windowed_layers = a.layers - a.layers / pattern;
  } else if (llama4) {
    std::vector<int64_t> rope_layers;
    ASSIGN_OR_RETURN(rope_layers, r.IntList("no_rope_layers"));  // 1 = uses rope (chunked)
    a.windowed_layers = rope_layers.empty() ? a.layers - a.layers / 4
                                            : std::count(rope_layers.begin(), rope_layers.end(), int64_t{1});
  } else if (type == "mistral" || type == "mixtral" || type == "phi3" || type == "starcoder2") {
    a.windowed_layers = a.layers;
  } else if (type == "qwen2" || type == "qwen2_moe" || type == "qwen3" || type == "qwen3_moe" || type == "mimo") {
    bool use = false;
    int64_t full_layers = 0;
    ASSIGN_OR_RETURN(use, r.BoolOr("use_sliding_window", false));
    ASSIGN_OR_RETURN(full_layers, r.IntOr("max_window_layers", a.layers));
    a.windowed_layers = use ? std::max<int64_t>(0, a.layers - full_layers) : 0;
  }
  a.windowed_layers = std::min(a.windowed_layers, a.layers);
  if (a.windowed_layers == 0) a.attn_window = 0;
  return Status::Ok();
}

// Vision towers (modeling_qwen2_5_vl.py, modeling_qwen3_vl.py), counted when model.include_vision
// asks: a 3-D patch convolution, depth blocks (2 norms, fused qkv + proj with biases, an MLP with
// biases: gated SiLU in Qwen2.5-VL, 2-matrix GELU in Qwen3-VL), a patch merger (norm + 2 linears
// from hidden x merge² to the language model's width); Qwen3-VL adds learned positions (LayerNorms
// with bias, a biased patch conv) and one merger per deepstack layer with the norm after the shuffle.
Result<int64_t> QwenVisionParams(const Reader& v, bool qwen3) {
  int64_t h = 0, depth = 0, ffn = 0, out = 0, in = 3, tp = 2, patch = 14, merge = 2, positions = 0;
  ASSIGN_OR_RETURN(h, v.Int("hidden_size", 1));
  ASSIGN_OR_RETURN(depth, v.Int("depth", 1));
  ASSIGN_OR_RETURN(ffn, v.Int("intermediate_size", 1));
  ASSIGN_OR_RETURN(out, v.Int("out_hidden_size", 1));
  ASSIGN_OR_RETURN(in, v.IntOr(v.Has("in_chans") ? "in_chans" : "in_channels", 3, 1));
  ASSIGN_OR_RETURN(tp, v.IntOr("temporal_patch_size", 2, 1));
  ASSIGN_OR_RETURN(patch, v.IntOr("patch_size", qwen3 ? 16 : 14, 1));
  ASSIGN_OR_RETURN(merge, v.IntOr("spatial_merge_size", 2, 1));
  std::vector<int64_t> deepstack;
  if (qwen3) ASSIGN_OR_RETURN(positions, v.IntOr("num_position_embeddings", 2304));
  if (qwen3) ASSIGN_OR_RETURN(deepstack, v.IntList("deepstack_visual_indexes"));
  const int64_t norm = qwen3 ? 2 * h : h;  // LayerNorm (weight + bias) or RMSNorm
  const int64_t mlp = qwen3 ? 2 * h * ffn + ffn + h : 3 * h * ffn + 2 * ffn + h;
  const int64_t block = 2 * norm + 3 * h * h + 3 * h + h * h + h + mlp;
  const int64_t m = h * merge * merge;
  const int64_t merger_linears = m * m + m + m * out + out;
  const int64_t patch_embed = in * tp * patch * patch * h + (qwen3 ? h : 0);
  return patch_embed + positions * h + depth * block + norm + merger_linears +
         static_cast<int64_t>(deepstack.size()) * (2 * m + merger_linears);
}

// Gemma 3's SigLIP tower (modeling_siglip.py) and projector (modeling_gemma3.py): a biased patch
// convolution, learned positions of (image_size / patch_size)², layers of LayerNorms with bias,
// q/k/v/out with biases and a 2-matrix GELU MLP with biases, a post LayerNorm; the projector is a
// vision x text matrix and an RMSNorm of the vision width. Defaults: SiglipVisionConfig's.
Result<int64_t> SiglipVisionParams(const Reader& v, int64_t text_hidden) {
  int64_t h = 0, ffn = 0, layers = 0, patch = 0, image = 0, channels = 3;
  ASSIGN_OR_RETURN(h, v.IntOr("hidden_size", 768, 1));
  ASSIGN_OR_RETURN(ffn, v.IntOr("intermediate_size", 3072, 1));
  ASSIGN_OR_RETURN(layers, v.IntOr("num_hidden_layers", 12, 1));
  ASSIGN_OR_RETURN(patch, v.IntOr("patch_size", 16, 1));
  ASSIGN_OR_RETURN(image, v.IntOr("image_size", 224, 1));
  ASSIGN_OR_RETURN(channels, v.IntOr("num_channels", 3, 1));
  const int64_t positions = (image / patch) * (image / patch);
  const int64_t layer = 2 * 2 * h + 4 * (h * h + h) + (h * ffn + ffn) + (ffn * h + h);
  return channels * patch * patch * h + h + positions * h + layers * layer + 2 * h + h * text_hidden + h;
}

// The defaults transformers uses when a key is left out: rope_theta and the norm epsilon of each
// family's config class (LlamaConfig 10000 / 1e-6, MixtralConfig 1e6 / 1e-5, GPT2Config 1e-5, ...).
struct RopeDefaults {
  double theta;
  double eps;
};
RopeDefaults FamilyRopeDefaults(const std::string& type) {
  if (type == "mixtral") return {1e6, 1e-5};
  if (type == "gpt2" || type == "gpt_neox" || type == "cohere" || type == "starcoder2" || type == "chatglm" ||
      type == "glm4_moe")
    return {10000, 1e-5};
  return {10000, 1e-6};  // llama, mistral, qwen2, qwen3(_moe), deepseek_v2/v3, gemma 1/2/3
}

// The norm epsilon's key in each family's config.
const char* EpsKey(const std::string& type) {
  if (type == "gpt2") return "layer_norm_epsilon";
  if (type == "gpt_neox" || type == "cohere") return "layer_norm_eps";
  if (type == "starcoder2") return "norm_epsilon";
  if (type == "chatglm") return "layernorm_epsilon";
  return "rms_norm_eps";
}

// rope_scaling {rope_type|type, factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}; null, {} and "default" are plain rotary; Qwen2.5-VL's
// "mrope" is plain rotary split over (time, height, width) sections, the same for text.
// longrope (Phi-3) has no factor key: transformers takes max / original positions.
Status ReadRopeScaling(const Reader& r, const std::string& key, Arch& a) {
  const YAML::Node n = r.root[key];
  if (!n || n.IsNull() || (n.IsMap() && n.size() == 0)) return Status::Ok();
  if (!n.IsMap()) return Status::BadInput(r.At(key), "expected an object or null");
  const Reader in{n, r.file};
  std::string type;
  ASSIGN_OR_RETURN(type, in.StrOr("rope_type", ""));
  if (type.empty()) ASSIGN_OR_RETURN(type, in.StrOr("type", "default"));
  if (type == "mrope") return Status::Ok();
  auto kind = ParseRopeScaling(type, r.At(key));
  if (!kind.ok()) return kind.status();
  a.rope_scaling = *kind;
  if (a.rope_scaling == RopeScaling::kNone) return Status::Ok();
  ASSIGN_OR_RETURN(a.rope_factor, in.RealOr("factor", 0));
  ASSIGN_OR_RETURN(a.rope_low_freq_factor, in.RealOr("low_freq_factor", 0));
  ASSIGN_OR_RETURN(a.rope_high_freq_factor, in.RealOr("high_freq_factor", 0));
  ASSIGN_OR_RETURN(a.rope_original_max_positions, in.IntOr("original_max_position_embeddings", 0));
  if (a.rope_scaling == RopeScaling::kLongRope && a.rope_original_max_positions == 0)
    ASSIGN_OR_RETURN(a.rope_original_max_positions, r.IntOr("original_max_position_embeddings", 0));
  if (a.rope_scaling == RopeScaling::kLongRope && a.rope_factor == 0 && a.rope_original_max_positions > 0) {
    int64_t max_positions = 0;
    ASSIGN_OR_RETURN(max_positions, r.IntOr("max_position_embeddings", 0));
    a.rope_factor = std::max(1.0, static_cast<double>(max_positions) / a.rope_original_max_positions);
  }
  return Status::Ok();
}

// rope_theta (gpt_neox: rotary_emb_base), the norm epsilon (rms_norm_eps, layer_norm_eps,
// layer_norm_epsilon) and rope_scaling; transformers 5 nests theta and scaling in rope_parameters.
Status ReadRope(const Reader& top, const std::string& type, Arch& a) {
  const bool nested = top.root["rope_parameters"] && top.root["rope_parameters"].IsMap();
  const Reader rope = nested ? Reader{top.root["rope_parameters"], top.file} : top;
  const RopeDefaults d = FamilyRopeDefaults(type);
  ASSIGN_OR_RETURN(a.rope_theta, rope.RealOr(type == "gpt_neox" ? "rotary_emb_base" : "rope_theta", d.theta));
  ASSIGN_OR_RETURN(a.norm_eps, top.RealOr(EpsKey(type), d.eps));
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
    "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, qwen2_5_vl, qwen3_vl, phi3, internlm2, baichuan, "
    "chatglm, starcoder2, mimo, olmo2, cohere, minimax_m2, gpt_oss, glm4_moe, llama4, llama4_text, deepseek, deepseek_v2, "
    "deepseek_v3, deepseek_v32, kimi_k2, gemma, gemma2, gemma3_text, gemma3, gpt2, gpt_neox";

// Multimodal configs keep the language model in text_config: the type of that object's reader.
std::string TextType(const std::string& type) {
  if (type == "gemma3") return "gemma3_text";
  if (type == "llama4") return "llama4_text";
  if (type == "qwen3_vl") return "qwen3_vl_text";
  return "";
}

bool IsLlamaStyle(const std::string& t) {
  static const char* kTypes[] = {"llama",   "mistral",   "mixtral", "qwen2",   "qwen3",     "qwen3_moe",
                                 "qwen2_moe", "qwen2_5_vl", "qwen3_vl_text", "phi3", "internlm2", "baichuan",
                                 "mimo",    "deepseek",  "olmo2",   "cohere",  "minimax_m2", "gpt_oss",
                                 "glm4_moe"};
  return std::find_if(std::begin(kTypes), std::end(kTypes), [&](const char* k) { return t == k; }) != std::end(kTypes);
}

// Families with layers of another kind than attention + MLP: what is missing, said as such.
std::string HybridRefusal(const std::string& type) {
  if (type == "qwen3_next")
    return "qwen3_next: 3 of every 4 layers are Gated DeltaNet linear attention (full_attention_interval), "
           "which gpuplan does not model";
  if (type == "nemotron_h")
    return "nemotron_h: the layers follow hybrid_override_pattern (Mamba2 'M', attention '*', MLP '-'); "
           "gpuplan models no Mamba2 (state-space) layers";
  if (type == "nemotron-nas")
    return "nemotron-nas: block_configs gives each layer its own attention and MLP (or none); gpuplan "
           "models one shape for every layer";
  return "";
}

Status ReadShape(const Reader& r, const std::string& type, Arch& a);

Status ReadFamily(const Reader& r, const std::string& type, Arch& a) {
  const std::string text_type = TextType(type);
  if (!text_type.empty()) {
    // The language model is text_config; the vision tower (vision_config) counts when asked.
    if (!r.root["text_config"] || !r.root["text_config"].IsMap())
      return Status::BadInput(r.At("text_config"), "a " + type + " config needs a text_config object");
    const Reader text{r.root["text_config"], r.file};
    GPUPLAN_RETURN_IF_ERROR(ReadShape(text, text_type, a));
    GPUPLAN_RETURN_IF_ERROR(ReadWindows(text, text_type, a));
    GPUPLAN_RETURN_IF_ERROR(ReadRope(text, text_type, a));
  } else {
    GPUPLAN_RETURN_IF_ERROR(ReadShape(r, type, a));
    GPUPLAN_RETURN_IF_ERROR(ReadWindows(r, type, a));
    GPUPLAN_RETURN_IF_ERROR(ReadRope(r, type, a));
  }
  if (!r.root["vision_config"] || !r.root["vision_config"].IsMap()) return Status::Ok();
  const Reader vision{r.root["vision_config"], r.file};
  if (type == "qwen2_5_vl" || type == "qwen3_vl") ASSIGN_OR_RETURN(a.vision_params, QwenVisionParams(vision, type == "qwen3_vl"));
  if (type == "gemma3") ASSIGN_OR_RETURN(a.vision_params, SiglipVisionParams(vision, a.hidden));
  return Status::Ok();
}

Status ReadShape(const Reader& r, const std::string& type, Arch& a) {
  if (IsLlamaStyle(type)) return ReadLlamaFamily(r, type, a);
  if (type == "deepseek_v2" || type == "deepseek_v3" || type == "deepseek_v32" || type == "kimi_k2")
    return ReadDeepseek(r, type, a);
  if (type == "gemma" || type == "gemma2" || type == "gemma3_text") return ReadGemma(r, type, a);
  if (type == "llama4_text") return ReadLlama4Text(r, a);
  if (type == "starcoder2") return ReadStarcoder2(r, a);
  if (type == "chatglm") return ReadChatglm(r, a);
  if (type == "gpt2") return ReadGpt2(r, a);
  if (type == "gpt_neox") return ReadGptNeox(r, a);
  const std::string keys =
      " with job keys instead: model.layers, model.hidden, model.heads, model.kv_heads, model.head_dim, "
      "model.ffn_hidden, model.vocab, model.mlp, model.tied_embeddings (and model.experts, "
      "model.experts_per_token, model.moe_ffn_hidden, model.shared_experts, model.dense_layers for a MoE; "
      "docs/model/memory.md §1.1 says what each counts)";
  if (const std::string hybrid = HybridRefusal(type); !hybrid.empty())
    return Status::BadInput(r.At("model_type"), hybrid + "; describe the closest single-kind shape" + keys);
  return Status::BadInput(r.At("model_type"), "unsupported model_type '" + type + "' (supported: " + kSupported +
                                                  "); describe the shape" + keys);
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
  const bool nested = !TextType(type).empty() && r.root["text_config"];
  const YAML::Node obj = nested ? r.root["text_config"] : r.root;
  const std::string prefix = nested ? "text_config." : "";
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
  // An engine loads the directory holding config.json and the weights.
  if (const size_t slash = path.find_last_of('/'); slash != std::string::npos) a.checkpoint = path.substr(0, slash);
  else a.checkpoint = ".";
  GPUPLAN_RETURN_IF_ERROR(ReadFamily(r, type, a));
  if (Status st = ValidateArch(a, {path, 0, ""}); !st.ok()) return AtConfigKey(st, r, type);
  return a;
}

}  // namespace gpuplan
