// The engine exporters of `gpuplan export`: DeepSpeed, accelerate, torchrun, Megatron-LM (+ the
// Megatron-Bridge override form) and torchtitan (released v0.2.x TOML). Every key traces to a plan
// field (docs/export.md "## Engines", which names the engine source each format was checked against).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/arch.h"
#include "gpuplan/calibration.h"
#include "gpuplan/engines.h"
#include "gpuplan/launch.h"
#include "gpuplan/pipeline_split.h"
#include "gpuplan/plan.h"
#include "gpuplan/quote.h"

namespace gpuplan {

namespace {

std::string Str(int64_t v) { return std::to_string(v); }
std::string Str(bool v) { return v ? "true" : "false"; }
std::string PyBool(bool v) { return v ? "True" : "False"; }

// A word bash reads back verbatim (gpuplan/quote.h ShellWord).
std::string ShellQuote(const std::string& s) { return ShellWord(s); }

// A value inside "${VAR:-...}": \ " $ ` escaped, and } (which would end the expansion).
std::string InDoubleQuotes(const std::string& s) {
  std::string out;
  for (char c : ShellDoubleQuoted(s)) out += c == '}' ? std::string("\\}") : std::string(1, c);
  return out;
}

std::string ScriptWords(const std::string& script, const std::vector<std::string>& args) {
  std::string s = ShellQuote(script);
  for (const auto& a : args) s += " " + ShellQuote(a);
  return s;
}

int64_t World(const LaunchPlan& p) { return p.nodes * p.gpus_per_node; }

// The upstream release each format is written for: its keys and flags were read at that commit
// (docs/export.md "Pinned versions"). They describe this file's output, so they live with the code.
constexpr const char* kPinDeepspeed = "DeepSpeed 0.19.6 (deepspeedai/DeepSpeed @ edaa722, 2026-08-22)";
constexpr const char* kPinAccelerate = "accelerate 1.15 (huggingface/accelerate @ 16cb6eb, 1.15.0.dev0, 2026-07-24)";
constexpr const char* kPinBridge = "Megatron-Bridge 0.7.0 (NVIDIA-NeMo/Megatron-Bridge @ 067f987, 2026-08-22)";
constexpr const char* kPinTitanMain =
    "torchtitan main (pytorch/torchtitan @ b5bcd76, 2026-08-21): a Python config, torchtitan.train --module/--config";
constexpr const char* kPinTitan02 = "torchtitan v0.2.2 (pytorch/torchtitan @ 73a0e69, 2026-02-20): TOML, --job.config_file";

std::string PinLine(const char* pin, const std::string& comment = "# ") { return comment + "written for " + std::string(pin) + "\n"; }
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
  for (const auto& n : l.notes) s += "# " + CommentLine(n) + "\n";
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

// ---- the checkpoint policy (docs/export.md "Checkpoints"; docs/model/reliability.md R§3) ----

// Optimizer steps between checkpoints: the plan's interval over its step time, at least 1.
int64_t SaveSteps(const LaunchPlan& p) {
  if (p.step_time_s <= 0) return 1;
  return std::max<int64_t>(1, std::llround(p.checkpoint_interval_s / p.step_time_s));
}
int64_t CheckpointsKept() { return static_cast<int64_t>(Calibration::Builtin().Get("checkpoints_kept")); }

// "every 120 steps (~30 min at 15.00 s per step) to checkpoints/, async; plan target: local NVMe -> x"
std::string CheckpointPolicyText(const LaunchPlan& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "every %lld steps (~%.0f min at %.2f s per step) to %s/", static_cast<long long>(SaveSteps(p)),
                p.checkpoint_interval_s / 60, p.step_time_s, p.checkpoint_dir.c_str());
  std::string s = buf;
  s += p.checkpoint_async ? ", async" : ", synchronous";
  if (!p.checkpoint_target.empty()) s += "; plan target: " + p.checkpoint_target;
  return s;
}

// HF Trainer's save flags (TrainingArguments), for the engines an HF Trainer script runs under.
bool HfTrainerScript(const LaunchPlan& p) { return p.job.training.framework == Framework::kHfTrainer; }
std::vector<std::string> HfSaveArgs(const LaunchPlan& p) {
  if (!HfTrainerScript(p)) return {};
  return {"--output_dir", ShellQuote(p.checkpoint_dir), "--save_strategy", "steps", "--save_steps", Str(SaveSteps(p)),
          "--save_total_limit", Str(CheckpointsKept())};
}
// The comment lines of a launch.sh whose script does the saving.
std::vector<std::string> CheckpointNotes(const LaunchPlan& p) {
  std::vector<std::string> n = {"checkpoints: " + CheckpointPolicyText(p) + "."};
  if (!HfTrainerScript(p))
    n.push_back("the script saves them (HF Trainer: --save_steps " + Str(SaveSteps(p)) + " --output_dir " + p.checkpoint_dir +
                "; DeepSpeed: engine.save_checkpoint every " + Str(SaveSteps(p)) + " steps" +
                (p.checkpoint_async ? "; async: torch.distributed.checkpoint.async_save)" : ")"));
  return n;
}

// ---- deepspeed ----

// With ZeRO-Offload DeepSpeed's engine refuses a client optimizer that is not DeepSpeedCPUAdam while
// zero_force_ds_cpu_optimizer is true (its default; runtime/engine.py _configure_optimizer); bf16 master
// weights with offload need a DeepSpeedCPUAdam built with fp32_optimizer_states=False, which DeepSpeed
// builds itself from a config `optimizer` block (engine.py _configure_basic_optimizer; base_optimizer.py
// _configure_master_weights).
bool DeepspeedBf16Masters(const LaunchPlan& p) {
  const Job& j = p.job;
  return j.training.master_weights == MasterWeights::kNone && j.parallel.zero >= 1 &&
         (j.training.precision == Precision::kBf16 || j.training.precision == Precision::kFp8);
}

std::vector<std::string> DeepspeedOptimizerNotes(const LaunchPlan& p) {
  if (p.job.parallel.offload == Offload::kNone) return {};
  if (DeepspeedBf16Masters(p))
    return {"optimizer: DeepSpeed builds DeepSpeedCPUAdam (bf16 moments, fp32_optimizer_states false) from the optimizer block: "
            "call deepspeed.initialize without optimizer= (a client optimizer must be "
            "deepspeed.ops.adam.DeepSpeedCPUAdam(params, fp32_optimizer_states=False)); put your lr, betas and weight_decay "
            "in optimizer.params (DeepSpeedCPUAdam's defaults otherwise: lr 1e-3, weight_decay 0)"};
  return {"optimizer: ZeRO-Offload steps on the CPU; the plan assumes deepspeed.ops.adam.DeepSpeedCPUAdam: pass it as the "
          "client optimizer (or no optimizer= and add an optimizer block); zero_force_ds_cpu_optimizer false lets a torch "
          "optimizer start too, at a slower step"};
}

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
  for (auto& x : DeepspeedOptimizerNotes(p)) n.push_back(std::move(x));
  n.push_back(std::string("written for ") + kPinDeepspeed);
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
  c["_gpuplan"] = {{"header", HeaderLines(p)}, {"notes", DeepspeedNotes(p)},
                   {"checkpoint", {{"save_steps", SaveSteps(p)}, {"dir", p.checkpoint_dir}, {"async", p.checkpoint_async},
                                   {"interval_min", p.checkpoint_interval_s / 60}, {"keep", CheckpointsKept()}}}};
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
  // The plan's gradient reduction in fp32 (training.fp32_allreduce; engine.py allreduce_bucket casts to it).
  if (j.training.fp32_allreduce) c["communication_data_type"] = "fp32";
  c["zero_optimization"] = DeepspeedZero(p);
  if (q.offload != Offload::kNone) {
    if (DeepspeedBf16Masters(p)) {
      c["optimizer"] = {{"type", "AdamW"}, {"params", nlohmann::ordered_json::object()}};
    } else {
      c["zero_force_ds_cpu_optimizer"] = false;
    }
  }
  if (q.tp > 1) c["tensor_parallel"] = {{"autotp_size", q.tp}};
  return c.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string Hostfile(const LaunchPlan& p) {
  std::string s = CommentHeader(p, "# ");
  s += "# One line per node: replace node-0 .. node-" + Str(p.nodes - 1) + " (placeholders) with the nodes' host names.\n";
  for (int64_t n = 0; n < p.nodes; ++n) s += "node-" + Str(n) + " slots=" + Str(p.gpus_per_node) + "\n";
  return s;
}

// The deepspeed launcher's view of the nodes: the hostfile over ssh/pdsh with several nodes, the local
// GPUs alone with one (no hostfile: the runner then uses localhost, launcher/runner.py main).
std::string DeepspeedLauncherNodes(const LaunchPlan& p) {
  if (p.nodes == 1) return "--num_gpus " + Str(p.gpus_per_node);
  return "--hostfile \"$(dirname \"$0\")/hostfile\" --num_nodes " + Str(p.nodes) + " --num_gpus " + Str(p.gpus_per_node) +
         " ${GPUPLAN_MASTER_ARGS[@]+\"${GPUPLAN_MASTER_ARGS[@]}\"}";
}

Artifact DeepspeedLauncher(const LaunchPlan& p, const std::string& script) {
  const bool multi = p.nodes > 1;
  std::string s = ScriptHead(p, multi ? "deepspeed launcher form: run it on the first node only; it reaches the others over ssh/pdsh "
                                        "through hostfile (put the nodes' real names there)."
                                      : "deepspeed launcher form: one node, its " + Str(p.gpus_per_node) + " local GPUs (no hostfile).");
  s += PinLine(kPinDeepspeed);
  if (multi) {
    // DeepSpeed's runner takes the first hostfile host as the master and asks it for its address over ssh
    // when --master_addr is empty (launcher/runner.py); a fixed default would send every node to itself.
    s += "# The master is the hostfile's first host, found by the runner; GPUPLAN_HEAD (if set) overrides it.\n";
    s += "GPUPLAN_MASTER_ARGS=()\n";
    s += "if [[ -n \"${GPUPLAN_HEAD:-}\" ]]; then GPUPLAN_MASTER_ARGS=(--master_addr \"$GPUPLAN_HEAD\"); fi\n";
  }
  s += EnvDefaults(p);
  s += "DEEPSPEED=\"${DEEPSPEED:-deepspeed}\"\n";
  s += "$DEEPSPEED " + DeepspeedLauncherNodes(p) + " --master_port \"$GPUPLAN_PORT\" \\\n  " + ScriptWords(script, p.script_args) +
       " --deepspeed --deepspeed_config \"$(dirname \"$0\")/ds_config.json\"";
  for (const auto& a : HfSaveArgs(p)) s += " " + a;
  s += " \"$@\"\n";
  return {"launch-deepspeed.sh", s, true};
}

std::vector<Artifact> ExportDeepspeed(const LaunchPlan& p) {
  LaunchSpec l{"deepspeed (torchrun form)", p.script, p.script_args,
               {"--deepspeed", "--deepspeed_config", "\"$(dirname \"$0\")/ds_config.json\""}, {}, CheckpointNotes(p)};
  for (const auto& a : HfSaveArgs(p)) l.extra.push_back(a);
  l.notes.push_back(std::string("written for ") + kPinDeepspeed);
  std::vector<Artifact> out = {{"ds_config.json", DeepspeedConfig(p), false}};
  if (p.nodes > 1) out.push_back({"hostfile", Hostfile(p), false});
  out.push_back(LaunchSh(p, l));
  out.push_back(DeepspeedLauncher(p, p.script));
  return out;
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

// training.master_weights none has no key in accelerate's YAML: FSDP's mixed precision and the
// DeepSpeed plugin's bf16 optimizer both keep an fp32 master copy of the weights (4 bytes a parameter,
// sharded as the optimizer states are), which the plan did not count. Said, with its size.
std::string AccelerateMasterWeightsNote(const LaunchPlan& p, const std::string& type) {
  const Job& j = p.job;
  if (j.training.master_weights != MasterWeights::kNone || j.training.precision == Precision::kFp32) return "";
  const ParallelSpec& q = j.parallel;
  const double params = static_cast<double>(CountParams(j.arch).total);
  const int64_t shards = (q.zero >= 1 ? q.dp : 1) * q.tp * q.pp;
  const double gib = 4.0 * params / static_cast<double>(std::max<int64_t>(1, shards)) / (1024.0 * 1024 * 1024);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", gib);
  const bool cpu = q.offload != Offload::kNone && type == "DEEPSPEED";
  return "# master_weights none is not expressible here: accelerate keeps fp32 master weights (4 bytes a parameter, ~" +
         std::string(buf) + " GiB per " + (cpu ? "GPU's share, in host memory with the offloaded optimizer" : "GPU") +
         ")\n# beyond the plan's memory; the DeepSpeed export sets bf16_master_weights_and_grads instead.\n";
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
  s += AccelerateMasterWeightsNote(p, type);
  s += PinLine(kPinAccelerate);
  s += "compute_environment: LOCAL_MACHINE\n";
  s += "distributed_type: " + type + "\n";
  s += "mixed_precision: " + AccelerateMixedPrecision(j) + "\n";
  s += "num_machines: " + Str(p.nodes) + "\n";
  s += "num_processes: " + Str(World(p)) + "  # all processes, not per node\n";
  s += "machine_rank: 0  # launch.sh passes --machine_rank $GPUPLAN_NODE_RANK\n";
  s += "main_process_ip: localhost  # launch.sh passes --main_process_ip $GPUPLAN_HEAD\n";
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

// launch.sh for accelerate: `accelerate launch --config_file accelerate.yaml`, the only way the YAML's
// FSDP/DeepSpeed reaches an unmodified Accelerator() script (accelerate sets ACCELERATE_USE_FSDP /
// ACCELERATE_USE_DEEPSPEED for it: utils/launch.py). The wrappers (slurm, kubernetes, skypilot) run this
// file on every node with GPUPLAN_NODE_RANK/GPUPLAN_HEAD set; accelerate's torchrun gets the c10d
// endpoint from them (same_network false) and PET_RDZV_CONF through --rdzv_conf (accelerate's own
// --rdzv_conf default would replace it: commands/launch.py).
Artifact AccelerateLaunchSh(const LaunchPlan& p) {
  std::string s = ScriptHead(p, "accelerate: the per-node command; run it once on each of the " + Str(p.nodes) +
                                    " node(s) with GPUPLAN_NODE_RANK set; accelerate launch applies accelerate.yaml.");
  s += PinLine(kPinAccelerate);
  for (const auto& n : CheckpointNotes(p)) s += "# " + n + "\n";
  s += EnvDefaults(p);
  s += "ACCELERATE=\"${ACCELERATE:-accelerate}\"\n";
  s += "$ACCELERATE launch --config_file \"$(dirname \"$0\")/accelerate.yaml\" --num_machines " + Str(p.nodes) + " --num_processes " +
       Str(World(p)) + " --machine_rank \"$GPUPLAN_NODE_RANK\" --main_process_ip \"$GPUPLAN_HEAD\" --main_process_port \"$GPUPLAN_PORT\"" +
       " --rdzv_backend c10d --rdzv_conf \"${PET_RDZV_CONF:-}\" \\\n  " + ScriptWords(p.script, p.script_args);
  for (const auto& a : BatchArgs(p)) s += " " + a;
  for (const auto& a : HfSaveArgs(p)) s += " " + a;
  s += " \"$@\"\n";
  return {"launch.sh", s, true};
}

std::vector<Artifact> ExportAccelerate(const LaunchPlan& p) {
  std::vector<Artifact> out = AccelerateConfigs(p);
  out.push_back(AccelerateLaunchSh(p));
  return out;
}

// ---- torchrun ----

std::vector<Artifact> ExportTorchrun(const LaunchPlan& p) {
  LaunchSpec l{"torchrun", p.script, p.script_args, {}, {}, {}};
  l.notes.push_back("torchrun carries the nodes and processes per node only: the layout (" + LayoutString(p.job) + ") and the batch");
  l.notes.push_back("(micro-batch " + Str(p.job.training.micro_batch) + " x " + Str(p.grad_accum) + " accumulation) are the script's.");
  if (!EvenLayerSplit(p.job.parallel.layer_split))
    l.notes.push_back("The script builds uneven pipeline stages: " + LayerSplitText(p.job.parallel.layer_split) +
                      " blocks (parallel.layer_split), the embedding on the first, the output layer on the last.");
  for (const auto& n : CheckpointNotes(p)) l.notes.push_back(n);
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

// ---- the model's own numbers: rotary base and scaling, norm epsilon, dropout, vocab padding ----
// Flags checked against Megatron-LM core_v0.19.0 (commit 5be96267, megatron/training/arguments.py and
// the TransformerConfig / TokenizerConfig / CheckpointConfig fields it turns into flags); the
// Megatron-Bridge keys against v0.6.0 (commit 51885cf1, GPTModelProvider); docs/export.md lists them.

bool Whole(double v);

// The shortest text that reads back to the same double; whole numbers in full ("500000", "1e-05", "8").
std::string Num(double v) {
  if (Whole(v)) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

bool Whole(double v) { return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15; }

// Megatron pads the embedding and the output layer to a multiple of make_vocab_size_divisible_by x tp;
// a converted Hugging Face checkpoint holds exactly config.json's vocab_size rows. The largest power of
// two up to Megatron's default 128 that pads none (Megatron-Bridge picks it the same way, tp aside);
// 1 when the vocab is not a multiple of tp (then padding is unavoidable).
int64_t VocabDivisor(int64_t vocab, int64_t tp) {
  for (int64_t d = 128; d > 1; d /= 2)
    if (vocab % (d * tp) == 0) return d;
  return 1;
}
int64_t PaddedVocab(int64_t vocab, int64_t tp) { return (vocab + tp - 1) / tp * tp; }

// Megatron-LM's --use-rope-scaling is Llama 3.1's with low 1, high 4, original 8192 fixed
// (megatron/core/models/common/embeddings/rotary_pos_embedding.py _apply_scaling): only the factor is a flag.
bool MegatronLlama3Defaults(const Arch& a) {
  return a.rope_low_freq_factor == 1 && a.rope_high_freq_factor == 4 && a.rope_original_max_positions == 8192;
}

Args MegatronRopeArgs(const Arch& a) {
  Args m;
  if (a.position != PositionKind::kRotary) return m;
  if (Whole(a.rope_theta)) m.push_back({"--rotary-base", Str(static_cast<int64_t>(a.rope_theta))});  // type=int upstream
  if (a.rope_scaling == RopeScaling::kLlama3) m.insert(m.end(), {{"--use-rope-scaling", ""}, {"--rope-scaling-factor", Num(a.rope_factor)}});
  if (a.rope_scaling == RopeScaling::kLinear && Whole(a.rope_factor))
    m.push_back({"--rotary-seq-len-interpolation-factor", Str(static_cast<int64_t>(a.rope_factor))});
  if (a.rope_scaling == RopeScaling::kYarn && a.IsMla()) m.push_back({"--rotary-scaling-factor", Num(a.rope_factor)});
  return m;
}

Args MegatronArchArgs(const LaunchPlan& p) {
  const Arch& a = p.job.arch;
  Args m = MegatronRopeArgs(a);
  m.push_back({"--norm-epsilon", Num(a.norm_eps)});
  if (!a.dropout) m.insert(m.end(), {{"--attention-dropout", "0.0"}, {"--hidden-dropout", "0.0"}});  // Megatron's default: 0.1
  m.push_back({"--make-vocab-size-divisible-by", Str(VocabDivisor(a.vocab, p.job.parallel.tp))});
  m.push_back({"--padded-vocab-size", Str(PaddedVocab(a.vocab, p.job.parallel.tp))});
  return m;
}

// What the flags above cannot say, as comment lines of megatron-args.sh.
std::string MegatronArchNotes(const LaunchPlan& p) {
  const Arch& a = p.job.arch;
  const int64_t tp = p.job.parallel.tp;
  std::string s = "# From the model: rope base " + Num(a.rope_theta) + ", norm epsilon " + Num(a.norm_eps) +
                  ", rope scaling " + ToString(a.rope_scaling) + "; vocab " + Str(a.vocab) + " -> " + Str(PaddedVocab(a.vocab, tp)) +
                  " rows.\n# --padded-vocab-size needs Megatron-LM core >= 0.18 (checked: core_v0.19.0); on older releases drop it:\n"
                  "# --make-vocab-size-divisible-by " + Str(VocabDivisor(a.vocab, tp)) + " x tp " + Str(tp) +
                  " gives the same rows when the tokenizer has exactly that length.\n";
  if (a.position == PositionKind::kRotary && !Whole(a.rope_theta))
    s += "# WARNING: rope_theta " + Num(a.rope_theta) + " is not a whole number; --rotary-base takes an integer: set it in the model spec.\n";
  if (a.rope_scaling == RopeScaling::kLlama3 && !MegatronLlama3Defaults(a))
    s += "# WARNING: llama3 rope scaling low " + Num(a.rope_low_freq_factor) + ", high " + Num(a.rope_high_freq_factor) + ", original " +
         Str(a.rope_original_max_positions) + " positions: Megatron fixes 1, 4 and 8192; only the factor is a flag.\n";
  if (a.rope_scaling == RopeScaling::kLinear && !Whole(a.rope_factor))
    s += "# WARNING: linear rope scaling factor " + Num(a.rope_factor) + ": --rotary-seq-len-interpolation-factor takes an integer.\n";
  if (a.rope_scaling == RopeScaling::kYarn)
    s += a.IsMla() ? "# yarn rope scaling: also set --mscale and --mscale-all-dim from config.json rope_scaling (Megatron's defaults 1.0 and 0.0).\n"
                   : "# WARNING: yarn rope scaling (factor " + Num(a.rope_factor) + "): set --position-embedding-type yarn and the --yarn-* flags from config.json.\n";
  if (a.rope_scaling == RopeScaling::kDynamic)
    s += "# WARNING: dynamic (NTK) rope scaling has no Megatron flag: the model trains with plain rotary positions.\n";
  if (a.rope_scaling == RopeScaling::kLongRope)
    s += "# WARNING: longrope scaling (Phi-3) has no Megatron flag: the model trains with plain rotary positions.\n";
  return s;
}

// A fine-tune starts from the published weights: convert them once, then point Megatron at them.
std::string MegatronFinetuneNotes(const LaunchPlan& p) {
  if (p.job.training.method == Method::kPretrain) return "";
  std::string s = "# Fine-tune from Hugging Face weights: convert them once (Megatron-Bridge v0.6.0 scripts/conversion/convert.sh),\n";
  s += "#   ./scripts/conversion/convert.sh import --executor local --device cpu --hf-model REPO_OR_FOLDER --megatron-path DIR\n";
  s += "# then run with GPUPLAN_PRETRAINED=DIR: --pretrained-checkpoint loads it as a fine-tune (weights only, iteration 0,\n";
  s += "# no optimizer or rng state) while --load holds no checkpoint of this run; Megatron resumes from --load after that.\n";
  s += "# Without --save/--load, the same start is:\n";
  s += "#   --load DIR --finetune --no-load-optim --no-load-rng --exit-on-missing-checkpoint\n";
  return s;
}

std::string MegatronFinetuneBlock(const LaunchPlan& p) {
  if (p.job.training.method == Method::kPretrain) return "";
  return "if [[ -n \"${GPUPLAN_PRETRAINED:-}\" ]]; then\n  MEGATRON_ARGS+=(--pretrained-checkpoint \"$GPUPLAN_PRETRAINED\")\nfi\n";
}

// Megatron's interleaved schedule runs M micro-batches in groups of G per virtual stage (G defaults to pp)
// and needs pp <= G <= M with M % G == 0 or >= pp (megatron/core/pipeline_parallel/schedules.py): the
// group the export sets, 0 when the default pp runs.
int64_t MicrobatchGroup(const LaunchPlan& p) {
  const ParallelSpec& q = p.job.parallel;
  const int64_t m = GradAccumSteps(p.job);
  if (q.vpp <= 1 || m < q.pp || m % q.pp == 0) return 0;
  return MegatronMicrobatchGroup(m, q.pp);
}

std::string MicrobatchGroupNote(const LaunchPlan& p, const std::string& key) {
  const int64_t g = MicrobatchGroup(p);
  if (g == 0) return "";
  const int64_t m = GradAccumSteps(p.job), pp = p.job.parallel.pp;
  return "# Interleaved pipeline: " + Str(m) + " micro-batches per step leave " + Str(m % pp) + " over pp " + Str(pp) +
         ": Megatron's default group of pp refuses that.\n# " + key + " " + Str(g) + ": the smallest group in [" + Str(pp) + ", " +
         Str(m) + "] it runs\n# (megatron/core/pipeline_parallel/schedules.py: pp <= group <= micro-batches, remainder 0 or >= pp).\n";
}

// ---- uneven pipeline stages (parallel.layer_split; data/pipeline_splits.csv, docs/export.md "Uneven pipeline stages") ----

// The form the plan's split takes on `engine` at the export's release; nullptr for an even split (CannotExpress
// has refused a split the engine cannot say before any exporter runs).
const SplitForm* SplitFormOf(const std::string& engine, const LaunchPlan& p) {
  return ChooseSplitForm(engine, p.engine_version, p.job.parallel.layer_split).form;
}

// The blocks of the first and the last stage when they differ from the stages between (both when pp is 2).
struct FirstLast {
  std::optional<int64_t> first, last;
};
FirstLast FirstLastOf(const std::vector<int64_t>& split) {
  FirstLast fl;
  if (split.size() < 2) return fl;
  const bool two = split.size() == 2;
  if (two || split.front() != split[1]) fl.first = split.front();
  if (two || split.back() != split[1]) fl.last = split.back();
  return fl;
}

// Megatron-LM's flags for the split: the first/last-stage pair when only those stages differ, else the layout
// (megatron/training/arguments.py:3095-3110; the layer offsets: megatron/core/transformer/transformer_layer.py
// get_transformer_layer_offset).
Args MegatronSplitArgs(const LaunchPlan& p) {
  const SplitForm* f = SplitFormOf("megatron", p);
  if (!f) return {};
  const auto& split = p.job.parallel.layer_split;
  if (f->form == "layout") return {{"--pipeline-model-parallel-layout", MegatronLayout(split, false)}};
  const FirstLast fl = FirstLastOf(split);
  Args m;
  if (fl.first) m.push_back({"--decoder-first-pipeline-num-layers", Str(*fl.first)});
  if (fl.last) m.push_back({"--decoder-last-pipeline-num-layers", Str(*fl.last)});
  return m;
}

// The same as Megatron-Bridge overrides (the TransformerConfig fields the flags set: megatron/training/
// argument_utils.py:310-311; Bridge's scripts/translate_mlm_to_bridge.py maps them the same way). The layout is
// written out block by block and quoted for Hydra: the file is read by word splitting, where '*' would glob.
std::vector<std::string> BridgeSplitOverrides(const LaunchPlan& p) {
  const SplitForm* f = SplitFormOf("megatron", p);
  if (!f) return {};
  const auto& split = p.job.parallel.layer_split;
  if (f->form == "layout") return {"model.pipeline_model_parallel_layout='" + MegatronLayout(split, true) + "'"};
  const FirstLast fl = FirstLastOf(split);
  std::vector<std::string> o;
  if (fl.first) o.push_back("model.num_layers_in_first_pipeline_stage=" + Str(*fl.first));
  if (fl.last) o.push_back("model.num_layers_in_last_pipeline_stage=" + Str(*fl.last));
  return o;
}

// The comment over the split's flags: which stage holds what, in which keys (`keys`, "" = the engine's own
// options), and where the rule is read.
std::string SplitNote(const std::string& engine, const LaunchPlan& p, const std::string& comment, const std::string& keys = "") {
  const SplitForm* f = SplitFormOf(engine, p);
  if (!f) return "";
  std::string s = comment + "Uneven pipeline stages (parallel.layer_split " + LayerSplitText(p.job.parallel.layer_split) +
                  " blocks; the embedding on the first stage,\n" + comment + "the output layer on the last): " + (keys.empty() ? f->keys : keys) + "\n" +
                  comment + "(" + f->source + " @ " + f->commit.substr(0, 7) + (f->min_version.empty() ? "" : "; since " + f->min_version) + ").\n";
  if (engine == "megatron" && !p.engine_version.empty())
    s += comment + "--engine-version " + p.engine_version + ": the split options are checked against that release; the other flags are\n" +
         comment + "those of the pinned release (docs/export.md \"Pinned versions\").\n";
  return s;
}

Args MegatronParallelArgs(const LaunchPlan& p) {
  const ParallelSpec& q = p.job.parallel;
  Args m = {{"--tensor-model-parallel-size", Str(q.tp)}, {"--pipeline-model-parallel-size", Str(q.pp)}};
  for (auto& a : MegatronSplitArgs(p)) m.push_back(std::move(a));
  if (q.vpp > 1) m.push_back({"--num-layers-per-virtual-pipeline-stage", Str(p.job.arch.layers / (q.pp * q.vpp))});
  if (const int64_t g = MicrobatchGroup(p); g > 0) m.push_back({"--microbatch-group-size-per-virtual-pipeline-stage", Str(g)});
  m.push_back({"--context-parallel-size", Str(q.cp)});
  if (q.ep > 1) m.push_back({"--expert-model-parallel-size", Str(q.ep)});
  if (q.sequence_parallel) m.push_back({"--sequence-parallel", ""});
  if (q.zero >= 1) m.push_back({"--use-distributed-optimizer", ""});
  // ZeRO-2/3 are Megatron-FSDP's optim_grads / optim_grads_params (Megatron-LM megatron/training/arguments.py, --data-parallel-sharding-strategy);
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

// --save / --load / --save-interval / --async-save (megatron/training/config/training_config.py CheckpointConfig;
// with the default torch_dist format async needs the persistent worker, arguments.py).
Args MegatronCheckpointArgs(const LaunchPlan& p) {
  // --load on the same folder: a restart (failure, spot reclaim) resumes from the newest save.
  Args m = {{"--save", p.checkpoint_dir}, {"--load", p.checkpoint_dir}, {"--save-interval", Str(SaveSteps(p))}};
  if (p.checkpoint_async) m.insert(m.end(), {{"--async-save", ""}, {"--use-persistent-ckpt-worker", ""}});
  return m;
}

std::string MegatronArgsFile(const LaunchPlan& p) {
  std::string s = CommentHeader(p, "# ");
  s += "# Megatron-LM pretrain_gpt.py flags for this plan (sourced by launch.sh). Data, tokenizer, loading and\n";
  s += "# learning-rate flags are yours: append them to MEGATRON_ARGS or pass them to launch.sh.\n";
  if (TpAcrossNodes(p))
    s += "# WARNING: tensor parallelism spans nodes (tp " + Str(p.job.parallel.tp) + " > " + Str(p.gpus_per_node) +
         " GPUs per node): every layer's all-reduce crosses the network.\n";
  if (p.job.arch.mlp == MlpKind::kGeGlu) s += "# geglu: no flag sets it; set the MLP activation in the model spec.\n";
  if (p.job.arch.norms_per_layer != 2) s += "# norms per layer " + Str(p.job.arch.norms_per_layer) + ": set them in the model spec.\n";
  s += MegatronArchNotes(p) + MegatronFinetuneNotes(p) + MicrobatchGroupNote(p, "--microbatch-group-size-per-virtual-pipeline-stage");
  s += SplitNote("megatron", p, "# ");
  s += "MEGATRON_ARGS=(\n";
  for (const Args& group : {MegatronModelArgs(p.job), MegatronArchArgs(p), MegatronParallelArgs(p), MegatronTrainingArgs(p)})
    for (const auto& [flag, value] : group) s += "  " + flag + (value.empty() ? "" : " " + ShellQuote(value)) + "\n";
  s += "  # checkpoints: " + CommentLine(CheckpointPolicyText(p)) + "\n";
  for (const auto& [flag, value] : MegatronCheckpointArgs(p)) s += "  " + flag + (value.empty() ? "" : " " + ShellQuote(value)) + "\n";
  return s + ")\n" + MegatronFinetuneBlock(p);
}

std::string BridgePrecision(const TrainingSpec& t) {
  switch (t.precision) {
    case Precision::kFp32: return "null";
    case Precision::kFp16: return "fp16_mixed";  // Bridge training/mixed_precision.py registers fp16_mixed
    case Precision::kBf16: return "bf16_mixed";
    case Precision::kFp8: break;
  }
  switch (t.fp8_recipe) {
    case Fp8Recipe::kDelayed: return "bf16_with_fp8_delayed_scaling_mixed";
    case Fp8Recipe::kMxfp8: return "bf16_with_mxfp8_mixed";
    default: return "bf16_with_fp8_current_scaling_mixed";
  }
}

// The model's numbers as GPTModelProvider fields (Megatron-Bridge v0.6.0 src/megatron/bridge/models/gpt_provider.py),
// so that a recipe of a neighbouring model cannot train a different one.
std::vector<std::string> BridgeArchOverrides(const LaunchPlan& p) {
  const Arch& a = p.job.arch;
  std::vector<std::string> o;
  if (a.position == PositionKind::kRotary && Whole(a.rope_theta)) o.push_back("model.rotary_base=" + Str(static_cast<int64_t>(a.rope_theta)));
  if (a.position == PositionKind::kRotary && a.rope_scaling != RopeScaling::kYarn) {
    o.push_back("model.rope_scaling=" + Str(a.rope_scaling == RopeScaling::kLlama3));
    if (a.rope_scaling == RopeScaling::kLlama3) o.push_back("model.rope_scaling_factor=" + Num(a.rope_factor));
  }
  o.push_back("model.layernorm_epsilon=" + Num(a.norm_eps));
  o.push_back("model.share_embeddings_and_output_weights=" + Str(a.tied_embeddings));
  o.push_back("model.add_qkv_bias=" + Str(a.qkv_bias || a.linear_bias));
  o.push_back("model.add_bias_linear=" + Str(a.linear_bias));
  o.push_back("model.make_vocab_size_divisible_by=" + Str(VocabDivisor(a.vocab, p.job.parallel.tp)));
  if (!a.dropout) o.insert(o.end(), {"model.hidden_dropout=0.0", "model.attention_dropout=0.0"});
  return o;
}

std::vector<std::string> BridgeOverrides(const LaunchPlan& p) {
  const Job& j = p.job;
  const ParallelSpec& q = j.parallel;
  const TrainingSpec& t = j.training;
  std::vector<std::string> o = {"model.tensor_model_parallel_size=" + Str(q.tp), "model.pipeline_model_parallel_size=" + Str(q.pp)};
  for (auto& x : BridgeSplitOverrides(p)) o.push_back(std::move(x));
  if (q.vpp > 1) o.push_back("model.virtual_pipeline_model_parallel_size=" + Str(q.vpp));
  if (const int64_t g = MicrobatchGroup(p); g > 0) o.push_back("model.microbatch_group_size_per_vp_stage=" + Str(g));
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
  for (auto& x : BridgeArchOverrides(p)) o.push_back(std::move(x));
  return o;
}

// Megatron-Bridge's CheckpointConfig (checkpoint.save, save_interval, async_save).
std::vector<std::string> BridgeCheckpointOverrides(const LaunchPlan& p) {
  // The file is read by word splitting ($(grep ...)): a path with other characters cannot be said in it.
  std::vector<std::string> o = {PlainValue(p.checkpoint_dir) ? "checkpoint.save=" + p.checkpoint_dir
                                                             : "# checkpoint.save=PATH: pass it on the command line (the path " +
                                                                   CommentLine(p.checkpoint_dir) + " is not one plain word)",
                                "checkpoint.save_interval=" + Str(SaveSteps(p))};
  if (p.checkpoint_async) o.push_back("checkpoint.async_save=true");
  return o;
}

std::string BridgeFile(const LaunchPlan& p) {
  std::string s = CommentHeader(p, "# ") + PinLine(kPinBridge);
  s += "# Megatron-Bridge overrides (one per line) for scripts/training/run_recipe.py --recipe <a recipe of this model>:\n";
  s += "#   python scripts/training/run_recipe.py --recipe RECIPE $(grep -v '^#' bridge-overrides.txt)\n";
  if (p.job.training.precision == Precision::kFp32) s += "# fp32: mixed_precision=null turns the recipe's mixed precision off.\n";
  if (p.job.training.method != Method::kPretrain)
    s += "# Fine-tune from Hugging Face weights: import them once (scripts/conversion/convert.sh import ... --megatron-path DIR)\n"
         "# and add checkpoint.pretrained_checkpoint=DIR (run_recipe.py --pretrained_checkpoint DIR).\n";
  s += MicrobatchGroupNote(p, "model.microbatch_group_size_per_vp_stage");
  if (const SplitForm* f = SplitFormOf("megatron", p))
    s += SplitNote("megatron", p, "# ",
                   f->form == "layout" ? "model.pipeline_model_parallel_layout (block by block)"
                                       : "model.num_layers_in_first_pipeline_stage / model.num_layers_in_last_pipeline_stage");
  for (const auto& o : BridgeOverrides(p)) s += o + "\n";
  for (const auto& o : BridgeCheckpointOverrides(p)) s += o + "\n";
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

// torchtitan v0.2.2's [model] table has name, flavor, hf_assets_path and converters only: rope_theta,
// norm_eps and the rope scaling are TransformerModelArgs fields of the flavor (torchtitan/models/llama3/
// model/args.py), whose llama3 flavors all carry rope_theta 500000, norm_eps 1e-5 and, always, Llama 3.1's
// scaling (RoPEScalingArgs: factor 8, low 1, high 4, original 8192; model.py precompute_freqs_cis).
std::string TitanArchNotes(const Arch& a, const std::string& flavor, Method method) {
  std::string s = "# rope_theta " + Num(a.rope_theta) + ", norm_eps " + Num(a.norm_eps) + ", rope scaling " + ToString(a.rope_scaling);
  if (a.rope_scaling == RopeScaling::kLlama3)
    s += " (factor " + Num(a.rope_factor) + ", low " + Num(a.rope_low_freq_factor) + ", high " + Num(a.rope_high_freq_factor) + ", original " +
         Str(a.rope_original_max_positions) + ")";
  s += ":\n# not settable from this TOML (the flavor's TransformerModelArgs carry them).\n";
  if (!flavor.empty()) {
    const bool llama31 = a.rope_scaling == RopeScaling::kLlama3 && a.rope_factor == 8 && MegatronLlama3Defaults(a);
    if (a.rope_theta != 500000 || a.norm_eps != 1e-5 || !llama31)
      s += "# WARNING: the built-in " + flavor + " flavor has rope_theta 500000, norm_eps 1e-5 and Llama 3.1 rope scaling (factor 8):\n" +
           "# register a flavor with this model's values" + (a.rope_scaling == RopeScaling::kNone ? " (rope_scaling_args scaling_factor 1.0 = none)" : "") +
           ", or it trains a different model.\n";
  }
  if (method != Method::kPretrain)
    s += "# Fine-tune from Hugging Face weights: [checkpoint] enable = true, and to launch.sh (it passes extra flags on):\n"
         "#   --checkpoint.initial_load_path FOLDER_OF_THE_SAFETENSORS --checkpoint.initial_load_in_hf\n";
  return s;
}

std::string TitanModel(const Job& j) {
  const Arch& a = j.arch;
  const std::string flavor = Llama3Flavor(a);
  std::string s = "[model]\n";
  if (!flavor.empty()) {
    s += "name = \"llama3\"\nflavor = \"" + flavor + "\"\n";
  } else {
    s += "# " + CommentLine(a.name) + " is not a built-in torchtitan flavor: register it (a TransformerModelArgs entry of its model family) with\n";
    s += "# layers " + Str(a.layers) + ", hidden " + Str(a.hidden) + ", heads " + Str(a.heads) + ", kv_heads " + Str(a.KvHeads()) +
         ", ffn " + Str(a.Ffn()) + ", vocab " + Str(a.vocab) + (a.IsMoe() ? ", experts " + Str(a.experts) + " top-" + Str(a.experts_per_token) : "") +
         ", and name it here.\n";
    // The torchtitan model family the shape belongs to (v0.2.x ships llama3, qwen3, deepseek_v3).
    const bool qwen3 = a.name.rfind("qwen3", 0) == 0;
    s += std::string("name = \"") + (a.IsMla() ? "deepseek_v3" : qwen3 ? "qwen3" : "llama3") + "\"\nflavor = \"gpuplan-custom\"\n";
  }
  s += TitanArchNotes(a, flavor, j.training.method);
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

const char* TitanSchedule(const ParallelSpec& q) { return q.vpp > 1 ? "Interleaved1F1B" : "1F1B"; }

// The pipeline split torchtitan makes (distributed/pipeline_parallel.py, the same at v0.2.2 and main):
// stages = ceil((layers + first_less + last_less) / layers_per_stage) must be a multiple of pp, and
// first/last_stage_less_layers default to 1 (the embedding and the output counted as a layer each).
// The plan splits as Megatron does, layers / (pp x vpp) blocks a stage with the embedding and the
// output on top: that is first/last_stage_less_layers 0, and then stages = pp x vpp exactly.
std::vector<std::pair<std::string, int64_t>> TitanStageSplit(const LaunchPlan& p) {
  const ParallelSpec& q = p.job.parallel;
  std::vector<std::pair<std::string, int64_t>> k = {{"pipeline_parallel_first_stage_less_layers", 0},
                                                    {"pipeline_parallel_last_stage_less_layers", 0}};
  if (q.vpp > 1) k.push_back({"pipeline_parallel_layers_per_stage", p.job.arch.layers / (q.pp * q.vpp)});
  return k;
}

// torchtitan's module_fqns_per_model_part for the plan's split (data/pipeline_splits.csv): one list of module
// names per stage, used as given (distributed/pipeline_parallel.py); the head is `output` in v0.2.x and `lm_head`
// on main. A multi-line array: `indent` before each stage, `close` before the final bracket.
std::string TitanFqnLists(const LaunchPlan& p, bool main_form) {
  constexpr size_t kNamesPerLine = 8;  // keeps a stage's line near 100 columns
  const std::string indent = main_form ? "        " : "  ", close = main_form ? "    " : "";
  const auto& split = p.job.parallel.layer_split;
  std::string s = "[\n";
  int64_t layer = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    std::vector<std::string> names;
    if (i == 0) names.push_back("tok_embeddings");
    for (int64_t k = 0; k < split[i]; ++k) names.push_back("layers." + Str(layer++));
    if (i + 1 == split.size()) names.insert(names.end(), {"norm", main_form ? "lm_head" : "output"});
    s += indent + "[";
    for (size_t n = 0; n < names.size(); ++n)
      s += (n == 0 ? "" : n % kNamesPerLine == 0 ? ",\n" + indent + " " : ", ") + nlohmann::json(names[n]).dump();
    s += "],\n";
  }
  return s + close + "]";
}

// torchtitan's parallelism settings, one list for both forms: the v0.2.x TOML's [parallelism] and main's
// config.parallelism (the same field names; main adds enable_sequence_parallel and counts microbatches).
struct TitanSetting {
  std::string key, value, comment;
};

std::vector<TitanSetting> TitanParallelSettings(const LaunchPlan& p, bool main_form) {
  const ParallelSpec& q = p.job.parallel;
  std::vector<TitanSetting> v = {{"data_parallel_replicate_degree", Str(q.zero == 0 ? q.dp : int64_t{1}), ""},
                                 {"data_parallel_shard_degree", Str(q.zero == 0 ? int64_t{1} : q.dp), ""}};
  if (q.zero == 2) v.push_back({"fsdp_reshard_after_forward", "\"never\"", "ZeRO-2: parameters stay gathered after forward"});
  if (q.zero == 3) v.push_back({"fsdp_reshard_after_forward", "\"always\"", ""});
  v.push_back({"tensor_parallel_degree", Str(q.tp), ""});
  if (main_form && q.tp > 1) v.push_back({"enable_sequence_parallel", PyBool(q.sequence_parallel), ""});
  v.push_back({"pipeline_parallel_degree", Str(q.pp), ""});
  if (q.pp > 1) {
    v.push_back({"pipeline_parallel_schedule", std::string("\"") + TitanSchedule(q) + "\"", ""});
    if (main_form)
      v.push_back({"num_pp_microbatches", Str(p.grad_accum), "the accumulation runs as pipeline microbatches"});
    else
      v.push_back({"pipeline_parallel_microbatch_size", Str(p.job.training.micro_batch), ""});
    if (SplitFormOf("torchtitan", p))
      v.push_back({"module_fqns_per_model_part", TitanFqnLists(p, main_form),
                   "parallel.layer_split " + LayerSplitText(p.job.parallel.layer_split) + " blocks per stage"});
    else
      for (const auto& [key, value] : TitanStageSplit(p)) v.push_back({key, Str(value), ""});
  }
  v.push_back({"context_parallel_degree", Str(q.cp), ""});
  v.push_back({"expert_parallel_degree", Str(q.ep), ""});
  return v;
}

std::string TitanSettingsText(const std::vector<TitanSetting>& v, const std::string& prefix) {
  std::string s;
  for (const TitanSetting& x : v) s += prefix + x.key + " = " + x.value + (x.comment.empty() ? "" : "  # " + x.comment) + "\n";
  return s;
}

std::string TitanParallelism(const LaunchPlan& p) {
  return "[parallelism]\n" + TitanSettingsText(TitanParallelSettings(p, false), "");
}

// torchtitan v0.2.x [checkpoint] (torchtitan/config/job_config.py Checkpoint: enable, folder,
// interval in steps, async_mode, keep_latest_k).
std::string TitanCheckpoint(const LaunchPlan& p) {
  std::string s = "[checkpoint]\n# " + CommentLine(CheckpointPolicyText(p)) + "\n";
  s += "enable = true\nfolder = " + TomlString(p.checkpoint_dir) + "\n";
  s += "interval = " + Str(SaveSteps(p)) + "\n";
  s += std::string("async_mode = \"") + (p.checkpoint_async ? "async" : "disabled") + "\"\n";
  s += "keep_latest_k = " + Str(CheckpointsKept()) + "\n";
  return s;
}

std::string TitanToml(const LaunchPlan& p) {
  const Job& j = p.job;
  std::string s = CommentHeader(p, "# ") + PinLine(kPinTitan02);
  s += "# torchrun ... -m torchtitan.train --job.config_file torchtitan.toml (--engine-version 0.2). torchtitan main\n"
       "# refuses this file (it takes only --module/--config Python configs): export without --engine-version for it.\n";
  s += "# the world size is not in this file: torchrun's " + Str(World(p)) + " processes = the product of the degrees below.\n\n";
  s += "[job]\ndump_folder = \"./outputs\"\ndescription = " + TomlString(p.job_name + ": " + LayoutString(j)) + "\n\n";
  s += TitanModel(j) + "\n" + TitanTraining(p) + "\n" + TitanParallelism(p) + "\n";
  s += "[activation_checkpoint]\nmode = \"" + ToString(j.training.recompute) + "\"\n";
  // "selective" alone is torchtitan's selective_ac_option "2": full checkpointing of every second block
  // (v0.2.2 config/job_config.py ActivationCheckpoint); "op" is per-op selective recompute, the plan's.
  if (j.training.recompute == Recompute::kSelective) s += "selective_ac_option = \"op\"\n";
  s += "\n";
  s += "[compile]\nenable = " + Str(j.training.compile) + "\n";
  if (j.training.precision == Precision::kFp8 && j.training.fp8_recipe != Fp8Recipe::kMxfp8)
    s += "\n[quantize.linear.float8]\nrecipe_name = \"" + ToString(j.training.fp8_recipe) + "\"\n";
  s += "\n" + TitanCheckpoint(p);
  return s;
}

// ---- torchtitan main: a Python config module (torchtitan/config/manager.py: --module names an importable
// module, --config a function in it returning a Trainer.Config; torchtitan/trainer.py Trainer.Config) ----

constexpr const char* kTitanModule = "gpuplan_torchtitan";
constexpr const char* kTitanFunction = "gpuplan_config";

// The model family's module and the upstream recipe function the config starts from (its dataset,
// tokenizer path, optimizer and schedule stay the recipe's: torchtitan/models/*/config_registry.py).
struct TitanBase {
  std::string family, recipe, flavor;
};
TitanBase TitanBaseOf(const Arch& a) {
  const std::string flavor = Llama3Flavor(a);
  if (flavor == "8B") return {"llama3", "llama3_8b", flavor};
  if (flavor == "70B") return {"llama3", "llama3_70b", flavor};
  if (flavor == "405B") return {"llama3", "llama3_405b", flavor};
  if (a.IsMla()) return {"deepseek_v3", "deepseek_v3_16b", ""};
  if (a.name.rfind("qwen3", 0) == 0) return {"qwen3", "qwen3_14b", ""};
  return {"llama3", "llama3_8b", ""};
}

// main's Float8LinearConverter has the rowwise recipes only (components/quantization/float8.py).
std::string TitanMainConverters(const Job& j) {
  if (j.training.precision != Precision::kFp8) return "";
  if (j.training.fp8_recipe == Fp8Recipe::kMxfp8) return "MXFP8LinearConverter.Config(model_compile_enabled=" + PyBool(j.training.compile) + ")";
  return "Float8LinearConverter.Config(recipe_name=\"rowwise\", model_compile_enabled=" + PyBool(j.training.compile) + ")";
}

// A user's text inside a Python comment: a line break would end the comment, so control characters become spaces.
std::string PyCommentSafe(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

std::string TitanMainModel(const Job& j, const TitanBase& b) {
  const Arch& a = j.arch;
  std::string s;
  if (b.flavor.empty())
    s += "    # " + PyCommentSafe(a.name) + " is not a built-in flavor: register one in torchtitan/models/" + b.family + " with layers " + Str(a.layers) +
         ", hidden " + Str(a.hidden) + ",\n    # heads " + Str(a.heads) + ", kv_heads " + Str(a.KvHeads()) + ", ffn " + Str(a.Ffn()) +
         ", vocab " + Str(a.vocab) + " and name it here (until then model_registry raises KeyError).\n";
  // main's built-in llama3 flavors carry the same rope_theta, norm_eps and Llama 3.1 scaling as v0.2.2's
  // (torchtitan/models/llama3/__init__.py): a model with other values needs its own flavor.
  if (!b.flavor.empty() && b.family == "llama3") {
    const bool llama31 = a.rope_scaling == RopeScaling::kLlama3 && a.rope_factor == 8 && MegatronLlama3Defaults(a);
    if (a.rope_theta != 500000 || a.norm_eps != 1e-5 || !llama31)
      s += "    # WARNING: the built-in " + b.flavor + " flavor has rope_theta 500000, norm_eps 1e-5 and Llama 3.1 rope scaling (factor 8);\n"
           "    # this model has rope_theta " + Num(a.rope_theta) + ", norm_eps " + Num(a.norm_eps) + ", rope scaling " +
           ToString(a.rope_scaling) + ":\n    # register a flavor with its values, or it trains a different model.\n";
  }
  const std::string conv = TitanMainConverters(j);
  if (j.training.precision == Precision::kFp8 && j.training.fp8_recipe != Fp8Recipe::kMxfp8)
    s += "    # fp8 " + ToString(j.training.fp8_recipe) + ": torchtitan main's float8 converter has the rowwise recipes only.\n";
  s += "    config.model_spec = model_registry(" + nlohmann::json(b.flavor.empty() ? "gpuplan-custom" : b.flavor).dump() +
       (conv.empty() ? "" : ", converters=[" + conv + "]") + ")\n";
  return s;
}

std::string TitanMainTraining(const LaunchPlan& p) {
  const TrainingSpec& t = p.job.training;
  std::string s = "    t = config.training\n";
  s += "    t.num_tokens_per_microbatch_per_dp_rank = " + Str(t.micro_batch * t.seq_len) + "  # micro-batch " + Str(t.micro_batch) +
       " x seq_len " + Str(t.seq_len) + "\n";
  s += "    t.num_tokens_per_train_step = " + Str(t.global_batch * t.seq_len) + "  # global batch " + Str(t.global_batch) + " x seq_len\n";
  s += "    t.max_context_length = " + Str(t.seq_len) + "\n";
  s += "    t.max_norm = 1.0\n";
  if (t.tokens > 0)
    s += "    t.steps = " + Str(static_cast<int64_t>(std::ceil(t.tokens / (static_cast<double>(t.global_batch) * t.seq_len)))) +
         "  # training.tokens / (global batch x seq_len)\n";
  else
    s += "    # t.steps: the recipe's (the job gives no training.tokens)\n";
  s += std::string("    t.mixed_precision_param = \"") + (t.precision == Precision::kFp32 ? "float32" : "bfloat16") + "\"\n";
  s += "    t.mixed_precision_reduce = \"float32\"\n";
  return s;
}

std::string TitanMainParallelism(const LaunchPlan& p) {
  return "    par = config.parallelism\n" + TitanSettingsText(TitanParallelSettings(p, true), "    par.");
}

std::string TitanMainRest(const LaunchPlan& p) {
  const TrainingSpec& t = p.job.training;
  std::string s;
  // Trainer.Config.activation_checkpoint: SelectiveAC (per-op), FullAC, or None (distributed/activation_checkpoint.py).
  switch (t.recompute) {
    case Recompute::kSelective: s += "    config.activation_checkpoint = SelectiveAC.Config()  # per-op selective recompute\n"; break;
    case Recompute::kFull: s += "    config.activation_checkpoint = FullAC.Config()\n"; break;
    default: s += "    config.activation_checkpoint = None\n"; break;
  }
  s += "    config.compile.enable = " + PyBool(t.compile) + "\n";
  s += "    # checkpoints: " + CheckpointPolicyText(p) + "\n";
  s += "    ck = config.checkpoint\n";
  s += "    ck.enable = True\n    ck.folder = " + nlohmann::json(p.checkpoint_dir).dump() + "\n";
  s += "    ck.interval = " + Str(SaveSteps(p)) + "\n";
  s += std::string("    ck.async_mode = \"") + (p.checkpoint_async ? "async" : "disabled") + "\"\n";
  s += "    ck.keep_latest_k = " + Str(CheckpointsKept()) + "\n";
  return s;
}

std::string TitanPython(const LaunchPlan& p) {
  const Job& j = p.job;
  const TitanBase b = TitanBaseOf(j.arch);
  std::string s = CommentHeader(p, "# ") + PinLine(kPinTitanMain);
  s += "# launch.sh: torchrun ... -m torchtitan.train --module " + std::string(kTitanModule) + " --config " + kTitanFunction +
       " (this directory on PYTHONPATH).\n";
  s += "# The world size is not in this file: torchrun's " + Str(World(p)) + " processes = the product of the degrees below.\n";
  s += "# Data, tokenizer (hf_assets_path), optimizer and learning-rate schedule are the " + b.recipe + " recipe's: change them here.\n";
  if (j.training.method != Method::kPretrain)
    s += "# Fine-tune from Hugging Face weights: config.checkpoint.initial_load_path = FOLDER, initial_load_in_hf = True.\n";
  s += "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n";
  if (j.training.precision == Precision::kFp8) s += "from torchtitan.components.quantization import Float8LinearConverter, MXFP8LinearConverter\n";
  s += "from torchtitan.models." + b.family + " import model_registry\n";
  s += "from torchtitan.models." + b.family + ".config_registry import " + b.recipe + "\n";
  s += "from torchtitan.trainer import Trainer\n\n\n";
  s += "def " + std::string(kTitanFunction) + "() -> Trainer.Config:\n";
  s += "    config = " + b.recipe + "()\n";
  s += "    config.dump_folder = \"./outputs\"\n";
  s += TitanMainModel(j, b) + TitanMainTraining(p) + TitanMainParallelism(p) + TitanMainRest(p);
  s += "    return config\n";
  return s;
}

// "" (the pinned main) or "0.2" / "0.2.x": which torchtitan the export is for.
bool TitanV02(const LaunchPlan& p) { return p.engine_version.rfind("0.2", 0) == 0; }

std::vector<Artifact> ExportTorchtitan(const LaunchPlan& p) {
  const bool default_script = p.script == "train.py";
  const bool v02 = TitanV02(p);
  std::vector<std::string> extra;
  if (v02) {
    extra = {"--job.config_file", "\"$(dirname \"$0\")/torchtitan.toml\""};
  } else {
    extra = {"--module", kTitanModule, "--config", kTitanFunction};
  }
  LaunchSpec l{"torchtitan", default_script ? "-m" : p.script, p.script_args, extra, {}, {}};
  if (default_script) l.script_args.insert(l.script_args.begin(), "torchtitan.train");
  l.notes.push_back(std::string("written for ") + (v02 ? kPinTitan02 : kPinTitanMain));
  if (v02) return {{"torchtitan.toml", TitanToml(p), false}, LaunchSh(p, l)};
  l.pre.push_back("# " + std::string(kTitanModule) + ".py (--module) is imported from this directory.");
  l.pre.push_back("export PYTHONPATH=\"$(cd \"$(dirname \"$0\")\" && pwd)${PYTHONPATH:+:$PYTHONPATH}\"");
  return {{std::string(kTitanModule) + ".py", TitanPython(p), false}, LaunchSh(p, l)};
}

}  // namespace

// What a format cannot express: its own engine's row of data/engines.csv (one table with the
// planner); torchrun and the wrappers carry nodes and processes only.
std::string CannotExpress(ExportFormat engine, const LaunchPlan& plan) {
  const std::string name = ToString(engine);
  const EngineCaps* e = EngineForFormat(name);
  if (!e) return "";
  if (std::string why = EngineCannotTrain(*e, plan.job, name); !why.empty()) return why;
  // Uneven stages first: the engine's own reason (DeepSpeed's partition_method) says more than "no pipeline".
  const std::string version = engine == ExportFormat::kMegatron || engine == ExportFormat::kTorchtitan ? plan.engine_version : "";
  if (SplitChoice c = ChooseSplitForm(name, version, plan.job.parallel.layer_split); !c.refusal.empty()) return c.refusal;
  return EngineCannotLayout(*e, plan.job, plan.gpus_per_node, name);
}

std::vector<std::pair<std::string, std::string>> PinsForFormat(ExportFormat engine) {
  // The format's own engine as the job's framework: the planner then searches only the layouts
  // that engine expresses (data/engines.csv).
  const EngineCaps* e = EngineForFormat(ToString(engine));
  if (!e) return {};
  return {{"training.framework", e->id}};
}

// --engine-version: torchtitan has two (main's Python config, the default, and "0.2" for the v0.2.x
// TOML); every other format has the one it pins.
Status CheckEngineVersion(ExportFormat engine, const std::string& version) {
  if (version.empty()) return Status::Ok();
  const Location where{"command line", 0, "--engine-version"};
  if (engine == ExportFormat::kTorchtitan) {
    if (version == "0.2" || version == "0.2.x" || (version.rfind("0.2.", 0) == 0 && version.size() > 4 &&
                                                   version.find_first_not_of("0123456789", 4) == std::string::npos))
      return Status::Ok();
    return Status::BadInput(where, "'" + version + "': torchtitan exports main's Python config (the default) or, with 0.2, the v0.2.x TOML");
  }
  // megatron: the Megatron-Core release the pipeline split options are checked against (data/pipeline_splits.csv).
  int64_t release[3];
  if (engine == ExportFormat::kMegatron) {
    if (ParseRelease(version, release)) return Status::Ok();
    return Status::BadInput(where, "'" + version + "': megatron takes a Megatron-Core release (0.12, core_v0.12.0, core_r0.13.0)");
  }
  return Status::BadInput(where, "'" + version + "': " + ToString(engine) +
                                     " has one pinned version (docs/export.md \"Pinned versions\"); only torchtitan (0.2) and megatron (a "
                                     "Megatron-Core release, for the pipeline split) take --engine-version");
}

Result<std::vector<Artifact>> ExportEngine(ExportFormat engine, const LaunchPlan& plan, const Catalog& catalog) {
  if (!IsEngine(engine)) return Status::Internal("ExportEngine: " + ToString(engine) + " is not an engine");
  GPUPLAN_RETURN_IF_ERROR(CheckEngineVersion(engine, plan.engine_version));
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
