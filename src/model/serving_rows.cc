// Reading served runs into serving jobs (docs/validation-rows.md "Serving: how rows are read"): the
// file kind by its header, the model by its Hugging Face id (preset, else a config.json folder),
// the GPU by gpu_id or its name, the weights from the precision column, the load as the source
// applied it. A row that cannot be modelled keeps its reason; none is dropped silently.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/serving_validation.h"
#include "gpuplan/strings.h"
#include "gpuplan/validation_rows.h"

namespace gpuplan {

namespace {

bool Has(const std::string& hay, const std::string& needle) { return Lower(hay).find(needle) != std::string::npos; }

bool HasColumns(const std::vector<std::string>& header, std::initializer_list<const char*> cols) {
  for (const char* c : cols)
    if (std::find(header.begin(), header.end(), c) == header.end()) return false;
  return true;
}

// The leading number of a cell ("128", "1 (first token only)", "batch size 64" -> 64 with `after`).
std::optional<double> NumberIn(const std::string& text, const std::string& after = "") {
  size_t p = 0;
  if (!after.empty()) {
    p = Lower(text).find(after);
    if (p == std::string::npos) return std::nullopt;
    p += after.size();
  }
  while (p < text.size() && text[p] == ' ') ++p;
  size_t e = p;
  while (e < text.size() && (std::isdigit(static_cast<unsigned char>(text[e])) || text[e] == '.')) ++e;
  if (e == p) return std::nullopt;
  auto v = ParseDecimal(text.substr(p, e - p), {});
  if (!v.ok() || !std::isfinite(*v)) return std::nullopt;
  return *v;
}

// "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8" -> "qwen3-235b-a22b": the org, the text after " (",
// and the checkpoint suffixes (instruct/chat tunes, dates, quantisation) that keep the shape.
std::string ModelKey(const std::string& text) {
  std::string s = Lower(text.substr(0, text.find(" (")));
  if (auto slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
  static const char* kSuffixes[] = {"-instruct", "-chat", "-hf", "-fp8", "-fp4", "-awq", "-w8a8", "-2507", "-0528",
                                    "-dynamic", "-vision"};
  for (bool again = true; again;) {
    again = false;
    for (const char* suf : kSuffixes) {
      const std::string x = suf;
      if (s.size() > x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) s.resize(s.size() - x.size()), again = true;
    }
  }
  return s;
}

// A name compared with config file names: without '-', '_', ' ' and the "moe" family word.
std::string Squash(std::string s) {
  s = Lower(s);
  for (size_t p; (p = s.find("moe")) != std::string::npos;) s.erase(p, 3);
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '-' || c == '_' || c == ' '; }), s.end());
  return s;
}

// A parameter-count word: "671b", "0.6b", "1t", "16e", "a22b" (digits, an optional fraction, then
// b/m/t/e; active counts lead with 'a').
bool IsSizeWord(const std::string& w) {
  size_t p = !w.empty() && w[0] == 'a' ? 1 : 0;
  const size_t digits = p;
  while (p < w.size() && (std::isdigit(static_cast<unsigned char>(w[p])) || w[p] == '.')) ++p;
  return p > digits && p + 1 == w.size() && std::string("bmte").find(w[p]) != std::string::npos;
}

// The name without its size words ("deepseek-r1-671b" -> "deepseek-r1"), split at '-', '_', ' '.
std::string WithoutSizes(const std::string& name) {
  std::string out, word;
  auto flush = [&] {
    if (!word.empty() && !IsSizeWord(word)) out += (out.empty() ? "" : "-") + word;
    word.clear();
  };
  for (char c : Lower(name)) {
    if (c == '-' || c == '_' || c == ' ') flush();
    else word += c;
  }
  flush();
  return out;
}

// The config.json for a model key in the option folders: the file whose squashed name is the key's
// ("llama-3.1-8b" for llama3.1-8b.json), else, for a key that names no size ("deepseek-r1"), the
// one file whose name is the key plus size words ("deepseek-r1-671b.json"); two such files (qwen3
// in several sizes) say nothing about which was served, and none is taken.
std::string FindConfigFile(const std::string& key, const ServingRowOptions& opt) {
  const std::string want = Squash(key);
  const bool sized_key = Squash(WithoutSizes(key)) != want;
  std::vector<std::string> sized;
  for (const auto& dir : opt.model_config_dirs) {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
      if (f.path().extension() != ".json") continue;
      const std::string stem = f.path().stem().string();
      if (Squash(stem) == want) return f.path().string();
      if (!sized_key && Squash(WithoutSizes(stem)) == want) sized.push_back(f.path().string());
    }
  }
  return sized.size() == 1 ? sized.front() : "";
}

// The model of a row: a preset ("llama-3.1-8b", "Llama-2-7B" read as llama-2-7b), else a config.json
// the option folders hold for it (FindConfigFile).
Result<Arch> ResolveModel(const std::string& text, const ServingRowOptions& opt) {
  const std::string key = ModelKey(text);
  if (auto a = FindPreset(key); a.ok()) return a;
  const std::string found = FindConfigFile(key, opt);
  if (found.empty()) return Status::BadInput({}, "model '" + text + "' has no preset (" + key + ") and no config.json was given for it");
  auto a = ArchFromHfConfig(found);
  if (!a.ok()) return Status::BadInput({}, "model '" + text + "': " + a.status().reason());
  a->name = key;
  return a;
}

std::string EngineName(const std::string& text) {
  const std::string e = Lower(text);
  if (e.find("sglang") != std::string::npos) return "sglang";
  if (e.find("tensorrt") != std::string::npos || e.find("trt") != std::string::npos) return "tensorrt-llm";
  if (e.find("vllm") != std::string::npos) return "vllm";
  return "generic";  // MindIE and other engines without a profile
}

// "v0.11.0" -> "0.11"; "" when the text has no version.
std::string EngineVersion(const std::string& text) {
  std::string s = Lower(text);
  size_t p = 0;
  while (p < s.size() && !std::isdigit(static_cast<unsigned char>(s[p]))) ++p;
  size_t dot = s.find('.', p);
  if (p == s.size() || dot == std::string::npos) return "";
  size_t e = dot + 1;
  while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
  return s.substr(p, e - p);
}

// The stored weight format from the precision column: FP8 (W8A8), INT8 W8A8, AWQ/GPTQ 4-bit, FP4;
// gpt-oss's MXFP4 experts run as 4-bit weights (FP4 where the GPU has it, else a weight-only 4-bit
// kernel, read as int4-awq: 4.25 vs 4.16 bits per weight).
WeightFormat WeightsFrom(const std::string& precision, const std::string& model, const GpuSpec& gpu) {
  const std::string p = Lower(precision + " " + model);
  if (Has(p, "mxfp4") || Has(p, "nvfp4") || Has(p, "fp4")) return WeightFormatProblem(WeightFormat::kFp4, gpu).empty() ? WeightFormat::kFp4 : WeightFormat::kInt4Awq;
  if (Has(p, "awq")) return WeightFormat::kInt4Awq;
  if (Has(p, "gptq")) return WeightFormat::kInt4Gptq;
  if (Has(p, "w8a8") || Has(p, "int8")) return WeightFormat::kInt8;
  if (Has(p, "fp8")) return WeightFormat::kFp8;
  if (Lower(precision).rfind("fp16", 0) == 0 || !gpu.bf16_supported) return WeightFormat::kFp16;
  return WeightFormat::kBf16;
}

// The value after a launch flag ("--max-num-seqs 256", "--max-num-seqs=256"), or "".
std::string FlagValue(const std::string& cmd, const std::string& flag) {
  for (size_t p = cmd.find(flag); p != std::string::npos; p = cmd.find(flag, p + 1)) {
    size_t v = p + flag.size();
    if (v < cmd.size() && (cmd[v] == ' ' || cmd[v] == '=')) {
      while (v < cmd.size() && (cmd[v] == ' ' || cmd[v] == '=')) ++v;
      size_t e = v;
      while (e < cmd.size() && cmd[e] != ' ') ++e;
      return cmd.substr(v, e - v);
    }
  }
  return "";
}

// The launch command's serving flags (vLLM, SGLang, TensorRT-LLM spellings) into the job.
void ApplyServeCommand(const std::string& cmd, Job& j) {
  ServingSpec& s = j.serving;
  auto num = [&](std::initializer_list<const char*> flags) -> double {
    for (const char* f : flags)
      if (auto v = NumberIn(FlagValue(cmd, f)); v) return *v;
    return 0;
  };
  if (double v = num({"--max-num-seqs", "--max-running-requests", "--max_batch_size"}); v >= 1) s.max_num_seqs = static_cast<int64_t>(v);
  if (double v = num({"--max-num-batched-tokens", "--chunked-prefill-size", "--max_num_tokens"}); v >= 1)
    s.max_num_batched_tokens = static_cast<int64_t>(v);
  if (double v = num({"--gpu-memory-utilization", "--mem-fraction-static", "--kv_cache_free_gpu_memory_fraction"}); v > 0 && v <= 1)
    s.gpu_memory_utilization = v;
  if (double v = num({"--max-model-len", "--context-length", "--max_seq_len"}); v >= 1) s.max_model_len = static_cast<int64_t>(v);
  if (Has(FlagValue(cmd, "--kv-cache-dtype"), "fp8")) s.kv_dtype = KvDtype::kFp8;
}

// The row's flags that make it not comparable as a whole (docs/validation-rows.md "Serving: how rows are read").
std::string FlagProblem(const std::string& flags) {
  if (Has(flags, "spec_decode")) return "speculative decoding (EAGLE/MTP) is not modelled: TPOT below the bandwidth floor";
  if (Has(flags, "pd_disagg")) return "prefill/decode disaggregation is not modelled";
  if (Has(flags, "vision_model")) return "vision-language model (its vision tower is not counted)";
  return "";
}

// The job all rows share: model, GPU, layout; the serving section is filled by the caller.
std::string FillJob(ServingRunRow& m, const Catalog& catalog, const ServingRowOptions& opt, const std::string& gpu_id,
                    int64_t num_gpus, int64_t tp, int64_t pp) {
  auto arch = ResolveModel(m.model_text, opt);
  if (!arch.ok()) return arch.status().reason();
  Job& j = m.job;
  j.arch = *arch;
  auto gpu = catalog.FindGpu(gpu_id);
  if (gpu_id.empty() || !gpu.ok()) return "GPU '" + m.gpu_text + "' is not in the catalog";
  j.cluster.gpu = gpu->id;
  tp = std::max<int64_t>(1, tp), pp = std::max<int64_t>(1, pp);
  num_gpus = std::max<int64_t>(num_gpus, 1);
  if (num_gpus < tp * pp) return "num_gpus " + std::to_string(num_gpus) + " is below tp x pp (" + std::to_string(tp * pp) + ")";
  j.parallel.tp = tp, j.parallel.pp = pp, j.parallel.dp = num_gpus / (tp * pp);
  j.cluster.num_gpus = num_gpus;
  j.cluster.gpus_per_node = std::max<int64_t>(8, tp);
  j.serving.engine = EngineName(m.engine_text);
  j.serving.weights = WeightsFrom(m.precision_text, m.model_text, *gpu);
  if (Has(m.precision_text, "fp8_kv_cache") || Has(m.precision_text, "fp8 kv")) j.serving.kv_dtype = KvDtype::kFp8;
  // NVIDIA ModelOpt FP8/FP4 checkpoints quantise the KV cache to fp8 too (their hf_quant_config.json
  // kv_cache_quant_algo FP8), and TensorRT-LLM runs the cache in it.
  if (Has(m.model_text, "modelopt") && j.serving.weights != WeightFormat::kBf16 && j.serving.weights != WeightFormat::kFp16)
    j.serving.kv_dtype = KvDtype::kFp8;
  return "";
}

// serving_runs.csv: latency (ms) and throughput columns -> measures in seconds and tokens/s.
void ReadWideMeasures(const CsvRecord& r, ServingRunRow& m) {
  static const std::pair<const char*, const char*> kCols[] = {
      {"ttft_mean_ms", "ttft_mean_s"}, {"ttft_p50_ms", "ttft_p50_s"}, {"ttft_p90_ms", "ttft_p90_s"},
      {"tpot_mean_ms", "tpot_mean_s"}, {"tpot_p50_ms", "tpot_p50_s"}, {"tpot_p90_ms", "tpot_p90_s"},
      {"itl_mean_ms", "itl_mean_s"},   {"e2el_mean_ms", "e2e_latency_mean_s"},
      {"output_tokens_per_s", "output_tokens_per_s"}, {"output_tokens_per_s_per_gpu", "output_tokens_per_s_per_gpu"},
      {"requests_per_s", "requests_per_s"}};
  for (const auto& [col, metric] : kCols) {
    auto v = r.OptNumber(col, {0, 1e15, true});
    if (!v.ok()) { m.unreadable = v.status().ToString(); continue; }
    if (!v->has_value()) continue;
    const bool ms = std::string(col).find("_ms") != std::string::npos;
    ServingMeasure x{metric, **v * (ms ? 1e-3 : 1.0), ""};
    if (Has(m.flags, "ttft_unreliable") && x.metric.rfind("ttft", 0) == 0)
      x.skip_reason = "TTFT the source marks unreliable (not rising with the prompt: prefix-cache hits)";
    m.measures.push_back(x);
  }
}

ServingRunRow ReadWideRow(const CsvTable& t, const CsvRow& row, const Catalog& catalog, const ServingRowOptions& opt) {
  CsvRecord r(t, row);
  ServingRunRow m;
  m.line = row.line;
  m.id = r.Str("id"), m.source = r.Str("source"), m.fold = r.Str("source_group");
  m.engine_text = r.Str("engine") + " " + r.Str("engine_version");
  m.model_text = r.Str("model"), m.gpu_text = r.Str("gpu"), m.precision_text = r.Str("precision"), m.flags = r.Str("flags");
  m.dataset = r.Str("dataset");
  ReadWideMeasures(r, m);
  auto integer = [&](const char* col) -> int64_t {
    auto v = r.OptInteger(col, 0, 1'000'000);
    if (!v.ok()) { m.unreadable = v.status().ToString(); return -1; }
    return v->value_or(0);
  };
  const int64_t num_gpus = integer("num_gpus"), tp = integer("tp"), pp = integer("pp");
  const auto in = NumberIn(r.Str("input_len")), out = NumberIn(r.Str("output_len"));
  if (!m.unreadable.empty()) { m.skip_reason = "unreadable cell: " + m.unreadable; return m; }
  if (std::string why = FlagProblem(m.flags); !why.empty()) { m.skip_reason = why; return m; }
  if (!in || !out || *in < 1 || *out < 1) { m.skip_reason = "input/output lengths not stated as numbers"; return m; }
  if (std::string why = FillJob(m, catalog, opt, r.Str("gpu_id"), num_gpus, tp, pp); !why.empty()) { m.skip_reason = why; return m; }
  ServingSpec& s = m.job.serving;
  s.engine_version = EngineVersion(r.Str("engine_version"));
  s.input_len = *in, s.output_len = *out;
  ApplyServeCommand(r.Str("serve_command"), m.job);
  const auto conc = NumberIn(r.Str("max_concurrency"));
  const std::string rate = Lower(r.Str("request_rate"));
  m.num_requests = static_cast<int64_t>(NumberIn(r.Str("num_requests")).value_or(0));
  if (conc && *conc >= 1) {
    m.scenario = ServingScenario::kConcurrency;
    s.load = ServingLoad::kConcurrency, s.concurrency = *conc;
  } else if (rate == "inf" && m.num_requests > 0) {
    // S§7 a burst: every request at t=0, simulated step by step through the engine's slots.
    m.scenario = ServingScenario::kBurst;
    s.load = ServingLoad::kNumRequests, s.num_requests = m.num_requests;
  } else if (auto qps = NumberIn(rate); qps && *qps > 0) {
    m.scenario = ServingScenario::kRequestRate;
    s.load = ServingLoad::kRequestRate, s.request_rate = *qps;
  } else {
    m.skip_reason = "the load (concurrency, request rate or burst) is not stated";
    return m;
  }
  m.usable = true;
  return m;
}

// inference.csv: one metric per row, in its unit.
std::optional<ServingMeasure> LongMeasure(const std::string& metric, double v, int64_t tp_pp, const std::string& notes) {
  const std::string k = Lower(metric);
  auto s = [&](const char* name) { return ServingMeasure{name, v * 1e-3, ""}; };
  if (k == "ttft_mean_ms" || k == "first_token_latency_ms") return s("ttft_mean_s");
  if (k == "ttft_median_ms") return s("ttft_p50_s");
  if (k == "itl_mean_ms") return s("itl_mean_s");
  if (k == "itl_median_ms") return s("itl_p50_s");
  if (k == "e2e_latency_mean_ms") return s("e2e_latency_mean_s");
  if (k == "requests_per_s") return ServingMeasure{"requests_per_s", v, ""};
  if (k == "output_tokens_per_s_total") return ServingMeasure{"output_tokens_per_s", v, ""};
  if (k == "output_tokens_per_s_per_gpu") return ServingMeasure{"output_tokens_per_s_per_gpu", v, ""};
  if (k == "output_tokens_per_s") {
    // "doc does not say per-GPU or total": the same number on one GPU, ambiguous on several.
    if (tp_pp == 1) return ServingMeasure{"output_tokens_per_s", v, ""};
    return ServingMeasure{"output_tokens_per_s", v, "output tokens/s on " + std::to_string(tp_pp) +
                                                        " GPUs, per GPU or total not stated (" + notes.substr(0, 40) + ")"};
  }
  return std::nullopt;
}

ServingRunRow ReadLongRow(const CsvTable& t, const CsvRow& row, const Catalog& catalog, const ServingRowOptions& opt) {
  CsvRecord r(t, row);
  ServingRunRow m;
  m.line = row.line;
  m.source = r.Str("source");
  m.fold = LosoFold(m.source.rfind("http", 0) == 0 ? m.source : "github:" + m.source);
  m.id = "line " + std::to_string(row.line);
  m.engine_text = r.Str("engine") + " " + r.Str("engine_version");
  m.model_text = r.Str("model"), m.gpu_text = r.Str("gpu"), m.precision_text = r.Str("precision");
  auto value = r.OptNumber("value", {0, 1e15, true});
  if (!value.ok()) { m.unreadable = value.status().ToString(); m.skip_reason = "unreadable cell: " + m.unreadable; return m; }
  auto integer = [&](const char* col) { return static_cast<int64_t>(NumberIn(r.Str(col)).value_or(1)); };
  const int64_t num_gpus = integer("num_gpus"), tp = integer("tp"), pp = integer("pp");
  const auto measure = value->has_value() ? LongMeasure(r.Str("metric"), **value, tp * pp, r.Str("notes")) : std::nullopt;
  if (!measure) { m.skip_reason = "metric '" + r.Str("metric") + "' is not compared (a percentile the model does not give, or no value)"; return m; }
  m.measures.push_back(*measure);
  const auto in = NumberIn(r.Str("input_len")), out = NumberIn(r.Str("output_len"));
  if (!in || !out || *in < 1 || *out < 1) { m.skip_reason = "input/output lengths not stated as numbers (a dataset's lengths)"; return m; }
  const auto gpu = MatchGpuName(catalog, m.gpu_text);
  if (std::string why = FillJob(m, catalog, opt, gpu.value_or(""), num_gpus, tp, pp); !why.empty()) { m.skip_reason = why; return m; }
  ServingSpec& s = m.job.serving;
  s.engine_version = EngineVersion(r.Str("engine_version"));
  s.input_len = *in, s.output_len = *out;
  const std::string load = Lower(r.Str("concurrency_or_rate") + " " + r.Str("batch_limit"));
  if (auto qps = NumberIn(load, "poisson arrivals, "); qps) {
    m.scenario = ServingScenario::kRequestRate, s.load = ServingLoad::kRequestRate, s.request_rate = *qps;
  } else if (auto b = NumberIn(load, "batch size"); b && *b >= 1) {
    // A static batch (gptSessionBenchmark, vLLM's latency test): b sequences run together.
    m.scenario = ServingScenario::kConcurrency, s.load = ServingLoad::kConcurrency, s.concurrency = *b;
    m.engine_only = true, s.frontend = false;
    s.max_num_seqs = std::max<int64_t>(s.max_num_seqs, static_cast<int64_t>(*b));
  } else if (Has(load, "infinite request rate") || Has(load, "max-throughput") || Has(load, "all requests at once")) {
    // S§7 offline: the stated request count simulated step by step, else the steady state.
    m.scenario = ServingScenario::kOffline, s.load = ServingLoad::kMaxThroughput;
    m.engine_only = true, s.frontend = false;
    m.num_requests = static_cast<int64_t>(NumberIn(r.Str("notes"), "num_requests=").value_or(0));
    if (m.num_requests > 0) s.load = ServingLoad::kNumRequests, s.num_requests = m.num_requests;
  } else {
    m.skip_reason = "the load '" + r.Str("concurrency_or_rate") + "' is not read";
    return m;
  }
  m.usable = true;
  return m;
}

}  // namespace

std::string ToString(ServingScenario s) {
  switch (s) {
    case ServingScenario::kConcurrency: return "concurrency";
    case ServingScenario::kBurst: return "burst";
    case ServingScenario::kOffline: return "offline";
    case ServingScenario::kRequestRate: return "request_rate";
  }
  return "?";
}

ServingFileKind DetectServingFile(const std::vector<std::string>& header) {
  if (HasColumns(header, {"id", "source_group", "engine", "model", "gpu_id", "tp", "input_len", "output_len", "ttft_mean_ms",
                          "tpot_mean_ms"}))
    return ServingFileKind::kServingRuns;
  if (HasColumns(header, {"source", "engine", "model", "gpu", "tp", "input_len", "output_len", "concurrency_or_rate", "metric",
                          "value", "unit"}))
    return ServingFileKind::kInferenceTable;
  return ServingFileKind::kNone;
}

ServingFileKind DetectServingFile(const std::string& path) {
  auto t = ReadCsvFile(path);
  if (!t.ok()) return ServingFileKind::kNone;
  return DetectServingFile(t->header);
}

Result<std::vector<ServingRunRow>> ReadServingRows(const std::string& path, const Catalog& catalog,
                                                   const ServingRowOptions& options) {
  auto t = ReadCsvFile(path);
  if (!t.ok()) return t.status();
  const ServingFileKind kind = DetectServingFile(t->header);
  if (kind == ServingFileKind::kNone)
    return Status::BadInput({path, 1, ""}, "not a serving file: expected the serving_runs.csv columns (id, source_group, "
                                           "..., ttft_mean_ms, tpot_mean_ms) or the inference.csv columns (..., metric, value, unit)");
  std::vector<ServingRunRow> out;
  for (const auto& row : t->rows) {
    ServingRunRow m = kind == ServingFileKind::kServingRuns ? ReadWideRow(*t, row, catalog, options)
                                                            : ReadLongRow(*t, row, catalog, options);
    m.file = path;
    if (!m.unreadable.empty() && m.unreadable.find(path) == std::string::npos) m.unreadable = path + ": " + m.unreadable;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace gpuplan
