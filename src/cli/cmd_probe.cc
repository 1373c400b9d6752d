// PLACEHOLDER (issue 11, being written): gpuplan probe.
#include "cli.h"
#include "commands.h"
namespace gpuplan::cli {
int CmdProbe(const std::vector<std::string>& argv) { return Fail(Status::Internal("probe is not built yet"), WantsJson(argv)); }
}  // namespace gpuplan::cli
