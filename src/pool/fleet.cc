// Fleet files and traces (docs/fleet.md "The fleet file"): a pool (a path or inline) and a list of jobs, each a
// job file's sections (a path or inline); traces of arrivals for the simulation.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "gpuplan/csv.h"
#include "gpuplan/fleet.h"
#include "gpuplan/input_file.h"
#include "gpuplan/strings.h"
#include "gpuplan/yaml_doc.h"

namespace gpuplan {
namespace {

Status Bad(const Location& w, const std::string& why) { return Status::BadInput(w, why); }

// A path in the fleet file is relative to the fleet file's folder.
std::string Beside(const std::string& file, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(file).parent_path() / p).lexically_normal().string();
}

// One key of an inline job section, set as a flag would set it, at its own line. Lists become comma lists
// (parallel.layer_split, training.lora.targets, ...); training.lora is a mapping.
Status SetInline(Job& job, const std::string& key, const YAML::Node& v, const std::string& file) {
  const Location w = YamlWhere(file, v, key);
  if (v.IsMap()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it->first.IsScalar()) return Bad(w, "keys must be plain names");
      GPUPLAN_RETURN_IF_ERROR(SetInline(job, key + "." + it->first.Scalar(), it->second, file));
    }
    return Status::Ok();
  }
  std::string value;
  if (v.IsSequence()) {
    for (const auto& item : v) {
      if (!item.IsScalar() || item.Scalar().empty()) return Bad(YamlWhere(file, item, key), "expected a list of values");
      value += (value.empty() ? "" : ",") + item.Scalar();
    }
    if (value.empty()) return Bad(w, "must name at least one entry");
  } else if (v.IsScalar()) {
    value = v.Scalar();
  } else {
    return Bad(w, "expected a value");
  }
  GPUPLAN_RETURN_IF_ERROR(SetJobKey(job, key, value, w));
  job.set_keys[key] = w;
  return Status::Ok();
}

// The job's sections inline in the fleet entry: the model's source (preset, config, params) first, as a job
// file reads it.
Status InlineJob(const YAML::Node& entry, const std::string& file, Job& job) {
  static const std::set<std::string> kSections = {"model", "training", "parallel", "cluster", "constraints", "serving"};
  const YAML::Node model = entry["model"];
  if (model && model.IsMap())
    for (const char* k : {"preset", "config", "params"})
      if (model[k]) GPUPLAN_RETURN_IF_ERROR(SetInline(job, std::string("model.") + k, model[k], file));
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    const std::string sec = it->first.IsScalar() ? it->first.Scalar() : "";
    if (!kSections.count(sec)) continue;
    if (!it->second.IsMap()) return Bad(YamlWhere(file, it->second, "jobs." + sec), "expected a mapping");
    for (auto kv = it->second.begin(); kv != it->second.end(); ++kv) {
      const std::string k = kv->first.IsScalar() ? kv->first.Scalar() : "";
      if (sec == "model" && (k == "preset" || k == "config" || k == "params")) continue;
      GPUPLAN_RETURN_IF_ERROR(SetInline(job, sec + "." + k, kv->second, file));
    }
  }
  return ApplyDatasetSize(job);
}

Result<double> NonNegative(const YAML::Node& v, const std::string& file, const std::string& key) {
  const Location w = YamlWhere(file, v, key);
  if (!v.IsScalar()) return Bad(w, "expected a number");
  return ParseDecimalIn(v.Scalar(), w, {0, 1e9, false});
}

// The checks a fleet job needs beyond a job file's: what its kind needs, and no card choice of its own.
Status CheckFleetJob(const FleetJob& fj, const std::string& file) {
  const Job& j = fj.job;
  auto at = [&](const std::string& key) {
    auto it = j.set_keys.find(key);
    return it != j.set_keys.end() ? it->second : Location{file, fj.where.line, "jobs." + key};
  };
  if (j.IsSet("cluster.gpu"))
    return Bad(at("cluster.gpu"), "the fleet chooses each job's cards from the pool; leave cluster.gpu out");
  if (j.arch.layers == 0 && j.arch.params_override == 0)
    return Bad(at("model"), "job '" + fj.name + "' has no model (model.preset, model.config or the shape)");
  if (fj.kind == FleetJobKind::kTraining) {
    if (j.training.tokens <= 0)
      return Bad(at("training.tokens"), "a training job of a fleet needs training.tokens (or samples): its time on its cards");
    if (!j.IsSet("training.global_batch"))
      return Bad(at("training.global_batch"), "a training job of a fleet needs training.global_batch: its layouts on "
                                              "different cards are compared at the same batch");
  } else {
    if (fj.deadline_hours > 0) return Bad(fj.where, "deadline_hours is a training job's; a serving job has its SLA");
    if (!(j.serving.load == ServingLoad::kRequestRate && j.serving.request_rate > 0) &&
        j.serving.target_output_tokens_per_s <= 0)
      return Bad(at("serving.request_rate"), "a serving job of a fleet needs serving.request_rate (with load: request_rate) "
                                             "or serving.target_output_tokens_per_s: the load its cards must serve");
  }
  return Status::Ok();
}

Result<FleetJob> ParseJobEntry(const YAML::Node& e, const std::string& file) {
  FleetJob fj;
  fj.where = YamlWhere(file, e, "jobs");
  if (!e.IsMap()) return Bad(fj.where, "a job is a mapping {name, kind, job: PATH | model, training, ...}");
  static const std::set<std::string> kOwn = {"name", "kind", "priority", "deadline_hours", "job"};
  static const std::set<std::string> kSections = {"model", "training", "parallel", "cluster", "constraints", "serving"};
  bool inline_job = false;
  for (auto it = e.begin(); it != e.end(); ++it) {
    const std::string k = it->first.IsScalar() ? it->first.Scalar() : "";
    const Location w = YamlWhere(file, it->second, "jobs." + k);
    if (kSections.count(k)) {
      inline_job = true;
      continue;
    }
    if (!kOwn.count(k))
      return Bad(YamlWhere(file, it->first, "jobs." + k),
                 "unknown key (a fleet job has name, kind, priority, deadline_hours and job: PATH or the job's sections "
                 "model, training, parallel, cluster, serving)");
    if (!it->second.IsScalar() || it->second.Scalar().empty()) return Bad(w, "expected a single value");
    const std::string v = it->second.Scalar();
    if (k == "name") {
      fj.name = v;
    } else if (k == "kind") {
      if (v == "training") fj.kind = FleetJobKind::kTraining;
      else if (v == "serving") fj.kind = FleetJobKind::kServing;
      else return Bad(w, "expected training or serving, got '" + v + "'");
    } else if (k == "priority") {
      auto p = ParseInteger(v, w, -1000, 1000);
      if (!p.ok()) return p.status();
      fj.priority = *p;
    } else if (k == "deadline_hours") {
      auto d = NonNegative(it->second, file, "jobs.deadline_hours");
      if (!d.ok()) return d.status();
      if (*d <= 0) return Bad(w, "must be > 0 (hours from the job's arrival)");
      fj.deadline_hours = *d;
    }
  }
  for (const char* need : {"name", "kind"})
    if (!e[need]) return Bad(fj.where, std::string("a fleet job needs ") + need);
  if (e["job"] && inline_job)
    return Bad(YamlWhere(file, e["job"], "jobs.job"), "give the job as a path or inline (model, training, ...), not both");
  if (e["job"]) {
    auto parsed = ParseJobFile(Beside(file, e["job"].Scalar()));
    if (!parsed.ok()) {
      // A path that cannot be read is the fleet file's error, at its line; an error inside the job file is that file's.
      if (parsed.status().location().file == Beside(file, e["job"].Scalar()) && parsed.status().location().line == 0)
        return Bad(YamlWhere(file, e["job"], "jobs.job"), Beside(file, e["job"].Scalar()) + ": " + parsed.status().reason());
      return parsed.status();
    }
    fj.job = *parsed;
  } else if (inline_job) {
    fj.job.source = file;
    GPUPLAN_RETURN_IF_ERROR(InlineJob(e, file, fj.job));
  } else {
    return Bad(fj.where, "job '" + fj.name + "' needs job: PATH or its sections inline (model, training, ...)");
  }
  if (fj.job.IsSet("cluster.num_gpus")) fj.ask_gpus = fj.job.cluster.num_gpus;
  GPUPLAN_RETURN_IF_ERROR(CheckFleetJob(fj, file));
  return fj;
}

// The text of a block mapping nested at the top of a document, at its own lines: the lines before it blank, its
// indentation removed, up to the next line at column 0. "" when the node is not such a block (a flow mapping).
std::string NestedBlockText(const std::string& text, const YAML::Node& n) {
  const int first = n.Mark().line;
  // A flow mapping ({...}, as JSON writes every mapping) spans lines that are not a block: re-emitted instead.
  if (first <= 0 || n.Mark().column <= 0 || n.Style() == YAML::EmitterStyle::Flow) return "";
  std::vector<std::string> lines;
  for (size_t at = 0; at <= text.size();) {
    const size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  if (first >= static_cast<int>(lines.size())) return "";
  const size_t indent = static_cast<size_t>(n.Mark().column);
  std::string out(static_cast<size_t>(first), '\n');
  for (size_t i = static_cast<size_t>(first); i < lines.size(); ++i) {
    const std::string& l = lines[i];
    const size_t lead = l.find_first_not_of(' ');
    if (lead == 0 && l[0] != '#') break;  // the next top-level key
    out += (lead != std::string::npos && lead >= indent ? l.substr(indent) : std::string()) + "\n";
  }
  return out;
}

Result<Pool> FleetPool(const YAML::Node& p, const std::string& text, const std::string& file, const Catalog& catalog) {
  if (p.IsScalar()) {
    const std::string path = Beside(file, p.Scalar());
    auto pool = LoadPoolFile(path, catalog);
    if (!pool.ok() && pool.status().location().file == path && pool.status().location().line == 0)
      return Bad(YamlWhere(file, p, "pool"), path + ": " + pool.status().reason());
    return pool;
  }
  if (!p.IsMap()) return Bad(YamlWhere(file, p, "pool"), "a path to a pool file, or the pool inline {pool, groups: [...]}");
  // The inline pool read by the pool file's reader at the fleet file's own lines (a block), or re-emitted (a flow
  // mapping on one line: its errors point at that line).
  std::string block = NestedBlockText(text, p);
  const bool own_lines = !block.empty();
  if (!own_lines) {
    YAML::Emitter out;
    out << p;
    block = out.c_str();
  }
  auto pool = ParsePoolText(block, file, catalog);
  if (!pool.ok()) {
    if (own_lines || pool.status().code() != StatusCode::kBadInput) return pool.status();
    return Bad(YamlWhere(file, p, "pool." + pool.status().location().key), pool.status().reason());
  }
  pool->file = file;
  if (!p["pool"] && !p["name"]) pool->name = std::filesystem::path(file).stem().string();
  return pool;
}

}  // namespace

std::string ToString(FleetJobKind k) { return k == FleetJobKind::kServing ? "serving" : "training"; }

Result<Fleet> ParseFleetText(const std::string& text, const std::string& file, const Catalog& catalog) {
  auto doc = LoadYamlDocument(text, file);
  if (!doc.ok()) return doc.status();
  const YAML::Node& root = *doc;
  if (!root.IsMap()) return Bad({file, 1, ""}, "a fleet file is a mapping {pool, jobs: [...]}");
  Fleet fleet;
  fleet.file = file;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string k = it->first.IsScalar() ? it->first.Scalar() : "";
    if (k == "horizon_hours") {
      auto h = NonNegative(it->second, file, k);
      if (!h.ok()) return h.status();
      if (*h <= 0) return Bad(YamlWhere(file, it->second, k), "must be > 0");
      fleet.horizon_hours = *h;
    } else if (k != "pool" && k != "jobs") {
      return Bad(YamlWhere(file, it->first, k), "unknown key (a fleet file has pool, jobs and horizon_hours)");
    }
  }
  if (!root["pool"]) return Bad({file, 1, "pool"}, "needs a pool (a pool file's path, or its groups inline)");
  auto pool = FleetPool(root["pool"], text, file, catalog);
  if (!pool.ok()) return pool.status();
  fleet.pool = std::move(pool).value();
  const YAML::Node jobs = root["jobs"];
  if (!jobs || !jobs.IsSequence() || jobs.size() == 0)
    return Bad(YamlWhere(file, jobs ? jobs : root, "jobs"), "needs a list of jobs (at least one)");
  std::set<std::string> names;
  bool any_training = false;
  for (const auto& e : jobs) {
    auto fj = ParseJobEntry(e, file);
    if (!fj.ok()) return fj.status();
    if (!names.insert(fj->name).second) return Bad(fj->where, "job name '" + fj->name + "' is used twice");
    any_training |= fj->kind == FleetJobKind::kTraining;
    fleet.jobs.push_back(std::move(fj).value());
  }
  if (!any_training && fleet.horizon_hours <= 0)
    return Bad({file, 1, "horizon_hours"}, "every job serves: give horizon_hours (how long the services run) to price them");
  return fleet;
}

Result<Fleet> LoadFleetFile(const std::string& path, const Catalog& catalog) {
  auto text = ReadInputFile(path);
  if (!text.ok()) return text.status();
  return ParseFleetText(*text, path, catalog);
}

Result<std::vector<FleetArrival>> ParseFleetTrace(const std::string& text, const std::string& file, const Fleet& fleet) {
  auto table = ParseCsv(text, file);
  if (!table.ok()) return table.status();
  for (const char* need : {"arrival_s", "job"})
    if (table->Column(need) < 0) return Bad({file, 1, need}, "a trace needs the columns arrival_s and job");
  for (const auto& h : table->header)
    if (h != "arrival_s" && h != "job" && h != "name" && h != "tokens" && h != "deadline_hours")
      return Bad({file, 1, h}, "unknown column (a trace has arrival_s, job, name, tokens, deadline_hours)");
  std::vector<FleetArrival> out;
  std::map<size_t, int> seen;
  for (const auto& row : table->rows) {
    CsvRecord r(*table, row);
    FleetArrival a;
    auto t = r.Number("arrival_s", {0, 1e9, false});
    if (!t.ok()) return t.status();
    a.arrival_s = *t;
    const std::string job = r.Str("job");
    size_t i = 0;
    while (i < fleet.jobs.size() && fleet.jobs[i].name != job) ++i;
    if (i == fleet.jobs.size()) return Bad(r.Where("job"), "no job '" + job + "' in the fleet file");
    a.job = i;
    const int n = ++seen[i];
    a.name = r.Str("name").empty() ? job + (n > 1 ? "#" + std::to_string(n) : "") : r.Str("name");
    auto tokens = r.OptNumber("tokens", {0, 1e18, true});
    if (!tokens.ok()) return tokens.status();
    if (*tokens) {
      if (fleet.jobs[i].kind == FleetJobKind::kServing) return Bad(r.Where("tokens"), "a serving job has no tokens to train");
      a.tokens = **tokens;
    }
    auto deadline = r.OptNumber("deadline_hours", {0, 1e9, true});
    if (!deadline.ok()) return deadline.status();
    if (*deadline) {
      if (fleet.jobs[i].kind == FleetJobKind::kServing) return Bad(r.Where("deadline_hours"), "a serving job has its SLA, not a deadline");
      a.deadline_hours = **deadline;
    }
    out.push_back(a);
  }
  if (out.empty()) return Bad({file, 1, ""}, "the trace has no arrivals");
  std::stable_sort(out.begin(), out.end(), [](const FleetArrival& a, const FleetArrival& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

Result<std::vector<FleetArrival>> LoadFleetTrace(const std::string& path, const Fleet& fleet) {
  auto text = ReadInputFile(path);
  if (!text.ok()) return text.status();
  return ParseFleetTrace(*text, path, fleet);
}

Pool CardsPool(const Pool& pool, const std::vector<FleetGpus>& gpus) {
  Pool out;
  out.name = pool.name;
  out.file = pool.file;
  out.links = pool.links;
  for (size_t gi = 0; gi < pool.groups.size(); ++gi) {
    int64_t n = 0;
    for (const auto& g : gpus)
      if (g.group == gi) n += g.count;
    if (n <= 0) continue;
    PoolGroup g = pool.groups[gi];
    g.nodes_available = 0;
    if (n < g.gpus_per_node) {
      g.gpus_per_node = n;
      g.nodes = 1;
    } else {
      g.nodes = n / g.gpus_per_node;  // allocations are whole nodes past one node (docs/fleet.md)
    }
    out.groups.push_back(g);
  }
  return out;
}

}  // namespace gpuplan
