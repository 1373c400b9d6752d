// gpuplan import FILE... [--model ...]: the job that existing configs describe, as a job file (YAML)
// on stdout, with what was read, what was not and how each "auto" was resolved as comments on top.
// The library does the reading (src/launch/import.cc); this is the printer.
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/job_keys.h"
#include "gpuplan/launch.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& ImportFlags() {
  static const std::vector<FlagSpec> flags = {
      {"json", false, "JSON output: {job, files, unknown, unresolved, notes}"},
      {"help", false, "this help"},
  };
  return flags;
}

bool HasModel(const Job& j) { return j.arch.layers > 0 || j.arch.params_override > 0; }

std::string Where(const Location& l) {
  std::string s = l.file.empty() ? "command line" : l.file;
  if (l.line > 0) s += ":" + std::to_string(l.line);
  return s;
}

std::string NoteLine(const ImportNote& n) { return Where(n.where) + ": " + (n.where.key.empty() ? "" : n.where.key + ": ") + n.message; }

nlohmann::json NotesJson(const std::vector<ImportNote>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& n : v) {
    nlohmann::json loc = nullptr, key = nullptr;
    if (!n.where.file.empty()) loc = Where(n.where);
    if (!n.where.key.empty()) key = n.where.key;
    a.push_back({{"location", loc}, {"key", key}, {"message", n.message}});
  }
  return a;
}

// The job file without its model section when the files gave no model (model keys of an empty
// shape would not read back); the header says to add --model.
std::string YamlWithoutModel(const std::string& yaml) {
  std::string out;
  bool skipping = false;
  size_t start = 0;
  while (start < yaml.size()) {
    size_t end = yaml.find('\n', start);
    if (end == std::string::npos) end = yaml.size();
    const std::string line = yaml.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line[0] != ' ') skipping = line == "model:";
    if (!skipping) out += line + "\n";
  }
  return out;
}

void PrintComments(const ImportResult& r) {
  std::printf("# gpuplan import: the job these files describe (keys not given keep gpuplan's defaults)\n");
  for (const auto& [path, kind] : r.files) std::printf("# read %s (%s)\n", path.c_str(), ToString(kind).c_str());
  if (!HasModel(r.job)) std::printf("# no model in these files: add --model NAME (gpuplan models) or a model: section\n");
  auto block = [](const char* title, const std::vector<ImportNote>& v) {
    if (v.empty()) return;
    std::printf("# %s:\n", title);
    for (const auto& n : v) std::printf("#   %s\n", NoteLine(n).c_str());
  };
  block("unknown (gpuplan does not model these keys; listed, not applied)", r.unknown);
  block("unresolved (no input gives these; the job keeps gpuplan's default)", r.unresolved);
  block("notes", r.notes);
}

}  // namespace

int CmdImport(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, ImportFlags(), true);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf(
        "usage: gpuplan import FILE... [--model NAME] [job flags] [--json]\n\n"
        "Reads a DeepSpeed ds_config.json, an accelerate config YAML, a torchtitan TOML, a Megatron-LM command line or a\n"
        "torchrun / deepspeed / accelerate launch line (each recognised by its content) into one job, printed as a job file.\n"
        "Job flags resolve what the files leave open (\"auto\", the number of GPUs, the model); a flag wins over a file.\n"
        "memory, estimate and plan take the same files with --from FILE.\n\n%s",
        FlagHelp(ImportFlags(), true).c_str());
    return 0;
  }
  if (args->positional.empty())
    return Fail(Status::BadInput({"command line", 0, ""}, "give the files to import: gpuplan import FILE... [--model NAME]"), json);
  Job base;
  for (const auto& [key, value] : args->job_flags) {
    const Status st = SetJobKey(base, key, value, {"command line", 0, "--" + FindJobKey(key)->flag});
    if (!st.ok()) return Fail(st, json);
  }
  auto r = ImportFiles(args->positional, base);
  if (!r.ok()) return Fail(r.status(), json);
  // The job as memory/estimate would take it: a layout or batch that does not hold is an error here
  // (at the file:line that gave it), not a surprise later.
  if (HasModel(r->job)) {
    Job check = r->job;
    if (Status st = FinalizeJob(check); !st.ok()) return Fail(st, json);
  }
  if (json) {
    nlohmann::json job = nlohmann::json::object();
    for (const auto& [k, v] : JobToKeys(r->job))
      if (HasModel(r->job) || k.rfind("model.", 0) != 0) job[k] = v;
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, kind] : r->files) files.push_back({{"path", path}, {"kind", ToString(kind)}});
    nlohmann::json out = {{"job", job}, {"files", files}, {"unknown", NotesJson(r->unknown)},
                          {"unresolved", NotesJson(r->unresolved)}, {"notes", NotesJson(r->notes)}};
    EmitJson(out);
    return 0;
  }
  PrintComments(*r);
  const std::string yaml = JobToYaml(r->job);
  std::printf("%s", (HasModel(r->job) ? yaml : YamlWithoutModel(yaml)).c_str());
  return 0;
}

}  // namespace gpuplan::cli
