// gpuplan probe: measure this machine (or a recorded one) and record it in the ledger.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli.h"
#include "commands.h"
#include "gpuplan/ledger.h"
#include "gpuplan/probe.h"

namespace gpuplan::cli {

namespace {

const std::vector<FlagSpec>& ProbeFlags() {
  static const std::vector<FlagSpec> flags = {
      {"ledger", true, "the ledger (SQLite) to record into (default $XDG_DATA_HOME/gpuplan/ledger.db, else ~/.local/share/gpuplan/ledger.db)"},
      {"pool", true, "the pool this machine belongs to (default: its pool in the ledger, 'default' for a new machine)"},
      {"bench", true, "storage (then a folder: --bench storage DIR) | cpu | gpu; repeatable"},
      {"size-mib", true, "--bench storage: scratch file size in MiB (default 64)"},
      {"recorded", true, "probe a recorded machine (a folder with fs/ and commands/index.tsv) instead of this one"},
      {"no-record", false, "print what was found; write nothing to the ledger"},
      {"json", false, "JSON output"},
      {"help", false, "this help"},
  };
  return flags;
}

// The raw output next to the ledger, named by its hash: <ledger folder>/raw/<sha256>.<ext>.
Result<std::string> SaveRaw(const std::string& ledger_path, const std::string& text, const std::string& sha, const char* ext) {
  auto dir = std::filesystem::path(ledger_path).parent_path() / "raw";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  auto file = dir / (sha + ext);
  std::ofstream out(file, std::ios::binary);
  out << text;
  if (!out) return Status::BadInput({file.string(), 0, ""}, "cannot write the raw output");
  return file.string();
}

struct ProbeRequest {
  bool storage = false, cpu = false, gpu = false;
  std::string storage_dir;
  int64_t size_bytes = 64LL << 20;
};

Result<ProbeRequest> ReadRequest(const Args& args) {
  ProbeRequest r;
  if (auto it = args.flags.find("bench"); it != args.flags.end())
    for (const auto& b : it->second) {
      if (b == "storage") r.storage = true;
      else if (b == "cpu") r.cpu = true;
      else if (b == "gpu") r.gpu = true;
      else return Status::BadInput({"command line", 0, "--bench"}, "expected storage|cpu|gpu, got '" + b + "'");
    }
  if (r.storage) {
    if (args.positional.size() != 1)
      return Status::BadInput({"command line", 0, "--bench storage"}, "needs one folder to run fio in (--bench storage DIR)");
    r.storage_dir = args.positional[0];
  } else if (!args.positional.empty()) {
    return Status::BadInput({"command line", 0, args.positional[0]}, "unexpected argument (a folder goes with --bench storage)");
  }
  if (args.Has("size-mib")) {
    auto v = ParseInteger(args.Get("size-mib"), {"command line", 0, "--size-mib"}, 1, 1 << 20);
    if (!v.ok()) return v.status();
    r.size_bytes = *v << 20;
  }
  return r;
}

}  // namespace

int CmdProbe(const std::vector<std::string>& argv) {
  const bool json = WantsJson(argv);
  auto args = ParseArgs(argv, ProbeFlags(), false);
  if (!args.ok()) return Fail(args.status(), json);
  if (args->Has("help")) {
    std::printf("usage: gpuplan probe [--ledger PATH] [--pool NAME] [--bench storage DIR] [--bench cpu] [--bench gpu] [--json]\n\n%s",
                FlagHelp(ProbeFlags(), false).c_str());
    return 0;
  }
  auto req = ReadRequest(*args);
  if (!req.ok()) return Fail(req.status(), json);
  std::unique_ptr<Env> env;
  if (args->Has("recorded")) {
    auto rec = NewRecordedEnv(args->Get("recorded"));
    if (!rec.ok()) return Fail(rec.status(), json);
    env = std::move(rec).value();
  } else {
    env = NewRealEnv();
  }
  auto facts = ProbeMachine(*env);
  if (!facts.ok()) return Fail(facts.status(), json);
  const std::string pool = args->Get("pool");
  const bool record = !args->Has("no-record");
  const std::string ledger_path = args->Get("ledger", Ledger::DefaultPath());

  nlohmann::json out = {{"gpuplan_version", kVersion}, {"facts", nlohmann::json::parse(FactsToJson(*facts))}};
  std::string text = FactsToText(*facts);
  std::vector<MeasurementBatch> batches;
  {
    MeasurementBatch b = FactsToBatch(*facts, pool);
    batches.push_back(std::move(b));
  }
  std::vector<std::string> raw_texts = {FactsToJson(*facts)};
  int exit_code = 0;

  if (req->storage) {
    StorageBenchOptions so;
    so.size_bytes = req->size_bytes;
    auto st = BenchStorage(*env, req->storage_dir, so);
    if (!st.ok()) return Fail(st.status(), json);
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& j : st->jobs) {
      jobs.push_back({{"job", j.name}, {"mb_per_s", j.mb_per_s}, {"iops", j.iops}, {"direct", j.direct}});
      text += "storage    " + j.name + ": " + FormatNumber("%.1f", j.mb_per_s) + " MB/s, " + FormatNumber("%.0f", j.iops) +
              " IOPS (fio, " + (j.direct ? "direct" : "buffered") + ", " + std::to_string(so.size_bytes >> 20) + " MiB on " +
              st->path + ")\n";
    }
    for (const auto& n : st->notes) text += "note: " + n + "\n";
    out["storage"] = {{"path", st->path}, {"jobs", jobs}, {"notes", st->notes}};
    for (auto& b : StorageToBatches(*st, facts->hostname, pool)) batches.push_back(std::move(b));
    for (const auto& j : st->jobs) raw_texts.push_back(j.raw_json);
  }
  if (req->cpu) {
    CpuBenchResult c = BenchCpu();
    text += "cpu bench  " + std::to_string(c.threads) + " thread(s): " + FormatNumber("%.1f", c.bytes_per_s_per_core / 1e6) +
            " MB/s and " + FormatNumber("%.2f", c.tokens_per_s_per_core / 1e6) + " M tokens/s per core (one thread alone: " +
            FormatNumber("%.2f", c.single_thread_tokens_per_s / 1e6) + " M tokens/s); tokenize + pack a synthetic corpus\n";
    out["cpu_bench"] = {{"threads", c.threads}, {"bytes_per_s_per_core", c.bytes_per_s_per_core},
                        {"tokens_per_s_per_core", c.tokens_per_s_per_core}, {"single_thread_tokens_per_s", c.single_thread_tokens_per_s},
                        {"tokens", c.tokens}, {"sequences", c.sequences}};
    batches.push_back(CpuToBatch(c, facts->hostname, pool));
    raw_texts.push_back("");
  }
  if (req->gpu) {
    GpuBenchAvailability g = CheckGpuBench(*env);
    text += "gpu bench  not run: " + g.reason + "\n";
    out["gpu_bench"] = {{"ran", false}, {"reason", g.reason}};
    exit_code = 2;
  }

  if (record) {
    auto ledger = Ledger::Open(ledger_path);
    if (!ledger.ok()) return Fail(ledger.status(), json);
    Status st = (*ledger)->AddMachine(facts->hostname, pool, FactsToJson(*facts));
    if (!st.ok()) return Fail(st, json);
    int64_t n = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      if (!raw_texts[i].empty()) {
        auto file = SaveRaw(ledger_path, raw_texts[i], batches[i].raw_sha256, ".json");
        if (!file.ok()) return Fail(file.status(), json);
        batches[i].raw_file = *file;
      }
      auto ids = (*ledger)->RecordMeasurements(batches[i]);
      if (!ids.ok()) return Fail(ids.status(), json);
      n += static_cast<int64_t>(ids->size());
    }
    text += "recorded   " + std::to_string(n) + " measurements for " + facts->hostname + " in " + ledger_path + "\n";
    out["ledger"] = {{"path", ledger_path}, {"measurements_recorded", n}};
  } else {
    out["ledger"] = nullptr;
  }
  if (json) EmitJson(out);
  else std::fputs(text.c_str(), stdout);
  return exit_code;
}

}  // namespace gpuplan::cli
