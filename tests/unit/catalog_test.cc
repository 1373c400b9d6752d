#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "../test_util.h"
#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/csv.h"
#include "gpuplan/estimate.h"

namespace gpuplan {
namespace {

TEST(Catalog, ShippedFilesLoad) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GT(c->gpus.size(), 20u);
  EXPECT_GT(c->links.size(), 20u);
  EXPECT_GT(c->instances.size(), 50u);
  EXPECT_GT(c->storage.size(), 10u);
  for (const auto& g : c->gpus) EXPECT_FALSE(g.source.empty()) << g.id;
}

TEST(Catalog, RequiredGpuIdsAndAliases) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok());
  for (const char* id : {"v100-sxm-32gb", "a10g-24gb", "l4-24gb", "l40s-48gb", "rtx4090-24gb", "a100-sxm-40gb",
                         "a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-sxm-141gb",
                         "b200-180gb", "gb200-186gb", "mi300x-192gb"}) {
    auto g = c->FindGpu(id);
    ASSERT_TRUE(g.ok()) << id;
    EXPECT_GT(g->memory_bytes, 0) << id;
  }
  EXPECT_EQ(c->FindGpu("H100")->id, "h100-sxm-80gb");
  EXPECT_EQ(c->FindGpu("A100-80GB")->id, "a100-sxm-80gb");
  EXPECT_NEAR(c->FindGpu("h100")->bf16_flops.value() / 1e12, 989, 1);
  EXPECT_FALSE(c->FindGpu("a100-sxm-80gb")->fp8_flops.has_value());  // Ampere has no fp8
  EXPECT_FALSE(c->FindGpu("h900").ok());
}

TEST(Catalog, InstancesReferToKnownGpusAndLinks) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok());
  for (const auto& i : c->instances) {
    EXPECT_TRUE(c->FindGpu(i.gpu_id).ok()) << i.id << " -> " << i.gpu_id;
    if (i.network_link != "unknown" && !i.network_link.empty())
      EXPECT_TRUE(c->FindLink(i.network_link).ok()) << i.id << " -> " << i.network_link;
  }
}

TEST(Catalog, OverrideFileReplacesAndAdds) {
  const std::string path = ::testing::TempDir() + "/my_gpus.csv";
  {
    std::ofstream f(path);
    f << "id,aliases,name,vendor,family,form_factor,memory_gib,mem_bw_gb_per_s,fp32_tflops,tf32_tflops,bf16_tflops,"
         "fp16_tflops,fp8_tflops,intra_link,nvlink_bw_gb_per_s_per_dir,pcie_gen,pcie_lanes,tdp_w,source,date,notes\n"
      << "h100-sxm-80gb,,H100 (site),nvidia,hopper,sxm5,80,3350,67,494,900,900,1800,nvlink4,450,5,16,700,our bench,2026-01-01,\n"
      << "my-card,mycard,My card,acme,ampere,pcie,16,500,10,20,40,40,none,pcie,none,4,16,200,vendor sheet,2026-01-01,\n";
  }
  CatalogOptions o;
  o.override_files = {path};
  auto c = LoadCatalog(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->FindGpu("h100-sxm-80gb")->bf16_flops.value() / 1e12, 900, 1e-9);
  EXPECT_EQ(c->FindGpu("mycard")->id, "my-card");
}

TEST(Catalog, BadOverrideRowHasLocation) {
  const std::string path = ::testing::TempDir() + "/bad_gpus.csv";
  {
    std::ofstream f(path);
    f << "id,aliases,name,vendor,family,form_factor,memory_gib,mem_bw_gb_per_s,fp32_tflops,tf32_tflops,bf16_tflops,"
         "fp16_tflops,fp8_tflops,intra_link,nvlink_bw_gb_per_s_per_dir,pcie_gen,pcie_lanes,tdp_w,source,date,notes\n"
      << "x,,X,a,b,c,lots,1,1,1,1,1,1,pcie,none,4,16,1,s,d,\n";
  }
  CatalogOptions o;
  o.override_files = {path};
  auto c = LoadCatalog(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().ToString(), path + ":2: memory_gib: expected a decimal number (or unknown/none), got 'lots'");
}

TEST(Catalog, ChinaMarketAndConsumerGpusByIdAndAlias) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::pair<const char*, const char*> want[] = {
      {"h800", "h800-80gb"},         {"a800", "a800-sxm-80gb"},   {"a800-pcie", "a800-pcie-80gb"},
      {"h20", "h20-96gb"},           {"ascend-910b", "ascend-910b"}, {"rtx4090", "rtx4090-24gb"},
      {"rtx3090", "rtx3090-24gb"},   {"rtx5090", "rtx5090-32gb"}, {"mi355x", "mi355x-288gb"}};
  for (const auto& [name, id] : want) {
    auto g = c->FindGpu(name);
    ASSERT_TRUE(g.ok()) << name;
    EXPECT_EQ(g->id, id) << name;
    EXPECT_GT(g->memory_bytes, 0) << name;
    EXPECT_FALSE(g->source.empty()) << name;
  }
  // A800/H800: the GA100/GH100 compute, NVLink cut to 400 GB/s bidirectional = 200 per direction.
  EXPECT_NEAR(c->FindGpu("a800")->bf16_flops.value() / 1e12, 312, 1e-9);
  EXPECT_NEAR(c->FindGpu("a800")->nvlink_bytes_per_s_per_dir.value() / 1e9, 200, 1e-9);
  EXPECT_NEAR(c->FindGpu("h800")->nvlink_bytes_per_s_per_dir.value() / 1e9, 200, 1e-9);
  EXPECT_NEAR(c->FindGpu("h20")->bf16_flops.value() / 1e12, 148, 1e-9);
  EXPECT_NEAR(c->FindGpu("h20")->mem_bw_bytes_per_s.value() / 1e9, 4000, 1e-9);
  EXPECT_NEAR(c->FindGpu("h20")->memory_bytes / (1024.0 * 1024 * 1024), 96, 1e-9);
}

TEST(Catalog, GeForceCardsHaveNoPeerToPeer) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok());
  for (const char* name : {"rtx3090", "rtx4090", "rtx5090"}) EXPECT_FALSE(c->FindGpu(name)->p2p) << name;
  EXPECT_TRUE(c->FindGpu("h100")->p2p);
  EXPECT_TRUE(c->FindGpu("l20")->p2p);  // unknown = true
}

TEST(Catalog, CorrectedCellsHaveTheAuditedValues) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok());
  auto gb200 = c->FindInstance("aws-p6e-gb200.36xlarge");
  ASSERT_TRUE(gb200.ok());
  EXPECT_NEAR(gb200->network_bits_per_s.value(), 1600e9, 1e-3);
  EXPECT_EQ(gb200->network_link, "efa-v3");
  auto a2 = c->FindInstance("gcp-a2-ultragpu-8g");
  ASSERT_TRUE(a2.ok());
  EXPECT_NEAR(a2->on_demand_usd_per_hour.value(), 40.5504, 1e-9);
  auto b300 = c->FindInstance("aws-p6-b300.48xlarge");
  EXPECT_EQ(b300->price_date, "2026-07-28");
  EXPECT_EQ(b300->spot_price_date, "undated");  // the correction dates the on-demand price only
  EXPECT_NEAR(c->FindGpu("h100-nvl-94gb")->bf16_flops.value() / 1e12, 835.5, 1e-9);
  EXPECT_NEAR(c->FindGpu("a10g")->bf16_flops.value() / 1e12, 70, 1e-9);
  // Every corrected cell names its source; the loader checked that each one matches data/.
  const CellSource* s = c->FindCellSource("instances.csv", "gcp-a2-ultragpu-8g", "on_demand_usd_per_hour");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->value, "40.5504");
  EXPECT_FALSE(s->source.empty());
  EXPECT_GT(c->cell_sources.size(), 170u);
  for (const auto& cs : c->cell_sources) EXPECT_FALSE(cs.source.empty()) << cs.row_id << "." << cs.column;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Catalog, CellSourceThatDisagreesWithTheDataIsAnError) {
  const std::string header = "file,row_id,column,value,source,date,confidence\n";
  CatalogOptions o;
  o.cell_sources_file = WriteTemp("cs_ok.csv", header + "instances.csv,gcp-a2-ultragpu-8g,on_demand_usd_per_hour,40.5504,s,2026-09,medium\n");
  ASSERT_TRUE(LoadCatalog(o).ok());
  o.cell_sources_file = WriteTemp("cs_bad_value.csv", header + "instances.csv,gcp-a2-ultragpu-8g,on_demand_usd_per_hour,23.56656,s,2026-09,medium\n");
  auto bad = LoadCatalog(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find(":2: value: instances.csv gcp-a2-ultragpu-8g.on_demand_usd_per_hour is '40.5504'"),
            std::string::npos)
      << bad.status().ToString();
  o.cell_sources_file = WriteTemp("cs_bad_row.csv", header + "gpus.csv,h900,bf16_tflops,1,s,2026-09,high\n");
  EXPECT_FALSE(LoadCatalog(o).ok());
  o.cell_sources_file = WriteTemp("cs_bad_col.csv", header + "gpus.csv,h100-sxm-80gb,warp_speed,1,s,2026-09,high\n");
  EXPECT_FALSE(LoadCatalog(o).ok());
  o.cell_sources_file = WriteTemp("cs_bad_conf.csv", header + "instances.csv,gcp-a2-ultragpu-8g,on_demand_usd_per_hour,40.5504,s,2026-09,sure\n");
  EXPECT_FALSE(LoadCatalog(o).ok());
}

TEST(Catalog, LocalCurrencyPriceConvertsWithItsRate) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok());
  auto a = c->FindInstance("autodl-rtx4090-1x");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->price_currency, "CNY");
  EXPECT_NEAR(a->on_demand_local_per_hour.value(), 1.88, 1e-12);
  EXPECT_EQ(a->fx_date, "2026-08-18");
  EXPECT_NEAR(a->on_demand_usd_per_hour.value(), 1.88 * a->fx_usd_per_unit.value(), 1e-12);
  EXPECT_NEAR(a->on_demand_usd_per_hour.value(), 1.88 / 6.75, 1e-5);
  EXPECT_EQ(a->gpu_count, 1);
  EXPECT_EQ(c->FindInstance("aws-p5.48xlarge")->price_currency, "USD");
}

TEST(Catalog, LocalPriceWithoutARateIsAnError) {
  const std::string header =
      "id,provider,instance,gpu_id,gpu_count,intra_link,on_demand_usd_per_hour,price_currency,on_demand_local_per_hour,"
      "fx_usd_per_unit,fx_date,region,price_date,source,notes\n";
  CatalogOptions o;
  o.override_files = {WriteTemp("cny_ok.csv", header + "x-1,x,one,rtx4090-24gb,1,pcie4-x16,unknown,CNY,10,0.14,2026-08-18,cn,2026-08-18,s,\n")};
  auto ok = LoadCatalog(o);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_NEAR(ok->FindInstance("x-1")->on_demand_usd_per_hour.value(), 1.4, 1e-12);
  o.override_files = {WriteTemp("cny_bad.csv", header + "x-1,x,one,rtx4090-24gb,1,pcie4-x16,unknown,CNY,10,unknown,unknown,cn,2026-08-18,s,\n")};
  auto bad = LoadCatalog(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("fx_usd_per_unit"), std::string::npos) << bad.status().ToString();
}

double IntraAllReduceSeconds(const std::string& gpu, const Catalog& cat) {
  Job j = testing_util::MakeJob("model: {preset: llama-2-7b}\ncluster: {gpu: " + gpu + ", gpus_per_node: 2, num_gpus: 2}\n");
  auto hw = ResolveHardware(j, cat, Calibration::Builtin());
  EXPECT_TRUE(hw.ok()) << hw.status().ToString();
  return CollectiveTime(Collective::kAllReduce, 2.0 * 6738415616, 2, 2, *hw);
}

TEST(Catalog, NoPeerToPeerStagesIntraNodeTrafficThroughHostMemory) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok());
  Catalog with_p2p = *c;
  for (auto& g : with_p2p.gpus)
    if (g.id == "rtx4090-24gb") g.p2p = true;
  const double staged = IntraAllReduceSeconds("rtx4090", *c);
  const double direct = IntraAllReduceSeconds("rtx4090", with_p2p);
  EXPECT_GT(staged, 1.9 * direct);  // half the PCIe rate: each byte crosses PCIe twice
  Job j = testing_util::MakeJob("model: {preset: llama-2-7b}\ncluster: {gpu: rtx4090, gpus_per_node: 2, num_gpus: 2}\n");
  EXPECT_NEAR(ResolveHardware(j, *c, Calibration::Builtin())->intra_bytes_per_s, 31.5e9 / 2, 1);
}

TEST(Catalog, SlowNvlinkGpuRunsAtItsOwnRateOnTheFabric) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok());
  Job j = testing_util::MakeJob("model: {preset: llama-2-7b}\ncluster: {gpu: a800, gpus_per_node: 8, num_gpus: 8}\n");
  auto hw = ResolveHardware(j, *c, Calibration::Builtin());
  ASSERT_TRUE(hw.ok()) << hw.status().ToString();
  EXPECT_EQ(hw->intra.id, "nvswitch-nvlink3");
  EXPECT_NEAR(hw->intra_bytes_per_s, 200e9, 1);
}

TEST(Catalog, Bf16OnAGpuWithoutItSuggestsFp16) {
  auto c = LoadCatalog();
  ASSERT_TRUE(c.ok());
  for (const char* gpu : {"v100", "t4"}) {
    EXPECT_NE(c->FindGpu(gpu)->PrecisionProblem(Precision::kBf16).find("use --precision fp16"), std::string::npos) << gpu;
    EXPECT_EQ(c->FindGpu(gpu)->PrecisionProblem(Precision::kFp16), "") << gpu;
    Job j = testing_util::MakeJob(std::string("model: {preset: llama-2-7b}\ntraining: {precision: bf16}\ncluster: {gpu: ") + gpu + "}\n");
    auto hw = ResolveHardware(j, *c, Calibration::Builtin());
    ASSERT_FALSE(hw.ok()) << gpu;
    EXPECT_EQ(hw.status().ExitCode(), 1);
    EXPECT_NE(hw.status().ToString().find("has no bf16; it has fp16: use --precision fp16"), std::string::npos)
        << hw.status().ToString();
  }
  EXPECT_EQ(c->FindGpu("a100")->PrecisionProblem(Precision::kBf16), "");
  EXPECT_NE(c->FindGpu("a100")->PrecisionProblem(Precision::kFp8), "");
}

TEST(Csv, QuotedFieldsAndLineNumbers) {
  auto t = ParseCsv("a,b\n\"x,1\",\"multi\nline\"\nz,\"q\"\"q\"\n", "t.csv");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0].fields[0], "x,1");
  EXPECT_EQ(t->rows[1].line, 4);
  EXPECT_EQ(t->rows[1].fields[1], "q\"q");
  EXPECT_FALSE(ParseCsv("a,b\n1\n", "t.csv").ok());
  EXPECT_FALSE(ParseCsv("a,b\n\"open,1\n", "t.csv").ok());
}

TEST(Calibration, ShippedKeysPresent) {
  auto c = Calibration::Load();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (const char* k : {"cuda_context_bytes", "nccl_buffers_bytes", "allocator_fragmentation", "zero_bucket_elements",
                        "zero3_prefetch_layers"})
    EXPECT_TRUE(c->Has(k)) << k;
}

}  // namespace
}  // namespace gpuplan
