// Issue 8 (robustness), the CSV side: the number parser, catalog, calibration and validation-row
// files. Each test is named after the defect class it guards.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/plan.h"
#include "gpuplan/validation_rows.h"

namespace gpuplan {
namespace {

const Location kAt{"f.csv", 7, "col"};

std::string Err(const Result<double>& r) { return r.ok() ? "(accepted)" : r.status().ToString(); }

// Tests run as parallel processes (ctest -j): each one writes under its own name.
std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path =
      ::testing::TempDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The status of loading the built-in catalog plus one override file.
Status LoadWith(const std::string& name, const std::string& text) {
  CatalogOptions o;
  o.override_files = {WriteFile(name, text)};
  auto c = LoadCatalog(o);
  return c.status();
}

const char* kGpuHeader =
    "id,aliases,name,vendor,family,form_factor,memory_gib,mem_bw_gb_per_s,fp32_tflops,tf32_tflops,bf16_tflops,"
    "fp16_tflops,fp8_tflops,intra_link,nvlink_bw_gb_per_s_per_dir,pcie_gen,pcie_lanes,p2p,tdp_w,source,date,notes\n";
const char* kInstHeader =
    "id,provider,instance,gpu_id,gpu_count,intra_link,vcpus,ram_gib,local_nvme_tb,network_gbps,network_kind,"
    "network_link,rdma,gpudirect_rdma,nics,on_demand_usd_per_hour,spot_usd_per_hour,reserved_usd_per_hour,region,"
    "price_date,source,notes\n";

// A GPU row with one cell replaced: column index in kGpuHeader order.
std::string GpuRow(const std::string& col, const std::string& value) {
  std::vector<std::pair<std::string, std::string>> cells = {
      {"id", "test-gpu"}, {"aliases", ""}, {"name", "Test"}, {"vendor", "acme"}, {"family", "ampere"},
      {"form_factor", "pcie"}, {"memory_gib", "40"}, {"mem_bw_gb_per_s", "1500"}, {"fp32_tflops", "19"},
      {"tf32_tflops", "150"}, {"bf16_tflops", "300"}, {"fp16_tflops", "300"}, {"fp8_tflops", "none"},
      {"intra_link", "pcie"}, {"nvlink_bw_gb_per_s_per_dir", "none"}, {"pcie_gen", "4"}, {"pcie_lanes", "16"},
      {"p2p", "yes"}, {"tdp_w", "300"}, {"source", "test"}, {"date", "2026-01-01"}, {"notes", ""}};
  std::string row;
  for (size_t i = 0; i < cells.size(); ++i)
    row += (i ? "," : "") + (cells[i].first == col ? value : cells[i].second);
  return row + "\n";
}

std::string InstRow(const std::string& col, const std::string& value, const std::string& id = "test-inst") {
  std::vector<std::pair<std::string, std::string>> cells = {
      {"id", id}, {"provider", "lab"}, {"instance", "box"}, {"gpu_id", "a100-sxm-80gb"}, {"gpu_count", "8"},
      {"intra_link", "nvswitch-nvlink3"}, {"vcpus", "96"}, {"ram_gib", "1024"}, {"local_nvme_tb", "8"},
      {"network_gbps", "400"}, {"network_kind", "infiniband"}, {"network_link", "ib-hdr"}, {"rdma", "yes"},
      {"gpudirect_rdma", "yes"}, {"nics", "4"}, {"on_demand_usd_per_hour", "20"}, {"spot_usd_per_hour", "unknown"},
      {"reserved_usd_per_hour", "unknown"}, {"region", "lab"}, {"price_date", "2026-01-01"}, {"source", "test"},
      {"notes", ""}};
  std::string row;
  for (size_t i = 0; i < cells.size(); ++i)
    row += (i ? "," : "") + (cells[i].first == col ? value : cells[i].second);
  return row + "\n";
}

// ---- one number parser -------------------------------------------------------------------------

TEST(NumberParser, DecimalFormsAreRead) {
  EXPECT_EQ(*ParseDecimal("80", kAt), 80);
  EXPECT_EQ(*ParseDecimal("-1.5", kAt), -1.5);
  EXPECT_EQ(*ParseDecimal(".5", kAt), 0.5);
  EXPECT_EQ(*ParseDecimal("5.", kAt), 5);
  EXPECT_EQ(*ParseDecimal("+2e3", kAt), 2000);
  EXPECT_EQ(*ParseDecimal("1E-6", kAt), 1e-6);
  EXPECT_FALSE(std::signbit(*ParseDecimal("-0", kAt)));  // -0 reads as 0
}

TEST(NumberParser, HexInfNanAndTrailingJunkAreRejected) {
  for (const char* s : {"0x1000", "0X10", "inf", "-inf", "nan", "NaN", "infinity", "80abc", "80 ", " 80", "1e", "e5",
                        ".", "-", "1.5.2", "1,5", "--1", "1e5x", "0b101", "1_000"}) {
    const std::string e = Err(ParseDecimal(s, kAt));
    EXPECT_EQ(e.rfind("f.csv:7: col: expected a decimal number, got '", 0), 0u) << s << ": " << e;
  }
  EXPECT_EQ(Err(ParseDecimal("", kAt)), "f.csv:7: col: expected a number, got an empty value");
}

TEST(NumberParser, NulByteInsideIsAnError) {
  EXPECT_EQ(Err(ParseDecimal(std::string("80\0junk", 7), kAt)),
            "f.csv:7: col: expected a decimal number, got '80\\x00junk'");
}

TEST(NumberParser, NonFiniteResultsAreOutOfRange) {
  EXPECT_EQ(Err(ParseDecimal("1e999", kAt)), "f.csv:7: col: number out of range: '1e999'");
  EXPECT_EQ(Err(ParseDecimal("-1e400", kAt)), "f.csv:7: col: number out of range: '-1e400'");
  EXPECT_TRUE(ParseDecimal("1e308", kAt).ok());  // finite: the per-field range rejects it
  EXPECT_EQ(Err(ParseDecimalIn("1e308", kAt, {})), "f.csv:7: col: must be in [0, 1e+15], got 1e+308");
}

TEST(NumberParser, RangesArePerField) {
  EXPECT_EQ(Err(ParseDecimalIn("0", kAt, {0, 10, true})), "f.csv:7: col: must be in (0, 10], got 0");
  EXPECT_EQ(Err(ParseDecimalIn("-0.1", kAt, {0, 10})), "f.csv:7: col: must be in [0, 10], got -0.1");
  EXPECT_EQ(*ParseDecimalIn("10", kAt, {0, 10}), 10);
  EXPECT_FALSE(CheckRange(std::nan(""), kAt, {0, 10}).ok());
}

TEST(NumberParser, IntegersMustBeIntegral) {
  auto e = [](const char* s, int64_t lo, int64_t hi) {
    auto r = ParseInteger(s, kAt, lo, hi);
    return r.ok() ? "(accepted " + std::to_string(*r) + ")" : r.status().ToString();
  };
  EXPECT_EQ(e("1.5", 1, 100), "f.csv:7: col: expected a whole number, got '1.5'");
  EXPECT_EQ(e("0.5", 0, 100), "f.csv:7: col: expected a whole number, got '0.5'");
  EXPECT_EQ(e("2e3", 1, 10000), "(accepted 2000)");
  EXPECT_EQ(e("8.0", 1, 100), "(accepted 8)");
  EXPECT_EQ(e("99", 1, 6), "f.csv:7: col: must be in [1, 6], got 99");
  // No float->int cast of an out-of-range value (UB): 1e308 and 2^63 are range errors.
  EXPECT_EQ(e("1e308", 1, 6), "f.csv:7: col: must be in [1, 6], got 1e+308");
  EXPECT_FALSE(ParseInteger("9223372036854775808", kAt, INT64_MIN, INT64_MAX).ok());
  EXPECT_EQ(*ParseInteger("-9000000000000000000", kAt, INT64_MIN, INT64_MAX), -9000000000000000000LL);
}

// ---- CSV ---------------------------------------------------------------------------------------

TEST(Csv, Utf8BomIsStripped) {
  auto t = ParseCsv("\xEF\xBB\xBFid,b\nx,1\n", "t.csv");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->header[0], "id");
  EXPECT_EQ(t->Column("id"), 0);
  // A catalog file saved by Excel ("CSV UTF-8") loads.
  EXPECT_TRUE(LoadWith("bom_gpus.csv", std::string("\xEF\xBB\xBF") + kGpuHeader + GpuRow("", "")).ok());
}

TEST(Csv, DuplicateHeaderColumnIsAnError) {
  auto t = ParseCsv("id,price,name,price\nx,1,n,2\n", "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().ToString(), "t.csv:1: price: duplicate column: header columns 2 and 4 are both 'price'");
  EXPECT_TRUE(ParseCsv("id,b,,\nx,1,,\n", "t.csv").ok());  // unnamed trailing columns are never read
}

TEST(Csv, NulByteInACellIsAnErrorAtItsColumn) {
  auto t = ParseCsv(std::string("id,memory_gib\nx,80\0junk\n", 25), "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().ToString(), "t.csv:2: memory_gib: NUL byte in the cell (not a text file?); CSV files are UTF-8 text");
  const Status st = LoadWith("nul_gpus.csv", std::string(kGpuHeader) + std::string("test\0gpu", 8) + GpuRow("", "").substr(8));
  EXPECT_EQ(st.location().key, "id") << st.ToString();
}

// ---- catalog -----------------------------------------------------------------------------------

TEST(Catalog, DuplicateIdInOneFileIsAnErrorNamingBothLines) {
  const Status st = LoadWith("dup_gpus.csv", std::string(kGpuHeader) + GpuRow("", "") + GpuRow("name", "Other"));
  EXPECT_EQ(st.location().line, 3);
  EXPECT_EQ(st.location().key, "id");
  EXPECT_NE(st.reason().find("duplicate id 'test-gpu': line 2"), std::string::npos) << st.ToString();
  // Case differences are the same id (lookups are case-insensitive).
  EXPECT_FALSE(LoadWith("dup_gpus2.csv", std::string(kGpuHeader) + GpuRow("", "") + GpuRow("id", "TEST-GPU")).ok());
}

TEST(Catalog, OverrideReplacingABuiltinIdIsStillAllowed) {
  CatalogOptions o;
  o.override_files = {WriteFile("repl_inst.csv", std::string(kInstHeader) + InstRow("on_demand_usd_per_hour", "1.5", "aws-p4d.24xlarge"))};
  auto c = LoadCatalog(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c->FindInstance("aws-p4d.24xlarge")->on_demand_usd_per_hour, 1.5);
  size_t n = 0;
  for (const auto& i : c->instances) n += i.id == "aws-p4d.24xlarge";
  EXPECT_EQ(n, 1u);
}

// 100k rows: the quadratic Upsert took 95 s here; the indexed load is linear (well under a second).
// No timing is asserted: the ctest timeout is what a quadratic loader would hit.
TEST(Catalog, LoadingIsLinearInRows) {
  std::string text = "id,kind,name,bw_gb_per_s_per_dir,latency_us,source,date,notes\n";
  text.reserve(100000 * 48);
  for (int i = 0; i < 100000; ++i) text += "link-" + std::to_string(i) + ",tcp,t,1.25,unknown,test,undated,\n";
  CatalogOptions o;
  o.override_files = {WriteFile("links_100k.csv", text)};
  auto c = LoadCatalog(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GE(c->links.size(), 100000u);
  EXPECT_EQ(c->FindLink("link-99999")->bw_bytes_per_s_per_dir, 1.25e9);
}

TEST(Catalog, ValuesAreFiniteAndRangedPerColumn) {
  struct Case { const char* col; const char* value; };
  for (const Case& k : {Case{"memory_gib", "0"}, Case{"memory_gib", "1e308"}, Case{"memory_gib", "-80"},
                        Case{"bf16_tflops", "0"}, Case{"bf16_tflops", "1e308"}, Case{"fp32_tflops", "-1"},
                        Case{"mem_bw_gb_per_s", "0"}, Case{"mem_bw_gb_per_s", "1e308"},
                        Case{"nvlink_bw_gb_per_s_per_dir", "0"}, Case{"memory_gib", "0x50"},
                        Case{"memory_gib", "inf"}, Case{"memory_gib", "nan"}}) {
    const Status st = LoadWith("range_gpus.csv", std::string(kGpuHeader) + GpuRow(k.col, k.value));
    EXPECT_EQ(st.location().line, 2) << k.col << "=" << k.value << ": " << st.ToString();
    EXPECT_EQ(st.location().key, k.col) << k.col << "=" << k.value << ": " << st.ToString();
  }
  for (const Case& k : {Case{"on_demand_usd_per_hour", "1e308"}, Case{"on_demand_usd_per_hour", "-1"},
                        Case{"spot_usd_per_hour", "1e308"}, Case{"ram_gib", "0"}, Case{"ram_gib", "1e308"},
                        Case{"network_gbps", "0"}, Case{"local_nvme_tb", "1e308"}, Case{"vcpus", "0"}}) {
    const Status st = LoadWith("range_inst.csv", std::string(kInstHeader) + InstRow(k.col, k.value));
    EXPECT_EQ(st.location().key, k.col) << k.col << "=" << k.value << ": " << st.ToString();
  }
  const Status link = LoadWith("range_links.csv",
                               "id,kind,name,bw_gb_per_s_per_dir,latency_us,source,date,notes\nx,tcp,x,0,unknown,t,undated,\n");
  EXPECT_EQ(link.location().key, "bw_gb_per_s_per_dir") << link.ToString();
}

// A price of 0 (own hardware) is valid: every time it multiplies is finite (see the planner test).
TEST(Catalog, ZeroPriceIsAllowed) {
  EXPECT_TRUE(LoadWith("free_inst.csv", std::string(kInstHeader) + InstRow("on_demand_usd_per_hour", "0")).ok());
}

TEST(Catalog, IntegersAreNotTruncated) {
  struct Case { const char* col; const char* value; };
  for (const Case& k : {Case{"gpu_count", "1.5"}, Case{"nics", "0.5"}, Case{"vcpus", "2.5"}, Case{"gpu_count", "0"},
                        Case{"gpu_count", "1e308"}, Case{"nics", "0"}}) {
    const Status st = LoadWith("int_inst.csv", std::string(kInstHeader) + InstRow(k.col, k.value));
    EXPECT_EQ(st.location().key, k.col) << k.col << "=" << k.value << ": " << st.ToString();
  }
  const Status lanes = LoadWith("int_gpus.csv", std::string(kGpuHeader) + GpuRow("pcie_lanes", "15.5"));
  EXPECT_EQ(lanes.location().key, "pcie_lanes") << lanes.ToString();
}

// pcie_gen 99/0/-0 used to end as exit 3 "catalog lacks pcie99-x16" with no location.
TEST(Catalog, UnknownPcieGenerationIsAnErrorAtItsCell) {
  for (const char* gen : {"99", "0", "-0", "4.5", "6"}) {  // 6 is in range, but links.csv has no pcie6-x16
    const Status st = LoadWith("pcie_gpus.csv", std::string(kGpuHeader) + GpuRow("pcie_gen", gen));
    EXPECT_EQ(st.code(), StatusCode::kBadInput) << gen;
    EXPECT_EQ(st.location().line, 2) << gen << ": " << st.ToString();
    EXPECT_EQ(st.location().key, "pcie_gen") << gen << ": " << st.ToString();
  }
  EXPECT_TRUE(LoadWith("pcie_gpus.csv", std::string(kGpuHeader) + GpuRow("pcie_gen", "5")).ok());
}

// An instance with an unknown GPU used to end as "no layout fits GPU memory".
TEST(Catalog, InstanceWithUnknownGpuIsAnErrorAtItsCell) {
  const Status st = LoadWith("gpu_inst.csv", std::string(kInstHeader) + InstRow("gpu_id", "h900-80gb"));
  EXPECT_EQ(st.location().line, 2) << st.ToString();
  EXPECT_EQ(st.location().key, "gpu_id") << st.ToString();
  EXPECT_NE(st.reason().find("unknown GPU 'h900-80gb'"), std::string::npos) << st.ToString();
  const Status link = LoadWith("link_inst.csv", std::string(kInstHeader) + InstRow("network_link", "ib-zdr"));
  EXPECT_EQ(link.location().key, "network_link") << link.ToString();
  // A GPU defined in another override file of the same run resolves.
  CatalogOptions o;
  o.override_files = {WriteFile("gpu_inst2.csv", std::string(kInstHeader) + InstRow("gpu_id", "test-gpu")),
                      WriteFile("gpu_inst2_gpus.csv", std::string(kGpuHeader) + GpuRow("", ""))};
  EXPECT_TRUE(LoadCatalog(o).ok());
}

TEST(Catalog, YesNoUnknownColumnsAreChecked) {
  for (const char* col : {"rdma", "gpudirect_rdma"}) {
    const Status st = LoadWith("yn_inst.csv", std::string(kInstHeader) + InstRow(col, "maybe"));
    EXPECT_EQ(st.location().key, col) << st.ToString();
  }
  const Status st = LoadWith("intra_gpus.csv", std::string(kGpuHeader) + GpuRow("intra_link", "nvlink9"));
  EXPECT_EQ(st.location().key, "intra_link") << st.ToString();
}

// Words the planner reads: a typo would silently drop the row from every choice.
TEST(Catalog, WordColumnsThePlannerReadsAreChecked) {
  const Status kind = LoadWith("kind_inst.csv", std::string(kInstHeader) + InstRow("network_kind", "infiniband2"));
  EXPECT_EQ(kind.location().key, "network_kind") << kind.ToString();
  const std::string storage_header =
      "id,provider,product,tier,read_mb_per_s,write_mb_per_s,iops,latency_ms,usd_per_gb_month,usd_per_1k_put,"
      "usd_per_1k_get,throughput_scope,source,date,notes\n";
  const Status tier = LoadWith("tier_storage.csv", storage_header + "s,lab,x,objekt,100,100,unknown,unknown,0.02,unknown,unknown,per-node,t,undated,\n");
  EXPECT_EQ(tier.location().key, "tier") << tier.ToString();
  const Status scope = LoadWith("scope_storage.csv", storage_header + "s,lab,x,object,100,100,unknown,unknown,0.02,unknown,unknown,pernode,t,undated,\n");
  EXPECT_EQ(scope.location().key, "throughput_scope") << scope.ToString();
  EXPECT_TRUE(LoadWith("ok_storage.csv", storage_header + "s,lab,x,object,100,100,unknown,unknown,0.02,unknown,unknown,per-node,t,undated,\n").ok());
  const std::string money = std::string(kInstHeader).substr(0, std::string(kInstHeader).size() - 1) + ",price_currency\n";
  const std::string row = InstRow("", "");
  const Status cur = LoadWith("cur_inst.csv", money + row.substr(0, row.size() - 1) + ",dollars\n");
  EXPECT_EQ(cur.location().key, "price_currency") << cur.ToString();
}

// ---- calibration -------------------------------------------------------------------------------

Status LoadCal(const std::string& rows) {
  return Calibration::Load(WriteFile("cal.csv", "key,value,unit,source,date,notes\n" + rows)).status();
}

TEST(Calibration, ValuesAreFiniteAndRangeChecked) {
  for (const char* row : {"hbm_eff,1.5,fraction,,,", "hbm_eff,0,fraction,,,", "allocator_fragmentation,-0.1,fraction,,,",
                          "tp_comm_overlap,nan,fraction,,,", "cuda_context_bytes,1e308,bytes,,,",
                          "startup_image_pull_bytes_per_s,0,bytes/s,,,", "link_eff.ib,0,fraction,,,",
                          "checkpoints_kept,2.5,count,,,", "memory_model_error_margin,1,fraction,,,",
                          "framework_overhead,0x2,factor,,,", "link_eff.nvswitch.all_reduce,1.06,fraction,,,"}) {
    const Status st = LoadCal(std::string(row) + "\n");
    EXPECT_EQ(st.code(), StatusCode::kBadInput) << row;
    EXPECT_EQ(st.location().line, 2) << row << ": " << st.ToString();
    EXPECT_EQ(st.location().key, std::string(row).substr(0, std::string(row).find(','))) << row << ": " << st.ToString();
  }
  // The unit column: a fraction is in [0, 1]; the same value as a factor is within the key's range.
  EXPECT_TRUE(LoadCal("link_eff.nvswitch.all_reduce,1.06,factor,,,\n").ok());
  EXPECT_TRUE(LoadCal("hbm_eff,0.7,fraction,,,\ncheckpoints_kept,2,count,,,\n").ok());
}

TEST(Calibration, UnknownKeyIsAnErrorWithDidYouMean) {
  const Status st = LoadCal("framwork_overhead,1.2,factor,,,\n");
  EXPECT_EQ(st.location().line, 2);
  EXPECT_NE(st.reason().find("unknown calibration key 'framwork_overhead' (did you mean 'framework_overhead'?)"),
            std::string::npos) << st.ToString();
  // A near-copy of a family member is a typo too ...
  for (const char* row : {"link_eff.infinibnd,0.9,fraction,,,", "matmul_eff_max.ampre,0.8,fraction,,,",
                          "spot_interruptions_per_node_hour.aws.hoper,0.001,rate,,,"}) {
    const Status t = LoadCal(std::string(row) + "\n");
    EXPECT_NE(t.reason().find("did you mean"), std::string::npos) << row << ": " << t.ToString();
  }
  EXPECT_FALSE(LoadCal("link_eff.,0.9,fraction,,,\n").ok());  // a family needs a member name
  // ... but a new member is allowed (a site's own fabric, a new GPU generation).
  EXPECT_TRUE(LoadCal("link_eff.myfabric,0.9,fraction,,,\nmatmul_eff_max.cdna4,0.6,fraction,,,\n"
                      "link_eff.nvswitch-nvlink3.all_reduce,0.8,fraction,,,\n"
                      "spot_interruptions_per_node_hour.azure,0.001,rate,,,\n").ok());
}

TEST(Calibration, DuplicateKeyInOneFileIsAnError) {
  const Status st = LoadCal("hbm_eff,0.7,fraction,,,\nhbm_eff,0.8,fraction,,,\n");
  EXPECT_EQ(st.location().line, 3);
  EXPECT_NE(st.reason().find("line 2"), std::string::npos) << st.ToString();
}

// Every shipped row passes its own rule, and "fraction" in the unit column means [0, 1].
TEST(Calibration, ShippedValuesAgreeWithTheirUnits) {
  ASSERT_TRUE(Calibration::Load().ok()) << Calibration::Load().status().ToString();
  for (const char* name : {"calibration.csv", "efficiency.csv"}) {
    auto t = ParseCsv(std::string(EmbeddedData(name)), name);
    ASSERT_TRUE(t.ok());
    for (const auto& row : t->rows) {
      CsvRecord r(*t, row);
      const double v = *ParseDecimal(r.Str("value"), r.Where("value"));
      if (r.Str("unit") == "fraction") EXPECT_TRUE(v >= 0 && v <= 1) << name << ":" << row.line << " " << r.Str("key");
      // A user file may restate any shipped row.
      EXPECT_TRUE(LoadCal(r.Str("key") + "," + r.Str("value") + "," + r.Str("unit") + ",,,\n").ok()) << r.Str("key");
    }
  }
}

// ---- validation rows ---------------------------------------------------------------------------

std::string RunsCsv(const std::string& micro_batch, const std::string& dp, const std::string& layers = "32",
                    const std::string& notes = "grad_accum=1") {
  return "source,model_name,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,gpu,num_gpus,gpus_per_node,tp,pp,dp,cp,"
         "zero_or_fsdp,micro_batch,global_batch,recompute,precision,measured_metric,measured_value,unit,notes\n"
         "test,llama-2-7b," + layers + ",4096,32,32,11008,32000,4096,h100,8,8,1,1," + dp + ",1,FSDP FULL_SHARD," +
         micro_batch + ",,none,bf16,throughput_tokens_per_sec_per_gpu,3000,tokens/s/GPU,\"" + notes + "\"\n";
}

Result<std::vector<MeasuredRow>> ReadRuns(const std::string& text) {
  static const Catalog cat = *LoadCatalog();
  return ReadMeasuredRows(WriteFile("runs.csv", text), cat);
}

// An unreadable cell skips its row (docs/validation-rows.md "Unreadable cells"): the row is kept,
// unusable, with the cell named as file:line: column: reason.
void ExpectSkippedAt(const Result<std::vector<MeasuredRow>>& r, const std::string& column, const std::string& what) {
  ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
  ASSERT_EQ(r->size(), 1u) << what;
  EXPECT_FALSE((*r)[0].usable) << what;
  EXPECT_NE((*r)[0].unreadable.find(":2: " + column + ":"), std::string::npos) << what << ": " << (*r)[0].unreadable;
}

TEST(ValidationRows, BatchOverflowIsAnErrorNotSigfpe) {
  // 2^32 x 2^32 wrapped int64 to 0, then divided by: SIGFPE.
  ExpectSkippedAt(ReadRuns(RunsCsv("4294967296", "4294967296")), "micro_batch", "2^32 x 2^32");
  // Each factor in range, the product not: an error at global_batch, computed without overflow.
  ExpectSkippedAt(ReadRuns(RunsCsv("10000000", "10000000", "32", "grad_accum=10000000")), "global_batch", "product");
  ExpectSkippedAt(ReadRuns(RunsCsv("1", "8", "32", "grad_accum=99999999999999999999999")), "notes", "grad_accum");
  auto ok = ReadRuns(RunsCsv("1", "8"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].job.training.global_batch, 8);
}

TEST(ValidationRows, HugeOrFractionalCellIsARangeErrorNotAFloatCast) {
  for (const char* layers : {"1e308", "1.5", "-3", "0x20"}) ExpectSkippedAt(ReadRuns(RunsCsv("1", "8", layers)), "layers", layers);
  ExpectSkippedAt(ReadRuns(RunsCsv("1", "1e308")), "dp", "dp 1e308");
}

// ---- the planner never ranks nan ---------------------------------------------------------------

// Extreme values that the catalog accepts (the slowest and fastest GPU, a free instance, the
// thinnest network) give finite times and costs: no 0 x inf, no inf/nan in a ranking.
TEST(Plan, ExtremeAcceptedCatalogValuesGiveFiniteCostAndTime) {
  const std::string gpus = std::string(kGpuHeader) +
                           "slow-gpu,,Slow,acme,ampere,pcie,1e-3,1e-6,1e-6,1e-6,1e-6,1e-6,none,pcie,none,4,16,yes,1,t,2026-01-01,\n"
                           "fast-gpu,,Fast,acme,hopper,sxm,1e6,1e7,1e6,1e6,1e6,1e6,1e6,nvlink4,1e7,5,16,yes,1,t,2026-01-01,\n"
                           "mid-gpu,,Mid,acme,ampere,pcie,80,2000,19.5,156,312,312,none,pcie,none,4,16,yes,300,t,2026-01-01,\n";
  const std::string inst = std::string(kInstHeader) +
                           "free-slow,lab,box,slow-gpu,1,pcie4-x16,1,1e-3,0,1e-6,tcp,tcp-1g,no,no,1,0,0,0,lab,2026-01-01,t,\n"
                           "free-fast,lab,box,fast-gpu,8,nvswitch-nvlink4,1,1e-3,0,1e-6,tcp,tcp-1g,no,no,1,0,0,0,lab,2026-01-01,t,\n"
                           "dear-mid,lab,box,mid-gpu,8,pcie4-x16,1e5,1e6,1e6,1e8,infiniband,ib-ndr,yes,yes,1024,1e6,1e6,1e6,lab,2026-01-01,t,\n"
                           "free-mid,lab,box,mid-gpu,1,pcie4-x16,1,1e-3,0,1e-6,tcp,tcp-1g,no,no,1,0,0,0,lab,2026-01-01,t,\n";
  CatalogOptions o;
  o.override_files = {WriteFile("x_gpus.csv", gpus), WriteFile("x_inst.csv", inst)};
  auto cat = LoadCatalog(o);
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  auto job = ParseJobText("model: {preset: gpt2}\ntraining: {seq_len: 512, global_batch: 8, tokens: 1e5}\n"
                          "constraints: {gpus: [slow-gpu, fast-gpu, mid-gpu], objective: cost}\n", "x.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  PlanOptions po;
  po.threads = 1;
  auto r = PlanJob(*job, *cat, Calibration::Builtin(), po);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->plans.empty()) << r->relax;
  for (const auto* list : {&r->plans, &r->pareto})
    for (const Plan& p : *list) {
      EXPECT_TRUE(std::isfinite(p.time_s) && p.time_s > 0) << p.instance.id << " time " << p.time_s;
      EXPECT_TRUE(std::isfinite(p.cost.with_rerun_usd) && p.cost.with_rerun_usd >= 0)
          << p.instance.id << " cost " << p.cost.with_rerun_usd;
      EXPECT_TRUE(std::isfinite(p.cost.subtotal_usd)) << p.instance.id;
      EXPECT_TRUE(std::isfinite(p.memory_bytes)) << p.instance.id;
    }
  // The same through the CLI: no inf or nan anywhere in the printed ranking.
  const std::string cmd = std::string(GPUPLAN_BINARY) + " plan --model gpt2 --seq-len 512 --global-batch 8 --tokens 1e5 "
                          "--gpus slow-gpu,fast-gpu,mid-gpu --objective cost --catalog " + o.override_files[0] +
                          " --catalog " + o.override_files[1] + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int rc = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(rc), 0) << out;
  for (const char* bad : {"nan", "inf h", " inf", "$inf", "-nan"}) EXPECT_EQ(out.find(bad), std::string::npos) << bad << "\n" << out;
}

// Found with the test above: when every candidate fits memory but is rejected for another reason
// and there is no deadline or budget, Relax (src/search/plan.cc) calls PlanJob with the same
// constraints, which calls Relax again: a stack overflow (SIGSEGV). Built-in catalog only. Run in a
// child process so the crash fails this test, not the binary. Enable with the fix in src/search.
TEST(Plan, NothingFeasibleWithoutDeadlineDoesNotRecurse) {
  const std::string cmd = std::string(GPUPLAN_BINARY) +
                          " plan --model gpt2 --tokens 1e13 --global-batch 8 --gpus t4 --max-gpus 1 --precision fp16 >/dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc)) << "killed by a signal";
  EXPECT_TRUE(WEXITSTATUS(rc) == 0 || WEXITSTATUS(rc) == 2) << WEXITSTATUS(rc);
}

}  // namespace
}  // namespace gpuplan
