// PLACEHOLDER (issue 11, being written): gpuplan verify.
#include "cli.h"
#include "commands.h"
namespace gpuplan::cli {
int CmdVerify(const std::vector<std::string>& argv) { return Fail(Status::Internal("verify is not built yet"), WantsJson(argv)); }
}  // namespace gpuplan::cli
