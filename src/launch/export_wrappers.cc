// PLACEHOLDER (issue 10, being written): slurm, kubernetes, skypilot.
#include "gpuplan/launch.h"
namespace gpuplan {
Result<std::vector<Artifact>> ExportWrapper(ExportFormat, ExportFormat, const LaunchPlan&, const Catalog&) {
  return Status::Internal("wrapper export is not built yet");
}
}  // namespace gpuplan
