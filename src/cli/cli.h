// The thin command-line shell: argument parsing shared by every subcommand.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/csv.h"
#include "gpuplan/html_report.h"
#include "gpuplan/job.h"
#include "gpuplan/plan.h"
#include "gpuplan/report.h"
#include "gpuplan/pool.h"

namespace gpuplan::cli {

// A flag of a subcommand (job keys are flags too; see job_keys.h).
struct FlagSpec {
  std::string name;     // without dashes
  bool takes_value;
  std::string help;
};

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> flags;  // own flags (repeatable)
  std::vector<std::pair<std::string, std::string>> job_flags;  // job keys in command-line order
  bool Has(const std::string& f) const { return flags.count(f) > 0; }
  std::string Get(const std::string& f, const std::string& def = "") const {
    auto it = flags.find(f);
    return it == flags.end() || it->second.empty() ? def : it->second.back();
  }
};

// Parses argv after the subcommand. Unknown flags are errors with a suggestion.
Result<Args> ParseArgs(const std::vector<std::string>& argv, const std::vector<FlagSpec>& own, bool job_flags);

// Job from an optional file plus flags; finalized.
Result<Job> LoadJob(const Args& args, bool finalize = true);
Result<Catalog> LoadCatalogFromArgs(const Args& args);

// What most commands start from: the job (finalized or not), the catalog and the calibration.
struct Context {
  Job job;
  Catalog catalog;
  Calibration cal;
};
Result<Context> LoadContext(const Args& args, bool finalize_job = true);
// --pool POOL.yaml read against the catalog; a file that cannot be read is an error at the flag.
Result<Pool> LoadPoolFlag(const Args& args, const Catalog& catalog);

// Output format from --json / --format. `html` only where the command writes an HTML report (allow_html).
enum class Format { kText, kMarkdown, kJson, kCsv, kHtml };
Result<Format> GetFormat(const Args& args, bool allow_html = false);

// --lang en|zh: the language of --format html (docs/report-html.md). The flag, its help, and the options it
// gives; --lang without --format html, or a language other than en|zh, is bad input at --lang.
FlagSpec LangFlag();
// The --format flag's help for a command that also writes html.
std::string FormatHelpWithHtml(const std::string& formats);
Result<HtmlReportOptions> GetHtmlOptions(const Args& args, Format format);
// Prints an HTML report to stdout and returns `exit_code`, or fails with the report's status.
int PrintHtml(const Result<std::string>& page, int exit_code);

// `constraint_keys` false leaves out the constraints.* (plan-only) job keys; the serving.* keys are
// `gpuplan serving`'s and never listed here.
std::string FlagHelp(const std::vector<FlagSpec>& own, bool job_flags, bool constraint_keys = true);
// The job keys whose dotted name starts with one of `key_prefixes` ("model.", "serving.", "parallel.tp").
std::string FlagHelpFor(const std::vector<FlagSpec>& own, const std::vector<std::string>& key_prefixes);

// memory and estimate refuse the planner's flags (constraints.*: --deadline-hours, --budget-usd,
// --spot, --objective, --clouds, --max-gpus, --top, ...) rather than ignore them.
Status RefusePlanFlags(const Args& args, const std::string& command);

// The training commands (memory, estimate, plan) refuse the serving.* keys (--weights, --concurrency,
// --engine, ...) rather than ignore them.
Status RefuseServingFlags(const Args& args, const std::string& command);

// Errors under --json are JSON too, on stdout (where the JSON result would have gone):
//   {"error": {"code": "bad_input"|"infeasible"|"internal", "location": "file:line"|null,
//              "key": "training.seq_len"|null, "message": "..."}}
// A command reports a failure with Fail(status, WantsJson(argv)): it prints that object (or, without
// --json, "gpuplan: file:line: key: reason" on stderr) and returns the exit code (1, 2 or 3).
bool WantsJson(const std::vector<std::string>& argv);
// Every JSON the CLI prints, indented by 2. Always valid UTF-8: bytes that are not (a Latin-1 file
// name, a key or value from a file) become U+FFFD instead of a JSON-library exception (exit 3).
std::string DumpJson(const nlohmann::json& j);
nlohmann::json ErrorToJson(const Status& st);
int Fail(const Status& st, bool json);

// Where a command's output goes. The CLI prints to stdout; a caller that runs a command in-process (the web
// server, src/server/) installs a CommandHooks on its thread: Emit then appends to `out`, and the plan searches
// report progress to it, stop when `cancel` is set and refuse a search over `max_plan_items` work items.
struct CommandHooks {
  std::string* out = nullptr;                        // Default: none = stdout
  std::atomic<int64_t>* progress = nullptr;          // Default: none (work items done)
  std::atomic<int64_t>* progress_total = nullptr;    // Default: none (work items in all, set when known)
  const std::atomic<bool>* cancel = nullptr;         // Default: none (never cancelled)
  int64_t max_plan_items = 0;                        // Default: 0 = no limit (PlanOptions::max_items)
};
class ScopedCommandHooks {
 public:
  explicit ScopedCommandHooks(const CommandHooks* hooks);
  ~ScopedCommandHooks();
  ScopedCommandHooks(const ScopedCommandHooks&) = delete;
  ScopedCommandHooks& operator=(const ScopedCommandHooks&) = delete;

 private:
  const CommandHooks* previous_;
};
// The hooks installed on this thread, or nullptr (the command line).
const CommandHooks* CurrentHooks();
// A command's machine-readable output: `text` and a newline, to the hooks' string or stdout. Every JSON a
// command prints (its result or its error object) goes through EmitJson.
void Emit(const std::string& text);
void EmitJson(const nlohmann::json& j);
// PlanOptions with `threads`, and the hooks' progress, cancel flag and item limit when installed.
PlanOptions HookedPlanOptions(int threads);

// The infeasible status of a job that does not fit GPU memory (memory and estimate exit 2 with it).
Status DoesNotFit(const MemoryReport& r);

// The flags every job command (memory, estimate, plan) takes.
const std::vector<FlagSpec>& JobCommandFlags();

// Text printers build their output with Appendf, then PrintFitted prints it wrapped to kTextWidth columns
// (gpuplan/text_width.h): the default text output fits a 120-column terminal.
void Appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void PrintFitted(const std::string& text);

}  // namespace gpuplan::cli
