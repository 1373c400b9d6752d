// gpuplan checklist JOB.yaml|PLAN.json [--plan N]: the validation list (docs/troubleshooting.md) for one plan, with
// the exact commands for its nodes, the file to save each output to, and the number each should reach;
// `gpuplan verify --plan ... FILES` reads the saved outputs back (docs/checks.md "Checklist").
#include <cstdio>
#include <set>

#include "cli.h"
#include "commands.h"
#include "gpuplan/checks.h"
#include "gpuplan/data.h"
#include "gpuplan/strings.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& ChecklistFlags() {
  static const std::vector<FlagSpec> flags = {
      {"plan", true, "row N of PLAN.json or of the planner's table (default 1)"},
      {"checks", true, "a checks CSV used instead of data/checks.csv (same header)"},
      {"json", false, "JSON output"},
      {"format", true, "text|json (default text)"},
      {"catalog", true, "extra catalog CSV (GPUs, links, instances, storage); repeatable"},
      {"calibration", true, "calibration CSV overriding data/calibration.csv and data/efficiency.csv"},
      {"help", false, "this help"},
  };
  return flags;
}

Location Flag(const std::string& name) { return {"command line", 0, "--" + name}; }

}  // namespace

int CmdChecklist(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, ChecklistFlags(), false);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan checklist JOB.yaml|PLAN.json [--plan N]\n\n"
                "Prints the validation list for the plan (a tiny job, topo -m, clocks, PCIe, ib_write_bw, nccl-tests, the NCCL\n"
                "transport, storage, dcgmi, a checkpoint round trip, the profiler) with the commands for its nodes and the number\n"
                "each should reach; save the outputs and run `gpuplan verify --plan FILE OUTPUTS...`.\n"
                "Why each step: docs/troubleshooting.md#validation-list.\n\n%s",
                FlagHelp(ChecklistFlags(), false).c_str());
    return 0;
  }
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status(), json);
  if (*format != Format::kText && *format != Format::kJson) return Fail(Status::BadInput(Flag("format"), "checklist prints text or json"), json);
  if (args->positional.size() != 1)
    return Fail(Status::BadInput({"command line", 0, ""}, "give one JOB.yaml or PLAN.json (`gpuplan plan JOB.yaml --json > PLAN.json`)"), json);
  auto catalog = LoadCatalogFromArgs(*args);
  if (!catalog.ok()) return Fail(catalog.status(), json);
  auto cal = Calibration::Load(args->Get("calibration"));
  if (!cal.ok()) return Fail(cal.status(), json);
  auto rules = LoadCheckRules(args->Get("checks"));
  if (!rules.ok()) return Fail(rules.status(), json);
  auto row = ParseInteger(args->Get("plan", "1"), Flag("plan"), 1, 1 << 20);
  if (!row.ok()) return Fail(row.status(), json);
  const std::string file = args->positional[0];
  auto lp = LoadPlanFile(file, *row, *catalog, *cal, "--plan");
  if (!lp.ok()) return Fail(lp.status(), json);
  auto pc = MakePlanContext(*lp, *catalog, *cal);
  if (!pc.ok()) return Fail(pc.status(), json);
  const std::string plan_arg = file + (*row != 1 ? " --plan " + std::to_string(*row) : "");
  auto steps = BuildChecklist(*pc, *catalog, *rules, plan_arg);
  if (!steps.ok()) return Fail(steps.status(), json);
  std::string files;
  std::set<std::string> seen;
  for (const auto& s : *steps)
    for (const auto& f : SplitList(s.save_as, ' '))
      if (!f.empty() && seen.insert(f).second) files += (files.empty() ? "" : " ") + f;
  const std::string plan_flag = "--plan " + file + (*row != 1 ? " --plan-row " + std::to_string(*row) : "");
  const std::string verify = "gpuplan verify " + plan_flag + " " + files;
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : *steps)
      list.push_back({{"title", s.title}, {"commands", s.commands}, {"save_as", s.save_as}, {"expect", s.expect}, {"why", s.why}});
    EmitJson({{"gpuplan_version", kVersion}, {"model_fingerprint", ModelFingerprint()}, {"plan", lp->origin}, {"nodes", lp->nodes}, {"gpus_per_node", lp->gpus_per_node}, {"gpu", pc->hw.gpu.id},
              {"network", lp->network.id}, {"steps", list}, {"verify", verify}});
    return 0;
  }
  std::string out;
  Appendf(&out, "checklist for %s: %lld node(s) x %lld %s%s\n(docs/troubleshooting.md#validation-list: run on the cluster, save each output, then verify)\n", lp->origin.c_str(),
              static_cast<long long>(lp->nodes), static_cast<long long>(lp->gpus_per_node), pc->hw.gpu.id.c_str(),
              lp->nodes > 1 ? (", " + lp->network.id).c_str() : "");
  int n = 0;
  for (const auto& s : *steps) {
    Appendf(&out, "\n%d. %s\n", ++n, s.title.c_str());
    for (const auto& c : s.commands) Appendf(&out, "   $ %s\n", c.c_str());
    if (!s.save_as.empty()) Appendf(&out, "   save: %s\n", s.save_as.c_str());
    if (!s.expect.empty()) Appendf(&out, "   expect: %s\n", s.expect.c_str());
    Appendf(&out, "   why: %s\n", s.why.c_str());
  }
  Appendf(&out, "\nthen: %s\n", verify.c_str());
  PrintFitted(out);
  return 0;
}

}  // namespace gpuplan::cli
