// `serving --format html` and `serving --plan --format html` (docs/report-html.md): the records of
// ServingReport and ServingPlanResult drawn as SVG and tables.
#include "gpuplan/serving_plan_report.h"
#include "html_common.h"

namespace gpuplan {

namespace {
using namespace html_report;

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string Ms(double s) { return F("%.1f ms", s * 1e3); }
std::string PerMillion(double usd) { return F("$%.3f", usd); }
std::string Layout(const ServingPlan& p) {
  return "tp" + std::to_string(p.tp) + (p.pp > 1 ? " pp" + std::to_string(p.pp) : "") + " ×" + std::to_string(p.replicas);
}
std::string Kind(const ServingPlan& p) { return p.price_kind == "on-demand" ? "" : " (" + p.price_kind + ")"; }
std::string SetupLine(const ReportText& t, size_t i, const ServingPlan& p) {
  return "#" + std::to_string(i + 1) + " " + p.instance.id + Kind(p) + " · " + Int(p.gpus) + " × " + p.instance.gpu_id + " · " + Layout(p) +
         " · " + ToString(p.weights) + "/" + ToString(p.kv_dtype) + " · TTFT p90 " + Ms(p.estimate.ttft_s.p90) + " · TPOT p90 " +
         Ms(p.estimate.tpot_s.p90) + " · " + t("tokens_per_s", {Int(static_cast<int64_t>(p.output_tokens_per_s + 0.5))}) + " · " +
         PerMillion(p.cost_per_million_output_tokens_usd) + " / M";
}

// One GPU at engine start-up: weights, the profile run's activations, memory outside torch, CUDA graphs and
// the KV cache, against the device and the engine's budget.
std::string ServingMemoryChart(const ReportText& t, const ServingMemory& m, const std::string& gpu) {
  html::BarChart chart{t("serving_memory_title", {gpu}), t("axis_gib"), {}, {}};
  html::Bar bar{t("memory_per_gpu"), {}, ""};
  const std::pair<const char*, double> parts[] = {{"mem_weights", m.weights_bytes}, {"mem_activations", m.activation_bytes},
                                                  {"mem_non_torch", m.non_torch_bytes}, {"mem_cuda_graphs", m.cuda_graph_bytes},
                                                  {"mem_kv_cache", m.kv_bytes}};
  for (const auto& [key, bytes] : parts)
    if (bytes != 0) bar.segments.push_back({t(key), bytes / kGiB, GiB(bytes)});
  chart.bars.push_back(bar);
  chart.markers.push_back({m.device_bytes / kGiB, t("capacity", {GiB(m.device_bytes)})});
  chart.markers.push_back({m.budget_bytes / kGiB, t("engine_budget", {GiB(m.budget_bytes)})});
  return html::Bars(chart);
}

std::string DecodeStepChart(const ReportText& t, const StepTime& s) {
  html::BarChart chart{t("decode_step_title", {Ms(s.total_s)}), t("axis_ms"), {}, {}};
  html::Bar bar{t("decode_step"), {}, Ms(s.total_s)};
  const std::pair<const char*, double> parts[] = {{"decode_weights", s.weights_read_s}, {"decode_kv", s.kv_read_s},
                                                  {"decode_compute", s.compute_s}, {"decode_tp", s.tp_comm_s},
                                                  {"decode_overhead", s.overhead_s}};
  for (const auto& [key, v] : parts)
    if (v > 0) bar.segments.push_back({t(key), v * 1e3, Ms(v)});
  chart.bars.push_back(bar);
  return html::Bars(chart);
}

std::string Sla(const ReportText& t, const ServingSpec& s) {
  std::string sla;
  if (s.ttft_p90_ms > 0) sla += "TTFT p90 ≤ " + F("%.0f ms", s.ttft_p90_ms);
  if (s.tpot_p90_ms > 0) sla += (sla.empty() ? "" : ", ") + std::string("TPOT p90 ≤ ") + F("%.1f ms", s.tpot_p90_ms);
  return sla.empty() ? t("none") : sla;
}

// Latency (p90) against output tokens/s of every setup, the best filled, the SLA as a line.
std::string LatencyPlot(const ReportText& t, const ServingPlanResult& r, bool ttft, double limit_ms) {
  html::ScatterPlot plot;
  plot.title = t(ttft ? "ttft_plot_title" : "tpot_plot_title");
  plot.x_label = t("axis_output_tokens_s");
  plot.y_label = t(ttft ? "axis_ttft_ms" : "axis_tpot_ms");
  plot.points_label = t("ranked_setup");
  plot.highlight_label = t("best_setup");
  plot.log_word = t("log_scale");
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const ServingPlan& p = r.plans[i];
    plot.points.push_back({p.output_tokens_per_s, (ttft ? p.estimate.ttft_s.p90 : p.estimate.tpot_s.p90) * 1e3, SetupLine(t, i, p), i == 0});
  }
  if (limit_ms > 0) {
    plot.y_limit = limit_ms;
    plot.y_limit_label = t("sla_line", {F(ttft ? "%.0f ms" : "%.1f ms", limit_ms)});
  }
  return html::Scatter(plot);
}

std::string CostChart(const ReportText& t, const ServingPlanResult& r) {
  html::BarChart chart{t("serving_cost_title"), t("axis_usd_per_m"), {}, {}};
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const ServingPlan& p = r.plans[i];
    chart.bars.push_back({"#" + std::to_string(i + 1) + " " + p.instance.id + Kind(p),
                          {{p.instance.gpu_id, p.cost_per_million_output_tokens_usd, PerMillion(p.cost_per_million_output_tokens_usd)}},
                          PerMillion(p.cost_per_million_output_tokens_usd)});
  }
  return html::Bars(chart);
}

std::string ServingPlansTable(const ReportText& t, const ServingPlanResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const ServingPlan& p = r.plans[i];
    rows.push_back({std::to_string(i + 1), p.instance.id + Kind(p), Int(p.gpus) + " × " + p.instance.gpu_id, Layout(p),
                    ToString(p.weights) + "/" + ToString(p.kv_dtype), F("%.0f", p.estimate.ttft_s.p90 * 1e3), F("%.1f", p.estimate.tpot_s.p90 * 1e3),
                    F("%.0f", p.output_tokens_per_s), F("%.2f", p.usd_per_hour), F("%.3f", p.cost_per_million_output_tokens_usd)});
  }
  return html::Table({"#", t("instance"), t("col_gpus"), t("layout"), t("col_weights_kv"), t("col_ttft_ms"), t("col_tpot_ms"),
                      t("col_tokens_s"), t("col_usd_h"), t("col_usd_m")},
                     rows, {0, 5, 6, 7, 8, 9});
}

std::string ServingPlanHeader(const ReportText& t, const ServingPlanResult& r, const Job& job) {
  const ServingSpec& s = job.serving;
  Facts facts = {{t("model"), ModelName(t, job)},
                 {t("job_file"), job.source.empty() ? t("command_line") : job.source},
                 {t("serving_engine"), r.engine + " " + r.engine_version},
                 {t("load"), r.target_requests_per_s > 0 ? F("%.3g req/s", r.target_requests_per_s) : t("one_replica_load")},
                 {t("lengths"), t("lengths_value", {F("%.0f", s.input_len), F("%.0f", s.output_len)})},
                 {"SLA", Sla(t, s)},
                 {t("searched"), t("serving_searched_value", {Int(r.considered), Int(r.evaluated), Int(r.feasible), F("%.2f", r.wall_s)})}};
  return Header(t("serving_plan_title", {ModelName(t, job)}), facts);
}
}  // namespace

Result<std::string> ServingPlanToHtml(const ServingPlanResult& r, const Job& job, const HtmlReportOptions& options) {
  auto t = ReportText::Load(options.lang);
  if (!t.ok()) return t.status();
  std::string body = ServingPlanHeader(*t, r, job);
  if (r.plans.empty()) {
    body += H2((*t)("no_serving_plan")) + Para("[" + r.relax_code + "] " + r.relax, "warn");
  } else {
    body += H2((*t)("latency_throughput")) + LatencyPlot(*t, r, true, job.serving.ttft_p90_ms) + LatencyPlot(*t, r, false, job.serving.tpot_p90_ms);
    body += H2((*t)("cost")) + CostChart(*t, r);
    body += H2((*t)("setups_title", {std::to_string(r.plans.size())})) + ServingPlansTable(*t, r);
    const ServingPlan& best = r.plans.front();
    body += H2((*t)("best_title")) +
            html::Facts({{(*t)("setup"), SetupLine(*t, 0, best)},
                         {(*t)("replicas"), (*t)("replicas_value", {Int(best.replicas), Int(best.replicas_needed)})},
                         {(*t)("kv_capacity"), (*t)("tokens_value", {Int(best.estimate.kv_capacity_tokens)})},
                         {(*t)("bottleneck"), best.estimate.bottleneck}}) +
            ServingMemoryChart(*t, best.estimate.memory, best.instance.gpu_id) + DecodeStepChart(*t, best.estimate.decode_step);
    std::vector<std::string> lines;
    for (size_t i = 0; i < r.plans.size(); ++i) lines.push_back(std::to_string(i + 1) + ". " + r.plans[i].launch_line);
    body += H2((*t)("launch_lines")) + Pre(lines);
  }
  body += Rejections(*t, r.rejected) + Notes(*t, r.notes);
  return Page(*t, (*t)("serving_plan_title", {ModelName(*t, job)}), body);
}

Result<std::string> ServingToHtml(const ServingReport& r, const HtmlReportOptions& options) {
  auto loaded = ReportText::Load(options.lang);
  if (!loaded.ok()) return loaded.status();
  const ReportText& t = *loaded;
  const Job& job = r.job;
  const ServingEstimate& e = r.estimate;
  Facts facts = {{t("model"), ModelName(t, job)},
                 {t("job_file"), job.source.empty() ? t("command_line") : job.source},
                 {t("serving_engine"), e.engine + " " + e.engine_version},
                 {t("setup"), Int(e.num_gpus) + " × " + r.gpu.id + " · tp" + Int(job.parallel.tp) + (job.parallel.pp > 1 ? " pp" + Int(job.parallel.pp) : "") +
                                  " · " + t("replicas") + " " + Int(e.replicas)},
                 {t("lengths"), t("lengths_value", {F("%.0f", job.serving.input_len), F("%.0f", job.serving.output_len)})}};
  std::string body = Header(t("serving_title", {ModelName(t, job)}), facts);
  if (!e.fits) body += Para(t("does_not_fit") + ": " + e.fit_problem, "warn") + (e.what_would_fit.empty() ? "" : H2(t("what_would_fit")) + List(e.what_would_fit));
  body += ServingMemoryChart(t, e.memory, r.gpu.id);
  if (e.fits) {
    Facts numbers = {{t("kv_capacity"), t("tokens_value", {Int(e.kv_capacity_tokens)})},
                     {t("max_concurrency"), F("%.1f", e.max_concurrency)},
                     {"TTFT", t("mean_p90", {Ms(e.ttft_s.mean), Ms(e.ttft_s.p90)})},
                     {"TPOT", t("mean_p90", {Ms(e.tpot_s.mean), Ms(e.tpot_s.p90)})},
                     {t("throughput"), t("tokens_per_s", {Int(static_cast<int64_t>(e.output_tokens_per_s + 0.5))})},
                     {t("requests_per_s"), F("%.3g", e.requests_per_s)}};
    numbers.push_back({t("cost_per_m_out"), e.cost_per_million_output_tokens_usd ? PerMillion(*e.cost_per_million_output_tokens_usd) : t("unknown")});
    numbers.push_back({t("cost_per_m_in"), e.cost_per_million_input_tokens_usd ? PerMillion(*e.cost_per_million_input_tokens_usd) : t("unknown")});
    numbers.push_back({t("bottleneck"), e.bottleneck});
    body += H2(t("latency_throughput")) + html::Facts(numbers) + DecodeStepChart(t, e.decode_step);
    if (!r.launch.empty()) body += H2(t("launch_lines")) + Pre({r.launch});
  }
  body += Notes(t, e.notes);
  return Page(t, t("serving_title", {ModelName(t, job)}), body);
}

}  // namespace gpuplan
