// gpuplan import: HF accelerate config YAML.
#include <algorithm>

#include "import_internal.h"

namespace gpuplan::import_detail {

Status Importer::ReadAccelerateInto(const std::string& text, const std::string& file, FlatConfig& cfg) {
  FlatConfig own;
  GPUPLAN_RETURN_IF_ERROR(FlattenYamlText(text, file, own));
  GPUPLAN_RETURN_IF_ERROR(CheckKeys(own, AccelerateKeys(), "accelerate"));
  cfg.file = file;
  for (auto& e : own.entries) cfg.entries.push_back(e);
  return Status::Ok();
}

// FSDP sharding (FSDP1 fsdp_sharding_strategy, FSDP2 fsdp_reshard_after_forward) -> ZeRO stage.
Status FsdpZero(Importer& im, const FlatEntry& e) {
  const std::string v = Lower(e.value);
  if (v == "full_shard" || v == "1" || v == "true") return im.Put("parallel.zero", "3", e.where);
  if (v == "shard_grad_op" || v == "2" || v == "false") return im.Put("parallel.zero", "2", e.where);
  if (v == "no_shard" || v == "3") return im.Put("parallel.zero", "0", e.where);
  if (v == "hybrid_shard" || v == "4") {
    im.Note(e.where, "HYBRID_SHARD shards within a node and replicates across nodes; gpuplan models it as ZeRO-3 over all data-parallel ranks (per-GPU memory below hybrid's on more than one node)");
    return im.Put("parallel.zero", "3", e.where);
  }
  if (v == "hybrid_shard_zero2" || v == "5") {
    im.Note(e.where, "HYBRID_SHARD_ZERO2: modelled as ZeRO-2 over all data-parallel ranks");
    return im.Put("parallel.zero", "2", e.where);
  }
  return Bad(e.where, "expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (or true/false), got '" + e.value + "'");
}

Status AccelerateFsdp(Importer& im, const FlatConfig& cfg) {
  const FlatEntry* strategy = cfg.Get("fsdp_config.fsdp_sharding_strategy");
  const FlatEntry* reshard = cfg.Get("fsdp_config.fsdp_reshard_after_forward");
  if (reshard) GPUPLAN_RETURN_IF_ERROR(FsdpZero(im, *reshard));
  else if (strategy) GPUPLAN_RETURN_IF_ERROR(FsdpZero(im, *strategy));
  else GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "3", {cfg.file, 1, "fsdp_config.fsdp_sharding_strategy (not given)"}, Strength::kDefault));
  if (reshard && strategy) im.Note(strategy->where, "fsdp_reshard_after_forward decides (FSDP2's key)");
  for (const char* k : {"fsdp_config.fsdp_offload_params", "fsdp_config.fsdp_cpu_offload"}) {
    if (const FlatEntry* e = cfg.Get(k)) {
      auto b = Bool(e->value, e->where);
      if (!b.ok()) return b.status();
      if (std::string(k) == "fsdp_config.fsdp_cpu_offload") im.Note(e->where, "accelerate's own key is fsdp_offload_params; read the same");
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", *b ? "optimizer+params" : "none", e->where));
    }
  }
  if (const FlatEntry* e = cfg.Get("fsdp_config.fsdp_activation_checkpointing")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (*b) GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", "full", e->where));
  }
  if (const FlatEntry* e = cfg.Get("fsdp_config.fsdp_version")) {
    if (e->value != "1" && e->value != "2") return Bad(e->where, "expected 1 or 2, got '" + e->value + "'");
    im.Note(e->where, "read, no effect on the estimate (FSDP1 and FSDP2 shard the same states)");
  }
  return im.Put("training.framework", "fsdp", {cfg.file, 1, "distributed_type FSDP"}, Strength::kDefault);
}

Status AccelerateDeepspeed(Importer& im, const FlatConfig& cfg, int depth) {
  if (const FlatEntry* file = cfg.Get("deepspeed_config.deepspeed_config_file")) {
    // accelerate raises a ValueError when these are also in the YAML (§1.2): they belong in the JSON.
    for (const char* k : {"gradient_accumulation_steps", "gradient_clipping", "zero_stage", "offload_optimizer_device",
                          "offload_param_device", "zero3_save_16bit_model"})
      if (const FlatEntry* e = cfg.Get(std::string("deepspeed_config.") + k))
        return Bad(e->where, "accelerate refuses this next to deepspeed_config_file (" + At(file->where) + "): put it in " + file->value);
    if (const FlatEntry* e = cfg.Get("mixed_precision"); e && e->where.file == cfg.file && Lower(e->value) != "no")
      return Bad(e->where, "accelerate refuses mixed_precision next to deepspeed_config_file (" + At(file->where) + "): set bf16/fp16 in " + file->value);
    return im.ReadNamedFile(file->value, file->where, depth, ImportKind::kDeepspeedConfig);
  }
  if (const FlatEntry* e = cfg.Get("deepspeed_config.zero_stage")) {
    auto v = Int(e->value, e->where, 0, 3);
    if (!v.ok()) return v.status();
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", Str(*v), e->where));
  }
  GPUPLAN_RETURN_IF_ERROR(PutBatch(im, cfg, "deepspeed_config.gradient_accumulation_steps", "training.grad_accum"));
  const FlatEntry* oe = cfg.Get("deepspeed_config.offload_optimizer_device");
  const FlatEntry* pe = cfg.Get("deepspeed_config.offload_param_device");
  auto dev = [](const FlatEntry* e) { return e ? Lower(e->value) : std::string("none"); };
  for (const FlatEntry* e : {oe, pe})
    if (e && dev(e) != "none" && dev(e) != "cpu" && dev(e) != "nvme") return Bad(e->where, "expected none, cpu or nvme, got '" + e->value + "'");
  if (dev(pe) != "none") GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", "optimizer+params", pe->where));
  else if (dev(oe) != "none") GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", "optimizer", oe->where));
  return im.Put("training.framework", "deepspeed", {cfg.file, 1, "distributed_type DEEPSPEED"}, Strength::kDefault);
}

Status AccelerateMegatron(Importer& im, const FlatConfig& cfg) {
  auto put_int = [&](const char* k, const char* job_key) -> Status {
    const FlatEntry* e = cfg.Get(std::string("megatron_lm_config.") + k);
    if (!e) return Status::Ok();
    auto v = Int(e->value, e->where, 1, 1 << 20);
    if (!v.ok()) return v.status();
    return im.Put(job_key, Str(*v), e->where);
  };
  GPUPLAN_RETURN_IF_ERROR(put_int("megatron_lm_tp_degree", "parallel.tp"));
  GPUPLAN_RETURN_IF_ERROR(put_int("megatron_lm_pp_degree", "parallel.pp"));
  GPUPLAN_RETURN_IF_ERROR(put_int("megatron_lm_num_micro_batches", "training.grad_accum"));
  auto flag = [&](const char* k) -> Result<const FlatEntry*> {
    const FlatEntry* e = cfg.Get(std::string("megatron_lm_config.") + k);
    if (!e) return static_cast<const FlatEntry*>(nullptr);
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    return *b ? e : static_cast<const FlatEntry*>(nullptr);
  };
  auto sp = flag("megatron_lm_sequence_parallelism");
  if (!sp.ok()) return sp.status();
  if (*sp) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.sequence_parallel", "true", (*sp)->where));
  auto rc = flag("megatron_lm_recompute_activations");
  if (!rc.ok()) return rc.status();
  if (*rc) GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", "selective", (*rc)->where));
  auto dist = flag("megatron_lm_use_distributed_optimizer");
  if (!dist.ok()) return dist.status();
  if (*dist) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "1", (*dist)->where));
  return im.Put("training.framework", "megatron", {cfg.file, 1, "distributed_type MEGATRON_LM"}, Strength::kDefault);
}

// distributed_type NO: one process on one GPU, whatever num_processes says (accelerate
// commands/config/config_args.py ClusterConfig / launch: a NO config runs a single process).
Status AccelerateSingle(Importer& im, const FlatConfig& cfg, const FlatEntry& type) {
  if (const FlatEntry* procs = cfg.Get("num_processes"); procs && procs->value != "1")
    im.Note(procs->where, "num_processes " + procs->value + " with distributed_type NO: accelerate runs one process");
  im.Note(type.where, "distributed_type NO: one process on one GPU");
  return im.Put("cluster.num_gpus", "1", type.where);
}

Status AcceleratePrecisionAndProcesses(Importer& im, const FlatConfig& cfg) {
  if (const FlatEntry* e = cfg.Get("mixed_precision")) {
    const std::string v = Lower(e->value);
    const std::string p = v == "no" || v == "false" ? "fp32" : v == "fp16" ? "fp16" : v == "bf16" ? "bf16" : v == "fp8" ? "fp8" : "";
    if (p.empty()) return Bad(e->where, "expected no, fp16, bf16 or fp8, got '" + e->value + "'");
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", p, e->where));
  }
  const FlatEntry* type = cfg.Get("distributed_type");
  const bool single = type && type->value == "NO";
  if (single) GPUPLAN_RETURN_IF_ERROR(AccelerateSingle(im, cfg, *type));
  const FlatEntry* procs = single ? nullptr : cfg.Get("num_processes");
  const FlatEntry* machines = single ? nullptr : cfg.Get("num_machines");
  int64_t n = 0, m = 1;
  if (procs) {
    auto v = Int(procs->value, procs->where, 1, int64_t{1} << 20);
    if (!v.ok()) return v.status();
    n = *v;
    GPUPLAN_RETURN_IF_ERROR(im.Put("cluster.num_gpus", Str(n), procs->where));
  }
  if (machines) {
    auto v = Int(machines->value, machines->where, 1, int64_t{1} << 20);
    if (!v.ok()) return v.status();
    m = *v;
  }
  if (procs) {
    if (n % m != 0)
      return Bad(procs->where, "num_processes is all processes of all machines: " + Str(n) + " is not a multiple of num_machines " + Str(m) +
                                   (machines ? " (" + At(machines->where) + ")" : ""));
    GPUPLAN_RETURN_IF_ERROR(im.Put("cluster.gpus_per_node", Str(n / m), machines ? machines->where : procs->where));
  } else if (machines && m > 1) {
    im.Unresolved(machines->where, "num_machines without num_processes: the GPUs per machine are unknown; the job keeps gpuplan's default (cluster.num_gpus from the layout)");
  }
  if (const FlatEntry* e = cfg.Get("use_cpu")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (*b) return Bad(e->where, "use_cpu: true trains on the CPU; gpuplan plans GPU jobs");
  }
  if (const FlatEntry* e = cfg.Get("dynamo_config.dynamo_backend")) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.compile", Lower(e->value) == "no" ? "false" : "true", e->where));
  }
  return Status::Ok();
}

Status AccelerateParallelism(Importer& im, const FlatConfig& cfg) {
  auto get = [&](const char* k) -> Result<int64_t> {
    const FlatEntry* e = cfg.Get(std::string("parallelism_config.") + k);
    if (!e) return int64_t{0};
    return Int(e->value, e->where, 1, int64_t{1} << 20);
  };
  auto tp = get("parallelism_config_tp_size");
  if (!tp.ok()) return tp.status();
  auto cp = get("parallelism_config_cp_size");
  if (!cp.ok()) return cp.status();
  auto shard = get("parallelism_config_dp_shard_size");
  if (!shard.ok()) return shard.status();
  auto rep = get("parallelism_config_dp_replicate_size");
  if (!rep.ok()) return rep.status();
  if (*tp > 0) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.tp", Str(*tp), cfg.Get("parallelism_config.parallelism_config_tp_size")->where));
  if (*cp > 0) GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.cp", Str(*cp), cfg.Get("parallelism_config.parallelism_config_cp_size")->where));
  if (*shard > 0 || *rep > 0) {
    const FlatEntry* e = cfg.Get(*shard > 0 ? "parallelism_config.parallelism_config_dp_shard_size" : "parallelism_config.parallelism_config_dp_replicate_size");
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.dp", Str(std::max<int64_t>(*shard, 1) * std::max<int64_t>(*rep, 1)), e->where));
    if (*rep > 1 && *shard > 1) im.Note(e->where, "dp = replicate x shard; gpuplan shards over all data-parallel ranks (HSDP modelled as FSDP)");
  }
  return Status::Ok();
}

Status Importer::ApplyAccelerate(const FlatConfig& cfg, int depth) {
  const FlatEntry* type = cfg.Get("distributed_type");
  const std::string t = type ? type->value : "NO";
  GPUPLAN_RETURN_IF_ERROR(AcceleratePrecisionAndProcesses(*this, cfg));
  auto unused = [&](const std::string& section, const std::string& used_by) {
    for (const auto& e : cfg.entries)
      if (e.key == section && e.is_map)
        for (const auto& c : cfg.entries)
          if (c.key.rfind(section + ".", 0) == 0) {
            Note(e.where, "read only with distributed_type " + used_by + " (this file has " + t + "): not applied");
            return;
          }
  };
  if (t != "FSDP") unused("fsdp_config", "FSDP");
  if (t != "DEEPSPEED") unused("deepspeed_config", "DEEPSPEED");
  if (t != "MEGATRON_LM") unused("megatron_lm_config", "MEGATRON_LM");
  GPUPLAN_RETURN_IF_ERROR(AccelerateParallelism(*this, cfg));
  if (t == "FSDP") return AccelerateFsdp(*this, cfg);
  if (t == "DEEPSPEED") return AccelerateDeepspeed(*this, cfg, depth);
  if (t == "MEGATRON_LM") return AccelerateMegatron(*this, cfg);
  if (t == "MULTI_GPU" || t == "NO")
    return Put("parallel.zero", "0", type ? type->where : Location{cfg.file, 1, "distributed_type (not given)"}, Strength::kDefault);
  return Bad(type->where, "expected NO, MULTI_GPU, FSDP, DEEPSPEED or MEGATRON_LM (the GPU types), got '" + t + "'");
}


}  // namespace gpuplan::import_detail
