// The resource ledger (a resource ledger, docs/checks.md "Ledger and probe"): measured capability of real machines, kept in SQLite.
//
// Three tables: pools (a named group of identical machines), machines (a hostname, its pool, what
// `gpuplan probe` found as JSON) and measurements (kind, value, unit, the tool that measured it, the
// SHA-256 of the tool's raw output and that output's file name, the time, the gpuplan version and a
// context JSON). The file is in WAL mode with a busy timeout; every write is one BEGIN IMMEDIATE
// transaction, so two processes can write at once and a process killed in the middle of a write
// leaves the file as it was before that write. The schema is versioned (PRAGMA user_version) and
// migrated forward in order on open; table `migrations` records each step applied.
//
//   auto ledger = Ledger::Open(Ledger::DefaultPath());
//   ledger->RecordMeasurements({.machine = "node-01", .pool = "h100-ib", .tool = "all_reduce_perf",
//                               .raw_sha256 = Sha256Hex(text), .raw_file = "ar.txt",
//                               .items = {{"busbw_gb_per_s", 361.4, "GB/s", R"({"op":"all_reduce"})"}}});
//   auto stats = ledger->Stats({.pool = "h100-ib", .kind = "busbw_gb_per_s"});   // latest, median
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/status.h"

struct sqlite3;

namespace gpuplan {

// The schema version this build writes (migrations 1..kLedgerSchemaVersion).
constexpr int kLedgerSchemaVersion = 2;

// SHA-256 of `data` as 64 lowercase hex digits (FIPS 180-4).
std::string Sha256Hex(std::string_view data);

// The current time as "YYYY-MM-DDTHH:MM:SSZ" (UTC). Ledger times are such strings: they sort.
std::string UtcNow();

// A "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SS[Z]" time as the ledger's UTC form; BadInput at `where` otherwise.
Result<std::string> ParseUtcTime(const std::string& text, const Location& where);

// One reading to record.
struct MeasurementInput {
  std::string kind;                 // e.g. "busbw_gb_per_s", "storage_seq_read_mb_per_s"; [a-z0-9_]+
  double value = 0;                 // finite
  std::string unit;                 // e.g. "GB/s", "MB/s", "IOPS", "bytes"
  std::string context_json = "{}";  // Default: "{}" (a JSON object: message size, GPU index, device...)
};

// Readings of one tool run on one machine: written together or not at all.
struct MeasurementBatch {
  std::string machine;     // hostname; the machine row is created when absent
  std::string pool;        // Default: "" (the machine's pool; "default" for a new machine)
  std::string tool;        // e.g. "all_reduce_perf", "fio", "gpuplan probe"
  std::string raw_sha256;  // Default: "" (no raw output); Sha256Hex of the tool's output otherwise
  std::string raw_file;    // Default: "" (the raw output's file name, as the user gave it)
  std::string time_utc;    // Default: "" (now)
  std::string version;     // Default: "" (this gpuplan's kVersion)
  std::vector<MeasurementInput> items;
};

// A recorded measurement as read back.
struct Measurement {
  int64_t id = 0;
  std::string machine, pool, kind;
  double value = 0;
  std::string unit, tool, raw_sha256, raw_file, time_utc, version, context_json;
};

// Which measurements a query or an export covers; empty fields match everything.
struct MeasurementFilter {
  std::string pool;        // Default: "" (any pool)
  std::string machine;     // Default: "" (any machine)
  std::string kind;        // Default: "" (any kind)
  std::string since_utc;   // Default: "" (no lower bound; inclusive)
  std::string before_utc;  // Default: "" (no upper bound; exclusive)
};

// Per kind (and unit) within a filter: how many, the median and the latest reading.
struct KindStats {
  std::string kind, unit;
  int64_t count = 0;
  double median = 0;   // of all matching values (mean of the middle two for an even count)
  Measurement latest;  // highest time, then highest id
};

struct LedgerMachine {
  std::string hostname, pool, facts_json, first_seen_utc, last_seen_utc;
  int64_t measurements = 0;
};

struct LedgerPool {
  std::string name, description, created_utc;
  int64_t machines = 0, measurements = 0;
};

// What Forget removes. Set exactly one of machine / pool, or before_utc alone, or before_utc with
// one of them (only that machine's or pool's measurements older than the date).
struct ForgetSpec {
  std::string machine;     // Default: "" ; alone: the machine and all its measurements
  std::string pool;        // Default: "" ; alone: the pool, its machines and their measurements
  std::string before_utc;  // Default: "" ; measurements with time_utc < this (machines/pools stay)
};

struct ForgetCounts {
  int64_t pools = 0, machines = 0, measurements = 0;
};

// (Not "ExportFormat": gpuplan/launch.h has that name for launch artefacts.)
enum class LedgerExportFormat { kCsv, kJson };

// Columns of the CSV export, which `ImportCsv` reads back (id is ignored on import).
constexpr const char* kLedgerCsvHeader =
    "id,machine,pool,kind,value,unit,tool,raw_sha256,raw_file,time_utc,version,context_json";

struct LedgerOptions {
  int busy_timeout_ms = 60000;  // Default: 60000 (how long a writer waits for another's lock)
  bool create = true;           // Default: true (create the file and its folder when absent)
};

class Ledger {
 public:
  // $XDG_DATA_HOME/gpuplan/ledger.db, else $HOME/.local/share/gpuplan/ledger.db.
  static std::string DefaultPath();

  // Opens (creating when allowed) and migrates to kLedgerSchemaVersion. A file that is not a
  // SQLite database, or one written by a newer gpuplan, is BadInput naming the path.
  static Result<std::unique_ptr<Ledger>> Open(const std::string& path, const LedgerOptions& options = {});

  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  const std::string& path() const { return path_; }
  Result<int> SchemaVersion() const;

  // Creates the pool when absent (an existing pool keeps its description unless one is given).
  Status AddPool(const std::string& name, const std::string& description = "");
  // Creates or updates a machine: facts_json "" keeps the stored facts; pool "" keeps its pool
  // ("default" for a new machine). The pool is created when absent. last_seen is set to now.
  Status AddMachine(const std::string& hostname, const std::string& pool, const std::string& facts_json = "");

  // Writes every item of the batch in one transaction and returns their ids; a bad item (empty or
  // malformed kind, non-finite value, context that is not a JSON object) fails the whole batch
  // with BadInput and writes nothing.
  Result<std::vector<int64_t>> RecordMeasurements(const MeasurementBatch& batch);

  // Measurements matching the filter, oldest first.
  Result<std::vector<Measurement>> Measurements(const MeasurementFilter& filter) const;
  // The latest measurement of each kind matching the filter, by kind.
  Result<std::vector<Measurement>> LatestPerKind(const MeasurementFilter& filter) const;
  // Count, median and latest of each (kind, unit) matching the filter, by kind.
  Result<std::vector<KindStats>> Stats(const MeasurementFilter& filter) const;

  Result<std::vector<LedgerMachine>> Machines(const std::string& pool = "") const;
  Result<std::vector<LedgerPool>> Pools() const;

  // Counts what Forget would remove, without removing it.
  Result<ForgetCounts> CountForget(const ForgetSpec& spec) const;
  // Removes it in one transaction; returns what was removed.
  Result<ForgetCounts> Forget(const ForgetSpec& spec);

  // CSV (kLedgerCsvHeader) or JSON {"ledger_schema":..,"gpuplan_version":..,"measurements":[...]}.
  Result<std::string> Export(const MeasurementFilter& filter, LedgerExportFormat format) const;

  // Reads a CSV with kLedgerCsvHeader's columns (id, time_utc, version, raw_* and context_json may
  // be absent or empty: now / this version / none / {}), checks every row first (a bad row is
  // "file:line: column: reason" and nothing is written), then commits `rows_per_commit` rows per
  // transaction (0: all in one) and calls `on_commit(rows committed so far)` after each commit.
  Result<int64_t> ImportCsv(const std::string& path, int64_t rows_per_commit = 0,
                            const std::function<void(int64_t)>& on_commit = nullptr);

 private:
  Ledger(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Migrate();
  sqlite3* db_;
  std::string path_;
};

}  // namespace gpuplan
