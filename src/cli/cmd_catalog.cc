#include <cstdio>
#include <map>

#include "cli.h"
#include "commands.h"
#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/report.h"

namespace gpuplan::cli {

namespace {
const std::vector<FlagSpec> kListFlags = {
    {"json", false, "JSON output"},
    {"format", true, "text|md|json|csv (default text)"},
    {"catalog", true, "extra catalog CSV; repeatable"},
    {"wide", false, "text: every column (names, aliases, sources); md, json and csv always have them"},
    {"help", false, "this help"},
};
std::string Num(const std::optional<double>& v, double scale, const char* fmt = "%.0f") {
  if (!v) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, *v / scale);
  return buf;
}

int Print(Format f, const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

// The default text table keeps the key columns (`keep`, by header name) so it fits a terminal; --wide,
// md, json and csv print every column.
int PrintNarrowable(Format f, bool wide, const std::vector<std::string>& keep, const std::vector<std::string>& header,
                    const std::vector<std::vector<std::string>>& rows) {
  if (f != Format::kText || wide) return Print(f, header, rows);
  std::vector<size_t> cols;
  for (const auto& k : keep)
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == k) cols.push_back(i);
  std::vector<std::string> h;
  for (size_t c : cols) h.push_back(header[c]);
  std::vector<std::vector<std::string>> out;
  for (const auto& r : rows) {
    std::vector<std::string> cells;
    for (size_t c : cols) cells.push_back(c < r.size() ? r[c] : "");
    out.push_back(std::move(cells));
  }
  std::printf("%s(the key columns; --wide or --format csv for every column)\n", RenderTable(h, out, false).c_str());
  return 0;
}

// --format csv: the rows as a --catalog file (data/<kind>.csv's header, each row's own cells from
// the file it was loaded from), so `gpuplan catalog gpus --format csv > my.csv` is a valid start.
template <typename T>
int PrintCatalogCsv(const std::string& kind, const std::vector<T>& rows) {
  std::map<std::string, CsvTable> files;
  std::map<std::string, std::map<int, const CsvRow*>> by_line;  // file -> line -> row (linear overall)
  auto table = [&](const std::string& file) -> Result<const CsvTable*> {
    auto it = files.find(file);
    if (it == files.end()) {
      auto t = file.rfind("data/", 0) == 0 ? ParseCsv(std::string(EmbeddedData(file.substr(5))), file) : ReadCsvFile(file);
      if (!t.ok()) return t.status();
      it = files.emplace(file, std::move(t).value()).first;
      auto& index = by_line[file];
      for (const auto& row : it->second.rows) index[row.line] = &row;
    }
    return &it->second;
  };
  auto canon = table("data/" + kind + ".csv");
  if (!canon.ok()) return Fail(canon.status());
  const std::vector<std::string> header = (*canon)->header;
  std::vector<std::vector<std::string>> out;
  for (const auto& r : rows) {
    auto t = table(r.where.file);
    if (!t.ok()) return Fail(t.status());
    const auto& index = by_line[r.where.file];
    const auto found = index.find(r.where.line);
    const CsvRow* src = found == index.end() ? nullptr : found->second;
    if (src == nullptr) return Fail(Status::Internal("row " + r.id + " not found at " + r.where.file + ":" + std::to_string(r.where.line)));
    std::vector<std::string> cells;
    for (const auto& col : header) {
      const int c = (*t)->Column(col);
      cells.push_back(c >= 0 ? src->fields[static_cast<size_t>(c)] : "");
    }
    out.push_back(std::move(cells));
  }
  return Print(Format::kCsv, header, out);
}

int Print(Format f, const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  if (f == Format::kJson) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json o;
      for (size_t i = 0; i < header.size(); ++i) o[header[i]] = r[i];
      arr.push_back(o);
    }
    EmitJson(arr);
  } else if (f == Format::kCsv) {
    auto q = [](const std::string& s) {
      if (s.find_first_of(",\"\n") == std::string::npos) return s;
      std::string o = "\"";
      for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
      return o + "\"";
    };
    for (size_t i = 0; i < header.size(); ++i) std::printf("%s%s", i ? "," : "", q(header[i]).c_str());
    std::printf("\n");
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) std::printf("%s%s", i ? "," : "", q(r[i]).c_str());
      std::printf("\n");
    }
  } else {
    std::printf("%s", RenderTable(header, rows, f == Format::kMarkdown).c_str());
  }
  return 0;
}
}  // namespace

int CmdModels(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, kListFlags, false);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan models [--format text|md|json|csv]\n\n%s", FlagHelp(kListFlags, false).c_str());
    return 0;
  }
  if (!args->positional.empty())
    return Fail(Status::BadInput({"command line", 0, args->positional[0]}, "gpuplan models takes no arguments (only flags)"), json);
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status(), json);
  std::vector<std::vector<std::string>> rows;
  for (const auto& a : Presets()) {
    const ParamCounts pc = CountParams(a);
    rows.push_back({a.name, WithThousands(pc.total), FormatCount(static_cast<double>(pc.active)), std::to_string(a.layers),
                    std::to_string(a.hidden), std::to_string(a.heads), std::to_string(a.KvHeads()),
                    std::to_string(a.Ffn()), std::to_string(a.vocab), ToString(a.mlp),
                    a.IsMoe() ? std::to_string(a.experts) + "x top-" + std::to_string(a.experts_per_token) : "dense"});
  }
  return Print(*format, {"preset", "params", "active", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp", "moe"}, rows);
}

int CmdCatalog(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, kListFlags, false);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan catalog gpus|links|instances|storage [--format text|md|json|csv] [--catalog FILE]\n\n%s",
                FlagHelp(kListFlags, false).c_str());
    return 0;
  }
  if (args->positional.empty())
    return Fail(Status::BadInput({"command line", 0, "catalog"}, "needs a kind: gpuplan catalog gpus|links|instances|storage"), json);
  if (args->positional.size() > 1)
    return Fail(Status::BadInput({"command line", 0, args->positional[1]}, "gpuplan catalog lists one kind at a time (gpus, links, instances or storage)"), json);
  if (const std::string& w = args->positional[0]; w != "gpus" && w != "links" && w != "instances" && w != "storage")
    return Fail(Status::BadInput({"command line", 0, w}, "unknown catalog kind (gpus, links, instances or storage)"), json);
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status(), json);
  auto cat = LoadCatalogFromArgs(*args);
  if (!cat.ok()) return Fail(cat.status(), json);
  const std::string what = args->positional[0];
  if (*format == Format::kCsv) {
    if (what == "gpus") return PrintCatalogCsv(what, cat->gpus);
    if (what == "links") return PrintCatalogCsv(what, cat->links);
    if (what == "instances") return PrintCatalogCsv(what, cat->instances);
    if (what == "storage") return PrintCatalogCsv(what, cat->storage);
  }
  std::vector<std::vector<std::string>> rows;
  if (what == "gpus") {
    for (const auto& g : cat->gpus) {
      std::string aliases;
      for (const auto& a : g.aliases) aliases += (aliases.empty() ? "" : ";") + a;
      rows.push_back({g.id, g.name, Num(g.memory_bytes > 0 ? std::optional<double>(g.memory_bytes) : std::nullopt, 1073741824.0),
                      Num(g.mem_bw_bytes_per_s, 1e9), Num(g.bf16_flops, 1e12, "%.1f"), Num(g.fp8_flops, 1e12, "%.1f"),
                      g.intra_link, Num(g.nvlink_bytes_per_s_per_dir, 1e9), aliases, g.source});
    }
    return PrintNarrowable(*format, args->Has("wide"), {"id", "memory_GiB", "hbm_GB/s", "bf16_TFLOP/s", "fp8_TFLOP/s", "intra_link", "nvlink_GB/s/dir"},
                           {"id", "name", "memory_GiB", "hbm_GB/s", "bf16_TFLOP/s", "fp8_TFLOP/s", "intra_link", "nvlink_GB/s/dir", "aliases", "source"}, rows);
  }
  if (what == "links") {
    for (const auto& l : cat->links)
      rows.push_back({l.id, l.kind, l.name, Num(l.bw_bytes_per_s_per_dir, 1e9, "%.2f"), Num(l.latency_s, 1e-6, "%.1f"), l.source});
    return PrintNarrowable(*format, args->Has("wide"), {"id", "kind", "name", "GB/s/dir", "latency_us"},
                           {"id", "kind", "name", "GB/s/dir", "latency_us", "source"}, rows);
  }
  if (what == "instances") {
    for (const auto& i : cat->instances)
      rows.push_back({i.id, i.provider, i.gpu_id, std::to_string(i.gpu_count), i.intra_link, Num(i.network_bits_per_s, 1e9),
                      i.network_kind, i.rdma, Num(i.on_demand_usd_per_hour, 1, "%.2f"), Num(i.spot_usd_per_hour, 1, "%.2f"),
                      i.price_date});
    return PrintNarrowable(*format, args->Has("wide"), {"id", "gpu", "gpus", "net_Gb/s", "rdma", "on_demand_$/h", "spot_$/h", "price_date"},
                           {"id", "provider", "gpu", "gpus", "intra_link", "net_Gb/s", "net", "rdma", "on_demand_$/h", "spot_$/h", "price_date"}, rows);
  }
  if (what == "storage") {
    for (const auto& s : cat->storage)
      rows.push_back({s.id, s.provider, s.tier, Num(s.read_bytes_per_s, 1e6), Num(s.write_bytes_per_s, 1e6),
                      Num(s.usd_per_gb_month, 1, "%.3f"), s.throughput_scope});
    return PrintNarrowable(*format, args->Has("wide"), {"id", "tier", "read_MB/s", "write_MB/s", "$/GB-month"},
                           {"id", "provider", "tier", "read_MB/s", "write_MB/s", "$/GB-month", "scope"}, rows);
  }
  return Fail(Status::BadInput({"command line", 0, what}, "expected gpus, links, instances or storage"), json);
}

}  // namespace gpuplan::cli
