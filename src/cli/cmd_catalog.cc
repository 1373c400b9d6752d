#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "gpuplan/report.h"

namespace gpuplan::cli {

namespace {
const std::vector<FlagSpec> kListFlags = {
    {"json", false, "JSON output"},
    {"format", true, "text|md|json|csv (default text)"},
    {"catalog", true, "extra catalog CSV; repeatable"},
    {"help", false, "this help"},
};
std::string Num(const std::optional<double>& v, double scale, const char* fmt = "%.0f") {
  if (!v) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, *v / scale);
  return buf;
}

int Print(Format f, const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  if (f == Format::kJson) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json o;
      for (size_t i = 0; i < header.size(); ++i) o[header[i]] = r[i];
      arr.push_back(o);
    }
    std::printf("%s\n", arr.dump(2).c_str());
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
  auto args = ParseArgs(argv, kListFlags, false);
  if (!args.ok()) return Fail(args.status());
  if (args->Has("help")) {
    std::printf("usage: gpuplan models [--format text|md|json|csv]\n\n%s", FlagHelp(kListFlags, false).c_str());
    return 0;
  }
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status());
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
  auto args = ParseArgs(argv, kListFlags, false);
  if (!args.ok()) return Fail(args.status());
  if (args->Has("help") || args->positional.size() != 1) {
    std::printf("usage: gpuplan catalog gpus|links|instances|storage [--format text|md|json|csv] [--catalog FILE]\n\n%s",
                FlagHelp(kListFlags, false).c_str());
    return args->Has("help") ? 0 : 1;
  }
  auto format = GetFormat(*args);
  if (!format.ok()) return Fail(format.status());
  auto cat = LoadCatalogFromArgs(*args);
  if (!cat.ok()) return Fail(cat.status());
  const std::string what = args->positional[0];
  std::vector<std::vector<std::string>> rows;
  if (what == "gpus") {
    for (const auto& g : cat->gpus) {
      std::string aliases;
      for (const auto& a : g.aliases) aliases += (aliases.empty() ? "" : ";") + a;
      rows.push_back({g.id, g.name, Num(g.memory_bytes > 0 ? std::optional<double>(g.memory_bytes) : std::nullopt, 1073741824.0),
                      Num(g.mem_bw_bytes_per_s, 1e9), Num(g.bf16_flops, 1e12, "%.1f"), Num(g.fp8_flops, 1e12, "%.1f"),
                      g.intra_link, Num(g.nvlink_bytes_per_s_per_dir, 1e9), aliases, g.source});
    }
    return Print(*format, {"id", "name", "memory_GiB", "hbm_GB/s", "bf16_TFLOP/s", "fp8_TFLOP/s", "intra_link", "nvlink_GB/s/dir", "aliases", "source"}, rows);
  }
  if (what == "links") {
    for (const auto& l : cat->links)
      rows.push_back({l.id, l.kind, l.name, Num(l.bw_bytes_per_s_per_dir, 1e9, "%.2f"), Num(l.latency_s, 1e-6, "%.1f"), l.source});
    return Print(*format, {"id", "kind", "name", "GB/s/dir", "latency_us", "source"}, rows);
  }
  if (what == "instances") {
    for (const auto& i : cat->instances)
      rows.push_back({i.id, i.provider, i.gpu_id, std::to_string(i.gpu_count), i.intra_link, Num(i.network_bits_per_s, 1e9),
                      i.network_kind, i.rdma, Num(i.on_demand_usd_per_hour, 1, "%.2f"), Num(i.spot_usd_per_hour, 1, "%.2f"),
                      i.price_date});
    return Print(*format, {"id", "provider", "gpu", "gpus", "intra_link", "net_Gb/s", "net", "rdma", "on_demand_$/h", "spot_$/h", "price_date"}, rows);
  }
  if (what == "storage") {
    for (const auto& s : cat->storage)
      rows.push_back({s.id, s.provider, s.tier, Num(s.read_bytes_per_s, 1e6), Num(s.write_bytes_per_s, 1e6),
                      Num(s.usd_per_gb_month, 1, "%.3f"), s.throughput_scope});
    return Print(*format, {"id", "provider", "tier", "read_MB/s", "write_MB/s", "$/GB-month", "scope"}, rows);
  }
  return Fail(Status::BadInput({"command line", 0, what}, "expected gpus, links, instances or storage"));
}

}  // namespace gpuplan::cli
