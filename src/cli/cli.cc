#include "cli.h"
#include "gpuplan/pool.h"

#include "commands.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "gpuplan/job_keys.h"
#include "gpuplan/launch.h"
#include "gpuplan/strings.h"
#include "gpuplan/text_width.h"

namespace gpuplan::cli {

namespace {
bool IsBoolKey(const std::string& key) {
  static const char* kBools[] = {"model.norm_bias", "model.linear_bias", "model.qkv_bias", "model.tied_embeddings",
                                 "model.dropout", "training.flash_attention", "training.fp32_grads", "training.fp32_allreduce", "training.checkpoint_async", "training.checkpoint_full_state",
                                 "parallel.sequence_parallel", "cluster.gpudirect_rdma", "constraints.allow_tp_across_nodes",
                                 "serving.max_throughput"};
  for (const char* k : kBools)
    if (key == k) return true;
  return false;
}

// A switch (a flag without a value) written --name=VALUE is an error: "--json=no" must not print
// JSON, and reading "no" as off would make --json=nope on; one spelling, --json or nothing.
Status SwitchWithValue(const std::string& name, const std::string& value) {
  return Status::BadInput({"command line", 0, "--" + name},
                          "takes no value (write --" + name + ", or leave it out), got --" + name + "=" + value);
}
}  // namespace

Result<Args> ParseArgs(const std::vector<std::string>& argv, const std::vector<FlagSpec>& own, bool job_flags) {
  Args out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& tok = argv[i];
    if (tok.size() < 3 || tok.rfind("--", 0) != 0) {
      if (tok.size() > 1 && tok[0] == '-' && tok != "-")
        return Status::BadInput({"command line", 0, tok}, "unknown option (flags are --name value)");
      out.positional.push_back(tok);
      continue;
    }
    std::string name = tok.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto spec = std::find_if(own.begin(), own.end(), [&](const FlagSpec& f) { return f.name == name; });
    const JobKey* jk = job_flags ? FindJobKeyByFlag(name) : nullptr;
    if (spec == own.end() && jk == nullptr) {
      std::string best;
      size_t best_d = 3;
      for (const auto& f : own)
        if (size_t d = EditDistance(name, f.name); d < best_d) best_d = d, best = f.name;
      if (job_flags)
        for (const auto& k : JobKeys())
          if (size_t d = EditDistance(name, k.flag); d < best_d) best_d = d, best = k.flag;
      return Status::BadInput({"command line", 0, "--" + name},
                              "unknown flag" + (best.empty() ? std::string() : " (did you mean --" + best + "?)"));
    }
    const bool takes_value = spec != own.end() ? spec->takes_value : true;
    if (!takes_value && has_value) return SwitchWithValue(name, value);
    // "--catalog=" (an empty path, a format, a count) is a missing value, not a default.
    if (spec != own.end() && takes_value && has_value && value.empty())
      return Status::BadInput({"command line", 0, "--" + name}, "needs a value (--" + name + "=VALUE or --" + name + " VALUE)");
    const bool optional_value = jk != nullptr && IsBoolKey(jk->key);
    if (takes_value && !has_value) {
      if (i + 1 < argv.size() && (!optional_value || argv[i + 1].rfind("--", 0) != 0)) {
        value = argv[++i];
        // "--out ''" is a missing value as "--out=" is: an empty path, format or name is never a default.
        if (spec != own.end() && value.empty())
          return Status::BadInput({"command line", 0, "--" + name}, "needs a value (an empty string was given)");
      } else if (optional_value) {
        value = "true";
      } else {
        return Status::BadInput({"command line", 0, "--" + name}, "needs a value");
      }
    }
    if (spec != own.end()) out.flags[name].push_back(value);
    else out.job_flags.emplace_back(jk->key, value);
  }
  return out;
}

Result<Job> LoadJob(const Args& args, bool finalize) {
  Job job;
  if (!args.positional.empty()) {
    if (args.positional.size() > 1)
      return Status::BadInput({"command line", 0, args.positional[1]}, "only one job file is accepted");
    auto parsed = ParseJobFile(args.positional[0]);
    if (!parsed.ok()) return parsed.status();
    job = *parsed;
  }
  // Flags override the file; a model source on the command line replaces the file's model.
  for (const auto& [key, value] : args.job_flags) {
    GPUPLAN_RETURN_IF_ERROR(SetJobKey(job, key, value, {"command line", 0, "--" + FindJobKey(key)->flag}));
  }
  // --from FILE (repeatable, read in order): configs read by `gpuplan import` fill in every key the
  // job file and the flags leave unset; a key the job file or a flag sets wins over the configs, and
  // both resolve the configs' "auto" values (docs/export.md "Import"). What was not applied goes to stderr.
  if (auto from = args.flags.find("from"); from != args.flags.end() && !from->second.empty()) {
    auto imported = ImportFiles(from->second, job);
    if (!imported.ok()) return imported.status();
    auto say = [](const char* what, const std::vector<ImportNote>& notes) {
      for (const auto& n : notes)
        std::fprintf(stderr, "gpuplan: --from: %s%s%s: %s%s\n", n.where.file.c_str(),
                     n.where.line > 0 ? (":" + std::to_string(n.where.line)).c_str() : "", n.where.key.empty() ? "" : (": " + n.where.key).c_str(),
                     what, n.message.c_str());
    };
    say("unknown, not applied: ", imported->unknown);
    say("unresolved: ", imported->unresolved);
    const std::string source = job.source;
    job = std::move(imported).value().job;
    job.source = source;
  }
  if (finalize) GPUPLAN_RETURN_IF_ERROR(FinalizeJob(job));
  else GPUPLAN_RETURN_IF_ERROR(ApplyDatasetSize(job));
  return job;
}

Result<Catalog> LoadCatalogFromArgs(const Args& args) {
  CatalogOptions o;
  if (auto it = args.flags.find("catalog"); it != args.flags.end()) o.override_files = it->second;
  return LoadCatalog(o);
}

Result<Context> LoadContext(const Args& args, bool finalize_job) {
  auto job = LoadJob(args, finalize_job);
  if (!job.ok()) return job.status();
  auto catalog = LoadCatalogFromArgs(args);
  if (!catalog.ok()) return catalog.status();
  auto cal = Calibration::Load(args.Get("calibration"));
  if (!cal.ok()) return cal.status();
  return Context{std::move(job).value(), std::move(catalog).value(), std::move(cal).value()};
}

Result<Format> GetFormat(const Args& args, bool allow_html) {
  if (args.Has("json")) return Format::kJson;
  std::string f = args.Get("format", "text");
  if (f == "text") return Format::kText;
  if (f == "md" || f == "markdown") return Format::kMarkdown;
  if (f == "json") return Format::kJson;
  if (f == "csv") return Format::kCsv;
  if (f == "html" && allow_html) return Format::kHtml;
  return Status::BadInput({"command line", 0, "--format"},
                          std::string("expected text|md|json|csv") + (allow_html ? "|html" : "") + ", got '" + f + "'");
}

FlagSpec LangFlag() { return {"lang", true, "en|zh: the language of --format html (default en)"}; }

std::string FormatHelpWithHtml(const std::string& formats) {
  return formats + "|html (default text); html: one self-contained report page (inline SVG plots, no script, no network) "
                   "on stdout, e.g. --format html > report.html";
}

Result<HtmlReportOptions> GetHtmlOptions(const Args& args, Format format) {
  HtmlReportOptions o;
  if (!args.Has("lang")) return o;
  const Location where{"command line", 0, "--lang"};
  if (format != Format::kHtml) return Status::BadInput(where, "is the language of --format html (give --format html, or leave --lang out)");
  auto lang = ParseReportLang(args.Get("lang"), where);
  if (!lang.ok()) return lang.status();
  o.lang = *lang;
  return o;
}

int PrintHtml(const Result<std::string>& page, int exit_code) {
  if (!page.ok()) return Fail(page.status(), false);
  std::fwrite(page->data(), 1, page->size(), stdout);
  return exit_code;
}

const std::vector<FlagSpec>& JobCommandFlags() {
  static const std::vector<FlagSpec> flags = {
      {"json", false, "JSON output (same as --format json)"},
      {"format", true, "text|md|json (default text)"},
      {"catalog", true, "extra catalog CSV (GPUs, links, instances, storage); repeatable"},
      {"calibration", true, "calibration CSV overriding data/calibration.csv and data/efficiency.csv"},
      {"from", true, "a config to start from (ds_config.json, accelerate YAML, torchtitan TOML, Megatron or launch command line, as `gpuplan import` reads it); repeatable; the job file and flags win over it"},
      {"help", false, "this help"},
  };
  return flags;
}

Status RefusePlanFlags(const Args& args, const std::string& command) {
  for (const auto& [key, value] : args.job_flags) {
    if (key.rfind("constraints.", 0) != 0) continue;
    return Status::BadInput({"command line", 0, "--" + FindJobKey(key)->flag},
                            "is a planner constraint (" + key + "): 'gpuplan plan' takes it; 'gpuplan " + command +
                                "' evaluates the one setup given and would ignore it");
  }
  return Status::Ok();
}

bool WantsJson(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--json" || argv[i] == "--format=json") return true;
    if (argv[i] == "--format" && i + 1 < argv.size() && argv[i + 1] == "json") return true;
  }
  return false;
}

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json ErrorToJson(const Status& st) {
  const Location& l = st.location();
  const char* code = st.code() == StatusCode::kBadInput     ? "bad_input"
                     : st.code() == StatusCode::kInfeasible ? "infeasible"
                                                            : "internal";
  nlohmann::json where = nullptr, key = nullptr;
  if (!l.file.empty()) where = l.file + (l.line > 0 ? ":" + std::to_string(l.line) : "");
  if (!l.key.empty()) key = l.key;
  return {{"error", {{"code", code}, {"location", where}, {"key", key}, {"message", st.reason()}}}};
}

namespace {
thread_local const CommandHooks* current_hooks = nullptr;
}  // namespace

ScopedCommandHooks::ScopedCommandHooks(const CommandHooks* hooks) : previous_(current_hooks) { current_hooks = hooks; }
ScopedCommandHooks::~ScopedCommandHooks() { current_hooks = previous_; }
const CommandHooks* CurrentHooks() { return current_hooks; }

void Emit(const std::string& text) {
  if (current_hooks != nullptr && current_hooks->out != nullptr) {
    current_hooks->out->append(text);
    current_hooks->out->push_back('\n');
    return;
  }
  std::printf("%s\n", text.c_str());
}

void EmitJson(const nlohmann::json& j) { Emit(DumpJson(j)); }

PlanOptions HookedPlanOptions(int threads) {
  PlanOptions opt;
  opt.threads = threads;
  if (current_hooks != nullptr) {
    opt.progress = current_hooks->progress;
    opt.progress_total = current_hooks->progress_total;
    opt.cancel = current_hooks->cancel;
    opt.max_items = current_hooks->max_plan_items;
  }
  return opt;
}

int Fail(const Status& st, bool json) {
  if (json) EmitJson(ErrorToJson(st));
  else std::fprintf(stderr, "gpuplan: %s\n", st.ToString().c_str());
  return st.ExitCode() == 0 ? 3 : st.ExitCode();
}

int Fail(const Status& st) { return Fail(st, false); }

namespace {
std::string FlagLines(const std::vector<FlagSpec>& own, const std::vector<std::string>& prefixes, bool job_flags,
                      const std::vector<std::string>& skip) {
  std::string out = "options:\n";
  auto line = [&](const std::string& flag, const std::string& help) {
    std::string f = "  --" + flag;
    if (f.size() < 26) f += std::string(26 - f.size(), ' ');
    else f += "  ";
    out += FitWidth(f + help + "\n", kTextWidth, 28);
  };
  for (const auto& f : own) line(f.name + (f.takes_value ? " V" : ""), f.help);
  if (job_flags) {
    out += "job keys (a job file's keys, as flags; they override the file):\n";
    auto starts = [&](const std::string& key, const std::vector<std::string>& list) {
      for (const auto& p : list)
        if (key.rfind(p, 0) == 0) return true;
      return false;
    };
    for (const auto& k : JobKeys())
      if ((prefixes.empty() || starts(k.key, prefixes)) && !starts(k.key, skip)) line(k.flag + " V", k.key + ": " + k.help);
  }
  return out;
}
}  // namespace

std::string FlagHelp(const std::vector<FlagSpec>& own, bool job_flags, bool constraint_keys) {
  std::vector<std::string> skip = {"serving."};
  if (!constraint_keys) skip.push_back("constraints.");
  return FlagLines(own, {}, job_flags, skip);
}

std::string FlagHelpFor(const std::vector<FlagSpec>& own, const std::vector<std::string>& key_prefixes) {
  return FlagLines(own, key_prefixes, true, {});
}

Status RefuseServingFlags(const Args& args, const std::string& command) {
  for (const auto& [key, value] : args.job_flags) {
    if (key.rfind("serving.", 0) != 0) continue;
    return Status::BadInput({"command line", 0, "--" + FindJobKey(key)->flag},
                            "is a serving key (" + key + "): 'gpuplan serving' takes it; 'gpuplan " + command +
                                "' plans training and would ignore it");
  }
  return Status::Ok();
}

void Appendf(std::string* out, const char* fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  if (n > 0) {
    const size_t at = out->size();
    out->resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(out->data() + at, static_cast<size_t>(n) + 1, fmt, ap2);
    out->resize(at + static_cast<size_t>(n));
  }
  va_end(ap2);
}

void PrintFitted(const std::string& text) { std::fputs(FitWidth(text).c_str(), stdout); }

Result<Pool> LoadPoolFlag(const Args& args, const Catalog& catalog) {
  const std::string path = args.Get("pool");
  auto pool = LoadPoolFile(path, catalog);
  // A file that cannot be read has no line to point at: the flag that named it is the place.
  if (!pool.ok() && pool.status().location().line <= 0 && pool.status().location().file == path)
    return Status::BadInput({"command line", 0, "--pool"}, "'" + path + "': " + pool.status().reason());
  return pool;
}

}  // namespace gpuplan::cli
