// `plan --format html` and `plan --pool --format html` (docs/report-html.md): the records of PlanResult and
// PoolPlanResult drawn as SVG and tables. The one number asked of the library here is the best setup's memory
// breakdown (EstimateMemory, whose total is the plan's memory_per_gpu_bytes), as `gpuplan memory` prints it.
#include <algorithm>

#include "gpuplan/pool_report.h"
#include "html_common.h"

namespace gpuplan {

namespace {
using namespace html_report;

std::string PriceKind(const Plan& p) { return p.cost.price_kind == "on-demand" ? "" : " (" + p.cost.price_kind + ")"; }
std::string Cost(const ReportText& t, const Plan& p) { return p.cost.price_known ? Usd(p.cost.with_rerun_usd) : t("unknown"); }

// One line naming a setup: instance, nodes x GPUs, layout, micro-batch, precision, wall-clock, cost.
std::string SetupLine(const ReportText& t, const Plan& p) {
  return p.instance.id + PriceKind(p) + " · " + t("nodes_gpus", {Int(p.nodes), Int(p.job.cluster.num_gpus)}) + " · " +
         LayoutString(p.job) + " · " + t("micro_batch") + " " + Int(p.job.training.micro_batch) + "×" + Int(p.estimate.grad_accum) +
         " · " + ToString(p.job.training.precision) + " · " + Hours(t, p.time_s) + " · " + Cost(t, p);
}

// The same setup (the Pareto front holds copies of ranked rows).
bool SameSetup(const Plan& a, const Plan& b) {
  return a.instance.id == b.instance.id && a.cost.price_kind == b.cost.price_kind && a.nodes == b.nodes &&
         a.job.cluster.num_gpus == b.job.cluster.num_gpus && LayoutString(a.job) == LayoutString(b.job) &&
         a.job.training.micro_batch == b.job.training.micro_batch && a.job.training.precision == b.job.training.precision &&
         a.job.training.recompute == b.job.training.recompute && a.time_s == b.time_s;
}
bool OnFront(const PlanResult& r, const Plan& p) {
  return std::any_of(r.pareto.begin(), r.pareto.end(), [&](const Plan& q) { return SameSetup(p, q); });
}

std::string PlanHeader(const ReportText& t, const PlanResult& r, const Job& job) {
  const Constraints& c = job.constraints;
  Facts facts = {{t("model"), ModelName(t, job)}, {t("job_file"), job.source.empty() ? t("command_line") : job.source},
                 {t("method"), ToString(job.training.method)}};
  if (job.training.tokens > 0) facts.push_back({t("tokens"), FormatCount(job.training.tokens)});
  facts.push_back({t("objective"), ToString(c.objective)});
  if (c.deadline_hours > 0) facts.push_back({t("deadline"), Hours(t, c.deadline_hours * 3600)});
  if (c.budget_usd > 0) facts.push_back({t("budget"), Usd(c.budget_usd)});
  facts.push_back({t("searched"), t("searched_value", {Int(r.considered), Int(r.evaluated), F("%.2f", r.wall_s)})});
  return Header(t("plan_title", {ModelName(t, job)}), facts);
}

// Wall-clock against cost: every ranked setup a circle (the best filled), the Pareto front squares on a line.
std::string ParetoPlot(const ReportText& t, const PlanResult& r) {
  html::ScatterPlot plot;
  plot.title = t("pareto_title");
  plot.x_label = t("axis_wall_clock_h");
  plot.y_label = t("axis_cost_usd");
  plot.points_label = t("ranked_setup");
  plot.highlight_label = t("best_setup");
  plot.series_label = t("pareto_front");
  plot.log_word = t("log_scale");
  size_t unpriced = 0;
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const Plan& p = r.plans[i];
    if (!p.cost.price_known) { ++unpriced; continue; }
    plot.points.push_back({p.time_s / 3600, p.cost.with_rerun_usd, "#" + std::to_string(i + 1) + " " + SetupLine(t, p), i == 0});
  }
  for (const Plan& p : r.pareto)
    if (p.cost.price_known) plot.series.push_back({p.time_s / 3600, p.cost.with_rerun_usd, t("pareto_front") + ": " + SetupLine(t, p)});
  std::string out = html::Scatter(plot);
  if (unpriced > 0) out += Para(t("unpriced_not_drawn", {std::to_string(unpriced)}), "note");
  return out;
}

// The best setup's memory per GPU, by part, against its card (needs the catalog for the card).
std::string MemorySection(const ReportText& t, const Plan& p, const PlanPrintContext& ctx) {
  if (!ctx.catalog) return "";
  auto gpu = ctx.catalog->FindGpu(p.instance.gpu_id);
  if (!gpu.ok()) return "";
  const MemoryBreakdown m = EstimateMemory(p.job, ctx.cal ? *ctx.cal : Calibration::Builtin());
  html::BarChart chart;
  chart.title = t("memory_title", {gpu->id});
  chart.axis_label = t("axis_gib");
  html::Bar bar{t("memory_per_gpu"), {}, GiB(p.memory_bytes)};
  const std::pair<const char*, double> parts[] = {{"mem_weights", m.weights_bytes},         {"mem_gradients", m.gradients_bytes},
                                                  {"mem_optimizer", m.optimizer_bytes},     {"mem_activations", m.activations_bytes},
                                                  {"mem_buffers", m.buffers_bytes},         {"mem_overhead", m.overhead_bytes}};
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  for (const auto& [key, bytes] : parts)
    if (bytes > 0) bar.segments.push_back({t(key), bytes / kGiB, GiB(bytes)});
  chart.bars.push_back(bar);
  chart.markers.push_back({gpu->memory_bytes / kGiB, t("capacity", {GiB(gpu->memory_bytes)})});
  chart.markers.push_back({gpu->memory_bytes * (1 - p.memory_headroom) / kGiB, t("plan_limit", {Percent(p.memory_headroom)})});
  return html::Bars(chart);
}

std::string StepSection(const ReportText& t, const Plan& p) {
  const StepBreakdown& b = p.estimate.breakdown;
  html::BarChart chart;
  chart.title = t("step_title", {Seconds(t, p.estimate.step_time_s), Percent(p.estimate.mfu)});
  chart.axis_label = t("axis_seconds");
  html::Bar bar{t("step_time"), {}, Seconds(t, p.estimate.step_time_s)};
  const std::pair<const char*, double> parts[] = {
      {"step_compute", b.compute_s},  {"step_tp", b.tp_comm_s},      {"step_cp", b.cp_comm_s},     {"step_pp", b.pp_comm_s},
      {"step_dp", b.dp_comm_s},       {"step_ep", b.ep_comm_s},      {"step_bubble", b.bubble_s},  {"step_data", b.data_s},
      {"step_optimizer", b.optimizer_s}, {"step_checkpoint", b.checkpoint_s}, {"step_overhead", b.overhead_s}};
  for (const auto& [key, s] : parts)
    if (s > 0) bar.segments.push_back({t(key), s, Seconds(t, s)});
  chart.bars.push_back(bar);
  return html::Bars(chart);
}

std::string WallClockSection(const ReportText& t, const Plan& p) {
  const WallClock& w = p.wall;
  html::BarChart chart;
  chart.title = t("wall_title", {Hours(t, p.time_s), Percent(w.goodput)});
  chart.axis_label = t("axis_hours");
  html::Bar bar{t("wall_clock"), {}, Hours(t, p.time_s)};
  const std::pair<const char*, double> parts[] = {{"wall_startup", p.startup.Total()}, {"wall_training", p.train_s},
                                                  {"wall_checkpoints", w.checkpoint_stall_s}, {"wall_lost", w.expected_lost_s},
                                                  {"wall_final_save", w.final_save_s}};
  for (const auto& [key, s] : parts)
    if (s > 0) bar.segments.push_back({t(key), s / 3600, Hours(t, s)});
  chart.bars.push_back(bar);
  return html::Bars(chart);
}

std::string CostSection(const ReportText& t, const Plan& p, const Job& job) {
  const CostBreakdown& c = p.cost;
  if (!c.price_known) return H2(t("cost")) + Para(t("cost_unknown", {p.instance.id}), "warn");
  html::BarChart chart;
  chart.title = t("cost_title", {Usd(c.with_rerun_usd)});
  chart.axis_label = t("axis_usd");
  html::Bar bar{t("cost_subtotal"), {}, Usd(c.subtotal_usd)};
  const std::pair<const char*, double> parts[] = {{"cost_compute", c.compute_usd}, {"cost_storage", c.storage_usd},
                                                  {"cost_checkpoint_fs", c.checkpoint_fs_usd}, {"cost_requests", c.requests_usd}};
  for (const auto& [key, usd] : parts)
    if (usd > 0) bar.segments.push_back({t(key), usd, Usd(usd)});
  chart.bars.push_back(bar);
  const std::string price = c.price_kind + " " + F("$%.2f", c.price_per_node_hour) + " · " + (c.price_date.empty() ? t("undated") : c.price_date);
  return html::Bars(chart) + Para(t("cost_rerun", {Usd(c.subtotal_usd), F("%.2f", job.constraints.rerun_factor), Usd(c.with_rerun_usd), price}), "note");
}

std::string BestSection(const ReportText& t, const PlanResult& r, const Job& job, const PlanPrintContext& ctx) {
  const Plan& p = r.plans.front();
  std::string out = H2(t("best_title"));
  Facts facts = {{t("setup"), SetupLine(t, p)},
                 {t("engine"), p.engine + " (" + p.engine_family + ")"},
                 {t("layout"), LayoutString(p.job) + " · " + t("recompute") + " " + ToString(p.job.training.recompute)},
                 {t("throughput"), t("tokens_per_s", {Int(static_cast<int64_t>(p.estimate.tokens_per_s + 0.5))})},
                 {t("bottleneck"), p.bottleneck}};
  for (const auto& w : p.warnings) facts.push_back({t("warning"), w});
  out += html::Facts(facts);
  out += MemorySection(t, p, ctx) + StepSection(t, p) + WallClockSection(t, p) + CostSection(t, p, job);
  return out;
}

std::string SetupsTable(const ReportText& t, const PlanResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const Plan& p = r.plans[i];
    rows.push_back({std::to_string(i + 1), ToString(p.job.training.framework) + (p.family_best ? "*" : ""), p.instance.id + PriceKind(p),
                    Int(p.nodes) + " × " + Int(p.job.cluster.gpus_per_node), LayoutString(p.job),
                    Int(p.job.training.micro_batch) + "×" + Int(p.estimate.grad_accum), ToString(p.job.training.recompute),
                    ToString(p.job.training.precision), FormatGiB(p.memory_bytes), Percent(p.estimate.mfu), Hours(t, p.time_s),
                    Percent(p.wall.goodput), Cost(t, p), OnFront(r, p) ? "■" : ""});
  }
  return H2(t("setups_title", {std::to_string(r.plans.size())})) +
         html::Table({"#", t("engine"), t("instance"), t("col_nodes_gpus"), t("layout"), t("col_mb_accum"), t("recompute"),
                      t("precision"), t("col_mem_gib"), "MFU", t("col_wall_clock"), t("goodput"), t("cost"), t("col_front")},
                     rows, {0, 3, 8, 9, 10, 11, 12}) +
         Para(t("setups_legend"), "note");
}

std::string FrontTable(const ReportText& t, const PlanResult& r) {
  if (r.pareto.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  for (const Plan& p : r.pareto)
    rows.push_back({p.instance.id + PriceKind(p), Int(p.job.cluster.num_gpus), LayoutString(p.job), Hours(t, p.time_s), Cost(t, p)});
  return H2(t("pareto_front")) + html::Table({t("instance"), t("col_gpus"), t("layout"), t("col_wall_clock"), t("cost")}, rows, {1, 3, 4});
}
}  // namespace

Result<std::string> PlanToHtml(const PlanResult& r, const Job& job, const PlanPrintContext& ctx, const HtmlReportOptions& options) {
  auto t = ReportText::Load(options.lang);
  if (!t.ok()) return t.status();
  std::string body = PlanHeader(*t, r, job);
  if (r.plans.empty()) {
    body += H2((*t)("no_plan")) + Para("[" + r.relax_code + "] " + r.relax, "warn");
  } else {
    body += H2((*t)("time_and_cost")) + ParetoPlot(*t, r) + BestSection(*t, r, job, ctx) + SetupsTable(*t, r) + FrontTable(*t, r);
  }
  body += Rejections(*t, r.rejected) + Notes(*t, r.notes);
  return Page(*t, (*t)("plan_title", {ModelName(*t, job)}), body);
}

namespace {
std::string PoolTitle(const ReportText& t, const Job& job) { return t("pool_title", {ModelName(t, job)}); }

int64_t StageGpus(const StageEstimate& st) {
  int64_t n = 0;
  for (const StagePart& p : st.parts) n += p.gpus;
  return n;
}

// Blocks, micro-batch time and memory of each stage of the best layout, each part coloured by its card.
std::string StageCharts(const ReportText& t, const Pool& pool, const PoolEstimate& e) {
  html::BarChart blocks{t("stage_blocks_title"), t("axis_blocks"), {}, {}};
  html::BarChart pace{t("stage_time_title"), t("axis_seconds"), {}, {}};
  html::BarChart memory{t("stage_memory_title"), t("axis_gib"), {}, {}};
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  for (const StageEstimate& st : e.stages) {
    const std::string label = t("stage_n", {std::to_string(st.stage)});
    // A stage's parts all hold its blocks (replicas on different cards): one segment, named by every card.
    std::string cards;
    for (const StagePart& p : st.parts) cards += (cards.empty() ? "" : " + ") + pool.groups[p.group].gpu + " (" + pool.groups[p.group].name + ")";
    html::Bar b{label, {{cards, static_cast<double>(st.layers), t("stage_blocks_gpus", {Int(st.layers), Int(StageGpus(st))})}},
                t("stage_blocks_gpus", {Int(st.layers), Int(StageGpus(st))})};
    html::Bar m{label, {}, Seconds(t, st.microbatch_s)};
    for (const StagePart& p : st.parts) {
      const PoolGroup& g = pool.groups[p.group];
      const std::string card = g.gpu + " (" + g.name + ")";
      memory.bars.push_back({label + " · " + g.name, {{card, p.memory.total_bytes / kGiB, GiB(p.memory.total_bytes)}},
                             GiB(p.memory.total_bytes) + " / " + GiB(p.capacity_bytes)});
    }
    const StagePart& pacing = st.parts[st.pacing_part];
    const PoolGroup& g = pool.groups[pacing.group];
    m.segments.push_back({g.gpu + " (" + g.name + ")", st.microbatch_s, Seconds(t, st.microbatch_s)});
    blocks.bars.push_back(b);
    pace.bars.push_back(m);
  }
  return html::Bars(blocks) + html::Bars(pace) + html::Bars(memory);
}

std::string StageTable(const ReportText& t, const Pool& pool, const PoolEstimate& e) {
  std::vector<std::vector<std::string>> rows;
  for (const StageEstimate& st : e.stages)
    for (const StagePart& p : st.parts) {
      const PoolGroup& g = pool.groups[p.group];
      rows.push_back({std::to_string(st.stage), g.gpu + " (" + g.name + ")", Int(p.gpus), Int(e.layout.tp), Int(e.layout.dp),
                      Int(st.layers), F("%.4f", p.microbatch_s), GiB(p.memory.total_bytes) + " / " + GiB(p.capacity_bytes),
                      p.fits ? t("yes") : t("does_not_fit")});
    }
  return html::Table({t("col_stage"), t("col_card"), t("col_gpus"), t("col_tp"), t("col_dp"), t("col_blocks"), t("col_microbatch_s"),
                      t("col_mem_card"), t("col_fits")},
                     rows, {0, 2, 3, 4, 5, 6});
}

std::string PoolPlansTable(const ReportText& t, const Pool& pool, const PoolPlanResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const PoolEstimate& e = r.plans[i].estimate;
    rows.push_back({std::to_string(i + 1), PoolStagesString(pool, e), Int(e.layout.micro_batch), F("%.3f", e.step_time_s),
                    Int(static_cast<int64_t>(e.tokens_per_s + 0.5)), Percent(e.mfu), e.time_to_train_s > 0 ? Hours(t, e.time_to_train_s) : "-",
                    e.cost_usd ? Usd(*e.cost_usd) : e.cost_per_hour_usd ? F("$%.2f/h", *e.cost_per_hour_usd) : t("unknown")});
  }
  return H2(t("pool_plans_title", {std::to_string(r.plans.size())})) +
         html::Table({"#", t("col_stages"), t("col_mb"), t("col_step_s"), t("col_tokens_s"), "MFU", t("col_train_time"), t("cost")}, rows,
                     {0, 2, 3, 4, 5, 6, 7}) +
         Para(t("pool_legend"), "note");
}

std::string PoolBest(const ReportText& t, const Pool& pool, const PoolPlan& best) {
  const PoolEstimate& e = best.estimate;
  Facts facts = {{t("layout"), PoolStagesString(pool, e)},
                 {t("step_time"), Seconds(t, e.step_time_s)},
                 {t("throughput"), t("tokens_per_s", {Int(static_cast<int64_t>(e.tokens_per_s + 0.5))})},
                 {"MFU", Percent(e.mfu)}};
  if (e.time_to_train_s > 0) facts.push_back({t("train_time"), Hours(t, e.time_to_train_s)});
  if (e.cost_per_hour_usd) facts.push_back({t("cost_per_hour"), F("$%.2f", *e.cost_per_hour_usd)});
  if (e.cost_usd) facts.push_back({t("cost"), Usd(*e.cost_usd)});
  if (!best.engine_note.empty()) facts.push_back({t("engine"), best.engine_note});
  std::string out = H2(t("pool_best_title")) + html::Facts(facts) + StageCharts(t, pool, e) + StageTable(t, pool, e);
  const StepBreakdown& b = e.breakdown;
  html::BarChart step{t("step_title", {Seconds(t, e.step_time_s), Percent(e.mfu)}), t("axis_seconds"), {}, {}};
  html::Bar bar{t("step_time"), {}, Seconds(t, e.step_time_s)};
  const std::pair<const char*, double> parts[] = {{"step_compute", b.compute_s}, {"step_bubble", b.bubble_s}, {"step_tp", b.tp_comm_s},
                                                  {"step_cp", b.cp_comm_s}, {"step_pp", b.pp_comm_s}, {"step_dp", b.dp_comm_s},
                                                  {"step_ep", b.ep_comm_s}, {"step_data", b.data_s}, {"step_optimizer", b.optimizer_s},
                                                  {"step_checkpoint", b.checkpoint_s}, {"step_overhead", b.overhead_s}};
  for (const auto& [key, s] : parts)
    if (s > 0) bar.segments.push_back({t(key), s, Seconds(t, s)});
  step.bars.push_back(bar);
  out += html::Bars(step);
  if (!e.placement.empty()) out += H2(t("placement")) + List(e.placement);
  std::vector<std::string> idle;
  for (const IdleCards& c : e.idle) idle.push_back(Int(c.gpus) + " × " + pool.groups[c.group].gpu + " (" + pool.groups[c.group].name + "): " + c.why);
  out += H2(t("idle_cards")) + (idle.empty() ? Para(t("none")) : List(idle));
  if (!e.fits) out += Para(t("does_not_fit") + ": " + e.not_fit_reason, "warn");
  return out;
}
}  // namespace

Result<std::string> PoolPlanToHtml(const Pool& pool, const PoolPlanResult& r, const Job& job, const HtmlReportOptions& options) {
  auto t = ReportText::Load(options.lang);
  if (!t.ok()) return t.status();
  Facts facts = {{(*t)("model"), ModelName(*t, job)}, {(*t)("job_file"), job.source.empty() ? (*t)("command_line") : job.source},
                 {(*t)("pool"), PoolHeader(pool)},
                 {(*t)("searched"), (*t)("pool_searched_value", {Int(r.candidates), F("%.2f", r.search_s)})}};
  std::string body = Header(PoolTitle(*t, job), facts);
  if (r.plans.empty()) body += H2((*t)("no_pool_plan"));
  else body += PoolPlansTable(*t, pool, r) + PoolBest(*t, pool, r.plans.front());
  body += Rejections(*t, r.rejections);
  return Page(*t, PoolTitle(*t, job), body);
}

}  // namespace gpuplan
