// Built-in model presets, read from data/models.csv (compiled in).
#include <algorithm>
#include <cctype>

#include "gpuplan/arch.h"
#include "gpuplan/csv.h"
#include "gpuplan/data.h"

namespace gpuplan {

namespace {

// Rotary base, norm epsilon and rope scaling (config.json rope_theta, rms_norm_eps, rope_scaling):
// optional columns, blank = the Arch default; ValidateArch checks the ranges.
Status RopeFromRow(const CsvRecord& r, Arch& a) {
  auto real = [&](const char* col, double& out) -> Status {
    auto v = r.OptNumber(col);
    if (!v.ok()) return v.status();
    if (*v) out = **v;
    return Status::Ok();
  };
  GPUPLAN_RETURN_IF_ERROR(real("rope_theta", a.rope_theta));
  GPUPLAN_RETURN_IF_ERROR(real("norm_eps", a.norm_eps));
  GPUPLAN_RETURN_IF_ERROR(real("rope_factor", a.rope_factor));
  GPUPLAN_RETURN_IF_ERROR(real("rope_low_freq_factor", a.rope_low_freq_factor));
  GPUPLAN_RETURN_IF_ERROR(real("rope_high_freq_factor", a.rope_high_freq_factor));
  auto orig = r.OptInteger("rope_original_max_positions", 0, int64_t{1} << 24);
  if (!orig.ok()) return orig.status();
  if (*orig) a.rope_original_max_positions = **orig;
  if (const std::string type = r.Str("rope_scaling"); !type.empty()) {
    auto k = ParseRopeScaling(type, r.Where("rope_scaling"));
    if (!k.ok()) return k.status();
    a.rope_scaling = *k;
  }
  return Status::Ok();
}

Result<Arch> ArchFromRow(const CsvRecord& r) {
  Arch a;
  a.name = r.Str("id");
  // The repo a preset's shape was read from: its source "huggingface.co/<org>/<repo> config.json ...".
  if (const std::string src = r.Str("source"); src.rfind("huggingface.co/", 0) == 0)
    a.checkpoint = src.substr(15, src.find(' ') == std::string::npos ? std::string::npos : src.find(' ') - 15);
  // Whole numbers in range (ParseInteger): a 1.5 or 1e30 cell is an error, never a truncating cast.
  auto num = [&](const char* col, int64_t& out) -> Status {
    auto v = r.OptInteger(col, 0, int64_t{1} << 24);
    if (!v.ok()) return v.status();
    if (!*v) return Status::BadInput(r.Where(col), "a number is required");
    out = **v;
    return Status::Ok();
  };
  GPUPLAN_RETURN_IF_ERROR(num("layers", a.layers));
  GPUPLAN_RETURN_IF_ERROR(num("hidden", a.hidden));
  GPUPLAN_RETURN_IF_ERROR(num("heads", a.heads));
  GPUPLAN_RETURN_IF_ERROR(num("kv_heads", a.kv_heads));
  GPUPLAN_RETURN_IF_ERROR(num("head_dim", a.head_dim));
  GPUPLAN_RETURN_IF_ERROR(num("ffn_hidden", a.ffn_hidden));
  GPUPLAN_RETURN_IF_ERROR(num("vocab", a.vocab));
  GPUPLAN_RETURN_IF_ERROR(num("max_positions", a.max_positions));
  GPUPLAN_RETURN_IF_ERROR(num("experts", a.experts));
  GPUPLAN_RETURN_IF_ERROR(num("experts_per_token", a.experts_per_token));
  GPUPLAN_RETURN_IF_ERROR(num("shared_experts", a.shared_experts));
  GPUPLAN_RETURN_IF_ERROR(num("moe_ffn_hidden", a.moe_ffn_hidden));
  GPUPLAN_RETURN_IF_ERROR(num("dense_layers", a.dense_layers));
  // Columns added for Qwen3, DeepSeek MLA and Gemma: optional, blank = the Arch default.
  auto opt = [&](const char* col, int64_t& out) -> Status {
    auto v = r.OptInteger(col, 0, int64_t{1} << 24);
    if (!v.ok()) return v.status();
    if (*v) out = **v;
    return Status::Ok();
  };
  GPUPLAN_RETURN_IF_ERROR(opt("norms_per_layer", a.norms_per_layer));
  GPUPLAN_RETURN_IF_ERROR(opt("q_lora_rank", a.q_lora_rank));
  GPUPLAN_RETURN_IF_ERROR(opt("kv_lora_rank", a.kv_lora_rank));
  GPUPLAN_RETURN_IF_ERROR(opt("qk_nope_head_dim", a.qk_nope_head_dim));
  GPUPLAN_RETURN_IF_ERROR(opt("qk_rope_head_dim", a.qk_rope_head_dim));
  GPUPLAN_RETURN_IF_ERROR(opt("v_head_dim", a.v_head_dim));
  // The words the model.mlp / model.norm / model.position keys accept (ToString's names); a
  // cell outside them is an error, never a silent default.
  auto word = [&](const char* col, auto& out, auto... kinds) -> Status {
    const std::string v = r.Str(col);
    bool found = false;
    ((v == ToString(kinds) ? (out = kinds, found = true) : false), ...);
    if (!found) return Status::BadInput(r.Where(col), "unknown value '" + v + "'");
    return Status::Ok();
  };
  GPUPLAN_RETURN_IF_ERROR(word("mlp", a.mlp, MlpKind::kGelu, MlpKind::kSwiGlu, MlpKind::kGeGlu));
  GPUPLAN_RETURN_IF_ERROR(word("norm", a.norm, NormKind::kLayerNorm, NormKind::kRmsNorm));
  GPUPLAN_RETURN_IF_ERROR(word("position", a.position, PositionKind::kLearned, PositionKind::kRotary, PositionKind::kAlibi));
  for (auto [col, field] : {std::pair{"norm_bias", &a.norm_bias}, {"linear_bias", &a.linear_bias},
                            {"qkv_bias", &a.qkv_bias}, {"tied_embeddings", &a.tied_embeddings}}) {
    auto b = r.YesNo(col);
    if (!b.ok()) return b.status();
    *field = *b;
  }
  for (auto [col, field] : {std::pair{"qk_norm", &a.qk_norm}, {"router_bias", &a.router_bias}}) {
    if (r.Str(col).empty()) continue;
    auto b = r.YesNo(col);
    if (!b.ok()) return b.status();
    *field = *b;
  }
  GPUPLAN_RETURN_IF_ERROR(RopeFromRow(r, a));
  GPUPLAN_RETURN_IF_ERROR(ValidateArch(a, r.Where("")));
  return a;
}

std::vector<Arch> LoadPresets() {
  std::vector<Arch> out;
  auto t = ParseCsv(std::string(EmbeddedData("models.csv")), "data/models.csv");
  if (!t.ok()) return out;  // covered by a unit test: the shipped file always parses
  for (const auto& row : t->rows) {
    auto a = ArchFromRow(CsvRecord(*t, row));
    if (a.ok()) out.push_back(*a);
  }
  return out;
}

std::string Normalize(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
    return c == '_' || c == ' ' ? '-' : static_cast<char>(std::tolower(c));
  });
  return s;
}

}  // namespace

const std::vector<Arch>& Presets() {
  static const std::vector<Arch> presets = LoadPresets();
  return presets;
}

Result<Arch> FindPreset(const std::string& name) {
  const std::string want = Normalize(name);
  for (const auto& a : Presets())
    if (a.name == want) return a;
  std::string known;
  for (const auto& a : Presets()) known += (known.empty() ? "" : ", ") + a.name;
  return Status::BadInput({}, "unknown model preset '" + name + "' (known: " + known + ")");
}

}  // namespace gpuplan
