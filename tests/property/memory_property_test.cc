// Randomized property tests (seed printed): monotonicity of memory in batch/seq, ZeRO ordering,
// TP never increases weights per GPU.
#include <gtest/gtest.h>

#include <random>

#include "gpuplan/memory.h"

namespace gpuplan {
namespace {

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  template <typename T>
  T Pick(std::initializer_list<T> xs) {
    std::uniform_int_distribution<size_t> d(0, xs.size() - 1);
    return *(xs.begin() + d(rng));
  }
  Job RandomJob() {
    Job j;
    j.arch = *FindPreset(Pick<const char*>({"gpt2", "llama-2-7b", "llama-3-8b", "mixtral-8x7b", "qwen2.5-7b", "mpt-7b"}));
    j.training.seq_len = Pick<int64_t>({512, 1024, 2048, 4096});
    j.training.micro_batch = Pick<int64_t>({1, 2, 4});
    j.training.precision = Pick({Precision::kFp32, Precision::kBf16, Precision::kFp8});
    j.training.recompute = Pick({Recompute::kNone, Recompute::kSelective, Recompute::kFull});
    j.training.flash_attention = Pick({true, false});
    j.training.method = Pick({Method::kFull, Method::kLora, Method::kQlora});
    if (j.training.method == Method::kQlora && j.training.precision == Precision::kFp32)
      j.training.precision = Precision::kBf16;
    j.parallel.tp = Pick<int64_t>({1, 2, 4});
    j.parallel.pp = Pick<int64_t>({1, 2, 4});
    j.parallel.dp = Pick<int64_t>({1, 2, 8});
    j.parallel.zero = Pick({0, 1, 2, 3});
    j.parallel.sequence_parallel = j.parallel.tp > 1 && Pick({true, false});
    j.training.global_batch = j.training.micro_batch * j.parallel.dp * Pick<int64_t>({1, 4, 8});
    return j;
  }
};

uint64_t Seed() {
  uint64_t seed = std::random_device{}();
  std::printf("property seed: %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

TEST(MemoryProperty, MonotoneInMicroBatchAndSeqLen) {
  const uint64_t seed = Seed();
  Gen g(seed);
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    Job j = g.RandomJob();
    if (!FinalizeJob(j).ok()) continue;
    const double base = EstimateMemory(j).total_bytes;
    Job mb = j;
    mb.training.micro_batch *= 2;
    mb.training.global_batch *= 2;
    Job sl = j;
    sl.training.seq_len *= 2;
    ASSERT_TRUE(FinalizeJob(mb).ok());
    ASSERT_TRUE(FinalizeJob(sl).ok());
    EXPECT_GE(EstimateMemory(mb).total_bytes, base) << "seed " << seed << " case " << i;
    EXPECT_GE(EstimateMemory(sl).total_bytes, base) << "seed " << seed << " case " << i;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(MemoryProperty, ZeroStagesAreOrdered) {
  const uint64_t seed = Seed();
  Gen g(seed);
  for (int i = 0; i < 300; ++i) {
    Job j = g.RandomJob();
    if (!FinalizeJob(j).ok()) continue;
    double prev = -1;
    for (int z = 3; z >= 0; --z) {
      Job k = j;
      k.parallel.zero = z;
      ASSERT_TRUE(FinalizeJob(k).ok());
      MemoryBreakdown m = EstimateMemory(k);
      const double states = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes;
      EXPECT_GE(states, prev) << "seed " << seed << " case " << i << " zero " << z;
      prev = states;
    }
  }
}

TEST(MemoryProperty, MoreTensorParallelNeverIncreasesWeights) {
  const uint64_t seed = Seed();
  Gen g(seed);
  for (int i = 0; i < 300; ++i) {
    Job j = g.RandomJob();
    j.parallel.tp = 1;
    j.parallel.sequence_parallel = false;
    if (!FinalizeJob(j).ok()) continue;
    double prev = EstimateMemory(j).weights_bytes;
    for (int64_t tp : {2, 4}) {
      Job k = j;
      k.parallel.tp = tp;
      k.cluster.num_gpus = 0;
      if (!FinalizeJob(k).ok()) break;
      const double w = EstimateMemory(k).weights_bytes;
      EXPECT_LE(w, prev) << "seed " << seed << " case " << i << " tp " << tp;
      prev = w;
    }
  }
}

TEST(MemoryProperty, WorldSizeIsProductOfDegrees) {
  const uint64_t seed = Seed();
  Gen g(seed);
  for (int i = 0; i < 200; ++i) {
    Job j = g.RandomJob();
    if (!FinalizeJob(j).ok()) continue;
    EXPECT_EQ(j.parallel.tp * j.parallel.pp * j.parallel.dp * j.parallel.cp, j.cluster.num_gpus);
  }
}

}  // namespace
}  // namespace gpuplan
