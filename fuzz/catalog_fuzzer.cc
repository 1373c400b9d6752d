// Catalog CSV overrides: ParseCsv and CsvRecord numbers on the text, then LoadCatalog with the
// input as an override file (its kind is recognized by its header). Accepted rows must hold finite
// numbers, and the models must stay finite on the GPUs, links and storage the file adds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "gpuplan/csv.h"

namespace {
using namespace gpuplan;

void CheckCells(const std::string& text) {
  auto t = ParseCsv(text, "fuzz.csv");
  fuzz::CheckStatus(t.status(), "ParseCsv");
  if (!t.ok()) return;
  for (const auto& row : t->rows) {
    if (row.fields.size() != t->header.size()) fuzz::Die("ParseCsv accepted a row with a wrong field count");
    CsvRecord r(*t, row);
    for (const auto& col : t->header) {
      auto v = r.OptNumber(col);
      fuzz::CheckStatus(v.status(), "CsvRecord::OptNumber");
      if (v.ok()) fuzz::Finite(*v, "CSV cell " + col);
      auto b = r.YesNo(col);
      fuzz::CheckStatus(b.status(), "CsvRecord::YesNo");
    }
  }
}

void CheckRows(const Catalog& c, const std::string& path) {
  for (const auto& g : c.gpus) {
    if (g.where.file != path) continue;
    fuzz::Finite(g.memory_bytes, "gpu memory_bytes");
    for (auto [v, n] : {std::pair{&g.mem_bw_bytes_per_s, "mem_bw"}, {&g.fp32_flops, "fp32"}, {&g.tf32_flops, "tf32"},
                        {&g.bf16_flops, "bf16"}, {&g.fp16_flops, "fp16"}, {&g.fp8_flops, "fp8"},
                        {&g.nvlink_bytes_per_s_per_dir, "nvlink"}, {&g.pcie_gen, "pcie_gen"}, {&g.pcie_lanes, "pcie_lanes"}})
      fuzz::Finite(*v, std::string("gpu ") + n);
  }
  for (const auto& l : c.links) {
    if (l.where.file != path) continue;
    fuzz::Finite(l.bw_bytes_per_s_per_dir, "link bw");
    fuzz::Finite(l.latency_s, "link latency");
  }
  for (const auto& i : c.instances) {
    if (i.where.file != path) continue;
    for (auto [v, n] : {std::pair{&i.vcpus, "vcpus"}, {&i.ram_bytes, "ram"}, {&i.local_nvme_bytes, "nvme"},
                        {&i.network_bits_per_s, "network"}, {&i.nics, "nics"}, {&i.on_demand_usd_per_hour, "on_demand"},
                        {&i.spot_usd_per_hour, "spot"}, {&i.reserved_usd_per_hour, "reserved"},
                        {&i.on_demand_local_per_hour, "local price"}, {&i.fx_usd_per_unit, "fx"}})
      fuzz::Finite(*v, std::string("instance ") + n);
  }
  for (const auto& s : c.storage) {
    if (s.where.file != path) continue;
    for (auto [v, n] : {std::pair{&s.read_bytes_per_s, "read"}, {&s.write_bytes_per_s, "write"}, {&s.iops, "iops"},
                        {&s.latency_s, "latency"}, {&s.usd_per_gb_month, "usd_per_gb_month"},
                        {&s.usd_per_1k_put, "put"}, {&s.usd_per_1k_get, "get"}})
      fuzz::Finite(*v, std::string("storage ") + n);
  }
  for (const auto& b : c.capacity_blocks) {
    if (b.where.file != path) continue;
    fuzz::Finite(b.usd_per_node_hour, "capacity block price");
    fuzz::Finite(b.billing_increment_s, "capacity block increment");
  }
}

// A small reference job on what the file added (at most a few of each kind, to stay fast).
void ExerciseModels(const Catalog& c, const std::string& path) {
  Job base;
  base.arch = *FindPreset("gpt2");
  base.training.tokens = 1e9;
  int n = 0;
  for (const auto& g : c.gpus) {
    if (g.where.file != path || ++n > 3) continue;
    for (const char* precision : {"bf16", "fp32"}) {
      Job j = base;
      j.cluster.gpu = g.id;
      j.cluster.num_gpus = 2;
      if (!SetJobKey(j, "training.precision", precision, {}).ok()) continue;
      fuzz::ExerciseJob(j, c, Calibration::Builtin());
    }
  }
  n = 0;
  for (const auto& l : c.links) {
    if (l.where.file != path || ++n > 3) continue;
    Job j = base;
    j.cluster.num_gpus = 16;
    j.cluster.network = l.id;
    fuzz::ExerciseJob(j, c, Calibration::Builtin());
    j.cluster.network = "";
    j.cluster.intra_node = l.id;
    fuzz::ExerciseJob(j, c, Calibration::Builtin());
  }
  n = 0;
  for (const auto& s : c.storage) {
    if (s.where.file != path || ++n > 3) continue;
    Job j = base;
    j.cluster.storage = s.id;
    fuzz::ExerciseJob(j, c, Calibration::Builtin());
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file("-catalog.csv");
  return fuzz::Guard([&] {
    const std::string text(reinterpret_cast<const char*>(data), size);
    CheckCells(text);
    CatalogOptions options;
    options.override_files = {file.Write(data, size)};
    auto c = LoadCatalog(options);
    fuzz::CheckStatus(c.status(), "LoadCatalog");
    if (!c.ok()) return;
    CheckRows(*c, options.override_files[0]);
    ExerciseModels(*c, options.override_files[0]);
  });
}
