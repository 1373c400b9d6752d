// Architecture of a decoder-only transformer, and the exact parameter count it implies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuplan/status.h"

namespace gpuplan {

// gelu: 2 matrices (up, down); swiglu and geglu (Gemma) are gated: 3 (gate, up, down).
enum class MlpKind { kGelu, kSwiGlu, kGeGlu };
enum class NormKind { kLayerNorm, kRmsNorm };  // layernorm: weight (+bias if norm_bias); rmsnorm: weight
enum class PositionKind { kLearned, kRotary, kAlibi };
// Hugging Face rope_scaling.rope_type (or .type): none, llama3 (Llama 3.1+: factor, low/high
// frequency factors, original positions), linear (positions divided by factor), dynamic (NTK),
// yarn (DeepSeek-V2/V3, Qwen long context), longrope (Phi-3/Phi-4: per-frequency long/short
// factors; factor = max / original positions). Only llama3 and linear have Megatron-LM flags.
enum class RopeScaling { kNone, kLlama3, kLinear, kDynamic, kYarn, kLongRope };

struct Arch {
  std::string name;              // Default: "custom".
  // What a serving engine loads: the Hugging Face repo a preset was read from (its source), or the
  // directory of the config.json given. Default: "" (unknown: exports leave MODEL for the user).
  std::string checkpoint;
  int64_t layers = 0;            // Default: 0 (required).
  int64_t hidden = 0;            // Default: 0 (required).
  int64_t heads = 0;             // Default: 0 (required).
  int64_t kv_heads = 0;          // Default: 0 = same as heads (MHA); < heads is GQA, 1 is MQA.
  int64_t head_dim = 0;          // Default: 0 = hidden / heads.
  int64_t ffn_hidden = 0;        // Default: 0 = 4 * hidden (gelu) or required (swiglu).
  int64_t vocab = 0;             // Default: 0 (required).
  MlpKind mlp = MlpKind::kSwiGlu;          // Default: swiglu.
  NormKind norm = NormKind::kRmsNorm;      // Default: rmsnorm.
  bool norm_bias = false;        // Default: false (LayerNorm bias; GPT-2 has it, MPT does not).
  bool linear_bias = false;      // Default: false (bias on every linear, as in GPT-2).
  bool qkv_bias = false;         // Default: false (bias on q/k/v only, as in Qwen2).
  bool tied_embeddings = false;  // Default: false (separate lm head).
  int64_t norms_per_layer = 2;   // Default: 2 (before attention, before the MLP); Gemma 2/3: 4 (also after each).
  bool qk_norm = false;          // Default: false (an RMSNorm of head_dim on q and on k, as in Qwen3 and Gemma 3).
  PositionKind position = PositionKind::kRotary;  // Default: rotary.
  int64_t max_positions = 0;     // Default: 0 (only learned positions store a table).
  // Rotary base, norm epsilon and rope scaling: no effect on memory or time, but the engines'
  // model flags (Megatron --rotary-base, --norm-epsilon, --use-rope-scaling) must match the
  // checkpoint's config.json, or a fine-tune trains a different model (docs/export.md).
  double rope_theta = 10000;     // Default: 10000 (RoFormer, HF LlamaConfig's default).
  double norm_eps = 1e-5;        // Default: 1e-5 (rms_norm_eps / layer_norm_eps).
  RopeScaling rope_scaling = RopeScaling::kNone;  // Default: none.
  double rope_factor = 0;        // Default: 0 (no scaling); rope_scaling.factor.
  double rope_low_freq_factor = 0;   // Default: 0; llama3: rope_scaling.low_freq_factor (1 in Llama 3.1).
  double rope_high_freq_factor = 0;  // Default: 0; llama3: rope_scaling.high_freq_factor (4 in Llama 3.1).
  int64_t rope_original_max_positions = 0;  // Default: 0; rope_scaling.original_max_position_embeddings.
  // Mixture of experts. experts == 0 means dense.
  int64_t experts = 0;            // Default: 0 (dense model).
  int64_t experts_per_token = 0;  // Default: 0 (top-k routing; required when experts > 0).
  int64_t shared_experts = 0;     // Default: 0 (always-on experts, as in DeepSeek/Qwen-MoE).
  int64_t moe_ffn_hidden = 0;     // Default: 0 = ffn_hidden (per expert).
  int64_t dense_layers = 0;       // Default: 0 (first N layers use a dense MLP instead of MoE).
  bool router_bias = false;       // Default: false (a per-expert router bias: DeepSeek-V3 e_score_correction_bias).
  // Multi-head latent attention (DeepSeek-V2/V3, docs/model/memory.md §1.1): kv_lora_rank > 0 turns
  // it on; every head then has q/k of qk_nope_head_dim + qk_rope_head_dim and v of v_head_dim.
  int64_t q_lora_rank = 0;        // Default: 0 = a full-rank q_proj (DeepSeek-V2-Lite).
  int64_t kv_lora_rank = 0;       // Default: 0 (standard attention).
  int64_t qk_nope_head_dim = 0;   // Default: 0.
  int64_t qk_rope_head_dim = 0;   // Default: 0.
  int64_t v_head_dim = 0;         // Default: 0 = HeadDim().
  bool dropout = false;           // Default: false (modern LLM training runs without dropout).
  // Layer pieces of newer families (docs/model/memory.md §1.1), each read from config.json.
  bool qk_norm_full_width = false;  // Default: false; true: the q/k norms span heads x head_dim and
                                    // kv_heads x head_dim (OLMo 2, MiniMax-M2) instead of one head_dim.
  bool attn_sinks = false;          // Default: false (a learned sink logit per head: gpt-oss).
  int64_t shared_expert_ffn = 0;    // Default: 0 = MoeFfn() (Qwen-MoE: shared_expert_intermediate_size).
  bool shared_expert_gate = false;  // Default: false (Qwen-MoE: a sigmoid gate, hidden x 1, on the shared expert).
  int64_t index_heads = 0;          // Default: 0 (DeepSeek-V3.2's lightning indexer: index_n_heads).
  int64_t index_head_dim = 0;       // Default: 0 (index_head_dim).
  // Multi-token prediction (DeepSeek-V3 §2.2, GLM-4.5, MiMo): counted only when asked (model.mtp_layers).
  int64_t mtp_layers = 0;           // Default: 0 (MTP modules counted; each one decoder layer + projection + norms).
  bool mtp_own_embedding = false;   // Default: false; true: each MTP module stores its own embedding and head
                                    // copies in the checkpoint (DeepSeek-V3's layer 61).
  // A vision tower and projector read from vision_config, counted only when asked (model.include_vision).
  int64_t vision_params = 0;        // Default: 0 (none in the config, or not counted by this reader).
  bool include_vision = false;      // Default: false (the language model alone).
  // Attention windows (docs/model/compute.md §1): windowed_layers layers attend a sliding window of
  // attn_window keys (Mistral, Gemma 2/3, gpt-oss), or a chunk of attn_window tokens (Llama 4).
  int64_t attn_window = 0;          // Default: 0 (every layer attends every earlier token).
  int64_t windowed_layers = 0;      // Default: 0 (layers that use the window; the others attend fully).
  bool attn_chunked = false;        // Default: false (sliding); true: chunked attention (Llama 4).
  // A raw count for quick what-ifs: when > 0 the shape above is synthesized from it.
  double params_override = 0;     // Default: 0 (count from the shape).

  bool IsMla() const { return kv_lora_rank > 0; }
  int64_t KvHeads() const { return kv_heads > 0 ? kv_heads : heads; }
  // Width of one q (and k) head; MLA: the no-position part plus the rotary part.
  int64_t HeadDim() const {
    if (IsMla()) return qk_nope_head_dim + qk_rope_head_dim;
    return head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0);
  }
  int64_t VHeadDim() const { return v_head_dim > 0 ? v_head_dim : HeadDim(); }
  int64_t QDim() const { return heads * HeadDim(); }       // q (and the q.k product) width
  int64_t KvDim() const { return KvHeads() * HeadDim(); }  // k width (= v width unless v_head_dim differs)
  int64_t VDim() const { return KvHeads() * VHeadDim(); }  // v width
  int64_t ODim() const { return heads * VHeadDim(); }      // attention output = o_proj input width
  int64_t Ffn() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  int64_t MoeFfn() const { return moe_ffn_hidden > 0 ? moe_ffn_hidden : Ffn(); }
  bool IsMoe() const { return experts > 0; }
  int64_t MoeLayers() const { return IsMoe() ? layers - dense_layers : 0; }
  bool GatedMlp() const { return mlp != MlpKind::kGelu; }
  int MlpMatrices() const { return GatedMlp() ? 3 : 2; }
};

// Keys a query attends, averaged over the layers (windowed ones included): causal = the mean over
// positions of the keys inside the causal mask (what a flash kernel computes: s/2 for full
// attention); causal = false = the model-FLOPs convention that counts s keys for full attention and
// min(s, window) for a windowed layer (docs/model/compute.md §1).
double AttendedKeysPerQuery(const Arch& arch, double seq_len, bool causal);

// Parameter counts, split the way memory and parallelism need them (docs/model/memory.md §1).
struct ParamCounts {
  int64_t embedding = 0;       // token (+ learned position) embeddings
  int64_t lm_head = 0;         // output projection (0 when tied)
  int64_t final_norm = 0;      // final norm
  int64_t attn_per_layer = 0;  // q,k,v,o matrices and their biases (MLA: the down/up projections)
  int64_t norm_per_layer = 0;  // every norm of a layer (+ q/k norms, MLA latent norms)
  int64_t dense_mlp_per_layer = 0;   // MLP of a dense layer
  int64_t expert_per_layer = 0;      // all routed experts of a MoE layer
  int64_t shared_expert_per_layer = 0;
  int64_t router_per_layer = 0;      // router weights (+ per-expert bias)
  int64_t mtp = 0;             // multi-token-prediction modules (when counted)
  int64_t vision = 0;          // vision tower + projector (when counted)
  int64_t total = 0;           // every parameter
  int64_t active = 0;          // parameters touched per token (MoE: top-k experts only)
};

// The largest parameter count gpuplan models (model.params: 1e15, or a shape): ValidateArch refuses
// a shape beyond it, so every count of an accepted shape is exact in int64 with room for bytes.
inline constexpr int64_t kMaxParamCount = 1'000'000'000'000'000;

// Exact for every shape ValidateArch accepts (summed in 128 bits; a refused shape saturates).
ParamCounts CountParams(const Arch& arch);

// LoRA adapters: rank r on the named projections of every layer.
struct LoraSpec {
  int64_t rank = 16;               // Default: 16.
  double alpha = 32;               // Default: 32 (scaling only; no memory effect).
  std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "o_proj"};  // Default: attention.
};
// Trainable adapter parameters (exact in 128 bits, saturating at INT64_MAX); unknown target names are reported with their location by the parser.
int64_t CountLoraParams(const Arch& arch, const LoraSpec& lora);
// gpuplan's own module names (LoraSpec::targets after ResolveLoraTargets): the Hugging Face
// projections, the fused linear_qkv / linear_fc1 of Megatron-Core, DeepSeek's MLA names, all-linear.
bool IsKnownLoraTarget(const std::string& name);
// Whether `lora` adapts module `name` (one of IsKnownLoraTarget's): listed, or all-linear for an
// unfused projection (all-linear adapts each projection once, never a fused name besides).
bool LoraTargets(const LoraSpec& lora, const std::string& name);
// Target names as each framework writes them -> gpuplan's module names (docs/model/finetune.md
// FT§0): Hugging Face/PEFT (q_proj..down_proj), torchtune (output_proj, w1/w2/w3), Megatron-Core
// (linear_qkv, linear_proj, linear_fc1, linear_fc2), other families' fused names (qkv_proj,
// query_key_value, gate_up_proj, ...), globs (*_proj), PEFT-style regular expressions matched
// against the module's name or path, and all-linear. An unknown name, a pattern that matches no
// module, or fused and separate names for the same projections is an error at `where`.
Result<std::vector<std::string>> ResolveLoraTargets(const std::vector<std::string>& names, const Location& where);

// Checks the shape is consistent (heads divide hidden, kv_heads divide heads, ...), every dimension
// at most 2^24 and the whole count at most kMaxParamCount (an error at the key that makes it).
Status ValidateArch(const Arch& arch, const Location& where);

// Synthesizes a plausible dense shape for a raw parameter count (docs/model/memory.md §1.3).
Arch ArchFromParamCount(double params);

// Built-in presets (data/models.csv). Config paths and repo ids are resolved by the job parser.
const std::vector<Arch>& Presets();
Result<Arch> FindPreset(const std::string& name);

// Hugging Face config.json: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v2,
// deepseek_v3, gemma, gemma2, gemma3_text, gemma3 (its text_config), gpt2, gpt_neox. A path to a
// folder reads the config.json inside it.
Result<Arch> ArchFromHfConfig(const std::string& path);

std::string ToString(MlpKind k);
std::string ToString(NormKind k);
std::string ToString(PositionKind k);
std::string ToString(RopeScaling k);  // the Hugging Face rope_type: none, llama3, linear, dynamic, yarn, longrope
Result<RopeScaling> ParseRopeScaling(const std::string& s, const Location& where);

}  // namespace gpuplan
