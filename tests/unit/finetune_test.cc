// Fine-tuning step terms (docs/model/finetune.md).
#include <gtest/gtest.h>

#include "../test_util.h"

#include "gpuplan/finetune.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

TEST(Finetune, PaddingToMaxTrainsOnlyTheSampleTokens) {
  Job packed = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: lora, seq_len: 1024, samples: 1000, tokens_per_sample: 256}\n");
  Job padded = MakeJob("model: {preset: llama-2-7b}\ntraining: {method: lora, seq_len: 1024, tokens_per_sample: 256, padding: max_length}\n");
  EXPECT_EQ(UsefulTokensPerSequence(packed.training), 1024);
  EXPECT_EQ(UsefulTokensPerSequence(padded.training), 256);
  EXPECT_EQ(ComputeSeqLen(padded.training), 1024);
}

}  // namespace
}  // namespace gpuplan
