// Bad input to the newer readers (issue 17 item 8): the JSON depth limit, calendar dates, a ledger
// opened only when it is gpuplan's and healthy, exports written whole or not at all, a PLAN.json
// checked against its schema, recorded probe trees confined to themselves, readings not measured
// rather than 0.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gpuplan/input_file.h"
#include "gpuplan/launch.h"
#include "gpuplan/ledger.h"
#include "gpuplan/probe.h"

namespace gpuplan {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/hardening_test.XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(JsonDepth, RefusesDeepNestingAtItsLine) {
  EXPECT_TRUE(CheckJsonDepth(R"({"a": [1, {"b": "[[[[["}]})", {"f.json", 0, ""}).ok());  // brackets in strings do not count
  const std::string deep = "\n\n" + std::string(200, '[') + std::string(200, ']');
  Status st = CheckJsonDepth(deep, {"f.json", 0, "ctx"});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.location().line, 3);
  EXPECT_NE(st.reason().find("nested deeper than 128"), std::string::npos);
  EXPECT_TRUE(CheckJsonDepth(std::string(128, '{') + std::string(128, '}'), {}).ok());
}

TEST(JsonDepth, ADeepFioJsonIsRefusedBeforeItIsParsed) {
  const std::string deep = "{\"jobs\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto r = ParseFioJson(deep, "seqread", false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().reason().find("nested deeper than"), std::string::npos) << r.status().ToString();
}

TEST(UtcTime, RefusesDaysTheCalendarLacks) {
  EXPECT_TRUE(ParseUtcTime("2024-02-29", {}).ok());  // a leap year
  EXPECT_TRUE(ParseUtcTime("2000-02-29T12:00:00Z", {}).ok());
  for (const char* bad : {"2025-02-29", "1900-02-29", "2026-02-30", "2026-04-31", "2026-13-01", "0000-01-01", "2026-00-10"})
    EXPECT_FALSE(ParseUtcTime(bad, {"x.csv", 4, "time_utc"}).ok()) << bad;
  auto st = ParseUtcTime("2026-02-30", {"x.csv", 4, "time_utc"});
  EXPECT_NE(st.status().reason().find("no such date"), std::string::npos);
}

TEST(LedgerOpen, NeverWritesIntoAnotherApplicationsDatabase) {
  TempDir dir;
  const std::string path = dir / "notes.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('x')", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string before = ReadText(path);
  auto l = Ledger::Open(path);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kBadInput);
  EXPECT_NE(l.status().reason().find("another application"), std::string::npos) << l.status().ToString();
  EXPECT_EQ(ReadText(path), before);  // not a byte changed: no gpuplan tables, no WAL switch
}

TEST(LedgerOpen, RefusesADamagedLedgerAndSpecialFiles) {
  TempDir dir;
  const std::string path = dir / "ledger.db";
  {
    auto l = Ledger::Open(path);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    ASSERT_TRUE((*l)->RecordMeasurements({"node-a", "p", "t", "", "", "2026-01-05", "", {{"gemm_tflops", 600, "TFLOPS", "{}"}}}).ok());
  }
  std::string bytes = ReadText(path);
  ASSERT_GT(bytes.size(), 8192u);
  for (size_t page = 4096; page + 12 <= bytes.size(); page += 4096) bytes.replace(page, 12, std::string(12, '\xff'));
  WriteText(path, bytes);
  fs::remove(path + "-wal");
  auto l = Ledger::Open(path);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kBadInput);
  EXPECT_NE(l.status().reason().find("damaged"), std::string::npos) << l.status().ToString();
  const std::string fifo = dir / "pipe.db";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto f = Ledger::Open(fifo);  // must not block on the FIFO
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().reason().find("not a regular file"), std::string::npos);
}

TEST(LedgerOpen, MarksItsOwnFileAndReopensIt) {
  TempDir dir;
  const std::string path = dir / "ledger.db";
  ASSERT_TRUE(Ledger::Open(path).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), 0x47504C4E);
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_TRUE(Ledger::Open(path).ok());
}

TEST(LedgerRead, AStoredInfIsALocatedErrorNotANumber) {
  TempDir dir;
  const std::string path = dir / "ledger.db";
  auto l = Ledger::Open(path);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE((*l)->RecordMeasurements({"node-a", "p", "t", "", "", "2026-01-05", "", {{"tokens_per_s", 100, "tokens/s", "{}"}}}).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE measurements SET value = 9e999", nullptr, nullptr, nullptr), SQLITE_OK);  // +inf
  sqlite3_close(db);
  auto rows = (*l)->Measurements({});
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), StatusCode::kBadInput);
  EXPECT_NE(rows.status().reason().find("finite"), std::string::npos);
  auto big = (*l)->RecordMeasurements({"node-a", "p", "t", "", "", "", "", {{"tokens_per_s", 1e308, "tokens/s", "{}"}}});
  EXPECT_FALSE(big.ok());
  auto deep = (*l)->RecordMeasurements({"node-a", "p", "t", "", "", "", "", {{"x", 1, "u", std::string(100000, '[') + std::string(100000, ']')}}});
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().reason().find("nested deeper"), std::string::npos);
}

TEST(LedgerImport, TwoHundredThousandRowsInOneTransaction) {
  TempDir dir;
  std::string csv = std::string(kLedgerCsvHeader) + "\n";
  for (int i = 0; i < 200000; ++i)
    csv += std::to_string(i) + ",node-" + std::to_string(i % 16) + ",pool,busbw_gb_per_s," + std::to_string(100 + i % 50) +
           ",GB/s,all_reduce_perf,,,2026-01-05,,\n";
  WriteText(dir / "rows.csv", csv);
  auto l = Ledger::Open(dir / "ledger.db");
  ASSERT_TRUE(l.ok());
  auto n = (*l)->ImportCsv(dir / "rows.csv", 0, nullptr);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 200000);
  auto machines = (*l)->Machines();
  ASSERT_TRUE(machines.ok());
  EXPECT_EQ(machines->size(), 16u);
}

TEST(WriteArtifacts, ANewFolderAppearsWholeOrNotAtAll) {
  TempDir dir;
  const std::string out = dir / "a/b/export";
  ASSERT_TRUE(WriteArtifacts({{"launch.sh", "echo hi\n", true}, {"ds.json", "{}\n", false}}, out).ok());
  EXPECT_EQ(ReadText(out + "/launch.sh"), "echo hi\n");
  EXPECT_TRUE(fs::status(out + "/launch.sh").permissions() == fs::perms(0755));
  // Nothing but the two files: no temporary left.
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 2);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "a/b"), fs::directory_iterator()), 1);
}

TEST(WriteArtifacts, AFailureLeavesTheFolderAsItWas) {
  TempDir dir;
  const std::string out = dir / "export";
  WriteText(out + "/launch.sh", "old\n");
  fs::create_directories(out + "/ds.json");  // a folder in the way of the second file
  Status st = WriteArtifacts({{"launch.sh", "new\n", true}, {"ds.json", "{}\n", false}}, out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kBadInput);
  EXPECT_NE(st.reason().find("nothing written"), std::string::npos) << st.ToString();
  EXPECT_EQ(ReadText(out + "/launch.sh"), "old\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 2);
  // A folder that cannot be created (its parent is a file): no half-made folders either.
  WriteText(dir / "file", "x");
  Status st2 = WriteArtifacts({{"launch.sh", "x", true}}, dir / "file/sub");
  ASSERT_FALSE(st2.ok());
  EXPECT_EQ(st2.reason().find("Success"), std::string::npos) << st2.ToString();
}

std::string PlanRow(const std::string& extra) {
  return R"({"schema": 1, "plans": [{"job": {"model.preset": "gpt2", "training.tokens": "1e7", "training.seq_len": "512",
  "training.global_batch": "8", "cluster.gpu": "h100-sxm-80gb", "cluster.num_gpus": "1", "cluster.gpus_per_node": "1"})" +
         extra + "}]}\n";
}

TEST(PlanJson, CheckedAgainstItsSchemaAtItsLine) {
  EXPECT_TRUE(JobFromPlanJson(PlanRow(R"(, "time_s": 3600, "cost_usd": null, "step_time_s": 0.5)"), "P.json", 1).ok());
  struct Case {
    std::string text, words;
  } cases[] = {
      {R"({"schema": 999, "plans": [{"job": {}}]})", "schema"},
      {PlanRow(R"(, "time_s": -1)"), "time_s"},
      {PlanRow(R"(, "time_s": 1e308)"), "time_s"},
      {PlanRow(R"(, "time_s": "fast")"), "number"},
      {PlanRow(R"(, "cost_usd": -5)"), "cost_usd"},
      {PlanRow(R"(, "step_time_s": [1])"), "number"},
      {PlanRow(R"(, "instance": 42)"), "instance"},
      {R"({"plans": ["row"]})", "job"},
      {R"({"plans": [{"job": {"training.seq_len": 512}}]})", "string"},
      {"{\"plans\": [" + std::string(100000, '[') + std::string(100000, ']') + "]}", "nested deeper"},
  };
  for (const auto& c : cases) {
    auto r = JobFromPlanJson(c.text, "P.json", 1);
    ASSERT_FALSE(r.ok()) << c.text.substr(0, 80);
    EXPECT_EQ(r.status().code(), StatusCode::kBadInput) << r.status().ToString();
    EXPECT_EQ(r.status().location().file, "P.json");
    EXPECT_GT(r.status().location().line, 0) << r.status().ToString();
    const std::string all = r.status().location().key + " " + r.status().reason();
    EXPECT_NE(all.find(c.words), std::string::npos) << all;
  }
}

TEST(RecordedTree, ReadsOnlyItself) {
  TempDir dir;
  const std::string src = std::string(GPUPLAN_SOURCE_DIR) + "/tests/fixtures/probe/vm-2cpu-no-gpu";
  fs::copy(src, dir / "m", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  ASSERT_TRUE(NewRecordedEnv(dir / "m").ok());
  fs::remove(dir / "m/fs/proc/meminfo");
  fs::create_symlink("/etc/passwd", dir / "m/fs/proc/meminfo");
  auto env = NewRecordedEnv(dir / "m");
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().reason().find("outside the recorded tree"), std::string::npos) << env.status().ToString();
  fs::remove(dir / "m/fs/proc/meminfo");
  ASSERT_EQ(mkfifo((dir / "m/fs/proc/meminfo").c_str(), 0600), 0);
  auto fifo = NewRecordedEnv(dir / "m");
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.status().reason().find("not a regular file"), std::string::npos);
}

TEST(RecordedTree, MemTotalThatIsNotANumberIsNotMeasured) {
  TempDir dir;
  const std::string src = std::string(GPUPLAN_SOURCE_DIR) + "/tests/fixtures/probe/vm-2cpu-no-gpu";
  fs::copy(src, dir / "m", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove(dir / "m/fs/proc/meminfo");
  WriteText(dir / "m/fs/proc/meminfo", "MemTotal:       abc kB\n");
  auto env = NewRecordedEnv(dir / "m");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto facts = ProbeMachine(**env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->ram_bytes, 0);
  const std::string text = FactsToText(*facts);
  EXPECT_NE(text.find("ram        not measured"), std::string::npos) << text;
  EXPECT_EQ(text.find("ram        0.0 GiB"), std::string::npos);
  EXPECT_NE(text.find("MemTotal is not a kB count"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan
