// gpuplan calibrate JOB.yaml --ledger PATH [--pool NAME] > my-calibration.csv: the pool's
// measurements as calibration overrides (docs/calibrate.md); what was used and skipped on stderr.
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/calibrate.h"
#include "gpuplan/input_file.h"
#include "gpuplan/launch.h"
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
    f.push_back({"instance", true, "the catalog instance the pool is (its GPU, GPUs per node, network and NIC count: a p5 has 32 EFA NICs)"});
    f.push_back({"plan", true, "a PLAN.json (`gpuplan plan --json`): its row's job and instance instead of JOB.yaml"});
    f.push_back({"plan-row", true, "--plan: row N of the PLAN.json (default 1)"});
    return f;
  }();
  return flags;
}

Location Flag(const std::string& name) { return {"command line", 0, "--" + name}; }

// The instance is the hardware (as export resolves a pinned job's --instance): its GPU, GPUs per
// node and, unless the job names them, its network link and NIC count. A measured busbw is fitted
// against the machine's real NICs, not one per GPU.
Status ApplyInstance(Job& job, const Catalog& catalog, const std::string& id, const Location& where) {
  auto inst = catalog.FindInstance(id);
  if (!inst.ok()) return Status::BadInput(where, inst.status().reason());
  job.cluster.gpu = inst->gpu_id;
  if (inst->gpu_count > 0 && !job.IsSet("cluster.gpus_per_node")) job.cluster.gpus_per_node = inst->gpu_count;
  if (!job.IsSet("cluster.network") && !inst->network_link.empty() && inst->network_link != "unknown")
    job.cluster.network = inst->network_link;
  if (!job.IsSet("cluster.nics_per_node") && inst->nics) job.cluster.nics_per_node = static_cast<int64_t>(*inst->nics);
  if (!job.IsSet("cluster.gpudirect_rdma")) job.cluster.gpudirect_rdma = inst->gpudirect_rdma != "no" && inst->rdma != "no";
  return Status::Ok();
}

// JOB.yaml (with --instance) or a PLAN.json row (its own instance, or --instance): the job calibrate fits.
Result<Context> CalibrateContext(const Args& args) {
  const bool from_plan = args.Has("plan");
  if (from_plan && !args.positional.empty())
    return Status::BadInput(Flag("plan"), "give JOB.yaml or --plan PLAN.json, not both");
  if (!from_plan && args.Has("plan-row")) return Status::BadInput(Flag("plan-row"), "needs --plan PLAN.json");
  auto ctx = LoadContext(args, /*finalize_job=*/false);
  if (!ctx.ok()) return ctx.status();
  std::string instance = args.Get("instance");
  Location instance_at = Flag("instance");
  if (from_plan) {
    const std::string file = args.Get("plan");
    auto row = ParseInteger(args.Get("plan-row", "1"), Flag("plan-row"), 1, 1 << 20);
    if (!row.ok()) return row.status();
    auto text = ReadInputFile(file);
    if (!text.ok()) return text.status();
    if (!IsPlanJson(*text)) return Status::BadInput({file, 1, "plans"}, "not the output of `gpuplan plan --json` (no \"plans\" array)");
    auto pr = JobFromPlanJson(*text, file, *row);
    if (!pr.ok()) return pr.status();
    ctx->job = pr->job;
    if (instance.empty()) instance = pr->instance, instance_at = {file, 0, "plans[" + std::to_string(*row - 1) + "].instance"};
  }
  if (!instance.empty()) GPUPLAN_RETURN_IF_ERROR(ApplyInstance(ctx->job, ctx->catalog, instance, instance_at));
  GPUPLAN_RETURN_IF_ERROR(FinalizeJob(ctx->job));
  return ctx;
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
    std::printf("usage: gpuplan calibrate (JOB.yaml [--instance ID] | --plan PLAN.json [--plan-row N]) --ledger PATH [--pool NAME]\n"
                "                         > my-calibration.csv\n\n"
                "The job names the hardware the pool is (GPU, GPUs per node, network) and the job a measured step ran;\n"
                "--instance (or the PLAN.json row's instance) gives the machine's real NIC count.\n"
                "Then: gpuplan estimate JOB.yaml --calibration my-calibration.csv\n\n%s",
                FlagHelp(CalibrateFlags(), true, false).c_str());
    return 0;
  }
  if (Status st = RefusePlanFlags(*args, "calibrate"); !st.ok()) return Fail(st, json);
  auto ctx = CalibrateContext(*args);
  if (!ctx.ok()) return Fail(ctx.status(), json);
  auto r = LedgerOverrides(args->Get("ledger", Ledger::DefaultPath()), args->Get("pool"), args->Get("machine"), args->Get("since"), ctx->job,
                           ctx->catalog, ctx->cal);
  if (!r.ok()) return Fail(r.status(), json);
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& o : r->overrides)
      rows.push_back({{"key", o.key}, {"value", o.value}, {"before", o.before}, {"unit", o.unit}, {"measured", o.measured},
                      {"model_before", o.model_before}, {"ledger_row", o.from.id}, {"note", o.note}});
    EmitJson({{"overrides", rows}, {"skipped", r->skipped}, {"csv", CalibrationOverridesToCsv(r->overrides)}});
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
