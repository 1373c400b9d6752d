// The serving engines' launch lines and the files that run them (docs/export.md "Serving"): vllm serve,
// python3 -m sglang.launch_server, trtllm-serve; serve.sh and a Kubernetes Deployment + Service.
// Flag names are facts of each engine's source (data/engine_keys/{vllm,sglang,tensorrt_llm}.csv);
// values that depend on the weight format, the KV dtype, images and ports are data/serving_flags.csv.
#include <algorithm>
#include <cassert>
#include <cstdio>
#include <map>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/quote.h"
#include "gpuplan/serving_export.h"

namespace gpuplan {

namespace {
constexpr const char* kModelWord = "$MODEL";  // the checkpoint the user serves (serve.sh: MODEL=...)

// data/serving_flags.csv keyed by "engine:setting:value"; built-in data, checked by its tests.
const std::map<std::string, ServingFlag>& FlagTable() {
  static const std::map<std::string, ServingFlag> table = [] {
    std::map<std::string, ServingFlag> t;
    auto csv = ParseCsv(std::string(EmbeddedData("serving_flags.csv")), "data/serving_flags.csv");
    assert(csv.ok() && "data/serving_flags.csv is built in");
    if (!csv.ok()) return t;
    for (const auto& row : csv->rows) {
      CsvRecord r(*csv, row);
      t[r.Str("engine") + ":" + r.Str("setting") + ":" + r.Str("value")] = {r.Str("flag"), r.Str("flag_value"), r.Str("notes")};
    }
    return t;
  }();
  return table;
}

std::string Int(int64_t v) { return std::to_string(v); }
std::string Frac(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

double MemoryFraction(const Job& job, const ServingEngineProfile& engine) {
  return job.serving.gpu_memory_utilization > 0 ? job.serving.gpu_memory_utilization : engine.memory_fraction_default;
}

// The weight format's and KV dtype's flags (data), appended to argv.
void QuantFlags(const std::string& engine, const Job& job, std::vector<std::string>& argv) {
  const auto w = FindServingFlag(engine, "weights", ToString(job.serving.weights));
  if (w && !w->flag.empty()) argv.insert(argv.end(), {w->flag, w->value});
  if (job.serving.kv_dtype == KvDtype::kFp8)
    if (const auto k = FindServingFlag(engine, "kv_dtype", "fp8"); k && !k->flag.empty()) argv.insert(argv.end(), {k->flag, k->value});
}

std::vector<std::string> VllmArgv(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine) {
  std::vector<std::string> a = {"vllm", "serve", kModelWord};
  if (job.parallel.tp > 1) a.insert(a.end(), {"--tensor-parallel-size", Int(job.parallel.tp)});
  if (job.parallel.pp > 1) a.insert(a.end(), {"--pipeline-parallel-size", Int(job.parallel.pp)});
  a.insert(a.end(), {"--max-model-len", Int(e.max_model_len), "--gpu-memory-utilization", Frac(MemoryFraction(job, engine)),
                     "--max-num-seqs", Int(e.max_num_seqs), "--max-num-batched-tokens", Int(e.max_num_batched_tokens)});
  QuantFlags("vllm", job, a);
  return a;
}

std::vector<std::string> SglangArgv(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine) {
  std::vector<std::string> a = {"python3", "-m", "sglang.launch_server", "--model-path", kModelWord, "--host", "0.0.0.0"};
  if (job.parallel.tp > 1) a.insert(a.end(), {"--tp-size", Int(job.parallel.tp)});
  if (job.parallel.pp > 1) a.insert(a.end(), {"--pp-size", Int(job.parallel.pp)});
  a.insert(a.end(), {"--mem-fraction-static", Frac(MemoryFraction(job, engine)), "--context-length", Int(e.max_model_len),
                     "--max-running-requests", Int(e.max_num_seqs), "--chunked-prefill-size", Int(e.max_num_batched_tokens)});
  QuantFlags("sglang", job, a);
  return a;
}

std::vector<std::string> TrtllmArgv(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine) {
  std::vector<std::string> a = {"trtllm-serve", kModelWord, "--host", "0.0.0.0"};
  if (job.parallel.tp > 1) a.insert(a.end(), {"--tp_size", Int(job.parallel.tp)});
  if (job.parallel.pp > 1) a.insert(a.end(), {"--pp_size", Int(job.parallel.pp)});
  a.insert(a.end(), {"--max_batch_size", Int(e.max_num_seqs), "--max_num_tokens", Int(e.max_num_batched_tokens), "--max_seq_len",
                     Int(e.max_model_len), "--kv_cache_free_gpu_memory_fraction", Frac(MemoryFraction(job, engine))});
  QuantFlags("tensorrt-llm", job, a);
  return a;
}

// One shell word per argument; the model stays a double-quoted variable.
std::string JoinShell(const std::vector<std::string>& argv, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string w = argv[i] == kModelWord ? "\"$MODEL\"" : ShellWord(argv[i]);
    s += (i == 0 ? "" : (argv[i].rfind("--", 0) == 0 ? sep : " ")) + w;
  }
  return s;
}

std::string EngineKey(const ServingEngineProfile& engine) { return engine.engine; }

// MODEL's default: the checkpoint the shape came from (a preset's Hugging Face repo, a config.json's
// directory), else the model's name for the user to replace.
std::string ModelDefault(const Job& job) { return job.arch.checkpoint.empty() ? job.arch.name : job.arch.checkpoint; }

std::string Image(const ServingEngineProfile& engine, const ServingExportOptions& o) {
  if (!o.image.empty()) return o.image;
  const auto row = FindServingFlag(EngineKey(engine), "image", "default");
  if (!row) return "REPLACE-WITH-YOUR-" + engine.engine + "-IMAGE";
  std::string version = engine.version;
  if (engine.engine == "vllm" && std::count(version.begin(), version.end(), '.') == 1) version += ".0";
  std::string image = row->value;
  if (const size_t at = image.find("{version}"); at != std::string::npos) image.replace(at, 9, version);
  return image;
}

int64_t Port(const ServingEngineProfile& engine) {
  const auto row = FindServingFlag(EngineKey(engine), "port", "default");
  return row ? std::stoll(row->value) : 8000;
}

std::string Header(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine, const ServingExportOptions& o) {
  char buf[400];
  std::string h = "# gpuplan serving export: " + CommentLine(job.arch.name) + " on " + CommentLine(job.cluster.gpu) + ", tp " +
                  Int(job.parallel.tp) + (job.parallel.pp > 1 ? " pp " + Int(job.parallel.pp) : "") + ", " + ToString(job.serving.weights) +
                  " weights, KV " + ToString(job.serving.kv_dtype) + ", " + CommentLine(engine.engine) + " " + CommentLine(engine.version) + "\n";
  if (!o.origin.empty()) h += "# from " + CommentLine(o.origin) + "\n";
  std::snprintf(buf, sizeof buf, "# expected per replica: KV cache %lld tokens, TTFT p90 %.0f ms, TPOT p90 %.1f ms, %.0f output tokens/s\n",
                static_cast<long long>(e.kv_capacity_tokens), e.ttft_s.p90 * 1e3, e.tpot_s.p90 * 1e3,
                e.output_tokens_per_s / static_cast<double>(std::max<int64_t>(1, e.replicas)));
  h += buf;
  if (e.replicas > 1) h += "# run " + Int(e.replicas) + " replicas of this server behind a load balancer\n";
  return h;
}

std::string ModelNote(const Job& job, const ServingEngineProfile& engine) {
  std::string s = "# MODEL: the Hugging Face repo or local path of the checkpoint";
  if (const auto w = FindServingFlag(EngineKey(engine), "weights", ToString(job.serving.weights)); w && !w->notes.empty())
    s += " (" + CommentLine(w->notes) + ")";
  return s + "\n";
}

// TensorRT-LLM takes the KV dtype in the YAML file --extra_llm_api_options names.
std::vector<Artifact> ExtraFiles(const Job& job, const ServingEngineProfile& engine) {
  if (engine.engine != "tensorrt-llm" || job.serving.kv_dtype != KvDtype::kFp8) return {};
  return {{"extra_llm_api_options.yaml", "kv_cache_config:\n  dtype: fp8\n", false}};
}

Artifact ServeScript(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine, const ServingExportOptions& o) {
  std::string s = "#!/usr/bin/env bash\n" + Header(job, e, engine, o) + ModelNote(job, engine) + "set -euo pipefail\n";
  s += "MODEL=\"${MODEL:-" + ShellDoubleQuoted(ModelDefault(job)) + "}\"\n";
  s += "exec " + JoinShell(ServingLaunchArgv(job, e, engine), " \\\n  ") + " \"$@\"\n";
  return {"serve.sh", s, true};
}

std::string YamlList(const std::vector<std::string>& items, const std::string& indent) {
  std::string s;
  for (const auto& i : items) s += indent + "- " + YamlScalar(i) + "\n";
  return s;
}

Result<Artifact> Manifest(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine, const ServingExportOptions& o) {
  if (job.parallel.tp * job.parallel.pp > job.cluster.gpus_per_node)
    return Status::BadInput({job.source, 0, "parallel.pp"}, "a replica spans " + Int(job.parallel.tp * job.parallel.pp) +
                                                                " GPUs, more than one node: a Deployment runs one pod per replica (use a LeaderWorkerSet)");
  std::vector<std::string> argv = ServingLaunchArgv(job, e, engine);
  for (auto& a : argv)
    if (a == kModelWord) a = "$(MODEL)";  // Kubernetes expands $(VAR) from the container's env
  const std::string name = DnsLabel(o.job_name);
  const int64_t port = Port(engine);
  const std::string gpus = Int(job.parallel.tp * job.parallel.pp);
  std::string y = Header(job, e, engine, o) + ModelNote(job, engine);
  y += "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n  labels:\n    app: " + name + "\nspec:\n";
  y += "  replicas: " + Int(std::max<int64_t>(1, e.replicas)) + "\n  selector:\n    matchLabels:\n      app: " + name + "\n";
  y += "  template:\n    metadata:\n      labels:\n        app: " + name + "\n    spec:\n      containers:\n      - name: " +
       DnsLabel(engine.engine) + "\n        image: " + YamlScalar(Image(engine, o)) + "\n";
  y += "        command:\n" + YamlList({argv.front()}, "        ") + "        args:\n" +
       YamlList(std::vector<std::string>(argv.begin() + 1, argv.end()), "        ");
  y += "        env:\n        - name: MODEL\n          value: " + YamlScalar(ModelDefault(job)) + "\n";
  y += "        ports:\n        - containerPort: " + Int(port) + "\n          name: http\n";
  y += "        resources:\n          limits:\n            nvidia.com/gpu: " + gpus + "\n";
  y += "        readinessProbe:\n          httpGet:\n            path: /health\n            port: " + Int(port) +
       "\n          initialDelaySeconds: 60\n          periodSeconds: 10\n";
  y += "        volumeMounts:\n        - name: shm\n          mountPath: /dev/shm\n";
  y += "      volumes:\n      - name: shm\n        emptyDir:\n          medium: Memory\n          sizeLimit: 16Gi\n";
  y += "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: " + name + "\nspec:\n  selector:\n    app: " + name +
       "\n  ports:\n  - name: http\n    port: " + Int(port) + "\n    targetPort: " + Int(port) + "\n";
  return Artifact{"deployment.yaml", y, false};
}
}  // namespace

std::string ToString(ServingExportFormat f) {
  switch (f) {
    case ServingExportFormat::kVllm: return "vllm";
    case ServingExportFormat::kSglang: return "sglang";
    case ServingExportFormat::kTensorrtLlm: return "tensorrt-llm";
    case ServingExportFormat::kKubernetes: return "kubernetes";
  }
  return "";
}

std::optional<ServingExportFormat> ParseServingExportFormat(const std::string& name) {
  for (auto f : {ServingExportFormat::kVllm, ServingExportFormat::kSglang, ServingExportFormat::kTensorrtLlm, ServingExportFormat::kKubernetes})
    if (ToString(f) == name) return f;
  return std::nullopt;
}

std::optional<ServingFlag> FindServingFlag(const std::string& engine, const std::string& setting, const std::string& value) {
  const auto& t = FlagTable();
  auto it = t.find(engine + ":" + setting + ":" + value);
  if (it == t.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ServingLaunchArgv(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine) {
  if (engine.engine == "sglang") return SglangArgv(job, e, engine);
  if (engine.engine == "tensorrt-llm") return TrtllmArgv(job, e, engine);
  return VllmArgv(job, e, engine);  // vllm, and generic (vLLM's flags name what the estimate assumed)
}

std::string ServingLaunchLine(const Job& job, const ServingEstimate& e, const ServingEngineProfile& engine) {
  // The checkpoint itself when the model names one (a preset's repo, a config.json's directory);
  // else "$MODEL" for the user to set.
  std::vector<std::string> argv = ServingLaunchArgv(job, e, engine);
  if (!job.arch.checkpoint.empty())
    for (std::string& a : argv)
      if (a == kModelWord) a = job.arch.checkpoint;
  return JoinShell(argv, " ");
}

Result<std::vector<Artifact>> ServingArtifacts(ServingExportFormat format, const Job& job, const ServingEstimate& e,
                                               const ServingEngineProfile& engine, const ServingExportOptions& options) {
  std::vector<Artifact> out = ExtraFiles(job, engine);
  if (format == ServingExportFormat::kKubernetes) {
    if (!out.empty())
      return Status::BadInput({job.source, 0, "serving.kv_dtype"},
                              "TensorRT-LLM takes an fp8 KV cache from a YAML file: export --to tensorrt-llm, or serve the KV cache at auto");
    auto m = Manifest(job, e, engine, options);
    if (!m.ok()) return m.status();
    out.push_back(*m);
    return out;
  }
  const std::string want = format == ServingExportFormat::kVllm ? "vllm" : format == ServingExportFormat::kSglang ? "sglang" : "tensorrt-llm";
  if (engine.engine != want && !(want == "vllm" && engine.engine == "generic"))
    return Status::BadInput({job.source, 0, "serving.engine"},
                            "the setup was estimated for " + engine.engine + ": export --to " + engine.engine + " or set serving.engine: " + want);
  out.push_back(ServeScript(job, e, engine, options));
  return out;
}

}  // namespace gpuplan
