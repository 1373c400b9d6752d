// The NCCL/fabric environment of a plan from data/fabric_env.csv (docs/export.md "Fabric
// environment"): which rows apply to the plan's inter-node link, provider and GPU, and fabric.env.
#include <algorithm>
#include <cctype>
#include <map>

#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/launch.h"
#include "gpuplan/quote.h"
#include "gpuplan/strings.h"

namespace gpuplan {

namespace {

// When a row applies: always; only on one node; only across nodes (the fabric's rows); across
// nodes without GPUDirect RDMA; across nodes when no multi-node row knows the link kind.
enum class When { kAlways, kSingleNode, kMultiNode, kNoGdr, kFallback };

struct FabricRow {
  std::vector<std::string> fabrics;       // link kinds; {"*"} = any
  std::string provider;                   // "*" = any
  std::vector<std::string> gpu_prefixes;  // {"*"} = any
  When when = When::kAlways;
  FabricSetting setting;
};

struct ActionName {
  FabricAction action;
  const char* name;
};
constexpr ActionName kActions[] = {
    {FabricAction::kExport, "export"},
    {FabricAction::kDefault, "default"},
    {FabricAction::kPrepend, "prepend"},
    {FabricAction::kSource, "source"},
    {FabricAction::kNote, "note"},
    {FabricAction::kK8sResource, "k8s-resource"},
    {FabricAction::kK8sGpuResource, "k8s-gpu-resource"},
    {FabricAction::kSkyAccelerator, "sky-accelerator"},
    {FabricAction::kSkyNetworkTier, "sky-network-tier"},
};

bool IsEnvAction(FabricAction a) {
  return a == FabricAction::kExport || a == FabricAction::kDefault || a == FabricAction::kPrepend ||
         a == FabricAction::kSource || a == FabricAction::kNote;
}

// The characters a value may hold so that it is the same word in bash (single or double quotes)
// and in YAML: no quotes, no backslash, no $ or backtick, no control characters.
bool SafeText(const std::string& s, bool allow_space) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) return true;
    if (c == ' ') return allow_space;
    return std::string("_./,:;^=+@%-").find(c) != std::string::npos;
  });
}

bool EnvName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::vector<std::string> Keys(const std::string& cell) {
  std::vector<std::string> out;
  for (auto& k : SplitList(cell, ';')) out.push_back(Lower(k));
  return out;
}

Status CheckKeys(const std::vector<std::string>& keys, const Location& where) {
  for (const auto& k : keys) {
    if (k.empty()) return Status::BadInput(where, "empty item in the ';' list (use * for any)");
    if (k == "*" && keys.size() > 1) return Status::BadInput(where, "* must stand alone, not in a list");
  }
  return Status::Ok();
}

Result<When> ParseWhen(const std::string& v, const Location& where) {
  if (v == "always") return When::kAlways;
  if (v == "single-node") return When::kSingleNode;
  if (v == "multi-node") return When::kMultiNode;
  if (v == "no-gdr") return When::kNoGdr;
  if (v == "fallback") return When::kFallback;
  return Status::BadInput(where, "expected always, single-node, multi-node, no-gdr or fallback, got '" + v + "'");
}

// What the variable and value of each action must look like.
Status CheckSetting(const FabricSetting& s, const CsvRecord& rec) {
  const bool env = s.action == FabricAction::kExport || s.action == FabricAction::kDefault || s.action == FabricAction::kPrepend;
  if (env && !EnvName(s.variable)) return Status::BadInput(rec.Where("variable"), "expected an environment variable name, got '" + s.variable + "'");
  if (s.action == FabricAction::kNote && !s.variable.empty() && !EnvName(s.variable))
    return Status::BadInput(rec.Where("variable"), "expected an environment variable name or empty, got '" + s.variable + "'");
  if (env && (s.value.empty() || !SafeText(s.value, false)))
    return Status::BadInput(rec.Where("value"), "expected a non-empty value of letters, digits and _./,:;^=+@%- (no quotes, $, spaces), got '" +
                                                    s.value + "'");
  if (s.action == FabricAction::kSource && (s.variable.empty() || s.variable[0] != '/' || !SafeText(s.variable, false)))
    return Status::BadInput(rec.Where("variable"), "expected the absolute path of the file to source, got '" + s.variable + "'");
  if (s.action == FabricAction::kK8sResource) {
    if (!SafeText(s.variable, false)) return Status::BadInput(rec.Where("variable"), "not a resource name: '" + s.variable + "'");
    if (!s.variable.empty() && s.value != "nics_per_node") {
      auto n = ParseInteger(s.value, rec.Where("value"), 1, 1024);
      if (!n.ok()) return Status::BadInput(rec.Where("value"), "expected a count or nics_per_node, got '" + s.value + "'");
    }
  }
  if (s.action == FabricAction::kK8sGpuResource && (s.variable.empty() || !SafeText(s.variable, false)))
    return Status::BadInput(rec.Where("variable"), "expected a Kubernetes resource name, got '" + s.variable + "'");
  if ((s.action == FabricAction::kSkyAccelerator || s.action == FabricAction::kSkyNetworkTier) && (s.value.empty() || !SafeText(s.value, false)))
    return Status::BadInput(rec.Where("value"), "expected a SkyPilot name, got '" + s.value + "'");
  if (s.action == FabricAction::kNote && s.value.find('\n') != std::string::npos)
    return Status::BadInput(rec.Where("value"), "must be one line");
  if (s.why.empty() || s.why.find('\n') != std::string::npos) return Status::BadInput(rec.Where("why"), "must say why, on one line");
  if (s.source.empty()) return Status::BadInput(rec.Where("source"), "must name the source");
  const bool iso = s.date.size() == 10 && s.date[4] == '-' && s.date[7] == '-' &&
                   std::all_of(s.date.begin(), s.date.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '-'; });
  if (!iso) return Status::BadInput(rec.Where("date"), "expected the source's date as YYYY-MM-DD, got '" + s.date + "'");
  return Status::Ok();
}

Result<FabricRow> ReadRow(const CsvRecord& rec) {
  FabricRow r;
  r.fabrics = Keys(rec.Str("fabric"));
  GPUPLAN_RETURN_IF_ERROR(CheckKeys(r.fabrics, rec.Where("fabric")));
  r.provider = Lower(rec.Str("provider"));
  if (r.provider.empty()) return Status::BadInput(rec.Where("provider"), "must name a provider or * for any");
  r.gpu_prefixes = Keys(rec.Str("gpu_prefix"));
  GPUPLAN_RETURN_IF_ERROR(CheckKeys(r.gpu_prefixes, rec.Where("gpu_prefix")));
  auto when = ParseWhen(rec.Str("when"), rec.Where("when"));
  if (!when.ok()) return when.status();
  r.when = *when;
  const std::string action = rec.Str("action");
  auto a = std::find_if(std::begin(kActions), std::end(kActions), [&](const ActionName& x) { return action == x.name; });
  if (a == std::end(kActions))
    return Status::BadInput(rec.Where("action"), "expected export, default, prepend, source, note, k8s-resource, k8s-gpu-resource, "
                                                 "sky-accelerator or sky-network-tier, got '" + action + "'");
  FabricSetting& s = r.setting;
  s.action = a->action;
  s.variable = rec.Str("variable");
  s.value = rec.Str("value");
  s.why = rec.Str("why");
  s.source = rec.Str("source");
  s.date = rec.Str("date");
  s.where = rec.Where("");
  GPUPLAN_RETURN_IF_ERROR(CheckSetting(s, rec));
  return r;
}

Result<std::vector<FabricRow>> ReadRows(const std::string& text, const std::string& file) {
  auto table = ParseCsv(text, file);
  if (!table.ok()) return table.status();
  for (const char* col : {"fabric", "provider", "gpu_prefix", "when", "action", "variable", "value", "why", "source", "date"})
    if (table->Column(col) < 0) return Status::BadInput({file, 1, col}, "missing column (header: fabric,provider,gpu_prefix,when,action,variable,value,why,source,date)");
  std::vector<FabricRow> rows;
  for (const auto& row : table->rows) {
    auto r = ReadRow(CsvRecord(*table, row));
    if (!r.ok()) return r.status();
    rows.push_back(std::move(r).value());
  }
  return rows;
}

// The plan as the rows see it.
struct FabricKey {
  bool multi_node = false;
  std::string kind;      // the inter-node link kind ("" on one node)
  std::string provider;  // lower-case ("" = own machines)
  std::string gpu;       // the catalog GPU id
  bool gdr = true;       // the estimate assumed GPUDirect RDMA
};

Result<FabricKey> KeyOf(const LaunchPlan& plan, const Catalog& catalog) {
  FabricKey k;
  k.multi_node = plan.nodes > 1;
  if (k.multi_node) {
    if (plan.network.id.empty() || plan.network.kind.empty())
      return Status::BadInput({"", 0, "cluster.network"}, "the plan spans " + std::to_string(plan.nodes) +
                                                              " nodes but names no inter-node link: nothing to base fabric.env on");
    k.kind = Lower(plan.network.kind);
  }
  k.provider = Lower(plan.provider);
  auto gpu = catalog.FindGpu(plan.job.cluster.gpu);
  k.gpu = gpu.ok() ? gpu->id : Lower(plan.job.cluster.gpu);
  k.gdr = plan.job.cluster.gpudirect_rdma;
  return k;
}

bool Any(const std::vector<std::string>& keys) { return keys.size() == 1 && keys[0] == "*"; }

bool FabricMatches(const FabricRow& r, const FabricKey& k) {
  return Any(r.fabrics) || std::find(r.fabrics.begin(), r.fabrics.end(), k.kind) != r.fabrics.end();
}
bool ProviderMatches(const FabricRow& r, const FabricKey& k) { return r.provider == "*" || r.provider == k.provider; }
// Length of the longest matching prefix (0 for *), or -1 when none matches.
int GpuMatch(const FabricRow& r, const FabricKey& k) {
  if (Any(r.gpu_prefixes)) return 0;
  int best = -1;
  for (const auto& p : r.gpu_prefixes)
    if (k.gpu.compare(0, p.size(), p) == 0) best = std::max(best, static_cast<int>(p.size()));
  return best;
}
bool WhenMatches(When w, const FabricKey& k) {
  switch (w) {
    case When::kAlways: return true;
    case When::kSingleNode: return !k.multi_node;
    case When::kMultiNode: return k.multi_node;
    case When::kNoGdr: return k.multi_node && !k.gdr;
    case When::kFallback: return k.multi_node;  // decided by EnvRows
  }
  return false;
}
bool Matches(const FabricRow& r, const FabricKey& k) {
  return WhenMatches(r.when, k) && FabricMatches(r, k) && ProviderMatches(r, k) && GpuMatch(r, k) >= 0;
}

// The environment rows: the fabric's multi-node rows of the plan's provider when it has any, else
// the generic ones; the fallback rows when neither exists.
std::vector<const FabricRow*> EnvRows(const std::vector<FabricRow>& rows, const FabricKey& k) {
  auto fabric_row = [&](const FabricRow& r) {
    return IsEnvAction(r.setting.action) && r.when == When::kMultiNode && !Any(r.fabrics) && Matches(r, k);
  };
  const bool provider_rows = std::any_of(rows.begin(), rows.end(), [&](const FabricRow& r) { return fabric_row(r) && r.provider != "*"; });
  auto chosen = [&](const FabricRow& r) { return provider_rows ? r.provider != "*" : r.provider == "*"; };
  const bool fabric_rows = std::any_of(rows.begin(), rows.end(), [&](const FabricRow& r) { return fabric_row(r) && chosen(r); });
  std::vector<const FabricRow*> out;
  for (const auto& r : rows) {
    if (!IsEnvAction(r.setting.action) || !Matches(r, k)) continue;
    if (r.when == When::kFallback && fabric_rows) continue;
    if (fabric_row(r) && !chosen(r)) continue;
    out.push_back(&r);
  }
  return out;
}

// For a single-value action, the most specific matching row: a named fabric over *, a named
// provider over *, then the longest GPU prefix; ties go to the earlier row.
const FabricRow* MostSpecific(const std::vector<FabricRow>& rows, const FabricKey& k, FabricAction a) {
  const FabricRow* best = nullptr;
  int best_score = -1;
  for (const auto& r : rows) {
    if (r.setting.action != a || !Matches(r, k)) continue;
    const int score = (Any(r.fabrics) ? 0 : 10000) + (r.provider == "*" ? 0 : 1000) + GpuMatch(r, k);
    if (score > best_score) best = &r, best_score = score;
  }
  return best;
}

Status CheckNoTwice(const std::vector<FabricSetting>& settings) {
  std::map<std::string, const FabricSetting*> seen;
  for (const auto& s : settings) {
    if (s.action != FabricAction::kExport && s.action != FabricAction::kDefault && s.action != FabricAction::kPrepend) continue;
    auto [it, fresh] = seen.emplace(s.variable, &s);
    if (!fresh)
      return Status::BadInput({s.where.file, s.where.line, "variable"},
                              s.variable + " is set twice for this plan (line " + std::to_string(it->second->where.line) +
                                  " sets it too): narrow the rows' fabric, provider or gpu_prefix");
  }
  return Status::Ok();
}

std::string Cite(const FabricSetting& s) { return "[" + s.source + ", " + s.date + "]"; }

std::string EnvLine(const FabricSetting& s) {
  switch (s.action) {
    case FabricAction::kExport: return "export " + s.variable + "=" + ShellWord(s.value);
    case FabricAction::kDefault: return "export " + s.variable + "=\"${" + s.variable + ":-" + s.value + "}\"";
    case FabricAction::kPrepend: return "export " + s.variable + "=\"" + s.value + "${" + s.variable + ":+:$" + s.variable + "}\"";
    // A cloud's profile is not written for `set -u` (launch.sh's): it is sourced with -u off and the
    // caller's -u restored. A missing file still fails the source, and with it the launch.
    case FabricAction::kSource:
      return "{ _gpuplan_u=\"${-//[^u]/}\"; set +u; source " + s.variable + "; [ -z \"$_gpuplan_u\" ] || set -u; }";
    default: break;
  }
  std::string what = s.variable.empty() ? "" : s.variable + (s.value.empty() ? "" : "=" + s.value) + ": ";
  return "# " + what + s.why + " " + Cite(s);
}

std::string Describe(const LaunchPlan& plan, const FabricKey& k) {
  if (!k.multi_node) return "one node (no inter-node fabric)";
  std::string d = plan.network.id + " (" + k.kind + (plan.network.name.empty() ? "" : ", " + plan.network.name) + ")";
  d += k.provider.empty() ? " on own machines" : " on " + k.provider;
  if (plan.nics_per_node > 0) d += ", " + std::to_string(plan.nics_per_node) + " NICs per node";
  // GPUDirect RDMA is a property of RDMA fabrics only; TCP (and GCP's TCPX/TCPXO) carry no such claim.
  const bool rdma = k.kind == "efa" || k.kind == "infiniband" || k.kind == "roce";
  if (rdma) d += k.gdr ? ", GPUDirect RDMA assumed" : ", no GPUDirect RDMA";
  if (k.kind == "tcp") d += ", TCP sockets (no RDMA)";
  return d;
}

}  // namespace

Result<std::vector<FabricSetting>> FabricSettings(const LaunchPlan& plan, const Catalog& catalog, const std::string& csv_text,
                                                  const std::string& file) {
  auto rows = ReadRows(csv_text, file);
  if (!rows.ok()) return rows.status();
  auto key = KeyOf(plan, catalog);
  if (!key.ok()) return key.status();
  std::vector<FabricSetting> out;
  for (const FabricRow* r : EnvRows(*rows, *key)) out.push_back(r->setting);
  GPUPLAN_RETURN_IF_ERROR(CheckNoTwice(out));
  for (FabricAction a : {FabricAction::kK8sResource, FabricAction::kK8sGpuResource, FabricAction::kSkyAccelerator,
                        FabricAction::kSkyNetworkTier})
    if (const FabricRow* r = MostSpecific(*rows, *key, a)) out.push_back(r->setting);
  return out;
}

Result<Artifact> FabricEnv(const LaunchPlan& plan, const Catalog& catalog, const std::string& csv_text, const std::string& file) {
  auto settings = FabricSettings(plan, catalog, csv_text, file);
  if (!settings.ok()) return settings.status();
  auto key = KeyOf(plan, catalog);
  if (!key.ok()) return key.status();
  std::string s = "#!/usr/bin/env bash\n" + CommentHeader(plan, "# ");
  s += "#\n# NCCL / fabric environment for " + CommentLine(Describe(plan, *key)) + ".\n";
  s += "# Rows of " + CommentLine(file) + " (docs/export.md \"Fabric environment\"); each line says why, with its source.\n";
  s += "# launch.sh sources this file; to use it alone: source fabric.env\n";
  for (const auto& x : *settings) {
    if (!IsEnvAction(x.action)) continue;
    const std::string line = EnvLine(x);
    s += x.action == FabricAction::kNote ? CommentLine(line) + "\n" : line + "  # " + CommentLine(x.why + " " + Cite(x)) + "\n";
  }
  return Artifact{"fabric.env", s, false};
}

Result<std::pair<std::string, std::string>> FabricTable(const LaunchPlan& plan) {
  if (!plan.fabric_env_file.empty()) return std::make_pair(plan.fabric_env_text, plan.fabric_env_file);
  const std::string_view text = EmbeddedData("fabric_env.csv");
  if (text.empty()) return Status::Internal("data/fabric_env.csv is not compiled in");
  return std::make_pair(std::string(text), std::string("data/fabric_env.csv"));
}

Result<Artifact> FabricEnv(const LaunchPlan& plan, const Catalog& catalog) {
  auto t = FabricTable(plan);
  if (!t.ok()) return t.status();
  return FabricEnv(plan, catalog, t->first, t->second);
}

}  // namespace gpuplan
