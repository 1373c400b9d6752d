// Hardware catalogs: GPUs, links, instances, storage. Rows come from data/*.csv (compiled in);
// users add or replace rows (same id) with their own files of the same header.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/job.h"
#include "gpuplan/status.h"

namespace gpuplan {

struct GpuSpec {
  std::string id;
  std::vector<std::string> aliases;
  std::string name, vendor, family, form_factor;
  double memory_bytes = 0;
  std::optional<double> mem_bw_bytes_per_s;
  // Dense peak FLOP/s per precision; nullopt = unknown or unsupported (see *_supported).
  std::optional<double> fp32_flops, tf32_flops, bf16_flops, fp16_flops, fp8_flops;
  bool fp8_supported = false, bf16_supported = false;
  std::string intra_link;                       // nvlink4, pcie, ...
  std::optional<double> nvlink_bytes_per_s_per_dir;
  std::optional<double> pcie_gen, pcie_lanes;
  std::string source, date, notes;
  Location where;                               // row it came from
  // Dense peak for a training precision (the tensor-core rate used for matmuls).
  std::optional<double> PeakFlops(Precision p) const;
};

struct LinkSpec {
  std::string id, kind, name;
  double bw_bytes_per_s_per_dir = 0;            // one link / port, one direction; 0 = unknown
  std::optional<double> latency_s;
  std::string source, date, notes;
  Location where;
};

struct InstanceSpec {
  std::string id, provider, instance, gpu_id;
  int64_t gpu_count = 0;                        // 0 = unknown (listed, never planned)
  std::string intra_link;
  std::optional<double> vcpus, ram_bytes, local_nvme_bytes;
  std::optional<double> network_bits_per_s;     // aggregate per node
  std::string network_kind, network_link, rdma, gpudirect_rdma;
  std::optional<double> nics;
  std::optional<double> on_demand_usd_per_hour, spot_usd_per_hour, reserved_usd_per_hour;
  std::string region, price_date, source, notes;
  Location where;
};

struct StorageSpec {
  std::string id, provider, product, tier;
  std::optional<double> read_bytes_per_s, write_bytes_per_s, iops, latency_s;
  std::optional<double> usd_per_gb_month, usd_per_1k_put, usd_per_1k_get;
  std::string throughput_scope, source, date, notes;
  Location where;
};

struct Catalog {
  std::vector<GpuSpec> gpus;
  std::vector<LinkSpec> links;
  std::vector<InstanceSpec> instances;
  std::vector<StorageSpec> storage;

  // Exact id first, then aliases; errors list the close matches.
  Result<GpuSpec> FindGpu(const std::string& name) const;
  Result<LinkSpec> FindLink(const std::string& id) const;
  Result<InstanceSpec> FindInstance(const std::string& id) const;
  Result<StorageSpec> FindStorage(const std::string& id) const;
};

struct CatalogOptions {
  // Extra files whose rows add to or replace (same id) the built-in ones. The kind of each file
  // is recognized by its header. Default: none.
  std::vector<std::string> override_files;
};

// The built-in catalog plus overrides. Every bad row is an error with file:line: column.
Result<Catalog> LoadCatalog(const CatalogOptions& options = {});

}  // namespace gpuplan
