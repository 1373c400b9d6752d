// PLACEHOLDER (issue 10, being written): gpuplan import.
#include "cli.h"
#include "commands.h"
namespace gpuplan::cli {
int CmdImport(const std::vector<std::string>& argv) { return Fail(Status::Internal("import is not built yet"), WantsJson(argv)); }
}  // namespace gpuplan::cli
