// The memory margin (docs/model/memory.md §6.1), borrowed error bands, owned machines
// (nodes_available) and stale prices (docs/model/planner.md).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

#include "gpuplan/error_bands.h"
#include "gpuplan/plan.h"
#include "gpuplan/report.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

// Property: whatever the bands file holds, the default headroom comes from a group with at least
// memory_headroom_min_rows runs, never exceeds memory_headroom_max, and is that group's p90
// under-prediction when below the cap.
TEST(Margin, HeadroomNeverComesFromAGroupUnderTheMinimum) {
  const Calibration& cal = Calibration::Builtin();
  const int min_rows = static_cast<int>(cal.Get("memory_headroom_min_rows"));
  const double cap = cal.Get("memory_headroom_max");
  ASSERT_GE(min_rows, 10);
  const std::vector<std::string> fws = {"generic", "hf-trainer", "megatron", "deepspeed", "fsdp", "*"};
  const std::vector<std::string> fams = {"ampere", "hopper", "ada", "*"};
  const std::vector<std::string> methods = {"full", "lora", "qlora", "pretrain", "*"};
  std::mt19937 rng(16);
  for (int trial = 0; trial < 300; ++trial) {
    ErrorBands bands;
    const int n = std::uniform_int_distribution<int>(0, 25)(rng);
    for (int i = 0; i < n; ++i) {
      ErrorBand b;
      b.kind = rng() % 4 == 0 ? "throughput" : "memory";
      b.framework = fws[rng() % fws.size()];
      b.gpu_family = fams[rng() % fams.size()];
      b.method = methods[rng() % methods.size()];
      b.rows = std::uniform_int_distribution<int>(1, 30)(rng);
      b.p90_under = std::uniform_real_distribution<double>(0, 1.5)(rng);
      b.p90_abs = b.p90_under + 0.1;
      bands.Add(b);
    }
    const std::string fw = fws[rng() % (fws.size() - 1)], method = methods[rng() % 4];
    const std::string fam = rng() % 3 == 0 ? "" : fams[rng() % (fams.size() - 1)];
    Job j = MakeJob("model: {preset: gpt2}\ntraining: {method: " + std::string(method == "pretrain" ? "full" : method) +
                    ", framework: " + fw + "}\n");
    const MemoryHeadroom h = MemoryHeadroomFor(j, fam, cal, bands);
    EXPECT_LE(h.fraction, std::max(cap, cal.Get("memory_model_error_margin")) + 1e-12);
    if (h.band) {
      EXPECT_GE(h.band->rows, min_rows) << h.source;
      EXPECT_EQ(h.band->kind, "memory");
      EXPECT_DOUBLE_EQ(h.fraction, std::min(h.band->p90_under, cap));
      EXPECT_EQ(h.capped, h.band->p90_under > cap);
    } else {
      EXPECT_DOUBLE_EQ(h.fraction, cal.Get("memory_model_error_margin"));
    }
  }
}

// The shipped bands: the default framework x full fine-tune group has 6 runs, so the method's
// pooled band is used, capped at 20%; an explicit constraint still wins.
TEST(Margin, DefaultFullFinetuneUsesThePooledBand) {
  const Calibration& cal = Calibration::Builtin();
  Job j = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: full}\n");
  const MemoryHeadroom h = MemoryHeadroomFor(j, "hopper", cal);
  ASSERT_TRUE(h.band.has_value());
  EXPECT_EQ(h.band->framework, "*");
  EXPECT_EQ(h.band->method, "full");
  EXPECT_GE(h.band->rows, 10);
  EXPECT_LE(h.fraction, 0.2 + 1e-12);
  EXPECT_NE(h.source.find("method=full"), std::string::npos) << h.source;
  Job pinned = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: full}\nconstraints: {min_memory_headroom: 0.07}\n");
  const MemoryHeadroom hp = MemoryHeadroomFor(pinned, "hopper", cal);
  EXPECT_DOUBLE_EQ(hp.fraction, 0.07);
  EXPECT_TRUE(hp.user_set);
}

// A 1.3B full fine-tune that nearly fills a 24 GB card: `memory` says it fits inside the model's
// error, and `plan` (same margin) would not pick that layout.
TEST(Margin, MemorySaysAFitInsideTheErrorMargin) {
  const Calibration& cal = Calibration::Builtin();
  auto gpu = Cat().FindGpu("rtx4090-24gb");
  ASSERT_TRUE(gpu.ok());
  bool seen_inside = false, seen_clear = false;
  for (const std::string model : {"gpt2", "gpt-neo-1.3b"})
  for (int seq : {256, 512, 1024, 2048}) {
    Job j = MakeJob("model: {preset: " + model + "}\ntraining: {method: full, seq_len: " + std::to_string(seq) +
                    ", micro_batch: 1, global_batch: 8}\ncluster: {gpu: rtx4090-24gb, num_gpus: 1}\n");
    const MemoryReport r = BuildMemoryReport(j, *gpu, cal);
    const double usable = gpu->memory_bytes * (1 - r.headroom.fraction);
    EXPECT_EQ(r.inside_margin, r.fits && r.memory.total_bytes > usable);
    const std::string text = MemoryToText(r, false);
    if (r.inside_margin) {
      seen_inside = true;
      EXPECT_NE(MemoryFitWords(r).find("fits, but inside the model's error (plan needs >= "), std::string::npos);
      EXPECT_NE(text.find("inside the model's error"), std::string::npos) << text;
      EXPECT_FALSE(MemoryToJson(r)["fits_with_margin"].get<bool>());
    } else if (r.fits) {
      seen_clear = true;
      EXPECT_EQ(MemoryFitWords(r), "fits");
    }
  }
  EXPECT_TRUE(seen_inside);
  EXPECT_TRUE(seen_clear);
}

TEST(Margin, BorrowedBandSaysNoValidationForThisFamily) {
  ErrorBand b;
  b.kind = "memory";
  b.framework = "hf-trainer";
  b.gpu_family = "*";
  b.method = "full";
  b.rows = 9;
  b.p90_abs = 0.25;
  EXPECT_TRUE(BandIsBorrowed(b, "hf-trainer", "hopper"));
  EXPECT_FALSE(BandIsBorrowed(b, "hf-trainer", ""));
  EXPECT_TRUE(BandIsBorrowed(b, "megatron", ""));
  b.gpu_family = "hopper";
  EXPECT_FALSE(BandIsBorrowed(b, "hf-trainer", "hopper"));
  ExpectedError e{std::nullopt, b, "deepspeed", "hopper"};
  const std::string line = ExpectedErrorLine(e);
  EXPECT_NE(line.find("memory: no validation for this family"), std::string::npos) << line;
  EXPECT_EQ(line.find("memory ±"), std::string::npos) << line;
  EXPECT_TRUE(ExpectedErrorToJson(e)["memory"]["borrowed"].get<bool>());
}

TEST(Margin, PriceAgeDays) {
  EXPECT_EQ(PriceAgeDays("2026-12-01", "2026-12-01"), 0);
  EXPECT_EQ(PriceAgeDays("2025-12-01", "2026-12-01"), 365);
  EXPECT_EQ(PriceAgeDays("2023-06", "2023-07-01"), 30);
  EXPECT_FALSE(PriceAgeDays("undated", "2026-12-01").has_value());
  EXPECT_FALSE(PriceAgeDays("2026-13-01", "2026-12-01").has_value());
  EXPECT_FALSE(PriceAgeDays("2026-02-30", "2026-12-01").has_value());
  EXPECT_EQ(TodayUtcIso().size(), 10u);
}

Catalog WithRows(const std::string& rows) {
  const std::string path = testing_util::UniqueTempPath("margin_instances", ".csv");
  std::ofstream(path) << "id,provider,instance,gpu_id,gpu_count,intra_link,vcpus,ram_gib,local_nvme_tb,network_gbps,"
                         "network_kind,network_link,rdma,gpudirect_rdma,nics,on_demand_usd_per_hour,spot_usd_per_hour,"
                         "reserved_usd_per_hour,region,price_date,nodes_available,source,notes\n"
                      << rows;
  CatalogOptions o;
  o.override_files = {path};
  auto c = LoadCatalog(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : Catalog{};
}

// A row with nodes_available: 1 is never planned at 2 nodes, and the rejection says why; without
// the limit the same job uses 2 nodes.
TEST(Margin, NodesAvailableCapsTheNodes) {
  const std::string row = "lab-a100,lab,lab 8x A100,a100-sxm-80gb,8,nvswitch-nvlink3,128,2048,15,1600,infiniband,ib-hdr,yes,yes,8,"
                          "9.50,unknown,unknown,lab,2026-11-01,";
  const std::string job = "model: {preset: llama-2-13b}\ntraining: {method: full, seq_len: 4096, global_batch: 64, tokens: 2e9}\n"
                          "constraints: {clouds: [lab], max_gpus: 32, objective: time}\n";
  for (const char* limit : {"1", "unknown"}) {
    Catalog c = WithRows(row + limit + ",test,\n");
    auto inst = c.FindInstance("lab-a100");
    ASSERT_TRUE(inst.ok());
    EXPECT_EQ(inst->nodes_available.has_value(), std::string(limit) == "1");
    Job j = MakeJob(job);
    auto r = PlanJob(j, c, Calibration::Builtin(), PlanOptions{1, nullptr, nullptr, "2026-12-01"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    int64_t most_nodes = 0;
    for (const auto& p : r->plans) most_nodes = std::max(most_nodes, p.nodes);
    bool said = false;
    for (const auto& x : r->rejected) said |= x.code == "nodes_available" && x.reason.find("nodes_available=1") != std::string::npos;
    if (std::string(limit) == "1") {
      EXPECT_LE(most_nodes, 1);
      EXPECT_TRUE(said);
    } else {
      EXPECT_GE(most_nodes, 2);
      EXPECT_FALSE(said);
    }
  }
}

// A price older than price_max_age_days warns; a recent one does not.
TEST(Margin, StalePriceWarns) {
  const std::string row = "lab-a100,lab,lab 8x A100,a100-sxm-80gb,8,nvswitch-nvlink3,128,2048,15,1600,infiniband,ib-hdr,yes,yes,8,"
                          "9.50,unknown,unknown,lab,2024-06,unknown,test,\n";
  Catalog c = WithRows(row);
  Job j = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: lora, seq_len: 2048, global_batch: 16, tokens: 1e8}\n"
                  "constraints: {clouds: [lab], max_gpus: 8}\n");
  for (const char* today : {"2026-12-01", "2024-07-01"}) {
    auto r = PlanJob(j, c, Calibration::Builtin(), PlanOptions{1, nullptr, nullptr, today});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_FALSE(r->plans.empty());
    bool warned = false;
    for (const auto& w : r->plans.front().warnings) warned |= w.find("price dated 2024-06 is") != std::string::npos;
    EXPECT_EQ(warned, std::string(today) == "2026-12-01") << today;
  }
}

}  // namespace
}  // namespace gpuplan
