// The engine exporters of `gpuplan export`: DeepSpeed, accelerate, torchrun, Megatron-LM (+ the
// Megatron-Bridge override form) and torchtitan (released v0.2.x TOML). Every key traces to a plan
// field (docs/export.md "## Engines"); the format facts are ../shared/reference/launch-serving-checks.md §1.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/calibration.h"
#include "gpuplan/engines.h"
#include "gpuplan/launch.h"
#include "gpuplan/plan.h"

namespace gpuplan {

namespace {

std::string Str(int64_t v) { return std::to_string(v); }
std::string Str(bool v) { return v ? "true" : "false"; }

// A word bash reads back verbatim: bare when it is made of safe characters, else single-quoted.
std::string ShellQuote(const std::string& s) {
  bool safe = !s.empty();
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string("_./:=+-,@%").find(c) != std::string::npos)) safe = false;
  if (safe) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A value inside bash double quotes: \ " $ and ` escaped.
std::string InDoubleQuotes(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

std::string ScriptWords(const std::string& script, const std::vector<std::string>& args) {
  std::string s = ShellQuote(script);
  for (const auto& a : args) s += " " + ShellQuote(a);
  return s;
}

int64_t World(const LaunchPlan& p) { return p.nodes * p.gpus_per_node; }
bool TpAcrossNodes(const LaunchPlan& p) { return p.job.parallel.tp > p.gpus_per_node; }

// ---- launch.sh: the per-node torchrun command every engine shares ----

struct LaunchSpec {
  std::string engine;                 // for the comment line
  std::string script;
  std::vector<std::string> script_args;
  std::vector<std::string> extra;     // engine arguments after the script's, already shell words
  std::vector<std::string> pre;       // lines between the variables and the command (exports, sources)
  std::vector<std::string> notes;     // comment lines under the header
};

std::string EnvDefaults(const LaunchPlan& p) {
  std::string s;
  s += "source \"$(dirname \"$0\")/fabric.env\"\n";
  s += "# The rendezvous: the first node's address and a free port, the same job id on every node.\n";
  s += "GPUPLAN_HEAD=\"${GPUPLAN_HEAD:-localhost}\"\n";
  s += "GPUPLAN_PORT=\"${GPUPLAN_PORT:-" + Str(p.port) + "}\"\n";
  s += "GPUPLAN_JOB_ID=\"${GPUPLAN_JOB_ID:-" + InDoubleQuotes(p.job_name) + "}\"\n";
  s += "GPUPLAN_NODE_RANK=\"${GPUPLAN_NODE_RANK:-0}\"  # 0 .. " + Str(p.nodes - 1) + "\n";
  s += "export GPUPLAN_HEAD GPUPLAN_PORT GPUPLAN_JOB_ID GPUPLAN_NODE_RANK\n";
  return s;
}

std::string ScriptHead(const LaunchPlan& p, const std::string& what) {
  std::string s = "#!/usr/bin/env bash\n" + CommentHeader(p, "# ");
  s += "# " + what + "\n";
  return s + "set -euo pipefail\n";
}

Artifact LaunchSh(const LaunchPlan& p, const LaunchSpec& l) {
  std::string s = ScriptHead(p, l.engine + ": the per-node command; run it once on each of the " + Str(p.nodes) +
                                    " node(s) with GPUPLAN_NODE_RANK set (c10d rendezvous at GPUPLAN_HEAD:GPUPLAN_PORT).");
  for (const auto& n : l.notes) s += "# " + n + "\n";
  s += EnvDefaults(p);
  s += "TORCHRUN=\"${TORCHRUN:-torchrun}\"\n";
  for (const auto& x : l.pre) s += x + "\n";
  // Underscore spellings: every torchrun takes them; the dash ones only PyTorch 2.x (Debian 12 ships 1.13).
  s += "$TORCHRUN --nnodes " + Str(p.nodes) + " --nproc_per_node " + Str(p.gpus_per_node) +
       " --rdzv_backend c10d --rdzv_endpoint \"$GPUPLAN_HEAD:$GPUPLAN_PORT\" --rdzv_id \"$GPUPLAN_JOB_ID\" \\\n  " +
       ScriptWords(l.script, l.script_args);
  for (const auto& e : l.extra) s += " " + e;
  s += " \"$@\"\n";
  return {"launch.sh", s, true};
}

// ---- deepspeed ----

std::vector<std::string> DeepspeedNotes(const LaunchPlan& p) {
  const Job& j = p.job;
  std::vector<std::string> n;
  if (j.training.precision == Precision::kFp8)
    n.push_back("fp8 (" + ToString(j.training.fp8_recipe) + "): the config runs bf16; the fp8 matmuls are the model code's (Transformer Engine / torchao)");
  if (j.training.recompute != Recompute::kNone)
    n.push_back("recompute " + ToString(j.training.recompute) + ": turn it on in the script (e.g. model.gradient_checkpointing_enable())");
  if (IsAdapterMethod(j.training.method)) n.push_back(ToString(j.training.method) + ": the adapters are the script's (PEFT)");
  if (j.training.master_weights == MasterWeights::kNone && j.parallel.zero == 0)
    n.push_back("master_weights none: ZeRO-0 keeps an fp32 master copy (bf16_master_weights_and_grads needs ZeRO 1-3)");
  return n;
}

nlohmann::ordered_json DeepspeedZero(const LaunchPlan& p) {
  const ParallelSpec& q = p.job.parallel;
  // The bucket the memory model counts (data/calibration.csv zero_bucket_elements, DeepSpeed's default).
  const auto bucket = static_cast<int64_t>(Calibration::Builtin().Get("zero_bucket_elements"));
  nlohmann::ordered_json z;
  z["stage"] = q.zero;
  z["overlap_comm"] = q.dp > 1;
  z["contiguous_gradients"] = true;
  z["reduce_bucket_size"] = bucket;
  if (q.zero <= 2) z["allgather_bucket_size"] = bucket;
  if (q.zero == 3) {
    z["stage3_prefetch_bucket_size"] = bucket;
    z["stage3_param_persistence_threshold"] = 100000;
    z["stage3_gather_16bit_weights_on_model_save"] = true;
  }
  if (q.offload != Offload::kNone) z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (q.offload == Offload::kOptimizerParams) z["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  return z;
}

std::string DeepspeedConfig(const LaunchPlan& p) {
  const Job& j = p.job;
  const ParallelSpec& q = j.parallel;
  nlohmann::ordered_json c;
  c["_gpuplan"] = {{"header", HeaderLines(p)}, {"notes", DeepspeedNotes(p)}};
  c["train_batch_size"] = j.training.micro_batch * p.grad_accum * q.dp;
  c["train_micro_batch_size_per_gpu"] = j.training.micro_batch;
  c["gradient_accumulation_steps"] = p.grad_accum;
  c["gradient_clipping"] = 1.0;
  const Precision pr = j.training.precision;
  if (pr == Precision::kBf16 || pr == Precision::kFp8) {
    nlohmann::ordered_json b = {{"enabled", true}};
    if (j.training.master_weights == MasterWeights::kNone && q.zero >= 1) {
      b["bf16_master_weights_and_grads"] = true;
      b["bf16_optimizer_states"] = true;
    }
    c["bf16"] = b;
  }
  if (pr == Precision::kFp16) c["fp16"] = {{"enabled", true}, {"loss_scale", 0}};
  c["zero_optimization"] = DeepspeedZero(p);
  if (q.tp > 1) c["tensor_parallel"] = {{"autotp_size", q.tp}};
  return c.dump(2) + "\n";
}

std::string Hostfile(const LaunchPlan& p) {
  std::string s = CommentHeader(p, "# ");
  s += "# One line per node: replace node-0 .. node-" + Str(p.nodes - 1) + " (placeholders) with the nodes' host names.\n";
  for (int64_t n = 0; n < p.nodes; ++n) s += "node-" + Str(n) + " slots=" + Str(p.gpus_per_node) + "\n";
  return s;
}

Artifact DeepspeedLauncher(const LaunchPlan& p, const std::string& script) {
  std::string s = ScriptHead(p, "deepspeed launcher form: run it on the first node only; it reaches the others over ssh/pdsh "
                                "through hostfile (put the nodes' real names there).");
  s += EnvDefaults(p);
  s += "DEEPSPEED=\"${DEEPSPEED:-deepspeed}\"\n";
  s += "$DEEPSPEED --hostfile \"$(dirname \"$0\")/hostfile\" --num_nodes " + Str(p.nodes) + " --num_gpus " + Str(p.gpus_per_node) +
       " --master_addr \"$GPUPLAN_HEAD\" --master_port \"$GPUPLAN_PORT\" \\\n  " + ScriptWords(script, p.script_args) +
       " --deepspeed --deepspeed_config \"$(dirname \"$0\")/ds_config.json\" \"$@\"\n";
  return {"launch-deepspeed.sh", s, true};
}

std::vector<Artifact> ExportDeepspeed(const LaunchPlan& p) {
  LaunchSpec l{"deepspeed (torchrun form)", p.script, p.script_args,
               {"--deepspeed", "--deepspeed_config", "\"$(dirname \"$0\")/ds_config.json\""}, {}, {}};
  return {{"ds_config.json", DeepspeedConfig(p), false}, {"hostfile", Hostfile(p), false}, LaunchSh(p, l),
          DeepspeedLauncher(p, p.script)};
}

// ---- accelerate ----

enum class AccelKind { kNo, kMultiGpu, kFsdp, kDeepspeed };

AccelKind AccelerateKind(const LaunchPlan& p) {
  const ParallelSpec& q = p.job.parallel;
  if (q.zero == 1 || q.offload == Offload::kOptimizer) return AccelKind::kDeepspeed;
  if (q.zero >= 2) return AccelKind::kFsdp;
  return World(p) > 1 ? AccelKind::kMultiGpu : AccelKind::kNo;
}

std::string AccelerateMixedPrecision(const Job& j) {
  switch (j.training.precision) {
    case Precision::kFp32: return "'no'";
    case Precision::kFp16: return "fp16";
    default: return "bf16";
  }
}

std::string AccelerateTop(const LaunchPlan& p, const std::string& type) {
  const Job& j = p.job;
  std::string s = CommentHeader(p, "# ");
  s += "# batch (the script's --per_device_train_batch_size / --gradient_accumulation_steps; launch.sh passes them): micro-batch " +
       Str(j.training.micro_batch) + " x " + Str(p.grad_accum) + " accumulation x dp " + Str(j.parallel.dp) + " = global batch " +
       Str(j.training.global_batch) + "\n";
  if (j.training.precision == Precision::kFp8)
    s += "# fp8 (" + ToString(j.training.fp8_recipe) + "): mixed_precision runs bf16; the fp8 matmuls are the model code's\n";
  if (j.training.recompute == Recompute::kSelective)
    s += "# recompute selective: the script's (this file has only full activation checkpointing)\n";
  s += "compute_environment: LOCAL_MACHINE\n";
  s += "distributed_type: " + type + "\n";
  s += "mixed_precision: " + AccelerateMixedPrecision(j) + "\n";
  s += "num_machines: " + Str(p.nodes) + "\n";
  s += "num_processes: " + Str(World(p)) + "  # all processes, not per node\n";
  s += "machine_rank: 0  # launch-accelerate.sh passes --machine_rank $GPUPLAN_NODE_RANK\n";
  s += "main_process_ip: localhost  # launch-accelerate.sh passes --main_process_ip $GPUPLAN_HEAD\n";
  s += "main_process_port: " + Str(p.port) + "\n";
  s += "rdzv_backend: c10d\n";
  s += "same_network: false\n";
  s += "main_training_function: main\n";
  s += "use_cpu: false\n";
  return s;
}

std::string FsdpBlock(const LaunchPlan& p, int version) {
  const Job& j = p.job;
  const bool full = j.parallel.zero == 3;
  std::string s = "fsdp_config:\n";
  s += "  fsdp_version: " + Str(int64_t{version}) + "\n";
  if (version == 2) {
    s += "  fsdp_reshard_after_forward: " + Str(full) + "\n";
  } else {
    s += std::string("  fsdp_sharding_strategy: ") + (full ? "FULL_SHARD" : "SHARD_GRAD_OP") + "\n";
    s += "  fsdp_backward_prefetch: BACKWARD_PRE\n";
    s += "  fsdp_sync_module_states: true\n";
    s += "  fsdp_use_orig_params: true\n";
  }
  s += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP  # the model's _no_split_modules\n";
  s += "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
  s += "  fsdp_cpu_ram_efficient_loading: true\n";
  s += "  fsdp_offload_params: " + Str(j.parallel.offload == Offload::kOptimizerParams) + "\n";
  s += "  fsdp_activation_checkpointing: " + Str(j.training.recompute == Recompute::kFull) + "\n";
  const ParallelSpec& q = j.parallel;
  if (version == 2 && (q.tp > 1 || q.cp > 1)) {
    s += "parallelism_config:\n";
    s += "  parallelism_config_dp_replicate_size: 1\n";
    s += "  parallelism_config_dp_shard_size: " + Str(q.dp) + "\n";
    s += "  parallelism_config_tp_size: " + Str(q.tp) + "\n";
    s += "  parallelism_config_cp_size: " + Str(q.cp) + "\n";
  }
  return s;
}

std::string AccelerateDeepspeedBlock(const LaunchPlan& p) {
  const ParallelSpec& q = p.job.parallel;
  std::string s = "deepspeed_config:\n";
  s += "  deepspeed_multinode_launcher: standard\n";
  s += "  zero_stage: " + Str(int64_t{q.zero}) + "\n";
  s += "  gradient_accumulation_steps: " + Str(p.grad_accum) + "\n";
  s += "  gradient_clipping: 1.0\n";
  s += std::string("  offload_optimizer_device: ") + (q.offload != Offload::kNone ? "cpu" : "none") + "\n";
  s += std::string("  offload_param_device: ") + (q.offload == Offload::kOptimizerParams ? "cpu" : "none") + "\n";
  s += "  zero3_init_flag: " + Str(q.zero == 3) + "\n";
  if (q.zero == 3) s += "  zero3_save_16bit_model: true\n";
  return s;
}

std::vector<Artifact> AccelerateConfigs(const LaunchPlan& p) {
  switch (AccelerateKind(p)) {
    case AccelKind::kNo: return {{"accelerate.yaml", AccelerateTop(p, "'NO'"), false}};
    case AccelKind::kMultiGpu: return {{"accelerate.yaml", AccelerateTop(p, "MULTI_GPU"), false}};
    case AccelKind::kDeepspeed: return {{"accelerate.yaml", AccelerateTop(p, "DEEPSPEED") + AccelerateDeepspeedBlock(p), false}};
    case AccelKind::kFsdp: break;
  }
  std::vector<Artifact> out = {{"accelerate.yaml", AccelerateTop(p, "FSDP") + FsdpBlock(p, 2), false}};
  const ParallelSpec& q = p.job.parallel;
  if (q.tp == 1 && q.cp == 1) out.push_back({"accelerate-fsdp1.yaml", AccelerateTop(p, "FSDP") + FsdpBlock(p, 1), false});
  return out;
}

std::vector<std::string> BatchArgs(const LaunchPlan& p) {
  return {"--per_device_train_batch_size", Str(p.job.training.micro_batch), "--gradient_accumulation_steps", Str(p.grad_accum)};
}

Artifact AccelerateLauncher(const LaunchPlan& p) {
  std::string s = ScriptHead(p, "accelerate launch form: run it once on each node with GPUPLAN_NODE_RANK set; accelerate applies "
                                "accelerate.yaml to an unmodified Accelerator() script.");
  s += EnvDefaults(p);
  s += "ACCELERATE=\"${ACCELERATE:-accelerate}\"\n";
  s += "$ACCELERATE launch --config_file \"$(dirname \"$0\")/accelerate.yaml\" --num_machines " + Str(p.nodes) + " --num_processes " +
       Str(World(p)) + " --machine_rank \"$GPUPLAN_NODE_RANK\" --main_process_ip \"$GPUPLAN_HEAD\" --main_process_port \"$GPUPLAN_PORT\" \\\n  " +
       ScriptWords(p.script, p.script_args);
  for (const auto& a : BatchArgs(p)) s += " " + a;
  s += " \"$@\"\n";
  return {"launch-accelerate.sh", s, true};
}

std::vector<Artifact> ExportAccelerate(const LaunchPlan& p) {
  std::vector<Artifact> out = AccelerateConfigs(p);
  LaunchSpec l{"accelerate (torchrun form)", p.script, p.script_args, BatchArgs(p), {}, {}};
  l.extra.push_back("--accelerate_config");
  l.extra.push_back("\"$(dirname \"$0\")/accelerate.yaml\"");
  l.notes.push_back("torchrun form: the script reads accelerate.yaml itself (--accelerate_config); launch-accelerate.sh is the");
  l.notes.push_back("`accelerate launch` form that applies it to an unmodified Accelerator() script.");
  out.push_back(LaunchSh(p, l));
  out.push_back(AccelerateLauncher(p));
  return out;
}

// ---- torchrun ----

std::vector<Artifact> ExportTorchrun(const LaunchPlan& p) {
  LaunchSpec l{"torchrun", p.script, p.script_args, {}, {}, {}};
  l.notes.push_back("torchrun carries the nodes and processes per node only: the layout (" + LayoutString(p.job) + ") and the batch");
  l.notes.push_back("(micro-batch " + Str(p.job.training.micro_batch) + " x " + Str(p.grad_accum) + " accumulation) are the script's.");
  return {LaunchSh(p, l)};
}

// ---- megatron ----

using Args = std::vector<std::pair<std::string, std::string>>;  // flag, value ("" = a switch)

Args MegatronModelArgs(const Job& j) {
  const Arch& a = j.arch;
  Args m = {{"--num-layers", Str(a.layers)}, {"--hidden-size", Str(a.hidden)}, {"--num-attention-heads", Str(a.heads)}};
  if (a.KvHeads() < a.heads && !a.IsMla()) m.insert(m.end(), {{"--group-query-attention", ""}, {"--num-query-groups", Str(a.KvHeads())}});
  if (!a.IsMla() && a.head_dim > 0 && a.head_dim * a.heads != a.hidden) m.push_back({"--kv-channels", Str(a.head_dim)});
  m.push_back({"--ffn-hidden-size", Str(a.Ffn())});
  m.push_back({"--seq-length", Str(j.training.seq_len)});
  m.push_back({"--max-position-embeddings", Str(a.max_positions > 0 ? a.max_positions : j.training.seq_len)});
  m.push_back({"--vocab-size", Str(a.vocab)});
  if (a.mlp == MlpKind::kSwiGlu) m.push_back({"--swiglu", ""});
  m.push_back({"--normalization", a.norm == NormKind::kRmsNorm ? "RMSNorm" : "LayerNorm"});
  m.push_back({"--position-embedding-type", a.position == PositionKind::kRotary ? "rope" : "learned_absolute"});
  if (!a.linear_bias) m.push_back({"--disable-bias-linear", ""});
  if (a.qkv_bias) m.push_back({"--add-qkv-bias", ""});
  if (a.qk_norm) m.push_back({"--qk-layernorm", ""});
  if (!a.tied_embeddings) m.push_back({"--untie-embeddings-and-output-weights", ""});
  if (a.IsMla()) {
    m.push_back({"--multi-latent-attention", ""});
    if (a.q_lora_rank > 0) m.push_back({"--q-lora-rank", Str(a.q_lora_rank)});
    m.insert(m.end(), {{"--kv-lora-rank", Str(a.kv_lora_rank)}, {"--qk-head-dim", Str(a.qk_nope_head_dim)},
                       {"--qk-pos-emb-head-dim", Str(a.qk_rope_head_dim)}, {"--v-head-dim", Str(a.VHeadDim())}});
  }
  if (a.IsMoe()) {
    m.insert(m.end(), {{"--num-experts", Str(a.experts)}, {"--moe-router-topk", Str(a.experts_per_token)},
                       {"--moe-ffn-hidden-size", Str(a.MoeFfn())}, {"--moe-grouped-gemm", ""}});
    if (a.shared_experts > 0) m.push_back({"--moe-shared-expert-intermediate-size", Str(a.shared_experts * a.MoeFfn())});
    if (a.dense_layers > 0)
      m.push_back({"--moe-layer-freq", "[0]*" + Str(a.dense_layers) + "+[1]*" + Str(a.layers - a.dense_layers)});
  }
  return m;
}

Args MegatronParallelArgs(const LaunchPlan& p) {
  const ParallelSpec& q = p.job.parallel;
  Args m = {{"--tensor-model-parallel-size", Str(q.tp)}, {"--pipeline-model-parallel-size", Str(q.pp)}};
  if (q.vpp > 1) m.push_back({"--num-layers-per-virtual-pipeline-stage", Str(p.job.arch.layers / (q.pp * q.vpp))});
  m.push_back({"--context-parallel-size", Str(q.cp)});
  if (q.ep > 1) m.push_back({"--expert-model-parallel-size", Str(q.ep)});
  if (q.sequence_parallel) m.push_back({"--sequence-parallel", ""});
  if (q.zero >= 1) m.push_back({"--use-distributed-optimizer", ""});
  // ZeRO-2/3 are Megatron-FSDP's optim_grads / optim_grads_params (launch-serving-checks.md §1.4);
  // the distributed optimizer alone shards only the optimizer states (ZeRO-1).
  if (q.zero >= 2)
    m.insert(m.end(), {{"--use-megatron-fsdp", ""}, {"--data-parallel-sharding-strategy", q.zero == 3 ? "optim_grads_params" : "optim_grads"},
                       {"--ckpt-format", "fsdp_dtensor"}});
  if (q.offload == Offload::kOptimizer)
    m.insert(m.end(), {{"--optimizer-cpu-offload", ""}, {"--optimizer-offload-fraction", "1.0"},
                       {"--use-precision-aware-optimizer", ""}, {"--overlap-cpu-optimizer-d2h-h2d", ""}});
  if (q.dp * q.cp > 1) m.push_back({"--overlap-grad-reduce", ""});
  if (q.zero >= 1 && q.dp * q.cp > 1) m.push_back({"--overlap-param-gather", ""});
  return m;
}

std::string MegatronFp8Recipe(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kDelayed: return "delayed";
    case Fp8Recipe::kMxfp8: return "mxfp8";
    default: return "tensorwise";
  }
}

Args MegatronTrainingArgs(const LaunchPlan& p) {
  const TrainingSpec& t = p.job.training;
  Args m;
  if (t.recompute == Recompute::kSelective) m.push_back({"--recompute-granularity", "selective"});
  if (t.recompute == Recompute::kFull)
    m.insert(m.end(), {{"--recompute-granularity", "full"}, {"--recompute-method", "uniform"}, {"--recompute-num-layers", "1"}});
  m.push_back({"--micro-batch-size", Str(t.micro_batch)});
  m.push_back({"--global-batch-size", Str(t.global_batch)});
  if (t.tokens > 0)
    m.push_back({"--train-iters", Str(static_cast<int64_t>(std::ceil(t.tokens / (static_cast<double>(t.global_batch) * t.seq_len))))});
  if (t.precision == Precision::kBf16 || t.precision == Precision::kFp8) m.push_back({"--bf16", ""});
  if (t.precision == Precision::kFp16) m.push_back({"--fp16", ""});
  if (t.precision == Precision::kFp8)
    m.insert(m.end(), {{"--fp8-format", "hybrid"}, {"--fp8-recipe", MegatronFp8Recipe(t.fp8_recipe)}});
  return m;
}

std::string MegatronArgsFile(const LaunchPlan& p) {
  std::string s = CommentHeader(p, "# ");
  s += "# Megatron-LM pretrain_gpt.py flags for this plan (sourced by launch.sh). Data, tokenizer, checkpoint and\n";
  s += "# learning-rate flags are yours: append them to MEGATRON_ARGS or pass them to launch.sh.\n";
  if (TpAcrossNodes(p))
    s += "# WARNING: tensor parallelism spans nodes (tp " + Str(p.job.parallel.tp) + " > " + Str(p.gpus_per_node) +
         " GPUs per node): every layer's all-reduce crosses the network.\n";
  if (p.job.arch.mlp == MlpKind::kGeGlu) s += "# geglu: no flag sets it; set the MLP activation in the model spec.\n";
  if (p.job.arch.norms_per_layer != 2) s += "# norms per layer " + Str(p.job.arch.norms_per_layer) + ": set them in the model spec.\n";
  s += "MEGATRON_ARGS=(\n";
  for (const Args& group : {MegatronModelArgs(p.job), MegatronParallelArgs(p), MegatronTrainingArgs(p)})
    for (const auto& [flag, value] : group) s += "  " + flag + (value.empty() ? "" : " " + ShellQuote(value)) + "\n";
  return s + ")\n";
}

std::string BridgePrecision(const TrainingSpec& t) {
  switch (t.precision) {
    case Precision::kFp32: return "null";
    case Precision::kFp16: return "16-mixed";
    case Precision::kBf16: return "bf16_mixed";
    case Precision::kFp8: break;
  }
  switch (t.fp8_recipe) {
    case Fp8Recipe::kDelayed: return "bf16_with_fp8_delayed_scaling_mixed";
    case Fp8Recipe::kMxfp8: return "bf16_with_mxfp8_mixed";
    default: return "bf16_with_fp8_current_scaling_mixed";
  }
}

std::vector<std::string> BridgeOverrides(const LaunchPlan& p) {
  const Job& j = p.job;
  const ParallelSpec& q = j.parallel;
  const TrainingSpec& t = j.training;
  std::vector<std::string> o = {"model.tensor_model_parallel_size=" + Str(q.tp), "model.pipeline_model_parallel_size=" + Str(q.pp)};
  if (q.vpp > 1) o.push_back("model.virtual_pipeline_model_parallel_size=" + Str(q.vpp));
  o.push_back("model.context_parallel_size=" + Str(q.cp));
  o.push_back("model.expert_model_parallel_size=" + Str(q.ep));
  o.push_back("model.sequence_parallel=" + Str(q.sequence_parallel));
  o.push_back("model.seq_length=" + Str(t.seq_len));
  o.push_back("dataset.seq_length=" + Str(t.seq_len));
  if (t.recompute != Recompute::kNone) o.push_back("model.recompute_granularity=" + ToString(t.recompute));
  if (t.recompute == Recompute::kFull) o.insert(o.end(), {"model.recompute_method=uniform", "model.recompute_num_layers=1"});
  o.push_back("ddp.use_distributed_optimizer=" + Str(q.zero >= 1));
  o.push_back("optimizer.use_distributed_optimizer=" + Str(q.zero >= 1));
  if (q.zero >= 2)
    o.insert(o.end(), {"dist.use_megatron_fsdp=true", "ddp.use_megatron_fsdp=true",
                       std::string("ddp.data_parallel_sharding_strategy=") + (q.zero == 3 ? "optim_grads_params" : "optim_grads"),
                       "checkpoint.ckpt_format=fsdp_dtensor"});
  if (q.offload == Offload::kOptimizer)
    o.insert(o.end(), {"optimizer.optimizer_cpu_offload=true", "optimizer.optimizer_offload_fraction=1.0",
                       "optimizer.use_precision_aware_optimizer=true", "optimizer.overlap_cpu_optimizer_d2h_h2d=true"});
  o.push_back("ddp.overlap_grad_reduce=" + Str(q.dp * q.cp > 1));
  o.push_back("ddp.overlap_param_gather=" + Str(q.zero >= 1 && q.dp * q.cp > 1));
  o.push_back("train.micro_batch_size=" + Str(t.micro_batch));
  o.push_back("train.global_batch_size=" + Str(t.global_batch));
  if (t.tokens > 0)
    o.push_back("train.train_iters=" + Str(static_cast<int64_t>(std::ceil(t.tokens / (static_cast<double>(t.global_batch) * t.seq_len)))));
  o.push_back("mixed_precision=" + BridgePrecision(t));
  return o;
}

std::string BridgeFile(const LaunchPlan& p) {
  std::string s = CommentHeader(p, "# ");
  s += "# Megatron-Bridge overrides (one per line) for scripts/training/run_recipe.py --recipe <a recipe of this model>:\n";
  s += "#   python scripts/training/run_recipe.py --recipe RECIPE $(grep -v '^#' bridge-overrides.txt)\n";
  if (p.job.training.precision == Precision::kFp32) s += "# fp32: mixed_precision=null turns the recipe's mixed precision off.\n";
  for (const auto& o : BridgeOverrides(p)) s += o + "\n";
  return s;
}

std::vector<Artifact> ExportMegatron(const LaunchPlan& p) {
  LaunchSpec l{"megatron", p.script == "train.py" ? "pretrain_gpt.py" : p.script, p.script_args, {"\"${MEGATRON_ARGS[@]}\""}, {}, {}};
  if (p.job.parallel.zero >= 2) {
    l.pre.push_back("# Megatron-FSDP (ZeRO-2/3) rejects CUDA_DEVICE_MAX_CONNECTIONS=1: left as the environment has it.");
  } else {
    l.pre.push_back("# Megatron-LM's examples set it: one hardware queue keeps TP/CP communication ordered ahead of compute.");
    l.pre.push_back("export CUDA_DEVICE_MAX_CONNECTIONS=1");
  }
  l.pre.push_back("source \"$(dirname \"$0\")/megatron-args.sh\"");
  return {{"megatron-args.sh", MegatronArgsFile(p), false}, {"bridge-overrides.txt", BridgeFile(p), false}, LaunchSh(p, l)};
}

// ---- torchtitan ----

// torchtitan's built-in llama3 flavors (v0.2.2 torchtitan/models/llama3/__init__.py), matched by shape.
std::string Llama3Flavor(const Arch& a) {
  struct F {
    int64_t layers, hidden, heads, kv, vocab;
    const char* name;
  };
  constexpr F kFlavors[] = {{32, 4096, 32, 8, 128256, "8B"}, {80, 8192, 64, 8, 128256, "70B"}, {126, 16384, 128, 8, 128256, "405B"}};
  for (const auto& f : kFlavors)
    if (a.layers == f.layers && a.hidden == f.hidden && a.heads == f.heads && a.KvHeads() == f.kv && a.vocab == f.vocab) return f.name;
  return "";
}

std::string TitanModel(const Job& j) {
  const Arch& a = j.arch;
  const std::string flavor = Llama3Flavor(a);
  std::string s = "[model]\n";
  if (!flavor.empty()) {
    s += "name = \"llama3\"\nflavor = \"" + flavor + "\"\n";
  } else {
    s += "# " + a.name + " is not a built-in torchtitan flavor: register it (a TransformerModelArgs entry of its model family) with\n";
    s += "# layers " + Str(a.layers) + ", hidden " + Str(a.hidden) + ", heads " + Str(a.heads) + ", kv_heads " + Str(a.KvHeads()) +
         ", ffn " + Str(a.Ffn()) + ", vocab " + Str(a.vocab) + (a.IsMoe() ? ", experts " + Str(a.experts) + " top-" + Str(a.experts_per_token) : "") +
         ", and name it here.\n";
    // The torchtitan model family the shape belongs to (v0.2.x ships llama3, qwen3, deepseek_v3).
    const bool qwen3 = a.name.rfind("qwen3", 0) == 0;
    s += std::string("name = \"") + (a.IsMla() ? "deepseek_v3" : qwen3 ? "qwen3" : "llama3") + "\"\nflavor = \"gpuplan-custom\"\n";
  }
  if (j.training.precision == Precision::kFp8)
    s += j.training.fp8_recipe == Fp8Recipe::kMxfp8 ? "converters = [\"quantize.linear.mx\"]\n" : "converters = [\"quantize.linear.float8\"]\n";
  return s;
}

std::string TitanTraining(const LaunchPlan& p) {
  const TrainingSpec& t = p.job.training;
  const bool pp = p.job.parallel.pp > 1;
  std::string s = "[training]\n";
  // With pp the pipeline runs the accumulation as microbatches of one local batch.
  s += "local_batch_size = " + Str(pp ? t.micro_batch * p.grad_accum : t.micro_batch) + "\n";
  s += "global_batch_size = " + Str(t.global_batch) + "\n";
  s += "seq_len = " + Str(t.seq_len) + "\n";
  s += "max_norm = 1.0\n";
  if (t.tokens > 0) {
    s += "steps = " + Str(static_cast<int64_t>(std::ceil(t.tokens / (static_cast<double>(t.global_batch) * t.seq_len)))) +
         "  # training.tokens / (global batch x seq_len)\n";
  } else {
    s += "steps = 10000  # placeholder (torchtitan's default): the job gives no training.tokens\n";
  }
  s += std::string("mixed_precision_param = \"") + (t.precision == Precision::kFp32 ? "float32" : "bfloat16") + "\"\n";
  s += "mixed_precision_reduce = \"float32\"\n";
  return s;
}

std::string TitanParallelism(const LaunchPlan& p) {
  const ParallelSpec& q = p.job.parallel;
  std::string s = "[parallelism]\n";
  s += "data_parallel_replicate_degree = " + Str(q.zero == 0 ? q.dp : int64_t{1}) + "\n";
  s += "data_parallel_shard_degree = " + Str(q.zero == 0 ? int64_t{1} : q.dp) + "\n";
  if (q.zero == 2) s += "fsdp_reshard_after_forward = \"never\"  # ZeRO-2: parameters stay gathered after forward\n";
  if (q.zero == 3) s += "fsdp_reshard_after_forward = \"always\"\n";
  s += "tensor_parallel_degree = " + Str(q.tp) + "\n";
  s += "pipeline_parallel_degree = " + Str(q.pp) + "\n";
  if (q.pp > 1) {
    s += std::string("pipeline_parallel_schedule = \"") + (q.vpp > 1 ? "Interleaved1F1B" : "1F1B") + "\"\n";
    s += "pipeline_parallel_microbatch_size = " + Str(p.job.training.micro_batch) + "\n";
    if (q.vpp > 1) s += "pipeline_parallel_layers_per_stage = " + Str(p.job.arch.layers / (q.pp * q.vpp)) + "\n";
  }
  s += "context_parallel_degree = " + Str(q.cp) + "\n";
  s += "expert_parallel_degree = " + Str(q.ep) + "\n";
  return s;
}

std::string TitanToml(const LaunchPlan& p) {
  const Job& j = p.job;
  std::string s = CommentHeader(p, "# ");
  s += "# torchtitan v0.2.x (the released TOML; main has moved to Python configs): torchrun ... -m torchtitan.train "
       "--job.config_file torchtitan.toml\n";
  s += "# the world size is not in this file: torchrun's " + Str(World(p)) + " processes = the product of the degrees below.\n\n";
  s += "[job]\ndump_folder = \"./outputs\"\ndescription = " + nlohmann::json(p.job_name + ": " + LayoutString(j)).dump() + "\n\n";
  s += TitanModel(j) + "\n" + TitanTraining(p) + "\n" + TitanParallelism(p) + "\n";
  s += "[activation_checkpoint]\nmode = \"" + ToString(j.training.recompute) + "\"\n\n";
  s += "[compile]\nenable = " + Str(j.training.compile) + "\n";
  if (j.training.precision == Precision::kFp8 && j.training.fp8_recipe != Fp8Recipe::kMxfp8)
    s += "\n[quantize.linear.float8]\nrecipe_name = \"" + ToString(j.training.fp8_recipe) + "\"\n";
  return s;
}

std::vector<Artifact> ExportTorchtitan(const LaunchPlan& p) {
  const bool default_script = p.script == "train.py";
  LaunchSpec l{"torchtitan", default_script ? "-m" : p.script, p.script_args, {"--job.config_file", "\"$(dirname \"$0\")/torchtitan.toml\""},
               {}, {}};
  if (default_script) l.script_args.insert(l.script_args.begin(), "torchtitan.train");
  return {{"torchtitan.toml", TitanToml(p), false}, LaunchSh(p, l)};
}

}  // namespace

// What a format cannot express: its own engine's row of data/engines.csv (one table with the
// planner); torchrun and the wrappers carry nodes and processes only.
std::string CannotExpress(ExportFormat engine, const LaunchPlan& plan) {
  const std::string name = ToString(engine);
  const EngineCaps* e = EngineForFormat(name);
  if (!e) return "";
  if (std::string why = EngineCannotTrain(*e, plan.job, name); !why.empty()) return why;
  return EngineCannotLayout(*e, plan.job, plan.gpus_per_node, name);
}

std::vector<std::pair<std::string, std::string>> PinsForFormat(ExportFormat engine) {
  // The format's own engine as the job's framework: the planner then searches only the layouts
  // that engine expresses (data/engines.csv).
  const EngineCaps* e = EngineForFormat(ToString(engine));
  if (!e) return {};
  return {{"training.framework", e->id}};
}

Result<std::vector<Artifact>> ExportEngine(ExportFormat engine, const LaunchPlan& plan, const Catalog& catalog) {
  if (!IsEngine(engine)) return Status::Internal("ExportEngine: " + ToString(engine) + " is not an engine");
  if (std::string why = CannotExpress(engine, plan); !why.empty()) return Status::BadInput({"", 0, "--to"}, why);
  std::vector<Artifact> files;
  switch (engine) {
    case ExportFormat::kDeepspeed: files = ExportDeepspeed(plan); break;
    case ExportFormat::kAccelerate: files = ExportAccelerate(plan); break;
    case ExportFormat::kTorchrun: files = ExportTorchrun(plan); break;
    case ExportFormat::kMegatron: files = ExportMegatron(plan); break;
    case ExportFormat::kTorchtitan: files = ExportTorchtitan(plan); break;
    default: break;
  }
  auto env = FabricEnv(plan, catalog);
  if (!env.ok()) return env.status();
  files.push_back(*env);
  return files;
}

}  // namespace gpuplan
