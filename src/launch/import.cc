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
#include "import/import_internal.h"

namespace gpuplan {

namespace import_detail {

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

// What a batch value still needs: only the inputs no file or flag gave ("the micro-batch and the
// number of GPUs").
std::string Missing(bool need_global, bool need_micro, bool need_gpus) {
  std::vector<std::string> parts;
  if (need_global) parts.push_back("the global batch (--global-batch)");
  if (need_micro) parts.push_back("the micro-batch (--micro-batch)");
  if (need_gpus) parts.push_back("the number of GPUs (a launch line or --num-gpus)");
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
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
      Unresolved(G->where, "auto: needs " + Missing(!b, !m, dp <= 0) + "; the job keeps accumulation 1 (global batch = micro-batch x dp)");
    }
  }
  if (B && B->strength == Strength::kAuto && !b) {
    if (m && dp > 0 && (!G || g)) {
      b = *m * g.value_or(1) * dp, bloc = B->where;
      Note(B->where, "auto: global batch " + Str(*b) + " = micro-batch " + Str(*m) + " x accumulation " + Str(g.value_or(1)) + " x " + dp_how);
    } else {
      std::string need = Missing(false, !m, dp <= 0);
      if (G && !g) need += (need.empty() ? "" : " and ") + std::string("the accumulation");
      Unresolved(B->where, "auto: needs " + need +
                               "; the job keeps gpuplan's default (global batch = micro-batch x dp, no accumulation)");
    }
  }
  if (!B && !b && g && *g > 1) {
    if (m && dp > 0) {
      b = *m * *g * dp, bloc = gloc;
      Note(gloc, "global batch " + Str(*b) + " = micro-batch " + Str(*m) + " x accumulation " + Str(*g) + " x " + dp_how);
    } else {
      Unresolved(gloc, "accumulation " + Str(*g) + ": the global batch needs " + Missing(false, !m, dp <= 0) + "; the job keeps accumulation 1");
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

}  // namespace import_detail

using namespace import_detail;

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
