// `gpuplan probe`: what the machine is (sysfs, procfs, nvidia-smi) and what it does (fio, a CPU
// data-loader workload). Each reader is one stage that fills its part of MachineFacts or adds a gap.
#include "gpuplan/probe.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"
#include "gpuplan/report.h"

namespace gpuplan {

namespace {

std::string Trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  s.erase(s.find_last_not_of(ws) + 1);
  return s;
}

// The first line of a sysfs attribute, trimmed; nullopt when it cannot be read.
std::optional<std::string> Attr(Env& env, const std::string& path) {
  auto t = env.ReadFile(path);
  if (!t.ok()) return std::nullopt;
  std::string s = *t;
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return Trim(s);
}

std::optional<int64_t> AttrInt(Env& env, const std::string& path) {
  auto a = Attr(env, path);
  if (!a || a->empty()) return std::nullopt;
  auto v = ParseInteger(*a, {path, 0, ""}, INT64_MIN / 2, INT64_MAX / 2);
  if (!v.ok()) return std::nullopt;
  return *v;
}

// "400 Gb/sec (4X NDR)" -> 400, "16.0 GT/s PCIe" -> 16, "8 GT/s" -> 8; 0 when there is no number.
double LeadingNumber(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return 0;
  auto v = ParseDecimal(s.substr(0, std::min<size_t>(i, 24)), {});  // 24 digits: past any rate, short of overflow
  return v.ok() && *v < 1e9 ? *v : 0;
}

// "MemTotal:       16303716 kB" -> bytes; nullopt when the value is not a plausible kB count
// ("MemTotal: abc", a negative or 1e30 value): such a value is not measured, never 0 bytes.
std::optional<int64_t> MemTotalBytes(const std::string& meminfo) {
  const auto pos = meminfo.find("MemTotal:");
  if (pos == std::string::npos) return std::nullopt;
  std::string v = Trim(meminfo.substr(pos + 9, meminfo.find('\n', pos) == std::string::npos ? std::string::npos
                                                                                           : meminfo.find('\n', pos) - pos - 9));
  if (v.size() > 3 && v.substr(v.size() - 3) == " kB") v = Trim(v.substr(0, v.size() - 3));
  auto kb = ParseInteger(v, {}, 1, int64_t{1} << 40);  // up to 1 PiB
  if (!kb.ok()) return std::nullopt;
  return *kb * 1024;
}

std::vector<std::string> ListOrEmpty(Env& env, const std::string& path) {
  auto l = env.ListDir(path);
  return l.ok() ? *l : std::vector<std::string>{};
}

// ---- stages ---------------------------------------------------------------------------------

void ReadHostname(Env& env, MachineFacts& f) {
  auto h = Attr(env, "/proc/sys/kernel/hostname");
  if (h && !h->empty()) f.hostname = *h;
  else {
    auto e = Attr(env, "/etc/hostname");
    if (e && !e->empty()) f.hostname = *e;
    else f.gaps.push_back({"hostname", "neither /proc/sys/kernel/hostname nor /etc/hostname could be read"});
  }
}

void ReadCpu(Env& env, MachineFacts& f) {
  auto text = env.ReadFile("/proc/cpuinfo");
  if (!text.ok()) {
    f.gaps.push_back({"cpu", "/proc/cpuinfo could not be read"});
    return;
  }
  std::istringstream in(*text);
  std::string line, physical = "0";
  std::set<std::string> sockets;
  std::set<std::pair<std::string, std::string>> cores;
  int threads = 0;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(line.substr(0, colon)), value = Trim(line.substr(colon + 1));
    if (key == "processor") ++threads, physical = "0";
    else if (key == "model name" && f.cpu_model.empty()) f.cpu_model = value;
    else if (key == "physical id") physical = value, sockets.insert(value);
    else if (key == "core id") cores.insert({physical, value});
  }
  if (cores.empty()) {  // ARM kernels: no 'physical id' / 'core id' in cpuinfo; sysfs topology has them
    for (const auto& c : ListOrEmpty(env, "/sys/devices/system/cpu")) {
      if (c.size() < 4 || c.rfind("cpu", 0) != 0 || !std::isdigit(static_cast<unsigned char>(c[3]))) continue;
      const std::string t = "/sys/devices/system/cpu/" + c + "/topology/";
      auto pkg = Attr(env, t + "physical_package_id"), core = Attr(env, t + "core_id");
      if (!pkg || !core) continue;
      sockets.insert(*pkg);
      cores.insert({*pkg, *core});
    }
  }
  f.cpu_threads = threads;
  f.cpu_sockets = sockets.empty() ? (threads > 0 ? 1 : 0) : static_cast<int>(sockets.size());
  f.cpu_cores = cores.empty() ? threads : static_cast<int>(cores.size());
  if (f.cpu_model.empty()) f.gaps.push_back({"cpu model", "/proc/cpuinfo has no 'model name' line"});
  if (cores.empty() && threads > 0)
    f.gaps.push_back({"cpu cores", "neither /proc/cpuinfo 'core id' lines nor sysfs cpu topology: cores counted as threads"});
  auto gov = Attr(env, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  if (gov && !gov->empty()) f.governor = *gov;
  else
    f.gaps.push_back({"governor", "no /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor (no cpufreq driver: "
                                  "a VM, or frequency managed by firmware)"});
}

void ReadNuma(Env& env, MachineFacts& f) {
  // hwloc first (issue 11: "NUMA layout (hwloc)"); the node folders read directly when hwloc cannot.
  if (auto topo = env.Topology(); topo.ok()) {
    f.numa = topo->numa;
    f.numa_source = topo->reader;
    f.hwloc_packages = topo->packages, f.hwloc_cores = topo->cores, f.hwloc_pus = topo->pus;
    return;
  } else {
    f.hwloc_error = topo.status().ToString();
  }
  auto names = env.ListDir("/sys/devices/system/node");
  if (!names.ok()) {
    f.gaps.push_back({"numa", "no /sys/devices/system/node (kernel without NUMA support)"});
    return;
  }
  for (const auto& n : *names) {
    if (n.rfind("node", 0) != 0 || n.size() == 4 || !std::isdigit(static_cast<unsigned char>(n[4]))) continue;
    NumaNode node;
    node.id = std::atoi(n.c_str() + 4);
    const std::string dir = "/sys/devices/system/node/" + n;
    node.cpulist = Attr(env, dir + "/cpulist").value_or("");
    if (auto mi = env.ReadFile(dir + "/meminfo"); mi.ok()) {
      // "Node 0 MemTotal:  ... kB": the same field after the node prefix.
      if (auto bytes = MemTotalBytes(*mi)) node.mem_bytes = *bytes;
      else f.gaps.push_back({"numa " + n + " memory", dir + "/meminfo has no readable MemTotal"});
    }
    f.numa.push_back(node);
  }
  std::sort(f.numa.begin(), f.numa.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  if (f.numa.empty()) f.gaps.push_back({"numa", "/sys/devices/system/node lists no nodeN"});
  else f.numa_source = "sysfs";
}

void ReadMemory(Env& env, MachineFacts& f) {
  auto mi = env.ReadFile("/proc/meminfo");
  size_t pos = mi.ok() ? mi->find("MemTotal:") : std::string::npos;
  if (pos == std::string::npos) {
    f.gaps.push_back({"ram", "no MemTotal in /proc/meminfo"});
    return;
  }
  auto bytes = MemTotalBytes(*mi);
  if (!bytes) {
    f.gaps.push_back({"ram", "/proc/meminfo: MemTotal is not a kB count ('" + Trim(mi->substr(pos + 9, 40)).substr(0, 40) + "')"});
    return;
  }
  f.ram_bytes = *bytes;
}

void ReadDisks(Env& env, MachineFacts& f) {
  auto names = env.ListDir("/sys/block");
  if (!names.ok()) {
    f.gaps.push_back({"disks", "no /sys/block"});
    return;
  }
  for (const auto& n : *names) {
    if (n.rfind("loop", 0) == 0 || n.rfind("ram", 0) == 0 || n.rfind("zram", 0) == 0) continue;
    auto sectors = AttrInt(env, "/sys/block/" + n + "/size");  // 512-byte units whatever the device's sector size
    if (!sectors || *sectors <= 0) continue;
    f.disks.push_back({n, *sectors * 512, AttrInt(env, "/sys/block/" + n + "/queue/rotational").value_or(0) == 1});
  }
  if (f.disks.empty()) f.gaps.push_back({"disks", "no block device with a size in /sys/block"});
}

// PCI address from a device folder's uevent ("PCI_SLOT_NAME=0000:18:00.0"); "" for non-PCI devices.
std::string PciSlot(Env& env, const std::string& device_dir) {
  auto ue = env.ReadFile(device_dir + "/uevent");
  if (!ue.ok()) return "";
  auto pos = ue->find("PCI_SLOT_NAME=");
  if (pos == std::string::npos) return "";
  return Trim(ue->substr(pos + 14, ue->find('\n', pos) - pos - 14));
}

void ReadNics(Env& env, MachineFacts& f) {
  auto names = env.ListDir("/sys/class/net");
  if (!names.ok()) {
    f.gaps.push_back({"nics", "no /sys/class/net"});
    return;
  }
  for (const auto& n : *names) {
    const std::string dir = "/sys/class/net/" + n;
    if (n == "lo" || !env.ListDir(dir + "/device").ok()) continue;  // virtual: no device behind it
    NicInfo nic{n, Attr(env, dir + "/operstate").value_or("unknown"), std::nullopt, PciSlot(env, dir + "/device")};
    auto speed = AttrInt(env, dir + "/speed");
    if (speed && *speed > 0) nic.speed_mbit_per_s = *speed;
    else
      f.gaps.push_back({"nic " + n + " speed", speed ? "the driver reports " + std::to_string(*speed) +
                                                             " (no link speed: a virtual NIC, or the link is down)"
                                                       : "the driver reports no speed (link down or not supported)"});
    f.nics.push_back(nic);
  }
  if (f.nics.empty()) f.gaps.push_back({"nics", "no physical network interface in /sys/class/net"});
}

void ReadRdma(Env& env, MachineFacts& f) {
  auto devs = env.ListDir("/sys/class/infiniband");
  if (!devs.ok() || devs->empty()) {
    f.gaps.push_back({"rdma", "no RDMA here: /sys/class/infiniband is absent or empty (no InfiniBand/RoCE device, "
                              "or its driver is not loaded)"});
    return;
  }
  for (const auto& d : *devs) {
    const std::string ports_dir = "/sys/class/infiniband/" + d + "/ports";
    for (const auto& p : ListOrEmpty(env, ports_dir)) {
      RdmaPort port;
      port.device = d;
      port.port = std::atoi(p.c_str());
      port.rate_text = Attr(env, ports_dir + "/" + p + "/rate").value_or("");
      port.rate_gbit_per_s = LeadingNumber(port.rate_text);
      std::string state = Attr(env, ports_dir + "/" + p + "/state").value_or("");
      auto colon = state.find(':');
      port.state = colon == std::string::npos ? state : Trim(state.substr(colon + 1));
      port.link_layer = Attr(env, ports_dir + "/" + p + "/link_layer").value_or("");
      if (port.rate_text.empty()) f.gaps.push_back({"rdma " + d + " port " + p + " rate", "no rate file"});
      f.rdma.push_back(port);
    }
  }
}

void ReadPcie(Env& env, MachineFacts& f) {
  auto devs = env.ListDir("/sys/bus/pci/devices");
  if (!devs.ok()) {
    f.gaps.push_back({"pcie", "no /sys/bus/pci/devices"});
    return;
  }
  for (const auto& a : *devs) {
    const std::string dir = "/sys/bus/pci/devices/" + a;
    std::string cls = Attr(env, dir + "/class").value_or(""), vendor = Attr(env, dir + "/vendor").value_or("");
    if (cls.size() < 6) continue;
    const std::string base = cls.substr(0, 6);  // "0x0302" of "0x030200"
    std::string kind;
    if ((base == "0x0300" || base == "0x0302") && vendor == "0x10de") kind = "gpu";
    else if (base == "0x0200") kind = "nic";
    else if (base == "0x0207") kind = "infiniband";
    else continue;
    PcieLink l{a, kind, vendor, Attr(env, dir + "/device").value_or(""), cls};
    auto cw = AttrInt(env, dir + "/current_link_width");
    if (!cw) {
      f.gaps.push_back({"pcie " + a + " (" + kind + ")", "no current_link_width in sysfs (a virtual or non-PCIe-Express device)"});
      continue;
    }
    if (*cw < 0 || *cw > 64) {
      f.gaps.push_back({"pcie " + a + " (" + kind + ")", "current_link_width " + std::to_string(*cw) + " is not a lane count"});
      continue;
    }
    l.current_width = static_cast<int>(*cw);
    l.max_width = static_cast<int>(std::clamp<int64_t>(AttrInt(env, dir + "/max_link_width").value_or(0), 0, 64));
    l.current_speed_gt_per_s = LeadingNumber(Attr(env, dir + "/current_link_speed").value_or(""));
    l.max_speed_gt_per_s = LeadingNumber(Attr(env, dir + "/max_link_speed").value_or(""));
    f.pcie.push_back(l);
  }
}

std::optional<double> OptNumber(const std::string& cell) {
  std::string c = Trim(cell);
  if (c.empty() || c[0] == '[' || c == "N/A") return std::nullopt;  // "[N/A]", "[Not Supported]"
  auto v = ParseDecimal(c, {});
  if (!v.ok()) return std::nullopt;
  return *v;
}

void ReadGpus(Env& env, MachineFacts& f) {
  const int nvidia_pci = static_cast<int>(std::count_if(f.pcie.begin(), f.pcie.end(), [](const PcieLink& l) { return l.kind == "gpu"; }));
  if (!env.HasProgram("nvidia-smi")) {
    f.gaps.push_back({"gpus", nvidia_pci > 0 ? std::to_string(nvidia_pci) + " NVIDIA GPU(s) on the PCI bus, but nvidia-smi is not "
                                                                            "installed (no driver?)"
                                             : "no GPU: nvidia-smi not found"});
    return;
  }
  auto run = env.Run(NvidiaSmiQueryArgv());
  if (!run.ok() || run->exit_code != 0) {
    std::string why = !run.ok() ? run.status().reason() : Trim(run->err.empty() ? run->out : run->err);
    f.gaps.push_back({"gpus", "nvidia-smi failed: " + why.substr(0, why.find('\n'))});
    return;
  }
  f.nvidia_smi_output = run->out;
  std::istringstream in(run->out);
  std::string line;
  while (std::getline(in, line)) {
    if (Trim(line).empty()) continue;
    std::vector<std::string> c;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) c.push_back(Trim(cell));
    if (c.size() != 7) {
      f.gaps.push_back({"gpus", "nvidia-smi line with " + std::to_string(c.size()) + " fields, expected 7: '" + line + "'"});
      continue;
    }
    GpuInfo g;
    g.index = std::atoi(c[0].c_str());
    g.name = c[1];
    // MiB; a cell that is not a plausible size ("[N/A]", -1, 1e30) is not measured (0, printed as such).
    if (auto mib = OptNumber(c[2]); mib && *mib >= 1 && *mib <= double(int64_t{1} << 30)) g.memory_bytes = static_cast<int64_t>(*mib) << 20;
    else f.gaps.push_back({"gpu " + c[0] + " memory", "nvidia-smi memory.total '" + c[2].substr(0, 40) + "' is not a MiB count"});
    // Readings outside what hardware has are not measured (a driver's -1, a garbled 1e30), never cast as they are.
    auto within = [](std::optional<double> v, double lo, double hi) { return v && *v >= lo && *v <= hi ? v : std::nullopt; };
    if (auto v = within(OptNumber(c[3]), 1, 16)) g.pcie_gen = static_cast<int>(*v);
    if (auto v = within(OptNumber(c[4]), 1, 64)) g.pcie_width = static_cast<int>(*v);
    g.max_sm_clock_mhz = within(OptNumber(c[5]), 1, 1e5);
    g.power_limit_w = within(OptNumber(c[6]), 1, 1e5);
    f.gpus.push_back(g);
  }
  if (f.gpus.empty()) f.gaps.push_back({"gpus", "nvidia-smi ran but listed no GPU"});
}

}  // namespace

std::vector<std::string> NvidiaSmiQueryArgv() {
  return {"nvidia-smi",
          "--query-gpu=index,name,memory.total,pcie.link.gen.current,pcie.link.width.current,clocks.max.sm,power.limit",
          "--format=csv,noheader,nounits"};
}

Result<MachineFacts> ProbeMachine(Env& env) {
  MachineFacts f;
  ReadHostname(env, f);
  ReadCpu(env, f);
  ReadNuma(env, f);
  ReadMemory(env, f);
  ReadDisks(env, f);
  ReadNics(env, f);
  ReadRdma(env, f);
  ReadPcie(env, f);
  ReadGpus(env, f);
  if (f.hostname.empty() && f.cpu_threads == 0 && f.ram_bytes == 0)
    return Status::BadInput({"", 0, ""}, "nothing could be read (no /proc, no /sys): not a Linux machine or an empty recorded tree");
  return f;
}

std::string FactsToJson(const MachineFacts& f) {
  using nlohmann::json;
  auto opt = [](const auto& o) -> json { return o ? json(*o) : json(nullptr); };
  json j = {{"hostname", f.hostname},
            {"cpu", {{"model", f.cpu_model}, {"sockets", f.cpu_sockets}, {"cores", f.cpu_cores}, {"threads", f.cpu_threads},
                     {"governor", f.governor.empty() ? json(nullptr) : json(f.governor)}}},
            {"ram_bytes", f.ram_bytes > 0 ? json(f.ram_bytes) : json(nullptr)}};
  j["numa"] = json::array();
  for (const auto& n : f.numa)
    j["numa"].push_back({{"node", n.id}, {"cpulist", n.cpulist}, {"mem_bytes", n.mem_bytes}, {"cores", n.cores}, {"pus", n.pus}});
  j["numa_source"] = f.numa_source;
  if (!f.hwloc_error.empty()) j["hwloc_error"] = f.hwloc_error;
  if (f.hwloc_pus > 0) j["hwloc"] = {{"packages", f.hwloc_packages}, {"cores", f.hwloc_cores}, {"pus", f.hwloc_pus}};
  j["disks"] = json::array();
  for (const auto& d : f.disks) j["disks"].push_back({{"name", d.name}, {"size_bytes", d.size_bytes}, {"rotational", d.rotational}});
  j["nics"] = json::array();
  for (const auto& n : f.nics)
    j["nics"].push_back({{"name", n.name}, {"operstate", n.operstate}, {"speed_mbit_per_s", opt(n.speed_mbit_per_s)},
                         {"pci_address", n.pci_address}});
  j["rdma"] = json::array();
  for (const auto& r : f.rdma)
    j["rdma"].push_back({{"device", r.device}, {"port", r.port}, {"rate_gbit_per_s", r.rate_gbit_per_s}, {"rate", r.rate_text},
                         {"state", r.state}, {"link_layer", r.link_layer}});
  j["pcie"] = json::array();
  for (const auto& l : f.pcie)
    j["pcie"].push_back({{"address", l.address}, {"kind", l.kind}, {"vendor", l.vendor}, {"device", l.device}, {"class", l.class_code},
                         {"current_width", l.current_width}, {"max_width", l.max_width},
                         {"current_speed_gt_per_s", l.current_speed_gt_per_s}, {"max_speed_gt_per_s", l.max_speed_gt_per_s}});
  j["gpus"] = json::array();
  for (const auto& g : f.gpus)
    j["gpus"].push_back({{"index", g.index}, {"name", g.name}, {"memory_bytes", g.memory_bytes}, {"pcie_gen", opt(g.pcie_gen)},
                         {"pcie_width", opt(g.pcie_width)}, {"max_sm_clock_mhz", opt(g.max_sm_clock_mhz)},
                         {"power_limit_w", opt(g.power_limit_w)}});
  j["not_measured"] = json::array();
  for (const auto& g : f.gaps) j["not_measured"].push_back({{"item", g.item}, {"reason", g.reason}});
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string FactsToText(const MachineFacts& f) {
  std::ostringstream o;
  auto gib = [](int64_t b) { return FormatNumber("%.1f", b / double(1LL << 30)); };
  o << "host       " << f.hostname << "\n";
  o << "cpu        " << (f.cpu_model.empty() ? "(model unknown)" : f.cpu_model) << ": " << f.cpu_sockets << " socket(s), "
    << f.cpu_cores << " cores, " << f.cpu_threads << " threads; governor " << (f.governor.empty() ? "(none)" : f.governor) << "\n";
  o << "numa       " << f.numa.size() << " node(s)";
  if (!f.numa_source.empty()) o << " (from " << f.numa_source;
  if (f.hwloc_pus > 0) o << ": " << f.hwloc_packages << " package(s), " << f.hwloc_cores << " cores, " << f.hwloc_pus << " PUs";
  if (!f.numa_source.empty() && !f.hwloc_error.empty()) o << "; hwloc: " << f.hwloc_error;
  if (!f.numa_source.empty()) o << ")";
  for (const auto& n : f.numa) {
    o << "; node" << n.id << " cpus " << (n.cpulist.empty() ? "(none)" : n.cpulist);
    if (n.pus > 0) o << " (" << n.cores << " cores, " << n.pus << " PUs)";
    o << ", " << (n.mem_bytes > 0 ? gib(n.mem_bytes) + " GiB" : std::string("memory not measured"));
  }
  o << "\nram        " << (f.ram_bytes > 0 ? gib(f.ram_bytes) + " GiB" : std::string("not measured")) << "\n";
  for (const auto& d : f.disks)
    o << "disk       " << d.name << " " << FormatNumber("%.1f", d.size_bytes / 1e9) << " GB" << (d.rotational ? " (rotational)" : "") << "\n";
  for (const auto& n : f.nics)
    o << "nic        " << n.name << " " << n.operstate << ", "
      << (n.speed_mbit_per_s ? std::to_string(*n.speed_mbit_per_s) + " Mbit/s" : std::string("speed unknown"))
      << (n.pci_address.empty() ? "" : " at " + n.pci_address) << "\n";
  for (const auto& r : f.rdma)
    o << "rdma       " << r.device << " port " << r.port << ": " << r.state << ", " << r.rate_text << ", " << r.link_layer << "\n";
  for (const auto& l : f.pcie)
    o << "pcie       " << l.address << " " << l.kind << " x" << l.current_width << " (max x" << l.max_width << ") at "
      << FormatNumber("%g", l.current_speed_gt_per_s) << " GT/s (max " << FormatNumber("%g", l.max_speed_gt_per_s) << ")"
      << (l.current_width < l.max_width ? "  <- narrower than its maximum" : "") << "\n";
  for (const auto& g : f.gpus)
    o << "gpu        " << g.index << " " << g.name << ", " << (g.memory_bytes > 0 ? gib(g.memory_bytes) + " GiB" : std::string("memory not measured"))
      << ", PCIe gen "
      << (g.pcie_gen ? std::to_string(*g.pcie_gen) : "?") << " x" << (g.pcie_width ? std::to_string(*g.pcie_width) : "?")
      << ", max SM " << (g.max_sm_clock_mhz ? FormatNumber("%.0f", *g.max_sm_clock_mhz) : "?") << " MHz, power limit "
      << (g.power_limit_w ? FormatNumber("%.0f", *g.power_limit_w) : "?") << " W\n";
  for (const auto& g : f.gaps) o << "not measured: " << g.item << ": " << g.reason << "\n";
  return o.str();
}

MeasurementBatch FactsToBatch(const MachineFacts& f, const std::string& pool) {
  using nlohmann::json;
  MeasurementBatch b;
  b.machine = f.hostname;
  b.pool = pool;
  b.tool = "gpuplan probe";
  b.raw_sha256 = Sha256Hex(FactsToJson(f));
  auto add = [&](const char* kind, double v, const char* unit, json ctx = json::object()) {
    b.items.push_back({kind, v, unit, ctx.dump()});
  };
  if (f.cpu_threads > 0) {
    json ctx = {{"model", f.cpu_model}};
    add("cpu_sockets", f.cpu_sockets, "count", ctx);
    add("cpu_cores", f.cpu_cores, "count", ctx);
    add("cpu_threads", f.cpu_threads, "count", ctx);
  }
  if (!f.numa.empty()) add("numa_nodes", static_cast<double>(f.numa.size()), "count");
  if (f.ram_bytes > 0) add("ram_bytes", static_cast<double>(f.ram_bytes), "bytes");
  for (const auto& d : f.disks) add("disk_size_bytes", static_cast<double>(d.size_bytes), "bytes", {{"disk", d.name}, {"rotational", d.rotational}});
  for (const auto& n : f.nics)
    if (n.speed_mbit_per_s) add("nic_speed_mbit_per_s", static_cast<double>(*n.speed_mbit_per_s), "Mbit/s", {{"nic", n.name}, {"operstate", n.operstate}});
  for (const auto& r : f.rdma)
    add("rdma_rate_gbit_per_s", r.rate_gbit_per_s, "Gbit/s",
        {{"device", r.device}, {"port", r.port}, {"state", r.state}, {"link_layer", r.link_layer}});
  for (const auto& l : f.pcie) {
    json ctx = {{"address", l.address}, {"kind", l.kind}};
    add("pcie_link_width", l.current_width, "lanes", ctx);
    add("pcie_link_width_max", l.max_width, "lanes", ctx);
    add("pcie_link_speed_gt_per_s", l.current_speed_gt_per_s, "GT/s", ctx);
    add("pcie_link_speed_max_gt_per_s", l.max_speed_gt_per_s, "GT/s", ctx);
  }
  if (!f.nvidia_smi_output.empty()) add("gpu_count", static_cast<double>(f.gpus.size()), "count");
  for (const auto& g : f.gpus) {
    json ctx = {{"gpu", g.index}, {"name", g.name}};
    if (g.memory_bytes > 0) add("gpu_memory_bytes", static_cast<double>(g.memory_bytes), "bytes", ctx);
    if (g.pcie_gen) add("gpu_pcie_gen", *g.pcie_gen, "gen", ctx);
    if (g.pcie_width) add("gpu_pcie_width", *g.pcie_width, "lanes", ctx);
    if (g.max_sm_clock_mhz) add("gpu_max_sm_clock_mhz", *g.max_sm_clock_mhz, "MHz", ctx);
    if (g.power_limit_w) add("gpu_power_limit_w", *g.power_limit_w, "W", ctx);
  }
  return b;
}

// ---- storage: fio ---------------------------------------------------------------------------

Result<FioJobResult> ParseFioJson(const std::string& text, const std::string& job_name, bool is_write) {
  const Location where{"fio " + job_name, 0, ""};
  auto brace = text.find('{');  // fio may print notes before the JSON
  if (brace == std::string::npos) return Status::BadInput(where, "no JSON in fio's output");
  GPUPLAN_RETURN_IF_ERROR(CheckJsonDepth(text.substr(brace), where));  // a recorded fio.json is user input
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.substr(brace));
  } catch (const std::exception& e) {
    return Status::BadInput(where, std::string("fio's JSON does not parse: ") + e.what());
  }
  if (!j.contains("jobs") || !j["jobs"].is_array() || j["jobs"].empty())
    return Status::BadInput({where.file, 0, "jobs"}, "fio's JSON has no jobs");
  const auto& job = j["jobs"][0];
  if (job.value("error", 0) != 0) return Status::BadInput({where.file, 0, "jobs[0].error"}, "fio reports error " + std::to_string(job.value("error", 0)));
  const char* side = is_write ? "write" : "read";
  if (!job.contains(side) || !job[side].is_object()) return Status::BadInput({where.file, 0, side}, "no " + std::string(side) + " section");
  const auto& s = job[side];
  double bw_bytes = s.contains("bw_bytes") ? s["bw_bytes"].get<double>() : s.value("bw", 0.0) * 1024;  // bw is KiB/s
  FioJobResult r;
  r.name = job_name;
  r.mb_per_s = bw_bytes / 1e6;
  r.iops = s.value("iops", 0.0);
  r.raw_json = text.substr(brace);
  return r;
}

namespace {
std::vector<std::string> FioArgv(const std::string& name, const std::string& file, const char* rw, const char* bs,
                                 bool direct, const StorageBenchOptions& o) {
  std::vector<std::string> a = {"fio", "--name=" + name, "--filename=" + file, std::string("--rw=") + rw,
                                std::string("--bs=") + bs, "--size=" + std::to_string(o.size_bytes),
                                std::string("--direct=") + (direct ? "1" : "0"), "--numjobs=1", "--output-format=json"};
  if (direct && std::string(rw) == "randread") a.insert(a.end(), {"--ioengine=libaio", "--iodepth=16"});
  else a.insert(a.end(), {"--ioengine=psync", "--iodepth=1"});
  if (std::string(rw) == "write") a.push_back("--end_fsync=1");
  if (!o.runtime_s.empty()) a.push_back("--runtime=" + o.runtime_s);
  return a;
}
}  // namespace

Result<StorageBenchResult> BenchStorage(Env& env, const std::string& dir, const StorageBenchOptions& o) {
  if (!env.HasProgram("fio")) return Status::BadInput({"", 0, "fio"}, "not found: install fio (Debian package 'fio')");
  if (!env.ListDir(dir).ok()) return Status::BadInput({dir, 0, "--bench storage"}, "not a folder that can be listed");
  StorageBenchResult r;
  r.path = dir;
  const std::string file =
      dir + "/" + (o.scratch_name.empty() ? "gpuplan-fio-" + std::to_string(getpid()) + ".dat" : o.scratch_name);
  struct Job {
    const char* name;
    const char* rw;
    const char* bs;
  };
  const Job jobs[] = {{"seq_write", "write", "1M"}, {"seq_read", "read", "1M"}, {"rand_read_4k", "randread", "4k"}};
  bool direct = true;
  Status failed = Status::Ok();
  for (const Job& job : jobs) {
    auto run = env.Run(FioArgv(job.name, file, job.rw, job.bs, direct, o));
    if (run.ok() && run->exit_code != 0 && direct && r.jobs.empty()) {
      // O_DIRECT refused (tmpfs, some FUSE/overlay): run buffered and say so.
      r.notes.push_back("O_DIRECT (--direct=1) refused on " + dir + ": fio ran buffered (--direct=0); the numbers include the page cache");
      direct = false;
      run = env.Run(FioArgv(job.name, file, job.rw, job.bs, direct, o));
    }
    if (!run.ok()) {
      failed = run.status();
      break;
    }
    if (run->exit_code != 0) {
      std::string why = Trim(run->err.empty() ? run->out : run->err);
      failed = Status::BadInput({dir, 0, std::string("fio ") + job.name}, "fio exited " + std::to_string(run->exit_code) + ": " + why.substr(0, 300));
      break;
    }
    auto parsed = ParseFioJson(run->out, job.name, std::string(job.rw) == "write");
    if (!parsed.ok()) {
      failed = parsed.status();
      break;
    }
    parsed->direct = direct;
    r.jobs.push_back(*parsed);
  }
  (void)env.Run({"rm", "-f", file});  // the scratch file; Env has no unlink and rm is everywhere
  if (!failed.ok()) return failed;
  return r;
}

std::vector<MeasurementBatch> StorageToBatches(const StorageBenchResult& r, const std::string& machine, const std::string& pool) {
  std::vector<MeasurementBatch> out;
  for (const auto& j : r.jobs) {
    MeasurementBatch b;
    b.machine = machine;
    b.pool = pool;
    b.tool = "fio";
    b.raw_sha256 = Sha256Hex(j.raw_json);
    nlohmann::json ctx = {{"path", r.path}, {"direct", j.direct}, {"job", j.name}};
    const std::string c = ctx.dump();
    const std::string prefix = j.name == "seq_write" ? "storage_seq_write" : j.name == "seq_read" ? "storage_seq_read" : "storage_randread_4k";
    b.items.push_back({prefix + "_mb_per_s", j.mb_per_s, "MB/s", c});
    b.items.push_back({prefix + "_iops", j.iops, "IOPS", c});
    out.push_back(std::move(b));
  }
  return out;
}

// ---- cpu: a data-loader-like workload ----------------------------------------------------------

namespace {

uint64_t NextRandom(uint64_t& s) {  // xorshift64*
  s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
  return s * 2685821657736338717ULL;
}

struct Vocab {
  std::vector<std::string> words;                      // the corpus draws from these
  std::unordered_map<std::string_view, int> ids;       // whole words in the vocabulary
  std::unordered_map<std::string_view, int> pieces;    // 3-byte pieces for the others
  std::vector<std::string> piece_store;
};

Vocab MakeVocab(uint64_t seed) {
  static const char* kSyllables[] = {"ka", "to", "ri", "ne", "sa", "mo", "lu", "pe", "di", "ga", "zo", "chi", "an",
                                     "el", "or", "is", "un", "th", "qu", "st", "pr", "ng", "ou", "ea"};
  Vocab v;
  uint64_t s = seed | 1;
  std::set<std::string> seen;
  while (v.words.size() < 8192) {
    std::string w;
    int n = 1 + static_cast<int>(NextRandom(s) % 4);
    for (int i = 0; i < n; ++i) w += kSyllables[NextRandom(s) % std::size(kSyllables)];
    if (seen.insert(w).second) v.words.push_back(w);
  }
  // The first 4096 words are whole tokens; the rest are split into 3-byte pieces (or single bytes).
  int next_id = 256;
  for (size_t i = 0; i < 4096; ++i) v.ids.emplace(v.words[i], next_id++);
  v.piece_store.reserve(8192 * 4);
  for (size_t i = 4096; i < v.words.size(); ++i)
    for (size_t p = 0; p + 3 <= v.words[i].size(); p += 3) v.piece_store.push_back(v.words[i].substr(p, 3));
  for (const auto& p : v.piece_store)
    if (v.pieces.emplace(p, next_id).second) ++next_id;
  return v;
}

std::string MakeCorpus(const Vocab& v, int64_t bytes, uint64_t seed) {
  std::string c;
  c.reserve(static_cast<size_t>(bytes) + 64);
  uint64_t s = seed | 1;
  int in_doc = 0;
  while (static_cast<int64_t>(c.size()) < bytes) {
    uint64_t r = NextRandom(s);
    size_t idx = (r % 8192) % (1 + (r >> 20) % 8192);  // skewed toward frequent words
    c += v.words[idx];
    c += (++in_doc % 200 == 0) ? '\n' : ' ';           // a document every ~200 words
  }
  return c;
}

struct TokenizeResult {
  int64_t tokens = 0, sequences = 0;
  uint64_t checksum = 0;
};

// Whitespace split, vocabulary lookup, 3-byte pieces, byte fallback; documents joined with an EOS
// token (id 0) and packed into fixed-length sequences (a full sequence is "emitted": checksummed).
TokenizeResult TokenizeAndPack(const Vocab& v, std::string_view text, int seq_len) {
  TokenizeResult r;
  std::vector<int> seq;
  seq.reserve(static_cast<size_t>(seq_len));
  auto emit = [&](int id) {
    seq.push_back(id);
    ++r.tokens;
    if (static_cast<int>(seq.size()) == seq_len) {
      uint64_t h = 1469598103934665603ULL;
      for (int t : seq) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ULL;
      r.checksum ^= h + static_cast<uint64_t>(r.sequences) * 0x9e3779b97f4a7c15ULL;
      ++r.sequences;
      seq.clear();
    }
  };
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\n') ++j;
    std::string_view w = text.substr(i, j - i);
    if (auto it = v.ids.find(w); it != v.ids.end()) {
      emit(it->second);
    } else {
      for (size_t p = 0; p < w.size();) {
        auto pit = p + 3 <= w.size() ? v.pieces.find(w.substr(p, 3)) : v.pieces.end();
        if (pit != v.pieces.end()) emit(pit->second), p += 3;
        else emit(static_cast<unsigned char>(w[p])), p += 1;
      }
    }
    if (j < text.size() && text[j] == '\n') emit(0);
    i = j + 1;
  }
  return r;
}

}  // namespace

CpuBenchResult BenchCpu(const CpuBenchOptions& o) {
  const int threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const Vocab vocab = MakeVocab(o.seed);
  // At most 1 GiB of corpus in all (a 208-thread host gets ~5 MiB per thread, not 3.3 GB).
  const int64_t per_thread = std::min<int64_t>(o.corpus_bytes_per_thread, (1LL << 30) / threads);
  std::vector<std::string> corpora;
  for (int t = 0; t < threads; ++t) corpora.push_back(MakeCorpus(vocab, per_thread, o.seed + 7919 * (t + 1)));
  using Clock = std::chrono::steady_clock;
  CpuBenchResult r;
  r.threads = threads;
  {  // one thread alone
    auto t0 = Clock::now();
    TokenizeResult one = TokenizeAndPack(vocab, corpora[0], o.seq_len_tokens);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    r.single_thread_bytes_per_s = corpora[0].size() / s;
    r.single_thread_tokens_per_s = one.tokens / s;
  }
  std::vector<TokenizeResult> res(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();  // start together
      res[static_cast<size_t>(t)] = TokenizeAndPack(vocab, corpora[static_cast<size_t>(t)], o.seq_len_tokens);
    });
  for (auto& th : pool) th.join();
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  double bytes = 0;
  for (int t = 0; t < threads; ++t) {
    bytes += static_cast<double>(corpora[static_cast<size_t>(t)].size());
    r.tokens += res[static_cast<size_t>(t)].tokens;
    r.sequences += res[static_cast<size_t>(t)].sequences;
    r.checksum ^= res[static_cast<size_t>(t)].checksum + static_cast<uint64_t>(t);
  }
  r.bytes_per_s_per_core = bytes / elapsed_s / threads;
  r.tokens_per_s_per_core = r.tokens / elapsed_s / threads;
  return r;
}

MeasurementBatch CpuToBatch(const CpuBenchResult& r, const std::string& machine, const std::string& pool) {
  MeasurementBatch b;
  b.machine = machine;
  b.pool = pool;
  b.tool = "gpuplan probe --bench cpu";
  nlohmann::json ctx = {{"threads", r.threads}, {"method", "synthetic corpus: whitespace split, 4096-word vocabulary, 3-byte pieces, "
                                                           "byte fallback, packed into 2048-token sequences"}};
  const std::string c = ctx.dump();
  b.items = {{"cpu_tokenize_bytes_per_s_per_core", r.bytes_per_s_per_core, "bytes/s", c},
             {"cpu_tokenize_tokens_per_s_per_core", r.tokens_per_s_per_core, "tokens/s", c},
             {"cpu_tokenize_tokens_per_s_one_thread", r.single_thread_tokens_per_s, "tokens/s", c}};
  return b;
}

GpuBenchAvailability CheckGpuBench(Env& env) {
  const bool smi = env.HasProgram("nvidia-smi"), nvcc = env.HasProgram("nvcc");
  if (!smi && !nvcc) return {false, "no CUDA GPU and no toolchain: neither nvidia-smi nor nvcc found"};
  if (!smi) return {false, "no CUDA GPU: nvidia-smi not found (nvcc is installed, but there is no GPU driver to run on)"};
  if (!nvcc) return {false, "a GPU driver is present (nvidia-smi) but no CUDA toolchain: nvcc not found"};
  auto run = env.Run(NvidiaSmiQueryArgv());
  if (!run.ok() || run->exit_code != 0 || Trim(run->out).empty())
    return {false, "nvidia-smi and nvcc are present but nvidia-smi lists no usable GPU"};
  return {false, "a CUDA GPU and nvcc are present, but this gpuplan was built without the GEMM/HBM benchmark "
                 "(not part of this build yet)"};
}

}  // namespace gpuplan
