#include "server/api.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "gpuplan/input_file.h"
#include "gpuplan/job_keys.h"

namespace gpuplan::server {

namespace {

using Json = nlohmann::json;
using CommandFn = int (*)(const std::vector<std::string>&);

// A command flag a route accepts from "flags" (job keys are accepted by the routes that take a job).
struct RouteFlag {
  const char* name;
  bool is_switch;  // --name alone (true) or left out (false); else --name=VALUE
};

// A posted file: the body field, the name the command reads it by and the flag that names it ("" = positional,
// kReferenced = not in argv: another posted file names it, as a fleet's `pool: pool.yaml`).
struct PostedFile {
  const char* field;
  const char* file_name;   // for an object value; a string value is read as YAML/JSON text under text_name
  const char* text_name;
  const char* flag;
};

struct Route {
  const char* name;
  CommandFn command;
  std::vector<RouteFlag> flags;
  bool job_keys;                 // job keys as flags (--gpu, --tokens, ...)
  std::vector<PostedFile> files; // in argv order
  std::vector<const char*> required_any;  // at least one of these fields
  bool search;
};

constexpr const char* kReferenced = "-";

const PostedFile kJob{"job", "job.json", "job.yaml", ""};
const PostedFile kPool{"pool", "pool.json", "pool.yaml", "pool"};
// config.json content: the model (as --config config.json, the name a checkpoint folder gives it).
const PostedFile kConfig{"config", "config.json", "config.json", "config"};

const std::vector<Route>& Routes() {
  static const std::vector<Route> routes = {
      {"memory", cli::CmdMemory, {}, true, {kJob, kConfig}, {"job"}, false},
      {"estimate", cli::CmdEstimate, {{"ops", true}}, true, {kJob, kPool, kConfig}, {"job"}, false},
      {"plan", cli::CmdPlan, {{"engine", false}}, true, {kJob, kPool, kConfig}, {"job"}, true},
      {"serving", cli::CmdServing, {{"plan", true}}, true, {kJob, kConfig}, {"job"}, true},
      {"export",
       cli::CmdExport,
       {{"to", false}, {"engine", false}, {"plan", false}, {"instance", false}, {"script", false}, {"script-arg", false},
        {"port", false}, {"job-name", false}, {"image", false}, {"engine-version", false}, {"serving", true}},
       true,
       {kJob, {"plan", "plan.json", "plan.json", ""}, kConfig},
       {"job", "plan"},
       true},
      {"verify",
       cli::CmdVerify,
       {{"plan-row", false}, {"line-rate-gbps", false}},
       false,
       {{"job", "job.json", "job.yaml", "plan"}, {"plan", "plan.json", "plan.json", "plan"}},
       {"outputs"},
       false},
      {"fleet", cli::CmdFleet, {}, false,
       {{"fleet", "fleet.json", "fleet.yaml", ""}, {"pool", "pool.json", "pool.yaml", kReferenced},
        {"trace", "trace.csv", "trace.csv", "simulate"}},
       {"fleet"}, true},
  };
  return routes;
}

Status Bad(const std::string& key, const std::string& why) { return Status::BadInput({"request", 0, key}, why); }

// A flag's value as the command line spells it; nullopt-like "" with ok=false for a type the CLI has no spelling for.
Result<std::string> FlagValue(const Json& v, const std::string& key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) return Bad(key, "must be a finite number");
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    return std::string(buf);
  }
  return Bad(key, "must be a string, a number or a boolean (a list gives the flag once per item)");
}

// "flags": {"gpu": "h100-sxm", "tokens": 2e9, "ops": true} -> --gpu=h100-sxm --tokens=2e9 --ops.
Status AddFlags(const Route& route, const Json& flags, Invocation& inv) {
  if (!flags.is_object()) return Bad("flags", "must be an object of flag names (without dashes) and values");
  for (const auto& [name, value] : flags.items()) {
    const std::string key = "flags." + name;
    const RouteFlag* own = nullptr;
    for (const auto& f : route.flags)
      if (name == f.name) own = &f;
    const JobKey* jk = route.job_keys ? FindJobKeyByFlag(name) : nullptr;
    if (jk != nullptr && jk->key == "model.config")
      return Bad(key, "names a file: post the config.json content as the body's \"config\" field");
    if (own == nullptr && jk == nullptr) {
      for (const PostedFile& f : route.files)
        if (f.flag[0] != '\0' && std::string(f.flag) != kReferenced && name == f.flag)
          return Bad(key, std::string("names a file: post its content as the body's \"") + f.field + "\" field");
      return Bad(key, "not accepted by POST /api/" + std::string(route.name) +
                          " (flags that name files or write anything are not available over HTTP; docs/web.md lists the flags)");
    }
    const std::vector<Json> values = value.is_array() ? value.get<std::vector<Json>>() : std::vector<Json>{value};
    for (const Json& v : values) {
      if (own != nullptr && own->is_switch) {
        if (!v.is_boolean()) return Bad(key, "is a switch: true or false");
        if (v.get<bool>()) inv.argv.push_back("--" + name);
        continue;
      }
      auto text = FlagValue(v, key);
      if (!text.ok()) return text.status();
      // --name=VALUE: a value that starts with "--" stays a value.
      inv.argv.push_back("--" + name + "=" + *text);
    }
  }
  return Status::Ok();
}

// A posted file: an object or list is dumped as JSON (which the YAML readers read), a string is the file's text.
Status AddFile(const PostedFile& f, const Json& value, Invocation& inv) {
  std::string name, text;
  if (value.is_string()) {
    name = f.text_name;
    text = value.get<std::string>();
  } else if (value.is_object() || value.is_array()) {
    name = f.file_name;
    text = cli::DumpJson(value) + "\n";
  } else {
    return Bad(f.field, "must be an object (the file's keys) or a string (the file's text)");
  }
  inv.files[name] = std::move(text);
  if (std::string(f.flag) == kReferenced) return Status::Ok();
  if (f.flag[0] == '\0') inv.argv.push_back(name);
  else inv.argv.push_back("--" + std::string(f.flag) + "=" + name);
  return Status::Ok();
}

// "outputs": {"nccl.txt": "...", ...}: the tool outputs verify reads, in name order.
Status AddOutputs(const Json& outputs, Invocation& inv) {
  if (!outputs.is_object() || outputs.empty())
    return Bad("outputs", "must be an object of file names and their text (the tool outputs to read)");
  if (outputs.size() > kMaxVerifyOutputs) return Bad("outputs", "at most " + std::to_string(kMaxVerifyOutputs) + " outputs");
  for (const auto& [name, text] : outputs.items()) {
    const std::string key = "outputs." + name;
    bool ok = !name.empty() && name.size() <= kMaxOutputNameChars && name[0] != '.' && name[0] != '-';
    for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
    if (!ok)
      return Bad(key, "a name of letters, digits, '.', '_' and '-' (1.." + std::to_string(kMaxOutputNameChars) +
                          " characters, not starting with '.' or '-')");
    if (inv.files.count(name)) return Bad(key, "the same name as another posted file");
    if (!text.is_string()) return Bad(key, "must be the output's text");
    inv.files[name] = text.get<std::string>();
    inv.argv.push_back(name);
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& JobRoutes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& r : Routes()) n.push_back(r.name);
    return n;
  }();
  return names;
}

Result<Invocation> BuildInvocation(const std::string& route_name, const std::string& body) {
  const Route* route = nullptr;
  for (const auto& r : Routes())
    if (route_name == r.name) route = &r;
  if (route == nullptr) return Bad("", "no such route: POST /api/" + route_name);
  GPUPLAN_RETURN_IF_ERROR(CheckNoNulBytes(body, "request"));
  GPUPLAN_RETURN_IF_ERROR(CheckJsonDepth(body, {"request", 0, ""}));
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& ex) {  // a syntax error, a number beyond double (1e999)
    return Bad("", std::string("not JSON: ") + ex.what());
  }
  if (!j.is_object()) return Bad("", "the body must be a JSON object (docs/web.md \"Requests\")");
  std::set<std::string> known = {"flags"};
  for (const auto& f : route->files) known.insert(f.field);
  if (route_name == "verify") known.insert("outputs");
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return Bad(key, "unknown field for POST /api/" + route_name + " (expected " + list + ")");
    }
  bool any = false;
  for (const char* f : route->required_any) any = any || j.contains(f);
  if (!any) {
    std::string list;
    for (const char* f : route->required_any) list += (list.empty() ? "\"" : " or \"") + std::string(f) + "\"";
    return Bad(route->required_any.front(), "required: " + list);
  }
  Invocation inv;
  inv.command = route_name;
  inv.search = route->search;
  inv.argv.push_back("--json");
  if (route_name == "export" && j.contains("job") && j.contains("plan"))
    return Bad("plan", "give a job or a PLAN.json, not both");
  if (route_name == "verify" && j.contains("job") && j.contains("plan"))
    return Bad("plan", "compare with a job or a PLAN.json, not both");
  for (const auto& f : route->files)
    if (j.contains(f.field)) GPUPLAN_RETURN_IF_ERROR(AddFile(f, j.at(f.field), inv));
  if (route_name == "verify") GPUPLAN_RETURN_IF_ERROR(AddOutputs(j.at("outputs"), inv));
  if (j.contains("flags")) GPUPLAN_RETURN_IF_ERROR(AddFlags(*route, j.at("flags"), inv));
  if (route_name == "serving") {
    const bool plan = j.contains("flags") && j["flags"].is_object() && j["flags"].value("plan", false) == true;
    inv.search = plan;
  }
  if (route_name == "export") {
    // A pinned job (cluster.num_gpus) is exported as it is; else the planner searches.
    inv.search = true;
  }
  return inv;
}

CommandOutput RunInvocation(const Invocation& inv, const RunControl& control) {
  CommandOutput out;
  CommandFn fn = nullptr;
  for (const auto& r : Routes())
    if (inv.command == r.name) fn = r.command;
  if (inv.command == "catalog") fn = cli::CmdCatalog;
  if (inv.command == "models") fn = cli::CmdModels;
  if (fn == nullptr) {
    out.out = ErrorBody(Status::Internal("no command " + inv.command));
    return out;
  }
  cli::CommandHooks hooks;
  hooks.out = &out.out;
  hooks.progress = control.progress;
  hooks.progress_total = control.progress_total;
  hooks.cancel = control.cancel;
  hooks.max_plan_items = control.max_plan_items;
  try {
    const ScopedInputOverlay files(inv.files);
    const cli::ScopedCommandHooks scoped(&hooks);
    out.exit_code = fn(inv.argv);
  } catch (const std::exception& ex) {
    out.exit_code = 3;
    out.out = ErrorBody(Status::Internal(std::string("internal error: ") + ex.what()));
  }
  if (out.out.empty()) {  // every command prints one JSON document under --json; none is a bug
    out.exit_code = 3;
    out.out = ErrorBody(Status::Internal("the command printed nothing"));
  }
  return out;
}

CommandOutput RunCatalog(const std::string& kind) {
  Invocation inv;
  inv.command = "catalog";
  inv.argv = {kind, "--json"};
  return RunInvocation(inv, {});
}

CommandOutput RunModels() {
  Invocation inv;
  inv.command = "models";
  inv.argv = {"--json"};
  return RunInvocation(inv, {});
}

int HttpStatusForExit(int exit_code) {
  switch (exit_code) {
    case 0: return 200;
    case 1: return 400;
    case 2: return 422;
    default: return 500;
  }
}

std::string ErrorBody(const Status& st) { return cli::DumpJson(cli::ErrorToJson(st)) + "\n"; }

}  // namespace gpuplan::server
