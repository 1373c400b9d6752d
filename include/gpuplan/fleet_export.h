// A fleet's assignment as the schedulers users already run (docs/fleet.md "Export"): Slurm (a partition per pool
// group, an sbatch script per job with --partition/--nodes/--gres, heterogeneous jobs across groups; a slurm.conf
// fragment) or Kubernetes with Kueue (a ResourceFlavor per group, one ClusterQueue with a quota per flavor, a
// LocalQueue, and per job a batch/v1 Job, or a JobSet when its cards span groups).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/fleet.h"
#include "gpuplan/launch.h"

namespace gpuplan {

enum class FleetExportFormat { kSlurm, kKueue };
std::optional<FleetExportFormat> ParseFleetExportFormat(const std::string& name);  // slurm | kueue

struct FleetExportOptions {
  std::string image;                                       // Default: "" = a placeholder to replace (Kubernetes only)
  std::string namespace_name = "default";                  // Default: "default" (the LocalQueue's and Jobs')
  std::string node_label = "gpuplan.io/pool-group";        // Default: the node label naming a node's pool group
};

// Every file of the export: the placed jobs of `schedule` (jobs never placed are listed in README.txt only).
Result<std::vector<Artifact>> FleetArtifacts(FleetExportFormat format, const Fleet& fleet, const FleetSchedule& schedule,
                                             const FleetExportOptions& options = {});

}  // namespace gpuplan
