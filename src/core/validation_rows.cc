#include "gpuplan/validation_rows.h"

#include "gpuplan/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string_view>

namespace gpuplan {

namespace {

bool Contains(const std::string& hay, const std::string& needle) { return Lower(hay).find(needle) != std::string::npos; }

// Upper bounds of the shape and layout columns. Each is far above any real run, and they keep
// every product below (micro_batch x dp x grad_accum, the batch arithmetic) inside int64.
constexpr int64_t kMaxDim = 100'000'000;      // layers, hidden, heads, ffn_hidden, vocab, seq_len
constexpr int64_t kMaxParallel = 10'000'000;  // tp, pp, dp, cp, num_gpus, micro_batch, grad_accum
constexpr int64_t kMaxBatch = 1'000'000'000;  // global_batch

// A whole number in [0, max] (0 = empty / unknown: the row is skipped with a reason); a cell that
// is not one is an error at the cell.
Result<int64_t> Whole(const CsvRecord& r, const std::string& col, int64_t max = kMaxDim) {
  auto v = r.OptInteger(col, 0, max);
  if (!v.ok()) return v.status();
  return v->value_or(0);
}

// Integer after "key=" in the notes (e.g. "grad_accum=6"), or 0; a malformed or huge one is an
// error at the notes cell.
Result<int64_t> NoteInt(const std::string& notes, const std::string& key, const Location& where) {
  auto p = notes.find(key + "=");
  if (p == std::string::npos) return int64_t{0};
  p += key.size() + 1;
  size_t end = p;
  while (end < notes.size() && notes[end] >= '0' && notes[end] <= '9') ++end;
  auto v = ParseInteger(std::string_view(notes).substr(p, end - p), where, 0, kMaxParallel);
  if (!v.ok()) return Status::BadInput(where, key + "=: " + v.status().reason());
  return v;
}

// The notes column as key=value pairs ("method=lora; rank=64; ..."): the value runs to the next
// "; " (values never contain one in the shared files). Keys are lower-case as written.
std::map<std::string, std::string> NoteMap(const std::string& notes) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < notes.size()) {
    size_t end = notes.find("; ", pos);
    if (end == std::string::npos) end = notes.size();
    const std::string seg = notes.substr(pos, end - pos);
    const size_t eq = seg.find('=');
    if (eq != std::string::npos && eq > 0 && seg.find(' ') > eq) out.emplace(seg.substr(0, eq), seg.substr(eq + 1));
    pos = end + 2;
  }
  return out;
}

std::string Note(const std::map<std::string, std::string>& n, const std::string& key) {
  auto it = n.find(key);
  return it == n.end() ? "" : it->second;
}

// The text after `key` in free-form notes (keys with spaces, which NoteMap does not split), or "".
std::string TextAfter(const std::string& notes, const std::string& key) {
  const size_t at = notes.find(key);
  return at == std::string::npos ? "" : notes.substr(at + key.size());
}

// The leading number of a note value ("209.9", "16 (README example ...)"), or 0.
double LeadingNumber(const std::string& v) {
  size_t end = 0;
  while (end < v.size() && ((v[end] >= '0' && v[end] <= '9') || v[end] == '.' || v[end] == ',')) ++end;
  std::string digits;
  for (size_t i = 0; i < end; ++i)
    if (v[i] != ',') digits += v[i];
  if (digits.empty() || digits == ".") return 0;
  char* stop = nullptr;
  const double x = std::strtod(digits.c_str(), &stop);
  return std::isfinite(x) && x > 0 && x < 1e15 ? x : 0;
}

// The model family from its name, for the shape columns' missing facts (docs/validation.md):
// MLP kind, norm, positions, biases, head_dim, tied embeddings. Each line is the family's public
// config.json convention.
void ApplyFamily(Arch& a, const std::string& model_name, const std::string& notes) {
  const std::string n = Lower(model_name);
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  a.mlp = MlpKind::kSwiGlu;  // Llama, Mistral, Yi, CodeLlama, TinyLlama, Phi-3, Qwen v1, Gemma (GeGLU: gated too)
  a.norm = NormKind::kRmsNorm;
  a.position = PositionKind::kRotary;
  if (has("qwen")) a.qkv_bias = true;  // QWen c_attn has a bias
  if (has("gemma")) {
    a.head_dim = 256;                  // Gemma / Gemma 2 config.json head_dim (2B, 7B, 9B)
    a.tied_embeddings = true;
    if (has("gemma-2")) a.norms_per_layer = 4;
  }
  if (has("phi-3") || has("tinyllama")) a.tied_embeddings = false;
  if (has("llama-3.2")) a.tied_embeddings = true;
  const bool gpt_style = has("falcon") || has("bloom") || has("phi-2") || has("stablelm") || has("gpt") || has("mpt");
  if (gpt_style) {
    a.mlp = MlpKind::kGelu;
    a.norm = NormKind::kLayerNorm;
    a.norm_bias = true;
    a.linear_bias = has("bloom") || has("phi-2") || has("stablelm") || has("gpt") || Contains(notes, "biases");
    if (has("bloom")) a.position = PositionKind::kAlibi, a.tied_embeddings = true;
    if (has("falcon")) a.tied_embeddings = true;  // falcon-7b config: tie_word_embeddings
    if (has("gpt") || Contains(notes, "learned pos")) a.position = PositionKind::kLearned, a.tied_embeddings = true;
    if (has("mpt") && !Contains(notes, "learned pos")) a.position = PositionKind::kAlibi, a.tied_embeddings = true;
  }
}

// LoRA target module names as the sources write them -> gpuplan's (Llama-style) names.
std::vector<std::string> MapLoraTargets(const std::string& text) {
  const std::string t = Lower(text.substr(0, text.find(" (")));
  if (t.find("all") != std::string::npos || t.find("c_attn,c_proj,w1,w2") != std::string::npos ||
      t == "q,k,v,o,gate,up,down")
    return {"all-linear"};
  std::vector<std::string> out;
  auto add = [&](const char* x) {
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  };
  for (const auto& w : SplitList(t)) {
    if (w == "query_key_value" || w == "c_attn" || w == "qkv_proj" || w == "wqkv") add("q_proj"), add("k_proj"), add("v_proj");
    else if (w == "query" || w == "q") add("q_proj");
    else if (w == "key" || w == "k") add("k_proj");
    else if (w == "value" || w == "v") add("v_proj");
    else if (w == "dense" || w == "o" || w == "out_proj") add("o_proj");
    else if (w == "gate") add("gate_proj");
    else if (w == "up" || w == "w1" || w == "w2" || w == "dense_h_to_4h" || w == "fc1") add("up_proj");
    else if (w == "down" || w == "dense_4h_to_h" || w == "fc2") add("down_proj");
    else if (IsKnownLoraTarget(w)) add(w.c_str());
  }
  return out;
}

// The framework a row ran on, from the notes' framework= / implementation= and the source
// (docs/validation.md lists the mapping).
Framework DetectFramework(const std::string& source, const std::map<std::string, std::string>& notes,
                          const std::string& notes_text) {
  const std::string impl = Lower(Note(notes, "implementation"));
  const std::string fw = Lower(Note(notes, "framework"));
  const std::string src = Lower(source);
  // Without a framework= note the prose says what measured it ("collected using Megatron-DeepSpeed").
  const std::string all = fw + " " + src + (fw.empty() ? " " + Lower(notes_text) : "");
  auto in = [&](const char* x) { return all.find(x) != std::string::npos; };
  if (!impl.empty()) return impl.find("unsloth") != std::string::npos ? Framework::kUnsloth : Framework::kHfTrainer;
  if (in("unsloth")) return Framework::kUnsloth;
  if (in("torchtune")) return Framework::kTorchtune;
  if (in("torchtitan")) return Framework::kTorchtitan;
  if (in("llm-foundry") || in("composer")) return Framework::kLlmFoundry;
  // NeMo AutoModel runs Hugging Face models on PyTorch FSDP2 (not Megatron-Core).
  if (in("automodel") || in("auto model")) return Framework::kFsdp;
  if (in("megatron-bridge") || in("megatron bridge")) return Framework::kMegatronBridge;
  if (in("nemo")) return Framework::kNemo;
  if (in("megatron")) return Framework::kMegatron;  // Megatron-LM, Megatron-Core, Megatron-DeepSpeed
  if (in("hf trainer") || in("sfttrainer") || in("axolotl") || in("llama-factory") || in("trainer")) return Framework::kHfTrainer;
  if (in("deepspeed")) return Framework::kDeepspeed;
  if (in("fsdp")) return Framework::kFsdp;
  return Framework::kGeneric;
}

// "github:owner/repo@commit:path (...)" -> "owner/repo".
std::string ShortRepo(const std::string& source) {
  std::string x = source.rfind("github:", 0) == 0 ? source.substr(7) : source;
  return x.substr(0, std::min(x.find('@'), x.find(' ')));
}

double UnitBytes(const std::string& unit) {
  const std::string u = Lower(unit.substr(0, unit.find(' ')));
  if (u == "gib") return 1024.0 * 1024 * 1024;
  if (u == "gb") return 1e9;
  if (u == "mib") return 1024.0 * 1024;
  if (u == "mb") return 1e6;
  return 0;
}

// Fine-tuning facts of a row (peft_runs.csv notes: method, rank, alpha, targets, base_quant,
// optimizer, packing, seq_len_kind, mean_tokens_per_sample, memory_stat) into the job and the row.
// Returns why the row cannot be modelled, or "" (docs/validation.md, "How rows are read").
std::string ReadFineTuning(const std::map<std::string, std::string>& nm, MeasuredRow& m, Job& j) {
  TrainingSpec& t = j.training;
  const bool memory_row = m.metric.rfind("peak_memory", 0) == 0;
  m.unit_bytes = UnitBytes(m.unit);
  const std::string stat = Lower(Note(nm, "memory_stat") + " " + Note(nm, "memory_value"));
  m.memory_stat = m.metric == "peak_memory_reserved_per_gpu" || Contains(stat, "reserved") ? MeasuredRow::MemoryStat::kReserved
                  : Contains(stat, "allocated")                                            ? MeasuredRow::MemoryStat::kAllocated
                  : Contains(stat, "nvidia-smi")                                           ? MeasuredRow::MemoryStat::kDeviceTotal
                                                                                           : MeasuredRow::MemoryStat::kUnknown;
  // PEFT method_comparison's value includes generation eval at batch 50; its train-step 99th
  // percentile of reserved memory is the training peak.
  if (memory_row && Contains(stat, "eval") && LeadingNumber(Note(nm, "reserved_99th_train_steps_gib")) > 0) {
    m.measured = LeadingNumber(Note(nm, "reserved_99th_train_steps_gib"));
    m.unit_bytes = 1024.0 * 1024 * 1024;
  }
  const std::string method = Lower(Note(nm, "method"));
  if (method.empty()) return "";  // pretraining rows (runs.csv, runs_vtrain.csv)
  const std::string variant = Lower(Note(nm, "variant")), quant = Lower(Note(nm, "base_quant") + " " + variant);
  const std::string prec = Lower(m.job_precision_text);
  if (method == "full") t.method = Method::kFull;
  else if (method == "lora") t.method = Method::kLora;
  else if (method == "qlora") t.method = Method::kQlora;
  else if (method == "dora") t.method = Method::kDora;
  else return "method '" + method + "' is not modelled";
  if (Contains(quant, "gptq") || Contains(prec, "gptq")) t.method = Method::kQlora, t.quant = BaseQuant::kGptq;
  else if (Contains(quant, "awq")) t.method = Method::kQlora, t.quant = BaseQuant::kAwq;
  else if (Contains(quant, "int8") || Contains(quant, "8-bit base")) t.method = Method::kQlora, t.quant = BaseQuant::kInt8;
  if (Lower(Note(nm, "use_dora")) == "true" || Contains(variant, "dora")) t.method = Method::kDora;
  if (Contains(variant, "lora-fa")) return "LoRA-FA (A frozen) is not modelled";
  const std::string saved = Lower(Note(nm, "modules_to_save"));
  if (Contains(saved, "wte") || Contains(saved, "embed") || Contains(saved, "lm_head"))
    return "modules_to_save trains the embedding and output layer fully (not modelled)";
  if (IsAdapterMethod(t.method)) {
    const double rank = LeadingNumber(Note(nm, "rank"));
    if (rank < 1) return "LoRA rank not stated";
    t.lora.rank = static_cast<int64_t>(rank);
    if (const double alpha = LeadingNumber(Note(nm, "alpha")); alpha > 0) t.lora.alpha = alpha;
    t.lora.targets = MapLoraTargets(Note(nm, "targets"));
    if (t.lora.targets.empty()) return "LoRA targets '" + Note(nm, "targets") + "' not mapped to projections";
  }
  const std::string opt = Lower(Note(nm, "optimizer"));
  t.optimizer = Contains(opt, "adafactor")                                        ? Optimizer::kAdafactor
                : (Contains(opt, "8bit") || Contains(opt, "8-bit")) && Contains(opt, "paged") ? Optimizer::kPagedAdamW8bit
                : Contains(opt, "8bit") || Contains(opt, "8-bit")                ? Optimizer::kAdamW8bit
                : Contains(opt, "sgd")                                            ? Optimizer::kSgd
                                                                                  : Optimizer::kAdamW;
  if (Lower(Note(nm, "cpu_offload")) == "true") j.parallel.offload = Offload::kOptimizerParams;
  // torchtune optimizer_in_bwd (docs/model/memory.md §2.5): each parameter steps in backward.
  if (Lower(Note(nm, "optimizer_in_bwd")) == "true" || Lower(Note(nm, "optimizer_in_backward")) == "true")
    t.optimizer_in_backward = true;
  // Samples per epoch: "s/epoch (1024 samples)" or "one epoch of 1024 dummy samples".
  if (auto p = m.unit.find('('); p != std::string::npos) m.samples_per_epoch = LeadingNumber(m.unit.substr(p + 1));
  if (m.samples_per_epoch == 0) {
    const std::string def = Note(nm, "epoch_definition");
    if (auto p = def.find("epoch of "); p != std::string::npos) m.samples_per_epoch = LeadingNumber(def.substr(p + 9));
  }
  const std::string kind = Lower(Note(nm, "seq_len_kind"));
  m.seq_len_kind = kind.rfind("max_cap", 0) == 0 ? "max_cap" : kind.rfind("variable", 0) == 0 ? "variable" : "fixed";
  m.mean_tokens_per_sample = LeadingNumber(Note(nm, "mean_tokens_per_sample"));
  const std::string packing = Lower(Note(nm, "packing"));
  if (m.seq_len_kind == "fixed") return "";
  if (m.seq_len_kind == "variable") return "seq_len_kind=variable: no sequence length stated";
  // seq_len is only a cap. Peak memory is reached at the longest micro-batch, which is the cap
  // when samples are truncated to it; a cap the notes say the samples stay far below is not.
  const std::string meaning = Lower(Note(nm, "seq_len_meaning") + " " + Note(nm, "seq_note"));
  if (memory_row)
    return Contains(meaning, "much shorter") ? "seq_len is a cap far above the samples and their longest length is not stated" : "";
  if (m.mean_tokens_per_sample <= 0) return "seq_len is only a cap (seq_len_kind=max_cap) and the mean sample length is not stated";
  const int64_t mean = std::max<int64_t>(1, std::llround(std::min<double>(m.mean_tokens_per_sample, t.seq_len)));
  if (Contains(packing, "bucket")) {
    // Length-bucketed batches pad little: the step computes at about the mean length.
    t.seq_len = mean;
  } else {
    t.padding = Contains(packing, "longest") ? Padding::kPadToLongest : Padding::kPadToMax;
    t.tokens_per_sample = mean;
  }
  return "";
}

// Reads a whole-number column into `out`, or returns its error from the enclosing function.
// Inside the row loop: an unreadable cell skips the row with a warning naming the cell.
#define WHOLE(out, r, col, ...)                                    \
  if (auto _w = Whole(r, col, ##__VA_ARGS__); !_w.ok()) {          \
    unreadable(_w.status());                                       \
    continue;                                                      \
  } else                                                           \
    (out) = *_w

}  // namespace

// A GPU named in prose ("A100 80GB SXM", "A100 SXM (memory size UNVERIFIED ...)", "H100 80GB (doc:
// ..., form factor not stated)", "RTX 3090 (power-limited to 280 W)"): the catalog id, alias, or
// the text before " (", else chip + memory + form factor read as words. A form factor that is not
// stated is taken as SXM (the cloud and DGX/HGX default) where the chip has one: docs/validation.md.
std::optional<std::string> MatchGpuName(const Catalog& catalog, const std::string& text) {
  if (auto g = catalog.FindGpu(text); g.ok()) return g->id;
  const std::string head = text.substr(0, text.find(" ("));
  if (auto g = catalog.FindGpu(head); g.ok()) return g->id;
  std::string words;
  for (char c : Lower(head)) words += std::isalnum(static_cast<unsigned char>(c)) ? c : ' ';
  std::vector<std::string> tok;
  for (size_t i = 0; i < words.size();) {
    while (i < words.size() && words[i] == ' ') ++i;
    size_t j = i;
    while (j < words.size() && words[j] != ' ') ++j;
    if (j > i) tok.push_back(words.substr(i, j - i));
    i = j;
  }
  std::string chip, mem, form;
  for (size_t i = 0; i < tok.size(); ++i) {
    const std::string& t = tok[i];
    if (t == "nvidia" || t == "geforce" || t == "tesla") continue;
    if (t == "rtx" && i + 1 < tok.size()) { chip = "rtx" + tok[++i]; continue; }
    if (t.size() > 2 && t.compare(t.size() - 2, 2, "gb") == 0 && std::isdigit(static_cast<unsigned char>(t[0]))) { mem = t; continue; }
    if (t.rfind("sxm", 0) == 0) { form = "sxm"; continue; }
    if (t == "pcie" || t == "nvl") { form = t; continue; }
    if (chip.empty()) chip = t;
  }
  if (chip.empty()) return std::nullopt;
  const GpuSpec* best = nullptr;
  int best_score = -1;
  for (const auto& g : catalog.gpus) {
    if (g.id.rfind(chip + "-", 0) != 0) continue;
    if (!mem.empty() && g.id.find("-" + mem) == std::string::npos) continue;
    if (!form.empty() && g.id.find("-" + form) == std::string::npos) continue;
    const int score = (g.id.find("-sxm") != std::string::npos ? 2 : 0) + (g.id.find("-pcie") == std::string::npos ? 1 : 0);
    if (score > best_score) best = &g, best_score = score;
  }
  if (best == nullptr) return std::nullopt;
  return best->id;
}

Result<std::vector<MeasuredRow>> ReadMeasuredRows(const std::string& path, const Catalog& catalog) {
  auto table = ReadCsvFile(path);
  if (!table.ok()) return table.status();
  for (const char* col : {"source", "model_name", "layers", "hidden", "heads", "seq_len", "gpu", "num_gpus", "tp", "pp",
                          "dp", "micro_batch", "global_batch", "recompute", "precision", "measured_metric",
                          "measured_value"})
    if (table->Column(col) < 0) return Status::BadInput({path, 1, col}, "missing column (expected the runs.csv columns)");
  std::vector<MeasuredRow> out;
  for (const auto& row : table->rows) {
    CsvRecord r(*table, row);
    MeasuredRow m;
    m.line = row.line;
    m.source = r.Str("source");
    m.model_name = r.Str("model_name");
    m.metric = r.Str("measured_metric");
    m.unit = r.Str("unit");
    const std::string notes = r.Str("notes");
    const std::map<std::string, std::string> nm = NoteMap(notes);
    auto skip = [&](const std::string& why) {
      m.skip_reason = why;
      out.push_back(m);
    };
    // A cell that cannot be read (not a number, out of range) skips its row, not the file: the
    // warning names it as file:line: column: reason (docs/validation-rows.md).
    auto unreadable = [&](const Status& st) {
      m.unreadable = st.ToString();
      skip("unreadable cell: " + st.ToString());
    };
    // A measurement is a positive finite number (it divides the error); empty/unknown skips the row.
    auto value = r.OptNumber("measured_value", {0, 1e18, /*min_exclusive=*/true});
    if (!value.ok()) { unreadable(value.status()); continue; }
    if (!value->has_value()) { skip("no numeric measured_value"); continue; }
    m.measured = **value;
    if (Contains(notes, "not a measurement")) { skip("analytical value, not a measurement"); continue; }
    Job& j = m.job;
    Arch& a = j.arch;
    a.name = m.model_name;
    WHOLE(a.layers, r, "layers");
    WHOLE(a.hidden, r, "hidden");
    WHOLE(a.heads, r, "heads");
    WHOLE(a.kv_heads, r, "kv_heads");
    WHOLE(a.ffn_hidden, r, "ffn_hidden");
    WHOLE(a.vocab, r, "vocab");
    if (a.layers == 0 || a.hidden == 0 || a.heads == 0 || a.vocab == 0) { skip("architecture columns incomplete"); continue; }
    ApplyFamily(a, m.model_name, notes);
    if (a.position == PositionKind::kLearned) {
      WHOLE(a.max_positions, r, "seq_len");
    }
    if (a.mlp == MlpKind::kGelu && a.ffn_hidden == 0) a.ffn_hidden = 4 * a.hidden;  // <= 4e8: no overflow
    if (a.mlp == MlpKind::kSwiGlu && a.ffn_hidden == 0) { skip("ffn_hidden missing for a SwiGLU model"); continue; }
    TrainingSpec& t = j.training;
    t.method = Method::kPretrain;
    WHOLE(t.seq_len, r, "seq_len");
    WHOLE(t.micro_batch, r, "micro_batch", kMaxParallel);
    WHOLE(t.global_batch, r, "global_batch", kMaxBatch);
    if (t.seq_len == 0 || t.micro_batch == 0) { skip("seq_len or micro_batch missing"); continue; }
    const std::string prec = Lower(r.Str("precision"));
    t.precision = Contains(prec, "fp8") || Contains(prec, "float8") ? Precision::kFp8
                  : prec.rfind("fp16", 0) == 0                       ? Precision::kFp16
                  : prec.rfind("fp32", 0) == 0                       ? Precision::kFp32
                  : Contains(prec, "fp16") && !Contains(prec, "bf16") ? Precision::kFp16
                                                                      : Precision::kBf16;
    if (t.precision == Precision::kFp8) {
      // The FP8 scaling recipe as sources name it (Transformer Engine / NeMo: FP8-CS current scaling,
      // FP8-DS delayed scaling, MXFP8; torchao: tensorwise, rowwise).
      const std::string rec = prec + " " + Lower(notes);
      t.fp8_recipe = Contains(rec, "mxfp8")                                  ? Fp8Recipe::kMxfp8
                     : Contains(rec, "rowwise")                              ? Fp8Recipe::kRowwise
                     : Contains(rec, "delayed") || Contains(rec, "fp8-ds")   ? Fp8Recipe::kDelayed
                                                                             : Fp8Recipe::kTensorwise;
    }
    m.fsdp_pure_bf16 = Contains(prec, "pure");
    m.job_precision_text = r.Str("precision");
    // Parameters (and optimizer states) kept in bf16 without an fp32 master: litgpt "bf16-true",
    // fsdp_qlora "pure bf16 params", PEFT's bf16-loaded model without AMP.
    if (t.precision == Precision::kBf16 && (Contains(prec, "bf16-true") || Contains(prec, "pure bf16") || Contains(prec, "no amp")))
      t.master_weights = MasterWeights::kNone;
    const std::string rc = Lower(r.Str("recompute"));
    t.recompute = rc.rfind("full", 0) == 0 ? Recompute::kFull
                  : rc.rfind("selective", 0) == 0 ? Recompute::kSelective
                                                  : Recompute::kNone;
    // Megatron's 2021 tables predate flash attention; llm-foundry and torchtitan use it.
    t.flash_attention = !Contains(m.source, "megatron-lm@152aab") && !Contains(m.source, "megatron-lm@50a4b5") &&
                        !Contains(m.model_name, "korthikanti") && !Contains(m.source, "vtrain") &&
                        !Contains(Note(nm, "attention"), "xformers") && !Contains(Note(nm, "attn_implementation"), "eager");
    ParallelSpec& p = j.parallel;
    WHOLE(p.tp, r, "tp", kMaxParallel);
    WHOLE(p.pp, r, "pp", kMaxParallel);
    WHOLE(p.dp, r, "dp", kMaxParallel);
    WHOLE(p.cp, r, "cp", kMaxParallel);
    p.tp = std::max<int64_t>(1, p.tp);
    p.pp = std::max<int64_t>(1, p.pp);
    p.dp = std::max<int64_t>(1, p.dp);
    p.cp = std::max<int64_t>(1, p.cp);
    // Megatron's interleaved schedule: virtual stages per pipeline rank from the notes' vp=
    // (NeMo / Megatron-Bridge tables' VP column; "n/a" or absent: 1).
    if (const double vp = LeadingNumber(Note(nm, "vp")); p.pp > 1 && vp >= 2 && vp <= kMaxParallel)
      p.vpp = static_cast<int64_t>(vp);
    // Megatron-LM's README tables state the interleaved schedule as layers per virtual stage
    // (--num-layers-per-virtual-pipeline-stage N): vpp = layers / (pp x N) when that divides.
    if (const double per = LeadingNumber(TextAfter(notes, "interleaved schedule layers/virtual stage=")); p.pp > 1 && per >= 1) {
      const double v = static_cast<double>(j.arch.layers) / (static_cast<double>(p.pp) * per);
      if (v >= 2 && v <= kMaxParallel && v == std::floor(v)) p.vpp = static_cast<int64_t>(v);
    }
    // torchtitan's tensor-parallel plan always shards the sequence (SP) and the loss over TP.
    p.sequence_parallel = p.tp > 1 && (Contains(rc, "sequence parallel") || Contains(m.source, "torchtitan"));
    const std::string z = Lower(r.Str("zero_or_fsdp"));
    p.zero = Contains(z, "full_shard") || Contains(z, "fsdp2") || Contains(z, "zero-3") || Contains(z, "fsdpstrategy") ? 3
             : Contains(z, "shard_grad_op") || Contains(z, "zero-2") ? 2
             : Contains(z, "distributed optimizer") || Contains(z, "zero-1") ? 1 : 0;
    if (Contains(z, "offload") && !Contains(z, "no offload") && !Contains(z, "offload_params=false"))
      p.offload = Offload::kOptimizerParams;  // FSDP CPU offload / ZeRO-3 offload: params and optimizer on the host
    m.dp_overlap = !Contains(z, "impl=local");
    m.compiled = (Contains(notes, "torch.compile") && !Contains(notes, "eager")) || Lower(Note(nm, "compile")).rfind("true", 0) == 0;
    t.compile = m.compiled;
    t.framework = DetectFramework(m.source, nm, notes);
    m.framework_text = Note(nm, "framework").empty() ? ShortRepo(m.source) : Note(nm, "framework");
    // Qwen v1's modeling_qwen.py calls flash-attn's fused rotary (apply_rotary_emb_func) and RMSNorm
    // (flash_attn.ops.rms_norm) whenever flash-attn is installed, as in the README's profiling.
    if (Contains(m.model_name, "qwen") && Contains(m.model_name, "v1") && Contains(Note(nm, "attention"), "flash"))
      t.fused_ops |= kFusedNorm | kFusedRope;
    const std::string fine_tuning = ReadFineTuning(nm, m, j);
    if (!fine_tuning.empty()) { skip(fine_tuning); continue; }
    // torchtitan's pipeline splits the per-DP-rank local batch into pp micro-batches.
    if (p.pp > 1 && Contains(m.source, "torchtitan")) t.micro_batch = std::max<int64_t>(1, t.micro_batch / p.pp);
    ClusterSpec& c = j.cluster;
    WHOLE(c.num_gpus, r, "num_gpus", kMaxParallel);
    int64_t per_node = 0;
    WHOLE(per_node, r, "gpus_per_node", 1024);
    c.gpus_per_node = per_node ? per_node : 8;
    const auto gpu = MatchGpuName(catalog, r.Str("gpu"));
    if (!gpu) { skip("GPU '" + r.Str("gpu") + "' is not in the catalog"); continue; }
    c.gpu = *gpu;
    // "RTX 3090 (power-limited to 280 W)": the run's power limit (cluster.power_limit_w).
    if (const auto pl = Lower(r.Str("gpu")).find("power-limited to "); pl != std::string::npos)
      c.power_limit_w = LeadingNumber(Lower(r.Str("gpu")).substr(pl + 17));
    // The interconnect column: a multi-node run whose fabric is not stated cannot be predicted
    // (its data-parallel traffic depends on it) unless it ran on a DGX system (Selene, a DGX
    // SuperPOD: one HDR/NDR InfiniBand port per GPU, the reference design and gpuplan's default for
    // those GPUs); "no NVLink" puts the GPUs on PCIe.
    const std::string ic = Lower(r.Str("interconnect"));
    const bool dgx = Contains(ic, "dgx") || Contains(ic, "selene") || Contains(ic, "superpod");
    if (c.num_gpus > c.gpus_per_node && Contains(ic, "fabric not stated") && !dgx) { skip("multi-node run whose inter-node fabric is not stated"); continue; }
    if (Contains(ic, "no nvlink")) {
      const auto g = catalog.FindGpu(c.gpu);
      c.intra_node = "pcie" + std::to_string(static_cast<int>(g.ok() ? g->pcie_gen.value_or(4) : 4)) + "-x16";
    }
    auto accum = NoteInt(notes, "grad_accum", r.Where("notes"));
    if (!accum.ok()) { unreadable(accum.status()); continue; }
    // micro_batch, dp and grad_accum are each <= 1e7, so their product (<= 1e21) can pass int64: the
    // batch is computed in 128 bits and one above kMaxBatch is an error at global_batch.
    const __int128 per_step = static_cast<__int128>(t.micro_batch) * p.dp;  // >= 1: micro_batch > 0 here
    __int128 global = t.global_batch;
    if (global == 0) global = per_step * std::max<int64_t>(1, *accum);
    if (global % per_step != 0) global = per_step * std::max<__int128>(1, global / per_step);
    if (global > kMaxBatch) {
      unreadable(Status::BadInput(r.Where("global_batch"), "micro_batch x dp x grad_accum is above " +
                                                               std::to_string(kMaxBatch) + " sequences"));
      continue;
    }
    t.global_batch = static_cast<int64_t>(global);
    Status st = FinalizeJob(j);
    if (!st.ok()) { skip("inconsistent configuration: " + st.reason()); continue; }
    m.usable = true;
    out.push_back(m);
  }
  return out;
}

}  // namespace gpuplan
