// PLACEHOLDER (issue 11, being written): gpuplan ledger.
#include "cli.h"
#include "commands.h"
namespace gpuplan::cli {
int CmdLedger(const std::vector<std::string>& argv) { return Fail(Status::Internal("ledger is not built yet"), WantsJson(argv)); }
}  // namespace gpuplan::cli
