// The probe on recorded machines (tests/fixtures/probe/), fio's JSON, the storage bench through a
// recorded fio, the CPU bench, and the real Env's file and process calls.
#include "gpuplan/probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpuplan/csv.h"

namespace gpuplan {
namespace {

const std::string kFixtures = std::string(GPUPLAN_SOURCE_DIR) + "/tests/fixtures/probe/";
const std::string kFio = std::string(GPUPLAN_SHARED_DIR) + "/fixtures/tool-outputs/fio/";

MachineFacts ProbeRecorded(const std::string& name) {
  auto env = NewRecordedEnv(kFixtures + name);
  EXPECT_TRUE(env.ok()) << env.status().ToString();
  auto f = ProbeMachine(**env);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return *f;
}

bool HasGap(const MachineFacts& f, const std::string& item, const std::string& reason_part) {
  for (const auto& g : f.gaps)
    if (g.item == item && g.reason.find(reason_part) != std::string::npos) return true;
  return false;
}

// This CI VM's own /proc and /sys, copied: 2 vCPUs, no cpufreq, no RDMA, no GPU, a virtio NIC.
TEST(ProbeRecorded, VmWithoutGpuOrRdma) {
  MachineFacts f = ProbeRecorded("vm-2cpu-no-gpu");
  EXPECT_EQ(f.hostname, "vm");
  EXPECT_EQ(f.cpu_model, "AMD EPYC");
  EXPECT_EQ(f.cpu_sockets, 1);
  EXPECT_EQ(f.cpu_cores, 2);
  EXPECT_EQ(f.cpu_threads, 2);
  EXPECT_EQ(f.governor, "");
  EXPECT_TRUE(HasGap(f, "governor", "no cpufreq"));
  ASSERT_EQ(f.numa.size(), 1u);
  EXPECT_EQ(f.numa[0].cpulist, "0-1");
  EXPECT_EQ(f.numa[0].mem_bytes, 24684084LL * 1024);
  EXPECT_EQ(f.ram_bytes, 24684084LL * 1024);
  ASSERT_EQ(f.disks.size(), 1u);  // loop0 and zram0 left out
  EXPECT_EQ(f.disks[0].name, "vda");
  EXPECT_EQ(f.disks[0].size_bytes, 536870912LL * 512);
  EXPECT_TRUE(f.disks[0].rotational);
  ASSERT_EQ(f.nics.size(), 1u);  // lo, ifb0, ifb1 have no device
  EXPECT_EQ(f.nics[0].name, "eth0");
  EXPECT_EQ(f.nics[0].operstate, "up");
  EXPECT_FALSE(f.nics[0].speed_mbit_per_s.has_value());
  EXPECT_TRUE(HasGap(f, "nic eth0 speed", "-1"));
  EXPECT_TRUE(f.rdma.empty());
  EXPECT_TRUE(HasGap(f, "rdma", "no RDMA here"));
  EXPECT_TRUE(f.pcie.empty());
  EXPECT_TRUE(HasGap(f, "pcie 0000:00:03.0 (nic)", "no current_link_width"));
  EXPECT_TRUE(f.gpus.empty());
  EXPECT_TRUE(HasGap(f, "gpus", "no GPU: nvidia-smi not found"));
  EXPECT_EQ(f.gaps.size(), 5u);

  auto env = NewRecordedEnv(kFixtures + "vm-2cpu-no-gpu");
  GpuBenchAvailability g = CheckGpuBench(**env);
  EXPECT_FALSE(g.can_run);
  EXPECT_NE(g.reason.find("neither nvidia-smi nor nvcc"), std::string::npos);
}

// 8x H100 SXM + 8 mlx5 NDR ports (tests/fixtures/probe/README.md); GPU 7 trained at x8.
TEST(ProbeRecorded, H100NodeWithEightGpusAndEightHcas) {
  MachineFacts f = ProbeRecorded("h100-8gpu-ib-node");
  EXPECT_EQ(f.hostname, "h100-node-01");
  EXPECT_EQ(f.cpu_model, "Intel(R) Xeon(R) Platinum 8470");
  EXPECT_EQ(f.cpu_sockets, 2);
  EXPECT_EQ(f.cpu_cores, 104);
  EXPECT_EQ(f.cpu_threads, 208);
  EXPECT_EQ(f.governor, "performance");
  ASSERT_EQ(f.numa.size(), 2u);
  EXPECT_EQ(f.numa[0].cpulist, "0-51,104-155");
  EXPECT_EQ(f.numa[1].cpulist, "52-103,156-207");
  EXPECT_EQ(f.numa[1].mem_bytes, 1056664156LL * 1024);
  EXPECT_EQ(f.ram_bytes, 2113264156LL * 1024);
  ASSERT_EQ(f.disks.size(), 3u);
  EXPECT_EQ(f.disks[0].name, "nvme0n1");
  EXPECT_EQ(f.disks[0].size_bytes, 7501476528LL * 512);
  EXPECT_FALSE(f.disks[0].rotational);
  ASSERT_EQ(f.nics.size(), 9u);  // eno1 + 8 IPoIB; lo and docker0 left out
  EXPECT_EQ(f.nics[0].name, "eno1");
  EXPECT_EQ(*f.nics[0].speed_mbit_per_s, 25000);
  EXPECT_EQ(f.nics[0].pci_address, "0000:17:00.0");
  ASSERT_EQ(f.rdma.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(f.rdma[i].device, "mlx5_" + std::to_string(i));
    EXPECT_EQ(f.rdma[i].port, 1);
    EXPECT_DOUBLE_EQ(f.rdma[i].rate_gbit_per_s, 400);
    EXPECT_EQ(f.rdma[i].state, "ACTIVE");
    EXPECT_EQ(f.rdma[i].link_layer, "InfiniBand");
  }
  ASSERT_EQ(f.pcie.size(), 17u);
  int gpus = 0, ib = 0, nic = 0, narrow = 0;
  for (const auto& l : f.pcie) {
    gpus += l.kind == "gpu";
    ib += l.kind == "infiniband";
    nic += l.kind == "nic";
    if (l.current_width < l.max_width) {
      ++narrow;
      EXPECT_EQ(l.address, "0000:db:00.0");
      EXPECT_EQ(l.current_width, 8);
      EXPECT_EQ(l.max_width, 16);
    }
    if (l.kind != "nic") {
      EXPECT_DOUBLE_EQ(l.max_speed_gt_per_s, 32);
    }
  }
  EXPECT_EQ(gpus, 8);
  EXPECT_EQ(ib, 8);
  EXPECT_EQ(nic, 1);
  EXPECT_EQ(narrow, 1);
  ASSERT_EQ(f.gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const GpuInfo& g = f.gpus[i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.memory_bytes, 81559LL << 20);
    EXPECT_EQ(*g.pcie_gen, 5);
    EXPECT_EQ(*g.pcie_width, i == 7 ? 8 : 16);
    EXPECT_DOUBLE_EQ(*g.max_sm_clock_mhz, 1980);
    EXPECT_DOUBLE_EQ(*g.power_limit_w, 700);
  }
  EXPECT_TRUE(f.gaps.empty()) << f.gaps[0].item << ": " << f.gaps[0].reason;

  MeasurementBatch b = FactsToBatch(f, "h100-ib");
  EXPECT_EQ(b.machine, "h100-node-01");
  EXPECT_EQ(b.raw_sha256, Sha256Hex(FactsToJson(f)));
  std::map<std::string, int> kinds;
  for (const auto& m : b.items) ++kinds[m.kind];
  EXPECT_EQ(kinds["gpu_memory_bytes"], 8);
  EXPECT_EQ(kinds["rdma_rate_gbit_per_s"], 8);
  EXPECT_EQ(kinds["pcie_link_width"], 17);
  EXPECT_EQ(kinds["gpu_count"], 1);
  EXPECT_NE(FactsToText(f).find("0000:db:00.0 gpu x8 (max x16)"), std::string::npos);
  auto j = nlohmann::json::parse(FactsToJson(f));
  EXPECT_EQ(j["gpus"].size(), 8u);
  EXPECT_EQ(j["cpu"]["governor"], "performance");

  auto env = NewRecordedEnv(kFixtures + "h100-8gpu-ib-node");
  GpuBenchAvailability g = CheckGpuBench(**env);
  EXPECT_FALSE(g.can_run);
  EXPECT_NE(g.reason.find("a CUDA GPU and nvcc are present"), std::string::npos);
}

// A recorded tree made in the test: nvidia-smi present but failing; NVIDIA cards on the bus.
class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/probe_test.XXXXXX";
    root_ = mkdtemp(tmpl);
    std::filesystem::create_directories(root_ + "/fs/proc/sys/kernel");
    std::filesystem::create_directories(root_ + "/commands");
    std::ofstream(root_ + "/fs/proc/sys/kernel/hostname") << "node\n";
    std::ofstream(root_ + "/fs/proc/meminfo") << "MemTotal:  1024 kB\n";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root_ + "/" + rel).parent_path());
    std::ofstream(root_ + "/" + rel) << text;
  }
  std::string root_;
};

TEST_F(TempTree, NvidiaSmiFailureAndCardsWithoutDriverAreGaps) {
  Write("fs/sys/bus/pci/devices/0000:01:00.0/class", "0x030000\n");
  Write("fs/sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n");
  Write("fs/sys/bus/pci/devices/0000:01:00.0/current_link_width", "16\n");
  Write("fs/sys/bus/pci/devices/0000:01:00.0/max_link_width", "16\n");
  Write("fs/sys/bus/pci/devices/0000:01:00.0/current_link_speed", "2.5 GT/s PCIe\n");
  Write("fs/sys/bus/pci/devices/0000:01:00.0/max_link_speed", "16.0 GT/s PCIe\n");
  {
    auto env = NewRecordedEnv(root_);
    auto f = ProbeMachine(**env);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->ram_bytes, 1024 * 1024);
    ASSERT_EQ(f->pcie.size(), 1u);
    EXPECT_DOUBLE_EQ(f->pcie[0].current_speed_gt_per_s, 2.5);
    EXPECT_TRUE(HasGap(*f, "gpus", "1 NVIDIA GPU(s) on the PCI bus, but nvidia-smi is not installed"));
  }
  std::string line;
  for (const auto& a : NvidiaSmiQueryArgv()) line += (line.empty() ? "" : " ") + a;
  Write("commands/index.tsv", line + "\tsmi.txt\t9\n");
  Write("commands/smi.txt", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n");
  auto env = NewRecordedEnv(root_);
  auto f = ProbeMachine(**env);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(HasGap(*f, "gpus", "nvidia-smi failed: NVIDIA-SMI has failed because it couldn't communicate"));
}

// An ARM-style cpuinfo (no model name, no physical/core id): sockets and cores from sysfs topology.
TEST_F(TempTree, CoresFromSysfsTopologyWhenCpuinfoHasNone) {
  Write("fs/proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\n\nprocessor\t: 2\n\nprocessor\t: 3\n");
  for (int c = 0; c < 4; ++c) {
    Write("fs/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/physical_package_id", "0\n");
    Write("fs/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/core_id", std::to_string(c / 2) + "\n");
  }
  auto env = NewRecordedEnv(root_);
  auto f = ProbeMachine(**env);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->cpu_threads, 4);
  EXPECT_EQ(f->cpu_cores, 2);
  EXPECT_EQ(f->cpu_sockets, 1);
  EXPECT_TRUE(HasGap(*f, "cpu model", "no 'model name'"));
  EXPECT_FALSE(HasGap(*f, "cpu cores", ""));
}

TEST_F(TempTree, BadIndexLineIsFileLine) {
  Write("commands/index.tsv", "# comment\nnvidia-smi\tout.txt\n");
  auto env = NewRecordedEnv(root_);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().location().line, 2);
  EXPECT_FALSE(NewRecordedEnv(root_ + "/nowhere").ok());
}

TEST(FioJson, ReadsBandwidthAndIopsOfRealOutputs) {
  auto text = ReadTextFile(kFio + "01-fio-json-nvme0n1-randrw4k.txt");
  ASSERT_TRUE(text.ok());
  auto r = ParseFioJson(*text, "rand_read", false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->mb_per_s, 348743777 / 1e6);  // bw_bytes
  EXPECT_NEAR(r->iops, 85138.890741, 1e-6);
  auto w = ParseFioJson(*text, "rand_write", true);
  EXPECT_DOUBLE_EQ(w->mb_per_s, 348450387 / 1e6);
  // fio 3.1 has no bw_bytes: bw is KiB/s.
  auto old = ParseFioJson(*ReadTextFile(kFio + "05-fio-json-sata-ssd-randread4k-qd32-nj16.txt"), "rr", false);
  ASSERT_TRUE(old.ok());
  EXPECT_DOUBLE_EQ(old->mb_per_s, 202208 * 1024 / 1e6);
  EXPECT_NEAR(old->iops, 50552.230849, 1e-6);
  EXPECT_FALSE(ParseFioJson("fio: no such file", "x", false).ok());
  EXPECT_FALSE(ParseFioJson(R"({"jobs": []})", "x", false).ok());
  EXPECT_FALSE(ParseFioJson(text->substr(0, 200), "x", false).ok());  // truncated
}

// The storage bench through a recorded fio: O_DIRECT refused on the first job, then buffered.
TEST_F(TempTree, StorageBenchFallsBackToBufferedAndSaysSo) {
  std::filesystem::create_directories(root_ + "/fs/scratch");
  StorageBenchOptions o;
  o.scratch_name = "s.dat";
  auto argv = [&](const char* name, const char* rw, const char* bs, bool direct) {
    std::string a = std::string("fio --name=") + name + " --filename=/scratch/s.dat --rw=" + rw + " --bs=" + bs +
                    " --size=67108864 --direct=" + (direct ? "1" : "0") + " --numjobs=1 --output-format=json";
    a += direct && std::string(rw) == "randread" ? " --ioengine=libaio --iodepth=16" : " --ioengine=psync --iodepth=1";
    if (std::string(rw) == "write") a += " --end_fsync=1";
    return a;
  };
  std::filesystem::copy_file(kFio + "02-fio-json-pkb-seq-rand-5jobs-fio2.1.txt", root_ + "/commands/w.json");
  std::filesystem::copy_file(kFio + "06-fio-json-fs-file-randread4k-qd16-nj16.txt", root_ + "/commands/r.json");
  Write("commands/refused.txt", "fio: looks like your file system does not support direct=1/buffered=0\n");
  Write("commands/index.tsv", argv("seq_write", "write", "1M", true) + "\trefused.txt\t1\n" +
                                  argv("seq_write", "write", "1M", false) + "\tw.json\t0\n" +
                                  argv("seq_read", "read", "1M", false) + "\tr.json\t0\n" +
                                  argv("rand_read_4k", "randread", "4k", false) + "\tr.json\t0\n");
  auto env = NewRecordedEnv(root_);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto r = BenchStorage(**env, "/scratch", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_FALSE(r->jobs[0].direct);
  EXPECT_DOUBLE_EQ(r->jobs[0].mb_per_s, 68118 * 1024 / 1e6);  // fio 2.1: write bw in KiB/s
  EXPECT_DOUBLE_EQ(r->jobs[1].mb_per_s, 104630422 / 1e6);
  EXPECT_NEAR(r->jobs[2].iops, 25544.536807, 1e-6);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("buffered"), std::string::npos);
  auto batches = StorageToBatches(*r, "node", "p");
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].items[0].kind, "storage_seq_write_mb_per_s");
  EXPECT_EQ(batches[1].items[0].kind, "storage_seq_read_mb_per_s");
  EXPECT_EQ(batches[2].items[1].kind, "storage_randread_4k_iops");
  EXPECT_EQ(batches[1].raw_sha256, Sha256Hex(r->jobs[1].raw_json));
  EXPECT_EQ(nlohmann::json::parse(batches[0].items[0].context_json)["direct"], false);
}

TEST_F(TempTree, StorageBenchWithoutFioIsBadInput) {
  auto env = NewRecordedEnv(root_);
  auto r = BenchStorage(**env, "/", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().reason().find("install fio"), std::string::npos);
}

TEST(CpuBench, DeterministicTokensAndPacking) {
  CpuBenchOptions o;
  o.corpus_bytes_per_thread = 1 << 20;
  o.threads = 1;
  CpuBenchResult a = BenchCpu(o), b = BenchCpu(o);
  EXPECT_GT(a.tokens, 100000);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_EQ(a.sequences, a.tokens / o.seq_len_tokens);
  EXPECT_GT(a.bytes_per_s_per_core, 0);
  EXPECT_GT(a.tokens_per_s_per_core, 0);
  o.seed += 1;
  EXPECT_NE(BenchCpu(o).checksum, a.checksum);
  o.threads = 2;
  EXPECT_EQ(BenchCpu(o).threads, 2);
  MeasurementBatch batch = CpuToBatch(a, "m", "p");
  ASSERT_EQ(batch.items.size(), 3u);
  EXPECT_EQ(batch.items[1].kind, "cpu_tokenize_tokens_per_s_per_core");
  EXPECT_EQ(batch.items[1].value, a.tokens_per_s_per_core);
}

TEST(RealEnv, ReadsFilesAndRunsProcesses) {
  auto env = NewRealEnv();
  auto mi = env->ReadFile("/proc/meminfo");
  ASSERT_TRUE(mi.ok());
  EXPECT_NE(mi->find("MemTotal:"), std::string::npos);
  EXPECT_FALSE(env->ReadFile("/no/such/file").ok());
  auto ls = env->ListDir("/proc/self");
  ASSERT_TRUE(ls.ok());
  EXPECT_TRUE(std::is_sorted(ls->begin(), ls->end()));
  auto r = env->Run({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_TRUE(env->HasProgram("sh"));
  EXPECT_FALSE(env->HasProgram("no-such-program-gpuplan"));
  auto missing = env->Run({"no-such-program-gpuplan"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().reason().find("not found"), std::string::npos);
  // A large output on both pipes at once does not deadlock.
  auto big = env->Run({"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; head -c 300000 /dev/zero | tr '\\0' b >&2"});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->out.size(), 300000u);
  EXPECT_EQ(big->err.size(), 300000u);
}

TEST(RealEnv, ProbeOfThisMachineFindsCpuAndMemory) {
  auto env = NewRealEnv();
  auto f = ProbeMachine(*env);
  ASSERT_TRUE(f.ok());
  EXPECT_GT(f->cpu_threads, 0);
  EXPECT_GT(f->ram_bytes, 0);
  EXPECT_FALSE(f->hostname.empty());
}

// hwloc (its Linux backend, HWLOC_FSROOT at the recorded fs/) reads the recorded trees, not this machine:
// the H100 tree has 208 PUs where this VM has 2.
TEST(ProbeHwloc, VmTreeThroughHwloc) {
  auto env = NewRecordedEnv(kFixtures + "vm-2cpu-no-gpu");
  ASSERT_TRUE(env.ok());
  auto t = (*env)->Topology();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->reader.rfind("hwloc 2.", 0), 0u) << t->reader;
  EXPECT_EQ(t->packages, 1);
  EXPECT_EQ(t->cores, 2);
  EXPECT_EQ(t->pus, 2);
  ASSERT_EQ(t->numa.size(), 1u);
  EXPECT_EQ(t->numa[0].id, 0);
  EXPECT_EQ(t->numa[0].cpulist, "0-1");
  EXPECT_EQ(t->numa[0].cores, 2);
  EXPECT_EQ(t->numa[0].pus, 2);
  EXPECT_EQ(t->numa[0].mem_bytes, 24684084LL * 1024);  // node0/meminfo MemTotal
  MachineFacts f = ProbeRecorded("vm-2cpu-no-gpu");
  EXPECT_EQ(f.numa_source, t->reader);
  EXPECT_TRUE(f.hwloc_error.empty()) << f.hwloc_error;
  EXPECT_NE(FactsToText(f).find("(from hwloc 2."), std::string::npos) << FactsToText(f);
  auto j = nlohmann::json::parse(FactsToJson(f));
  EXPECT_EQ(j["numa_source"], t->reader);
  EXPECT_EQ(j["hwloc"]["pus"], 2);
}

TEST(ProbeHwloc, H100TreeThroughHwloc) {
  auto env = NewRecordedEnv(kFixtures + "h100-8gpu-ib-node");
  ASSERT_TRUE(env.ok());
  auto t = (*env)->Topology();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->packages, 2);
  EXPECT_EQ(t->cores, 104);
  EXPECT_EQ(t->pus, 208);
  ASSERT_EQ(t->numa.size(), 2u);
  EXPECT_EQ(t->numa[0].cpulist, "0-51,104-155");
  EXPECT_EQ(t->numa[1].cpulist, "52-103,156-207");
  EXPECT_EQ(t->numa[0].mem_bytes, 1056600000LL * 1024);
  EXPECT_EQ(t->numa[1].mem_bytes, 1056664156LL * 1024);
  for (const auto& n : t->numa) {
    EXPECT_EQ(n.cores, 52);
    EXPECT_EQ(n.pus, 104);
  }
  MachineFacts f = ProbeRecorded("h100-8gpu-ib-node");
  EXPECT_EQ(f.numa_source.rfind("hwloc 2.", 0), 0u);
  EXPECT_EQ(f.hwloc_cores, 104);
  EXPECT_NE(FactsToText(f).find("2 package(s), 104 cores, 208 PUs); node0 cpus 0-51,104-155 (52 cores, 104 PUs)"),
            std::string::npos)
      << FactsToText(f);
}

// A tree with node folders but no cpu topology masks: hwloc's Linux backend gives up, the probe reads
// the node folders itself and says so; HWLOC_FSROOT is put back as it was.
TEST_F(TempTree, NumaFallsBackToSysfsWhenHwlocCannotRead) {
  Write("fs/proc/cpuinfo", "processor\t: 0\nmodel name\t: X\n\nprocessor\t: 1\nmodel name\t: X\n");
  Write("fs/sys/devices/system/node/node0/cpulist", "0-1\n");
  Write("fs/sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       2048 kB\n");
  auto env = NewRecordedEnv(root_);
  ASSERT_TRUE(env.ok());
  setenv("HWLOC_FSROOT", "/before-the-test", 1);
  auto t = (*env)->Topology();
  ASSERT_NE(std::getenv("HWLOC_FSROOT"), nullptr);
  EXPECT_STREQ(std::getenv("HWLOC_FSROOT"), "/before-the-test");
  unsetenv("HWLOC_FSROOT");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().reason().find("no sysfs cpu topology"), std::string::npos) << t.status().ToString();
  auto f = ProbeMachine(**env);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->numa_source, "sysfs");
  EXPECT_NE(f->hwloc_error.find("no sysfs cpu topology"), std::string::npos);
  ASSERT_EQ(f->numa.size(), 1u);
  EXPECT_EQ(f->numa[0].cpulist, "0-1");
  EXPECT_EQ(f->numa[0].mem_bytes, 2048 * 1024);
  EXPECT_EQ(f->numa[0].pus, 0);  // unknown without hwloc
  EXPECT_NE(FactsToText(*f).find("(from sysfs; hwloc: "), std::string::npos) << FactsToText(*f);
  EXPECT_EQ(std::getenv("HWLOC_FSROOT"), nullptr);
}

// This machine through RealEnv: hwloc's nodes are the kernel's /sys/devices/system/node/nodeN, with
// the same cpulist and MemTotal, and its PUs are the online CPUs.
TEST(RealEnv, HwlocNumaEqualsSysfsNodes) {
  auto env = NewRealEnv();
  auto t = env->Topology();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<NumaNode> sysfs;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node")) {
    const std::string n = e.path().filename().string();
    if (n.rfind("node", 0) != 0 || n.size() == 4 || !std::isdigit(static_cast<unsigned char>(n[4]))) continue;
    NumaNode node;
    node.id = std::stoi(n.substr(4));
    std::ifstream(e.path() / "cpulist") >> node.cpulist;
    std::ifstream mi(e.path() / "meminfo");
    for (std::string w; mi >> w;)
      if (w == "MemTotal:") {
        mi >> node.mem_bytes;
        node.mem_bytes *= 1024;
      }
    sysfs.push_back(node);
  }
  std::sort(sysfs.begin(), sysfs.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  ASSERT_FALSE(sysfs.empty());
  ASSERT_EQ(t->numa.size(), sysfs.size());
  int pus = 0;
  for (size_t i = 0; i < sysfs.size(); ++i) {
    EXPECT_EQ(t->numa[i].id, sysfs[i].id);
    EXPECT_EQ(t->numa[i].cpulist, sysfs[i].cpulist) << "node" << sysfs[i].id;
    EXPECT_EQ(t->numa[i].mem_bytes, sysfs[i].mem_bytes) << "node" << sysfs[i].id;
    pus += t->numa[i].pus;
  }
  EXPECT_EQ(t->pus, pus);
  EXPECT_EQ(t->pus, sysconf(_SC_NPROCESSORS_ONLN));
  auto f = ProbeMachine(*env);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->numa_source, t->reader);
}

}  // namespace
}  // namespace gpuplan
