#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "gpuplan/data.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {
std::string F(const char* fmt, double v) { return FormatNumber(fmt, v); }
std::string Duration(double s) {
  char buf[64];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 2 * 3600) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else if (s < 3 * 86400) std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  else std::snprintf(buf, sizeof buf, "%.1f days", s / 86400);
  return buf;
}
struct Part { const char* key; const char* label; double StepBreakdown::*field; };
const Part kParts[] = {
    {"compute", "compute (matmul, attention, elementwise, recompute)", &StepBreakdown::compute_s},
    {"tp_comm", "exposed tensor-parallel comm", &StepBreakdown::tp_comm_s},
    {"cp_comm", "exposed context-parallel comm", &StepBreakdown::cp_comm_s},
    {"pp_comm", "exposed pipeline send/recv", &StepBreakdown::pp_comm_s},
    {"dp_comm", "exposed data-parallel / ZeRO comm", &StepBreakdown::dp_comm_s},
    {"ep_comm", "expert all-to-all", &StepBreakdown::ep_comm_s},
    {"bubble", "pipeline bubble", &StepBreakdown::bubble_s},
    {"data", "data-loader stall", &StepBreakdown::data_s},
    {"optimizer", "optimizer step", &StepBreakdown::optimizer_s},
    {"checkpoint", "checkpoint stall (amortized)", &StepBreakdown::checkpoint_s},
    {"overhead", "fixed per-step overhead", &StepBreakdown::overhead_s},
};
}  // namespace

nlohmann::json EstimateToJson(const EstimateReport& r) {
  const StepEstimate& e = r.estimate;
  // null, not 0, for what is not modelled or not known (no storage given, no token count).
  auto known = [](bool k, double v) { return k ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const bool read_known = r.hw.storage && r.hw.storage->read_bytes_per_s;
  const bool write_known = r.hw.storage && r.hw.storage->write_bytes_per_s;
  const bool tokens_known = r.job.training.tokens > 0;
  nlohmann::json bd;
  for (const auto& p : kParts) bd[p.key] = e.breakdown.*(p.field);
  bd["data"] = known(read_known, e.breakdown.data_s);
  bd["checkpoint"] = known(write_known, e.breakdown.checkpoint_s);
  nlohmann::json what_ifs = nlohmann::json::array();
  for (const auto& w : r.what_ifs) {
    nlohmann::json changes;
    for (const auto& [k, v] : w.changes) changes[k] = v;
    what_ifs.push_back({{"changes", changes}, {"flags", w.flags}, {"step_time_s", w.step_time_s},
                        {"memory_bytes", w.memory_bytes}, {"fits", w.fits}});
  }
  nlohmann::json mem = MemoryToJson(r.memory);
  mem.erase("inputs");
  mem.erase("version");
  mem.erase("schema");
  mem.erase("model_fingerprint");
  return {
      {"version", kVersion},
      {"schema", kJsonSchemaVersion},
      {"model_fingerprint", ModelFingerprint()},
      {"inputs", JobToJson(r.job)},
      {"hardware",
       {{"gpu", r.hw.gpu.id}, {"intra_node", r.hw.intra.id}, {"intra_node_default", r.hw.intra_default},
        {"network", r.hw.inter.id}, {"network_default", r.hw.inter_default}, {"nics_per_node", r.hw.nics_per_node},
        {"rdma", r.hw.rdma}, {"peak_flops", e.peak_flops},
        {"storage", r.hw.storage ? nlohmann::json(r.hw.storage->id) : nlohmann::json(nullptr)}}},
      {"step_time_s", e.step_time_s},
      {"grad_accum_steps", e.grad_accum},
      {"tokens_per_step", e.tokens_per_step},
      {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
      {"tokens_per_s", e.tokens_per_s},
      {"mfu", e.mfu},
      {"hfu", e.hfu},
      {"model_tflops_per_gpu", e.model_tflops_per_gpu},
      {"model_flops_per_token", e.model_flops_per_token},
      {"time_to_train_s", known(tokens_known, e.time_to_train_s)},
      {"time_s", r.wall ? nlohmann::json(r.wall->wall.time_s) : nlohmann::json(nullptr)},
      {"train_s", r.wall ? nlohmann::json(r.wall->wall.train_s) : nlohmann::json(nullptr)},
      {"startup_s", r.wall ? nlohmann::json(r.wall->startup.Total()) : nlohmann::json(nullptr)},
      {"checkpoint_stall_s", r.wall ? nlohmann::json(r.wall->wall.checkpoint_stall_s) : nlohmann::json(nullptr)},
      {"expected_lost_s", r.wall ? nlohmann::json(r.wall->wall.expected_lost_s) : nlohmann::json(nullptr)},
      {"final_save_s", r.wall ? nlohmann::json(r.wall->wall.final_save_s) : nlohmann::json(nullptr)},
      {"goodput", r.wall ? nlohmann::json(r.wall->wall.goodput) : nlohmann::json(nullptr)},
      {"expected_failures", r.wall ? nlohmann::json(r.wall->wall.expected_failures) : nlohmann::json(nullptr)},
      {"gpu_hours", known(tokens_known, e.gpu_hours)},
      {"breakdown_s", bd},
      {"communication",
       {{"tp_bytes", e.comm.tp_bytes}, {"tp_s", e.comm.tp_s}, {"cp_bytes", e.comm.cp_bytes}, {"cp_s", e.comm.cp_s},
        {"pp_bytes", e.comm.pp_bytes}, {"pp_s", e.comm.pp_s}, {"dp_bytes", e.comm.dp_bytes}, {"dp_s", e.comm.dp_s},
        {"ep_bytes", e.comm.ep_bytes}, {"ep_s", e.comm.ep_s}, {"dp_crosses_nodes", e.comm.dp_crosses_nodes},
        {"pp_boundaries", e.comm.pp_boundaries}, {"pp_cross_node_boundaries", e.comm.pp_cross_boundaries},
        {"pp_cross_node_bytes_per_node", e.comm.pp_cross_node_bytes}, {"pp_intra_node_s", e.comm.pp_intra_s},
        {"pp_cross_node_s", e.comm.pp_cross_s}}},
      {"checkpoint", {{"bytes", e.checkpoint_bytes}, {"write_s", known(write_known, e.checkpoint_write_s)}}},
      {"bottleneck", r.bottleneck},
      {"what_ifs", what_ifs},
      {"memory", mem},
      {"expected_error", ExpectedErrorToJson(ExpectedErrorFor(r.job, r.hw.gpu.family))},
      {"efficiency_note", r.hw.efficiency_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.hw.efficiency_note)},
  };
}

std::string EstimateToText(const EstimateReport& r, bool md) {
  const StepEstimate& e = r.estimate;
  const Job& j = r.job;
  std::string out;
  char buf[768];
  // N§6 an NVLink domain beyond the node (GB200 NVL72) is said where the node is.
  const int64_t domain = NvlinkDomainGpus(j, r.hw);
  const std::string per_node = std::to_string(j.cluster.gpus_per_node) + " per node" +
                               (domain > j.cluster.gpus_per_node ? ", NVLink domain of " + std::to_string(domain) : "");
  std::snprintf(buf, sizeof buf, "%s%s on %lld x %s (%s), intra-node %s%s, network %s x %.0f per node%s%s%s\n",
                md ? "**" : "", j.arch.name.c_str(), static_cast<long long>(j.cluster.num_gpus), r.hw.gpu.id.c_str(),
                per_node.c_str(), r.hw.intra.id.c_str(), r.hw.intra_default ? " (default)" : "",
                r.hw.inter.id.c_str(), r.hw.nics_per_node, r.hw.inter_default ? " (default)" : "",
                r.hw.rdma ? ", RDMA" : ", no RDMA", md ? "**" : "");
  out += buf;
  std::snprintf(buf, sizeof buf, "layout: tp %lld, pp %lld (vpp %lld), dp %lld, cp %lld, ep %lld, ZeRO %d; micro-batch %lld x %lld accumulation = global batch %lld x seq %lld\n\n",
                static_cast<long long>(j.parallel.tp), static_cast<long long>(j.parallel.pp), static_cast<long long>(j.parallel.vpp),
                static_cast<long long>(j.parallel.dp), static_cast<long long>(j.parallel.cp), static_cast<long long>(j.parallel.ep),
                j.parallel.zero, static_cast<long long>(j.training.micro_batch), static_cast<long long>(e.grad_accum),
                static_cast<long long>(j.training.global_batch), static_cast<long long>(j.training.seq_len));
  out += buf;
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : kParts) {
    const double v = e.breakdown.*(p.field);
    if (v <= 0 && std::string(p.key) != "compute") continue;
    rows.push_back({p.label, F("%.4f", v), F("%.1f", 100 * v / e.step_time_s)});
  }
  rows.push_back({"step", F("%.4f", e.step_time_s), "100.0"});
  out += RenderTable({"part of the step", "seconds", "%"}, rows, md);
  out += "\n";
  std::vector<std::vector<std::string>> m = {
      {"tokens/s per GPU", F("%.0f", e.tokens_per_s_per_gpu)},
      {"tokens/s total", F("%.0f", e.tokens_per_s)},
      {IsAdapterMethod(j.training.method) ? "MFU (4N + 12·L·h·s, frozen base)"
                                                                                  : "MFU (6N + 12·L·h·s)",
       F("%.1f%%", 100 * e.mfu)},
      {"HFU (with recompute)", F("%.1f%%", 100 * e.hfu)},
      {"model TFLOP/s per GPU", F("%.1f", e.model_tflops_per_gpu)},
  };
  if (j.training.tokens > 0) {
    const TrainingSpec& t = j.training;
    const std::string from_samples =
        t.samples > 0 ? " (" + FormatCount(t.samples) + " samples x " + F("%g", t.epochs > 0 ? t.epochs : 1) + " epochs x " +
                            std::to_string(t.tokens_per_sample > 0 ? t.tokens_per_sample : t.seq_len) + " tokens)"
                      : "";
    m.push_back({"time to train " + FormatCount(t.tokens) + " tokens" + from_samples, Duration(e.time_to_train_s)});
    m.push_back({"GPU-hours", F("%.0f", e.gpu_hours)});
  }
  if (r.wall) {
    const WallClock& w = r.wall->wall;
    m.push_back({"wall-clock (all of the below)", Duration(w.time_s)});
    m.push_back({"  start-up / ckpt stalls / lost work / final save",
                 Duration(r.wall->startup.Total()) + " / " + Duration(w.checkpoint_stall_s) + " / " + Duration(w.expected_lost_s) + " / " +
                     Duration(w.final_save_s)});
    m.push_back({"  goodput (steps / wall-clock)", F("%.1f%%", 100 * w.goodput)});
    m.push_back({"  expected failures (Llama 3 rate)", F("%.2f", w.expected_failures)});
  }
  if (e.checkpoint_bytes > 0)
    m.push_back({"checkpoint size (GB)", F("%.1f", e.checkpoint_bytes / 1e9)});
  out += RenderTable({"metric", "value"}, m, md);
  if (j.cluster.cpu_cores_per_gpu > 0) {
    const double want = r.hw.cal.Get("host_vcpus_per_gpu_min");
    char cbuf[256];
    std::snprintf(cbuf, sizeof cbuf, "\n%s: %lld CPU cores per GPU %s %.0f recommended for data loading (docs/troubleshooting.md#data-loading)\n",
                  j.cluster.cpu_cores_per_gpu < want ? "WARNING" : "host", static_cast<long long>(j.cluster.cpu_cores_per_gpu),
                  j.cluster.cpu_cores_per_gpu < want ? "<" : ">=", want);
    out += cbuf;
  }
  if (!r.hw.storage) {
    out += "\nnote: no cluster.storage given: data-loading and checkpoint stalls are not modelled (0 s)\n";
  } else if (!r.hw.storage->read_bytes_per_s || !r.hw.storage->write_bytes_per_s) {
    out += "\nnote: " + r.hw.storage->id + " has unknown read or write throughput in the catalog: that stall is not modelled (0 s)\n";
  }
  if (!r.hw.efficiency_note.empty()) out += "\nnote: " + r.hw.efficiency_note + "\n";
  out += "\n" + ExpectedErrorLine(ExpectedErrorFor(j, r.hw.gpu.family)) + "\n";
  out += "\nbottleneck: " + r.bottleneck + "\n\nmemory per GPU: " + FormatGiB(r.memory.memory.total_bytes) + " GiB of " +
         FormatGiB(r.memory.gpu.memory_bytes) + " GiB (" + MemoryFitWords(r.memory) +
         "); 'gpuplan memory' with the same arguments breaks it down\n";
  return out;
}

std::string RowId(const MeasuredRow& m) {
  const auto slash = m.file.find_last_of('/');
  return (slash == std::string::npos ? m.file : m.file.substr(slash + 1)) + ":" + std::to_string(m.line);
}

namespace {
std::string Value(const ValidatedRow& v, double x) { return F(v.memory ? "%.2f GiB" : "%.0f", x); }

std::vector<std::string> SummaryCells(const ErrorSummary& g, bool mark_small) {
  return {g.group + (mark_small && g.rows < kMinBandRows ? " (fewer than 5 rows)" : ""), std::to_string(g.rows),
          F("%.1f%%", 100 * g.median_abs), F("%.1f%%", 100 * g.p90_abs), F("%+.1f%%", 100 * g.mean_signed)};
}

std::string SummaryTable(const std::vector<ErrorSummary>& groups, bool md, size_t max_group_chars = 1000) {
  std::vector<std::vector<std::string>> s;
  for (const auto& g : groups) {
    auto cells = SummaryCells(g, md);
    cells[0] = cells[0].substr(0, max_group_chars);
    s.push_back(cells);
  }
  return RenderTable({"group", "rows", md ? "median abs error" : "median |err|", md ? "p90 abs error" : "p90 |err|",
                      md ? "mean signed error" : "mean err"},
                     s, md);
}

// The stated split: fit subset and held-out rest, throughput and memory (tools/fit_runs.py reads
// the "throughput fit" and "throughput held-out" rows of the text table).
std::vector<ErrorSummary> SplitRows(const ValidationReport& r) {
  auto named = [](ErrorSummary s, const char* name) {
    s.group = name;
    return s;
  };
  return {named(r.fit_throughput, "throughput fit"), named(r.held_out_throughput, "throughput held-out"),
          named(r.fit_memory, "memory fit"), named(r.held_out_memory, "memory held-out")};
}

// Leave-one-source-out (docs/validation.md): the rows that have a fold prediction, with their errors
// from the fold's constants (`loso`) or from the constants in force.
std::vector<double> LosoRowErrors(const ValidationReport& r, bool memory, bool loso) {
  std::vector<double> out;
  for (const auto& v : r.rows)
    if (v.used && v.memory == memory && v.loso) out.push_back(loso ? v.loso_error : v.error);
  return out;
}

// The headline: leave-one-source-out next to in-sample, over- and under-prediction apart.
std::string LosoHeadline(const ValidationReport& r, bool md) {
  std::vector<std::vector<std::string>> rows;
  auto add = [&](const char* kind, bool memory, bool loso, const ErrorSummary& s) {
    if (s.rows == 0) return;
    const OverUnder ou = SplitOverUnder(LosoRowErrors(r, memory, loso));
    rows.push_back({kind, loso ? "leave-one-source-out" : "in-sample", std::to_string(s.rows), F("%.1f%%", 100 * s.median_abs),
                    F("%.1f%%", 100 * s.p90_abs), F("%+.1f%%", 100 * s.mean_signed), F("%.0f%%", 100 * ou.share_over),
                    F("%.1f%%", 100 * ou.median_over), F("%.1f%%", 100 * ou.median_under)});
  };
  add("throughput", false, true, r.loso_throughput);
  add("throughput", false, false, r.in_sample_throughput);
  add("peak memory", true, true, r.loso_memory);
  add("peak memory", true, false, r.in_sample_memory);
  return RenderTable({"kind", "constants", "rows", md ? "median abs error" : "median |err|", md ? "p90 abs error" : "p90 |err|",
                      md ? "mean signed error" : "mean err", md ? "rows predicted high" : "high",
                      md ? "median over-prediction" : "median over", md ? "median under-prediction" : "median under"},
                     rows, md);
}

// Every source: its leave-one-source-out error with its in-sample error beside it.
std::string LosoBySource(const std::vector<ErrorSummary>& loso, const std::vector<ErrorSummary>& in_sample, bool md) {
  std::map<std::string, const ErrorSummary*> ins;
  for (const auto& s : in_sample) ins[s.group] = &s;
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : loso) {
    auto cells = SummaryCells(s, md);
    const ErrorSummary* i = ins.count(s.group) ? ins[s.group] : nullptr;
    cells.push_back(i ? F("%.1f%%", 100 * i->median_abs) : "-");
    cells.push_back(i ? F("%+.1f%%", 100 * i->mean_signed) : "-");
    rows.push_back(cells);
  }
  return RenderTable({"source", "rows", md ? "LOSO median abs error" : "LOSO median", md ? "LOSO p90 abs error" : "LOSO p90",
                      md ? "LOSO mean signed error" : "LOSO mean", md ? "in-sample median abs error" : "in-sample median",
                      md ? "in-sample mean signed error" : "in-sample mean"},
                     rows, md);
}

std::string LosoConstantsTable(const ValidationReport& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : r.loso_constants) {
    std::string notes;
    if (c.swings) notes += "swings between folds (max - min above 25% of max)";
    if (c.prior_folds > 0)
      notes += std::string(notes.empty() ? "" : "; ") + "prior in " + std::to_string(c.prior_folds) +
               " fold(s): only that source has rows in its scope";
    rows.push_back({c.key, F("%.6g", c.in_force), F("%.6g", c.in_sample),
                    c.folds ? F("%.6g", c.min) + " .. " + F("%.6g", c.max) : "-", std::to_string(c.folds), notes});
  }
  return RenderTable({"constant", "in force", "in-sample fit", "fitted without each source (min .. max)", "folds", "notes"}, rows,
                     true);
}

std::string LosoSection(const ValidationReport& r) {
  std::string out = "## Leave-one-source-out\n\n";
  for (const auto& w : r.loso_warnings) out += "**Stale:** " + w + ".\n\n";
  out += "Every row predicted with the calibrated constants fitted on the OTHER sources' rows (tools/fit_runs.py "
         "--loso; the fold is the source's repository, or the paper). \"In-sample\" is the same rows with the constants "
         "in force, fitted on every source. Over- and under-prediction are apart: the share of rows predicted high, and "
         "the median error of the rows predicted high and of those predicted low.\n\n" +
         LosoHeadline(r, true) + "\n";
  for (const auto& g : r.loso_groups) {
    if (g.dimension == "source") {
      out += "### Leave-one-source-out by source\n\nThroughput:\n\n" +
             LosoBySource(g.throughput, r.in_sample_by_source.throughput, true) + "\n";
      if (!g.memory.empty()) out += "Peak memory:\n\n" + LosoBySource(g.memory, r.in_sample_by_source.memory, true) + "\n";
      continue;
    }
    out += "### Leave-one-source-out by " + g.dimension + "\n\nThroughput:\n\n" + SummaryTable(g.throughput, true) + "\n";
    if (!g.memory.empty()) out += "Peak memory:\n\n" + SummaryTable(g.memory, true) + "\n";
  }
  out += "### Constants across the folds\n\nEach constant tools/fit_runs.py fits, as fitted on every source and without "
         "each source in turn. A constant whose value swings between folds is fitted to a source's quirks; one left at "
         "its prior in a fold has rows in a single source only, so nothing but that source could fit it. The fit's "
         "output adds, per constant, the error change in-sample and leave-one-source-out (a constant that helps "
         "in-sample only is flagged there as a defect).\n\n" +
         LosoConstantsTable(r) + "\n";
  return out;
}

// Measured runs the model calls out of memory (docs/model/memory.md §7).
std::string OomLine(const ValidationReport& r) {
  return "runs called out of memory (predicted total > GPU memory): " +
         std::to_string(r.memory_rows_called_oom) + " peak-memory rows, " + std::to_string(r.throughput_rows_called_oom) +
         " throughput rows (runs that ran)";
}

// Over- and under-prediction apart (over-prediction costs users GPUs, under-prediction an OOM),
// and the measured runs called out of memory, each listed.
std::string MemorySidesMarkdown(const ValidationReport& r) {
  std::string out = "Over- and under-prediction apart:\n\n" + SummaryTable(r.memory_sides, true) + "\n" + OomLine(r) + ".\n";
  for (const auto& v : r.rows)
    if (v.used && v.called_oom)
      out += "- " + RowId(v.row) + " " + v.row.model_name + " on " + std::to_string(v.row.job.cluster.num_gpus) + " x " +
             v.row.job.cluster.gpu + ": " + F("%.1f GiB predicted", v.predicted_total_gib) + "\n";
  return out + "\n";
}
}  // namespace

std::string ValidationToText(const ValidationReport& r, bool all_rows) {
  std::string out;
  std::vector<std::vector<std::string>> rows;
  int skipped = 0;
  for (const auto& v : r.rows) {
    if (!v.used) {
      ++skipped;
      if (all_rows) rows.push_back({RowId(v.row), v.row.model_name.substr(0, 28), "", "", "", "", "", "skipped: " + v.reason});
      continue;
    }
    const Job& j = v.row.job;
    rows.push_back({RowId(v.row), v.row.model_name.substr(0, 28), j.cluster.gpu, std::to_string(j.cluster.num_gpus), v.basis,
                    Value(v, v.measured_tokens_per_s_per_gpu), Value(v, v.predicted_tokens_per_s_per_gpu), F("%+.1f%%", 100 * v.error)});
  }
  out += RenderTable({"row", "model", "gpu", "gpus", "compared", "measured (per GPU)", "predicted", "error"}, rows, false);
  auto summary = [&](const std::vector<ErrorSummary>& groups, const std::string& title) {
    if (groups.empty()) return;
    out += "\n" + title + "\n" + SummaryTable(groups, false, 90);
  };
  if (r.has_loso) {
    out += "\nleave-one-source-out (each row predicted with the constants fitted without its source):\n" + LosoHeadline(r, false);
    for (const auto& w : r.loso_warnings) out += "stale: " + w + "\n";
    for (const auto& g : r.loso_groups)
      if (g.dimension == "source") {
        out += "\nthroughput by source, leave-one-source-out:\n" + LosoBySource(g.throughput, r.in_sample_by_source.throughput, false);
        if (!g.memory.empty())
          out += "\npeak memory by source, leave-one-source-out:\n" + LosoBySource(g.memory, r.in_sample_by_source.memory, false);
      }
  }
  summary({r.overall}, "throughput (tokens/s per GPU), all usable rows:");
  if (r.memory.rows > 0) summary({r.memory}, "peak memory rows:");
  if (r.memory.rows > 0) summary(r.memory_sides, "peak memory, over- and under-prediction apart:");
  out += "\n" + OomLine(r) + "\n";
  summary(SplitRows(r), "train/test split (" + SplitRule() + "):");
  summary(r.split_by_framework.throughput, "throughput by framework, fit subset and held out:");
  summary(r.split_by_framework.memory, "peak memory by framework, fit subset and held out:");
  for (const auto& g : r.groups) {
    summary(g.throughput, "throughput by " + g.dimension + ":");
    summary(g.memory, "peak memory by " + g.dimension + ":");
  }
  summary(r.by_gpu, "throughput by GPU:");
  out += "\nrows not predicted: " + std::to_string(skipped) + (all_rows ? "" : " (--all lists each with its reason)") + "\n";
  const auto unreadable = std::count_if(r.rows.begin(), r.rows.end(), [](const ValidatedRow& v) { return !v.row.unreadable.empty(); });
  if (unreadable > 0)
    out += "rows skipped for an unreadable cell: " + std::to_string(unreadable) + " (each named on stderr)\n";
  return out;
}

namespace {
// Every group of any dimension whose mean signed error is above 8%, stated rather than hidden.
std::string KnownBiases(const ValidationReport& r) {
  std::string biases;
  auto check = [&](const std::string& what, const ErrorSummary& g) {
    if (std::fabs(g.mean_signed) <= 0.08) return;
    biases += "- " + what + " " + g.group + ": predictions are " + F("%.0f%%", 100 * std::fabs(g.mean_signed)) +
              (g.mean_signed > 0 ? " high" : " low") + " on average (" + std::to_string(g.rows) + " rows" +
              (g.rows < kMinBandRows ? ", fewer than 5" : "") + ").\n";
  };
  check("throughput", r.overall);
  check("peak memory", r.memory);
  for (const auto& g : r.groups) {
    for (const auto& s : g.throughput) check("throughput, " + g.dimension, s);
    for (const auto& s : g.memory) check("peak memory, " + g.dimension, s);
  }
  return biases.empty() ? "None above 8% in any group.\n" : biases;
}

std::string BandsTable(const std::vector<ErrorBand>& bands) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : bands)
    rows.push_back({b.kind, b.Group() + (b.rows < kMinBandRows ? " (fewer than 5 rows: not used)" : ""), std::to_string(b.rows),
                    F("%.1f%%", 100 * b.median_abs), F("%.1f%%", 100 * b.p90_abs), F("%+.1f%%", 100 * b.mean_signed),
                    F("%.1f%%", 100 * b.p90_under)});
  return RenderTable({"kind", "group", "rows", "median abs error", "p90 abs error", "mean signed error", "p90 under-prediction"},
                     rows, true);
}

std::string SkipReasons(const ValidationReport& r) {
  std::map<std::string, int> reasons;
  for (const auto& v : r.rows)
    if (!v.used) {
      std::string reason = v.reason;
      if (reason.rfind("same run as line", 0) == 0) reason = "same run reported under another metric";
      ++reasons[reason];
    }
  std::vector<std::vector<std::string>> rs;
  for (const auto& [k, n] : reasons) rs.push_back({k, std::to_string(n)});
  return RenderTable({"reason", "rows"}, rs, true);
}

std::string PredictedRows(const ValidationReport& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& v : r.rows) {
    if (!v.used) continue;
    const Job& j = v.row.job;
    rows.push_back({RowId(v.row), v.row.model_name, j.cluster.gpu, std::to_string(j.cluster.num_gpus),
                    std::to_string(j.training.seq_len), std::to_string(j.training.micro_batch), ToString(j.training.precision),
                    ToString(j.training.recompute), v.framework, v.method, v.fold, v.held_out ? "held out" : "fit", v.basis,
                    Value(v, v.measured_tokens_per_s_per_gpu), Value(v, v.predicted_tokens_per_s_per_gpu), F("%+.1f%%", 100 * v.error)});
    if (r.has_loso) rows.back().push_back(v.loso ? F("%+.1f%%", 100 * v.loso_error) : "no fit");
  }
  std::vector<std::string> header = {"row", "model", "gpu", "gpus", "seq", "micro-batch", "precision", "recompute", "framework",
                                     "method", "source", "split", "compared", "measured", "predicted", "error"};
  if (r.has_loso) header.push_back("LOSO error");
  return RenderTable(header, rows, true);
}
}  // namespace

std::string ValidationToMarkdown(const ValidationReport& r, const std::string& input, const Calibration& cal) {
  std::string out = "# Validation: predictions vs published measurements\n\n";
  out += "Generated by `gpuplan validate " + input + "` (gpuplan " + kVersion + ", model fingerprint " +
         ModelFingerprint() + ": a hash of src/model and data/ at build time, data/error_bands.csv excluded); do not edit by "
         "hand — rerun `bash scripts/validate.sh` after changing src/model or data/.\n\n";
  out += "Each usable row of the input is predicted with the same code and data for every row (no per-row "
         "special cases). Throughput rows compare tokens/s per GPU; rows reported as MFU, model TFLOP/s, "
         "global tokens/s, iteration time (global batch x seq_len per iteration), optimizer-step time (global batch x "
         "tokens per sample per step) or epoch time (samples per epoch x tokens per sample) are converted to tokens/s per "
         "GPU with the source's own convention (docs/model/compute.md §1). Where samples are shorter than seq_len "
         "(seq_len_kind max_cap or variable, or padded steps) the tokens counted are the non-padding ones at the stated "
         "mean sample length, compared with the predicted useful tokens/s; such a row without a stated mean is skipped, "
         "never read as fixed-length. Peak-memory rows compare measured_value x unit (GB = 1e9 bytes, GiB = 2^30) with "
         "the predicted statistic the source measured: reserved (torch max_memory_reserved), allocated "
         "(max_memory_allocated) or device total (nvidia-smi); a source that does not name it is compared with reserved "
         "and marked so. A run reported under several metrics is counted once.\n\n";
  if (r.has_loso)
    out += "The error that matters is on sources the constants were never fitted to: with the per-source fits "
         "(`--loso data/loso_fits.csv`, written by `python3 tools/fit_runs.py --loso data/loso_fits.csv`), every row is "
         "predicted a second time with the calibrated constants chosen on every OTHER source, and the page leads with those "
         "errors; the error bands come from them. The summaries after it are in-sample (the constants in force, fitted on "
         "every source).\n\n";
  else
    out += "Every row is predicted with the constants in force (data/); no leave-one-source-out fits were given (--loso).\n\n";
  if (r.has_loso) out += LosoSection(r);
  out += "## Summary\n\n" + SummaryTable({r.overall}, true) + "\n";
  if (r.memory.rows > 0) out += "Peak memory rows:\n\n" + SummaryTable({r.memory}, true) + "\n" + MemorySidesMarkdown(r);
  out += "## Train/test split within sources\n\nThe split: " + SplitRule() + ". It holds out a third of every source's "
         "configurations, so a constant fitted to a source's quirks passes it; kept for comparison with the "
         "leave-one-source-out table above, which holds out whole sources:\n\n" +
         SummaryTable(SplitRows(r), true) + "\nBy framework:\n\nThroughput:\n\n" + SummaryTable(r.split_by_framework.throughput, true) + "\nPeak memory:\n\n" +
         SummaryTable(r.split_by_framework.memory, true) + "\n";
  out += "## Error by group\n\nEvery group is listed; groups with fewer than 5 rows are marked (their statistics are "
         "not used as error bands).\n\n";
  for (const auto& g : r.groups) {
    out += "### By " + g.dimension + "\n\nThroughput:\n\n" + SummaryTable(g.throughput, true) + "\n";
    if (!g.memory.empty()) out += "Peak memory:\n\n" + SummaryTable(g.memory, true) + "\n";
  }
  out += "### By GPU (throughput)\n\n" + SummaryTable(r.by_gpu, true) + "\n";
  out += "## Known biases\n\nEvery group above (any dimension, throughput or memory) whose mean signed error exceeds 8%:\n\n" +
         KnownBiases(r) +
         "\nThe efficiency constants (data/efficiency.csv, data/frameworks.csv) are fitted with tools/fit_runs.py, once on "
         "every source and once without each source (\"Leave-one-source-out\" above).\n\n";
  out += std::string("## Error bands\n\ndata/error_bands.csv (written with this page) from the ") +
         (r.has_loso ? "leave-one-source-out errors (each row predicted with the constants fitted without its source)"
                     : "in-sample errors (no per-source fits were given: `--loso`)") +
         ": the error of every group at four levels, "
         "framework x GPU family x method, framework x method, method, all runs. `gpuplan estimate` and `gpuplan plan` "
         "print the p90 of the nearest group with at least 5 runs as the expected error. The planner's default "
         "memory headroom is that memory band's p90 under-prediction (p90 of max(0, -error)): a run predicted at p "
         "needs headroom h >= -error to fit, so it holds 9 in 10 of the group's runs, and a group the model "
         "over-predicts needs little; it is capped at 50%.\n\n" +
         BandsTable(r.bands) + "\n";
  out += "## Rows not predicted, by reason\n\n" + SkipReasons(r);
  out += "\n## Every predicted row\n\n" + PredictedRows(r);
  out += "\n## Constants in force\n\nFrom data/calibration.csv and data/efficiency.csv (sources and fit reports there).\n\n";
  std::vector<std::vector<std::string>> consts;
  for (const auto& [k, v] : cal.values()) consts.push_back({k, F("%.6g", v)});
  out += RenderTable({"key", "value"}, consts, true);
  return out;
}

}  // namespace gpuplan
