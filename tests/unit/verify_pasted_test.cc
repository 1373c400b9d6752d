// verify on what users paste (issue 17 item 4): every real output in ../shared/fixtures/tool-outputs-2 is
// recognised (except the two kinds gpuplan does not document: ibstatus and nvidia-smi -q -x XML), gets
// the verdict class its SOURCES.md gives (a failed run is a failure; a healthy node is not), and yields
// the key readings (the peak busbw of every nccl-tests table, the bandwidth of every fio JSON).
// Then one small synthetic input per mechanism.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "gpuplan/catalog.h"
#include "gpuplan/checks.h"
#include "gpuplan/csv.h"
#include "gpuplan/toolout.h"

namespace gpuplan {
namespace {

const std::string kDir = std::string(GPUPLAN_SHARED_DIR) + "/fixtures/tool-outputs-2";

VerifyOptions Options() {
  VerifyOptions o;
  auto rules = LoadCheckRules("");
  EXPECT_TRUE(rules.ok()) << rules.status().ToString();
  if (rules.ok()) o.rules = *rules;
  return o;
}

VerifyReport Verify(const std::vector<ToolOutput>& outs) { return RunChecks(outs, Options()); }

std::vector<std::string> Files() {
  std::vector<std::string> out;
  if (!std::filesystem::exists(kDir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kDir))
    if (e.is_regular_file() && e.path().extension() == ".txt" && e.path().parent_path().filename() != "plans")
      out.push_back(std::filesystem::relative(e.path(), kDir).string());
  std::sort(out.begin(), out.end());
  return out;
}

bool StartsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::vector<double> Values(const ToolOutput& o, const std::string& metric) {
  std::vector<double> v;
  for (const auto& r : o.readings)
    if (r.metric == metric) v.push_back(r.value);
  return v;
}

// SOURCES.md: the outputs whose expected verdict is FAIL (a failed run, a failed test, a dead link).
const std::set<std::string> kFail = {"dcgm/01", "dcgm/02", "dcgm/04", "nccl-debug/02", "nccl-debug/04", "nccl-debug/07", "nccl-debug/10",
                                     "nccl-tests/02", "nvidia-smi/02", "nvidia-smi/03", "nvidia-smi/04", "nvidia-smi/08", "perftest/03"};
// Kinds gpuplan does not document (SOURCES.md: 'unrecognised' acceptable).
const std::set<std::string> kUndocumented = {"ibstat/05", "nvidia-smi/11"};
// SOURCES.md: the peak busbw of each nccl-tests output (GB/s; 01's cut last row may give its in-place half).
const std::map<std::string, std::vector<double>> kPeakBusbw = {
    {"nccl-tests/01", {116.26, 116.34}}, {"nccl-tests/03", {480.26}}, {"nccl-tests/04", {74.36}}, {"nccl-tests/05", {234.70}},
    {"nccl-tests/06", {97.54}},          {"nccl-tests/07", {96.69}},  {"nccl-tests/08", {230.81}}, {"nccl-tests/09", {2.31}},
    {"nccl-tests/10", {41.52}},          {"nccl-tests/11", {144.59}}, {"nccl-tests/12", {9.19}},   {"nccl-tests/13", {29.50}},
    {"nccl-tests/14", {2.22}},           {"nccl-tests/15", {0.00}},   {"nccl-tests/16", {361.17}}, {"nccl-tests/17", {7.18}},
    {"nccl-tests/18", {0.02}}};
const std::map<std::string, double> kFioReadKiB = {{"fio/01", 12121060}, {"fio/02", 153412}, {"fio/03", 249785}};

std::string Key(const std::string& rel) { return rel.substr(0, rel.find('-', rel.find('/'))); }

class Pasted : public ::testing::TestWithParam<std::string> {};

TEST_P(Pasted, RecognisedWithTheVerdictAndReadingsOfSources) {
  const std::string rel = GetParam(), key = Key(rel);
  auto out = ReadToolOutput(kDir + "/" + rel);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  if (!kUndocumented.count(key)) EXPECT_NE(out->kind, ToolKind::kUnknown) << rel;
  const VerifyReport rep = Verify({*out});
  EXPECT_EQ(rep.failures > 0, kFail.count(key) > 0) << rel << ": " << rep.failures << " failure(s)";
  if (auto it = kPeakBusbw.find(key); it != kPeakBusbw.end()) {
    const auto peaks = Values(*out, "busbw_peak_gb_per_s");
    ASSERT_FALSE(peaks.empty()) << rel;
    const double best = *std::max_element(peaks.begin(), peaks.end());
    EXPECT_TRUE(std::any_of(it->second.begin(), it->second.end(), [&](double v) { return std::abs(v - best) < 0.006; })) << rel << ": " << best;
  }
  if (auto it = kFioReadKiB.find(key); it != kFioReadKiB.end()) {
    const auto bw = Values(*out, "bw_kib_per_s");
    ASSERT_FALSE(bw.empty()) << rel;
    EXPECT_DOUBLE_EQ(bw.front(), it->second) << rel;
  }
  for (const auto& r : out->readings) EXPECT_TRUE(std::isfinite(r.value)) << rel << " " << r.metric;
}

INSTANTIATE_TEST_SUITE_P(ToolOutputs2, Pasted, ::testing::ValuesIn(Files()), [](const auto& info) {
  std::string n = info.param.substr(0, info.param.find('-', info.param.find('/')));
  for (auto& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Pasted);

TEST(PastedBatch, AtMostTwoUnrecognisedAndExitTwoWhenAnyCheckFails) {
  const auto files = Files();
  if (files.empty()) GTEST_SKIP() << kDir << " is not there";
  std::vector<ToolOutput> outs;
  for (const auto& f : files) outs.push_back(*ReadToolOutput(kDir + "/" + f));
  const VerifyReport rep = Verify(outs);
  EXPECT_LE(rep.unrecognised.size(), 2u);
  EXPECT_GT(rep.failures, 0);
  EXPECT_EQ(rep.ExitCode(), 2);
}

// ---- one synthetic input per mechanism ----

const ToolOutput Parse(const std::string& text) { return ParseToolOutput(text, "x.txt"); }

std::optional<Reading> Find(const ToolOutput& o, const std::string& metric) {
  for (const auto& r : o.readings)
    if (r.metric == metric) return r;
  return std::nullopt;
}

TEST(VerifyMechanisms, PcieJudgesOnlyGpusAndNics) {
  const ToolOutput o = Parse(
      "17:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n"
      "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16\n"
      "\t\tLnkSta:\tSpeed 32GT/s, Width x16\n"
      "a1:00.0 Ethernet controller: Broadcom Inc. and subsidiaries NetXtreme BCM5720 Gigabit Ethernet PCIe\n"
      "\t\tLnkCap:\tPort #0, Speed 5GT/s, Width x2\n"
      "\t\tLnkSta:\tSpeed 5GT/s (ok), Width x1 (downgraded)\n"
      "15:01.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)\n"
      "\t\tLnkCap:\tPort #1, Speed 32GT/s, Width x16\n"
      "\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x16\n");
  EXPECT_EQ(o.kind, ToolKind::kLspci);
  EXPECT_EQ(Values(o, "pcie_width").size(), 1u);
  EXPECT_EQ(Find(o, "pcie_links_not_judged")->value, 2);
  EXPECT_EQ(Verify({o}).failures, 0);
  // A fragment without its device header is still judged.
  const ToolOutput frag = Parse("    LnkCap: Port #0, Speed 16GT/s, Width x16\n    LnkSta: Speed 16GT/s, Width x4 (downgraded)\n");
  EXPECT_EQ(Verify({frag}).failures, 1);
}

TEST(VerifyMechanisms, FailureLinesAreFailuresWithTheirLine) {
  const ToolOutput o = Parse("# nThread 1 nGpus 2 minBytes 8 maxBytes 128M step: 2(factor)\nhost: Test NCCL failure common.cu:959 'internal error'\n");
  EXPECT_EQ(o.kind, ToolKind::kNcclTests);
  auto f = Find(o, "failure_line");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->where.line, 2);
  EXPECT_EQ(Verify({o}).failures, 1);
  const ToolOutput pt = Parse(
      "                    RDMA_Read BW Test\n #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
      " Couldn't read remote address\n Unable to read to socket/rdam_cm\n");
  EXPECT_GE(Verify({pt}).failures, 1);
  const ToolOutput warn_only = Parse("host:1:2 [0] NCCL WARN Failed to open libibverbs.so[.1]\n");
  EXPECT_EQ(Verify({warn_only}).failures, 0);
  const ToolOutput panic = Parse("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 200\nibpanic: [1] main: stat of IB device 'mlx5_8' failed\n");
  const VerifyReport pr = Verify({panic});
  EXPECT_EQ(pr.failures, 0);
  EXPECT_GE(pr.warnings, 1);
}

TEST(VerifyMechanisms, SocketChannelsBetweenNodesFailButNotOnOneHost) {
  const std::string chan = "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/Socket/0\n";
  EXPECT_EQ(Verify({Parse(chan)}).failures, 1);
  const ToolOutput one_host = Parse(
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 128M\n# Using devices\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] NVIDIA A100\n"
      "#  Rank  1 Group  0 Pid 1 on h device  1 [0x2] NVIDIA A100\n" + chan + "h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:1.2.3.4<0>\n");
  const VerifyReport rep = Verify({one_host});
  EXPECT_EQ(rep.failures, 0);
  EXPECT_EQ(rep.warnings, 0);
}

TEST(VerifyMechanisms, RowsByShapeWithPrefixesQuotingAndRuns) {
  const ToolOutput o = Parse(
      "> ```\n"
      ">   [1,0]<stdout>:     1048576   262144  float  sum  -1  100.0  10.0  **18.75**  0  100.0  10.0  18.75  0\n"
      ">   [1,0]<stdout>:     2097152   524288  float  sum  -1  100.0  20.0  37.50  0  100.0  20.0  37.50  0\n"
      ">   [1,0]<stdout>:     1048576   262144  float  sum  -1  100.0  5.0  9.37  0  100.0  5.0  9.37  0\n");
  EXPECT_EQ(o.kind, ToolKind::kNcclTests);
  EXPECT_EQ(Values(o, "busbw_peak_gb_per_s").size(), 2u);  // two runs
  EXPECT_DOUBLE_EQ(Values(o, "busbw_peak_gb_per_s").front(), 37.5);
  for (const auto& r : o.readings) EXPECT_EQ(r.context.count("nodes_at_least"), 0u);
  const ToolOutput mangled = Parse("[0]      1048576        262144     float     sum      -1[0]    1626.5    0.64    1.24      0[0]    2302.3    0.46    0.87      0\n"
                                   "[0]      2097152        524288     float     sum      -1[0]    2325.3    0.90    1.73      0[0]     416.7    5.03    9.65      0\n");
  EXPECT_DOUBLE_EQ(Values(mangled, "busbw_peak_gb_per_s").front(), 9.65);
}

TEST(VerifyMechanisms, ACutLastRowGivesItsOutOfPlaceHalfAndRepeatedZeroSizesAreOneRun) {
  const std::string head = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  const ToolOutput cut = Parse(head +
                               "  1073741824     268435456     float     sum      -1   9306.7  115.37  115.37      0   9291.5  115.56  115.56      0\n"
                               "  2147483648     536870912     float     sum      -1    18535  116.26  116.26      0    18524  116");
  EXPECT_DOUBLE_EQ(Values(cut, "busbw_peak_gb_per_s").at(0), 116.26);
  EXPECT_TRUE(std::any_of(cut.warnings.begin(), cut.warnings.end(), [](const ToolWarning& w) { return w.where.line == 3; }));
  // Cut inside the out-of-place half: nothing read from it.
  const ToolOutput early = Parse(head + "  1073741824     268435456     float     sum      -1   9306.7  115.37  115.37      0   9291.5  115.56  115.56      0\n"
                                        "  2147483648     536870912     float     sum      -1    18535  116.26\n");
  EXPECT_DOUBLE_EQ(Values(early, "busbw_peak_gb_per_s").at(0), 115.56);
  const ToolOutput zeros = Parse(head + "           0             0     float     sum      -1    34.61    0.00    0.00      0    34.33    0.00    0.00      0\n"
                                        "           0             0     float     sum      -1    34.43    0.00    0.00      0    35.06    0.00    0.00      0\n"
                                        "           8             2     float     sum      -1    34.43    0.01    0.01      0    35.06    0.01    0.01      0\n");
  EXPECT_EQ(Values(zeros, "busbw_peak_gb_per_s").size(), 1u);
  // The old format's root column (0, no redop) with factor 1 is broadcast, not sendrecv or all_reduce.
  const ToolOutput bcast = Parse("#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
                                 "  1073741824     268435456   float       0   4769.2  225.14  225.14    N/A   4697.5  228.58  228.58    N/A\n");
  EXPECT_EQ(Find(bcast, "busbw_peak_gb_per_s")->context.at("op"), "broadcast");
}

TEST(VerifyMechanisms, RanksFromTheCommandLine) {
  const ToolOutput o = Parse(
      "$ mpirun --hostfile h -np 2 ./all_reduce_perf -b 2M -e 16G -f 2 -g 1\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "     2097152        524288     float     sum      -1    113.2   18.53   18.53      0    93.35   22.46   22.46      0\n");
  auto r = Find(o, "busbw_peak_gb_per_s");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->context.at("ranks"), "2");
}

TEST(VerifyMechanisms, TruncatedFioJsonIsReadUpToTheCut) {
  const ToolOutput o = Parse("$ fio --output-format=json job.fio\n{\n  \"fio version\" : \"fio-2.15\",\n  \"jobs\" : [\n    {\n      \"jobname\" : \"t\",\n"
                             "      \"read\" : {\n        \"io_bytes\" : 1024,\n        \"bw\" : 153412,\n        \"iops\" : 299.6,\n"
                             "        \"clat\" : {\n          \"mean\" : 2892.5,\n          \"percentile\" : {\n            \"1.00\" : 12");
  EXPECT_EQ(o.kind, ToolKind::kFioJson);
  EXPECT_EQ(Find(o, "bw_kib_per_s")->value, 153412);
  EXPECT_DOUBLE_EQ(Find(o, "clat_mean_us")->value, 2892.5);  // fio 2: clat in us
  EXPECT_FALSE(o.warnings.empty());
  const ToolOutput v3 = Parse("{\"fio version\":\"fio-3.28\",\"jobs\":[{\"jobname\":\"t\",\"read\":{\"io_bytes\":1,\"bw\":10,\"iops\":1,\"clat_ns\":{\"mean\":5000}}}]}");
  EXPECT_DOUBLE_EQ(Find(v3, "clat_mean_us")->value, 5.0);  // fio 3: clat_ns
}

TEST(VerifyMechanisms, TopoMpIsItsOwnKindWithoutNvlinkVerdict) {
  const ToolOutput o = Parse("$ nvidia-smi topo -mp\n        GPU0    GPU1    NIC0\nGPU0     X      PHB     PHB\nGPU1    PHB      X      PHB\nNIC0    PHB     PHB      X\n");
  EXPECT_EQ(o.kind, ToolKind::kNvidiaSmiTopoPci);
  EXPECT_FALSE(Find(o, "nvlink_count"));
  EXPECT_FALSE(Find(o, "gpu_pairs_without_nvlink"));
}

TEST(VerifyMechanisms, AbsurdReadingsAreWarningsNotNumbers) {
  const ToolOutput ib = Parse("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: -1\n");
  EXPECT_FALSE(Find(ib, "port_rate_gbit_per_s"));
  EXPECT_FALSE(ib.warnings.empty());
  const ToolOutput topo = Parse("        GPU0    GPU1\nGPU0     X      NV99999999999999999999999\nGPU1    NV18     X\n");
  for (const auto& r : topo.readings) EXPECT_LT(r.value, 1000) << r.metric;
  const ToolOutput digits = Parse("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: " + std::string(1 << 20, '9') + "\n");
  EXPECT_FALSE(Find(digits, "port_rate_gbit_per_s"));
}

TEST(VerifyMechanisms, NvmlAllLinksInactiveFails) {
  const ToolOutput o = Parse("GPU 6: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\nNVML: Unable to retrieve NVLink information as all links are inactive\n");
  EXPECT_EQ(o.kind, ToolKind::kNvlinkStatus);
  EXPECT_EQ(Verify({o}).failures, 1);
}

TEST(VerifyMechanisms, BatchExitsTwoWhenACheckFailsWhateverIsUnrecognised) {
  const VerifyReport rep = Verify({Parse("GPU 6: X (UUID: GPU-1)\nNVML: Unable to retrieve NVLink information as all links are inactive\n"), Parse("hello\n")});
  EXPECT_EQ(rep.unrecognised.size(), 1u);
  EXPECT_EQ(rep.ExitCode(), 2);
  EXPECT_EQ(Verify({Parse("hello\n")}).ExitCode(), 1);
}

TEST(VerifyMechanisms, ReaderRefusesFifosDevicesAndHugeFiles) {
  const std::string fifo = ::testing::TempDir() + "/verify-fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = ReadToolOutput(fifo);
  EXPECT_FALSE(f.ok());
  EXPECT_EQ(f.status().location().file, fifo);
  ::unlink(fifo.c_str());
  EXPECT_FALSE(ReadToolOutput("/dev/zero").ok());
}

}  // namespace
}  // namespace gpuplan
