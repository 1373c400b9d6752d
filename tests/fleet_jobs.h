// The fleet the fleet tests share (tests/unit/fleet_test.cc, tests/e2e/fleet_cli_test.cc).
#pragma once

#include <string>

namespace gpuplan::testing_util {

// Small models keep the test fast: GPT-2 pretraining, a GPT-Neo 1.3B fine-tune with a deadline, a GPT-2 chat service.
inline std::string ThreeJobs(const std::string& deadline_hours) {
  return "pool: " + std::string(GPUPLAN_SOURCE_DIR) + "/examples/pool-lab-mixed.yaml\n"
         "jobs:\n"
         "  - name: chat\n"
         "    kind: serving\n"
         "    model: {preset: llama-3-8b}\n"
         "    serving: {engine: vllm, input_len: 500, output_len: 100, request_rate: 2, ttft_p90_ms: 2000, tpot_p90_ms: 100}\n"
         "  - name: finetune\n"
         "    kind: training\n"
         "    deadline_hours: " + deadline_hours + "\n"
         "    model: {preset: gpt-neo-1.3b}\n"
         "    training: {method: full, seq_len: 1024, global_batch: 32, tokens: 2e8}\n"
         "  - name: pretrain\n"
         "    kind: training\n"
         "    model: {preset: gpt2}\n"
         "    training: {method: pretrain, seq_len: 1024, global_batch: 64, tokens: 5e9}\n";
}

}  // namespace gpuplan::testing_util
