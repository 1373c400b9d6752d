// nvidia-smi: topo -m, topo -p2p, the default table, -q (-d CLOCK,PERFORMANCE,PCIE,ECC,...), nvlink -s
// (docs/checks.md "Reading outputs"; the topo legend is the one nvidia-smi topo -m prints under its matrix).
#include <algorithm>
#include <set>

#include "toolout_internal.h"

namespace gpuplan::toolout {

namespace {

bool IsDeviceName(const std::string& t) {
  auto numbered = [&](const char* p) {
    const size_t n = std::char_traits<char>::length(p);
    return t.size() > n && StartsWith(t, p) && std::all_of(t.begin() + static_cast<long>(n), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  return numbered("GPU") || numbered("NIC") || numbered("mlx5_") || numbered("CPU");
}

bool IsTopoCode(const std::string& v) {
  static const std::set<std::string> kCodes = {"X", "PIX", "PXB", "PHB", "NODE", "SYS", "PSB", "SOC"};
  if (kCodes.count(v)) return true;
  // NV1..NV999: a longer count is garbage, not a link count (warned about, never read as a number)
  return v.size() > 2 && v.size() <= 5 && StartsWith(v, "NV") && std::all_of(v.begin() + 2, v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool IsP2pCode(const std::string& v) {
  static const std::set<std::string> kCodes = {"X", "OK", "CNS", "GNS", "TNS", "NS", "U"};
  return kCodes.count(v) > 0;
}

struct Matrix {
  int header_line = 0;
  std::vector<std::string> columns;  // device columns (GPU0.., NIC0.., mlx5_0..)
  bool abbreviated = false;          // "..." in the header
  struct Row {
    int line;
    std::string name;
    std::vector<std::string> cells;
    std::vector<std::string> rest;   // CPU affinity, NUMA affinity, ...
  };
  std::vector<Row> rows;
  int legend_line = 0;
  std::map<std::string, std::string> nic_names;  // NIC0 -> mlx5_0 (NIC Legend)
};

Matrix ReadMatrix(const std::vector<Line>& lines) {
  Matrix m;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    auto tok = Tokens(t);
    if (tok.empty()) continue;
    if (StartsWith(t, "Legend") || StartsWith(t, "NIC Legend")) {
      if (!m.legend_line) m.legend_line = l.number;
      continue;
    }
    if (m.legend_line) {  // "  NIC0: mlx5_0"
      if (tok.size() == 2 && tok[0].back() == ':' && IsDeviceName(tok[0].substr(0, tok[0].size() - 1))) m.nic_names[tok[0].substr(0, tok[0].size() - 1)] = tok[1];
      continue;
    }
    if (m.columns.empty()) {
      if (tok[0] != "GPU0") continue;
      for (const auto& c : tok) {
        if (c == "...") {
          m.abbreviated = true;
          break;
        }
        if (!IsDeviceName(c)) break;
        m.columns.push_back(c);
      }
      m.header_line = l.number;
      continue;
    }
    if (!IsDeviceName(tok[0])) continue;
    Matrix::Row r{l.number, tok[0], {}, {}};
    for (size_t i = 1; i < tok.size(); ++i) {
      if (r.cells.size() < m.columns.size() && tok[i] != "...") r.cells.push_back(tok[i]);
      else if (tok[i] != "...") r.rest.push_back(tok[i]);
    }
    m.rows.push_back(r);
  }
  return m;
}

// The number after a prefix ("NV18" -> 18, "GPU3" -> 3); -1 when there is none or it is absurdly long.
int Index(const std::string& v, size_t from) {
  int n = 0;
  size_t i = from;
  for (; i < v.size() && i < from + 6 && std::isdigit(static_cast<unsigned char>(v[i])); ++i) n = n * 10 + (v[i] - '0');
  return i == from ? -1 : n;
}

int NvCount(const std::string& v) { return StartsWith(v, "NV") && IsTopoCode(v) ? std::max(0, Index(v, 2)) : 0; }

// PIX < PXB < PHB < NODE < SYS: how far a NIC is from a GPU (§3.5).
int Distance(const std::string& v) {
  static const char* kOrder[] = {"X", "PIX", "PSB", "PXB", "PHB", "NODE", "SOC", "SYS"};
  for (int i = 0; i < 8; ++i)
    if (v == kOrder[i]) return i;
  return NvCount(v) > 0 ? 0 : 99;
}

}  // namespace

bool LooksLikeTopo(const std::vector<Line>& lines, bool* p2p) {
  const Matrix m = ReadMatrix(lines);
  if (m.columns.empty() || m.rows.empty()) return false;
  int topo = 0, p2pc = 0;
  for (const auto& r : m.rows)
    for (const auto& c : r.cells) topo += IsTopoCode(c) && c != "X", p2pc += IsP2pCode(c) && c != "X";
  *p2p = p2pc > topo;
  return topo + p2pc > 0;
}

// `nvidia-smi topo -mp` prints the PCIe-only matrix: the command line says so (a paste usually keeps it).
bool IsTopoPciOnly(const std::vector<Line>& lines) {
  for (const auto& l : lines) {
    const auto tok = Tokens(l.text);
    for (size_t i = 0; i + 1 < tok.size(); ++i)
      if (tok[i] == "topo" && (tok[i + 1] == "-mp" || tok[i + 1] == "--matrix_pci")) return true;
  }
  return false;
}

namespace {

void ParseTopoMatrix(const std::vector<Line>& lines, ToolOutput& out, bool pci_only);

}  // namespace

void ParseTopo(const std::vector<Line>& lines, ToolOutput& out) { ParseTopoMatrix(lines, out, false); }

void ParseTopoPci(const std::vector<Line>& lines, ToolOutput& out) { ParseTopoMatrix(lines, out, true); }

namespace {

void ParseTopoMatrix(const std::vector<Line>& lines, ToolOutput& out, bool pci_only) {
  Builder b(out);
  out.tool = pci_only ? "nvidia-smi topo -mp" : "nvidia-smi topo -m";
  const Matrix m = ReadMatrix(lines);
  std::vector<std::string> gpu_cols, nic_cols;
  for (const auto& c : m.columns) (StartsWith(c, "GPU") ? gpu_cols : nic_cols).push_back(c);
  if (m.abbreviated) b.Warn(m.header_line, "'...' in the header: columns left out of this output (abbreviated); read the columns shown");
  std::map<std::string, int> pair_types;
  int nv_pairs = 0, pairs = 0, nv_max = 0, nv_min = 0, gpu_rows = 0, last_row_line = m.header_line;
  std::set<std::string> numa;
  std::map<std::string, std::pair<int, std::string>> first_line_of_type;
  for (const auto& r : m.rows) {
    last_row_line = r.line;
    for (const auto& c : r.cells)
      if (!IsTopoCode(c)) b.Warn(r.line, r.name + ": '" + c + "' is not a topo -m code (X, NV#, PIX, PXB, PHB, NODE, SYS)");
    if (r.cells.size() < m.columns.size() && !m.abbreviated)
      b.Warn(r.line, r.name + ": " + std::to_string(r.cells.size()) + " cells for " + std::to_string(m.columns.size()) + " columns (cut short?)");
    if (!StartsWith(r.name, "GPU")) continue;
    ++gpu_rows;
    const int gi = Index(r.name, 3);
    if (r.rest.size() >= 2 && r.rest[1] != "N/A") numa.insert(r.rest[1]);
    int best_nic = 99;
    std::string best_nic_name, best_code;
    for (size_t j = 0; j < r.cells.size() && j < m.columns.size(); ++j) {
      const std::string& col = m.columns[j];
      const std::string& v = r.cells[j];
      if (StartsWith(col, "GPU")) {
        if (Index(col, 3) <= gi) continue;  // each pair once (upper triangle)
        ++pairs;
        ++pair_types[v];
        if (!first_line_of_type.count(v)) first_line_of_type[v] = {r.line, r.name + "-" + col};
        if (int nv = NvCount(v)) {
          ++nv_pairs;
          nv_max = std::max(nv_max, nv);
          nv_min = nv_min == 0 ? nv : std::min(nv_min, nv);
        }
      } else if (Distance(v) < best_nic) {
        best_nic = Distance(v), best_nic_name = col, best_code = v;
      }
    }
    if (!nic_cols.empty() && !best_code.empty()) {
      Reading& a = b.AddState("gpu_nic_affinity", best_code, r.line);
      a.context["gpu"] = std::to_string(gi);
      a.context["nic"] = m.nic_names.count(best_nic_name) ? m.nic_names.at(best_nic_name) : best_nic_name;
    }
  }
  b.Add("gpu_count", static_cast<double>(gpu_cols.size()), "count", m.header_line);
  if (!nic_cols.empty()) b.Add("nic_count", static_cast<double>(nic_cols.size()), "count", m.header_line);
  if (gpu_rows < static_cast<int>(gpu_cols.size()))
    b.Warn(last_row_line, "the header names " + std::to_string(gpu_cols.size()) + " GPUs but only " + std::to_string(gpu_rows) +
                              " GPU rows follow: the output stops after this line (cut short); pairs read from the rows shown");
  if (pci_only) {  // -mp never shows NVLink: no NVLink reading from it
    if (!numa.empty()) b.Add("numa_nodes", static_cast<double>(numa.size()), "count", m.header_line);
    b.Warn(m.header_line, "topo -mp shows PCIe paths only: NVLink is not visible in it (run nvidia-smi topo -m for NV#)");
    return;
  }
  Reading& nv = b.Add("nvlink_count", nv_max, "links", nv_max > 0 ? first_line_of_type["NV" + std::to_string(nv_max)].first : m.header_line);
  nv.context["pairs"] = std::to_string(pairs);
  nv.context["nvlink_pairs"] = std::to_string(nv_pairs);
  if (nv_pairs > 0 && nv_min != nv_max) nv.context["nvlink_min"] = std::to_string(nv_min);
  b.Add("gpu_pairs_without_nvlink", pairs - nv_pairs, "count", m.header_line).context["pairs"] = std::to_string(pairs);
  for (const auto& [type, n] : pair_types) {
    Reading& r = b.Add("gpu_pair_link", n, "pairs", first_line_of_type[type].first);
    r.text = type;
    r.context["first_pair"] = first_line_of_type[type].second;
  }
  if (!numa.empty()) b.Add("numa_nodes", static_cast<double>(numa.size()), "count", m.header_line);
}

}  // namespace

void ParseP2p(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "nvidia-smi topo -p2p";
  for (const auto& l : lines)
    if (auto p = l.text.find("-p2p"); p != std::string::npos) {
      auto tok = Tokens(l.text.substr(p + 4));
      if (!tok.empty()) out.tool += " " + tok[0];
    }
  const Matrix m = ReadMatrix(lines);
  int ok = 0, not_ok = 0, first_bad = 0;
  std::map<std::string, int> codes;
  for (const auto& r : m.rows) {
    const int gi = Index(r.name, 3);
    for (size_t j = 0; j < r.cells.size() && j < m.columns.size(); ++j) {
      const std::string& v = r.cells[j];
      if (!IsP2pCode(v)) {
        b.Warn(r.line, r.name + ": '" + v + "' is not a topo -p2p code (X, OK, CNS, GNS, TNS, NS, U)");
        continue;
      }
      if (Index(m.columns[j], 3) <= gi) continue;
      if (v == "OK") ++ok;
      else ++not_ok, ++codes[v], first_bad = first_bad ? first_bad : r.line;
    }
  }
  b.Add("gpu_count", static_cast<double>(m.columns.size()), "count", m.header_line);
  b.Add("p2p_pairs_ok", ok, "pairs", m.header_line);
  Reading& bad = b.Add("p2p_pairs_not_ok", not_ok, "pairs", first_bad ? first_bad : m.header_line);
  for (const auto& [c, n] : codes) bad.text += (bad.text.empty() ? "" : ", ") + c + " x" + std::to_string(n);
  if (static_cast<int>(m.rows.size()) < static_cast<int>(m.columns.size()))
    b.Warn(m.rows.empty() ? m.header_line : m.rows.back().line, "fewer rows than GPU columns: cut short after this line");
}

// ---- the default nvidia-smi table ----

namespace {

// "| N/A   29C    P0   ERR! / 250W |": the second line of a GPU in the table (fan, temperature, perf state).
bool IsSmiStateRow(const std::string& t) {
  if (!StartsWith(t, "|")) return false;
  const auto tok = Tokens(t.substr(1, t.find('|', 1) == std::string::npos ? std::string::npos : t.find('|', 1) - 1));
  return tok.size() >= 3 && tok[1].size() >= 2 && tok[1].back() == 'C' && Number(tok[1].substr(0, tok[1].size() - 1)) && tok[2].size() >= 2 &&
         tok[2][0] == 'P' && Integer(tok[2].substr(1));
}

}  // namespace

// The header line, or (a fragment pasted without it) a GPU row followed by its state row.
bool LooksLikeNvidiaSmiTable(const std::vector<Line>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (Contains(lines[i].text, "NVIDIA-SMI") && Contains(lines[i].text, "Driver Version")) return true;
    if (i > 0 && IsSmiStateRow(Trim(lines[i].text)) && StartsWith(Trim(lines[i - 1].text), "|")) {
      const auto prev = Tokens(Trim(lines[i - 1].text).substr(1));
      if (!prev.empty() && Integer(prev[0])) return true;
    }
  }
  return false;
}

void ParseNvidiaSmiTable(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "nvidia-smi";
  std::string driver, cuda;
  int gpus = 0, first_gpu_line = 0;
  bool processes = false;
  std::map<std::string, std::string> current;  // index, name, bus_id of the GPU whose second line comes next
  int pending_line = 0;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (auto p = t.find("Driver Version:"); p != std::string::npos) {
      driver = Tokens(t.substr(p + 15)).empty() ? "" : Tokens(t.substr(p + 15))[0];
      if (auto q = t.find("CUDA Version:"); q != std::string::npos) cuda = Tokens(t.substr(q + 13)).empty() ? "" : Tokens(t.substr(q + 13))[0];
      continue;
    }
    if (Contains(t, "Processes:")) processes = true;
    if (processes || !StartsWith(t, "|")) continue;
    auto cells = SplitList(t.substr(1), '|');
    if (cells.size() < 3) continue;
    auto c0 = Tokens(cells[0]);
    if (c0.size() >= 2 && Integer(c0[0]) && !Contains(cells[0], "GPU  Name")) {
      current.clear();
      current["gpu"] = c0[0];
      std::string name;
      for (size_t i = 1; i + 1 < c0.size(); ++i) name += (name.empty() ? "" : " ") + c0[i];
      current["gpu_name"] = name;
      auto c1 = Tokens(cells[1]);
      if (!c1.empty()) current["bus_id"] = c1[0];
      auto c2 = Tokens(cells[2]);
      if (!c2.empty())
        if (auto v = Number(c2[0])) b.Add("ecc_uncorrectable_volatile", *v, "count", l.number).context = current;
      if (gpus++ == 0) first_gpu_line = l.number;
      pending_line = l.number;
      continue;
    }
    if (pending_line && c0.size() >= 3 && (StartsWith(c0[1], "") && c0[1].back() == 'C')) {  // "N/A 32C P0 69W / 300W"
      auto add = [&](const std::string& m, double v, const std::string& u) { b.Add(m, v, u, l.number).context = current; };
      if (auto v = Number(c0[1].substr(0, c0[1].size() - 1))) add("temperature_c", *v, "C");
      b.AddState("perf_state", c0[2], l.number).context = current;
      for (size_t i = 3; i < c0.size(); ++i) {
        if (c0[i] == "ERR!") b.Warn(l.number, "GPU " + current["gpu"] + ": power reads 'ERR!' (nvidia-smi could not read the sensor): not read");
        if (c0[i].back() != 'W') continue;
        auto v = Number(c0[i].substr(0, c0[i].size() - 1));
        if (!v) continue;
        const bool cap = i > 3 && c0[i - 1] == "/";
        add(cap ? "power_cap_w" : "power_w", *v, "W");
      }
      auto c1 = Tokens(cells[1]);  // "437MiB / 81920MiB"
      if (c1.size() >= 3 && c1[0].size() > 3 && c1[2].size() > 3) {
        if (auto v = Number(c1[0].substr(0, c1[0].size() - 3))) add("memory_used_mib", *v, "MiB");
        if (auto v = Number(c1[2].substr(0, c1[2].size() - 3))) add("memory_total_mib", *v, "MiB");
      }
      auto c2 = Tokens(cells[2]);  // "100% Default"
      if (!c2.empty() && c2[0].back() == '%')
        if (auto v = Number(c2[0].substr(0, c2[0].size() - 1))) add("gpu_util_pct", *v, "%");
      pending_line = 0;
    }
  }
  if (!driver.empty()) b.AddState("driver_version", driver, 0);
  if (!cuda.empty()) b.AddState("cuda_version", cuda, 0);
  b.Add("gpu_count", gpus, "count", first_gpu_line);
  if (pending_line) b.Warn(pending_line, "GPU row without its second line (temperature, power, memory): cut short after it");
}

// ---- nvidia-smi -q ----

namespace {

int Indent(const std::string& s) {
  int n = 0;
  for (char c : s) {
    if (c == ' ') ++n;
    else if (c == '\t') n += 4;
    else break;
  }
  return n;
}

}  // namespace

// The log header or a section only -q prints; a fragment: a -q section name ("Clocks", "Max Clocks",
// "Power Readings", "Temperature", ...) with at least two of its "Key : value" lines.
bool LooksLikeNvidiaSmiQuery(const std::vector<Line>& lines) {
  static const std::set<std::string> kSections = {"Clocks", "Max Clocks", "Power Readings", "Temperature", "FB Memory Usage", "Applications Clocks",
                                                  "Default Applications Clocks", "Max Customer Boost Clocks", "Utilization", "GPU Power Readings"};
  int kv_after_section = -1;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (Contains(t, "NVSMI LOG") || StartsWith(t, "Clocks Throttle Reasons") || StartsWith(t, "Clocks Event Reasons") ||
        t == "Link Width" || t == "PCIe Generation" || StartsWith(t, "Retired Pages") || StartsWith(t, "ECC Errors"))
      return true;
    if (kSections.count(t)) kv_after_section = 0;
    else if (kv_after_section >= 0 && Contains(t, " : ") && Indent(l.text) > 0 && ++kv_after_section >= 2) return true;
  }
  return false;
}

namespace {

bool IsThermalOrHw(const std::string& reason) {
  return reason == "HW Slowdown" || reason == "HW Thermal Slowdown" || reason == "HW Power Brake Slowdown" || reason == "SW Thermal Slowdown";
}

}  // namespace

namespace {

struct Throttle {
  int line = 0;
  std::vector<std::string> active;  // reasons that lower the clock (not Idle, not a clock setting)
  int hw = 0;                       // thermal or hardware slowdowns among them
  bool idle = false;
};

// What the -q parser carries from line to line: the section path, the GPU, the per-GPU summaries.
struct QueryState {
  std::vector<std::pair<int, std::string>> stack;  // (indent, section)
  std::string gpu;
  std::map<std::string, Throttle> throttle;        // per GPU
  double ecc_total = -1;
  int ecc_line = 0;
  bool InPath(const char* s) const {
    for (const auto& [i, name] : stack)
      if (name == s) return true;
    return false;
  }
};

struct QueryField {
  std::string key, value, parent;
  int line = 0;
  std::string First() const { return Tokens(value).empty() ? "" : Tokens(value)[0]; }  // "405 MHz" -> "405"
};

Reading& ForGpu(Reading& r, const QueryState& st) {
  if (!st.gpu.empty()) r.context["gpu"] = st.gpu;
  return r;
}

// Clocks, PCIe, performance state, temperature, memory; false when the field is none of them.
bool ReadQueryState(const QueryField& f, Builder& b, const QueryState& st) {
  auto mhz = [&](const std::string& metric) {
    if (auto v = Number(f.First())) ForGpu(b.Add(metric, *v, "MHz", f.line), st);
    return true;
  };
  const bool gsm = f.key == "Graphics" || f.key == "SM" || f.key == "Memory";
  if (f.key == "Attached GPUs") {
    if (auto v = Number(f.value)) b.Add("gpu_count", *v, "count", f.line);
  } else if (f.key == "Driver Version") {
    b.AddState("driver_version", f.value, f.line);
  } else if (f.key == "Performance State") {
    ForGpu(b.AddState("perf_state", f.value, f.line), st);
  } else if (f.parent == "Clocks" && gsm) {
    return mhz("clock_" + Lower(f.key) + "_mhz");
  } else if (f.parent == "Max Clocks" && gsm) {
    return mhz("clock_" + Lower(f.key) + "_max_mhz");
  } else if (f.parent == "Applications Clocks" && (f.key == "Graphics" || f.key == "Memory")) {
    return mhz("clock_app_" + Lower(f.key) + "_mhz");
  } else if (f.parent == "SM Clock Samples" && f.key == "Avg") {
    return mhz("clock_sm_avg_mhz");
  } else if (f.parent == "Link Width" && (f.key == "Current" || f.key == "Max")) {
    if (auto v = Number(f.value.substr(0, f.value.find('x')))) ForGpu(b.Add(f.key == "Max" ? "pcie_width_max" : "pcie_width", *v, "lanes", f.line), st);
  } else if (f.parent == "PCIe Generation" && (f.key == "Current" || f.key == "Max")) {
    if (auto v = Number(f.value)) ForGpu(b.Add(f.key == "Max" ? "pcie_gen_max" : "pcie_gen", *v, "gen", f.line), st);
  } else if (f.key == "GPU Current Temp") {
    if (auto v = Number(f.First())) ForGpu(b.Add("temperature_c", *v, "C", f.line), st);
  } else if (f.parent == "FB Memory Usage" && f.key == "Total") {
    if (auto v = Number(f.First())) ForGpu(b.Add("memory_total_mib", *v, "MiB", f.line), st);
  } else {
    return false;
  }
  return true;
}

// Throttle/event reasons, ECC, retired pages, remapped rows.
void ReadQueryHealth(const QueryField& f, Builder& b, QueryState& st) {
  if (st.InPath("Clocks Throttle Reasons") || st.InPath("Clocks Event Reasons")) {
    Throttle& th = st.throttle[st.gpu];
    if (!th.line) th.line = f.line;
    if (f.value != "Active") return;
    if (f.key == "Idle") th.idle = true;
    else if (f.key != "Applications Clocks Setting" && f.key != "Display Clock Setting") th.active.push_back(f.key);
    if (IsThermalOrHw(f.key)) ++th.hw;
  } else if (st.InPath("ECC Errors") && (Contains(f.key, "Uncorrectable") || (f.key == "Total" && st.InPath("Double Bit")))) {
    if (auto v = Number(f.value)) st.ecc_total = std::max(0.0, st.ecc_total) + *v, st.ecc_line = st.ecc_line ? st.ecc_line : f.line;
  } else if (st.InPath("Retired Pages") && (Contains(f.key, "Single Bit") || Contains(f.key, "Double Bit") || Contains(f.key, "Pending"))) {
    const std::string v = Tokens(f.value).empty() ? f.value : f.First();
    if (Contains(f.key, "Pending")) ForGpu(b.Add("retired_pages_pending", v == "Yes", "bool", f.line), st);
    else if (auto n = Number(v)) ForGpu(b.Add(Contains(f.key, "Single") ? "retired_pages_sbe" : "retired_pages_dbe", *n, "count", f.line), st);
  } else if (st.InPath("Remapped Rows") && (f.key == "Pending" || Contains(f.key, "Uncorrectable"))) {
    if (f.key == "Pending") ForGpu(b.Add("remapped_rows_pending", f.value == "Yes", "bool", f.line), st);
    else if (auto n = Number(f.value)) ForGpu(b.Add("remapped_rows_uncorrectable", *n, "count", f.line), st);
  }
}

// The per-GPU throttle summary, the ECC total, and each current PCIe value's capability (cap_*).
void AddQuerySummary(Builder& b, const QueryState& st, ToolOutput& out) {
  for (const auto& [g, th] : st.throttle) {
    std::string names;
    for (const auto& n : th.active) names += (names.empty() ? "" : ", ") + n;
    Reading& r = b.Add("throttle_reasons_active", static_cast<double>(th.active.size()), "count", th.line);
    r.text = names.empty() ? "none" : names;
    if (!g.empty()) r.context["gpu"] = g;
    if (th.idle) r.context["idle"] = "Active (no work running: clocks are low by design; measure under load)";
    Reading& h = b.Add("throttle_thermal_or_hw_active", th.hw, "count", th.line);
    if (!g.empty()) h.context["gpu"] = g;
  }
  if (st.ecc_total >= 0) b.Add("ecc_uncorrectable", st.ecc_total, "count", st.ecc_line);
  for (auto& r : out.readings) {
    const char* cap = r.metric == "pcie_width" ? "pcie_width_max" : r.metric == "pcie_gen" ? "pcie_gen_max" : nullptr;
    if (!cap) continue;
    for (const auto& m : out.readings)
      if (m.metric == cap && m.context.count("gpu") == r.context.count("gpu") && (!m.context.count("gpu") || m.context.at("gpu") == r.context.at("gpu")))
        r.context[r.metric == "pcie_width" ? "cap_width" : "cap_gen"] = Num(m.value);
  }
}

}  // namespace

void ParseNvidiaSmiQuery(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "nvidia-smi -q";
  QueryState st;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (t.empty() || StartsWith(t, "$") || StartsWith(t, "=")) continue;
    const int ind = Indent(l.text);
    while (!st.stack.empty() && st.stack.back().first >= ind) st.stack.pop_back();
    const auto colon = t.find(" : ");
    if (colon == std::string::npos && t.back() != ':') {  // a section ("Clocks") or a GPU ("GPU 0000:00:04.0")
      if (StartsWith(t, "GPU ") && ind == 0) st.gpu = Trim(t.substr(4)), st.stack.clear();
      else st.stack.push_back({ind, t});
      continue;
    }
    QueryField f{Trim(t.substr(0, colon == std::string::npos ? t.size() - 1 : colon)), colon == std::string::npos ? "" : Trim(t.substr(colon + 3)),
                 st.stack.empty() ? "" : st.stack.back().second, l.number};
    if (ind > 0 && st.stack.empty() && st.gpu.empty() && (f.key == "Current" || f.key == "Max")) {
      b.Warn(l.number, "'" + f.key + " : " + f.value + "' without its section (the output starts mid-record): not read");
      continue;
    }
    if (!ReadQueryState(f, b, st)) ReadQueryHealth(f, b, st);
  }
  AddQuerySummary(b, st, out);
}

// ---- nvidia-smi nvlink -s ----

bool LooksLikeNvlinkStatus(const std::vector<Line>& lines) {
  bool gpu = false;
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (StartsWith(t, "GPU ") && Contains(t, "(UUID:")) gpu = true;
    if (gpu && StartsWith(t, "Link ") && (Contains(t, "GB/s") || Contains(t, "inactive"))) return true;
    if (gpu && StartsWith(t, "NVML:") && Contains(t, "NVLink")) return true;  // "NVML: Unable to retrieve NVLink information as all links are inactive"
  }
  return false;
}

void ParseNvlinkStatus(const std::vector<Line>& lines, ToolOutput& out) {
  Builder b(out);
  out.tool = "nvidia-smi nvlink -s";
  std::string gpu, name;
  int gpu_line = 0, active = 0, inactive = 0;
  bool all_inactive = false;
  double total = 0, per_link = 0;
  auto flush = [&]() {
    if (gpu.empty()) return;
    auto ctx = [&](Reading& r) -> Reading& {
      r.context["gpu"] = gpu, r.context["gpu_name"] = name;
      return r;
    };
    if (!all_inactive) ctx(b.Add("nvlink_active_links", active, "links", gpu_line));
    if (!all_inactive) ctx(b.Add("nvlink_inactive_links", inactive, "links", gpu_line));
    else ctx(b.Add("nvlink_active_links", 0, "links", gpu_line)).context["note"] = "NVML: all links are inactive";
    if (all_inactive) {
      all_inactive = false;
      active = inactive = 0, total = per_link = 0;
      return;
    }
    ctx(b.Add("nvlink_total_gb_per_s", total, "GB/s", gpu_line));
    if (active > 0) ctx(b.Add("nvlink_link_gb_per_s", per_link, "GB/s", gpu_line));
    active = inactive = 0, total = per_link = 0;
  };
  for (const auto& l : lines) {
    const std::string t = Trim(l.text);
    if (StartsWith(t, "GPU ") && Contains(t, ":")) {
      flush();
      gpu = Trim(t.substr(4, t.find(':') - 4));
      name = Trim(t.substr(t.find(':') + 1, t.find("(UUID") == std::string::npos ? std::string::npos : t.find("(UUID") - t.find(':') - 1));
      gpu_line = l.number;
      continue;
    }
    if (StartsWith(t, "NVML:") && Contains(t, "all links are inactive")) {
      all_inactive = true;
      continue;
    }
    if (!StartsWith(t, "Link ")) continue;
    const std::string v = Trim(t.substr(t.find(':') + 1));
    if (Contains(v, "inactive")) {
      ++inactive;
      continue;
    }
    auto tok = Tokens(v);
    auto n = tok.empty() ? std::nullopt : Number(tok[0]);
    if (!n) {
      b.Warn(l.number, "link speed '" + v + "' is not a number");
      continue;
    }
    ++active;
    total += *n;
    per_link = *n;
  }
  flush();
}

}  // namespace gpuplan::toolout
