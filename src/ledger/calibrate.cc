// Measurements -> calibration overrides (docs/calibrate.md). Every key is solved so that the model
// reproduces the measurement it came from: a closed form where the model is linear in the key
// (matmul ceiling, local disk bandwidth), else bisection over the key's allowed range.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "gpuplan/calibrate.h"
#include "gpuplan/estimate.h"
#include "gpuplan/input_file.h"
#include "gpuplan/ops.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {

nlohmann::json Context(const Measurement& m) {
  // A context nested deeper than any real one (a ledger row written by another tool) reads as empty:
  // nlohmann parses by recursion and a 100k-deep text would overflow the stack.
  if (!CheckJsonDepth(m.context_json, {}).ok()) return nlohmann::json::object();
  try {
    auto j = nlohmann::json::parse(m.context_json.empty() ? "{}" : m.context_json);
    return j.is_object() ? j : nlohmann::json::object();
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();
  }
}

double Num(const nlohmann::json& ctx, std::initializer_list<const char*> names, double def) {
  for (const char* n : names)
    if (ctx.contains(n) && ctx[n].is_number()) return ctx[n].get<double>();
  return def;
}
std::string Str(const nlohmann::json& ctx, std::initializer_list<const char*> names, const std::string& def) {
  for (const char* n : names)
    if (ctx.contains(n) && ctx[n].is_string()) return ctx[n].get<std::string>();
  return def;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;  // halves first: no overflow near the limits
}

// The measurement closest to the group's median (the row an override cites).
const Measurement& Cited(const std::vector<const Measurement*>& group, double median) {
  const Measurement* best = group.front();
  for (const auto* m : group)
    if (std::abs(m->value - median) < std::abs(best->value - median)) best = m;
  return *best;
}

// Solves f(v) = target over [lo, hi] (f monotone); clamps at a bound f cannot pass.
struct Solved {
  double value = 0;
  bool clamped = false;
};
Solved Bisect(const std::function<double(double)>& f, double target, double lo, double hi) {
  double flo = f(lo), fhi = f(hi);
  const bool increasing = fhi >= flo;
  if (increasing ? target <= flo : target >= flo) return {lo, std::abs(flo - target) > 1e-9 * std::abs(target)};
  if (increasing ? target >= fhi : target <= fhi) return {hi, std::abs(fhi - target) > 1e-9 * std::abs(target)};
  for (int i = 0; i < 80; ++i) {
    const double mid = (lo + hi) / 2;
    const double fm = f(mid);
    if ((fm < target) == increasing) lo = mid;
    else hi = mid;
  }
  return {(lo + hi) / 2, false};
}

std::optional<Collective> ParseCollective(const std::string& op) {
  if (op == "all_reduce" || op == "allreduce") return Collective::kAllReduce;
  if (op == "all_gather" || op == "allgather") return Collective::kAllGather;
  if (op == "reduce_scatter" || op == "reducescatter") return Collective::kReduceScatter;
  if (op == "alltoall" || op == "all_to_all") return Collective::kAllToAll;
  if (op == "sendrecv" || op == "sendrecv_or_broadcast") return Collective::kSendRecv;  // bus factor 1: the same bandwidth
  if (op == "all_gather_or_alltoall") return Collective::kAllGather;  // bus factor (n-1)/n for both
  return std::nullopt;
}

struct Env {
  const Job& job;
  const Catalog& catalog;
  const Calibration& base;
  CalibrateResult& out;
};

// The model's value with one key changed; nullopt when the hardware does not resolve.
std::optional<HardwareContext> HwWith(const Env& e, const Job& job, const std::string& key, double v) {
  Calibration c = e.base;
  c.Set(key, v);
  auto hw = ResolveHardware(job, e.catalog, c);
  if (!hw.ok()) return std::nullopt;
  return *hw;
}

void Push(const Env& e, const std::string& key, double before, double value, bool clamped, const std::string& unit,
          const Measurement& from, double model_before) {
  CalibrationOverride o;
  o.key = key;
  o.before = before;
  o.value = value;
  o.unit = unit;
  o.measured = from.kind + " = " + FormatNumber("%g", from.value) + " " + from.unit;
  o.model_before = FormatNumber("%g", model_before) + " " + from.unit;
  o.from = from;
  if (clamped) o.note = "the model cannot reach the measurement within the key's range: clamped at " + FormatNumber("%g", value);
  e.out.overrides.push_back(o);
}

// A group's median and the measurement nearest it (the one its override cites).
std::pair<double, const Measurement*> MedianOf(const std::vector<const Measurement*>& group) {
  std::vector<double> values;
  for (const auto* m : group) values.push_back(m->value);
  const double measured = Median(values);
  return {measured, &Cited(group, measured)};
}

void BusBw(const Env& e, const std::vector<const Measurement*>& group) {
  // The largest message size of the group: nccl-tests' peak, where the link and not latency rules.
  double bytes = 0;
  for (const auto* m : group) bytes = std::max(bytes, Num(Context(*m), {"bytes", "msg_bytes", "size_bytes", "message_bytes"}, 0));
  std::vector<const Measurement*> top;
  std::vector<double> values;
  for (const auto* m : group)
    if (Num(Context(*m), {"bytes", "msg_bytes", "size_bytes", "message_bytes"}, 0) == bytes) top.push_back(m), values.push_back(m->value);
  const double measured = Median(values);
  const Measurement& cite = Cited(top, measured);
  const nlohmann::json ctx = Context(cite);
  const auto op = ParseCollective(Str(ctx, {"op", "collective"}, "all_reduce"));
  if (!op) {
    e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": unknown collective '" + Str(ctx, {"op"}, "") + "'");
    return;
  }
  const int64_t gpn = std::max<int64_t>(1, e.job.cluster.gpus_per_node);
  // Counts as stored (any number a row's context holds): whole, within what a cluster has, before any cast or division.
  constexpr double kMaxRanks = 1 << 24;
  const double ranks_value = Num(ctx, {"ranks", "n", "world"}, static_cast<double>(e.job.cluster.num_gpus));
  if (!(ranks_value >= 2 && ranks_value <= kMaxRanks) || ranks_value != std::floor(ranks_value)) {
    e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": ranks " + FormatNumber("%g", ranks_value) +
                            " is not a whole number of at least 2 ranks");
    return;
  }
  const auto ranks = static_cast<int64_t>(ranks_value);
  const double nodes_value = Num(ctx, {"nodes"}, static_cast<double>((ranks + gpn - 1) / gpn));
  if (!(nodes_value >= 1 && nodes_value <= ranks_value) || nodes_value != std::floor(nodes_value)) {
    e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": nodes " + FormatNumber("%g", nodes_value) +
                            " is not a whole number in 1.." + std::to_string(ranks));
    return;
  }
  const auto nodes = static_cast<int64_t>(nodes_value);
  const int64_t per_node = std::max<int64_t>(1, ranks / nodes);
  if (!(bytes > 0 && bytes < 1e15)) bytes = double(int64_t{1} << 30);
  Job job = e.job;
  job.cluster.num_gpus = ranks;
  auto hw0 = ResolveHardware(job, e.catalog, e.base);
  if (!hw0.ok()) {
    e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": " + hw0.status().reason());
    return;
  }
  const double model_before = BusBandwidth(*op, bytes, ranks, per_node, *hw0) / 1e9;
  // The key this collective's bandwidth depends on: across nodes the fabric's, inside one the
  // intra-node link's (probed: the first existing key whose change moves the prediction).
  std::vector<std::string> candidates;
  if (nodes > 1) candidates = {"link_eff." + hw0->inter.kind};
  else
    candidates = {"link_eff." + hw0->intra.id + ".all_reduce", "link_eff.nvswitch.all_reduce", "link_eff.nvlink3", "link_eff.nvlink",
                  "link_eff." + hw0->intra.kind, "link_eff.pcie"};
  for (const auto& key : candidates) {
    if (!e.base.Has(key)) continue;
    const double before = e.base.Get(key);
    auto f = [&](double v) {
      auto hw = HwWith(e, job, key, v);
      return hw ? BusBandwidth(*op, bytes, ranks, per_node, *hw) / 1e9 : 0.0;
    };
    if (std::abs(f(before * 0.9) - f(before)) <= 1e-12 * std::max(1.0, f(before))) continue;  // not this key
    const NumberRange r = CalibrationKeyRange(key).value_or(NumberRange{1e-3, 2});
    const Solved s = Bisect(f, measured, std::max(r.min, 1e-6), r.max);
    Push(e, key, before, s.value, s.clamped, "factor", cite, model_before);  // link_eff may exceed 1 (NVLS)
    return;
  }
  e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": no link efficiency key moves the model's busbw for this collective");
}

void Gemm(const Env& e, const std::vector<const Measurement*>& group) {
  const auto [measured, cited] = MedianOf(group);
  const Measurement& cite = *cited;
  const nlohmann::json ctx = Context(cite);
  auto hw = ResolveHardware(e.job, e.catalog, e.base);
  if (!hw.ok()) return e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": " + hw.status().reason());
  const auto peak = hw->gpu.PeakFlops(Precision::kBf16);
  if (!peak) return e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": " + hw->gpu.id + " has no bf16 peak");
  // C§2: efficiency = ceiling x d / (d + d_half) for the GEMM's smallest dimension d.
  const double size = Num(ctx, {"size", "n"}, 8192);
  const double d = std::min({Num(ctx, {"m"}, size), Num(ctx, {"n"}, size), Num(ctx, {"k"}, size)});
  const double shape = d / (d + hw->k.matmul_dim_half);
  const double model_before = *peak * hw->k.clock_factor * hw->k.matmul_eff_max * shape / 1e12;
  const double raw = measured * 1e12 / (*peak * hw->k.clock_factor * shape);
  if (!std::isfinite(raw) || !std::isfinite(model_before))
    return e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": the GEMM shape in its context gives no finite efficiency");
  const NumberRange r = *CalibrationKeyRange("matmul_eff_max.x");
  const double v = std::clamp(raw, r.min, r.max);
  Push(e, "matmul_eff_max." + hw->gpu.id, hw->k.matmul_eff_max, v, v != raw, "fraction", cite, model_before);
}

void LocalDisk(const Env& e, const std::vector<const Measurement*>& group) {
  const auto [measured, cited] = MedianOf(group);
  const Measurement& cite = *cited;
  const std::string key = "local_nvme_write_bytes_per_s_per_node";
  const double before = e.base.Get(key);
  Push(e, key, before, measured * 1e6, false, "bytes/s", cite, before / 1e6);
}

void Step(const Env& e, const std::vector<const Measurement*>& group, bool tokens) {
  const auto [measured, cited] = MedianOf(group);
  const Measurement& cite = *cited;
  Job job = e.job;
  const nlohmann::json ctx = Context(cite);
  if (ctx.contains("job") && ctx["job"].is_object()) {  // the run's own job, as plan rows carry it
    job = Job{};
    for (const auto& [k, v] : ctx["job"].items())
      if (!v.is_string() || !SetJobKey(job, k, v.get<std::string>(), {"ledger", static_cast<int>(cite.id), k}).ok())
        return e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": its context job key '" + k + "' does not read");
    if (!FinalizeJob(job).ok()) return e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": its context job does not finalize");
  }
  const std::string key = "framework_overhead";
  auto f = [&](double v) {
    auto hw = HwWith(e, job, key, v);
    if (!hw) return 0.0;
    const StepEstimate s = EstimateStep(job, *hw);
    return tokens ? s.tokens_per_s : s.step_time_s;
  };
  const double before = e.base.Get(key);
  const NumberRange r = *CalibrationKeyRange(key);
  const Solved s = Bisect(f, measured, std::max(r.min, 1e-3), std::min(r.max, 10.0));
  Push(e, key, before, s.value, s.clamped, "factor", cite, f(before));
}

// MX§7 a profiler's forward time of one transformer layer (s): layer_time_scale.<gpu> is that time over the model's
// GPU forward time of one layer of the calibrate job on this card, at the context's tp and micro_batch (default: the
// job's). Closed form: the scale multiplies the layer's GPU time and nothing else.
void LayerForward(const Env& e, const std::vector<const Measurement*>& group) {
  const auto [measured, cited] = MedianOf(group);
  const Measurement& cite = *cited;
  const nlohmann::json ctx = Context(cite);
  Job job = e.job;
  const double tp = Num(ctx, {"tp"}, static_cast<double>(job.parallel.tp));
  const double mbs = Num(ctx, {"micro_batch", "mbs"}, static_cast<double>(job.training.micro_batch));
  if (!(tp >= 1 && tp <= 1024 && tp == std::floor(tp) && mbs >= 1 && mbs <= 1e6 && mbs == std::floor(mbs)))
    return e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": its context tp / micro_batch are not whole numbers in range");
  job.parallel.tp = static_cast<int64_t>(tp), job.training.micro_batch = static_cast<int64_t>(mbs);
  auto hw = ResolveHardware(job, e.catalog, e.base);
  if (!hw.ok()) return e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": " + hw.status().reason());
  const double unscaled = UnscaledLayerForwardSeconds(job, *hw);
  const double raw = measured / unscaled;
  if (!std::isfinite(raw) || !(raw > 0))
    return e.out.skipped.push_back("ledger row " + std::to_string(cite.id) + ": the model gives no layer time to scale");
  const std::string key = "layer_time_scale." + hw->gpu.id;
  const NumberRange r = *CalibrationKeyRange(key);
  const double v = std::clamp(raw, r.min, r.max);
  Push(e, key, hw->k.layer_time_scale, v, v != raw, "factor", cite, unscaled * hw->k.layer_time_scale);
}

}  // namespace

Result<CalibrateResult> CalibrateFromMeasurements(const Job& job, const Catalog& catalog, const Calibration& base,
                                                  const std::vector<Measurement>& measurements) {
  CalibrateResult out;
  if (auto hw = ResolveHardware(job, catalog, base); !hw.ok()) return hw.status();
  std::map<std::string, std::vector<const Measurement*>> by_kind;
  for (const auto& m : measurements) by_kind[m.kind].push_back(&m);
  const Env e{job, catalog, base, out};
  for (const auto& [kind, group] : by_kind) {
    if (kind == "busbw_gb_per_s" || kind == "busbw_peak_gb_per_s") BusBw(e, group);
    else if (kind == "gemm_tflops") Gemm(e, group);
    else if (kind == "storage_seq_write_mb_per_s") LocalDisk(e, group);
    else if (kind == "step_time_s") Step(e, group, false);
    else if (kind == "tokens_per_s") Step(e, group, true);
    else if (kind == "layer_forward_s") LayerForward(e, group);
    else out.skipped.push_back(kind + " (" + std::to_string(group.size()) + " measurements): calibrates no key");
  }
  // One row per key: the later measurement kind wins only if no earlier one set it.
  std::vector<CalibrationOverride> unique;
  for (const auto& o : out.overrides) {
    auto it = std::find_if(unique.begin(), unique.end(), [&](const CalibrationOverride& u) { return u.key == o.key; });
    if (it == unique.end()) unique.push_back(o);
    else out.skipped.push_back(o.measured + ": " + o.key + " is already set from " + it->measured);
  }
  out.overrides = unique;
  return out;
}

std::string CalibrationOverridesToCsv(const std::vector<CalibrationOverride>& overrides) {
  auto quote = [](std::string s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out = "key,value,unit,source,date,notes\n";
  for (const auto& o : overrides) {
    const Measurement& m = o.from;
    std::string source = "measured: " + o.measured + " by " + m.tool + (m.raw_file.empty() ? "" : " (" + m.raw_file + ")") + " on " + m.machine +
                         " in pool " + m.pool + " at " + m.time_utc + ", ledger row " + std::to_string(m.id) +
                         (m.raw_sha256.empty() ? "" : ", raw output sha256 " + m.raw_sha256.substr(0, 16));
    std::string notes = "fitted so the model gives the measured value (it gave " + o.model_before + " with " + FormatNumber("%g", o.before) + ")";
    if (!o.note.empty()) notes += "; " + o.note;
    out += o.key + "," + FormatNumber("%.6g", o.value) + "," + o.unit + "," + quote(source) + "," + m.time_utc.substr(0, 10) + "," + quote(notes) + "\n";
  }
  return out;
}

void ApplyOverrides(const std::vector<CalibrationOverride>& overrides, Calibration& cal) {
  for (const auto& o : overrides) cal.Set(o.key, o.value);
}

}  // namespace gpuplan
