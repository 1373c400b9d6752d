// data/engines.csv: the table both the planner and export read (issue 16 item 3).
#include <gtest/gtest.h>

#include "gpuplan/data.h"
#include "gpuplan/engines.h"

namespace gpuplan {
namespace {

Job MakeJob(const std::string& yaml) {
  auto j = ParseJobText(yaml, "t.yaml");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  Job job = *j;
  EXPECT_TRUE(FinalizeJob(job).ok());
  return job;
}

TEST(Engines, EveryFrameworkButGenericHasARowWithASource) {
  ASSERT_TRUE(ParseEngines(std::string(EmbeddedData("engines.csv")), "data/engines.csv").ok());
  for (const auto& name : FrameworkNames()) {
    const Framework f = *ParseFramework(name);
    const EngineCaps* e = EngineFor(f);
    if (f == Framework::kGeneric) {
      EXPECT_EQ(e, nullptr);
      continue;
    }
    ASSERT_NE(e, nullptr) << name;
    EXPECT_FALSE(e->source.empty()) << name;
    EXPECT_FALSE(e->date.empty()) << name;
  }
  for (const char* f : {"megatron", "deepspeed", "accelerate", "torchtitan"}) EXPECT_NE(EngineForFormat(f), nullptr) << f;
  EXPECT_EQ(EngineForFormat("torchrun"), nullptr);
}

TEST(Engines, BadCellsAreLocated) {
  const std::string header = std::string(EmbeddedData("engines.csv")).substr(0, std::string(EmbeddedData("engines.csv")).find('\n') + 1);
  auto bad = ParseEngines(header + "megatron,megatron,megatron,maybe,yes,with_tp_ep,even,yes,pp,yes,yes,0 1 2 3,0 1 2 3,1,none,yes,no,no,bf16,tensorwise,src,2025-01-01,\n",
                          "e.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().location().line, 2);
  EXPECT_EQ(bad.status().location().key, "tp");
  auto zero = ParseEngines(header + "megatron,megatron,megatron,yes,yes,with_tp_ep,even,yes,pp,yes,yes,0 4,0,1,none,yes,no,no,bf16,tensorwise,src,2025-01-01,\n",
                           "e.csv");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().location().key, "zero");
}

TEST(Engines, RefusalsNameFieldValueAndTheEnginesThatCan) {
  const Job pp = MakeJob("model: {preset: llama-3-8b}\ncluster: {num_gpus: 16, gpus_per_node: 8}\nparallel: {pp: 2, zero: 1}\n");
  const std::string why = EngineCannotLayout(*EngineFor(Framework::kDeepspeed), pp, 8, "deepspeed");
  EXPECT_NE(why.find("parallel.pp 2"), std::string::npos) << why;
  EXPECT_NE(why.find("--to megatron"), std::string::npos) << why;
  EXPECT_NE(why.find("--to torchtitan"), std::string::npos) << why;
  EXPECT_FALSE(EngineExpressesLayout(*EngineFor(Framework::kHfTrainer), pp, 8));
  EXPECT_TRUE(EngineExpressesLayout(*EngineFor(Framework::kMegatron), pp, 8));
  const Job lora = MakeJob("model: {preset: llama-3-8b}\ntraining: {method: lora}\ncluster: {num_gpus: 8}\n");
  EXPECT_NE(EngineCannotTrain(*EngineFor(Framework::kMegatron), lora, "megatron").find("training.method lora"), std::string::npos);
  EXPECT_EQ(EngineCannotTrain(*EngineFor(Framework::kHfTrainer), lora, "hf-trainer"), "");
}

TEST(Engines, ParameterOffloadOnlyWhereTheEngineHasIt) {
  const Job off = MakeJob("model: {preset: llama-3-70b}\ncluster: {num_gpus: 8, gpus_per_node: 8}\nparallel: {zero: 3, offload: optimizer+params}\n");
  EXPECT_TRUE(EngineExpressesLayout(*EngineFor(Framework::kDeepspeed), off, 8));
  EXPECT_FALSE(EngineExpressesLayout(*EngineFor(Framework::kMegatron), off, 8));
  EXPECT_FALSE(EngineExpressesLayout(*EngineFor(Framework::kTorchtitan), off, 8));
  const Job tp_sp_off = MakeJob(
      "model: {preset: llama-3-70b}\ncluster: {num_gpus: 8, gpus_per_node: 8}\nparallel: {tp: 2, zero: 3, sequence_parallel: true, offload: optimizer+params}\n");
  for (const auto& e : Engines()) EXPECT_FALSE(EngineExpressesLayout(e, tp_sp_off, 8)) << e.id;
}

}  // namespace
}  // namespace gpuplan
