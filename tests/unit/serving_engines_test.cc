// data/serving_engines.csv: the engine profiles the serving estimate sizes the KV cache with
// (docs/model/serving.md S§2), their loader's errors and the version lookup.
#include <gtest/gtest.h>

#include <filesystem>

#include "../test_util.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gpuplan/data.h"
#include "gpuplan/serving.h"

namespace gpuplan {
namespace {

std::string Header() {
  const std::string all(EmbeddedData("serving_engines.csv"));
  return all.substr(0, all.find('\n') + 1);
}

// A good vllm row (the built-in 0.19 one) with `col` set to `value`.
std::string RowWith(const std::string& col, const std::string& value) {
  auto all = LoadServingEngines();
  EXPECT_TRUE(all.ok());
  const std::string header = Header();
  std::vector<std::string> cols;
  for (size_t at = 0, next; at < header.size(); at = next + 1) {
    next = header.find_first_of(",\n", at);
    cols.push_back(header.substr(at, next - at));
  }
  const std::string good =
      "vllm,0.19,16,gpu_memory_utilization,0.9,total,no,1e9,2.7e8,2.2e9,5.2,1.9e8,14,1024,256,8192,2048,7.5e10,a100,yes,vllm serve,src,2026-12-02,n";
  std::vector<std::string> cells;
  for (size_t at = 0, next; at <= good.size(); at = next + 1) {
    next = good.find(',', at);
    if (next == std::string::npos) next = good.size();
    cells.push_back(good.substr(at, next - at));
  }
  EXPECT_EQ(cells.size(), cols.size());
  std::string out;
  for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + (cols[i] == col ? value : cells[i]);
  return out + "\n";
}

// A directory of this process's own (ctest runs the cases as parallel processes), the file's own name in it.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string dir = testing_util::UniqueTempPath("serving_engines", "");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

Result<std::vector<ServingEngineProfile>> LoadWith(const std::string& body) {
  return LoadServingEngines({WriteTemp("serving_override.csv", Header() + body)});
}

TEST(ServingEngines, BuiltInTableLoadsWithSourcesAndOrderedVersions) {
  auto all = LoadServingEngines();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  for (const char* name : {"vllm", "sglang", "tensorrt-llm", "generic"}) {
    auto e = FindServingEngine(*all, name, "", {});
    ASSERT_TRUE(e.ok()) << name << ": " << e.status().ToString();
    EXPECT_FALSE(e->source.empty()) << name;
    EXPECT_FALSE(e->date.empty()) << name;
    EXPECT_GT(e->memory_fraction_default, 0) << name;
    EXPECT_LE(e->memory_fraction_default, 1) << name;
    EXPECT_EQ(e->where.file, "data/serving_engines.csv");
  }
  // Rows of one engine are oldest first: "" is the newest.
  EXPECT_EQ(FindServingEngine(*all, "vllm", "", {})->version, "0.21");
  EXPECT_EQ(FindServingEngine(*all, "vllm", "0.10", {})->block_size, 16);
  EXPECT_EQ(FindServingEngine(*all, "tensorrt-llm", "1.0", {})->block_size, 32);
  EXPECT_EQ(FindServingEngine(*all, "tensorrt-llm", "1.0", {})->memory_fraction_of, "free");
  EXPECT_EQ(FindServingEngine(*all, "vllm", "0.19", {})->large_gpu_excludes, "a100");
}

TEST(ServingEngines, VersionLookup) {
  auto all = LoadServingEngines();
  ASSERT_TRUE(all.ok());
  // A prefix match: 0.19.0 and 0.19.2rc1 are the 0.19 row, with no note added.
  auto exact = FindServingEngine(*all, "vllm", "0.19.0", {});
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->version, "0.19");
  EXPECT_EQ(exact->notes.find("no profile of its own"), std::string::npos);
  EXPECT_EQ(FindServingEngine(*all, "vllm", "v0.19.2rc1", {})->version, "0.19");
  EXPECT_EQ(FindServingEngine(*all, "VLLM", "0.19", {})->version, "0.19");
  // Between rows: the newest not newer, said in a note.
  auto between = FindServingEngine(*all, "vllm", "0.18.1", {});
  ASSERT_TRUE(between.ok());
  EXPECT_EQ(between->version, "0.17");
  EXPECT_NE(between->version_note.find("vllm 0.18.1 has no profile of its own: the 0.17 profile"), std::string::npos)
      << between->version_note;
  // 0.20 is not 0.2: versions compare by number.
  EXPECT_EQ(FindServingEngine(*all, "vllm", "0.20", {})->version, "0.19");
  EXPECT_EQ(FindServingEngine(*all, "vllm", "0.100", {})->version, "0.21");
  EXPECT_EQ(FindServingEngine(*all, "vllm", "1.2", {})->version, "0.21");
}

TEST(ServingEngines, UnknownEngineOrVersionListsTheKnownOnes) {
  auto all = LoadServingEngines();
  ASSERT_TRUE(all.ok());
  const Location where{"job.yaml", 7, "serving.engine"};
  auto engine = FindServingEngine(*all, "tgi", "", where);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().location().line, 7);
  EXPECT_NE(engine.status().ToString().find("known: vllm, sglang, tensorrt-llm, generic"), std::string::npos)
      << engine.status().ToString();
  auto old = FindServingEngine(*all, "vllm", "0.5.4", where);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().ToString().find("older than every profile"), std::string::npos);
  EXPECT_NE(old.status().ToString().find("0.10, 0.17, 0.19, 0.21"), std::string::npos) << old.status().ToString();
  auto junk = FindServingEngine(*all, "vllm", "latest", where);
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().ToString().find("not a version"), std::string::npos);
}

TEST(ServingEngines, OverrideRowsReplaceOrAdd) {
  auto replaced = LoadWith(RowWith("memory_fraction_default", "0.8"));
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_DOUBLE_EQ(FindServingEngine(*replaced, "vllm", "0.19", {})->memory_fraction_default, 0.8);
  auto base = LoadServingEngines();
  EXPECT_EQ(replaced->size(), base->size());
  auto added = LoadWith(RowWith("version", "0.18"));
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(added->size(), base->size() + 1);
  EXPECT_EQ(FindServingEngine(*added, "vllm", "0.18.3", {})->version, "0.18");  // sorted into place
}

struct BadCell {
  std::string column, value, reason;
};

TEST(ServingEngines, BadCellsAreLocatedByFileLineAndColumn) {
  const BadCell cases[] = {
      {"engine", "vLLM", "lower-case"},
      {"version", "0.19-beta", "dotted version"},
      {"block_size", "0", "must be in [1, "},
      {"block_size", "16.5", ""},
      {"memory_fraction_key", "", "flag"},
      {"memory_fraction_default", "0", "must be in (0, 1]"},
      {"memory_fraction_default", "1.5", ""},
      {"memory_fraction_of", "device", "total or free"},
      {"cuda_graph_before_kv", "maybe", ""},
      {"non_torch_bytes_tp", "-1", ""},
      {"activation_fixed_bytes", "1GiB", ""},
      {"max_num_seqs_large", "", ">= 1"},
      {"large_gpu_excludes", "A100", "lower-case"},
      {"chunked_prefill", "sometimes", ""},
      {"source", "", "source"},
      {"date", "yesterday", "YYYY-MM-DD"},
  };
  for (const auto& c : cases) {
    auto r = LoadWith(RowWith(c.column, c.value));
    ASSERT_FALSE(r.ok()) << c.column << "=" << c.value;
    const std::string msg = r.status().ToString();
    EXPECT_EQ(r.status().location().line, 2) << msg;
    EXPECT_EQ(r.status().location().key, c.column) << msg;
    EXPECT_NE(msg.find("serving_override.csv:2: " + c.column + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.reason), std::string::npos) << msg;
  }
}

TEST(ServingEngines, DuplicateRowsAndMissingColumnsAreErrors) {
  auto dup = LoadWith(RowWith("notes", "a") + RowWith("notes", "b"));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().location().line, 3);
  EXPECT_NE(dup.status().ToString().find("line 2 of this file"), std::string::npos) << dup.status().ToString();
  auto missing = LoadServingEngines({WriteTemp("serving_short.csv", "engine,version\nvllm,0.19\n")});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().ToString().find("serving_short.csv:1: block_size: missing column"), std::string::npos)
      << missing.status().ToString();
  auto absent = LoadServingEngines({"/nonexistent/serving.csv"});
  EXPECT_FALSE(absent.ok());
}

}  // namespace
}  // namespace gpuplan
