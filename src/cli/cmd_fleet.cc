// `gpuplan fleet FLEET.yaml [--json] [--simulate TRACE.csv] [--export slurm|kueue --out DIR]`: the pool's cards
// assigned to the fleet's jobs (docs/fleet.md), against the type-blind first-come-first-served baseline.
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/fleet.h"
#include "gpuplan/fleet_export.h"
#include "gpuplan/launch.h"
#include "gpuplan/serving.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& FleetFlags() {
  static const std::vector<FlagSpec> flags = {
      {"json", false, "JSON output"},
      {"format", true, "text|json|html (default text); html: one self-contained report page (inline SVG plots, no script, "
                       "no network) on stdout, e.g. --format html > fleet.html"},
      LangFlag(),
      {"simulate", true, "replay a trace (CSV: arrival_s,job[,name][,tokens][,deadline_hours]) and compare average "
                         "completion time and utilisation with the baseline"},
      {"export", true, "slurm | kueue: write the assignment for the scheduler (needs --out)"},
      {"out", true, "the folder the export writes"},
      {"image", true, "kueue: the container image of the Jobs (default: a placeholder to replace)"},
      {"namespace", true, "kueue: the namespace of the LocalQueue and the Jobs (default: default)"},
      {"catalog", true, "extra catalog CSV (GPUs, links, instances, storage); repeatable"},
      {"calibration", true, "calibration CSV overriding data/calibration.csv and data/efficiency.csv"},
      {"help", false, "this help"},
  };
  return flags;
}

Location Flag(const std::string& name) { return {"command line", 0, "--" + name}; }

constexpr size_t kCardsWidth = 34;  // the cards column of the text table

std::string Cards(const Fleet& fleet, const FleetAssignment& a) {
  std::string s;
  int64_t n = 0;
  for (const auto& g : a.gpus) {
    s += (s.empty() ? "" : " + ") + fleet.pool.groups[g.group].name + " x" + std::to_string(g.count);
    n += g.count;
  }
  // Too long for its column: the count (the layout line below names every group's cards).
  if (s.size() > kCardsWidth) s = std::to_string(n) + " cards of " + std::to_string(a.gpus.size()) + " groups";
  return s.empty() ? "-" : s;
}

nlohmann::json ScheduleJson(const Fleet& fleet, const FleetSchedule& s) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& a : s.assignments) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : a.gpus) gpus.push_back({{"pool", fleet.pool.groups[g.group].name}, {"count", g.count}});
    nlohmann::json j = {{"job", a.job},
                        {"kind", ToString(a.kind)},
                        {"gpus", gpus},
                        {"layout", a.layout},
                        {"arrival_s", a.arrival_s},
                        {"start_s", a.start_s},
                        {"end_s", a.end_s},
                        {"time_s", a.time_s},
                        {"tokens_per_s", a.tokens_per_s},
                        {"cost_usd", a.cost_usd ? nlohmann::json(*a.cost_usd) : nlohmann::json(nullptr)},
                        {"deadline_met", a.has_deadline || a.kind == FleetJobKind::kServing || a.gpus.empty()
                                             ? nlohmann::json(a.deadline_met) : nlohmann::json(nullptr)},
                        {"note", a.note}};
    if (!a.placement.empty()) j["placement"] = a.placement;
    list.push_back(j);
  }
  return {{"policy", s.policy},
          {"assignments", list},
          {"utilization", s.utilization},
          {"horizon_s", s.horizon_s},
          {"busy_gpu_s", s.busy_gpu_s},
          {"pool_gpus", s.pool_gpus},
          {"avg_completion_s", s.avg_completion_s},
          {"cost_usd", s.cost_usd ? nlohmann::json(*s.cost_usd) : nlohmann::json(nullptr)}};
}

nlohmann::json ResultJson(const Fleet& fleet, const FleetResult& r, bool simulated) {
  nlohmann::json out = ScheduleJson(fleet, r.policy);
  out["version"] = kVersion;
  out["fleet"] = fleet.file;
  out["pool"] = fleet.pool.name;
  out["simulated"] = simulated;
  out["baseline"] = ScheduleJson(fleet, r.baseline);
  out["missed"] = r.missed;
  out["notes"] = r.notes;
  out["evaluations"] = r.evaluations;
  return out;
}

std::string Money(const std::optional<double>& usd) {
  if (!usd) return "unpriced";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", *usd);
  return buf;
}

void ScheduleText(std::string* out, const Fleet& fleet, const FleetSchedule& s) {
  Appendf(out, "%-18s %-8s %-34s %8s %8s %8s %9s %-8s\n", "job", "kind", "cards", "start h", "time h", "end h", "cost USD",
          "deadline");
  for (const auto& a : s.assignments) {
    const char* met = a.kind == FleetJobKind::kServing ? (a.deadline_met ? "SLA met" : "SLA miss")
                      : a.has_deadline                 ? (a.deadline_met ? "met" : "MISSED")
                                                       : "-";
    Appendf(out, "%-18.18s %-8s %-34.34s %8.2f %8.2f %8.2f %9s %-8s\n", a.job.c_str(), ToString(a.kind).c_str(),
            Cards(fleet, a).c_str(), a.start_s / 3600, a.time_s / 3600, a.end_s / 3600, Money(a.cost_usd).c_str(), met);
    if (!a.layout.empty()) Appendf(out, "    layout: %s\n", a.layout.c_str());
    if (!a.note.empty()) Appendf(out, "    note: %s\n", a.note.c_str());
  }
  Appendf(out, "utilisation %.1f%% (%.0f card-hours busy of %lld cards x %.2f h); cost %s USD", 100 * s.utilization,
          s.busy_gpu_s / 3600, static_cast<long long>(s.pool_gpus), s.horizon_s / 3600, Money(s.cost_usd).c_str());
  Appendf(out, "; average completion %.2f h", s.avg_completion_s / 3600);
  Appendf(out, "\n");
}

std::string ResultText(const Fleet& fleet, const FleetResult& r, bool simulated) {
  std::string out;
  Appendf(&out, "gpuplan fleet %s: pool %s (%lld cards in %zu groups), %zu jobs%s\n\n", fleet.file.c_str(),
          fleet.pool.name.c_str(), static_cast<long long>(fleet.pool.GpusUsable()), fleet.pool.groups.size(),
          fleet.jobs.size(), simulated ? ", simulated trace" : "");
  Appendf(&out, "Heterogeneity-aware assignment (serving first, deadlines earliest first, then marginal throughput)\n");
  ScheduleText(&out, fleet, r.policy);
  Appendf(&out, "\nBaseline: first come, first served, type-blind (cards from the groups in the order listed)\n");
  ScheduleText(&out, fleet, r.baseline);
  const double base_u = r.baseline.utilization, pol_u = r.policy.utilization;
  Appendf(&out, "\nPolicy vs baseline:\n  utilisation          %6.1f%% vs %6.1f%%\n  last training end    %6.2f h vs %6.2f h\n",
          100 * pol_u, 100 * base_u, r.policy.horizon_s / 3600, r.baseline.horizon_s / 3600);
  Appendf(&out, "  average completion   %6.2f h vs %6.2f h (training jobs, arrival to end)\n", r.policy.avg_completion_s / 3600,
          r.baseline.avg_completion_s / 3600);
  for (const auto& m : r.missed) Appendf(&out, "CANNOT MEET %s\n", m.c_str());
  for (const auto& n : r.notes) Appendf(&out, "note: %s\n", n.c_str());
  return out;
}

int Export(const Args& args, const Fleet& fleet, const FleetResult& r, bool json, std::string* wrote) {
  const auto format = ParseFleetExportFormat(args.Get("export"));  // checked before the plan
  FleetExportOptions o;
  if (args.Has("image")) o.image = args.Get("image");
  if (args.Has("namespace")) o.namespace_name = args.Get("namespace");
  auto files = FleetArtifacts(*format, fleet, r.policy, o);
  if (!files.ok()) return Fail(files.status(), json);
  if (Status st = WriteArtifacts(*files, args.Get("out")); !st.ok()) return Fail(st, json);
  Appendf(wrote, "\nwrote %zu files to %s:", files->size(), args.Get("out").c_str());
  for (const auto& f : *files) Appendf(wrote, " %s", f.name.c_str());
  Appendf(wrote, "\n");
  return 0;
}

}  // namespace

int CmdFleet(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, FleetFlags(), false);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan fleet FLEET.yaml [--json|--format html] [--simulate TRACE.csv] [--export slurm|kueue --out DIR]\n\n"
                "Assigns a pool's cards to many jobs (docs/fleet.md). Exit 2 when a deadline or an SLA cannot be met.\n"
                "--format html > fleet.html: the same answer as one page with its plots (docs/report-html.md).\n\n%s",
                FlagHelp(FleetFlags(), false).c_str());
    return 0;
  }
  auto format = GetFormat(*args, /*allow_html=*/true);
  if (!format.ok()) return Fail(format.status(), json);
  if (*format != Format::kText && *format != Format::kJson && *format != Format::kHtml)
    return Fail(Status::BadInput(Flag("format"), "fleet prints text, json or html"), json);
  auto html = GetHtmlOptions(*args, *format);
  if (!html.ok()) return Fail(html.status(), json);
  if (args->positional.size() != 1)
    return Fail(Status::BadInput({"command line", 0, ""}, "give one fleet file (gpuplan fleet FLEET.yaml)"), json);
  if (args->Has("out") && !args->Has("export")) return Fail(Status::BadInput(Flag("out"), "is the folder of --export"), json);
  if (args->Has("export") && !ParseFleetExportFormat(args->Get("export")))
    return Fail(Status::BadInput(Flag("export"), "expected slurm or kueue, got '" + args->Get("export") + "'"), json);
  if (args->Has("export") && !args->Has("out"))
    return Fail(Status::BadInput(Flag("export"), "needs --out DIR (the folder to write)"), json);
  auto catalog = LoadCatalogFromArgs(*args);
  if (!catalog.ok()) return Fail(catalog.status(), json);
  auto cal = Calibration::Load(args->Get("calibration"));
  if (!cal.ok()) return Fail(cal.status(), json);
  auto engines = LoadServingEngines();
  if (!engines.ok()) return Fail(engines.status(), json);
  auto fleet = LoadFleetFile(args->positional[0], *catalog);
  if (!fleet.ok()) return Fail(fleet.status(), json);
  std::vector<FleetArrival> arrivals;
  if (args->Has("simulate")) {
    auto trace = LoadFleetTrace(args->Get("simulate"), *fleet);
    if (!trace.ok()) return Fail(trace.status(), json);
    arrivals = std::move(trace).value();
  }
  auto r = PlanFleet(*fleet, *catalog, *cal, *engines, arrivals);
  if (!r.ok()) return Fail(r.status(), json);
  // The export first: a failed write prints its error alone (one JSON document under --json).
  std::string wrote;
  if (args->Has("export"))
    if (int rc = Export(*args, *fleet, *r, json, &wrote); rc != 0) return rc;
  if (*format == Format::kHtml) {
    const int rc = PrintHtml(FleetToHtml(*fleet, *r, !arrivals.empty(), *html), r->missed.empty() ? 0 : 2);
    if (!wrote.empty()) std::fputs(wrote.c_str(), stderr);  // the page alone on stdout
    return rc;
  }
  if (json) EmitJson(ResultJson(*fleet, *r, !arrivals.empty()));
  else PrintFitted(ResultText(*fleet, *r, !arrivals.empty()) + wrote);
  if (!r->missed.empty() && !json)
    std::fprintf(stderr, "gpuplan: fleet: %zu job(s) cannot meet a deadline or SLA (exit 2)\n", r->missed.size());
  return r->missed.empty() ? 0 : 2;
}

}  // namespace gpuplan::cli
