// Collective model vs nccl-tests / perftest bus bandwidths in shared/validation/network.csv.
// tests/validation/network_rows.csv maps each row (by line) to a hardware description; the
// measured value is read from network.csv itself and must match the mapping's copy.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>
#include <cstdio>

#include "gpuplan/csv.h"
#include "gpuplan/estimate.h"

namespace gpuplan {
namespace {

// The mapping's number equals one in the source text (within 1%, units converted: Gb/s and MB/s
// figures become GB/s) or lies inside a "46-48" range.
bool Consistent(double gb_per_s, const std::string& text) {
  std::vector<double> nums;
  const char* p = text.c_str();
  while (*p) {
    if (std::isdigit(static_cast<unsigned char>(*p))) {
      char* end = nullptr;
      nums.push_back(std::strtod(p, &end));
      p = end;
    } else {
      ++p;
    }
  }
  for (double v : nums)
    for (double scale : {1.0, 1.0 / 8, 1.0 / 1000})
      if (std::fabs(v * scale - gb_per_s) <= 0.01 * gb_per_s) return true;
  return nums.size() >= 2 && text.find('-') != std::string::npos && gb_per_s >= nums[0] && gb_per_s <= nums[1];
}

TEST(NetworkValidation, LargeMessageBusBandwidth) {
  auto cat = LoadCatalog();
  ASSERT_TRUE(cat.ok());
  auto map = ReadCsvFile(std::string(GPUPLAN_SOURCE_DIR) + "/tests/validation/network_rows.csv");
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  auto src = ReadCsvFile(std::string(GPUPLAN_SHARED_DIR) + "/validation/network.csv");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  int used = 0, within = 0;
  std::printf("%-5s %-10s %5s %5s %-18s %-10s %10s %10s %7s\n", "line", "collective", "gpus", "/node", "intra", "network",
              "meas GB/s", "pred GB/s", "err_%");
  for (const auto& row : map->rows) {
    CsvRecord r(*map, row);
    const int line = std::atoi(r.Str("line").c_str());
    if (r.Str("use") != "yes") {
      std::printf("%-5d skipped: %s\n", line, r.Str("why").c_str());
      continue;
    }
    // The measured value must still be what network.csv says on that line.
    const CsvRow* srow = nullptr;
    for (const auto& s : src->rows)
      if (s.line == line) srow = &s;
    ASSERT_NE(srow, nullptr) << "network.csv has no row at line " << line;
    const std::string measured_text = CsvRecord(*src, *srow).Str("measured_value");
    const double measured = *r.Number("measured_gb_per_s");
    EXPECT_TRUE(Consistent(measured, measured_text))
        << "line " << line << ": mapping says " << measured << ", network.csv says " << measured_text;
    Job j;
    j.arch = *FindPreset("gpt2");
    j.cluster.gpu = r.Str("gpu");
    j.cluster.intra_node = r.Str("intra_node");
    j.cluster.network = r.Str("network");
    j.cluster.gpus_per_node = 8;
    j.cluster.nics_per_node = static_cast<int64_t>(*r.Number("nics_per_node"));
    auto hw = ResolveHardware(j, *cat, Calibration::Builtin());
    ASSERT_TRUE(hw.ok()) << hw.status().ToString();
    const std::string c = r.Str("collective");
    const Collective coll = c == "all_reduce" ? Collective::kAllReduce
                            : c == "all_gather" ? Collective::kAllGather
                                                : Collective::kSendRecv;
    const int64_t n = static_cast<int64_t>(*r.Number("num_gpus"));
    const int64_t per_node = static_cast<int64_t>(*r.Number("gpus_per_node"));
    const double pred = BusBandwidth(coll, *r.Number("message_bytes"), n, per_node, *hw) / 1e9;
    const double err = (pred - measured) / measured;
    ++used;
    within += std::fabs(err) <= 0.15;
    std::printf("%-5d %-10s %5lld %5lld %-18s %-10s %10.1f %10.1f %+7.1f\n", line, c.c_str(), static_cast<long long>(n),
                static_cast<long long>(per_node), r.Str("intra_node").c_str(), r.Str("network").c_str(), measured, pred,
                100 * err);
    EXPECT_LE(std::fabs(err), 0.15) << "line " << line;
  }
  std::printf("%d rows, %d within 15%%\n", used, within);
  EXPECT_GE(used, 20);
}

}  // namespace
}  // namespace gpuplan
