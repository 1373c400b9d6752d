#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/csv.h"

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
  EXPECT_EQ(c.status().ToString(), path + ":2: memory_gib: 'lots' is not a number (or unknown/none)");
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
