// A fleet's assignment exported to Slurm or to Kubernetes with Kueue (docs/fleet.md "Export").
//
// Kueue's field names were read from kubernetes-sigs/kueue at commit ff69552e79ad (2026-08-22),
// apis/kueue/v1beta1/*_types.go, and hold unchanged in v1beta2 there (v1beta2 is the storage version at that
// commit; v1beta1 is served, deprecated): we write v1beta1, which every Kueue release since 0.3 serves.
//   ResourceFlavor (cluster-scoped): spec.nodeLabels (map, at most 8 entries).
//   ClusterQueue (cluster-scoped): spec.namespaceSelector (LabelSelector; {} = every namespace),
//     spec.resourceGroups[] (at most 16) of {coveredResources: [ResourceName] (1..64, required),
//     flavors: [{name (a ResourceFlavor), resources: [{name, nominalQuota (Quantity, required)}]}] (1..64)};
//     CEL: every flavor lists as many resources as coveredResources, in the same order.
//   LocalQueue (namespaced): spec.clusterQueue (immutable).
//   The queue label: kueue.x-k8s.io/queue-name (pkg/controller/constants: QueueLabel).
//   A pod set requesting a resource its ClusterQueue does not cover is not admitted ("resource X unavailable in
//   ClusterQueue", pkg/scheduler/flavorassigner): the Jobs below request nvidia.com/gpu only.
//   A flavor is chosen for a pod set only when the flavor's nodeLabels match the pod's nodeSelector.
// JobSet (jobset.x-k8s.io/v1alpha2; kubernetes-sigs/jobset at commit 08dfbdfd6827, api/jobset/v1alpha2/jobset_types.go):
// spec.suspend, spec.replicatedJobs[] of {name, replicas, template (a batch/v1 JobTemplateSpec)}. Kueue makes one
// pod set per replicated job (pkg/controller/jobs/jobset: PodSets), so each gets the flavor of its nodeSelector.
// Slurm: a heterogeneous job's components are separated by "#SBATCH hetjob" (sbatch(1), "HETEROGENEOUS JOB
// SUPPORT"); srun --het-group=0,1,... runs a step over several components.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "gpuplan/fleet_export.h"

namespace gpuplan {
namespace {

constexpr const char* kGpuResource = "nvidia.com/gpu";
constexpr const char* kQueueLabel = "kueue.x-k8s.io/queue-name";
constexpr const char* kImagePlaceholder = "REPLACE-WITH-YOUR-IMAGE";
// Slurm kills a job at --time: the expected time x the single-job export's margin (export_wrappers.cc
// kSlurmTimeMargin: the throughput model's error and one restart from the last checkpoint), at least 10 minutes.
constexpr double kSlurmTimeMargin = 1.5;
constexpr double kSlurmTimeMinS = 600;

std::string Str(int64_t v) { return std::to_string(v); }

// A DNS-1123 label (Kubernetes object names): lower-case alphanumerics and '-', at most 63, alphanumeric ends.
std::string DnsName(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "gpuplan" : out;
}

// Slurm names (job, partition, node, gres type): [A-Za-z0-9_.-].
std::string SlurmName(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '-';
  return out.empty() ? "gpuplan" : out;
}

// D-HH:MM:SS of the expected time with the margin, whole minutes rounded up.
std::string SlurmTime(double seconds) {
  const int64_t minutes = static_cast<int64_t>(std::ceil(std::max(seconds * kSlurmTimeMargin, kSlurmTimeMinS) / 60));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:00", static_cast<long long>(minutes / 1440),
                static_cast<long long>(minutes / 60 % 24), static_cast<long long>(minutes % 60));
  return buf;
}

// A part of a job on one group: whole nodes, or a part of one node.
struct Part {
  const PoolGroup* group;
  int64_t nodes, gpus_per_node;
};

std::vector<Part> Parts(const Fleet& fleet, const FleetAssignment& a) {
  std::vector<Part> out;
  for (const auto& g : a.gpus) {
    const PoolGroup& grp = fleet.pool.groups[g.group];
    if (g.count < grp.gpus_per_node) out.push_back({&grp, 1, g.count});
    else out.push_back({&grp, g.count / grp.gpus_per_node, grp.gpus_per_node});
  }
  return out;
}

std::string NodeRange(const PoolGroup& g) {
  return SlurmName(g.name) + "-[001-" + (g.nodes < 10 ? "00" : g.nodes < 100 ? "0" : "") + Str(g.nodes) + "]";
}

std::string Header(const Fleet& fleet, const FleetAssignment& a, const std::string& c) {
  std::string s = c + " gpuplan fleet " + fleet.file + ": job " + a.job + " (" + ToString(a.kind) + ")\n";
  s += c + " layout: " + a.layout + "\n";
  char buf[128];
  std::snprintf(buf, sizeof buf, " expected time: %.2f h from its start (%.2f h after t = 0)\n", a.time_s / 3600, a.start_s / 3600);
  return s + c + buf;
}

// ---- Slurm ------------------------------------------------------------------------------------------------------

Artifact SlurmConf(const Fleet& fleet) {
  std::string s = "# slurm.conf fragment for pool " + fleet.pool.name + " (gpuplan fleet " + fleet.file + ").\n";
  s += "# One partition per pool group; node names are placeholders: put your hosts' names in NodeName and Nodes.\n";
  s += "GresTypes=gpu\n";
  for (const auto& g : fleet.pool.groups) {
    s += "NodeName=" + NodeRange(g) + " Gres=gpu:" + SlurmName(g.gpu) + ":" + Str(g.gpus_per_node) + " State=UNKNOWN";
    s += g.nodes_available > 0 ? "  # " + Str(g.nodes_available) + " of " + Str(g.nodes) + " available\n" : "\n";
  }
  for (const auto& g : fleet.pool.groups)
    s += "PartitionName=" + SlurmName(g.name) + " Nodes=" + NodeRange(g) + " MaxTime=INFINITE State=UP\n";
  s += "\n# gres.conf on each node (or AutoDetect=nvml):\n";
  for (const auto& g : fleet.pool.groups)
    s += "# NodeName=" + NodeRange(g) + " Name=gpu Type=" + SlurmName(g.gpu) + " File=/dev/nvidia[0-" + Str(g.gpus_per_node - 1) + "]\n";
  return {"slurm.conf", s, false};
}

Artifact Sbatch(const Fleet& fleet, const FleetAssignment& a) {
  std::string s = "#!/bin/bash\n";
  const std::vector<Part> parts = Parts(fleet, a);
  for (size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    if (i > 0) s += "#SBATCH hetjob\n";
    if (i == 0) {
      s += "#SBATCH --job-name=" + SlurmName(a.job) + "\n";
      s += "#SBATCH --time=" + SlurmTime(a.time_s) + "  # expected time x " + std::to_string(kSlurmTimeMargin).substr(0, 3) + "\n";
      s += "#SBATCH --output=" + SlurmName(a.job) + "-%j.out\n";
    }
    s += "#SBATCH --partition=" + SlurmName(p.group->name) + "\n";
    s += "#SBATCH --nodes=" + Str(p.nodes) + "\n";
    s += "#SBATCH --ntasks-per-node=1\n";
    s += "#SBATCH --gres=gpu:" + SlurmName(p.group->gpu) + ":" + Str(p.gpus_per_node) + "\n";
    if (p.gpus_per_node == p.group->gpus_per_node) s += "#SBATCH --exclusive\n";
  }
  s += Header(fleet, a, "#");
  s += "# launch.sh: write it with `gpuplan export JOB --to <engine>` for this job and layout, next to this script.\n";
  s += "set -euo pipefail\n";
  if (parts.size() > 1) {
    std::string groups;
    for (size_t i = 0; i < parts.size(); ++i) groups += (i ? "," : "") + Str(static_cast<int64_t>(i));
    s += "srun --het-group=" + groups + " bash launch.sh\n";
  } else {
    s += "srun bash launch.sh\n";
  }
  return {SlurmName(a.job) + ".sbatch", s, true};
}

// ---- Kueue ------------------------------------------------------------------------------------------------------

std::string Emit(const YAML::Emitter& y) { return std::string(y.c_str()) + "\n"; }

Artifact Flavors(const Fleet& fleet, const FleetExportOptions& o) {
  std::string s = "# One Kueue ResourceFlavor per pool group; label each group's nodes " + o.node_label + "=<group>.\n";
  for (const auto& g : fleet.pool.groups) {
    YAML::Emitter y;
    y << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "kueue.x-k8s.io/v1beta1";
    y << YAML::Key << "kind" << YAML::Value << "ResourceFlavor";
    y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << DnsName(g.name) << YAML::EndMap;
    y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "nodeLabels" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << o.node_label << YAML::Value << DnsName(g.name) << YAML::EndMap << YAML::EndMap << YAML::EndMap;
    s += "---\n" + Emit(y);
  }
  return {"resource-flavors.yaml", s, false};
}

std::string QueueName(const Fleet& fleet) { return DnsName(fleet.pool.name + "-fleet"); }

Artifact Queues(const Fleet& fleet, const FleetExportOptions& o) {
  YAML::Emitter y;
  y << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "kueue.x-k8s.io/v1beta1";
  y << YAML::Key << "kind" << YAML::Value << "ClusterQueue";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << QueueName(fleet) << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "namespaceSelector" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::EndMap;
  y << YAML::Key << "resourceGroups" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "coveredResources" << YAML::Value << YAML::Flow << YAML::BeginSeq << kGpuResource << YAML::EndSeq;
  y << YAML::Key << "flavors" << YAML::Value << YAML::BeginSeq;
  for (const auto& g : fleet.pool.groups) {
    y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << DnsName(g.name);
    y << YAML::Key << "resources" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    y << YAML::Key << "name" << YAML::Value << kGpuResource;
    y << YAML::Key << "nominalQuota" << YAML::Value << g.GpusUsable() << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  YAML::Emitter l;
  l << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "kueue.x-k8s.io/v1beta1";
  l << YAML::Key << "kind" << YAML::Value << "LocalQueue";
  l << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << QueueName(fleet);
  l << YAML::Key << "namespace" << YAML::Value << o.namespace_name << YAML::EndMap;
  l << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "clusterQueue" << YAML::Value << QueueName(fleet);
  l << YAML::EndMap << YAML::EndMap;
  const std::string s = "# The pool's cards as one ClusterQueue (a quota per flavor = the group's usable GPUs) and its LocalQueue.\n---\n" +
                        Emit(y) + "---\n" + Emit(l);
  return {"cluster-queue.yaml", s, false};
}

// A batch/v1 Job's spec for one part: indexed, one pod per node, the part's GPUs per pod, its flavor's node label.
void JobSpec(YAML::Emitter& y, const Part& p, const FleetExportOptions& o, const std::string& container) {
  y << YAML::BeginMap;
  y << YAML::Key << "parallelism" << YAML::Value << p.nodes << YAML::Key << "completions" << YAML::Value << p.nodes;
  y << YAML::Key << "completionMode" << YAML::Value << "Indexed";
  y << YAML::Key << "backoffLimit" << YAML::Value << 0;
  y << YAML::Key << "template" << YAML::Value << YAML::BeginMap << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "restartPolicy" << YAML::Value << "Never";
  y << YAML::Key << "nodeSelector" << YAML::Value << YAML::BeginMap << YAML::Key << o.node_label << YAML::Value
    << DnsName(p.group->name) << YAML::EndMap;
  y << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << container;
  y << YAML::Key << "image" << YAML::Value << YAML::DoubleQuoted << (o.image.empty() ? kImagePlaceholder : o.image);
  y << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq << "bash" << "launch.sh" << YAML::EndSeq;
  y << YAML::Key << "resources" << YAML::Value << YAML::BeginMap << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << kGpuResource << YAML::Value << p.gpus_per_node << YAML::EndMap << YAML::EndMap;
  y << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndMap << YAML::EndMap;
}

Artifact KueueJob(const Fleet& fleet, const FleetAssignment& a, const FleetExportOptions& o) {
  const std::vector<Part> parts = Parts(fleet, a);
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << (parts.size() > 1 ? "jobset.x-k8s.io/v1alpha2" : "batch/v1");
  y << YAML::Key << "kind" << YAML::Value << (parts.size() > 1 ? "JobSet" : "Job");
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << DnsName(a.job);
  y << YAML::Key << "namespace" << YAML::Value << o.namespace_name;
  y << YAML::Key << "labels" << YAML::Value << YAML::BeginMap << YAML::Key << kQueueLabel << YAML::Value << QueueName(fleet)
    << YAML::EndMap << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value;
  if (parts.size() == 1) {
    // Kueue admits a suspended Job and unsuspends it; JobSpec's keys follow.
    YAML::Emitter inner;
    JobSpec(inner, parts[0], o, DnsName(a.job));
    YAML::Node spec = YAML::Load(inner.c_str());
    spec["suspend"] = true;
    y << spec;
  } else {
    y << YAML::BeginMap << YAML::Key << "suspend" << YAML::Value << true;
    y << YAML::Key << "replicatedJobs" << YAML::Value << YAML::BeginSeq;
    for (const Part& p : parts) {
      y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << DnsName(p.group->name);
      y << YAML::Key << "replicas" << YAML::Value << 1;
      y << YAML::Key << "template" << YAML::Value << YAML::BeginMap << YAML::Key << "spec" << YAML::Value;
      JobSpec(y, p, o, DnsName(a.job));
      y << YAML::EndMap << YAML::EndMap;
    }
    y << YAML::EndSeq << YAML::EndMap;
  }
  y << YAML::EndMap;
  return {"job-" + DnsName(a.job) + ".yaml", Header(fleet, a, "#") + "---\n" + Emit(y), false};
}

Artifact Readme(const Fleet& fleet, const FleetSchedule& schedule, FleetExportFormat f) {
  std::string s = "gpuplan fleet " + fleet.file + " (" + schedule.policy + "), exported for " +
                  (f == FleetExportFormat::kSlurm ? "Slurm" : "Kubernetes with Kueue") + ".\n\n";
  if (f == FleetExportFormat::kSlurm)
    s += "slurm.conf: a partition per pool group (add it to your slurm.conf with your hosts' names).\n"
         "<job>.sbatch: one per placed job: sbatch <job>.sbatch, with launch.sh beside it.\n";
  else
    s += "kubectl apply -f resource-flavors.yaml -f cluster-queue.yaml, then each job-<job>.yaml.\n"
         "Label each node with its pool group first (" + FleetExportOptions{}.node_label + "=<group>).\n";
  for (const auto& a : schedule.assignments)
    if (a.gpus.empty()) s += "not exported: " + a.job + ": " + a.note + "\n";
  return {"README.txt", s, false};
}

}  // namespace

std::optional<FleetExportFormat> ParseFleetExportFormat(const std::string& name) {
  if (name == "slurm") return FleetExportFormat::kSlurm;
  if (name == "kueue" || name == "kubernetes") return FleetExportFormat::kKueue;
  return std::nullopt;
}

Result<std::vector<Artifact>> FleetArtifacts(FleetExportFormat format, const Fleet& fleet, const FleetSchedule& schedule,
                                             const FleetExportOptions& options) {
  std::vector<Artifact> out;
  out.push_back(Readme(fleet, schedule, format));
  if (format == FleetExportFormat::kSlurm) out.push_back(SlurmConf(fleet));
  else out.push_back(Flavors(fleet, options)), out.push_back(Queues(fleet, options));
  std::set<std::string> names;
  for (const auto& a : schedule.assignments) {
    if (a.gpus.empty()) continue;
    Artifact f = format == FleetExportFormat::kSlurm ? Sbatch(fleet, a) : KueueJob(fleet, a, options);
    if (!names.insert(f.name).second)
      return Status::BadInput({fleet.file, 0, "jobs.name"}, "two jobs export to the same file " + f.name + ": rename one");
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace gpuplan
