// Issue 19 item 4: KV-cache capacity against engine start-up logs (../shared/validation/kv_capacity.csv,
// its README: tune on llmd-*, test on the rest). Each row becomes a serving job (model by preset or
// config.json, GPU, tp/pp, memory fraction, KV dtype) and EstimateServing's kv_capacity_tokens is
// compared with the logged tokens; the memory terms with the logged GiB. Rows that cannot be
// modelled are reported as skipped with their reason. Fails when the median |error| on grade-A rows
// with a logged token count exceeds 3%, or any per-token size differs from kv_bytes_per_token_total.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "gpuplan/calibration.h"
#include "gpuplan/csv.h"
#include "gpuplan/serving.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
const std::string kFixtures = std::string(GPUPLAN_SHARED_DIR) + "/fixtures/hf-configs/";

// HF id (lower case) -> a preset or a config.json of the shared fixtures with the same shape.
const std::map<std::string, std::string> kModels = {
    {"meta-llama/llama-3.1-8b-instruct", "preset: llama-3.1-8b"},
    {"redhatai/meta-llama-3.1-8b-instruct-quantized.w4a16", "preset: llama-3.1-8b"},
    {"redhatai/meta-llama-3.1-8b-instruct-quantized.w8a8", "preset: llama-3.1-8b"},
    {"redhatai/llama-3.3-70b-instruct-fp8-dynamic", "preset: llama-3.1-70b"},
    {"redhatai/llama-3.3-70b-instruct-quantized.w8a8", "preset: llama-3.1-70b"},
    {"qwen/qwen2.5-7b-instruct", "preset: qwen2.5-7b"},
    {"redhatai/qwen2.5-7b-instruct-fp8-dynamic", "preset: qwen2.5-7b"},
    {"redhatai/qwen2.5-7b-instruct-quantized.w8a8", "preset: qwen2.5-7b"},
    {"qwen/qwen2.5-72b-instruct", "preset: qwen2.5-72b"},
    {"moonshotai/kimi-dev-72b", "preset: qwen2.5-72b"},
    {"qwen/qwen3-8b", "preset: qwen3-8b"},
    {"mistralai/mixtral-8x7b-instruct-v0.1", "preset: mixtral-8x7b"},
    {"deepseek-ai/deepseek-v2-lite-chat", "preset: deepseek-v2-lite"},
    {"google/gemma-2-9b-it", "preset: gemma-2-9b"},
    {"google/gemma-2-27b-it", "config: gemma2-27b.json"},
    {"google/gemma-2-2b-it", "config: gemma2-2b.json"},
    {"microsoft/phi-4", "config: phi4-14b.json"},
    {"qwen/qwen3-30b-a3b", "config: qwen3-moe-30b-a3b.json"},
    {"qwen/qwen3-0.6b", "config: qwen3-0.6b.json"},
    {"qwen/qwen3-32b", "config: qwen3-32b.json"},
};

struct Outcome {
  std::string id, group, version, grade, skipped;
  double err = 0;          // predicted / logged tokens - 1 (or KV GiB when no tokens are logged)
  bool tokens = false;     // compared on tokens (else on KV GiB)
  double act_err_gib = 0;  // predicted - logged activation peak
  double weights_err_gib = 0;
};

double Num(const CsvRecord& r, const std::string& col) {
  auto v = ParseDecimal(r.Str(col), r.Where(col));
  return v.ok() ? *v : std::nan("");
}

std::string LowerCase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The weight format of the row's precision text, or "" with the reason in `why`.
std::optional<WeightFormat> Weights(const std::string& text, std::string& why) {
  const std::string t = LowerCase(text);
  if (t == "bfloat16" || t == "bf16") return WeightFormat::kBf16;
  if (t == "float16") return WeightFormat::kFp16;
  if (t.find("w4a16") != std::string::npos || t.find("gptq") != std::string::npos) return WeightFormat::kInt4Gptq;
  if (t.find("w8a8") != std::string::npos && t.find("fp8") == std::string::npos) return WeightFormat::kInt8;
  if (t.find("fp8") != std::string::npos) return WeightFormat::kFp8;
  why = "weights '" + text + "' have no gpuplan format (fp32, MXFP4 experts on Hopper)";
  return std::nullopt;
}

std::string ModelYaml(const std::string& hf_id) {
  auto it = kModels.find(LowerCase(hf_id));
  if (it == kModels.end()) return "";
  if (it->second.rfind("config: ", 0) == 0) return "{config: " + kFixtures + it->second.substr(8) + "}";
  return "{" + it->second + "}";
}

// A model with no preset or config.json: its weights and its profile-run activation depend on widths
// the row does not give (hidden, ffn, vocab), so the capacity is not predicted (a shape made up for
// them would be a guess, and the logged weights alone would leave the activation a guess). What the
// row does give, layers x kv_heads x head_dim, fixes the KV bytes per token of standard attention:
// that much is checked, and the skip says so.
std::string ShapeOnly(const CsvRecord& r) {
  const std::string attn = r.Str("attn_type");
  const double layers = Num(r, "layers"), kv_heads = Num(r, "kv_heads"), head_dim = Num(r, "head_dim");
  const std::string dtype = LowerCase(r.Str("kv_cache_dtype"));
  if ((attn != "mha" && attn != "gqa") || std::isnan(layers) || std::isnan(kv_heads) || std::isnan(head_dim) ||
      dtype.find("float32") != std::string::npos)
    return "no preset or config.json for the weights, and no standard-attention shape in the row: not compared";
  Arch a;
  a.layers = static_cast<int64_t>(layers), a.kv_heads = static_cast<int64_t>(kv_heads), a.head_dim = static_cast<int64_t>(head_dim);
  a.heads = a.kv_heads, a.hidden = a.heads * a.head_dim;  // widths KV bytes do not depend on
  const KvDtype kv = dtype == "fp8" ? KvDtype::kFp8 : KvDtype::kAuto;
  const Precision p = dtype.find("bfloat16") == std::string::npos && dtype.find("float16") != std::string::npos ? Precision::kFp16 : Precision::kBf16;
  EXPECT_DOUBLE_EQ(KvBytesPerToken(a, kv, p), Num(r, "kv_bytes_per_token_total")) << r.Str("id") << " KV bytes per token from the row's shape";
  return "capacity not predicted: no preset or config.json for the weights (KV bytes per token checked from the row's "
         "layers x kv_heads x head_dim)";
}

Outcome Evaluate(const CsvRecord& r, const Catalog& catalog, const std::vector<ServingEngineProfile>& engines) {
  Outcome o{r.Str("id"), r.Str("id").substr(0, r.Str("id").find('-')), r.Str("engine_version"), r.Str("completeness")};
  const std::string attn = r.Str("attn_type");
  if (attn == "hybrid_swa_5to1") return o.skipped = "hybrid sliding-window KV manager (gemma-3): not modelled", o;
  std::string model = ModelYaml(r.Str("model"));
  if (model.empty()) return o.skipped = ShapeOnly(r), o;
  std::string why;
  auto w = Weights(r.Str("weight_precision"), why);
  if (!w) return o.skipped = why, o;
  const double gmu = Num(r, "gpu_memory_utilization"), total = Num(r, "gpu_mem_total_GiB_logged") * kGiB;
  const double w_l = Num(r, "logged_weights_GiB"), a_l = Num(r, "logged_activation_peak_GiB"), n_l = Num(r, "logged_non_torch_GiB");
  const double kv_l = Num(r, "logged_kv_mem_GiB");
  if (std::abs(gmu * total / kGiB - w_l - a_l - n_l - kv_l) > 0.05)
    return o.skipped = "inconsistent: gmu x total - logged terms differs from the logged KV GiB", o;
  const int tp = static_cast<int>(Num(r, "tp")), pp = static_cast<int>(Num(r, "pp"));
  Job job = testing_util::MakeJob("model: " + model + "\ncluster: {gpu: " + r.Str("gpu_id") + ", num_gpus: " +
                                  std::to_string(tp * pp) + "}\nparallel: {tp: " + std::to_string(tp) + ", pp: " +
                                  std::to_string(pp) + "}\n");
  job.training.precision = LowerCase(r.Str("kv_cache_dtype")).find("float16") != std::string::npos && LowerCase(r.Str("kv_cache_dtype")).find("bfloat16") == std::string::npos
                               ? Precision::kFp16 : Precision::kBf16;
  ServingSpec& s = job.serving;
  s.engine = LowerCase(r.Str("engine"));
  s.engine_version = r.Str("engine_version").rfind("not stated", 0) == 0 ? "0.11" : r.Str("engine_version");
  s.weights = *w;
  s.kv_dtype = LowerCase(r.Str("kv_cache_dtype")) == "fp8" ? KvDtype::kFp8 : KvDtype::kAuto;
  s.gpu_memory_utilization = gmu;
  s.max_model_len = static_cast<int64_t>(Num(r, "max_model_len"));
  // The logged device memory: the catalog's less the driver's share should match it; use the log's.
  Catalog cat = catalog;
  for (auto& g : cat.gpus)
    if (g.id == r.Str("gpu_id")) g.memory_bytes = total + Calibration::Builtin().Get("serving.driver_reserved_bytes");
  auto e = EstimateServing(job, cat, Calibration::Builtin(), engines);
  if (!e.ok()) return o.skipped = "estimate refused: " + e.status().ToString(), o;
  EXPECT_DOUBLE_EQ(e->kv_bytes_per_token, Num(r, "kv_bytes_per_token_total")) << o.id << " per-token KV bytes (whole model)";
  EXPECT_DOUBLE_EQ(e->kv_bytes_per_token_per_gpu, Num(r, "kv_bytes_per_token_per_gpu")) << o.id << " per-token KV bytes per GPU";
  o.act_err_gib = e->memory.activation_bytes / kGiB - a_l;
  o.weights_err_gib = e->memory.weights_bytes / kGiB - w_l;
  const double tokens = Num(r, "logged_kv_tokens");
  if (!std::isnan(tokens) && tokens > 0) {
    o.tokens = true;
    o.err = static_cast<double>(e->kv_capacity_tokens) / tokens - 1;
  } else {
    o.err = kv_l > 0 ? e->memory.kv_bytes / kGiB / kv_l - 1 : (e->memory.kv_bytes <= 0 ? 0 : 1);
  }
  return o;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void Report(const std::vector<Outcome>& all, const std::string& title, std::string (*key)(const Outcome&)) {
  std::map<std::string, std::vector<double>> by;
  for (const auto& o : all)
    if (o.skipped.empty()) by[key(o)].push_back(std::abs(o.err));
  printf("%s\n", title.c_str());
  for (const auto& [k, v] : by) printf("  %-28s n=%3zu  median |error| %6.2f%%  max %6.2f%%\n", k.c_str(), v.size(), 100 * Median(v), 100 * *std::max_element(v.begin(), v.end()));
}

TEST(KvCapacityValidation, LoggedStartupsWithin3PercentMedian) {
  const std::string path = std::string(GPUPLAN_SHARED_DIR) + "/validation/kv_capacity.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  auto t = ReadCsvFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto catalog = LoadCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  auto engines = LoadServingEngines();
  ASSERT_TRUE(engines.ok()) << engines.status().ToString();
  std::vector<Outcome> all;
  for (const auto& row : t->rows) all.push_back(Evaluate(CsvRecord(*t, row), *catalog, *engines));
  printf("%-9s %-6s %-5s %9s %9s %9s  %s\n", "id", "grade", "on", "error", "act GiB", "wts GiB", "skipped");
  for (const auto& o : all)
    printf("%-9s %-6s %-5s %8.2f%% %+9.2f %+9.2f  %s\n", o.id.c_str(), o.grade.c_str(), o.tokens ? "tok" : "GiB", 100 * o.err,
           o.act_err_gib, o.weights_err_gib, o.skipped.c_str());
  Report(all, "by source (constants fitted on llmd-*: llmdb-* is held out)", [](const Outcome& o) { return o.group; });
  Report(all, "by engine version", [](const Outcome& o) { return o.version; });
  Report(all, "by grade", [](const Outcome& o) { return o.grade; });
  std::vector<double> a;
  size_t skipped = 0;
  for (const auto& o : all) {
    if (!o.skipped.empty()) ++skipped;
    else if (o.grade == "A" && o.tokens) a.push_back(std::abs(o.err));
  }
  printf("grade A rows with logged tokens: %zu, median |error| %.2f%%; skipped %zu of %zu\n", a.size(), 100 * Median(a), skipped, all.size());
  ASSERT_FALSE(a.empty());
  EXPECT_LE(Median(a), 0.03);
}

}  // namespace
}  // namespace gpuplan
