// gpuplan import: the key and flag tables of each format (docs/export.md "Import").
#include "import_internal.h"

namespace gpuplan::import_detail {

// ---- DeepSpeed ds_config.json (§1.1, DeepSpeed 0.19.6 docs/_pages/config-json.md) ----

const KeyTable& DeepspeedKeys() {
  static const KeyTable t = {
      {"_gpuplan", Role::kTrace},
      {"train_batch_size", Role::kModel}, {"train_micro_batch_size_per_gpu", Role::kModel}, {"gradient_accumulation_steps", Role::kModel},
      {"bf16", Role::kSection}, {"bf16.enabled", Role::kModel}, {"bf16.bf16_master_weights_and_grads", Role::kModel},
      {"bf16.bf16_optimizer_states", Role::kModel}, {"bf16.immediate_grad_update", Role::kNoEffect}, {"bf16.check_grad_overflow", Role::kNoEffect},
      {"bfloat16", Role::kSection}, {"bfloat16.enabled", Role::kModel},
      {"fp16", Role::kSection}, {"fp16.enabled", Role::kModel}, {"fp16.auto_cast", Role::kNoEffect}, {"fp16.loss_scale", Role::kNoEffect},
      {"fp16.initial_scale_power", Role::kNoEffect}, {"fp16.loss_scale_window", Role::kNoEffect}, {"fp16.hysteresis", Role::kNoEffect},
      {"fp16.consecutive_hysteresis", Role::kNoEffect}, {"fp16.min_loss_scale", Role::kNoEffect}, {"fp16.fp16_master_weights_and_grads", Role::kNoEffect},
      {"amp", Role::kSection}, {"amp.enabled", Role::kModel}, {"amp.opt_level", Role::kNoEffect},
      {"zero_optimization", Role::kSection}, {"zero_optimization.stage", Role::kModel},
      {"zero_optimization.offload_optimizer", Role::kSection}, {"zero_optimization.offload_optimizer.device", Role::kModel},
      {"zero_optimization.offload_optimizer.nvme_path", Role::kNoEffect}, {"zero_optimization.offload_optimizer.pin_memory", Role::kNoEffect},
      {"zero_optimization.offload_optimizer.ratio", Role::kNoEffect}, {"zero_optimization.offload_optimizer.buffer_count", Role::kNoEffect},
      {"zero_optimization.offload_optimizer.fast_init", Role::kNoEffect},
      {"zero_optimization.offload_param", Role::kSection}, {"zero_optimization.offload_param.device", Role::kModel},
      {"zero_optimization.offload_param.nvme_path", Role::kNoEffect}, {"zero_optimization.offload_param.pin_memory", Role::kNoEffect},
      {"zero_optimization.offload_param.buffer_count", Role::kNoEffect}, {"zero_optimization.offload_param.buffer_size", Role::kNoEffect},
      {"zero_optimization.offload_param.max_in_cpu", Role::kNoEffect},
      {"zero_optimization.cpu_offload", Role::kModel},
      {"zero_optimization.overlap_comm", Role::kNoEffect}, {"zero_optimization.reduce_bucket_size", Role::kNoEffect},
      {"zero_optimization.allgather_bucket_size", Role::kNoEffect}, {"zero_optimization.contiguous_gradients", Role::kNoEffect},
      {"zero_optimization.reduce_scatter", Role::kNoEffect}, {"zero_optimization.allgather_partitions", Role::kNoEffect},
      {"zero_optimization.stage3_prefetch_bucket_size", Role::kNoEffect}, {"zero_optimization.stage3_param_persistence_threshold", Role::kNoEffect},
      {"zero_optimization.stage3_max_live_parameters", Role::kNoEffect}, {"zero_optimization.stage3_max_reuse_distance", Role::kNoEffect},
      {"zero_optimization.stage3_gather_16bit_weights_on_model_save", Role::kNoEffect},
      // The same fields by their own names (DeepSpeed runtime/zero/config.py: the stage3_ names are
      // aliases, and the model populates by name too).
      {"zero_optimization.max_live_parameters", Role::kNoEffect}, {"zero_optimization.max_reuse_distance", Role::kNoEffect},
      {"zero_optimization.gather_16bit_weights_on_model_save", Role::kNoEffect},
      {"zero_optimization.prefetch_bucket_size", Role::kNoEffect}, {"zero_optimization.param_persistence_threshold", Role::kNoEffect},
      {"zero_optimization.model_persistence_threshold", Role::kNoEffect},
      {"zero_optimization.stage3_gather_fp16_weights_on_model_save", Role::kNoEffect}, {"zero_optimization.sub_group_size", Role::kNoEffect},
      {"zero_optimization.round_robin_gradients", Role::kNoEffect}, {"zero_optimization.zero_hpz_partition_size", Role::kNoEffect},
      {"zero_optimization.zero_quantized_weights", Role::kNotModelled}, {"zero_optimization.zero_quantized_gradients", Role::kNotModelled},
      {"zero_optimization.elastic_checkpoint", Role::kNoEffect}, {"zero_optimization.load_from_fp32_weights", Role::kNoEffect},
      {"zero_optimization.ignore_unused_parameters", Role::kNoEffect}, {"zero_optimization.mics_shard_size", Role::kNotModelled},
      {"zero_optimization.mics_hierarchical_params_gather", Role::kNotModelled},
      {"optimizer", Role::kSection}, {"optimizer.type", Role::kModel}, {"optimizer.params", Role::kNoEffect},
      {"scheduler", Role::kNoEffect}, {"gradient_clipping", Role::kNoEffect}, {"prescale_gradients", Role::kNoEffect},
      {"gradient_predivide_factor", Role::kNoEffect}, {"communication_data_type", Role::kModel}, {"sparse_gradients", Role::kNoEffect},
      {"activation_checkpointing", Role::kNoEffect}, {"zero_allow_untested_optimizer", Role::kNoEffect},
      {"zero_force_ds_cpu_optimizer", Role::kNoEffect}, {"data_types", Role::kSection}, {"data_types.grad_accum_dtype", Role::kModel},
      {"tensor_parallel", Role::kSection}, {"tensor_parallel.autotp_size", Role::kModel},
      {"steps_per_print", Role::kNotModelled}, {"wall_clock_breakdown", Role::kNotModelled}, {"dump_state", Role::kNotModelled},
      {"memory_breakdown", Role::kNotModelled}, {"flops_profiler", Role::kNotModelled}, {"tensorboard", Role::kNotModelled},
      {"wandb", Role::kNotModelled}, {"csv_monitor", Role::kNotModelled}, {"comms_logger", Role::kNotModelled},
      {"aio", Role::kNotModelled}, {"checkpoint", Role::kNotModelled}, {"elasticity", Role::kNotModelled},
      {"autotuning", Role::kNotModelled}, {"compression_training", Role::kNotModelled}, {"data_efficiency", Role::kNotModelled},
      {"curriculum_learning", Role::kNotModelled}, {"pipeline", Role::kNotModelled}, {"seq_parallel_communication_data_type", Role::kNotModelled},
  };
  return t;
}

// A batch value of a config: "auto" or a whole number; nullopt when absent.


// ---- HF accelerate config YAML (§1.2, accelerate 1.15.0.dev0) ----

const KeyTable& AccelerateKeys() {
  static const KeyTable t = [] {
    KeyTable k = {
        {"compute_environment", Role::kNoEffect}, {"distributed_type", Role::kModel}, {"mixed_precision", Role::kModel},
        {"num_machines", Role::kModel}, {"num_processes", Role::kModel}, {"machine_rank", Role::kNoEffect},
        {"main_process_ip", Role::kNoEffect}, {"main_process_port", Role::kNoEffect}, {"rdzv_backend", Role::kNoEffect},
        {"same_network", Role::kNoEffect}, {"main_training_function", Role::kNoEffect}, {"use_cpu", Role::kModel},
        {"gpu_ids", Role::kNoEffect}, {"downcast_bf16", Role::kNoEffect}, {"debug", Role::kNotModelled},
        {"enable_cpu_affinity", Role::kNoEffect}, {"tpu_env", Role::kNotModelled}, {"tpu_use_cluster", Role::kNotModelled},
        {"tpu_use_sudo", Role::kNotModelled}, {"ipex_config", Role::kNotModelled}, {"mpirun_config", Role::kNotModelled},
        {"fp8_config", Role::kNotModelled}, {"num_cpu_threads_per_process", Role::kNoEffect},
        {"dynamo_config", Role::kSection}, {"dynamo_config.dynamo_backend", Role::kModel}, {"dynamo_config.dynamo_mode", Role::kNoEffect},
        {"dynamo_config.dynamo_use_fullgraph", Role::kNoEffect}, {"dynamo_config.dynamo_use_dynamic", Role::kNoEffect},
        {"fsdp_config", Role::kSection}, {"deepspeed_config", Role::kSection}, {"megatron_lm_config", Role::kSection},
        {"parallelism_config", Role::kSection},
    };
    for (const char* f : {"fsdp_version", "fsdp_sharding_strategy", "fsdp_reshard_after_forward", "fsdp_offload_params",
                          "fsdp_activation_checkpointing", "fsdp_cpu_offload"})
      k[std::string("fsdp_config.") + f] = Role::kModel;
    for (const char* f : {"fsdp_backward_prefetch", "fsdp_forward_prefetch", "fsdp_sync_module_states", "fsdp_use_orig_params",
                          "fsdp_state_dict_type", "fsdp_auto_wrap_policy", "fsdp_transformer_layer_cls_to_wrap", "fsdp_min_num_params",
                          "fsdp_cpu_ram_efficient_loading", "fsdp_backward_prefetch_policy"})
      k[std::string("fsdp_config.") + f] = Role::kNoEffect;
    for (const char* f : {"zero_stage", "gradient_accumulation_steps", "offload_optimizer_device", "offload_param_device", "deepspeed_config_file"})
      k[std::string("deepspeed_config.") + f] = Role::kModel;
    for (const char* f : {"gradient_clipping", "offload_optimizer_nvme_path", "offload_param_nvme_path", "zero3_init_flag",
                          "zero3_save_16bit_model", "deepspeed_moe_layer_cls_names", "deepspeed_hostfile", "deepspeed_inclusion_filter",
                          "deepspeed_exclusion_filter", "deepspeed_multinode_launcher"})
      k[std::string("deepspeed_config.") + f] = Role::kNoEffect;
    for (const char* f : {"megatron_lm_tp_degree", "megatron_lm_pp_degree", "megatron_lm_num_micro_batches", "megatron_lm_sequence_parallelism",
                          "megatron_lm_recompute_activations", "megatron_lm_use_distributed_optimizer"})
      k[std::string("megatron_lm_config.") + f] = Role::kModel;
    k["megatron_lm_config.megatron_lm_gradient_clipping"] = Role::kNoEffect;
    for (const char* f : {"parallelism_config_dp_replicate_size", "parallelism_config_dp_shard_size", "parallelism_config_tp_size",
                          "parallelism_config_cp_size"})
      k[std::string("parallelism_config.") + f] = Role::kModel;
    for (const char* f : {"parallelism_config_cp_comm_strategy", "parallelism_config_sp_size", "parallelism_config_sp_backend"})
      k[std::string("parallelism_config.") + f] = Role::kNoEffect;
    return k;
  }();
  return t;
}


// ---- torchtitan v0.2.x TOML (§1.5) ----

const KeyTable& TorchtitanKeys() {
  static const KeyTable t = [] {
    KeyTable k;
    auto section = [&](const std::string& name, std::initializer_list<const char*> model, std::initializer_list<const char*> no_effect) {
      k[name] = Role::kSection;
      for (const char* f : model) k[name + "." + f] = Role::kModel;
      for (const char* f : no_effect) k[name + "." + f] = Role::kNoEffect;
    };
    section("job", {}, {"config_file", "dump_folder", "description", "print_args", "use_for_integration_test", "print_config"});
    section("model", {"name", "flavor", "converters"}, {"hf_assets_path", "tokenizer_path", "print_after_conversion"});
    section("optimizer", {"name", "early_step_in_backward"}, {"lr", "eps", "weight_decay", "beta1", "beta2", "implementation"});
    section("training", {"local_batch_size", "batch_size", "global_batch_size", "seq_len", "steps", "mixed_precision_param",
                         "enable_cpu_offload"},
            {"max_norm", "mixed_precision_reduce", "dataset", "dataset_path", "warmup_steps", "gc_freq", "seed", "deterministic", "debug_moe_force_load_balance",
             "gc_debug"});
    section("parallelism", {"data_parallel_replicate_degree", "data_parallel_shard_degree", "fsdp_reshard_after_forward",
                            "tensor_parallel_degree", "pipeline_parallel_degree", "pipeline_parallel_schedule",
                            "pipeline_parallel_microbatch_size", "pipeline_parallel_layers_per_stage", "context_parallel_degree",
                            "expert_parallel_degree"},
            {"disable_loss_parallel", "enable_async_tensor_parallel", "pipeline_parallel_schedule_csv", "pipeline_parallel_first_stage_less_layers",
             "pipeline_parallel_last_stage_less_layers", "pipeline_parallel_split_points", "module_fqns_per_model_part",
             "context_parallel_rotate_method", "expert_tensor_parallel_degree", "enable_compiled_autograd"});
    section("activation_checkpoint", {"mode", "selective_ac_option"}, {"per_op_sac_force_recompute_mm_shapes_by_fqns", "memory_budget",
                                               "early_stop", "preserve_rng_state", "determinism_check", "debug"});
    section("compile", {"enable", "components"}, {"backend"});
    section("checkpoint", {"async_mode"}, {"enable", "enable_checkpoint", "folder", "interval", "keep_latest_k", "last_save_model_only",
                                          "export_dtype", "load_step", "initial_load_path", "initial_load_model_only", "exclude_from_loading",
                                          "enable_first_step_checkpoint", "create_seed_checkpoint", "load_only", "initial_load_in_hf",
                                          "last_save_in_hf"});
    k["quantize"] = Role::kSection;
    k["quantize.linear"] = Role::kSection;
    k["quantize.linear.float8"] = Role::kSection;
    k["quantize.linear.float8.recipe_name"] = Role::kModel;
    for (const char* f : {"enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp", "filter_fqns", "emulate"})
      k[std::string("quantize.linear.float8.") + f] = Role::kNoEffect;
    k["quantize.linear.mx"] = Role::kNoEffect;
    k["quantize.grouped_mm"] = Role::kNoEffect;
    for (const char* s : {"lr_scheduler", "metrics", "profiling", "comm", "memory_estimation", "fault_tolerance", "experimental",
                          "validation", "float8", "mx"})
      k[s] = Role::kNoEffect;
    return k;
  }();
  return t;
}


const std::set<std::string>& TorchrunValued() {
  static const std::set<std::string> s = {"nnodes", "nproc-per-node", "node-rank", "rdzv-backend", "rdzv-endpoint", "rdzv-id", "rdzv-conf",
                                          "master-addr", "master-port", "max-restarts", "monitor-interval", "start-method", "role",
                                          "log-dir", "redirects", "r", "tee", "t", "local-ranks-filter", "local-addr", "logs-specs",
                                          "numa-binding", "event-log-handler", "signals-to-handle"};
  return s;
}
const std::set<std::string>& TorchrunSwitches() {
  static const std::set<std::string> s = {"standalone", "no-python", "run-path", "use-env", "virtual-local-rank"};
  return s;
}
const std::set<std::string>& DeepspeedValued() {
  static const std::set<std::string> s = {"hostfile", "h", "include", "i", "exclude", "e", "num-nodes", "min-elastic-nodes",
                                          "max-elastic-nodes", "num-gpus", "num-accelerators", "master-port", "master-addr", "node-rank",
                                          "launcher", "launcher-args", "ssh-port", "comment", "venv-script", "autotuning", "bind-core-list"};
  return s;
}
const std::set<std::string>& DeepspeedSwitches() {
  static const std::set<std::string> s = {"no-ssh", "no-ssh-check", "force-multi", "no-python", "no-local-rank", "save-pid",
                                          "enable-each-rank-log", "elastic-training", "bind-cores-to-rank"};
  return s;
}
// accelerate launch flags and the config key each one overrides ("" = read, no effect on the estimate).
const std::map<std::string, std::string>& AccelerateFlags() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> f = {
        {"config-file", ""}, {"num-processes", "num_processes"}, {"num-machines", "num_machines"}, {"mixed-precision", "mixed_precision"},
        {"dynamo-backend", "dynamo_config.dynamo_backend"}, {"deepspeed-config-file", "deepspeed_config.deepspeed_config_file"},
        {"zero-stage", "deepspeed_config.zero_stage"}, {"offload-optimizer-device", "deepspeed_config.offload_optimizer_device"},
        {"offload-param-device", "deepspeed_config.offload_param_device"},
        {"gradient-accumulation-steps", "deepspeed_config.gradient_accumulation_steps"}, {"machine-rank", ""}, {"main-process-ip", ""},
        {"main-process-port", ""}, {"rdzv-backend", ""}, {"gpu-ids", ""}, {"dynamo-mode", ""}, {"gradient-clipping", ""},
        {"num-cpu-threads-per-process", ""}, {"deepspeed-hostfile", ""}, {"deepspeed-multinode-launcher", ""},
        {"main-training-function", ""}, {"zero3-init-flag", ""}, {"zero3-save-16bit-model", ""}, {"offload-optimizer-nvme-path", ""},
        {"offload-param-nvme-path", ""}, {"deepspeed-inclusion-filter", ""}, {"deepspeed-exclusion-filter", ""},
    };
    for (const char* k : {"sharding-strategy", "offload-params", "activation-checkpointing", "version", "reshard-after-forward"}) {
      std::string key = std::string("fsdp_config.fsdp_") + k;
      std::replace(key.begin(), key.end(), '-', '_');
      f[std::string("fsdp-") + k] = key;
    }
    for (const char* k : {"auto-wrap-policy", "transformer-layer-cls-to-wrap", "state-dict-type", "cpu-ram-efficient-loading",
                          "sync-module-states", "use-orig-params", "backward-prefetch", "forward-prefetch", "min-num-params"})
      f[std::string("fsdp-") + k] = "";
    for (const char* k : {"tp-size", "cp-size", "dp-shard-size", "dp-replicate-size"}) {
      std::string key = std::string("parallelism_config.parallelism_config_") + k;
      std::replace(key.begin(), key.end(), '-', '_');
      f[std::string("parallelism-config-") + k] = key;
    }
    for (const char* k : {"tp-degree", "pp-degree", "num-micro-batches", "sequence-parallelism", "recompute-activations",
                          "use-distributed-optimizer"}) {
      std::string key = std::string("megatron_lm_config.megatron_lm_") + k;
      std::replace(key.begin(), key.end(), '-', '_');
      f[std::string("megatron-lm-") + k] = key;
    }
    return f;
  }();
  return m;
}
const std::map<std::string, std::string>& AccelerateSwitches() {  // switch -> "key=value"
  static const std::map<std::string, std::string> m = {{"multi-gpu", "distributed_type=MULTI_GPU"}, {"use-fsdp", "distributed_type=FSDP"},
                                                       {"use-deepspeed", "distributed_type=DEEPSPEED"},
                                                       {"use-megatron-lm", "distributed_type=MEGATRON_LM"}, {"cpu", "use_cpu=true"},
                                                       {"no-python", ""}, {"debug", ""}, {"quiet", ""}, {"q", ""}, {"same-network", ""}};
  return m;
}


std::set<std::string> AccelerateLaunchValued() {
  std::set<std::string> s;
  for (const auto& [k, v] : AccelerateFlags()) s.insert(k);
  return s;
}
std::set<std::string> AccelerateLaunchSwitches() {
  std::set<std::string> s;
  for (const auto& [k, v] : AccelerateSwitches()) s.insert(k);
  return s;
}

// ---- Megatron-LM pretrain_gpt.py flags (§1.4, Megatron-LM arguments.py @d98e8a6) ----

const std::set<std::string>& MegatronModelFlags() {
  static const std::set<std::string> s = {"num-layers", "hidden-size", "num-attention-heads", "num-query-groups", "group-query-attention",
                                          "ffn-hidden-size", "vocab-size", "make-vocab-size-divisible-by", "swiglu", "normalization",
                                          "position-embedding-type", "untie-embeddings-and-output-weights", "disable-bias-linear",
                                          "add-qkv-bias", "kv-channels", "num-experts", "moe-router-topk", "moe-ffn-hidden-size",
                                          "hidden-dropout", "attention-dropout", "max-position-embeddings", "tokenizer-type",
                                          "rotary-base", "norm-epsilon", "use-rope-scaling", "rope-scaling-factor", "padded-vocab-size"};
  return s;
}
const std::set<std::string>& MegatronFlags() {
  static const std::set<std::string> s = [] {
    std::set<std::string> k = {"tensor-model-parallel-size", "pipeline-model-parallel-size", "num-layers-per-virtual-pipeline-stage",
                               "num-virtual-stages-per-pipeline-rank", "virtual-pipeline-model-parallel-size", "context-parallel-size",
                               "expert-model-parallel-size", "sequence-parallel", "recompute-granularity", "recompute-activations",
                               "use-distributed-optimizer", "use-megatron-fsdp", "use-custom-fsdp", "data-parallel-sharding-strategy",
                               "micro-batch-size", "global-batch-size", "bf16", "fp16", "fp8-format", "fp8-recipe", "seq-length",
                               "encoder-seq-length", "train-iters", "train-samples", "optimizer", "use-flash-attn",
                               "accumulate-allreduce-grads-in-fp32", "async-save", "deepspeed", "deepspeed-config", "deepspeed_config",
                               "zero-stage", "optimizer-cpu-offload", "optimizer-offload-fraction", "recompute-method",
                               "recompute-num-layers", "recompute-modules", "qk-layernorm", "merge-file"};
    for (const auto& m : MegatronModelFlags()) k.insert(m);
    return k;
  }();
  return s;
}
const std::set<std::string>& MegatronNoEffect() {
  static const std::set<std::string> s = {
      "lr", "min-lr", "lr-decay-style", "lr-decay-iters", "lr-decay-samples", "lr-warmup-iters", "lr-warmup-fraction",
      "lr-warmup-samples", "weight-decay", "clip-grad", "adam-beta1", "adam-beta2", "adam-eps", "init-method-std",
      "overlap-grad-reduce", "overlap-param-gather", "tp-comm-overlap", "cp-comm-type", "use-mcore-models", "transformer-impl",
      "attention-softmax-in-fp32", "no-masked-softmax-fusion", "no-bias-gelu-fusion", "no-bias-dropout-fusion",
      "no-gradient-accumulation-fusion", "seed", "moe-grouped-gemm", "moe-router-load-balancing-type", "moe-aux-loss-coeff",
      "moe-token-dispatcher-type", "expert-tensor-parallel-size", "rotary-percent", "loss-scale", "pretrained-checkpoint",
      "initial-loss-scale", "min-loss-scale", "loss-scale-window", "hysteresis", "distributed-timeout-minutes", "num-workers",
      "ckpt-format", "use-dist-ckpt", "save-interval", "save", "load", "use-persistent-ckpt-worker", "finetune",
      "no-load-optim", "no-load-rng", "exit-on-missing-checkpoint", "manual-gc", "use-precision-aware-optimizer", "overlap-cpu-optimizer-d2h-h2d",
      "untie-embeddings-and-output-weights", "use-rotary-position-embeddings", "no-position-embedding", "attention-backend",
      "moe-shared-expert-intermediate-size", "moe-layer-freq", "multi-latent-attention", "q-lora-rank", "kv-lora-rank", "qk-head-dim",
      "qk-pos-emb-head-dim", "v-head-dim", "cross-entropy-loss-fusion", "bias-swiglu-fusion", "apply-layernorm-1p"};
  return s;
}


}  // namespace gpuplan::import_detail
