// The outputs of the tools people already run on a GPU cluster (nccl-tests, perftest, nvidia-smi,
// lspci, ibstat, fio, dcgmi, NCCL_DEBUG=INFO logs), read into one record schema. The kind of a file
// is detected from its content, never its name; what is not recognised is said so, and a truncated or
// garbled output is a warning at the line that broke the parser (docs/checks.md "Reading outputs").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuplan/status.h"

namespace gpuplan {

enum class ToolKind {
  kUnknown,        // not one of the outputs below
  kNcclTests,      // all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf (+ rccl-tests)
  kPerftest,       // ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, ib_*_lat (one run, or a server+client pair)
  kPerftestTable,  // a Markdown table of perftest results (| Data Size (B) | ib_write_bw (Gbps) | ...)
  kNvidiaSmiTopo,  // nvidia-smi topo -m (GPU-GPU and GPU-NIC: X, NV#, PIX, PXB, PHB, NODE, SYS)
  kNvidiaSmiP2p,   // nvidia-smi topo -p2p r|w|n|a (OK, CNS, GNS, TNS, NS, U)
  kNvidiaSmi,      // the default nvidia-smi table
  kNvidiaSmiQuery, // nvidia-smi -q [-d ...] (clocks, throttle/event reasons, PCIe gen/width, ECC, retired pages)
  kNvlinkStatus,   // nvidia-smi nvlink -s
  kLspci,          // lspci -vv LnkCap / LnkSta lines
  kIbstat,         // ibstat (CA records or `ibstat | grep` CA lines)
  kFioJson,        // fio --output-format=json
  kDcgmiDiag,      // dcgmi diag -r N
  kNcclDebug,      // NCCL_DEBUG=INFO log lines (NET/IB, NET/Socket, P2P, NVLS, WARN completions)
  kNvidiaSmiTopoPci,  // nvidia-smi topo -mp (the PCIe-only matrix: never shows NVLink)
  kDcgmiNvlink,       // dcgmi nvlink --link-status (U up, D down, X disabled per link)
};
std::string ToString(ToolKind k);  // "nccl-tests", "perftest", "nvidia-smi-topo", ...

// One number (or one named state) read from a tool output. Units are in the metric name and in
// `unit`: busbw_peak_gb_per_s (GB/s), bw_avg_gbit_per_s (Gb/s), lat_typical_us, nvlink_count,
// pcie_width, pcie_gen, throttle_reasons_active, transport, ...
struct Reading {
  ToolKind kind = ToolKind::kUnknown;
  std::string tool;      // the program: "all_reduce_perf", "ib_write_bw", "nvidia-smi", "fio", ...
  std::string metric;
  double value = 0;      // the number; for a state (transport, port_state) 1 = seen, and `text` names it
  std::string unit;      // "GB/s", "Gb/s", "us", "count", "lanes", "gen", "KiB/s", "IOPS", "MHz", "bool", ...
  std::string text;      // the state as printed ("NET/IB/GDRDMA", "HW Slowdown", "Active"); "" for plain numbers
  // What the number is about: op, ranks, nodes, msg_bytes, device, gpu, gpu_name, peer, port, job, rw, ...
  std::map<std::string, std::string> context;
  Location where;        // file:line the number was read from
};

// A line the parser could not read, or an output that stops where it should not.
struct ToolWarning {
  Location where;        // file:line that broke the parser (line 0 = the whole file)
  std::string message;   // what was wrong and what was read up to it
};

struct ToolOutput {
  std::string file;
  ToolKind kind = ToolKind::kUnknown;
  std::string tool;      // the program that wrote it ("" when the output does not say)
  std::vector<Reading> readings;
  std::vector<ToolWarning> warnings;
};

// The kind of a tool output, from its text alone.
ToolKind DetectToolOutput(const std::string& text);

// Detects and parses. Never fails: an unrecognised text is kind kUnknown with one warning saying so;
// a broken line is a warning with its line and the readings read before it.
ToolOutput ParseToolOutput(const std::string& text, const std::string& file);

// Reads a file and parses it (an unreadable file is BadInput at the file).
Result<ToolOutput> ReadToolOutput(const std::string& path);

// Every reading of every output, in order: what `verify --ledger` hands to the resource ledger.
std::vector<Reading> FlattenReadings(const std::vector<ToolOutput>& outputs);

// "busbw_peak_gb_per_s = 189.6 GB/s (op=all_reduce, msg_bytes=8589934592) at file:line".
std::string ToString(const Reading& r);

}  // namespace gpuplan
