// `fleet --format html` (docs/report-html.md): the policy's and the type-blind baseline's schedules of a
// FleetResult drawn as SVG bars and tables.
#include "html_common.h"

namespace gpuplan {

namespace {
using namespace html_report;

std::string Money(const ReportText& t, const std::optional<double>& usd) { return usd ? Usd(*usd) : t("unpriced"); }

std::string Cards(const Fleet& fleet, const FleetAssignment& a) {
  std::string s;
  for (const auto& g : a.gpus) s += (s.empty() ? "" : " + ") + fleet.pool.groups[g.group].name + " ×" + std::to_string(g.count);
  return s.empty() ? "-" : s;
}

std::string Met(const ReportText& t, const FleetAssignment& a) {
  if (a.kind == FleetJobKind::kServing) return t(a.deadline_met ? "sla_met" : "sla_missed");
  if (a.has_deadline) return t(a.deadline_met ? "deadline_met" : "deadline_missed");
  return "-";
}

// Each job on the pool's clock: a bar from its start for its time (training: to train; serving: to the horizon).
std::string Timeline(const ReportText& t, const FleetSchedule& s, const std::string& title) {
  html::BarChart chart{title, t("axis_hours"), {}, {}};
  for (const FleetAssignment& a : s.assignments) {
    html::Bar bar{a.job, {}, a.gpus.empty() ? t("not_placed") : Hours(t, a.end_s)};
    if (!a.gpus.empty()) {
      bar.segments.push_back({"", a.start_s / 3600, "", true});
      bar.segments.push_back({t(a.kind == FleetJobKind::kServing ? "kind_serving" : "kind_training"), a.time_s / 3600, Hours(t, a.time_s)});
    }
    chart.bars.push_back(bar);
  }
  chart.markers.push_back({s.horizon_s / 3600, t("horizon", {Hours(t, s.horizon_s)})});
  return html::Bars(chart);
}

// The cards each job holds, by pool group.
std::string CardsChart(const ReportText& t, const Fleet& fleet, const FleetSchedule& s, const std::string& title) {
  html::BarChart chart{title, t("axis_cards"), {}, {}};
  for (const FleetAssignment& a : s.assignments) {
    html::Bar bar{a.job, {}, Cards(fleet, a)};
    for (const auto& g : a.gpus) {
      const PoolGroup& pg = fleet.pool.groups[g.group];
      bar.segments.push_back({pg.name + " (" + pg.gpu + ")", static_cast<double>(g.count), Int(g.count)});
    }
    chart.bars.push_back(bar);
  }
  return html::Bars(chart);
}

// Each job's cost under the policy and under the baseline.
std::string CostChart(const ReportText& t, const FleetResult& r) {
  html::BarChart chart{t("fleet_cost_title"), t("axis_usd"), {}, {}};
  const std::string policy = t("policy"), baseline = t("baseline");
  for (size_t i = 0; i < r.policy.assignments.size(); ++i) {
    const FleetAssignment& a = r.policy.assignments[i];
    chart.bars.push_back({a.job + " · " + policy, {}, Money(t, a.cost_usd)});
    if (a.cost_usd) chart.bars.back().segments.push_back({policy, *a.cost_usd, Usd(*a.cost_usd)});
    if (i < r.baseline.assignments.size()) {
      const FleetAssignment& b = r.baseline.assignments[i];
      chart.bars.push_back({b.job + " · " + baseline, {}, Money(t, b.cost_usd)});
      if (b.cost_usd) chart.bars.back().segments.push_back({baseline, *b.cost_usd, Usd(*b.cost_usd)});
    }
  }
  return html::Bars(chart);
}

std::string UtilisationChart(const ReportText& t, const FleetResult& r) {
  html::BarChart chart{t("utilisation_title"), t("axis_percent"), {}, {}};
  chart.bars.push_back({t("policy"), {{t("policy"), 100 * r.policy.utilization, Percent(r.policy.utilization)}}, Percent(r.policy.utilization)});
  chart.bars.push_back({t("baseline"), {{t("baseline"), 100 * r.baseline.utilization, Percent(r.baseline.utilization)}},
                        Percent(r.baseline.utilization)});
  return html::Bars(chart);
}

std::string Comparison(const ReportText& t, const FleetResult& r) {
  const FleetSchedule &p = r.policy, &b = r.baseline;
  const std::vector<std::vector<std::string>> rows = {
      {t("cluster_utilisation"), Percent(p.utilization), Percent(b.utilization)},
      {t("busy_card_hours"), F("%.0f", p.busy_gpu_s / 3600), F("%.0f", b.busy_gpu_s / 3600)},
      {t("last_training_end"), Hours(t, p.horizon_s), Hours(t, b.horizon_s)},
      {t("avg_completion"), Hours(t, p.avg_completion_s), Hours(t, b.avg_completion_s)},
      {t("cost"), Money(t, p.cost_usd), Money(t, b.cost_usd)}};
  return html::Table({"", t("policy"), t("baseline")}, rows, {1, 2});
}

std::string ScheduleTable(const ReportText& t, const Fleet& fleet, const FleetSchedule& s) {
  std::vector<std::vector<std::string>> rows;
  for (const FleetAssignment& a : s.assignments)
    rows.push_back({a.job, t(a.kind == FleetJobKind::kServing ? "kind_serving" : "kind_training"), Cards(fleet, a), a.layout,
                    F("%.2f", a.start_s / 3600), F("%.2f", a.time_s / 3600), F("%.2f", a.end_s / 3600), Money(t, a.cost_usd), Met(t, a),
                    a.note});
  return html::Table({t("col_job"), t("col_kind"), t("col_cards"), t("layout"), t("col_start_h"), t("col_time_h"), t("col_end_h"), t("cost"),
                      t("col_deadline"), t("col_note")},
                     rows, {4, 5, 6, 7});
}
}  // namespace

Result<std::string> FleetToHtml(const Fleet& fleet, const FleetResult& r, bool simulated, const HtmlReportOptions& options) {
  auto loaded = ReportText::Load(options.lang);
  if (!loaded.ok()) return loaded.status();
  const ReportText& t = *loaded;
  const std::string title = t("fleet_title", {fleet.pool.name});
  Facts facts = {{t("fleet_file"), fleet.file},
                 {t("pool"), t("pool_value", {fleet.pool.name, Int(fleet.pool.GpusUsable()), std::to_string(fleet.pool.groups.size())})},
                 {t("jobs"), std::to_string(fleet.jobs.size()) + (simulated ? " · " + t("simulated_trace") : "")},
                 {t("evaluations"), Int(r.evaluations)}};
  std::string body = Header(title, facts);
  if (!r.missed.empty()) body += H2(t("cannot_meet")) + List(r.missed, "warn");
  body += H2(t("policy_vs_baseline")) + UtilisationChart(t, r) + Comparison(t, r);
  body += H2(t("policy_title")) + Para(t("policy_words"), "note") + Timeline(t, r.policy, t("timeline_title", {t("policy")})) +
          CardsChart(t, fleet, r.policy, t("cards_title", {t("policy")})) + ScheduleTable(t, fleet, r.policy);
  body += H2(t("baseline_title")) + Para(t("baseline_words"), "note") + Timeline(t, r.baseline, t("timeline_title", {t("baseline")})) +
          CardsChart(t, fleet, r.baseline, t("cards_title", {t("baseline")})) + ScheduleTable(t, fleet, r.baseline);
  body += H2(t("cost")) + CostChart(t, r);
  body += Notes(t, r.notes);
  return Page(t, title, body);
}

}  // namespace gpuplan
