// One job over a mixed pool: `estimate --pool` (a PoolEstimate) and `plan --pool` (ranked PoolPlans), as text and
// JSON from the same fields.
#include "gpuplan/pool_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "gpuplan/data.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {
std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }
std::string Str(int64_t v) { return std::to_string(v); }

std::string Duration(double s) {
  if (s < 120) return F("%.1f s", s);
  if (s < 2 * 3600) return F("%.1f min", s / 60);
  if (s < 3 * 86400) return F("%.1f h", s / 3600);
  return F("%.1f days", s / 86400);
}

std::string Usd(double v) { return v >= 100 ? "$" + WithThousands(static_cast<int64_t>(v + 0.5)) : F("$%.2f", v); }

// The part a stage is reported by: its pace (the slowest card's micro-batch).
const StagePart& Pace(const StageEstimate& st) { return st.parts[st.pacing_part]; }
// The part closest to its card's capacity: the stage's memory line.
const StagePart& Tightest(const StageEstimate& st) {
  size_t best = 0;
  for (size_t i = 1; i < st.parts.size(); ++i)
    if (st.parts[i].memory.total_bytes / st.parts[i].capacity_bytes >
        st.parts[best].memory.total_bytes / st.parts[best].capacity_bytes)
      best = i;
  return st.parts[best];
}

std::string StageGroups(const Pool& pool, const StageEstimate& st) {
  std::string names;
  for (const StagePart& p : st.parts) names += (names.empty() ? "" : "+") + pool.groups[p.group].name;
  return names;
}

std::string StageCard(const Pool& pool, const StageEstimate& st) {
  std::string out;
  for (const StagePart& p : st.parts)
    out += (out.empty() ? "" : " + ") + pool.groups[p.group].gpu + " (" + pool.groups[p.group].name + ")";
  return out;
}

std::string Blocks(const PoolLayout& l, const StageEstimate& st) {
  return Str(st.layers) + (st.stage == 0 ? " +emb" : "") + (st.stage == l.pp - 1 ? " +head" : "");
}

std::string BreakdownLine(const StepBreakdown& b) {
  const std::pair<const char*, double> parts[] = {
      {"compute", b.compute_s},        {"bubble", b.bubble_s},       {"tp comm", b.tp_comm_s}, {"cp comm", b.cp_comm_s},
      {"pp comm", b.pp_comm_s},        {"dp comm", b.dp_comm_s},     {"ep comm", b.ep_comm_s}, {"data", b.data_s},
      {"optimizer", b.optimizer_s},    {"checkpoint", b.checkpoint_s}, {"fixed", b.overhead_s}};
  std::string out;
  for (const auto& [name, s] : parts)
    if (s > 0) out += std::string(out.empty() ? "" : ", ") + name + " " + F("%.3g s", s);
  return out;
}

std::string CostWords(const PoolEstimate& e) {
  if (!e.cost_per_hour_usd) return "cost: unknown (a used group has no price_per_gpu_hour)";
  std::string out = "cost: " + F("$%.2f per hour", *e.cost_per_hour_usd);
  if (e.cost_usd) out += ", " + Usd(*e.cost_usd) + " to train";
  return out;
}

nlohmann::json OptionalJson(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json BreakdownJson(const StepBreakdown& b) {
  return {{"compute_s", b.compute_s},     {"tp_comm_s", b.tp_comm_s},     {"cp_comm_s", b.cp_comm_s},
          {"pp_comm_s", b.pp_comm_s},     {"dp_comm_s", b.dp_comm_s},     {"ep_comm_s", b.ep_comm_s},
          {"bubble_s", b.bubble_s},       {"data_s", b.data_s},           {"optimizer_s", b.optimizer_s},
          {"checkpoint_s", b.checkpoint_s}, {"overhead_s", b.overhead_s}};
}

nlohmann::json PoolJson(const Pool& pool) {
  nlohmann::json groups = nlohmann::json::array();
  for (const PoolGroup& g : pool.groups)
    groups.push_back({{"name", g.name}, {"gpu", g.gpu}, {"nodes", g.nodes}, {"nodes_available", g.NodesUsable()},
                      {"gpus_per_node", g.gpus_per_node}, {"gpus_usable", g.GpusUsable()}, {"network", g.network},
                      {"intra_node", g.intra_node}, {"price_per_gpu_hour", OptionalJson(g.price_per_gpu_hour)}});
  return {{"name", pool.name}, {"file", pool.file}, {"gpus_usable", pool.GpusUsable()}, {"groups", groups}};
}

nlohmann::json StageJson(const Pool& pool, const PoolLayout& l, const StageEstimate& st) {
  const StagePart& pace = Pace(st);
  const StagePart& tight = Tightest(st);
  nlohmann::json parts = nlohmann::json::array();
  int64_t gpus = 0;
  for (const StagePart& p : st.parts) {
    gpus += p.gpus;
    parts.push_back({{"gpu", pool.groups[p.group].gpu}, {"group", pool.groups[p.group].name}, {"gpus", p.gpus},
                     {"replicas", p.replicas}, {"microbatch_s", p.microbatch_s}, {"memory_bytes", p.memory.total_bytes},
                     {"capacity_bytes", p.capacity_bytes}, {"fits", p.fits}});
  }
  return {{"stage", st.stage}, {"gpu", pool.groups[pace.group].gpu}, {"group", pool.groups[pace.group].name},
          {"gpus", gpus}, {"tp", l.tp}, {"cp", l.cp}, {"dp", l.dp}, {"layers", st.layers},
          {"microbatch_s", st.microbatch_s}, {"after_s", st.after_s}, {"memory_bytes", tight.memory.total_bytes},
          {"capacity_bytes", tight.capacity_bytes}, {"parts", parts}};
}

nlohmann::json EstimateFields(const Pool& pool, const PoolEstimate& e) {
  const PoolLayout& l = e.layout;
  nlohmann::json order = nlohmann::json::array(), stages = nlohmann::json::array(), idle = nlohmann::json::array();
  for (size_t i = 0; i < l.order.size(); ++i)
    order.push_back({{"group", pool.groups[l.order[i]].name}, {"nodes", l.nodes[i]}});
  for (const StageEstimate& st : e.stages) stages.push_back(StageJson(pool, l, st));
  for (const IdleCards& c : e.idle)
    idle.push_back({{"group", pool.groups[c.group].name}, {"gpu", pool.groups[c.group].gpu}, {"gpus", c.gpus}, {"why", c.why}});
  return {{"layout", {{"order", order}, {"tp", l.tp}, {"cp", l.cp}, {"dp", l.dp}, {"pp", l.pp}, {"vpp", l.vpp},
                      {"layer_split", l.layer_split}, {"micro_batch", l.micro_batch}, {"gpus", l.Gpus()}}},
          {"stages", stages},
          {"breakdown", BreakdownJson(e.breakdown)},
          {"step_time_s", e.step_time_s},
          {"tokens_per_step", e.tokens_per_step},
          {"tokens_per_s", e.tokens_per_s},
          {"mfu", e.mfu},
          {"time_to_train_s", e.time_to_train_s},
          {"cost_usd", OptionalJson(e.cost_usd)},
          {"cost_per_hour_usd", OptionalJson(e.cost_per_hour_usd)},
          {"idle", idle},
          {"placement", e.placement},
          {"fits", e.fits},
          {"not_fit_reason", e.not_fit_reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.not_fit_reason)}};
}

std::string StageTable(const Pool& pool, const PoolEstimate& e, bool markdown) {
  std::vector<std::vector<std::string>> rows;
  for (const StageEstimate& st : e.stages) {
    int64_t gpus = 0;
    for (const StagePart& p : st.parts) gpus += p.gpus;
    const StagePart& tight = Tightest(st);
    rows.push_back({Str(st.stage), StageCard(pool, st), Str(gpus), Str(e.layout.tp), Str(e.layout.dp),
                    Blocks(e.layout, st), F("%.4f", st.microbatch_s),
                    FormatGiB(tight.memory.total_bytes) + " / " + FormatGiB(tight.capacity_bytes) +
                        (tight.fits ? "" : " DOES NOT FIT")});
  }
  return RenderTable({"stage", "card (group)", "GPUs", "tp", "dp", "blocks", "micro-batch s", "memory GiB / card"}, rows,
                     markdown);
}

std::string IdleText(const Pool& pool, const PoolEstimate& e) {
  if (e.idle.empty()) return "idle cards: none\n";
  std::string out = "idle cards:\n";
  for (const IdleCards& c : e.idle)
    out += "  " + Str(c.gpus) + " x " + pool.groups[c.group].gpu + " (" + pool.groups[c.group].name + "): " + c.why + "\n";
  return out;
}

std::string RejectionsText(const std::vector<Rejection>& rejections) {
  std::string out = "rejected, by reason\n";
  if (rejections.empty()) return out + "  none\n";
  std::vector<Rejection> by_count = rejections;
  std::stable_sort(by_count.begin(), by_count.end(), [](const Rejection& a, const Rejection& b) { return a.count > b.count; });
  size_t w = 0;
  for (const auto& x : by_count) w = std::max(w, WithThousands(x.count).size());
  for (const auto& x : by_count) {
    const std::string n = WithThousands(x.count);
    out += "  " + std::string(w - n.size(), ' ') + n + "  [" + x.code + "] " + x.reason + "\n";
  }
  return out;
}
}  // namespace

std::string PoolHeader(const Pool& pool) {
  std::string out = "pool " + pool.name + ": " + Str(pool.GpusUsable()) + " GPUs: ";
  for (size_t i = 0; i < pool.groups.size(); ++i) {
    const PoolGroup& g = pool.groups[i];
    out += (i ? " + " : "") + Str(g.GpusUsable()) + " x " + g.gpu + " (" + g.name + ")";
  }
  return out;
}

std::string PoolStagesString(const Pool& pool, const PoolEstimate& e) {
  const PoolLayout& l = e.layout;
  std::string out;
  size_t s = 0;
  while (s < e.stages.size()) {
    const std::string groups = StageGroups(pool, e.stages[s]);
    size_t end = s;
    int64_t gpus = 0;
    std::string split;
    while (end < e.stages.size() && StageGroups(pool, e.stages[end]) == groups) {
      for (const StagePart& p : e.stages[end].parts) gpus += p.gpus;
      split += (split.empty() ? "" : ",") + Str(e.stages[end].layers);
      ++end;
    }
    out += (out.empty() ? "" : " | ") + groups + " x" + Str(gpus) + " (tp" + Str(l.tp) + (l.cp > 1 ? " cp" + Str(l.cp) : "") +
           " dp" + Str(l.dp) + " pp" + Str(static_cast<int64_t>(end - s)) + ": " + split + ")";
    s = end;
  }
  return out;
}

nlohmann::json PoolEstimateToJson(const Pool& pool, const PoolEstimate& e) {
  nlohmann::json out = {{"version", kVersion}, {"schema", kJsonSchemaVersion}, {"pool", PoolJson(pool)}};
  out.update(EstimateFields(pool, e));
  return out;
}

std::string PoolEstimateToText(const Pool& pool, const PoolEstimate& e, bool markdown) {
  const PoolLayout& l = e.layout;
  std::string out = (markdown ? "## " : "") + PoolHeader(pool) + "\n";
  out += "layout: " + PoolStagesString(pool, e) + "; micro-batch " + Str(l.micro_batch) + (l.vpp > 1 ? ", vpp " + Str(l.vpp) : "") +
         "\n\n";
  out += StageTable(pool, e, markdown);
  out += "\nplacement (Megatron rank order: tp, cp, dp fastest, pp slowest):\n";
  for (const std::string& p : e.placement) out += "  " + p + "\n";
  out += "\nstep: " + F("%.3f s", e.step_time_s) + " (" + BreakdownLine(e.breakdown) + ")\n";
  out += "throughput: " + WithThousands(static_cast<int64_t>(e.tokens_per_s + 0.5)) + " tokens/s, MFU " +
         F("%.1f%%", 100 * e.mfu) + " (of the used cards' summed peaks)\n";
  if (e.time_to_train_s > 0) out += "time to train: " + Duration(e.time_to_train_s) + "\n";
  out += CostWords(e) + "\n";
  out += IdleText(pool, e);
  if (!e.fits) out += "DOES NOT FIT: " + e.not_fit_reason + "\n";
  return out;
}

nlohmann::json PoolPlanToJson(const Pool& pool, const PoolPlanResult& r) {
  nlohmann::json plans = nlohmann::json::array(), rejections = nlohmann::json::array();
  for (const PoolPlan& p : r.plans) {
    nlohmann::json j = EstimateFields(pool, p.estimate);
    j["engine_note"] = p.engine_note;
    plans.push_back(std::move(j));
  }
  for (const Rejection& x : r.rejections) rejections.push_back({{"code", x.code}, {"reason", x.reason}, {"count", x.count}});
  return {{"version", kVersion}, {"schema", kJsonSchemaVersion}, {"pool", PoolJson(pool)}, {"plans", plans},
          {"rejections", rejections}, {"candidates", r.candidates}, {"search_s", r.search_s}};
}

std::string PoolPlanToText(const Pool& pool, const PoolPlanResult& r, bool markdown) {
  std::string out = (markdown ? "## " : "") + PoolHeader(pool) + "\n";
  out += "searched " + WithThousands(r.candidates) + (r.candidates == 1 ? " layout in " : " layouts in ") + F("%.2f s", r.search_s) +
         "\n\n";
  if (r.plans.empty()) return out + "no layout fits the pool\n\n" + RejectionsText(r.rejections);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const PoolEstimate& e = r.plans[i].estimate;
    std::string stages = PoolStagesString(pool, e);
    // A Markdown cell cannot hold a bare pipe.
    for (size_t at = 0; markdown && (at = stages.find('|', at)) != std::string::npos; at += 2) stages.replace(at, 1, "\\|");
    rows.push_back({Str(static_cast<int64_t>(i + 1)), stages, Str(e.layout.micro_batch), F("%.3f", e.step_time_s),
                    WithThousands(static_cast<int64_t>(e.tokens_per_s + 0.5)), F("%.1f", 100 * e.mfu),
                    e.time_to_train_s > 0 ? Duration(e.time_to_train_s) : "-",
                    e.cost_usd ? Usd(*e.cost_usd) : (e.cost_per_hour_usd ? F("$%.2f/h", *e.cost_per_hour_usd) : "?")});
  }
  out += RenderTable({"#", "stages (group xGPUs (tp dp pp: blocks per stage))", "mb", "step s", "tokens/s", "MFU %", "train",
                      "cost"},
                     rows, markdown);
  const PoolPlan& best = r.plans.front();
  const PoolEstimate& e = best.estimate;
  out += "\nbest plan: " + F("%.3f s per step", e.step_time_s) + ", micro-batch " + Str(e.layout.micro_batch) + "; " +
         CostWords(e) + "\n" + (markdown ? "\n" : "");
  out += StageTable(pool, e, markdown);
  out += (markdown ? "\n" : "") + std::string("step: ") + BreakdownLine(e.breakdown) + "\n";
  out += IdleText(pool, e);
  if (!best.engine_note.empty()) out += "engine: " + best.engine_note + "\n";
  out += "\n" + RejectionsText(r.rejections);
  out += "\nlegend: stages = consecutive pipeline stages on one group, their GPUs, tp/dp per stage, pp stages and the blocks "
         "of each (the embedding rides on the first, the head on the last); mb = micro-batch; step s = one optimizer step; "
         "MFU against the used cards' summed peaks; cost = time to train x the used groups' prices\n";
  return out;
}

}  // namespace gpuplan
