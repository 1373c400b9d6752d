// gpuplan import: a job from the configs users already have (docs/export.md "Import"). Each format
// is read into a flat list of (dotted key, value, file:line); a table per format says which keys
// gpuplan models, which it reads without effect on the estimate (notes) and which it does not model
// (unknown, never dropped). What the files say becomes "facts" on job keys; Finish() resolves the
// "auto" values and the batch arithmetic against every input and the command-line base, then sets
// each key with its file:line. Facts: the engines' own parsers, as docs/export.md lists them.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"
#include "gpuplan/job_keys.h"
#include "gpuplan/launch.h"
#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

namespace fs = std::filesystem;

Status Bad(const Location& where, const std::string& why) { return Status::BadInput(where, why); }
std::string Str(int64_t v) { return std::to_string(v); }
std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string At(const Location& l) {
  if (l.file.empty() || l.file == "command line") return l.key.empty() ? "the command line" : l.key + " on the command line";
  return l.file + (l.line > 0 ? ":" + Str(l.line) : "");
}
bool IsAuto(const std::string& v) { return Lower(v) == "auto"; }

Result<int64_t> Int(const std::string& v, const Location& w, int64_t min, int64_t max) {
  return ParseInteger(v, w, min, max);
}
Result<bool> Bool(const std::string& v, const Location& w) {
  const std::string l = Lower(v);
  if (l == "true" || l == "yes" || l == "on" || l == "1") return true;
  if (l == "false" || l == "no" || l == "off" || l == "0" || l.empty()) return false;
  return Bad(w, "expected true or false, got '" + v + "'");
}

// ---- facts: what the files say about job keys ----

// kDefault: a format's own default for a key it does not mention (DeepSpeed runs fp32 without a
// bf16/fp16 block); kAuto: "auto", to be resolved; kValue: a value the file gives.
enum class Strength { kDefault, kAuto, kValue };

struct Fact {
  std::string key;    // a job key, or a pseudo key: training.grad_accum, training.steps, parallel.vpp_layers
  std::string value;
  Location where;
  Strength strength = Strength::kValue;
};

// How a format treats one of its keys.
enum class Role {
  kModel,        // read into the job
  kSection,      // a table whose keys are looked up one by one
  kNoEffect,     // read, no effect on the estimate (notes); a table: its whole subtree
  kNotModelled,  // a documented key gpuplan does not model (unknown); a table: its whole subtree
  kTrace,        // gpuplan's own trace (_gpuplan): known, not read
};
using KeyTable = std::map<std::string, Role>;

// One key of a structured file, flattened: "zero_optimization.offload_optimizer.device".
struct FlatEntry {
  std::string key;
  std::string value;
  Location where;
  bool is_map = false;
  bool is_null = false;
};

struct FlatConfig {
  std::string file;
  std::vector<FlatEntry> entries;
  const FlatEntry* Get(const std::string& key) const {
    for (auto it = entries.rbegin(); it != entries.rend(); ++it)
      if (it->key == key && !it->is_null) return &*it;
    return nullptr;
  }
  bool Has(const std::string& key) const {
    for (const auto& e : entries)
      if (e.key == key) return true;
    return false;
  }
  void Override(FlatEntry e) {  // a launch flag over the config file (accelerate launch --num_processes)
    entries.erase(std::remove_if(entries.begin(), entries.end(), [&](const FlatEntry& x) { return x.key == e.key; }), entries.end());
    entries.push_back(std::move(e));
  }
};

constexpr int kMaxDepth = 4;         // file -> file it names -> ... (launch -> accelerate -> ds_config)
constexpr int kMaxNesting = 32;      // levels inside one structured file
constexpr int64_t kMaxNodes = 100000;  // values walked in one file (YAML aliases expanding)

class Importer {
 public:
  explicit Importer(const Job& base) : base_(base) {
    out_.job = base;
    for (const auto& [k, l] : base.set_keys) base_keys_[k] = l;
    base_has_model_ = base.arch.layers > 0 || base.arch.params_override > 0;
    for (const auto& [k, l] : base.set_keys)
      if (k.rfind("model.", 0) == 0) base_has_model_ = true;
  }

  Status ReadFile(const std::string& path, int depth, const Location& named_at);
  Result<ImportResult> Finish();

  // facts
  Status Put(const std::string& key, const std::string& value, const Location& where, Strength s = Strength::kValue,
             bool override_same_source = false);
  const Fact* Find(const std::string& key) const {
    for (const auto& f : facts_)
      if (f.key == key) return &f;
    return nullptr;
  }
  void Unknown(const Location& w, const std::string& m) { Add(out_.unknown, w, m); }
  void Unresolved(const Location& w, const std::string& m) { Add(out_.unresolved, w, m); }
  void Note(const Location& w, const std::string& m) { Add(out_.notes, w, m); }
  bool BaseHasModel() const { return base_has_model_; }
  const Job& base() const { return base_; }

  // format readers (below)
  Status ReadDeepspeed(const std::string& text, const std::string& file);
  Status ReadAccelerateInto(const std::string& text, const std::string& file, FlatConfig& cfg);
  Status ApplyAccelerate(const FlatConfig& cfg, int depth);
  Status ReadTorchtitanInto(const std::string& text, const std::string& file, FlatConfig& cfg);
  Status ApplyTorchtitan(const FlatConfig& cfg);
  Status ReadShell(const std::string& text, const std::string& file, ImportKind kind, int depth);

  Status CheckKeys(const FlatConfig& cfg, const KeyTable& table, const std::string& format);
  // The text of a config a launch line names (recorded in files the first time it is read).
  Result<std::string> ReadConfigText(const std::string& value, const Location& w, int depth, ImportKind expect, std::string& path);
  Status ReadNamedFile(const std::string& value, const Location& w, int depth, std::optional<ImportKind> expect);

 private:
  static void Add(std::vector<ImportNote>& v, const Location& w, const std::string& m) {
    for (const auto& n : v)
      if (n.where.file == w.file && n.where.line == w.line && n.where.key == w.key && n.message == m) return;
    v.push_back({w, m});
  }
  Status ApplyFacts(Job& job);
  Status ResolveBatch(Job& job);
  Status ResolveRest(Job& job);
  Status SetKey(Job& job, const std::string& key, const std::string& value, const Location& w);

  Job base_;
  std::map<std::string, Location> base_keys_;
  bool base_has_model_ = false;
  std::vector<Fact> facts_;
  std::vector<std::pair<Location, std::string>> resolved_autos_;  // auto fact location, the fact that resolved it
  std::set<std::string> read_;  // canonical paths already read
  ImportResult out_;

  friend class ShellReader;
};

Status Importer::Put(const std::string& key, const std::string& value, const Location& where, Strength s, bool override_same_source) {
  for (auto& f : facts_) {
    if (f.key != key) continue;
    if (s < f.strength) {
      if (s == Strength::kAuto) resolved_autos_.push_back({where, f.value + " from " + At(f.where) + " (" + f.where.key + ")"});
      return Status::Ok();
    }
    if (s > f.strength) {
      if (f.strength == Strength::kAuto) resolved_autos_.push_back({f.where, value + " from " + At(where) + " (" + where.key + ")"});
      f = {key, value, where, s};
      return Status::Ok();
    }
    if (s != Strength::kValue || f.value == value) return Status::Ok();  // the first default / auto / equal value stands
    if (override_same_source) {
      Note(where, "overrides " + f.value + " from " + At(f.where) + " (" + f.where.key + "): the last one wins, as the tool's own parser does");
      f = {key, value, where, s};
      return Status::Ok();
    }
    return Bad(where, "gives " + key + " = " + value + ", but " + At(f.where) + " (" + f.where.key + ") gives " + f.value);
  }
  facts_.push_back({key, value, where, s});
  return Status::Ok();
}

// ---- structured files flattened (yaml-cpp reads JSON and YAML with line numbers; toml++ TOML) ----

Location YamlAt(const std::string& file, const YAML::Node& n, const std::string& key) {
  return {file, n.Mark().line >= 0 ? n.Mark().line + 1 : 0, key};
}

Status FlattenYaml(const YAML::Node& map, const std::string& prefix, const std::string& file, FlatConfig& out, int depth,
                   int64_t& budget) {
  if (depth > kMaxNesting) return Bad(YamlAt(file, map, prefix), "nesting deeper than " + Str(kMaxNesting) + " levels");
  std::map<std::string, int> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (--budget < 0) return Bad(YamlAt(file, it->first, prefix), "more than " + Str(kMaxNodes) + " values (YAML aliases expanding?)");
    if (!it->first.IsScalar()) return Bad(YamlAt(file, it->first, prefix), "keys must be plain names");
    const std::string key = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    const Location here = YamlAt(file, it->first, key);
    if (auto [pos, fresh] = seen.emplace(key, here.line); !fresh)
      return Bad(here, "given twice (first on line " + Str(pos->second) + ")");
    const YAML::Node v = it->second;  // a copy: the iterator yields a temporary pair
    FlatEntry e{key, "", here};
    if (v.IsMap()) {
      e.is_map = true;
      out.entries.push_back(e);
      GPUPLAN_RETURN_IF_ERROR(FlattenYaml(v, key, file, out, depth + 1, budget));
      continue;
    }
    if (v.IsSequence()) {
      for (const auto& item : v) {
        if (--budget < 0) return Bad(here, "more than " + Str(kMaxNodes) + " values (YAML aliases expanding?)");
        e.value += (e.value.empty() ? "" : ",") + (item.IsScalar() ? item.Scalar() : std::string("[...]"));
      }
    } else if (v.IsScalar()) {
      e.value = v.Scalar();
    } else {
      e.is_null = true;
    }
    out.entries.push_back(e);
  }
  return Status::Ok();
}

Result<YAML::Node> LoadYaml(const std::string& text, const std::string& file) {
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(text, file));
  GPUPLAN_RETURN_IF_ERROR(CheckNoStrayComma(text, file));
  try {
    YAML::Node doc = YAML::Load(text);
    if (!doc.IsMap()) return Bad({file, 1, ""}, "expected a mapping of keys (an object)");
    return doc;
  } catch (const YAML::DeepRecursion& ex) {
    return Bad({file, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}, "nesting too deep");
  } catch (const YAML::Exception& ex) {
    return Bad({file, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}, "cannot parse: " + ex.msg);
  }
}

Status FlattenYamlText(const std::string& text, const std::string& file, FlatConfig& out) {
  auto doc = LoadYaml(text, file);
  if (!doc.ok()) return doc.status();
  int64_t budget = kMaxNodes;
  out.file = file;
  try {
    return FlattenYaml(*doc, "", file, out, 0, budget);
  } catch (const YAML::Exception& ex) {
    return Bad({file, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}, "cannot read: " + ex.msg);
  }
}

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

// The key's role: its own entry, else the nearest enclosing table that covers its subtree.
std::optional<Role> RoleOf(const KeyTable& table, const std::string& key) {
  if (auto it = table.find(key); it != table.end()) return it->second;
  return std::nullopt;
}

std::string Article(const std::string& word) {
  return (std::strchr("aeiouAEIOU", word.empty() ? 'x' : word[0]) ? "an " : "a ") + word;
}

std::string Suggest(const KeyTable& table, const std::string& key) {
  std::string best;
  size_t best_d = 3;
  for (const auto& [k, r] : table)
    if (size_t d = EditDistance(key, k); d < best_d && r != Role::kTrace) best_d = d, best = k;
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

// Every key of the file against the format's table: unknown keys listed, no-effect keys noted.
Status Importer::CheckKeys(const FlatConfig& cfg, const KeyTable& table, const std::string& format) {
  std::vector<std::string> covered;  // tables whose subtree is reported as one
  for (const auto& e : cfg.entries) {
    bool inside = false;
    for (const auto& c : covered) inside |= e.key.rfind(c + ".", 0) == 0;
    if (inside) continue;
    const auto role = RoleOf(table, e.key);
    if (!role) {
      Unknown(e.where, "not " + Article(format) + " key gpuplan knows" + Suggest(table, e.key));
      if (e.is_map) covered.push_back(e.key);
      continue;
    }
    switch (*role) {
      case Role::kModel:
      case Role::kSection: break;
      case Role::kNoEffect:
        Note(e.where, std::string(IsAuto(e.value) ? "auto; " : "") + "read, no effect on the estimate");
        if (e.is_map) covered.push_back(e.key);
        break;
      case Role::kNotModelled:
        Unknown(e.where, Article(format) + " key gpuplan does not model");
        if (e.is_map) covered.push_back(e.key);
        break;
      case Role::kTrace:
        Note(e.where, "gpuplan's own trace of the plan this file was exported from: known, not read");
        covered.push_back(e.key);
        break;
    }
  }
  return Status::Ok();
}

fs::path DirOf(const std::string& file) {
  fs::path d = fs::path(file).parent_path();
  return d.empty() ? fs::path(".") : d;
}

std::string Relative(const std::string& file, const std::string& name) {
  fs::path p(name);
  if (p.is_absolute()) return name;
  return (DirOf(file) / p).lexically_normal().string();
}

Status Importer::ReadNamedFile(const std::string& value, const Location& w, int depth, std::optional<ImportKind> expect) {
  const std::string path = Relative(w.file, value);
  if (depth + 1 > kMaxDepth) return Bad(w, "files name files more than " + Str(kMaxDepth) + " levels deep");
  std::error_code ec;
  if (!fs::exists(path, ec)) return Bad(w, "names '" + path + "', which does not exist (relative paths are read from the directory of " + w.file + ")");
  auto text = ReadInputFile(path);
  if (!text.ok()) return Bad(w, "cannot read '" + path + "': " + text.status().reason());
  if (expect) {
    auto kind = DetectImportKind(*text, path);
    if (kind.ok() && *kind != *expect)
      return Bad(w, "names '" + path + "', which reads as " + ToString(*kind) + ", not " + ToString(*expect));
  }
  return ReadFile(path, depth + 1, w);
}

// ---- DeepSpeed ds_config.json (§1.1, DeepSpeed 0.19.6 docs/_pages/config-json.md) ----

const KeyTable& DeepspeedKeys() {
  static const KeyTable t = {
      {"_gpuplan", Role::kTrace},
      {"train_batch_size", Role::kModel}, {"train_micro_batch_size_per_gpu", Role::kModel}, {"gradient_accumulation_steps", Role::kModel},
      {"bf16", Role::kSection}, {"bf16.enabled", Role::kModel}, {"bf16.bf16_master_weights_and_grads", Role::kModel},
      {"bf16.bf16_optimizer_states", Role::kModel}, {"bf16.immediate_grad_update", Role::kNoEffect}, {"bf16.check_grad_overflow", Role::kNoEffect},
      {"bfloat16", Role::kSection}, {"bfloat16.enabled", Role::kModel},
      {"fp16", Role::kSection}, {"fp16.enabled", Role::kModel}, {"fp16.auto_cast", Role::kNoEffect}, {"fp16.loss_scale", Role::kNoEffect},
      {"fp16.initial_scale_power", Role::kNoEffect}, {"fp16.loss_scale_window", Role::kNoEffect}, {"fp16.hysteresis", Role::kNoEffect},
      {"fp16.consecutive_hysteresis", Role::kNoEffect}, {"fp16.min_loss_scale", Role::kNoEffect}, {"fp16.fp16_master_weights_and_grads", Role::kNoEffect},
      {"amp", Role::kSection}, {"amp.enabled", Role::kModel}, {"amp.opt_level", Role::kNoEffect},
      {"zero_optimization", Role::kSection}, {"zero_optimization.stage", Role::kModel},
      {"zero_optimization.offload_optimizer", Role::kSection}, {"zero_optimization.offload_optimizer.device", Role::kModel},
      {"zero_optimization.offload_optimizer.nvme_path", Role::kNoEffect}, {"zero_optimization.offload_optimizer.pin_memory", Role::kNoEffect},
      {"zero_optimization.offload_optimizer.ratio", Role::kNoEffect}, {"zero_optimization.offload_optimizer.buffer_count", Role::kNoEffect},
      {"zero_optimization.offload_optimizer.fast_init", Role::kNoEffect},
      {"zero_optimization.offload_param", Role::kSection}, {"zero_optimization.offload_param.device", Role::kModel},
      {"zero_optimization.offload_param.nvme_path", Role::kNoEffect}, {"zero_optimization.offload_param.pin_memory", Role::kNoEffect},
      {"zero_optimization.offload_param.buffer_count", Role::kNoEffect}, {"zero_optimization.offload_param.buffer_size", Role::kNoEffect},
      {"zero_optimization.offload_param.max_in_cpu", Role::kNoEffect},
      {"zero_optimization.cpu_offload", Role::kModel},
      {"zero_optimization.overlap_comm", Role::kNoEffect}, {"zero_optimization.reduce_bucket_size", Role::kNoEffect},
      {"zero_optimization.allgather_bucket_size", Role::kNoEffect}, {"zero_optimization.contiguous_gradients", Role::kNoEffect},
      {"zero_optimization.reduce_scatter", Role::kNoEffect}, {"zero_optimization.allgather_partitions", Role::kNoEffect},
      {"zero_optimization.stage3_prefetch_bucket_size", Role::kNoEffect}, {"zero_optimization.stage3_param_persistence_threshold", Role::kNoEffect},
      {"zero_optimization.stage3_max_live_parameters", Role::kNoEffect}, {"zero_optimization.stage3_max_reuse_distance", Role::kNoEffect},
      {"zero_optimization.stage3_gather_16bit_weights_on_model_save", Role::kNoEffect},
      {"zero_optimization.stage3_gather_fp16_weights_on_model_save", Role::kNoEffect}, {"zero_optimization.sub_group_size", Role::kNoEffect},
      {"zero_optimization.round_robin_gradients", Role::kNoEffect}, {"zero_optimization.zero_hpz_partition_size", Role::kNoEffect},
      {"zero_optimization.zero_quantized_weights", Role::kNotModelled}, {"zero_optimization.zero_quantized_gradients", Role::kNotModelled},
      {"zero_optimization.elastic_checkpoint", Role::kNoEffect}, {"zero_optimization.load_from_fp32_weights", Role::kNoEffect},
      {"zero_optimization.ignore_unused_parameters", Role::kNoEffect}, {"zero_optimization.mics_shard_size", Role::kNotModelled},
      {"zero_optimization.mics_hierarchical_params_gather", Role::kNotModelled},
      {"optimizer", Role::kSection}, {"optimizer.type", Role::kModel}, {"optimizer.params", Role::kNoEffect},
      {"scheduler", Role::kNoEffect}, {"gradient_clipping", Role::kNoEffect}, {"prescale_gradients", Role::kNoEffect},
      {"gradient_predivide_factor", Role::kNoEffect}, {"communication_data_type", Role::kNoEffect}, {"sparse_gradients", Role::kNoEffect},
      {"activation_checkpointing", Role::kNoEffect}, {"zero_allow_untested_optimizer", Role::kNoEffect},
      {"zero_force_ds_cpu_optimizer", Role::kNoEffect}, {"data_types", Role::kSection}, {"data_types.grad_accum_dtype", Role::kModel},
      {"tensor_parallel", Role::kSection}, {"tensor_parallel.autotp_size", Role::kModel},
      {"steps_per_print", Role::kNotModelled}, {"wall_clock_breakdown", Role::kNotModelled}, {"dump_state", Role::kNotModelled},
      {"memory_breakdown", Role::kNotModelled}, {"flops_profiler", Role::kNotModelled}, {"tensorboard", Role::kNotModelled},
      {"wandb", Role::kNotModelled}, {"csv_monitor", Role::kNotModelled}, {"comms_logger", Role::kNotModelled},
      {"aio", Role::kNotModelled}, {"checkpoint", Role::kNotModelled}, {"elasticity", Role::kNotModelled},
      {"autotuning", Role::kNotModelled}, {"compression_training", Role::kNotModelled}, {"data_efficiency", Role::kNotModelled},
      {"curriculum_learning", Role::kNotModelled}, {"pipeline", Role::kNotModelled}, {"seq_parallel_communication_data_type", Role::kNotModelled},
  };
  return t;
}

// A batch value of a config: "auto" or a whole number; nullopt when absent.
Status PutBatch(Importer& im, const FlatConfig& cfg, const std::string& key, const std::string& job_key) {
  const FlatEntry* e = cfg.Get(key);
  if (!e) return Status::Ok();
  if (IsAuto(e->value)) return im.Put(job_key, "auto", e->where, Strength::kAuto);
  auto v = Int(e->value, e->where, 1, int64_t{1} << 32);
  if (!v.ok()) return v.status();
  return im.Put(job_key, Str(*v), e->where);
}

Status DeepspeedPrecision(Importer& im, const FlatConfig& cfg) {
  struct Mode {
    const char* key;
    const char* precision;
  };
  const Mode modes[] = {{"bf16.enabled", "bf16"}, {"bfloat16.enabled", "bf16"}, {"fp16.enabled", "fp16"}, {"amp.enabled", "fp16"}};
  const FlatEntry* on = nullptr;
  const FlatEntry* automatic = nullptr;
  const FlatEntry* off = nullptr;
  std::string precision;
  for (const auto& m : modes) {
    const FlatEntry* e = cfg.Get(m.key);
    if (!e) continue;
    if (IsAuto(e->value)) {
      if (!automatic) automatic = e;
      continue;
    }
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (!*b) {
      off = e;
      continue;
    }
    if (on && precision != m.precision)
      return Bad(e->where, "DeepSpeed cannot combine " + on->key + " and " + e->key + " (one of bf16, fp16, amp)");
    on = e;
    precision = m.precision;
    if (std::string(m.key) == "amp.enabled") im.Note(e->where, "apex amp: modelled as fp16 mixed precision");
  }
  if (on) return im.Put("training.precision", precision, on->where);
  if (automatic) return im.Put("training.precision", "auto", automatic->where, Strength::kAuto);
  if (off) return im.Put("training.precision", "fp32", off->where);
  return im.Put("training.precision", "fp32", {cfg.file, 1, "bf16/fp16 (not given)"}, Strength::kDefault);
}

Status DeepspeedZero(Importer& im, const FlatConfig& cfg) {
  std::optional<int64_t> stage;
  if (const FlatEntry* e = cfg.Get("zero_optimization.stage")) {
    if (IsAuto(e->value)) {
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "auto", e->where, Strength::kAuto));
    } else {
      auto v = Int(e->value, e->where, 0, 3);
      if (!v.ok()) return v.status();
      stage = *v;
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", Str(*v), e->where));
    }
  } else {
    stage = 0;
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "0", {cfg.file, 1, "zero_optimization.stage (not given)"}, Strength::kDefault));
  }
  auto device = [&](const std::string& key) -> Result<std::string> {
    const FlatEntry* e = cfg.Get(key);
    if (!e) return std::string("none");
    const std::string d = Lower(e->value);
    if (d == "none" || d == "cpu" || d == "nvme") return d;
    if (d == "auto") return Bad(e->where, "an offload device has no \"auto\": give none, cpu or nvme");
    return Bad(e->where, "expected none, cpu or nvme, got '" + e->value + "'");
  };
  auto opt = device("zero_optimization.offload_optimizer.device");
  if (!opt.ok()) return opt.status();
  auto param = device("zero_optimization.offload_param.device");
  if (!param.ok()) return param.status();
  std::string o = *opt, p = *param;
  if (const FlatEntry* e = cfg.Get("zero_optimization.cpu_offload")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (*b && o == "none") o = "cpu";
    im.Note(e->where, "deprecated (DeepSpeed: use offload_optimizer); read as offload_optimizer.device cpu");
  }
  const FlatEntry* pe = cfg.Get("zero_optimization.offload_param.device");
  const FlatEntry* oe = cfg.Get("zero_optimization.offload_optimizer.device");
  if (stage && p != "none" && *stage != 3) return Bad(pe->where, "parameter offload is ZeRO stage 3 only (stage is " + Str(*stage) + ")");
  if (stage && o == "nvme" && *stage != 3) return Bad(oe->where, "optimizer offload to nvme is ZeRO stage 3 only (stage is " + Str(*stage) + ")");
  if (stage && o != "none" && *stage == 0) return Bad(oe->where, "optimizer offload needs ZeRO stage 1, 2 or 3 (stage is 0)");
  if (o == "nvme" || p == "nvme") im.Note(o == "nvme" ? oe->where : pe->where, "nvme offload: modelled as host offload (GPU memory is the same; the step's transfer time is the host's)");
  if (p != "none") {
    if (o == "none") im.Note(pe->where, "parameter offload without optimizer offload: gpuplan models the two together (optimizer+params)");
    return im.Put("parallel.offload", "optimizer+params", pe->where);
  }
  if (o != "none") return im.Put("parallel.offload", "optimizer", oe ? oe->where : Location{cfg.file, 1, "zero_optimization.cpu_offload"});
  return im.Put("parallel.offload", "none", {cfg.file, 1, "zero_optimization.offload_* (not given)"}, Strength::kDefault);
}

Status DeepspeedOther(Importer& im, const FlatConfig& cfg) {
  if (const FlatEntry* e = cfg.Get("optimizer.type")) {
    const std::string t = Lower(e->value);
    if (t == "adam" || t == "adamw" || t == "fusedadam" || t == "cpuadam" || t == "deepspeedcpuadam") {
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", "adamw", e->where));
    } else if (t == "sgd") {
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", "sgd", e->where));
    } else {
      im.Unknown(e->where, "optimizer '" + e->value + "' is not one gpuplan models (adamw, adamw-8bit, adafactor, sgd); the job keeps adamw");
    }
  }
  const FlatEntry* mw = cfg.Get("bf16.bf16_master_weights_and_grads");
  const FlatEntry* os = cfg.Get("bf16.bf16_optimizer_states");
  if (mw || os) {
    bool a = false, b = false;
    if (mw) {
      auto v = Bool(mw->value, mw->where);
      if (!v.ok()) return v.status();
      a = *v;
    }
    if (os) {
      auto v = Bool(os->value, os->where);
      if (!v.ok()) return v.status();
      b = *v;
    }
    if (a && b) GPUPLAN_RETURN_IF_ERROR(im.Put("training.master_weights", "none", mw->where));
    else if (a || b) im.Note((a ? mw : os)->where, "only one of bf16_master_weights_and_grads / bf16_optimizer_states: gpuplan models both or neither; the job keeps fp32 masters");
  }
  if (const FlatEntry* e = cfg.Get("data_types.grad_accum_dtype")) {
    const std::string d = Lower(e->value);
    if (d == "fp32" || d == "float32") GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp32_grads", "true", e->where));
    else if (d != "bf16" && d != "fp16" && d != "auto") return Bad(e->where, "expected fp32, bf16 or fp16, got '" + e->value + "'");
  }
  if (const FlatEntry* e = cfg.Get("tensor_parallel.autotp_size")) {
    auto v = Int(e->value, e->where, 1, 1024);
    if (!v.ok()) return v.status();
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.tp", Str(*v), e->where));
  }
  return im.Put("training.framework", "deepspeed", {cfg.file, 1, "(a DeepSpeed config)"}, Strength::kDefault);
}

Status Importer::ReadDeepspeed(const std::string& text, const std::string& file) {
  FlatConfig cfg;
  GPUPLAN_RETURN_IF_ERROR(FlattenYamlText(text, file, cfg));
  GPUPLAN_RETURN_IF_ERROR(CheckKeys(cfg, DeepspeedKeys(), "DeepSpeed"));
  GPUPLAN_RETURN_IF_ERROR(PutBatch(*this, cfg, "train_batch_size", "training.global_batch"));
  GPUPLAN_RETURN_IF_ERROR(PutBatch(*this, cfg, "train_micro_batch_size_per_gpu", "training.micro_batch"));
  GPUPLAN_RETURN_IF_ERROR(PutBatch(*this, cfg, "gradient_accumulation_steps", "training.grad_accum"));
  GPUPLAN_RETURN_IF_ERROR(DeepspeedPrecision(*this, cfg));
  GPUPLAN_RETURN_IF_ERROR(DeepspeedZero(*this, cfg));
  return DeepspeedOther(*this, cfg);
}

// ---- HF accelerate config YAML (§1.2, accelerate 1.15.0.dev0) ----

const KeyTable& AccelerateKeys() {
  static const KeyTable t = [] {
    KeyTable k = {
        {"compute_environment", Role::kNoEffect}, {"distributed_type", Role::kModel}, {"mixed_precision", Role::kModel},
        {"num_machines", Role::kModel}, {"num_processes", Role::kModel}, {"machine_rank", Role::kNoEffect},
        {"main_process_ip", Role::kNoEffect}, {"main_process_port", Role::kNoEffect}, {"rdzv_backend", Role::kNoEffect},
        {"same_network", Role::kNoEffect}, {"main_training_function", Role::kNoEffect}, {"use_cpu", Role::kModel},
        {"gpu_ids", Role::kNoEffect}, {"downcast_bf16", Role::kNoEffect}, {"debug", Role::kNotModelled},
        {"enable_cpu_affinity", Role::kNoEffect}, {"tpu_env", Role::kNotModelled}, {"tpu_use_cluster", Role::kNotModelled},
        {"tpu_use_sudo", Role::kNotModelled}, {"ipex_config", Role::kNotModelled}, {"mpirun_config", Role::kNotModelled},
        {"fp8_config", Role::kNotModelled}, {"num_cpu_threads_per_process", Role::kNoEffect},
        {"dynamo_config", Role::kSection}, {"dynamo_config.dynamo_backend", Role::kModel}, {"dynamo_config.dynamo_mode", Role::kNoEffect},
        {"dynamo_config.dynamo_use_fullgraph", Role::kNoEffect}, {"dynamo_config.dynamo_use_dynamic", Role::kNoEffect},
        {"fsdp_config", Role::kSection}, {"deepspeed_config", Role::kSection}, {"megatron_lm_config", Role::kSection},
        {"parallelism_config", Role::kSection},
    };
    for (const char* f : {"fsdp_version", "fsdp_sharding_strategy", "fsdp_reshard_after_forward", "fsdp_offload_params",
                          "fsdp_activation_checkpointing", "fsdp_cpu_offload"})
      k[std::string("fsdp_config.") + f] = Role::kModel;
    for (const char* f : {"fsdp_backward_prefetch", "fsdp_forward_prefetch", "fsdp_sync_module_states", "fsdp_use_orig_params",
                          "fsdp_state_dict_type", "fsdp_auto_wrap_policy", "fsdp_transformer_layer_cls_to_wrap", "fsdp_min_num_params",
                          "fsdp_cpu_ram_efficient_loading", "fsdp_backward_prefetch_policy"})
      k[std::string("fsdp_config.") + f] = Role::kNoEffect;
    for (const char* f : {"zero_stage", "gradient_accumulation_steps", "offload_optimizer_device", "offload_param_device", "deepspeed_config_file"})
      k[std::string("deepspeed_config.") + f] = Role::kModel;
    for (const char* f : {"gradient_clipping", "offload_optimizer_nvme_path", "offload_param_nvme_path", "zero3_init_flag",
                          "zero3_save_16bit_model", "deepspeed_moe_layer_cls_names", "deepspeed_hostfile", "deepspeed_inclusion_filter",
                          "deepspeed_exclusion_filter", "deepspeed_multinode_launcher"})
      k[std::string("deepspeed_config.") + f] = Role::kNoEffect;
    for (const char* f : {"megatron_lm_tp_degree", "megatron_lm_pp_degree", "megatron_lm_num_micro_batches", "megatron_lm_sequence_parallelism",
                          "megatron_lm_recompute_activations", "megatron_lm_use_distributed_optimizer"})
      k[std::string("megatron_lm_config.") + f] = Role::kModel;
    k["megatron_lm_config.megatron_lm_gradient_clipping"] = Role::kNoEffect;
    for (const char* f : {"parallelism_config_dp_replicate_size", "parallelism_config_dp_shard_size", "parallelism_config_tp_size",
                          "parallelism_config_cp_size"})
      k[std::string("parallelism_config.") + f] = Role::kModel;
    for (const char* f : {"parallelism_config_cp_comm_strategy", "parallelism_config_sp_size", "parallelism_config_sp_backend"})
      k[std::string("parallelism_config.") + f] = Role::kNoEffect;
    return k;
  }();
  return t;
}

Status Importer::ReadAccelerateInto(const std::string& text, const std::string& file, FlatConfig& cfg) {
  FlatConfig own;
  GPUPLAN_RETURN_IF_ERROR(FlattenYamlText(text, file, own));
  GPUPLAN_RETURN_IF_ERROR(CheckKeys(own, AccelerateKeys(), "accelerate"));
  cfg.file = file;
  for (auto& e : own.entries) cfg.entries.push_back(e);
  return Status::Ok();
}

// FSDP sharding (FSDP1 fsdp_sharding_strategy, FSDP2 fsdp_reshard_after_forward) -> ZeRO stage.
Status FsdpZero(Importer& im, const FlatEntry& e) {
  const std::string v = Lower(e.value);
  if (v == "full_shard" || v == "1" || v == "true") return im.Put("parallel.zero", "3", e.where);
  if (v == "shard_grad_op" || v == "2" || v == "false") return im.Put("parallel.zero", "2", e.where);
  if (v == "no_shard" || v == "3") return im.Put("parallel.zero", "0", e.where);
  if (v == "hybrid_shard" || v == "4") {
    im.Note(e.where, "HYBRID_SHARD shards within a node and replicates across nodes; gpuplan models it as ZeRO-3 over all data-parallel ranks (per-GPU memory below hybrid's on more than one node)");
    return im.Put("parallel.zero", "3", e.where);
  }
  if (v == "hybrid_shard_zero2" || v == "5") {
    im.Note(e.where, "HYBRID_SHARD_ZERO2: modelled as ZeRO-2 over all data-parallel ranks");
    return im.Put("parallel.zero", "2", e.where);
  }
  return Bad(e.where, "expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (or true/false), got '" + e.value + "'");
}

Status AccelerateFsdp(Importer& im, const FlatConfig& cfg) {
  const FlatEntry* strategy = cfg.Get("fsdp_config.fsdp_sharding_strategy");
  const FlatEntry* reshard = cfg.Get("fsdp_config.fsdp_reshard_after_forward");
  if (reshard) GPUPLAN_RETURN_IF_ERROR(FsdpZero(im, *reshard));
  else if (strategy) GPUPLAN_RETURN_IF_ERROR(FsdpZero(im, *strategy));
  else GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "3", {cfg.file, 1, "fsdp_config.fsdp_sharding_strategy (not given)"}, Strength::kDefault));
  if (reshard && strategy) im.Note(strategy->where, "fsdp_reshard_after_forward decides (FSDP2's key)");
  for (const char* k : {"fsdp_config.fsdp_offload_params", "fsdp_config.fsdp_cpu_offload"}) {
    if (const FlatEntry* e = cfg.Get(k)) {
      auto b = Bool(e->value, e->where);
      if (!b.ok()) return b.status();
      if (std::string(k) == "fsdp_config.fsdp_cpu_offload") im.Note(e->where, "accelerate's own key is fsdp_offload_params; read the same");
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", *b ? "optimizer+params" : "none", e->where));
    }
  }
  if (const FlatEntry* e = cfg.Get("fsdp_config.fsdp_activation_checkpointing")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (*b) GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", "full", e->where));
  }
  if (const FlatEntry* e = cfg.Get("fsdp_config.fsdp_version")) {
    if (e->value != "1" && e->value != "2") return Bad(e->where, "expected 1 or 2, got '" + e->value + "'");
    im.Note(e->where, "read, no effect on the estimate (FSDP1 and FSDP2 shard the same states)");
  }
  return im.Put("training.framework", "fsdp", {cfg.file, 1, "distributed_type FSDP"}, Strength::kDefault);
}

Status AccelerateDeepspeed(Importer& im, const FlatConfig& cfg, int depth) {
  if (const FlatEntry* file = cfg.Get("deepspeed_config.deepspeed_config_file")) {
    // accelerate raises a ValueError when these are also in the YAML (§1.2): they belong in the JSON.
    for (const char* k : {"gradient_accumulation_steps", "gradient_clipping", "zero_stage", "offload_optimizer_device",
                          "offload_param_device", "zero3_save_16bit_model"})
      if (const FlatEntry* e = cfg.Get(std::string("deepspeed_config.") + k))
        return Bad(e->where, "accelerate refuses this next to deepspeed_config_file (" + At(file->where) + "): put it in " + file->value);
    if (const FlatEntry* e = cfg.Get("mixed_precision"); e && e->where.file == cfg.file && Lower(e->value) != "no")
      return Bad(e->where, "accelerate refuses mixed_precision next to deepspeed_config_file (" + At(file->where) + "): set bf16/fp16 in " + file->value);
    return im.ReadNamedFile(file->value, file->where, depth, ImportKind::kDeepspeedConfig);
  }
  if (const FlatEntry* e = cfg.Get("deepspeed_config.zero_stage")) {
    auto v = Int(e->value, e->where, 0, 3);
    if (!v.ok()) return v.status();
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", Str(*v), e->where));
  }
  GPUPLAN_RETURN_IF_ERROR(PutBatch(im, cfg, "deepspeed_config.gradient_accumulation_steps", "training.grad_accum"));
  const FlatEntry* oe = cfg.Get("deepspeed_config.offload_optimizer_device");
  const FlatEntry* pe = cfg.Get("deepspeed_config.offload_param_device");
  auto dev = [](const FlatEntry* e) { return e ? Lower(e->value) : std::string("none"); };
  for (const FlatEntry* e : {oe, pe})
    if (e && dev(e) != "none" && dev(e) != "cpu" && dev(e) != "nvme") return Bad(e->where, "expected none, cpu or nvme, got '" + e->value + "'");
  if (dev(pe) != "none") GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", "optimizer+params", pe->where));
  else if (dev(oe) != "none") GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", "optimizer", oe->where));
  return im.Put("training.framework", "deepspeed", {cfg.file, 1, "distributed_type DEEPSPEED"}, Strength::kDefault);
}

Status AccelerateMegatron(Importer& im, const FlatConfig& cfg) {
  auto put_int = [&](const char* k, const char* job_key) -> Status {
    const FlatEntry* e = cfg.Get(std::string("megatron_lm_config.") + k);
    if (!e) return Status::Ok();
    auto v = Int(e->value, e->where, 1, 1 << 20);
    if (!v.ok()) return v.status();
    return im.Put(job_key, Str(*v), e->where);
  };
  GPUPLAN_RETURN_IF_ERROR(put_int("megatron_lm_tp_degree", "parallel.tp"));
  GPUPLAN_RETURN_IF_ERROR(put_int("megatron_lm_pp_degree", "parallel.pp"));
  GPUPLAN_RETURN_IF_ERROR(put_int("megatron_lm_num_micro_batches", "training.grad_accum"));
  auto flag = [&](const char* k) -> Result<const FlatEntry*> {
    const FlatEntry* e = cfg.Get(std::string("megatron_lm_config.") + k);
    if (!e) return static_cast<const FlatEntry*>(nullptr);
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    return *b ? e : static_cast<const FlatEntry*>(nullptr);
  };
  auto sp = flag("megatron_lm_sequence_parallelism");
  if (!sp.ok()) return sp.status();
  if (*sp) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.sequence_parallel", "true", (*sp)->where));
  auto rc = flag("megatron_lm_recompute_activations");
  if (!rc.ok()) return rc.status();
  if (*rc) GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", "selective", (*rc)->where));
  auto dist = flag("megatron_lm_use_distributed_optimizer");
  if (!dist.ok()) return dist.status();
  if (*dist) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "1", (*dist)->where));
  return im.Put("training.framework", "megatron", {cfg.file, 1, "distributed_type MEGATRON_LM"}, Strength::kDefault);
}

Status AcceleratePrecisionAndProcesses(Importer& im, const FlatConfig& cfg) {
  if (const FlatEntry* e = cfg.Get("mixed_precision")) {
    const std::string v = Lower(e->value);
    const std::string p = v == "no" || v == "false" ? "fp32" : v == "fp16" ? "fp16" : v == "bf16" ? "bf16" : v == "fp8" ? "fp8" : "";
    if (p.empty()) return Bad(e->where, "expected no, fp16, bf16 or fp8, got '" + e->value + "'");
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", p, e->where));
  }
  const FlatEntry* procs = cfg.Get("num_processes");
  const FlatEntry* machines = cfg.Get("num_machines");
  int64_t n = 0, m = 1;
  if (procs) {
    auto v = Int(procs->value, procs->where, 1, int64_t{1} << 20);
    if (!v.ok()) return v.status();
    n = *v;
    GPUPLAN_RETURN_IF_ERROR(im.Put("cluster.num_gpus", Str(n), procs->where));
  }
  if (machines) {
    auto v = Int(machines->value, machines->where, 1, int64_t{1} << 20);
    if (!v.ok()) return v.status();
    m = *v;
  }
  if (procs) {
    if (n % m != 0)
      return Bad(procs->where, "num_processes is all processes of all machines: " + Str(n) + " is not a multiple of num_machines " + Str(m) +
                                   (machines ? " (" + At(machines->where) + ")" : ""));
    GPUPLAN_RETURN_IF_ERROR(im.Put("cluster.gpus_per_node", Str(n / m), machines ? machines->where : procs->where));
  } else if (machines && m > 1) {
    im.Unresolved(machines->where, "num_machines without num_processes: the GPUs per machine are unknown; the job keeps gpuplan's default (cluster.num_gpus from the layout)");
  }
  if (const FlatEntry* e = cfg.Get("use_cpu")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (*b) return Bad(e->where, "use_cpu: true trains on the CPU; gpuplan plans GPU jobs");
  }
  if (const FlatEntry* e = cfg.Get("dynamo_config.dynamo_backend")) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.compile", Lower(e->value) == "no" ? "false" : "true", e->where));
  }
  return Status::Ok();
}

Status AccelerateParallelism(Importer& im, const FlatConfig& cfg) {
  auto get = [&](const char* k) -> Result<int64_t> {
    const FlatEntry* e = cfg.Get(std::string("parallelism_config.") + k);
    if (!e) return int64_t{0};
    return Int(e->value, e->where, 1, int64_t{1} << 20);
  };
  auto tp = get("parallelism_config_tp_size");
  if (!tp.ok()) return tp.status();
  auto cp = get("parallelism_config_cp_size");
  if (!cp.ok()) return cp.status();
  auto shard = get("parallelism_config_dp_shard_size");
  if (!shard.ok()) return shard.status();
  auto rep = get("parallelism_config_dp_replicate_size");
  if (!rep.ok()) return rep.status();
  if (*tp > 0) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.tp", Str(*tp), cfg.Get("parallelism_config.parallelism_config_tp_size")->where));
  if (*cp > 0) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.cp", Str(*cp), cfg.Get("parallelism_config.parallelism_config_cp_size")->where));
  if (*shard > 0 || *rep > 0) {
    const FlatEntry* e = cfg.Get(*shard > 0 ? "parallelism_config.parallelism_config_dp_shard_size" : "parallelism_config.parallelism_config_dp_replicate_size");
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.dp", Str(std::max<int64_t>(*shard, 1) * std::max<int64_t>(*rep, 1)), e->where));
    if (*rep > 1 && *shard > 1) im.Note(e->where, "dp = replicate x shard; gpuplan shards over all data-parallel ranks (HSDP modelled as FSDP)");
  }
  return Status::Ok();
}

Status Importer::ApplyAccelerate(const FlatConfig& cfg, int depth) {
  const FlatEntry* type = cfg.Get("distributed_type");
  const std::string t = type ? type->value : "NO";
  GPUPLAN_RETURN_IF_ERROR(AcceleratePrecisionAndProcesses(*this, cfg));
  auto unused = [&](const std::string& section, const std::string& used_by) {
    for (const auto& e : cfg.entries)
      if (e.key == section && e.is_map)
        for (const auto& c : cfg.entries)
          if (c.key.rfind(section + ".", 0) == 0) {
            Note(e.where, "read only with distributed_type " + used_by + " (this file has " + t + "): not applied");
            return;
          }
  };
  if (t != "FSDP") unused("fsdp_config", "FSDP");
  if (t != "DEEPSPEED") unused("deepspeed_config", "DEEPSPEED");
  if (t != "MEGATRON_LM") unused("megatron_lm_config", "MEGATRON_LM");
  GPUPLAN_RETURN_IF_ERROR(AccelerateParallelism(*this, cfg));
  if (t == "FSDP") return AccelerateFsdp(*this, cfg);
  if (t == "DEEPSPEED") return AccelerateDeepspeed(*this, cfg, depth);
  if (t == "MEGATRON_LM") return AccelerateMegatron(*this, cfg);
  if (t == "MULTI_GPU" || t == "NO")
    return Put("parallel.zero", "0", type ? type->where : Location{cfg.file, 1, "distributed_type (not given)"}, Strength::kDefault);
  return Bad(type->where, "expected NO, MULTI_GPU, FSDP, DEEPSPEED or MEGATRON_LM (the GPU types), got '" + t + "'");
}

// ---- torchtitan v0.2.x TOML (§1.5) ----

const KeyTable& TorchtitanKeys() {
  static const KeyTable t = [] {
    KeyTable k;
    auto section = [&](const std::string& name, std::initializer_list<const char*> model, std::initializer_list<const char*> no_effect) {
      k[name] = Role::kSection;
      for (const char* f : model) k[name + "." + f] = Role::kModel;
      for (const char* f : no_effect) k[name + "." + f] = Role::kNoEffect;
    };
    section("job", {}, {"config_file", "dump_folder", "description", "print_args", "use_for_integration_test", "print_config"});
    section("model", {"name", "flavor", "converters"}, {"hf_assets_path", "tokenizer_path", "print_after_conversion"});
    section("optimizer", {"name", "early_step_in_backward"}, {"lr", "eps", "weight_decay", "beta1", "beta2", "implementation"});
    section("training", {"local_batch_size", "batch_size", "global_batch_size", "seq_len", "steps", "mixed_precision_param",
                         "enable_cpu_offload"},
            {"max_norm", "mixed_precision_reduce", "dataset", "dataset_path", "warmup_steps", "gc_freq", "seed", "deterministic", "debug_moe_force_load_balance",
             "gc_debug"});
    section("parallelism", {"data_parallel_replicate_degree", "data_parallel_shard_degree", "fsdp_reshard_after_forward",
                            "tensor_parallel_degree", "pipeline_parallel_degree", "pipeline_parallel_schedule",
                            "pipeline_parallel_microbatch_size", "pipeline_parallel_layers_per_stage", "context_parallel_degree",
                            "expert_parallel_degree"},
            {"disable_loss_parallel", "enable_async_tensor_parallel", "pipeline_parallel_schedule_csv", "pipeline_parallel_first_stage_less_layers",
             "pipeline_parallel_last_stage_less_layers", "pipeline_parallel_split_points", "module_fqns_per_model_part",
             "context_parallel_rotate_method", "expert_tensor_parallel_degree", "enable_compiled_autograd"});
    section("activation_checkpoint", {"mode"}, {"selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns", "memory_budget",
                                               "early_stop", "preserve_rng_state", "determinism_check", "debug"});
    section("compile", {"enable"}, {"components", "backend"});
    section("checkpoint", {"async_mode"}, {"enable", "enable_checkpoint", "folder", "interval", "keep_latest_k", "last_save_model_only",
                                          "export_dtype", "load_step", "initial_load_path", "initial_load_model_only", "exclude_from_loading",
                                          "enable_first_step_checkpoint", "create_seed_checkpoint", "load_only", "initial_load_in_hf",
                                          "last_save_in_hf"});
    k["quantize"] = Role::kSection;
    k["quantize.linear"] = Role::kSection;
    k["quantize.linear.float8"] = Role::kSection;
    k["quantize.linear.float8.recipe_name"] = Role::kModel;
    for (const char* f : {"enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp", "filter_fqns", "emulate"})
      k[std::string("quantize.linear.float8.") + f] = Role::kNoEffect;
    k["quantize.linear.mx"] = Role::kNoEffect;
    k["quantize.grouped_mm"] = Role::kNoEffect;
    for (const char* s : {"lr_scheduler", "metrics", "profiling", "comm", "memory_estimation", "fault_tolerance", "experimental",
                          "validation", "float8", "mx"})
      k[s] = Role::kNoEffect;
    return k;
  }();
  return t;
}

Status Importer::ReadTorchtitanInto(const std::string& text, const std::string& file, FlatConfig& cfg) {
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(text, file));
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

Status Importer::ApplyTorchtitan(const FlatConfig& cfg) {
  int64_t pp = 1;
  GPUPLAN_RETURN_IF_ERROR(TitanModel(*this, cfg));
  GPUPLAN_RETURN_IF_ERROR(TitanParallelism(*this, cfg, pp));
  GPUPLAN_RETURN_IF_ERROR(TitanTraining(*this, cfg, pp));
  GPUPLAN_RETURN_IF_ERROR(TitanSchedule(*this, cfg, pp));
  if (const FlatEntry* e = cfg.Get("activation_checkpoint.mode")) {
    const std::string m = Lower(e->value);
    if (m == "memory_budget") {
      Note(e->where, "memory_budget: modelled as selective");
      GPUPLAN_RETURN_IF_ERROR(Put("training.recompute", "selective", e->where));
    } else if (m == "none" || m == "selective" || m == "full") {
      GPUPLAN_RETURN_IF_ERROR(Put("training.recompute", m, e->where));
    } else {
      return Bad(e->where, "expected none, selective, full or memory_budget, got '" + e->value + "'");
    }
  }
  if (const FlatEntry* e = cfg.Get("compile.enable")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    GPUPLAN_RETURN_IF_ERROR(Put("training.compile", *b ? "true" : "false", e->where));
  }
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

// ---- shell text: a launch line or a Megatron command, in a .sh file or a text file ----
// A small reader of the shell a launch script uses: words with their lines, `\` continuations,
// quotes, comments, NAME=value and NAME=( ... ) arrays, $NAME / ${NAME:-default} / ${ARR[@]},
// $((arithmetic)), $(dirname "$0") (the file's directory) and `source FILE`. Anything it cannot
// know (an environment variable, a command's output) is kept as an unresolved word.

struct Word {
  std::string text;
  int line = 0;
  std::string unresolved;  // why the value is unknown ("" = known)
};
using Command = std::vector<Word>;

struct ShellState {
  std::map<std::string, Word> vars;
  std::map<std::string, std::vector<Word>> arrays;
  std::vector<std::string> array_order;  // arrays defined by the file read itself (not by sourced files)
};

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Integer arithmetic of $(( )): + - * / % and parentheses over numbers (variables already substituted).
class Arith {
 public:
  explicit Arith(std::string s) : s_(std::move(s)) {}
  std::optional<int64_t> Eval() {
    auto v = Sum();
    Skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::optional<int64_t> Atom() {
    Skip();
    if (i_ < s_.size() && s_[i_] == '(') {
      ++i_;
      auto v = Sum();
      Skip();
      if (!v || i_ >= s_.size() || s_[i_] != ')') return std::nullopt;
      ++i_;
      return v;
    }
    if (i_ < s_.size() && s_[i_] == '-') {
      ++i_;
      auto v = Atom();
      if (!v) return std::nullopt;
      return -*v;
    }
    size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (start == i_ || i_ - start > 15) return std::nullopt;
    return std::stoll(s_.substr(start, i_ - start));
  }
  std::optional<int64_t> Product() {
    auto v = Atom();
    for (;;) {
      Skip();
      if (!v || i_ >= s_.size() || (s_[i_] != '*' && s_[i_] != '/' && s_[i_] != '%')) return v;
      const char op = s_[i_++];
      auto r = Atom();
      if (!r) return std::nullopt;
      if (op != '*' && *r == 0) return std::nullopt;
      if (op == '*' && std::abs(*v) > (int64_t{1} << 31) && std::abs(*r) > 1) return std::nullopt;
      v = op == '*' ? *v * *r : op == '/' ? *v / *r : *v % *r;
    }
  }
  std::optional<int64_t> Sum() {
    auto v = Product();
    for (;;) {
      Skip();
      if (!v || i_ >= s_.size() || (s_[i_] != '+' && s_[i_] != '-')) return v;
      const char op = s_[i_++];
      auto r = Product();
      if (!r) return std::nullopt;
      v = op == '+' ? *v + *r : *v - *r;
    }
  }
  std::string s_;
  size_t i_ = 0;
};

class ShellReader {
 public:
  ShellReader(const std::string& text, const std::string& file, ShellState& st, int depth, bool own_file)
      : s_(text), file_(file), st_(st), depth_(depth), own_(own_file) {}

  Status Read(std::vector<Command>& out);
  std::vector<std::pair<Location, std::string>> notes;  // sourced files not found, ...

 private:
  struct Exp {
    std::string text;
    std::string unresolved;
    bool is_array = false;
    std::vector<Word> words;
  };
  Status Fail(const std::string& why, int line) { return Bad({file_, line, ""}, why); }
  Result<std::vector<Word>> ReadWord();
  Result<Exp> Expand(bool quoted);
  Result<Exp> ExpandArith();    // $(( ... ))
  Result<Exp> ExpandCommand();  // $( ... )
  Result<Exp> ExpandBraces();   // ${ ... }
  Result<std::string> Enclosed(char open, char close, int& lines);
  Exp Var(const std::string& name) const;
  std::string ExpandSimple(const std::string& text, std::string& unresolved) const;
  Status ReadArray(const std::string& name, bool append);
  bool AssignmentAt(std::string& name, bool& append, bool& array) const;
  void SkipRedirection();
  Status Source(const Command& cmd);

  const std::string& s_;
  std::string file_;
  ShellState& st_;
  int depth_;
  bool own_;
  size_t i_ = 0;
  int line_ = 1;
};

ShellReader::Exp ShellReader::Var(const std::string& name) const {
  Exp e;
  if (name == "0") {
    e.text = file_;
    return e;
  }
  if (auto it = st_.vars.find(name); it != st_.vars.end()) {
    e.text = it->second.text;
    e.unresolved = it->second.unresolved;
    return e;
  }
  if (auto it = st_.arrays.find(name); it != st_.arrays.end() && !it->second.empty()) {  // $ARR is its first element
    e.text = it->second[0].text;
    e.unresolved = it->second[0].unresolved;
    return e;
  }
  e.text = "$" + name;
  e.unresolved = "$" + name + " is not set in the file (an environment variable?)";
  return e;
}

// $NAME and ${NAME} inside a ${X:-default} default.
std::string ShellReader::ExpandSimple(const std::string& t, std::string& unresolved) const {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '$' || i + 1 >= t.size()) {
      out += t[i];
      continue;
    }
    size_t j = i + 1;
    const bool brace = t[j] == '{';
    if (brace) ++j;
    size_t k = j;
    while (k < t.size() && IsIdent(t[k])) ++k;
    if (k == j) {
      out += t[i];
      continue;
    }
    Exp e = Var(t.substr(j, k - j));
    if (!e.unresolved.empty() && unresolved.empty()) unresolved = e.unresolved;
    out += e.text;
    i = brace && k < t.size() && t[k] == '}' ? k : k - 1;
  }
  return out;
}

// The text up to the matching close (quotes and nesting respected); i_ is after `open`.
Result<std::string> ShellReader::Enclosed(char open, char close, int& lines) {
  const int start_line = line_;
  int depth = 1;
  std::string out;
  while (i_ < s_.size()) {
    const char c = s_[i_];
    if (c == '\n') ++lines, ++line_;
    if (c == '\\' && i_ + 1 < s_.size()) {
      out += c;
      out += s_[i_ + 1];
      if (s_[i_ + 1] == '\n') ++line_;
      i_ += 2;
      continue;
    }
    if (c == '\'' || c == '"') {
      const char q = c;
      out += c;
      ++i_;
      while (i_ < s_.size() && s_[i_] != q) {
        if (s_[i_] == '\n') ++line_;
        if (q == '"' && s_[i_] == '\\' && i_ + 1 < s_.size()) out += s_[i_++];
        out += s_[i_++];
      }
      if (i_ >= s_.size()) return Fail(std::string("unterminated ") + (q == '"' ? "double" : "single") + " quote", start_line);
      out += s_[i_++];
      continue;
    }
    if (c == open) ++depth;
    if (c == close && --depth == 0) {
      ++i_;
      return out;
    }
    out += c;
    ++i_;
  }
  return Fail(std::string("'") + open + "' never closed (no matching '" + close + "')", start_line);
}

Result<ShellReader::Exp> ShellReader::ExpandArith() {
  Exp e;
  int lines = 0;
  i_ += 2;
  auto inner = Enclosed('(', ')', lines);
  if (!inner.ok()) return inner.status();
  std::string body = *inner;
  if (!body.empty() && body.back() == ')') body.pop_back();
  else if (i_ < s_.size() && s_[i_] == ')') ++i_;
  // bare names in arithmetic are variables
  std::string subst, why;
  for (size_t k = 0; k < body.size();) {
    if (IsIdentStart(body[k])) {
      size_t m = k;
      while (m < body.size() && IsIdent(body[m])) ++m;
      Exp v = Var(body.substr(k, m - k));
      if (!v.unresolved.empty() && why.empty()) why = v.unresolved;
      subst += v.text;
      k = m;
    } else if (body[k] == '$') {
      ++k;
      if (k < body.size() && body[k] == '{') ++k;
      size_t m = k;
      while (m < body.size() && IsIdent(body[m])) ++m;
      Exp v = Var(body.substr(k, m - k));
      if (!v.unresolved.empty() && why.empty()) why = v.unresolved;
      subst += v.text;
      k = m < body.size() && body[m] == '}' ? m + 1 : m;
    } else {
      subst += body[k++];
    }
  }
  auto v = why.empty() ? Arith(subst).Eval() : std::nullopt;
  if (v) e.text = Str(*v);
  else e.text = "$((" + body + "))", e.unresolved = why.empty() ? "$((" + body + ")) is not arithmetic gpuplan evaluates" : why;
  return e;
}

Result<ShellReader::Exp> ShellReader::ExpandCommand() {
  Exp e;
  int lines = 0;
  ++i_;
  auto inner = Enclosed('(', ')', lines);
  if (!inner.ok()) return inner.status();
  // $(dirname "$0") and $(cd "$(dirname "$0")" && pwd): the directory of this file.
  if (inner->find("dirname") != std::string::npos && (inner->find("$0") != std::string::npos || inner->find("BASH_SOURCE") != std::string::npos)) {
    std::error_code ec;  // absolute: the names built from it are not relative to the file a second time
    const fs::path abs = fs::absolute(DirOf(file_), ec);
    e.text = (ec ? DirOf(file_) : abs.lexically_normal()).string();
    if (e.text.size() > 1 && e.text.back() == '/') e.text.pop_back();
    return e;
  }
  e.text = "$(" + *inner + ")";
  e.unresolved = "$(" + *inner + ") is a command's output, unknown here";
  return e;
}

Result<ShellReader::Exp> ShellReader::ExpandBraces() {
  Exp e;
  int lines = 0;
  ++i_;
  auto inner = Enclosed('{', '}', lines);
  if (!inner.ok()) return inner.status();
  const std::string& b = *inner;
  size_t k = 0;
  if (!b.empty() && b[0] == '#') {
    e.text = "${" + b + "}";
    e.unresolved = "${" + b + "} is not evaluated";
    return e;
  }
  while (k < b.size() && IsIdent(b[k])) ++k;
  const std::string name = b.substr(0, k);
  const std::string rest = b.substr(k);
  if (rest == "[@]" || rest == "[*]") {
    e.is_array = true;
    if (auto it = st_.arrays.find(name); it != st_.arrays.end()) {
      e.words = it->second;
    } else if (auto v = st_.vars.find(name); v != st_.vars.end()) {
      e.words = {v->second};
    } else {
      e.words = {Word{"${" + b + "}", line_, "array " + name + " is not set in the file"}};
    }
    return e;
  }
  if (rest.size() > 2 && rest[0] == '[' && rest.back() == ']') {
    auto it = st_.arrays.find(name);
    const std::string idx = rest.substr(1, rest.size() - 2);
    if (it != st_.arrays.end() && !idx.empty() && std::all_of(idx.begin(), idx.end(), ::isdigit) && idx.size() < 6 &&
        std::stoul(idx) < it->second.size()) {
      const Word& w = it->second[std::stoul(idx)];
      e.text = w.text;
      e.unresolved = w.unresolved;
      return e;
    }
    e.text = "${" + b + "}";
    e.unresolved = "${" + b + "} is not set in the file";
    return e;
  }
  Exp v = Var(name);
  const bool set = v.unresolved.empty() || st_.vars.count(name);
  for (const char* op : {":-", ":=", "-", "="}) {
    if (rest.rfind(op, 0) != 0) continue;
    const bool colon = op[0] == ':';
    if (set && !(colon && v.text.empty())) return v;
    std::string why;
    e.text = ExpandSimple(rest.substr(std::strlen(op)), why);
    e.unresolved = why;
    return e;
  }
  if (rest.rfind(":+", 0) == 0 || rest.rfind("+", 0) == 0) {
    if (!set || v.text.empty()) return e;
    std::string why;
    e.text = ExpandSimple(rest.substr(rest[0] == ':' ? 2 : 1), why);
    e.unresolved = why;
    return e;
  }
  if (!rest.empty()) {
    e.text = "${" + b + "}";
    e.unresolved = "${" + b + "} is not evaluated";
    return e;
  }
  return v;
}

Result<ShellReader::Exp> ShellReader::Expand(bool quoted) {
  // s_[i_] == '$'
  Exp e;
  ++i_;
  if (i_ >= s_.size()) {
    e.text = "$";
    return e;
  }
  const char c = s_[i_];
  if (c == '(' && i_ + 1 < s_.size() && s_[i_ + 1] == '(') return ExpandArith();
  if (c == '(') return ExpandCommand();
  if (c == '{') return ExpandBraces();
  if (c == '@' || c == '*') {  // the rest of the command line, given at run time
    ++i_;
    e.is_array = true;
    return e;
  }
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '#' || c == '?' || c == '$' || c == '!') {
    ++i_;
    if (c == '0') return Var("0");
    e.text = std::string("$") + c;
    e.unresolved = e.text + " is known only when the script runs";
    return e;
  }
  if (IsIdentStart(c)) {
    size_t k = i_;
    while (k < s_.size() && IsIdent(s_[k])) ++k;
    const std::string name = s_.substr(i_, k - i_);
    i_ = k;
    return Var(name);
  }
  e.text = "$";
  return e;
}

Result<std::vector<Word>> ShellReader::ReadWord() {
  Word w{"", line_, ""};
  bool quoted = false, only_expansion = true, any_expansion = false;
  std::optional<Exp> single;  // the one expansion a word is made of
  auto add_exp = [&](Exp&& e) {
    if (!e.unresolved.empty() && w.unresolved.empty()) w.unresolved = e.unresolved;
    if (!any_expansion && w.text.empty()) single = e;
    else single.reset();
    any_expansion = true;
    if (e.is_array) {
      for (size_t k = 0; k < e.words.size(); ++k) w.text += (k ? " " : "") + e.words[k].text;
    } else {
      w.text += e.text;
    }
  };
  while (i_ < s_.size()) {
    const char c = s_[i_];
    if (std::isspace(static_cast<unsigned char>(c)) || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>')
      break;
    if (c == '\\') {
      if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        i_ += 2;
        ++line_;
        break;
      }
      if (i_ + 1 < s_.size()) w.text += s_[i_ + 1];
      i_ += 2;
      only_expansion = false;
      continue;
    }
    if (c == '\'') {
      const int start = line_;
      ++i_;
      size_t end = s_.find('\'', i_);
      if (end == std::string::npos) return Fail("unterminated single quote", start);
      for (size_t k = i_; k < end; ++k) line_ += s_[k] == '\n';
      w.text += s_.substr(i_, end - i_);
      i_ = end + 1;
      quoted = true;
      only_expansion = false;
      continue;
    }
    if (c == '"') {
      const int start = line_;
      ++i_;
      quoted = true;
      bool closed = false;
      while (i_ < s_.size()) {
        const char d = s_[i_];
        if (d == '"') {
          ++i_;
          closed = true;
          break;
        }
        if (d == '\n') ++line_;
        if (d == '\\' && i_ + 1 < s_.size() && std::strchr("$`\"\\\n", s_[i_ + 1])) {
          if (s_[i_ + 1] == '\n') ++line_;
          else w.text += s_[i_ + 1];
          i_ += 2;
          only_expansion = false;
          continue;
        }
        if (d == '$') {
          auto e = Expand(true);
          if (!e.ok()) return e.status();
          add_exp(std::move(e).value());
          continue;
        }
        if (d == '`') {
          size_t end = s_.find('`', i_ + 1);
          if (end == std::string::npos) return Fail("unterminated backquote", line_);
          if (w.unresolved.empty()) w.unresolved = "`" + s_.substr(i_ + 1, end - i_ - 1) + "` is a command's output, unknown here";
          i_ = end + 1;
          continue;
        }
        w.text += d;
        only_expansion = false;
        ++i_;
      }
      if (!closed) return Fail("unterminated double quote", start);
      continue;
    }
    if (c == '$') {
      auto e = Expand(false);
      if (!e.ok()) return e.status();
      add_exp(std::move(e).value());
      continue;
    }
    if (c == '`') {
      size_t end = s_.find('`', i_ + 1);
      if (end == std::string::npos) return Fail("unterminated backquote", line_);
      if (w.unresolved.empty()) w.unresolved = "`" + s_.substr(i_ + 1, end - i_ - 1) + "` is a command's output, unknown here";
      i_ = end + 1;
      continue;
    }
    w.text += c;
    only_expansion = false;
    ++i_;
  }
  // "${ARR[@]}" and $@: the array's own words, at their own lines.
  if (single && only_expansion && single->is_array) return single->words;
  // An unquoted $VAR alone splits into words ("--nproc_per_node 8 --nnodes 1").
  if (single && only_expansion && !quoted && single->unresolved.empty()) {
    std::vector<Word> out;
    std::istringstream is(single->text);
    for (std::string t; is >> t;) out.push_back({t, w.line, ""});
    return out;
  }
  if (!quoted && w.text.empty() && any_expansion && w.unresolved.empty()) return std::vector<Word>{};
  return std::vector<Word>{w};
}

bool ShellReader::AssignmentAt(std::string& name, bool& append, bool& array) const {
  size_t k = i_;
  if (k >= s_.size() || !IsIdentStart(s_[k])) return false;
  while (k < s_.size() && IsIdent(s_[k])) ++k;
  append = k < s_.size() && s_[k] == '+';
  if (append) ++k;
  if (k >= s_.size() || s_[k] != '=') return false;
  name = s_.substr(i_, (append ? k - 1 : k) - i_);
  array = k + 1 < s_.size() && s_[k + 1] == '(';
  return true;
}

Status ShellReader::ReadArray(const std::string& name, bool append) {
  const int start = line_;
  std::vector<Word> words;
  for (;;) {
    while (i_ < s_.size() && (std::isspace(static_cast<unsigned char>(s_[i_])) || (s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n'))) {
      if (s_[i_] == '\n') ++line_;
      if (s_[i_] == '\\') ++i_, ++line_;
      ++i_;
    }
    if (i_ >= s_.size()) return Fail("array " + name + "=( is never closed with ')'", start);
    if (s_[i_] == ')') {
      ++i_;
      break;
    }
    if (s_[i_] == '#') {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      continue;
    }
    auto w = ReadWord();
    if (!w.ok()) return w.status();
    if (w->empty() && i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_])) && s_[i_] != ')') ++i_;  // a stray ( ; & |
    for (auto& x : *w) words.push_back(std::move(x));
  }
  auto& arr = st_.arrays[name];
  if (!append) arr.clear();
  arr.insert(arr.end(), words.begin(), words.end());
  if (own_ && std::find(st_.array_order.begin(), st_.array_order.end(), name) == st_.array_order.end()) st_.array_order.push_back(name);
  return Status::Ok();
}

void ShellReader::SkipRedirection() {
  while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '<' || s_[i_] == '>' || s_[i_] == '&' || s_[i_] == '-'))
    ++i_;
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  if (i_ < s_.size() && s_[i_ - 1] != '&' && s_[i_] != '\n') (void)ReadWord();  // the target file
}

Status ShellReader::Source(const Command& cmd) {
  if (cmd.size() < 2) return Status::Ok();
  const Word& w = cmd[1];
  const Location at{file_, w.line, cmd[0].text};
  if (!w.unresolved.empty()) {
    notes.push_back({at, w.text + ": not read (" + w.unresolved + ")"});
    return Status::Ok();
  }
  const std::string path = Relative(file_, w.text);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    notes.push_back({at, "'" + path + "' not found: its variables are unknown here"});
    return Status::Ok();
  }
  if (depth_ + 1 > kMaxDepth) return Bad(at, "files source files more than " + Str(kMaxDepth) + " levels deep");
  auto text = ReadInputFile(path);
  if (!text.ok()) return Bad(at, "cannot read '" + path + "': " + text.status().reason());
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(*text, path));
  ShellReader sub(*text, path, st_, depth_ + 1, false);
  std::vector<Command> ignored;  // a sourced file gives variables and arrays; its commands are not the launch
  GPUPLAN_RETURN_IF_ERROR(sub.Read(ignored));
  notes.insert(notes.end(), sub.notes.begin(), sub.notes.end());
  return Status::Ok();
}

Status ShellReader::Read(std::vector<Command>& out) {
  Command cur;
  bool at_start = true, assign_cmd = false;
  auto end_command = [&]() -> Status {
    if (!cur.empty() && (cur[0].text == "source" || cur[0].text == ".")) GPUPLAN_RETURN_IF_ERROR(Source(cur));
    else if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
    at_start = true;
    assign_cmd = false;
    return Status::Ok();
  };
  while (i_ < s_.size()) {
    const char c = s_[i_];
    if (c == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
      i_ += 2;
      ++line_;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i_;
      continue;
    }
    if (c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '{' || c == '}') {
      if (c == '\n') ++line_;
      ++i_;
      GPUPLAN_RETURN_IF_ERROR(end_command());
      continue;
    }
    if (c == '#') {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      continue;
    }
    if (c == '<' || c == '>' || (std::isdigit(static_cast<unsigned char>(c)) && i_ + 1 < s_.size() && s_[i_ + 1] == '>')) {
      if (c == '<' && i_ + 1 < s_.size() && s_[i_ + 1] == '<') return Fail("here-documents (<<) are not read: put the command on its own lines", line_);
      SkipRedirection();
      continue;
    }
    std::string name;
    bool append = false, array = false;
    if ((at_start || assign_cmd) && AssignmentAt(name, append, array)) {
      i_ += name.size() + (append ? 2 : 1);
      if (array) {
        ++i_;
        GPUPLAN_RETURN_IF_ERROR(ReadArray(name, append));
        continue;
      }
      const int line = line_;
      std::vector<Word> value;
      if (i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_]))) {
        // the value is one word (no splitting)
        const size_t before = i_;
        auto w = ReadWord();
        if (!w.ok()) return w.status();
        std::string text, why;
        for (size_t k = 0; k < w->size(); ++k) {
          text += (k ? " " : "") + (*w)[k].text;
          if (why.empty()) why = (*w)[k].unresolved;
        }
        if (w->empty() && i_ == before) ++i_;
        Word v{append && st_.vars.count(name) ? st_.vars[name].text + text : text, line, why};
        st_.vars[name] = v;
      } else {
        st_.vars[name] = Word{"", line, ""};
      }
      continue;
    }
    const size_t before = i_;
    auto words = ReadWord();
    if (!words.ok()) return words.status();
    if (i_ == before) ++i_;  // a character no rule takes
    if (at_start && !words->empty()) {
      const std::string& first = (*words)[0].text;
      assign_cmd = first == "export" || first == "declare" || first == "local" || first == "readonly" || first == "typeset";
    }
    if (!words->empty()) at_start = false;
    for (auto& w : *words) cur.push_back(std::move(w));
  }
  return end_command();
}

std::string Base(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
std::string Norm(std::string s) {
  for (auto& c : s) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A flag of a training script: --name[=value] then the words up to the next --flag.
struct Flag {
  std::string name;  // without the dashes, as written
  std::vector<Word> values;
  Word word;
  bool eq = false;  // --name=value
  Location At(const std::string& file) const { return {file, word.line, "--" + name}; }
};

std::vector<Flag> GroupFlags(const Command& c, size_t from, std::vector<Word>& positional) {
  std::vector<Flag> out;
  for (size_t i = from; i < c.size(); ++i) {
    const Word& w = c[i];
    if (w.text.rfind("--", 0) == 0 && w.text.size() > 2) {
      Flag f{w.text.substr(2), {}, w};
      if (auto eq = f.name.find('='); eq != std::string::npos) {
        f.values.push_back({f.name.substr(eq + 1), w.line, w.unresolved});
        f.name = f.name.substr(0, eq);
        f.eq = true;
      }
      out.push_back(std::move(f));
    } else if (!out.empty() && !out.back().eq) {
      out.back().values.push_back(w);
    } else {
      positional.push_back(w);
    }
  }
  return out;
}

struct LaunchFlag {
  std::string norm;
  Word word;
  std::optional<Word> value;
};

// A launcher's flags from `from` up to its first positional word (the script): its index.
size_t ScanLauncher(const Command& c, size_t from, const std::set<std::string>& valued, const std::set<std::string>& switches,
                    std::vector<LaunchFlag>& flags, std::vector<LaunchFlag>& unknown, bool& module) {
  size_t i = from;
  for (; i < c.size(); ++i) {
    const std::string& t = c[i].text;
    if (t.size() < 2 || t[0] != '-') break;
    std::string name = t.substr(t[1] == '-' ? 2 : 1);
    std::optional<Word> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = Word{name.substr(eq + 1), c[i].line, c[i].unresolved};
      name = name.substr(0, eq);
    }
    const std::string n = Norm(name);
    if (n == "m" || n == "module") {
      module = true;
      continue;
    }
    if (valued.count(n)) {
      if (!value && i + 1 < c.size()) value = c[++i];
      flags.push_back({n, c[i], value});
    } else if (switches.count(n)) {
      flags.push_back({n, c[i], value});
    } else {
      unknown.push_back({n, c[i], value});
    }
  }
  return i;
}

const std::set<std::string>& TorchrunValued() {
  static const std::set<std::string> s = {"nnodes", "nproc-per-node", "node-rank", "rdzv-backend", "rdzv-endpoint", "rdzv-id", "rdzv-conf",
                                          "master-addr", "master-port", "max-restarts", "monitor-interval", "start-method", "role",
                                          "log-dir", "redirects", "r", "tee", "t", "local-ranks-filter", "local-addr", "logs-specs",
                                          "numa-binding", "event-log-handler", "signals-to-handle"};
  return s;
}
const std::set<std::string>& TorchrunSwitches() {
  static const std::set<std::string> s = {"standalone", "no-python", "run-path", "use-env", "virtual-local-rank"};
  return s;
}
const std::set<std::string>& DeepspeedValued() {
  static const std::set<std::string> s = {"hostfile", "h", "include", "i", "exclude", "e", "num-nodes", "min-elastic-nodes",
                                          "max-elastic-nodes", "num-gpus", "num-accelerators", "master-port", "master-addr", "node-rank",
                                          "launcher", "launcher-args", "ssh-port", "comment", "venv-script", "autotuning", "bind-core-list"};
  return s;
}
const std::set<std::string>& DeepspeedSwitches() {
  static const std::set<std::string> s = {"no-ssh", "no-ssh-check", "force-multi", "no-python", "no-local-rank", "save-pid",
                                          "enable-each-rank-log", "elastic-training", "bind-cores-to-rank"};
  return s;
}
// accelerate launch flags and the config key each one overrides ("" = read, no effect on the estimate).
const std::map<std::string, std::string>& AccelerateFlags() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> f = {
        {"config-file", ""}, {"num-processes", "num_processes"}, {"num-machines", "num_machines"}, {"mixed-precision", "mixed_precision"},
        {"dynamo-backend", "dynamo_config.dynamo_backend"}, {"deepspeed-config-file", "deepspeed_config.deepspeed_config_file"},
        {"zero-stage", "deepspeed_config.zero_stage"}, {"offload-optimizer-device", "deepspeed_config.offload_optimizer_device"},
        {"offload-param-device", "deepspeed_config.offload_param_device"},
        {"gradient-accumulation-steps", "deepspeed_config.gradient_accumulation_steps"}, {"machine-rank", ""}, {"main-process-ip", ""},
        {"main-process-port", ""}, {"rdzv-backend", ""}, {"gpu-ids", ""}, {"dynamo-mode", ""}, {"gradient-clipping", ""},
        {"num-cpu-threads-per-process", ""}, {"deepspeed-hostfile", ""}, {"deepspeed-multinode-launcher", ""},
        {"main-training-function", ""}, {"zero3-init-flag", ""}, {"zero3-save-16bit-model", ""}, {"offload-optimizer-nvme-path", ""},
        {"offload-param-nvme-path", ""}, {"deepspeed-inclusion-filter", ""}, {"deepspeed-exclusion-filter", ""},
    };
    for (const char* k : {"sharding-strategy", "offload-params", "activation-checkpointing", "version", "reshard-after-forward"}) {
      std::string key = std::string("fsdp_config.fsdp_") + k;
      std::replace(key.begin(), key.end(), '-', '_');
      f[std::string("fsdp-") + k] = key;
    }
    for (const char* k : {"auto-wrap-policy", "transformer-layer-cls-to-wrap", "state-dict-type", "cpu-ram-efficient-loading",
                          "sync-module-states", "use-orig-params", "backward-prefetch", "forward-prefetch", "min-num-params"})
      f[std::string("fsdp-") + k] = "";
    for (const char* k : {"tp-size", "cp-size", "dp-shard-size", "dp-replicate-size"}) {
      std::string key = std::string("parallelism_config.parallelism_config_") + k;
      std::replace(key.begin(), key.end(), '-', '_');
      f[std::string("parallelism-config-") + k] = key;
    }
    for (const char* k : {"tp-degree", "pp-degree", "num-micro-batches", "sequence-parallelism", "recompute-activations",
                          "use-distributed-optimizer"}) {
      std::string key = std::string("megatron_lm_config.megatron_lm_") + k;
      std::replace(key.begin(), key.end(), '-', '_');
      f[std::string("megatron-lm-") + k] = key;
    }
    return f;
  }();
  return m;
}
const std::map<std::string, std::string>& AccelerateSwitches() {  // switch -> "key=value"
  static const std::map<std::string, std::string> m = {{"multi-gpu", "distributed_type=MULTI_GPU"}, {"use-fsdp", "distributed_type=FSDP"},
                                                       {"use-deepspeed", "distributed_type=DEEPSPEED"},
                                                       {"use-megatron-lm", "distributed_type=MEGATRON_LM"}, {"cpu", "use_cpu=true"},
                                                       {"no-python", ""}, {"debug", ""}, {"quiet", ""}, {"q", ""}, {"same-network", ""}};
  return m;
}

Result<std::string> Importer::ReadConfigText(const std::string& value, const Location& w, int depth, ImportKind expect, std::string& path) {
  path = Relative(w.file, value);
  if (depth + 1 > kMaxDepth) return Bad(w, "files name files more than " + Str(kMaxDepth) + " levels deep");
  std::error_code ec;
  if (!fs::exists(path, ec)) return Bad(w, "names '" + path + "', which does not exist (relative paths are read from the directory of " + w.file + ")");
  auto text = ReadInputFile(path);
  if (!text.ok()) return Bad(w, "cannot read '" + path + "': " + text.status().reason());
  auto kind = DetectImportKind(*text, path);
  if (!kind.ok()) return kind.status();
  if (*kind != expect) return Bad(w, "names '" + path + "', which reads as " + ToString(*kind) + ", not " + ToString(expect));
  const std::string canon = fs::weakly_canonical(path, ec).string();
  if (read_.insert(ec ? path : canon).second) out_.files.push_back({path, expect});
  return text;
}

// A value word of a launcher flag: its whole number, or why it is unknown (Unresolved).
Result<std::optional<int64_t>> LaunchInt(Importer& im, const LaunchFlag& f, const std::string& file, const std::string& what, int64_t max) {
  const Location w{file, f.word.line, "--" + f.norm};
  if (!f.value) {
    im.Unresolved(w, "needs a value; " + what + " stays unknown");
    return std::optional<int64_t>();
  }
  if (!f.value->unresolved.empty()) {
    im.Unresolved(w, f.value->text + ": " + f.value->unresolved + "; " + what + " stays unknown (give it as a flag, e.g. --num-gpus)");
    return std::optional<int64_t>();
  }
  auto num = ParseDecimal(f.value->text, w);
  if (!num.ok()) {  // torchrun's "gpu", "auto": one per device of the machine it runs on
    im.Unresolved(w, "'" + f.value->text + "' is not a number of " + what + "; it stays unknown (give --gpus-per-node / --num-gpus)");
    return std::optional<int64_t>();
  }
  auto v = Int(f.value->text, w, 1, max);
  if (!v.ok()) return v.status();
  return std::optional<int64_t>(*v);
}

Status PutWorld(Importer& im, std::optional<int64_t> nodes, const Location& nloc, std::optional<int64_t> procs, const Location& ploc) {
  if (!procs) return Status::Ok();
  GPUPLAN_RETURN_IF_ERROR(im.Put("cluster.gpus_per_node", Str(*procs), ploc));
  if (nodes) GPUPLAN_RETURN_IF_ERROR(im.Put("cluster.num_gpus", Str(*nodes * *procs), *nodes > 1 ? nloc : ploc));
  return Status::Ok();
}

void ReportLauncherFlags(Importer& im, const std::vector<LaunchFlag>& known, const std::vector<LaunchFlag>& unknown,
                         const std::set<std::string>& used, const std::string& file, const std::string& launcher) {
  for (const auto& f : known)
    if (!used.count(f.norm)) im.Note({file, f.word.line, "--" + f.norm}, "read, no effect on the estimate");
  for (const auto& f : unknown) im.Unknown({file, f.word.line, f.word.text}, "not " + Article(launcher) + " flag gpuplan knows");
}

Status Torchrun(Importer& im, const std::vector<LaunchFlag>& flags, const std::vector<LaunchFlag>& unknown, const std::string& file) {
  std::optional<int64_t> nodes = 1, procs;
  Location nloc{file, 0, "--nnodes"}, ploc{file, 0, "--nproc-per-node"};
  for (const auto& f : flags) {
    const Location w{file, f.word.line, "--" + f.norm};
    if (f.norm == "standalone") nodes = 1;
    if (f.norm == "nnodes") {
      nloc = w;
      if (f.value && f.value->unresolved.empty() && f.value->text.find(':') != std::string::npos) {
        const std::string max = f.value->text.substr(f.value->text.find(':') + 1);
        im.Note(w, "an elastic range: the job is planned at its largest, " + max + " nodes");
        LaunchFlag g = f;
        g.value->text = max;
        auto v = LaunchInt(im, g, file, "nodes", 1 << 20);
        if (!v.ok()) return v.status();
        nodes = *v;
      } else {
        auto v = LaunchInt(im, f, file, "nodes", 1 << 20);
        if (!v.ok()) return v.status();
        nodes = *v;
      }
    }
    if (f.norm == "nproc-per-node") {
      ploc = w;
      auto v = LaunchInt(im, f, file, "processes per node", 64);
      if (!v.ok()) return v.status();
      procs = *v;
    }
  }
  if (ploc.line == 0) {
    im.Note({file, flags.empty() ? 0 : flags[0].word.line, "torchrun"}, "no --nproc-per-node: torchrun starts 1 process per node");
    ploc.line = flags.empty() ? 1 : flags[0].word.line;
    procs = 1;
  }
  ReportLauncherFlags(im, flags, unknown, {"standalone", "nnodes", "nproc-per-node"}, file, "torchrun");
  return PutWorld(im, nodes, nloc, procs, ploc);
}

Status DeepspeedLauncher(Importer& im, const std::vector<LaunchFlag>& flags, const std::vector<LaunchFlag>& unknown, const std::string& file) {
  std::optional<int64_t> nodes, procs;
  Location nloc{file, 0, "--num_nodes"}, ploc{file, 0, "--num_gpus"};
  std::optional<Location> hostfile_at;
  std::string hostfile;
  for (const auto& f : flags) {
    const Location w{file, f.word.line, "--" + f.norm};
    if (f.norm == "num-nodes") {
      nloc = w;
      auto v = LaunchInt(im, f, file, "nodes", 1 << 20);
      if (!v.ok()) return v.status();
      nodes = *v;
    }
    if (f.norm == "num-gpus" || f.norm == "num-accelerators") {
      ploc = w;
      auto v = LaunchInt(im, f, file, "GPUs per node", 64);
      if (!v.ok()) return v.status();
      procs = *v;
    }
    if ((f.norm == "hostfile" || f.norm == "h") && f.value && f.value->unresolved.empty()) hostfile_at = w, hostfile = f.value->text;
    if (f.norm == "include" || f.norm == "i" || f.norm == "exclude" || f.norm == "e")
      im.Note(w, "a host/GPU filter: not applied (give --num-gpus for the GPUs it leaves)");
  }
  if (hostfile_at && (!nodes || !procs)) {
    // hostfile lines: "host slots=N" (DeepSpeed getting-started)
    const std::string path = Relative(file, hostfile);
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      auto text = ReadInputFile(path);
      if (!text.ok()) return Bad(*hostfile_at, "cannot read '" + path + "': " + text.status().reason());
      int64_t hosts = 0, slots = -1, line_no = 0;
      std::istringstream is(*text);
      for (std::string line; std::getline(is, line);) {
        ++line_no;
        if (auto h = line.find('#'); h != std::string::npos) line.erase(h);
        std::istringstream ls(line);
        std::string host, s;
        if (!(ls >> host)) continue;
        ++hosts;
        int64_t n = -1;
        while (ls >> s)
          if (s.rfind("slots=", 0) == 0) {
            auto v = Int(s.substr(6), {path, static_cast<int>(line_no), "slots"}, 1, 64);
            if (!v.ok()) return v.status();
            n = *v;
          }
        if (n < 0) return Bad({path, static_cast<int>(line_no), host}, "a hostfile line is `host slots=N`");
        if (slots >= 0 && n != slots) return Bad({path, static_cast<int>(line_no), "slots"}, "hosts with different slot counts: gpuplan plans equal nodes");
        slots = n;
      }
      if (hosts > 0) {
        if (!nodes) nodes = hosts, nloc = {path, 1, "hosts"};
        if (!procs) procs = slots, ploc = {path, 1, "slots"};
      }
    } else {
      im.Unresolved(*hostfile_at, "'" + path + "' not found: its nodes and slots are unknown");
    }
  }
  if (!procs) im.Unresolved({file, flags.empty() ? 1 : flags[0].word.line, "deepspeed"}, "no --num_gpus: deepspeed uses every GPU of each node; give --gpus-per-node and --num-gpus");
  if (!nodes) nodes = 1;
  ReportLauncherFlags(im, flags, unknown, {"num-nodes", "num-gpus", "num-accelerators", "include", "i", "exclude", "e"}, file, "deepspeed");
  return PutWorld(im, nodes, nloc, procs, ploc);
}

Status AccelerateLaunch(Importer& im, const std::vector<LaunchFlag>& flags, const std::vector<LaunchFlag>& unknown, const std::string& file,
                        int depth) {
  FlatConfig cfg;
  cfg.file = file;
  bool has_config = false;
  for (const auto& f : flags) {
    if (f.norm != "config-file") continue;
    const Location w{file, f.word.line, "--config_file"};
    if (!f.value || !f.value->unresolved.empty()) {
      im.Unresolved(w, (f.value ? f.value->text + ": " + f.value->unresolved : "needs a value") + "; the accelerate config is not read");
      continue;
    }
    std::string path;
    auto text = im.ReadConfigText(f.value->text, w, depth, ImportKind::kAccelerateConfig, path);
    if (!text.ok()) return text.status();
    GPUPLAN_RETURN_IF_ERROR(im.ReadAccelerateInto(*text, path, cfg));
    has_config = true;
  }
  if (!has_config)
    im.Note({file, flags.empty() ? 1 : flags[0].word.line, "accelerate launch"},
            "no --config_file: accelerate reads its default config (~/.cache/huggingface/accelerate/default_config.yaml), not read here");
  for (const auto& f : flags) {
    const Location w{file, f.word.line, "--" + f.norm};
    if (auto sw = AccelerateSwitches().find(f.norm); sw != AccelerateSwitches().end()) {
      if (sw->second.empty()) {
        im.Note(w, "read, no effect on the estimate");
        continue;
      }
      const size_t eq = sw->second.find('=');
      cfg.Override({sw->second.substr(0, eq), sw->second.substr(eq + 1), w});
      continue;
    }
    auto it = AccelerateFlags().find(f.norm);
    if (it == AccelerateFlags().end() || f.norm == "config-file") continue;
    if (it->second.empty()) {
      im.Note(w, "read, no effect on the estimate");
      continue;
    }
    if (!f.value || !f.value->unresolved.empty()) {
      im.Unresolved(w, (f.value ? f.value->text + ": " + f.value->unresolved : "needs a value") + "; not applied");
      continue;
    }
    cfg.Override({it->second, f.value->text, w});
  }
  for (const auto& f : unknown) im.Unknown({file, f.word.line, f.word.text}, "not an accelerate launch flag gpuplan knows");
  return im.ApplyAccelerate(cfg, depth);
}

std::set<std::string> AccelerateLaunchValued() {
  std::set<std::string> s;
  for (const auto& [k, v] : AccelerateFlags()) s.insert(k);
  return s;
}
std::set<std::string> AccelerateLaunchSwitches() {
  std::set<std::string> s;
  for (const auto& [k, v] : AccelerateSwitches()) s.insert(k);
  return s;
}

// ---- Megatron-LM pretrain_gpt.py flags (§1.4, Megatron-LM arguments.py @d98e8a6) ----

const std::set<std::string>& MegatronModelFlags() {
  static const std::set<std::string> s = {"num-layers", "hidden-size", "num-attention-heads", "num-query-groups", "group-query-attention",
                                          "ffn-hidden-size", "vocab-size", "make-vocab-size-divisible-by", "swiglu", "normalization",
                                          "position-embedding-type", "untie-embeddings-and-output-weights", "disable-bias-linear",
                                          "add-qkv-bias", "kv-channels", "num-experts", "moe-router-topk", "moe-ffn-hidden-size",
                                          "hidden-dropout", "attention-dropout", "max-position-embeddings", "tokenizer-type",
                                          "rotary-base", "norm-epsilon", "use-rope-scaling", "rope-scaling-factor", "padded-vocab-size"};
  return s;
}
const std::set<std::string>& MegatronFlags() {
  static const std::set<std::string> s = [] {
    std::set<std::string> k = {"tensor-model-parallel-size", "pipeline-model-parallel-size", "num-layers-per-virtual-pipeline-stage",
                               "num-virtual-stages-per-pipeline-rank", "virtual-pipeline-model-parallel-size", "context-parallel-size",
                               "expert-model-parallel-size", "sequence-parallel", "recompute-granularity", "recompute-activations",
                               "use-distributed-optimizer", "use-megatron-fsdp", "use-custom-fsdp", "data-parallel-sharding-strategy",
                               "micro-batch-size", "global-batch-size", "bf16", "fp16", "fp8-format", "fp8-recipe", "seq-length",
                               "encoder-seq-length", "train-iters", "train-samples", "optimizer", "use-flash-attn",
                               "accumulate-allreduce-grads-in-fp32", "async-save", "deepspeed", "deepspeed-config", "deepspeed_config",
                               "zero-stage", "optimizer-cpu-offload", "optimizer-offload-fraction", "recompute-method",
                               "recompute-num-layers", "recompute-modules", "qk-layernorm"};
    for (const auto& m : MegatronModelFlags()) k.insert(m);
    return k;
  }();
  return s;
}
const std::set<std::string>& MegatronNoEffect() {
  static const std::set<std::string> s = {
      "lr", "min-lr", "lr-decay-style", "lr-decay-iters", "lr-decay-samples", "lr-warmup-iters", "lr-warmup-fraction",
      "lr-warmup-samples", "weight-decay", "clip-grad", "adam-beta1", "adam-beta2", "adam-eps", "init-method-std",
      "overlap-grad-reduce", "overlap-param-gather", "tp-comm-overlap", "cp-comm-type", "use-mcore-models", "transformer-impl",
      "attention-softmax-in-fp32", "no-masked-softmax-fusion", "no-bias-gelu-fusion", "no-bias-dropout-fusion",
      "no-gradient-accumulation-fusion", "seed", "moe-grouped-gemm", "moe-router-load-balancing-type", "moe-aux-loss-coeff",
      "moe-token-dispatcher-type", "expert-tensor-parallel-size", "rotary-percent", "loss-scale", "pretrained-checkpoint",
      "initial-loss-scale", "min-loss-scale", "loss-scale-window", "hysteresis", "distributed-timeout-minutes", "num-workers",
      "ckpt-format", "use-dist-ckpt", "save-interval", "save", "load", "use-persistent-ckpt-worker", "finetune",
      "no-load-optim", "no-load-rng", "exit-on-missing-checkpoint", "manual-gc", "use-precision-aware-optimizer", "overlap-cpu-optimizer-d2h-h2d",
      "untie-embeddings-and-output-weights", "use-rotary-position-embeddings", "no-position-embedding", "attention-backend",
      "moe-shared-expert-intermediate-size", "moe-layer-freq", "multi-latent-attention", "q-lora-rank", "kv-lora-rank", "qk-head-dim",
      "qk-pos-emb-head-dim", "v-head-dim", "cross-entropy-loss-fusion", "bias-swiglu-fusion", "apply-layernorm-1p"};
  return s;
}

struct MegatronArgs {
  std::map<std::string, Flag> last;  // by name, the last occurrence (argparse: the last one wins)
  std::string file;
  const Flag* Get(const std::string& n) const {
    auto it = last.find(n);
    return it == last.end() ? nullptr : &it->second;
  }
};

// The flag's one value; "" with a Unresolved/Bad noted when it has none or it is unknown.
Result<std::optional<std::string>> MegValue(Importer& im, const MegatronArgs& a, const std::string& n) {
  const Flag* f = a.Get(n);
  if (!f) return std::optional<std::string>();
  const Location w = f->At(a.file);
  if (f->values.empty()) return Bad(w, "needs a value");
  if (!f->values[0].unresolved.empty()) {
    im.Unresolved(w, f->values[0].text + ": " + f->values[0].unresolved + "; the job keeps gpuplan's default");
    return std::optional<std::string>();
  }
  return std::optional<std::string>(f->values[0].text);
}

Result<std::optional<int64_t>> MegInt(Importer& im, const MegatronArgs& a, const std::string& n, int64_t min, int64_t max) {
  auto v = MegValue(im, a, n);
  if (!v.ok()) return v.status();
  if (!*v) return std::optional<int64_t>();
  auto i = Int(**v, a.Get(n)->At(a.file), min, max);
  if (!i.ok()) return i.status();
  return std::optional<int64_t>(*i);
}

Status MegPutInt(Importer& im, const MegatronArgs& a, const std::string& n, const std::string& key, int64_t min, int64_t max) {
  auto v = MegInt(im, a, n, min, max);
  if (!v.ok()) return v.status();
  if (*v) return im.Put(key, Str(**v), a.Get(n)->At(a.file));
  return Status::Ok();
}

// --rotary-base, --norm-epsilon, --use-rope-scaling [--rope-scaling-factor] (Llama 3.1's scaling with
// Megatron's fixed low 1, high 4, original 8192 positions; the factor's default is 8).
Status MegatronRopeImport(Importer& im, const MegatronArgs& a) {
  for (const auto& [flag, key] : {std::pair{"rotary-base", "model.rope_theta"}, {"norm-epsilon", "model.norm_eps"}}) {
    auto v = MegValue(im, a, flag);
    if (!v.ok()) return v.status();
    if (*v) GPUPLAN_RETURN_IF_ERROR(im.Put(key, **v, a.Get(flag)->At(a.file)));
  }
  const Flag* scaling = a.Get("use-rope-scaling");
  if (!scaling) return Status::Ok();
  auto factor = MegValue(im, a, "rope-scaling-factor");
  if (!factor.ok()) return factor.status();
  const Location at = scaling->At(a.file);
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.rope_scaling", "llama3", at));
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.rope_factor", factor->value_or("8"), a.Get("rope-scaling-factor") ? a.Get("rope-scaling-factor")->At(a.file) : at));
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.rope_low_freq_factor", "1", at));
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.rope_high_freq_factor", "4", at));
  return im.Put("model.rope_original_max_positions", "8192", at);
}

Status MegatronModel(Importer& im, const MegatronArgs& a, int64_t tp) {
  const Flag* layers = a.Get("num-layers");
  if (!layers && !a.Get("hidden-size")) return Status::Ok();
  auto put = [&](const char* n, const char* key, int64_t min, int64_t max) { return MegPutInt(im, a, n, key, min, max); };
  GPUPLAN_RETURN_IF_ERROR(put("num-layers", "model.layers", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("hidden-size", "model.hidden", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("num-attention-heads", "model.heads", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("num-query-groups", "model.kv_heads", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("kv-channels", "model.head_dim", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("num-experts", "model.experts", 1, 1 << 16));
  GPUPLAN_RETURN_IF_ERROR(put("moe-router-topk", "model.experts_per_token", 1, 1 << 16));
  GPUPLAN_RETURN_IF_ERROR(put("moe-ffn-hidden-size", "model.moe_ffn_hidden", 1, 1 << 24));
  const Location here = (layers ? layers : a.Get("hidden-size"))->At(a.file);
  const bool swiglu = a.Get("swiglu") != nullptr;
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.mlp", swiglu ? "swiglu" : "gelu", swiglu ? a.Get("swiglu")->At(a.file) : here));
  if (!a.Get("ffn-hidden-size")) {
    auto h = MegInt(im, a, "hidden-size", 1, 1 << 24);
    if (!h.ok()) return h.status();
    if (*h) {
      // Megatron's default: 4 x hidden, or for swiglu int(4 x hidden x 2/3 / 64) x 64 (arguments.py).
      const int64_t ffn = swiglu ? (4 * **h * 2 / 3) / 64 * 64 : 4 * **h;
      GPUPLAN_RETURN_IF_ERROR(im.Put("model.ffn_hidden", Str(ffn), a.Get("hidden-size")->At(a.file)));
      im.Note(a.Get("hidden-size")->At(a.file), "no --ffn-hidden-size: Megatron's default " + Str(ffn) + (swiglu ? " (4 x hidden x 2/3, to a multiple of 64)" : " (4 x hidden)"));
    }
  } else {
    GPUPLAN_RETURN_IF_ERROR(put("ffn-hidden-size", "model.ffn_hidden", 1, 1 << 24));
  }
  auto norm = MegValue(im, a, "normalization");
  if (!norm.ok()) return norm.status();
  const std::string n = norm->value_or("LayerNorm");
  const Location nw = a.Get("normalization") ? a.Get("normalization")->At(a.file) : here;
  if (n == "RMSNorm") GPUPLAN_RETURN_IF_ERROR(im.Put("model.norm", "rmsnorm", nw));
  else if (n == "LayerNorm") {
    GPUPLAN_RETURN_IF_ERROR(im.Put("model.norm", "layernorm", nw));
    GPUPLAN_RETURN_IF_ERROR(im.Put("model.norm_bias", "true", nw));
  }
  else return Bad(nw, "expected LayerNorm or RMSNorm, got '" + n + "'");
  auto pos = MegValue(im, a, "position-embedding-type");
  if (!pos.ok()) return pos.status();
  const std::string p = pos->value_or("learned_absolute");
  const Location pw = a.Get("position-embedding-type") ? a.Get("position-embedding-type")->At(a.file) : here;
  if (p == "rope" || p == "mrope" || p == "yarn") GPUPLAN_RETURN_IF_ERROR(im.Put("model.position", "rotary", pw));
  else if (p == "learned_absolute") {
    GPUPLAN_RETURN_IF_ERROR(im.Put("model.position", "learned", pw));
    GPUPLAN_RETURN_IF_ERROR(MegPutInt(im, a, "max-position-embeddings", "model.max_positions", 1, 1 << 24));
  } else if (p == "none") {
    GPUPLAN_RETURN_IF_ERROR(im.Put("model.position", "rotary", pw));
    im.Note(pw, "no position embedding: modelled as rotary (no parameters)");
  } else return Bad(pw, "expected learned_absolute, rope or none, got '" + p + "'");
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.linear_bias", a.Get("disable-bias-linear") ? "false" : "true", a.Get("disable-bias-linear") ? a.Get("disable-bias-linear")->At(a.file) : here));
  if (a.Get("add-qkv-bias")) GPUPLAN_RETURN_IF_ERROR(im.Put("model.qkv_bias", "true", a.Get("add-qkv-bias")->At(a.file)));
  const Flag* untie = a.Get("untie-embeddings-and-output-weights");
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.tied_embeddings", untie ? "false" : "true", untie ? untie->At(a.file) : here));
  GPUPLAN_RETURN_IF_ERROR(MegatronRopeImport(im, a));
  // Dropout: Megatron's defaults are 0.1 (hidden and attention); off only when both are 0.
  bool dropout = false;
  for (const char* d : {"hidden-dropout", "attention-dropout"}) {
    auto v = MegValue(im, a, d);
    if (!v.ok()) return v.status();
    if (!*v) {
      dropout = true;
      continue;
    }
    auto x = ParseDecimal(**v, a.Get(d)->At(a.file));
    if (!x.ok()) return x.status();
    dropout |= *x > 0;
  }
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.dropout", dropout ? "true" : "false", a.Get("hidden-dropout") ? a.Get("hidden-dropout")->At(a.file) : here));
  // The vocabulary, padded as Megatron pads it: a multiple of make-vocab-size-divisible-by (128) x tp.
  auto vocab = MegInt(im, a, "vocab-size", 1, 1 << 24);
  if (!vocab.ok()) return vocab.status();
  auto tok = MegValue(im, a, "tokenizer-type");
  if (!tok.ok()) return tok.status();
  std::optional<int64_t> v = *vocab;
  Location vw = a.Get("vocab-size") ? a.Get("vocab-size")->At(a.file) : here;
  if (!v && tok->value_or("") == "GPT2BPETokenizer") {
    v = 50257;
    vw = a.Get("tokenizer-type")->At(a.file);
    im.Note(vw, "GPT2BPETokenizer: vocabulary 50257");
  }
  if (!v) {
    im.Unresolved(here, "no --vocab-size: the vocabulary is the tokenizer's" + (*tok ? " (" + **tok + ")" : std::string()) + "; give --vocab");
    return Status::Ok();
  }
  auto given = MegInt(im, a, "padded-vocab-size", 1, 1 << 24);  // the embedding's rows, as given
  if (!given.ok()) return given.status();
  if (*given) return im.Put("model.vocab", Str(**given), a.Get("padded-vocab-size")->At(a.file));
  auto div = MegInt(im, a, "make-vocab-size-divisible-by", 1, 1 << 20);
  if (!div.ok()) return div.status();
  const int64_t multiple = div->value_or(128) * tp;
  const int64_t padded = (*v + multiple - 1) / multiple * multiple;
  if (padded != *v) im.Note(vw, "vocabulary " + Str(*v) + " padded to " + Str(padded) + " (a multiple of " + Str(div->value_or(128)) + " x tp " + Str(tp) + ", as Megatron pads it)");
  return im.Put("model.vocab", Str(padded), vw);
}

// --bf16/--fp16/--fp8-*, the optimizer, the kernel and checkpoint switches, a DeepSpeed config.
Status MegatronPrecisionAndRest(Importer& im, const MegatronArgs& a, int depth) {
  // precision
  const Flag* bf16 = a.Get("bf16");
  const Flag* fp16 = a.Get("fp16");
  if (bf16 && fp16) return Bad(fp16->At(a.file), "--bf16 and --fp16 together: Megatron takes one");
  if (a.Get("fp8-format")) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp8", a.Get("fp8-format")->At(a.file)));
  else if (bf16) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "bf16", bf16->At(a.file)));
  else if (fp16) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp16", fp16->At(a.file)));
  else GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp32", {a.file, 1, "--bf16/--fp16 (not given)"}, Strength::kDefault));
  auto recipe = MegValue(im, a, "fp8-recipe");
  if (!recipe.ok()) return recipe.status();
  if (*recipe) {
    const std::string r = **recipe;
    if (r == "delayed" || r == "tensorwise" || r == "mxfp8") GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp8_recipe", r, a.Get("fp8-recipe")->At(a.file)));
    else im.Unknown(a.Get("fp8-recipe")->At(a.file), "fp8 recipe '" + r + "' is not one gpuplan models (delayed, tensorwise, mxfp8)");
  }
  auto opt = MegValue(im, a, "optimizer");
  if (!opt.ok()) return opt.status();
  if (*opt) {
    if (**opt == "adam") GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", "adamw", a.Get("optimizer")->At(a.file)));
    else if (**opt == "sgd") GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", "sgd", a.Get("optimizer")->At(a.file)));
    else im.Unknown(a.Get("optimizer")->At(a.file), "optimizer '" + **opt + "' is not one gpuplan models");
  }
  if (const Flag* f = a.Get("use-flash-attn")) GPUPLAN_RETURN_IF_ERROR(im.Put("training.flash_attention", "true", f->At(a.file)));
  if (const Flag* f = a.Get("accumulate-allreduce-grads-in-fp32")) GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp32_grads", "true", f->At(a.file)));
  if (const Flag* f = a.Get("async-save")) GPUPLAN_RETURN_IF_ERROR(im.Put("training.checkpoint_async", "true", f->At(a.file)));
  if (const Flag* f = a.Get("qk-layernorm")) im.Note(f->At(a.file), "q/k layernorm: its parameters are not counted from flags (use --model for a model that has them)");
  for (const char* k : {"deepspeed-config", "deepspeed_config"}) {
    auto path = MegValue(im, a, k);
    if (!path.ok()) return path.status();
    if (*path) GPUPLAN_RETURN_IF_ERROR(im.ReadNamedFile(**path, a.Get(k)->At(a.file), depth, ImportKind::kDeepspeedConfig));
  }
  return Status::Ok();
}

Status MegatronLayoutAndBatch(Importer& im, const MegatronArgs& a, int depth) {
  auto put = [&](const char* n, const char* key, int64_t min, int64_t max) { return MegPutInt(im, a, n, key, min, max); };
  GPUPLAN_RETURN_IF_ERROR(put("tensor-model-parallel-size", "parallel.tp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("pipeline-model-parallel-size", "parallel.pp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("context-parallel-size", "parallel.cp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("expert-model-parallel-size", "parallel.ep", 1, 1 << 16));
  GPUPLAN_RETURN_IF_ERROR(put("num-virtual-stages-per-pipeline-rank", "parallel.vpp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("virtual-pipeline-model-parallel-size", "parallel.vpp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("num-layers-per-virtual-pipeline-stage", "parallel.vpp_layers", 1, 1 << 20));
  if (const Flag* f = a.Get("sequence-parallel")) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.sequence_parallel", "true", f->At(a.file)));
  // recompute
  auto gran = MegValue(im, a, "recompute-granularity");
  if (!gran.ok()) return gran.status();
  if (*gran) {
    if (**gran != "full" && **gran != "selective") return Bad(a.Get("recompute-granularity")->At(a.file), "expected full or selective, got '" + **gran + "'");
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", **gran, a.Get("recompute-granularity")->At(a.file)));
    if (const Flag* m = a.Get("recompute-num-layers"); m && **gran == "full")
      im.Note(m->At(a.file), "gpuplan models full recompute of every layer (the method and layer count set how the checkpoints are grouped)");
  } else if (const Flag* f = a.Get("recompute-activations")) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", "selective", f->At(a.file)));
  }
  // ZeRO: distributed optimizer = 1; Megatron-FSDP by its sharding strategy (default optim_grads_params = 3)
  const Flag* fsdp = a.Get("use-megatron-fsdp");
  if (!fsdp) fsdp = a.Get("use-custom-fsdp");
  if (fsdp) {
    auto strat = MegValue(im, a, "data-parallel-sharding-strategy");
    if (!strat.ok()) return strat.status();
    const std::string s = strat->value_or("optim_grads_params");
    const std::map<std::string, std::string> stages = {{"no_shard", "0"}, {"optim", "1"}, {"optim_grads", "2"}, {"optim_grads_params", "3"}};
    auto it = stages.find(s);
    const Location w = a.Get("data-parallel-sharding-strategy") ? a.Get("data-parallel-sharding-strategy")->At(a.file) : fsdp->At(a.file);
    if (it == stages.end()) return Bad(w, "expected no_shard, optim, optim_grads or optim_grads_params, got '" + s + "'");
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", it->second, w));
  } else if (a.Get("zero-stage")) {
    GPUPLAN_RETURN_IF_ERROR(put("zero-stage", "parallel.zero", 0, 3));
  } else if (const Flag* f = a.Get("use-distributed-optimizer")) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "1", f->At(a.file)));
  } else {
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "0", {a.file, 1, "--use-distributed-optimizer (not given)"}, Strength::kDefault));
  }
  if (const Flag* f = a.Get("optimizer-cpu-offload")) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", "optimizer", f->At(a.file)));
    if (const Flag* r = a.Get("optimizer-offload-fraction"); r && !r->values.empty() && r->values[0].text != "1.0" && r->values[0].text != "1")
      im.Note(r->At(a.file), "a partial optimizer offload: gpuplan models the whole optimizer on the host");
  }
  // batch
  if (a.Get("micro-batch-size")) GPUPLAN_RETURN_IF_ERROR(put("micro-batch-size", "training.micro_batch", 1, 1 << 20));
  else GPUPLAN_RETURN_IF_ERROR(im.Put("training.micro_batch", "1", {a.file, 1, "--micro-batch-size (not given)"}, Strength::kDefault));
  GPUPLAN_RETURN_IF_ERROR(put("global-batch-size", "training.global_batch", 1, int64_t{1} << 32));
  GPUPLAN_RETURN_IF_ERROR(put("seq-length", "training.seq_len", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("encoder-seq-length", "training.seq_len", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("train-iters", "training.steps", 1, int64_t{1} << 40));
  GPUPLAN_RETURN_IF_ERROR(put("train-samples", "training.samples", 1, int64_t{1} << 40));
  return MegatronPrecisionAndRest(im, a, depth);
}

Status Megatron(Importer& im, const std::vector<Flag>& flags, const std::string& file, int depth) {
  GPUPLAN_RETURN_IF_ERROR(im.Put("training.framework", "megatron", {file, flags.empty() ? 1 : flags[0].word.line, "(Megatron-LM flags)"}, Strength::kDefault));
  MegatronArgs a;
  a.file = file;
  for (const auto& f : flags) {
    const std::string n = f.name == "deepspeed_config" ? f.name : Norm(f.name);
    if (MegatronFlags().count(n)) {
      if (auto it = a.last.find(n); it != a.last.end() && !(it->second.word.line == f.word.line))
        im.Note(f.At(file), "given again (first " + At(it->second.At(file)) + "): the last one wins, as argparse does");
      a.last[n] = f;
      a.last[n].name = n;
    } else if (MegatronNoEffect().count(n)) {
      im.Note(f.At(file), "read, no effect on the estimate");
    } else {
      std::string best;
      size_t best_d = 3;
      for (const auto& k : MegatronFlags())
        if (size_t d = EditDistance(n, k); d < best_d) best_d = d, best = k;
      im.Unknown(f.At(file), "not a Megatron-LM flag gpuplan reads" + (best.empty() ? std::string() : " (did you mean --" + best + "?)"));
    }
  }
  GPUPLAN_RETURN_IF_ERROR(MegatronLayoutAndBatch(im, a, depth));
  auto tp = MegInt(im, a, "tensor-model-parallel-size", 1, 1024);
  if (!tp.ok()) return tp.status();
  return MegatronModel(im, a, tp->value_or(1));
}

// ---- a training script's own arguments (HF Trainer's, and the configs they name) ----

std::optional<std::string> PresetFromName(const std::string& name) {
  std::string n = Lower(Base(name));
  for (const char* suffix : {"-hf", "-chat", "-instruct", "-base"})
    if (EndsWith(n, suffix)) n.erase(n.size() - std::strlen(suffix));
  if (n.rfind("meta-", 0) == 0) n.erase(0, 5);
  if (FindPreset(n).ok()) return n;
  return std::nullopt;
}

Status TrainerArgs(Importer& im, const std::vector<Flag>& flags, const std::string& file, const std::string& script, int depth) {
  bool read_config = false;
  for (const auto& f : flags) {
    const Location w = f.At(file);
    const std::string n = Norm(f.name);
    const bool has = !f.values.empty();
    const Word v = has ? f.values[0] : Word{"true", f.word.line, ""};
    if (!v.unresolved.empty()) {
      im.Unresolved(w, v.text + ": " + v.unresolved + "; not applied");
      continue;
    }
    auto boolean = [&]() -> Result<bool> { return Bool(v.text, w); };
    auto put_int = [&](const char* key) -> Status {
      auto i = Int(v.text, w, 1, int64_t{1} << 32);
      if (!i.ok()) return i.status();
      return im.Put(key, Str(*i), w);
    };
    if (n == "deepspeed" || n == "deepspeed-config") {
      if (!has) continue;  // Megatron-DeepSpeed's --deepspeed switch; the file follows as --deepspeed_config
      read_config = true;
      GPUPLAN_RETURN_IF_ERROR(im.ReadNamedFile(v.text, w, depth, ImportKind::kDeepspeedConfig));
    } else if (n == "accelerate-config") {  // gpuplan's torchrun form of an accelerate export
      read_config = true;
      std::string path;
      auto text = im.ReadConfigText(v.text, w, depth, ImportKind::kAccelerateConfig, path);
      if (!text.ok()) return text.status();
      FlatConfig cfg;
      GPUPLAN_RETURN_IF_ERROR(im.ReadAccelerateInto(*text, path, cfg));
      GPUPLAN_RETURN_IF_ERROR(im.ApplyAccelerate(cfg, depth + 1));
    } else if (n == "per-device-train-batch-size") {
      GPUPLAN_RETURN_IF_ERROR(put_int("training.micro_batch"));
    } else if (n == "gradient-accumulation-steps") {
      GPUPLAN_RETURN_IF_ERROR(put_int("training.grad_accum"));
    } else if (n == "max-steps") {
      GPUPLAN_RETURN_IF_ERROR(put_int("training.steps"));
    } else if (n == "max-seq-length" || n == "model-max-length" || n == "max-length" || n == "block-size" || n == "seq-length") {
      GPUPLAN_RETURN_IF_ERROR(put_int("training.seq_len"));
    } else if (n == "bf16" || n == "fp16") {
      auto b = boolean();
      if (!b.ok()) return b.status();
      if (*b) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", n, w));
    } else if (n == "gradient-checkpointing" || n == "torch-compile") {
      auto b = boolean();
      if (!b.ok()) return b.status();
      if (n == "torch-compile") GPUPLAN_RETURN_IF_ERROR(im.Put("training.compile", *b ? "true" : "false", w));
      else if (*b) GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", "full", w));
    } else if (n == "optim") {
      static const std::map<std::string, std::string> kOptim = {
          {"adamw_torch", "adamw"}, {"adamw_hf", "adamw"}, {"adamw_torch_fused", "adamw"}, {"adamw_apex_fused", "adamw"},
          {"adamw_bnb_8bit", "adamw-8bit"}, {"adamw_8bit", "adamw-8bit"}, {"paged_adamw_8bit", "paged-adamw-8bit"},
          {"adafactor", "adafactor"}, {"sgd", "sgd"}};
      auto it = kOptim.find(v.text);
      if (it != kOptim.end()) GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", it->second, w));
      else im.Unknown(w, "optimizer '" + v.text + "' is not one gpuplan models");
    } else if (n == "model-name-or-path") {
      if (auto p = PresetFromName(v.text)) GPUPLAN_RETURN_IF_ERROR(im.Put("model.preset", *p, w));
      else if (!im.BaseHasModel()) im.Unresolved(w, "'" + v.text + "' is not a gpuplan preset: give --model (gpuplan models, or its config.json)");
    } else if (n == "learning-rate" || n == "weight-decay" || n == "warmup-ratio" || n == "warmup-steps" || n == "lr-scheduler-type" ||
               n == "max-grad-norm" || n == "adam-beta1" || n == "adam-beta2" || n == "adam-epsilon" || n == "seed" || n == "tf32" ||
               n == "num-train-epochs" || n == "per-device-eval-batch-size" || n == "ddp-timeout" || n == "dataloader-num-workers") {
      im.Note(w, "read, no effect on the estimate");
    } else {
      im.Unknown(w, "an argument of " + Base(script) + " gpuplan does not read");
    }
  }
  if (!read_config) return im.Put("training.framework", "hf-trainer", {file, flags.empty() ? 1 : flags[0].word.line, Base(script)}, Strength::kDefault);
  return Status::Ok();
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

bool HasMegatronFlag(const Command& c, size_t from) {
  for (size_t i = from; i < c.size(); ++i)
    for (const char* f : {"--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--micro-batch-size", "--num-layers", "--global-batch-size"})
      if (c[i].text.rfind(f, 0) == 0) return true;
  return false;
}

Status ScriptArgs(Importer& im, const std::string& script, bool module, const Command& c, size_t from, const std::string& file, int depth) {
  std::vector<Word> positional;
  const std::vector<Flag> flags = GroupFlags(c, from, positional);
  for (const auto& p : positional)
    if (!p.text.empty()) im.Unknown({file, p.line, p.text}, "a positional argument of " + (script.empty() ? std::string("the command") : Base(script)) + ": not read");
  const std::string b = Base(script);
  if (b.rfind("pretrain_", 0) == 0 || HasMegatronFlag(c, from)) return Megatron(im, flags, file, depth);
  bool titan = (module && script == "torchtitan.train") || EndsWith(script, "torchtitan/train.py");
  for (const auto& f : flags) titan |= f.name == "job.config_file" || f.name == "job.config-file";
  if (titan) return TitanArgs(im, flags, file, depth);
  return TrainerArgs(im, flags, file, script, depth);
}

enum class Launcher { kNone, kTorchrun, kDeepspeed, kAccelerate };

// One command of a shell file: the launcher (if any), its script and the script's arguments.
Result<bool> ParseCommand(Importer& im, const Command& c, const std::string& file, int depth) {
  size_t k = 0;
  for (; k < c.size(); ++k) {
    const std::string b = Base(c[k].text);
    if (b == "torchrun" || b == "deepspeed" || b == "accelerate" || (b.rfind("python", 0) == 0 && c[k].unresolved.empty()) ||
        (EndsWith(b, ".py") && c[k].text.rfind("-", 0) != 0))
      break;
  }
  if (k == c.size()) return false;
  if (k > 0) im.Note({file, c[0].line, c[0].text}, "the words before " + Base(c[k].text) + " are not read (the launcher's own flags give the processes)");
  const std::string b = Base(c[k].text);
  Launcher launcher = Launcher::kNone;
  size_t from = k + 1, script = c.size();
  bool module = false;
  if (b == "torchrun") launcher = Launcher::kTorchrun;
  else if (b == "deepspeed") launcher = Launcher::kDeepspeed;
  else if (b == "accelerate") {
    if (k + 1 >= c.size() || c[k + 1].text != "launch") return false;
    launcher = Launcher::kAccelerate;
    from = k + 2;
  } else if (!EndsWith(b, ".py")) {  // python [-u ...] (-m module | script.py)
    size_t j = k + 1;
    while (j < c.size() && c[j].text.rfind("-", 0) == 0 && c[j].text != "-m") ++j;
    if (j >= c.size()) return false;
    if (c[j].text == "-m") {
      if (j + 1 >= c.size()) return false;
      const std::string mod = c[j + 1].text;
      from = j + 2;
      if (mod == "torch.distributed.run" || mod == "torch.distributed.launch") launcher = Launcher::kTorchrun;
      else if (mod == "deepspeed.launcher.runner") launcher = Launcher::kDeepspeed;
      else if (mod == "accelerate.commands.launch") launcher = Launcher::kAccelerate;
      else script = j + 1, module = true;
    } else {
      script = j;
    }
  } else {
    script = k;
  }
  if (launcher != Launcher::kNone) {
    std::vector<LaunchFlag> flags, unknown;
    if (launcher == Launcher::kTorchrun) {
      script = ScanLauncher(c, from, TorchrunValued(), TorchrunSwitches(), flags, unknown, module);
      GPUPLAN_RETURN_IF_ERROR(Torchrun(im, flags, unknown, file));
    } else if (launcher == Launcher::kDeepspeed) {
      script = ScanLauncher(c, from, DeepspeedValued(), DeepspeedSwitches(), flags, unknown, module);
      GPUPLAN_RETURN_IF_ERROR(DeepspeedLauncher(im, flags, unknown, file));
    } else {
      script = ScanLauncher(c, from, AccelerateLaunchValued(), AccelerateLaunchSwitches(), flags, unknown, module);
      GPUPLAN_RETURN_IF_ERROR(AccelerateLaunch(im, flags, unknown, file, depth));
    }
  }
  if (script >= c.size()) {
    im.Note({file, c[k].line, b}, "no training script after the launcher");
    return true;
  }
  GPUPLAN_RETURN_IF_ERROR(ScriptArgs(im, c[script].text, module, c, script + 1, file, depth));
  return true;
}

Status Importer::ReadShell(const std::string& text, const std::string& file, ImportKind kind, int depth) {
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(text, file));
  ShellState st;
  ShellReader reader(text, file, st, depth, true);
  std::vector<Command> commands;
  GPUPLAN_RETURN_IF_ERROR(reader.Read(commands));
  for (const auto& [w, m] : reader.notes) Note(w, m);
  bool any = false;
  for (const auto& c : commands) {
    auto used = ParseCommand(*this, c, file, depth);
    if (!used.ok()) return used.status();
    any |= *used;
  }
  if (any) return Status::Ok();
  // No command: a file of flags (Megatron arguments one per line, or MEGATRON_ARGS=( ... ) to source).
  Command words;
  for (const auto& name : st.array_order) words.insert(words.end(), st.arrays[name].begin(), st.arrays[name].end());
  for (const auto& c : commands)
    if (!c.empty() && c[0].text.rfind("--", 0) == 0) words.insert(words.end(), c.begin(), c.end());
  if (words.empty())
    return Bad({file, 1, ""}, "no launch command (torchrun, deepspeed, accelerate launch, python ...py) and no flags found");
  return ScriptArgs(*this, kind == ImportKind::kMegatronArgs ? "pretrain_gpt.py" : "", false, words, 0, file, depth);
}

// ---- reading a file, and the job at the end ----

Status Importer::ReadFile(const std::string& path, int depth, const Location& named_at) {
  std::error_code ec;
  const std::string canon = fs::weakly_canonical(path, ec).string();
  if (!read_.insert(ec ? path : canon).second) {
    if (named_at.line > 0) Note(named_at, "'" + path + "' is read already");
    return Status::Ok();
  }
  auto text = ReadInputFile(path);
  if (!text.ok()) return text.status();
  auto kind = DetectImportKind(*text, path);
  if (!kind.ok()) return kind.status();
  out_.files.push_back({path, *kind});
  switch (*kind) {
    case ImportKind::kDeepspeedConfig: return ReadDeepspeed(*text, path);
    case ImportKind::kAccelerateConfig: {
      FlatConfig cfg;
      GPUPLAN_RETURN_IF_ERROR(ReadAccelerateInto(*text, path, cfg));
      return ApplyAccelerate(cfg, depth);
    }
    case ImportKind::kTorchtitanToml: {
      FlatConfig cfg;
      GPUPLAN_RETURN_IF_ERROR(ReadTorchtitanInto(*text, path, cfg));
      return ApplyTorchtitan(cfg);
    }
    case ImportKind::kMegatronArgs:
    case ImportKind::kLaunchLine: return ReadShell(*text, path, *kind, depth);
  }
  return Status::Internal("import: unhandled kind");
}

bool IsBatchKey(const std::string& k) {
  return k == "training.micro_batch" || k == "training.global_batch" || k == "training.grad_accum" || k == "training.steps" ||
         k == "parallel.vpp_layers";
}

std::string DefaultText(const std::string& key) {
  const Job d;
  if (key == "training.precision") return ToString(d.training.precision);
  if (key == "parallel.zero") return Str(d.parallel.zero);
  if (key == "training.micro_batch") return Str(d.training.micro_batch);
  if (key == "parallel.offload") return ToString(d.parallel.offload);
  return "its default";
}

Status Importer::SetKey(Job& job, const std::string& key, const std::string& value, const Location& w) {
  if (auto it = base_keys_.find(key); it != base_keys_.end()) {
    Note(w, key + " = " + value + " here is not used: " + At(it->second) + " sets it");
    return Status::Ok();
  }
  if (key.rfind("model.", 0) == 0 && base_has_model_) {
    Note(w, key + " = " + value + " here is not used: the model is given (--model or the job file)");
    return Status::Ok();
  }
  return SetJobKey(job, key, value, w);
}

Status Importer::ApplyFacts(Job& job) {
  // A preset first (it replaces the whole shape), then the shape, then everything else.
  for (int pass = 0; pass < 3; ++pass)
    for (const auto& f : facts_) {
      if (f.strength == Strength::kAuto || IsBatchKey(f.key)) continue;
      const bool preset = f.key == "model.preset", model = f.key.rfind("model.", 0) == 0;
      if ((pass == 0) != preset || (pass == 1) != (model && !preset)) continue;
      GPUPLAN_RETURN_IF_ERROR(SetKey(job, f.key, f.value, f.where));
    }
  return Status::Ok();
}

Location LocOf(const Job& job, const std::string& key) {
  auto it = job.set_keys.find(key);
  return it == job.set_keys.end() ? Location{"", 0, key} : it->second;
}

// The data-parallel degree the layout gives (0 = unknown) and how, for messages; a layout that does
// not divide the GPU count is an error at the line of tp/pp/cp.
Result<std::pair<int64_t, std::string>> DataParallel(const Job& job) {
  const ParallelSpec& p = job.parallel;
  const int64_t mp = p.tp * p.pp * p.cp;
  int64_t dp = 0;
  std::string dp_how;
  if (job.cluster.num_gpus > 0) {
    const Location ng = LocOf(job, "cluster.num_gpus");
    if (job.cluster.num_gpus % mp != 0) {
      Location w = ng;
      for (const char* k : {"parallel.tp", "parallel.pp", "parallel.cp"})
        if (job.IsSet(k) && LocOf(job, k).line > 0) {
          w = LocOf(job, k);
          break;
        }
      return Bad(w, "tp " + Str(p.tp) + " x pp " + Str(p.pp) + " x cp " + Str(p.cp) + " = " + Str(mp) + " does not divide the " +
                        Str(job.cluster.num_gpus) + " GPUs (" + At(ng) + ")");
    }
    dp = job.cluster.num_gpus / mp;
    dp_how = "dp " + Str(dp) + " (" + Str(job.cluster.num_gpus) + " GPUs from " + At(ng) + " / tp x pp x cp " + Str(mp) + ")";
    if (p.dp > 0 && p.dp != dp)
      return Bad(LocOf(job, "parallel.dp"), "dp " + Str(p.dp) + " x tp x pp x cp " + Str(mp) + " = " + Str(p.dp * mp) + " but the job has " +
                                                Str(job.cluster.num_gpus) + " GPUs (" + At(ng) + ")");
  } else if (p.dp > 0) {
    dp = p.dp;
    dp_how = "dp " + Str(dp) + " (" + At(LocOf(job, "parallel.dp")) + ")";
  }
  return std::make_pair(dp, dp_how);
}

Status Importer::ResolveBatch(Job& job) {
  auto layout = DataParallel(job);
  if (!layout.ok()) return layout.status();
  const int64_t dp = layout->first;
  const std::string dp_how = layout->second;
  const Fact* M = Find("training.micro_batch");
  const Fact* G = Find("training.grad_accum");
  const Fact* B = Find("training.global_batch");
  std::optional<int64_t> m, g, b;
  Location mloc, gloc, bloc;
  const bool base_m = base_keys_.count("training.micro_batch") > 0, base_b = base_keys_.count("training.global_batch") > 0;
  if (base_m) m = job.training.micro_batch, mloc = base_keys_["training.micro_batch"];
  else if (M && M->strength != Strength::kAuto) m = std::stoll(M->value), mloc = M->where;
  if (base_b) b = job.training.global_batch, bloc = base_keys_["training.global_batch"];
  else if (B && B->strength != Strength::kAuto) b = std::stoll(B->value), bloc = B->where;
  if (G && G->strength != Strength::kAuto) g = std::stoll(G->value), gloc = G->where;
  if (M && M->strength == Strength::kAuto && base_m) Note(M->where, "auto: micro-batch " + Str(*m) + " from " + At(mloc));
  if (B && B->strength == Strength::kAuto && base_b) Note(B->where, "auto: global batch " + Str(*b) + " from " + At(bloc));
  auto derive = [&](int64_t total, int64_t per, const Location& w, const std::string& what) -> Result<int64_t> {
    if (total % per != 0) return Bad(w, "the global batch " + Str(total) + " is not a multiple of " + what + " = " + Str(per) + " (" + dp_how + ")");
    return total / per;
  };
  // micro-batch: "auto" or absent, from the global batch and the accumulation ("give any two")
  if (!m && b && g && dp > 0 && (!M || M->strength == Strength::kAuto)) {
    auto v = derive(*b, *g * dp, M ? M->where : bloc, "accumulation " + Str(*g) + " x dp " + Str(dp));
    if (!v.ok()) return v.status();
    m = *v, mloc = M ? M->where : bloc;
    Note(mloc, (M ? "auto: " : "") + std::string("micro-batch ") + Str(*m) + " = global batch " + Str(*b) + " / (accumulation " + Str(*g) + " x " + dp_how + ")");
  } else if (M && M->strength == Strength::kAuto && !m) {
    Unresolved(M->where, "auto: no other input gives the micro-batch (--micro-batch, or the script's --per_device_train_batch_size); the job keeps gpuplan's default (1)");
  }
  if (G && G->strength == Strength::kAuto) {
    if (b && m && dp > 0) {
      auto v = derive(*b, *m * dp, G->where, "micro-batch " + Str(*m) + " x dp " + Str(dp));
      if (!v.ok()) return v.status();
      g = *v, gloc = G->where;
      Note(G->where, "auto: accumulation " + Str(*g) + " = global batch " + Str(*b) + " / (micro-batch " + Str(*m) + " x " + dp_how + ")");
    } else {
      Unresolved(G->where, "auto: needs the global batch (--global-batch), the micro-batch and the number of GPUs; the job keeps accumulation 1 (global batch = micro-batch x dp)");
    }
  }
  if (B && B->strength == Strength::kAuto && !b) {
    if (m && dp > 0 && (!G || g)) {
      b = *m * g.value_or(1) * dp, bloc = B->where;
      Note(B->where, "auto: global batch " + Str(*b) + " = micro-batch " + Str(*m) + " x accumulation " + Str(g.value_or(1)) + " x " + dp_how);
    } else {
      Unresolved(B->where, std::string("auto: needs the micro-batch") + (m ? "" : " (unknown)") + " and the number of GPUs" +
                               (dp > 0 ? "" : " (unknown: a launch line or --num-gpus gives it)") + "; the job keeps gpuplan's default (global batch = micro-batch x dp, no accumulation)");
    }
  }
  if (!B && !b && g && *g > 1) {
    if (m && dp > 0) {
      b = *m * *g * dp, bloc = gloc;
      Note(gloc, "global batch " + Str(*b) + " = micro-batch " + Str(*m) + " x accumulation " + Str(*g) + " x " + dp_how);
    } else {
      Unresolved(gloc, "accumulation " + Str(*g) + ": the global batch needs the micro-batch and the number of GPUs (a launch line or --num-gpus); the job keeps accumulation 1");
    }
  }
  if (b && m && dp > 0) {
    if (g && *b != *m * *g * dp)
      return Bad(bloc, "the global batch " + Str(*b) + " is not micro-batch " + Str(*m) + " (" + At(mloc) + ") x accumulation " + Str(*g) + " (" + At(gloc) +
                           ") x " + dp_how + " = " + Str(*m * *g * dp));
    if (!g && *b % (*m * dp) != 0)
      return Bad(bloc, "the global batch " + Str(*b) + " is not a multiple of micro-batch " + Str(*m) + " (" + At(mloc) + ") x " + dp_how + " = " + Str(*m * dp));
  }
  if (b && m && g && dp == 0) {
    if (*b % (*m * *g) != 0)
      return Bad(bloc, "the global batch " + Str(*b) + " is not a multiple of micro-batch " + Str(*m) + " x accumulation " + Str(*g) + " = " + Str(*m * *g));
    const int64_t implied = *b / (*m * *g);
    Note(bloc, "dp " + Str(implied) + " = global batch " + Str(*b) + " / (micro-batch " + Str(*m) + " x accumulation " + Str(*g) +
                   "): no launch line or --num-gpus gives the GPUs");
    GPUPLAN_RETURN_IF_ERROR(SetKey(job, "parallel.dp", Str(implied), bloc));
  }
  if (m && !base_m) GPUPLAN_RETURN_IF_ERROR(SetKey(job, "training.micro_batch", Str(*m), mloc));
  if (b && !base_b) GPUPLAN_RETURN_IF_ERROR(SetKey(job, "training.global_batch", Str(*b), bloc));
  return Status::Ok();
}

Status Importer::ResolveRest(Job& job) {
  if (const Fact* f = Find("parallel.vpp_layers")) {
    const int64_t per = std::stoll(f->value), layers = job.arch.layers, pp = job.parallel.pp;
    if (layers == 0) {
      Unresolved(f->where, "layers per virtual stage need the model's layer count (--model, or --num-layers); vpp stays 1");
    } else if (layers % (pp * per) != 0) {
      return Bad(f->where, Str(per) + " layers per virtual stage x pp " + Str(pp) + " does not divide the model's " + Str(layers) + " layers");
    } else if (!job.IsSet("parallel.vpp") || LocOf(job, "parallel.vpp").line == 0) {
      const int64_t vpp = layers / (pp * per);
      Note(f->where, "vpp " + Str(vpp) + " = " + Str(layers) + " layers / (pp " + Str(pp) + " x " + Str(per) + " layers per virtual stage)");
      GPUPLAN_RETURN_IF_ERROR(SetKey(job, "parallel.vpp", Str(vpp), f->where));
    }
  }
  if (const Fact* f = Find("training.steps")) {
    int64_t global = job.training.global_batch;
    if (global == 0) {
      const int64_t mp = job.parallel.tp * job.parallel.pp * job.parallel.cp;
      const int64_t dp = job.parallel.dp > 0 ? job.parallel.dp : job.cluster.num_gpus > 0 ? job.cluster.num_gpus / mp : 0;
      global = dp > 0 ? job.training.micro_batch * dp : 0;
    }
    if (global == 0) {
      Unresolved(f->where, "steps " + f->value + ": the tokens need the global batch (the number of GPUs); training.tokens stays unset");
    } else if (!base_keys_.count("training.tokens") && !base_keys_.count("training.samples") && !job.IsSet("training.samples")) {
      const double tokens = std::stod(f->value) * static_cast<double>(global) * static_cast<double>(job.training.seq_len);
      std::ostringstream os;
      os.precision(17);
      os << tokens;
      Note(f->where, "tokens " + os.str() + " = " + f->value + " steps x global batch " + Str(global) + " x seq_len " + Str(job.training.seq_len));
      GPUPLAN_RETURN_IF_ERROR(SetKey(job, "training.tokens", os.str(), f->where));
    }
  }
  for (const auto& f : facts_) {
    if (f.strength != Strength::kAuto || IsBatchKey(f.key)) continue;
    if (auto it = base_keys_.find(f.key); it != base_keys_.end()) Note(f.where, "auto: " + f.key + " from " + At(it->second));
    else Unresolved(f.where, "auto: no other input gives " + f.key + "; the job keeps gpuplan's default (" + DefaultText(f.key) + ")");
  }
  for (const auto& [w, how] : resolved_autos_) Note(w, "auto: " + how);
  return Status::Ok();
}

Result<ImportResult> Importer::Finish() {
  Job job = base_;
  GPUPLAN_RETURN_IF_ERROR(ApplyFacts(job));
  GPUPLAN_RETURN_IF_ERROR(ResolveBatch(job));
  GPUPLAN_RETURN_IF_ERROR(ResolveRest(job));
  GPUPLAN_RETURN_IF_ERROR(ApplyDatasetSize(job));
  out_.job = std::move(job);
  return out_;
}

// ---- what a file is, from its content ----

bool HasLine(const std::string& text, const std::string& prefix) {
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);)
    if (l.rfind(prefix, 0) == 0) return true;
  return false;
}

bool HasTomlTable(const std::string& text) {
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);) {
    size_t i = l.find_first_not_of(" \t");
    if (i == std::string::npos || l[i] != '[') continue;
    size_t j = l.find(']', i);
    if (j == std::string::npos) continue;
    std::string name = l.substr(i + 1, j - i - 1);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name == "job" || name == "training" || name == "parallelism") return true;
  }
  return false;
}

bool HasLauncher(const std::string& text) {
  for (const char* w : {"torchrun", "deepspeed", "accelerate launch", "torch.distributed.run", "torch.distributed.launch"}) {
    for (size_t pos = text.find(w); pos != std::string::npos; pos = text.find(w, pos + 1)) {
      const size_t end = pos + std::strlen(w);
      // ${TORCHRUN:-torchrun}: a default value is a command word too
      const bool start_ok = pos == 0 || std::strchr(" \t\n;&|/\"'({=", text[pos - 1]) != nullptr ||
                            (pos >= 2 && text[pos - 1] == '-' && text[pos - 2] == ':');
      const bool end_ok = end == text.size() || std::strchr(" \t\r\n;&|\"'})", text[end]) != nullptr;
      if (start_ok && end_ok) return true;
    }
  }
  return false;
}

}  // namespace

std::string ToString(ImportKind k) {
  switch (k) {
    case ImportKind::kDeepspeedConfig: return "deepspeed config";
    case ImportKind::kAccelerateConfig: return "accelerate config";
    case ImportKind::kTorchtitanToml: return "torchtitan config";
    case ImportKind::kMegatronArgs: return "megatron command line";
    case ImportKind::kLaunchLine: return "launch line";
  }
  return "?";
}

Result<ImportKind> DetectImportKind(const std::string& text, const std::string& file) {
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(text, file));
  const size_t first = text.find_first_not_of(" \t\r\n");
  const std::string expected =
      "expected a DeepSpeed ds_config.json (a JSON object with train_batch_size, train_micro_batch_size_per_gpu, zero_optimization, "
      "bf16 or fp16), an accelerate config (YAML with distributed_type / compute_environment), a torchtitan TOML ([job], "
      "[training], [parallelism]), a Megatron-LM command line (pretrain_gpt.py, --tensor-model-parallel-size, --micro-batch-size, "
      "--num-layers) or a torchrun / deepspeed / accelerate launch line";
  if (first == std::string::npos) return Bad({file, 1, ""}, "the file is empty: " + expected);
  if (text[first] == '{') {
    for (const char* k : {"\"train_batch_size\"", "\"train_micro_batch_size_per_gpu\"", "\"zero_optimization\"", "\"bf16\"", "\"fp16\""})
      if (text.find(k) != std::string::npos) return ImportKind::kDeepspeedConfig;
    for (const char* k : {"\"distributed_type\"", "\"compute_environment\""})
      if (text.find(k) != std::string::npos) return ImportKind::kAccelerateConfig;
    return Bad({file, 1, ""}, "a JSON object with none of the DeepSpeed keys: " + expected);
  }
  if (HasTomlTable(text)) return ImportKind::kTorchtitanToml;
  if (HasLine(text, "distributed_type:") || HasLine(text, "compute_environment:")) return ImportKind::kAccelerateConfig;
  for (const char* k : {"pretrain_gpt", "--tensor-model-parallel-size", "--micro-batch-size", "--num-layers", "--pipeline-model-parallel-size"})
    if (text.find(k) != std::string::npos) return ImportKind::kMegatronArgs;
  if (HasLauncher(text)) return ImportKind::kLaunchLine;
  return Bad({file, 1, ""}, "not a config gpuplan imports: " + expected);
}

Result<ImportResult> ImportFiles(const std::vector<std::string>& paths, const Job& base) {
  if (paths.empty()) return Status::BadInput({"command line", 0, ""}, "no file to import");
  Importer im(base);
  for (const auto& p : paths) GPUPLAN_RETURN_IF_ERROR(im.ReadFile(p, 0, {"command line", 0, p}));
  return im.Finish();
}

}  // namespace gpuplan
