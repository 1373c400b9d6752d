// gpuplan import: Megatron-LM flags and a training script's own (HF Trainer) arguments.
#include <cmath>

#include "import_internal.h"

namespace gpuplan::import_detail {

struct MegatronArgs {
  std::map<std::string, Flag> last;  // by name, the last occurrence (argparse: the last one wins)
  std::string file;
  const Flag* Get(const std::string& n) const {
    auto it = last.find(n);
    return it == last.end() ? nullptr : &it->second;
  }
};

// The flag's one value; "" with a Unresolved/Bad noted when it has none or it is unknown.
Result<std::optional<std::string>> MegValue(Importer& im, const MegatronArgs& a, const std::string& n) {
  const Flag* f = a.Get(n);
  if (!f) return std::optional<std::string>();
  const Location w = f->At(a.file);
  if (f->values.empty()) return Bad(w, "needs a value");
  if (!f->values[0].unresolved.empty()) {
    im.Unresolved(w, f->values[0].text + ": " + f->values[0].unresolved + "; the job keeps gpuplan's default");
    return std::optional<std::string>();
  }
  return std::optional<std::string>(f->values[0].text);
}

Result<std::optional<int64_t>> MegInt(Importer& im, const MegatronArgs& a, const std::string& n, int64_t min, int64_t max) {
  auto v = MegValue(im, a, n);
  if (!v.ok()) return v.status();
  if (!*v) return std::optional<int64_t>();
  auto i = Int(**v, a.Get(n)->At(a.file), min, max);
  if (!i.ok()) return i.status();
  return std::optional<int64_t>(*i);
}

Status MegPutInt(Importer& im, const MegatronArgs& a, const std::string& n, const std::string& key, int64_t min, int64_t max) {
  auto v = MegInt(im, a, n, min, max);
  if (!v.ok()) return v.status();
  if (*v) return im.Put(key, Str(**v), a.Get(n)->At(a.file));
  return Status::Ok();
}

// --rotary-base, --norm-epsilon, --use-rope-scaling [--rope-scaling-factor] (Llama 3.1's scaling with
// Megatron's fixed low 1, high 4, original 8192 positions; the factor's default is 8).
Status MegatronRopeImport(Importer& im, const MegatronArgs& a) {
  for (const auto& [flag, key] : {std::pair{"rotary-base", "model.rope_theta"}, {"norm-epsilon", "model.norm_eps"}}) {
    auto v = MegValue(im, a, flag);
    if (!v.ok()) return v.status();
    if (*v) GPUPLAN_RETURN_IF_ERROR(im.Put(key, **v, a.Get(flag)->At(a.file)));
  }
  const Flag* scaling = a.Get("use-rope-scaling");
  if (!scaling) return Status::Ok();
  auto factor = MegValue(im, a, "rope-scaling-factor");
  if (!factor.ok()) return factor.status();
  const Location at = scaling->At(a.file);
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.rope_scaling", "llama3", at));
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.rope_factor", factor->value_or("8"), a.Get("rope-scaling-factor") ? a.Get("rope-scaling-factor")->At(a.file) : at));
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.rope_low_freq_factor", "1", at));
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.rope_high_freq_factor", "4", at));
  return im.Put("model.rope_original_max_positions", "8192", at);
}

Status MegatronModel(Importer& im, const MegatronArgs& a, int64_t tp) {
  const Flag* layers = a.Get("num-layers");
  if (!layers && !a.Get("hidden-size")) return Status::Ok();
  auto put = [&](const char* n, const char* key, int64_t min, int64_t max) { return MegPutInt(im, a, n, key, min, max); };
  GPUPLAN_RETURN_IF_ERROR(put("num-layers", "model.layers", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("hidden-size", "model.hidden", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("num-attention-heads", "model.heads", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("num-query-groups", "model.kv_heads", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("kv-channels", "model.head_dim", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("num-experts", "model.experts", 1, 1 << 16));
  GPUPLAN_RETURN_IF_ERROR(put("moe-router-topk", "model.experts_per_token", 1, 1 << 16));
  GPUPLAN_RETURN_IF_ERROR(put("moe-ffn-hidden-size", "model.moe_ffn_hidden", 1, 1 << 24));
  const Location here = (layers ? layers : a.Get("hidden-size"))->At(a.file);
  const bool swiglu = a.Get("swiglu") != nullptr;
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.mlp", swiglu ? "swiglu" : "gelu", swiglu ? a.Get("swiglu")->At(a.file) : here));
  if (!a.Get("ffn-hidden-size")) {
    auto h = MegInt(im, a, "hidden-size", 1, 1 << 24);
    if (!h.ok()) return h.status();
    if (*h) {
      // Megatron's default: 4 x hidden, or for swiglu int(4 x hidden x 2/3 / 64) x 64 (arguments.py).
      const int64_t ffn = swiglu ? (4 * **h * 2 / 3) / 64 * 64 : 4 * **h;
      GPUPLAN_RETURN_IF_ERROR(im.Put("model.ffn_hidden", Str(ffn), a.Get("hidden-size")->At(a.file)));
      im.Note(a.Get("hidden-size")->At(a.file), "no --ffn-hidden-size: Megatron's default " + Str(ffn) + (swiglu ? " (4 x hidden x 2/3, to a multiple of 64)" : " (4 x hidden)"));
    }
  } else {
    GPUPLAN_RETURN_IF_ERROR(put("ffn-hidden-size", "model.ffn_hidden", 1, 1 << 24));
  }
  auto norm = MegValue(im, a, "normalization");
  if (!norm.ok()) return norm.status();
  const std::string n = norm->value_or("LayerNorm");
  const Location nw = a.Get("normalization") ? a.Get("normalization")->At(a.file) : here;
  if (n == "RMSNorm") GPUPLAN_RETURN_IF_ERROR(im.Put("model.norm", "rmsnorm", nw));
  else if (n == "LayerNorm") {
    GPUPLAN_RETURN_IF_ERROR(im.Put("model.norm", "layernorm", nw));
    GPUPLAN_RETURN_IF_ERROR(im.Put("model.norm_bias", "true", nw));
  }
  else return Bad(nw, "expected LayerNorm or RMSNorm, got '" + n + "'");
  auto pos = MegValue(im, a, "position-embedding-type");
  if (!pos.ok()) return pos.status();
  const std::string p = pos->value_or("learned_absolute");
  const Location pw = a.Get("position-embedding-type") ? a.Get("position-embedding-type")->At(a.file) : here;
  if (p == "rope" || p == "mrope" || p == "yarn") GPUPLAN_RETURN_IF_ERROR(im.Put("model.position", "rotary", pw));
  else if (p == "learned_absolute") {
    GPUPLAN_RETURN_IF_ERROR(im.Put("model.position", "learned", pw));
    GPUPLAN_RETURN_IF_ERROR(MegPutInt(im, a, "max-position-embeddings", "model.max_positions", 1, 1 << 24));
  } else if (p == "none") {
    GPUPLAN_RETURN_IF_ERROR(im.Put("model.position", "rotary", pw));
    im.Note(pw, "no position embedding: modelled as rotary (no parameters)");
  } else return Bad(pw, "expected learned_absolute, rope or none, got '" + p + "'");
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.linear_bias", a.Get("disable-bias-linear") ? "false" : "true", a.Get("disable-bias-linear") ? a.Get("disable-bias-linear")->At(a.file) : here));
  if (a.Get("add-qkv-bias")) GPUPLAN_RETURN_IF_ERROR(im.Put("model.qkv_bias", "true", a.Get("add-qkv-bias")->At(a.file)));
  const Flag* untie = a.Get("untie-embeddings-and-output-weights");
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.tied_embeddings", untie ? "false" : "true", untie ? untie->At(a.file) : here));
  GPUPLAN_RETURN_IF_ERROR(MegatronRopeImport(im, a));
  // Dropout: Megatron's defaults are 0.1 (hidden and attention); off only when both are 0.
  bool dropout = false;
  for (const char* d : {"hidden-dropout", "attention-dropout"}) {
    auto v = MegValue(im, a, d);
    if (!v.ok()) return v.status();
    if (!*v) {
      dropout = true;
      continue;
    }
    auto x = ParseDecimal(**v, a.Get(d)->At(a.file));
    if (!x.ok()) return x.status();
    dropout |= *x > 0;
  }
  GPUPLAN_RETURN_IF_ERROR(im.Put("model.dropout", dropout ? "true" : "false", a.Get("hidden-dropout") ? a.Get("hidden-dropout")->At(a.file) : here));
  // The vocabulary, padded as Megatron pads it: a multiple of make-vocab-size-divisible-by (128) x tp.
  auto vocab = MegInt(im, a, "vocab-size", 1, 1 << 24);
  if (!vocab.ok()) return vocab.status();
  auto tok = MegValue(im, a, "tokenizer-type");
  if (!tok.ok()) return tok.status();
  std::optional<int64_t> v = *vocab;
  Location vw = a.Get("vocab-size") ? a.Get("vocab-size")->At(a.file) : here;
  if (!v && tok->value_or("") == "GPT2BPETokenizer") {
    v = 50257;
    vw = a.Get("tokenizer-type")->At(a.file);
    im.Note(vw, "GPT2BPETokenizer: vocabulary 50257");
  } else if (!v && !*tok && a.Get("merge-file")) {  // a BPE merges file: the GPT-2 BPE tokenizer's form
    v = 50257;
    vw = a.Get("merge-file")->At(a.file);
    im.Note(vw, "a --vocab-file/--merge-file pair is GPT-2 BPE: vocabulary 50257 (gpt2-vocab.json) assumed; give --vocab for another");
  }
  if (!v) {
    const std::string why = "no --vocab-size: the vocabulary is the tokenizer's" + (*tok ? " (" + **tok + ")" : std::string());
    if (im.base().IsSet("model.vocab")) return Status::Ok();  // --vocab gave it
    if (!im.BaseHasModel()) return Bad(here, why + ": give --vocab N (the tokenizer's size), or --model (a preset or a config.json)");
    im.Unresolved(here, why + "; give --vocab");
    return Status::Ok();
  }
  auto given = MegInt(im, a, "padded-vocab-size", 1, 1 << 24);  // the embedding's rows, as given
  if (!given.ok()) return given.status();
  if (*given) return im.Put("model.vocab", Str(**given), a.Get("padded-vocab-size")->At(a.file));
  auto div = MegInt(im, a, "make-vocab-size-divisible-by", 1, 1 << 20);
  if (!div.ok()) return div.status();
  const int64_t multiple = div->value_or(128) * tp;
  const int64_t padded = (*v + multiple - 1) / multiple * multiple;
  if (padded != *v) im.Note(vw, "vocabulary " + Str(*v) + " padded to " + Str(padded) + " (a multiple of " + Str(div->value_or(128)) + " x tp " + Str(tp) + ", as Megatron pads it)");
  return im.Put("model.vocab", Str(padded), vw);
}

// --bf16/--fp16/--fp8-*, the optimizer, the kernel and checkpoint switches, a DeepSpeed config.
Status MegatronPrecisionAndRest(Importer& im, const MegatronArgs& a, int depth) {
  // precision
  const Flag* bf16 = a.Get("bf16");
  const Flag* fp16 = a.Get("fp16");
  if (bf16 && fp16) return Bad(fp16->At(a.file), "--bf16 and --fp16 together: Megatron takes one");
  if (a.Get("fp8-format")) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp8", a.Get("fp8-format")->At(a.file)));
  else if (bf16) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "bf16", bf16->At(a.file)));
  else if (fp16) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp16", fp16->At(a.file)));
  else GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp32", {a.file, 1, "--bf16/--fp16 (not given)"}, Strength::kDefault));
  auto recipe = MegValue(im, a, "fp8-recipe");
  if (!recipe.ok()) return recipe.status();
  if (*recipe) {
    const std::string r = **recipe;
    if (r == "delayed" || r == "tensorwise" || r == "mxfp8") GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp8_recipe", r, a.Get("fp8-recipe")->At(a.file)));
    else im.Unknown(a.Get("fp8-recipe")->At(a.file), "fp8 recipe '" + r + "' is not one gpuplan models (delayed, tensorwise, mxfp8)");
  }
  auto opt = MegValue(im, a, "optimizer");
  if (!opt.ok()) return opt.status();
  if (*opt) {
    if (**opt == "adam") GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", "adamw", a.Get("optimizer")->At(a.file)));
    else if (**opt == "sgd") GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", "sgd", a.Get("optimizer")->At(a.file)));
    else im.Unknown(a.Get("optimizer")->At(a.file), "optimizer '" + **opt + "' is not one gpuplan models");
  }
  if (const Flag* f = a.Get("use-flash-attn")) GPUPLAN_RETURN_IF_ERROR(im.Put("training.flash_attention", "true", f->At(a.file)));
  if (const Flag* f = a.Get("accumulate-allreduce-grads-in-fp32")) GPUPLAN_RETURN_IF_ERROR(im.Put("training.fp32_grads", "true", f->At(a.file)));
  if (const Flag* f = a.Get("async-save")) GPUPLAN_RETURN_IF_ERROR(im.Put("training.checkpoint_async", "true", f->At(a.file)));
  if (const Flag* f = a.Get("qk-layernorm")) im.Note(f->At(a.file), "q/k layernorm: its parameters are not counted from flags (use --model for a model that has them)");
  for (const char* k : {"deepspeed-config", "deepspeed_config"}) {
    auto path = MegValue(im, a, k);
    if (!path.ok()) return path.status();
    if (*path) GPUPLAN_RETURN_IF_ERROR(im.ReadNamedFile(**path, a.Get(k)->At(a.file), depth, ImportKind::kDeepspeedConfig));
  }
  return Status::Ok();
}

Status MegatronLayoutAndBatch(Importer& im, const MegatronArgs& a, int depth) {
  auto put = [&](const char* n, const char* key, int64_t min, int64_t max) { return MegPutInt(im, a, n, key, min, max); };
  GPUPLAN_RETURN_IF_ERROR(put("tensor-model-parallel-size", "parallel.tp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("pipeline-model-parallel-size", "parallel.pp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("context-parallel-size", "parallel.cp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("expert-model-parallel-size", "parallel.ep", 1, 1 << 16));
  GPUPLAN_RETURN_IF_ERROR(put("num-virtual-stages-per-pipeline-rank", "parallel.vpp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("virtual-pipeline-model-parallel-size", "parallel.vpp", 1, 1024));
  GPUPLAN_RETURN_IF_ERROR(put("num-layers-per-virtual-pipeline-stage", "parallel.vpp_layers", 1, 1 << 20));
  if (const Flag* f = a.Get("sequence-parallel")) {
    auto tp = MegInt(im, a, "tensor-model-parallel-size", 1, 1024);
    if (!tp.ok()) return tp.status();
    if (tp->value_or(1) == 1) {  // Megatron-LM arguments.py (validate_args): a warning, then sequence_parallel = False
      im.Note(f->At(a.file), "warning: Megatron-LM disables sequence parallelism when the tensor-parallel size is 1 (it warns and runs "
                             "without it): read as off");
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.sequence_parallel", "false", f->At(a.file)));
    } else {
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.sequence_parallel", "true", f->At(a.file)));
    }
  }
  // recompute
  auto gran = MegValue(im, a, "recompute-granularity");
  if (!gran.ok()) return gran.status();
  if (*gran) {
    if (**gran != "full" && **gran != "selective") return Bad(a.Get("recompute-granularity")->At(a.file), "expected full or selective, got '" + **gran + "'");
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", **gran, a.Get("recompute-granularity")->At(a.file)));
    if (const Flag* m = a.Get("recompute-num-layers"); m && **gran == "full")
      im.Note(m->At(a.file), "gpuplan models full recompute of every layer (the method and layer count set how the checkpoints are grouped)");
  } else if (const Flag* f = a.Get("recompute-activations")) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", "selective", f->At(a.file)));
  }
  // ZeRO: distributed optimizer = 1; Megatron-FSDP by its sharding strategy (default optim_grads_params = 3)
  const Flag* fsdp = a.Get("use-megatron-fsdp");
  if (!fsdp) fsdp = a.Get("use-custom-fsdp");
  if (fsdp) {
    auto strat = MegValue(im, a, "data-parallel-sharding-strategy");
    if (!strat.ok()) return strat.status();
    const std::string s = strat->value_or("optim_grads_params");
    const std::map<std::string, std::string> stages = {{"no_shard", "0"}, {"optim", "1"}, {"optim_grads", "2"}, {"optim_grads_params", "3"}};
    auto it = stages.find(s);
    const Location w = a.Get("data-parallel-sharding-strategy") ? a.Get("data-parallel-sharding-strategy")->At(a.file) : fsdp->At(a.file);
    if (it == stages.end()) return Bad(w, "expected no_shard, optim, optim_grads or optim_grads_params, got '" + s + "'");
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", it->second, w));
  } else if (a.Get("zero-stage")) {
    GPUPLAN_RETURN_IF_ERROR(put("zero-stage", "parallel.zero", 0, 3));
  } else if (const Flag* f = a.Get("use-distributed-optimizer")) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "1", f->At(a.file)));
  } else {
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "0", {a.file, 1, "--use-distributed-optimizer (not given)"}, Strength::kDefault));
  }
  if (const Flag* f = a.Get("optimizer-cpu-offload")) {
    GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.offload", "optimizer", f->At(a.file)));
    if (const Flag* r = a.Get("optimizer-offload-fraction"); r && !r->values.empty() && r->values[0].text != "1.0" && r->values[0].text != "1")
      im.Note(r->At(a.file), "a partial optimizer offload: gpuplan models the whole optimizer on the host");
  }
  // batch
  if (a.Get("micro-batch-size")) GPUPLAN_RETURN_IF_ERROR(put("micro-batch-size", "training.micro_batch", 1, 1 << 20));
  else GPUPLAN_RETURN_IF_ERROR(im.Put("training.micro_batch", "1", {a.file, 1, "--micro-batch-size (not given)"}, Strength::kDefault));
  GPUPLAN_RETURN_IF_ERROR(put("global-batch-size", "training.global_batch", 1, int64_t{1} << 32));
  GPUPLAN_RETURN_IF_ERROR(put("seq-length", "training.seq_len", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("encoder-seq-length", "training.seq_len", 1, 1 << 24));
  GPUPLAN_RETURN_IF_ERROR(put("train-iters", "training.steps", 1, int64_t{1} << 40));
  GPUPLAN_RETURN_IF_ERROR(put("train-samples", "training.samples", 1, int64_t{1} << 40));
  return MegatronPrecisionAndRest(im, a, depth);
}

Status Megatron(Importer& im, const std::vector<Flag>& flags, const std::string& file, int depth) {
  GPUPLAN_RETURN_IF_ERROR(im.Put("training.framework", "megatron", {file, flags.empty() ? 1 : flags[0].word.line, "(Megatron-LM flags)"}, Strength::kDefault));
  MegatronArgs a;
  a.file = file;
  for (const auto& f : flags) {
    const std::string n = f.name == "deepspeed_config" ? f.name : Norm(f.name);
    if (MegatronFlags().count(n)) {
      if (auto it = a.last.find(n); it != a.last.end() && !(it->second.word.line == f.word.line))
        im.Note(f.At(file), "given again (first " + At(it->second.At(file)) + "): the last one wins, as argparse does");
      a.last[n] = f;
      a.last[n].name = n;
    } else if (MegatronNoEffect().count(n)) {
      im.Note(f.At(file), "read, no effect on the estimate");
    } else {
      std::string best;
      size_t best_d = 3;
      for (const auto& k : MegatronFlags())
        if (size_t d = EditDistance(n, k); d < best_d) best_d = d, best = k;
      im.Unknown(f.At(file), "not a Megatron-LM flag gpuplan reads" + (best.empty() ? std::string() : " (did you mean --" + best + "?)"));
    }
  }
  GPUPLAN_RETURN_IF_ERROR(MegatronLayoutAndBatch(im, a, depth));
  auto tp = MegInt(im, a, "tensor-model-parallel-size", 1, 1024);
  if (!tp.ok()) return tp.status();
  return MegatronModel(im, a, tp->value_or(1));
}

// ---- a training script's own arguments (HF Trainer's, and the configs they name) ----

std::optional<std::string> PresetFromName(const std::string& name) {
  std::string n = Lower(Base(name));
  for (const char* suffix : {"-hf", "-chat", "-instruct", "-base"})
    if (EndsWith(n, suffix)) n.erase(n.size() - std::strlen(suffix));
  if (n.rfind("meta-", 0) == 0) n.erase(0, 5);
  if (FindPreset(n).ok()) return n;
  return std::nullopt;
}

// DeepSpeed-Chat's training scripts (DeepSpeedExamples applications/DeepSpeed-Chat/training/step*/main.py
// parse_args) build their DeepSpeed config from their own flags (dschat/utils/ds_utils.py
// get_train_ds_config): --zero_stage (default 0), --dtype fp16|bf16 (default fp16), --offload (optimizer
// and parameters to the CPU; DeepSpeed applies offload_param at stage 3 only), --max_seq_len (default
// 512), --lora_dim (> 0: LoRA of that rank; default 0), --per_device_train_batch_size (default 16).
bool IsDsChat(const std::vector<Flag>& flags) {
  for (const auto& f : flags) {
    const std::string n = Norm(f.name);
    if (n == "zero-stage" || n == "lora-dim" || n == "max-seq-len" || n == "only-optimize-lora" || n == "lora-module-name" ||
        n == "offload")
      return true;
  }
  return false;
}

Status DsChatDefaults(Importer& im, const std::vector<Flag>& flags, const std::string& file, const std::string& script, bool offload,
                      const Location& offload_at) {
  const Location at{file, flags.empty() ? 1 : flags[0].word.line, Base(script) + " (DeepSpeed-Chat's defaults)"};
  GPUPLAN_RETURN_IF_ERROR(im.Put("training.framework", "deepspeed", at, Strength::kDefault));
  GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", "fp16", at, Strength::kDefault));
  GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", "0", at, Strength::kDefault));
  GPUPLAN_RETURN_IF_ERROR(im.Put("training.seq_len", "512", at, Strength::kDefault));
  GPUPLAN_RETURN_IF_ERROR(im.Put("training.micro_batch", "16", at, Strength::kDefault));
  if (!offload) return Status::Ok();
  const Fact* zero = im.Find("parallel.zero");
  const bool stage3 = zero && zero->value == "3";
  im.Note(offload_at, stage3 ? "optimizer states and parameters offloaded to the CPU (ZeRO-3)"
                             : "optimizer states offloaded to the CPU (parameter offload applies at ZeRO-3 only)");
  return im.Put("parallel.offload", stage3 ? "optimizer+params" : "optimizer", offload_at);
}

// Arguments of a training script that gpuplan reads without effect on the estimate.
bool TrainerNoEffect(const std::string& n) {
  static const std::set<std::string> s = {
      "learning-rate", "weight-decay", "warmup-ratio", "warmup-steps", "lr-scheduler-type", "max-grad-norm", "adam-beta1", "adam-beta2",
      "adam-epsilon", "seed", "tf32", "num-train-epochs", "per-device-eval-batch-size", "ddp-timeout", "dataloader-num-workers",
      // DeepSpeed-Chat main.py
      "data-path", "data-split", "sft-only-data-path", "data-output-path", "output-dir", "num-warmup-steps", "local-rank", "lora-module-name",
      "only-optimize-lora", "lora-learning-rate", "compute-fp32-loss", "enable-tensorboard", "tensorboard-path", "add-eot-token", "eot-token",
      "print-loss", "dropout",
      // HF TrainingArguments / LLaMA-Factory
      "logging-steps", "save-steps", "save-strategy", "eval-strategy", "evaluation-strategy", "save-total-limit", "report-to", "run-name",
      "logging-dir", "overwrite-output-dir", "do-train", "do-eval", "dataset", "template", "eval-steps", "lora-dropout", "lora-target"};
  return s.count(n) > 0;
}

Status TrainerArgs(Importer& im, const std::vector<Flag>& flags, const std::string& file, const std::string& script, int depth) {
  bool read_config = false, offload = false;
  Location offload_at;
  const bool ds_chat = IsDsChat(flags);
  for (const auto& f : flags) {
    const Location w = f.At(file);
    const std::string n = Norm(f.name);
    const bool has = !f.values.empty();
    const Word v = has ? f.values[0] : Word{"true", f.word.line, ""};
    if (!v.unresolved.empty()) {
      im.Unresolved(w, v.text + ": " + v.unresolved + "; not applied");
      continue;
    }
    auto boolean = [&]() -> Result<bool> { return Bool(v.text, w); };
    auto put_int = [&](const char* key) -> Status {
      auto i = Int(v.text, w, 1, int64_t{1} << 32);
      if (!i.ok()) return i.status();
      return im.Put(key, Str(*i), w);
    };
    if (n == "deepspeed" || n == "deepspeed-config") {
      if (!has) continue;  // Megatron-DeepSpeed's --deepspeed switch; the file follows as --deepspeed_config
      read_config = true;
      GPUPLAN_RETURN_IF_ERROR(im.ReadNamedFile(v.text, w, depth, ImportKind::kDeepspeedConfig));
    } else if (n == "accelerate-config") {  // gpuplan's torchrun form of an accelerate export
      read_config = true;
      std::string path;
      auto text = im.ReadConfigText(v.text, w, depth, ImportKind::kAccelerateConfig, path);
      if (!text.ok()) return text.status();
      FlatConfig cfg;
      GPUPLAN_RETURN_IF_ERROR(im.ReadAccelerateInto(*text, path, cfg));
      GPUPLAN_RETURN_IF_ERROR(im.ApplyAccelerate(cfg, depth + 1));
    } else if (n == "per-device-train-batch-size") {
      GPUPLAN_RETURN_IF_ERROR(put_int("training.micro_batch"));
    } else if (n == "gradient-accumulation-steps") {
      GPUPLAN_RETURN_IF_ERROR(put_int("training.grad_accum"));
    } else if (n == "max-steps") {
      GPUPLAN_RETURN_IF_ERROR(put_int("training.steps"));
    } else if (n == "zero-stage") {
      auto z = Int(v.text, w, 0, 3);
      if (!z.ok()) return z.status();
      GPUPLAN_RETURN_IF_ERROR(im.Put("parallel.zero", Str(*z), w));
    } else if (n == "offload") {
      auto b = boolean();
      if (!b.ok()) return b.status();
      offload = *b, offload_at = w;
    } else if (n == "dtype") {
      const std::string d = Lower(v.text);
      if (d != "fp16" && d != "bf16" && d != "fp32") return Bad(w, "expected fp16, bf16 or fp32, got '" + v.text + "'");
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", d, w));
    } else if (n == "lora-dim" || n == "lora-rank" || n == "lora-r") {
      auto r = Int(v.text, w, 0, 1 << 16);
      if (!r.ok()) return r.status();
      if (*r == 0) {
        GPUPLAN_RETURN_IF_ERROR(im.Put("training.method", "full", w));
        continue;
      }
      if (n == "lora-dim") GPUPLAN_RETURN_IF_ERROR(im.Put("training.method", "lora", w));
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.lora.rank", Str(*r), w));
    } else if (n == "lora-alpha") {
      GPUPLAN_RETURN_IF_ERROR(im.Put("training.lora.alpha", v.text, w));
    } else if (n == "finetuning-type") {  // LLaMA-Factory: lora | full | freeze
      const std::string t = Lower(v.text);
      if (t == "lora" || t == "full") GPUPLAN_RETURN_IF_ERROR(im.Put("training.method", t, w));
      else im.Unknown(w, "finetuning_type '" + v.text + "' is not a method gpuplan models (lora, full)");
    } else if (n == "max-seq-length" || n == "model-max-length" || n == "max-length" || n == "block-size" || n == "seq-length" ||
               n == "max-seq-len" || n == "cutoff-len") {
      GPUPLAN_RETURN_IF_ERROR(put_int("training.seq_len"));
    } else if (n == "bf16" || n == "fp16") {
      auto b = boolean();
      if (!b.ok()) return b.status();
      if (*b) GPUPLAN_RETURN_IF_ERROR(im.Put("training.precision", n, w));
    } else if (n == "gradient-checkpointing" || n == "torch-compile") {
      auto b = boolean();
      if (!b.ok()) return b.status();
      if (n == "torch-compile") GPUPLAN_RETURN_IF_ERROR(im.Put("training.compile", *b ? "true" : "false", w));
      else if (*b) GPUPLAN_RETURN_IF_ERROR(im.Put("training.recompute", "full", w));
    } else if (n == "optim") {
      static const std::map<std::string, std::string> kOptim = {
          {"adamw_torch", "adamw"}, {"adamw_hf", "adamw"}, {"adamw_torch_fused", "adamw"}, {"adamw_apex_fused", "adamw"},
          {"adamw_bnb_8bit", "adamw-8bit"}, {"adamw_8bit", "adamw-8bit"}, {"paged_adamw_8bit", "paged-adamw-8bit"},
          {"adafactor", "adafactor"}, {"sgd", "sgd"}};
      auto it = kOptim.find(v.text);
      if (it != kOptim.end()) GPUPLAN_RETURN_IF_ERROR(im.Put("training.optimizer", it->second, w));
      else im.Unknown(w, "optimizer '" + v.text + "' is not one gpuplan models");
    } else if (n == "model-name-or-path") {
      if (auto p = PresetFromName(v.text)) GPUPLAN_RETURN_IF_ERROR(im.Put("model.preset", *p, w));
      else if (!im.BaseHasModel()) im.Unresolved(w, "'" + v.text + "' is not a gpuplan preset: give --model (gpuplan models, or its config.json)");
    } else if (TrainerNoEffect(n)) {
      im.Note(w, "read, no effect on the estimate");
    } else {
      im.Unknown(w, "an argument of " + Base(script) + " gpuplan does not read");
    }
  }
  if (ds_chat) return DsChatDefaults(im, flags, file, script, offload, offload_at);
  if (offload) im.Unknown(offload_at, "--offload of " + Base(script) + ": what it offloads is the script's own; not applied");
  if (!read_config) return im.Put("training.framework", "hf-trainer", {file, flags.empty() ? 1 : flags[0].word.line, Base(script)}, Strength::kDefault);
  return Status::Ok();
}


}  // namespace gpuplan::import_detail
