// Pool files (docs/model/pools.md "The pool file"): groups of identical nodes, checked against the catalog.
#include <cstdio>
#include <filesystem>
#include <set>

#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"
#include "gpuplan/pool.h"
#include "gpuplan/strings.h"
#include "gpuplan/yaml_doc.h"

namespace gpuplan {
namespace {

Status Bad(const Location& w, const std::string& why) { return Status::BadInput(w, why); }
std::string Str(int64_t v) { return std::to_string(v); }
std::string Gbps(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", bytes_per_s * 8 / 1e9);
  return buf;
}

Result<int64_t> IntKey(const YAML::Node& n, const std::string& file, const std::string& key, int64_t min, int64_t max) {
  const Location w = YamlWhere(file, n, key);
  if (!n.IsScalar()) return Bad(w, "expected a whole number");
  return ParseInteger(n.Scalar(), w, min, max);
}

Result<double> PriceKey(const YAML::Node& n, const std::string& file, const std::string& key) {
  const Location w = YamlWhere(file, n, key);
  if (!n.IsScalar()) return Bad(w, "expected a price in USD");
  auto v = ParseDecimal(n.Scalar(), w);
  if (!v.ok()) return v.status();
  if (*v < 0) return Bad(w, "a price cannot be negative");
  return *v;
}

// `network: {kind: tcp, gbps: 25}`: a link of the pool's own, per NIC, one direction.
Result<LinkSpec> OwnNetwork(const YAML::Node& n, const std::string& file, const std::string& group) {
  LinkSpec l;
  l.id = "pool-" + group + "-network";
  l.where = YamlWhere(file, n, "network");
  static const std::set<std::string> kKinds = {"tcp", "roce", "infiniband", "efa", "tcpx", "tcpxo", "hccs"};
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string k = it->first.Scalar();
    const Location w = YamlWhere(file, it->second, "network." + k);
    if (!it->second.IsScalar()) return Bad(w, "expected a single value");
    if (k == "kind") {
      l.kind = it->second.Scalar();
      if (!kKinds.count(l.kind)) return Bad(w, "unknown network kind '" + l.kind + "' (tcp, roce, infiniband, efa, tcpx, tcpxo, hccs)");
    } else if (k == "gbps") {
      auto v = ParseDecimal(it->second.Scalar(), w);
      if (!v.ok()) return v.status();
      if (*v <= 0) return Bad(w, "must be > 0 (Gbit/s per NIC)");
      l.bw_bytes_per_s_per_dir = *v * 1e9 / 8;
    } else {
      return Bad(w, "unknown key (a network is a links-catalog id or {kind, gbps})");
    }
  }
  if (l.kind.empty()) return Bad(l.where, "needs kind (tcp, roce, infiniband, efa, ...)");
  if (l.bw_bytes_per_s_per_dir <= 0) return Bad(l.where, "needs gbps (Gbit/s per NIC)");
  l.name = l.kind + " " + Gbps(l.bw_bytes_per_s_per_dir) + " Gb/s (pool " + group + ")";
  l.source = "pool file " + file;
  l.date = "undated";
  return l;
}

Result<PoolGroup> ParseGroup(const YAML::Node& g, const std::string& file, const Catalog& catalog, Pool& pool) {
  PoolGroup out;
  out.where = YamlWhere(file, g, "groups");
  if (!g.IsMap()) return Bad(out.where, "a group is a mapping {name, gpu, nodes, gpus_per_node, ...}");
  std::optional<double> per_node;
  YAML::Node network;
  bool has_network = false;
  for (auto it = g.begin(); it != g.end(); ++it) {
    const std::string k = it->first.IsScalar() ? it->first.Scalar() : "";
    const YAML::Node v = it->second;  // a copy: the iterator hands out a temporary
    const Location w = YamlWhere(file, v, "groups." + k);
    auto scalar = [&]() -> Result<std::string> {
      if (!v.IsScalar() || v.Scalar().empty()) return Bad(w, "expected a single value");
      return v.Scalar();
    };
    if (k == "name") {
      auto s = scalar();
      if (!s.ok()) return s.status();
      out.name = *s;
    } else if (k == "gpu") {
      auto s = scalar();
      if (!s.ok()) return s.status();
      auto gpu = catalog.FindGpu(*s);
      if (!gpu.ok()) return Bad(w, gpu.status().reason());
      out.gpu = gpu->id;
    } else if (k == "nodes" || k == "gpus_per_node" || k == "nodes_available") {
      auto n = IntKey(v, file, "groups." + k, k == "nodes_available" ? 0 : 1, k == "gpus_per_node" ? 72 : 1 << 16);
      if (!n.ok()) return n.status();
      (k == "nodes" ? out.nodes : k == "gpus_per_node" ? out.gpus_per_node : out.nodes_available) = *n;
    } else if (k == "intra_node") {
      auto s = scalar();
      if (!s.ok()) return s.status();
      auto link = catalog.FindLink(*s);
      if (!link.ok()) return Bad(w, link.status().reason());
      out.intra_node = link->id;
    } else if (k == "network") {
      network = v;
      has_network = true;
    } else if (k == "price_per_gpu_hour" || k == "price_per_node_hour") {
      auto p = PriceKey(v, file, "groups." + k);
      if (!p.ok()) return p.status();
      if (k == "price_per_gpu_hour") out.price_per_gpu_hour = *p;
      else per_node = *p;
    } else {
      return Bad(w, "unknown key (a group has name, gpu, nodes, gpus_per_node, intra_node, network, nodes_available, "
                    "price_per_gpu_hour or price_per_node_hour)");
    }
  }
  for (const char* need : {"name", "gpu", "nodes", "gpus_per_node"})
    if (!g[need]) return Bad(out.where, std::string("group needs ") + need);
  if (out.nodes_available > out.nodes)
    return Bad(YamlWhere(file, g["nodes_available"], "groups.nodes_available"),
               Str(out.nodes_available) + " exceeds the group's nodes (" + Str(out.nodes) + ")");
  if (per_node && out.price_per_gpu_hour)
    return Bad(YamlWhere(file, g["price_per_node_hour"], "groups.price_per_node_hour"), "give one of price_per_gpu_hour and price_per_node_hour");
  if (per_node) out.price_per_gpu_hour = *per_node / static_cast<double>(out.gpus_per_node);
  if (out.price_per_gpu_hour) out.price_note = "pool file";
  if (has_network) {
    const Location w = YamlWhere(file, network, "groups.network");
    if (network.IsScalar()) {
      auto link = catalog.FindLink(network.Scalar());
      if (!link.ok()) return Bad(w, link.status().reason());
      out.network = link->id;
    } else if (network.IsMap()) {
      auto own = OwnNetwork(network, file, out.name);
      if (!own.ok()) return own.status();
      out.network = own->id;
      pool.links.push_back(*own);
    } else {
      return Bad(w, "a links-catalog id (gpuplan catalog links) or {kind, gbps}");
    }
  }
  return out;
}

}  // namespace

int64_t Pool::GpusUsable() const {
  int64_t n = 0;
  for (const auto& g : groups) n += g.GpusUsable();
  return n;
}

Result<Pool> ParsePoolText(const std::string& text, const std::string& file, const Catalog& catalog) {
  auto doc = LoadYamlDocument(text, file);
  if (!doc.ok()) return doc.status();
  const YAML::Node& root = *doc;
  if (!root.IsMap()) return Bad({file, 1, ""}, "a pool file is a mapping {pool, groups: [...]}");
  Pool pool;
  pool.file = file;
  pool.name = std::filesystem::path(file).stem().string();
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string k = it->first.IsScalar() ? it->first.Scalar() : "";
    if (k == "pool" || k == "name") {
      if (!it->second.IsScalar()) return Bad(YamlWhere(file, it->second, k), "expected a name");
      pool.name = it->second.Scalar();
    } else if (k != "groups") {
      return Bad(YamlWhere(file, it->first, k), "unknown key (a pool file has pool and groups)");
    }
  }
  const YAML::Node groups = root["groups"];
  if (!groups || !groups.IsSequence() || groups.size() == 0)
    return Bad(YamlWhere(file, groups ? groups : root, "groups"), "needs a list of groups (at least one)");
  std::set<std::string> names;
  for (const auto& g : groups) {
    auto group = ParseGroup(g, file, catalog, pool);
    if (!group.ok()) return group.status();
    if (!names.insert(group->name).second) return Bad(group->where, "group name '" + group->name + "' is used twice");
    pool.groups.push_back(*group);
  }
  return pool;
}

Result<Pool> LoadPoolFile(const std::string& path, const Catalog& catalog) {
  auto text = ReadInputFile(path);
  if (!text.ok()) return text.status();
  return ParsePoolText(*text, path, catalog);
}

Catalog WithPoolLinks(const Catalog& catalog, const Pool& pool) {
  Catalog out = catalog;
  for (const auto& l : pool.links) out.links.push_back(l);
  return out;
}

}  // namespace gpuplan
