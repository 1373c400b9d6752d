// Memory mechanisms of issue 9: optimizers, master weights, loss, allocator (docs/model/memory.md).
#include <gtest/gtest.h>

#include "../test_util.h"

#include "gpuplan/memory.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

TEST(MemoryMechanisms, AdafactorHoldsLessOptimizerStateThanAdamW) {
  Job adam = MakeJob("model: {preset: llama-2-7b}\ncluster: {num_gpus: 1}\n");
  Job ada = MakeJob("model: {preset: llama-2-7b}\ncluster: {num_gpus: 1}\ntraining: {optimizer: adafactor}\n");
  EXPECT_LT(EstimateMemory(ada).optimizer_bytes, EstimateMemory(adam).optimizer_bytes);
}

}  // namespace
}  // namespace gpuplan
