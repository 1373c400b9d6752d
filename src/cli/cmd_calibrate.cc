// gpuplan calibrate JOB.yaml --ledger PATH [--pool NAME] > my-calibration.csv: the pool's
// measurements as calibration overrides (docs/calibrate.md); what was used and skipped on stderr.
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/calibrate.h"
#include "gpuplan/ledger.h"
#include "ledger_flags.h"

namespace gpuplan::cli {

namespace {
const std::vector<FlagSpec>& CalibrateFlags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> f = JobCommandFlags();
    f.push_back({"ledger", true, "the ledger database (default: " + Ledger::DefaultPath() + ")"});
    f.push_back({"pool", true, "only this pool's measurements (default: every pool)"});
    f.push_back({"machine", true, "only this machine's measurements"});
    f.push_back({"since", true, "only measurements at or after this date (YYYY-MM-DD)"});
    return f;
  }();
  return flags;
}
}  // namespace

// The overrides of a ledger's pool for a job: what calibrate prints and estimate/plan --ledger apply.
Result<CalibrateResult> LedgerOverrides(const std::string& path, const std::string& pool, const std::string& machine,
                                        const std::string& since, const Job& job, const Catalog& catalog, const Calibration& cal) {
  LedgerOptions lo;
  lo.create = false;
  auto ledger = Ledger::Open(path, lo);
  if (!ledger.ok()) return ledger.status();
  MeasurementFilter f;
  f.pool = pool;
  f.machine = machine;
  if (!since.empty()) {
    auto t = ParseUtcTime(since, {"command line", 0, "--since"});
    if (!t.ok()) return t.status();
    f.since_utc = *t;
  }
  auto ms = (*ledger)->Measurements(f);
  if (!ms.ok()) return ms.status();
  if (ms->empty())
    return Status::BadInput({path, 0, "--pool"}, "no measurements" + (pool.empty() ? std::string() : " in pool '" + pool + "'") +
                                                    " (gpuplan probe / gpuplan verify --ledger record them)");
  return CalibrateFromMeasurements(job, catalog, cal, *ms);
}

std::vector<FlagSpec> LedgerFlags() {
  return {{"ledger", true, "apply the measured numbers of a ledger's pool (gpuplan calibrate's overrides; default: none)"},
          {"pool", true, "the ledger pool whose measurements apply (default: every pool)"}};
}

Status ApplyLedger(const Args& args, Context& ctx, std::vector<CalibrationOverride>& applied) {
  if (!args.Has("ledger")) {
    if (args.Has("pool")) return Status::BadInput({"command line", 0, "--pool"}, "needs --ledger PATH");
    return Status::Ok();
  }
  Job job = ctx.job;
  if (Status st = FinalizeJob(job); !st.ok()) return st;
  auto r = LedgerOverrides(args.Get("ledger"), args.Get("pool"), "", "", job, ctx.catalog, ctx.cal);
  if (!r.ok()) return r.status();
  ApplyOverrides(r->overrides, ctx.cal);
  applied = r->overrides;
  return Status::Ok();
}

std::string LedgerText(const Args& args, const std::vector<CalibrationOverride>& applied) {
  if (!args.Has("ledger")) return "";
  const std::string pool = args.Get("pool").empty() ? "every pool" : "pool " + args.Get("pool");
  std::string s = "\nmeasured numbers (ledger " + args.Get("ledger") + ", " + pool + "):\n";
  if (applied.empty()) s += "  none of its measurements calibrates a constant (gpuplan calibrate says why)\n";
  for (const auto& o : applied)
    s += "  " + o.key + " " + FormatNumber("%g", o.before) + " -> " + FormatNumber("%g", o.value) + " from " + o.measured + " by " + o.from.tool +
         " on " + o.from.machine + " at " + o.from.time_utc + " (ledger row " + std::to_string(o.from.id) + ")\n";
  s += "  every other number is the catalog's or data/calibration.csv's\n";
  return s;
}

nlohmann::json LedgerJson(const Args& args, const std::vector<CalibrationOverride>& applied) {
  if (!args.Has("ledger")) return nullptr;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& o : applied)
    rows.push_back({{"key", o.key}, {"before", o.before}, {"value", o.value}, {"measured", o.measured}, {"tool", o.from.tool},
                    {"machine", o.from.machine}, {"time_utc", o.from.time_utc}, {"ledger_row", o.from.id}});
  return {{"path", args.Get("ledger")}, {"pool", args.Get("pool").empty() ? nlohmann::json(nullptr) : nlohmann::json(args.Get("pool"))},
          {"measured", rows}};
}

int CmdCalibrate(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, CalibrateFlags(), true);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan calibrate JOB.yaml --ledger PATH [--pool NAME] > my-calibration.csv\n\n"
                "The job names the hardware the pool is (GPU, GPUs per node, network) and the job a measured step ran.\n"
                "Then: gpuplan estimate JOB.yaml --calibration my-calibration.csv\n\n%s",
                FlagHelp(CalibrateFlags(), true, false).c_str());
    return 0;
  }
  if (Status st = RefusePlanFlags(*args, "calibrate"); !st.ok()) return Fail(st, json);
  auto ctx = LoadContext(*args);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  auto r = LedgerOverrides(args->Get("ledger", Ledger::DefaultPath()), args->Get("pool"), args->Get("machine"), args->Get("since"), ctx->job,
                           ctx->catalog, ctx->cal);
  if (!r.ok()) return Fail(r.status(), json);
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& o : r->overrides)
      rows.push_back({{"key", o.key}, {"value", o.value}, {"before", o.before}, {"unit", o.unit}, {"measured", o.measured},
                      {"model_before", o.model_before}, {"ledger_row", o.from.id}, {"note", o.note}});
    std::printf("%s\n", DumpJson({{"overrides", rows}, {"skipped", r->skipped}, {"csv", CalibrationOverridesToCsv(r->overrides)}}).c_str());
    return 0;
  }
  std::printf("%s", CalibrationOverridesToCsv(r->overrides).c_str());
  for (const auto& o : r->overrides)
    std::fprintf(stderr, "calibrate: %s: %g -> %g (%s; the model gave %s)%s\n", o.key.c_str(), o.before, o.value, o.measured.c_str(),
                 o.model_before.c_str(), o.note.empty() ? "" : (" — " + o.note).c_str());
  for (const auto& s : r->skipped) std::fprintf(stderr, "calibrate: skipped %s\n", s.c_str());
  if (r->overrides.empty()) {
    std::fprintf(stderr, "gpuplan: no measurement calibrates a key (see docs/calibrate.md for the kinds used)\n");
    return 2;
  }
  return 0;
}

}  // namespace gpuplan::cli
