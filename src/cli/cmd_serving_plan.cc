// `gpuplan serving JOB.yaml --plan` (wired into the serving command) and `gpuplan export --to
// vllm|sglang|tensorrt-llm|kubernetes` for a serving job: the planner's rows with their launch lines,
// and the row (or the pinned setup) written as something that runs.
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/serving_export.h"
#include "gpuplan/serving_plan.h"
#include "gpuplan/serving_plan_report.h"

namespace gpuplan::cli {

namespace {
Location Flag(const std::string& name) { return {"command line", 0, "--" + name}; }

// Each row's launch line (src/launch): the planner itself stays below the launch layer.
Status AddLaunchLines(const Job& job, const std::vector<ServingEngineProfile>& engines, ServingPlanResult& r) {
  auto profile = FindServingEngine(engines, job.serving.engine, job.serving.engine_version, {job.source, 0, "serving.engine"});
  if (!profile.ok()) return profile.status();
  for (auto& p : r.plans) p.launch_line = ServingLaunchLine(p.job, p.estimate, *profile);
  return Status::Ok();
}

Result<ServingPlanResult> PlanWithLines(const Context& ctx, const std::vector<ServingEngineProfile>& engines) {
  auto r = PlanServing(ctx.job, ctx.catalog, ctx.cal, engines);
  if (!r.ok()) return r.status();
  ServingPlanResult out = std::move(r).value();
  GPUPLAN_RETURN_IF_ERROR(AddLaunchLines(ctx.job, engines, out));
  return out;
}

bool HasServingKeys(const Job& job) {
  for (const auto& [key, where] : job.set_keys)
    if (key.rfind("serving.", 0) == 0) return true;
  return false;
}

// The setup an export writes: the job as pinned (cluster.gpu and cluster.num_gpus set), else the
// planner's row --plan N (default 1).
struct ServingChoice {
  Job job;
  ServingEstimate estimate;
  std::string origin;
};

Result<ServingChoice> ChooseServing(const Args& args, const Context& ctx, const std::vector<ServingEngineProfile>& engines) {
  const std::string src = ctx.job.source.empty() ? "the command line" : ctx.job.source;
  if (ctx.job.IsSet("cluster.gpu") && ctx.job.IsSet("cluster.num_gpus") && !args.Has("plan")) {
    Job j = ctx.job;
    const int64_t per = std::max<int64_t>(1, j.parallel.tp * j.parallel.pp);
    if (!j.IsSet("parallel.dp")) j.parallel.dp = std::max<int64_t>(1, j.cluster.num_gpus / per);
    auto e = EstimateServing(j, ctx.catalog, ctx.cal, engines);
    if (!e.ok()) return e.status();
    if (!e->fits) return Status::Infeasible("the pinned setup does not fit: " + e->fit_problem + "; nothing exported");
    return ServingChoice{j, *e, "pinned serving job " + src};
  }
  auto r = PlanServing(ctx.job, ctx.catalog, ctx.cal, engines);
  if (!r.ok()) return r.status();
  if (r->plans.empty()) return Status::Infeasible("no serving setup for " + src + ": " + r->relax + "; nothing exported");
  int64_t n = 1;
  if (args.Has("plan")) {
    auto v = ParseInteger(args.Get("plan"), Flag("plan"), 1, static_cast<int64_t>(r->plans.size()));
    if (!v.ok()) return v.status();
    n = *v;
  }
  const ServingPlan& p = r->plans[static_cast<size_t>(n - 1)];
  return ServingChoice{p.job, p.estimate, "serving plan #" + std::to_string(n) + " of " + src};
}
}  // namespace

int RunServingPlan(const Context& ctx, bool json, const HtmlReportOptions* html) {
  auto engines = LoadServingEngines();
  if (!engines.ok()) return Fail(engines.status(), json);
  auto r = PlanWithLines(ctx, *engines);
  if (!r.ok()) return Fail(r.status(), json);
  if (html) return PrintHtml(ServingPlanToHtml(*r, ctx.job, *html), r->plans.empty() ? 2 : 0);
  if (json) EmitJson(ServingPlanToJson(*r, ctx.job));
  else PrintFitted(ServingPlanToText(*r, ctx.job));
  return r->plans.empty() ? 2 : 0;
}

bool IsServingExport(const Args& args) {
  if (args.Has("serving")) return true;
  const std::string to = args.Get("to");
  if (to == "vllm" || to == "sglang" || to == "tensorrt-llm") return true;
  if (to != "kubernetes") return false;
  auto job = LoadJob(args, /*finalize=*/false);
  return job.ok() && HasServingKeys(*job);
}

int ExportServing(const Args& args, bool json) {
  const auto format = ParseServingExportFormat(args.Get("to"));
  if (!format) return Fail(Status::BadInput(Flag("to"), "a serving job exports to vllm, sglang, tensorrt-llm or kubernetes"), json);
  auto ctx = LoadContext(args, /*finalize_job=*/false);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  // --to vllm|sglang|tensorrt-llm names the engine unless the job pins another (an error below).
  if (*format != ServingExportFormat::kKubernetes && !ctx->job.IsSet("serving.engine")) ctx->job.serving.engine = ToString(*format);
  auto engines = LoadServingEngines();
  if (!engines.ok()) return Fail(engines.status(), json);
  auto chosen = ChooseServing(args, *ctx, *engines);
  if (!chosen.ok()) return Fail(chosen.status(), json);
  auto profile = FindServingEngine(*engines, chosen->job.serving.engine, chosen->job.serving.engine_version,
                                   {ctx->job.source, 0, "serving.engine"});
  if (!profile.ok()) return Fail(profile.status(), json);
  ServingExportOptions o;
  o.origin = chosen->origin;
  if (args.Has("image")) o.image = args.Get("image");
  if (args.Has("job-name")) o.job_name = args.Get("job-name");
  auto files = ServingArtifacts(*format, chosen->job, chosen->estimate, *profile, o);
  if (!files.ok()) return Fail(files.status(), json);
  const std::string out_dir = args.Get("out");
  if (!out_dir.empty())
    if (Status st = WriteArtifacts(*files, out_dir); !st.ok()) return Fail(st, json);
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : *files) {
      nlohmann::json e = {{"name", f.name}, {"executable", f.executable}};
      if (out_dir.empty()) e["content"] = f.content;
      list.push_back(e);
    }
    EmitJson({{"format", ToString(*format)}, {"origin", o.origin},
              {"launch_line", ServingLaunchLine(chosen->job, chosen->estimate, *profile)},
              {"out", out_dir.empty() ? nlohmann::json(nullptr) : nlohmann::json(out_dir)}, {"files", list}});
    return 0;
  }
  if (out_dir.empty()) {
    for (const auto& f : *files) std::printf("==> %s <==\n%s", f.name.c_str(), f.content.c_str());
    return 0;
  }
  std::printf("%s\nwrote %zu file%s to %s:\n", o.origin.c_str(), files->size(), files->size() == 1 ? "" : "s", out_dir.c_str());
  for (const auto& f : *files) std::printf("  %s%s\n", f.name.c_str(), f.executable ? " (executable)" : "");
  return 0;
}

}  // namespace gpuplan::cli
