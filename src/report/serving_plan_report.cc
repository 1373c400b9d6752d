// `gpuplan serving --plan`: the ranked setups, their launch lines and the rejections, as text and JSON.
#include <algorithm>
#include <cstdio>

#include "gpuplan/data.h"
#include "gpuplan/report.h"
#include "gpuplan/serving_plan_report.h"
#include "gpuplan/text_width.h"

namespace gpuplan {

namespace {
std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }

std::string WeightsKv(const ServingPlan& p) { return ToString(p.weights) + "/" + (p.kv_dtype == KvDtype::kFp8 ? "fp8" : "auto"); }
std::string Layout(const ServingPlan& p) {
  return "tp" + std::to_string(p.tp) + (p.pp > 1 ? "pp" + std::to_string(p.pp) : "") + " x" + std::to_string(p.replicas);
}
std::string Gpus(const ServingPlan& p) { return std::to_string(p.gpus) + " x " + p.instance.gpu_id; }
std::string Kind(const ServingPlan& p) { return p.price_kind == "on-demand" ? "" : " (" + p.price_kind + ")"; }

std::string Load(const ServingPlanResult& r, const Job& job) {
  const ServingSpec& s = job.serving;
  std::string load = r.target_requests_per_s > 0 ? F("%.3g req/s", r.target_requests_per_s) : "the job's load (one replica)";
  std::string sla;
  if (s.ttft_p90_ms > 0) sla += F("TTFT p90 <= %.0f ms", s.ttft_p90_ms);
  if (s.tpot_p90_ms > 0) sla += (sla.empty() ? "" : ", ") + F("TPOT p90 <= %.1f ms", s.tpot_p90_ms);
  return load + F(", %.0f in / ", s.input_len) + F("%.0f out tokens", s.output_len) + "; SLA " + (sla.empty() ? "none" : sla);
}

std::string PlansTable(const ServingPlanResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const ServingPlan& p = r.plans[i];
    rows.push_back({std::to_string(i + 1), p.instance.id + Kind(p), Gpus(p), Layout(p), WeightsKv(p),
                    F("%.0f", p.estimate.ttft_s.p90 * 1e3), F("%.1f", p.estimate.tpot_s.p90 * 1e3), F("%.0f", p.output_tokens_per_s),
                    F("%.2f", p.usd_per_hour), F("%.3f", p.cost_per_million_output_tokens_usd)});
  }
  return RenderTable({"#", "instance", "GPUs", "layout", "weights/KV", "ttft ms", "tpot ms", "tok/s", "$/h", "$/Mtok"},
                     rows, false);
}

std::string RejectedText(const ServingPlanResult& r) {
  std::string out = "\nrejected, by reason\n";
  if (r.rejected.empty()) return out + "  none\n";
  std::vector<Rejection> by_count = r.rejected;
  std::stable_sort(by_count.begin(), by_count.end(), [](const Rejection& a, const Rejection& b) { return a.count > b.count; });
  size_t w = 0;
  for (const auto& x : by_count) w = std::max(w, WithThousands(x.count).size());
  for (const auto& x : by_count) {
    const std::string n = WithThousands(x.count);
    out += "  " + std::string(w - n.size(), ' ') + n + "  [" + x.code + "] " + x.reason + "\n";
  }
  return out;
}

nlohmann::json LatencyJson(const Latency& l) { return {{"mean", l.mean}, {"p90", l.p90}}; }

nlohmann::json PlanJson(const ServingPlan& p) {
  const ServingEstimate& e = p.estimate;
  return {{"instance", p.instance.id}, {"provider", p.instance.provider}, {"gpu", p.instance.gpu_id}, {"price_kind", p.price_kind},
          {"usd_per_node_hour", p.usd_per_node_hour}, {"price_date", p.price_date}, {"nodes", p.nodes}, {"gpus", p.gpus},
          {"tp", p.tp}, {"pp", p.pp}, {"replicas", p.replicas}, {"replicas_needed", p.replicas_needed},
          {"weights", ToString(p.weights)}, {"kv_dtype", ToString(p.kv_dtype)}, {"engine", e.engine}, {"engine_version", e.engine_version},
          {"kv_cache_bytes_per_token", e.kv_bytes_per_token}, {"kv_cache_capacity_tokens", e.kv_capacity_tokens},
          {"max_concurrency", e.max_concurrency}, {"max_model_len", e.max_model_len}, {"max_num_seqs", e.max_num_seqs},
          {"max_num_batched_tokens", e.max_num_batched_tokens}, {"ttft_s", LatencyJson(e.ttft_s)}, {"tpot_s", LatencyJson(e.tpot_s)},
          {"output_tokens_per_s", p.output_tokens_per_s}, {"output_tokens_per_s_per_gpu", e.output_tokens_per_s_per_gpu},
          {"requests_per_s", e.requests_per_s}, {"usd_per_hour", p.usd_per_hour},
          {"cost_per_million_output_tokens_usd", p.cost_per_million_output_tokens_usd},
          {"cost_per_million_input_tokens_usd", p.cost_per_million_input_tokens_usd}, {"bottleneck", e.bottleneck},
          {"launch_line", p.launch_line}};
}
}  // namespace

nlohmann::json ServingPlanToJson(const ServingPlanResult& r, const Job& job) {
  nlohmann::json plans = nlohmann::json::array(), rejected = nlohmann::json::array();
  for (const auto& p : r.plans) plans.push_back(PlanJson(p));
  for (const auto& x : r.rejected) rejected.push_back({{"code", x.code}, {"reason", x.reason}, {"count", x.count}});
  const ServingSpec& s = job.serving;
  nlohmann::json inputs = JobToJson(job);
  inputs["serving"] = {{"engine", r.engine}, {"engine_version", r.engine_version}, {"input_len", s.input_len}, {"output_len", s.output_len},
                       {"target_requests_per_s", r.target_requests_per_s},
                       {"ttft_p90_ms", s.ttft_p90_ms > 0 ? nlohmann::json(s.ttft_p90_ms) : nlohmann::json(nullptr)},
                       {"tpot_p90_ms", s.tpot_p90_ms > 0 ? nlohmann::json(s.tpot_p90_ms) : nlohmann::json(nullptr)}};
  return {{"version", kVersion}, {"schema", kJsonSchemaVersion}, {"model_fingerprint", ModelFingerprint()}, {"inputs", inputs},
          {"plans", plans}, {"feasible", r.feasible}, {"considered", r.considered}, {"evaluated", r.evaluated},
          {"rejected", rejected}, {"notes", r.notes},
          {"relax", r.relax.empty() ? nlohmann::json(nullptr) : nlohmann::json({{"code", r.relax_code}, {"message", r.relax}})},
          {"wall_s", r.wall_s}};
}

std::string ServingPlanToText(const ServingPlanResult& r, const Job& job) {
  std::string out = "serving plan for " + job.arch.name + " on " + r.engine + " " + r.engine_version + ": " + Load(r, job) + "\n";
  char buf[200];
  std::snprintf(buf, sizeof buf, "searched %lld candidates (%lld estimates) in %.2f s; %lld layouts x instances meet the SLA\n\n",
                static_cast<long long>(r.considered), static_cast<long long>(r.evaluated), r.wall_s, static_cast<long long>(r.feasible));
  out += buf;
  if (r.plans.empty()) {
    out += "no setup meets the SLA [" + r.relax_code + "]: " + r.relax + "\n";
  } else {
    out += PlansTable(r);
    out += "\nlaunch lines (one replica each; $MODEL, where shown, is your checkpoint's repo or path)\n";
    for (size_t i = 0; i < r.plans.size(); ++i) {
      const std::string num = "  " + std::to_string(i + 1) + ". ";
      out += WrapCommand(num, r.plans[i].launch_line, num.size() + 4) + "\n";
    }
    const ServingPlan& best = r.plans.front();
    out += "\nbest: " + best.instance.id + " x " + std::to_string(best.nodes) + ", " + std::to_string(best.replicas) + " replica" +
           (best.replicas == 1 ? "" : "s") + " (" + std::to_string(best.replicas_needed) + " needed), " +
           F("KV cache %.0f tokens per replica", static_cast<double>(best.estimate.kv_capacity_tokens)) + "; " + best.estimate.bottleneck + "\n";
  }
  out += RejectedText(r);
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  out += "\nlegend: one row per instance type, its cheapest layout; GPUs = instances x GPUs each; layout tpN x R = tensor parallel N, "
         "R engine replicas (the rented GPUs filled); weights/KV = weight format / KV dtype; ttft, tpot = p90 at the target load; "
         "tok/s = output tokens served; $/Mtok = instance price x instances / output tokens, per million\n";
  return out;
}

}  // namespace gpuplan
