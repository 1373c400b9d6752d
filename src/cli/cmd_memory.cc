#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/report.h"

namespace gpuplan::cli {

Status DoesNotFit(const MemoryReport& r) {
  return Status::Infeasible("does not fit: " + FormatGiB(r.memory.total_bytes) + " GiB per GPU needed, " + r.gpu.id +
                            " has " + FormatGiB(r.gpu.memory_bytes) + " GiB (the memory-saving steps say what would fit)");
}

int CmdMemory(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, JobCommandFlags(), true);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan memory [JOB.yaml|JOB.json] [--flags]\n\nExit 2 (with the whole breakdown) when the job does not fit.\n\n%s",
                FlagHelp(JobCommandFlags(), true, false).c_str());
    return 0;
  }
  if (Status st = RefusePlanFlags(*args, "memory"); !st.ok()) return Fail(st, json);
  if (Status st = RefuseServingFlags(*args, "memory"); !st.ok()) return Fail(st, json);
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status(), json);
  auto ctx = LoadContext(*args);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  const Job* job = &ctx->job;
  const Catalog* catalog = &ctx->catalog;
  const Calibration* cal = &ctx->cal;
  auto gpu = catalog->FindGpu(job->cluster.gpu);
  if (!gpu.ok()) {
    Location l = job->IsSet("cluster.gpu") ? job->set_keys.at("cluster.gpu") : Location{"", 0, "cluster.gpu"};
    return Fail(Status::BadInput(l, gpu.status().reason()), json);
  }
  if (gpu->memory_bytes <= 0)
    return Fail(Status::BadInput({gpu->where.file, gpu->where.line, "memory_gib"}, "GPU '" + gpu->id + "' has no known memory size"), json);
  // The same precision check as estimate: no bf16 on V100/T4 (it suggests fp16), no fp8 before Hopper/Ada.
  if (const std::string why = gpu->PrecisionProblem(job->training.precision); !why.empty()) {
    Location l = job->IsSet("training.precision") ? job->set_keys.at("training.precision")
                 : job->IsSet("cluster.gpu")      ? job->set_keys.at("cluster.gpu")
                                                  : Location{"command line", 0, "--precision"};
    return Fail(Status::BadInput(l, why), json);
  }
  // cluster.intra_node, cluster.network and cluster.storage: the same check as every command
  // (CheckCatalogIds); memory uses none of them, but an unknown id is an error, not ignored.
  if (Status st = CheckCatalogIds(*job, *catalog); !st.ok()) return Fail(st, json);
  const MemoryReport r = BuildMemoryReport(*job, *gpu, *cal);
  if (*format == Format::kJson) {
    nlohmann::json out = MemoryToJson(r);
    if (!r.fits) out["error"] = ErrorToJson(DoesNotFit(r))["error"];
    EmitJson(out);
  } else {
    if (*format == Format::kMarkdown) std::printf("%s", MemoryToText(r, true).c_str());
    else PrintFitted(MemoryToText(r, false));
  }
  if (r.fits) return 0;
  if (*format != Format::kJson) std::fprintf(stderr, "gpuplan: %s\n", DoesNotFit(r).ToString().c_str());
  return 2;
}

}  // namespace gpuplan::cli
