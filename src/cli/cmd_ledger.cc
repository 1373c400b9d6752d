// gpuplan ledger list | show | export | forget | import: the resource ledger from the command line.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cli.h"
#include "commands.h"
#include "gpuplan/ledger.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& LedgerFlags() {
  static const std::vector<FlagSpec> flags = {
      {"ledger", true, "the ledger file (default $XDG_DATA_HOME/gpuplan/ledger.db, else ~/.local/share/gpuplan/ledger.db)"},
      {"pool", true, "show/export/forget: this pool"},
      {"machine", true, "show/export/forget: this machine (hostname)"},
      {"kind", true, "export: this measurement kind only"},
      {"since", true, "export: measured at or after this UTC time (YYYY-MM-DD[THH:MM:SSZ])"},
      {"before", true, "export: measured before this time; forget: measurements older than this"},
      {"format", true, "export: csv|json (default csv)"},
      {"out", true, "export: write to this file instead of stdout"},
      {"yes", false, "forget: really remove (without it, forget only counts)"},
      {"batch", true, "import: commit every N rows (default: the whole file in one transaction)"},
      {"ack", false, "import: print 'ack N' after each commit (N rows committed so far)"},
      {"json", false, "JSON output (list, show, forget, import)"},
      {"help", false, "this help"},
  };
  return flags;
}

constexpr const char* kUsage =
    "usage: gpuplan ledger list [--ledger PATH]\n"
    "       gpuplan ledger show (HOST|POOL | --machine HOST | --pool POOL)\n"
    "       gpuplan ledger export [--format csv|json] [--pool P] [--machine H] [--kind K] [--since D] [--before D]\n"
    "                             [--out FILE]\n"
    "       gpuplan ledger forget (--machine HOST | --pool POOL | --before DATE) [--yes]\n"
    "       gpuplan ledger import FILE.csv [--batch N] [--ack]   (columns: the export's CSV header)\n\n";

Result<std::unique_ptr<Ledger>> OpenExisting(const Args& a) {
  LedgerOptions o;
  o.create = false;
  return Ledger::Open(a.Get("ledger", Ledger::DefaultPath()), o);
}

Result<MeasurementFilter> FilterFrom(const Args& a) {
  MeasurementFilter f;
  f.pool = a.Get("pool");
  f.machine = a.Get("machine");
  f.kind = a.Get("kind");
  for (auto [flag, field] : {std::pair{"since", &f.since_utc}, std::pair{"before", &f.before_utc}}) {
    if (!a.Has(flag)) continue;
    auto t = ParseUtcTime(a.Get(flag), {"command line", 0, std::string("--") + flag});
    if (!t.ok()) return t.status();
    *field = *t;
  }
  return f;
}

// --out must not be the ledger (or its -wal/-shm): an export over it would destroy what it exports.
Status CheckNotLedger(const std::string& out, const std::string& ledger) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path o = fs::weakly_canonical(out, ec);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string l = ledger + suffix;
    std::error_code e1;
    if ((fs::exists(out, e1) && fs::exists(l, e1) && fs::equivalent(out, l, e1)) || (!ec && o == fs::weakly_canonical(l, e1)))
      return Status::BadInput({"command line", 0, "--out"}, "'" + out + "' is the ledger" + (*suffix ? std::string(" 's ") + suffix + " file" : "") +
                                                             " itself: name another file (nothing written)");
  }
  return Status::Ok();
}

// The whole export or nothing: a temporary file beside the target, renamed over it once written.
Status WriteWhole(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const Location at{path, 0, "--out"};
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Status::BadInput(at, "is a folder: name a file");
  const fs::path tmp = fs::path(path).parent_path() / ("." + fs::path(path).filename().string() + ".gpuplan-tmp-" + std::to_string(::getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::BadInput(at, std::string("cannot write: ") + std::strerror(errno ? errno : EIO));
    f << text;
    f.flush();
    if (!f) {
      const std::string why = std::strerror(errno ? errno : EIO);
      f.close();
      fs::remove(tmp, ec);
      return Status::BadInput(at, "write failed: " + why + " (nothing written)");
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    return Status::BadInput(at, "cannot rename into place: " + why + " (nothing written)");
  }
  return Status::Ok();
}

int List(const Args& a, bool json) {
  auto l = OpenExisting(a);
  if (!l.ok()) return Fail(l.status(), json);
  auto pools = (*l)->Pools();
  auto machines = (*l)->Machines();
  if (!pools.ok()) return Fail(pools.status(), json);
  if (!machines.ok()) return Fail(machines.status(), json);
  if (json) {
    nlohmann::json j = {{"ledger", (*l)->path()}, {"pools", nlohmann::json::array()}, {"machines", nlohmann::json::array()}};
    for (const auto& p : *pools)
      j["pools"].push_back({{"name", p.name}, {"machines", p.machines}, {"measurements", p.measurements}, {"created_utc", p.created_utc}});
    for (const auto& m : *machines)
      j["machines"].push_back({{"hostname", m.hostname}, {"pool", m.pool}, {"measurements", m.measurements},
                               {"first_seen_utc", m.first_seen_utc}, {"last_seen_utc", m.last_seen_utc}});
    EmitJson(j);
    return 0;
  }
  std::printf("ledger %s\n\n%-24s %9s %13s\n", (*l)->path().c_str(), "pool", "machines", "measurements");
  for (const auto& p : *pools) std::printf("%-24s %9lld %13lld\n", p.name.c_str(), (long long)p.machines, (long long)p.measurements);
  std::printf("\n%-32s %-24s %13s  %s\n", "machine", "pool", "measurements", "last seen (UTC)");
  for (const auto& m : *machines)
    std::printf("%-32s %-24s %13lld  %s\n", m.hostname.c_str(), m.pool.c_str(), (long long)m.measurements, m.last_seen_utc.c_str());
  return 0;
}

int Show(const Args& a, bool json) {
  auto l = OpenExisting(a);
  if (!l.ok()) return Fail(l.status(), json);
  MeasurementFilter f;
  f.machine = a.Get("machine");
  f.pool = a.Get("pool");
  std::string what;
  if (f.machine.empty() && f.pool.empty()) {
    if (a.positional.size() != 2) return Fail(Status::BadInput({"command line", 0, "show"}, "name a machine or a pool"), json);
    const std::string name = a.positional[1];
    auto ms = (*l)->Machines();
    if (!ms.ok()) return Fail(ms.status(), json);
    for (const auto& m : *ms)
      if (m.hostname == name) f.machine = name;
    if (f.machine.empty()) {
      auto ps = (*l)->Pools();
      if (!ps.ok()) return Fail(ps.status(), json);
      for (const auto& p : *ps)
        if (p.name == name) f.pool = name;
    }
    if (f.machine.empty() && f.pool.empty())
      return Fail(Status::BadInput({(*l)->path(), 0, name}, "no machine or pool of that name in the ledger ('gpuplan ledger list')"), json);
  }
  what = f.machine.empty() ? "pool " + f.pool : "machine " + f.machine;
  auto stats = (*l)->Stats(f);
  if (!stats.ok()) return Fail(stats.status(), json);
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& k : *stats)
      rows.push_back({{"kind", k.kind}, {"unit", k.unit}, {"count", k.count}, {"median", k.median}, {"latest", k.latest.value},
                      {"machine", k.latest.machine}, {"tool", k.latest.tool}, {"time_utc", k.latest.time_utc},
                      {"version", k.latest.version}, {"raw_sha256", k.latest.raw_sha256}, {"raw_file", k.latest.raw_file}});
    EmitJson({{"ledger", (*l)->path()}, {f.machine.empty() ? "pool" : "machine", f.machine.empty() ? f.pool : f.machine},
              {"kinds", rows}});
    return 0;
  }
  std::printf("%s (ledger %s): latest measurement per kind\n\n", what.c_str(), (*l)->path().c_str());
  std::printf("%-38s %16s %-9s %6s %16s  %-26s %-20s %s\n", "kind", "latest", "unit", "count", "median", "tool", "time (UTC)", "version");
  for (const auto& k : *stats)
    std::printf("%-38s %16s %-9s %6lld %16s  %-26s %-20s %s\n", k.kind.c_str(), FormatNumber("%.6g", k.latest.value).c_str(),
                k.unit.c_str(), (long long)k.count, FormatNumber("%.6g", k.median).c_str(), k.latest.tool.c_str(),
                k.latest.time_utc.c_str(), k.latest.version.c_str());
  if (stats->empty()) std::printf("(no measurements)\n");
  return 0;
}

int Export(const Args& a, bool json) {
  std::string fmt = json ? "json" : a.Get("format", "csv");
  if (fmt != "csv" && fmt != "json") return Fail(Status::BadInput({"command line", 0, "--format"}, "expected csv|json, got '" + fmt + "'"), json);
  if (a.Has("out"))
    if (Status st = CheckNotLedger(a.Get("out"), a.Get("ledger", Ledger::DefaultPath())); !st.ok()) return Fail(st, json);
  auto f = FilterFrom(a);
  if (!f.ok()) return Fail(f.status(), json);
  auto l = OpenExisting(a);
  if (!l.ok()) return Fail(l.status(), json);
  auto text = (*l)->Export(*f, fmt == "csv" ? LedgerExportFormat::kCsv : LedgerExportFormat::kJson);
  if (!text.ok()) return Fail(text.status(), json);
  if (a.Has("out")) {
    if (Status st = WriteWhole(a.Get("out"), *text); !st.ok()) return Fail(st, json);
  } else {
    std::fputs(text->c_str(), stdout);
  }
  return 0;
}

int Forget(const Args& a, bool json) {
  auto l = OpenExisting(a);
  if (!l.ok()) return Fail(l.status(), json);
  ForgetSpec spec;
  spec.machine = a.Get("machine");
  spec.pool = a.Get("pool");
  if (a.Has("before")) {
    auto t = ParseUtcTime(a.Get("before"), {"command line", 0, "--before"});
    if (!t.ok()) return Fail(t.status(), json);
    spec.before_utc = *t;
  }
  const bool yes = a.Has("yes");
  auto counts = yes ? (*l)->Forget(spec) : (*l)->CountForget(spec);
  if (!counts.ok()) return Fail(counts.status(), json);
  const ForgetCounts& c = *counts;
  if (json) {
    EmitJson({{"removed", yes}, {"pools", c.pools}, {"machines", c.machines}, {"measurements", c.measurements}});
  } else {
    std::printf("%s %lld measurement(s), %lld machine(s), %lld pool(s)%s\n", yes ? "removed" : "would remove",
                (long long)c.measurements, (long long)c.machines, (long long)c.pools,
                yes ? "" : "; nothing removed: add --yes to remove them");
  }
  return yes ? 0 : 1;
}

int Import(const Args& a, bool json) {
  if (a.positional.size() != 2) return Fail(Status::BadInput({"command line", 0, "import"}, "needs one CSV file"), json);
  if (auto readable = ReadTextFile(a.positional[1]); !readable.ok()) return Fail(readable.status(), json);  // before creating a ledger
  auto l = Ledger::Open(a.Get("ledger", Ledger::DefaultPath()));
  if (!l.ok()) return Fail(l.status(), json);
  int64_t batch = 0;
  if (a.Has("batch")) {
    auto v = ParseInteger(a.Get("batch"), {"command line", 0, "--batch"}, 1, 1000000000);
    if (!v.ok()) return Fail(v.status(), json);
    batch = *v;
  }
  const bool ack = a.Has("ack");
  auto n = (*l)->ImportCsv(a.positional[1], batch, [&](int64_t committed) {
    if (!ack) return;
    std::printf("ack %lld\n", (long long)committed);
    std::fflush(stdout);  // the line means "committed": it must leave before the next write starts
  });
  if (!n.ok()) return Fail(n.status(), json);
  if (json) EmitJson({{"imported", *n}, {"ledger", (*l)->path()}});
  else std::printf("imported %lld measurement(s) into %s\n", (long long)*n, (*l)->path().c_str());
  return 0;
}

}  // namespace

int CmdLedger(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, LedgerFlags(), false);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help") || args->positional.empty()) {
    std::printf("%s%s", kUsage, FlagHelp(LedgerFlags(), false).c_str());
    return args->Has("help") ? 0 : 1;
  }
  const std::string sub = args->positional[0];
  // A flag another subcommand takes is refused, not ignored (`ledger list --yes`, `ledger import --format xml`).
  static const std::map<std::string, std::set<std::string>> kOwnFlags = {
      {"list", {}},
      {"show", {"pool", "machine"}},
      {"export", {"pool", "machine", "kind", "since", "before", "format", "out"}},
      {"forget", {"pool", "machine", "before", "yes"}},
      {"import", {"batch", "ack"}}};
  if (auto own = kOwnFlags.find(sub); own != kOwnFlags.end())
    for (const auto& [flag, values] : args->flags)
      if (flag != "ledger" && flag != "json" && flag != "help" && !own->second.count(flag))
        return Fail(Status::BadInput({"command line", 0, "--" + flag}, "not a flag of `gpuplan ledger " + sub + "`"), json);
  if (sub == "list") return List(*args, json);
  if (sub == "show") return Show(*args, json);
  if (sub == "export") return Export(*args, json);
  if (sub == "forget") return Forget(*args, json);
  if (sub == "import") return Import(*args, json);
  return Fail(Status::BadInput({"command line", 0, sub}, "unknown ledger command (list, show, export, forget, import)"), json);
}

}  // namespace gpuplan::cli
