#include "gpuplan/calibration.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

// What a calibration value may be. A key ending in '.' names a family: "link_eff." covers
// link_eff.<anything>. Rates and divisors have a floor above 0 and every range is bounded, so no
// calibration value can make an estimate inf or nan.
struct KeyRule {
  std::string_view key;
  NumberRange range;
  bool integral = false;  // Default: false (any finite value in range).
};

constexpr KeyRule kRules[] = {
    // data/calibration.csv
    {"cuda_context_bytes", {0, 1e12}},
    {"nccl_buffers_bytes", {0, 1e12}},
    {"allocator_fragmentation", {0, 1}},
    {"zero_bucket_elements", {1, 1e13}},
    {"zero3_prefetch_layers", {0, 1e6}, true},
    {"gpu_failure_rate_per_gpu_day", {0, 1e3}},
    {"host_vcpus_per_gpu_min", {0, 1e4}},
    {"host_ram_per_gpu_memory_min", {0, 1e3}},
    {"checkpoints_kept", {0, 1e4}, true},
    {"object_store_part_bytes", {1, 1e13}},
    {"restart_overhead_s", {0, 1e7}},
    {"memory_model_error_margin", {0, 0.95}},
    {"memory_headroom_max", {0, 0.95}},  // the usable memory is (1 - margin) x the GPU's
    {"memory_headroom_min_rows", {1, 1e6}, true},
    {"price_max_age_days", {1, 1e5}},
    {"startup_provision_s", {0, 1e7}},
    {"startup_provision_s.", {0, 1e7}},
    {"startup_image_bytes", {0, 1e15}},
    {"startup_image_pull_bytes_per_s", {1, 1e15}},
    {"startup_download_bytes_per_s_per_node", {1, 1e15}},
    {"local_nvme_write_bytes_per_s_per_node", {1, 1e15}},
    {"object_store_write_bytes_per_s_per_node_assumed", {1, 1e15}},
    {"instance_disk_write_bytes_per_s_assumed", {1, 1e15}},
    {"checkpoint_async_min_stall_share", {0, 1}},
    {"checkpoint_interval_floor_s", {0, 1e7}},
    {"parallel_fs_capacity_step_bytes", {1, 1e18}},
    {"parallel_fs_capacity_doublings", {0, 40}, true},
    {"spot_interruptions_per_node_hour.", {0, 1e3}},
    {"spot_price_ratio_min_plausible", {0, 1}},
    {"spot_price_ratio_default", {1e-6, 1}},
    {"spot_reclaim_notice_s.", {0, 1e5}},
    {"spot_capacity_scarce.", {0, 1}, true},
    {"cpu_adam_params_per_s_per_vcpu", {1, 1e15}},
    // data/efficiency.csv
    {"matmul_eff_max.", {1e-3, 1}},
    {"matmul_dim_half", {0, 1e9}},
    {"matmul_fixed_s", {0, 1e3}},
    {"flash_attention_eff.", {1e-3, 1}},
    {"eager_attention_eff.", {1e-3, 1}},
    {"hbm_eff", {1e-3, 1}},
    {"elementwise_bytes_per_token_layer_h", {0, 1e6}},
    {"elementwise_bytes_per_token_layer_f", {0, 1e6}},
    {"framework_overhead", {1e-3, 100}},  // a multiplier on the step (1.3): a factor, not a fraction
    {"step_fixed_s", {0, 1e5}},
    {"link_eff.", {1e-3, 2}},  // NVLS all-reduce beats the ring bound: 1.06 of the nominal NVLink
    {"tcp_host_copy_penalty", {1e-3, 100}},
    {"hierarchical_inter_factor", {1e-3, 100}},
    {"collective_latency_s", {0, 1e3}},
    {"tp_comm_overlap", {0, 1}},
    {"dp_comm_overlap", {0, 1}},
    {"cp_comm_overlap", {0, 1}},
    {"pp_comm_overlap", {0, 1}},
    {"comm_share_max", {0.01, 1}},  // N§8 exposed communication share that limits a job
    {"optimizer_bytes_per_param", {0, 1e4}},
    // issue 9, throughput keys (data/efficiency.csv)
    {"power_clock_exponent", {0, 2}},
    {"dequant_eff.", {1e-3, 1}},  // docs/model/finetune.md FT§3: fraction of memory bandwidth a dequant kernel reaches
    {"elementwise.", {0, 1e3}},             // elements read + written per element of an op (F§1)
    {"kernels.", {0, 1e4}},                 // kernels an op launches (F§2)
    {"kernel_gap_s", {0, 1}},
    {"kernel_gap_s.", {0, 1}},
    {"cpu_op_s", {0, 1}},
    {"loss_bytes_per_logit.", {0, 1e4}},
    {"flash3_attention_eff.", {1e-3, 1}},
    {"nccl_overlap_slowdown", {0, 10}},
    {"sustained_clock_factor.", {1e-3, 1}},
    {"layer_time_scale.", {1e-2, 1e2}},
    {"mamf_measured.", {0, 1}, true},
    {"attention_measured.", {0, 1}, true},
    {"hbm_measured.", {0, 1}, true},
    {"fp8_cast_bytes.", {0, 1e3}},
    {"matmul_dim_half.", {0, 1e9}},
    {"matmul_fixed_s.", {0, 1e3}},
    {"gemm_measured.", {0, 1}, true},
    // issue 9, memory keys (data/calibration.csv)
    {"loss_chunks", {1, 1e6}},
    {"allocator_state_fragmentation", {0, 1}},
    // data/frameworks.csv: framework.<name>.<mechanism> (docs/model/frameworks.md); factors,
    // fractions and seconds alike stay within this bound.
    {"framework.", {0, 1e4}},
    // data/calibration.csv serving.* (docs/model/serving.md): bytes, seconds and bytes per parameter.
    {"serving.", {0, 1e12}},
};

// The rule of a key: an exact entry, else its family (with a non-empty member name), else nullptr.
const KeyRule* FindRule(const std::string& key) {
  for (const auto& r : kRules)
    if (r.key.back() != '.' && key == r.key) return &r;
  for (const auto& r : kRules)
    if (r.key.back() == '.' && key.size() > r.key.size() && key.compare(0, r.key.size(), r.key) == 0) return &r;
  return nullptr;
}

// "unknown calibration key 'x' (did you mean 'y'?)": the nearest built-in key or family.
std::string UnknownKey(const std::string& key, const std::map<std::string, double>& builtin) {
  std::string best;
  size_t best_d = std::string::npos;
  auto consider = [&](const std::string& k) {
    const size_t d = EditDistance(key, k);
    if (d < best_d) best_d = d, best = k;
  };
  for (const auto& [k, v] : builtin) consider(k);
  for (const auto& r : kRules)
    if (r.key.back() == '.') {
      const size_t dot = key.find('.');
      consider(std::string(r.key) + (dot == std::string::npos ? std::string("default") : key.substr(dot + 1)));
    }
  std::string why = "unknown calibration key '" + key + "'";
  if (!best.empty() && best_d <= std::max<size_t>(3, key.size() / 3)) why += " (did you mean '" + best + "'?)";
  return why + "; gpuplan reads only the keys of data/calibration.csv, data/efficiency.csv and data/frameworks.csv";
}

std::string WithoutDigits(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c < '0' || c > '9') out += c;
  return out;
}

// A new member of a family (link_eff.<a link kind>) is allowed, but one a letter or two away from a
// built-in member is a typo ("link_eff.infinibnd"): "" when `key` is fine, else the built-in key
// meant. Names that differ only in digits (nvlink3 / nvlink4, cdna3 / cdna4) are different members.
std::string TypoOfMember(const std::string& key, const KeyRule& family, const std::map<std::string, double>& builtin) {
  if (builtin.count(key)) return "";
  for (const auto& [k, v] : builtin) {
    if (k.compare(0, family.key.size(), family.key) != 0) continue;
    if (EditDistance(key, k) <= 2 && WithoutDigits(key) != WithoutDigits(k)) return k;
  }
  return "";
}

// One file into `out`. A user file may only set known keys (a built-in key or a member of a
// family); each key once per file; every value finite, in its range, and in [0, 1] where the
// row's unit says fraction.
Status LoadInto(const CsvTable& t, std::map<std::string, double>& out, const std::map<std::string, double>* builtin) {
  if (t.Column("key") < 0 || t.Column("value") < 0)
    return Status::BadInput({t.file, 1, ""}, "a calibration file has columns key,value,...");
  std::map<std::string, int> line_of;
  for (const auto& row : t.rows) {
    CsvRecord r(t, row);
    const std::string key = r.Str("key");
    const Location at = r.Where("key");
    if (key.empty()) return Status::BadInput(at, "must not be empty");
    auto [seen, fresh] = line_of.emplace(key, row.line);
    if (!fresh)
      return Status::BadInput(at, "duplicate key '" + key + "': line " + std::to_string(seen->second) +
                                      " of this file sets it too (one row per key)");
    const KeyRule* rule = FindRule(key);
    if (!rule && builtin) return Status::BadInput(at, UnknownKey(key, *builtin));
    if (rule && builtin && rule->key.back() == '.')
      if (const std::string meant = TypoOfMember(key, *rule, *builtin); !meant.empty())
        return Status::BadInput(at, "unknown calibration key '" + key + "' (did you mean '" + meant +
                                        "'? a new member of " + std::string(rule->key) + "* must not be a near-copy of one)");
    if (!rule) return Status::BadInput(at, "no range rule for built-in key '" + key + "' (add one to kRules)");
    const Location where = {t.file, row.line, key};
    auto v = ParseDecimal(r.Str("value"), where);
    if (!v.ok()) return v.status();
    NumberRange range = rule->range;
    if (r.Str("unit") == "fraction") range.max = std::min(range.max, 1.0), range.min = std::max(range.min, 0.0);
    GPUPLAN_RETURN_IF_ERROR(CheckRange(*v, where, range));
    if (rule->integral && *v != static_cast<double>(static_cast<int64_t>(*v)))
      return Status::BadInput(where, "must be a whole number, got " + r.Str("value"));
    out[key] = *v;
  }
  return Status::Ok();
}
}  // namespace

std::optional<NumberRange> CalibrationKeyRange(const std::string& key) {
  const KeyRule* r = FindRule(key);
  if (!r) return std::nullopt;
  return r->range;
}

Result<Calibration> Calibration::Load(const std::string& override_file) {
  Calibration c;
  for (const char* name : {"calibration.csv", "efficiency.csv", "frameworks.csv"}) {
    std::string_view text = EmbeddedData(name);
    if (text.empty()) continue;
    auto t = ParseCsv(std::string(text), std::string("data/") + name);
    if (!t.ok()) return t.status();
    std::map<std::string, double> values;
    GPUPLAN_RETURN_IF_ERROR(LoadInto(*t, values, nullptr));
    for (auto& [k, v] : values)
      if (!c.values_.emplace(k, v).second)
        return Status::BadInput({t->file, 0, k}, "key is also in another built-in calibration file");
  }
  if (!override_file.empty()) {
    auto t = ReadCsvFile(override_file);
    if (!t.ok()) return t.status();
    const std::map<std::string, double> builtin = c.values_;
    GPUPLAN_RETURN_IF_ERROR(LoadInto(*t, c.values_, &builtin));
  }
  return c;
}

const Calibration& Calibration::Builtin() {
  static const Calibration c = [] {
    auto r = Load();
    if (!r.ok()) {
      std::fprintf(stderr, "internal: %s\n", r.status().ToString().c_str());
      std::abort();
    }
    return *r;
  }();
  return c;
}

double Calibration::Get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    std::fprintf(stderr, "internal: calibration key '%s' missing from data\n", key.c_str());
    std::abort();
  }
  return it->second;
}

}  // namespace gpuplan
