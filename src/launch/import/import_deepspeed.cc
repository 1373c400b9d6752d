// gpuplan import: DeepSpeed ds_config.json.
#include "import_internal.h"

namespace gpuplan::import_detail {

Status PutBatch(Importer& im, const FlatConfig& cfg, const std::string& key, const std::string& job_key) {
  const FlatEntry* e = cfg.Get(key);
  if (!e) return Status::Ok();
  if (IsAuto(e->value)) return im.Put(job_key, "auto", e->where, Strength::kAuto);
  auto v = Int(e->value, e->where, 1, int64_t{1} << 32);
  if (!v.ok()) return v.status();
  return im.Put(job_key, Str(*v), e->where);
}

Status DeepspeedPrecision(Importer& im, const FlatConfig& cfg) {
  struct Mode {
    const char* key;
    const char* precision;
  };
  const Mode modes[] = {{"bf16.enabled", "bf16"}, {"bfloat16.enabled", "bf16"}, {"fp16.enabled", "fp16"}, {"amp.enabled", "fp16"}};
  const FlatEntry* on = nullptr;
  const FlatEntry* automatic = nullptr;
  const FlatEntry* off = nullptr;
  std::string precision;
  for (const auto& m : modes) {
    const FlatEntry* e = cfg.Get(m.key);
    if (!e) continue;
    if (IsAuto(e->value)) {
      if (!automatic) automatic = e;
      continue;
    }
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (!*b) {
      off = e;
      continue;
    }
    if (on && precision != m.precision)
      return Bad(e->where, "DeepSpeed cannot combine " + on->key + " and " + e->key + " (one of bf16, fp16, amp)");
    on = e;
    precision = m.precision;
    if (std::string(m.key) == "amp.enabled") im.Note(e->where, "apex amp: modelled as fp16 mixed precision");
  }
  if (on) return im.Put("training.precision", precision, on->where);
  if (automatic) return im.Put("training.precision", "auto", automatic->where, Strength::kAuto);
  if (off) return im.Put("training.precision", "fp32", off->where);
  return im.Put("training.precision", "fp32", {cfg.file, 1, "bf16/fp16 (not given)"}, Strength::kDefault);
}

Status DeepspeedZero(Importer& im, const FlatConfig& cfg) {
  std::optional<int64_t> stage;
  if (const FlatEntry* e = cfg.Get("zero_optimization.stage")) {
    if (IsAuto(e->value)) {
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "auto", e->where, Strength::kAuto));
    } else {
      auto v = Int(e->value, e->where, 0, 3);
      if (!v.ok()) return v.status();
      stage = *v;
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", Str(*v), e->where));
    }
  } else {
    stage = 0;
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "0", {cfg.file, 1, "zero_optimization.stage (not given)"}, Strength::kDefault));
  }
  auto device = [&](const std::string& key) -> Result<std::string> {
    const FlatEntry* e = cfg.Get(key);
    if (!e) return std::string("none");
    const std::string d = Lower(e->value);
    if (d == "none" || d == "cpu" || d == "nvme") return d;
    if (d == "auto") return Bad(e->where, "an offload device has no \"auto\": give none, cpu or nvme");
    return Bad(e->where, "expected none, cpu or nvme, got '" + e->value + "'");
  };
  auto opt = device("zero_optimization.offload_optimizer.device");
  if (!opt.ok()) return opt.status();
  auto param = device("zero_optimization.offload_param.device");
  if (!param.ok()) return param.status();
  std::string o = *opt, p = *param;
  if (const FlatEntry* e = cfg.Get("zero_optimization.cpu_offload")) {
    auto b = Bool(e->value, e->where);
    if (!b.ok()) return b.status();
    if (*b && o == "none") o = "cpu";
    im.Note(e->where, "deprecated (DeepSpeed: use offload_optimizer); read as offload_optimizer.device cpu");
  }
  const FlatEntry* pe = cfg.Get("zero_optimization.offload_param.device");
  const FlatEntry* oe = cfg.Get("zero_optimization.offload_optimizer.device");
  if (stage && p != "none" && *stage != 3) return Bad(pe->where, "parameter offload is ZeRO stage 3 only (stage is " + Str(*stage) + ")");
  if (stage && o == "nvme" && *stage != 3) return Bad(oe->where, "optimizer offload to nvme is ZeRO stage 3 only (stage is " + Str(*stage) + ")");
  if (stage && o != "none" && *stage == 0) return Bad(oe->where, "optimizer offload needs ZeRO stage 1, 2 or 3 (stage is 0)");
  if (o == "nvme" || p == "nvme") im.Note(o == "nvme" ? oe->where : pe->where, "nvme offload: modelled as host offload (GPU memory is the same; the step's transfer time is the host's)");
  if (p != "none") {
    if (o == "none") im.Note(pe->where, "parameter offload without optimizer offload: gpuplan models the two together (optimizer+params)");
    return im.Put("parallel.offload", "optimizer+params", pe->where);
  }
  if (o != "none") return im.Put("parallel.offload", "optimizer", oe ? oe->where : Location{cfg.file, 1, "zero_optimization.cpu_offload"});
  return im.Put("parallel.offload", "none", {cfg.file, 1, "zero_optimization.offload_* (not given)"}, Strength::kDefault);
}

Status DeepspeedOther(Importer& im, const FlatConfig& cfg) {
  if (const FlatEntry* e = cfg.Get("optimizer.type")) {
    const std::string t = Lower(e->value);
    if (t == "adam" || t == "adamw" || t == "fusedadam" || t == "cpuadam" || t == "deepspeedcpuadam") {
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", "adamw", e->where));
    } else if (t == "sgd") {
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", "sgd", e->where));
    } else {
      im.Unknown(e->where, "optimizer '" + e->value + "' is not one gpuplan models (adamw, adamw-8bit, adafactor, sgd); the job keeps adamw");
    }
  }
  const FlatEntry* mw = cfg.Get("bf16.bf16_master_weights_and_grads");
  const FlatEntry* os = cfg.Get("bf16.bf16_optimizer_states");
  if (mw || os) {
    bool a = false, b = false;
    if (mw) {
      auto v = Bool(mw->value, mw->where);
      if (!v.ok()) return v.status();
      a = *v;
    }
    if (os) {
      auto v = Bool(os->value, os->where);
      if (!v.ok()) return v.status();
      b = *v;
    }
    if (a && b) GPUPLAN_RETURN_IF_ERROR(im.Put("training.master_weights", "none", mw->where));
    else if (a || b) im.Note((a ? mw : os)->where, "only one of bf16_master_weights_and_grads / bf16_optimizer_states: gpuplan models both or neither; the job keeps fp32 masters");
  }
  if (const FlatEntry* e = cfg.Get("data_types.grad_accum_dtype")) {
    const std::string d = Lower(e->value);
    if (d == "fp32" || d == "float32") GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp32_grads", "true", e->where));
    else if (d != "bf16" && d != "fp16" && d != "auto") return Bad(e->where, "expected fp32, bf16 or fp16, got '" + e->value + "'");
  }
  if (const FlatEntry* e = cfg.Get("communication_data_type")) {
    // config.py get_communication_data_type (fp32, fp16 or bf16, any case; null: the compute dtype);
    // engine.py allreduce_bucket casts a bucket of another dtype to it for the reduction.
    const std::string d = Lower(e->value);
    if (d == "fp32") GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp32_allreduce", "true", e->where));
    else if (d != "bf16" && d != "fp16" && d != "null") return Bad(e->where, "expected fp32, fp16 or bf16, got '" + e->value + "'");
  }
  if (const FlatEntry* e = cfg.Get("tensor_parallel.autotp_size")) {
    auto v = Int(e->value, e->where, 1, 1024);
    if (!v.ok()) return v.status();
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.tp", Str(*v), e->where));
  }
  return im.Put("training.framework", "deepspeed", {cfg.file, 1, "(a DeepSpeed config)"}, Strength::kDefault);
}

Status Importer::ReadDeepspeed(const std::string& text, const std::string& file) {
  FlatConfig cfg;
  GPUPLAN_RETURN_IF_ERROR(FlattenYamlText(text, file, cfg));
  GPUPLAN_RETURN_IF_ERROR(CheckKeys(cfg, DeepspeedKeys(), "DeepSpeed"));
  GPUPLAN_RETURN_IF_ERROR(PutBatch(*this, cfg, "train_batch_size", "training.global_batch"));
  GPUPLAN_RETURN_IF_ERROR(PutBatch(*this, cfg, "train_micro_batch_size_per_gpu", "training.micro_batch"));
  GPUPLAN_RETURN_IF_ERROR(PutBatch(*this, cfg, "gradient_accumulation_steps", "training.grad_accum"));
  GPUPLAN_RETURN_IF_ERROR(DeepspeedPrecision(*this, cfg));
  GPUPLAN_RETURN_IF_ERROR(DeepspeedZero(*this, cfg));
  return DeepspeedOther(*this, cfg);
}


}  // namespace gpuplan::import_detail
