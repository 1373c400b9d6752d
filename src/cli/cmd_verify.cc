// gpuplan verify [--plan PLAN.json|JOB.yaml] FILE...: reads the outputs of nccl-tests, perftest,
// nvidia-smi, lspci, ibstat, fio, dcgmi and NCCL logs and says per check pass/warn/fail, the measured
// number, the number the plan assumed, and what to do next (docs/checks.md). Exit 0 all pass (warnings
// allowed), 2 a check failed, 1 bad input (an unrecognised or unreadable file, a bad flag).
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/checks.h"
#include "gpuplan/data.h"
#include "gpuplan/strings.h"
#include "verify_ledger.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& VerifyFlags() {
  static const std::vector<FlagSpec> flags = {
      {"plan", true, "PLAN.json (`gpuplan plan --json`) or JOB.yaml: compare with what that plan assumed"},
      {"plan-row", true, "row N of PLAN.json or of the planner's table (default 1)"},
      {"checks", true, "a checks CSV used instead of data/checks.csv (same header)"},
      {"line-rate-gbps", true, "NIC line rate for perftest checks when no plan or ibstat output gives it"},
      {"ledger", true, "record every reading into this resource ledger (SQLite; `gpuplan ledger` reads it)"},
      {"machine", true, "with --ledger: the host the outputs came from (required)"},
      {"pool", true, "with --ledger: the pool of identical machines it belongs to (default: its pool in the ledger)"},
      {"json", false, "JSON output (one record per reading and per check, each check with its source)"},
      {"format", true, "text|json (default text)"},
      {"catalog", true, "extra catalog CSV (GPUs, links, instances, storage); repeatable"},
      {"calibration", true, "calibration CSV overriding data/calibration.csv and data/efficiency.csv"},
      {"help", false, "this help"},
  };
  return flags;
}

Location Flag(const std::string& name) { return {"command line", 0, "--" + name}; }

std::string Where(const Location& l) { return l.file + ":" + std::to_string(l.line); }

nlohmann::json ReadingJson(const Reading& r) {
  nlohmann::json j = {{"kind", ToString(r.kind)}, {"tool", r.tool}, {"metric", r.metric}, {"value", r.value}, {"unit", r.unit},
                      {"text", r.text.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.text)}, {"context", r.context}, {"where", Where(r.where)}};
  return j;
}

nlohmann::json CheckJson(const CheckResult& c) {
  return {{"id", c.id.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.id)},
          {"verdict", ToString(c.verdict)},
          {"tool", c.tool},
          {"metric", c.metric},
          {"measured", c.measured},
          {"measured_text", c.measured_text.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.measured_text)},
          {"unit", c.unit},
          {"expected", c.expected ? nlohmann::json(*c.expected) : nlohmann::json(nullptr)},
          {"expected_from", c.expected_from},
          {"message", c.message},
          {"next", c.next.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.next)},
          {"troubleshooting", c.troubleshooting},
          {"source", c.source},
          {"date", c.date},
          {"where", Where(c.where)},
          {"rule", c.rule.file.empty() ? nlohmann::json(nullptr) : nlohmann::json(Where(c.rule))}};
}

nlohmann::json ReportJson(const VerifyReport& rep, const std::optional<PlanContext>& plan) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& o : rep.outputs) {
    nlohmann::json readings = nlohmann::json::array(), warnings = nlohmann::json::array();
    for (const auto& r : o.readings) readings.push_back(ReadingJson(r));
    for (const auto& w : o.warnings) warnings.push_back({{"where", Where(w.where)}, {"message", w.message}});
    files.push_back({{"file", o.file}, {"kind", ToString(o.kind)}, {"tool", o.tool}, {"readings", readings}, {"warnings", warnings}});
  }
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : rep.results) checks.push_back(CheckJson(c));
  nlohmann::json p = nullptr;
  if (plan)
    p = {{"origin", plan->plan.origin}, {"gpu", plan->hw.gpu.id}, {"nodes", plan->plan.nodes}, {"gpus_per_node", plan->plan.gpus_per_node},
         {"instance", plan->plan.instance}, {"network", plan->plan.network.id}, {"nics_per_node", plan->plan.nics_per_node},
         {"line_rate_gbit_per_s", plan->line_rate_gbit_per_s ? nlohmann::json(*plan->line_rate_gbit_per_s) : nlohmann::json(nullptr)}};
  return {{"gpuplan_version", kVersion}, {"model_fingerprint", ModelFingerprint()}, {"plan", p}, {"files", files}, {"checks", checks},
          {"unrecognised", rep.unrecognised},
          {"summary", {{"pass", rep.passes}, {"warn", rep.warnings}, {"fail", rep.failures}, {"n/a", rep.not_applicable}}},
          {"exit_code", rep.ExitCode()}};
}

std::string Measured(const CheckResult& c) {
  if (!c.measured_text.empty()) return c.measured_text.size() > 40 ? c.measured_text.substr(0, 37) + "..." : c.measured_text;
  return FormatNumber(c.measured >= 100 ? "%.0f" : "%.4g", c.measured) + " " + c.unit;
}

void PrintText(const VerifyReport& rep, const std::optional<PlanContext>& plan) {
  std::string out;
  Appendf(&out, "gpuplan verify: %zu file(s), ", rep.outputs.size());
  if (plan)
    Appendf(&out, "against %s (%lld x %s, %lld GPUs per node%s)\n", plan->plan.origin.c_str(), static_cast<long long>(plan->plan.nodes),
                plan->plan.instance.empty() ? plan->hw.gpu.id.c_str() : plan->plan.instance.c_str(), static_cast<long long>(plan->plan.gpus_per_node),
                plan->plan.nodes > 1 ? (", " + plan->plan.network.id + (plan->plan.nics_per_node ? " x " + std::to_string(plan->plan.nics_per_node) : std::string())).c_str() : "");
  else
    Appendf(&out, "against the thresholds of data/checks.csv (no --plan)\n");
  Appendf(&out, "\nfiles:\n");
  for (const auto& o : rep.outputs) {
    if (o.kind == ToolKind::kUnknown) {
      Appendf(&out, "  %-48s UNRECOGNISED: not an output gpuplan reads (nothing read)\n", o.file.c_str());
      continue;
    }
    Appendf(&out, "  %-48s %s%s, %zu readings%s\n", o.file.c_str(), ToString(o.kind).c_str(), o.tool.empty() ? "" : (" (" + o.tool + ")").c_str(),
                o.readings.size(), o.warnings.empty() ? "" : (", " + std::to_string(o.warnings.size()) + " warning(s)").c_str());
    // The numbers a user looks for first.
    static const char* kHeadline[] = {"busbw_peak_gb_per_s", "busbw_avg_gb_per_s", "bw_avg_gbit_per_s", "lat_typical_us", "nvlink_count", "transport"};
    for (const char* m : kHeadline)
      for (const auto& r : o.readings) {
        if (r.metric != m) continue;
        std::string ctx;
        for (const char* k : {"op", "ranks", "nodes", "msg_bytes", "device", "gpu_name"})
          if (r.context.count(k) && r.context.at(k) != "unknown") ctx += (ctx.empty() ? "" : ", ") + std::string(k) + " " + r.context.at(k);
        Appendf(&out, "      %s = %s%s\n", m, r.text.empty() ? (FormatNumber("%.6g", r.value) + " " + r.unit).c_str() : r.text.c_str(),
                    ctx.empty() ? "" : (" (" + ctx + ")").c_str());
        break;
      }
  }
  Appendf(&out, "\nchecks:\n  %-7s %-24s %-22s %-24s %s\n", "VERDICT", "CHECK", "MEASURED", "EXPECTED", "WHERE");
  for (const auto& c : rep.results) {
    std::string exp = c.expected ? FormatNumber(*c.expected >= 100 ? "%.0f" : "%.4g", *c.expected) + " " + c.unit
                      : !c.expected_from.empty() && c.expected_from.size() <= 24 ? c.expected_from : "-";
    Appendf(&out, "  %-7s %-24s %-22s %-24s %s\n", ToString(c.verdict).c_str(), (c.id.empty() ? c.metric : c.id).c_str(), Measured(c).c_str(), exp.c_str(),
                Where(c.where).c_str());
    if (c.verdict == Verdict::kPass) continue;
    Appendf(&out, "          %s\n", c.message.c_str());
    if (!c.next.empty()) Appendf(&out, "          next: %s\n", c.next.c_str());
    if (!c.troubleshooting.empty()) Appendf(&out, "          see: %s\n", c.troubleshooting.c_str());
    if (!c.source.empty()) Appendf(&out, "          source: %s (%s; %s)\n", c.source.c_str(), c.date.c_str(), Where(c.rule).c_str());
  }
  bool any = false;
  for (const auto& o : rep.outputs)
    for (const auto& w : o.warnings) {
      if (o.kind == ToolKind::kUnknown) continue;
      if (!any) Appendf(&out, "\nwarnings (outputs cut short, garbled or excerpted):\n");
      any = true;
      Appendf(&out, "  %s: %s\n", Where(w.where).c_str(), w.message.c_str());
    }
  Appendf(&out, "\nsummary: %d pass, %d warn, %d fail, %d n/a", rep.passes, rep.warnings, rep.failures, rep.not_applicable);
  if (!rep.unrecognised.empty()) Appendf(&out, ", %zu unrecognised file(s)", rep.unrecognised.size());
  Appendf(&out, " -> exit %d", rep.ExitCode());
  if (!rep.unrecognised.empty() && rep.failures > 0) Appendf(&out, " (a check failed; the unrecognised file(s) were not read)");
  Appendf(&out, "\n");
  PrintFitted(out);
}

}  // namespace

int CmdVerify(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, VerifyFlags(), false);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan verify [--plan PLAN.json|JOB.yaml [--plan-row N]] FILE...\n\n"
                "Reads nccl-tests/rccl-tests, perftest (ib_write_bw, ib_read_bw, ib_*_lat), nvidia-smi (topo -m, topo -p2p, -q,\n"
                "the table, nvlink -s), lspci -vv, ibstat, fio JSON, dcgmi diag and NCCL_DEBUG=INFO logs (the kind is read from the\n"
                "content), and checks each against data/checks.csv and, with --plan, against what the plan assumed.\n"
                "Exit codes: 0 every check passed (warnings allowed), 2 a check failed (whatever else the batch holds),\n"
                "1 bad input (an unrecognised file, when no check failed).\n\n%s",
                FlagHelp(VerifyFlags(), false).c_str());
    return 0;
  }
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status(), json);
  if (*format != Format::kText && *format != Format::kJson) return Fail(Status::BadInput(Flag("format"), "verify prints text or json"), json);
  if (args->positional.empty()) return Fail(Status::BadInput({"command line", 0, "FILE"}, "give at least one tool output to read (`gpuplan checklist` lists them)"), json);
  auto catalog = LoadCatalogFromArgs(*args);
  if (!catalog.ok()) return Fail(catalog.status(), json);
  auto rules = LoadCheckRules(args->Get("checks"));
  if (!rules.ok()) return Fail(rules.status(), json);
  VerifyOptions opt;
  opt.rules = *rules;
  opt.catalog = &*catalog;
  if (args->Has("line-rate-gbps")) {
    auto v = ParseDecimalIn(args->Get("line-rate-gbps"), Flag("line-rate-gbps"), {0, 1e5, true});
    if (!v.ok()) return Fail(v.status(), json);
    opt.line_rate_gbit_per_s = *v;
  }
  if (args->Has("plan-row") && !args->Has("plan")) return Fail(Status::BadInput(Flag("plan-row"), "only with --plan"), json);
  if (args->Has("plan")) {
    auto cal = Calibration::Load(args->Get("calibration"));
    if (!cal.ok()) return Fail(cal.status(), json);
    auto row = ParseInteger(args->Get("plan-row", "1"), Flag("plan-row"), 1, 1 << 20);
    if (!row.ok()) return Fail(row.status(), json);
    auto lp = LoadPlanFile(args->Get("plan"), *row, *catalog, *cal);
    if (!lp.ok()) return Fail(lp.status(), json);
    auto pc = MakePlanContext(*lp, *catalog, *cal);
    if (!pc.ok()) return Fail(pc.status(), json);
    opt.plan = *pc;
  }
  if ((args->Has("machine") || args->Has("pool")) && !args->Has("ledger"))
    return Fail(Status::BadInput(Flag(args->Has("machine") ? "machine" : "pool"), "only with --ledger"), json);
  if (args->Has("ledger") && args->Get("machine").empty())
    return Fail(Status::BadInput(Flag("machine"), "--ledger needs the host the outputs came from (--machine HOST)"), json);
  std::vector<ToolOutput> outputs;
  for (const auto& path : args->positional) {
    auto out = ReadToolOutput(path);
    if (!out.ok()) return Fail(out.status(), json);
    outputs.push_back(std::move(out).value());
  }
  const VerifyReport rep = RunChecks(std::move(outputs), opt);
  nlohmann::json ledger = nullptr;
  if (args->Has("ledger")) {
    auto n = RecordVerifyReadings(args->Get("ledger"), args->Get("machine"), args->Get("pool"), rep.outputs);
    if (!n.ok()) return Fail(n.status(), json);
    ledger = {{"path", args->Get("ledger")}, {"machine", args->Get("machine")}, {"measurements_recorded", *n}};
  }
  if (json) {
    nlohmann::json j = ReportJson(rep, opt.plan);
    j["ledger"] = ledger;
    EmitJson(j);
  } else {
    PrintText(rep, opt.plan);
    if (!ledger.is_null())
      std::printf("recorded %lld readings for %s in %s\n", static_cast<long long>(ledger["measurements_recorded"].get<int64_t>()),
                  args->Get("machine").c_str(), args->Get("ledger").c_str());
  }
  return rep.ExitCode();
}

}  // namespace gpuplan::cli
