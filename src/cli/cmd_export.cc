// gpuplan export JOB.yaml|PLAN.json --to FORMAT [--out DIR] [--plan N]: the launch artefacts of a
// plan. Which plan (docs/export.md "Which plan"): a PLAN.json row; the planner's row N (--plan N);
// a fully pinned job (cluster.num_gpus set), estimated as it is; else the planner's best setup that
// the format can express.
#include <cctype>
#include <cmath>
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/input_file.h"
#include "gpuplan/job_keys.h"
#include "gpuplan/launch.h"
#include "gpuplan/plan.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& ExportFlags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = JobCommandFlags();
    f.push_back({"to", true, "format: deepspeed|accelerate|torchrun|megatron|torchtitan|slurm|kubernetes|skypilot|fabric (required)"});
    f.push_back({"engine", true, "the engine a slurm/kubernetes/skypilot launch runs (default: the job's framework, else what the layout needs)"});
    f.push_back({"out", true, "directory to write the files into (default: print them to stdout)"});
    f.push_back({"plan", true, "row N of the plan table / PLAN.json (default: the best setup the format can express)"});
    f.push_back({"instance", true, "a catalog instance id for a pinned job (default: own machines)"});
    f.push_back({"script", true, "the training entry point (default train.py; megatron: pretrain_gpt.py)"});
    f.push_back({"script-arg", true, "an argument passed to the script; repeatable"});
    f.push_back({"port", true, "rendezvous / master port (default 29500)"});
    f.push_back({"job-name", true, "job name in Slurm/Kubernetes/SkyPilot and the rendezvous id (default gpuplan)"});
    f.push_back({"image", true, "container image for kubernetes (default: a placeholder to fill in)"});
    f.push_back({"engine-version", true, "engine release: torchtitan 0.2 = the v0.2.x TOML; megatron 0.12 = check uneven stages against that release (default: the pinned release)"});
    f.push_back({"fabric-env", true, "your copy of data/fabric_env.csv (same columns), used instead of it"});
    f.push_back({"threads", true, "search threads (default 2)"});
    f.push_back({"serving", false, "export a serving setup (vllm|sglang|tensorrt-llm|kubernetes); implied by a job's serving.* keys"});
    return f;
  }();
  return flags;
}

Location Flag(const std::string& name) { return {"command line", 0, "--" + name}; }

struct Chosen {
  LaunchPlan plan;
  ExportFormat engine = ExportFormat::kTorchrun;
};

Status Expressible(ExportFormat engine, const LaunchPlan& lp, const std::string& what) {
  const std::string why = CannotExpress(engine, lp);
  if (why.empty()) return Status::Ok();
  return Status::BadInput(Flag("to"), what + " cannot be exported as " + ToString(engine) + ": " + why);
}

// The planner's row: --plan N as shown by `gpuplan plan`, else the best the engine can express.
Result<LaunchPlan> FromPlanner(const Args& args, const Context& ctx, std::optional<ExportFormat> fixed, int threads) {
  PlanOptions opt = HookedPlanOptions(threads);  // an in-process caller's cancel flag and item limit
  const std::string src = ctx.job.source.empty() ? "the command line" : ctx.job.source;
  auto result = PlanJob(ctx.job, ctx.catalog, ctx.cal, opt);
  if (!result.ok()) return result.status();
  if (result->plans.empty())
    return Status::Infeasible("no feasible plan for " + src + (result->relax.empty() ? "" : ": " + result->relax) + "; nothing exported");
  if (args.Has("plan")) {
    auto n = ParseInteger(args.Get("plan"), Flag("plan"), 1, static_cast<int64_t>(result->plans.size()));
    if (!n.ok()) return n.status();
    LaunchPlan lp = LaunchPlanFromPlan(result->plans[static_cast<size_t>(*n - 1)], ctx.catalog, "plan #" + std::to_string(*n) + " of " + src);
    GPUPLAN_RETURN_IF_ERROR(Expressible(fixed ? *fixed : DefaultEngine(lp.job), lp, "plan #" + std::to_string(*n)));
    return lp;
  }
  LaunchPlan best = LaunchPlanFromPlan(result->plans.front(), ctx.catalog, "plan #1 of " + src);
  // A wrapper without --engine runs the engine that can express the best plan.
  const ExportFormat engine = fixed ? *fixed : DefaultEngine(best.job);
  const std::string why = CannotExpress(engine, best);
  if (why.empty()) return best;
  // Rows name the engine that runs them (a job without a framework ranks every family): the
  // first row on this format's engine is taken as it is.
  for (size_t i = 1; i < result->plans.size(); ++i) {
    if (result->plans[i].engine != ToString(engine)) continue;
    const std::string n = std::to_string(i + 1);
    LaunchPlan lp = LaunchPlanFromPlan(result->plans[i], ctx.catalog, "plan #" + n + " of " + src);
    if (!CannotExpress(engine, lp).empty()) continue;
    lp.note = "plan #1 runs on " + result->plans.front().engine + "; plan #" + n + " is the best row " + ToString(engine) + " runs";
    return lp;
  }
  // The best setup uses what the engine cannot say: plan again with the engine's pins.
  Job pinned = ctx.job;
  for (const auto& [key, value] : PinsForFormat(engine)) {
    if (ctx.job.IsSet(key)) continue;  // the user's own pin stands (and is checked below)
    GPUPLAN_RETURN_IF_ERROR(SetJobKey(pinned, key, value, {"export --to " + ToString(engine), 0, key}));
  }
  auto again = PlanJob(pinned, ctx.catalog, ctx.cal, opt);
  if (!again.ok()) return again.status();
  if (again->plans.empty())
    return Status::Infeasible("the best plan (" + LayoutString(best.job) + ") cannot be exported as " + ToString(engine) + " (" + why +
                              ") and no setup " + ToString(engine) + " can express is feasible; nothing exported");
  LaunchPlan lp = LaunchPlanFromPlan(again->plans.front(), ctx.catalog, "the best " + ToString(engine) + " setup for " + src);
  GPUPLAN_RETURN_IF_ERROR(Expressible(engine, lp, "the best " + ToString(engine) + " setup"));
  lp.note = "plan #1 (" + best.instance + " x " + std::to_string(best.nodes) + ", " + LayoutString(best.job) + ", " +
            FormatNumber("%.1f", best.time_s / 3600) + " h" + (best.cost_usd ? ", $" + FormatNumber("%.0f", *best.cost_usd) : "") +
            ") is not expressible: " + why + "; this is the best setup " + ToString(engine) + " can run";
  return lp;
}

Status ApplyLaunchFlags(const Args& args, LaunchPlan& lp) {
  if (args.Has("script")) lp.script = args.Get("script");
  if (auto it = args.flags.find("script-arg"); it != args.flags.end()) lp.script_args = it->second;
  if (args.Has("port")) {
    auto port = ParseInteger(args.Get("port"), Flag("port"), 1, 65535);
    if (!port.ok()) return port.status();
    lp.port = *port;
  }
  if (args.Has("job-name")) {
    const std::string name = args.Get("job-name");
    for (char c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-')
        return Status::BadInput(Flag("job-name"), "use letters, digits and '-' only (it becomes a Kubernetes name and a rendezvous id)");
    if (name.empty() || name.size() > 50) return Status::BadInput(Flag("job-name"), "must be 1..50 characters");
    lp.job_name = name;
  }
  if (args.Has("image")) lp.image = args.Get("image");
  if (args.Has("engine-version")) {
    lp.engine_version = args.Get("engine-version");
    if (lp.engine_version.empty()) return Status::BadInput(Flag("engine-version"), "empty: give a version (torchtitan: 0.2)");
  }
  if (args.Has("fabric-env")) {
    auto text = ReadInputFile(args.Get("fabric-env"));
    if (!text.ok()) return text.status();
    lp.fabric_env_file = args.Get("fabric-env");
    lp.fabric_env_text = *text;
  }
  return Status::Ok();
}

}  // namespace

int CmdExport(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, ExportFlags(), true);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan export JOB.yaml|PLAN.json --to FORMAT [--out DIR] [--plan N] [--flags]\n\n"
                "Which plan: row N of PLAN.json (`gpuplan plan --json`) or of the planner (--plan N); a job that pins\n"
                "cluster.num_gpus is exported as it is; else the planner's best setup the format can express.\n"
                "Without --out the files are printed to stdout; with it, all are written or none.\n\n%s",
                FlagHelp(ExportFlags(), true).c_str());
    return 0;
  }
  if (args->Has("to") && IsServingExport(*args)) return ExportServing(*args, json);
  if (!args->Has("to"))
    return Fail(Status::BadInput(Flag("to"), "required: one of " + [] {
                  std::string s;
                  for (const auto& n : ExportFormatNames()) s += (s.empty() ? "" : ", ") + n;
                  return s;
                }()),
                json);
  const auto format = ParseExportFormat(args->Get("to"));
  if (!format) {
    std::string s;
    for (const auto& n : ExportFormatNames()) s += (s.empty() ? "" : ", ") + n;
    return Fail(Status::BadInput(Flag("to"), "unknown format '" + args->Get("to") + "' (expected one of " + s + ")"), json);
  }
  std::optional<ExportFormat> engine;
  if (args->Has("engine")) {
    engine = ParseExportFormat(args->Get("engine"));
    if (!engine || !IsEngine(*engine))
      return Fail(Status::BadInput(Flag("engine"), "expected deepspeed|accelerate|torchrun|megatron|torchtitan, got '" + args->Get("engine") + "'"), json);
    if (IsEngine(*format) || *format == ExportFormat::kFabric)
      return Fail(Status::BadInput(Flag("engine"), "only slurm, kubernetes and skypilot run an engine; --to " + ToString(*format) + " is one"), json);
  }
  auto threads = ParseInteger(args->Get("threads", "2"), Flag("threads"), 1, 256);
  if (!threads.ok()) return Fail(threads.status(), json);

  // A PLAN.json is read once: to tell it from a job file and to take its row.
  std::string plan_text;
  if (args->positional.size() == 1) {
    auto text = ReadInputFile(args->positional[0]);
    if (text.ok() && IsPlanJson(*text)) plan_text = std::move(text).value();
  }
  const bool plan_json = !plan_text.empty();
  Args ctx_args = *args;
  if (plan_json) {
    if (!args->job_flags.empty())
      return Fail(Status::BadInput({"command line", 0, "--" + FindJobKey(args->job_flags.front().first)->flag},
                                   "a PLAN.json row is a pinned job: change the job and run `gpuplan plan --json` again"),
                  json);
    ctx_args.positional.clear();
  }
  auto ctx = LoadContext(ctx_args, /*finalize_job=*/false);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  // The engine that must express the layout: the format itself, torchrun for fabric.env (it needs
  // none), --engine for a wrapper, else (nullopt) the one the chosen plan's layout and framework need.
  const std::optional<ExportFormat> fixed_engine = IsEngine(*format)                 ? std::optional<ExportFormat>(*format)
                                                   : *format == ExportFormat::kFabric ? std::optional<ExportFormat>(ExportFormat::kTorchrun)
                                                                                      : engine;
  auto engine_for = [&](const Job& j) { return fixed_engine ? *fixed_engine : DefaultEngine(j); };

  Result<LaunchPlan> lp = Status::Internal("no plan chosen");
  if (plan_json) {
    int64_t index = 1;
    if (args->Has("plan")) {
      auto n = ParseInteger(args->Get("plan"), Flag("plan"), 1, 1 << 20);
      if (!n.ok()) return Fail(n.status(), json);
      index = *n;
    }
    lp = LaunchPlanFromPlanJson(plan_text, args->positional[0], index, ctx->catalog, ctx->cal);
    if (lp.ok()) {
      if (Status st = Expressible(engine_for(lp->job), *lp, lp->origin); !st.ok())
        return Fail(st, json);
    }
  } else if (ctx->job.IsSet("cluster.num_gpus") && !args->Has("plan")) {
    Job job = ctx->job;
    if (Status st = FinalizeJob(job); !st.ok()) return Fail(st, json);
    const std::string src = job.source.empty() ? "the command line" : job.source;
    lp = LaunchPlanFromJob(job, ctx->catalog, ctx->cal, "pinned job " + src, args->Get("instance"));
    if (lp.ok())
      if (Status st = Expressible(engine_for(lp->job), *lp, "the pinned job"); !st.ok()) return Fail(st, json);
  } else {
    if (args->Has("instance"))
      return Fail(Status::BadInput(Flag("instance"), "only for a pinned job (set cluster.num_gpus); the planner chooses the instance"), json);
    lp = FromPlanner(*args, *ctx, fixed_engine, static_cast<int>(*threads));
  }
  if (!lp.ok()) return Fail(lp.status(), json);
  if (Status st = ApplyLaunchFlags(*args, lp.value()); !st.ok()) return Fail(st, json);
  const std::optional<ExportFormat> wrapped = IsEngine(*format) ? std::nullopt : std::optional<ExportFormat>(engine_for(lp->job));
  auto files = ExportArtifacts(*format, wrapped, *lp, ctx->catalog);
  if (!files.ok()) return Fail(files.status(), json);

  const std::string out_dir = args->Get("out");
  if (!out_dir.empty())
    if (Status st = WriteArtifacts(*files, out_dir); !st.ok()) return Fail(st, json);
  if (json) {
    nlohmann::json j = {{"format", ToString(*format)}, {"origin", lp->origin}, {"note", lp->note}, {"out", out_dir.empty() ? nlohmann::json(nullptr) : nlohmann::json(out_dir)}};
    if (wrapped) j["engine"] = ToString(*wrapped);
    j["header"] = HeaderLines(*lp);
    nlohmann::json keys = nlohmann::json::object();  // the exported layout, as `plan --json` rows carry it
    for (const auto& [k, v] : JobToKeys(lp->job)) keys[k] = v;
    j["job"] = keys;
    j["expected"] = {{"nodes", lp->nodes}, {"gpus_per_node", lp->gpus_per_node}, {"grad_accum", lp->grad_accum},
                     {"step_time_s", lp->step_time_s}, {"memory_per_gpu_bytes", lp->memory_per_gpu_bytes},
                     {"instance", lp->instance}, {"network", lp->network.id}};
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : *files) {
      nlohmann::json e = {{"name", f.name}, {"executable", f.executable}};
      if (out_dir.empty()) e["content"] = f.content;
      list.push_back(e);
    }
    j["files"] = list;
    EmitJson(j);
    return 0;
  }
  if (out_dir.empty()) {
    for (const auto& f : *files) std::printf("==> %s <==\n%s%s", f.name.c_str(), f.content.c_str(), f.content.empty() || f.content.back() == '\n' ? "" : "\n");
    return 0;
  }
  std::printf("%s", CommentHeader(*lp, "").c_str());
  std::printf("wrote %zu file%s to %s:\n", files->size(), files->size() == 1 ? "" : "s", out_dir.c_str());
  for (const auto& f : *files) std::printf("  %s%s\n", f.name.c_str(), f.executable ? " (executable)" : "");
  return 0;
}

}  // namespace gpuplan::cli
