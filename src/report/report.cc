#include "gpuplan/report.h"
#include "gpuplan/text_width.h"

#include "gpuplan/data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpuplan {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}

std::string FormatGiB(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / kGiB);
  return buf;
}

std::string FormatNumber(const char* printf_format, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

std::string FormatCount(double n) {
  char buf[64];
  if (n >= 1e12) std::snprintf(buf, sizeof buf, "%.2fT", n / 1e12);
  else if (n >= 1e9) std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
  else if (n >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
  else if (n >= 1e3) std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

std::string WithThousands(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

namespace {
bool NumericCell(const std::string& c) {
  return !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) || c[0] == '-' || c[0] == '+' || c[0] == '$') &&
         c.find_first_of("abcdfghijklmnopqrstuvwxyz") == std::string::npos;
}

// Text columns narrowed, widest first, until the table fits kTextWidth (no column below 20).
void NarrowToFit(const std::vector<std::vector<std::string>>& rows, std::vector<size_t>& w) {
  std::vector<bool> text(w.size(), false);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) text[i] = text[i] || (!r[i].empty() && !NumericCell(r[i]));
  for (;;) {
    size_t total = 0;
    for (size_t x : w) total += x + 2;
    total = total >= 2 ? total - 2 : total;
    if (total <= kTextWidth) return;
    size_t j = w.size();
    for (size_t i = 0; i < w.size(); ++i)
      if (text[i] && w[i] > 20 && (j == w.size() || w[i] > w[j])) j = i;
    if (j == w.size()) return;  // nothing left to narrow: FitWidth wraps what remains
    w[j] -= std::min(total - kTextWidth, w[j] - 20);
  }
}

std::vector<std::string> CellLines(const std::string& c, size_t width) {
  std::vector<std::string> out;
  if (DisplayWidth(c) <= width) return {c};
  const std::string wrapped = FitWidth(c, width, 1);
  size_t pos = 0;
  while (pos < wrapped.size()) {
    size_t nl = wrapped.find('\n', pos);
    if (nl == std::string::npos) nl = wrapped.size();
    out.push_back(wrapped.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}
}  // namespace

std::string RenderTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        bool markdown) {
  std::vector<size_t> w(header.size());
  for (size_t i = 0; i < header.size(); ++i) w[i] = DisplayWidth(header[i]);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], DisplayWidth(r[i]));
  // Text wider than a terminal: the widest text columns wrap inside themselves (a row takes several lines).
  if (!markdown) NarrowToFit(rows, w);
  auto line = [&](const std::vector<std::string>& cells) {
    std::vector<std::vector<std::string>> parts(w.size());
    size_t height = 1;
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string c = i < cells.size() ? cells[i] : "";
      parts[i] = markdown ? std::vector<std::string>{c} : CellLines(c, w[i]);
      height = std::max(height, parts[i].size());
    }
    std::string all;
    for (size_t k = 0; k < height; ++k) {
      std::string out = markdown ? "| " : "";
      for (size_t i = 0; i < w.size(); ++i) {
        const std::string c = k < parts[i].size() ? parts[i][k] : "";
        // numbers right-aligned, text left-aligned
        const bool numeric = parts[i].size() == 1 && NumericCell(c);
        const size_t cw = DisplayWidth(c);
        std::string pad(w[i] > cw ? w[i] - cw : 0, ' ');
        out += numeric && i > 0 ? pad + c : c + pad;
        out += markdown ? " | " : (i + 1 < w.size() ? "  " : "");
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      all += out + "\n";
    }
    return all;
  };
  std::string out = line(header);
  if (markdown) {
    std::string sep = "|";
    for (size_t i = 0; i < w.size(); ++i) sep += std::string(w[i] + 2, '-') + "|";
    out += sep + "\n";
  } else {
    size_t total = 0;
    for (size_t x : w) total += x + 2;
    out += std::string(total > 2 ? total - 2 : total, '-') + "\n";
  }
  for (const auto& r : rows) out += line(r);
  return out;
}

nlohmann::json JobToJson(const Job& job) {
  const Arch& a = job.arch;
  nlohmann::json model = {{"name", a.name}};
  if (a.params_override > 0) {
    model["params"] = a.params_override;
  } else {
    model.update({{"layers", a.layers}, {"hidden", a.hidden}, {"heads", a.heads}, {"kv_heads", a.KvHeads()},
                  {"head_dim", a.HeadDim()}, {"ffn_hidden", a.Ffn()}, {"vocab", a.vocab}, {"mlp", ToString(a.mlp)},
                  {"norm", ToString(a.norm)}, {"tied_embeddings", a.tied_embeddings},
                  {"position", ToString(a.position)}, {"experts", a.experts},
                  {"experts_per_token", a.IsMoe() ? nlohmann::json(a.experts_per_token) : nlohmann::json(nullptr)}});
    // Every parameter and those one token touches (MoE: the top-k routed experts only).
    const ParamCounts pc = CountParams(a);
    model.update({{"params", pc.total}, {"active_params", pc.active}});
  }
  const TrainingSpec& t = job.training;
  nlohmann::json training = {{"method", ToString(t.method)}, {"seq_len", t.seq_len},
                             {"micro_batch", t.micro_batch}, {"global_batch", t.global_batch},
                             {"tokens", t.tokens > 0 ? nlohmann::json(t.tokens) : nlohmann::json(nullptr)},
                             {"samples", t.samples > 0 ? nlohmann::json(t.samples) : nlohmann::json(nullptr)},
                             {"epochs", t.samples > 0 ? nlohmann::json(t.epochs > 0 ? t.epochs : 1.0) : nlohmann::json(nullptr)},
                             {"tokens_per_sample", t.samples > 0 ? nlohmann::json(t.tokens_per_sample > 0 ? t.tokens_per_sample : t.seq_len)
                                                                 : nlohmann::json(nullptr)},
                             {"precision", ToString(t.precision)},
                             {"optimizer", ToString(t.optimizer)}, {"recompute", ToString(t.recompute)},
                             {"flash_attention", t.flash_attention}, {"fp32_grads", t.fp32_grads},
                             {"fp32_allreduce", t.fp32_allreduce}};
  if (IsAdapterMethod(t.method))
    training["lora"] = {{"rank", t.lora.rank}, {"alpha", t.lora.alpha}, {"targets", t.lora.targets}};
  const ParallelSpec& p = job.parallel;
  nlohmann::json parallel = {{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"vpp", p.vpp},
                             {"ep", p.ep}, {"sequence_parallel", p.sequence_parallel},
                             {"zero", p.zero}, {"offload", ToString(p.offload)}};
  const ClusterSpec& c = job.cluster;
  nlohmann::json cluster = {{"gpu", c.gpu}, {"num_gpus", c.num_gpus}, {"gpus_per_node", c.gpus_per_node}};
  // null = not given (gpuplan picks the default; the estimate's "hardware" says which).
  auto given = [](const std::string& v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
  cluster["intra_node"] = given(c.intra_node);
  cluster["network"] = given(c.network);
  cluster["storage"] = given(c.storage);
  return {{"model", model}, {"training", training}, {"parallel", parallel}, {"cluster", cluster}};
}

std::string ExpectedErrorLine(const ExpectedError& e) {
  auto part = [&e](const char* what, const std::optional<ErrorBand>& b) {
    char buf[400];
    if (!b) {
      std::snprintf(buf, sizeof buf, "%s: no validated group with %d or more runs", what, kMinBandRows);
    } else if (BandIsBorrowed(*b, e.framework, e.gpu_family)) {
      // A band measured on other GPU families or frameworks says nothing about this one (issue: a
      // ± figure from elsewhere reads as validation it is not).
      std::snprintf(buf, sizeof buf, "%s: no validation for this family (%s%s%s; nearest group %s, %d runs)", what,
                    e.framework.c_str(), e.gpu_family.empty() ? "" : " on ", e.gpu_family.c_str(), b->Group().c_str(), b->rows);
    } else {
      std::snprintf(buf, sizeof buf, "%s ±%.0f%% (p90 of %d validated runs: %s; mean %+.0f%%)", what, 100 * b->p90_abs, b->rows,
                    b->Group().c_str(), 100 * b->mean_signed);
    }
    return std::string(buf);
  };
  return "expected error: " + part("step time", e.throughput) + ", " + part("memory", e.memory) + " (data/error_bands.csv)";
}

nlohmann::json ExpectedErrorToJson(const ExpectedError& e) {
  auto band = [&e](const std::optional<ErrorBand>& b) -> nlohmann::json {
    if (!b) return nullptr;
    return {{"p90_abs", b->p90_abs}, {"borrowed", BandIsBorrowed(*b, e.framework, e.gpu_family)}, {"median_abs", b->median_abs}, {"mean_signed", b->mean_signed},
            {"p90_under", b->p90_under}, {"rows", b->rows},
            {"group", b->Group()}, {"framework", b->framework}, {"gpu_family", b->gpu_family}, {"method", b->method}};
  };
  return {{"step_time", band(e.throughput)}, {"memory", band(e.memory)}, {"source", "data/error_bands.csv"}};
}

MemoryReport BuildMemoryReport(const Job& job, const GpuSpec& gpu, const Calibration& cal) {
  MemoryReport r;
  r.job = job, r.gpu = gpu, r.memory = EstimateMemory(job, cal);
  r.fits = r.memory.total_bytes <= gpu.memory_bytes;
  r.headroom = MemoryHeadroomFor(job, gpu.family, cal);
  const double usable_bytes = gpu.memory_bytes * (1 - r.headroom.fraction);
  r.inside_margin = r.fits && r.memory.total_bytes > usable_bytes;
  r.suggestions = SuggestMemorySavings(job, usable_bytes, cal);
  return r;
}

std::string MemoryFitWords(const MemoryReport& r) {
  if (!r.fits) return "DOES NOT FIT";
  if (!r.inside_margin) return "fits";
  char buf[120];
  std::snprintf(buf, sizeof buf, "fits, but inside the model's error (plan needs >= %.0f%% free)", 100 * r.headroom.fraction);
  return buf;
}

nlohmann::json MemoryToJson(const MemoryReport& r) {
  const MemoryBreakdown& m = r.memory;
  nlohmann::json items = nlohmann::json::array();
  for (const auto& it : m.items)
    items.push_back({{"category", it.category}, {"name", it.name}, {"bytes", it.bytes}, {"formula", it.formula}});
  nlohmann::json sugg = nlohmann::json::array();
  for (const auto& s : r.suggestions)
    sugg.push_back({{"step", s.step}, {"change", s.change}, {"total_bytes", s.total_bytes},
                    {"saved_bytes", s.saved_bytes}, {"fits", s.fits}, {"num_gpus", s.num_gpus}});
  return {
      {"version", kVersion},
      {"schema", kJsonSchemaVersion},
      {"model_fingerprint", ModelFingerprint()},
      {"inputs", JobToJson(r.job)},
      {"model", {{"name", r.job.arch.name}, {"params", m.total_params}, {"active_params", CountParams(r.job.arch).active},
                 {"trainable_params", m.trainable_params}}},
      {"per_gpu",
       {{"weights_bytes", m.weights_bytes}, {"gradients_bytes", m.gradients_bytes},
        {"optimizer_bytes", m.optimizer_bytes}, {"activations_bytes", m.activations_bytes},
        {"buffers_bytes", m.buffers_bytes}, {"overhead_bytes", m.overhead_bytes}, {"total_bytes", m.total_bytes},
        {"host_offload_bytes", m.host_bytes}, {"params_on_gpu", m.params_on_gpu},
        {"pipeline_stage", m.stage}, {"inflight_microbatches", m.inflight_microbatches}}},
      {"items", items},
      {"gpu", {{"id", r.gpu.id}, {"capacity_bytes", r.gpu.memory_bytes}}},
      {"fits", r.fits},
      {"fits_with_margin", r.fits && !r.inside_margin},
      {"margin", {{"fraction", r.headroom.fraction}, {"source", r.headroom.source},
                  {"usable_bytes", r.gpu.memory_bytes * (1 - r.headroom.fraction)}}},
      {"headroom_bytes", r.gpu.memory_bytes - m.total_bytes},
      {"suggestions", sugg},
  };
}

namespace {
// The margin `plan` keeps free, and what it means for this job (docs/model/memory.md "The margin").
std::string MemoryMarginLine(const MemoryReport& r) {
  const double usable_bytes = r.gpu.memory_bytes * (1 - r.headroom.fraction);
  char buf[600];
  if (r.inside_margin) {
    std::snprintf(buf, sizeof buf,
                  "%s: `gpuplan plan` keeps %.0f%% free (%s GiB usable), so it would not pick this layout\n"
                  "  margin: %s\n  a run may still fit; set constraints.min_memory_headroom to plan with less margin at your own risk\n",
                  MemoryFitWords(r).c_str(), 100 * r.headroom.fraction, FormatGiB(usable_bytes).c_str(), r.headroom.source.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "margin: %.0f%% kept free by `gpuplan plan` (%s GiB usable): %s\n", 100 * r.headroom.fraction,
                  FormatGiB(usable_bytes).c_str(), r.headroom.source.c_str());
  }
  return buf;
}
}  // namespace

std::string MemoryToText(const MemoryReport& r, bool md) {
  const MemoryBreakdown& m = r.memory;
  const Job& j = r.job;
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%smodel %s: %s params (%s trainable), method %s, %s, seq %lld x micro-batch %lld\n",
                md ? "**" : "", j.arch.name.c_str(), WithThousands(m.total_params).c_str(),
                WithThousands(m.trainable_params).c_str(), ToString(j.training.method).c_str(),
                ToString(j.training.precision).c_str(), static_cast<long long>(j.training.seq_len),
                static_cast<long long>(j.training.micro_batch));
  out += buf;
  if (md) out.insert(out.size() - 1, "**");
  std::snprintf(buf, sizeof buf, "layout: tp %lld, pp %lld, dp %lld, cp %lld, ZeRO %d, offload %s, recompute %s on %lld x %s%s\n\n",
                static_cast<long long>(j.parallel.tp), static_cast<long long>(j.parallel.pp),
                static_cast<long long>(j.parallel.dp), static_cast<long long>(j.parallel.cp), j.parallel.zero,
                ToString(j.parallel.offload).c_str(), ToString(j.training.recompute).c_str(),
                static_cast<long long>(j.cluster.num_gpus), r.gpu.id.c_str(),
                j.parallel.pp > 1 ? (" (peak: pipeline stage " + std::to_string(m.stage) + ")").c_str() : "");
  out += buf;
  std::vector<std::vector<std::string>> rows;
  for (const auto& it : m.items) rows.push_back({it.category, it.name, FormatGiB(it.bytes), it.formula});
  rows.push_back({"total", "per GPU", FormatGiB(m.total_bytes), ""});
  out += RenderTable({"category", "item", "GiB", "how"}, rows, md);
  out += "\n";
  if (m.host_bytes > 0) out += "host memory for offload: " + FormatGiB(m.host_bytes) + " GiB per GPU\n";
  const double head = r.gpu.memory_bytes - m.total_bytes;
  std::snprintf(buf, sizeof buf, "%s: %s GiB of %s GiB on %s (%s GiB %s, %.0f%%)\n",
                r.fits ? (r.inside_margin ? "FITS INSIDE THE MODEL'S ERROR" : "FITS") : "DOES NOT FIT", FormatGiB(m.total_bytes).c_str(),
                FormatGiB(r.gpu.memory_bytes).c_str(), r.gpu.id.c_str(), FormatGiB(std::fabs(head)).c_str(),
                head >= 0 ? "free" : "over", 100.0 * std::fabs(head) / r.gpu.memory_bytes);
  out += buf;
  out += MemoryMarginLine(r);
  if (!r.suggestions.empty()) {
    out += r.fits && !r.inside_margin ? "\nfurther savings, in order of cost:\n"
                                      : "\nmemory-saving steps, in order of cost (each applied alone; fits = within the margin):\n";
    std::vector<std::vector<std::string>> srows;
    for (const auto& s : r.suggestions)
      srows.push_back({s.step, FormatGiB(s.saved_bytes), FormatGiB(s.total_bytes), s.fits ? "yes" : "no",
                       std::to_string(s.num_gpus), s.change});
    out += RenderTable({"step", "saves GiB", "total GiB", "fits", "GPUs", "change"}, srows, md);
  }
  return out;
}

}  // namespace gpuplan
