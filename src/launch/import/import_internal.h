// Internal to the import readers (src/launch/import*.cc): the facts a file gives, the flattened
// structured files, the key tables and the Importer every reader writes into. Not public API.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"
#include "gpuplan/job_keys.h"
#include "gpuplan/launch.h"
#include "gpuplan/strings.h"
#include "shell.h"

namespace gpuplan::import_detail {

namespace fs = std::filesystem;

inline Status Bad(const Location& where, const std::string& why) { return Status::BadInput(where, why); }
inline std::string Str(int64_t v) { return std::to_string(v); }
inline std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
inline std::string At(const Location& l) {
  if (l.file.empty() || l.file == "command line") return l.key.empty() ? "the command line" : l.key + " on the command line";
  return l.file + (l.line > 0 ? ":" + Str(l.line) : "");
}
inline bool IsAuto(const std::string& v) { return Lower(v) == "auto"; }

inline Result<int64_t> Int(const std::string& v, const Location& w, int64_t min, int64_t max) {
  return ParseInteger(v, w, min, max);
}
inline Result<bool> Bool(const std::string& v, const Location& w) {
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

inline constexpr int kMaxDepth = 4;         // file -> file it names -> ... (launch -> accelerate -> ds_config)
inline constexpr int kMaxNesting = 32;      // levels inside one structured file
inline constexpr int64_t kMaxNodes = 100000;  // values walked in one file (YAML aliases expanding)

class Importer {
 public:
  explicit Importer(const Job& base) : base_(base) {
    out_.job = base;
    for (const auto& [k, l] : base.set_keys) base_keys_[k] = l;
    base_has_model_ = base.arch.layers > 0 || base.arch.params_override > 0;
    for (const auto& [k, l] : base.set_keys)  // a model, not one of its values (--vocab fills in what a script lacks)
      if (k == "model.preset" || k == "model.config" || k == "model.params" || k == "model.layers" || k == "model.hidden")
        base_has_model_ = true;
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

// ---- shared by the readers (import.cc) ----
Status FlattenYamlText(const std::string& text, const std::string& file, FlatConfig& out);
std::optional<Role> RoleOf(const KeyTable& table, const std::string& key);
std::string Article(const std::string& word);
std::string Suggest(const KeyTable& table, const std::string& key);
fs::path DirOf(const std::string& file);
std::string Relative(const std::string& file, const std::string& name);

// A batch value of a config: "auto" or a whole number (import_deepspeed.cc).
Status PutBatch(Importer& im, const FlatConfig& cfg, const std::string& key, const std::string& job_key);

// ---- key tables (import_keys.cc) ----
const KeyTable& DeepspeedKeys();
const KeyTable& AccelerateKeys();
const KeyTable& TorchtitanKeys();
const std::set<std::string>& TorchrunValued();
const std::set<std::string>& TorchrunSwitches();
const std::set<std::string>& DeepspeedValued();
const std::set<std::string>& DeepspeedSwitches();
const std::map<std::string, std::string>& AccelerateFlags();
const std::map<std::string, std::string>& AccelerateSwitches();  // switch -> "key=value"
std::set<std::string> AccelerateLaunchValued();
std::set<std::string> AccelerateLaunchSwitches();
const std::set<std::string>& MegatronModelFlags();
const std::set<std::string>& MegatronFlags();
const std::set<std::string>& MegatronNoEffect();

// ---- words of a launch line (import_launch.cc) ----
inline std::string Base(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
inline std::string Norm(std::string s) {
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

std::vector<Flag> GroupFlags(const Command& c, size_t from, std::vector<Word>& positional);

struct LaunchFlag {
  std::string norm;
  Word word;
  std::optional<Word> value;
};

// ---- script arguments (import_megatron.cc, import_torchtitan.cc) ----
Status Megatron(Importer& im, const std::vector<Flag>& flags, const std::string& file, int depth);
Status TrainerArgs(Importer& im, const std::vector<Flag>& flags, const std::string& file, const std::string& script, int depth);
Status TitanArgs(Importer& im, const std::vector<Flag>& flags, const std::string& file, int depth);

}  // namespace gpuplan::import_detail
