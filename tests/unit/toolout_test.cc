// Every real tool output in ../shared/fixtures/tool-outputs/ is recognised from its content and
// parsed; the numbers read from each are asserted against values read from the files by eye (the
// tables below); truncated, garbled and non-tool inputs give warnings at their line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "gpuplan/csv.h"
#include "gpuplan/toolout.h"

namespace gpuplan {
namespace {

const std::string kDir = std::string(GPUPLAN_SHARED_DIR) + "/fixtures/tool-outputs";

std::string Text(const std::string& rel) {
  auto t = ReadTextFile(kDir + "/" + rel);
  EXPECT_TRUE(t.ok()) << rel << ": " << t.status().ToString();
  return t.ok() ? *t : "";
}

ToolOutput Parse(const std::string& rel) { return ParseToolOutput(Text(rel), rel); }

std::vector<std::string> FixtureFiles() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kDir)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (name == "README.md" || name.size() > 11 && name.substr(name.size() - 11) == ".source.txt") continue;
    out.push_back(std::filesystem::relative(e.path(), kDir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const Reading* Find(const ToolOutput& o, const std::string& metric, const std::string& text = "") {
  for (const auto& r : o.readings)
    if (r.metric == metric && (text.empty() || r.text == text)) return &r;
  return nullptr;
}

std::vector<const Reading*> All(const ToolOutput& o, const std::string& metric) {
  std::vector<const Reading*> v;
  for (const auto& r : o.readings)
    if (r.metric == metric) v.push_back(&r);
  return v;
}

bool HasWarningAt(const ToolOutput& o, int line) {
  for (const auto& w : o.warnings)
    if (w.where.line == line) return true;
  return false;
}

std::string Warnings(const ToolOutput& o) {
  std::string s;
  for (const auto& w : o.warnings) s += w.where.file + ":" + std::to_string(w.where.line) + " " + w.message + "\n";
  return s;
}

TEST(ToolOutput, EveryFixtureIsRecognisedAndParsed) {
  const auto files = FixtureFiles();
  EXPECT_EQ(files.size(), 84u) << "the fixture README lists 84 outputs";
  for (const auto& f : files) {
    const ToolOutput o = Parse(f);
    EXPECT_NE(o.kind, ToolKind::kUnknown) << f;
    EXPECT_FALSE(o.readings.empty()) << f << "\n" << Warnings(o);
    for (const auto& r : o.readings) EXPECT_EQ(r.where.file, f);
  }
}

// The folder a fixture is in names its tool; detection never looks at it (a copy under another name
// is detected the same), so the folder is a fair check of the content-based kind.
TEST(ToolOutput, KindComesFromContentNotName) {
  const std::map<std::string, std::set<ToolKind>> by_folder = {
      {"nccl-tests", {ToolKind::kNcclTests}},
      {"perftest", {ToolKind::kPerftest, ToolKind::kPerftestTable}},
      {"nvidia-smi-topo", {ToolKind::kNvidiaSmiTopo, ToolKind::kNvidiaSmiP2p}},
      {"nvidia-smi", {ToolKind::kNvidiaSmi, ToolKind::kNvidiaSmiQuery, ToolKind::kNvlinkStatus}},
      {"lspci", {ToolKind::kLspci}},
      {"ibstat", {ToolKind::kIbstat}},
      {"fio", {ToolKind::kFioJson}},
      {"dcgm", {ToolKind::kDcgmiDiag}},
      {"nccl-debug", {ToolKind::kNcclDebug}},
  };
  for (const auto& f : FixtureFiles()) {
    const std::string folder = f.substr(0, f.find('/'));
    ASSERT_TRUE(by_folder.count(folder)) << f;
    const ToolOutput o = ParseToolOutput(Text(f), "renamed.log");
    EXPECT_TRUE(by_folder.at(folder).count(o.kind)) << f << " read as " << ToString(o.kind);
    EXPECT_EQ(o.kind, DetectToolOutput(Text(f))) << f;
  }
}

struct NcclCase {
  const char* file;
  double peak_busbw_gb_per_s;  // max busbw over every row, out-of-place or in-place
  double avg_busbw_gb_per_s;   // the printed "Avg bus bandwidth"; -1 = not in the output
  const char* op;              // named or inferred ("unknown" when the output cannot say)
};

// Read from the files by eye (and checked with a separate script): see each .source.txt.
const NcclCase kNccl[] = {
    {"01-allreduce-oci-a100-2node-ib.txt", 189.60, -1, "all_reduce"},
    {"02-rccl-allreduce-oci-mi300x-2node.txt", 358.37, -1, "all_reduce"},
    {"03-allreduce-oci-a100-2node-full-sweep.txt", 237.94, 66.4834, "all_reduce"},
    {"04-allreduce-aws-p4de-2node-efa.txt", 78.33, -1, "all_reduce"},
    {"05-allreduce-aws-p5-2node-efa.txt", 487.26, -1, "all_reduce"},
    {"06-allreduce-aws-p5-eks-mpijob-excerpt.txt", 437.89, 52.9753, "all_reduce"},
    {"07-allreduce-aws-batch-p5-single-or-multi.txt", 483.35, 156.742, "all_reduce"},
    {"08-allreduce-aws-p5en-16node-excerpt.txt", 369.86, 84.0569, "all_reduce"},
    {"09-allreduce-coreweave-h100-64gpu-sharp.txt", 386.56, 373.187, "all_reduce"},
    {"10-allreduce-coreweave-gb200-nvl72-1rack.txt", 846.82, 745.53, "all_reduce"},
    {"11-allreduce-coreweave-gb200-2rack.txt", 820.36, 688.487, "all_reduce"},
    {"12-allreduce-coreweave-gb200-20rack.txt", 405.74, 297.808, "all_reduce"},
    {"13-allreduce-moc-h100-2node-roce-1nic-debuginfo.txt", 15.18, 15.0418, "unknown"},
    {"14-sendrecv-moc-h100-2node-roce-1gpu-debuginfo.txt", 13.98, 13.9592, "unknown"},
    {"15-sendrecv-moc-h100-2node-roce-4gpu-debuginfo.txt", 5.86, 5.80752, "sendrecv_or_broadcast"},
    {"16-allreduce-a40-2gpu-nvlink-nv4.txt", 47.49, 47.4509, "unknown"},
    {"17-allreduce-a40-4gpu-sys-p2p-disabled-low.txt", 1.44, 1.40216, "all_reduce"},
    {"18-allreduce-a40-2gpu-node-p2p-disabled-low.txt", 4.02, 3.85845, "unknown"},
    {"19-allreduce-dgx-a100-4gpu-nvswitch.txt", 234.74, 222.066, "all_reduce"},
    {"20-allreduce-dgx-a100-4gpu-p2p-disabled.txt", 5.20, 5.19883, "all_reduce"},
    {"21-allreduce-dgx-h100-4gpu.txt", 370.75, 369.941, "all_reduce"},
    {"22-allreduce-dgx-h100-4gpu-p2p-disabled.txt", 24.27, 22.9255, "all_reduce"},
    {"23-allreduce-8xA100-40G-single-node-oldformat.txt", 235.26, 68.4048, "all_reduce"},
    {"24-allgather-8xA100-40G-single-node-oldformat.txt", 230.07, 58.2651, "all_gather_or_alltoall"},
    {"25-reducescatter-8xA100-40G-single-node-oldformat.txt", 231.52, 60.168, "reduce_scatter"},
    {"26-alltoall-8xA100-40G-single-node-oldformat.txt", 226.16, 58.6481, "all_gather_or_alltoall"},
    {"27-allreduce-2node-k80-tcp-low-wrong-NA.txt", 0.63, 0.565546, "unknown"},
    {"28-allreduce-8node-8xV100-100G-ib-low-issue78.txt", 4.33, 4.32178, "all_reduce"},
    {"29-alltoall-8node-8xV100-100G-ib-error-col-issue78.txt", 0.51, 0.507636, "unknown"},
    {"30-alltoall-1x5090-busbw0-issue287.txt", 0.00, 0.0, "alltoall"},
    {"31-rccl-allreduce-8xMI350X-single-node-whitespace-collapsed.txt", 367.51, 111.827, "all_reduce"},
    {"32-rccl-allreduce-8xMI350X-single-node-excerpt-aligned.txt", 367.51, 111.827, "all_reduce"},
};

TEST(NcclTests, PeakAndAverageBusBandwidthOfEveryFile) {
  int n = 0;
  for (const auto& c : kNccl) {
    const ToolOutput o = Parse(std::string("nccl-tests/") + c.file);
    ASSERT_EQ(o.kind, ToolKind::kNcclTests) << c.file;
    const Reading* peak = Find(o, "busbw_peak_gb_per_s");
    ASSERT_NE(peak, nullptr) << c.file;
    EXPECT_NEAR(peak->value, c.peak_busbw_gb_per_s, 1e-6) << c.file;
    EXPECT_EQ(peak->unit, "GB/s");
    EXPECT_EQ(peak->context.at("op"), c.op) << c.file << " " << (peak->context.count("op_from") ? peak->context.at("op_from") : "");
    const Reading* avg = Find(o, "busbw_avg_gb_per_s");
    if (c.avg_busbw_gb_per_s < 0) {
      EXPECT_EQ(avg, nullptr) << c.file;
    } else {
      ASSERT_NE(avg, nullptr) << c.file;
      EXPECT_NEAR(avg->value, c.avg_busbw_gb_per_s, 1e-4) << c.file;
    }
    ++n;
  }
  EXPECT_EQ(n, 32);
}

TEST(NcclTests, RanksNodesGpuAndColumns) {
  auto ctx = [](const std::string& f, const char* key) {
    const ToolOutput o = Parse("nccl-tests/" + f);
    const Reading* r = Find(o, "busbw_peak_gb_per_s");
    return r && r->context.count(key) ? r->context.at(key) : std::string("-");
  };
  EXPECT_EQ(ctx("01-allreduce-oci-a100-2node-ib.txt", "ranks"), "16");            // Rank 15 is the last line shown
  EXPECT_EQ(ctx("01-allreduce-oci-a100-2node-ib.txt", "nodes_at_least"), "2");    // 4 of 16 rank lines: two hosts seen
  EXPECT_EQ(ctx("01-allreduce-oci-a100-2node-ib.txt", "gpu_name"), "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(ctx("03-allreduce-oci-a100-2node-full-sweep.txt", "nodes"), "2");     // all 16 rank lines
  EXPECT_EQ(ctx("13-allreduce-moc-h100-2node-roce-1nic-debuginfo.txt", "nodes"), "2");  // "nRanks 2 nNodes 2"
  EXPECT_EQ(ctx("23-allreduce-8xA100-40G-single-node-oldformat.txt", "nodes"), "1");   // one process, -g 8
  EXPECT_EQ(ctx("23-allreduce-8xA100-40G-single-node-oldformat.txt", "format"), "old (error column)");
  EXPECT_EQ(ctx("02-rccl-allreduce-oci-mi300x-2node.txt", "variant"), "rccl-tests");
  EXPECT_EQ(ctx("04-allreduce-aws-p4de-2node-efa.txt", "ranks"), "16");           // from the bus factor 1.875
  EXPECT_EQ(ctx("30-alltoall-1x5090-busbw0-issue287.txt", "ranks"), "1");
  // #wrong: a count summed over both columns (N/A skipped); the old format's error column: its largest value.
  const ToolOutput w = Parse("nccl-tests/01-allreduce-oci-a100-2node-ib.txt");
  ASSERT_NE(Find(w, "wrong_total"), nullptr);
  EXPECT_EQ(Find(w, "wrong_total")->value, 0);
  EXPECT_EQ(Find(Parse("nccl-tests/27-allreduce-2node-k80-tcp-low-wrong-NA.txt"), "wrong_total"), nullptr);  // all N/A
  const ToolOutput e = Parse("nccl-tests/29-alltoall-8node-8xV100-100G-ib-error-col-issue78.txt");
  ASSERT_NE(Find(e, "validation_error_max"), nullptr);
  EXPECT_EQ(Find(e, "validation_error_max")->value, 1.0);
  EXPECT_NEAR(Find(Parse("nccl-tests/28-allreduce-8node-8xV100-100G-ib-low-issue78.txt"), "validation_error_max")->value, 2e-6, 1e-12);
  // Per-size readings: one per row (03 sweeps 8 B .. 8 GiB: 31 rows).
  EXPECT_EQ(All(Parse("nccl-tests/03-allreduce-oci-a100-2node-full-sweep.txt"), "busbw_gb_per_s").size(), 31u);
  // The NCCL INFO lines inside an nccl-tests output are read too.
  const ToolOutput d = Parse("nccl-tests/15-sendrecv-moc-h100-2node-roce-4gpu-debuginfo.txt");
  EXPECT_NE(Find(d, "channel_transport", "NET/IB/GDRDMA"), nullptr);
  EXPECT_NE(Find(d, "transport", "NET/IB"), nullptr);
}

struct PerftestCase {
  const char* file;
  const char* tool;
  double bw_avg_gbit_per_s;  // BW average at the largest message size, in Gb/s; -1 = no result row
};

// MB/sec is 2^20 bytes/s in perftest (format_factor 0x100000; Gb/sec: 1.25e8 bytes/s).
const PerftestCase kPerftest[] = {
    {"01-ib_write_bw-oci-roce-4qp-100g.txt", "ib_write_bw", 98.01},
    {"02-ib_write_bw-loopback-ib0-8M.txt", "ib_write_bw", 24056.72 * 1048576 * 8 / 1e9},
    {"03-ib_write_bw-loopback-ib0-all-sizes.txt", "ib_write_bw", 23240.68 * 1048576 * 8 / 1e9},
    {"04-ib_read_lat-roce-macvlan-pods-7us.txt", "ib_read_lat", -1},
    {"05-ib_read_lat-roce-sriov-vf-pods.txt", "ib_read_lat", -1},
    {"06-ib_write_bw-postlist-8B-low-bw-perftest273.txt", "ib_write_bw", 0.48},
    {"07-ib_atomic_bw-soft-ib-pib-low-bw.txt", "ib_atomic_bw", 1.67 * 1048576 * 8 / 1e9},
};

TEST(Perftest, BandwidthAverageOfEveryFile) {
  for (const auto& c : kPerftest) {
    const ToolOutput o = Parse(std::string("perftest/") + c.file);
    ASSERT_EQ(o.kind, ToolKind::kPerftest) << c.file;
    EXPECT_EQ(o.tool, c.tool) << c.file;
    const Reading* bw = Find(o, "bw_avg_gbit_per_s");
    if (c.bw_avg_gbit_per_s < 0) {
      EXPECT_EQ(bw, nullptr) << c.file;
      continue;
    }
    ASSERT_NE(bw, nullptr) << c.file;
    EXPECT_NEAR(bw->value, c.bw_avg_gbit_per_s, 1e-6 * std::max(1.0, c.bw_avg_gbit_per_s)) << c.file;
    EXPECT_EQ(bw->unit, "Gb/s");
  }
  const ToolOutput o = Parse("perftest/01-ib_write_bw-oci-roce-4qp-100g.txt");
  const Reading* bw = Find(o, "bw_avg_gbit_per_s");
  EXPECT_EQ(bw->context.at("device"), "mlx5_5");
  EXPECT_EQ(bw->context.at("link_type"), "Ethernet");
  EXPECT_EQ(bw->context.at("qps"), "4");
  EXPECT_EQ(bw->context.at("msg_bytes"), "65536");
  EXPECT_EQ(Find(o, "mtu_bytes")->value, 4096);
  // 03 sweeps every size (23 distinct rows; the server's repeat of the last row is not counted twice).
  EXPECT_EQ(All(Parse("perftest/03-ib_write_bw-loopback-ib0-all-sizes.txt"), "row_bw_avg_gbit_per_s").size(), 23u);
}

TEST(Perftest, LatencyOutputsStopAtTheirHeader) {
  // Both ib_read_lat fixtures end after the "#bytes ... t_typical[usec]" header (the source cut the
  // result row): a warning at that line, the parameters read, the CPU-frequency notes kept.
  const ToolOutput a = Parse("perftest/04-ib_read_lat-roce-macvlan-pods-7us.txt");
  EXPECT_TRUE(HasWarningAt(a, 20)) << Warnings(a);
  EXPECT_EQ(Find(a, "mtu_bytes")->value, 1024);
  EXPECT_EQ(All(a, "cpu_frequency_not_max").size(), 2u);
  const ToolOutput b = Parse("perftest/05-ib_read_lat-roce-sriov-vf-pods.txt");
  EXPECT_TRUE(HasWarningAt(b, 25)) << Warnings(b);
  EXPECT_EQ(Find(b, "mtu_bytes")->context.at("device"), "mlx5_5");
}

TEST(Perftest, NegativeBandwidthAndNonFiniteLatencyAreWarningsNotReadings) {
  const ToolOutput bw = ParseToolOutput(
      " RDMA_Write BW Test\n #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n"
      " 65536 5000 -1 -1 0.0\n 1048576 5000 nan inf 0.0\n",
      "bw.txt");
  EXPECT_TRUE(bw.readings.empty());
  ASSERT_GE(bw.warnings.size(), 2u);
  EXPECT_EQ(bw.warnings[0].where.line, 3);
  EXPECT_NE(bw.warnings[0].message.find("negative"), std::string::npos);
  const ToolOutput lat = ParseToolOutput(
      " RDMA_Read Latency Test\n #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec]\n"
      " 2 1000 nan inf -1.5 1e999 -nan\n 4 1000 2.1 5.0 2.2 2.3 0.1\n",
      "lat.txt");
  for (const auto& r : lat.readings) {
    EXPECT_TRUE(std::isfinite(r.value) && r.value >= 0) << r.metric;
    EXPECT_EQ(r.where.line, 4) << r.metric;
  }
  EXPECT_EQ(lat.warnings.size(), 5u);
}

TEST(Perftest, ResultTable) {
  const ToolOutput o = Parse("perftest/08-perftest-bidir-send-write-read-table-roce-400g-moc.txt");
  ASSERT_EQ(o.kind, ToolKind::kPerftestTable);
  EXPECT_EQ(Find(o, "line_rate_gbit_per_s")->value, 400);
  std::map<std::string, double> uni, bidir;
  for (const auto& r : o.readings) {
    if (r.metric == "bw_avg_gbit_per_s") uni[r.tool] = r.value;
    if (r.metric == "bw_avg_max_bidir_gbit_per_s") bidir[r.tool] = r.value;
  }
  EXPECT_EQ(uni["ib_write_bw"], 210);
  EXPECT_EQ(uni["ib_send_bw"], 210);
  EXPECT_EQ(uni["ib_read_bw"], 80);
  EXPECT_EQ(bidir["ib_read_bw"], 163);   // 262144 B row
  EXPECT_EQ(bidir["ib_send_bw"], 381);
  EXPECT_EQ(bidir["ib_write_bw"], 370);
}

struct TopoCase {
  const char* file;
  int gpus, nvlink_count, pairs_without_nvlink;
};

const TopoCase kTopo[] = {
    {"01-2gpu-nv2.txt", 2, 2, 0},
    {"02-2gpu-phb.txt", 2, 0, 1},
    {"03-a100-8gpu-nv12.txt", 8, 12, 0},
    {"04-h100-8gpu-nv18.txt", 8, 18, 0},
    {"05-h100-8gpu-nv18-ht-affinity.txt", 8, 18, 0},
    {"08-8xA40-nv4-pairs-node-sys-abbrev.txt", 8, 4, 24},
    {"09-dgx-a100-nv12-abbrev.txt", 8, 12, 0},
    {"10-dgx-h100-nv18-abbrev.txt", 8, 18, 0},
    {"12-5gpu-consumer-sys-phb-node-club3090-46.txt", 5, 0, 10},
    {"13-2gpu-dual-socket-sys-club3090-178.txt", 2, 0, 1},
    {"14-8xA100-80GB-pcie-pxb-node-sys-nvbandwidth53.txt", 8, 0, 28},
    {"15-8xH800-nv8-9nic-truncated-nccl933.txt", 8, 8, 0},
};

TEST(Topo, NvlinkCountOfEveryTopology) {
  for (const auto& c : kTopo) {
    const ToolOutput o = Parse(std::string("nvidia-smi-topo/") + c.file);
    ASSERT_EQ(o.kind, ToolKind::kNvidiaSmiTopo) << c.file;
    EXPECT_EQ(Find(o, "gpu_count")->value, c.gpus) << c.file;
    EXPECT_EQ(Find(o, "nvlink_count")->value, c.nvlink_count) << c.file;
    EXPECT_EQ(Find(o, "gpu_pairs_without_nvlink")->value, c.pairs_without_nvlink) << c.file;
  }
  const ToolOutput a40 = Parse("nvidia-smi-topo/08-8xA40-nv4-pairs-node-sys-abbrev.txt");
  EXPECT_EQ(Find(a40, "gpu_pair_link", "NV4")->value, 4);
  EXPECT_EQ(Find(a40, "gpu_pair_link", "NODE")->value, 8);
  EXPECT_EQ(Find(a40, "gpu_pair_link", "SYS")->value, 16);
  const ToolOutput pcie = Parse("nvidia-smi-topo/14-8xA100-80GB-pcie-pxb-node-sys-nvbandwidth53.txt");
  EXPECT_EQ(Find(pcie, "gpu_pair_link", "PXB")->value, 4);
  EXPECT_EQ(Find(pcie, "numa_nodes")->value, 2);
}

TEST(Topo, GpuNicAffinityAndTheTruncatedMatrix) {
  const ToolOutput o = Parse("nvidia-smi-topo/15-8xH800-nv8-9nic-truncated-nccl933.txt");
  EXPECT_EQ(Find(o, "nic_count")->value, 9);
  const auto aff = All(o, "gpu_nic_affinity");
  ASSERT_EQ(aff.size(), 7u);  // GPU7's row is cut off
  const char* nic[] = {"NIC2", "NIC4", "NIC6", "NIC8", "NIC1", "NIC3", "NIC5"};
  for (size_t i = 0; i < aff.size(); ++i) {
    EXPECT_EQ(aff[i]->text, "PIX");
    EXPECT_EQ(aff[i]->context.at("gpu"), std::to_string(i));
    EXPECT_EQ(aff[i]->context.at("nic"), nic[i]);
  }
  EXPECT_TRUE(HasWarningAt(o, 8)) << Warnings(o);  // the last row read; the header names 8 GPUs
}

TEST(Topo, PeerToPeerMatrices) {
  struct { const char* file; int ok, not_ok; } cases[] = {
      {"06-h100-p2p-read-ok.txt", 28, 0}, {"07-2xL4-p2p-read-cns.txt", 0, 1}, {"11-4xK80-p2p-ok-ns.txt", 2, 4}};
  for (const auto& c : cases) {
    const ToolOutput o = Parse(std::string("nvidia-smi-topo/") + c.file);
    ASSERT_EQ(o.kind, ToolKind::kNvidiaSmiP2p) << c.file;
    EXPECT_EQ(Find(o, "p2p_pairs_ok")->value, c.ok) << c.file;
    EXPECT_EQ(Find(o, "p2p_pairs_not_ok")->value, c.not_ok) << c.file;
  }
  EXPECT_EQ(Find(Parse("nvidia-smi-topo/07-2xL4-p2p-read-cns.txt"), "p2p_pairs_not_ok")->text, "CNS x1");
}

TEST(NvidiaSmi, TableQueryAndNvlink) {
  const ToolOutput nv = Parse("nvidia-smi/01-nvlink-status-p4de.txt");
  ASSERT_EQ(nv.kind, ToolKind::kNvlinkStatus);
  EXPECT_EQ(Find(nv, "nvlink_active_links")->value, 12);
  EXPECT_EQ(Find(nv, "nvlink_total_gb_per_s")->value, 300);
  EXPECT_EQ(Find(nv, "nvlink_link_gb_per_s")->value, 25);

  const ToolOutput a100 = Parse("nvidia-smi/02-nvidia-smi-a100-80gb-pcie.txt");
  ASSERT_EQ(a100.kind, ToolKind::kNvidiaSmi);
  EXPECT_EQ(Find(a100, "gpu_util_pct")->value, 100);
  EXPECT_EQ(Find(a100, "power_w")->value, 69);
  EXPECT_EQ(Find(a100, "power_cap_w")->value, 300);
  EXPECT_EQ(Find(a100, "memory_total_mib")->value, 81920);
  EXPECT_EQ(Find(a100, "temperature_c")->value, 32);
  EXPECT_EQ(Find(a100, "driver_version")->text, "550.90.12");
  EXPECT_EQ(Find(a100, "gpu_util_pct")->context.at("gpu_name"), "NVIDIA A100 80GB PCIe");

  const ToolOutput k80 = Parse("nvidia-smi/03-nvidia-smi-4xK80-driver375.txt");
  EXPECT_EQ(Find(k80, "gpu_count")->value, 4);
  std::vector<double> temps;
  for (const auto* r : All(k80, "temperature_c")) temps.push_back(r->value);
  EXPECT_EQ(temps, (std::vector<double>{33, 46, 36, 46}));
  EXPECT_EQ(All(Parse("nvidia-smi/05-nvidia-smi-4xGH200.txt"), "power_cap_w").size(), 4u);

  const ToolOutput clk = Parse("nvidia-smi/04-nvidia-smi-q-d-CLOCK-4xP100.txt");
  ASSERT_EQ(clk.kind, ToolKind::kNvidiaSmiQuery);
  EXPECT_EQ(Find(clk, "clock_sm_mhz")->value, 405);
  EXPECT_EQ(Find(clk, "clock_sm_max_mhz")->value, 1328);
  EXPECT_EQ(Find(clk, "clock_sm_avg_mhz")->value, 427);
  EXPECT_EQ(Find(clk, "clock_app_graphics_mhz")->value, 1189);
  EXPECT_EQ(Find(clk, "gpu_count")->value, 4);

  const ToolOutput thr = Parse("nvidia-smi/06-nvidia-smi-q-clocks-throttle-reasons-grep-kubeflow68.txt");
  EXPECT_EQ(Find(thr, "throttle_reasons_active")->value, 0);  // Idle is active: not a throttle
  EXPECT_TRUE(Find(thr, "throttle_reasons_active")->context.count("idle"));
  EXPECT_EQ(Find(thr, "throttle_thermal_or_hw_active")->value, 0);

  const ToolOutput frag = Parse("nvidia-smi/07-nvidia-smi-q-fragment-pcie-link-width-throttle-nvdocker1090.txt");
  EXPECT_EQ(Find(frag, "pcie_width")->value, 16);
  EXPECT_EQ(Find(frag, "pcie_width")->context.at("cap_width"), "16");
  EXPECT_EQ(Find(frag, "perf_state")->text, "P8");
  EXPECT_TRUE(HasWarningAt(frag, 1)) << Warnings(frag);  // starts mid-record: "Current : 1" without its section
}

TEST(NvidiaSmi, ThrottleEccAndRetiredPagesFromAQueryOutput) {
  const std::string q =
      "==============NVSMI LOG==============\n"
      "GPU 00000000:18:00.0\n"
      "    Performance State                 : P0\n"
      "    Clocks Event Reasons\n"
      "        Idle                          : Not Active\n"
      "        SW Power Cap                  : Active\n"
      "        HW Slowdown                   : Active\n"
      "            HW Thermal Slowdown       : Active\n"
      "    ECC Errors\n"
      "        Volatile\n"
      "            DRAM Uncorrectable        : 2\n"
      "    Retired Pages\n"
      "        Single Bit ECC                : 1\n"
      "        Double Bit ECC                : 3\n"
      "        Pending Page Blacklist        : Yes\n";
  const ToolOutput o = ParseToolOutput(q, "q.txt");
  ASSERT_EQ(o.kind, ToolKind::kNvidiaSmiQuery);
  EXPECT_EQ(Find(o, "throttle_reasons_active")->value, 3);
  EXPECT_EQ(Find(o, "throttle_reasons_active")->text, "SW Power Cap, HW Slowdown, HW Thermal Slowdown");
  EXPECT_EQ(Find(o, "throttle_thermal_or_hw_active")->value, 2);
  EXPECT_EQ(Find(o, "ecc_uncorrectable")->value, 2);
  EXPECT_EQ(Find(o, "retired_pages_dbe")->value, 3);
  EXPECT_EQ(Find(o, "retired_pages_pending")->value, 1);
  EXPECT_EQ(Find(o, "retired_pages_pending")->where.line, 15);
}

TEST(Lspci, LinkCapabilityAndStatus) {
  const ToolOutput a = Parse("lspci/01-lspci-devsta-lnksta-mi300-expected.txt");
  EXPECT_EQ(Find(a, "pcie_width")->value, 16);
  EXPECT_EQ(Find(a, "pcie_gen")->value, 5);  // 32 GT/s
  const ToolOutput b = Parse("lspci/02-lspci-lnksta-3090-idle-2.5GT-downgraded-club3090-1028.txt");
  const auto speed = All(b, "pcie_speed_gt_per_s");
  ASSERT_EQ(speed.size(), 2u);
  EXPECT_EQ(speed[0]->value, 2.5);
  EXPECT_EQ(speed[0]->context.at("cap_speed_gt_per_s"), "16");
  EXPECT_EQ(speed[0]->context.at("lnksta"), "downgraded");
  EXPECT_EQ(speed[0]->context.at("device"), "0000:01:00.0");
  EXPECT_EQ(Find(b, "pcie_gen")->value, 1);
  EXPECT_EQ(Find(b, "pcie_gen")->context.at("cap_gen"), "4");
  EXPECT_EQ(Find(b, "pcie_width")->context.at("cap_width"), "16");
}

TEST(Ibstat, PortsStatesAndRates) {
  EXPECT_EQ(Find(Parse("ibstat/01-ibstat-grep-mlx5-8ca.txt"), "ca_count")->value, 8);
  const ToolOutput o = Parse("ibstat/02-ibstat-gb10-cx7-roce-active-and-down.txt");
  EXPECT_EQ(Find(o, "ca_count")->value, 3);
  EXPECT_EQ(Find(o, "ports_active")->value, 2);
  const auto rates = All(o, "port_rate_gbit_per_s");
  ASSERT_EQ(rates.size(), 3u);
  EXPECT_EQ(rates[0]->value, 200);
  EXPECT_EQ(rates[1]->value, 40);
  EXPECT_EQ(rates[1]->context.at("device"), "roceP2p1s0f1");
  EXPECT_EQ(rates[1]->context.at("state"), "Down");
  EXPECT_EQ(Find(o, "port_state", "Down")->where.line, 26);
}

TEST(Fio, BandwidthIopsAndLatencyOfEveryJob) {
  struct { const char* file; const char* job; const char* rw; double bw_kib_per_s, iops; } cases[] = {
      {"01-fio-json-nvme0n1-randrw4k.txt", "rand_read_write", "read", 340570, 85138.890741},
      {"01-fio-json-nvme0n1-randrw4k.txt", "rand_read_write", "write", 340283, 85066.128925},
      {"02-fio-json-pkb-seq-rand-5jobs-fio2.1.txt", "sequential_write", "write", 68118, 133},
      {"02-fio-json-pkb-seq-rand-5jobs-fio2.1.txt", "sequential_read", "read", 129836, 253},
      {"02-fio-json-pkb-seq-rand-5jobs-fio2.1.txt", "random_write_test", "write", 6443, 1610},
      {"02-fio-json-pkb-seq-rand-5jobs-fio2.1.txt", "random_read_test", "read", 1269, 317},
      {"02-fio-json-pkb-seq-rand-5jobs-fio2.1.txt", "random_read_test_parallel", "read", 1292, 323},
      {"03-fio-json-gce-pd-randrw16k-fio2.17.txt", "rand_16k_read_100%-io-depth-1-num-jobs-2", "read", 129386, 8086.673998},
      {"03-fio-json-gce-pd-randrw16k-fio2.17.txt", "rand_16k_write_100%-io-depth-1-num-jobs-2", "write", 39312, 2457.017193},
      {"04-fio-json-ceph-rbd-randread4k-qd32-nj32.txt", "random-read", "read", 93498, 23374.685862},
      {"05-fio-json-sata-ssd-randread4k-qd32-nj16.txt", "iotest", "read", 202208, 50552.230849},
      {"06-fio-json-fs-file-randread4k-qd16-nj16.txt", "random-read", "read", 102178, 25544.536807},
  };
  for (const auto& c : cases) {
    const ToolOutput o = Parse(std::string("fio/") + c.file);
    ASSERT_EQ(o.kind, ToolKind::kFioJson);
    bool found = false;
    for (const auto& r : o.readings) {
      if (r.context.at("job") != c.job || r.context.at("rw") != c.rw) continue;
      if (r.metric == "bw_kib_per_s") {
        EXPECT_EQ(r.value, c.bw_kib_per_s) << c.file << " " << c.job;
        found = true;
      }
      if (r.metric == "iops") EXPECT_NEAR(r.value, c.iops, 1e-6) << c.file << " " << c.job;
    }
    EXPECT_TRUE(found) << c.file << " " << c.job;
  }
  const ToolOutput nvme = Parse("fio/01-fio-json-nvme0n1-randrw4k.txt");
  EXPECT_NEAR(Find(nvme, "clat_mean_us")->value, 1444.476063469, 1e-6);  // clat_ns / 1000 (fio 3)
  EXPECT_EQ(Find(nvme, "bw_kib_per_s")->context.at("iodepth"), "64");
  EXPECT_NEAR(Find(Parse("fio/02-fio-json-pkb-seq-rand-5jobs-fio2.1.txt"), "clat_mean_us")->value, 477734.84, 1e-6);  // fio 2: usec
}

TEST(Dcgmi, PassFailErrorAndWrappedWarning) {
  const ToolOutput ok = Parse("dcgm/01-dcgmi-diag-r2-p4de.txt");
  EXPECT_EQ(Find(ok, "dcgm_tests")->value, 11);
  EXPECT_EQ(Find(ok, "dcgm_failures")->value, 0);
  EXPECT_EQ(Find(ok, "dcgm_version")->text, "3.3.3");
  const ToolOutput remap = Parse("dcgm/02-dcgmi-diag-row-remap-pending.txt");
  EXPECT_EQ(Find(remap, "dcgm_error")->text, "GPU 3 has uncorrectable memory errors and row remappings are pending");
  EXPECT_EQ(Find(remap, "dcgm_failures")->value, 1);
  const ToolOutput mem = Parse("dcgm/03-dcgmi-diag-r2-gpu-memory-fail-thermal.txt");
  const Reading* t = Find(mem, "dcgm_test");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->text, "Fail");
  EXPECT_EQ(t->context.at("test"), "GPU Memory");
  EXPECT_EQ(Find(mem, "dcgm_warning")->text.substr(0, 58), "GPU 0 Thermal violations totaling 13.3 seconds started at ");
  EXPECT_TRUE(HasWarningAt(mem, 8)) << Warnings(mem);  // the last row is not closed with '|'
}

TEST(NcclDebug, TransportsAndErrors) {
  struct { const char* file; const char* transport; int devices; } nets[] = {
      {"01-net-fastsocket-gcp.txt", "NET/FastSocket", 8}, {"02-net-ib-8hca.txt", "NET/IB", 8}, {"03-net-socket-eth0.txt", "NET/Socket", 1},
      {"04-net-socket-workstation.txt", "NET/Socket", 1}, {"05-azure-net-ib-ib-and-roce.txt", "NET/IB", 2}};
  for (const auto& c : nets) {
    const ToolOutput o = Parse(std::string("nccl-debug/") + c.file);
    ASSERT_EQ(o.kind, ToolKind::kNcclDebug) << c.file;
    EXPECT_EQ(Find(o, "transport")->text, c.transport) << c.file;
    EXPECT_EQ(Find(o, "net_devices")->value, c.devices) << c.file;
  }
  EXPECT_EQ(Find(Parse("nccl-debug/05-azure-net-ib-ib-and-roce.txt"), "transport")->context.at("devices"), "ibP111p0s0:1/IB,rdmaP1111p0s2:1/RoCE");
  const ToolOutput err = Parse("nccl-debug/06-azure-net-ib-completion-error12.txt");
  EXPECT_EQ(Find(err, "ib_completion_error")->value, 12);
  EXPECT_EQ(Find(err, "ib_completion_error")->context.at("peer"), "10.2.0.5<33092>");
  const ToolOutput gdr = Parse("nccl-debug/07-h20-2node-net-ib-gdrdma-and-p2p-cumem-nccl1189.txt");
  EXPECT_EQ(Find(gdr, "channel_transport", "NET/IB/GDRDMA")->value, 9);
  EXPECT_EQ(Find(gdr, "channel_transport", "P2P/CUMEM")->value, 5);
  EXPECT_EQ(Find(gdr, "log_hosts")->value, 2);
  const ToolOutput nvls = Parse("nccl-debug/08-h100-2node-nvls-multicast-nccl1357.txt");
  EXPECT_EQ(Find(nvls, "nvls_multicast_devices")->value, 4);
  EXPECT_EQ(Find(nvls, "nccl_nodes")->value, 2);
  EXPECT_EQ(Find(nvls, "nccl_ranks")->value, 16);
  EXPECT_EQ(Find(Parse("nccl-debug/09-4gpu-p2p-direct-pointer-nccl671.txt"), "channel_transport", "P2P/direct pointer")->value, 16);
}

// ---- broken inputs ----

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// The first `keep` lines, then half of line keep+1 (the line a cut-off transfer stops in).
std::string CutInside(const std::string& text, size_t keep) {
  const auto l = Lines(text);
  std::string out;
  for (size_t i = 0; i < keep && i < l.size(); ++i) out += l[i] + "\n";
  if (keep < l.size()) out += l[keep].substr(0, l[keep].size() / 2);
  return out;
}

TEST(BrokenInput, ATruncatedNcclTestsCopyWarnsAtTheLineItStops) {
  for (const auto& c : kNccl) {
    const std::string rel = std::string("nccl-tests/") + c.file;
    const std::string text = Text(rel);
    const ToolOutput whole = ParseToolOutput(text, rel);
    const Reading* peak = Find(whole, "busbw_peak_gb_per_s");
    ASSERT_NE(peak, nullptr);
    // Cut inside the row the peak came from: the row before it is read, the cut one is reported.
    const int line = peak->where.line;
    const ToolOutput cut = ParseToolOutput(CutInside(text, static_cast<size_t>(line - 1)), rel);
    EXPECT_EQ(cut.kind, ToolKind::kNcclTests) << rel;
    EXPECT_TRUE(HasWarningAt(cut, line)) << rel << " cut in line " << line << "\n" << Warnings(cut);
  }
}

TEST(BrokenInput, TruncatedOutputsOfOtherToolsWarnWithTheirLine) {
  {  // perftest cut inside its result row
    const ToolOutput o = ParseToolOutput(CutInside(Text("perftest/01-ib_write_bw-oci-roce-4qp-100g.txt"), 32), "w.txt");
    EXPECT_EQ(o.kind, ToolKind::kPerftest);
    EXPECT_TRUE(HasWarningAt(o, 32)) << Warnings(o);  // the header at 32 has no result row after it
  }
  {  // topo -m cut after GPU3's row
    const ToolOutput o = ParseToolOutput(CutInside(Text("nvidia-smi-topo/04-h100-8gpu-nv18.txt"), 6), "t.txt");
    EXPECT_EQ(o.kind, ToolKind::kNvidiaSmiTopo);
    EXPECT_TRUE(HasWarningAt(o, 7)) << Warnings(o);  // the half row 7: 4 cells for 8 columns
  }
  {  // fio JSON cut in the middle
    const std::string text = Text("fio/05-fio-json-sata-ssd-randread4k-qd32-nj16.txt");
    const ToolOutput o = ParseToolOutput(text.substr(0, text.size() / 2), "f.json");
    EXPECT_EQ(o.kind, ToolKind::kFioJson);
    ASSERT_EQ(o.warnings.size(), 1u);
    EXPECT_GT(o.warnings[0].where.line, 100);  // the last line of the half file
    // Read up to the cut: the read section before it is complete.
    ASSERT_FALSE(o.readings.empty());
    EXPECT_EQ(o.readings[0].metric, "bw_kib_per_s");
    EXPECT_EQ(o.readings[0].value, 202208);
  }
  {  // dcgmi cut inside a row
    const ToolOutput o = ParseToolOutput(CutInside(Text("dcgm/01-dcgmi-diag-r2-p4de.txt"), 14), "d.txt");
    EXPECT_EQ(o.kind, ToolKind::kDcgmiDiag);
    EXPECT_TRUE(HasWarningAt(o, 15)) << Warnings(o);
  }
}

TEST(BrokenInput, AGarbledRowIsAWarningAtItsLineAndTheRestIsRead) {
  std::string text = Text("nccl-tests/01-allreduce-oci-a100-2node-ib.txt");
  const size_t p = text.find("184.92");
  ASSERT_NE(p, std::string::npos);
  text.replace(p, 6, "18x.92");
  const ToolOutput o = ParseToolOutput(text, "g.txt");
  EXPECT_TRUE(HasWarningAt(o, 20)) << Warnings(o);
  EXPECT_EQ(All(o, "busbw_gb_per_s").size(), 3u);  // the other three rows
  EXPECT_NEAR(Find(o, "busbw_peak_gb_per_s")->value, 189.60, 1e-9);
}

TEST(BrokenInput, NonToolFilesAreUnrecognisedAndSaySo) {
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"README.md", Text("README.md")},
      {"sidecar", Text("nccl-tests/01-allreduce-oci-a100-2node-ib.txt.source.txt")},
      {"empty", ""},
      {"yaml", "model:\n  preset: llama-2-7b\ntraining:\n  seq_len: 4096\n"},
      {"json", "{\"plans\": []}"},
  };
  std::mt19937 rng(20261201);  // printed seed: random bytes are no tool output either
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>(rng() % 256);
  inputs.push_back({"noise(seed 20261201)", noise});
  for (const auto& [name, text] : inputs) {
    const ToolOutput o = ParseToolOutput(text, name);
    EXPECT_EQ(o.kind, ToolKind::kUnknown) << name;
    ASSERT_EQ(o.warnings.size(), 1u) << name;
    EXPECT_NE(o.warnings[0].message.find("not a recognised tool output"), std::string::npos);
    EXPECT_TRUE(o.readings.empty());
  }
}

// Bad input is a value, never a crash: random cuts, deleted lines and flipped bytes of every fixture
// parse to an output (a kind, readings, warnings) without throwing.
TEST(BrokenInput, RandomDamageToEveryFixtureNeverCrashes) {
  const unsigned seed = 20261201;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (const auto& f : FixtureFiles()) {
    const std::string text = Text(f);
    for (int k = 0; k < 25; ++k) {
      std::string t = text;
      switch (k % 3) {
        case 0: t = t.substr(0, rng() % (t.size() + 1)); break;
        case 1: {
          const size_t a = rng() % (t.size() + 1), b = t.find('\n', a);
          t.erase(a, b == std::string::npos ? std::string::npos : b - a + 1);
          break;
        }
        default:
          for (int i = 0; i < 8 && !t.empty(); ++i) t[rng() % t.size()] = static_cast<char>(rng() % 256);
      }
      ToolOutput o;
      EXPECT_NO_THROW(o = ParseToolOutput(t, f)) << f << " damage " << k;
      for (const auto& r : o.readings) EXPECT_TRUE(std::isfinite(r.value)) << f << " " << r.metric;
    }
  }
}

TEST(Readings, FlatListKeepsEveryReadingWithItsFileAndLine) {
  std::vector<ToolOutput> outs = {Parse("nccl-tests/01-allreduce-oci-a100-2node-ib.txt"), Parse("perftest/01-ib_write_bw-oci-roce-4qp-100g.txt")};
  const auto flat = FlattenReadings(outs);
  EXPECT_EQ(flat.size(), outs[0].readings.size() + outs[1].readings.size());
  for (const auto& r : flat) {
    EXPECT_FALSE(r.metric.empty());
    EXPECT_FALSE(r.where.file.empty());
    EXPECT_NE(r.kind, ToolKind::kUnknown);
  }
  EXPECT_NE(ToString(*Find(outs[0], "busbw_peak_gb_per_s")).find("busbw_peak_gb_per_s = 189.6 GB/s"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan
