// The resource ledger: SQLite in WAL mode, one BEGIN IMMEDIATE transaction per write, a versioned
// schema migrated forward on open. See include/gpuplan/ledger.h and docs/checks.md "Ledger and probe".
#include "gpuplan/ledger.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <tuple>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include "gpuplan/csv.h"
#include "gpuplan/input_file.h"
#include "gpuplan/report.h"

namespace gpuplan {

// ---------------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), so the ledger needs no crypto library.
namespace {
constexpr std::array<uint32_t, 64> kSha256K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void Sha256Block(std::array<uint32_t, 8>& h, const unsigned char* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = hh + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kSha256K[i] + w[i];
    uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}
}  // namespace

std::string Sha256Hex(std::string_view data) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size(), full = n / 64 * 64;
  for (size_t i = 0; i < full; i += 64) Sha256Block(h, p + i);
  unsigned char tail[128] = {0};
  size_t rest = n - full;
  std::copy(p + full, p + n, tail);
  tail[rest] = 0x80;
  size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = uint64_t(n) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t i = 0; i < tail_len; i += 64) Sha256Block(h, tail + i);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint32_t v : h)
    for (int s = 28; s >= 0; s -= 4) out += kHex[(v >> s) & 0xf];
  return out;
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<std::string> ParseUtcTime(const std::string& text, const Location& where) {
  auto bad = [&] {
    return Status::BadInput(where, "expected a UTC time YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, got '" + text + "'");
  };
  std::string s = text;
  if (s.size() == 10) s += "T00:00:00Z";
  else if (s.size() == 19) s += "Z";
  if (s.size() != 20) return bad();
  static const char* kShape = "dddd-dd-ddTdd:dd:ddZ";
  for (size_t i = 0; i < 20; ++i) {
    if (kShape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(s[i])) : s[i] != kShape[i]) return bad();
  }
  const int year = std::stoi(s.substr(0, 4)), mon = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
  int hh = std::stoi(s.substr(11, 2)), mm = std::stoi(s.substr(14, 2)), ss = std::stoi(s.substr(17, 2));
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60) return bad();
  // A day the calendar does not have (2026-02-30, 2025-02-29) or a year before any GPU measurement.
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const int days_in_month[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (day > days_in_month[mon - 1])
    return Status::BadInput(where, "no such date: " + s.substr(0, 10) + " (month " + std::to_string(mon) + " has " +
                                       std::to_string(days_in_month[mon - 1]) + " days)");
  if (year < 1970) return Status::BadInput(where, "year " + std::to_string(year) + " is before 1970: not a measurement time");
  return s;
}

// ---------------------------------------------------------------------------------------------
// Small SQLite helpers.
namespace {

// The database's file: where a SQLite error is located.
std::string DbFile(sqlite3* db) {
  const char* f = db ? sqlite3_db_filename(db, "main") : nullptr;
  return f && *f ? f : "ledger";
}

// A SQLite error (a full disk, a locked or damaged file, a file changed underneath) is about the
// user's file, not a gpuplan bug: bad input at the ledger's path, with SQLite's words.
std::string SqlHint(int code) {
  switch (code & 0xff) {
    case SQLITE_FULL: return " (the disk is full: free space and run it again; nothing was written)";
    case SQLITE_CORRUPT: case SQLITE_NOTADB: return " (the ledger file is damaged: restore a copy or `sqlite3 FILE .recover`)";
    case SQLITE_READONLY: case SQLITE_PERM: case SQLITE_CANTOPEN: return " (no permission to write the ledger or its folder)";
    case SQLITE_BUSY: case SQLITE_LOCKED: return " (another process holds the ledger: try again)";
    case SQLITE_IOERR: return " (an I/O error: the disk, or a full or read-only file system)";
    default: return "";
  }
}

Status SqlError(sqlite3* db, const std::string& what) {
  const int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  return Status::BadInput({DbFile(db), 0, ""}, "ledger: " + what + ": " + (db ? sqlite3_errmsg(db) : "no database") + SqlHint(code));
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql, -1, &st_, nullptr); }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(st_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(st_, i, v);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(st_); }
  std::string Text(int c) const {
    const unsigned char* t = sqlite3_column_text(st_, c);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  double Double(int c) const { return sqlite3_column_double(st_, c); }
  int64_t Int(int c) const { return sqlite3_column_int64(st_, c); }
  void Reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  int rc_;
};

Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::BadInput({DbFile(db), 0, ""}, std::string("ledger: ") + msg + SqlHint(sqlite3_extended_errcode(db)) + " (in: " +
                                                     std::string(sql).substr(0, 40) + ")");
  }
  return Status::Ok();
}

// Runs `body` inside BEGIN IMMEDIATE ... COMMIT; rolls back when it fails. Another writer's lock
// is waited for by SQLite's busy handler (busy_timeout).
Status InTransaction(sqlite3* db, const std::function<Status()>& body) {
  GPUPLAN_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  Status st = body();
  if (st.ok()) st = Exec(db, "COMMIT");
  if (!st.ok()) (void)Exec(db, "ROLLBACK");
  return st;
}

// The schema, one step per version. A step is never edited once released: a change is a new step.
struct Migration {
  int version;
  const char* name;
  const char* sql;
};
const Migration kMigrations[] = {
    {1, "pools, machines, measurements",
     "CREATE TABLE pools (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
     " description TEXT NOT NULL DEFAULT '', created_utc TEXT NOT NULL);"
     "CREATE TABLE machines (id INTEGER PRIMARY KEY, hostname TEXT NOT NULL UNIQUE,"
     " pool_id INTEGER NOT NULL REFERENCES pools(id), facts_json TEXT NOT NULL DEFAULT '{}',"
     " first_seen_utc TEXT NOT NULL, last_seen_utc TEXT NOT NULL);"
     "CREATE TABLE measurements (id INTEGER PRIMARY KEY, machine_id INTEGER NOT NULL REFERENCES machines(id),"
     " kind TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL, tool TEXT NOT NULL,"
     " raw_sha256 TEXT NOT NULL DEFAULT '', time_utc TEXT NOT NULL, version TEXT NOT NULL);"},
    {2, "raw output file name and context per measurement; indexes by kind/time and machine",
     "ALTER TABLE measurements ADD COLUMN raw_file TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE measurements ADD COLUMN context_json TEXT NOT NULL DEFAULT '{}';"
     "CREATE INDEX measurements_kind_time ON measurements(kind, time_utc);"
     "CREATE INDEX measurements_machine ON measurements(machine_id);"},
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kLedgerSchemaVersion);

Result<int> UserVersion(sqlite3* db) {
  Stmt s(db, "PRAGMA user_version");
  if (!s.ok() || s.Step() != SQLITE_ROW) return SqlError(db, "reading user_version");
  return static_cast<int>(s.Int(0));
}

// No measured quantity (bytes of a disk, tokens/s of a cluster) comes near this; 1e308 is a typo or an attack,
// and sums or medians of such values overflow to inf.
constexpr double kMaxMeasurementMagnitude = 1e18;

// PRAGMA application_id of a gpuplan ledger ("GPLN"): SQLite's way to say whose file a database is.
constexpr int64_t kLedgerApplicationId = 0x47504C4E;

// One integer from a PRAGMA or a COUNT query; nullopt with SQLite's error when it cannot be read.
std::optional<int64_t> QueryInt(sqlite3* db, const char* sql) {
  Stmt s(db, sql);
  if (!s.ok() || s.Step() != SQLITE_ROW) return std::nullopt;
  return s.Int(0);
}

// Before gpuplan writes anything into a file: it is gpuplan's ledger (its application_id, or a ledger
// written before the id with gpuplan's tables) or a new empty database, and SQLite finds it healthy.
Status CheckOwnedAndHealthy(sqlite3* db, const Location& where) {
  auto tables = QueryInt(db, "SELECT COUNT(*) FROM sqlite_master");
  if (!tables) {
    const int code = sqlite3_errcode(db) & 0xff;
    // Line 1: the file does not start with SQLite's header ("SQLite format 3").
    if (code == SQLITE_NOTADB) return Status::BadInput({where.file, 1, ""}, "not a gpuplan ledger (not a SQLite database); nothing written");
    if (code != SQLITE_BUSY && code != SQLITE_LOCKED)
      return Status::BadInput(where, std::string("cannot read the ledger: ") + sqlite3_errmsg(db) + SqlHint(code) + "; nothing written");
    return Status::Ok();  // busy: the WAL switch below waits for the other writer
  }
  const int64_t app_id = QueryInt(db, "PRAGMA application_id").value_or(-1);
  if (*tables == 0 && app_id == 0) return Status::Ok();  // a new (empty) database
  if (app_id != kLedgerApplicationId) {
    const int64_t ours = QueryInt(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                                      "('pools', 'machines', 'measurements', 'migrations')").value_or(0);
    const int64_t version = QueryInt(db, "PRAGMA user_version").value_or(-1);
    if (app_id != 0 || ours != 4 || version < 1)
      return Status::BadInput(where, "not a gpuplan ledger: a SQLite database of another application (application_id " +
                                         std::to_string(app_id) + ", " + std::to_string(*tables) +
                                         " schema objects); nothing written. Name another file with --ledger");
  }
  Stmt check(db, "PRAGMA quick_check(5)");
  std::string problems;
  int rc;
  while (check.ok() && (rc = check.Step()) == SQLITE_ROW)
    if (check.Text(0) != "ok") problems += (problems.empty() ? "" : "; ") + check.Text(0);
  if (!check.ok() || (rc != SQLITE_DONE && problems.empty())) problems = sqlite3_errmsg(db);
  if (!problems.empty())
    return Status::BadInput(where, "the ledger is damaged (SQLite quick_check: " + problems.substr(0, 200) +
                                       "); nothing written. Restore a copy, or `sqlite3 FILE .recover`");
  return Status::Ok();
}

bool ValidKind(const std::string& k) {
  if (k.empty() || k.size() > 64) return false;
  return std::all_of(k.begin(), k.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

bool IsJsonObject(const std::string& s) {
  if (!CheckJsonDepth(s, {}).ok()) return false;  // nlohmann parses by recursion: a 100k-deep text would overflow the stack
  try {
    return nlohmann::json::parse(s).is_object();
  } catch (const std::exception&) {
    return false;
  }
}

Status CheckItem(const MeasurementInput& m, const Location& where) {
  Location at = where;
  if (!ValidKind(m.kind)) {
    at.key = "kind";
    return Status::BadInput(at, "must be 1-64 characters of [a-z0-9_], got '" + m.kind + "'");
  }
  if (!std::isfinite(m.value) || std::abs(m.value) > kMaxMeasurementMagnitude) {
    at.key = "value";
    return Status::BadInput(at, "must be a finite number within +-1e18 (" + m.kind + ")");
  }
  if (m.unit.empty()) {
    at.key = "unit";
    return Status::BadInput(at, "must not be empty (" + m.kind + ")");
  }
  if (!m.context_json.empty()) {
    at.key = "context_json";
    if (Status deep = CheckJsonDepth(m.context_json, at); !deep.ok()) return deep;
    if (!IsJsonObject(m.context_json)) return Status::BadInput(at, "must be a JSON object, got '" + m.context_json.substr(0, 80) + "'");
  }
  return Status::Ok();
}

// Inside a transaction: the pool's id, created when absent.
Result<int64_t> EnsurePool(sqlite3* db, const std::string& name, const std::string& description) {
  Stmt ins(db, "INSERT INTO pools(name, description, created_utc) VALUES(?1, ?2, ?3) ON CONFLICT(name) DO UPDATE"
               " SET description = CASE WHEN ?2 = '' THEN description ELSE ?2 END");
  ins.Bind(1, name).Bind(2, description).Bind(3, UtcNow());
  if (!ins.ok() || ins.Step() != SQLITE_DONE) return SqlError(db, "adding pool '" + name + "'");
  Stmt q(db, "SELECT id FROM pools WHERE name = ?1");
  q.Bind(1, name);
  if (!q.ok() || q.Step() != SQLITE_ROW) return SqlError(db, "reading pool '" + name + "'");
  return q.Int(0);
}

// Inside a transaction: the machine's id, created or updated (see Ledger::AddMachine).
Result<int64_t> EnsureMachine(sqlite3* db, const std::string& hostname, const std::string& pool,
                              const std::string& facts_json) {
  if (hostname.empty()) return Status::BadInput({"", 0, "machine"}, "the machine (hostname) must not be empty");
  const std::string now = UtcNow();
  Stmt q(db, "SELECT id FROM machines WHERE hostname = ?1");
  q.Bind(1, hostname);
  int rc = q.Step();
  if (rc == SQLITE_ROW) {
    int64_t id = q.Int(0);
    int64_t pool_id = -1;
    if (!pool.empty()) {
      auto p = EnsurePool(db, pool, "");
      if (!p.ok()) return p.status();
      pool_id = *p;
    }
    Stmt u(db, "UPDATE machines SET last_seen_utc = ?2, pool_id = CASE WHEN ?3 < 0 THEN pool_id ELSE ?3 END,"
               " facts_json = CASE WHEN ?4 = '' THEN facts_json ELSE ?4 END WHERE id = ?1");
    u.Bind(1, id).Bind(2, now).Bind(3, pool_id).Bind(4, facts_json);
    if (u.Step() != SQLITE_DONE) return SqlError(db, "updating machine '" + hostname + "'");
    return id;
  }
  if (rc != SQLITE_DONE) return SqlError(db, "reading machine '" + hostname + "'");
  auto p = EnsurePool(db, pool.empty() ? "default" : pool, "");
  if (!p.ok()) return p.status();
  Stmt ins(db, "INSERT INTO machines(hostname, pool_id, facts_json, first_seen_utc, last_seen_utc) VALUES(?1, ?2, ?3, ?4, ?4)");
  ins.Bind(1, hostname).Bind(2, *p).Bind(3, facts_json.empty() ? std::string("{}") : facts_json).Bind(4, now);
  if (ins.Step() != SQLITE_DONE) return SqlError(db, "adding machine '" + hostname + "'");
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db));
}

constexpr const char* kInsertMeasurementSql =
    "INSERT INTO measurements(machine_id, kind, value, unit, tool, raw_sha256, raw_file, time_utc, version, context_json)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

// Inside a transaction: one measurement row through a prepared INSERT (reset for the next row).
Status StepMeasurement(sqlite3* db, Stmt& ins, int64_t machine_id, const MeasurementBatch& b, const MeasurementInput& m) {
  ins.Reset();
  ins.Bind(1, machine_id).Bind(2, m.kind).Bind(3, m.value).Bind(4, m.unit).Bind(5, b.tool).Bind(6, b.raw_sha256);
  ins.Bind(7, b.raw_file).Bind(8, b.time_utc.empty() ? UtcNow() : b.time_utc);
  ins.Bind(9, b.version.empty() ? std::string(kVersion) : b.version);
  ins.Bind(10, m.context_json.empty() ? std::string("{}") : m.context_json);
  if (ins.Step() != SQLITE_DONE) return SqlError(db, "writing measurement " + m.kind);
  return Status::Ok();
}

// Inside a transaction: one measurement row.
Result<int64_t> InsertMeasurement(sqlite3* db, int64_t machine_id, const MeasurementBatch& b, const MeasurementInput& m) {
  Stmt ins(db, kInsertMeasurementSql);
  ins.Bind(1, machine_id).Bind(2, m.kind).Bind(3, m.value).Bind(4, m.unit).Bind(5, b.tool).Bind(6, b.raw_sha256);
  ins.Bind(7, b.raw_file).Bind(8, b.time_utc.empty() ? UtcNow() : b.time_utc);
  ins.Bind(9, b.version.empty() ? std::string(kVersion) : b.version);
  ins.Bind(10, m.context_json.empty() ? std::string("{}") : m.context_json);
  if (!ins.ok() || ins.Step() != SQLITE_DONE) return SqlError(db, "writing measurement " + m.kind);
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db));
}

Status CheckBatch(const MeasurementBatch& b, const Location& where) {
  if (b.machine.empty()) return Status::BadInput({where.file, where.line, "machine"}, "must not be empty");
  if (b.tool.empty()) return Status::BadInput({where.file, where.line, "tool"}, "must not be empty");
  if (!b.raw_sha256.empty() && (b.raw_sha256.size() != 64 ||
                                b.raw_sha256.find_first_not_of("0123456789abcdef") != std::string::npos))
    return Status::BadInput({where.file, where.line, "raw_sha256"}, "must be 64 lowercase hex digits, got '" + b.raw_sha256 + "'");
  if (!b.time_utc.empty()) {
    auto t = ParseUtcTime(b.time_utc, {where.file, where.line, "time_utc"});
    if (!t.ok()) return t.status();
  }
  for (const auto& m : b.items) GPUPLAN_RETURN_IF_ERROR(CheckItem(m, where));
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string Ledger::DefaultPath() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/gpuplan/ledger.db";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.local/share/gpuplan/ledger.db";
}

Result<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path, const LedgerOptions& options) {
  const Location where{path, 0, ""};
  if (path.empty()) return Status::BadInput({"command line", 0, "--ledger"}, "the ledger path must not be empty");
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (!exists && !options.create) return Status::BadInput(where, "no ledger here (nothing recorded yet)");
  // SQLite would block reading a FIFO and cannot use a device or a folder: regular files only.
  if (struct stat st {}; exists && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Status::BadInput(where, "not a gpuplan ledger (not a regular file: a folder, a FIFO or a device)");
  if (!exists) {
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) return Status::BadInput(where, "cannot create the ledger's folder: " + ec.message());
  }
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | (options.create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::BadInput(where, "cannot open the ledger: " + msg);
  }
  std::unique_ptr<Ledger> ledger(new Ledger(db, path));
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  GPUPLAN_RETURN_IF_ERROR(CheckOwnedAndHealthy(db, where));
  // Switching to WAL needs a moment of exclusive access: another process opening the same new file
  // may hold it, and SQLite answers BUSY without calling the busy handler; wait for it here.
  std::string mode;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.busy_timeout_ms);
  for (;;) {
    Stmt s(db, "PRAGMA journal_mode=WAL");
    int rc = s.ok() ? s.Step() : sqlite3_errcode(db);
    if (rc == SQLITE_ROW) {
      mode = s.Text(0);
      break;
    }
    if ((rc & 0xff) == SQLITE_NOTADB || sqlite3_errcode(db) == SQLITE_NOTADB)
      return Status::BadInput(where, "not a gpuplan ledger (not a SQLite database)");
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline)
      return Status::BadInput(where, std::string("cannot open the ledger: ") + sqlite3_errmsg(db));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (mode != "wal") return Status::BadInput(where, "cannot switch the ledger to WAL mode (journal_mode is '" + mode + "')");
  // FULL: a commit is on disk before it is acknowledged (power loss too, not only kill -9).
  GPUPLAN_RETURN_IF_ERROR(Exec(db, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON"));
  Status st = ledger->Migrate();
  if (!st.ok()) {
    if (st.code() == StatusCode::kBadInput) return st;
    return Status::BadInput(where, st.reason());
  }
  return ledger;
}

Ledger::~Ledger() { sqlite3_close_v2(db_); }

Status Ledger::Migrate() {
  return InTransaction(db_, [&]() -> Status {
    auto v = UserVersion(db_);
    if (!v.ok()) return v.status();
    if (*v > kLedgerSchemaVersion)
      return Status::BadInput({path_, 0, ""}, "ledger schema version " + std::to_string(*v) +
                                                  " was written by a newer gpuplan (this one knows up to " +
                                                  std::to_string(kLedgerSchemaVersion) + ")");
    if (QueryInt(db_, "PRAGMA application_id").value_or(0) != kLedgerApplicationId)
      GPUPLAN_RETURN_IF_ERROR(Exec(db_, ("PRAGMA application_id=" + std::to_string(kLedgerApplicationId)).c_str()));
    if (*v == kLedgerSchemaVersion) return Status::Ok();
    GPUPLAN_RETURN_IF_ERROR(Exec(db_,
                                 "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY,"
                                 " name TEXT NOT NULL, applied_utc TEXT NOT NULL)"));
    for (const Migration& m : kMigrations) {
      if (m.version <= *v) continue;
      GPUPLAN_RETURN_IF_ERROR(Exec(db_, m.sql));
      Stmt rec(db_, "INSERT INTO migrations(version, name, applied_utc) VALUES(?1, ?2, ?3)");
      rec.Bind(1, static_cast<int64_t>(m.version)).Bind(2, std::string(m.name)).Bind(3, UtcNow());
      if (rec.Step() != SQLITE_DONE) return SqlError(db_, "recording migration " + std::to_string(m.version));
      GPUPLAN_RETURN_IF_ERROR(Exec(db_, ("PRAGMA user_version=" + std::to_string(m.version)).c_str()));
    }
    return Status::Ok();
  });
}

Result<int> Ledger::SchemaVersion() const { return UserVersion(db_); }

Status Ledger::AddPool(const std::string& name, const std::string& description) {
  if (name.empty()) return Status::BadInput({"", 0, "pool"}, "the pool name must not be empty");
  return InTransaction(db_, [&]() -> Status { return EnsurePool(db_, name, description).status(); });
}

Status Ledger::AddMachine(const std::string& hostname, const std::string& pool, const std::string& facts_json) {
  if (!facts_json.empty() && !IsJsonObject(facts_json))
    return Status::BadInput({"", 0, "facts_json"}, "must be a JSON object");
  return InTransaction(db_, [&]() -> Status { return EnsureMachine(db_, hostname, pool, facts_json).status(); });
}

Result<std::vector<int64_t>> Ledger::RecordMeasurements(const MeasurementBatch& given) {
  GPUPLAN_RETURN_IF_ERROR(CheckBatch(given, {}));
  MeasurementBatch batch = given;
  if (!batch.time_utc.empty()) batch.time_utc = *ParseUtcTime(batch.time_utc, {});  // "2026-01-01" -> "...T00:00:00Z"
  std::vector<int64_t> ids;
  Status st = InTransaction(db_, [&]() -> Status {
    ids.clear();
    auto machine = EnsureMachine(db_, batch.machine, batch.pool, "");
    if (!machine.ok()) return machine.status();
    for (const auto& m : batch.items) {
      auto id = InsertMeasurement(db_, *machine, batch, m);
      if (!id.ok()) return id.status();
      ids.push_back(*id);
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return ids;
}

Result<std::vector<Measurement>> Ledger::Measurements(const MeasurementFilter& f) const {
  static const char* kSql =
      "SELECT m.id, h.hostname, p.name, m.kind, m.value, m.unit, m.tool, m.raw_sha256, m.raw_file, m.time_utc,"
      " m.version, m.context_json FROM measurements m JOIN machines h ON h.id = m.machine_id"
      " JOIN pools p ON p.id = h.pool_id WHERE (?1 = '' OR p.name = ?1) AND (?2 = '' OR h.hostname = ?2)"
      " AND (?3 = '' OR m.kind = ?3) AND (?4 = '' OR m.time_utc >= ?4) AND (?5 = '' OR m.time_utc < ?5)"
      " ORDER BY m.time_utc, m.id";
  Stmt s(db_, kSql);
  if (!s.ok()) return SqlError(db_, "querying measurements");
  s.Bind(1, f.pool).Bind(2, f.machine).Bind(3, f.kind).Bind(4, f.since_utc).Bind(5, f.before_utc);
  std::vector<Measurement> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    out.push_back({s.Int(0), s.Text(1), s.Text(2), s.Text(3), s.Double(4), s.Text(5), s.Text(6), s.Text(7), s.Text(8),
                   s.Text(9), s.Text(10), s.Text(11)});
    // gpuplan never writes one; a row edited with another tool must not reach a median or a fit as inf/nan.
    if (const double v = out.back().value; !std::isfinite(v) || std::abs(v) > kMaxMeasurementMagnitude)
      return Status::BadInput({path_, 0, "measurements.id " + std::to_string(out.back().id)},
                              "value is not a finite number within +-1e18 (the file was changed outside gpuplan): remove the row "
                              "with sqlite3, or `gpuplan ledger forget`");
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "querying measurements");
  return out;
}

Result<std::vector<Measurement>> Ledger::LatestPerKind(const MeasurementFilter& filter) const {
  auto stats = Stats(filter);
  if (!stats.ok()) return stats.status();
  std::map<std::string, Measurement> by_kind;  // one per kind even when units differ: the latest
  for (const auto& k : *stats) {
    auto it = by_kind.find(k.kind);
    if (it == by_kind.end() || std::tie(k.latest.time_utc, k.latest.id) > std::tie(it->second.time_utc, it->second.id))
      by_kind[k.kind] = k.latest;
  }
  std::vector<Measurement> out;
  for (auto& [kind, m] : by_kind) out.push_back(m);
  return out;
}

Result<std::vector<KindStats>> Ledger::Stats(const MeasurementFilter& filter) const {
  auto rows = Measurements(filter);
  if (!rows.ok()) return rows.status();
  std::map<std::pair<std::string, std::string>, std::vector<const Measurement*>> groups;
  for (const auto& m : *rows) groups[{m.kind, m.unit}].push_back(&m);  // oldest first within a group
  std::vector<KindStats> out;
  for (auto& [key, ms] : groups) {
    KindStats k;
    k.kind = key.first;
    k.unit = key.second;
    k.count = static_cast<int64_t>(ms.size());
    k.latest = *ms.back();
    std::vector<double> v;
    for (const auto* m : ms) v.push_back(m->value);
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    k.median = n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;  // halves first: no overflow near the limits
    out.push_back(std::move(k));
  }
  return out;
}

Result<std::vector<LedgerMachine>> Ledger::Machines(const std::string& pool) const {
  Stmt s(db_,
         "SELECT h.hostname, p.name, h.facts_json, h.first_seen_utc, h.last_seen_utc,"
         " (SELECT COUNT(*) FROM measurements m WHERE m.machine_id = h.id) FROM machines h"
         " JOIN pools p ON p.id = h.pool_id WHERE ?1 = '' OR p.name = ?1 ORDER BY h.hostname");
  if (!s.ok()) return SqlError(db_, "listing machines");
  s.Bind(1, pool);
  std::vector<LedgerMachine> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back({s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Text(4), s.Int(5)});
  if (rc != SQLITE_DONE) return SqlError(db_, "listing machines");
  return out;
}

Result<std::vector<LedgerPool>> Ledger::Pools() const {
  Stmt s(db_,
         "SELECT p.name, p.description, p.created_utc, (SELECT COUNT(*) FROM machines h WHERE h.pool_id = p.id),"
         " (SELECT COUNT(*) FROM measurements m JOIN machines h ON h.id = m.machine_id WHERE h.pool_id = p.id)"
         " FROM pools p ORDER BY p.name");
  if (!s.ok()) return SqlError(db_, "listing pools");
  std::vector<LedgerPool> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back({s.Text(0), s.Text(1), s.Text(2), s.Int(3), s.Int(4)});
  if (rc != SQLITE_DONE) return SqlError(db_, "listing pools");
  return out;
}

namespace {

Status CheckForget(const ForgetSpec& f) {
  if (!f.machine.empty() && !f.pool.empty())
    return Status::BadInput({"command line", 0, "--machine"}, "give a machine or a pool, not both");
  if (f.machine.empty() && f.pool.empty() && f.before_utc.empty())
    return Status::BadInput({"command line", 0, ""}, "say what to forget: --machine HOST, --pool NAME and/or --before DATE");
  return Status::Ok();
}

int64_t Count(sqlite3* db, const char* sql, const ForgetSpec& f) {
  Stmt s(db, sql);
  s.Bind(1, f.machine).Bind(2, f.pool).Bind(3, f.before_utc);
  return s.Step() == SQLITE_ROW ? s.Int(0) : -1;
}

// ?1 machine, ?2 pool, ?3 before: the measurements, machines and pools a ForgetSpec covers.
constexpr const char* kForgetMeasurementsWhere =
    " FROM measurements WHERE machine_id IN (SELECT h.id FROM machines h JOIN pools p ON p.id = h.pool_id"
    " WHERE (?1 = '' OR h.hostname = ?1) AND (?2 = '' OR p.name = ?2)) AND (?3 = '' OR time_utc < ?3)";
constexpr const char* kForgetMachinesWhere =
    " FROM machines WHERE ?3 = '' AND ((?1 <> '' AND hostname = ?1) OR"
    " (?2 <> '' AND pool_id IN (SELECT id FROM pools WHERE name = ?2)))";
constexpr const char* kForgetPoolsWhere = " FROM pools WHERE ?3 = '' AND ?1 = '' AND ?2 <> '' AND name = ?2";

Result<ForgetCounts> CountAll(sqlite3* db, const std::string& path, const ForgetSpec& f) {
  ForgetCounts c;
  c.measurements = Count(db, (std::string("SELECT COUNT(*)") + kForgetMeasurementsWhere).c_str(), f);
  c.machines = Count(db, (std::string("SELECT COUNT(*)") + kForgetMachinesWhere).c_str(), f);
  c.pools = Count(db, (std::string("SELECT COUNT(*)") + kForgetPoolsWhere).c_str(), f);
  if (c.measurements < 0 || c.machines < 0 || c.pools < 0) return SqlError(db, "counting what to forget");
  if (!f.machine.empty() && Count(db, "SELECT COUNT(*) FROM machines WHERE hostname = ?1", f) == 0)
    return Status::BadInput({path, 0, "machine"}, "no machine '" + f.machine + "' in the ledger");
  if (!f.pool.empty() && Count(db, "SELECT COUNT(*) FROM pools WHERE name = ?2", f) == 0)
    return Status::BadInput({path, 0, "pool"}, "no pool '" + f.pool + "' in the ledger");
  return c;
}

}  // namespace

Result<ForgetCounts> Ledger::CountForget(const ForgetSpec& spec) const {
  GPUPLAN_RETURN_IF_ERROR(CheckForget(spec));
  return CountAll(db_, path_, spec);
}

Result<ForgetCounts> Ledger::Forget(const ForgetSpec& spec) {
  GPUPLAN_RETURN_IF_ERROR(CheckForget(spec));
  ForgetCounts counts;
  Status st = InTransaction(db_, [&]() -> Status {
    auto c = CountAll(db_, path_, spec);
    if (!c.ok()) return c.status();
    counts = *c;
    for (const char* where : {kForgetMeasurementsWhere, kForgetMachinesWhere, kForgetPoolsWhere}) {
      Stmt del(db_, (std::string("DELETE") + where).c_str());
      del.Bind(1, spec.machine).Bind(2, spec.pool).Bind(3, spec.before_utc);
      if (!del.ok() || del.Step() != SQLITE_DONE) return SqlError(db_, "forgetting");
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return counts;
}

namespace {
std::string CsvCell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The shortest text that reads back as the same double.
std::string NumberText(double v) {
  char buf[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}
}  // namespace

Result<std::string> Ledger::Export(const MeasurementFilter& filter, LedgerExportFormat format) const {
  auto rows = Measurements(filter);
  if (!rows.ok()) return rows.status();
  if (format == LedgerExportFormat::kCsv) {
    std::string out = std::string(kLedgerCsvHeader) + "\n";
    for (const auto& m : *rows) {
      const std::string cells[] = {std::to_string(m.id), m.machine, m.pool, m.kind, NumberText(m.value), m.unit,
                                   m.tool, m.raw_sha256, m.raw_file, m.time_utc, m.version, m.context_json};
      for (size_t i = 0; i < std::size(cells); ++i) out += (i ? "," : "") + CsvCell(cells[i]);
      out += "\n";
    }
    return out;
  }
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : *rows) {
    nlohmann::json ctx = nlohmann::json::object();
    try {
      if (!CheckJsonDepth(m.context_json, {}).ok()) throw std::runtime_error("too deep");
      ctx = nlohmann::json::parse(m.context_json);
    } catch (const std::exception&) {
      ctx = {{"unparsed", m.context_json}};
    }
    arr.push_back({{"id", m.id}, {"machine", m.machine}, {"pool", m.pool}, {"kind", m.kind}, {"value", m.value},
                   {"unit", m.unit}, {"tool", m.tool}, {"raw_sha256", m.raw_sha256}, {"raw_file", m.raw_file},
                   {"time_utc", m.time_utc}, {"version", m.version}, {"context", ctx}});
  }
  nlohmann::json doc = {{"ledger_schema", kLedgerSchemaVersion}, {"gpuplan_version", kVersion}, {"measurements", arr}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<int64_t> Ledger::ImportCsv(const std::string& path, int64_t rows_per_commit,
                                  const std::function<void(int64_t)>& on_commit) {
  auto table = ReadCsvFile(path);
  if (!table.ok()) return table.status();
  for (const char* col : {"machine", "kind", "value", "unit", "tool"})
    if (table->Column(col) < 0) return Status::BadInput({path, 1, col}, "missing column (header: " + std::string(kLedgerCsvHeader) + ")");
  // Check every row before writing any.
  std::vector<MeasurementBatch> rows;
  std::vector<int> rows_line;
  for (const auto& row : table->rows) {
    CsvRecord r(*table, row);
    const Location where{path, row.line, ""};
    MeasurementBatch b{r.Str("machine"), r.Str("pool"), r.Str("tool"), r.Str("raw_sha256"), r.Str("raw_file"),
                       r.Str("time_utc"), r.Str("version"), {}};
    auto value = ParseDecimal(r.Str("value"), {path, row.line, "value"});
    if (!value.ok()) return value.status();
    b.items.push_back({r.Str("kind"), *value, r.Str("unit"), r.Str("context_json")});
    if (!b.time_utc.empty()) {
      auto t = ParseUtcTime(b.time_utc, {path, row.line, "time_utc"});
      if (!t.ok()) return t.status();
      b.time_utc = *t;
    }
    GPUPLAN_RETURN_IF_ERROR(CheckBatch(b, where));
    rows.push_back(std::move(b));
    rows_line.push_back(row.line);
  }
  const size_t chunk = rows_per_commit > 0 ? static_cast<size_t>(rows_per_commit) : std::max<size_t>(rows.size(), 1);
  int64_t committed = 0;
  for (size_t start = 0; start < rows.size(); start += chunk) {
    const size_t end = std::min(rows.size(), start + chunk);
    Status st = InTransaction(db_, [&]() -> Status {
      // One prepared INSERT for the whole chunk and one machine lookup per (machine, pool): a
      // 200k-row file is a few seconds, not a prepare and three queries per row.
      Stmt ins(db_, kInsertMeasurementSql);
      if (!ins.ok()) return SqlError(db_, "preparing the import");
      std::map<std::pair<std::string, std::string>, int64_t> machine_ids;
      for (size_t i = start; i < end; ++i) {
        auto [it, fresh] = machine_ids.try_emplace({rows[i].machine, rows[i].pool}, 0);
        if (fresh) {
          auto machine = EnsureMachine(db_, rows[i].machine, rows[i].pool, "");
          if (!machine.ok()) return machine.status();
          it->second = *machine;
        }
        if (Status w = StepMeasurement(db_, ins, it->second, rows[i], rows[i].items[0]); !w.ok())
          return Status::BadInput({path, rows_line[i], ""}, w.reason());
      }
      return Status::Ok();
    });
    if (!st.ok()) return st;
    committed += static_cast<int64_t>(end - start);
    if (on_commit) on_commit(committed);
  }
  return committed;
}

}  // namespace gpuplan
