#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>

#include "cli.h"
#include "gpuplan/csv.h"
#include "commands.h"
#include "ledger_flags.h"
#include "gpuplan/report.h"
#include "gpuplan/pool_report.h"
#include "gpuplan/pool_validation.h"
#include "gpuplan/serving_validation.h"

namespace gpuplan::cli {

namespace {
const std::vector<FlagSpec> kValidateFlags = {
    {"write", true, "Markdown report path, e.g. docs/validation.md (default: none, '-')"},
    {"bands", true, "error-band CSV path, e.g. data/error_bands.csv (default: none, '-')"},
    {"all", false, "list every row, including those not predicted, with the reason"},
    {"loso", true, "per-source constants (data/loso_fits.csv, from tools/fit_runs.py --loso): leave-one-source-out tables and bands"},
    {"max-median", true, "exit 2 if the median |error| of throughput rows exceeds this fraction"},
    {"max-p90", true, "exit 2 if the p90 |error| of throughput rows exceeds this fraction"},
    {"max-memory-median", true, "exit 2 if the median |error| of peak-memory rows exceeds this fraction"},
    {"max-bias", true, "exit 2 if a framework, GPU family or method group of 5+ rows has |mean signed error| above this fraction"},
    {"catalog", true, "extra catalog CSV; repeatable"},
    {"calibration", true, "calibration CSV overriding the built-in constants"},
    {"serving-loso", true, "per-source serving constants (data/serving_loso_fits.csv, from tools/fit_serving.py): serving rows also predicted leave-one-source-out"},
    {"model-configs", true, "folder of Hugging Face config.json files for serving rows whose model has no preset; repeatable"},
    {"serving-csv", true, "write every compared serving number as CSV here (tools/fit_serving.py reads it)"},
    {"pool-hardware", true, "mixed-pool runs: the hardware each run names (default validation/pools/hardware.csv)"},
    {"pool-models", true, "mixed-pool runs: the models they train (default validation/pools/models.csv)"},
    {"help", false, "this help"},
};

// Serving files (serving_runs.csv, inference.csv: told apart by their header) through the serving
// model; prints the report and returns its Markdown section (docs/validation.md "Serving").
Result<std::string> ValidateServingFiles(const Args& args, const std::vector<std::string>& files, const Catalog& catalog,
                                         const Calibration& cal) {
  auto engines = LoadServingEngines();
  if (!engines.ok()) return engines.status();
  ServingRowOptions opt;
  if (auto it = args.flags.find("model-configs"); it != args.flags.end()) opt.model_config_dirs = it->second;
  std::optional<LosoFits> loso;
  if (args.Has("serving-loso")) {
    auto fits = ReadLosoFits(args.Get("serving-loso"));
    if (!fits.ok()) return fits.status();
    loso = std::move(fits.value());
  }
  auto rep = ValidateServing(files, catalog, cal, *engines, opt, loso ? &*loso : nullptr);
  if (!rep.ok()) return rep.status();
  for (const auto& r : rep->rows)
    if (!r.unreadable.empty()) std::fprintf(stderr, "gpuplan: warning: %s (row skipped)\n", r.unreadable.c_str());
  std::printf("%s", ServingValidationToText(*rep, args.Has("all")).c_str());
  if (args.Has("serving-csv")) {
    std::ofstream f(args.Get("serving-csv"));
    if (!f) return Status::BadInput({"command line", 0, "--serving-csv"}, "cannot write '" + args.Get("serving-csv") + "'");
    f << ServingComparedToCsv(*rep);
  }
  std::string inputs;
  for (const auto& p : files) inputs += (inputs.empty() ? "" : " ") + p.substr(p.find_last_of('/') + 1);
  return ServingValidationToMarkdown(*rep, inputs);
}
}  // namespace

namespace {
// `estimate JOB --pool POOL.yaml`: the pinned layout over the pool's groups (docs/model/pools.md MX§1-§5).
int EstimateOnPoolCommand(const Args& args, Format format) {
  const bool json = format == Format::kJson;
  for (const char* flag : {"ops"})
    if (args.Has(flag))
      return Fail(Status::BadInput({"command line", 0, std::string("--") + flag}, "not available with --pool"), json);
  auto ctx = LoadContext(args, /*finalize_job=*/false);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  auto pool = LoadPoolFlag(args, ctx->catalog);
  if (!pool.ok()) return Fail(pool.status(), json);
  auto job = FinalizeJobForPool(ctx->job, *pool);
  if (!job.ok()) return Fail(job.status(), json);
  auto layout = LayoutFromJob(*job, *pool);
  if (!layout.ok()) return Fail(layout.status(), json);
  auto est = EstimateOnPool(*job, *pool, *layout, ctx->catalog, ctx->cal);
  if (!est.ok()) return Fail(est.status(), json);
  if (json) {
    nlohmann::json out = PoolEstimateToJson(*pool, *est);
    if (!est->fits) out["error"] = ErrorToJson(Status::Infeasible(est->not_fit_reason))["error"];
    EmitJson(out);
  } else {
    const std::string text = PoolEstimateToText(*pool, *est, format == Format::kMarkdown);
    if (format == Format::kMarkdown) std::printf("%s", text.c_str());
    else PrintFitted(text);
    if (!est->fits) std::fprintf(stderr, "gpuplan: %s: does not fit: %s\n", args.Get("pool").c_str(), est->not_fit_reason.c_str());
  }
  return est->fits ? 0 : 2;
}
}  // namespace

int CmdEstimate(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = JobCommandFlags();
    // --pool: without --ledger a pool file (the job over its groups); with --ledger the ledger's pool (LedgerFlags).
    for (auto& l : LedgerFlags())
      f.push_back(l.name == "pool" ? FlagSpec{"pool", true,
                                              "POOL.yaml: the job over a mixed pool (groups of one card type; docs/model/pools.md): "
                                              "stages, cards, time, cost; with --ledger: the ledger pool whose measurements apply"}
                                   : l);
    f.push_back({"ops", false, "also print one layer's ops (FLOPs, HBM bytes, kernels, forward/backward time; JSON: \"ops\")"});
    return f;
  }();
  auto args = ParseArgs(argv, flags, true);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan estimate [JOB.yaml|JOB.json] [--flags]\n\nExit 2 (with every number) when the job does not fit in GPU memory.\n\n%s",
                FlagHelp(flags, true, false).c_str());
    return 0;
  }
  if (Status st = RefusePlanFlags(*args, "estimate"); !st.ok()) return Fail(st, json);
  if (Status st = RefuseServingFlags(*args, "estimate"); !st.ok()) return Fail(st, json);
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status(), json);
  if (args->Has("pool") && !args->Has("ledger")) return EstimateOnPoolCommand(*args, *format);
  auto ctx = LoadContext(*args);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  std::vector<CalibrationOverride> measured;
  if (Status st = ApplyLedger(*args, ctx.value(), measured); !st.ok()) return Fail(st, json);
  const Job* job = &ctx->job;
  const Catalog* catalog = &ctx->catalog;
  const Calibration* cal = &ctx->cal;
  auto hw = ResolveHardware(*job, *catalog, *cal);
  if (!hw.ok()) return Fail(hw.status(), json);
  const StepEstimate step = EstimateStep(*job, *hw);
  const BottleneckReport b = AnalyzeBottleneck(*job, catalog, *hw, step);
  EstimateReport r{*job, *hw, step, BuildMemoryReport(*job, hw->gpu, *cal), b.sentence, b.what_ifs, std::nullopt};
  if (job->training.tokens > 0) r.wall = EstimateJobWallClock(*job, *hw, step, *catalog, *cal);
  if (*format == Format::kJson) {
    nlohmann::json out = EstimateToJson(r);
    if (args->Has("ledger")) out["ledger"] = LedgerJson(*args, measured);
    if (args->Has("ops")) out["ops"] = OpsToJson(*job, *hw);
    if (!r.memory.fits) out["error"] = ErrorToJson(DoesNotFit(r.memory))["error"];
    EmitJson(out);
  } else {
    const std::string text = EstimateToText(r, *format == Format::kMarkdown) + LedgerText(*args, measured) +
                             (args->Has("ops") ? OpsToText(*job, *hw) : "");
    if (*format == Format::kMarkdown) std::printf("%s", text.c_str());
    else PrintFitted(text);
  }
  if (r.memory.fits) return 0;
  if (*format != Format::kJson) std::fprintf(stderr, "gpuplan: %s\n", DoesNotFit(r.memory).ToString().c_str());
  return 2;
}

int CmdValidate(const std::vector<std::string>& argv) {
  auto args = ParseArgs(argv, kValidateFlags, false);
  if (!args.ok()) return Fail(args.status());
  if (args->Has("help") || args->positional.empty()) {
    std::printf("usage: gpuplan validate RUNS.csv [MEMORY.csv ...] [--write docs/validation.md] [--bands data/error_bands.csv]\n"
                "                        [--loso data/loso_fits.csv] [--all]\n\n"
                "Predicts every usable row of a file in the validation formats (runs.csv, memory.csv, runs_vtrain.csv,\n"
                "peft_runs.csv; docs/validation-rows.md) and prints predicted vs measured with median / p90 error by framework,\n"
                "GPU family, method, scale and source. With --loso, every row is also predicted with the constants fitted\n"
                "without its source (leave-one-source-out); the report leads with those errors and the bands come from them.\n"
                "--write and --bands write the report page and the bands estimate and plan print (scripts/validate.sh\n"
                "regenerates docs/validation.md and data/error_bands.csv that way); without them nothing is written.\n"
                "Served runs (serving_runs.csv, inference.csv) are told apart by their header and predicted with the serving\n"
                "model: TTFT, TPOT and throughput by engine, GPU, scenario and source (--model-configs for models without a\n"
                "preset; --serving-loso for leave-one-source-out).\n\n%s",
                FlagHelp(kValidateFlags, false).c_str());
    if (args->Has("help")) return 0;
    return Fail(Status::BadInput({"command line", 0, "validate"}, "needs a file: gpuplan validate RUNS.csv [MEMORY.csv ...]"));
  }
  for (const char* flag : {"max-median", "max-p90", "max-memory-median", "max-bias"}) {
    if (!args->Has(flag)) continue;
    auto limit = ParseDecimal(args->Get(flag), {"command line", 0, std::string("--") + flag});
    if (!limit.ok()) return Fail(limit.status());
    if (*limit < 0) return Fail(Status::BadInput({"command line", 0, std::string("--") + flag}, "must be a fraction >= 0"));
  }
  auto catalog = LoadCatalogFromArgs(*args);
  if (!catalog.ok()) return Fail(catalog.status());
  auto cal = Calibration::Load(args->Get("calibration"));
  if (!cal.ok()) return Fail(cal.status());
  std::optional<LosoFits> loso;
  if (args->Has("loso")) {
    auto fits = ReadLosoFits(args->Get("loso"));
    if (!fits.ok()) return Fail(fits.status());
    loso = std::move(fits.value());
  }
  // Serving files go through the serving model; the rest is the training report, unchanged.
  std::vector<std::string> serving_files, training_files, pool_files;
  for (const auto& p : args->positional) {
    auto table = ReadCsvFile(p);
    if (table.ok() && IsPoolRunsFile(*table)) pool_files.push_back(p);
    else (DetectServingFile(p) != ServingFileKind::kNone ? serving_files : training_files).push_back(p);
  }
  std::string serving_md;
  // Mixed-pool runs (docs/model/pools.md): their own section, after the serving one.
  if (!pool_files.empty()) {
    auto pools = ValidatePoolRuns(pool_files, args->Get("pool-hardware", "validation/pools/hardware.csv"),
                                  args->Get("pool-models", "validation/pools/models.csv"), *catalog, *cal);
    if (!pools.ok()) return Fail(pools.status());
    const std::string md = PoolValidationToMarkdown(*pools);
    if (training_files.empty() && serving_files.empty()) {
      std::printf("%s", md.c_str());
      const std::string out = args->Get("write", "-");
      if (out == "-") return 0;
      std::ofstream f(out);
      if (!f) return Fail(Status::BadInput({"command line", 0, "--write"}, "cannot write '" + out + "'"));
      f << "# Mixed-pool validation\n\n" << md;
      std::printf("wrote %s\n", out.c_str());
      return 0;
    }
    serving_md += (serving_md.empty() ? "" : "\n") + md;
  }
  if (!serving_files.empty()) {
    auto md = ValidateServingFiles(*args, serving_files, *catalog, *cal);
    if (!md.ok()) return Fail(md.status());
    serving_md = *md + (serving_md.empty() ? "" : "\n" + serving_md);
  }
  if (training_files.empty()) {
    const std::string out = args->Get("write", "-");
    if (out == "-") return 0;
    std::ofstream f(out);
    if (!f) return Fail(Status::BadInput({"command line", 0, "--write"}, "cannot write '" + out + "'"));
    f << "# Serving validation\n\n" << serving_md;
    std::printf("wrote %s\n", out.c_str());
    return 0;
  }
  auto rep = ValidateRuns(training_files, *catalog, *cal, loso ? &*loso : nullptr);
  if (!rep.ok()) return Fail(rep.status());
  // A row with an unreadable cell is skipped, not the file: each is named here (file:line: column: reason).
  for (const auto& v : rep->rows)
    if (!v.row.unreadable.empty()) std::fprintf(stderr, "gpuplan: warning: %s (row skipped)\n", v.row.unreadable.c_str());
  std::printf("%s", ValidationToText(*rep, args->Has("all")).c_str());
  const std::string out = args->Get("write", "-");
  if (out != "-") {
    std::ofstream f(out);
    if (!f) return Fail(Status::BadInput({"command line", 0, "--write"}, "cannot write '" + out + "'"));
    std::string inputs;
    // File names only: the page is published, the directories they were read from are not.
    for (const auto& p : training_files) inputs += (inputs.empty() ? "" : " ") + p.substr(p.find_last_of('/') + 1);
    std::string page = ValidationToMarkdown(*rep, inputs, *cal);
    if (!serving_md.empty()) {
      // A pointer under the page's first paragraph: the serving section follows the training tables.
      const size_t first = page.find("\n\n", page.find("\n\n") + 2);
      const bool serving = !serving_files.empty(), pools = !pool_files.empty();
      if (first != std::string::npos)
        page.insert(first, std::string("\n\n") +
                               (serving ? "Served runs (latency, throughput, KV capacity of inference engines) are in [Serving](#serving)" : "") +
                               (serving && pools ? "; runs" : pools ? "Runs" : "") +
                               (pools ? " with pinned stage layouts (mixed pools, uneven stages) are in [Mixed pools](#mixed-pools)" : "") +
                               " at the end of this page.");
      page += "\n" + serving_md;
    }
    f << page;
    std::printf("wrote %s\n", out.c_str());
  }
  // The error bands every estimate and plan prints (data/error_bands.csv): written where --bands says.
  const std::string bands = args->Get("bands", "-");
  if (bands != "-") {
    std::ofstream f(bands);
    if (!f) return Fail(Status::BadInput({"command line", 0, "--bands"}, "cannot write '" + bands + "'"));
    f << ErrorBandsToCsv(rep->bands);
    std::printf("wrote %s\n", bands.c_str());
  }
  auto threshold = [&](const char* flag, double value) -> int {
    if (!args->Has(flag)) return 0;
    const double limit = *ParseDecimal(args->Get(flag), {});
    if (value > limit) {
      std::fprintf(stderr, "gpuplan: --%s %.3f exceeded: %.3f\n", flag, limit, value);
      return 2;
    }
    return 0;
  };
  if (int rc = threshold("max-median", rep->overall.median_abs)) return rc;
  if (int rc = threshold("max-p90", rep->overall.p90_abs)) return rc;
  if (int rc = threshold("max-memory-median", rep->memory.median_abs)) return rc;
  if (args->Has("max-bias")) {
    // The acceptance groups: framework, GPU family and method, throughput and memory.
    double worst = 0;
    std::string which;
    for (const auto& g : rep->groups) {
      if (g.dimension != "framework" && g.dimension != "GPU family" && g.dimension != "method") continue;
      for (const auto* list : {&g.throughput, &g.memory})
        for (const auto& s : *list)
          if (s.rows >= kMinBandRows && std::fabs(s.mean_signed) > worst) {
            worst = std::fabs(s.mean_signed);
            which = std::string(list == &g.memory ? "memory " : "throughput ") + g.dimension + " " + s.group;
          }
    }
    if (int rc = threshold("max-bias", worst)) {
      std::fprintf(stderr, "gpuplan: largest bias: %s\n", which.c_str());
      return rc;
    }
  }
  return 0;
}

}  // namespace gpuplan::cli
