// Catalog loading from data/*.csv (compiled in) and user override files.
#include "gpuplan/catalog.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

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

// Reads an optional number column and scales it; a bad cell is an error with its location.
#define OPT(out, rec, col, scale)                                  \
  do {                                                             \
    auto _v = (rec).OptNumber(col);                                \
    if (!_v.ok()) return _v.status();                              \
    if (_v->has_value()) (out) = **_v * (scale);                   \
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
  OPT(mem, r, "memory_gib", kGiB);
  g.memory_bytes = mem.value_or(0);
  OPT(g.mem_bw_bytes_per_s, r, "mem_bw_gb_per_s", kGB);
  OPT(g.fp32_flops, r, "fp32_tflops", kTera);
  OPT(g.tf32_flops, r, "tf32_tflops", kTera);
  OPT(g.bf16_flops, r, "bf16_tflops", kTera);
  OPT(g.fp16_flops, r, "fp16_tflops", kTera);
  OPT(g.fp8_flops, r, "fp8_tflops", kTera);
  g.fp8_supported = r.Str("fp8_tflops") != "none";
  g.bf16_supported = r.Str("bf16_tflops") != "none";
  g.intra_link = r.Str("intra_link");
  OPT(g.nvlink_bytes_per_s_per_dir, r, "nvlink_bw_gb_per_s_per_dir", kGB);
  OPT(g.pcie_gen, r, "pcie_gen", 1.0);
  OPT(g.pcie_lanes, r, "pcie_lanes", 1.0);
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
  OPT(bw, r, "bw_gb_per_s_per_dir", kGB);
  l.bw_bytes_per_s_per_dir = bw.value_or(0);  // 0 = unknown; users of the link check
  OPT(l.latency_s, r, "latency_us", 1e-6);
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
  if (!currency.empty() && currency != "unknown") i.price_currency = currency;
  OPT(i.on_demand_local_per_hour, r, "on_demand_local_per_hour", 1.0);
  OPT(i.fx_usd_per_unit, r, "fx_usd_per_unit", 1.0);
  const std::string fx_date = r.Str("fx_date");
  if (fx_date != "unknown") i.fx_date = fx_date;
  if (i.price_currency == "USD" && !i.fx_usd_per_unit) i.fx_usd_per_unit = 1.0;
  if (i.on_demand_local_per_hour && !i.on_demand_usd_per_hour) {
    if (!i.fx_usd_per_unit)
      return Status::BadInput(r.Where("fx_usd_per_unit"), "a rate is required to convert on_demand_local_per_hour from " +
                                                              i.price_currency + " to USD");
    if (i.price_currency != "USD" && i.fx_date.empty())
      return Status::BadInput(r.Where("fx_date"), "the exchange rate needs its date");
    i.on_demand_usd_per_hour = *i.on_demand_local_per_hour * *i.fx_usd_per_unit;
  }
  return Status::Ok();
}

Result<InstanceSpec> ReadInstance(const CsvRecord& r) {
  InstanceSpec i;
  i.id = r.Str("id");
  i.provider = r.Str("provider");
  i.instance = r.Str("instance");
  i.gpu_id = r.Str("gpu_id");
  std::optional<double> count;
  OPT(count, r, "gpu_count", 1.0);
  i.gpu_count = static_cast<int64_t>(count.value_or(0));  // 0 = unknown: listed, never planned
  if (count && i.gpu_count <= 0) return Status::BadInput(r.Where("gpu_count"), "must be > 0");
  i.intra_link = r.Str("intra_link");
  OPT(i.vcpus, r, "vcpus", 1.0);
  OPT(i.ram_bytes, r, "ram_gib", kGiB);
  OPT(i.local_nvme_bytes, r, "local_nvme_tb", kTB);
  OPT(i.network_bits_per_s, r, "network_gbps", 1e9);
  i.network_kind = r.Str("network_kind");
  i.network_link = r.Str("network_link");
  i.rdma = r.Str("rdma");
  i.gpudirect_rdma = r.Str("gpudirect_rdma");
  OPT(i.nics, r, "nics", 1.0);
  OPT(i.on_demand_usd_per_hour, r, "on_demand_usd_per_hour", 1.0);
  OPT(i.spot_usd_per_hour, r, "spot_usd_per_hour", 1.0);
  OPT(i.reserved_usd_per_hour, r, "reserved_usd_per_hour", 1.0);
  GPUPLAN_RETURN_IF_ERROR(ReadLocalPrice(r, i));
  i.region = r.Str("region");
  i.price_date = r.Str("price_date");
  const std::string spot_date = r.Str("spot_price_date");
  if (!spot_date.empty() && spot_date != "unknown") i.spot_price_date = spot_date;
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
  OPT(s.read_bytes_per_s, r, "read_mb_per_s", kMB);
  OPT(s.write_bytes_per_s, r, "write_mb_per_s", kMB);
  OPT(s.iops, r, "iops", 1.0);
  OPT(s.latency_s, r, "latency_ms", 1e-3);
  OPT(s.usd_per_gb_month, r, "usd_per_gb_month", 1.0);
  OPT(s.usd_per_1k_put, r, "usd_per_1k_put", 1.0);
  OPT(s.usd_per_1k_get, r, "usd_per_1k_get", 1.0);
  s.throughput_scope = r.Str("throughput_scope");
  s.source = r.Str("source");
  s.date = r.Str("date");
  s.notes = r.Str("notes");
  s.where = r.Where("");
  return s;
}

Result<CapacityBlockSpec> ReadCapacityBlock(const CsvRecord& r) {
  CapacityBlockSpec b;
  b.id = Lower(r.Str("id"));
  auto price = r.Number("usd_per_node_hour");
  if (!price.ok()) return price.status();
  if (!(*price > 0) || *price > 1e6) return Status::BadInput(r.Where("usd_per_node_hour"), "must be in (0, 1e6] USD per node-hour");
  b.usd_per_node_hour = *price;
  auto inc = r.Number("billing_increment_hours");
  if (!inc.ok()) return inc.status();
  if (!(*inc > 0) || *inc > 24 * 366) return Status::BadInput(r.Where("billing_increment_hours"), "must be in (0, 8784] hours");
  b.billing_increment_s = *inc * 3600;
  for (const auto& part : SplitList(r.Str("node_counts"), ';')) {
    char* end = nullptr;
    const long long n = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || n < 1 || n > 100000)
      return Status::BadInput(r.Where("node_counts"), "expected node counts like 1;2;4;8, got '" + part + "'");
    b.node_counts.push_back(n);
  }
  if (b.node_counts.empty()) return Status::BadInput(r.Where("node_counts"), "must list the node counts that can be booked");
  b.region = r.Str("region");
  b.price_date = r.Str("price_date");
  b.source = r.Str("source");
  b.notes = r.Str("notes");
  b.where = r.Where("");
  return b;
}

template <typename T>
void Upsert(std::vector<T>& rows, T row) {
  for (auto& r : rows)
    if (r.id == row.id) {
      r = std::move(row);
      return;
    }
  rows.push_back(std::move(row));
}

template <typename T, typename F>
Status LoadRows(const CsvTable& t, std::vector<T>& out, F read) {
  for (const auto& row : t.rows) {
    CsvRecord rec(t, row);
    if (rec.Str("id").empty()) return Status::BadInput(rec.Where("id"), "must not be empty");
    auto v = read(rec);
    if (!v.ok()) return v.status();
    Upsert(out, std::move(v).value());
  }
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
  return c;
}

}  // namespace gpuplan
