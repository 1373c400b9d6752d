// PLACEHOLDER (issue 10, being written): the fabric environment (data/fabric_env.csv).
#include "gpuplan/launch.h"
namespace gpuplan {
Result<Artifact> FabricEnv(const LaunchPlan&, const Catalog&) { return Status::Internal("fabric env is not built yet"); }
}  // namespace gpuplan
