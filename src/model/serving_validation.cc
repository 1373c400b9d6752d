// gpuplan validate on served runs: every row's job through EstimateServing, each measure compared
// in its source's own meaning, in-sample and leave-one-source-out (docs/validation.md "Serving").
#include "gpuplan/serving_validation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

// The family a measure belongs to, and its rank inside it: a run is compared once per family,
// by the most direct measure it has (the mean before the median, TPOT before ITL, total tokens/s
// before per GPU before requests/s).
struct Family {
  const char* family;
  int rank;
};
std::optional<Family> FamilyOf(const std::string& metric) {
  static const std::map<std::string, Family> kFamilies = {
      {"ttft_mean_s", {"TTFT", 0}},         {"ttft_p50_s", {"TTFT", 1}},      {"ttft_p90_s", {"TTFT p90", 0}},
      {"tpot_mean_s", {"TPOT", 0}},         {"tpot_p50_s", {"TPOT", 1}},      {"itl_mean_s", {"TPOT", 2}},
      {"itl_p50_s", {"TPOT", 3}},           {"tpot_p90_s", {"TPOT p90", 0}},  {"output_tokens_per_s", {"throughput", 0}},
      {"output_tokens_per_s_per_gpu", {"throughput", 1}}, {"requests_per_s", {"throughput", 2}},
      {"e2e_latency_mean_s", {"latency", 0}}};
  auto it = kFamilies.find(metric);
  if (it == kFamilies.end()) return std::nullopt;
  return it->second;
}

double Predicted(const std::string& metric, const ServingRunRow& r, const ServingEstimate& e) {
  const double out = std::max(1.0, r.job.serving.output_len);
  if (metric == "ttft_mean_s" || metric == "ttft_p50_s") return e.ttft_s.mean;
  if (metric == "ttft_p90_s") return e.ttft_s.p90;
  if (metric == "tpot_mean_s" || metric == "tpot_p50_s" || metric == "itl_mean_s" || metric == "itl_p50_s")
    return e.tpot_s.mean;
  if (metric == "tpot_p90_s") return e.tpot_s.p90;
  if (metric == "e2e_latency_mean_s") return e.ttft_s.mean + (out - 1) * e.tpot_s.mean;
  if (metric == "output_tokens_per_s") return e.output_tokens_per_s;
  if (metric == "output_tokens_per_s_per_gpu") return e.output_tokens_per_s_per_gpu;
  if (metric == "requests_per_s") return e.requests_per_s;
  return 0;
}

// The row's job as predicted: the engine profile it ran (its version where the data has it, else
// the newest), and for a ShareGPT prompt set without stated percentiles, the dataset's length
// shape (S§7: p90 = serving.dataset.sharegpt.*_p90_over_mean x the stated mean).
Job RowJob(const ServingRunRow& r, const std::vector<ServingEngineProfile>& engines, const Calibration& cal) {
  Job j = r.job;
  if (!j.serving.engine_version.empty() && !FindServingEngine(engines, j.serving.engine, j.serving.engine_version, {}).ok())
    j.serving.engine_version.clear();
  ServingSpec& s = j.serving;
  if (Lower(r.dataset).find("sharegpt") != std::string::npos) {
    if (s.input_len_p90 <= 0) s.input_len_p90 = s.input_len * cal.Get("serving.dataset.sharegpt.input_p90_over_mean");
    if (s.output_len_p90 <= 0) s.output_len_p90 = s.output_len * cal.Get("serving.dataset.sharegpt.output_p90_over_mean");
  }
  return j;
}

// One row: its estimate, or why not; the measures compared into `out`.
std::string PredictServingRow(const ServingRunRow& r, size_t index, const Catalog& catalog, const Calibration& cal,
                              const std::vector<ServingEngineProfile>& engines, std::vector<ServingCompared>& out) {
  if (!r.usable) return r.skip_reason;
  const Job job = RowJob(r, engines, cal);
  auto e = EstimateServing(job, catalog, cal, engines);
  if (!e.ok()) return "not estimated: " + e.status().reason();
  if (!e->fits) return "the model says it does not start: " + e->fit_problem;
  std::map<std::string, const ServingMeasure*> best;  // family -> measure
  for (const auto& m : r.measures) {
    auto f = FamilyOf(m.metric);
    if (!f || !m.skip_reason.empty()) continue;
    auto& b = best[f->family];
    if (b == nullptr || FamilyOf(b->metric)->rank > f->rank) b = &m;
  }
  if (best.empty()) return "no comparable measure";
  for (const auto& [family, m] : best) {
    ServingCompared c;
    c.row = index, c.metric = m->metric, c.family = family;
    c.measured = m->value;
    c.predicted = Predicted(m->metric, r, *e);
    c.error = (c.predicted - c.measured) / c.measured;
    out.push_back(c);
  }
  return "";
}

// Every compared number again with the constants fitted without the row's source.
void PredictServingLoso(ServingValidationReport& rep, const Catalog& catalog, const Calibration& cal,
                        const std::vector<ServingEngineProfile>& engines, const LosoFits& fits) {
  std::map<std::string, int> missing;
  for (auto& c : rep.compared) {
    const ServingRunRow& r = rep.rows[c.row];
    auto it = fits.values.find(r.fold);
    if (it == fits.values.end()) { ++missing[r.fold]; continue; }
    Calibration fold = cal;
    for (const auto& [k, v] : it->second) fold.Set(k, v);
    auto e = EstimateServing(RowJob(r, engines, fold), catalog, fold, engines);
    if (!e.ok() || !e->fits) { ++missing[r.fold]; continue; }
    c.loso = true;
    c.loso_predicted = Predicted(c.metric, r, *e);
    c.loso_error = (c.loso_predicted - c.measured) / c.measured;
  }
  for (const auto& [fold, n] : missing)
    rep.loso_warnings.push_back("no leave-one-source-out prediction for " + std::to_string(n) + " numbers of " + fold +
                                " (no fit without it, or it does not start with the fold's constants)");
  rep.has_loso = true;
}

std::string DimensionKey(const ServingValidationReport& r, const ServingCompared& c, const std::string& dim) {
  const ServingRunRow& row = r.rows[c.row];
  if (dim == "engine") return row.job.serving.engine;
  if (dim == "GPU") return row.job.cluster.gpu;
  if (dim == "scenario") return ToString(row.scenario);
  if (dim == "source") return row.fold;
  if (dim == "metric") return c.family;
  return "all rows";
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double idx = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(idx)), hi = static_cast<size_t>(std::ceil(idx));
  return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

ServingErrorSummary Summary(const std::string& group, const std::vector<double>& errors) {
  ServingErrorSummary s;
  s.group = group;
  s.n = static_cast<int>(errors.size());
  std::vector<double> a;
  for (double e : errors) a.push_back(std::fabs(e));
  s.median_abs = Quantile(a, 0.5);
  s.p90_abs = Quantile(a, 0.9);
  s.sides = SplitOverUnder(errors);
  return s;
}

bool LowConcurrency(const ServingRunRow& r) {
  return r.scenario == ServingScenario::kConcurrency && r.job.serving.concurrency <= kLowConcurrency;
}

}  // namespace

Result<ServingValidationReport> ValidateServing(const std::vector<std::string>& paths, const Catalog& catalog,
                                                const Calibration& cal,
                                                const std::vector<ServingEngineProfile>& engines,
                                                const ServingRowOptions& options, const LosoFits* loso) {
  ServingValidationReport rep;
  for (const auto& p : paths) {
    auto rows = ReadServingRows(p, catalog, options);
    if (!rows.ok()) return rows.status();
    for (auto& r : *rows) rep.rows.push_back(std::move(r));
  }
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    rep.row_reasons.push_back(PredictServingRow(rep.rows[i], i, catalog, cal, engines, rep.compared));
    ++rep.rows_total;
    if (rep.row_reasons.back().empty()) ++rep.rows_predicted;
  }
  if (loso != nullptr) PredictServingLoso(rep, catalog, cal, engines, *loso);
  return rep;
}

std::vector<ServingErrorSummary> SummarizeServing(const ServingValidationReport& r, const std::string& family,
                                                  const std::string& dimension, bool loso) {
  std::map<std::string, std::vector<double>> by;
  for (const auto& c : r.compared) {
    if (c.family != family || (loso && !c.loso)) continue;
    by[DimensionKey(r, c, dimension)].push_back(loso ? c.loso_error : c.error);
  }
  std::vector<ServingErrorSummary> out;
  for (const auto& [g, errors] : by) out.push_back(Summary(g, errors));
  return out;
}

ServingHeadline ServingHeadlines(const ServingValidationReport& r, bool loso) {
  std::vector<double> tpot, thr, ttft;
  for (const auto& c : r.compared) {
    if (loso && !c.loso) continue;
    const double e = loso ? c.loso_error : c.error;
    if (c.family == "TPOT") tpot.push_back(e);
    if (c.family == "throughput") thr.push_back(e);
    if (c.family == "TTFT" && LowConcurrency(r.rows[c.row])) ttft.push_back(e);
  }
  ServingHeadline h;
  h.tpot = Summary("TPOT", tpot);
  h.throughput = Summary("throughput", thr);
  h.ttft_low = Summary("TTFT at concurrency <= 8", ttft);
  h.share_predicted = r.rows_total > 0 ? static_cast<double>(r.rows_predicted) / r.rows_total : 0;
  return h;
}

}  // namespace gpuplan
