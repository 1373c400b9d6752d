#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/report.h"

namespace gpuplan::cli {

int Fail(const Status& st) {
  std::fprintf(stderr, "gpuplan: %s\n", st.ToString().c_str());
  return st.ExitCode() == 0 ? 3 : st.ExitCode();
}

int CmdMemory(const std::vector<std::string>& argv) {
  auto args = ParseArgs(argv, JobCommandFlags(), true);
  if (!args.ok()) return Fail(args.status());
  if (args->Has("help")) {
    std::printf("usage: gpuplan memory [JOB.yaml|JOB.json] [--flags]\n\n%s", FlagHelp(JobCommandFlags(), true).c_str());
    return 0;
  }
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status());
  auto ctx = LoadContext(*args);
  if (!ctx.ok()) return Fail(ctx.status());
  const Job* job = &ctx->job;
  const Catalog* catalog = &ctx->catalog;
  const Calibration* cal = &ctx->cal;
  auto gpu = catalog->FindGpu(job->cluster.gpu);
  if (!gpu.ok()) {
    Location l = job->IsSet("cluster.gpu") ? job->set_keys.at("cluster.gpu") : Location{"", 0, "cluster.gpu"};
    return Fail(Status::BadInput(l, gpu.status().reason()));
  }
  if (gpu->memory_bytes <= 0)
    return Fail(Status::BadInput({gpu->where.file, gpu->where.line, "memory_gib"}, "GPU '" + gpu->id + "' has no known memory size"));
  const MemoryReport r = BuildMemoryReport(*job, *gpu, *cal);
  if (*format == Format::kJson) {
    std::printf("%s\n", MemoryToJson(r).dump(2).c_str());
  } else {
    std::printf("%s", MemoryToText(r, *format == Format::kMarkdown).c_str());
  }
  return 0;
}

}  // namespace gpuplan::cli
