// A serving setup as something that runs: the engine's launch line (ServingLaunchLine, serving.h),
// a launcher script (serve.sh) or a Kubernetes Deployment + Service. Engine flag values that depend
// on the weight format and KV dtype, the images and ports are data (data/serving_flags.csv); every
// flag emitted is a row of data/engine_keys/<engine>.csv (tests/launch/serving_export_check.py).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/launch.h"
#include "gpuplan/serving.h"

namespace gpuplan {

enum class ServingExportFormat { kVllm, kSglang, kTensorrtLlm, kKubernetes };
std::string ToString(ServingExportFormat f);
std::optional<ServingExportFormat> ParseServingExportFormat(const std::string& name);

// One engine flag from data/serving_flags.csv ("" flag = nothing to pass; the checkpoint says it).
struct ServingFlag {
  std::string flag, value, notes;
};
// The flag an engine takes for a setting: ("weights", "int4-awq"), ("kv_dtype", "fp8"),
// ("image", "default"), ("port", "default"); nullopt = no row (nothing to pass).
std::optional<ServingFlag> FindServingFlag(const std::string& engine, const std::string& setting, const std::string& value);

// The launch line as argv (program words first); ServingLaunchLine joins it, shell-quoted. The
// model is "$MODEL": the checkpoint path or repo the user serves.
std::vector<std::string> ServingLaunchArgv(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine);

struct ServingExportOptions {
  std::string image;              // Default: "" = the engine's image at the profile's version (data).
  std::string job_name = "gpuplan-serve";  // Default: gpuplan-serve (Deployment, Service and label name).
  std::string origin;             // Default: "" (the header's "from" line, e.g. "plan #1 of x.yaml").
};

// serve.sh (vllm, sglang, tensorrt-llm: the engine's launcher) or deployment.yaml (kubernetes: a
// Deployment and a Service running the engine's image with the launch line as args). Errors: the
// kubernetes export of a multi-node replica (pp across nodes needs a LeaderWorkerSet).
Result<std::vector<Artifact>> ServingArtifacts(ServingExportFormat format, const Job& job, const ServingEstimate& e,
                                               const ServingEngineProfile& engine, const ServingExportOptions& options = {});

}  // namespace gpuplan
