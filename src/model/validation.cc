// gpuplan validate: measured metric -> tokens/s per GPU, prediction, error summaries.
#include "gpuplan/validation.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "gpuplan/estimate.h"
#include "gpuplan/memory.h"

namespace gpuplan {

namespace {

std::string ShortSource(const std::string& src) {
  // "github:owner/repo@commit:path (...)" -> "owner/repo path-ish"
  std::string s = src;
  if (s.rfind("github:", 0) == 0) s = s.substr(7);
  auto at = s.find('@');
  std::string repo = s.substr(0, at);
  std::string rest = at == std::string::npos ? "" : s.substr(at);
  auto colon = rest.find(':');
  std::string path = colon == std::string::npos ? "" : rest.substr(colon + 1);
  auto paren = path.find(" (");
  if (paren != std::string::npos) path = path.substr(0, paren);
  return repo + (path.empty() ? "" : ":" + path);
}

ErrorSummary Summarize(const std::string& group, std::vector<double> signed_errors) {
  ErrorSummary s;
  s.group = group;
  s.rows = static_cast<int>(signed_errors.size());
  if (signed_errors.empty()) return s;
  double sum = 0;
  std::vector<double> abs_e;
  for (double e : signed_errors) {
    sum += e;
    abs_e.push_back(std::fabs(e));
  }
  std::sort(abs_e.begin(), abs_e.end());
  auto pct = [&](double q) {
    const double idx = q * (abs_e.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(idx)), hi = static_cast<size_t>(std::ceil(idx));
    return abs_e[lo] + (abs_e[hi] - abs_e[lo]) * (idx - lo);
  };
  s.median_abs = pct(0.5);
  s.p90_abs = pct(0.9);
  s.mean_signed = sum / signed_errors.size();
  return s;
}

}  // namespace

Result<ValidationReport> ValidateRuns(const std::vector<std::string>& paths, const Catalog& catalog, const Calibration& cal) {
  std::vector<MeasuredRow> all_rows;
  for (const auto& path : paths) {
    auto rows = ReadMeasuredRows(path, catalog);
    if (!rows.ok()) return rows.status();
    for (auto& r : rows.value()) {
      r.file = path;
      all_rows.push_back(std::move(r));
    }
  }
  const std::vector<MeasuredRow>* rows = &all_rows;
  ValidationReport rep;
  std::map<std::string, int> seen;  // run key -> line of the row that represents it
  // Prefer the direct throughput metric when a run appears under several metrics.
  std::vector<MeasuredRow> ordered = *rows;
  auto rank = [](const std::string& m) {
    if (m == "throughput_tokens_per_sec_per_gpu") return 0;
    if (m == "throughput_tokens_per_sec_global") return 1;
    if (m == "iteration_time") return 2;
    if (m == "model_tflops_per_gpu") return 3;
    if (m == "mfu") return 4;
    return 5;
  };
  std::stable_sort(ordered.begin(), ordered.end(),
                   [&](const MeasuredRow& x, const MeasuredRow& y) { return rank(x.metric) < rank(y.metric); });
  std::map<std::string, std::vector<double>> by_source, by_gpu;
  std::vector<double> all, mem;
  for (const auto& r : ordered) {
    ValidatedRow v;
    v.row = r;
    if (!r.usable) {
      v.reason = r.skip_reason;
      rep.rows.push_back(v);
      continue;
    }
    const Job& j = r.job;
    const std::string key = r.source.substr(0, r.source.find(" (")) + "|" + r.model_name + "|" + std::to_string(j.cluster.num_gpus) + "|" +
                            std::to_string(j.training.seq_len) + "|" + std::to_string(j.training.micro_batch) + "|" +
                            std::to_string(j.training.global_batch) + "|" + ToString(j.training.precision) + "|" +
                            ToString(j.training.recompute) + "|" + std::to_string(j.parallel.tp) + "|" +
                            std::to_string(j.parallel.pp) + "|" + r.source;
    auto hw = ResolveHardware(j, catalog, cal);
    if (!hw.ok()) {
      v.reason = hw.status().reason();
      rep.rows.push_back(v);
      continue;
    }
    if (r.metric == "peak_memory_reserved_per_gpu") {
      v.used = true;
      v.memory = true;
      v.measured_tokens_per_s_per_gpu = r.measured;
      v.predicted_tokens_per_s_per_gpu = EstimateMemory(j, cal).total_bytes / (1024.0 * 1024 * 1024);
      v.error = (v.predicted_tokens_per_s_per_gpu - r.measured) / r.measured;
      mem.push_back(v.error);
      rep.rows.push_back(v);
      continue;
    }
    const double gpus = static_cast<double>(j.cluster.num_gpus);
    const double mflops = ModelFlopsPerToken(j.arch, j.training.seq_len);
    const double peak = hw->gpu.PeakFlops(j.training.precision).value_or(0);
    double meas = 0;
    const std::string& m = r.metric;
    if (m == "throughput_tokens_per_sec_per_gpu") meas = r.measured;
    else if (m == "throughput_tokens_per_sec_global") meas = r.measured / gpus;
    else if (m == "mfu") meas = r.measured / 100 * peak / mflops;
    else if (m == "model_tflops_per_gpu") meas = r.measured * 1e12 / mflops;
    else if (m == "iteration_time") meas = j.training.global_batch * static_cast<double>(j.training.seq_len) / r.measured / gpus;
    else if (m == "achieved_tflops_per_gpu" || m == "aggregate_pflops" || m == "percent_of_theoretical_peak") {
      // Megatron-LM reports FLOPs with full recompute: 96 B s l h^2 (1 + s/6h + V/16lh) per step.
      const double s = static_cast<double>(j.training.seq_len);
      // Narayanan et al. 2021 eq. (3) per token: forward + backward + recompute = 4 passes.
      const double l = static_cast<double>(j.arch.layers), hd = static_cast<double>(j.arch.hidden);
      const double per_token = 96.0 * l * hd * hd * (1 + s / (6 * hd) + static_cast<double>(j.arch.vocab) / (16 * l * hd));
      double tflops = r.measured;
      if (m == "aggregate_pflops") tflops = r.measured * 1e3 / gpus;
      if (m == "percent_of_theoretical_peak") tflops = r.measured / 100 * peak / 1e12;
      meas = tflops * 1e12 / per_token;
    } else {
      v.reason = "metric '" + m + "' is not converted to tokens/s (HFU depends on the source's recompute convention)";
      rep.rows.push_back(v);
      continue;
    }
    if (auto it = seen.find(key); it != seen.end()) {
      v.reason = "same run as line " + std::to_string(it->second) + " (reported under another metric)";
      rep.rows.push_back(v);
      continue;
    }
    seen[key] = r.line;
    const StepEstimate e = EstimateStep(j, *hw);
    v.used = true;
    v.measured_tokens_per_s_per_gpu = meas;
    v.predicted_tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
    v.predicted_mfu = e.mfu;
    v.error = (e.tokens_per_s_per_gpu - meas) / meas;
    rep.rows.push_back(v);
    all.push_back(v.error);
    by_source[ShortSource(r.source)].push_back(v.error);
    by_gpu[hw->gpu.id].push_back(v.error);
  }
  std::sort(rep.rows.begin(), rep.rows.end(), [](const ValidatedRow& a, const ValidatedRow& b) {
    return a.row.file != b.row.file ? a.row.file < b.row.file : a.row.line < b.row.line;
  });
  rep.overall = Summarize("all", all);
  rep.memory = Summarize("memory", mem);
  for (auto& [k, v] : by_source) rep.by_source.push_back(Summarize(k, v));
  for (auto& [k, v] : by_gpu) rep.by_gpu.push_back(Summarize(k, v));
  return rep;
}

}  // namespace gpuplan
