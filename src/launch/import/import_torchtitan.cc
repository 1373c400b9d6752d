// gpuplan import: torchtitan TOML and its command-line overrides.
#include <toml++/toml.h>

#include <sstream>

#include "import_internal.h"

namespace gpuplan::import_detail {

std::string TomlValue(const toml::node& n) {
  if (auto v = n.as_string()) return v->get();
  if (auto v = n.as_integer()) return Str(v->get());
  if (auto v = n.as_floating_point()) {
    std::ostringstream os;
    os << v->get();
    return os.str();
  }
  if (auto v = n.as_boolean()) return v->get() ? "true" : "false";
  if (auto a = n.as_array()) {
    std::string s;
    for (const auto& item : *a) s += (s.empty() ? "" : ",") + TomlValue(item);
    return s;
  }
  return "";
}

Status FlattenToml(const toml::table& t, const std::string& prefix, const std::string& file, FlatConfig& out, int depth) {
  if (depth > kMaxNesting) return Bad({file, static_cast<int>(t.source().begin.line), prefix}, "nesting too deep");
  for (const auto& [k, v] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    const int line = static_cast<int>(v.source().begin.line ? v.source().begin.line : k.source().begin.line);
    FlatEntry e{key, "", {file, line, key}};
    if (const toml::table* sub = v.as_table()) {
      e.is_map = true;
      out.entries.push_back(e);
      GPUPLAN_RETURN_IF_ERROR(FlattenToml(*sub, key, file, out, depth + 1));
      continue;
    }
    e.value = TomlValue(v);
    out.entries.push_back(e);
  }
  return Status::Ok();
}


namespace {

bool IsTomlBareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// The TOML parser at hand (toml++ 3.3) assumes, without checking, that a table header's first key starts with a
// bare-key character or a quote; `[,x]` or `[#x]` breaks that assumption (an assertion, or undefined behaviour in a
// release build). This scan finds table headers the way TOML does (a '[' first on a line, outside every string and
// every array or inline-table value) and refuses a header whose key starts with anything else, at its line.
Status CheckTomlTableHeaders(const std::string& text, const std::string& file) {
  int line = 1, value_depth = 0;
  bool line_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') { ++line; line_start = true; continue; }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    const bool at_start = line_start;
    line_start = false;
    if (c == '#') {  // a comment runs to the end of its line
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {  // strings: single-line or triple-quoted, escapes only in basic strings
      const bool multi = text.compare(i, 3, std::string(3, c)) == 0;
      i += multi ? 3 : 1;
      for (; i < text.size(); ++i) {
        if (c == '"' && text[i] == '\\') { if (i + 1 < text.size() && text[i + 1] == '\n') ++line; ++i; continue; }
        if (text[i] == '\n') { ++line; if (!multi) { line_start = true; break; } }
        if (text[i] == c && (!multi || text.compare(i, 3, std::string(3, c)) == 0)) { i += multi ? 2 : 0; break; }
      }
    } else if (c == '[' && at_start && value_depth == 0) {  // a table header: [key] or [[key]]
      size_t j = i + 1;
      if (j < text.size() && text[j] == '[') ++j;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
      if (j < text.size() && text[j] != ']' && !IsTomlBareKeyChar(text[j]) && text[j] != '"' && text[j] != '\'') {
        const bool printable = text[j] > ' ' && text[j] < 0x7f;
        return Bad({file, line, ""}, "cannot parse TOML: a table header's key cannot start with " +
                                         (printable ? "'" + std::string(1, text[j]) + "'" : std::string("that character")) +
                                         " (a bare key is letters, digits, '_' and '-'; or quote it)");
      }
      while (i + 1 < text.size() && text[i + 1] != '\n' && text[i + 1] != '#' && text[i + 1] != ']') ++i;
    } else if (c == '[' || c == '{') {
      ++value_depth;
    } else if (c == ']' || c == '}') {
      value_depth = value_depth > 0 ? value_depth - 1 : 0;
    }
  }
  return Status::Ok();
}

}  // namespace

Status Importer::ReadTorchtitanInto(const std::string& text, const std::string& file, FlatConfig& cfg) {
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(text, file));
  GPUPLAN_RETURN_IF_ERROR(CheckTomlTableHeaders(text, file));
  toml::table tbl;
  try {
    tbl = toml::parse(text, file);
  } catch (const toml::parse_error& err) {
    return Bad({file, static_cast<int>(err.source().begin.line), ""}, "cannot parse TOML: " + std::string(err.description()));
  }
  FlatConfig own;
  own.file = file;
  GPUPLAN_RETURN_IF_ERROR(FlattenToml(tbl, "", file, own, 0));
  GPUPLAN_RETURN_IF_ERROR(CheckKeys(own, TorchtitanKeys(), "torchtitan"));
  cfg.file = file;
  for (auto& e : own.entries) cfg.entries.push_back(e);
  return Status::Ok();
}

// torchtitan's model name + flavor -> a gpuplan preset ("" = none).
std::string TitanPreset(const std::string& name, const std::string& flavor) {
  static const std::map<std::pair<std::string, std::string>, std::string> kPresets = {
      {{"llama3", "8B"}, "llama-3-8b"},     {{"llama3", "70B"}, "llama-3-70b"}, {{"llama3", "405B"}, "llama-3.1-405b"},
      {{"qwen3", "8B"}, "qwen3-8b"},        {{"deepseek_v3", "671B"}, "deepseek-v3"},
  };
  auto it = kPresets.find({name, flavor});
  return it == kPresets.end() ? "" : it->second;
}

Status TitanModel(Importer& im, const FlatConfig& cfg) {
  const FlatEntry* name = cfg.Get("model.name");
  const FlatEntry* flavor = cfg.Get("model.flavor");
  if (name || flavor) {
    const std::string preset = TitanPreset(name ? name->value : "llama3", flavor ? flavor->value : "debugmodel");
    const Location w = flavor ? flavor->where : name->where;
    if (!preset.empty()) GPUPLAN_RETURN_IF_ERROR(im.Put("model.preset", preset, w));
    else if (!im.BaseHasModel())
      im.Unresolved(w, "model " + (name ? name->value : std::string("llama3")) + " " + (flavor ? flavor->value : "") +
                           " is not a gpuplan preset: give --model (gpuplan models, or a config.json)");
  }
  if (const FlatEntry* e = cfg.Get("model.converters")) {
    if (e->value.find("float8") != std::string::npos) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp8", e->where));
    if (e->value.find(".mx") != std::string::npos) {
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp8", e->where));
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp8_recipe", "mxfp8", e->where));
    }
  }
  if (const FlatEntry* e = cfg.Get("quantize.linear.float8.recipe_name")) {
    const std::string r = Lower(e->value);
    if (r != "tensorwise" && r != "rowwise" && r != "rowwise_with_gw_hp") return Bad(e->where, "expected tensorwise or rowwise, got '" + e->value + "'");
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp8_recipe", r == "tensorwise" ? "tensorwise" : "rowwise", e->where));
  }
  return Status::Ok();
}

Status TitanTraining(Importer& im, const FlatConfig& cfg, int64_t pp) {
  const FlatEntry* local = cfg.Get("training.local_batch_size");
  if (!local) local = cfg.Get("training.batch_size");
  const FlatEntry* pp_mbs = cfg.Get("parallelism.pipeline_parallel_microbatch_size");
  if (pp > 1) {
    // The pipeline splits each local batch into microbatches: gpuplan's micro-batch is the pipeline's.
    if (pp_mbs) {
      auto v = Int(pp_mbs->value, pp_mbs->where, 1, 1 << 20);
      if (!v.ok()) return v.status();
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.micro_batch", Str(*v), pp_mbs->where));
    } else {
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.micro_batch", "1", {cfg.file, 1, "parallelism.pipeline_parallel_microbatch_size (not given)"}, Strength::kDefault));
    }
    if (local) im.Note(local->where, "with pipeline parallelism the local batch is split into pipeline microbatches (micro-batch from pipeline_parallel_microbatch_size)");
  } else if (local) {
    auto v = Int(local->value, local->where, 1, 1 << 20);
    if (!v.ok()) return v.status();
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.micro_batch", Str(*v), local->where));
  } else {
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.micro_batch", "8", {cfg.file, 1, "training.local_batch_size (not given)"}, Strength::kDefault));
  }
  if (const FlatEntry* e = cfg.Get("training.global_batch_size")) {
    auto v = Int(e->value, e->where, -1, int64_t{1} << 32);
    if (!v.ok()) return v.status();
    if (*v == 0) return Bad(e->where, "must be -1 (local batch x dp) or > 0");
    if (*v > 0) GPUPLAN_RETURN_IF_ERROR(im.Put("training.global_batch", Str(*v), e->where));
  }
  const FlatEntry* seq = cfg.Get("training.seq_len");
  if (seq) GPUPLAN_RETURN_IF_ERROR(im.Put("training.seq_len", seq->value, seq->where));
  else GPUPLAN_RETURN_IF_ERROR(im.Put("training.seq_len", "2048", {cfg.file, 1, "training.seq_len (not given)"}, Strength::kDefault));
  if (const FlatEntry* e = cfg.Get("training.steps")) {
    auto v = Int(e->value, e->where, 1, int64_t{1} << 40);
    if (!v.ok()) return v.status();
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.steps", Str(*v), e->where));
  }
  if (const FlatEntry* e = cfg.Get("training.mixed_precision_param")) {
    const std::string v = Lower(e->value);
    const std::string p = v == "bfloat16" ? "bf16" : v == "float16" ? "fp16" : v == "float32" ? "fp32" : "";
    if (p.empty()) return Bad(e->where, "expected bfloat16, float16 or float32, got '" + e->value + "'");
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", p, e->where, Strength::kValue));
  } else {
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "bf16", {cfg.file, 1, "training.mixed_precision_param (not given)"}, Strength::kDefault));
  }
  if (const FlatEntry* e = cfg.Get("training.enable_cpu_offload")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (*b) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", "optimizer+params", e->where));
  }
  return Status::Ok();
}

Status TitanParallelism(Importer& im, const FlatConfig& cfg, int64_t& pp) {
  auto degree = [&](const char* k, int64_t min) -> Result<std::optional<int64_t>> {
    const FlatEntry* e = cfg.Get(std::string("parallelism.") + k);
    if (!e) return std::optional<int64_t>();
    auto v = Int(e->value, e->where, min, 1 << 20);
    if (!v.ok()) return v.status();
    if (*v == 0) return Bad(e->where, "a degree is >= 1 (or -1 to fill)");
    return std::optional<int64_t>(*v);
  };
  auto at = [&](const char* k) { return cfg.Get(std::string("parallelism.") + k)->where; };
  struct D {
    const char* key;
    const char* job_key;
  };
  for (const D& d : {D{"tensor_parallel_degree", "parallel.tp"}, D{"pipeline_parallel_degree", "parallel.pp"},
                     D{"context_parallel_degree", "parallel.cp"}, D{"expert_parallel_degree", "parallel.ep"}}) {
    auto v = degree(d.key, 1);
    if (!v.ok()) return v.status();
    if (*v) GPUPLAN_RETURN_IF_ERROR(im.Put(d.job_key, Str(**v), at(d.key)));
    if (std::string(d.key) == "pipeline_parallel_degree" && *v) pp = **v;
    if (std::string(d.key) == "tensor_parallel_degree" && *v && **v > 1) {
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.sequence_parallel", "true", at(d.key)));
      im.Note(at(d.key), "torchtitan's tensor parallel plan shards the norms' activations over the sequence (SequenceParallel): sequence parallel on");
    }
  }
  auto rep = degree("data_parallel_replicate_degree", 1);
  if (!rep.ok()) return rep.status();
  auto shard = degree("data_parallel_shard_degree", -1);
  if (!shard.ok()) return shard.status();
  const int64_t r = rep->value_or(1);
  const int64_t s = shard->value_or(-1);
  if (s > 0) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.dp", Str(r * s), at("data_parallel_shard_degree")));
  } else if (r > 1) {
    im.Note(at("data_parallel_replicate_degree"), "data_parallel_shard_degree -1 fills the rest of the world: dp = world / (tp x pp x cp)");
  }
  // FSDP is on when the shard degree is not 1 (or the reshard policy is set); reshard -> ZeRO 3/2.
  const FlatEntry* reshard = cfg.Get("parallelism.fsdp_reshard_after_forward");
  const bool fsdp = s != 1 || reshard;
  if (!fsdp) {
    const Location w = shard->has_value() ? at("data_parallel_shard_degree") : Location{cfg.file, 1, "parallelism (not given)"};
    return im.Put("parallel.zero", "0", w);
  }
  const std::string policy = reshard ? Lower(reshard->value) : "default";
  const Location w = reshard ? reshard->where : shard->has_value() ? at("data_parallel_shard_degree") : Location{cfg.file, 1, "parallelism.data_parallel_shard_degree (not given: -1)"};
  if (policy == "always") return im.Put("parallel.zero", "3", w);
  if (policy == "never") return im.Put("parallel.zero", "2", w);
  if (policy != "default") return Bad(w, "expected default, always or never, got '" + reshard->value + "'");
  if (pp > 1) {
    im.Note(w, "fsdp_reshard_after_forward default: with pipeline parallelism torchtitan keeps parameters gathered (ZeRO-2)");
    return im.Put("parallel.zero", "2", w, reshard ? Strength::kValue : Strength::kDefault);
  }
  return im.Put("parallel.zero", "3", w, reshard ? Strength::kValue : Strength::kDefault);
}

Status TitanSchedule(Importer& im, const FlatConfig& cfg, int64_t pp) {
  const FlatEntry* sched = cfg.Get("parallelism.pipeline_parallel_schedule");
  const FlatEntry* lps = cfg.Get("parallelism.pipeline_parallel_layers_per_stage");
  if (pp <= 1) return Status::Ok();
  const std::string s = sched ? sched->value : "1F1B";
  const bool multi = s == "Interleaved1F1B" || s == "InterleavedZeroBubble" || s == "ZBVZeroBubble" || s == "LoopedBFS" || s == "DualPipeV";
  if (!multi && s != "1F1B" && s != "GPipe")
    return Bad(sched->where, "expected 1F1B, GPipe, Interleaved1F1B, InterleavedZeroBubble, ZBVZeroBubble, LoopedBFS or DualPipeV, got '" + s + "'");
  if (lps) {
    auto v = Int(lps->value, lps->where, 1, 1 << 20);
    if (!v.ok()) return v.status();
    return im.Put("parallel.vpp_layers", Str(*v), lps->where);
  }
  if (multi) {
    im.Note(sched->where, s + " without pipeline_parallel_layers_per_stage: torchtitan runs 2 stages per rank");
    return im.Put("parallel.vpp", "2", sched->where);
  }
  return Status::Ok();
}

// [activation_checkpoint]: torchtitan v0.2.2 job_config.py:651-659 (ActivationCheckpoint): mode none |
// selective | full | memory_budget; with selective, selective_ac_option "op" is the per-op policy
// (gpuplan's selective) and an integer N (the default "2") checkpoints every N-th block in full.
Status TitanRecompute(Importer& im, const FlatConfig& cfg) {
  const FlatEntry* e = cfg.Get("activation_checkpoint.mode");
  if (!e) return Status::Ok();
  const std::string m = Lower(e->value);
  if (m == "memory_budget") {
    im.Note(e->where, "memory_budget: modelled as selective");
    return im.Put("training.recompute", "selective", e->where);
  }
  if (m == "none" || m == "full") return im.Put("training.recompute", m, e->where);
  if (m != "selective") return Bad(e->where, "expected none, selective, full or memory_budget, got '" + e->value + "'");
  const FlatEntry* opt = cfg.Get("activation_checkpoint.selective_ac_option");
  const std::string o = opt ? Lower(opt->value) : "2";  // torchtitan's default
  const Location at = opt ? opt->where : e->where;
  if (o == "op") return im.Put("training.recompute", "selective", at);
  auto every = Int(o, {at.file, at.line, "activation_checkpoint.selective_ac_option"}, 1, 1 << 20);
  if (!every.ok()) return Bad(at, "selective_ac_option: expected 'op' or a positive whole number, got '" + o + "'");
  const std::string what = std::string(opt ? "" : "no selective_ac_option: torchtitan's default '2', ") + "every " +
                           (*every == 1 ? std::string("block") : Str(*every) + (*every == 2 ? "nd" : *every == 3 ? "rd" : "th") + " block") +
                           " checkpointed in full";
  if (*every == 1) {
    im.Note(at, what + ": read as full recompute");
    return im.Put("training.recompute", "full", at);
  }
  im.Note(at, what + "; gpuplan has no per-block recompute: read as none (memory on the safe side: the run keeps about " +
                  Str(100 - 100 / *every) + "% of the activations and does about " + Str(100 / (3 * *every)) +
                  "% more compute than estimated)");
  return im.Put("training.recompute", "none", at);
}

// [compile]: enable compiles what components names (v0.2.2 job_config.py Compile: "model", "loss";
// default both); gpuplan's training.compile is the model's.
Status TitanCompile(Importer& im, const FlatConfig& cfg) {
  const FlatEntry* e = cfg.Get("compile.enable");
  if (!e) return Status::Ok();
  auto b = Bool(e->value, e->where);
  if (!b.ok()) return b.status();
  const FlatEntry* comp = cfg.Get("compile.components");
  bool model = true;
  if (comp) {
    model = false;
    std::stringstream ss(comp->value);
    for (std::string c; std::getline(ss, c, ',');) model |= Lower(c) == "model";
  }
  if (*b && !model) {
    im.Note(comp->where, "compiles " + comp->value + " only, not the model: read as compile false");
    return im.Put("training.compile", "false", comp->where);
  }
  return im.Put("training.compile", *b ? "true" : "false", e->where);
}

Status Importer::ApplyTorchtitan(const FlatConfig& cfg) {
  int64_t pp = 1;
  GPUPLAN_RETURN_IF_ERROR(TitanModel(*this, cfg));
  GPUPLAN_RETURN_IF_ERROR(TitanParallelism(*this, cfg, pp));
  GPUPLAN_RETURN_IF_ERROR(TitanTraining(*this, cfg, pp));
  GPUPLAN_RETURN_IF_ERROR(TitanSchedule(*this, cfg, pp));
  GPUPLAN_RETURN_IF_ERROR(TitanRecompute(*this, cfg));
  GPUPLAN_RETURN_IF_ERROR(TitanCompile(*this, cfg));
  if (const FlatEntry* e = cfg.Get("checkpoint.async_mode")) {
    const std::string m = Lower(e->value);
    if (m != "disabled" && m != "async" && m != "async_with_pinned_mem") return Bad(e->where, "expected disabled, async or async_with_pinned_mem, got '" + e->value + "'");
    GPUPLAN_RETURN_IF_ERROR(Put("training.checkpoint_async", m == "disabled" ? "false" : "true", e->where));
  }
  if (const FlatEntry* e = cfg.Get("optimizer.name")) {
    const std::string n = Lower(e->value);
    if (n == "adamw" || n == "adam") GPUPLAN_RETURN_IF_ERROR(Put("training.optimizer", "adamw", e->where));
    else Unknown(e->where, "optimizer '" + e->value + "' is not one gpuplan models for torchtitan; the job keeps adamw");
  }
  if (const FlatEntry* e = cfg.Get("optimizer.early_step_in_backward")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (*b) GPUPLAN_RETURN_IF_ERROR(Put("training.optimizer_in_backward", "true", e->where));
  }
  return Put("training.framework", "torchtitan", {cfg.file, 1, "(a torchtitan config)"}, Strength::kDefault);
}

Status TitanArgs(Importer& im, const std::vector<Flag>& flags, const std::string& file, int depth) {
  FlatConfig cfg;
  cfg.file = file;
  for (const auto& f : flags) {
    std::string n = f.name;
    std::replace(n.begin(), n.end(), '-', '_');
    if (n != "job.config_file") continue;
    const Location w = f.At(file);
    if (f.values.empty() || !f.values[0].unresolved.empty()) {
      im.Unresolved(w, f.values.empty() ? "needs a value" : f.values[0].text + ": " + f.values[0].unresolved);
      continue;
    }
    std::string path;
    auto text = im.ReadConfigText(f.values[0].text, w, depth, ImportKind::kTorchtitanToml, path);
    if (!text.ok()) return text.status();
    GPUPLAN_RETURN_IF_ERROR(im.ReadTorchtitanInto(*text, path, cfg));
  }
  FlatConfig overrides;
  overrides.file = file;
  for (const auto& f : flags) {
    std::string n = f.name;
    std::replace(n.begin(), n.end(), '-', '_');
    if (n == "job.config_file") continue;
    if (!f.values.empty() && !f.values[0].unresolved.empty()) {
      im.Unresolved(f.At(file), f.values[0].text + ": " + f.values[0].unresolved + "; not applied");
      continue;
    }
    FlatEntry e{n, f.values.empty() ? "true" : f.values[0].text, f.At(file)};
    overrides.entries.push_back(e);
    cfg.Override(e);
  }
  GPUPLAN_RETURN_IF_ERROR(im.CheckKeys(overrides, TorchtitanKeys(), "torchtitan"));
  return im.ApplyTorchtitan(cfg);
}


}  // namespace gpuplan::import_detail
