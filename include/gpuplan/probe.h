// Measuring the machine gpuplan runs on: CPU, NUMA, RAM, disks, NICs, RDMA ports, PCIe links,
// GPUs (nvidia-smi), and benchmarks (storage through fio, a CPU data-loader workload). Everything
// is read through an Env (leveldb's Env): the real machine, or a recorded tree for tests.
//
//   auto env = NewRealEnv();
//   auto facts = ProbeMachine(*env);              // what was found, and each gap with its reason
//   ledger->RecordMeasurements(FactsToBatch(*facts, "h100-ib"));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/ledger.h"
#include "gpuplan/status.h"

namespace gpuplan {

struct NumaNode {
  int id = 0;
  std::string cpulist;   // "0-51,104-155"
  int64_t mem_bytes = 0; // MemTotal of the node (0 when unknown)
  int cores = 0, pus = 0;  // cores and PUs (hardware threads) in the node's cpuset; 0 when unknown (sysfs)
};

// The CPU and NUMA topology as hwloc's Linux backend reads it (sysfs cpu topology and node folders).
struct CpuTopology {
  std::string reader;            // "hwloc 2.9.0" (the hwloc gpuplan was built with)
  int packages = 0, cores = 0, pus = 0;
  std::vector<NumaNode> numa;    // by node number; mem_bytes = hwloc's local_memory
};

// The machine as files and commands.
class Env {
 public:
  virtual ~Env() = default;
  // The whole file (sysfs and procfs files are small). BadInput naming the path when absent.
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // Entry names in a folder, sorted (symbolic links included; "." and ".." not).
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  struct RunResult {
    int exit_code = 0;
    std::string out;  // stdout
    std::string err;  // stderr
  };
  // Runs argv[0] from PATH. A program that is not installed is BadInput ("not found"), not a RunResult.
  virtual Result<RunResult> Run(const std::vector<std::string>& argv) = 0;
  // Whether argv[0] would be found (PATH for the real machine).
  virtual bool HasProgram(const std::string& name) = 0;  // The topology through hwloc, with its Linux backend reading this Env's root ("/" for the real
  // machine, `root`/fs for a recorded one). BadInput with hwloc's reason when it cannot (then the probe
  // reads /sys/devices/system/node itself). This default (an Env with no hwloc behind it) always fails.
  virtual Result<CpuTopology> Topology();
};

// hwloc (the Linux backend only: no x86 CPUID, no I/O, no caches) on the sysfs and procfs under
// `fsroot` ("/": this machine). hwloc 2.x takes the root only from the HWLOC_FSROOT environment
// variable, so this sets it for the load (under a lock) and restores it afterwards.
Result<CpuTopology> ReadHwlocTopology(const std::string& fsroot);

// The machine itself: the real /, PATH, fork+exec.
std::unique_ptr<Env> NewRealEnv();

// A recorded machine: `root`/fs/ stands for / (only the files a probe reads) and
// `root`/commands/index.tsv lists recorded commands, one a line: the argv joined by single spaces,
// a tab, the output file (relative to commands/), a tab, the exit code. A program with no line is
// not installed. Lines starting with '#' are comments.
Result<std::unique_ptr<Env>> NewRecordedEnv(const std::string& root);

// Something the probe could not measure, and why ("no GPU: nvidia-smi not found").
struct ProbeGap {
  std::string item;    // "gpus", "governor", "rdma", "nic eth0 speed", ...
  std::string reason;
};

struct DiskInfo {
  std::string name;        // "nvme0n1"
  int64_t size_bytes = 0;  // /sys/block/NAME/size x 512
  bool rotational = false;
};

struct NicInfo {
  std::string name;                           // "eth0"
  std::string operstate;                      // "up", "down", "unknown"
  std::optional<int64_t> speed_mbit_per_s;    // absent when the driver reports none (-1, EINVAL)
  std::string pci_address;                    // "" for virtual devices
};

struct RdmaPort {
  std::string device;                   // "mlx5_0"
  int port = 1;
  double rate_gbit_per_s = 0;           // from ".../ports/N/rate" ("400 Gb/sec (4X NDR)")
  std::string rate_text;                // the file as written
  std::string state;                    // "ACTIVE", "DOWN" (the word after "N: ")
  std::string link_layer;               // "InfiniBand", "Ethernet"
};

struct PcieLink {
  std::string address;                  // "0000:18:00.0"
  std::string kind;                     // "gpu", "nic", "infiniband"
  std::string vendor, device, class_code;  // "0x10de", "0x2330", "0x030200"
  int current_width = 0, max_width = 0;
  double current_speed_gt_per_s = 0, max_speed_gt_per_s = 0;  // "32.0 GT/s PCIe" -> 32
};

struct GpuInfo {
  int index = 0;
  std::string name;
  int64_t memory_bytes = 0;             // memory.total (MiB) x 2^20
  std::optional<int> pcie_gen, pcie_width;
  std::optional<double> max_sm_clock_mhz, power_limit_w;
};

struct MachineFacts {
  std::string hostname;
  std::string cpu_model;
  int cpu_sockets = 0, cpu_cores = 0, cpu_threads = 0;
  std::string governor;                  // "" when there is no cpufreq (see gaps)
  std::vector<NumaNode> numa;
  std::string numa_source;               // "hwloc 2.9.0" or "sysfs" ("" when NUMA is a gap)
  std::string hwloc_error;               // why hwloc was not used ("" when it was)
  int hwloc_packages = 0, hwloc_cores = 0, hwloc_pus = 0;  // from hwloc (0 with sysfs)
  int64_t ram_bytes = 0;
  std::vector<DiskInfo> disks;           // loop, ram and zero-sized devices left out
  std::vector<NicInfo> nics;             // lo left out
  std::vector<RdmaPort> rdma;
  std::vector<PcieLink> pcie;            // GPUs (NVIDIA 0x10de display/3D), NICs (0x0200), IB (0x0207)
  std::vector<GpuInfo> gpus;
  std::string nvidia_smi_output;         // the raw query output ("" without nvidia-smi)
  std::vector<ProbeGap> gaps;
};

// The exact query `gpuplan probe` runs (documented in docs/checks.md).
std::vector<std::string> NvidiaSmiQueryArgv();

// Reads everything a probe reads. Only an unusable Env is an error; each missing piece is a gap.
Result<MachineFacts> ProbeMachine(Env& env);

// The facts as JSON (the machine row's facts_json; `probe --json`).
std::string FactsToJson(const MachineFacts& facts);
// Human-readable summary: what was found, then "not measured: ITEM: REASON" lines.
std::string FactsToText(const MachineFacts& facts);
// The facts as ledger measurements (cpu_cores, ram_bytes, gpu_memory_bytes, nic_speed_mbit_per_s,
// rdma_rate_gbit_per_s, pcie_link_width, ...), tool "gpuplan probe", hash of FactsToJson.
MeasurementBatch FactsToBatch(const MachineFacts& facts, const std::string& pool);

// --bench storage: fio on a scratch file under a folder.
struct StorageBenchOptions {
  int64_t size_bytes = 64LL << 20;  // Default: 64 MiB scratch file
  std::string runtime_s = "";       // Default: "" (each job runs through the file once, no time limit)
  std::string scratch_name = "";    // Default: "" (gpuplan-fio-<pid>.dat; removed afterwards)
};
struct FioJobResult {
  std::string name;               // "seq_read", "seq_write", "rand_read_4k"
  double mb_per_s = 0;            // 10^6 bytes per second
  double iops = 0;
  bool direct = true;             // false: O_DIRECT refused by the filesystem, ran buffered
  std::string raw_json;           // fio's --output-format=json output
};
struct StorageBenchResult {
  std::string path;
  std::vector<FioJobResult> jobs;
  std::vector<std::string> notes;  // "O_DIRECT not supported on PATH: buffered (page cache) numbers"
};
Result<StorageBenchResult> BenchStorage(Env& env, const std::string& dir, const StorageBenchOptions& options = {});
// Reads one fio JSON output: the first job's read or write bandwidth (bw_bytes) and IOPS.
Result<FioJobResult> ParseFioJson(const std::string& json, const std::string& job_name, bool is_write);
std::vector<MeasurementBatch> StorageToBatches(const StorageBenchResult& r, const std::string& machine,
                                               const std::string& pool);

// --bench cpu: tokenizing + packing a synthetic corpus in-process (docs/checks.md: method).
struct CpuBenchOptions {
  int64_t corpus_bytes_per_thread = 16LL << 20;  // Default: 16 MiB of synthetic text per thread (1 GiB in all at most)
  int threads = 0;                               // Default: 0 (one per online CPU)
  int seq_len_tokens = 2048;                     // Default: 2048 (packed sequence length)
  uint64_t seed = 20261201;                      // Default: fixed (the same corpus every run)
};
struct CpuBenchResult {
  int threads = 0;
  double bytes_per_s_per_core = 0, tokens_per_s_per_core = 0;  // total / threads
  double single_thread_bytes_per_s = 0, single_thread_tokens_per_s = 0;
  int64_t tokens = 0, sequences = 0;
  uint64_t checksum = 0;  // of the packed tokens (the same for the same options)
};
CpuBenchResult BenchCpu(const CpuBenchOptions& options = {});
MeasurementBatch CpuToBatch(const CpuBenchResult& r, const std::string& machine, const std::string& pool);

// --bench gpu: whether a GEMM/HBM benchmark can run here; the reason when it cannot.
struct GpuBenchAvailability {
  bool can_run = false;
  std::string reason;
};
GpuBenchAvailability CheckGpuBench(Env& env);

}  // namespace gpuplan
