// Checks of real tool outputs: the shipped rules load and carry their sources; computed verdicts on the
// fixtures (without a plan, against the clouds' thresholds; with a plan of the fixture's own machine);
// halving the bandwidth in a copy of a passing output turns its verdict to warn or fail (every
// bandwidth fixture); exit codes; the checklist's commands and numbers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "gpuplan/checks.h"
#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/strings.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

const std::string kDir = std::string(GPUPLAN_SHARED_DIR) + "/fixtures/tool-outputs";

std::string Text(const std::string& rel) {
  auto t = ReadTextFile(kDir + "/" + rel);
  EXPECT_TRUE(t.ok()) << rel;
  return t.ok() ? *t : "";
}

// The built-in catalog plus an A40 row (the nccl-tests A40 fixtures' GPU is not in data/gpus.csv).
const Catalog& Cat() {
  static const Catalog cat = [] {
    // One file per process: ctest runs each test case as its own process, in parallel.
    const std::string path = ::testing::TempDir() + "/checks_test_a40." + std::to_string(::getpid()) + ".csv";
    const std::string header(EmbeddedData("gpus.csv").substr(0, EmbeddedData("gpus.csv").find('\n')));
    std::ofstream(path) << header << "\n"
                        << "a40-48gb,a40;nvidia a40,NVIDIA A40,nvidia,ampere,pcie,48,696,37.4,74.8,149.7,149.7,none,nvlink-bridge,56.25,4,16,yes,300,"
                           "NVIDIA A40 datasheet (test row: NVLink bridge 112.5 GB/s bidirectional),2020-10-05,test catalog row,\n";
    CatalogOptions o;
    o.override_files = {path};
    auto c = LoadCatalog(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return *c;
  }();
  return cat;
}

const std::vector<CheckRule>& Rules() {
  static const std::vector<CheckRule> rules = [] {
    auto r = LoadCheckRules();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<CheckRule>{};
  }();
  return rules;
}

// The machine a fixture ran on, as a plan: GPU, nodes x GPUs per node, inter-node link and NICs.
struct Machine {
  std::string gpu;
  int nodes = 1, gpus_per_node = 8;
  std::string network;  // "" = single node
  int nics = 0;
};

PlanContext PlanOf(const Machine& m) {
  std::string yaml = "model:\n  preset: llama-2-7b\ntraining:\n  precision: fp16\ncluster:\n  gpu: " + m.gpu + "\n  num_gpus: " + std::to_string(m.nodes * m.gpus_per_node) +
                     "\n  gpus_per_node: " + std::to_string(m.gpus_per_node) + "\n";
  if (!m.network.empty()) yaml += "  network: " + m.network + "\n";
  if (m.nics > 0) yaml += "  nics_per_node: " + std::to_string(m.nics) + "\n";
  LaunchPlan lp;
  lp.job = MakeJob(yaml);
  lp.nodes = m.nodes;
  lp.gpus_per_node = m.gpus_per_node;
  if (m.nodes > 1) lp.network = *Cat().FindLink(m.network);
  lp.nics_per_node = m.nics;
  lp.origin = "fixture machine " + m.gpu;
  auto pc = MakePlanContext(lp, Cat(), Calibration::Builtin());
  EXPECT_TRUE(pc.ok()) << pc.status().ToString();
  return *pc;
}

VerifyReport Verify(const std::vector<std::pair<std::string, std::string>>& files, const std::optional<Machine>& m = std::nullopt,
                    std::optional<double> line_rate = std::nullopt) {
  std::vector<ToolOutput> outs;
  for (const auto& [name, text] : files) outs.push_back(ParseToolOutput(text, name));
  VerifyOptions o;
  o.rules = Rules();
  o.catalog = &Cat();
  if (m) o.plan = PlanOf(*m);
  o.line_rate_gbit_per_s = line_rate;
  return RunChecks(std::move(outs), o);
}

VerifyReport VerifyFixture(const std::string& rel, const std::optional<Machine>& m = std::nullopt, std::optional<double> line_rate = std::nullopt) {
  return Verify({{rel, Text(rel)}}, m, line_rate);
}

const CheckResult* Result(const VerifyReport& r, const std::string& id) {
  for (const auto& c : r.results)
    if (c.id == id) return &c;
  return nullptr;
}

std::string Dump(const VerifyReport& r) {
  std::string s;
  for (const auto& c : r.results) s += ToString(c.verdict) + " " + c.id + " " + c.message + "\n";
  return s;
}

TEST(CheckRules, ShippedRulesLoadEachWithSourceDateAndTroubleshootingRow) {
  ASSERT_GT(Rules().size(), 40u);
  std::set<std::string> tools;
  for (const auto& r : Rules()) {
    EXPECT_FALSE(r.source.empty()) << r.id;
    EXPECT_FALSE(r.date.empty()) << r.id;
    EXPECT_FALSE(r.troubleshooting.empty()) << r.id;
    EXPECT_FALSE(r.next.empty()) << r.id;
    EXPECT_EQ(r.where.file, "data/checks.csv");
    for (const auto& t : SplitList(r.tool, ',')) tools.insert(t);
  }
  for (const char* t : {"nccl-tests", "perftest", "nvidia-smi-topo", "nvidia-smi-q", "nvidia-smi", "lspci", "ibstat", "dcgmi-diag", "nccl-debug", "fio-json"})
    EXPECT_TRUE(tools.count(t)) << t;
}

TEST(CheckRules, BadRowsAreErrorsAtTheirLine) {
  const std::string header = "id,tool,metric,scope,op,threshold,unit,basis,reference,severity,troubleshooting,next,source,date\n";
  struct { const char* row; const char* key; } cases[] = {
      {"a,perftest,bw_avg_gbit_per_s,,>,1,Gb/s,absolute,,fail,t,n,s,2026", "op"},
      {"a,perftest,bw_avg_gbit_per_s,,>=,fast,Gb/s,absolute,,fail,t,n,s,2026", "threshold"},
      {"a,perftest,bw_avg_gbit_per_s,,>=,1,Gb/s,sideways,,fail,t,n,s,2026", "basis"},
      {"a,perftest,bw_avg_gbit_per_s,,>=,1,Gb/s,reference,,fail,t,n,s,2026", "reference"},
      {"a,perftest,bw_avg_gbit_per_s,,>=,1,Gb/s,absolute,,maybe,t,n,s,2026", "severity"},
      {"a,perftest,bw_avg_gbit_per_s,,>=,1,Gb/s,absolute,,fail,t,n,,2026", "source"},
  };
  for (const auto& c : cases) {
    const std::string path = ::testing::TempDir() + "/bad_checks.csv";
    std::ofstream(path) << header << "ok,perftest,x,,>=,1,u,absolute,,warn,t,n,s,2026\n" << c.row << "\n";
    auto r = LoadCheckRules(path);
    ASSERT_FALSE(r.ok()) << c.row;
    EXPECT_EQ(r.status().location().line, 3) << c.row;
    EXPECT_EQ(r.status().location().key, c.key) << r.status().ToString();
  }
}

TEST(Verify, WithoutAPlanTheCloudThresholdsJudge) {
  // 8x A100-SXM4-40GB in one box, 235.26 GB/s: Azure's ND A100 v4 floor is 228.
  const auto a100 = VerifyFixture("nccl-tests/23-allreduce-8xA100-40G-single-node-oldformat.txt");
  ASSERT_NE(Result(a100, "nccl-azure-nd-a100-v4"), nullptr) << Dump(a100);
  EXPECT_EQ(Result(a100, "nccl-azure-nd-a100-v4")->verdict, Verdict::kPass);
  EXPECT_EQ(*Result(a100, "nccl-azure-nd-a100-v4")->expected, 228);
  // alltoall (inferred) is not all_reduce: Azure's all_reduce floor does not apply to it.
  EXPECT_EQ(Result(VerifyFixture("nccl-tests/26-alltoall-8xA100-40G-single-node-oldformat.txt"), "nccl-azure-nd-a100-v4"), nullptr);
  // The old format's error column at 1e+00.
  EXPECT_EQ(Result(VerifyFixture("nccl-tests/29-alltoall-8node-8xV100-100G-ib-error-col-issue78.txt"), "nccl-old-error")->verdict, Verdict::kWarn);
  // No GPU named and no plan: the peak is listed, judged by nothing, and says so.
  const auto bare = VerifyFixture("nccl-tests/16-allreduce-a40-2gpu-nvlink-nv4.txt");
  bool listed = false;
  for (const auto& c : bare.results)
    if (c.metric == "busbw_peak_gb_per_s") listed = c.verdict == Verdict::kNotApplicable && c.message.find("no threshold") != std::string::npos;
  EXPECT_TRUE(listed) << Dump(bare);
}

TEST(Verify, NcclTransportAndErrors) {
  // NET/Socket: a warning when the log does not say how many nodes ran; a failure on a 2-node plan.
  EXPECT_EQ(Result(VerifyFixture("nccl-debug/03-net-socket-eth0.txt"), "nccl-socket-unknown")->verdict, Verdict::kWarn);
  const auto two = VerifyFixture("nccl-debug/03-net-socket-eth0.txt", Machine{"h100-sxm-80gb", 2, 8, "ib-ndr", 8});
  ASSERT_NE(Result(two, "nccl-socket-multinode"), nullptr) << Dump(two);
  EXPECT_EQ(Result(two, "nccl-socket-multinode")->verdict, Verdict::kFail);
  EXPECT_NE(Result(two, "nccl-socket-multinode")->next.find("NET/Socket"), std::string::npos);
  // A plan on plain TCP expects the socket transport: no RDMA rule applies.
  const auto tcp = VerifyFixture("nccl-debug/03-net-socket-eth0.txt", Machine{"h100-sxm-80gb", 2, 8, "tcp-100g", 1});
  EXPECT_EQ(Result(tcp, "nccl-socket-multinode"), nullptr) << Dump(tcp);
  EXPECT_EQ(Result(VerifyFixture("nccl-debug/02-net-ib-8hca.txt"), "nccl-socket-unknown")->verdict, Verdict::kPass);
  // The NIC count the plan assumed: 8 HCAs used of 8.
  EXPECT_EQ(Result(VerifyFixture("nccl-debug/02-net-ib-8hca.txt", Machine{"h100-sxm-80gb", 2, 8, "ib-ndr", 8}), "nccl-net-devices-plan")->verdict,
            Verdict::kPass);
  EXPECT_EQ(Result(VerifyFixture("nccl-debug/05-azure-net-ib-ib-and-roce.txt", Machine{"h100-sxm-80gb", 2, 8, "ib-ndr", 8}), "nccl-net-devices-plan")->verdict,
            Verdict::kWarn);
  EXPECT_EQ(Result(VerifyFixture("nccl-debug/06-azure-net-ib-completion-error12.txt"), "nccl-ib-completion")->verdict, Verdict::kFail);
  // Channels through host memory on RoCE (GDR 0) vs GPUDirect RDMA.
  const auto roce = VerifyFixture("nccl-tests/13-allreduce-moc-h100-2node-roce-1nic-debuginfo.txt");
  EXPECT_EQ(Result(roce, "nccl-gdr-flag")->verdict, Verdict::kWarn);
  EXPECT_EQ(Result(roce, "nccl-gdrdma")->verdict, Verdict::kWarn);
  EXPECT_EQ(Result(VerifyFixture("nccl-debug/07-h20-2node-net-ib-gdrdma-and-p2p-cumem-nccl1189.txt"), "nccl-gdrdma")->verdict, Verdict::kPass);
}

TEST(Verify, HostChecks) {
  const auto dcgm_ok = VerifyFixture("dcgm/01-dcgmi-diag-r2-p4de.txt");
  EXPECT_EQ(dcgm_ok.failures, 0);
  EXPECT_EQ(dcgm_ok.passes, 11);
  EXPECT_EQ(Result(VerifyFixture("dcgm/02-dcgmi-diag-row-remap-pending.txt"), "dcgm-error")->verdict, Verdict::kFail);
  const auto mem = VerifyFixture("dcgm/03-dcgmi-diag-r2-gpu-memory-fail-thermal.txt");
  EXPECT_EQ(Result(mem, "dcgm-test-fail")->verdict, Verdict::kFail);
  EXPECT_EQ(Result(mem, "dcgm-warning")->verdict, Verdict::kWarn);
  EXPECT_EQ(mem.ExitCode(), 2);
  // The idle 'downgraded' 2.5 GT/s link: a warning that says to re-check under load, not a failure.
  const auto idle = VerifyFixture("lspci/02-lspci-lnksta-3090-idle-2.5GT-downgraded-club3090-1028.txt");
  ASSERT_NE(Result(idle, "pcie-gen-cap"), nullptr);
  EXPECT_EQ(Result(idle, "pcie-gen-cap")->verdict, Verdict::kWarn);
  EXPECT_NE(Result(idle, "pcie-gen-cap")->next.find("under load"), std::string::npos);
  EXPECT_EQ(Result(idle, "pcie-width-cap")->verdict, Verdict::kPass);
  EXPECT_EQ(idle.failures, 0);
  // An x8 link on an x16 slot fails.
  const auto x8 = Verify({{"x8.txt", "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16\n\t\tLnkSta:\tSpeed 16GT/s, Width x8\n"}});
  EXPECT_EQ(Result(x8, "pcie-width-cap")->verdict, Verdict::kFail);
  EXPECT_EQ(*Result(x8, "pcie-width-cap")->expected, 16);
  // A Down port warns; the plan's 2 NICs per node are there (2 Active).
  EXPECT_EQ(VerifyFixture("ibstat/02-ibstat-gb10-cx7-roce-active-and-down.txt").warnings, 1);
  EXPECT_EQ(Result(VerifyFixture("ibstat/02-ibstat-gb10-cx7-roce-active-and-down.txt", Machine{"h100-sxm-80gb", 2, 8, "roce-200g", 2}), "ib-ports-plan")->verdict,
            Verdict::kPass);
  EXPECT_EQ(Result(VerifyFixture("ibstat/02-ibstat-gb10-cx7-roce-active-and-down.txt", Machine{"h100-sxm-80gb", 2, 8, "roce-200g", 4}), "ib-ports-plan")->verdict,
            Verdict::kFail);
  // Throttling: thermal/HW slowdown fails, SW power cap warns.
  const std::string q = "GPU 0000:18:00.0\n    Clocks Event Reasons\n        SW Power Cap : Active\n        HW Thermal Slowdown : Active\n";
  const auto hot = Verify({{"q.txt", q}});
  EXPECT_EQ(Result(hot, "smi-thermal-hw")->verdict, Verdict::kFail);
  EXPECT_EQ(Result(hot, "smi-throttle-any")->verdict, Verdict::kWarn);
  EXPECT_EQ(Result(hot, "smi-throttle-any")->measured_text, "SW Power Cap, HW Thermal Slowdown");
  // GPU-NIC affinity: PIX for the seven rows shown.
  int pix = 0;
  for (const auto& c : VerifyFixture("nvidia-smi-topo/15-8xH800-nv8-9nic-truncated-nccl933.txt").results) pix += c.id == "topo-gpu-nic-pix" && c.verdict == Verdict::kPass;
  EXPECT_EQ(pix, 7);
}

TEST(Verify, TopologyAgainstThePlansGpu) {
  // H100: 450 GB/s per direction at 25 GB/s per link = 18 links; the fixture shows NV18 everywhere.
  const auto h100 = VerifyFixture("nvidia-smi-topo/04-h100-8gpu-nv18.txt", Machine{"h100-sxm-80gb", 1, 8, "", 0});
  EXPECT_EQ(Result(h100, "topo-nvlink-links")->verdict, Verdict::kPass);
  EXPECT_EQ(*Result(h100, "topo-nvlink-links")->expected, 18);
  EXPECT_EQ(Result(h100, "topo-nvswitch-pairs")->verdict, Verdict::kPass);
  // The PCIe-only 8-GPU box against an 8x A100 SXM plan: no NVLink at all.
  const auto pcie = VerifyFixture("nvidia-smi-topo/14-8xA100-80GB-pcie-pxb-node-sys-nvbandwidth53.txt", Machine{"a100-sxm-80gb", 1, 8, "", 0});
  EXPECT_EQ(Result(pcie, "topo-nvlink-links")->verdict, Verdict::kFail);
  EXPECT_EQ(Result(pcie, "topo-nvswitch-pairs")->verdict, Verdict::kFail);
  EXPECT_EQ(Result(pcie, "topo-nvswitch-pairs")->measured, 28);
  // H800 (200 GB/s): 8 links, NV8 shown.
  EXPECT_EQ(Result(VerifyFixture("nvidia-smi-topo/15-8xH800-nv8-9nic-truncated-nccl933.txt", Machine{"h800-80gb", 1, 8, "", 0}), "topo-nvlink-links")->verdict,
            Verdict::kPass);
  // nvlink -s on a p4de (A100 80GB: 12 links).
  EXPECT_EQ(Result(VerifyFixture("nvidia-smi/01-nvlink-status-p4de.txt", Machine{"a100-sxm-80gb", 1, 8, "", 0}), "nvlink-links-plan")->verdict, Verdict::kPass);
}

TEST(Verify, RdmaBandwidthAgainstTheLineRate) {
  // 98.01 Gb/s on a 100G RoCE port: 98% >= 80% (seed 001).
  const auto ok = VerifyFixture("perftest/01-ib_write_bw-oci-roce-4qp-100g.txt", Machine{"a100-sxm-40gb", 2, 8, "roce-100g", 8});
  ASSERT_NE(Result(ok, "ib-bw-80pct"), nullptr) << Dump(ok);
  EXPECT_EQ(Result(ok, "ib-bw-80pct")->verdict, Verdict::kPass);
  EXPECT_NEAR(*Result(ok, "ib-bw-80pct")->expected, 80, 1e-9);
  // The same output held to a 200G port fails, with the slow-network troubleshooting section.
  const auto bad = VerifyFixture("perftest/01-ib_write_bw-oci-roce-4qp-100g.txt", std::nullopt, 200.0);
  EXPECT_EQ(Result(bad, "ib-bw-80pct")->verdict, Verdict::kFail);
  EXPECT_EQ(Result(bad, "ib-bw-80pct")->troubleshooting, "docs/troubleshooting.md#slow-network");
  // No line rate anywhere: not compared, and it says what would give it.
  const auto none = VerifyFixture("perftest/01-ib_write_bw-oci-roce-4qp-100g.txt");
  EXPECT_EQ(Result(none, "ib-bw-80pct")->verdict, Verdict::kNotApplicable);
  EXPECT_NE(Result(none, "ib-bw-80pct")->message.find("--line-rate-gbps"), std::string::npos);
  // The line rate from an ibstat output of the same HCA in the same run.
  const std::string ibstat = "CA 'mlx5_5'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 100\n";
  const auto joined = Verify({{"bw.txt", Text("perftest/01-ib_write_bw-oci-roce-4qp-100g.txt")}, {"ibstat.txt", ibstat}});
  EXPECT_EQ(Result(joined, "ib-bw-80pct")->verdict, Verdict::kPass);
  EXPECT_NE(Result(joined, "ib-bw-80pct")->expected_from.find("ibstat mlx5_5"), std::string::npos);
  // The table's own 400G Peak column: 210 Gb/s write is 52%.
  EXPECT_EQ(Result(VerifyFixture("perftest/08-perftest-bidir-send-write-read-table-roce-400g-moc.txt"), "perftest-table-80pct")->verdict, Verdict::kFail);
}

TEST(Verify, BusBandwidthAgainstThePlan) {
  // 2x p4de: AWS measured 78.3 GB/s and the fixture shows 78.33; the model's number for the same
  // machine (2 x 8 A100 80GB, 4 EFA) is the plan's expectation.
  const Machine p4de{"a100-sxm-80gb", 2, 8, "efa-v1", 4};
  const auto r = VerifyFixture("nccl-tests/04-allreduce-aws-p4de-2node-efa.txt", p4de);
  const CheckResult* c = Result(r, "nccl-busbw-plan-80");
  ASSERT_NE(c, nullptr) << Dump(r);
  ASSERT_TRUE(c->expected.has_value());
  // Where ranks and nodes come from is said: ranks from the rows' bus factor, nodes assumed from the plan.
  EXPECT_NE(c->expected_from.find("16 ranks (the bus factor of the rows)"), std::string::npos) << c->expected_from;
  EXPECT_NE(c->expected_from.find("2 node(s) (assumed: the plan's"), std::string::npos) << c->expected_from;
  EXPECT_NE(c->expected_from.find("8 per node"), std::string::npos) << c->expected_from;
  EXPECT_NE(c->expected_from.find("efa-v1"), std::string::npos) << c->expected_from;
  // The P2P-disabled DGX A100 run (5.2 GB/s) against a 4-GPU NVSwitch plan fails, with the next step.
  const auto p2p = VerifyFixture("nccl-tests/20-allreduce-dgx-a100-4gpu-p2p-disabled.txt", Machine{"a100-sxm-80gb", 1, 4, "", 0});
  ASSERT_NE(Result(p2p, "nccl-busbw-plan-50"), nullptr) << Dump(p2p);
  EXPECT_EQ(Result(p2p, "nccl-busbw-plan-50")->verdict, Verdict::kFail);
  EXPECT_FALSE(Result(p2p, "nccl-busbw-plan-50")->next.empty());
  EXPECT_EQ(p2p.ExitCode(), 2);
  // The same box with P2P on (234.74 GB/s) passes both.
  const auto nvs = VerifyFixture("nccl-tests/19-allreduce-dgx-a100-4gpu-nvswitch.txt", Machine{"a100-sxm-80gb", 1, 4, "", 0});
  EXPECT_EQ(Result(nvs, "nccl-busbw-plan-80")->verdict, Verdict::kPass) << Dump(nvs);
  EXPECT_EQ(nvs.ExitCode(), 0);
}

// ---- the property: halve the bandwidth in a copy of a passing output ----

// Every number of a bandwidth column halved (time doubled), the rest of the text as it was.
std::string Halve(const std::string& text, ToolKind kind) {
  std::istringstream in(text);
  std::string out, line;
  bool perf_rows = false;
  while (std::getline(in, line)) {
    std::string prefix, body = line;
    if (auto p = line.find("<stdout>:"); p != std::string::npos) prefix = line.substr(0, p + 9), body = line.substr(p + 9);
    else if (line.size() > 3 && std::isdigit(static_cast<unsigned char>(line[0])) && line[1] == ':' && line[2] == ' ') prefix = line.substr(0, 3), body = line.substr(3);
    std::istringstream ts(body);
    std::vector<std::string> tok;
    for (std::string t; ts >> t;) tok.push_back(t);
    auto num = [](const std::string& s) {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      return end && *end == 0 && !s.empty() ? std::optional<double>(v) : std::nullopt;
    };
    auto fmt = [](double v) {
      char b[64];
      std::snprintf(b, sizeof b, "%.4f", v);
      return std::string(b);
    };
    if (kind == ToolKind::kNcclTests && tok.size() >= 11 && num(tok[0]) && num(tok[1]) && line.find("NCCL") == std::string::npos) {
      const size_t n = tok.size();
      for (size_t i : {n - 8, n - 4}) tok[i] = fmt(*num(tok[i]) * 2);
      for (size_t i : {n - 7, n - 6, n - 3, n - 2}) tok[i] = fmt(*num(tok[i]) / 2);
    } else if (kind == ToolKind::kNcclTests && line.find("Avg bus bandwidth") != std::string::npos) {
      const size_t c = line.find(':', line.find("Avg"));
      out += line.substr(0, c + 1) + " " + fmt(*num(tok.back()) / 2) + "\n";
      continue;
    } else if (kind == ToolKind::kPerftest) {
      if (body.find("#bytes") != std::string::npos) perf_rows = body.find("BW peak") != std::string::npos;
      else if (perf_rows && tok.size() >= 4 && num(tok[0])) tok[2] = fmt(*num(tok[2]) / 2), tok[3] = fmt(*num(tok[3]) / 2);
      else {
        out += line + "\n";
        continue;
      }
    } else {
      out += line + "\n";
      continue;
    }
    std::string joined = prefix;
    for (const auto& t : tok) joined += " " + t;
    out += joined + "\n";
  }
  return out;
}

// The worst verdict among the checks of the bandwidth headline (pass < warn < fail); n/a if none judged it.
Verdict BandwidthVerdict(const VerifyReport& r) {
  Verdict worst = Verdict::kNotApplicable;
  auto rank = [](Verdict v) { return v == Verdict::kFail ? 3 : v == Verdict::kWarn ? 2 : v == Verdict::kPass ? 1 : 0; };
  for (const auto& c : r.results)
    if ((c.metric == "busbw_peak_gb_per_s" || c.metric == "bw_avg_gbit_per_s") && rank(c.verdict) > rank(worst)) worst = c.verdict;
  return worst;
}

struct BandwidthFixture {
  const char* file;
  std::optional<Machine> machine;  // the machine it ran on (its .source.txt), as a plan
  std::optional<double> line_rate_gbit_per_s;
  Verdict expected;                // the verdict of the output as it is
};

// Every bandwidth fixture, with the verdict it gets as it is. Below 80% of the plan (warn): 01 (190 of
// 247 GB/s modelled for 8x 200G RoCE), 15, 21; below 50% (fail): the single-NIC RoCE runs 13/14, the
// P2P-disabled runs 17/18/20/22, the 100G-IB V100 cluster 28/29; above 1.5x the plan (warn): 16 (the
// A40 NVLink bridge, which the model under-rates). Machines from the sidecars; "n/a" where no rule can judge the output
// (1 rank; a GPU the catalog does not list: K80, MI350X; GB200 NVL72 racks, one NVLink domain across
// 18 trays, which a job's gpus_per_node (<= 64) and the model's fabrics do not describe; 8-byte or
// atomic perftest runs).
const std::vector<BandwidthFixture>& BandwidthFixtures() {
  static const std::vector<BandwidthFixture> v = {
      {"nccl-tests/01-allreduce-oci-a100-2node-ib.txt", Machine{"a100-sxm-40gb", 2, 8, "roce-200g", 8}, std::nullopt, Verdict::kWarn},
      {"nccl-tests/02-rccl-allreduce-oci-mi300x-2node.txt", Machine{"mi300x-192gb", 2, 8, "roce-400g", 8}, std::nullopt, Verdict::kPass},
      {"nccl-tests/03-allreduce-oci-a100-2node-full-sweep.txt", Machine{"a100-sxm-40gb", 2, 8, "roce-200g", 8}, std::nullopt, Verdict::kPass},
      {"nccl-tests/04-allreduce-aws-p4de-2node-efa.txt", Machine{"a100-sxm-80gb", 2, 8, "efa-v1", 4}, std::nullopt, Verdict::kPass},
      {"nccl-tests/05-allreduce-aws-p5-2node-efa.txt", Machine{"h100-sxm-80gb", 2, 8, "efa-v2", 32}, std::nullopt, Verdict::kPass},
      {"nccl-tests/06-allreduce-aws-p5-eks-mpijob-excerpt.txt", Machine{"h100-sxm-80gb", 2, 8, "efa-v2", 32}, std::nullopt, Verdict::kPass},
      {"nccl-tests/07-allreduce-aws-batch-p5-single-or-multi.txt", Machine{"h100-sxm-80gb", 1, 8, "", 0}, std::nullopt, Verdict::kPass},
      {"nccl-tests/08-allreduce-aws-p5en-16node-excerpt.txt", Machine{"h200-sxm-141gb", 16, 8, "efa-v3", 16}, std::nullopt, Verdict::kPass},
      {"nccl-tests/09-allreduce-coreweave-h100-64gpu-sharp.txt", Machine{"h100-sxm-80gb", 8, 8, "ib-ndr", 8}, std::nullopt, Verdict::kPass},
      {"nccl-tests/10-allreduce-coreweave-gb200-nvl72-1rack.txt", std::nullopt, std::nullopt, Verdict::kNotApplicable},
      {"nccl-tests/11-allreduce-coreweave-gb200-2rack.txt", std::nullopt, std::nullopt, Verdict::kNotApplicable},
      {"nccl-tests/12-allreduce-coreweave-gb200-20rack.txt", std::nullopt, std::nullopt, Verdict::kNotApplicable},
      {"nccl-tests/13-allreduce-moc-h100-2node-roce-1nic-debuginfo.txt", Machine{"h100-sxm-80gb", 2, 1, "roce-400g", 1}, std::nullopt, Verdict::kFail},
      {"nccl-tests/14-sendrecv-moc-h100-2node-roce-1gpu-debuginfo.txt", Machine{"h100-sxm-80gb", 2, 1, "roce-400g", 1}, std::nullopt, Verdict::kFail},
      {"nccl-tests/15-sendrecv-moc-h100-2node-roce-4gpu-debuginfo.txt", Machine{"h100-sxm-80gb", 2, 4, "roce-400g", 1}, std::nullopt, Verdict::kWarn},
      {"nccl-tests/16-allreduce-a40-2gpu-nvlink-nv4.txt", Machine{"a40-48gb", 1, 2, "", 0}, std::nullopt, Verdict::kWarn},
      {"nccl-tests/17-allreduce-a40-4gpu-sys-p2p-disabled-low.txt", Machine{"a40-48gb", 1, 4, "", 0}, std::nullopt, Verdict::kFail},
      {"nccl-tests/18-allreduce-a40-2gpu-node-p2p-disabled-low.txt", Machine{"a40-48gb", 1, 2, "", 0}, std::nullopt, Verdict::kFail},
      {"nccl-tests/19-allreduce-dgx-a100-4gpu-nvswitch.txt", Machine{"a100-sxm-80gb", 1, 4, "", 0}, std::nullopt, Verdict::kPass},
      {"nccl-tests/20-allreduce-dgx-a100-4gpu-p2p-disabled.txt", Machine{"a100-sxm-80gb", 1, 4, "", 0}, std::nullopt, Verdict::kFail},
      {"nccl-tests/21-allreduce-dgx-h100-4gpu.txt", Machine{"h100-sxm-80gb", 1, 4, "", 0}, std::nullopt, Verdict::kWarn},
      {"nccl-tests/22-allreduce-dgx-h100-4gpu-p2p-disabled.txt", Machine{"h100-sxm-80gb", 1, 4, "", 0}, std::nullopt, Verdict::kFail},
      {"nccl-tests/23-allreduce-8xA100-40G-single-node-oldformat.txt", Machine{"a100-sxm-40gb", 1, 8, "", 0}, std::nullopt, Verdict::kPass},
      {"nccl-tests/24-allgather-8xA100-40G-single-node-oldformat.txt", Machine{"a100-sxm-40gb", 1, 8, "", 0}, std::nullopt, Verdict::kPass},
      {"nccl-tests/25-reducescatter-8xA100-40G-single-node-oldformat.txt", Machine{"a100-sxm-40gb", 1, 8, "", 0}, std::nullopt, Verdict::kPass},
      {"nccl-tests/26-alltoall-8xA100-40G-single-node-oldformat.txt", Machine{"a100-sxm-40gb", 1, 8, "", 0}, std::nullopt, Verdict::kPass},
      {"nccl-tests/27-allreduce-2node-k80-tcp-low-wrong-NA.txt", std::nullopt, std::nullopt, Verdict::kNotApplicable},
      {"nccl-tests/28-allreduce-8node-8xV100-100G-ib-low-issue78.txt", Machine{"v100-sxm-32gb", 8, 8, "ib-edr", 1}, std::nullopt, Verdict::kFail},
      {"nccl-tests/29-alltoall-8node-8xV100-100G-ib-error-col-issue78.txt", Machine{"v100-sxm-32gb", 8, 8, "ib-edr", 1}, std::nullopt, Verdict::kFail},
      {"nccl-tests/30-alltoall-1x5090-busbw0-issue287.txt", Machine{"rtx5090-32gb", 1, 1, "", 0}, std::nullopt, Verdict::kNotApplicable},
      {"nccl-tests/31-rccl-allreduce-8xMI350X-single-node-whitespace-collapsed.txt", std::nullopt, std::nullopt, Verdict::kNotApplicable},
      {"nccl-tests/32-rccl-allreduce-8xMI350X-single-node-excerpt-aligned.txt", std::nullopt, std::nullopt, Verdict::kNotApplicable},
      {"perftest/01-ib_write_bw-oci-roce-4qp-100g.txt", Machine{"a100-sxm-40gb", 2, 8, "roce-100g", 8}, std::nullopt, Verdict::kPass},
      {"perftest/02-ib_write_bw-loopback-ib0-8M.txt", Machine{"a100-sxm-40gb", 2, 8, "ib-hdr", 8}, std::nullopt, Verdict::kPass},
      {"perftest/03-ib_write_bw-loopback-ib0-all-sizes.txt", std::nullopt, 200.0, Verdict::kPass},
      {"perftest/06-ib_write_bw-postlist-8B-low-bw-perftest273.txt", std::nullopt, 100.0, Verdict::kNotApplicable},
      {"perftest/07-ib_atomic_bw-soft-ib-pib-low-bw.txt", std::nullopt, 100.0, Verdict::kNotApplicable},
  };
  return v;
}

TEST(VerifyProperty, HalvingTheBandwidthOfAPassingOutputTurnsItToWarnOrFail) {
  int passing = 0;
  for (const auto& f : BandwidthFixtures()) {
    const ToolKind kind = f.file[0] == 'n' ? ToolKind::kNcclTests : ToolKind::kPerftest;
    const std::string text = Text(f.file);
    const auto as_is = Verify({{f.file, text}}, f.machine, f.line_rate_gbit_per_s);
    EXPECT_EQ(ToString(BandwidthVerdict(as_is)), ToString(f.expected)) << f.file << "\n" << Dump(as_is);
    if (BandwidthVerdict(as_is) != Verdict::kPass) continue;
    ++passing;
    const std::string halved = Halve(text, kind);
    const auto half = Verify({{f.file, halved}}, f.machine, f.line_rate_gbit_per_s);
    const Verdict v = BandwidthVerdict(half);
    EXPECT_TRUE(v == Verdict::kWarn || v == Verdict::kFail) << f.file << " halved: " << ToString(v) << "\n" << Dump(half);
    // The copy still parses the same way, with half the peak.
    const ToolOutput a = ParseToolOutput(text, f.file), b = ParseToolOutput(halved, f.file);
    const char* m = kind == ToolKind::kNcclTests ? "busbw_peak_gb_per_s" : "bw_avg_gbit_per_s";
    for (const auto& ra : a.readings)
      if (ra.metric == m)
        for (const auto& rb : b.readings)
          if (rb.metric == m) EXPECT_NEAR(rb.value, ra.value / 2, 1e-3 * std::max(1.0, ra.value)) << f.file;
  }
  EXPECT_EQ(passing, 16) << "the property must be exercised by the passing bandwidth fixtures";
}

TEST(Verify, ExitCodes) {
  EXPECT_EQ(VerifyFixture("nvidia-smi-topo/04-h100-8gpu-nv18.txt").ExitCode(), 0);
  EXPECT_EQ(VerifyFixture("nccl-debug/03-net-socket-eth0.txt").ExitCode(), 0);  // a warning only
  EXPECT_EQ(VerifyFixture("dcgm/02-dcgmi-diag-row-remap-pending.txt").ExitCode(), 2);
  const auto mixed = Verify({{"notes.md", "# my notes\nnothing here\n"}, {"topo.txt", Text("nvidia-smi-topo/04-h100-8gpu-nv18.txt")}});
  EXPECT_EQ(mixed.unrecognised, std::vector<std::string>{"notes.md"});
  EXPECT_EQ(mixed.ExitCode(), 1);
  EXPECT_FALSE(VerifyReadings(mixed).empty());
}

TEST(Checklist, CommandsAndNumbersForATwoNodePlan) {
  const PlanContext pc = PlanOf(Machine{"h100-sxm-80gb", 2, 8, "ib-ndr", 8});
  auto steps = BuildChecklist(pc, Cat(), Rules(), "plan.json");
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  std::string all;
  for (const auto& s : *steps) {
    all += s.title + "\n" + s.expect + "\n" + s.why + "\n";
    for (const auto& c : s.commands) all += c + "\n";
  }
  for (const char* want : {"nvidia-smi topo -m > topo.txt", "NV18", "nvidia-smi -q -d CLOCK,PERFORMANCE", "lspci -vv", "ibstat > ibstat.txt",
                           "ib_write_bw -d mlx5_0 -F --report_gbits", "mpirun -np 16 -N 8", "srun -N 2 --ntasks-per-node=8",
                           "all_reduce_perf -b 8 -e", "all_gather_perf", "NCCL_DEBUG=INFO", "dcgmi diag -r 2", "fio --name=seqread", "checkpoint",
                           "ib-bw-80pct", "nccl-busbw-plan-80", "a tiny job first", "gpuplan export plan.json --to torchrun"})
    EXPECT_NE(all.find(want), std::string::npos) << want << "\n" << all;
  // ib_write_bw on NDR: 80% of 400 Gb/s, and Azure's 380.
  EXPECT_NE(all.find(">= 320 Gb/s"), std::string::npos) << all;
  EXPECT_NE(all.find(">= 380 Gb/s"), std::string::npos) << all;
  // A single node: no RDMA step, one all_reduce_perf process with -g 8.
  auto one = BuildChecklist(PlanOf(Machine{"a100-sxm-80gb", 1, 8, "", 0}), Cat(), Rules(), "job.yaml");
  ASSERT_TRUE(one.ok());
  std::string s1;
  for (const auto& s : *one)
    for (const auto& c : s.commands) s1 += c + "\n";
  EXPECT_EQ(s1.find("ib_write_bw"), std::string::npos);
  EXPECT_NE(s1.find("-g 8"), std::string::npos) << s1;
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// What verify prints for a rule speaks to users: its troubleshooting row is a section of
// docs/troubleshooting.md that exists, and no cell cites the users' articles or internal notes.
TEST(CheckRules, RowsPointAtTroubleshootingSectionsAndCiteNoInternalNotes) {
  auto doc = ReadTextFile(std::string(GPUPLAN_SOURCE_DIR) + "/docs/troubleshooting.md");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const std::string prefix = "docs/troubleshooting.md#";
  for (const auto& r : Rules()) {
    ASSERT_EQ(r.troubleshooting.rfind(prefix, 0), 0u) << r.id << ": " << r.troubleshooting;
    const std::string anchor = r.troubleshooting.substr(prefix.size());
    EXPECT_NE(doc->find("<a id=\"" + anchor + "\"></a>"), std::string::npos) << r.id << ": no section #" << anchor;
    for (const std::string& cell : {r.source, r.next, r.troubleshooting})
      for (const char* bad : {"seed 0", "seed0", "launch-serving-checks", "shared/", "notes.md", "exports-audit", "\xC2\xA7"})
        EXPECT_EQ(cell.find(bad), std::string::npos) << r.id << " cites '" << bad << "': " << cell;
  }
}

TEST(CheckRules, DocsListEveryCheckWithItsSource) {
  auto doc = ReadTextFile(std::string(GPUPLAN_SOURCE_DIR) + "/docs/checks.md");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  for (const auto& r : Rules()) {
    EXPECT_NE(doc->find("| `" + r.id + "` |"), std::string::npos) << r.id << " is not in docs/checks.md";
    std::string src = r.source;
    for (size_t p = src.find('|'); p != std::string::npos; p = src.find('|', p + 2)) src.replace(p, 1, "\\|");
    EXPECT_NE(doc->find(src), std::string::npos) << r.id << ": its source is not in docs/checks.md";
  }
}

}  // namespace
}  // namespace gpuplan
