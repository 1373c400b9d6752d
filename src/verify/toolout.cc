// Tool outputs: detection from the content, the shared record builder, and the small parsers
// (lspci, ibstat, dcgmi diag, fio JSON). nccl-tests/perftest/NCCL logs: toolout_net.cc;
// nvidia-smi (topo, -q, table, nvlink): toolout_nvsmi.cc. docs/checks.md "Reading outputs".
#include "gpuplan/toolout.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/input_file.h"
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

namespace {

// data/reading_ranges.csv: the plausible range of a reading per unit (compiled in; a unit not listed is not checked).
const std::map<std::string, ReadingRange>& Ranges() {
  static const std::map<std::string, ReadingRange> ranges = [] {
    std::map<std::string, ReadingRange> m;
    auto t = ParseCsv(std::string(EmbeddedData("reading_ranges.csv")), "data/reading_ranges.csv");
    if (!t.ok()) return m;
    for (const auto& row : t->rows) {
      CsvRecord rec(*t, row);
      auto lo = Number(rec.Str("min")), hi = Number(rec.Str("max"));
      if (lo && hi) m[rec.Str("unit")] = {*lo, *hi};
    }
    return m;
  }();
  return ranges;
}

}  // namespace

std::optional<ReadingRange> RangeOf(const std::string& unit) {
  const auto it = Ranges().find(unit);
  if (it == Ranges().end()) return std::nullopt;
  return it->second;
}

Reading& Builder::Add(const std::string& metric, double value, const std::string& unit, int line) {
  const auto range = Ranges().find(unit);
  if (!std::isfinite(value) || (range != Ranges().end() && (value < range->second.min || value > range->second.max))) {
    std::string why = !std::isfinite(value) ? "not a finite number"
                                            : "outside the plausible range " + Num(range->second.min) + ".." + Num(range->second.max) + " " + unit +
                                                  " (data/reading_ranges.csv)";
    Warn(line, metric + " = " + (std::isfinite(value) ? Num(value) : std::string("not a number")) + " " + unit + ": " + why + "; not read");
    scratch_ = Reading{};
    return scratch_;
  }
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

// A warning quotes the text it could not read: cut to a readable length (a line of 1 MB of digits stays a line).
void Builder::Warn(int line, const std::string& message) {
  out_.warnings.push_back({{out_.file, line, ""}, message.size() > 300 ? message.substr(0, 297) + "..." : message});
}

std::string StripMarkdown(const std::string& s) {
  std::string t = s;
  for (;;) {  // "> " quote markers (nested replies repeat them)
    size_t i = 0;
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
    if (i < t.size() && t[i] == '>' && (i + 1 == t.size() || t[i + 1] == ' ')) t = t.substr(std::min(t.size(), i + 2));
    else break;
  }
  if (StartsWith(Trim(t), "```")) return "";
  for (size_t p = t.find("**"); p != std::string::npos; p = t.find("**", p)) t.erase(p, 2);
  return t;
}

std::string StripRankPrefix(const std::string& s) {
  if (auto p = s.find("<stdout>:"); p != std::string::npos && s.find('[') < p) return s.substr(p + 9);
  if (auto p = s.find("<stderr>:"); p != std::string::npos && s.find('[') < p) return s.substr(p + 9);
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  size_t j = i;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  if (j > i && j < s.size() && s[j] == ':' && (j + 1 == s.size() || s[j + 1] == ' ')) return s.substr(j + 1);
  return s;
}

namespace {

struct FailurePattern {
  std::string id, context, match, pattern, severity, what, source;
  std::vector<std::string> kinds;
};

// data/failure_lines.csv (compiled in): the lines each tool prints when its run failed.
const std::vector<FailurePattern>& FailurePatterns() {
  static const std::vector<FailurePattern> patterns = [] {
    std::vector<FailurePattern> v;
    auto t = ParseCsv(std::string(EmbeddedData("failure_lines.csv")), "data/failure_lines.csv");
    if (!t.ok()) return v;
    for (const auto& row : t->rows) {
      CsvRecord rec(*t, row);
      FailurePattern f{rec.Str("id"), rec.Str("context"), rec.Str("match"), rec.Str("pattern"), rec.Str("severity"), rec.Str("what"), rec.Str("source"), {}};
      for (const auto& k : SplitList(rec.Str("kinds"), ',')) f.kinds.push_back(Trim(k));
      if (!f.pattern.empty()) v.push_back(std::move(f));
    }
    return v;
  }();
  return patterns;
}

bool Matches(const FailurePattern& f, const std::string& t, const std::string& kind) {
  if (std::find(f.kinds.begin(), f.kinds.end(), "*") == f.kinds.end() && std::find(f.kinds.begin(), f.kinds.end(), kind) == f.kinds.end()) return false;
  if (!f.context.empty() && !Contains(t, f.context)) return false;
  return f.match == "prefix" ? StartsWith(t, f.pattern) : Contains(t, f.pattern);
}

}  // namespace

void ScanFailureLines(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  const std::string kind = ToString(out.kind);
  for (const auto& l : lines) {
    if (l.text.size() > 4096) continue;  // no tool prints such a line; the parsers warn about it
    const std::string t = Trim(StripRankPrefix(StripMarkdown(l.text)));
    for (const auto& f : FailurePatterns()) {
      if (!Matches(f, t, kind)) continue;
      Reading& r = b.AddState("failure_line", t.size() > 160 ? t.substr(0, 157) + "..." : t, l.number);
      r.context["pattern"] = f.id;
      r.context["severity"] = f.severity;
      r.context["what"] = f.what;
      break;  // one finding per line
    }
  }
}

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

struct PciClass {
  std::string cls, class_name, vendor, vendor_name, name_contains, role;
};

// data/pci_devices.csv (compiled in): the PCI classes and vendors whose links the PCIe checks judge.
const std::vector<PciClass>& PciClasses() {
  static const std::vector<PciClass> classes = [] {
    std::vector<PciClass> v;
    auto t = ParseCsv(std::string(EmbeddedData("pci_devices.csv")), "data/pci_devices.csv");
    if (!t.ok()) return v;
    for (const auto& row : t->rows) {
      CsvRecord rec(*t, row);
      v.push_back({Lower(rec.Str("class")), Lower(rec.Str("class_name")), Lower(rec.Str("vendor")), Lower(rec.Str("vendor_name")),
                   Lower(rec.Str("name_contains")), rec.Str("role")});
    }
    return v;
  }();
  return classes;
}

// "17:00.0 3D controller: NVIDIA Corporation Device 2330" (or with -nn: "3D controller [0302]: ... [10de:2330]") -> "gpu",
// "nic", or "" (switch ports, bridges, storage, BMC NICs: not judged).
std::string PciRole(const std::string& header) {
  const std::string h = Lower(header);
  const size_t colon = h.find(": ", h.find(' '));
  if (colon == std::string::npos) return "";
  const std::string cls = Trim(h.substr(h.find(' ') + 1, colon - h.find(' ') - 1)), rest = h.substr(colon + 2);
  for (const auto& c : PciClasses()) {
    const bool class_ok = StartsWith(cls, c.class_name) || Contains(cls, "[" + c.cls + "]");
    const bool vendor_ok = StartsWith(rest, c.vendor_name) || Contains(rest, "[" + c.vendor + ":");
    if (class_ok && vendor_ok && (c.name_contains.empty() || Contains(rest, c.name_contains))) return c.role;
  }
  return "";
}

// A device header: "17:00.0 ..." or "0000:17:00.0 ..." at the start of a line.
bool IsPciHeader(const std::string& raw) {
  if (raw.empty() || std::isspace(static_cast<unsigned char>(raw[0]))) return false;
  const std::string first = Tokens(raw).empty() ? "" : Tokens(raw)[0];
  const size_t dot = first.rfind('.');
  return dot != std::string::npos && dot >= 5 && first[dot - 3] == ':' && std::count(first.begin(), first.end(), ':') >= 1 &&
         std::all_of(first.begin(), first.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; });
}

}  // namespace

void ParseLspci(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "lspci";
  std::string device, role;
  bool judged = true;
  int skipped = 0, skipped_downgraded = 0, first_skipped = 0;
  std::set<std::string> skipped_devices;
  LinkFields cap;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    // "# lspci -vvv -s 0000:01:00.0 (...)" or a device header "01:00.0 VGA compatible controller: ..."
    if (auto p = t.find(" -s "); StartsWith(t, "#") && p != std::string::npos) {
      auto tok = Tokens(t.substr(p + 4));
      device = tok.empty() ? "" : tok[0];
      cap = {}, judged = true, role.clear();
      continue;
    }
    if (IsPciHeader(l.text)) {
      device = Tokens(t)[0];
      role = PciRole(t);
      judged = !role.empty();
      cap = {};
      continue;
    }
    const bool is_cap = StartsWith(t, "LnkCap:"), is_sta = StartsWith(t, "LnkSta:");
    if (!is_cap && !is_sta) continue;
    if (!judged) {  // a switch port, bridge, storage controller or BMC NIC: its link is not the GPU's or the fabric's
      if (is_sta && skipped_devices.insert(device).second) ++skipped, first_skipped = first_skipped ? first_skipped : l.number;
      if (is_sta && Contains(t, "(downgraded)")) ++skipped_downgraded;
      continue;
    }
    LinkFields f = ReadLinkFields(t);
    if (!f.speed_gt_per_s && !f.width) {
      b.Warn(l.number, "'" + t.substr(0, 7) + "' without Speed or Width: cannot read the link");
      continue;
    }
    auto add = [&](const std::string& metric, double v, const std::string& unit) {
      Reading& r = b.Add(metric, v, unit, l.number);
      if (!device.empty()) r.context["device"] = device;
      r.context["role"] = role.empty() ? "unknown (no device header: a fragment)" : role;
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
      if (Contains(t.substr(t.find("Width")), "(downgraded)")) r->context["lnksta"] = "downgraded";
    }
  }
  if (skipped > 0) {
    Reading& r = b.Add("pcie_links_not_judged", skipped, "count", first_skipped);
    r.context["downgraded"] = std::to_string(skipped_downgraded);
    r.context["why"] = "not a GPU or a fabric NIC by PCI class and vendor (data/pci_devices.csv): switch ports, bridges, storage, BMC NICs";
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
      else b.Warn(port_line, "port " + port + " of " + ca + ": Rate '" + port_fields["Rate"].substr(0, 40) + (port_fields["Rate"].size() > 40 ? "..." : "") + "' is not a number");
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

// ---- dcgmi nvlink --link-status ----

namespace {

// "D D D U ..." (one letter per link: U up, D down, X disabled, _ not supported)
bool IsLinkLetters(const std::vector<std::string>& tok) {
  return !tok.empty() && std::all_of(tok.begin(), tok.end(), [](const std::string& x) { return x == "U" || x == "D" || x == "X" || x == "_"; });
}

}  // namespace

bool LooksLikeDcgmiNvlink(const std::vector<Line>& lines) {
  for (size_t i = 0; i + 1 < lines.size(); ++i)
    if (StartsWith(Trim(lines[i].text), "gpuId ") && IsLinkLetters(Tokens(lines[i + 1].text))) return true;
  return false;
}

void ParseDcgmiNvlink(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  std::string gpu;
  int gpu_line = 0;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (StartsWith(t, "gpuId ")) {
      gpu = Trim(t.substr(6, t.find(':') == std::string::npos ? std::string::npos : t.find(':') - 6));
      gpu_line = l.number;
      continue;
    }
    const auto tok = Tokens(t);
    if (gpu.empty() || !IsLinkLetters(tok)) continue;
    const auto count = [&](const char* c) { return static_cast<double>(std::count(tok.begin(), tok.end(), c)); };
    for (const auto& [metric, letter] : {std::pair{"nvlink_up_links", "U"}, std::pair{"nvlink_down_links", "D"}, std::pair{"nvlink_disabled_links", "X"}}) {
      Reading& r = b.Add(metric, count(letter), "links", gpu_line);
      r.context["gpu"] = gpu;
      r.context["links"] = std::to_string(tok.size());
    }
    gpu.clear();
  }
  // `dcgmi nvlink` and `dcgmi diag` pasted together: read the diag table too.
  if (LooksLikeDcgmi(lines)) ParseDcgmi(lines, out);
  out.tool = out.tool.empty() ? "dcgmi nvlink --link-status" : "dcgmi nvlink --link-status + " + out.tool;
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


// Builds the document value by value, so a JSON cut short keeps everything before the cut.
class PartialJson : public nlohmann::json_sax<nlohmann::json> {
 public:
  nlohmann::json root;
  std::optional<size_t> error_byte;
  std::string error;

  bool null() override { return Put(nullptr); }
  bool boolean(bool v) override { return Put(v); }
  bool number_integer(number_integer_t v) override { return Put(v); }
  bool number_unsigned(number_unsigned_t v) override { return Put(v); }
  bool number_float(number_float_t v, const string_t&) override { return Put(v); }
  bool string(string_t& v) override { return Put(v); }
  bool binary(binary_t&) override { return Put(nullptr); }
  bool start_object(std::size_t) override { return Open(nlohmann::json::object()); }
  bool start_array(std::size_t) override { return Open(nlohmann::json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) override {
    error_byte = byte;
    error = e.what();
    return false;
  }

 private:
  nlohmann::json* Insert(nlohmann::json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    nlohmann::json& top = *stack_.back();
    if (top.is_object()) return &(top[key_] = std::move(v));
    top.push_back(std::move(v));
    return &top.back();
  }
  bool Put(nlohmann::json v) {
    Insert(std::move(v));
    return true;
  }
  bool Open(nlohmann::json v) {
    if (stack_.size() > 256) return false;  // deeper than any fio output: bounded recursion
    stack_.push_back(Insert(std::move(v)));
    return true;
  }
  bool Close() {
    if (!stack_.empty()) stack_.pop_back();
    return true;
  }
  std::vector<nlohmann::json*> stack_;
  std::string key_;
};

// Where the JSON starts: the first line that begins with '{' (a shell prompt or fio's text header may come first).
size_t JsonStart(const std::string& text) {
  if (StartsWith(text, "{")) return 0;
  for (size_t p = text.find('\n'); p != std::string::npos; p = text.find('\n', p + 1)) {
    size_t q = p + 1;
    while (q < text.size() && (text[q] == ' ' || text[q] == '\t')) ++q;
    if (q < text.size() && text[q] == '{') return q;
  }
  return text.find('{');
}

}  // namespace

void ParseFio(const std::string& text, ToolOutput& out) {
  Builder b(out);
  out.tool = "fio";
  const size_t brace = JsonStart(text);
  PartialJson sax;
  nlohmann::json::sax_parse(text.begin() + static_cast<long>(brace), text.end(), &sax, nlohmann::json::input_format_t::json, false);
  nlohmann::json doc = std::move(sax.root);
  if (sax.error_byte) {
    const int line = LineOfOffset(text, brace + (*sax.error_byte > 0 ? *sax.error_byte - 1 : 0));
    if (!doc.is_object()) {
      b.Warn(line, "fio JSON does not parse: " + sax.error + "; nothing read");
      return;
    }
    b.Warn(line, "fio JSON stops here (cut short: the output is truncated); read the values before this line");
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
    if (!job.is_object()) continue;
    const int line = idx < job_lines.size() ? job_lines[idx] : LineOfOffset(text, brace);
    ++idx;
    const nlohmann::json opts = job.value("job options", nlohmann::json::object());
    auto opt = [&](const char* k) {
      std::string v = JsonString(opts, k);
      return v.empty() ? JsonString(global, k) : v;
    };
    int read_sections = 0;
    for (const char* rw : {"read", "write"}) {
      if (!job.contains(rw) || !job[rw].is_object()) continue;
      const auto& d = job[rw];
      auto num = [&](const nlohmann::json& o, const char* k) { return o.is_object() && o.contains(k) && o[k].is_number() ? o[k].get<double>() : 0.0; };
      const double io = num(d, "io_bytes"), bw = num(d, "bw");
      if (io <= 0 && bw <= 0) continue;
      auto ctx = [&](Reading& r) -> Reading& {
        r.context["job"] = JsonString(job, "jobname");
        r.context["rw"] = rw;
        r.context["fio_version"] = version;
        for (const char* k : {"rw", "bs", "iodepth", "numjobs", "filename", "ioengine", "direct"})
          if (std::string v = opt(k); !v.empty()) r.context[std::string(k) == "rw" ? "pattern" : k] = v;
        return r;
      };
      ++read_sections;
      ctx(b.Add("bw_kib_per_s", bw, "KiB/s", line));
      if (d.contains("iops") && d["iops"].is_number()) ctx(b.Add("iops", num(d, "iops"), "IOPS", line));
      // fio >= 3 reports clat_ns; 2.x reports clat in microseconds.
      if (d.contains("clat_ns") && d["clat_ns"].is_object() && d["clat_ns"].contains("mean")) ctx(b.Add("clat_mean_us", num(d["clat_ns"], "mean") / 1000, "us", line)).context["clat_unit"] = "ns (fio 3)";
      else if (d.contains("clat") && d["clat"].is_object() && d["clat"].contains("mean")) ctx(b.Add("clat_mean_us", num(d["clat"], "mean"), "us", line)).context["clat_unit"] = "us (fio 2)";
    }
    if (read_sections == 0)
      b.Warn(line, "fio job '" + JsonString(job, "jobname") + "': no read or write section with data (a direction it did not run is all zeros; "
                   "a section after the cut is missing): no bandwidth read for it");
    if (job.contains("error") && job["error"].is_number() && job["error"].get<double>() != 0) b.Warn(line, "fio job '" + JsonString(job, "jobname") + "' reports error " + JsonString(job, "error"));
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
    case ToolKind::kNvidiaSmiTopoPci: return "nvidia-smi-topo-mp";
    case ToolKind::kDcgmiNvlink: return "dcgmi-nvlink";
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
  if (LooksLikeDcgmiNvlink(lines)) return ToolKind::kDcgmiNvlink;
  if (LooksLikeDcgmi(lines)) return ToolKind::kDcgmiDiag;
  bool p2p = false;
  if (LooksLikeTopo(lines, &p2p)) return p2p ? ToolKind::kNvidiaSmiP2p : IsTopoPciOnly(lines) ? ToolKind::kNvidiaSmiTopoPci : ToolKind::kNvidiaSmiTopo;
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
                              "dcgmi nvlink, NCCL_DEBUG=INFO log): nothing read"});
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
    case ToolKind::kNvidiaSmiTopoPci: ParseTopoPci(lines, out); break;
    case ToolKind::kDcgmiNvlink: ParseDcgmiNvlink(lines, out); break;
  }
  if (out.kind != ToolKind::kUnknown) ScanFailureLines(lines, out);
  if (out.kind != ToolKind::kUnknown && out.readings.empty() && out.warnings.empty())
    out.warnings.push_back({{file, 0, ""}, "recognised as " + ToString(out.kind) + " but no number could be read from it"});
  return out;
}

Result<ToolOutput> ReadToolOutput(const std::string& path) {
  auto text = ReadInputFile(path);  // regular files only, under kMaxInputFileBytes: never a FIFO or /dev/zero
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
