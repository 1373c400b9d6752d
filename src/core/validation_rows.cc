#include "gpuplan/validation_rows.h"

#include "gpuplan/strings.h"

#include <algorithm>
#include <cctype>
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

// Reads a whole-number column into `out`, or returns its error from the enclosing function.
#define WHOLE(out, r, col, ...)                        \
  do {                                                 \
    auto _w = Whole(r, col, ##__VA_ARGS__);            \
    if (!_w.ok()) return _w.status();                  \
    (out) = *_w;                                       \
  } while (0)

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
    // A measurement is a positive finite number (it divides the error); empty/unknown skips the row.
    auto value = r.OptNumber("measured_value", {0, 1e18, /*min_exclusive=*/true});
    if (!value.ok()) return value.status();
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
      WHOLE(a.max_positions, r, "seq_len");
      if (a.ffn_hidden == 0) a.ffn_hidden = 4 * a.hidden;  // <= 4e8: no overflow
    }
    if (a.mlp == MlpKind::kSwiGlu && a.ffn_hidden == 0) { skip("ffn_hidden missing for a SwiGLU model"); continue; }
    TrainingSpec& t = j.training;
    t.method = Method::kPretrain;
    WHOLE(t.seq_len, r, "seq_len");
    WHOLE(t.micro_batch, r, "micro_batch", kMaxParallel);
    WHOLE(t.global_batch, r, "global_batch", kMaxBatch);
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
    WHOLE(p.tp, r, "tp", kMaxParallel);
    WHOLE(p.pp, r, "pp", kMaxParallel);
    WHOLE(p.dp, r, "dp", kMaxParallel);
    WHOLE(p.cp, r, "cp", kMaxParallel);
    p.tp = std::max<int64_t>(1, p.tp);
    p.pp = std::max<int64_t>(1, p.pp);
    p.dp = std::max<int64_t>(1, p.dp);
    p.cp = std::max<int64_t>(1, p.cp);
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
    WHOLE(c.num_gpus, r, "num_gpus", kMaxParallel);
    int64_t per_node = 0;
    WHOLE(per_node, r, "gpus_per_node", 1024);
    c.gpus_per_node = per_node ? per_node : 8;
    auto gpu = catalog.FindGpu(r.Str("gpu"));
    if (!gpu.ok()) { skip("GPU '" + r.Str("gpu") + "' is not in the catalog"); continue; }
    c.gpu = gpu->id;
    auto accum = NoteInt(notes, "grad_accum", r.Where("notes"));
    if (!accum.ok()) return accum.status();
    // micro_batch, dp and grad_accum are each <= 1e7, so their product (<= 1e21) can pass int64: the
    // batch is computed in 128 bits and one above kMaxBatch is an error at global_batch.
    const __int128 per_step = static_cast<__int128>(t.micro_batch) * p.dp;  // >= 1: micro_batch > 0 here
    __int128 global = t.global_batch;
    if (global == 0) global = per_step * std::max<int64_t>(1, *accum);
    if (global % per_step != 0) global = per_step * std::max<__int128>(1, global / per_step);
    if (global > kMaxBatch)
      return Status::BadInput(r.Where("global_batch"), "micro_batch x dp x grad_accum is above " +
                                                           std::to_string(kMaxBatch) + " sequences");
    t.global_batch = static_cast<int64_t>(global);
    Status st = FinalizeJob(j);
    if (!st.ok()) { skip("inconsistent configuration: " + st.reason()); continue; }
    m.usable = true;
    out.push_back(m);
  }
  return out;
}

}  // namespace gpuplan
