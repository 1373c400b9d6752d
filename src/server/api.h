// The web API's routes as command invocations (docs/web.md): a request body becomes the argv and the posted
// files of the CLI command that answers it, run in-process with its output captured. The server computes
// nothing itself; the answer is the bytes the command prints under --json.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpuplan/status.h"

namespace gpuplan::server {

// The largest request body the API reads (bytes); a larger one is answered 413. Real bodies (a job, a pool,
// a config.json, a PLAN.json, a few tool outputs) are a few KiB to a few hundred KiB.
inline constexpr size_t kMaxBodyBytes = size_t{1} << 20;

// The most work items (instance type x node count x variant) one non-streamed plan search may cover
// (`gpuplan web --max-plan-candidates N`); a streamed request (POST /api/plan?stream=1) has no limit and can be
// cancelled by closing the connection. 20000 is about 3x the largest example's search
// (examples/175b-pretraining.yaml: 7050 items, 1.5 s on 2 threads).
inline constexpr int64_t kDefaultMaxPlanItems = 20000;

// The most tool outputs one POST /api/verify reads, and the longest name one may have.
inline constexpr size_t kMaxVerifyOutputs = 64;
inline constexpr size_t kMaxOutputNameChars = 100;

// A command run for a request: its argv (always with --json) and the files it reads, by the names in argv.
struct Invocation {
  std::string command;                        // memory | estimate | plan | serving | export | verify | fleet | ...
  std::vector<std::string> argv;              // after the subcommand, as `gpuplan COMMAND ...` takes it
  std::map<std::string, std::string> files;   // posted content: job.yaml, pool.yaml, plan.json, ...
  bool search = false;                        // a catalog or pool search (plan, serving --plan, export, fleet)
};

// The POST routes: memory, estimate, plan, serving, export, verify, fleet.
const std::vector<std::string>& JobRoutes();

// The invocation for POST /api/<route> with this body (JSON; docs/web.md "Requests"). A malformed body, an
// unknown field or flag, a flag that names a file and a value of the wrong type are bad input at
// {"request", 0, "flags.ledger"}-style locations.
Result<Invocation> BuildInvocation(const std::string& route, const std::string& body);

// How the command ran: its exit code and what it printed (the CLI's --json output, newline included).
struct CommandOutput {
  int exit_code = 3;
  std::string out;
};

// Progress, cancellation and the search limit of one run (all optional).
struct RunControl {
  std::atomic<int64_t>* progress = nullptr;
  std::atomic<int64_t>* progress_total = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  int64_t max_plan_items = 0;                 // 0 = no limit
};

// Runs the invocation on this thread: its files visible to the command's readers and nothing else (no path is
// opened), its output captured. Never throws: an exception is an internal error (exit 3) in the CLI's JSON.
CommandOutput RunInvocation(const Invocation& inv, const RunControl& control);

// GET routes: `gpuplan catalog KIND --json` (gpus, links, instances, storage) and `gpuplan models --json`.
CommandOutput RunCatalog(const std::string& kind);
CommandOutput RunModels();

// The HTTP status of a command's exit code: 0 -> 200, 1 -> 400, 2 -> 422, anything else -> 500.
int HttpStatusForExit(int exit_code);

// The CLI's --json error object for a request the server refuses before any command runs.
std::string ErrorBody(const Status& st);

}  // namespace gpuplan::server
