// Catalog loading from data/*.csv (compiled in) and user override files.
#include "gpuplan/catalog.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;
constexpr double kTB = 1e12;
constexpr double kTera = 1e12;
constexpr double kMB = 1e6;

// Ranges per column, in the file's units. Every value is finite and bounded on both sides, so no
// product or quotient of catalog values can overflow to inf or reach 0 x inf = nan downstream: a
// rate has a floor above 0 (a 0 TFLOP/s GPU or a 0 GB/s link is an error, not an infinite time),
// and a price may be 0 (own hardware) because every time it multiplies is finite.
constexpr NumberRange kMemoryGib{1e-3, 1e6};     // 1 MiB .. 1 PiB per GPU / per host
constexpr NumberRange kTflops{1e-6, 1e6};        // dense peak, TFLOP/s
constexpr NumberRange kGbPerS{1e-6, 1e7};        // memory, NVLink and link bandwidths, GB/s
constexpr NumberRange kMbPerS{1e-6, 1e10};       // storage throughput, MB/s
constexpr NumberRange kGbps{1e-6, 1e8};          // instance network, Gb/s
constexpr NumberRange kLatency{0, 1e9};          // us or ms
constexpr NumberRange kUsd{0, 1e6};              // USD per hour / per GB-month / per 1k requests
constexpr NumberRange kLocalPrice{0, 1e9};       // local currency per hour (yen, won, ...)
constexpr NumberRange kFx{1e-9, 1e6};            // USD per unit of the local currency
constexpr NumberRange kIops{1e-3, 1e12};
constexpr NumberRange kTb{0, 1e6};               // local NVMe, TB (0 = none)

bool OneOf(const std::string& v, std::initializer_list<const char*> options) {
  return std::any_of(options.begin(), options.end(), [&](const char* o) { return v == o; });
}

// Reads an optional number column in `range` and scales it; a bad cell is an error with its location.
#define OPT(out, rec, col, scale, range)                           \
  do {                                                             \
    auto _v = (rec).OptNumber(col, range);                         \
    if (!_v.ok()) return _v.status();                              \
    if (_v->has_value()) (out) = **_v * (scale);                   \
  } while (0)

// Reads an optional whole-number column in [min, max].
#define OPT_INT(out, rec, col, min, max)                           \
  do {                                                             \
    auto _v = (rec).OptInteger(col, min, max);                     \
    if (!_v.ok()) return _v.status();                              \
    if (_v->has_value()) (out) = static_cast<double>(**_v);        \
  } while (0)

Result<GpuSpec> ReadGpu(const CsvRecord& r) {
  GpuSpec g;
  g.id = r.Str("id");
  if (g.id.empty()) return Status::BadInput(r.Where("id"), "must not be empty");
  std::string aliases = r.Str("aliases");
  size_t start = 0;
  while (start < aliases.size()) {
    size_t end = aliases.find(';', start);
    if (end == std::string::npos) end = aliases.size();
    std::string a = Lower(aliases.substr(start, end - start));
    if (!a.empty()) g.aliases.push_back(a);
    start = end + 1;
  }
  g.name = r.Str("name");
  g.vendor = r.Str("vendor");
  g.family = r.Str("family");
  g.form_factor = r.Str("form_factor");
  std::optional<double> mem;
  OPT(mem, r, "memory_gib", kGiB, kMemoryGib);
  g.memory_bytes = mem.value_or(0);
  OPT(g.mem_bw_bytes_per_s, r, "mem_bw_gb_per_s", kGB, kGbPerS);
  OPT(g.fp32_flops, r, "fp32_tflops", kTera, kTflops);
  OPT(g.tf32_flops, r, "tf32_tflops", kTera, kTflops);
  OPT(g.bf16_flops, r, "bf16_tflops", kTera, kTflops);
  OPT(g.fp16_flops, r, "fp16_tflops", kTera, kTflops);
  OPT(g.fp8_flops, r, "fp8_tflops", kTera, kTflops);
  g.fp8_supported = r.Str("fp8_tflops") != "none";
  g.bf16_supported = r.Str("bf16_tflops") != "none";
  g.intra_link = r.Str("intra_link");
  OPT(g.nvlink_bytes_per_s_per_dir, r, "nvlink_bw_gb_per_s_per_dir", kGB, kGbPerS);
  auto domain = r.OptInteger("nvlink_domain_gpus", 1, 100000);  // optional column; blank = the node
  if (!domain.ok()) return domain.status();
  g.nvlink_domain_gpus = *domain;
  OPT_INT(g.pcie_gen, r, "pcie_gen", 1, 6);  // the link pcie<gen>-x16 must exist too (CheckReferences)
  OPT_INT(g.pcie_lanes, r, "pcie_lanes", 1, 32);
  OPT(g.tdp_w, r, "tdp_w", 1.0, (NumberRange{1, 1e5}));  // the column is optional in override files
  const std::string p2p = r.Str("p2p");  // the column is optional: older override files lack it
  if (p2p == "no") g.p2p = false;
  else if (p2p != "yes" && p2p != "unknown" && !p2p.empty())
    return Status::BadInput(r.Where("p2p"), "expected yes, no or unknown, got '" + p2p + "'");
  g.source = r.Str("source");
  g.date = r.Str("date");
  g.notes = r.Str("notes");
  g.where = r.Where("");
  return g;
}

Result<LinkSpec> ReadLink(const CsvRecord& r) {
  LinkSpec l;
  l.id = r.Str("id");
  l.kind = r.Str("kind");
  l.name = r.Str("name");
  std::optional<double> bw;
  OPT(bw, r, "bw_gb_per_s_per_dir", kGB, kGbPerS);
  l.bw_bytes_per_s_per_dir = bw.value_or(0);  // 0 = unknown; users of the link check
  OPT(l.latency_s, r, "latency_us", 1e-6, kLatency);
  l.source = r.Str("source");
  l.date = r.Str("date");
  l.notes = r.Str("notes");
  l.where = r.Where("");
  return l;
}

// Local-currency price columns (all optional): price_currency (default USD),
// on_demand_local_per_hour, fx_usd_per_unit, fx_date. A local price with no USD price becomes
// on_demand_usd_per_hour = local x fx.
Status ReadLocalPrice(const CsvRecord& r, InstanceSpec& i) {
  const std::string currency = r.Str("price_currency");
  if (!currency.empty() && currency != "unknown") {
    if (currency.size() != 3 || !std::all_of(currency.begin(), currency.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; }))
      return Status::BadInput(r.Where("price_currency"), "expected an ISO 4217 code like USD, EUR or JPY, got '" + currency + "'");
    i.price_currency = currency;
  }
  OPT(i.on_demand_local_per_hour, r, "on_demand_local_per_hour", 1.0, kLocalPrice);
  OPT(i.fx_usd_per_unit, r, "fx_usd_per_unit", 1.0, kFx);
  const std::string fx_date = r.Str("fx_date");
  if (fx_date != "unknown") i.fx_date = fx_date;
  if (i.price_currency == "USD" && !i.fx_usd_per_unit) i.fx_usd_per_unit = 1.0;
  if (i.on_demand_local_per_hour && !i.on_demand_usd_per_hour) {
    if (!i.fx_usd_per_unit)
      return Status::BadInput(r.Where("fx_usd_per_unit"), "a rate is required to convert on_demand_local_per_hour from " +
                                                              i.price_currency + " to USD");
    if (i.price_currency != "USD" && i.fx_date.empty())
      return Status::BadInput(r.Where("fx_date"), "the exchange rate needs its date");
    const double usd = *i.on_demand_local_per_hour * *i.fx_usd_per_unit;
    GPUPLAN_RETURN_IF_ERROR(CheckRange(usd, r.Where("on_demand_local_per_hour"), kUsd));  // as USD per hour
    i.on_demand_usd_per_hour = usd;
  }
  return Status::Ok();
}

Result<InstanceSpec> ReadInstance(const CsvRecord& r) {
  InstanceSpec i;
  i.id = r.Str("id");
  i.provider = r.Str("provider");
  i.instance = r.Str("instance");
  i.gpu_id = r.Str("gpu_id");
  auto count = r.OptInteger("gpu_count", 1, 100000);
  if (!count.ok()) return count.status();
  i.gpu_count = count->value_or(0);  // 0 = unknown: listed, never planned
  i.intra_link = r.Str("intra_link");
  OPT_INT(i.vcpus, r, "vcpus", 1, 100000);
  OPT(i.ram_bytes, r, "ram_gib", kGiB, kMemoryGib);
  OPT(i.local_nvme_bytes, r, "local_nvme_tb", kTB, kTb);
  OPT(i.network_bits_per_s, r, "network_gbps", 1e9, kGbps);
  i.network_kind = r.Str("network_kind");
  i.network_link = r.Str("network_link");
  i.rdma = r.Str("rdma");
  i.gpudirect_rdma = r.Str("gpudirect_rdma");
  for (const char* col : {"rdma", "gpudirect_rdma"}) {
    const std::string v = r.Str(col);
    if (!v.empty() && v != "yes" && v != "no" && v != "unknown")
      return Status::BadInput(r.Where(col), "expected yes, no or unknown, got '" + v + "'");
  }
  OPT_INT(i.nics, r, "nics", 1, 1024);
  OPT(i.on_demand_usd_per_hour, r, "on_demand_usd_per_hour", 1.0, kUsd);
  OPT(i.spot_usd_per_hour, r, "spot_usd_per_hour", 1.0, kUsd);
  OPT(i.reserved_usd_per_hour, r, "reserved_usd_per_hour", 1.0, kUsd);
  GPUPLAN_RETURN_IF_ERROR(ReadLocalPrice(r, i));
  i.region = r.Str("region");
  i.price_date = r.Str("price_date");
  const std::string spot_date = r.Str("spot_price_date");
  if (!spot_date.empty() && spot_date != "unknown") i.spot_price_date = spot_date;
  auto nodes = r.OptInteger("nodes_available", 1, 1'000'000);
  if (!nodes.ok()) return nodes.status();
  i.nodes_available = *nodes;
  i.source = r.Str("source");
  i.notes = r.Str("notes");
  i.where = r.Where("");
  return i;
}

Result<StorageSpec> ReadStorage(const CsvRecord& r) {
  StorageSpec s;
  s.id = r.Str("id");
  s.provider = r.Str("provider");
  s.product = r.Str("product");
  s.tier = r.Str("tier");
  OPT(s.read_bytes_per_s, r, "read_mb_per_s", kMB, kMbPerS);
  OPT(s.write_bytes_per_s, r, "write_mb_per_s", kMB, kMbPerS);
  OPT(s.iops, r, "iops", 1.0, kIops);
  OPT(s.latency_s, r, "latency_ms", 1e-3, kLatency);
  OPT(s.usd_per_gb_month, r, "usd_per_gb_month", 1.0, kUsd);
  OPT(s.usd_per_1k_put, r, "usd_per_1k_put", 1.0, kUsd);
  OPT(s.usd_per_1k_get, r, "usd_per_1k_get", 1.0, kUsd);
  s.throughput_scope = r.Str("throughput_scope");
  // The planner reads these words (object stores for datasets, local NVMe per node, ...): a typo
  // would silently drop the row from every choice.
  if (!OneOf(s.tier, {"block", "local-nvme", "object", "parallel-fs"}))
    return Status::BadInput(r.Where("tier"), "expected block, local-nvme, object or parallel-fs, got '" + s.tier + "'");
  if (!s.throughput_scope.empty() &&
      !OneOf(s.throughput_scope, {"per-filesystem", "per-TiB", "per-node", "per-volume", "per-bucket", "per-prefix", "unknown"}))
    return Status::BadInput(r.Where("throughput_scope"), "expected per-node, per-volume, per-filesystem, per-TiB, per-bucket, "
                                                         "per-prefix or unknown, got '" + s.throughput_scope + "'");
  s.source = r.Str("source");
  s.date = r.Str("date");
  s.notes = r.Str("notes");
  s.where = r.Where("");
  return s;
}

Result<CapacityBlockSpec> ReadCapacityBlock(const CsvRecord& r) {
  CapacityBlockSpec b;
  b.id = Lower(r.Str("id"));
  auto price = r.Number("usd_per_node_hour", {0, 1e6, /*min_exclusive=*/true});
  if (!price.ok()) return price.status();
  b.usd_per_node_hour = *price;
  auto inc = r.Number("billing_increment_hours", {0, 24 * 366, /*min_exclusive=*/true});
  if (!inc.ok()) return inc.status();
  b.billing_increment_s = *inc * 3600;
  for (const auto& part : SplitList(r.Str("node_counts"), ';')) {
    auto n = ParseInteger(part, r.Where("node_counts"), 1, 100000);
    if (!n.ok())
      return Status::BadInput(r.Where("node_counts"), "expected node counts like 1;2;4;8: " + n.status().reason());
    b.node_counts.push_back(*n);
  }
  if (b.node_counts.empty()) return Status::BadInput(r.Where("node_counts"), "must list the node counts that can be booked");
  b.region = r.Str("region");
  b.price_date = r.Str("price_date");
  b.source = r.Str("source");
  b.notes = r.Str("notes");
  b.where = r.Where("");
  return b;
}

// Adds the rows of one file to `out`: a row whose id is already there (from an earlier file: the
// built-in catalog) replaces it, which is what --catalog overrides are for; the same id twice in
// one file is an error naming both lines. Linear in rows: ids are found through an index.
template <typename T, typename F>
Status LoadRows(const CsvTable& t, std::vector<T>& out, F read) {
  std::unordered_map<std::string, size_t> index;  // id -> position in out
  index.reserve(out.size() + t.rows.size());
  for (size_t i = 0; i < out.size(); ++i) index.emplace(out[i].id, i);
  std::unordered_map<std::string, int> line_of;  // lower-cased id -> line in this file
  line_of.reserve(t.rows.size());
  for (const auto& row : t.rows) {
    CsvRecord rec(t, row);
    const std::string id = rec.Str("id");
    if (id.empty()) return Status::BadInput(rec.Where("id"), "must not be empty");
    auto [seen, fresh] = line_of.emplace(Lower(id), row.line);
    if (!fresh)
      return Status::BadInput(rec.Where("id"), "duplicate id '" + id + "': line " + std::to_string(seen->second) +
                                                   " of this file has it too (one row per id)");
    auto v = read(rec);
    if (!v.ok()) return v.status();
    auto [it, added] = index.emplace(v->id, out.size());
    if (added) out.push_back(std::move(v).value());
    else out[it->second] = std::move(v).value();
  }
  return Status::Ok();
}

Location At(const Location& row, const std::string& key) { return {row.file, row.line, key}; }

// Cross-file references, checked once every file is in: an instance names a GPU and links that
// exist, a GPU's PCIe generation has its pcie<gen>-x16 link (the host link of every estimate).
Status CheckReferences(const Catalog& c) {
  for (const auto& g : c.gpus) {
    // intra_link is a link id (nvlink4), a link kind (pcie, xgmi), or Gaudi's on-chip RoCE ports.
    if (!g.intra_link.empty() && g.intra_link != "unknown" && g.intra_link != "gaudi-roce" && !c.FindLink(g.intra_link).ok() &&
        std::none_of(c.links.begin(), c.links.end(), [&](const LinkSpec& l) { return l.kind == g.intra_link; }))
      return Status::BadInput(At(g.where, "intra_link"), "unknown link '" + g.intra_link +
                                                             "': expected a link id or kind of links.csv (nvlink4, pcie, xgmi, ...) or unknown");
    const int gen = static_cast<int>(g.pcie_gen.value_or(4));
    const std::string host = "pcie" + std::to_string(gen) + "-x16";
    auto link = c.FindLink(host);
    if (!link.ok() || link->bw_bytes_per_s_per_dir <= 0) {
      std::string known;
      for (const auto& l : c.links)
        if (l.kind == "pcie" && l.id.size() > 4 && l.id.compare(l.id.size() - 4, 4, "-x16") == 0 && l.bw_bytes_per_s_per_dir > 0)
          known += (known.empty() ? "" : ", ") + l.id.substr(4, l.id.size() - 8);
      return Status::BadInput(At(g.where, "pcie_gen"), "PCIe generation " + std::to_string(gen) + " is not in the catalog (link " +
                                                           host + (link.ok() ? " has no known bandwidth" : " missing") +
                                                           "; known generations: " + known + ")");
    }
  }
  for (const auto& i : c.instances) {
    if (i.gpu_id.empty()) return Status::BadInput(At(i.where, "gpu_id"), "must name a GPU of gpus.csv");
    if (auto g = c.FindGpu(i.gpu_id); !g.ok()) return Status::BadInput(At(i.where, "gpu_id"), g.status().reason());
    if (!i.network_kind.empty() && i.network_kind != "unknown" &&
        std::none_of(c.links.begin(), c.links.end(), [&](const LinkSpec& l) { return l.kind == i.network_kind; }))
      return Status::BadInput(At(i.where, "network_kind"), "expected a link kind of links.csv (infiniband, roce, efa, tcp, ...) "
                                                           "or unknown, got '" + i.network_kind + "'");
    for (const char* col : {"intra_link", "network_link"}) {
      const std::string& id = std::string(col) == "intra_link" ? i.intra_link : i.network_link;
      if (id.empty() || id == "unknown") continue;
      if (auto l = c.FindLink(id); !l.ok()) return Status::BadInput(At(i.where, col), l.status().reason());
    }
  }
  for (const auto& b : c.capacity_blocks)
    if (auto i = c.FindInstance(b.id); !i.ok()) return Status::BadInput(At(b.where, "id"), i.status().reason());
  return Status::Ok();
}

Status LoadTable(const CsvTable& t, Catalog& c) {
  if (t.Column("gpu_count") >= 0) return LoadRows(t, c.instances, ReadInstance);
  if (t.Column("memory_gib") >= 0) return LoadRows(t, c.gpus, ReadGpu);
  if (t.Column("bw_gb_per_s_per_dir") >= 0) return LoadRows(t, c.links, ReadLink);
  if (t.Column("tier") >= 0) return LoadRows(t, c.storage, ReadStorage);
  if (t.Column("billing_increment_hours") >= 0) return LoadRows(t, c.capacity_blocks, ReadCapacityBlock);
  return Status::BadInput({t.file, 1, ""},
                          "not a catalog file: the header matches none of gpus, links, instances, storage, capacity_blocks");
}

template <typename T>
Result<T> FindById(const std::vector<T>& rows, const std::string& id, const char* what) {
  const std::string want = Lower(id);
  for (const auto& r : rows)
    if (r.id == want) return r;
  std::string close;
  for (const auto& r : rows)
    if (r.id.find(want) != std::string::npos || want.find(r.id) != std::string::npos)
      close += (close.empty() ? "" : ", ") + r.id;
  return Status::BadInput({}, std::string("unknown ") + what + " '" + id + "'" +
                                  (close.empty() ? " (gpuplan catalog lists them)" : " (did you mean: " + close + "?)"));
}

// The built-in catalog files, parsed; cell sources are checked against these raw cells.
using RawTables = std::vector<std::pair<std::string, CsvTable>>;

// One cell of a built-in file as written there, or nullptr when the row or column is absent.
const std::string* RawCell(const RawTables& tables, const std::string& file, const std::string& row_id,
                           const std::string& column) {
  for (const auto& [name, t] : tables) {
    if (name != file) continue;
    const int id_col = t.Column("id"), col = t.Column(column);
    if (id_col < 0 || col < 0) return nullptr;
    for (const auto& row : t.rows)
      if (row.fields[id_col] == row_id) return &row.fields[col];
  }
  return nullptr;
}

// data/cell_sources.csv: every row names an existing built-in cell that holds its value.
Result<std::vector<CellSource>> LoadCellSources(const CsvTable& t, const RawTables& tables) {
  std::vector<CellSource> out;
  for (const char* col : {"file", "row_id", "column", "value", "source", "date", "confidence"})
    if (t.Column(col) < 0) return Status::BadInput({t.file, 1, col}, "missing column");
  for (const auto& row : t.rows) {
    CsvRecord rec(t, row);
    CellSource c{rec.Str("file"), rec.Str("row_id"), rec.Str("column"), rec.Str("value"),
                 rec.Str("source"), rec.Str("date"), rec.Str("confidence"), rec.Where("")};
    if (c.source.empty()) return Status::BadInput(rec.Where("source"), "must not be empty");
    if (c.confidence != "high" && c.confidence != "medium" && c.confidence != "low")
      return Status::BadInput(rec.Where("confidence"), "expected high, medium or low, got '" + c.confidence + "'");
    const std::string* cell = RawCell(tables, c.file, c.row_id, c.column);
    if (!cell)
      return Status::BadInput(rec.Where("row_id"), "no cell " + c.file + " " + c.row_id + "." + c.column);
    const bool holds = c.column == "notes" ? cell->find(c.value) != std::string::npos : *cell == c.value;
    if (!holds)
      return Status::BadInput(rec.Where("value"), c.file + " " + c.row_id + "." + c.column + " is '" + *cell +
                                                      "', not the recorded '" + c.value + "'");
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::optional<double> GpuSpec::PeakFlops(Precision p) const {
  switch (p) {
    case Precision::kFp32: return tf32_flops ? tf32_flops : fp32_flops;  // matmuls run as TF32 where it exists
    case Precision::kFp16: return fp16_flops ? fp16_flops : bf16_flops;
    case Precision::kBf16: return bf16_flops ? bf16_flops : fp16_flops;
    case Precision::kFp8: return fp8_flops;
  }
  return std::nullopt;
}

std::string GpuSpec::PrecisionProblem(Precision p) const {
  if (p == Precision::kBf16 && !bf16_supported)
    return "GPU '" + id + "' has no bf16" + (fp16_flops ? "; it has fp16: use --precision fp16 (training.precision: fp16)" : "");
  if (p == Precision::kFp8 && !fp8_supported) return "GPU '" + id + "' has no fp8 (data/gpus.csv says none)";
  return "";
}

const CellSource* Catalog::FindCellSource(const std::string& file, const std::string& row_id,
                                          const std::string& column) const {
  for (const auto& c : cell_sources)
    if (c.file == file && c.row_id == row_id && c.column == column) return &c;
  return nullptr;
}

Result<GpuSpec> Catalog::FindGpu(const std::string& name) const {
  std::string want = Lower(name);
  for (const auto& g : gpus)
    if (g.id == want) return g;
  for (const auto& g : gpus)
    for (const auto& a : g.aliases)
      if (a == want) return g;
  return FindById(gpus, name, "GPU");
}
Result<LinkSpec> Catalog::FindLink(const std::string& id) const { return FindById(links, id, "link"); }
Result<InstanceSpec> Catalog::FindInstance(const std::string& id) const {
  return FindById(instances, id, "instance");
}
Result<StorageSpec> Catalog::FindStorage(const std::string& id) const {
  return FindById(storage, id, "storage");
}

Result<Catalog> LoadCatalog(const CatalogOptions& options) {
  Catalog c;
  RawTables raw;
  for (const char* name : {"gpus.csv", "links.csv", "instances.csv", "storage.csv", "capacity_blocks.csv"}) {
    std::string_view text = EmbeddedData(name);
    if (text.empty()) continue;
    auto t = ParseCsv(std::string(text), std::string("data/") + name);
    if (!t.ok()) return t.status();
    GPUPLAN_RETURN_IF_ERROR(LoadTable(*t, c));
    raw.emplace_back(name, std::move(t).value());
  }
  // Cell sources describe the built-in cells, so they are checked before any override applies.
  const std::string_view sources_text = EmbeddedData("cell_sources.csv");
  if (!options.cell_sources_file.empty() || !sources_text.empty()) {
    Result<CsvTable> sources = options.cell_sources_file.empty()
                                   ? ParseCsv(std::string(sources_text), "data/cell_sources.csv")
                                   : ReadCsvFile(options.cell_sources_file);
    if (!sources.ok()) return sources.status();
    auto cells = LoadCellSources(*sources, raw);
    if (!cells.ok()) return cells.status();
    c.cell_sources = std::move(cells).value();
  }
  for (const auto& path : options.override_files) {
    auto t = ReadCsvFile(path);
    if (!t.ok()) return t.status();
    GPUPLAN_RETURN_IF_ERROR(LoadTable(*t, c));
  }
  GPUPLAN_RETURN_IF_ERROR(CheckReferences(c));
  return c;
}

namespace {
std::optional<std::chrono::sys_days> ParseIsoDay(const std::string& s) {
  int y = 0;
  unsigned m = 0, d = 1;
  char tail = 0;
  if (s.size() == 10 && std::sscanf(s.c_str(), "%4d-%2u-%2u%c", &y, &m, &d, &tail) == 3) {
  } else if (s.size() == 7 && std::sscanf(s.c_str(), "%4d-%2u%c", &y, &m, &tail) == 2) {
    d = 1;
  } else {
    return std::nullopt;
  }
  const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{m}, std::chrono::day{d}};
  if (!ymd.ok()) return std::nullopt;
  return std::chrono::sys_days{ymd};
}
}  // namespace

std::optional<int64_t> PriceAgeDays(const std::string& price_date, const std::string& today_iso) {
  const auto from = ParseIsoDay(price_date), to = ParseIsoDay(today_iso);
  if (!from || !to) return std::nullopt;
  return static_cast<int64_t>((*to - *from).count());
}

std::string TodayUtcIso() {
  const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now())};
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()));
  return buf;
}

}  // namespace gpuplan
