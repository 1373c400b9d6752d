// `gpuplan serving`: the ServingEstimate printed as text and as JSON (one record, two printers).
// No model logic here: every number comes from EstimateServing (src/model/serving.cc).
#include <cmath>
#include <cstdio>

#include "gpuplan/data.h"
#include "gpuplan/report.h"
#include "gpuplan/text_width.h"

namespace gpuplan {

namespace {

std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }
std::string Ms(double s) { return F(s < 0.1 ? "%.1f ms" : "%.0f ms", 1e3 * s); }
std::string Usd(double v) { return F(v < 1 ? "$%.3f" : v < 100 ? "$%.2f" : "$%.0f", v); }
std::string Tokens(double v) { return WithThousands(static_cast<int64_t>(std::llround(v))); }
nlohmann::json OrNull(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// The parts of one decode step, in the order the text prints them.
struct StepPart {
  const char* key;
  const char* label;
  double StepTime::*field;
};
const StepPart kStepParts[] = {
    {"weights_read", "weights read from HBM", &StepTime::weights_read_s},
    {"kv_read", "KV cache read (attention of the decodes)", &StepTime::kv_read_s},
    {"compute", "compute beyond the reads (GEMMs, prefill chunks)", &StepTime::compute_s},
    {"tp_comm", "tensor-parallel all-reduces (and pp hops)", &StepTime::tp_comm_s},
    {"overhead", "scheduler, sampler, kernel launches", &StepTime::overhead_s},
};

std::string LoadWords(const ServingSpec& s) {
  switch (s.load) {
    case ServingLoad::kConcurrency: return "concurrency " + F("%g", s.concurrency);
    case ServingLoad::kRequestRate: return F("%g requests/s (Poisson arrivals)", s.request_rate);
    case ServingLoad::kMaxThroughput: return "maximum throughput (every request at once)";
    case ServingLoad::kNumRequests: return F("%g requests at once (simulated step by step)", static_cast<double>(s.num_requests));
  }
  return "";
}

nlohmann::json InputsJson(const Job& job) {
  nlohmann::json in = JobToJson(job);
  in.erase("training");  // a serving job has none; its workload is the serving section
  const ServingSpec& s = job.serving;
  nlohmann::json load = {{"kind", ToString(s.load)}};
  if (s.load == ServingLoad::kConcurrency) load["concurrency"] = s.concurrency;
  if (s.load == ServingLoad::kRequestRate) load["request_rate"] = s.request_rate;
  if (s.load == ServingLoad::kNumRequests) load["num_requests"] = s.num_requests;
  auto set_or_null = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  in["serving"] = {{"engine", s.engine},
                   {"engine_version", s.engine_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.engine_version)},
                   {"weights", ToString(s.weights)},
                   {"kv_dtype", ToString(s.kv_dtype)},
                   {"gpu_memory_utilization", set_or_null(s.gpu_memory_utilization)},
                   {"max_model_len", set_or_null(static_cast<double>(s.max_model_len))},
                   {"max_num_seqs", set_or_null(static_cast<double>(s.max_num_seqs))},
                   {"max_num_batched_tokens", set_or_null(static_cast<double>(s.max_num_batched_tokens))},
                   {"input_len", s.input_len},
                   {"output_len", s.output_len},
                   {"input_len_p90", set_or_null(s.input_len_p90)},
                   {"output_len_p90", set_or_null(s.output_len_p90)},
                   {"load", load},
                   {"ttft_p90_ms", set_or_null(s.ttft_p90_ms)},
                   {"tpot_p90_ms", set_or_null(s.tpot_p90_ms)},
                   {"target_output_tokens_per_s", set_or_null(s.target_output_tokens_per_s)}};
  return in;
}

nlohmann::json MemoryJson(const ServingMemory& m) {
  return {{"device_bytes", m.device_bytes},         {"budget_bytes", m.budget_bytes},
          {"weights_bytes", m.weights_bytes},       {"activation_bytes", m.activation_bytes},
          {"non_torch_bytes", m.non_torch_bytes},   {"cuda_graph_bytes", m.cuda_graph_bytes},
          {"kv_cache_bytes", m.kv_bytes}};
}

}  // namespace

nlohmann::json ServingToJson(const ServingReport& r) {
  const ServingEstimate& e = r.estimate;
  // Latency, throughput and cost of a setup that does not start are not numbers: null.
  auto run = [&](double v) { return e.fits ? nlohmann::json(v) : nlohmann::json(nullptr); };
  auto latency = [&](const Latency& l) { return nlohmann::json{{"mean", run(l.mean)}, {"p90", run(l.p90)}}; };
  nlohmann::json step = {{"total", run(e.decode_step.total_s)}};
  for (const auto& p : kStepParts) step[p.key] = run(e.decode_step.*(p.field));
  nlohmann::json notes = nlohmann::json::array();
  for (const auto& n : e.notes) notes.push_back(n);
  return {
      {"version", kVersion},
      {"schema", kJsonSchemaVersion},
      {"model_fingerprint", ModelFingerprint()},
      {"inputs", InputsJson(r.job)},
      {"engine", {{"name", e.engine}, {"version", e.engine_version}}},
      {"hardware",
       {{"gpu", r.gpu.id}, {"num_gpus", e.num_gpus}, {"tp", r.job.parallel.tp}, {"pp", r.job.parallel.pp},
        {"replicas", e.replicas}}},
      {"fits", e.fits},
      {"fit_problem", e.fits ? nlohmann::json(nullptr) : nlohmann::json(e.fit_problem)},
      {"what_would_fit", e.what_would_fit},
      {"memory_per_gpu", MemoryJson(e.memory)},
      {"weights_per_gpu_bytes", e.memory.weights_bytes},
      {"kv_cache_per_gpu_bytes", e.memory.kv_bytes},
      {"kv_cache_bytes_per_token", e.kv_bytes_per_token},
      {"kv_cache_bytes_per_token_per_gpu", e.kv_bytes_per_token_per_gpu},
      {"kv_cache_capacity_tokens", e.kv_capacity_tokens},
      {"max_model_len", e.max_model_len},
      {"max_num_seqs", e.max_num_seqs},
      {"max_num_batched_tokens", e.max_num_batched_tokens},
      {"max_concurrency", e.max_concurrency},
      {"max_concurrency_at_tokens", e.max_concurrency_at_tokens},
      {"concurrency", run(e.concurrency)},
      {"ttft_s", latency(e.ttft_s)},
      {"tpot_s", latency(e.tpot_s)},
      {"prefill_s", run(e.prefill_s)},
      {"decode_step_s", step},
      {"output_tokens_per_s", run(e.output_tokens_per_s)},
      {"output_tokens_per_s_per_gpu", run(e.output_tokens_per_s_per_gpu)},
      {"input_tokens_per_s", run(e.input_tokens_per_s)},
      {"requests_per_s", run(e.requests_per_s)},
      {"saturated", e.saturated},
      {"price", {{"usd_per_gpu_hour", OrNull(e.usd_per_gpu_hour)},
                 {"instance", e.price_instance.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.price_instance)}}},
      {"cost_per_million_output_tokens_usd", e.fits ? OrNull(e.cost_per_million_output_tokens_usd) : nullptr},
      {"cost_per_million_input_tokens_usd", e.fits ? OrNull(e.cost_per_million_input_tokens_usd) : nullptr},
      {"bottleneck", e.bottleneck},
      {"launch", r.launch.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.launch)},
      {"notes", notes},
  };
}

namespace {

std::string Header(const ServingReport& r, bool md) {
  const Job& j = r.job;
  const ServingEstimate& e = r.estimate;
  const ServingSpec& s = j.serving;
  std::string out = (md ? "**" : "") + j.arch.name + " on " + std::to_string(e.num_gpus) + " x " + r.gpu.id + " (tp " +
                    std::to_string(j.parallel.tp) + ", pp " + std::to_string(j.parallel.pp) + ", " +
                    std::to_string(e.replicas) + (e.replicas == 1 ? " replica" : " replicas") + "), " + e.engine + " " +
                    e.engine_version + ", weights " + ToString(s.weights) + ", KV cache " + ToString(s.kv_dtype) +
                    (md ? "**\n" : "") + "\n";
  const bool p90 = s.input_len_p90 > 0 || s.output_len_p90 > 0;
  out += "workload: " + F("%g", s.input_len) + " tokens in / " + F("%g", s.output_len) + " out" +
         (p90 ? " (p90 " + F("%g", s.input_len_p90 > 0 ? s.input_len_p90 : s.input_len) + " / " +
                    F("%g", s.output_len_p90 > 0 ? s.output_len_p90 : s.output_len) + ")"
              : "") +
         ", " + LoadWords(s) + "; engine limits: max_model_len " + std::to_string(e.max_model_len) + ", max_num_seqs " +
         std::to_string(e.max_num_seqs) + ", max_num_batched_tokens " + std::to_string(e.max_num_batched_tokens) + "\n\n";
  return out;
}

// S§2 the start-up arithmetic, one row per term, as the engine computes it.
std::string MemoryTable(const ServingReport& r, bool md) {
  const ServingMemory& m = r.estimate.memory;
  const ServingEngineProfile& p = r.engine;
  const double fraction = r.job.serving.gpu_memory_utilization > 0 ? r.job.serving.gpu_memory_utilization : p.memory_fraction_default;
  const std::string key = p.memory_fraction_key.empty() ? "memory fraction" : p.memory_fraction_key;
  const bool of_free = p.memory_fraction_of == "free";
  std::vector<std::vector<std::string>> rows = {{"device memory", FormatGiB(m.device_bytes)}};
  auto add = [&](const std::string& label, double bytes) { rows.push_back({label, FormatGiB(bytes)}); };
  if (of_free) {
    // "free" engines: KV = fraction x (device - weights - activation - non-torch - graphs).
    add("- weights", m.weights_bytes);
    add("- activation peak (profile run)", m.activation_bytes);
    add("- non-torch memory (NCCL, CUDA context)", m.non_torch_bytes);
    add("- CUDA graphs", m.cuda_graph_bytes);
    add("= KV cache: " + key + " " + F("%g", fraction) + " x what is left", m.kv_bytes);
  } else {
    add("budget: " + key + " " + F("%g", fraction) + " x device", m.budget_bytes);
    add("- weights", m.weights_bytes);
    add("- activation peak (profile run)", m.activation_bytes);
    add("- non-torch memory (NCCL, CUDA context)", m.non_torch_bytes);
    if (p.cuda_graph_before_kv) add("- CUDA graphs", m.cuda_graph_bytes);
    add("= KV cache", m.kv_bytes);
    if (!p.cuda_graph_before_kv && m.cuda_graph_bytes > 0)
      add("CUDA graphs (captured after the KV cache, outside the budget)", m.cuda_graph_bytes);
  }
  return RenderTable({"memory per GPU at start-up", "GiB"}, rows, md);
}

std::string MetricsTable(const ServingEstimate& e, bool md) {
  std::vector<std::vector<std::string>> rows = {
      {"KV cache per token (model / per GPU)", Tokens(e.kv_bytes_per_token) + " B / " + Tokens(e.kv_bytes_per_token_per_gpu) + " B"},
      {"KV-cache capacity (per replica)", Tokens(static_cast<double>(e.kv_capacity_tokens)) + " tokens"},
      {"max concurrency at " + Tokens(e.max_concurrency_at_tokens) + " tokens", F("%.1f", e.max_concurrency)},
  };
  if (e.fits) {
    rows.push_back({"sequences running per replica", F("%.1f", e.concurrency)});
    rows.push_back({"TTFT mean / p90", Ms(e.ttft_s.mean) + " / " + Ms(e.ttft_s.p90)});
    rows.push_back({"TPOT mean / p90", Ms(e.tpot_s.mean) + " / " + Ms(e.tpot_s.p90)});
    rows.push_back({"output tokens/s total", F("%.0f", e.output_tokens_per_s)});
    rows.push_back({"output tokens/s per GPU", F("%.0f", e.output_tokens_per_s_per_gpu)});
    rows.push_back({"input tokens/s total", F("%.0f", e.input_tokens_per_s)});
    rows.push_back({"requests/s", F("%.2f", e.requests_per_s)});
  }
  if (e.usd_per_gpu_hour) {
    rows.push_back({"price per GPU-hour", Usd(*e.usd_per_gpu_hour) + (e.price_instance.empty() ? "" : " (" + e.price_instance + ")")});
    if (e.fits && e.cost_per_million_output_tokens_usd)
      rows.push_back({"cost per million output tokens", Usd(*e.cost_per_million_output_tokens_usd)});
    if (e.fits && e.cost_per_million_input_tokens_usd)
      rows.push_back({"cost per million input tokens", Usd(*e.cost_per_million_input_tokens_usd)});
  }
  return RenderTable({"metric", "value"}, rows, md);
}

std::string StepTable(const ServingEstimate& e, bool md) {
  const StepTime& st = e.decode_step;
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : kStepParts) {
    const double v = st.*(p.field);
    if (v <= 0) continue;
    rows.push_back({p.label, F("%.2f", 1e3 * v), F("%.1f", st.total_s > 0 ? 100 * v / st.total_s : 0)});
  }
  rows.push_back({"decode step", F("%.2f", 1e3 * st.total_s), "100.0"});
  return RenderTable({"part of the steady-state decode step", "ms", "%"}, rows, md);
}

}  // namespace

std::string ServingToText(const ServingReport& r, bool md) {
  const ServingEstimate& e = r.estimate;
  std::string out = Header(r, md);
  out += MemoryTable(r, md) + "\n" + MetricsTable(e, md);
  if (e.fits) out += "\n" + StepTable(e, md);
  if (!e.usd_per_gpu_hour)
    out += "\nnot priced: no on-demand catalog instance with " + r.gpu.id + " has a price (cost per token is null)\n";
  if (!r.launch.empty()) out += "\n" + WrapCommand("launch: ", r.launch, 8) + "\n";
  for (const auto& n : e.notes) out += "\nnote: " + n + "\n";
  if (!e.fits) {
    out += "\nDOES NOT FIT: " + e.fit_problem + "\n";
    if (!e.what_would_fit.empty()) {
      out += "what would fit:\n";
      for (const auto& w : e.what_would_fit) out += "  - " + w + "\n";
    }
    return out;
  }
  out += "\nbottleneck: " + e.bottleneck + "\n";
  return out;
}

}  // namespace gpuplan
