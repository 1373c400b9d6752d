// The job written back as a job file: what `gpuplan import` prints, what each `plan --json` row
// carries ("job"), and what export reads a PLAN.json row back from. ParseJobText(JobToYaml(job))
// gives the same job on every key written (tests/unit/job_writer_test.cc).
#include <charconv>
#include <map>

#include "gpuplan/arch.h"
#include "gpuplan/job.h"
#include "gpuplan/job_keys.h"

namespace gpuplan {

namespace {

std::string Num(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back to the same double
  return std::string(buf, r.ptr);
}
std::string Int(int64_t v) { return std::to_string(v); }
std::string Bool(bool v) { return v ? "true" : "false"; }

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::string FusedOps(int bits) {
  std::vector<std::string> ops;
  if (bits & kFusedNorm) ops.push_back("norm");
  if (bits & kFusedRope) ops.push_back("rope");
  if (bits & kFusedAct) ops.push_back("act");
  if (bits & kFusedLoss) ops.push_back("loss");
  return ops.empty() ? "none" : Join(ops);
}

// Every shape field the job keys can carry, equal (a preset is written by its name).
bool SameShape(const Arch& a, const Arch& b) {
  return a.layers == b.layers && a.hidden == b.hidden && a.heads == b.heads && a.KvHeads() == b.KvHeads() &&
         a.HeadDim() == b.HeadDim() && a.Ffn() == b.Ffn() && a.vocab == b.vocab && a.mlp == b.mlp && a.norm == b.norm &&
         a.norm_bias == b.norm_bias && a.linear_bias == b.linear_bias && a.qkv_bias == b.qkv_bias &&
         a.tied_embeddings == b.tied_embeddings && a.norms_per_layer == b.norms_per_layer && a.qk_norm == b.qk_norm &&
         a.position == b.position && a.max_positions == b.max_positions && a.experts == b.experts &&
         a.experts_per_token == b.experts_per_token && a.shared_experts == b.shared_experts &&
         a.moe_ffn_hidden == b.moe_ffn_hidden && a.dense_layers == b.dense_layers && a.router_bias == b.router_bias &&
         a.kv_lora_rank == b.kv_lora_rank && a.q_lora_rank == b.q_lora_rank && a.dropout == b.dropout &&
         a.params_override == b.params_override && a.rope_theta == b.rope_theta && a.norm_eps == b.norm_eps &&
         a.rope_scaling == b.rope_scaling && a.rope_factor == b.rope_factor &&
         a.rope_low_freq_factor == b.rope_low_freq_factor && a.rope_high_freq_factor == b.rope_high_freq_factor &&
         a.rope_original_max_positions == b.rope_original_max_positions && a.mtp_layers == b.mtp_layers;
}

// Rotary base, norm epsilon and rope scaling where they differ from the Arch defaults.
void RopeKeys(const Arch& a, std::map<std::string, std::string>& out) {
  const Arch d;
  if (a.rope_theta != d.rope_theta) out["model.rope_theta"] = Num(a.rope_theta);
  if (a.norm_eps != d.norm_eps) out["model.norm_eps"] = Num(a.norm_eps);
  if (a.rope_scaling == RopeScaling::kNone) return;
  out["model.rope_scaling"] = ToString(a.rope_scaling);
  if (a.rope_factor > 0) out["model.rope_factor"] = Num(a.rope_factor);
  if (a.rope_low_freq_factor > 0) out["model.rope_low_freq_factor"] = Num(a.rope_low_freq_factor);
  if (a.rope_high_freq_factor > 0) out["model.rope_high_freq_factor"] = Num(a.rope_high_freq_factor);
  if (a.rope_original_max_positions > 0) out["model.rope_original_max_positions"] = Int(a.rope_original_max_positions);
}

void ModelKeys(const Arch& a, std::map<std::string, std::string>& out) {
  if (auto preset = FindPreset(a.name); preset.ok() && SameShape(*preset, a)) {
    out["model.preset"] = a.name;
    return;
  }
  if (a.params_override > 0) {
    out["model.params"] = Num(a.params_override);
    return;
  }
  out["model.name"] = a.name.empty() ? "custom" : a.name;
  out["model.layers"] = Int(a.layers);
  out["model.hidden"] = Int(a.hidden);
  out["model.heads"] = Int(a.heads);
  out["model.kv_heads"] = Int(a.KvHeads());
  out["model.head_dim"] = Int(a.HeadDim());
  out["model.ffn_hidden"] = Int(a.Ffn());
  out["model.vocab"] = Int(a.vocab);
  out["model.mlp"] = ToString(a.mlp);
  out["model.norm"] = ToString(a.norm);
  out["model.norm_bias"] = Bool(a.norm_bias);
  out["model.linear_bias"] = Bool(a.linear_bias);
  out["model.qkv_bias"] = Bool(a.qkv_bias);
  out["model.tied_embeddings"] = Bool(a.tied_embeddings);
  out["model.position"] = ToString(a.position);
  if (a.max_positions > 0) out["model.max_positions"] = Int(a.max_positions);
  if (a.IsMoe()) {
    out["model.experts"] = Int(a.experts);
    out["model.experts_per_token"] = Int(a.experts_per_token);
    if (a.shared_experts > 0) out["model.shared_experts"] = Int(a.shared_experts);
    if (a.moe_ffn_hidden > 0) out["model.moe_ffn_hidden"] = Int(a.moe_ffn_hidden);
    if (a.dense_layers > 0) out["model.dense_layers"] = Int(a.dense_layers);
  }
  if (a.dropout) out["model.dropout"] = "true";
  if (a.mtp_layers > 0) out["model.mtp_layers"] = Int(a.mtp_layers);
  RopeKeys(a, out);
}

// The training keys: the batch and precision always, the rest where they differ from the default.
void TrainingKeys(const Job& job, std::map<std::string, std::string>& out) {
  const TrainingSpec& t = job.training;
  const TrainingSpec d;
  auto put = [&](const char* key, bool differs, const std::string& v) {
    if (differs || job.IsSet(key)) out[key] = v;
  };
  out["training.method"] = ToString(t.method);
  out["training.seq_len"] = Int(t.seq_len);
  out["training.micro_batch"] = Int(t.micro_batch);
  if (t.global_batch > 0) out["training.global_batch"] = Int(t.global_batch);
  out["training.precision"] = ToString(t.precision);
  out["training.recompute"] = ToString(t.recompute);
  if (t.samples > 0) {
    out["training.samples"] = Num(t.samples);
    put("training.epochs", t.epochs != d.epochs, Num(t.epochs));
    put("training.tokens_per_sample", t.tokens_per_sample != d.tokens_per_sample, Int(t.tokens_per_sample));
  } else if (t.tokens > 0) {
    out["training.tokens"] = Num(t.tokens);
  }
  put("training.optimizer", t.optimizer != d.optimizer, ToString(t.optimizer));
  put("training.flash_attention", t.flash_attention != d.flash_attention, Bool(t.flash_attention));
  put("training.fp32_grads", t.fp32_grads != d.fp32_grads, Bool(t.fp32_grads));
  put("training.fp32_allreduce", t.fp32_allreduce != d.fp32_allreduce, Bool(t.fp32_allreduce));
  if (IsAdapterMethod(t.method)) {
    out["training.lora.rank"] = Int(t.lora.rank);
    out["training.lora.alpha"] = Num(t.lora.alpha);
    out["training.lora.targets"] = Join(t.lora.targets);
    put("training.quant", t.quant != d.quant, ToString(t.quant));
  }
  put("training.data_bytes_per_token", t.data_bytes_per_token != d.data_bytes_per_token, Num(t.data_bytes_per_token));
  put("training.checkpoint_interval_min", t.checkpoint_interval_min != d.checkpoint_interval_min, Num(t.checkpoint_interval_min));
  put("training.checkpoint_async", t.checkpoint_async != d.checkpoint_async, Bool(t.checkpoint_async));
  put("training.checkpoint_full_state", t.checkpoint_full_state != d.checkpoint_full_state, Bool(t.checkpoint_full_state));
  put("training.framework", t.framework != d.framework, ToString(t.framework));
  put("training.compile", t.compile != d.compile, Bool(t.compile));
  if (t.tp_comm_overlap >= 0) out["training.tp_comm_overlap"] = Bool(t.tp_comm_overlap == 1);
  put("training.master_weights", t.master_weights != d.master_weights, ToString(t.master_weights));
  put("training.optimizer_in_backward", t.optimizer_in_backward != d.optimizer_in_backward, Bool(t.optimizer_in_backward));
  put("training.activation_offload", t.activation_offload != d.activation_offload, Bool(t.activation_offload));
  if (t.loss != LossKind::kAuto) out["training.loss"] = ToString(t.loss);
  if (t.precision == Precision::kFp8) put("training.fp8_recipe", t.fp8_recipe != d.fp8_recipe, ToString(t.fp8_recipe));
  put("training.padding", t.padding != d.padding, ToString(t.padding));
  put("training.fused_ops", t.fused_ops != d.fused_ops, FusedOps(t.fused_ops));
}

void ParallelClusterKeys(const Job& job, std::map<std::string, std::string>& out) {
  const ParallelSpec& p = job.parallel;
  out["parallel.tp"] = Int(p.tp);
  out["parallel.pp"] = Int(p.pp);
  if (p.dp > 0) out["parallel.dp"] = Int(p.dp);
  out["parallel.cp"] = Int(p.cp);
  if (p.vpp > 1 || job.IsSet("parallel.vpp")) out["parallel.vpp"] = Int(p.vpp);
  if (!p.layer_split.empty()) {
    std::string split;
    for (int64_t n : p.layer_split) split += (split.empty() ? "" : ",") + Int(n);
    out["parallel.layer_split"] = split;
  }
  if (p.ep > 1 || job.IsSet("parallel.ep")) out["parallel.ep"] = Int(p.ep);
  out["parallel.sequence_parallel"] = Bool(p.sequence_parallel);
  out["parallel.zero"] = Int(p.zero);
  out["parallel.offload"] = ToString(p.offload);
  const ClusterSpec& c = job.cluster;
  const ClusterSpec d;
  auto put = [&](const char* key, bool differs, const std::string& v) {
    if (differs || job.IsSet(key)) out[key] = v;
  };
  out["cluster.gpu"] = c.gpu;
  if (c.num_gpus > 0) out["cluster.num_gpus"] = Int(c.num_gpus);
  out["cluster.gpus_per_node"] = Int(c.gpus_per_node);
  if (c.nvlink_domain > 0) out["cluster.nvlink_domain"] = Int(c.nvlink_domain);
  if (!c.intra_node.empty()) out["cluster.intra_node"] = c.intra_node;
  if (!c.network.empty()) out["cluster.network"] = c.network;
  if (!c.storage.empty()) out["cluster.storage"] = c.storage;
  put("cluster.nics_per_node", c.nics_per_node != d.nics_per_node, Int(c.nics_per_node));
  put("cluster.gpudirect_rdma", c.gpudirect_rdma != d.gpudirect_rdma, Bool(c.gpudirect_rdma));
  put("cluster.oversubscription", c.oversubscription != d.oversubscription, Num(c.oversubscription));
  if (c.power_limit_w > 0) out["cluster.power_limit_w"] = Num(c.power_limit_w);
  if (c.cpu_cores_per_gpu > 0) out["cluster.cpu_cores_per_gpu"] = Int(c.cpu_cores_per_gpu);
}

// The serving keys where they differ from the default or were set; a training job writes none.
// The load is written by the key that chose it.
void ServingKeys(const Job& job, std::map<std::string, std::string>& out) {
  const ServingSpec& s = job.serving;
  const ServingSpec d;
  auto put = [&](const char* key, bool differs, const std::string& v) {
    if (differs || job.IsSet(key)) out[key] = v;
  };
  put("serving.engine", s.engine != d.engine, s.engine);
  if (!s.engine_version.empty()) out["serving.engine_version"] = s.engine_version;
  put("serving.weights", s.weights != d.weights, ToString(s.weights));
  put("serving.kv_dtype", s.kv_dtype != d.kv_dtype, ToString(s.kv_dtype));
  if (s.gpu_memory_utilization > 0) out["serving.gpu_memory_utilization"] = Num(s.gpu_memory_utilization);
  if (s.max_model_len > 0) out["serving.max_model_len"] = Int(s.max_model_len);
  if (s.max_num_seqs > 0) out["serving.max_num_seqs"] = Int(s.max_num_seqs);
  if (s.max_num_batched_tokens > 0) out["serving.max_num_batched_tokens"] = Int(s.max_num_batched_tokens);
  put("serving.input_len", s.input_len != d.input_len, Num(s.input_len));
  put("serving.output_len", s.output_len != d.output_len, Num(s.output_len));
  if (s.input_len_p90 > 0) out["serving.input_len_p90"] = Num(s.input_len_p90);
  if (s.output_len_p90 > 0) out["serving.output_len_p90"] = Num(s.output_len_p90);
  if (!s.frontend) out["serving.frontend"] = "false";
  switch (s.load) {
    case ServingLoad::kConcurrency: put("serving.concurrency", s.concurrency != d.concurrency, Num(s.concurrency)); break;
    case ServingLoad::kRequestRate: out["serving.request_rate"] = Num(s.request_rate); break;
    case ServingLoad::kMaxThroughput: out["serving.max_throughput"] = "true"; break;
    case ServingLoad::kNumRequests: out["serving.num_requests"] = Int(s.num_requests); break;
  }
  if (s.ttft_p90_ms > 0) out["serving.ttft_p90_ms"] = Num(s.ttft_p90_ms);
  if (s.tpot_p90_ms > 0) out["serving.tpot_p90_ms"] = Num(s.tpot_p90_ms);
  if (s.target_output_tokens_per_s > 0) out["serving.target_output_tokens_per_s"] = Num(s.target_output_tokens_per_s);
}

// A YAML scalar: quoted when plain style would change its meaning.
std::string YamlScalar(const std::string& v) {
  const bool plain = !v.empty() && v.find_first_of(":#{}[],&*!|>'\"%@`\n") == std::string::npos && v.front() != ' ' &&
                     v.back() != ' ' && v.front() != '-' && v.front() != '?';
  if (plain) return v;
  std::string q = "\"";
  for (char ch : v) {
    if (ch == '"' || ch == '\\') q += '\\';
    if (ch == '\n') {
      q += "\\n";
      continue;
    }
    q += ch;
  }
  return q + "\"";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> JobToKeys(const Job& job) {
  std::map<std::string, std::string> values;
  ModelKeys(job.arch, values);
  TrainingKeys(job, values);
  ParallelClusterKeys(job, values);
  ServingKeys(job, values);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& k : JobKeys())
    if (auto it = values.find(k.key); it != values.end()) out.emplace_back(k.key, it->second);
  return out;
}

std::string JobToYaml(const Job& job) {
  std::string out;
  std::string section, subsection;
  for (const auto& [key, value] : JobToKeys(job)) {
    const size_t dot = key.find('.');
    const std::string sec = key.substr(0, dot);
    std::string rest = key.substr(dot + 1);
    if (sec != section) {
      out += sec + ":\n";
      section = sec;
      subsection.clear();
    }
    const size_t dot2 = rest.find('.');
    if (dot2 != std::string::npos) {  // training.lora.rank: one level deeper
      const std::string sub = rest.substr(0, dot2);
      if (sub != subsection) out += "  " + sub + ":\n";
      subsection = sub;
      rest = rest.substr(dot2 + 1);
      if (key == "training.lora.targets") {
        out += "    " + rest + ": [" + value + "]\n";
        continue;
      }
      out += "    " + rest + ": " + YamlScalar(value) + "\n";
      continue;
    }
    subsection.clear();
    out += "  " + rest + ": " + YamlScalar(value) + "\n";
  }
  return out;
}

}  // namespace gpuplan
