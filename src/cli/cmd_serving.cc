// `gpuplan serving JOB.yaml`: one serving setup (model, engine, GPUs, workload) estimated by the
// library (EstimateServing) and printed (ServingToText / ServingToJson). Exit 2 when it does not fit.
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/report.h"
#include "gpuplan/serving.h"
#include "gpuplan/text_width.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& ServingFlags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = JobCommandFlags();
    for (auto& flag : f)
      if (flag.name == "format") flag.help = FormatHelpWithHtml("text|md|json");
    f.push_back(LangFlag());
    f.push_back({"serving-engines", true, "extra serving-engine CSV (the header of data/serving_engines.csv); repeatable"});
    f.push_back({"plan", false, "search the catalog for the cheapest setups per million output tokens under serving.ttft_p90_ms / tpot_p90_ms"});
    return f;
  }();
  return flags;
}

Location KeyLocation(const Job& job, const std::string& key) {
  auto it = job.set_keys.find(key);
  return it != job.set_keys.end() ? it->second : Location{job.source, 0, key};
}

// The engine profile the estimate uses, the error at the key that named it.
Result<ServingEngineProfile> EngineProfile(const Job& job, const std::vector<ServingEngineProfile>& engines) {
  const char* key = job.IsSet("serving.engine_version") ? "serving.engine_version" : "serving.engine";
  return FindServingEngine(engines, job.serving.engine, job.serving.engine_version, KeyLocation(job, key));
}

// The GPU the job names (an unknown id is an error at cluster.gpu).
Result<GpuSpec> JobGpu(const Job& job, const Catalog& catalog) {
  auto gpu = catalog.FindGpu(job.cluster.gpu);
  if (!gpu.ok()) return Status::BadInput(KeyLocation(job, "cluster.gpu"), gpu.status().reason());
  return gpu;
}

Result<ServingReport> BuildServingReport(const Args& args) {
  auto ctx = LoadContext(args);
  if (!ctx.ok()) return ctx.status();
  const Job& job = ctx->job;
  GPUPLAN_RETURN_IF_ERROR(CheckCatalogIds(job, ctx->catalog));
  auto gpu = JobGpu(job, ctx->catalog);
  if (!gpu.ok()) return gpu.status();
  auto it = args.flags.find("serving-engines");
  auto engines = LoadServingEngines(it == args.flags.end() ? std::vector<std::string>{} : it->second);
  if (!engines.ok()) return engines.status();
  auto profile = EngineProfile(job, *engines);
  if (!profile.ok()) return profile.status();
  auto est = EstimateServing(job, ctx->catalog, ctx->cal, *engines);
  if (!est.ok()) return est.status();
  return ServingReport{job, *gpu, *profile, *est, est->fits ? ServingLaunchLine(job, *est, *profile) : ""};
}

}  // namespace

int CmdServing(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, ServingFlags(), true);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan serving [JOB.yaml|JOB.json] [--flags]\n\n"
                "Serving one setup: weights and KV cache per GPU, KV-cache capacity as the engine sizes it at start-up,\n"
                "concurrency, TTFT/TPOT, throughput and cost per million tokens (docs/model/serving.md). The model, GPU\n"
                "and layout are the job's model:, cluster: and parallel: keys (replicas = parallel.dp); the engine and\n"
                "workload its serving: keys. Exit 2 (with every number and what would fit) when the model does not fit.\n"
                "--format html [--lang en|zh] > serving.html (also with --plan): one page with its plots (docs/report-html.md).\n\n%s",
                FlagHelpFor(ServingFlags(), {"model.", "parallel.tp", "parallel.pp", "parallel.dp", "cluster.gpu", "cluster.num_gpus", "cluster.gpus_per_node", "cluster.intra_node", "serving."}).c_str());
    return 0;
  }
  auto format = GetFormat(*args, /*allow_html=*/true);
  if (!format.ok()) return Fail(format.status(), json);
  auto html = GetHtmlOptions(*args, *format);
  if (!html.ok()) return Fail(html.status(), json);
  if (args->Has("plan")) {  // cmd_serving_plan.cc: the job's cluster/parallel/serving keys are pins
    auto ctx = LoadContext(*args, /*finalize_job=*/false);
    if (!ctx.ok()) return Fail(ctx.status(), json);
    return RunServingPlan(*ctx, json, *format == Format::kHtml ? &*html : nullptr);
  }
  if (Status st = RefusePlanFlags(*args, "serving"); !st.ok()) return Fail(st, json);
  if (*format == Format::kCsv)
    return Fail(Status::BadInput({"command line", 0, "--format"}, "serving prints text, md, json or html"), json);
  auto r = BuildServingReport(*args);
  if (!r.ok()) return Fail(r.status(), json);
  const Status no_fit = Status::Infeasible("does not fit: " + r->estimate.fit_problem);
  if (*format == Format::kHtml) {
    const int rc = PrintHtml(ServingToHtml(*r, *html), r->estimate.fits ? 0 : 2);
    if (rc == 2) std::fputs(FitWidth("gpuplan: " + no_fit.ToString() + "\n").c_str(), stderr);  // as the text form says it
    return rc;
  }
  if (*format == Format::kJson) {
    nlohmann::json out = ServingToJson(*r);
    if (!r->estimate.fits) out["error"] = ErrorToJson(no_fit)["error"];
    EmitJson(out);
  } else if (*format == Format::kMarkdown) {
    std::printf("%s", ServingToText(*r, true).c_str());
  } else {
    PrintFitted(ServingToText(*r, false));
  }
  if (r->estimate.fits) return 0;
  if (*format != Format::kJson) std::fputs(FitWidth("gpuplan: " + no_fit.ToString() + "\n").c_str(), stderr);
  return 2;
}

}  // namespace gpuplan::cli
