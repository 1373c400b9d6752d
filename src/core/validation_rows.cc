#include "gpuplan/validation_rows.h"

#include "gpuplan/strings.h"

#include <algorithm>
#include <cctype>

namespace gpuplan {

namespace {

bool Contains(const std::string& hay, const std::string& needle) { return Lower(hay).find(needle) != std::string::npos; }

// A whole positive number, or 0 when the cell is empty / not a number.
int64_t Whole(const CsvRecord& r, const std::string& col) {
  auto v = r.OptNumber(col);
  if (!v.ok() || !v->has_value()) return 0;
  return static_cast<int64_t>(**v);
}

// Integer after "key=" in the notes (e.g. "grad_accum=6"), or 0.
int64_t NoteInt(const std::string& notes, const std::string& key) {
  auto p = notes.find(key + "=");
  if (p == std::string::npos) return 0;
  return std::atoll(notes.c_str() + p + key.size() + 1);
}

}  // namespace

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
    auto skip = [&](const std::string& why) {
      m.skip_reason = why;
      out.push_back(m);
    };
    auto value = r.OptNumber("measured_value");
    if (!value.ok() || !value->has_value()) { skip("no numeric measured_value"); continue; }
    m.measured = **value;
    if (Contains(notes, "not a measurement")) { skip("analytical value, not a measurement"); continue; }
    Job& j = m.job;
    Arch& a = j.arch;
    a.name = m.model_name;
    a.layers = Whole(r, "layers");
    a.hidden = Whole(r, "hidden");
    a.heads = Whole(r, "heads");
    a.kv_heads = Whole(r, "kv_heads");
    a.ffn_hidden = Whole(r, "ffn_hidden");
    a.vocab = Whole(r, "vocab");
    if (a.layers == 0 || a.hidden == 0 || a.heads == 0 || a.vocab == 0) { skip("architecture columns incomplete"); continue; }
    // Families: MPT (llm-foundry) is GPT-style with learned positions and biases per the row notes;
    // Llama rows are SwiGLU/RMSNorm/rotary; Megatron GPT rows are GPT-style.
    if (Contains(m.model_name, "llama")) {
      a.mlp = MlpKind::kSwiGlu;
      a.norm = NormKind::kRmsNorm;
      a.position = PositionKind::kRotary;
    } else {
      a.mlp = MlpKind::kGelu;
      a.norm = NormKind::kLayerNorm;
      a.norm_bias = true;
      a.linear_bias = Contains(notes, "biases") || Contains(m.model_name, "gpt");
      a.tied_embeddings = true;
      a.position = Contains(notes, "learned pos") || Contains(m.model_name, "gpt") ? PositionKind::kLearned : PositionKind::kAlibi;
      a.max_positions = Whole(r, "seq_len");
      if (a.ffn_hidden == 0) a.ffn_hidden = 4 * a.hidden;
    }
    if (a.mlp == MlpKind::kSwiGlu && a.ffn_hidden == 0) { skip("ffn_hidden missing for a SwiGLU model"); continue; }
    TrainingSpec& t = j.training;
    t.method = Method::kPretrain;
    t.seq_len = Whole(r, "seq_len");
    t.micro_batch = Whole(r, "micro_batch");
    t.global_batch = Whole(r, "global_batch");
    if (t.seq_len == 0 || t.micro_batch == 0) { skip("seq_len or micro_batch missing"); continue; }
    const std::string prec = Lower(r.Str("precision"));
    t.precision = Contains(prec, "fp8") || Contains(prec, "float8") ? Precision::kFp8
                  : Contains(prec, "fp16")                           ? Precision::kFp16
                                                                     : Precision::kBf16;
    m.fsdp_pure_bf16 = Contains(prec, "pure");
    const std::string rc = Lower(r.Str("recompute"));
    t.recompute = rc.rfind("full", 0) == 0 ? Recompute::kFull
                  : rc.rfind("selective", 0) == 0 ? Recompute::kSelective
                                                  : Recompute::kNone;
    // Megatron's 2021 tables predate flash attention; llm-foundry and torchtitan use it.
    t.flash_attention = !Contains(m.source, "megatron-lm@152aab") && !Contains(m.source, "megatron-lm@50a4b5") &&
                        !Contains(m.model_name, "korthikanti");
    ParallelSpec& p = j.parallel;
    p.tp = std::max<int64_t>(1, Whole(r, "tp"));
    p.pp = std::max<int64_t>(1, Whole(r, "pp"));
    p.dp = std::max<int64_t>(1, Whole(r, "dp"));
    p.cp = std::max<int64_t>(1, Whole(r, "cp"));
    // torchtitan's tensor-parallel plan always shards the sequence (SP) and the loss over TP.
    p.sequence_parallel = p.tp > 1 && (Contains(rc, "sequence parallel") || Contains(m.source, "torchtitan"));
    const std::string z = Lower(r.Str("zero_or_fsdp"));
    p.zero = Contains(z, "full_shard") || Contains(z, "fsdp2") ? 3 : Contains(z, "shard_grad_op") ? 2
             : Contains(z, "distributed optimizer") ? 1 : 0;
    m.dp_overlap = !Contains(z, "impl=local");
    m.compiled = Contains(notes, "torch.compile") && !Contains(notes, "eager");
    // torchtitan's pipeline splits the per-DP-rank local batch into pp micro-batches.
    if (p.pp > 1 && Contains(m.source, "torchtitan")) t.micro_batch = std::max<int64_t>(1, t.micro_batch / p.pp);
    ClusterSpec& c = j.cluster;
    c.num_gpus = Whole(r, "num_gpus");
    c.gpus_per_node = std::max<int64_t>(1, Whole(r, "gpus_per_node") ? Whole(r, "gpus_per_node") : 8);
    auto gpu = catalog.FindGpu(r.Str("gpu"));
    if (!gpu.ok()) { skip("GPU '" + r.Str("gpu") + "' is not in the catalog"); continue; }
    c.gpu = gpu->id;
    const int64_t accum = NoteInt(notes, "grad_accum");
    if (t.global_batch == 0) t.global_batch = t.micro_batch * p.dp * std::max<int64_t>(1, accum);
    if (t.global_batch % (t.micro_batch * p.dp) != 0) t.global_batch = t.micro_batch * p.dp * std::max<int64_t>(1, t.global_batch / (t.micro_batch * p.dp));
    Status st = FinalizeJob(j);
    if (!st.ok()) { skip("inconsistent configuration: " + st.reason()); continue; }
    m.usable = true;
    out.push_back(m);
  }
  return out;
}

}  // namespace gpuplan
