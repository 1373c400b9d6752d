// Job parsing and validation: YAML/JSON files (yaml-cpp parses both, with line numbers) and flags.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>

#include "gpuplan/catalog.h"
#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"
#include "gpuplan/job.h"

#include <algorithm>
#include "gpuplan/job_keys.h"
#include "gpuplan/strings.h"
#include "gpuplan/yaml_doc.h"

namespace gpuplan {

namespace {

Status Bad(const Location& where, const std::string& why) { return Status::BadInput(where, why); }

// The project's one number parser (csv.h): decimal only, the whole value, finite; no hex, no inf/nan.
Result<double> ParseNumber(const std::string& s, const Location& where) { return ParseDecimal(s, where); }

Result<int64_t> ParseInt(const std::string& s, const Location& where, int64_t min, int64_t max) {
  auto v = ParseNumber(s, where);
  if (!v.ok()) return v.status();
  if (*v != std::floor(*v)) return Bad(where, "expected a whole number, got '" + s + "'");
  if (*v < static_cast<double>(min) || *v > static_cast<double>(max))
    return Bad(where, "must be in " + std::to_string(min) + ".." + std::to_string(max) + ", got " + s);
  return static_cast<int64_t>(*v);
}

Result<bool> ParseBool(const std::string& s, const Location& where) {
  if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
  if (s == "false" || s == "no" || s == "off" || s == "0") return false;
  return Bad(where, "expected true or false, got '" + s + "'");
}

template <typename E>
Result<E> ParseEnum(const std::string& s, const Location& where,
                    std::initializer_list<std::pair<const char*, E>> options) {
  std::string names;
  for (const auto& [name, value] : options) {
    if (s == name) return value;
    names += (names.empty() ? "" : "|") + std::string(name);
  }
  return Bad(where, "expected one of " + names + ", got '" + s + "'");
}

// The preset nearest to a name (case, "-hf"/"-chat" suffixes and an org prefix ignored), or "".
std::string ClosePreset(const std::string& name) {
  std::string n = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);
  for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* suffix : {"-hf", "-chat", "-instruct", "-base"})
    if (n.size() > std::strlen(suffix) && n.compare(n.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      n.erase(n.size() - std::strlen(suffix));
  if (n.rfind("meta-", 0) == 0) n.erase(0, 5);
  std::string best;
  size_t best_d = 3;
  for (const auto& a : Presets())
    if (size_t d = EditDistance(n, a.name); d < best_d) best_d = d, best = a.name;
  return best;
}

// An error from a config.json: one inside the file (a line of it) stands; one about the file as a
// whole (cannot read it: a FIFO, a device, too big) is said at the key that named it.
Status ConfigError(const Status& st, const Location& w) {
  const Location& l = st.location();
  if (!l.file.empty() && l.line > 0) return st;
  return Bad(w, (l.file.empty() ? "" : "'" + l.file + "': ") + (l.key.empty() ? "" : l.key + ": ") + st.reason());
}

// --model given something that is not a preset: a config.json path (or a folder holding one),
// else a message that says how to get there.
Result<Arch> ModelFromPath(const std::string& s, const Location& w) {
  const bool json_path = s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0;
  // InputPath*: the filesystem, or the web server's posted files (input_file.h), never a path of a request.
  const bool is_dir = InputPathIsDirectory(s);
  if (json_path || is_dir) {
    const std::string file = is_dir ? s + "/config.json" : s;
    if (InputPathExists(file)) {
      auto a = ArchFromHfConfig(file);
      if (!a.ok()) return ConfigError(a.status(), w);
      return a;
    }
    return Bad(w, "no such file '" + file + "': download the model's config.json (from its Hugging Face page, " +
                      "Files tab) and pass --model path/to/config.json");
  }
  const std::string close = ClosePreset(s);
  const std::string preset_hint = close.empty() ? "" : ", or use the built-in preset --model " + close;
  if (s.find('/') != std::string::npos)
    return Bad(w, "'" + s + "' looks like a Hugging Face repo id; gpuplan reads no network: download its config.json " +
                      "(https://huggingface.co/" + s + "/blob/main/config.json) and pass --model path/to/config.json" +
                      preset_hint);
  std::string known;
  for (const auto& a : Presets()) known += (known.empty() ? "" : ", ") + a.name;
  return Bad(w, "unknown model preset '" + s + "'" + (close.empty() ? "" : " (did you mean '" + close + "'?)") +
                    "; presets: " + known + "; or pass --model path/to/config.json");
}

constexpr int64_t kMaxDim = int64_t{1} << 24;      // any shape dimension
constexpr int64_t kMaxGpus = int64_t{1} << 20;     // a million GPUs
constexpr int64_t kMaxSeq = int64_t{1} << 24;      // 16M tokens per sequence
constexpr int64_t kMaxNumRequests = 100000;        // serving.num_requests: the simulation steps through every one

using Setter = std::function<Status(Job&, const std::string&, const Location&)>;


template <typename Get>
Setter Int(Get get, int64_t min, int64_t max) {
  return [=](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseInt(s, w, min, max);
    if (!v.ok()) return v.status();
    get(j) = *v;
    return Status::Ok();
  };
}
template <typename Get, typename Valid>
Setter Real(Get get, Valid valid, const char* must) {
  return [=](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseNumber(s, w);
    if (!v.ok()) return v.status();
    if (!valid(*v)) return Bad(w, std::string(must) + ", got " + s);
    get(j) = *v;
    return Status::Ok();
  };
}

template <typename Get>
Setter Bool(Get get) {
  return [=](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseBool(s, w);
    if (!v.ok()) return v.status();
    get(j) = *v;
    return Status::Ok();
  };
}
template <typename Get>
Setter Str(Get get) {
  return [=](Job& j, const std::string& s, const Location& w) -> Status {
    if (s.empty()) return Bad(w, "must not be empty");
    get(j) = s;
    return Status::Ok();
  };
}

template <typename Get>
Setter List(Get get, const char* what) {
  return [=](Job& j, const std::string& s, const Location& w) -> Status {
    std::vector<std::string> items = SplitList(s);
    for (const auto& t : items)
      if (t.empty()) return Bad(w, std::string("empty ") + what + " name");
    get(j) = items;
    return Status::Ok();
  };
}

// Where a key was given, for a message about another key: "on line 12", "--concurrency on the command line".
std::string GivenAt(const Location& l) {
  if (l.line > 0) return "on line " + std::to_string(l.line);
  if (l.key.rfind("--", 0) == 0) return "as " + l.key + " on the command line";
  return "in " + (l.file.empty() ? std::string("the job") : l.file);
}

// serving.concurrency | serving.request_rate | serving.max_throughput | serving.num_requests choose
// serving.load: one of them.
// A second one from the same source (the file, or the command line) is an error at its location; a
// flag replaces the file's choice, as flags override the file.
Status SetServingLoad(Job& j, const std::string& key, ServingLoad load, const Location& w) {
  static const char* kLoadKeys[] = {"serving.concurrency", "serving.request_rate", "serving.max_throughput",
                                    "serving.num_requests"};
  for (const char* other : kLoadKeys) {
    if (key == other) continue;
    auto it = j.set_keys.find(other);
    if (it == j.set_keys.end()) continue;
    if (it->second.file == w.file)
      return Bad(w, "give one load: serving.concurrency, serving.request_rate, serving.max_throughput or serving.num_requests (" + std::string(other) +
                        " is given " + GivenAt(it->second) + ")");
    j.set_keys.erase(it);
  }
  j.serving.load = load;
  return Status::Ok();
}

template <typename Get>
Setter LoadValue(const char* key, ServingLoad load, Get get, double min, double max, const char* must) {
  return [=](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseNumber(s, w);
    if (!v.ok()) return v.status();
    if (!(*v >= min && *v <= max)) return Bad(w, std::string(must) + ", got " + s);
    GPUPLAN_RETURN_IF_ERROR(SetServingLoad(j, key, load, w));
    get(j) = *v;
    return Status::Ok();
  };
}

struct KeyEntry {
  JobKey key;
  Setter set;
};


// The serving: section (`gpuplan serving`; docs/model/serving.md).
template <typename Add>
void AddServingKeys(Add& add) {
  add("serving.engine", "engine", "vllm|sglang|tensorrt-llm|generic: the serving engine's profile (data/serving_engines.csv) (default vllm)", Str([](Job& j) -> std::string& { return j.serving.engine; }));
  add("serving.engine_version", "engine-version", "the engine's version, e.g. 0.19 (default: its newest profile)", Str([](Job& j) -> std::string& { return j.serving.engine_version; }));
  add("serving.weights", "weights", "bf16|fp16|fp8|int8|int4-awq|int4-gptq|fp4: weights as the engine loads them (default bf16)", [](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseEnum<WeightFormat>(s, w, {{"bf16", WeightFormat::kBf16}, {"fp16", WeightFormat::kFp16}, {"fp8", WeightFormat::kFp8}, {"int8", WeightFormat::kInt8}, {"int4-awq", WeightFormat::kInt4Awq}, {"int4-gptq", WeightFormat::kInt4Gptq}, {"fp4", WeightFormat::kFp4}});
    if (!v.ok()) return v.status();
    j.serving.weights = *v;
    return Status::Ok();
  });
  add("serving.kv_dtype", "kv-dtype", "auto|fp8: KV-cache dtype; auto = the model's (default auto)", [](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseEnum<KvDtype>(s, w, {{"auto", KvDtype::kAuto}, {"fp8", KvDtype::kFp8}});
    if (!v.ok()) return v.status();
    j.serving.kv_dtype = *v;
    return Status::Ok();
  });
  add("serving.gpu_memory_utilization", "gpu-memory-utilization", "fraction of GPU memory the engine may use, 0 < x <= 1 (default: the engine's)", Real([](Job& j) -> double& { return j.serving.gpu_memory_utilization; }, [](double v) { return v > 0 && v <= 1; }, "must be in (0, 1]"));
  add("serving.max_model_len", "max-model-len", "longest request in tokens, prompt + output (default: input_len_p90 + output_len_p90)", Int([](Job& j) -> int64_t& { return j.serving.max_model_len; }, 1, kMaxSeq));
  add("serving.max_num_seqs", "max-num-seqs", "most sequences in one batch (default: the engine's for the GPU)", Int([](Job& j) -> int64_t& { return j.serving.max_num_seqs; }, 1, 1 << 20));
  add("serving.max_num_batched_tokens", "max-num-batched-tokens", "most tokens in one step, the chunked-prefill budget (default: the engine's for the GPU)", Int([](Job& j) -> int64_t& { return j.serving.max_num_batched_tokens; }, 1, kMaxSeq));
  auto tokens = [](double v) { return v >= 1 && v <= static_cast<double>(kMaxSeq); };
  const char* tokens_must = "must be in 1..16777216 tokens";
  add("serving.input_len", "input-len", "mean prompt length in tokens (default 1000)", Real([](Job& j) -> double& { return j.serving.input_len; }, tokens, tokens_must));
  add("serving.output_len", "output-len", "mean output length in tokens (default 200)", Real([](Job& j) -> double& { return j.serving.output_len; }, tokens, tokens_must));
  add("serving.input_len_p90", "input-len-p90", "p90 prompt length, >= input_len (default: = input_len, fixed lengths)", Real([](Job& j) -> double& { return j.serving.input_len_p90; }, tokens, tokens_must));
  add("serving.output_len_p90", "output-len-p90", "p90 output length, >= output_len (default: = output_len, fixed lengths)", Real([](Job& j) -> double& { return j.serving.output_len_p90; }, tokens, tokens_must));
  add("serving.concurrency", "concurrency", "load: requests in flight (closed loop); one of concurrency, request_rate, max_throughput (default 1)", LoadValue("serving.concurrency", ServingLoad::kConcurrency, [](Job& j) -> double& { return j.serving.concurrency; }, 1, 1e6, "must be in 1..1e6 requests in flight"));
  add("serving.request_rate", "request-rate", "load: Poisson arrivals in requests/s (open loop); one of concurrency, request_rate, max_throughput", LoadValue("serving.request_rate", ServingLoad::kRequestRate, [](Job& j) -> double& { return j.serving.request_rate; }, 1e-6, 1e6, "must be in (0, 1e6] requests/s"));
  add("serving.max_throughput", "max-throughput", "load: true = all requests at once, the most the setup serves; one of concurrency, request_rate, max_throughput", [](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseBool(s, w);
    if (!v.ok()) return v.status();
    if (!*v) return Bad(w, "only true chooses a load; for a fixed load give serving.concurrency or serving.request_rate instead");
    return SetServingLoad(j, "serving.max_throughput", ServingLoad::kMaxThroughput, w);
  });
  add("serving.frontend", "frontend", "true = requests come through the engine's HTTP server (tokenisation, streaming); false = the engine called directly, as offline batch inference (default true)", [](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseBool(s, w);
    if (!v.ok()) return v.status();
    j.serving.frontend = *v;
    return Status::Ok();
  });
  add("serving.num_requests", "num-requests", "load: this many requests sent at once (an offline batch), simulated step by step; one of concurrency, request_rate, max_throughput, num_requests", [](Job& j, const std::string& s, const Location& w) -> Status {
    auto v = ParseInt(s, w, 1, kMaxNumRequests);
    if (!v.ok()) return v.status();
    GPUPLAN_RETURN_IF_ERROR(SetServingLoad(j, "serving.num_requests", ServingLoad::kNumRequests, w));
    j.serving.num_requests = *v;
    return Status::Ok();
  });
  auto ms = [](double v) { return v > 0 && v <= 1e7; };
  add("serving.ttft_p90_ms", "ttft-p90-ms", "--plan SLA: p90 time to first token in ms (default: no bound)", Real([](Job& j) -> double& { return j.serving.ttft_p90_ms; }, ms, "must be in (0, 1e7] ms"));
  add("serving.tpot_p90_ms", "tpot-p90-ms", "--plan SLA: p90 time per output token in ms (default: no bound)", Real([](Job& j) -> double& { return j.serving.tpot_p90_ms; }, ms, "must be in (0, 1e7] ms"));
  add("serving.target_output_tokens_per_s", "target-output-tokens-per-s", "--plan load target: output tokens/s over all replicas (default: none; a request_rate instead)", Real([](Job& j) -> double& { return j.serving.target_output_tokens_per_s; }, [](double v) { return v > 0 && v <= 1e12; }, "must be in (0, 1e12] tokens/s"));
}

const std::vector<KeyEntry>& Entries() {
  static const std::vector<KeyEntry> entries = [] {
    std::vector<KeyEntry> e;
    auto add = [&](std::string key, std::string flag, std::string help, Setter s) {
      e.push_back({{std::move(key), std::move(flag), std::move(help)}, std::move(s)});
    };
    // model
    add("model.preset", "model", "built-in preset (gpuplan models) or a Hugging Face config.json path", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto a = FindPreset(s);
      if (!a.ok()) a = ModelFromPath(s, w);
      if (!a.ok()) return a.status();
      j.arch = *a;
      return Status::Ok();
    });
    add("model.config", "config", "Hugging Face config.json path", [](Job& j, const std::string& s, const Location& w) -> Status {
      if (!InputPathExists(s) || InputPathIsDirectory(s)) {
        auto a = ModelFromPath(s, w);
        if (!a.ok()) return a.status();
        j.arch = *a;
        return Status::Ok();
      }
      auto a = ArchFromHfConfig(s);
      if (!a.ok()) return ConfigError(a.status(), w);
      j.arch = *a;
      return Status::Ok();
    });
    add("model.params", "params", "raw parameter count for what-ifs, e.g. 7.5e9", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseNumber(s, w);
      if (!v.ok()) return v.status();
      if (*v < 1e3 || *v > 1e15) return Bad(w, "must be in 1e3..1e15, got " + s);
      j.arch = ArchFromParamCount(*v);
      return Status::Ok();
    });
    add("model.name", "name", "display name", Str([](Job& j) -> std::string& { return j.arch.name; }));
    add("model.layers", "layers", "transformer layers", Int([](Job& j) -> int64_t& { return j.arch.layers; }, 1, kMaxDim));
    add("model.hidden", "hidden", "hidden size", Int([](Job& j) -> int64_t& { return j.arch.hidden; }, 1, kMaxDim));
    add("model.heads", "heads", "attention heads", Int([](Job& j) -> int64_t& { return j.arch.heads; }, 1, kMaxDim));
    add("model.kv_heads", "kv-heads", "key/value heads (GQA/MQA); default = heads", Int([](Job& j) -> int64_t& { return j.arch.kv_heads; }, 1, kMaxDim));
    add("model.head_dim", "head-dim", "head dimension; default hidden/heads", Int([](Job& j) -> int64_t& { return j.arch.head_dim; }, 1, kMaxDim));
    add("model.ffn_hidden", "ffn-hidden", "MLP inner size; default 4*hidden for gelu", Int([](Job& j) -> int64_t& { return j.arch.ffn_hidden; }, 1, kMaxDim));
    add("model.vocab", "vocab", "vocabulary size", Int([](Job& j) -> int64_t& { return j.arch.vocab; }, 1, kMaxDim));
    add("model.mlp", "mlp", "gelu|swiglu|geglu (default swiglu)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<MlpKind>(s, w, {{"gelu", MlpKind::kGelu}, {"swiglu", MlpKind::kSwiGlu}, {"geglu", MlpKind::kGeGlu}});
      if (!v.ok()) return v.status();
      j.arch.mlp = *v;
      return Status::Ok();
    });
    add("model.norm", "norm", "layernorm|rmsnorm (default rmsnorm)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<NormKind>(s, w, {{"layernorm", NormKind::kLayerNorm}, {"rmsnorm", NormKind::kRmsNorm}});
      if (!v.ok()) return v.status();
      j.arch.norm = *v;
      return Status::Ok();
    });
    add("model.norm_bias", "norm-bias", "LayerNorm has a bias (default false)", Bool([](Job& j) -> bool& { return j.arch.norm_bias; }));
    add("model.linear_bias", "linear-bias", "every linear has a bias (default false)", Bool([](Job& j) -> bool& { return j.arch.linear_bias; }));
    add("model.qkv_bias", "qkv-bias", "q/k/v projections have a bias (default false)", Bool([](Job& j) -> bool& { return j.arch.qkv_bias; }));
    add("model.tied_embeddings", "tied-embeddings", "lm head shares the embedding (default false)", Bool([](Job& j) -> bool& { return j.arch.tied_embeddings; }));
    add("model.position", "position", "learned|rotary|alibi (default rotary)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<PositionKind>(s, w, {{"learned", PositionKind::kLearned}, {"rotary", PositionKind::kRotary}, {"alibi", PositionKind::kAlibi}});
      if (!v.ok()) return v.status();
      j.arch.position = *v;
      return Status::Ok();
    });
    add("model.max_positions", "max-positions", "learned position table size", Int([](Job& j) -> int64_t& { return j.arch.max_positions; }, 1, kMaxSeq));
    add("model.experts", "experts", "MoE routed experts (0 or left out: dense)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseInt(s, w, 0, 1 << 16);
      if (!v.ok()) return v.status();
      // 0 on a MoE preset/config would turn it dense without a word.
      if (*v == 0 && j.arch.IsMoe())
        return Bad(w, "'" + j.arch.name + "' is a MoE model with " + std::to_string(j.arch.experts) +
                          " experts; 0 would make it silently dense (leave experts out, or pick a dense model)");
      j.arch.experts = *v;
      return Status::Ok();
    });
    add("model.experts_per_token", "experts-per-token", "MoE top-k", Int([](Job& j) -> int64_t& { return j.arch.experts_per_token; }, 1, 1 << 16));
    add("model.shared_experts", "shared-experts", "MoE always-on experts", Int([](Job& j) -> int64_t& { return j.arch.shared_experts; }, 0, 1 << 16));
    add("model.moe_ffn_hidden", "moe-ffn-hidden", "expert MLP inner size (default ffn_hidden)", Int([](Job& j) -> int64_t& { return j.arch.moe_ffn_hidden; }, 1, kMaxDim));
    add("model.dense_layers", "dense-layers", "leading dense layers in a MoE model", Int([](Job& j) -> int64_t& { return j.arch.dense_layers; }, 0, kMaxDim));
    add("model.rope_theta", "rope-theta", "rotary base (config.json rope_theta; default 10000)", Real([](Job& j) -> double& { return j.arch.rope_theta; }, [](double v) { return v > 1 && v <= 1e12; }, "must be in (1, 1e12]"));
    add("model.norm_eps", "norm-eps", "norm epsilon (rms_norm_eps; default 1e-5)", Real([](Job& j) -> double& { return j.arch.norm_eps; }, [](double v) { return v > 0 && v <= 0.1; }, "must be in (0, 0.1]"));
    add("model.rope_scaling", "rope-scaling", "none|llama3|linear|dynamic|yarn|longrope (config.json rope_scaling type; default none)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseRopeScaling(s, w);
      if (!v.ok()) return v.status();
      j.arch.rope_scaling = *v;
      return Status::Ok();
    });
    add("model.rope_factor", "rope-factor", "rope_scaling.factor", Real([](Job& j) -> double& { return j.arch.rope_factor; }, [](double v) { return v >= 1 && v <= 1e4; }, "must be in 1..1e4"));
    add("model.rope_low_freq_factor", "rope-low-freq-factor", "rope_scaling.low_freq_factor (llama3)", Real([](Job& j) -> double& { return j.arch.rope_low_freq_factor; }, [](double v) { return v > 0 && v <= 1e4; }, "must be in (0, 1e4]"));
    add("model.rope_high_freq_factor", "rope-high-freq-factor", "rope_scaling.high_freq_factor (llama3)", Real([](Job& j) -> double& { return j.arch.rope_high_freq_factor; }, [](double v) { return v > 0 && v <= 1e4; }, "must be in (0, 1e4]"));
    add("model.rope_original_max_positions", "rope-original-max-positions", "rope_scaling.original_max_position_embeddings", Int([](Job& j) -> int64_t& { return j.arch.rope_original_max_positions; }, 1, kMaxSeq));
    add("model.dropout", "dropout", "dropout layers present (default false)", Bool([](Job& j) -> bool& { return j.arch.dropout; }));
    add("model.include_vision", "include-vision", "count the vision tower of a qwen2_5_vl, qwen3_vl or gemma3 config.json (default false)", Bool([](Job& j) -> bool& { return j.arch.include_vision; }));
    add("model.mtp_layers", "mtp-layers", "multi-token-prediction modules to count (DeepSeek-V3/GLM-4.5/MiMo: 1; default 0)", Int([](Job& j) -> int64_t& { return j.arch.mtp_layers; }, 0, 64));
    // training
    add("training.method", "method", "pretrain|full|lora|qlora|dora (default full)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<Method>(s, w, {{"pretrain", Method::kPretrain}, {"full", Method::kFull}, {"lora", Method::kLora}, {"qlora", Method::kQlora}, {"dora", Method::kDora}});
      if (!v.ok()) return v.status();
      j.training.method = *v;
      return Status::Ok();
    });
    add("training.seq_len", "seq-len", "tokens per sequence (default 2048)", Int([](Job& j) -> int64_t& { return j.training.seq_len; }, 1, kMaxSeq));
    add("training.micro_batch", "micro-batch", "sequences per GPU per micro-step (default 1)", Int([](Job& j) -> int64_t& { return j.training.micro_batch; }, 1, 1 << 20));
    add("training.global_batch", "global-batch", "sequences per optimizer step (default micro_batch*dp)", Int([](Job& j) -> int64_t& { return j.training.global_batch; }, 1, int64_t{1} << 32));
    add("training.tokens", "tokens", "tokens to train on, e.g. 1e9", Real([](Job& j) -> double& { return j.training.tokens; }, [](double v) { return !(v < 0 || v > 1e16); }, "must be in 0..1e16"));
    add("training.samples", "samples", "training samples (fine-tuning); tokens = samples x epochs x tokens_per_sample", Real([](Job& j) -> double& { return j.training.samples; }, [](double v) { return !(v < 1 || v > 1e13); }, "must be in 1..1e13"));
    add("training.epochs", "epochs", "passes over the samples (default 1)", Real([](Job& j) -> double& { return j.training.epochs; }, [](double v) { return !(v <= 0 || v > 1e4); }, "must be > 0 (and at most 1e4)"));
    add("training.tokens_per_sample", "tokens-per-sample", "tokens per sample (default seq_len; the mean length if packed)", Int([](Job& j) -> int64_t& { return j.training.tokens_per_sample; }, 1, kMaxSeq));
    add("training.precision", "precision", "fp32|fp16|bf16|fp8 (default bf16)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<Precision>(s, w, {{"fp32", Precision::kFp32}, {"fp16", Precision::kFp16}, {"bf16", Precision::kBf16}, {"fp8", Precision::kFp8}});
      if (!v.ok()) return v.status();
      j.training.precision = *v;
      return Status::Ok();
    });
    add("training.optimizer", "optimizer", "adamw|adamw-8bit|paged-adamw-8bit|adafactor|sgd (default adamw)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<Optimizer>(s, w, {{"adamw", Optimizer::kAdamW}, {"adamw-8bit", Optimizer::kAdamW8bit}, {"paged-adamw-8bit", Optimizer::kPagedAdamW8bit}, {"adafactor", Optimizer::kAdafactor}, {"sgd", Optimizer::kSgd}});
      if (!v.ok()) return v.status();
      j.training.optimizer = *v;
      return Status::Ok();
    });
    add("training.recompute", "recompute", "none|selective|full (default none)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<Recompute>(s, w, {{"none", Recompute::kNone}, {"selective", Recompute::kSelective}, {"full", Recompute::kFull}});
      if (!v.ok()) return v.status();
      j.training.recompute = *v;
      return Status::Ok();
    });
    add("training.flash_attention", "flash-attention", "fused attention, no s^2 scores kept (default true)", Bool([](Job& j) -> bool& { return j.training.flash_attention; }));
    add("training.fp32_grads", "fp32-grads", "gradients kept in fp32 (Megatron main_grad) (default false)", Bool([](Job& j) -> bool& { return j.training.fp32_grads; }));
    add("training.fp32_allreduce", "fp32-allreduce", "16-bit gradients reduced across data-parallel ranks in fp32 (DeepSpeed fp32_allreduce) (default false)", Bool([](Job& j) -> bool& { return j.training.fp32_allreduce; }));
    add("training.lora.rank", "lora-rank", "LoRA rank (default 16)", Int([](Job& j) -> int64_t& { return j.training.lora.rank; }, 1, 1 << 16));
    add("training.lora.alpha", "lora-alpha", "LoRA alpha (default 32)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseNumber(s, w);
      if (!v.ok()) return v.status();
      if (!(*v > 0 && *v <= 1e6)) return Bad(w, "must be > 0 (and at most 1e6), got " + s);
      j.training.lora.alpha = *v;
      return Status::Ok();
    });
    add("training.lora.targets", "lora-targets", "comma list in any framework's names: q_proj,...,down_proj (HF), output_proj,w1,w2,w3 (torchtune), linear_qkv,linear_proj,linear_fc1,linear_fc2 (Megatron), globs (*_proj), regular expressions, all-linear", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto out = ResolveLoraTargets(SplitList(s), w);
      if (!out.ok()) return out.status();
      j.training.lora.targets = *out;
      return Status::Ok();
    });
    add("training.data_bytes_per_token", "data-bytes-per-token", "bytes the loader reads per token (default 4)", Real([](Job& j) -> double& { return j.training.data_bytes_per_token; }, [](double v) { return !(v <= 0 || v > 1e6); }, "must be in (0, 1e6]"));
    add("training.checkpoint_interval_min", "checkpoint-interval-min", "minutes between checkpoints (default 60)", Real([](Job& j) -> double& { return j.training.checkpoint_interval_min; }, [](double v) { return !(v <= 0 || v > 1e6); }, "must be in (0, 1e6] minutes"));
    add("training.checkpoint_async", "checkpoint-async", "write checkpoints in the background (default false)", Bool([](Job& j) -> bool& { return j.training.checkpoint_async; }));
    add("training.checkpoint_full_state", "checkpoint-full-state", "checkpoints include optimizer state (default true)", Bool([](Job& j) -> bool& { return j.training.checkpoint_full_state; }));
    add("training.framework", "framework", "megatron|megatron-bridge|nemo|torchtitan|torchtune|fsdp|deepspeed|llm-foundry|hf-trainer|unsloth|generic (default generic)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseFramework(s);
      if (!v) {
        std::string all;
        for (const auto& n : FrameworkNames()) all += (all.empty() ? "" : "|") + n;
        return Bad(w, "unknown framework '" + s + "' (expected " + all + ")");
      }
      j.training.framework = *v;
      return Status::Ok();
    });
    add("training.tp_comm_overlap", "tp-comm-overlap", "auto|true|false: TP collectives overlapped with the GEMMs (TE userbuffers, needs sequence parallel; default auto = the framework's)", [](Job& j, const std::string& s, const Location& w) -> Status {
      if (s == "auto") {
        j.training.tp_comm_overlap = -1;
        return Status::Ok();
      }
      auto v = ParseBool(s, w);
      if (!v.ok()) return Bad(w, "expected auto, true or false, got '" + s + "'");
      j.training.tp_comm_overlap = *v ? 1 : 0;
      return Status::Ok();
    });
    add("training.compile", "compile", "torch.compile on the model (default false)", Bool([](Job& j) -> bool& { return j.training.compile; }));
    add("training.master_weights", "master-weights", "fp32|none: none keeps parameters and optimizer states in the compute dtype (default fp32)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<MasterWeights>(s, w, {{"fp32", MasterWeights::kFp32}, {"none", MasterWeights::kNone}});
      if (!v.ok()) return v.status();
      j.training.master_weights = *v;
      return Status::Ok();
    });
    add("training.optimizer_in_backward", "optimizer-in-backward", "each parameter's optimizer step runs in backward, gradients never all held (default false)", Bool([](Job& j) -> bool& { return j.training.optimizer_in_backward; }));
    add("training.activation_offload", "activation-offload", "saved activations offloaded to host memory (default false)", Bool([](Job& j) -> bool& { return j.training.activation_offload; }));
    add("training.loss", "loss", "standard|chunked|fused cross-entropy (default: the framework's)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<LossKind>(s, w, {{"standard", LossKind::kStandard}, {"chunked", LossKind::kChunked}, {"fused", LossKind::kFused}});
      if (!v.ok()) return v.status();
      j.training.loss = *v;
      return Status::Ok();
    });
    add("training.quant", "quant", "QLoRA base quantization nf4|gptq|awq|int8 (default nf4)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<BaseQuant>(s, w, {{"nf4", BaseQuant::kNf4}, {"gptq", BaseQuant::kGptq}, {"awq", BaseQuant::kAwq}, {"int8", BaseQuant::kInt8}});
      if (!v.ok()) return v.status();
      j.training.quant = *v;
      return Status::Ok();
    });
    add("training.fp8_recipe", "fp8-recipe", "tensorwise|delayed|rowwise|mxfp8 FP8 scaling (default tensorwise)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<Fp8Recipe>(s, w, {{"tensorwise", Fp8Recipe::kTensorwise}, {"delayed", Fp8Recipe::kDelayed}, {"rowwise", Fp8Recipe::kRowwise}, {"mxfp8", Fp8Recipe::kMxfp8}});
      if (!v.ok()) return v.status();
      j.training.fp8_recipe = *v;
      return Status::Ok();
    });
    add("training.fused_ops", "fused-ops", "kernels fused beyond the framework's: comma list of norm,rope,act,loss (Liger kernels: all four), or none (default none)", [](Job& j, const std::string& s, const Location& w) -> Status {
      int bits = 0;
      for (const auto& op : SplitList(s)) {
        if (op == "norm") bits |= kFusedNorm;
        else if (op == "rope") bits |= kFusedRope;
        else if (op == "act") bits |= kFusedAct;
        else if (op == "loss") bits |= kFusedLoss;
        else if (op != "none") return Bad(w, "unknown fused op '" + op + "' (expected norm, rope, act, loss or none)");
      }
      j.training.fused_ops = bits;
      return Status::Ok();
    });
    add("training.padding", "padding", "packed|max_length|longest: how samples shorter than seq_len fill a micro-batch (default packed)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<Padding>(s, w, {{"packed", Padding::kPacked}, {"max_length", Padding::kPadToMax}, {"longest", Padding::kPadToLongest}});
      if (!v.ok()) return v.status();
      j.training.padding = *v;
      return Status::Ok();
    });
    // parallel
    add("parallel.tp", "tp", "tensor-parallel size (default 1)", Int([](Job& j) -> int64_t& { return j.parallel.tp; }, 1, 1024));
    add("parallel.pp", "pp", "pipeline stages (default 1)", Int([](Job& j) -> int64_t& { return j.parallel.pp; }, 1, 1024));
    add("parallel.dp", "dp", "data-parallel size (default num_gpus/(tp*pp*cp))", Int([](Job& j) -> int64_t& { return j.parallel.dp; }, 1, kMaxGpus));
    add("parallel.cp", "cp", "context-parallel size (default 1)", Int([](Job& j) -> int64_t& { return j.parallel.cp; }, 1, 1024));
    add("parallel.vpp", "vpp", "virtual pipeline stages per rank (default 1)", Int([](Job& j) -> int64_t& { return j.parallel.vpp; }, 1, 1024));
    add("parallel.layer_split", "layer-split", "blocks per pipeline stage, comma list summing to the layers (mixed pools; default even)", [](Job& j, const std::string& s, const Location& w) -> Status {
      std::vector<int64_t> split;
      for (const auto& item : SplitList(s)) {
        auto v = ParseInt(item, w, 1, 1 << 20);
        if (!v.ok()) return v.status();
        split.push_back(*v);
      }
      if (split.empty()) return Bad(w, "must list the blocks of at least one stage");
      j.parallel.layer_split = split;
      return Status::Ok();
    });
    add("parallel.ep", "ep", "expert-parallel size (default 1)", Int([](Job& j) -> int64_t& { return j.parallel.ep; }, 1, 1 << 16));
    add("parallel.sequence_parallel", "sequence-parallel", "Megatron sequence parallel with tp (default false)", Bool([](Job& j) -> bool& { return j.parallel.sequence_parallel; }));
    add("parallel.zero", "zero", "ZeRO stage 0..3; 3 = FSDP full shard (default 0)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseInt(s, w, 0, 3);
      if (!v.ok()) return v.status();
      j.parallel.zero = static_cast<int>(*v);
      return Status::Ok();
    });
    add("parallel.offload", "offload", "none|optimizer|optimizer+params (default none)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<Offload>(s, w, {{"none", Offload::kNone}, {"optimizer", Offload::kOptimizer}, {"optimizer+params", Offload::kOptimizerParams}});
      if (!v.ok()) return v.status();
      j.parallel.offload = *v;
      return Status::Ok();
    });
    // cluster
    add("cluster.gpu", "gpu", "GPU id or alias (gpuplan catalog gpus) (default h100-sxm-80gb)", Str([](Job& j) -> std::string& { return j.cluster.gpu; }));
    add("cluster.num_gpus", "num-gpus", "GPUs in the job (default tp*pp*cp*dp)", Int([](Job& j) -> int64_t& { return j.cluster.num_gpus; }, 1, kMaxGpus));
    add("cluster.gpus_per_node", "gpus-per-node", "GPUs per node (default 8)", Int([](Job& j) -> int64_t& { return j.cluster.gpus_per_node; }, 1, 72));
    add("cluster.nvlink_domain", "nvlink-domain", "GPUs one NVLink fabric joins across nodes, a multiple of gpus_per_node (GB200 NVL72: 72) (default: the GPU's, else the node)", Int([](Job& j) -> int64_t& { return j.cluster.nvlink_domain; }, 1, 100000));
    add("cluster.intra_node", "intra-node", "intra-node link id (gpuplan catalog links) (default: the GPU's)", Str([](Job& j) -> std::string& { return j.cluster.intra_node; }));
    add("cluster.network", "network", "inter-node link id (gpuplan catalog links)", Str([](Job& j) -> std::string& { return j.cluster.network; }));
    add("cluster.nics_per_node", "nics-per-node", "network ports per node (default one per GPU)", Int([](Job& j) -> int64_t& { return j.cluster.nics_per_node; }, 1, 64));
    add("cluster.power_limit_w", "power-limit-w", "GPU power limit in W (nvidia-smi -pl); compute runs at a lower sustained clock (default: rated board power)", Real([](Job& j) -> double& { return j.cluster.power_limit_w; }, [](double v) { return !(v < 1 || v > 1e5); }, "must be in 1..1e5 W"));
    add("cluster.gpudirect_rdma", "gpudirect-rdma", "GPUDirect RDMA on (default true)", Bool([](Job& j) -> bool& { return j.cluster.gpudirect_rdma; }));
    add("cluster.oversubscription", "oversubscription", "fabric oversubscription, e.g. 2 for 1:2 (default 1)", Real([](Job& j) -> double& { return j.cluster.oversubscription; }, [](double v) { return !(v < 1 || v > 64); }, "must be in 1..64 (1 = non-blocking, 3 = 1:3)"));
    add("cluster.storage", "storage", "storage id for data and checkpoints (gpuplan catalog storage)", Str([](Job& j) -> std::string& { return j.cluster.storage; }));
    add("cluster.cpu_cores_per_gpu", "cpu-cores-per-gpu", "host CPU cores per GPU", Int([](Job& j) -> int64_t& { return j.cluster.cpu_cores_per_gpu; }, 1, 1024));
    // constraints (the planner)
    add("constraints.deadline_hours", "deadline-hours", "finish within this many hours (default none)", Real([](Job& j) -> double& { return j.constraints.deadline_hours; }, [](double v) { return !(v <= 0 || v > 1e6); }, "must be > 0 hours (and below 1e6)"));
    add("constraints.budget_usd", "budget-usd", "total budget in USD, including the rerun factor (default none)", Real([](Job& j) -> double& { return j.constraints.budget_usd; }, [](double v) { return !(v <= 0 || v > 1e12); }, "must be > 0 USD"));
    add("constraints.max_gpus", "max-gpus", "most GPUs to use (default 1024)", Int([](Job& j) -> int64_t& { return j.constraints.max_gpus; }, 1, kMaxGpus));
    add("constraints.clouds", "clouds", "comma list of providers (aws,gcp,azure,alibaba,tencent,huawei,lambda,runpod,...)", List([](Job& j) -> std::vector<std::string>& { return j.constraints.clouds; }, "cloud"));
    add("constraints.gpus", "gpus", "comma list of allowed GPU ids or aliases", List([](Job& j) -> std::vector<std::string>& { return j.constraints.gpus; }, "GPU"));
    add("constraints.precisions", "precisions", "comma list of precisions the planner may choose: bf16,fp16,fp8,fp32 (default bf16, fp16 where the GPU has no bf16; training.precision wins)", [](Job& j, const std::string& s, const Location& w) -> Status {
      std::vector<Precision> out;
      for (const auto& item : SplitList(s)) {
        if (item.empty()) return Bad(w, "empty precision name");
        auto v = ParseEnum<Precision>(item, w, {{"bf16", Precision::kBf16}, {"fp16", Precision::kFp16}, {"fp8", Precision::kFp8}, {"fp32", Precision::kFp32}});
        if (!v.ok()) return v.status();
        if (std::find(out.begin(), out.end(), *v) == out.end()) out.push_back(*v);
      }
      j.constraints.precisions = out;
      return Status::Ok();
    });
    add("constraints.spot", "spot", "no|allowed|only (default no)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<SpotPolicy>(s, w, {{"no", SpotPolicy::kNo}, {"allowed", SpotPolicy::kAllowed}, {"only", SpotPolicy::kOnly}});
      if (!v.ok()) return v.status();
      j.constraints.spot = *v;
      return Status::Ok();
    });
    add("constraints.spot_price_ratio", "spot-price-ratio", "spot price / on-demand for every spot row (default: catalog, >= 0.25)", Real([](Job& j) -> double& { return j.constraints.spot_price_ratio; }, [](double v) { return !(v <= 0 || v > 1); }, "must be in (0, 1] (a share of the on-demand price)"));
    add("constraints.spot_interruptions_per_node_hour", "spot-interruptions-per-node-hour", "spot reclaims per node-hour (default: data, by provider and GPU)", Real([](Job& j) -> double& { return j.constraints.spot_interruptions_per_node_hour; }, [](double v) { return !(v < 0 || v > 10); }, "must be in [0, 10] per node-hour"));
    add("constraints.min_memory_headroom", "min-memory-headroom", "fraction of GPU memory kept free (default: the memory model's p90 error, calibration memory_model_error_margin)", Real([](Job& j) -> double& { return j.constraints.min_memory_headroom; }, [](double v) { return !(v < 0 || v >= 0.9); }, "must be in [0, 0.9)"));
    add("constraints.objective", "objective", "time|cost|balanced (default balanced)", [](Job& j, const std::string& s, const Location& w) -> Status {
      auto v = ParseEnum<Objective>(s, w, {{"time", Objective::kTime}, {"cost", Objective::kCost}, {"balanced", Objective::kBalanced}});
      if (!v.ok()) return v.status();
      j.constraints.objective = *v;
      return Status::Ok();
    });
    add("constraints.rerun_factor", "rerun-factor", "budget multiplier for debugging and reruns (default 1.3)", Real([](Job& j) -> double& { return j.constraints.rerun_factor; }, [](double v) { return !(v < 1 || v > 10); }, "must be in 1..10"));
    add("constraints.allow_tp_across_nodes", "allow-tp-across-nodes", "let tensor parallelism span nodes (default false)", Bool([](Job& j) -> bool& { return j.constraints.allow_tp_across_nodes; }));
    add("constraints.top", "top", "plans to show (default 10)", Int([](Job& j) -> int64_t& { return j.constraints.top; }, 1, 1000));
    AddServingKeys(add);
    return e;
  }();
  return entries;
}

const KeyEntry* FindEntry(const std::string& key) {
  for (const auto& e : Entries())
    if (e.key.key == key) return &e;
  return nullptr;
}

Location At(const std::string& file, const YAML::Node& n, const std::string& key) {
  return {file, n.Mark().line >= 0 ? n.Mark().line + 1 : 0, key};
}

std::string SuggestKey(const std::string& key) {
  // "did you mean": the known key with the smallest edit distance.
  std::string best;
  size_t best_d = 4;
  for (const auto& e : Entries()) {
    size_t d = EditDistance(key, e.key.key);
    if (d < best_d) best_d = d, best = e.key.key;
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

Status WalkMap(Job& job, const YAML::Node& map, const std::string& prefix, const std::string& file);

Status SetFromNode(Job& job, const std::string& key, const YAML::Node& value, const std::string& file) {
  const Location where = At(file, value, key);
  if (key == "training.lora") {
    if (!value.IsMap()) return Bad(where, "expected a mapping {rank, alpha, targets}");
    return WalkMap(job, value, key, file);
  }
  if ((key == "training.lora.targets" || key == "training.fused_ops" || key == "constraints.clouds" || key == "constraints.gpus" ||
       key == "constraints.precisions" || key == "parallel.layer_split") && value.IsSequence()) {
    std::string joined;
    for (const auto& item : value) {
      if (!item.IsScalar()) return Bad(At(file, item, key), "expected a list of names");
      if (item.Scalar().empty()) return Bad(At(file, item, key), "empty name in the list");
      joined += (joined.empty() ? "" : ",") + item.Scalar();
    }
    if (joined.empty()) return Bad(where, "must name at least one entry");
    const KeyEntry* e = FindEntry(key);
    GPUPLAN_RETURN_IF_ERROR(e->set(job, joined, where));
    job.set_keys[key] = where;
    return Status::Ok();
  }
  const KeyEntry* e = FindEntry(key);
  if (e == nullptr) return Bad(where, "unknown key" + SuggestKey(key));
  if (!value.IsScalar()) return Bad(where, "expected a single value, got a " + std::string(value.IsMap() ? "mapping" : value.IsSequence() ? "list" : "null"));
  GPUPLAN_RETURN_IF_ERROR(e->set(job, value.Scalar(), where));
  job.set_keys[key] = where;
  return Status::Ok();
}

Status WalkMap(Job& job, const YAML::Node& map, const std::string& prefix, const std::string& file) {
  std::map<std::string, int> seen;  // a key given twice would silently lose the first value
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) return Bad(At(file, it->first, prefix), "keys must be plain names");
    const std::string key = prefix + "." + it->first.Scalar();
    const Location here = At(file, it->first, key);
    if (auto [pos, fresh] = seen.emplace(key, here.line); !fresh)
      return Bad(here, "given twice (first on line " + std::to_string(pos->second) + ")");
    GPUPLAN_RETURN_IF_ERROR(SetFromNode(job, key, it->second, file));
  }
  return Status::Ok();
}

// Deeper than any job file needs (root, section, lora, targets); yaml-cpp's own guard stops far
// deeper with "bad file", so both are reported as this limit.
constexpr int kMaxNesting = 64;

Status NestingTooDeep(const std::string& file, int line) {
  return Bad({file, line, ""}, "nesting deeper than " + std::to_string(kMaxNesting) + " levels");
}

// Far more values than a job file holds. Aliases share nodes, so a few lines of "&a [*b, *b, ...]"
// expand to billions of values on a walk (the "billion laughs"): the walk stops at this many.
constexpr int64_t kMaxNodes = 100000;

Status CheckNesting(const YAML::Node& n, int depth, const std::string& file, int64_t& budget) {
  const int line = n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
  if (depth > kMaxNesting) return NestingTooDeep(file, line);
  if (--budget < 0)
    return Bad({file, line, ""}, "more than " + std::to_string(kMaxNodes) + " values (YAML aliases expanding?); a job file holds a few dozen");
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      GPUPLAN_RETURN_IF_ERROR(CheckNesting(it->first, depth + 1, file, budget));
      GPUPLAN_RETURN_IF_ERROR(CheckNesting(it->second, depth + 1, file, budget));
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n) GPUPLAN_RETURN_IF_ERROR(CheckNesting(item, depth + 1, file, budget));
  }
  return Status::Ok();
}

// The one YAML document of a job file; a second document ("---" then more keys) would be ignored
// by a plain load, so it is an error.
// A document marker ('---' or '...' at column 0, YAML 1.2 §9.1) after content, with content after
// it, starts a second document. Found in the text: yaml-cpp 0.7's LoadAll can loop forever on
// malformed input (fuzz/pending/job), while Load reads the first document and stops.
Status CheckOneDocument(const std::string& text, const std::string& file) {
  bool content = false;
  int pending = 0, line = 0;
  std::string which;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(start, end - start);
    start = end + 1;
    ++line;
    const bool marker = (l.rfind("---", 0) == 0 || l.rfind("...", 0) == 0) &&
                        (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    const std::string rest = marker ? l.substr(3) : l;
    const size_t first = rest.find_first_not_of(" \t\r");
    const bool has_text = first != std::string::npos && rest[first] != '#' && !(!content && !marker && rest[first] == '%');
    if (marker && content && pending == 0) {
      pending = line;
      which = l.substr(0, 3);
    }
    if (has_text && pending > 0)
      return Bad({file, line, ""}, "a second YAML document (after '" + which + "'); a job file is one document");
    content |= has_text;
  }
  return Status::Ok();
}

// A flow document (JSON, or YAML starting with '{') ends at its closing brace: anything but
// spaces and comments after it is a second document (Load would read the first and drop it).
// Double-quoted (with \ escapes) and single-quoted ('' escapes) strings are skipped; when the
// braces never balance, yaml-cpp reports the error itself.
Status CheckFlowDocumentEnds(const std::string& text, const std::string& file) {
  size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string::npos || text[i] != '{') return Status::Ok();
  int depth = 0, line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (c == '"' || c == '\'') {
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (text[i] == '\n') ++line;
        if (c == '"' && text[i] == '\\') ++i;
        else if (c == '\'' && text[i] == '\'' && i + 1 < text.size() && text[i + 1] == '\'') ++i;
      }
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if ((c == '}' || c == ']') && --depth == 0) break;
  }
  for (++i; i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; continue; }
    if (text[i] == '#') { while (i < text.size() && text[i] != '\n') ++i; --i; continue; }
    if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r')
      return Bad({file, line, ""}, "text after the end of the document (a job file is one {...} object)");
  }
  return Status::Ok();
}

Result<YAML::Node> LoadOneDocument(const std::string& text, const std::string& file) {
  GPUPLAN_RETURN_IF_ERROR(CheckOneDocument(text, file));
  GPUPLAN_RETURN_IF_ERROR(CheckFlowDocumentEnds(text, file));
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::DeepRecursion& ex) {
    return NestingTooDeep(file, ex.mark.line >= 0 ? ex.mark.line + 1 : 0);
  } catch (const YAML::Exception& ex) {
    return Bad({file, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}, "cannot parse: " + ex.msg);
  }
  if (!doc) return YAML::Node();
  int64_t budget = kMaxNodes;
  GPUPLAN_RETURN_IF_ERROR(CheckNesting(doc, 0, file, budget));
  return doc;
}

}  // namespace

Result<YAML::Node> LoadYamlDocument(const std::string& text, const std::string& file) {
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(text, file));
  GPUPLAN_RETURN_IF_ERROR(CheckNoStrayComma(text, file));
  return LoadOneDocument(text, file);
}

Location YamlWhere(const std::string& file, const YAML::Node& n, const std::string& key) { return At(file, n, key); }

const std::vector<JobKey>& JobKeys() {
  static const std::vector<JobKey> keys = [] {
    std::vector<JobKey> k;
    for (const auto& e : Entries()) k.push_back(e.key);
    return k;
  }();
  return keys;
}

const JobKey* FindJobKeyByFlag(const std::string& flag) {
  for (const auto& k : JobKeys())
    if (k.flag == flag) return &k;
  return nullptr;
}

const JobKey* FindJobKey(const std::string& key) {
  for (const auto& k : JobKeys())
    if (k.key == key) return &k;
  return nullptr;
}

Status SetJobKey(Job& job, const std::string& key, const std::string& value, const Location& where) {
  const KeyEntry* e = FindEntry(key);
  if (e == nullptr) return Bad(where, "unknown key" + SuggestKey(key));
  GPUPLAN_RETURN_IF_ERROR(e->set(job, value, where));
  job.set_keys[key] = where;
  return Status::Ok();
}

Result<Job> ParseJobText(const std::string& text, const std::string& file) {
  Job job;
  job.source = file;
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(text, file));
  GPUPLAN_RETURN_IF_ERROR(CheckNoStrayComma(text, file));  // yaml-cpp's Load would drop the text after it (LoadAll looped)
  // yaml-cpp's "illegal tab when looking for indentation" names no fix; JSON (a flow mapping) may use tabs.
  if (const auto first = text.find_first_not_of(" \t\r\n"); first == std::string::npos || text[first] != '{') {
    int line = 1;
    bool at_indent = true;
    for (char c : text) {
      if (c == '\n') {
        ++line;
        at_indent = true;
      } else if (at_indent && c == '\t') {
        return Bad({file, line, ""}, "tab character in indentation; YAML indents with spaces");
      } else if (c != ' ') {
        at_indent = false;
      }
    }
  }
  auto parsed = LoadOneDocument(text, file);
  if (!parsed.ok()) return parsed.status();
  const YAML::Node root = *parsed;
  if (!root.IsMap()) return Bad({file, 1, ""}, "a job file is a mapping with sections model, training, parallel, cluster (and constraints, serving)");
  // Order: model first (a preset/config replaces the whole arch; inline fields then refine it).
  static const char* kSections[] = {"model", "training", "parallel", "cluster", "constraints", "serving"};
  try {
    std::map<std::string, int> sections_seen;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string sec = it->first.IsScalar() ? it->first.Scalar() : "";
      const Location here = At(file, it->first, sec);
      if (auto [pos, fresh] = sections_seen.emplace(sec, here.line); !fresh)
        return Bad(here, "section given twice (first on line " + std::to_string(pos->second) + ")");
      bool known = false;
      for (const char* s : kSections) known |= sec == s;
      if (!known) return Bad(At(file, it->first, sec), "unknown section (expected model, training, parallel, cluster, constraints, serving)");
      if (!it->second.IsMap()) return Bad(At(file, it->second, sec), "expected a mapping");
    }
    const YAML::Node model = root["model"];
    if (model) {
      // The sources of a whole architecture go first, whatever their order in the file.
      int sources = 0;
      for (const char* k : {"preset", "config", "params"}) {
        if (model[k]) {
          ++sources;
          GPUPLAN_RETURN_IF_ERROR(SetFromNode(job, std::string("model.") + k, model[k], file));
        }
      }
      if (sources > 1) return Bad(At(file, model, "model"), "give one of preset, config or params, not several");
      std::map<std::string, int> model_seen;
      for (auto it = model.begin(); it != model.end(); ++it) {
        const std::string k = it->first.Scalar();
        const Location here = At(file, it->first, "model." + k);
        if (auto [pos, fresh] = model_seen.emplace(k, here.line); !fresh)
          return Bad(here, "given twice (first on line " + std::to_string(pos->second) + ")");
        if (k == "preset" || k == "config" || k == "params") continue;
        GPUPLAN_RETURN_IF_ERROR(SetFromNode(job, "model." + k, it->second, file));
      }
    }
    for (const char* sec : {"training", "parallel", "cluster", "constraints", "serving"}) {
      if (root[sec]) GPUPLAN_RETURN_IF_ERROR(WalkMap(job, root[sec], sec, file));
    }
  } catch (const YAML::Exception& ex) {
    return Bad({file, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}, "cannot read: " + ex.msg);
  }
  GPUPLAN_RETURN_IF_ERROR(ApplyDatasetSize(job));
  return job;
}

Result<Job> ParseJobFile(const std::string& path) {
  auto text = ReadInputFile(path);
  if (!text.ok()) return text.status();
  return ParseJobText(*text, path);
}

Status ApplyDatasetSize(Job& job) {
  auto loc = [&](const std::string& key) {
    auto it = job.set_keys.find(key);
    return it != job.set_keys.end() ? it->second : Location{job.source, 0, key};
  };
  auto where = [&](const std::string& key) {
    const Location l = loc(key);
    if (l.line > 0) return l.file + ":" + std::to_string(l.line);
    if (l.key.rfind("--", 0) == 0) return l.key + " on the command line";
    return l.file.empty() ? std::string("command line") : l.file;
  };
  TrainingSpec& t = job.training;
  if (job.IsSet("training.samples") && job.IsSet("training.tokens"))
    return Bad(loc("training.samples"), "give training.tokens (" + where("training.tokens") +
                                            ") or training.samples (" + where("training.samples") + "), not both");
  if (t.samples <= 0) {
    // With padding, tokens_per_sample alone is the mean sample length the step pads around.
    for (const char* k : {"training.epochs", "training.tokens_per_sample"})
      if (job.IsSet(k) && !(t.padding != Padding::kPacked && std::string(k) == "training.tokens_per_sample"))
        return Bad(loc(k), "needs training.samples (tokens = samples x epochs x tokens_per_sample)");
    return Status::Ok();
  }
  const double epochs = t.epochs > 0 ? t.epochs : 1.0;
  const double per_sample = static_cast<double>(t.tokens_per_sample > 0 ? t.tokens_per_sample : t.seq_len);
  t.tokens = t.samples * epochs * per_sample;
  if (!(t.tokens <= 1e16))  // the bound of training.tokens itself
    return Bad(loc("training.samples"), "samples x epochs x tokens_per_sample = " + std::to_string(t.tokens) +
                                            " tokens, above the 1e16 limit of training.tokens");
  return Status::Ok();
}

// A number as a user wrote it: 1000, 0.5, 1e+07.
std::string Decimal(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The serving: section as a whole (each key alone is checked where it is set): a p90 length is at
// least its mean, and max_model_len holds a mean request.
Status CheckServing(const Job& job) {
  auto loc = [&](const std::string& key) {
    auto it = job.set_keys.find(key);
    return it != job.set_keys.end() ? it->second : Location{job.source, 0, key};
  };
  const ServingSpec& s = job.serving;
  const std::pair<const char*, double> p90s[] = {{"input_len", s.input_len}, {"output_len", s.output_len}};
  for (const auto& [name, mean] : p90s) {
    const std::string key = std::string("serving.") + name + "_p90";
    const double p90 = std::string(name) == "input_len" ? s.input_len_p90 : s.output_len_p90;
    if (job.IsSet(key) && p90 < mean)
      return Bad(loc(key), "the p90 (" + Decimal(p90) + ") is below the mean serving." + name + " (" + Decimal(mean) +
                               "); a p90 is at least the mean");
  }
  if (job.IsSet("serving.max_model_len") && static_cast<double>(s.max_model_len) < s.input_len + s.output_len)
    return Bad(loc("serving.max_model_len"), std::to_string(s.max_model_len) + " tokens is shorter than a mean request (input_len " +
                                                 Decimal(s.input_len) + " + output_len " + Decimal(s.output_len) +
                                                 "); the engine would reject it");
  return Status::Ok();
}

Status FinalizeJob(Job& job) {
  auto loc = [&](const std::string& key) {
    auto it = job.set_keys.find(key);
    if (it != job.set_keys.end()) return it->second;
    return Location{job.source, 0, key};
  };
  GPUPLAN_RETURN_IF_ERROR(ApplyDatasetSize(job));
  if (job.arch.name.empty()) job.arch.name = "custom";  // an inline shape without model.name (Arch's default)
  if (job.arch.layers == 0 && job.arch.params_override == 0)
    return Bad(loc("model"), "no model: give model.preset, model.config, model.params or the shape (layers, hidden, heads, vocab)");
  if (Status st = ValidateArch(job.arch, loc("model")); !st.ok()) {
    // At the line of the key that made it when that key was given ("model.vocab: ..." at its line).
    if (job.IsSet(st.location().key)) return Bad(loc(st.location().key), st.reason());
    // A derived value (ffn_hidden = 4 x hidden) or a preset's: at the line of what gave the shape.
    for (const char* k : {"model.preset", "model.config", "model.params", "model.hidden", "model.layers"})
      if (job.IsSet(k)) return Bad({loc(k).file, loc(k).line, st.location().key}, st.reason());
    return st;
  }
  const Arch& a = job.arch;
  if (a.include_vision && a.vision_params == 0)
    return Bad(loc("model.include_vision"), "'" + a.name + "' has no vision tower gpuplan counts (a qwen2_5_vl, qwen3_vl or gemma3 "
                                            "config.json with its vision_config); leave include_vision out");
  // MoE-only keys on a dense model would be ignored without a word.
  if (!a.IsMoe()) {
    const std::pair<const char*, int64_t> moe_only[] = {{"model.experts_per_token", a.experts_per_token},
                                                        {"model.shared_experts", a.shared_experts},
                                                        {"model.moe_ffn_hidden", a.moe_ffn_hidden},
                                                        {"model.dense_layers", a.dense_layers}};
    for (const auto& [k, v] : moe_only)
      if (job.IsSet(k) && v != 0) return Bad(loc(k), "applies to a MoE model only; give model.experts too");
  }
  ParallelSpec& p = job.parallel;
  ClusterSpec& c = job.cluster;
  TrainingSpec& t = job.training;
  if (a.params_override == 0) {
    if (a.heads % p.tp != 0)
      return Bad(loc("parallel.tp"), "tp=" + std::to_string(p.tp) + " does not divide heads=" + std::to_string(a.heads));
    if (a.KvHeads() % p.tp != 0 && p.tp % a.KvHeads() != 0)
      return Bad(loc("parallel.tp"), "tp=" + std::to_string(p.tp) + " and kv_heads=" + std::to_string(a.KvHeads()) + " must divide one another");
    // Stages may hold uneven layer counts (torchtitan splits 126 layers over 8 stages); a stage
    // needs at least one layer per virtual stage.
    if (p.pp * p.vpp > a.layers)
      return Bad(loc(p.vpp > 1 ? "parallel.vpp" : "parallel.pp"), "pp*vpp=" + std::to_string(p.pp * p.vpp) + " exceeds layers=" + std::to_string(a.layers));
  }
  if (p.vpp > 1 && p.pp == 1) return Bad(loc("parallel.vpp"), "interleaving (vpp > 1) needs pp > 1");
  if (!p.layer_split.empty()) {
    int64_t sum = 0;
    for (int64_t n : p.layer_split) sum += n;
    if (static_cast<int64_t>(p.layer_split.size()) != p.pp)
      return Bad(loc("parallel.layer_split"), "lists " + std::to_string(p.layer_split.size()) + " stages but parallel.pp is " + std::to_string(p.pp));
    if (sum != a.layers)
      return Bad(loc("parallel.layer_split"), "adds up to " + std::to_string(sum) + " blocks but the model has " + std::to_string(a.layers));
    if (p.vpp > 1) return Bad(loc("parallel.layer_split"), "uneven stages with interleaving (vpp > 1) are not modelled; set parallel.vpp 1");
  }
  if (t.seq_len % p.cp != 0)
    return Bad(loc("parallel.cp"), "cp=" + std::to_string(p.cp) + " does not divide seq_len=" + std::to_string(t.seq_len));
  if (p.ep > 1 && (!a.IsMoe() || a.experts % p.ep != 0))
    return Bad(loc("parallel.ep"), a.IsMoe() ? "ep must divide experts=" + std::to_string(a.experts) : "ep > 1 needs a MoE model");
  if (p.sequence_parallel && p.tp == 1)
    return Bad(loc("parallel.sequence_parallel"), "sequence parallel needs tp > 1");
  const int64_t model_parallel = p.tp * p.pp * p.cp;
  if (p.dp == 0) {
    if (c.num_gpus == 0) {
      p.dp = 1;
    } else {
      if (c.num_gpus % model_parallel != 0)
        return Bad(loc("cluster.num_gpus"), "num_gpus=" + std::to_string(c.num_gpus) + " is not a multiple of tp*pp*cp=" + std::to_string(model_parallel));
      p.dp = c.num_gpus / model_parallel;
    }
  }
  if (c.num_gpus == 0) c.num_gpus = model_parallel * p.dp;
  if (p.dp * model_parallel != c.num_gpus)
    return Bad(loc("parallel.dp"), "dp*tp*pp*cp = " + std::to_string(p.dp * model_parallel) + " but num_gpus = " + std::to_string(c.num_gpus));
  if (p.ep > p.dp * p.tp) return Bad(loc("parallel.ep"), "ep must be <= dp*tp");
  if (c.gpus_per_node > c.num_gpus) c.gpus_per_node = c.num_gpus;
  if (c.nvlink_domain > 0 && (c.nvlink_domain < c.gpus_per_node || c.nvlink_domain % c.gpus_per_node != 0))
    return Bad(loc("cluster.nvlink_domain"), "must be a whole number of nodes: a multiple of gpus_per_node=" +
                                                 std::to_string(c.gpus_per_node) + ", got " + std::to_string(c.nvlink_domain));
  if (t.global_batch == 0) t.global_batch = t.micro_batch * p.dp;
  if (t.global_batch % (t.micro_batch * p.dp) != 0)
    return Bad(loc("training.global_batch"), "global_batch=" + std::to_string(t.global_batch) + " is not a multiple of micro_batch*dp=" + std::to_string(t.micro_batch * p.dp));
  if (IsAdapterMethod(t.method) && a.params_override > 0)
    return Bad(loc("training.method"), "LoRA needs the model's shape, not a raw parameter count");
  if (IsAdapterMethod(t.method) && CountLoraParams(a, t.lora) > kMaxParamCount)
    return Bad(loc("training.lora.rank"), "rank " + std::to_string(t.lora.rank) +
                                              " gives more adapter parameters than the 1e15 limit; use a rank below the model's widths");
  if (t.precision == Precision::kFp32 && t.method == Method::kQlora)
    return Bad(loc("training.precision"), "QLoRA computes in bf16/fp16; fp32 is not a QLoRA setting");
  if (t.padding != Padding::kPacked && t.tokens_per_sample > t.seq_len)
    return Bad(loc("training.tokens_per_sample"), "a padded sample holds at most seq_len=" + std::to_string(t.seq_len) +
                                                      " tokens (longer samples are truncated); got " + std::to_string(t.tokens_per_sample));
  // A fused cross-entropy among the model's fused ops is the job's loss unless one was chosen.
  if ((t.fused_ops & kFusedLoss) && t.loss == LossKind::kAuto) t.loss = LossKind::kFused;
  if (job.IsSet("training.quant") && t.method != Method::kQlora)
    return Bad(loc("training.quant"), "a quantized base is QLoRA's; set training.method: qlora (method is " + ToString(t.method) + ")");
  for (Precision pr : job.constraints.precisions) {
    // fp8 trains every weight matrix in fp8 GEMMs: full fine-tunes and pretraining (planner.md §2).
    if (pr == Precision::kFp8 && t.method != Method::kFull && t.method != Method::kPretrain)
      return Bad(loc("constraints.precisions"), "fp8 is planned for full fine-tunes and pretraining only (method is " + ToString(t.method) + ")");
    if (pr == Precision::kFp32 && t.method == Method::kQlora)
      return Bad(loc("constraints.precisions"), "QLoRA computes in bf16/fp16; fp32 is not a QLoRA setting");
  }
  const bool fp8_listed = std::find(job.constraints.precisions.begin(), job.constraints.precisions.end(), Precision::kFp8) !=
                          job.constraints.precisions.end();
  if (job.IsSet("training.fp8_recipe") && t.precision != Precision::kFp8 && !(fp8_listed && !job.IsSet("training.precision")))
    return Bad(loc("training.fp8_recipe"), "an FP8 recipe needs training.precision: fp8 (precision is " + ToString(t.precision) + ")");
  if (t.master_weights == MasterWeights::kNone && t.precision == Precision::kFp32)
    return Bad(loc("training.master_weights"), "master_weights: none means 16-bit parameters; with precision fp32 there is no master copy to drop");
  if (t.optimizer_in_backward && GradAccumSteps(job) > 1)
    return Bad(loc("training.optimizer_in_backward"),
               "the optimizer step in backward cannot accumulate gradients: global_batch=" + std::to_string(t.global_batch) +
                   " needs " + std::to_string(GradAccumSteps(job)) + " micro-steps (make global_batch = micro_batch x dp)");
  if (t.optimizer_in_backward && p.offload != Offload::kNone)
    return Bad(loc("training.optimizer_in_backward"), "the optimizer step in backward runs on the GPU; it does not combine with parallel.offload=" + ToString(p.offload));
  // DeepSpeed offloads ZeRO-partitioned states: offload_optimizer needs stage >= 1, offload_param
  // stage 3 (docs.deepspeed.ai, ZeRO config "offload_optimizer" / "offload_param").
  if (p.offload == Offload::kOptimizer && p.zero < 1)
    return Bad(loc("parallel.offload"), "optimizer offload needs ZeRO >= 1 (DeepSpeed offloads the ZeRO-partitioned optimizer states; "
                                        "parallel.zero is 0): set parallel.zero: 1, 2 or 3, or parallel.offload: none");
  if (p.offload == Offload::kOptimizerParams && p.zero != 3)
    return Bad(loc("parallel.offload"), "parameter offload needs ZeRO 3 (DeepSpeed offload_param; parallel.zero is " + std::to_string(p.zero) +
                                            "): set parallel.zero: 3, or parallel.offload: optimizer");
  return CheckServing(job);
}

Status CheckCatalogIds(const Job& job, const Catalog& catalog) {
  auto loc = [&](const std::string& key) {
    auto it = job.set_keys.find(key);
    return it != job.set_keys.end() ? it->second : Location{job.source, 0, key};
  };
  const ClusterSpec& c = job.cluster;
  if (auto g = catalog.FindGpu(c.gpu); !g.ok()) return Bad(loc("cluster.gpu"), g.status().reason());
  if (!c.intra_node.empty())
    if (auto l = catalog.FindLink(c.intra_node); !l.ok()) return Bad(loc("cluster.intra_node"), l.status().reason());
  if (!c.network.empty())
    if (auto l = catalog.FindLink(c.network); !l.ok()) return Bad(loc("cluster.network"), l.status().reason());
  if (!c.storage.empty())
    if (auto st = catalog.FindStorage(c.storage); !st.ok()) return Bad(loc("cluster.storage"), st.status().reason());
  return Status::Ok();
}

int64_t GradAccumSteps(const Job& job) {
  return job.training.global_batch / (job.training.micro_batch * job.parallel.dp);
}

std::string ToString(Method m) {
  switch (m) {
    case Method::kPretrain: return "pretrain";
    case Method::kFull: return "full";
    case Method::kLora: return "lora";
    case Method::kQlora: return "qlora";
    case Method::kDora: return "dora";
  }
  return "full";
}
const std::vector<std::string>& FrameworkNames() {
  static const std::vector<std::string> names = {"generic", "megatron", "nemo", "torchtitan", "torchtune",
                                                 "fsdp", "deepspeed", "llm-foundry", "hf-trainer", "unsloth",
                                                 "megatron-bridge"};
  return names;
}
std::string ToString(Framework f) { return FrameworkNames()[static_cast<size_t>(f)]; }
std::optional<Framework> ParseFramework(const std::string& name) {
  const auto& n = FrameworkNames();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == name) return static_cast<Framework>(i);
  return std::nullopt;
}
std::string ToString(MasterWeights m) { return m == MasterWeights::kNone ? "none" : "fp32"; }
std::string ToString(LossKind l) {
  switch (l) {
    case LossKind::kAuto: return "auto";
    case LossKind::kStandard: return "standard";
    case LossKind::kChunked: return "chunked";
    case LossKind::kFused: return "fused";
  }
  return "auto";
}
std::string ToString(BaseQuant q) {
  switch (q) {
    case BaseQuant::kNf4: return "nf4";
    case BaseQuant::kGptq: return "gptq";
    case BaseQuant::kAwq: return "awq";
    case BaseQuant::kInt8: return "int8";
  }
  return "nf4";
}
std::string ToString(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kTensorwise: return "tensorwise";
    case Fp8Recipe::kDelayed: return "delayed";
    case Fp8Recipe::kRowwise: return "rowwise";
    case Fp8Recipe::kMxfp8: return "mxfp8";
  }
  return "tensorwise";
}
std::string ToString(Padding p) {
  switch (p) {
    case Padding::kPacked: return "packed";
    case Padding::kPadToMax: return "max_length";
    case Padding::kPadToLongest: return "longest";
  }
  return "packed";
}
std::string ToString(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kFp8: return "fp8";
  }
  return "bf16";
}
std::string ToString(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW: return "adamw";
    case Optimizer::kAdamW8bit: return "adamw-8bit";
    case Optimizer::kPagedAdamW8bit: return "paged-adamw-8bit";
    case Optimizer::kAdafactor: return "adafactor";
    case Optimizer::kSgd: return "sgd";
  }
  return "adamw";
}
std::string ToString(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "none";
}
std::string ToString(Objective o) {
  return o == Objective::kTime ? "time" : o == Objective::kCost ? "cost" : "balanced";
}
std::string ToString(SpotPolicy s) {
  return s == SpotPolicy::kNo ? "no" : s == SpotPolicy::kAllowed ? "allowed" : "only";
}
std::string ToString(Offload o) {
  switch (o) {
    case Offload::kNone: return "none";
    case Offload::kOptimizer: return "optimizer";
    case Offload::kOptimizerParams: return "optimizer+params";
  }
  return "none";
}

std::string ToString(WeightFormat w) {
  switch (w) {
    case WeightFormat::kBf16: return "bf16";
    case WeightFormat::kFp16: return "fp16";
    case WeightFormat::kFp8: return "fp8";
    case WeightFormat::kInt8: return "int8";
    case WeightFormat::kInt4Awq: return "int4-awq";
    case WeightFormat::kInt4Gptq: return "int4-gptq";
    case WeightFormat::kFp4: return "fp4";
  }
  return "bf16";
}
std::string ToString(KvDtype k) { return k == KvDtype::kFp8 ? "fp8" : "auto"; }
std::string ToString(ServingLoad l) {
  switch (l) {
    case ServingLoad::kConcurrency: return "concurrency";
    case ServingLoad::kRequestRate: return "request_rate";
    case ServingLoad::kMaxThroughput: return "max_throughput";
    case ServingLoad::kNumRequests: return "num_requests";
  }
  return "concurrency";
}

}  // namespace gpuplan
