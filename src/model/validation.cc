// gpuplan validate: measured metric -> tokens/s per GPU (or bytes), prediction, error summaries by
// group, the stated train/test split, and the error bands (docs/validation.md).
#include "gpuplan/validation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "gpuplan/estimate.h"
#include "gpuplan/data.h"
#include "gpuplan/finetune.h"
#include "gpuplan/memory.h"

namespace gpuplan {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

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

// The source group: repository and the first component of the path ("owner/repo:benchmarks"), so
// one study's tables or result files are one group.
std::string SourceGroup(const std::string& src) {
  const std::string s = ShortSource(src);
  const auto colon = s.find(':');
  if (colon == std::string::npos) return s;
  const auto slash = s.find('/', colon);
  return slash == std::string::npos ? s : s.substr(0, slash);
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

uint64_t Fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// Every job key the row sets (the recipe as read: recompute, precision, offloads, fused ops,
// sequence parallel, ...), so that runs that differ only in recipe stay apart.
std::string RecipeKey(const MeasuredRow& r) {
  std::string s;
  for (const auto& [k, v] : JobToKeys(r.job)) s += k + "=" + v + ";";
  return s + (r.fsdp_pure_bf16 ? "pure" : "") + (r.dp_overlap ? "" : "|no-dp-overlap");
}

// One run, whichever metric reports it: every field that tells two runs apart (configuration,
// fine-tuning method and adapter, framework, sample length) and the source.
std::string RunKey(const MeasuredRow& r) {
  const Job& j = r.job;
  const TrainingSpec& t = j.training;
  std::string targets;
  for (const auto& x : t.lora.targets) targets += x + ",";
  return r.source + "|" + r.model_name + "|" + j.cluster.gpu + "|" + std::to_string(j.cluster.num_gpus) + "|" +
         std::to_string(t.seq_len) + "|" + std::to_string(t.micro_batch) + "|" + std::to_string(t.global_batch) + "|" +
         ToString(t.precision) + "|" + ToString(t.recompute) + "|" + std::to_string(j.parallel.tp) + "|" +
         std::to_string(j.parallel.pp) + "|" + std::to_string(j.parallel.cp) + "|" + std::to_string(j.parallel.zero) + "|" +
         ToString(j.parallel.offload) + "|" + ToString(t.method) + "|" + std::to_string(t.lora.rank) + "|" +
         std::to_string(t.lora.alpha) + "|" + targets + "|" + ToString(t.quant) + "|" + ToString(t.optimizer) + "|" +
         (t.compile ? "compile" : "eager") + "|" + r.framework_text + "|" + ToString(t.padding) + "|" +
         std::to_string(t.tokens_per_sample) + "|" + r.seq_len_kind + "|" + std::to_string(r.mean_tokens_per_sample) + "|" +
         RecipeKey(r);
}

// Which metric represents a run reported under several: the most direct one first.
int MetricRank(const std::string& m) {
  static const char* kOrder[] = {"throughput_tokens_per_sec_per_gpu", "throughput_tokens_per_sec_global", "iteration_time_s",
                                 "iteration_time", "step_time_s", "epoch_time_s", "model_tflops_per_gpu", "mfu"};
  for (size_t i = 0; i < std::size(kOrder); ++i)
    if (m == kOrder[i]) return static_cast<int>(i);
  return static_cast<int>(std::size(kOrder));
}

bool IsMemoryMetric(const std::string& m) { return m.rfind("peak_memory", 0) == 0; }

// A measured time in seconds ("ms" rows are converted).
double Seconds(const MeasuredRow& r) { return r.unit == "ms" ? r.measured / 1000 : r.measured; }

struct Converted {
  double tokens_per_s_per_gpu = 0;
  bool useful = false;      // compared with useful (non-padding / mean-length) tokens
  std::string reason;       // non-empty: not convertible
};

// Measured metric -> tokens/s per GPU (docs/validation.md "Metric conversion").
Converted ConvertThroughput(const MeasuredRow& r, const HardwareContext& hw) {
  Converted c;
  const Job& j = r.job;
  const TrainingSpec& t = j.training;
  const std::string& m = r.metric;
  // A cap or variable length counts the tokens of the samples: without their mean there is no
  // token count, and the row is never read as fixed-length.
  if (r.seq_len_kind != "fixed" && r.mean_tokens_per_sample <= 0) {
    c.reason = "seq_len is only a cap (seq_len_kind=" + r.seq_len_kind + ") and the mean tokens per sample is not stated";
    return c;
  }
  c.useful = r.seq_len_kind != "fixed" || t.padding != Padding::kPacked;
  const double gpus = static_cast<double>(j.cluster.num_gpus);
  const double seq = static_cast<double>(t.seq_len);
  const double useful_per_sample = UsefulTokensPerSequence(t);
  // The job must count the stated mean (as its padded sample length, or as the length it computes).
  if (r.seq_len_kind != "fixed" && std::fabs(useful_per_sample - std::min(r.mean_tokens_per_sample, seq)) > 1) {
    c.reason = "the job does not carry the row's mean tokens per sample (seq_len_kind=" + r.seq_len_kind + ")";
    return c;
  }
  const double mflops = ModelFlopsPerToken(j.arch, t.seq_len);
  const double peak = hw.gpu.PeakFlops(t.precision).value_or(0);
  double& meas = c.tokens_per_s_per_gpu;
  if (m == "throughput_tokens_per_sec_per_gpu") meas = r.measured;
  else if (m == "throughput_tokens_per_sec_global") meas = r.measured / gpus;
  else if (m == "mfu") meas = r.measured / 100 * peak / mflops;
  else if (m == "model_tflops_per_gpu") meas = r.measured * 1e12 / mflops;
  // vTrain / Megatron: one iteration = one optimizer step of global_batch full sequences.
  else if (m == "iteration_time" || m == "iteration_time_s") meas = t.global_batch * seq / Seconds(r) / gpus;
  // One optimizer step: global_batch samples of their (useful) tokens.
  else if (m == "step_time_s") meas = t.global_batch * useful_per_sample / Seconds(r) / gpus;
  else if (m == "epoch_time_s") {
    if (r.samples_per_epoch <= 0) {
      c.reason = "epoch_time_s without the number of samples per epoch";
      return c;
    }
    meas = r.samples_per_epoch * useful_per_sample / Seconds(r) / gpus;
  } else if (m == "achieved_tflops_per_gpu" || m == "aggregate_pflops" || m == "percent_of_theoretical_peak") {
    // Megatron-LM reports FLOPs with full recompute: 96 B s l h^2 (1 + s/6h + V/16lh) per step.
    // Narayanan et al. 2021 eq. (3) per token: forward + backward + recompute = 4 passes.
    const double l = static_cast<double>(j.arch.layers), hd = static_cast<double>(j.arch.hidden);
    const double per_token = 96.0 * l * hd * hd * (1 + seq / (6 * hd) + static_cast<double>(j.arch.vocab) / (16 * l * hd));
    double tflops = r.measured;
    if (m == "aggregate_pflops") tflops = r.measured * 1e3 / gpus;
    if (m == "percent_of_theoretical_peak") tflops = r.measured / 100 * peak / 1e12;
    meas = tflops * 1e12 / per_token;
  } else {
    c.reason = "metric '" + m + "' is not converted to tokens/s (HFU depends on the source's recompute convention)";
  }
  if (c.reason.empty() && !(meas > 0 && std::isfinite(meas))) c.reason = "metric '" + m + "' converts to no positive tokens/s";
  return c;
}

// The predicted statistic a memory row measured, in bytes, and its label.
std::pair<double, std::string> PredictedMemory(const MeasuredRow& r, const MemoryBreakdown& mb) {
  MeasuredRow::MemoryStat stat = r.memory_stat;
  if (r.metric.find("reserved") != std::string::npos) stat = MeasuredRow::MemoryStat::kReserved;
  if (r.metric.find("allocated") != std::string::npos) stat = MeasuredRow::MemoryStat::kAllocated;
  switch (stat) {
    case MeasuredRow::MemoryStat::kAllocated: return {mb.allocated_bytes, "allocated"};
    case MeasuredRow::MemoryStat::kDeviceTotal: return {mb.total_bytes, "device total"};
    case MeasuredRow::MemoryStat::kReserved: return {mb.reserved_bytes, "reserved"};
    case MeasuredRow::MemoryStat::kUnknown: break;
  }
  // A source that does not name its statistic printed what PyTorch's caching allocator holds.
  return {mb.reserved_bytes, "reserved (stat not named)"};
}

void SetGroups(ValidatedRow& v, const HardwareContext& hw) {
  const Job& j = v.row.job;
  v.framework = ToString(j.training.framework);
  v.gpu_family = hw.gpu.family.empty() ? "unknown" : hw.gpu.family;
  v.method = ToString(j.training.method);
  v.scale = ScaleGroup(j.cluster.num_gpus);
  v.held_out = InHeldOutSet(v.row);
  v.fold = LosoFold(v.row.source);
}

// docs/model/memory.md §7: a measured run (it ran) whose predicted device total exceeds the GPU's
// memory is one the model calls out of memory.
void MarkCalledOom(ValidatedRow& v, const MemoryBreakdown& mb, const GpuSpec& gpu) {
  v.predicted_total_gib = mb.total_bytes / kGiB;
  v.called_oom = gpu.memory_bytes > 0 && mb.total_bytes > gpu.memory_bytes;
}

// Peak-memory errors over and under apart, and the runs called out of memory.
void BuildMemorySides(ValidationReport& rep) {
  std::vector<double> over, under;
  for (const auto& v : rep.rows) {
    if (!v.used) continue;
    if (v.memory) (v.error >= 0 ? over : under).push_back(v.error);
    if (v.called_oom) ++(v.memory ? rep.memory_rows_called_oom : rep.throughput_rows_called_oom);
  }
  rep.memory_sides = {Summarize("memory over-predicted", over), Summarize("memory under-predicted", under)};
}

// Predicts one usable row into `v` (used, or the reason it is not); `seen` dedupes runs.
void PredictRow(const MeasuredRow& r, const Catalog& catalog, const Calibration& cal, std::map<std::string, int>& seen,
                ValidatedRow& v) {
  const Job& j = r.job;
  auto hw = ResolveHardware(j, catalog, cal);
  if (!hw.ok()) {
    v.reason = hw.status().reason();
    return;
  }
  SetGroups(v, *hw);
  const bool memory = IsMemoryMetric(r.metric);
  Converted conv;
  if (memory) {
    if (r.unit_bytes <= 0) {
      v.reason = "memory unit '" + r.unit + "' is not GB, GiB, MB or MiB";
      return;
    }
  } else {
    conv = ConvertThroughput(r, *hw);
    if (!conv.reason.empty()) {
      v.reason = conv.reason;
      return;
    }
  }
  const MemoryBreakdown mb = memory ? EstimateMemory(j, cal, /*detail=*/false) : MemoryBreakdown{};
  const auto [predicted_bytes, stat] = memory ? PredictedMemory(r, mb) : std::pair<double, std::string>{0, ""};
  // The same run reported under another metric is predicted once; two rows of the same metric
  // are two runs (recipes the row columns do not tell apart: a schedule, AsyncTP) and both count.
  const std::string key = (memory ? "memory:" + stat + "|" : "throughput|") + RunKey(r) + "#";
  for (auto it = seen.lower_bound(key); it != seen.end() && it->first.compare(0, key.size(), key) == 0; ++it)
    if (it->first.substr(key.size()) != r.metric) {
      v.reason = "same run as line " + std::to_string(it->second) + " (reported under another metric)";
      return;
    }
  seen.emplace(key + r.metric, r.line);
  v.used = true;
  v.memory = memory;
  if (memory) {
    v.basis = stat;
    v.measured_tokens_per_s_per_gpu = r.measured * r.unit_bytes / kGiB;
    v.predicted_tokens_per_s_per_gpu = predicted_bytes / kGiB;
  } else {
    const StepEstimate e = EstimateStep(j, *hw);
    v.basis = conv.useful ? "useful tokens/s" : "tokens/s";
    v.measured_tokens_per_s_per_gpu = conv.tokens_per_s_per_gpu;
    v.predicted_tokens_per_s_per_gpu = conv.useful ? e.useful_tokens_per_s_per_gpu : e.tokens_per_s_per_gpu;
    v.predicted_mfu = e.mfu;
  }
  v.error = (v.predicted_tokens_per_s_per_gpu - v.measured_tokens_per_s_per_gpu) / v.measured_tokens_per_s_per_gpu;
  MarkCalledOom(v, memory ? mb : EstimateMemory(j, cal, /*detail=*/false), hw->gpu);
}

// Errors by a key of the row, summarized in key order; `loso`: the leave-one-source-out errors
// of the rows that have one.
// `loso_rows`: only the rows that have a leave-one-source-out prediction (their in-sample errors
// unless `loso`).
template <typename KeyFn>
std::vector<ErrorSummary> GroupBy(const std::vector<ValidatedRow>& rows, bool memory, KeyFn key, bool loso = false,
                                  bool loso_rows = false) {
  std::map<std::string, std::vector<double>> by;
  for (const auto& v : rows)
    if (v.used && v.memory == memory && (!(loso || loso_rows) || v.loso)) by[key(v)].push_back(loso ? v.loso_error : v.error);
  std::vector<ErrorSummary> out;
  for (auto& [k, e] : by) out.push_back(Summarize(k, e));
  return out;
}

void BuildGroups(ValidationReport& rep) {
  const std::vector<std::pair<std::string, std::string (*)(const ValidatedRow&)>> dims = {
      {"framework", [](const ValidatedRow& v) { return v.framework; }},
      {"GPU family", [](const ValidatedRow& v) { return v.gpu_family; }},
      {"method", [](const ValidatedRow& v) { return v.method; }},
      {"scale", [](const ValidatedRow& v) { return v.scale; }},
      {"source", [](const ValidatedRow& v) { return SourceGroup(v.row.source); }},
  };
  for (const auto& [name, fn] : dims) rep.groups.push_back({name, GroupBy(rep.rows, false, fn), GroupBy(rep.rows, true, fn)});
  // Scale groups in GPU-count order, not alphabetical.
  auto rank = [](const ErrorSummary& s) {
    static const char* kOrder[] = {"1 GPU", "2-8 GPUs", "9-64 GPUs", "65-512 GPUs", ">512 GPUs"};
    return std::find(std::begin(kOrder), std::end(kOrder), s.group) - std::begin(kOrder);
  };
  for (auto& g : rep.groups)
    if (g.dimension == "scale")
      for (auto* list : {&g.throughput, &g.memory})
        std::stable_sort(list->begin(), list->end(), [&](const ErrorSummary& a, const ErrorSummary& b) { return rank(a) < rank(b); });
}

void BuildSplit(ValidationReport& rep) {
  std::vector<double> fit_t, out_t, fit_m, out_m;
  for (const auto& v : rep.rows) {
    if (!v.used) continue;
    (v.memory ? (v.held_out ? out_m : fit_m) : (v.held_out ? out_t : fit_t)).push_back(v.error);
  }
  rep.fit_throughput = Summarize("fit subset", fit_t);
  rep.held_out_throughput = Summarize("held out", out_t);
  rep.fit_memory = Summarize("fit subset", fit_m);
  rep.held_out_memory = Summarize("held out", out_m);
  auto side = [](const ValidatedRow& v) { return v.framework + (v.held_out ? ": held out" : ": fit"); };
  rep.split_by_framework = {"framework x split", GroupBy(rep.rows, false, side), GroupBy(rep.rows, true, side)};
}

// data/error_bands.csv: every group at the four levels, for throughput and memory.
// `loso`: from the leave-one-source-out errors (rows without one are left out).
std::vector<ErrorBand> BuildBands(const std::vector<ValidatedRow>& rows, bool loso) {
  using Key = std::tuple<int, std::string, std::string, std::string, std::string>;  // level, kind, fw, family, method
  std::map<Key, std::vector<double>> by;
  for (const auto& v : rows) {
    if (!v.used || (loso && !v.loso)) continue;
    const std::string kind = v.memory ? "memory" : "throughput";
    const double e = loso ? v.loso_error : v.error;
    by[{0, kind, v.framework, v.gpu_family, v.method}].push_back(e);
    by[{1, kind, v.framework, "*", v.method}].push_back(e);
    by[{2, kind, "*", "*", v.method}].push_back(e);
    by[{3, kind, "*", "*", "*"}].push_back(e);
  }
  std::vector<ErrorBand> out;
  for (auto& [k, e] : by) {
    const ErrorSummary s = Summarize("", e);
    std::vector<double> under;
    for (double x : e) under.push_back(std::max(0.0, -x));
    const double p90_under = Summarize("", under).p90_abs;
    out.push_back({std::get<1>(k), std::get<2>(k), std::get<3>(k), std::get<4>(k), s.rows, s.median_abs, s.p90_abs, s.mean_signed,
                   p90_under});
  }
  return out;
}

// The row predicted again with `cal` (its fold's constants): the same statistic and token basis as
// the in-sample prediction. False when the hardware does not resolve under `cal`.
bool PredictAgain(const ValidatedRow& v, const Catalog& catalog, const Calibration& cal, double* predicted) {
  const Job& j = v.row.job;
  auto hw = ResolveHardware(j, catalog, cal);
  if (!hw.ok()) return false;
  if (v.memory) {
    *predicted = PredictedMemory(v.row, EstimateMemory(j, cal, /*detail=*/false)).first / kGiB;
  } else {
    const StepEstimate e = EstimateStep(j, *hw);
    *predicted = v.basis == "useful tokens/s" ? e.useful_tokens_per_s_per_gpu : e.tokens_per_s_per_gpu;
  }
  return std::isfinite(*predicted);
}

// Predicts every used row with the constants fitted without its source; a source with no fit is
// left out of the leave-one-source-out tables and named in a warning.
void PredictLoso(ValidationReport& rep, const Catalog& catalog, const Calibration& cal, const LosoFits& fits) {
  std::map<std::string, Calibration> by_fold;
  std::map<std::string, int> rows, missing;
  for (auto& v : rep.rows) {
    if (!v.used) continue;
    ++rows[v.fold];
    auto it = fits.values.find(v.fold);
    if (it == fits.values.end() || v.fold == kLosoInSample) {
      ++missing[v.fold];
      continue;
    }
    auto [c, fresh] = by_fold.try_emplace(v.fold, cal);
    if (fresh)
      for (const auto& [k, x] : it->second) c->second.Set(k, x);
    double predicted = 0;
    if (!PredictAgain(v, catalog, c->second, &predicted)) continue;
    v.loso = true;
    v.loso_predicted = predicted;
    v.loso_error = (predicted - v.measured_tokens_per_s_per_gpu) / v.measured_tokens_per_s_per_gpu;
  }
  const std::string refit = "; rerun `python3 tools/fit_runs.py --loso " + fits.file + "`";
  if (fits.fingerprint != ModelFingerprint())
    rep.loso_warnings.push_back("the fits were made with model fingerprint " + fits.fingerprint + ", this build is " +
                                ModelFingerprint() + ": the model or data changed since" + refit);
  for (const auto& [fold, n] : missing)
    rep.loso_warnings.push_back("no fit without " + fold + " (" + std::to_string(n) + " rows): left out of these tables" + refit);
  for (const auto& [fold, n] : rows) {
    auto it = fits.rows.find(fold);
    if (it != fits.rows.end() && it->second != n)
      rep.loso_warnings.push_back(fold + " has " + std::to_string(n) + " predicted rows, " + std::to_string(it->second) +
                                  " when it was fitted" + refit);
  }
}

// Every constant of the fits: its value in force, in-sample and the spread across the folds.
std::vector<LosoConstant> LosoConstants(const LosoFits& fits, const Calibration& cal) {
  std::map<std::string, LosoConstant> by;
  for (const auto& [fold, kv] : fits.values) {
    for (const auto& [k, x] : kv) {
      LosoConstant& c = by[k];
      c.key = k;
      if (cal.Has(k)) c.in_force = cal.Get(k);
      if (fold == kLosoInSample) {
        c.in_sample = x;
        continue;
      }
      if (fits.prior.count(fold + "|" + k)) {
        ++c.prior_folds;
        continue;
      }
      c.min = c.folds == 0 ? x : std::min(c.min, x);
      c.max = c.folds == 0 ? x : std::max(c.max, x);
      ++c.folds;
    }
  }
  std::vector<LosoConstant> out;
  for (auto& [k, c] : by) {
    c.swings = c.folds > 1 && c.max - c.min > 0.25 * std::fabs(c.max);
    out.push_back(c);
  }
  return out;
}

void BuildLoso(ValidationReport& rep, const Catalog& catalog, const Calibration& cal, const LosoFits& fits) {
  PredictLoso(rep, catalog, cal, fits);
  rep.has_loso = true;
  std::vector<double> t, m, t_in, m_in;
  for (const auto& v : rep.rows) {
    if (!v.used || !v.loso) continue;
    (v.memory ? m : t).push_back(v.loso_error);
    (v.memory ? m_in : t_in).push_back(v.error);
  }
  rep.loso_throughput = Summarize("throughput, leave-one-source-out", t);
  rep.loso_memory = Summarize("peak memory, leave-one-source-out", m);
  rep.in_sample_throughput = Summarize("throughput, constants in force", t_in);
  rep.in_sample_memory = Summarize("peak memory, constants in force", m_in);
  auto fold = [](const ValidatedRow& v) { return v.fold; };
  rep.in_sample_by_source = {"source", GroupBy(rep.rows, false, fold, false, true), GroupBy(rep.rows, true, fold, false, true)};
  const std::vector<std::pair<std::string, std::string (*)(const ValidatedRow&)>> dims = {
      {"source", [](const ValidatedRow& v) { return v.fold; }},
      {"framework", [](const ValidatedRow& v) { return v.framework; }},
      {"GPU family", [](const ValidatedRow& v) { return v.gpu_family; }},
      {"method", [](const ValidatedRow& v) { return v.method; }},
  };
  for (const auto& [name, fn] : dims)
    rep.loso_groups.push_back({name, GroupBy(rep.rows, false, fn, true), GroupBy(rep.rows, true, fn, true)});
  rep.loso_constants = LosoConstants(fits, cal);
}

}  // namespace

std::string LosoFold(const std::string& source) {
  if (source.rfind("github:", 0) == 0) return SourceRepository(source);
  size_t end = source.size();
  for (const char* stop : {" (", " '", ","}) end = std::min(end, source.find(stop));
  std::string s = source.substr(0, end);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.empty() ? "unknown source" : s;
}

OverUnder SplitOverUnder(const std::vector<double>& signed_errors) {
  std::vector<double> over, under;
  for (double e : signed_errors) (e > 0 ? over : under).push_back(std::fabs(e));
  OverUnder o;
  if (signed_errors.empty()) return o;
  o.share_over = static_cast<double>(over.size()) / signed_errors.size();
  o.median_over = Summarize("", over).median_abs;
  o.median_under = Summarize("", under).median_abs;
  return o;
}

Result<LosoFits> ReadLosoFits(const std::string& path) {
  auto table = ReadCsvFile(path);
  if (!table.ok()) return table.status();
  for (const char* col : {"fold", "key", "value", "rows", "model_fingerprint", "source", "date"})
    if (table->Column(col) < 0)
      return Status::BadInput({path, 1, col}, "missing column (header: fold,key,value,rows,model_fingerprint,source,date)");
  LosoFits fits;
  fits.file = path;
  for (const auto& row : table->rows) {
    CsvRecord rec(*table, row);
    const std::string fold = rec.Str("fold"), key = rec.Str("key");
    if (fold.empty()) return Status::BadInput(rec.Where("fold"), "empty");
    auto range = CalibrationKeyRange(key);
    if (!range) return Status::BadInput(rec.Where("key"), "not a calibration key: '" + key + "'");
    auto value = ParseDecimalIn(rec.Str("value"), rec.Where("value"), *range);
    if (!value.ok()) return value.status();
    auto n = rec.OptInteger("rows", 0, 100000000);
    if (!n.ok()) return n.status();
    const std::string fp = rec.Str("model_fingerprint");
    if (!fits.fingerprint.empty() && fp != fits.fingerprint)
      return Status::BadInput(rec.Where("model_fingerprint"), "differs from the first row's '" + fits.fingerprint + "' (one fit per file)");
    fits.fingerprint = fp;
    fits.date = rec.Str("date");
    fits.values[fold][key] = *value;
    fits.rows[fold] = static_cast<int>(n->value_or(0));
    if (rec.Str("source").rfind("prior", 0) == 0) fits.prior[fold + "|" + key] = true;
  }
  if (fits.values.empty()) return Status::BadInput({path, 1, "fold"}, "no fits in the file");
  return fits;
}

std::string ScaleGroup(int64_t n) {
  if (n <= 1) return "1 GPU";
  if (n <= 8) return "2-8 GPUs";
  if (n <= 64) return "9-64 GPUs";
  if (n <= 512) return "65-512 GPUs";
  return ">512 GPUs";
}

std::string SourceRepository(const std::string& source) {
  const std::string x = source.rfind("github:", 0) == 0 ? source.substr(7) : source;
  return x.substr(0, std::min(x.find('@'), x.find(' ')));
}

bool InHeldOutSet(const MeasuredRow& r) {
  return Fnv1a64(SourceRepository(r.source) + "|" + r.model_name + "|" + r.job.cluster.gpu + "|" +
                 std::to_string(r.job.cluster.num_gpus)) % 3 == 0;
}

std::string SplitRule() {
  return "a run is held out when FNV-1a-64 of \"repository|model_name|gpu id|num_gpus\" is 0 mod 3 (about a third of "
         "the model x GPU configurations of every source); the rest is the fit subset";
}

Result<ValidationReport> ValidateRuns(const std::vector<std::string>& paths, const Catalog& catalog, const Calibration& cal,
                                      const LosoFits* loso) {
  std::vector<MeasuredRow> ordered;
  for (const auto& path : paths) {
    auto rows = ReadMeasuredRows(path, catalog);
    if (!rows.ok()) return rows.status();
    for (auto& r : rows.value()) {
      r.file = path;
      ordered.push_back(std::move(r));
    }
  }
  // Prefer the direct throughput metric when a run appears under several metrics.
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const MeasuredRow& x, const MeasuredRow& y) { return MetricRank(x.metric) < MetricRank(y.metric); });
  ValidationReport rep;
  std::map<std::string, int> seen;  // run key -> line of the row that represents it
  for (const auto& r : ordered) {
    ValidatedRow v;
    v.row = r;
    if (!r.usable) v.reason = r.skip_reason;
    else PredictRow(r, catalog, cal, seen, v);
    rep.rows.push_back(std::move(v));
  }
  std::sort(rep.rows.begin(), rep.rows.end(), [](const ValidatedRow& a, const ValidatedRow& b) {
    return a.row.file != b.row.file ? a.row.file < b.row.file : a.row.line < b.row.line;
  });
  std::vector<double> all, mem;
  for (const auto& v : rep.rows)
    if (v.used) (v.memory ? mem : all).push_back(v.error);
  rep.overall = Summarize("all", all);
  rep.memory = Summarize("memory", mem);
  rep.by_source = GroupBy(rep.rows, false, [](const ValidatedRow& v) { return ShortSource(v.row.source); });
  rep.by_gpu = GroupBy(rep.rows, false, [](const ValidatedRow& v) { return v.row.job.cluster.gpu; });
  BuildGroups(rep);
  BuildSplit(rep);
  if (loso) BuildLoso(rep, catalog, cal, *loso);
  rep.bands = BuildBands(rep.rows, rep.has_loso);
  BuildMemorySides(rep);
  return rep;
}

}  // namespace gpuplan
