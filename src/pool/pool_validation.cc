// Mixed-pool validation (docs/model/pools.md, docs/validation.md "Mixed pools"): published runs with their layouts
// pinned (stages, layer boundaries, tp/dp, micro-batch) predicted through EstimateOnPool; runs that could not start
// are checked against the memory verdict.
#include "gpuplan/pool_validation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>

#include "gpuplan/csv.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"
#include "gpuplan/ops.h"
#include "gpuplan/strings.h"

namespace gpuplan {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

struct HardwareRow {
  std::string gpu, intra, network_kind, framework, precision, flash_attention, fp32_allreduce;
  double network_gbps = 0;
  int64_t gpus_per_node = 0, before = 0, after = 0;
  double layer_forward_s = 0;  // H§3 a profiler's per-layer forward time at tp 1, micro-batch 1 (0 = none)
};

Result<std::map<std::string, HardwareRow>> ReadHardware(const std::string& path) {
  auto t = ReadCsvFile(path);
  if (!t.ok()) return t.status();
  std::map<std::string, HardwareRow> out;
  for (const auto& r : t->rows) {
    CsvRecord rec(*t, r);
    HardwareRow h;
    h.gpu = rec.Str("gpu"), h.intra = rec.Str("intra_link"), h.network_kind = rec.Str("network_kind");
    h.framework = rec.Str("framework"), h.precision = rec.Str("default_precision");
    for (auto [col, dst] : {std::pair<const char*, std::string*>{"flash_attention", &h.flash_attention},
                            {"fp32_allreduce", &h.fp32_allreduce}}) {
      *dst = rec.Str(col);
      if (*dst != "true" && *dst != "false") return Status::BadInput({t->file, r.line, col}, "must be true or false");
    }
    for (auto [col, dst] : {std::pair<const char*, int64_t*>{"gpus_per_node", &h.gpus_per_node},
                            {"entries_before_blocks", &h.before}, {"entries_after_blocks", &h.after}}) {
      auto v = ParseInteger(rec.Str(col), {t->file, r.line, col}, 0, 1024);
      if (!v.ok()) return v.status();
      *dst = *v;
    }
    auto gbps = rec.Number("network_gbps");
    if (!gbps.ok()) return gbps.status();
    h.network_gbps = *gbps;
    // Optional: a measured per-layer forward time (ms) of the system's model on this card (docs/model/pools.md).
    if (t->Column("layer_forward_ms") >= 0 && !rec.Str("layer_forward_ms").empty()) {
      auto ms = rec.Number("layer_forward_ms");
      if (!ms.ok()) return ms.status();
      if (!(*ms > 0 && *ms < 1e6)) return Status::BadInput({t->file, r.line, "layer_forward_ms"}, "must be in (0, 1e6) ms");
      h.layer_forward_s = *ms / 1e3;
    }
    out[rec.Str("system") + "|" + rec.Str("gpu_label")] = h;
  }
  return out;
}

Result<std::map<std::string, std::vector<std::string>>> ReadModels(const std::string& path) {
  auto t = ReadCsvFile(path);
  if (!t.ok()) return t.status();
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& r : t->rows) {
    CsvRecord rec(*t, r);
    out[rec.Str("model")] = {rec.Str("vocab"), rec.Str("mlp"), rec.Str("norm"), rec.Str("position")};
  }
  return out;
}

std::vector<int64_t> Numbers(const std::string& s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      v.push_back(std::stoll(item));
    } catch (...) {
      return {};
    }
  }
  return v;
}

// The card types of a gpu_mix cell, in the order listed ("T4-16GB:16", "V100-16GB:12, T4-16GB:4",
// "V100-16GB:12+T4-16GB:4"): label and count per part; empty when the cell names none.
std::vector<std::pair<std::string, int64_t>> MixParts(const std::string& mix) {
  std::vector<std::pair<std::string, int64_t>> parts;
  const std::regex part(R"(([A-Za-z][A-Za-z0-9_.\-]*)\s*:\s*([0-9]{1,6}))");
  for (auto it = std::sregex_iterator(mix.begin(), mix.end(), part); it != std::sregex_iterator(); ++it)
    parts.push_back({(*it)[1].str(), std::stoll((*it)[2].str())});
  return parts;
}

std::string Alnum(const std::string& s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The hardware row of a system's card label: exact, else the one row whose label matches ignoring case and
// punctuation, or (unique) begins with the label ("V100" for "V100-16GB").
const HardwareRow* FindHardware(const std::map<std::string, HardwareRow>& hw, const std::string& system,
                                const std::string& label) {
  if (auto it = hw.find(system + "|" + label); it != hw.end()) return &it->second;
  const HardwareRow* found = nullptr;
  int matches = 0;
  for (const auto& [key, row] : hw) {
    if (key.rfind(system + "|", 0) != 0) continue;
    const std::string l = Alnum(key.substr(system.size() + 1)), want = Alnum(label);
    if (l == want) return &row;
    if (!want.empty() && l.rfind(want, 0) == 0) found = &row, ++matches;
  }
  return matches == 1 ? found : nullptr;
}

// One run has one engine: every card type's row must give the same framework, precision and flags.
bool SameEngine(const std::vector<const HardwareRow*>& hws) {
  for (const HardwareRow* h : hws) {
    const HardwareRow& a = *hws.front();
    if (h->framework != a.framework || h->precision != a.precision || h->flash_attention != a.flash_attention ||
        h->fp32_allreduce != a.fp32_allreduce || h->before != a.before || h->after != a.after)
      return false;
  }
  return true;
}

// Blocks per stage from the row's layout string, or a reason it cannot be read.
std::vector<int64_t> SplitOf(const std::string& system, const std::string& layout, int64_t layers, const HardwareRow& h,
                             std::string& why) {
  std::vector<int64_t> split;
  std::smatch m;
  if (system == "AMP") {
    if (!std::regex_search(layout, m, std::regex(R"(layer_boundaries=\[([0-9, ]+)\])"))) return why = "no layer_boundaries", split;
    const std::vector<int64_t> b = Numbers(m[1].str());
    auto blocks = [&](int64_t e) { return std::min(std::max<int64_t>(e - h.before, 0), layers); };
    for (size_t i = 0; i + 1 < b.size(); ++i) split.push_back(blocks(b[i + 1]) - blocks(b[i]));
  } else {
    const std::regex stage(R"(S[0-9]+\[layers ([0-9]+)-([0-9]+);)");
    for (auto it = std::sregex_iterator(layout.begin(), layout.end(), stage); it != std::sregex_iterator(); ++it)
      split.push_back(std::stoll((*it)[2].str()) - std::stoll((*it)[1].str()) + 1);
    if (split.empty()) return why = "no stage ranges", split;
    split.front() -= h.before;
    split.back() -= h.after;
  }
  // A stage the boundaries leave without a block (DeepSpeed allows one that holds only the embedding) is modelled
  // with one, taken from the fullest stage: the model's stages hold at least one block.
  for (size_t i = 0; i < split.size(); ++i)
    while (split[i] < 1) {
      auto fullest = std::max_element(split.begin(), split.end());
      if (*fullest <= 1) return why = "more stages than blocks", std::vector<int64_t>{};
      --*fullest, ++split[i];
    }
  int64_t sum = 0;
  for (int64_t n : split) sum += n;
  if (sum != layers) return why = "boundaries give " + Str(sum) + " blocks, the model has " + Str(layers), std::vector<int64_t>{};
  return split;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = (static_cast<double>(i + j) / 2) + 1;
    i = j + 1;
  }
  return r;
}

}  // namespace

double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 3) return 0;
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = static_cast<double>(a.size()), mean = (n + 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean), saa += (ra[i] - mean) * (ra[i] - mean), sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

// H§3 layer_time_scale.<gpu>: the card's measured per-layer forward time over the model's GPU time of that
// layer, on one card at tp 1 and micro-batch 1 (the profile's configuration) with the run's model and engine.
Result<double> LayerTimeScale(const std::string& model_and_training, const HardwareRow& g, const Catalog& catalog,
                              const Calibration& cal, const std::string& where) {
  auto job = ParseJobText(model_and_training + "parallel: {tp: 1, pp: 1, dp: 1}\ncluster: {gpu: " + g.gpu +
                              ", num_gpus: 1, gpus_per_node: 1}\n", where);
  if (!job.ok()) return job.status();
  Job j = *job;
  if (Status st = FinalizeJob(j); !st.ok()) return st;
  auto hw = ResolveHardware(j, catalog, cal);
  if (!hw.ok()) return hw.status();
  const double unscaled = UnscaledLayerForwardSeconds(j, *hw);
  if (!(unscaled > 0)) return Status::BadInput({where, 0, "layer_forward_ms"}, "the model gives no layer time for " + g.gpu);
  return g.layer_forward_s / unscaled;
}

bool IsPoolRunsFile(const CsvTable& t) { return t.Column("gpu_mix") >= 0 && t.Column("layout") >= 0 && t.Column("is_hetero") >= 0; }

Result<PoolValidationReport> ValidatePoolRuns(const std::vector<std::string>& files, const std::string& hardware_csv,
                                              const std::string& models_csv, const Catalog& catalog, const Calibration& cal) {
  auto hardware = ReadHardware(hardware_csv);
  if (!hardware.ok()) return hardware.status();
  auto models = ReadModels(models_csv);
  if (!models.ok()) return models.status();
  PoolValidationReport rep;
  for (const auto& path : files) {
    auto t = ReadCsvFile(path);
    if (!t.ok()) return t.status();
    if (!IsPoolRunsFile(*t)) return Status::BadInput({path, 1, ""}, "not a mixed-pool runs file (needs gpu_mix, layout, is_hetero)");
    for (const auto& r : t->rows) {
      CsvRecord rec(*t, r);
      PoolValidationRow row;
      row.id = rec.Str("row_id"), row.source = rec.Str("source"), row.system = rec.Str("system");
      row.model = rec.Str("model"), row.gpu_mix = rec.Str("gpu_mix"), row.status = rec.Str("status");
      row.failed_run = row.status == "FAILED_RUN";
      const std::string system = row.system.rfind("AMP", 0) == 0 ? "AMP" : row.system.rfind("Sailor", 0) == 0 ? "Sailor" : "";
      // Each card type of the mix is a pool group, in the order the cell lists them (ranks are placed over
      // the groups in that order: tp, dp fastest, pp slowest).
      const auto mix = MixParts(row.gpu_mix);
      std::vector<const HardwareRow*> hws;
      std::string unmapped;
      for (const auto& [label, n] : mix) {
        hws.push_back(FindHardware(*hardware, system, label));
        if (!hws.back()) unmapped += (unmapped.empty() ? "" : ", ") + label;
      }
      auto model = models->find(row.model);
      if (rec.Str("measured_unit") != "s/iteration" && !row.failed_run) row.skip = "not an iteration time";
      else if (mix.empty()) row.skip = "no card types in gpu_mix '" + row.gpu_mix + "'";
      else if (!unmapped.empty()) row.skip = "no hardware mapping for " + unmapped;
      else if (model == models->end()) row.skip = "no model row for " + row.model;
      else if (!SameEngine(hws)) row.skip = "the card types of " + row.gpu_mix + " name different engine settings";
      if (!row.skip.empty()) {
        rep.rows.push_back(row);
        continue;
      }
      const HardwareRow& h = *hws.front();  // the engine settings (SameEngine: every part's are the same)
      const int64_t layers = std::stoll(rec.Str("layers"));
      const std::string dp = rec.Str("dp").substr(0, rec.Str("dp").find('/'));
      // A run whose plan file does not state its precision ran at the system's default (hardware.csv).
      const std::string precision = rec.Str("precision").rfind("not stated", 0) == 0 ? h.precision : rec.Str("precision");
      std::string why;
      const std::vector<int64_t> split = SplitOf(system, rec.Str("layout"), layers, h, why);
      if (split.empty()) {
        row.skip = why;
        rep.rows.push_back(row);
        continue;
      }
      std::string split_s;
      for (int64_t n : split) split_s += (split_s.empty() ? "" : ", ") + Str(n);
      row.layout = "tp" + rec.Str("tp") + " pp" + rec.Str("pp") + " dp" + dp + " mbs" + rec.Str("mbs") + " [" + split_s + "]";
      const std::string model_text =
          "model: {layers: " + Str(layers) + ", hidden: " + rec.Str("hidden") + ", heads: " + rec.Str("heads") +
          ", vocab: " + model->second[0] + ", mlp: " + model->second[1] + ", norm: " + model->second[2] +
          ", position: " + model->second[3] + ", max_positions: " + rec.Str("seq_len") + "}\n";
      const std::string engine_text = ", precision: " + precision + ", framework: " + h.framework +
                                      ", flash_attention: " + h.flash_attention + ", fp32_allreduce: " + h.fp32_allreduce + "}\n";
      const std::string job_text = model_text + "training: {seq_len: " + rec.Str("seq_len") + ", micro_batch: " +
          rec.Str("mbs") + ", global_batch: " + rec.Str("global_batch") + engine_text + "parallel: {tp: " + rec.Str("tp") + ", pp: " + rec.Str("pp") + ", dp: " + dp +
          ", layer_split: [" + split_s + "]}\n";
      std::string pool_text = "groups:\n";
      for (size_t i = 0; i < mix.size(); ++i) {
        const HardwareRow& g = *hws[i];
        pool_text += "  - {name: " + Lower(Alnum(mix[i].first)) + Str(static_cast<int64_t>(i)) + ", gpu: " + g.gpu +
                     ", nodes: " + Str(std::max<int64_t>(1, mix[i].second / g.gpus_per_node)) + ", gpus_per_node: " +
                     Str(std::min(g.gpus_per_node, mix[i].second)) + ", intra_node: " + g.intra + ", network: {kind: " +
                     g.network_kind + ", gbps: " + std::to_string(g.network_gbps) + "}}\n";
      }
      auto job = ParseJobText(job_text, path + ":" + Str(r.line));
      auto pool = job.ok() ? ParsePoolText(pool_text, path + ":" + Str(r.line), catalog) : Result<Pool>(job.status());
      if (!pool.ok()) {
        row.skip = pool.status().reason();
        rep.rows.push_back(row);
        continue;
      }
      auto fin = FinalizeJobForPool(*job, *pool);
      auto layout = fin.ok() ? LayoutFromJob(*fin, *pool) : Result<PoolLayout>(fin.status());
      auto est = layout.ok() ? EstimateOnPool(*fin, *pool, *layout, catalog, cal) : Result<PoolEstimate>(layout.status());
      if (!est.ok()) {
        row.skip = est.status().reason();
        rep.rows.push_back(row);
        continue;
      }
      row.predicted_s = est->step_time_s;
      row.fits = est->fits;
      // H§3 again with every card's measured layer time, when each card of the run has one.
      Calibration measured_cal = cal;
      bool profiled = true;
      for (const HardwareRow* g : hws) {
        if (!(g->layer_forward_s > 0)) { profiled = false; break; }
        if (measured_cal.Has("layer_time_scale." + g->gpu)) continue;  // already scaled: a card type listed twice, or a --calibration row
        const std::string profile_text = model_text + "training: {seq_len: " + rec.Str("seq_len") +
                                         ", micro_batch: 1, global_batch: 1" + engine_text;
        auto scale = LayerTimeScale(profile_text, *g, catalog, cal, path + ":" + Str(r.line));
        if (!scale.ok()) return scale.status();
        measured_cal.Set("layer_time_scale." + g->gpu, *scale);
        char b[64];
        std::snprintf(b, sizeof b, "%s x%.2f", g->gpu.c_str(), *scale);
        row.scales += (row.scales.empty() ? "" : ", ") + std::string(b);
      }
      if (profiled) {
        auto cest = EstimateOnPool(*fin, *pool, *layout, catalog, measured_cal);
        if (!cest.ok()) return cest.status();
        row.calibrated_s = cest->step_time_s, row.calibrated_fits = cest->fits;
      }
      auto measured = rec.OptNumber("measured_value");
      if (measured.ok() && *measured && !row.failed_run) row.measured_s = **measured;
      rep.rows.push_back(row);
    }
  }
  // Per system: median |error|, Spearman of predicted vs measured, failed runs flagged.
  std::map<std::string, PoolValidationSummary> by;
  for (const auto& row : rep.rows) {
    PoolValidationSummary& s = by[row.system];
    s.system = row.system;
    if (!row.skip.empty()) { ++s.skipped; continue; }
    if (row.failed_run) {
      ++s.failed_runs;
      if (!row.fits) ++s.failed_flagged;
    } else if (row.measured_s > 0) {
      s.errors.push_back(row.predicted_s / row.measured_s - 1);
      s.measured.push_back(row.measured_s), s.predicted.push_back(row.predicted_s);
      if (!row.fits) ++s.measured_flagged;
    }
    if (row.calibrated_s > 0 && row.failed_run) {
      ++s.cal_failed_runs;
      if (!row.calibrated_fits) ++s.cal_failed_flagged;
    } else if (row.calibrated_s > 0 && row.measured_s > 0) {
      s.cal_errors.push_back(row.calibrated_s / row.measured_s - 1);
      s.cal_measured.push_back(row.measured_s), s.cal_predicted.push_back(row.calibrated_s);
    }
  }
  for (auto& [name, s] : by) {
    std::vector<double> abs;
    for (double e : s.errors) abs.push_back(std::fabs(e));
    s.median_abs = Median(abs);
    s.spearman = SpearmanRho(s.predicted, s.measured);
    abs.clear();
    for (double e : s.cal_errors) abs.push_back(std::fabs(e));
    s.cal_median_abs = Median(abs);
    s.cal_spearman = SpearmanRho(s.cal_predicted, s.cal_measured);
    rep.systems.push_back(s);
  }
  return rep;
}

std::string PoolValidationToMarkdown(const PoolValidationReport& rep) {
  std::string out = "## Mixed pools\n\n";
  out += "Published runs with their layouts pinned (tp, pp, dp, micro-batch and the blocks of every stage), predicted with "
         "`EstimateOnPool` (docs/model/pools.md MX§1-§5) on a pool of the run's cards. The hardware each run names is read "
         "through validation/pools/hardware.csv and the models through validation/pools/models.csv (each row with its "
         "source); a run on several card types (`gpu_mix` as `V100-16GB:12+T4-16GB:4`) is a pool of one group per type in the "
         "order listed, ranks placed over them in that order. Nothing here is fitted on these runs: the constants are the homogeneous model's. A run that could not start "
         "(FAILED_RUN) counts as flagged when the model says a stage does not fit its card's memory.\n\n";
  out += "| system | runs predicted | median abs error | median signed error | Spearman (predicted vs measured) | "
         "failed runs flagged | measured runs flagged | skipped |\n|---|---|---|---|---|---|---|---|\n";
  char buf[512];
  for (const auto& s : rep.systems) {
    std::snprintf(buf, sizeof buf, "| %s | %zu | %.1f%% | %+.1f%% | %.2f | %lld of %lld | %lld | %lld |\n", s.system.c_str(),
                  s.errors.size(), 100 * s.median_abs, 100 * Median(s.errors), s.spearman, static_cast<long long>(s.failed_flagged),
                  static_cast<long long>(s.failed_runs), static_cast<long long>(s.measured_flagged),
                  static_cast<long long>(s.skipped));
    out += buf;
  }
  out += "\nWith each card's measured per-layer forward time (validation/pools/hardware.csv `layer_forward_ms`, a profiler's "
         "output at tp 1 and micro-batch 1, with its source) as `layer_time_scale.<gpu>` (docs/model/pools.md MX§7): the scale "
         "is that time over the model's GPU time of the same layer on the same card, derived from the profile alone, never "
         "from the runs below, so the runs test it. Systems without a measured layer time are left out.\n\n"
         "| system | runs predicted | median abs error | median signed error | Spearman (predicted vs measured) | "
         "failed runs flagged | layer_time_scale |\n|---|---|---|---|---|---|---|\n";
  for (const auto& s : rep.systems) {
    if (s.cal_errors.empty() && !s.cal_failed_runs) continue;
    std::string scales;
    for (const auto& r : rep.rows)
      if (r.system == s.system && !r.scales.empty() && scales.find(r.scales) == std::string::npos)
        scales += (scales.empty() ? "" : "; ") + r.scales;
    std::snprintf(buf, sizeof buf, "| %s | %zu | %.1f%% | %+.1f%% | %.2f | %lld of %lld | %s |\n", s.system.c_str(),
                  s.cal_errors.size(), 100 * s.cal_median_abs, 100 * Median(s.cal_errors), s.cal_spearman,
                  static_cast<long long>(s.cal_failed_flagged), static_cast<long long>(s.cal_failed_runs), scales.c_str());
    out += buf;
  }
  out += "\nThese runs are homogeneous (one card type each): they test the fold (MX§2-§4) and the homogeneous constants "
         "it inherits on cards and engines the training validation above has few runs of (T4 over TCP with DeepSpeed's "
         "pipeline engine; GH200 with Megatron-DeepSpeed). A negative median signed error means the model is faster than "
         "the runs; the mixed-pool planner inherits that bias for these cards, while the ranking (Spearman) is what it "
         "chooses layouts by.\n";
  out += "\n| row | system | cards | layout (blocks per stage) | measured s | predicted s | error | fits | "
         "with measured layer time s | error | fits |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rep.rows) {
    if (!r.skip.empty()) continue;
    char cal[128] = "| | |";
    if (r.calibrated_s > 0 && r.failed_run)
      std::snprintf(cal, sizeof cal, "%.3f | | %s", r.calibrated_s, r.calibrated_fits ? "yes" : "**no**");
    else if (r.calibrated_s > 0)
      std::snprintf(cal, sizeof cal, "%.3f | %+.1f%% | %s", r.calibrated_s,
                    r.measured_s > 0 ? 100 * (r.calibrated_s / r.measured_s - 1) : 0.0, r.calibrated_fits ? "yes" : "no");
    if (r.failed_run) {
      std::snprintf(buf, sizeof buf, "| %s | %s | %s | %s | could not run | %.3f | | %s | %s |\n", r.id.c_str(), r.system.c_str(),
                    r.gpu_mix.c_str(), r.layout.c_str(), r.predicted_s, r.fits ? "yes" : "**no**", cal);
    } else {
      std::snprintf(buf, sizeof buf, "| %s | %s | %s | %s | %.3f | %.3f | %+.1f%% | %s | %s |\n", r.id.c_str(), r.system.c_str(),
                    r.gpu_mix.c_str(), r.layout.c_str(), r.measured_s, r.predicted_s,
                    r.measured_s > 0 ? 100 * (r.predicted_s / r.measured_s - 1) : 0.0, r.fits ? "yes" : "no", cal);
    }
    out += buf;
  }
  int64_t skipped = 0;
  for (const auto& r : rep.rows) skipped += !r.skip.empty();
  if (skipped) {
    out += "\nSkipped rows and why:\n\n";
    std::map<std::string, int64_t> reasons;
    for (const auto& r : rep.rows)
      if (!r.skip.empty()) ++reasons[r.system + ": " + r.skip];
    for (const auto& [why, n] : reasons) out += "- " + why + " (" + Str(n) + ")\n";
  }
  return out;
}

}  // namespace gpuplan
