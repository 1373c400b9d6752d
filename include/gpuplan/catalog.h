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
  // GPUs one NVLink fabric joins beyond the node (column nvlink_domain_gpus: 72 for GB200/GB300
  // NVL72); nullopt = the node (docs/model/communication.md §6).
  std::optional<int64_t> nvlink_domain_gpus;
  std::optional<double> pcie_gen, pcie_lanes;
  std::optional<double> tdp_w;  // board power (W) the catalog peaks are rated at
  // GPUs in one box can DMA to each other (column p2p; unknown = true). GeForce cards cannot on
  // the stock driver: their GPU-to-GPU traffic is staged through host memory.
  bool p2p = true;
  std::string source, date, notes;
  Location where;                               // row it came from
  // Dense peak for a training precision (the tensor-core rate used for matmuls).
  std::optional<double> PeakFlops(Precision p) const;
  // Why this GPU cannot train in precision p ("" when it can): the hardware lacks the format
  // (data/gpus.csv says none); for bf16 the message points to fp16 where the GPU has it. Whether
  // the peak is known is PeakFlops' business.
  std::string PrecisionProblem(Precision p) const;
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
  // USD per hour for the whole instance. on_demand_usd_per_hour is computed as
  // on_demand_local_per_hour x fx_usd_per_unit when the row gives a local price and no USD one.
  std::optional<double> on_demand_usd_per_hour, spot_usd_per_hour, reserved_usd_per_hour;
  std::string price_currency = "USD";           // ISO 4217 code of the local price
  std::optional<double> on_demand_local_per_hour;  // in price_currency
  std::optional<double> fx_usd_per_unit;        // USD per 1 unit of price_currency, on fx_date
  std::string fx_date;                          // date of the exchange rate ("" = none)
  std::string region, price_date, source, notes;
  std::string spot_price_date = "undated";      // date of spot_usd_per_hour, separate from price_date
  // Owned or reserved machines of this row (column nodes_available, optional): the planner never
  // uses more nodes than this. nullopt = a cloud type, rented as many as needed.
  std::optional<int64_t> nodes_available;
  Location where;
};

struct StorageSpec {
  std::string id, provider, product, tier;
  std::optional<double> read_bytes_per_s, write_bytes_per_s, iops, latency_s;
  std::optional<double> usd_per_gb_month, usd_per_1k_put, usd_per_1k_get;
  std::string throughput_scope, source, date, notes;
  Location where;
};

// Where one corrected catalog cell comes from (data/cell_sources.csv).
struct CellSource {
  std::string file, row_id, column, value;      // file is e.g. "instances.csv"
  std::string source, date, confidence;         // confidence: high, medium or low
  Location where;
};

// A reserved block of an instance type (AWS EC2 Capacity Blocks for ML): its own price kind,
// billed in whole increments for the nodes booked, no interruptions (data/capacity_blocks.csv).
struct CapacityBlockSpec {
  std::string id;                      // the instance row it reserves
  double usd_per_node_hour = 0;
  double billing_increment_s = 0;      // the block is billed in whole increments
  std::vector<int64_t> node_counts;    // the sizes that can be booked
  std::string region, price_date, source, notes;
  Location where;
};

struct Catalog {
  std::vector<GpuSpec> gpus;
  std::vector<LinkSpec> links;
  std::vector<InstanceSpec> instances;
  std::vector<StorageSpec> storage;
  std::vector<CapacityBlockSpec> capacity_blocks;
  std::vector<CellSource> cell_sources;         // for built-in cells; checked against data/ on load

  // The recorded source of a built-in cell, or nullptr.
  const CellSource* FindCellSource(const std::string& file, const std::string& row_id,
                                   const std::string& column) const;

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
  // A cell-source file used instead of the built-in data/cell_sources.csv (tests). Every row must
  // name a built-in file, row and column whose cell holds the row's value (a notes cell: contains
  // it). Default: "" = the built-in file.
  std::string cell_sources_file;
};

// The built-in catalog plus overrides. Every bad row is an error with file:line: column.
Result<Catalog> LoadCatalog(const CatalogOptions& options = {});

// Days from a catalog price date ("YYYY-MM-DD", or "YYYY-MM" read as the month's first day) to
// `today_iso` ("YYYY-MM-DD"); nullopt when either is not such a date ("undated", "unknown").
std::optional<int64_t> PriceAgeDays(const std::string& price_date, const std::string& today_iso);
// Today's date in UTC, "YYYY-MM-DD", from the system clock.
std::string TodayUtcIso();

}  // namespace gpuplan
