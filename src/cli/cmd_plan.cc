#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "cli.h"
#include "commands.h"
#include "ledger_flags.h"
#include "gpuplan/engines.h"
#include "gpuplan/job_keys.h"
#include "gpuplan/pool_report.h"
#include "gpuplan/report.h"

namespace gpuplan::cli {

namespace {
const std::vector<FlagSpec>& PlanFlags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = JobCommandFlags();
    for (auto& flag : f)
      if (flag.name == "format") flag.help = FormatHelpWithHtml("text|md|json");
    f.push_back(LangFlag());
    f.push_back({"threads", true, "search threads (default 2)"});
    f.push_back({"wide", false, "text: every column of the plans table (nodes, GPUs, recompute, MFU, goodput)"});
    f.push_back({"explain", false, "text: list every rejection of the search by its code (the JSON always does)"});
    f.push_back({"engine", true,
                 "plan only what this engine runs: megatron|deepspeed|accelerate|torchtitan, or a framework name (default: "
                 "training.framework, else the best plan of each engine family)"});
    // --pool: without --ledger a pool file (plan over its groups); with --ledger the ledger's pool (LedgerFlags).
    for (auto& l : LedgerFlags())
      f.push_back(l.name == "pool" ? FlagSpec{"pool", true,
                                              "POOL.yaml: plan the job over a mixed pool (groups of one card type; "
                                              "docs/model/pools.md); with --ledger: the ledger pool whose measurements apply"}
                                   : l);
    return f;
  }();
  return flags;
}

// plan JOB --pool POOL.yaml: the search over the pool's groups (pool_plan.h); exit 2 when no layout fits.
int CmdPlanPool(const Args& args, const Context& ctx, Format format, bool json) {
  for (const char* refused : {"engine", "wide", "threads"})
    if (args.Has(refused))
      return Fail(Status::BadInput({"command line", 0, std::string("--") + refused}, "does not apply to plan --pool"), json);
  auto pool = LoadPoolFlag(args, ctx.catalog);
  if (!pool.ok()) return Fail(pool.status(), json);
  PoolPlanOptions opt;
  if (ctx.job.IsSet("constraints.top")) opt.top = ctx.job.constraints.top;
  auto result = PlanOnPool(ctx.job, *pool, ctx.catalog, ctx.cal, opt);
  if (!result.ok()) return Fail(result.status(), json);
  if (format == Format::kHtml)
    return PrintHtml(PoolPlanToHtml(*pool, *result, ctx.job, *GetHtmlOptions(args, format)), result->plans.empty() ? 2 : 0);
  if (format == Format::kJson) {
    nlohmann::json out = PoolPlanToJson(*pool, *result);
    out["inputs"] = JobToJson(ctx.job);
    out["inputs"].erase("cluster");  // the pool's groups are the hardware
    EmitJson(out);
  } else {
    const std::string text = PoolPlanToText(*pool, *result, format == Format::kMarkdown);
    if (format == Format::kMarkdown) std::printf("%s", text.c_str());
    else PrintFitted(text);
  }
  return result->plans.empty() ? 2 : 0;
}
// --engine E: the framework whose engine runs the plan (an export format names its own engine).
Status ApplyEngine(const Args& args, Job& job) {
  if (!args.Has("engine")) return Status::Ok();
  const Location where{"command line", 0, "--engine"};
  const std::string name = args.Get("engine");
  const EngineCaps* e = EngineForFormat(name);
  if (!e)
    if (auto f = ParseFramework(name)) e = EngineFor(*f);
  if (!e) {
    std::string all = "megatron, deepspeed, accelerate, torchtitan";
    for (const auto& x : Engines())
      if (all.find(x.id) == std::string::npos) all += ", " + x.id;
    return Status::BadInput(where, "unknown engine '" + name + "' (expected one of " + all + ")");
  }
  if (job.IsSet("training.framework") && job.training.framework != e->framework)
    return Status::BadInput(where, "'" + name + "' runs framework " + e->id + ", but training.framework is " +
                                       ToString(job.training.framework) + ": drop one");
  return SetJobKey(job, "training.framework", e->id, where);
}
}  // namespace

int CmdPlan(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, PlanFlags(), true);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan plan JOB.yaml [--pool POOL.yaml] [--flags]\n\nThe job's parallel/cluster keys become pins; constraints.* "
                "bound the search.\nWith --pool: the groups used, their order, tp, dp, pp, the layer split and the micro-batch over "
                "the pool's cards.\n--format html [--lang en|zh] > plan.html: the same answer as one page with its plots "
                "(docs/report-html.md).\n\n%s",
                FlagHelp(PlanFlags(), true).c_str());
    return 0;
  }
  if (Status st = RefuseServingFlags(*args, "plan"); !st.ok()) return Fail(st, json);
  auto format = GetFormat(*args, /*allow_html=*/true);
  if (!format.ok()) return Fail(format.status(), json);
  auto html = GetHtmlOptions(*args, *format);
  if (!html.ok()) return Fail(html.status(), json);
  // Not finalized: cluster/parallel keys the user set are pins, the rest stay open.
  auto ctx = LoadContext(*args, /*finalize_job=*/false);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  if (args->Has("pool") && !args->Has("ledger")) return CmdPlanPool(*args, *ctx, *format, json);
  if (Status st = ApplyEngine(*args, ctx->job); !st.ok()) return Fail(st, json);
  std::vector<CalibrationOverride> measured;
  if (args->Has("ledger") && !ctx->job.IsSet("cluster.gpu"))
    return Fail(Status::BadInput({"command line", 0, "--ledger"}, "plan --ledger needs the pool's GPU (--gpu or cluster.gpu): its measured numbers are that GPU's"), json);
  if (Status st = ApplyLedger(*args, ctx.value(), measured); !st.ok()) return Fail(st, json);
  const Job* job = &ctx->job;
  const Catalog* catalog = &ctx->catalog;
  const Calibration* cal = &ctx->cal;
  const std::string threads = args->Get("threads", "2");
  auto n_threads = ParseInteger(threads, {"command line", 0, "--threads"}, 1, 256);  // whole value: "2abc" is an error
  if (!n_threads.ok()) return Fail(n_threads.status(), json);
  // The progress, cancel flag and item limit of an in-process caller (the web server), else a progress bar.
  PlanOptions opt = HookedPlanOptions(static_cast<int>(*n_threads));
  if (opt.threads < 1 || opt.threads > 256) return Fail(Status::BadInput({"command line", 0, "--threads"}, "must be in 1..256"), json);
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> total{0};
  if (opt.progress == nullptr) opt.progress = &done;
  if (opt.progress_total == nullptr) opt.progress_total = &total;
  // A progress bar on a terminal only (never when piped, never under an in-process caller).
  std::atomic<bool> finished{false};
  std::thread bar;
  if (CurrentHooks() == nullptr && isatty(STDERR_FILENO)) {
    bar = std::thread([&] {
      while (!finished) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (total > 0) {
          const int pct = static_cast<int>(100 * done / total);
          std::fprintf(stderr, "\r[%-40s] %3d%% setups", std::string(static_cast<size_t>(pct * 40 / 100), '#').c_str(), pct);
        }
      }
      std::fprintf(stderr, "\r%60s\r", "");
    });
  }
  auto result = PlanJob(*job, *catalog, *cal, opt);
  finished = true;
  if (bar.joinable()) bar.join();
  if (!result.ok()) return Fail(result.status(), json);
  const PlanPrintContext print{catalog, cal, args->Has("explain"), args->Has("wide")};  // each plan's efficiency note and error band
  if (*format == Format::kHtml) return PrintHtml(PlanToHtml(*result, *job, print, *html), result->plans.empty() ? 2 : 0);
  if (*format == Format::kJson) {
    nlohmann::json out = PlanToJson(*result, *job, print);
    if (args->Has("ledger")) out["ledger"] = LedgerJson(*args, measured);
    EmitJson(out);
  } else {
    const std::string text = PlanToText(*result, *job, *format == Format::kMarkdown, print) + LedgerText(*args, measured);
    if (*format == Format::kMarkdown) std::printf("%s", text.c_str());
    else PrintFitted(text);
  }
  return result->plans.empty() ? 2 : 0;
}

}  // namespace gpuplan::cli
