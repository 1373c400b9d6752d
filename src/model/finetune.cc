// Fine-tuning terms of the step (docs/model/finetune.md).
#include "gpuplan/finetune.h"

#include <algorithm>

namespace gpuplan {

AdapterCost AdapterLayerCost(const Job&, const HardwareContext&, double) { return {}; }

double DequantLayerTime(const Job&, const HardwareContext&) { return 0; }

double ComputeSeqLen(const TrainingSpec& t) { return static_cast<double>(t.seq_len); }

double UsefulTokensPerSequence(const TrainingSpec& t) {
  if (t.padding == Padding::kPacked || t.tokens_per_sample <= 0) return static_cast<double>(t.seq_len);
  return static_cast<double>(std::min(t.tokens_per_sample, t.seq_len));
}

}  // namespace gpuplan
