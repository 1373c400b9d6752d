// Checks of tool outputs against data/checks.csv and a plan (docs/checks.md). Stages: load the rules
// -> derive each reading's scope keys -> resolve the number a rule compares with -> compare -> say
// what to do next. Every result names its rule's source and the troubleshooting row it leads to.
#include "gpuplan/checks.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/input_file.h"
#include "gpuplan/plan.h"
#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

std::string Fmt(double v) {
  char buf[64];
  const double a = std::abs(v);
  if (a >= 100 || v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (a >= 10) std::snprintf(buf, sizeof buf, "%.1f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::optional<double> Num(const std::string& s) {
  if (s.empty()) return std::nullopt;
  auto v = ParseDecimal(s, {});
  if (!v.ok()) return std::nullopt;
  return *v;
}

const std::set<std::string>& Ops() {
  static const std::set<std::string> k = {">=", "<=", "==", "!=", "contains", "!contains", "in", "none"};
  return k;
}

std::optional<CheckBasis> ParseBasis(const std::string& s) {
  if (s == "absolute") return CheckBasis::kAbsolute;
  if (s == "reference") return CheckBasis::kReference;
  if (s == "line_rate") return CheckBasis::kLineRate;
  if (s == "plan_busbw") return CheckBasis::kPlanBusbw;
  if (s == "plan_nvlink_links") return CheckBasis::kPlanNvlinkLinks;
  if (s == "plan_nics") return CheckBasis::kPlanNics;
  if (s == "plan_storage_read") return CheckBasis::kPlanStorageRead;
  if (s == "cap") return CheckBasis::kCap;
  return std::nullopt;
}

}  // namespace

std::string ToString(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kWarn: return "warn";
    case Verdict::kFail: return "fail";
    case Verdict::kNotApplicable: return "n/a";
  }
  return "n/a";
}

// ---- stage 1: the rules ----

Result<std::vector<CheckRule>> LoadCheckRules(const std::string& path) {
  Result<CsvTable> table = Status::Internal("unread");
  if (path.empty()) {
    const std::string_view text = EmbeddedData("checks.csv");
    if (text.empty()) return Status::Internal("data/checks.csv is not compiled in");
    table = ParseCsv(std::string(text), "data/checks.csv");
  } else {
    table = ReadCsvFile(path);
  }
  if (!table.ok()) return table.status();
  for (const char* col : {"id", "tool", "metric", "scope", "op", "threshold", "unit", "basis", "reference", "severity", "troubleshooting", "next", "source", "date"})
    if (table->Column(col) < 0) return Status::BadInput({table->file, 1, col}, "missing column (the header of data/checks.csv)");
  std::vector<CheckRule> rules;
  std::set<std::string> ids;
  for (const auto& row : table->rows) {
    CsvRecord rec(*table, row);
    CheckRule r;
    r.id = rec.Str("id"), r.tool = rec.Str("tool"), r.metric = rec.Str("metric"), r.scope = rec.Str("scope");
    r.op = rec.Str("op"), r.threshold = rec.Str("threshold"), r.unit = rec.Str("unit"), r.severity = rec.Str("severity");
    r.troubleshooting = rec.Str("troubleshooting"), r.next = rec.Str("next"), r.source = rec.Str("source"), r.date = rec.Str("date");
    r.where = {table->file, row.line, ""};
    if (r.id.empty() || !ids.insert(r.id).second) return Status::BadInput(rec.Where("id"), "empty or repeated id '" + r.id + "'");
    if (r.tool.empty() || r.metric.empty()) return Status::BadInput(rec.Where(r.tool.empty() ? "tool" : "metric"), "required");
    if (!Ops().count(r.op)) return Status::BadInput(rec.Where("op"), "expected >= <= == != contains !contains in none, got '" + r.op + "'");
    if ((r.op == ">=" || r.op == "<=") && !Num(r.threshold)) return Status::BadInput(rec.Where("threshold"), "'" + r.op + "' needs a number, got '" + r.threshold + "'");
    auto basis = ParseBasis(rec.Str("basis"));
    if (!basis) return Status::BadInput(rec.Where("basis"), "expected absolute|reference|line_rate|plan_busbw|plan_nvlink_links|plan_nics|plan_storage_read|cap, got '" + rec.Str("basis") + "'");
    r.basis = *basis;
    auto ref = rec.OptNumber("reference");
    if (!ref.ok()) return ref.status();
    r.reference = *ref;
    if ((r.basis == CheckBasis::kReference || r.basis == CheckBasis::kPlanNvlinkLinks) && !r.reference)
      return Status::BadInput(rec.Where("reference"), "basis " + rec.Str("basis") + " needs a reference number");
    if (r.severity != "fail" && r.severity != "warn") return Status::BadInput(rec.Where("severity"), "expected fail or warn, got '" + r.severity + "'");
    if (r.source.empty() || r.date.empty()) return Status::BadInput(rec.Where(r.source.empty() ? "source" : "date"), "every check has a source and a date");
    rules.push_back(std::move(r));
  }
  return rules;
}

Result<PlanContext> MakePlanContext(const LaunchPlan& plan, const Catalog& catalog, const Calibration& cal) {
  auto hw = ResolveHardware(plan.job, catalog, cal);
  if (!hw.ok()) return hw.status();
  PlanContext pc{plan, *hw, std::nullopt};
  const LinkSpec& link = plan.nodes > 1 && !plan.network.id.empty() ? plan.network : hw->inter;
  if (plan.nodes > 1 && link.bw_bytes_per_s_per_dir > 0) pc.line_rate_gbit_per_s = link.bw_bytes_per_s_per_dir * 8 / 1e9;
  return pc;
}

Result<LaunchPlan> LoadPlanFile(const std::string& path, int64_t row, const Catalog& catalog, const Calibration& cal, const std::string& row_flag) {
  auto text = ReadInputFile(path);  // regular files only, size-capped
  if (!text.ok()) return text.status();
  if (IsPlanJson(*text)) {
    auto lp = LaunchPlanFromPlanJson(*text, path, row, catalog, cal);
    // It names export's --plan; say the flag that chose the row here.
    if (!lp.ok() && lp.status().location().key == "--plan" && row_flag != "--plan")
      return Status::BadInput({lp.status().location().file, lp.status().location().line, row_flag}, lp.status().reason());
    return lp;
  }
  auto job = ParseJobFile(path);
  if (!job.ok()) return job.status();
  Job j = *job;
  GPUPLAN_RETURN_IF_ERROR(FinalizeJob(j));
  if (job->IsSet("cluster.num_gpus")) {
    if (row != 1) return Status::BadInput({"command line", 0, row_flag}, path + " pins cluster.num_gpus: it is one setup, row 1");
    return LaunchPlanFromJob(j, catalog, cal, "pinned job " + path);
  }
  auto result = PlanJob(j, catalog, cal);
  if (!result.ok()) return result.status();
  if (result->plans.empty()) return Status::Infeasible("no feasible plan for " + path + (result->relax.empty() ? "" : ": " + result->relax));
  if (row < 1 || row > static_cast<int64_t>(result->plans.size()))
    return Status::BadInput({"command line", 0, row_flag}, "must be in 1.." + std::to_string(result->plans.size()) + " (rows of the plan for " + path + ")");
  return LaunchPlanFromPlan(result->plans[static_cast<size_t>(row - 1)], catalog, "plan #" + std::to_string(row) + " of " + path);
}

// ---- stage 2: the keys a rule's scope reads ----

namespace {

using Keys = std::map<std::string, std::string>;

// "NVIDIA A100-SXM4-40GB" -> the catalog's a100-sxm-40gb (through its aliases).
std::string ResolveGpu(const std::string& name, const Catalog* catalog) {
  if (!catalog || name.empty()) return "";
  std::string n = Lower(name);
  for (const char* prefix : {"nvidia ", "amd instinct ", "amd ", "tesla "})
    if (n.rfind(prefix, 0) == 0) n = n.substr(std::char_traits<char>::length(prefix));
  for (const std::string& cand : {n, Lower(name)})
    if (auto g = catalog->FindGpu(cand); g.ok()) return g->id;
  return "";
}

struct OutputFacts {  // what one output says about the whole run
  std::optional<double> nodes, line_rate;
};

OutputFacts FactsOf(const ToolOutput& o) {
  OutputFacts f;
  for (const auto& r : o.readings) {
    if (r.metric == "nccl_nodes" || r.metric == "log_hosts") f.nodes = std::max(f.nodes.value_or(0), r.value);
    if (r.metric == "line_rate_gbit_per_s") f.line_rate = r.value;
  }
  return f;
}

std::string Multinode(const Reading& r, const OutputFacts& facts, const VerifyOptions& o) {
  auto ctx = [&](const char* k) -> std::optional<double> {
    auto it = r.context.find(k);
    return it == r.context.end() ? std::nullopt : Num(it->second);
  };
  if (auto n = ctx("nodes")) return *n > 1 ? "yes" : "no";
  if (auto n = ctx("nodes_at_least"); n && *n > 1) return "yes";
  if (facts.nodes) return *facts.nodes > 1 ? "yes" : "no";
  if (o.plan) return o.plan->plan.nodes > 1 ? "yes" : "no";
  return "unknown";
}

Keys KeysOf(const Reading& r, const OutputFacts& facts, const VerifyOptions& o) {
  Keys k = r.context;
  k["tool_name"] = r.tool;
  k["text"] = r.text;
  k["with_plan"] = o.plan ? "yes" : "no";
  k["multinode"] = Multinode(r, facts, o);
  std::string gpu = ResolveGpu(r.context.count("gpu_name") ? r.context.at("gpu_name") : "", o.catalog);
  if (o.plan) {
    const PlanContext& p = *o.plan;
    if (gpu.empty()) gpu = p.hw.gpu.id;
    k["rdma_expected"] = p.plan.nodes > 1 && p.plan.network.kind == "tcp" ? "no" : "yes";
    if (p.plan.nodes > 1 && !p.plan.network.id.empty()) k["link"] = p.plan.network.id, k["link_kind"] = p.plan.network.kind;
    if (!p.plan.instance_type.empty()) k["instance"] = p.plan.instance_type;
    k["plan_gpu_link"] = p.hw.gpu.intra_link;
    k["plan_intra"] = p.hw.intra.kind;
    k["plan_p2p"] = p.hw.gpu.p2p ? "yes" : "no";
    k["plan_storage"] = p.hw.storage && p.hw.storage->read_bytes_per_s ? "yes" : "no";
    // A count the output does not give is the plan's (the run is the plan's machine).
    if (r.kind == ToolKind::kNcclTests && !k.count("ranks")) {
      k["ranks"] = std::to_string(p.plan.nodes * p.plan.gpus_per_node);
      k["ranks_from"] = "assumed: the plan's (the output does not say)";
    }
  } else {
    k["rdma_expected"] = "yes";
  }
  if (!gpu.empty()) k["gpu"] = gpu;
  return k;
}

// One condition: key=v1,v2 | key!=v | key>=n | key<=n | key~text | key=- (absent).
bool Holds(const std::string& cond, const Keys& k) {
  static const char* kOps[] = {">=", "<=", "!=", "~", "="};
  for (const char* op : kOps) {
    const auto p = cond.find(op);
    if (p == std::string::npos) continue;
    const std::string key = cond.substr(0, p), want = cond.substr(p + std::char_traits<char>::length(op));
    auto it = k.find(key);
    const std::string op_s = op;
    if (op_s == "=" && want == "-") return it == k.end() || it->second.empty();
    if (it == k.end()) return false;
    const std::string& have = it->second;
    if (op_s == ">=" || op_s == "<=") {
      auto a = Num(have), b = Num(want);
      return a && b && (op_s == ">=" ? *a >= *b : *a <= *b);
    }
    if (op_s == "~") return have.find(want) != std::string::npos;
    const auto opts = SplitList(want, ',');
    const bool any = std::find(opts.begin(), opts.end(), have) != opts.end();
    return op_s == "=" ? any : !any;
  }
  return false;
}

bool InScope(const CheckRule& rule, const Keys& k) {
  if (rule.scope.empty()) return true;
  for (const auto& c : SplitList(rule.scope, ';'))
    if (!c.empty() && !Holds(c, k)) return false;
  return true;
}

bool ToolMatches(const CheckRule& rule, const Reading& r) {
  if (rule.tool == "*") return true;
  const auto tools = SplitList(rule.tool, ',');
  return std::find(tools.begin(), tools.end(), ToString(r.kind)) != tools.end();
}

// ---- stage 3: the number a rule compares with ----

struct Expected {
  std::optional<double> value;  // threshold x basis; nullopt = cannot be known (n/a, with `why`)
  std::string from, why;
};

std::optional<Collective> CollectiveOf(const std::string& op) {
  if (op == "all_reduce" || op == "unknown" || op.empty()) return Collective::kAllReduce;
  if (op == "all_gather" || op == "all_gather_or_alltoall") return Collective::kAllGather;  // same bus factor (n-1)/n
  if (op == "reduce_scatter") return Collective::kReduceScatter;
  if (op == "alltoall") return Collective::kAllToAll;
  if (op == "sendrecv" || op == "sendrecv_or_broadcast") return Collective::kSendRecv;
  return std::nullopt;
}

std::string Bytes(double b) {
  if (b >= 1073741824) return Fmt(b / 1073741824) + " GiB";
  if (b >= 1048576) return Fmt(b / 1048576) + " MiB";
  return Fmt(b) + " B";
}

Expected PlanBusbw(double thr, const Reading& r, const PlanContext& p) {
  auto ctx = [&](const char* k) { return r.context.count(k) ? Num(r.context.at(k)) : std::nullopt; };
  const std::string op = r.context.count("op") ? r.context.at("op") : "unknown";
  auto c = CollectiveOf(op);
  if (!c) return {std::nullopt, "", "the model has no " + op + " collective"};
  const double bytes = ctx("msg_bytes").value_or(0);
  // Ranks and nodes as the output states them; what it does not state is the plan's, and the message says so.
  const auto out_ranks = ctx("ranks");
  const double n = out_ranks.value_or(static_cast<double>(p.plan.nodes * p.plan.gpus_per_node));
  std::string assumed = out_ranks ? Fmt(n) + " ranks (" + (r.context.count("ranks_from") ? r.context.at("ranks_from") : std::string("the output")) + ")"
                                  : Fmt(n) + " ranks (assumed: the plan's; the output does not say)";
  double nodes = static_cast<double>(p.plan.nodes);
  if (auto x = ctx("nodes"); x && *x > 0) nodes = *x, assumed += ", " + Fmt(nodes) + " node(s) (the output)";
  else nodes = std::min(nodes, n), assumed += ", " + Fmt(nodes) + " node(s) (assumed: the plan's; the output does not say)";
  const double per_node = std::ceil(n / std::max(1.0, nodes));
  if (bytes <= 0 || n < 2) return {std::nullopt, "", "no message size or fewer than 2 ranks"};
  const double model = BusBandwidth(*c, bytes, static_cast<int64_t>(n), static_cast<int64_t>(per_node), p.hw) / 1e9;
  if (model <= 0) return {std::nullopt, "", "the model gives no bus bandwidth for it"};
  return {thr * model,
          Fmt(thr * 100) + "% of " + Fmt(model) + " GB/s, the plan's " + (op == "unknown" ? "all_reduce (op not in the output)" : op == "all_gather_or_alltoall" ? "all_gather (or alltoall: same bus factor)" : op) + " bus bandwidth at " +
              Bytes(bytes) + " over " + assumed + ", " + Fmt(per_node) + " per node (" + p.hw.gpu.id + ", " + p.hw.intra.id +
              (p.plan.nodes > 1 ? ", " + p.hw.inter.id : "") + "; docs/model/communication.md)",
          ""};
}

// The NIC line rate for a reading: --line-rate-gbps, the plan's link, the same output's table, an ibstat port.
Expected LineRate(double thr, const Reading& r, const OutputFacts& facts, const std::vector<ToolOutput>& outputs, const VerifyOptions& o) {
  std::optional<double> rate;
  std::string from;
  if (o.line_rate_gbit_per_s) rate = o.line_rate_gbit_per_s, from = "--line-rate-gbps";
  else if (o.plan && o.plan->line_rate_gbit_per_s) rate = o.plan->line_rate_gbit_per_s, from = "the plan's link " + o.plan->plan.network.id + " (data/links.csv)";
  else if (facts.line_rate) rate = facts.line_rate, from = "the table's Peak column";
  else if (r.kind != ToolKind::kIbstat && r.context.count("device")) {  // the same HCA in an ibstat output of the run
    const std::string& dev = r.context.at("device");
    for (const auto& out : outputs)
      for (const auto& x : out.readings)
        if (!rate && x.metric == "port_rate_gbit_per_s" && x.context.count("device") && x.context.at("device") == dev)
          rate = x.value, from = "ibstat " + dev + " (" + x.where.file + ":" + std::to_string(x.where.line) + ")";
  }
  if (!rate) return {std::nullopt, "", "the NIC line rate is unknown: give --plan, an ibstat output of the host or --line-rate-gbps"};
  return {thr * *rate, Fmt(thr * 100) + "% of " + Fmt(*rate) + " Gb/s line rate (" + from + ")", ""};
}

Expected Resolve(const CheckRule& rule, const Reading& r, const OutputFacts& facts, const std::vector<ToolOutput>& outputs, const VerifyOptions& o) {
  const std::optional<double> thr = Num(rule.threshold);
  if (rule.op != ">=" && rule.op != "<=" && !(rule.op == "==" && thr) && !(rule.op == "!=" && thr)) return {std::nullopt, rule.op + " " + rule.threshold, ""};
  const double t = thr.value_or(0);
  switch (rule.basis) {
    case CheckBasis::kAbsolute: return {t, "threshold " + Fmt(t) + " " + rule.unit, ""};
    case CheckBasis::kReference: return {t * *rule.reference, Fmt(t * 100) + "% of " + Fmt(*rule.reference) + " " + rule.unit + " (the rule's reference measurement)", ""};
    case CheckBasis::kLineRate: return LineRate(t, r, facts, outputs, o);
    case CheckBasis::kPlanBusbw: return o.plan ? PlanBusbw(t, r, *o.plan) : Expected{std::nullopt, "", "no plan"};
    case CheckBasis::kPlanNvlinkLinks: {
      const double bw = o.plan ? o.plan->hw.gpu.nvlink_bytes_per_s_per_dir.value_or(0) : 0;
      if (bw <= 0) return {std::nullopt, "", "the plan's GPU has no NVLink bandwidth in data/gpus.csv"};
      const double links = std::round(bw / 1e9 / *rule.reference);
      return {t * links, Fmt(links) + " links: " + o.plan->hw.gpu.id + " NVLink " + Fmt(bw / 1e9) + " GB/s per direction / " + Fmt(*rule.reference) + " GB/s per link (data/gpus.csv)", ""};
    }
    case CheckBasis::kPlanNics: {
      double nics = o.plan ? static_cast<double>(o.plan->plan.nics_per_node) : 0;
      if (nics <= 0 && o.plan) nics = o.plan->hw.nics_per_node;
      if (nics <= 0) return {std::nullopt, "", "the plan's NICs per node are unknown"};
      return {t * nics, Fmt(nics) + " NICs per node (the plan" + (o.plan->plan.instance.empty() ? "" : ": " + o.plan->plan.instance + " in data/instances.csv") + ")", ""};
    }
    case CheckBasis::kPlanStorageRead: {
      if (!o.plan || !o.plan->hw.storage || !o.plan->hw.storage->read_bytes_per_s) return {std::nullopt, "", "the plan has no storage tier with a read bandwidth"};
      const double kib = *o.plan->hw.storage->read_bytes_per_s / 1024;
      return {t * kib, Fmt(t * 100) + "% of " + Fmt(*o.plan->hw.storage->read_bytes_per_s / 1e6) + " MB/s, storage " + o.plan->hw.storage->id + " (data/storage.csv)", ""};
    }
    case CheckBasis::kCap: {
      const char* key = r.metric == "pcie_width" ? "cap_width" : "cap_gen";
      auto cap = r.context.count(key) ? Num(r.context.at(key)) : std::nullopt;
      if (!cap) return {std::nullopt, "", std::string("no ") + key + " in the output"};
      return {t * *cap, std::string("the link's capability (") + (r.metric == "pcie_width" ? "x" : "gen ") + Fmt(*cap) + ")", ""};
    }
  }
  return {std::nullopt, "", "unknown basis"};
}

// ---- stage 4: compare, and say what to do ----

bool Passes(const CheckRule& rule, const Reading& r, const std::optional<double>& expected) {
  const double m = r.value;
  const double eps = 1e-9 * std::max(1.0, std::abs(m));
  const std::optional<double> thr = Num(rule.threshold);
  if (rule.op == ">=") return m + eps >= *expected;
  if (rule.op == "<=") return m - eps <= *expected;
  if (rule.op == "==") return thr ? std::abs(m - *expected) <= eps : r.text == rule.threshold;
  if (rule.op == "!=") return thr ? std::abs(m - *expected) > eps : r.text != rule.threshold;
  if (rule.op == "contains") return r.text.find(rule.threshold) != std::string::npos;
  if (rule.op == "!contains") return r.text.find(rule.threshold) == std::string::npos;
  if (rule.op == "in") {
    const auto opts = SplitList(rule.threshold, ',');
    return std::find(opts.begin(), opts.end(), r.text) != opts.end();
  }
  return false;  // "none": the reading is the finding
}

std::string Fill(std::string s, const std::map<std::string, std::string>& v) {
  for (const auto& [k, val] : v) {
    const std::string tag = "{" + k + "}";
    for (size_t p = s.find(tag); p != std::string::npos; p = s.find(tag, p + val.size())) s.replace(p, tag.size(), val);
  }
  return s;
}

CheckResult Judge(const CheckRule& rule, const Reading& r, const Keys& keys, const Expected& e) {
  CheckResult c;
  c.id = rule.id, c.tool = r.tool, c.metric = r.metric, c.unit = r.unit.empty() ? rule.unit : r.unit;
  c.measured = r.value, c.measured_text = r.text, c.where = r.where, c.rule = rule.where;
  c.troubleshooting = rule.troubleshooting, c.source = rule.source, c.date = rule.date;
  c.expected = e.value, c.expected_from = e.from;
  const std::string measured = r.text.empty() ? Fmt(r.value) : r.text;
  const bool numeric = rule.op == ">=" || rule.op == "<=" || (Num(rule.threshold) && (rule.op == "==" || rule.op == "!="));
  if (numeric && !e.value) {
    c.verdict = Verdict::kNotApplicable;
    c.message = r.metric + " = " + measured + " " + c.unit + ": not compared, " + e.why;
    return c;
  }
  c.verdict = Passes(rule, r, e.value) ? Verdict::kPass : rule.severity == "fail" ? Verdict::kFail : Verdict::kWarn;
  std::string want = rule.op == "none" ? "none expected" : rule.op + " " + (numeric ? Fmt(*e.value) + " " + rule.unit : rule.threshold);
  c.message = r.metric + " = " + measured + (r.text.empty() ? " " + c.unit : "") + " (" + want + (e.from.empty() || !numeric ? "" : ": " + e.from) + ")";
  std::map<std::string, std::string> vars = keys;
  vars["measured"] = measured;
  vars["expected"] = e.value ? Fmt(*e.value) : rule.threshold;
  vars["unit"] = c.unit;
  if (auto it = keys.find("gpu"); it == keys.end()) vars["gpu"] = "?";
  vars["line_rate"] = e.value && Num(rule.threshold) && *Num(rule.threshold) > 0 ? Fmt(*e.value / *Num(rule.threshold)) : "?";
  if (c.verdict != Verdict::kPass) c.next = Fill(rule.next, vars);
  return c;
}

// The numbers a user looks at first: if no rule judged one, say so (never a silent skip).
const std::set<std::string>& Headline() {
  static const std::set<std::string> k = {"busbw_peak_gb_per_s", "bw_avg_gbit_per_s", "lat_typical_us", "bw_kib_per_s", "nvlink_count", "transport"};
  return k;
}

}  // namespace

VerifyReport RunChecks(std::vector<ToolOutput> outputs, const VerifyOptions& options) {
  VerifyReport rep;
  rep.outputs = std::move(outputs);
  for (const auto& out : rep.outputs) {
    if (out.kind == ToolKind::kUnknown) {
      rep.unrecognised.push_back(out.file);
      continue;
    }
    const OutputFacts facts = FactsOf(out);
    for (const auto& r : out.readings) {
      const Keys keys = KeysOf(r, facts, options);
      bool judged = false;
      for (const auto& rule : options.rules) {
        if (rule.metric != r.metric || !ToolMatches(rule, r) || !InScope(rule, keys)) continue;
        rep.results.push_back(Judge(rule, r, keys, Resolve(rule, r, facts, rep.outputs, options)));
        judged = true;
      }
      if (!judged && Headline().count(r.metric)) {
        CheckResult c;
        c.tool = r.tool, c.metric = r.metric, c.unit = r.unit, c.measured = r.value, c.measured_text = r.text, c.where = r.where;
        std::string why = options.plan ? "" : "; --plan compares it with the plan";
        if (!options.plan && (r.metric == "busbw_peak_gb_per_s") && !keys.count("gpu")) why = "; the GPU is not named in the output: --plan gives it";
        c.message = r.metric + " = " + (r.text.empty() ? Fmt(r.value) + " " + r.unit : r.text) + ": no threshold in data/checks.csv applies to it" + why;
        rep.results.push_back(c);
      }
    }
  }
  for (const auto& c : rep.results) {
    switch (c.verdict) {
      case Verdict::kPass: ++rep.passes; break;
      case Verdict::kWarn: ++rep.warnings; break;
      case Verdict::kFail: ++rep.failures; break;
      case Verdict::kNotApplicable: ++rep.not_applicable; break;
    }
  }
  return rep;
}

// A failed check is the answer whatever else the batch holds: 2 even when another file is unrecognised
// (the report says which); 1 only when nothing failed and a file could not be read.
int VerifyReport::ExitCode() const {
  if (failures > 0) return 2;
  return unrecognised.empty() ? 0 : 1;
}

std::vector<Reading> VerifyReadings(const VerifyReport& report) { return FlattenReadings(report.outputs); }

}  // namespace gpuplan
