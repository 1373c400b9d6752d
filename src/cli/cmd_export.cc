// PLACEHOLDER (issue 10, being written by the lead): gpuplan export.
#include "cli.h"
#include "commands.h"
namespace gpuplan::cli {
int CmdExport(const std::vector<std::string>& argv) { return Fail(Status::Internal("export is not built yet"), WantsJson(argv)); }
}  // namespace gpuplan::cli
