// The wrappers around an engine's files (docs/export.md "Wrappers"): a Slurm batch script, a
// Kubeflow TrainJob (and the legacy PyTorchJob) with a ConfigMap carrying the engine's files, and
// a SkyPilot task. Every key comes from the LaunchPlan or from data/fabric_env.csv.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/launch.h"
#include "gpuplan/quote.h"
#include "gpuplan/report.h"
#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

// Slurm kills a job at --time: the limit is the plan's expected time x this margin, so that the
// throughput model's error (docs/validation.md) and one restart from the last checkpoint fit in
// it, rounded up to whole minutes and at least kSlurmTimeMinS.
constexpr double kSlurmTimeMargin = 1.5;
constexpr double kSlurmTimeMinS = 600;

constexpr const char* kMountDir = "/gpuplan";                  // where the ConfigMap is mounted in the pods
constexpr const char* kImagePlaceholder = "REPLACE-WITH-YOUR-IMAGE";  // a container image with torch and the script

std::string Str(int64_t v) { return std::to_string(v); }

Result<std::vector<FabricSetting>> Fabric(const LaunchPlan& plan, const Catalog& catalog) {
  auto t = FabricTable(plan);
  if (!t.ok()) return t.status();
  return FabricSettings(plan, catalog, t->first, t->second);
}

const FabricSetting* Find(const std::vector<FabricSetting>& s, FabricAction a) {
  for (const auto& x : s)
    if (x.action == a) return &x;
  return nullptr;
}

// The environment entries a pod or a SkyPilot task can carry as plain name/value pairs; the
// prepend and source rows need a shell and stay in fabric.env, which launch.sh sources.
std::vector<std::pair<std::string, std::string>> PlainEnv(const std::vector<FabricSetting>& s) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& x : s)
    if (x.action == FabricAction::kExport || x.action == FabricAction::kDefault) out.emplace_back(x.variable, x.value);
  return out;
}

// The RDMA device resource per node: name and count ("" = none).
// The pod's devices per node: the accelerators' resource, and the RDMA device's name and count
// ("" = none).
struct Device {
  std::string gpu_resource;
  std::string name;
  int64_t count = 0;
  std::string why;
};
Result<Device> PodDevices(const LaunchPlan& plan, const std::vector<FabricSetting>& s) {
  const FabricSetting* g = Find(s, FabricAction::kK8sGpuResource);
  if (g == nullptr)
    return Status::BadInput({plan.fabric_env_file.empty() ? "data/fabric_env.csv" : plan.fabric_env_file, 0, "k8s-gpu-resource"},
                            "no k8s-gpu-resource row matches GPU '" + plan.job.cluster.gpu + "': the pod's accelerator resource is unknown");
  const FabricSetting* r = Find(s, FabricAction::kK8sResource);
  if (r == nullptr || r->variable.empty()) return Device{g->variable};
  Device d{g->variable, r->variable, 0, r->why};
  if (r->value == "nics_per_node") {
    if (plan.nics_per_node <= 0)
      return Status::BadInput({r->where.file, r->where.line, "value"},
                              r->variable + " is requested per NIC but the plan's instance has no known NIC count (cluster.nics_per_node)");
    d.count = plan.nics_per_node;
  } else {
    d.count = std::stoll(r->value);  // checked when the row was read
  }
  return d;
}

// The node rank, and which node hosts torchrun's c10d rendezvous store: node 0, said explicitly
// (torchrun reads PET_RDZV_CONF as --rdzv_conf), instead of torch guessing it by comparing the
// endpoint with the machine's host name, which fails for a name that is not the host's own (a
// Kubernetes service FQDN) and then no node hosts the store.
constexpr const char* kIsHostWhy =
    "is_host: node 0 hosts the c10d rendezvous store (torchrun reads PET_RDZV_CONF as --rdzv_conf), not torch's guess from host names";
std::string NodeExports(const std::string& rank) {
  return "export GPUPLAN_NODE_RANK=\"" + rank + "\" PET_RDZV_CONF=\"${PET_RDZV_CONF:+$PET_RDZV_CONF,}is_host=$((" + rank +
         " == 0 ? 1 : 0))\"";
}

// ---- slurm ----

// Slurm's D-HH:MM:SS.
std::string SlurmTime(double seconds) {
  const int64_t minutes = static_cast<int64_t>(std::ceil(std::max(seconds, kSlurmTimeMinS) / 60));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:00", static_cast<long long>(minutes / 1440),
                static_cast<long long>(minutes / 60 % 24), static_cast<long long>(minutes % 60));
  return buf;
}

// The job name as one word for #SBATCH and the output file: [A-Za-z0-9_.-], others become '-'.
std::string SlurmName(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '-';
  return out.empty() ? "gpuplan" : out;
}

std::string SbatchDirectives(const LaunchPlan& p, const Catalog& catalog) {
  std::string s;
  s += "#SBATCH --job-name=" + SlurmName(p.job_name) + "\n";
  s += "#SBATCH --nodes=" + Str(p.nodes) + "\n";
  s += "#SBATCH --ntasks-per-node=1\n";
  s += "#SBATCH --gpus-per-node=" + Str(p.gpus_per_node) + "\n";
  std::optional<double> vcpus;
  if (!p.instance.empty())
    if (auto inst = catalog.FindInstance(p.instance); inst.ok()) vcpus = inst->vcpus;
  if (vcpus && *vcpus >= 1)
    s += "#SBATCH --cpus-per-task=" + Str(static_cast<int64_t>(*vcpus)) + "  # all of " + CommentLine(p.instance_type) +
         "'s vCPUs: one task per node runs torchrun and its workers\n";
  else
    s += "# --cpus-per-task left out: the node's vCPU count is unknown (" +
         CommentLine(p.instance.empty() ? "own machines" : "catalog row " + p.instance) + "); --exclusive gives the task the whole node\n";
  s += "#SBATCH --exclusive\n";
  s += "#SBATCH --wait-all-nodes=1\n";
  if (p.time_s > 0)
    s += "#SBATCH --time=" + SlurmTime(p.time_s * kSlurmTimeMargin) + "  # expected " + FormatNumber("%.1f", p.time_s / 3600) +
         " h x " + FormatNumber("%.1f", kSlurmTimeMargin) + " margin (docs/export.md)\n";
  else
    s += "# --time left out: the plan has no token count, so no expected time (the partition's limit applies)\n";
  s += "#SBATCH --output=" + SlurmName(p.job_name) + "-%j.out  # in the submit directory\n";
  return s;
}

Artifact Sbatch(const LaunchPlan& p, const Catalog& catalog) {
  std::string s = "#!/bin/bash\n" + CommentHeader(p, "# ");
  s += "# Submit from the export directory: cd DIR && sbatch gpuplan.sbatch (launch.sh is found in\n";
  s += "# $SLURM_SUBMIT_DIR, which every node must see: a shared file system; or set GPUPLAN_DIR).\n";
  s += SbatchDirectives(p, catalog);
  s += "set -euo pipefail\n";
  s += "GPUPLAN_DIR=\"${GPUPLAN_DIR:-$SLURM_SUBMIT_DIR}\"\n";
  s += "if [[ ! -f \"$GPUPLAN_DIR/launch.sh\" ]]; then\n";
  s += "  echo \"gpuplan.sbatch: no launch.sh in $GPUPLAN_DIR: submit from the export directory or set GPUPLAN_DIR\" >&2\n";
  s += "  exit 1\n";
  s += "fi\n";
  s += "# The rendezvous: the first node of the allocation hosts it; the same id on every node. (The\n";
  s += "# first line is cut in bash, not with | head -n1: under pipefail that pipe can die of SIGPIPE.)\n";
  s += "GPUPLAN_HEAD=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\"\n";
  s += "GPUPLAN_HEAD=\"${GPUPLAN_HEAD%%$'\\n'*}\"\n";
  s += "GPUPLAN_JOB_ID=\"$SLURM_JOB_ID\"\n";
  s += "GPUPLAN_PORT=" + Str(p.port) + "\n";
  s += "export GPUPLAN_DIR GPUPLAN_HEAD GPUPLAN_JOB_ID GPUPLAN_PORT\n";
  s += "echo \"gpuplan: job $SLURM_JOB_ID on $SLURM_JOB_NUM_NODES node(s) ($SLURM_JOB_NODELIST), rendezvous $GPUPLAN_HEAD:$GPUPLAN_PORT\"\n";
  s += "# One task per node; launch.sh sources fabric.env and starts torchrun with " + Str(p.gpus_per_node) + " processes.\n";
  s += "# " + std::string(kIsHostWhy) + "\n";
  s += "srun --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c '" + NodeExports("$SLURM_NODEID") + "; exec bash \"$GPUPLAN_DIR/launch.sh\"'\n";
  return {"gpuplan.sbatch", s, true};
}

// ---- kubernetes ----

// A DNS-1035 label from the job name: lower case, [a-z0-9-], starting with a letter, <= 63.
std::string K8sName(const std::string& name) { return DnsLabel(name); }

std::string ConfigMapName(const LaunchPlan& p) { return K8sName(p.job_name + "-files"); }

std::string YamlHeader(const LaunchPlan& p) { return CommentHeader(p, "# "); }

void EmitEnv(YAML::Emitter& y, const std::vector<std::pair<std::string, std::string>>& env) {
  y << YAML::Key << "env" << YAML::Value << YAML::BeginSeq;
  for (const auto& [k, v] : env)
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << k << YAML::Key << "value" << YAML::Value
      << YAML::DoubleQuoted << v << YAML::EndMap;
  y << YAML::EndSeq;
}

void EmitLimits(YAML::Emitter& y, const LaunchPlan& p, const Device& d) {
  y << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << d.gpu_resource << YAML::Value << p.gpus_per_node;
  if (!d.name.empty()) y << YAML::Key << d.name << YAML::Value << d.count << YAML::Comment(CommentLine(d.why));
  y << YAML::EndMap;
}

void EmitVolumes(YAML::Emitter& y, const LaunchPlan& p) {
  y << YAML::Key << "volumes" << YAML::Value << YAML::BeginSeq;
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "gpuplan-files" << YAML::Key << "configMap" << YAML::Value
    << YAML::BeginMap << YAML::Key << "name" << YAML::Value << ConfigMapName(p) << YAML::Key << "defaultMode" << YAML::Value
    << 0755 << YAML::Comment("0755: launch.sh is executable") << YAML::EndMap << YAML::EndMap;
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "dshm" << YAML::Key << "emptyDir" << YAML::Value << YAML::BeginMap
    << YAML::Key << "medium" << YAML::Value << "Memory" << YAML::EndMap << YAML::EndMap
    << YAML::Comment("NCCL's shared-memory transport needs more than the default 64 MiB /dev/shm");
  y << YAML::EndSeq;
}

void EmitMounts(YAML::Emitter& y) {
  y << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq;
  y << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "gpuplan-files" << YAML::Key << "mountPath"
    << YAML::Value << kMountDir << YAML::EndMap;
  y << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "dshm" << YAML::Key << "mountPath" << YAML::Value
    << "/dev/shm" << YAML::EndMap;
  y << YAML::EndSeq;
}

void EmitSecurity(YAML::Emitter& y, const Device& d) {
  if (d.name.empty()) return;
  y << YAML::Key << "securityContext" << YAML::Value << YAML::BeginMap << YAML::Key << "capabilities" << YAML::Value << YAML::BeginMap
    << YAML::Key << "add" << YAML::Value << YAML::Flow << YAML::BeginSeq << "IPC_LOCK" << YAML::EndSeq << YAML::EndMap << YAML::EndMap
    << YAML::Comment("RDMA registers (pins) memory");
}

std::string Image(const LaunchPlan& p) { return p.image.empty() ? kImagePlaceholder : p.image; }

// The per-node command: the operator's rendezvous variables into the ones launch.sh reads.
std::vector<std::string> PodCommand(const std::string& head, const std::string& port, const std::string& rank) {
  return {"bash", "-c",
          "export GPUPLAN_HEAD=\"$" + head + "\" GPUPLAN_PORT=\"$" + port + "\"; " + NodeExports("$" + rank) + "; exec bash " +
              std::string(kMountDir) + "/launch.sh"};
}

void EmitCommand(YAML::Emitter& y, const std::vector<std::string>& words) {
  y << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& w : words) y << YAML::DoubleQuoted << w;
  y << YAML::EndSeq;
}

Artifact ConfigMap(const LaunchPlan& p, const std::vector<Artifact>& engine_files) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "v1";
  y << YAML::Key << "kind" << YAML::Value << "ConfigMap";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << ConfigMapName(p) << YAML::EndMap;
  y << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  for (const auto& f : engine_files) y << YAML::Key << f.name << YAML::Value << YAML::Literal << f.content;
  y << YAML::EndMap << YAML::EndMap;
  std::string s = YamlHeader(p) + "# The engine's files, mounted at " + kMountDir + " in every pod (kubectl apply -f configmap.yaml first).\n";
  return {"configmap.yaml", s + y.c_str() + "\n", false};
}

Artifact TrainJob(const LaunchPlan& p, const std::vector<FabricSetting>& fabric, const Device& d) {
  auto env = PlainEnv(fabric);
  env.emplace_back("GPUPLAN_JOB_ID", K8sName(p.job_name));
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "trainer.kubeflow.org/v1alpha1";
  y << YAML::Key << "kind" << YAML::Value << "TrainJob";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << K8sName(p.job_name) << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "runtimeRef" << YAML::Value << YAML::BeginMap << YAML::Key << "apiGroup" << YAML::Value << "trainer.kubeflow.org"
    << YAML::Key << "kind" << YAML::Value << "ClusterTrainingRuntime" << YAML::Key << "name" << YAML::Value << "torch-distributed"
    << YAML::EndMap;
  y << YAML::Key << "trainer" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "image" << YAML::Value << YAML::DoubleQuoted << Image(p);
  if (p.image.empty()) y << YAML::Comment(CommentLine("a container image with torch, the engine and " + p.script));
  EmitCommand(y, PodCommand("PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NODE_RANK"));
  y << YAML::Key << "numNodes" << YAML::Value << p.nodes;
  y << YAML::Key << "numProcPerNode" << YAML::Value << p.gpus_per_node;
  y << YAML::Key << "resourcesPerNode" << YAML::Value << YAML::BeginMap;
  EmitLimits(y, p, d);
  y << YAML::EndMap;
  EmitEnv(y, env);
  y << YAML::EndMap;  // trainer
  // The ConfigMap and /dev/shm, patched into the runtime's "node" job and container.
  y << YAML::Key << "runtimePatches" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "manager" << YAML::Value << "gpuplan";
  y << YAML::Key << "trainingRuntimeSpec" << YAML::Value << YAML::BeginMap << YAML::Key << "template" << YAML::Value << YAML::BeginMap
    << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "replicatedJobs" << YAML::Value << YAML::BeginSeq
    << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "node" << YAML::Key << "template" << YAML::Value << YAML::BeginMap
    << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "template" << YAML::Value << YAML::BeginMap << YAML::Key
    << "spec" << YAML::Value << YAML::BeginMap;
  EmitVolumes(y, p);
  y << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "node";
  EmitMounts(y);
  EmitSecurity(y, d);
  y << YAML::EndMap << YAML::EndSeq;
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndMap
    << YAML::EndMap;  // pod spec .. trainingRuntimeSpec
  y << YAML::EndMap << YAML::EndSeq;  // runtimePatches
  y << YAML::EndMap << YAML::EndMap;  // spec, document
  std::string s = YamlHeader(p) + "# Kubeflow Trainer v2 (kubectl apply -f configmap.yaml -f trainjob.yaml); the torch-distributed runtime\n" +
                  "# sets PET_MASTER_ADDR/PET_MASTER_PORT/PET_NODE_RANK, launch.sh (from the ConfigMap) runs torchrun.\n";
  return {"trainjob.yaml", s + y.c_str() + "\n", false};
}

void EmitReplica(YAML::Emitter& y, const std::string& role, int64_t replicas, const LaunchPlan& p,
                 const std::vector<std::pair<std::string, std::string>>& env, const Device& d) {
  y << YAML::Key << role << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "replicas" << YAML::Value << replicas;
  y << YAML::Key << "restartPolicy" << YAML::Value << "OnFailure";
  y << YAML::Key << "template" << YAML::Value << YAML::BeginMap << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << "pytorch";
  y << YAML::Key << "image" << YAML::Value << YAML::DoubleQuoted << Image(p);
  EmitCommand(y, PodCommand("MASTER_ADDR", "MASTER_PORT", "RANK"));
  y << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  EmitLimits(y, p, d);
  y << YAML::EndMap;
  EmitEnv(y, env);
  EmitMounts(y);
  EmitSecurity(y, d);
  y << YAML::EndMap << YAML::EndSeq;
  EmitVolumes(y, p);
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap;
}

Artifact PyTorchJob(const LaunchPlan& p, const std::vector<FabricSetting>& fabric, const Device& d) {
  auto env = PlainEnv(fabric);
  env.emplace_back("GPUPLAN_JOB_ID", K8sName(p.job_name));
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "kubeflow.org/v1";
  y << YAML::Key << "kind" << YAML::Value << "PyTorchJob";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << K8sName(p.job_name) << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "pytorchReplicaSpecs" << YAML::Value << YAML::BeginMap;
  EmitReplica(y, "Master", 1, p, env, d);
  if (p.nodes > 1) EmitReplica(y, "Worker", p.nodes - 1, p, env, d);
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  std::string s = YamlHeader(p) + "# Legacy Kubeflow Training Operator v1 PyTorchJob (for clusters without Trainer v2): one pod per node,\n" +
                  "# Master = node 0; the operator sets MASTER_ADDR/MASTER_PORT and RANK (the pod's index).\n";
  return {"pytorchjob.yaml", s + y.c_str() + "\n", false};
}

// ---- skypilot ----

// data/skypilot.csv: the clouds SkyPilot has (its ALL_CLOUDS, keyed by the catalog's provider name)
// and the SkyPilot instance type of the catalog rows whose instance column is a display name.
struct SkyRow {
  std::string kind;            // cloud | instance
  std::string id;              // the catalog provider (cloud) or instance id (instance)
  std::string sky_name;        // SkyPilot's cloud name / instance type ("" = none known: accelerators only)
  std::string accelerator;     // instance rows: SkyPilot's accelerator name on that type ("" = the GPU's row)
  std::string instance_names;  // cloud rows: api (the catalog's instance is SkyPilot's type), display, unknown
};

Status CheckSkyRow(const SkyRow& r, const CsvRecord& rec) {
  if (r.kind != "cloud" && r.kind != "instance") return Status::BadInput(rec.Where("kind"), "expected cloud or instance, got '" + r.kind + "'");
  if (r.id.empty()) return Status::BadInput(rec.Where("id"), "must name a provider or catalog instance id");
  if (r.kind == "cloud" && !PlainValue(r.sky_name)) return Status::BadInput(rec.Where("sky_name"), "expected SkyPilot's cloud name");
  if (!r.sky_name.empty() && !PlainValue(r.sky_name)) return Status::BadInput(rec.Where("sky_name"), "not a SkyPilot name: '" + r.sky_name + "'");
  if (!r.accelerator.empty() && !PlainValue(r.accelerator))
    return Status::BadInput(rec.Where("accelerator"), "not a SkyPilot accelerator name: '" + r.accelerator + "'");
  if (r.kind == "cloud" && r.instance_names != "api" && r.instance_names != "display" && r.instance_names != "unknown")
    return Status::BadInput(rec.Where("instance_names"), "expected api, display or unknown, got '" + r.instance_names + "'");
  if (rec.Str("source").empty() || rec.Str("date").empty()) return Status::BadInput(rec.Where("source"), "every row names its source and date");
  return Status::Ok();
}

Result<std::vector<SkyRow>> SkyRows() {
  const std::string file = "data/skypilot.csv";
  const std::string_view text = EmbeddedData("skypilot.csv");
  if (text.empty()) return Status::Internal(file + " is not compiled in");
  auto table = ParseCsv(std::string(text), file);
  if (!table.ok()) return table.status();
  std::vector<SkyRow> rows;
  for (const auto& row : table->rows) {
    const CsvRecord rec(*table, row);
    SkyRow r{rec.Str("kind"), Lower(rec.Str("id")), rec.Str("sky_name"), rec.Str("accelerator"), rec.Str("instance_names")};
    GPUPLAN_RETURN_IF_ERROR(CheckSkyRow(r, rec));
    rows.push_back(std::move(r));
  }
  return rows;
}

const SkyRow* FindSky(const std::vector<SkyRow>& rows, const std::string& kind, const std::string& id) {
  for (const auto& r : rows)
    if (r.kind == kind && r.id == Lower(id)) return &r;
  return nullptr;
}

// What sky.yaml's resources say: infra, instance type and accelerator name, each "" when left out.
struct SkyResources {
  std::string infra, instance_type, accelerator, why_no_type;
};

Result<SkyResources> SkyResourcesOf(const LaunchPlan& p, const std::vector<FabricSetting>& fabric) {
  auto rows = SkyRows();
  if (!rows.ok()) return rows.status();
  SkyResources r;
  if (const FabricSetting* acc = Find(fabric, FabricAction::kSkyAccelerator)) r.accelerator = acc->value;
  if (!p.provider.empty()) {
    const SkyRow* cloud = FindSky(*rows, "cloud", p.provider);
    if (cloud == nullptr)
      return Status::BadInput({"", 0, "--to"}, "SkyPilot has no cloud '" + p.provider + "' (data/skypilot.csv lists SkyPilot's clouds), so it cannot rent " +
                                                   p.instance + ": export --to slurm or --to torchrun for these machines, pick a plan row on one of its clouds "
                                                   "(--plan N), or register the machines with SkyPilot as ssh or kubernetes infra and export "
                                                   "the job for own machines (without --instance)");
    r.infra = cloud->sky_name + (p.region.empty() || p.region == "unknown" ? "" : "/" + p.region);
    if (const SkyRow* inst = FindSky(*rows, "instance", p.instance)) {
      r.instance_type = inst->sky_name;
      if (!inst->accelerator.empty()) r.accelerator = inst->accelerator;
    } else if (cloud->instance_names == "api") {
      r.instance_type = p.instance_type;
    }
    if (r.instance_type.empty())
      r.why_no_type = "instance_type left out: data/skypilot.csv has no SkyPilot instance type for catalog row " + p.instance +
                      "; infra and accelerators let SkyPilot pick it.";
  }
  if (r.accelerator.empty() && r.instance_type.empty())
    return Status::BadInput({p.fabric_env_file.empty() ? "data/fabric_env.csv" : p.fabric_env_file, 0, "sky-accelerator"},
                            "no SkyPilot accelerator name for GPU '" + p.job.cluster.gpu +
                                "' and no instance type to name it by: add a sky-accelerator row (fabric_env.csv)");
  return r;
}

Result<Artifact> SkyTask(const LaunchPlan& p, const std::vector<FabricSetting>& fabric) {
  auto res = SkyResourcesOf(p, fabric);
  if (!res.ok()) return res.status();
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << K8sName(p.job_name);
  y << YAML::Key << "num_nodes" << YAML::Value << p.nodes;
  y << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  if (!res->infra.empty()) y << YAML::Key << "infra" << YAML::Value << res->infra;
  if (!res->accelerator.empty()) y << YAML::Key << "accelerators" << YAML::Value << res->accelerator + ":" + Str(p.gpus_per_node);
  if (!res->instance_type.empty()) y << YAML::Key << "instance_type" << YAML::Value << res->instance_type;
  y << YAML::Key << "use_spot" << YAML::Value << p.spot;
  if (const FabricSetting* tier = Find(fabric, FabricAction::kSkyNetworkTier))
    y << YAML::Key << "network_tier" << YAML::Value << tier->value << YAML::Comment(CommentLine(tier->why));
  y << YAML::EndMap;
  y << YAML::Key << "envs" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "GPUPLAN_PORT" << YAML::Value << YAML::DoubleQuoted << Str(p.port);
  for (const auto& [k, v] : PlainEnv(fabric)) y << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
  y << YAML::EndMap;
  y << YAML::Key << "workdir" << YAML::Value << ".";
  const std::string run =
      "export GPUPLAN_HEAD=\"$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\"\n"
      "# " + std::string(kIsHostWhy) + "\n" + NodeExports("$SKYPILOT_NODE_RANK") + "\n" +
      "export GPUPLAN_JOB_ID=\"${SKYPILOT_TASK_ID:-" + K8sName(p.job_name) + "}\"\n"
      "bash launch.sh\n";
  y << YAML::Key << "run" << YAML::Value << YAML::Literal << run;
  y << YAML::EndMap;
  std::string s = CommentHeader(p, "# ") + "# SkyPilot task: sky launch -c " + K8sName(p.job_name) +
                  " sky.yaml from the export directory (workdir . carries launch.sh and the engine's files).\n";
  if (res->accelerator.empty())
    s += "# accelerators left out: no SkyPilot name for " + CommentLine(p.job.cluster.gpu) + " in data/fabric_env.csv; instance_type names the GPUs.\n";
  if (!res->why_no_type.empty()) s += "# " + CommentLine(res->why_no_type) + "\n";
  if (p.provider.empty()) s += "# infra left out: own machines (SkyPilot picks among the clouds and clusters `sky check` enables).\n";
  return Artifact{"sky.yaml", s + y.c_str() + "\n", false};
}

}  // namespace

Result<std::vector<Artifact>> WrapperFiles(ExportFormat wrapper, const LaunchPlan& plan, const Catalog& catalog,
                                           const std::vector<Artifact>& engine_files) {
  auto fabric = Fabric(plan, catalog);
  if (!fabric.ok()) return fabric.status();
  switch (wrapper) {
    case ExportFormat::kSlurm:
      return std::vector<Artifact>{Sbatch(plan, catalog)};
    case ExportFormat::kKubernetes: {
      auto device = PodDevices(plan, *fabric);
      if (!device.ok()) return device.status();
      return std::vector<Artifact>{TrainJob(plan, *fabric, *device), PyTorchJob(plan, *fabric, *device), ConfigMap(plan, engine_files)};
    }
    case ExportFormat::kSkypilot: {
      auto task = SkyTask(plan, *fabric);
      if (!task.ok()) return task.status();
      return std::vector<Artifact>{*task};
    }
    default:
      break;
  }
  return Status::Internal(ToString(wrapper) + " is not a wrapper (slurm, kubernetes, skypilot)");
}

Result<std::vector<Artifact>> ExportWrapper(ExportFormat wrapper, ExportFormat engine, const LaunchPlan& plan, const Catalog& catalog) {
  if (!IsEngine(engine)) return Status::BadInput({"command line", 0, "--engine"}, ToString(engine) + " is not an engine");
  auto files = ExportEngine(engine, plan, catalog);
  if (!files.ok()) return files.status();
  auto own = WrapperFiles(wrapper, plan, catalog, *files);
  if (!own.ok()) return own.status();
  std::vector<Artifact> out = *files;
  out.insert(out.end(), own->begin(), own->end());
  return out;
}

}  // namespace gpuplan
