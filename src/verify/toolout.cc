// Tool outputs: detection from the content, the shared record builder, and the small parsers
// (lspci, ibstat, dcgmi diag, fio JSON). nccl-tests/perftest/NCCL logs: toolout_net.cc;
// nvidia-smi (topo, -q, table, nvlink): toolout_nvsmi.cc. docs/checks.md "Reading outputs".
#include "gpuplan/toolout.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "gpuplan/csv.h"
#include "gpuplan/strings.h"
#include "toolout_internal.h"

namespace gpuplan {

namespace toolout {

std::vector<Line> SplitLines(const std::string& text) {
  std::vector<Line> out;
  size_t start = 0;
  int n = 1;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string l = text.substr(start, end - start);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (!(end == text.size() && l.empty() && start == text.size())) out.push_back({n, l});
    ++n;
    start = end + 1;
  }
  return out;
}

std::string Trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

std::vector<std::string> Tokens(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool Contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }
bool StartsWith(std::string_view s, std::string_view what) { return s.substr(0, what.size()) == what; }

std::optional<double> Number(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  auto v = ParseDecimal(s, {});
  if (!v.ok()) return std::nullopt;
  return *v;
}

std::optional<long long> Integer(std::string_view s) {
  auto v = Number(s);
  if (!v || *v != std::floor(*v) || std::abs(*v) > 9e18) return std::nullopt;
  return static_cast<long long>(*v);
}

std::string Num(double v) {
  char buf[64];
  if (v == std::floor(v) && std::abs(v) < 1e18) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Reading& Builder::Add(const std::string& metric, double value, const std::string& unit, int line) {
  Reading r;
  r.kind = out_.kind;
  r.tool = out_.tool;
  r.metric = metric;
  r.value = value;
  r.unit = unit;
  r.where = {out_.file, line, ""};
  out_.readings.push_back(std::move(r));
  return out_.readings.back();
}

Reading& Builder::AddState(const std::string& metric, const std::string& text, int line) {
  Reading& r = Add(metric, 1, "state", line);
  r.text = text;
  return r;
}

void Builder::Warn(int line, const std::string& message) { out_.warnings.push_back({{out_.file, line, ""}, message}); }

// ---- lspci -vv ----

bool LooksLikeLspci(const std::vector<Line>& lines) {
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (StartsWith(t, "LnkSta:") || StartsWith(t, "LnkCap:")) return true;
  }
  return false;
}

namespace {

std::optional<double> PcieGenOf(double gt_per_s) {
  static const double kRates[] = {2.5, 5, 8, 16, 32, 64};
  for (int i = 0; i < 6; ++i)
    if (std::abs(gt_per_s - kRates[i]) < 0.01) return i + 1;
  return std::nullopt;
}

struct LinkFields {
  std::optional<double> speed_gt_per_s, width;
  bool downgraded = false;
};

// "Speed 16GT/s, Width x16, ..." / "Speed 2.5GT/s (downgraded), Width x16 (ok)"
LinkFields ReadLinkFields(const std::string& t) {
  LinkFields f;
  if (auto p = t.find("Speed "); p != std::string::npos) {
    size_t e = t.find("GT/s", p);
    if (e != std::string::npos) f.speed_gt_per_s = Number(Trim(t.substr(p + 6, e - p - 6)));
  }
  if (auto p = t.find("Width x"); p != std::string::npos) {
    size_t e = p + 7;
    while (e < t.size() && std::isdigit(static_cast<unsigned char>(t[e]))) ++e;
    f.width = Number(t.substr(p + 7, e - p - 7));
  }
  f.downgraded = Contains(t, "(downgraded)");
  return f;
}

}  // namespace

void ParseLspci(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "lspci";
  std::string device;
  LinkFields cap;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    // "# lspci -vvv -s 0000:01:00.0 (...)" or a device header "01:00.0 VGA compatible controller: ..."
    if (auto p = t.find(" -s "); StartsWith(t, "#") && p != std::string::npos) {
      auto tok = Tokens(t.substr(p + 4));
      device = tok.empty() ? "" : tok[0];
      cap = {};
      continue;
    }
    if (!l.text.empty() && !std::isspace(static_cast<unsigned char>(l.text[0])) && t.size() > 7 && t[2] == ':' && t[5] == '.') {
      device = Tokens(t)[0];
      cap = {};
      continue;
    }
    const bool is_cap = StartsWith(t, "LnkCap:"), is_sta = StartsWith(t, "LnkSta:");
    if (!is_cap && !is_sta) continue;
    LinkFields f = ReadLinkFields(t);
    if (!f.speed_gt_per_s && !f.width) {
      b.Warn(l.number, "'" + t.substr(0, 7) + "' without Speed or Width: cannot read the link");
      continue;
    }
    auto add = [&](const std::string& metric, double v, const std::string& unit) {
      Reading& r = b.Add(metric, v, unit, l.number);
      if (!device.empty()) r.context["device"] = device;
      return &r;
    };
    if (is_cap) {
      cap = f;
      if (f.speed_gt_per_s) add("pcie_cap_speed_gt_per_s", *f.speed_gt_per_s, "GT/s");
      if (f.width) add("pcie_cap_width", *f.width, "lanes");
      continue;
    }
    if (f.speed_gt_per_s) {
      Reading* r = add("pcie_speed_gt_per_s", *f.speed_gt_per_s, "GT/s");
      if (f.downgraded) r->context["lnksta"] = "downgraded";
      if (cap.speed_gt_per_s) r->context["cap_speed_gt_per_s"] = Num(*cap.speed_gt_per_s);
      if (auto g = PcieGenOf(*f.speed_gt_per_s)) {
        Reading* gr = add("pcie_gen", *g, "gen");
        if (cap.speed_gt_per_s)
          if (auto cg = PcieGenOf(*cap.speed_gt_per_s)) gr->context["cap_gen"] = Num(*cg);
        if (f.downgraded) gr->context["lnksta"] = "downgraded";
      }
    }
    if (f.width) {
      Reading* r = add("pcie_width", *f.width, "lanes");
      if (cap.width) r->context["cap_width"] = Num(*cap.width);
    }
  }
}

// ---- ibstat ----

bool LooksLikeIbstat(const std::vector<Line>& lines) {
  for (const auto& l : lines)
    if (StartsWith(Trim(l.text), "CA '")) return true;
  return false;
}

void ParseIbstat(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "ibstat";
  std::string ca, port;
  int cas = 0, ports = 0, active_ports = 0, first_ca_line = 0;
  std::map<std::string, std::string> port_fields;
  int port_line = 0;
  auto flush_port = [&]() {
    if (port.empty()) return;
    ++ports;
    if (port_fields["State"] == "Active") ++active_ports;
    auto ctx = [&](Reading& r) {
      r.context["device"] = ca;
      r.context["port"] = port;
      if (port_fields.count("State")) r.context["state"] = port_fields["State"];
      if (port_fields.count("Link layer")) r.context["link_layer"] = port_fields["Link layer"];
    };
    if (port_fields.count("State")) ctx(b.AddState("port_state", port_fields["State"], port_line));
    if (port_fields.count("Physical state")) ctx(b.AddState("port_physical_state", port_fields["Physical state"], port_line));
    if (port_fields.count("Rate")) {
      if (auto v = Number(port_fields["Rate"])) ctx(b.Add("port_rate_gbit_per_s", *v, "Gb/s", port_line));
      else b.Warn(port_line, "port " + port + " of " + ca + ": Rate '" + port_fields["Rate"] + "' is not a number");
    }
    port.clear();
    port_fields.clear();
  };
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (StartsWith(t, "CA '")) {
      flush_port();
      size_t e = t.find('\'', 4);
      if (e == std::string::npos) {
        b.Warn(l.number, "CA name not closed with a quote: '" + t + "'");
        continue;
      }
      ca = t.substr(4, e - 4);
      if (cas++ == 0) first_ca_line = l.number;
      continue;
    }
    if (StartsWith(t, "Port ") && !t.empty() && t.back() == ':') {
      flush_port();
      port = t.substr(5, t.size() - 6);
      port_line = l.number;
      continue;
    }
    auto colon = t.find(':');
    if (!port.empty() && colon != std::string::npos) port_fields[Trim(t.substr(0, colon))] = Trim(t.substr(colon + 1));
  }
  flush_port();
  b.Add("ca_count", cas, "count", first_ca_line);
  if (ports > 0) b.Add("ports_active", active_ports, "count", first_ca_line).context["ports"] = std::to_string(ports);
  if (ports == 0)
    b.Warn(0, std::to_string(cas) + " CA line(s) but no 'Port N:' record (filtered output such as `ibstat | grep`): port states and rates unknown");
}

// ---- dcgmi diag ----

bool LooksLikeDcgmi(const std::vector<Line>& lines) {
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (!StartsWith(t, "|")) continue;
    if (Contains(t, "Diagnostic") && Contains(t, "Result")) return true;
    auto cells = SplitList(t.substr(1), '|');
    if (cells.size() >= 2) {
      const std::string r = Trim(cells[1]);
      if (!Trim(cells[0]).empty() && (StartsWith(r, "Pass") || StartsWith(r, "Fail") || StartsWith(r, "Skip") || StartsWith(r, "Warn")))
        return true;
    }
  }
  return false;
}

namespace {

struct DcgmEntry {
  std::string name, section, text;
  std::vector<std::string> parts;  // one per table row of the result cell
  int line = 0;
};

}  // namespace

void ParseDcgmi(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "dcgmi diag";
  std::vector<DcgmEntry> entries;
  std::string section;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (!StartsWith(t, "|") && !StartsWith(t, "+")) continue;
    if (StartsWith(t, "|-----") || StartsWith(t, "+-----")) {  // "|-----  Deployment  --------+---"
      std::string s = t.substr(1, t.find_first_of("+|", 1) == std::string::npos ? std::string::npos : t.find_first_of("+|", 1) - 1);
      s.erase(std::remove(s.begin(), s.end(), '-'), s.end());
      if (!Trim(s).empty()) section = Trim(s);
      continue;
    }
    if (StartsWith(t, "+")) continue;
    const bool closed = t.size() > 1 && t.back() == '|';
    std::vector<std::string> cells;  // as printed, blanks kept (the wrapped text depends on them)
    {
      const std::string body = t.substr(1, closed ? t.size() - 2 : std::string::npos);
      size_t start = 0;
      for (size_t p = body.find('|'); ; p = body.find('|', start)) {
        cells.push_back(body.substr(start, p == std::string::npos ? std::string::npos : p - start));
        if (p == std::string::npos) break;
        start = p + 1;
      }
    }
    if (cells.size() < 2) {
      b.Warn(l.number, "table row without a result cell: '" + t + "'");
      continue;
    }
    if (!closed) b.Warn(l.number, "table row not closed with '|' (the output stops mid-row); read up to it");
    const std::string name = Trim(cells[0]);
    if (name == "Diagnostic") continue;
    // dcgmi wraps a long result at the cell width, mid-word: keep the cell's text as printed.
    std::string seg = cells[1].size() > 1 ? cells[1].substr(1) : "";
    const size_t width = closed ? (cells[1].size() >= 3 ? cells[1].size() - 3 : 0) : std::string::npos;
    if (seg.size() > width) seg = seg.substr(0, width);
    if (!name.empty() || entries.empty()) {
      entries.push_back({name, section, seg, {Trim(seg)}, l.number});
    } else {
      entries.back().text += seg;
      entries.back().parts.push_back(Trim(seg));
    }
  }
  int fails = 0, warns = 0, tests = 0;
  for (auto& e : entries) {
    std::string text;
    for (char c : e.text)
      if (!(c == ' ' && !text.empty() && text.back() == ' ')) text += c;
    text = Trim(text);
    if (e.name == "DCGM Version" || e.name == "Driver Version Detected" || e.name == "GPU Device IDs Detected") {
      b.AddState(e.name == "DCGM Version" ? "dcgm_version" : e.name == "Driver Version Detected" ? "driver_version" : "gpu_device_ids", text, e.line);
      continue;
    }
    if (e.name == "Error" || e.name == "Warning") {
      Reading& r = b.AddState(e.name == "Error" ? "dcgm_error" : "dcgm_warning", text, e.line);
      r.context["section"] = e.section;
      (e.name == "Error" ? fails : warns)++;
      continue;
    }
    std::string verdict = "Pass";
    std::string failing;
    for (const auto& p : e.parts) {
      if (StartsWith(p, "Fail")) verdict = "Fail", failing += (failing.empty() ? "" : "; ") + p;
      else if (StartsWith(p, "Warn") && verdict == "Pass") verdict = "Warn";
      else if (StartsWith(p, "Skip") && verdict == "Pass") verdict = "Skip";
      else if (!StartsWith(p, "Pass") && !p.empty()) {
        b.Warn(e.line, "test '" + e.name + "': result '" + p + "' is not Pass/Fail/Warn/Skip");
        verdict = "?";
      }
    }
    ++tests;
    Reading& r = b.AddState("dcgm_test", verdict, e.line);
    r.context["test"] = e.name;
    r.context["section"] = e.section;
    r.context["result"] = text;
    if (verdict == "Fail") ++fails;
  }
  b.Add("dcgm_tests", tests, "count", entries.empty() ? 0 : entries.front().line);
  b.Add("dcgm_failures", fails, "count", entries.empty() ? 0 : entries.front().line);
  if (entries.empty()) b.Warn(0, "dcgmi diag table without a result row");
}

// ---- fio --output-format=json ----

bool LooksLikeFio(const std::string& text) {
  const size_t brace = text.find('{');
  return brace != std::string::npos && Contains(text, "\"fio version\"") && Contains(text, "\"jobs\"");
}

namespace {

int LineOfOffset(const std::string& text, size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(std::min(offset, text.size())), '\n'));
}

std::string JsonString(const nlohmann::json& o, const char* key) {
  if (!o.is_object() || !o.contains(key)) return "";
  const auto& v = o[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return Num(v.get<double>());
  return "";
}

}  // namespace

void ParseFio(const std::string& text, ToolOutput& out) {
  Builder b(out);
  out.tool = "fio";
  const size_t brace = text.find('{');
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.substr(brace));
  } catch (const nlohmann::json::parse_error& e) {
    const int line = LineOfOffset(text, brace + (e.byte > 0 ? e.byte - 1 : 0));
    b.Warn(line, std::string("fio JSON does not parse (cut short?): ") + e.what() + "; nothing read");
    return;
  }
  const std::string version = JsonString(doc, "fio version");
  const nlohmann::json global = doc.value("global options", nlohmann::json::object());
  if (!doc.contains("jobs") || !doc["jobs"].is_array()) {
    b.Warn(LineOfOffset(text, brace), "fio JSON without a \"jobs\" array");
    return;
  }
  // Lines of each "jobname" in the text, so each job's readings point at its record.
  std::vector<int> job_lines;
  for (size_t p = text.find("\"jobname\""); p != std::string::npos; p = text.find("\"jobname\"", p + 1)) job_lines.push_back(LineOfOffset(text, p));
  size_t idx = 0;
  for (const auto& job : doc["jobs"]) {
    const int line = idx < job_lines.size() ? job_lines[idx] : LineOfOffset(text, brace);
    ++idx;
    const nlohmann::json opts = job.value("job options", nlohmann::json::object());
    auto opt = [&](const char* k) {
      std::string v = JsonString(opts, k);
      return v.empty() ? JsonString(global, k) : v;
    };
    for (const char* rw : {"read", "write"}) {
      if (!job.contains(rw) || !job[rw].is_object()) continue;
      const auto& d = job[rw];
      const double io = d.value("io_bytes", 0.0), bw = d.value("bw", 0.0);
      if (io <= 0 && bw <= 0) continue;
      auto ctx = [&](Reading& r) {
        r.context["job"] = JsonString(job, "jobname");
        r.context["rw"] = rw;
        r.context["fio_version"] = version;
        for (const char* k : {"rw", "bs", "iodepth", "numjobs", "filename", "ioengine", "direct"})
          if (std::string v = opt(k); !v.empty()) r.context[std::string(k) == "rw" ? "pattern" : k] = v;
      };
      ctx(b.Add("bw_kib_per_s", bw, "KiB/s", line));
      ctx(b.Add("iops", d.value("iops", 0.0), "IOPS", line));
      // fio >= 3 reports clat_ns; 2.x reports clat in microseconds.
      if (d.contains("clat_ns") && d["clat_ns"].is_object()) ctx(b.Add("clat_mean_us", d["clat_ns"].value("mean", 0.0) / 1000, "us", line));
      else if (d.contains("clat") && d["clat"].is_object()) ctx(b.Add("clat_mean_us", d["clat"].value("mean", 0.0), "us", line));
    }
    if (job.value("error", 0) != 0) b.Warn(line, "fio job '" + JsonString(job, "jobname") + "' reports error " + JsonString(job, "error"));
  }
  if (doc["jobs"].empty()) b.Warn(LineOfOffset(text, brace), "fio JSON with no job");
}

}  // namespace toolout

std::string ToString(ToolKind k) {
  switch (k) {
    case ToolKind::kUnknown: return "unrecognised";
    case ToolKind::kNcclTests: return "nccl-tests";
    case ToolKind::kPerftest: return "perftest";
    case ToolKind::kPerftestTable: return "perftest-table";
    case ToolKind::kNvidiaSmiTopo: return "nvidia-smi-topo";
    case ToolKind::kNvidiaSmiP2p: return "nvidia-smi-p2p";
    case ToolKind::kNvidiaSmi: return "nvidia-smi";
    case ToolKind::kNvidiaSmiQuery: return "nvidia-smi-q";
    case ToolKind::kNvlinkStatus: return "nvidia-smi-nvlink";
    case ToolKind::kLspci: return "lspci";
    case ToolKind::kIbstat: return "ibstat";
    case ToolKind::kFioJson: return "fio-json";
    case ToolKind::kDcgmiDiag: return "dcgmi-diag";
    case ToolKind::kNcclDebug: return "nccl-debug";
  }
  return "unrecognised";
}

ToolKind DetectToolOutput(const std::string& text) {
  using namespace toolout;
  if (LooksLikeFio(text)) return ToolKind::kFioJson;
  const std::vector<Line> lines = SplitLines(text);
  if (LooksLikeNcclTests(lines)) return ToolKind::kNcclTests;
  if (LooksLikePerftest(lines)) return ToolKind::kPerftest;
  if (LooksLikePerftestTable(lines)) return ToolKind::kPerftestTable;
  if (LooksLikeDcgmi(lines)) return ToolKind::kDcgmiDiag;
  bool p2p = false;
  if (LooksLikeTopo(lines, &p2p)) return p2p ? ToolKind::kNvidiaSmiP2p : ToolKind::kNvidiaSmiTopo;
  if (LooksLikeNvidiaSmiTable(lines)) return ToolKind::kNvidiaSmi;
  if (LooksLikeNvlinkStatus(lines)) return ToolKind::kNvlinkStatus;
  if (LooksLikeNvidiaSmiQuery(lines)) return ToolKind::kNvidiaSmiQuery;
  if (LooksLikeLspci(lines)) return ToolKind::kLspci;
  if (LooksLikeIbstat(lines)) return ToolKind::kIbstat;
  if (LooksLikeNcclDebug(lines)) return ToolKind::kNcclDebug;
  return ToolKind::kUnknown;
}

ToolOutput ParseToolOutput(const std::string& text, const std::string& file) {
  using namespace toolout;
  ToolOutput out;
  out.file = file;
  out.kind = DetectToolOutput(text);
  const std::vector<Line> lines = SplitLines(text);
  switch (out.kind) {
    case ToolKind::kUnknown:
      out.warnings.push_back({{file, 0, ""},
                              "not a recognised tool output (nccl-tests, perftest, nvidia-smi, lspci, ibstat, fio JSON, dcgmi diag, "
                              "NCCL_DEBUG=INFO log): nothing read"});
      break;
    case ToolKind::kNcclTests: ParseNcclTests(lines, out); break;
    case ToolKind::kPerftest: ParsePerftest(lines, out); break;
    case ToolKind::kPerftestTable: ParsePerftestTable(lines, out); break;
    case ToolKind::kNvidiaSmiTopo: ParseTopo(lines, out); break;
    case ToolKind::kNvidiaSmiP2p: ParseP2p(lines, out); break;
    case ToolKind::kNvidiaSmi: ParseNvidiaSmiTable(lines, out); break;
    case ToolKind::kNvidiaSmiQuery: ParseNvidiaSmiQuery(lines, out); break;
    case ToolKind::kNvlinkStatus: ParseNvlinkStatus(lines, out); break;
    case ToolKind::kLspci: ParseLspci(lines, out); break;
    case ToolKind::kIbstat: ParseIbstat(lines, out); break;
    case ToolKind::kFioJson: ParseFio(text, out); break;
    case ToolKind::kDcgmiDiag: ParseDcgmi(lines, out); break;
    case ToolKind::kNcclDebug: ParseNcclDebug(lines, out); break;
  }
  if (out.kind != ToolKind::kUnknown && out.readings.empty() && out.warnings.empty())
    out.warnings.push_back({{file, 0, ""}, "recognised as " + ToString(out.kind) + " but no number could be read from it"});
  return out;
}

Result<ToolOutput> ReadToolOutput(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return ParseToolOutput(*text, path);
}

std::vector<Reading> FlattenReadings(const std::vector<ToolOutput>& outputs) {
  std::vector<Reading> all;
  for (const auto& o : outputs) all.insert(all.end(), o.readings.begin(), o.readings.end());
  return all;
}

std::string ToString(const Reading& r) {
  std::string s = r.metric + " = ";
  s += r.text.empty() ? toolout::Num(std::round(r.value * 1e4) / 1e4) + " " + r.unit : r.text;
  if (!r.context.empty()) {
    s += " (";
    bool first = true;
    for (const auto& [k, v] : r.context) s += (first ? "" : ", ") + k + "=" + v, first = false;
    s += ")";
  }
  s += " at " + r.where.file + ":" + std::to_string(r.where.line);
  return s;
}

}  // namespace gpuplan
