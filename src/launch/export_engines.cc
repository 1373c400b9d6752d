// PLACEHOLDER (issue 10, being written): the engine exporters.
#include "gpuplan/launch.h"
namespace gpuplan {
std::string CannotExpress(ExportFormat, const LaunchPlan&) { return ""; }
std::vector<std::pair<std::string, std::string>> PinsForFormat(ExportFormat) { return {}; }
Result<std::vector<Artifact>> ExportEngine(ExportFormat, const LaunchPlan&, const Catalog&) {
  return Status::Internal("engine export is not built yet");
}
}  // namespace gpuplan
