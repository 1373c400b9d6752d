// The resource ledger: schema and migrations, one transaction per write, queries, forget, export/import.
#include "gpuplan/ledger.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace gpuplan {
namespace {

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ledger_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/sub/ledger.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<Ledger> OpenOrDie() {
    auto l = Ledger::Open(path_);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return std::move(l).value();
  }
  // Raw SQL on the same file through a second connection.
  std::string Sql1(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string out;
    sqlite3_exec(
        db, sql.c_str(),
        [](void* p, int n, char** v, char**) {
          if (n > 0 && v[0]) *static_cast<std::string*>(p) = v[0];
          return 0;
        },
        &out, nullptr);
    sqlite3_close(db);
    return out;
  }
  std::string dir_, path_;
};

MeasurementBatch Batch(const std::string& machine, const std::string& pool, std::vector<MeasurementInput> items,
                       const std::string& time = "") {
  MeasurementBatch b;
  b.machine = machine;
  b.pool = pool;
  b.tool = "all_reduce_perf";
  b.raw_sha256 = Sha256Hex("raw output of " + machine);
  b.raw_file = "ar-" + machine + ".txt";
  b.time_utc = time;
  b.items = std::move(items);
  return b;
}

TEST(Sha256, KnownVectors) {  // FIPS 180-4 examples
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(UtcTime, ParsesDatesAndRejectsOthers) {
  EXPECT_EQ(*ParseUtcTime("2026-03-04", {}), "2026-03-04T00:00:00Z");
  EXPECT_EQ(*ParseUtcTime("2026-03-04T05:06:07", {}), "2026-03-04T05:06:07Z");
  EXPECT_FALSE(ParseUtcTime("2026-13-04", {}).ok());
  EXPECT_FALSE(ParseUtcTime("yesterday", {}).ok());
  EXPECT_EQ(UtcNow().size(), 20u);
}

TEST_F(LedgerTest, OpenCreatesWalDatabaseAtCurrentSchema) {
  auto l = OpenOrDie();
  EXPECT_EQ(*l->SchemaVersion(), kLedgerSchemaVersion);
  EXPECT_EQ(Sql1("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(Sql1("SELECT COUNT(*) FROM migrations"), std::to_string(kLedgerSchemaVersion));
  EXPECT_EQ(Sql1("SELECT group_concat(version) FROM (SELECT version FROM migrations ORDER BY version)"), "1,2");
  LedgerOptions no_create;
  no_create.create = false;
  EXPECT_FALSE(Ledger::Open(dir_ + "/absent.db", no_create).ok());
}

TEST_F(LedgerTest, RecordsAndReadsBackEveryField) {
  auto l = OpenOrDie();
  auto ids = l->RecordMeasurements(Batch("node-01", "h100-ib",
                                         {{"busbw_gb_per_s", 361.5, "GB/s", R"({"op":"all_reduce","bytes":8589934592})"},
                                          {"algbw_gb_per_s", 193.2, "GB/s", ""}},
                                         "2026-11-30T10:00:00Z"));
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  ASSERT_EQ(ids->size(), 2u);
  auto ms = l->Measurements({});
  ASSERT_TRUE(ms.ok());
  ASSERT_EQ(ms->size(), 2u);
  const Measurement& m = (*ms)[0];
  EXPECT_EQ(m.machine, "node-01");
  EXPECT_EQ(m.pool, "h100-ib");
  EXPECT_EQ(m.kind, "busbw_gb_per_s");
  EXPECT_DOUBLE_EQ(m.value, 361.5);
  EXPECT_EQ(m.unit, "GB/s");
  EXPECT_EQ(m.tool, "all_reduce_perf");
  EXPECT_EQ(m.raw_sha256, Sha256Hex("raw output of node-01"));
  EXPECT_EQ(m.raw_file, "ar-node-01.txt");
  EXPECT_EQ(m.time_utc, "2026-11-30T10:00:00Z");
  EXPECT_EQ(m.version, "0.3.0");
  EXPECT_EQ(nlohmann::json::parse(m.context_json)["bytes"], 8589934592LL);
  EXPECT_EQ((*ms)[1].context_json, "{}");
  auto machines = l->Machines();
  ASSERT_EQ(machines->size(), 1u);
  EXPECT_EQ((*machines)[0].measurements, 2);
}

TEST_F(LedgerTest, BadItemFailsTheWholeBatchAndWritesNothing) {
  auto l = OpenOrDie();
  auto r = l->RecordMeasurements(Batch("node-01", "p", {{"busbw_gb_per_s", 1, "GB/s"}, {"Bad Kind", 2, "GB/s"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kBadInput);
  EXPECT_NE(r.status().ToString().find("kind"), std::string::npos);
  EXPECT_FALSE(l->RecordMeasurements(Batch("n", "p", {{"x", std::nan(""), "GB/s"}})).ok());
  EXPECT_FALSE(l->RecordMeasurements(Batch("n", "p", {{"x", 1, "GB/s", "[1,2]"}})).ok());
  EXPECT_TRUE(l->Measurements({})->empty());
  EXPECT_TRUE(l->Machines()->empty());  // not even the machine row
}

TEST_F(LedgerTest, FailureInsideTheTransactionRollsBackEarlierRows) {
  auto l = OpenOrDie();
  // A trigger makes the third insert fail after two rows of the batch are already written.
  Sql1("CREATE TRIGGER boom BEFORE INSERT ON measurements WHEN NEW.kind = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END");
  auto r = l->RecordMeasurements(
      Batch("node-01", "p", {{"busbw_gb_per_s", 1, "GB/s"}, {"algbw_gb_per_s", 2, "GB/s"}, {"boom", 3, "GB/s"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Sql1("SELECT COUNT(*) FROM measurements"), "0");
  EXPECT_EQ(Sql1("SELECT COUNT(*) FROM machines"), "0");
  EXPECT_TRUE(l->RecordMeasurements(Batch("node-01", "p", {{"busbw_gb_per_s", 1, "GB/s"}})).ok());
  EXPECT_EQ(Sql1("SELECT COUNT(*) FROM measurements"), "1");
}

TEST_F(LedgerTest, StatsGiveMedianAndLatestPerKind) {
  auto l = OpenOrDie();
  ASSERT_TRUE(l->RecordMeasurements(Batch("a", "h100", {{"busbw_gb_per_s", 300, "GB/s"}}, "2026-11-01T00:00:00Z")).ok());
  ASSERT_TRUE(l->RecordMeasurements(Batch("b", "h100", {{"busbw_gb_per_s", 360, "GB/s"}}, "2026-11-03T00:00:00Z")).ok());
  ASSERT_TRUE(l->RecordMeasurements(Batch("a", "h100", {{"busbw_gb_per_s", 340, "GB/s"}}, "2026-11-02T00:00:00Z")).ok());
  ASSERT_TRUE(l->RecordMeasurements(Batch("c", "a100", {{"busbw_gb_per_s", 200, "GB/s"}}, "2026-11-04T00:00:00Z")).ok());
  ASSERT_TRUE(l->RecordMeasurements(Batch("a", "h100", {{"gemm_tflops", 700, "TFLOP/s"}, {"gemm_tflops", 650, "TFLOP/s"}},
                                          "2026-11-02T00:00:00Z")).ok());
  auto s = l->Stats({.pool = "h100"});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].kind, "busbw_gb_per_s");
  EXPECT_EQ((*s)[0].count, 3);
  EXPECT_DOUBLE_EQ((*s)[0].median, 340);
  EXPECT_DOUBLE_EQ((*s)[0].latest.value, 360);  // by time, not by insertion
  EXPECT_EQ((*s)[0].latest.machine, "b");
  EXPECT_DOUBLE_EQ((*s)[1].median, 675);        // even count: mean of the middle two
  EXPECT_DOUBLE_EQ((*s)[1].latest.value, 650);  // same time: the later id
  auto latest = l->LatestPerKind({.pool = "a100"});
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_DOUBLE_EQ((*latest)[0].value, 200);
  EXPECT_EQ(l->Measurements({.kind = "busbw_gb_per_s"})->size(), 4u);
  EXPECT_EQ(l->Measurements({.since_utc = "2026-11-02T00:00:00Z", .before_utc = "2026-11-04T00:00:00Z"})->size(), 4u);
  EXPECT_EQ(l->Measurements({.machine = "a"})->size(), 4u);
  auto pools = l->Pools();
  ASSERT_EQ(pools->size(), 2u);
  EXPECT_EQ((*pools)[1].name, "h100");
  EXPECT_EQ((*pools)[1].machines, 2);
  EXPECT_EQ((*pools)[1].measurements, 5);
}

TEST_F(LedgerTest, MachineKeepsItsPoolUnlessOneIsGiven) {
  auto l = OpenOrDie();
  ASSERT_TRUE(l->AddMachine("n1", "", R"({"cpu":{"cores":2}})").ok());
  EXPECT_EQ((*l->Machines())[0].pool, "default");
  ASSERT_TRUE(l->AddMachine("n1", "h100", "").ok());
  EXPECT_EQ((*l->Machines())[0].pool, "h100");
  EXPECT_EQ((*l->Machines())[0].facts_json, R"({"cpu":{"cores":2}})");  // "" keeps the facts
  ASSERT_TRUE(l->RecordMeasurements(Batch("n1", "", {{"x", 1, "u"}})).ok());
  EXPECT_EQ((*l->Machines())[0].pool, "h100");
  EXPECT_FALSE(l->AddMachine("n1", "", "not json").ok());
}

TEST_F(LedgerTest, ForgetMachinePoolAndOlderThan) {
  auto l = OpenOrDie();
  ASSERT_TRUE(l->RecordMeasurements(Batch("a", "h100", {{"x", 1, "u"}, {"y", 2, "u"}}, "2026-01-01")).ok());
  ASSERT_TRUE(l->RecordMeasurements(Batch("a", "h100", {{"x", 3, "u"}}, "2026-06-01T00:00:00Z")).ok());
  ASSERT_TRUE(l->RecordMeasurements(Batch("b", "h100", {{"x", 4, "u"}}, "2026-06-01T00:00:00Z")).ok());
  ASSERT_TRUE(l->RecordMeasurements(Batch("c", "a100", {{"x", 5, "u"}}, "2026-01-01T00:00:00Z")).ok());

  auto counted = l->CountForget({.before_utc = "2026-03-01T00:00:00Z"});
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->measurements, 3);
  EXPECT_EQ(l->Measurements({})->size(), 5u);  // counting removes nothing

  auto old = l->Forget({.pool = "h100", .before_utc = "2026-03-01T00:00:00Z"});
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->measurements, 2);
  EXPECT_EQ(old->machines, 0);
  EXPECT_EQ(l->Measurements({})->size(), 3u);

  auto m = l->Forget({.machine = "a"});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->measurements, 1);
  EXPECT_EQ(m->machines, 1);
  EXPECT_EQ(m->pools, 0);

  auto p = l->Forget({.pool = "h100"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->measurements, 1);
  EXPECT_EQ(p->machines, 1);
  EXPECT_EQ(p->pools, 1);
  EXPECT_EQ(l->Measurements({})->size(), 1u);
  EXPECT_EQ(l->Pools()->size(), 1u);

  EXPECT_EQ(l->Forget({.machine = "nobody"}).status().code(), StatusCode::kBadInput);
  EXPECT_FALSE(l->Forget({}).ok());
  EXPECT_FALSE(l->Forget({.machine = "c", .pool = "a100"}).ok());
  EXPECT_EQ(l->Measurements({})->size(), 1u);
}

// The v1 schema exactly as migration 1 wrote it, with rows, then opened by this build.
TEST_F(LedgerTest, MigratesAVersion1DatabaseKeepingItsRows) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  Sql1(
      "CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_utc TEXT NOT NULL);"
      "CREATE TABLE pools (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT NOT NULL DEFAULT '',"
      " created_utc TEXT NOT NULL);"
      "CREATE TABLE machines (id INTEGER PRIMARY KEY, hostname TEXT NOT NULL UNIQUE, pool_id INTEGER NOT NULL REFERENCES pools(id),"
      " facts_json TEXT NOT NULL DEFAULT '{}', first_seen_utc TEXT NOT NULL, last_seen_utc TEXT NOT NULL);"
      "CREATE TABLE measurements (id INTEGER PRIMARY KEY, machine_id INTEGER NOT NULL REFERENCES machines(id), kind TEXT NOT NULL,"
      " value REAL NOT NULL, unit TEXT NOT NULL, tool TEXT NOT NULL, raw_sha256 TEXT NOT NULL DEFAULT '', time_utc TEXT NOT NULL,"
      " version TEXT NOT NULL);"
      "INSERT INTO migrations VALUES (1, 'pools, machines, measurements', '2026-10-01T00:00:00Z');"
      "INSERT INTO pools VALUES (1, 'h100', 'old pool', '2026-10-01T00:00:00Z');"
      "INSERT INTO machines VALUES (1, 'node-01', 1, '{}', '2026-10-01T00:00:00Z', '2026-10-01T00:00:00Z');"
      "INSERT INTO measurements VALUES (1, 1, 'busbw_gb_per_s', 355.5, 'GB/s', 'all_reduce_perf', '', '2026-10-01T00:00:00Z', '0.2.0');"
      "INSERT INTO measurements VALUES (2, 1, 'gemm_tflops', 712, 'TFLOP/s', 'gemm', '', '2026-10-02T00:00:00Z', '0.2.0');"
      "PRAGMA user_version = 1;");
  ASSERT_EQ(Sql1("PRAGMA user_version"), "1");
  auto l = OpenOrDie();
  EXPECT_EQ(*l->SchemaVersion(), 2);
  auto ms = l->Measurements({});
  ASSERT_EQ(ms->size(), 2u);
  EXPECT_EQ((*ms)[0].pool, "h100");
  EXPECT_DOUBLE_EQ((*ms)[0].value, 355.5);
  EXPECT_EQ((*ms)[0].version, "0.2.0");
  EXPECT_EQ((*ms)[0].raw_file, "");      // new column, default
  EXPECT_EQ((*ms)[1].context_json, "{}");
  EXPECT_EQ(Sql1("SELECT group_concat(version) FROM (SELECT version FROM migrations ORDER BY version)"), "1,2");
  EXPECT_EQ(Sql1("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'measurements_kind_time'"), "1");
  // New writes use the new columns.
  ASSERT_TRUE(l->RecordMeasurements(Batch("node-01", "", {{"busbw_gb_per_s", 360, "GB/s", R"({"n":8})"}})).ok());
  EXPECT_EQ(l->Measurements({})->back().raw_file, "ar-node-01.txt");
  l.reset();
  EXPECT_EQ(*OpenOrDie()->SchemaVersion(), 2);  // reopening migrates nothing twice
  EXPECT_EQ(Sql1("SELECT COUNT(*) FROM migrations"), "2");
}

TEST_F(LedgerTest, RefusesNewerSchemaAndNonDatabaseFiles) {
  { auto l = OpenOrDie(); }
  Sql1("PRAGMA user_version = 99");
  auto newer = Ledger::Open(path_);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), StatusCode::kBadInput);
  EXPECT_NE(newer.status().reason().find("newer gpuplan"), std::string::npos);

  const std::string junk = dir_ + "/junk.db";
  std::ofstream(junk) << std::string(8192, 'x');
  auto bad = Ledger::Open(junk);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kBadInput);
  EXPECT_EQ(bad.status().location().file, junk);
}

TEST_F(LedgerTest, CsvExportImportsBackAndJsonExportParses) {
  auto l = OpenOrDie();
  ASSERT_TRUE(l->RecordMeasurements(Batch("node,01", "h100", {{"busbw_gb_per_s", 361.25, "GB/s", R"({"op":"all \"reduce\""})"}},
                                          "2026-11-30T10:00:00Z")).ok());
  ASSERT_TRUE(l->RecordMeasurements(Batch("node-02", "h100", {{"storage_seq_read_mb_per_s", 0.1, "MB/s"}})).ok());
  auto csv = l->Export({}, LedgerExportFormat::kCsv);
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(csv->substr(0, csv->find('\n')), kLedgerCsvHeader);
  const std::string file = dir_ + "/export.csv";
  std::ofstream(file) << *csv;

  const std::string other_path = dir_ + "/other.db";
  auto other = Ledger::Open(other_path);
  ASSERT_TRUE(other.ok());
  std::vector<int64_t> acks;
  auto n = (*other)->ImportCsv(file, 1, [&](int64_t c) { acks.push_back(c); });
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(acks, (std::vector<int64_t>{1, 2}));
  auto a = l->Measurements({}), b = (*other)->Measurements({});
  ASSERT_EQ(b->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*a)[i].machine, (*b)[i].machine);
    EXPECT_EQ((*a)[i].pool, (*b)[i].pool);
    EXPECT_EQ((*a)[i].value, (*b)[i].value);  // exact: the CSV number reads back to the same double
    EXPECT_EQ((*a)[i].time_utc, (*b)[i].time_utc);
    EXPECT_EQ((*a)[i].raw_sha256, (*b)[i].raw_sha256);
    EXPECT_EQ((*a)[i].context_json, (*b)[i].context_json);
  }
  auto json = nlohmann::json::parse(*l->Export({.kind = "busbw_gb_per_s"}, LedgerExportFormat::kJson));
  EXPECT_EQ(json["ledger_schema"], kLedgerSchemaVersion);
  ASSERT_EQ(json["measurements"].size(), 1u);
  EXPECT_EQ(json["measurements"][0]["context"]["op"], "all \"reduce\"");
  EXPECT_EQ(json["measurements"][0]["machine"], "node,01");
}

TEST_F(LedgerTest, ImportChecksEveryRowBeforeWriting) {
  auto l = OpenOrDie();
  const std::string file = dir_ + "/in.csv";
  std::ofstream(file) << "machine,pool,kind,value,unit,tool\n"
                         "n1,p,busbw_gb_per_s,300,GB/s,all_reduce_perf\n"
                         "n1,p,busbw_gb_per_s,fast,GB/s,all_reduce_perf\n";
  auto n = l->ImportCsv(file);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().location().file, file);
  EXPECT_EQ(n.status().location().line, 3);
  EXPECT_EQ(n.status().location().key, "value");
  EXPECT_TRUE(l->Measurements({})->empty());
  std::ofstream(file) << "machine,kind,value\nn1,x,1\n";
  auto missing = l->ImportCsv(file);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().location().key, "unit");
}

// Two connections writing at once (threads here; tests/real/ledger_crash_test.sh does it with processes).
TEST_F(LedgerTest, TwoWritersAtOnceLoseNothing) {
  { auto l = OpenOrDie(); }
  auto writer = [&](const std::string& machine) {
    auto l = Ledger::Open(path_);
    ASSERT_TRUE(l.ok());
    for (int i = 0; i < 200; ++i)
      ASSERT_TRUE((*l)->RecordMeasurements(Batch(machine, "p", {{"busbw_gb_per_s", double(i), "GB/s"}})).ok());
  };
  std::thread a(writer, "a"), b(writer, "b");
  a.join();
  b.join();
  auto l = OpenOrDie();
  EXPECT_EQ(l->Measurements({.machine = "a"})->size(), 200u);
  EXPECT_EQ(l->Measurements({.machine = "b"})->size(), 200u);
  EXPECT_EQ(Sql1("PRAGMA integrity_check"), "ok");
}

}  // namespace
}  // namespace gpuplan
