// gpuplan import (src/launch/import.cc): each format's fixture gives the expected keys at their
// file:line; "auto" values resolve from the other inputs or are listed; contradictions are errors at
// file:line; unknown keys are listed; the kind comes from the content; garbage and truncated files
// are located errors, never a crash. The end-to-end case is the must-be-true: memory of an
// imported ds_config with "auto" values and of an accelerate FSDP YAML equals the hand-written job's.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpuplan/job_keys.h"
#include "gpuplan/launch.h"

namespace gpuplan {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) { return std::string(GPUPLAN_SOURCE_DIR) + "/tests/fixtures/import/" + name; }

// The 1-based line of the first line of the fixture that contains `needle` (0 = none).
int LineOf(const std::string& name, const std::string& needle) {
  std::ifstream in(Fixture(name));
  int n = 0;
  for (std::string l; std::getline(in, l);) {
    ++n;
    if (l.find(needle) != std::string::npos) return n;
  }
  return 0;
}

Job Base(std::initializer_list<std::pair<const char*, const char*>> flags) {
  Job j;
  for (const auto& [k, v] : flags) {
    const Status st = SetJobKey(j, k, v, {"command line", 0, std::string("--") + FindJobKey(k)->flag});
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return j;
}

ImportResult Import(std::vector<std::string> names, const Job& base = Job{}) {
  for (auto& n : names) n = Fixture(n);
  auto r = ImportFiles(names, base);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ImportResult{};
}

Status ImportError(std::vector<std::string> names, const Job& base = Job{}) {
  for (auto& n : names) n = Fixture(n);
  auto r = ImportFiles(names, base);
  EXPECT_FALSE(r.ok()) << "expected an error";
  return r.status();
}

// The key was set from `file` at the line holding `needle`.
void ExpectAt(const Job& j, const std::string& key, const std::string& file, const std::string& needle) {
  auto it = j.set_keys.find(key);
  ASSERT_NE(it, j.set_keys.end()) << key << " not set";
  EXPECT_EQ(it->second.file, Fixture(file)) << key;
  EXPECT_EQ(it->second.line, LineOf(file, needle)) << key << " (line of '" << needle << "')";
  EXPECT_GT(it->second.line, 0) << key;
}

const ImportNote* FindNote(const std::vector<ImportNote>& v, const std::string& key, const std::string& words = "") {
  for (const auto& n : v)
    if (n.where.key == key && n.message.find(words) != std::string::npos) return &n;
  return nullptr;
}

// ---- DeepSpeed ----

TEST(ImportDeepspeed, KeysAndLines) {
  const ImportResult r = Import({"ds_full.json"}, Base({{"cluster.num_gpus", "16"}}));
  const Job& j = r.job;
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].second, ImportKind::kDeepspeedConfig);
  EXPECT_EQ(j.training.micro_batch, 2);
  ExpectAt(j, "training.micro_batch", "ds_full.json", "train_micro_batch_size_per_gpu");
  EXPECT_EQ(j.training.global_batch, 128);  // = 2 x 4 x 16: holds
  ExpectAt(j, "training.global_batch", "ds_full.json", "\"train_batch_size\"");
  EXPECT_EQ(j.parallel.zero, 2);
  ExpectAt(j, "parallel.zero", "ds_full.json", "\"stage\"");
  EXPECT_EQ(j.training.precision, Precision::kBf16);
  ExpectAt(j, "training.precision", "ds_full.json", "\"bf16\"");
  EXPECT_EQ(j.training.framework, Framework::kDeepspeed);
  EXPECT_EQ(j.parallel.offload, Offload::kNone);
  // Unknown keys: a documented one gpuplan does not model, and a misspelt one with a suggestion.
  const ImportNote* wall = FindNote(r.unknown, "wall_clock_breakdown");
  ASSERT_NE(wall, nullptr);
  EXPECT_EQ(wall->where.line, LineOf("ds_full.json", "wall_clock_breakdown"));
  const ImportNote* typo = FindNote(r.unknown, "zero_optimization.overlap_comms", "did you mean 'zero_optimization.overlap_comm'");
  ASSERT_NE(typo, nullptr);
  EXPECT_EQ(typo->where.line, LineOf("ds_full.json", "overlap_comms"));
  // Known, no effect: a note, not an unknown.
  EXPECT_NE(FindNote(r.notes, "gradient_clipping", "no effect on the estimate"), nullptr);
  EXPECT_EQ(FindNote(r.unknown, "gradient_clipping"), nullptr);
  // The file's fp16 block says false: not a conflict with bf16.
  Job f = j;
  f.arch = *FindPreset("llama-3-8b");
  ASSERT_TRUE(FinalizeJob(f).ok());
  EXPECT_EQ(GradAccumSteps(f), 4);
}

TEST(ImportDeepspeed, AllThreeBatchKeysImplyDpWithoutGpuCount) {
  const ImportResult r = Import({"ds_full.json"});
  EXPECT_EQ(r.job.parallel.dp, 16);  // 128 / (2 x 4)
  ExpectAt(r.job, "parallel.dp", "ds_full.json", "\"train_batch_size\"");
}

TEST(ImportDeepspeed, AutoResolvedFromFlags) {
  const ImportResult r = Import({"ds_auto.json"}, Base({{"cluster.num_gpus", "8"}, {"training.micro_batch", "2"}}));
  const Job& j = r.job;
  EXPECT_EQ(j.training.micro_batch, 2);
  EXPECT_EQ(j.set_keys.at("training.micro_batch").file, "command line");  // the flag resolved the auto
  EXPECT_EQ(j.training.global_batch, 2 * 4 * 8);
  ExpectAt(j, "training.global_batch", "ds_auto.json", "\"train_batch_size\"");
  EXPECT_EQ(j.parallel.zero, 3);
  EXPECT_EQ(j.parallel.offload, Offload::kOptimizer);
  ExpectAt(j, "parallel.offload", "ds_auto.json", "\"device\"");
  const ImportNote* how = FindNote(r.notes, "train_batch_size", "auto");
  ASSERT_NE(how, nullptr);
  EXPECT_NE(how->message.find("64"), std::string::npos) << how->message;
  // bf16.enabled "auto": nothing gives the precision, so it is listed with its line.
  const ImportNote* prec = FindNote(r.unresolved, "bf16.enabled");
  ASSERT_NE(prec, nullptr);
  EXPECT_EQ(prec->where.line, LineOf("ds_auto.json", "\"bf16\""));
  EXPECT_NE(prec->message.find("bf16"), std::string::npos);  // and says which default the job keeps
  EXPECT_NE(FindNote(r.unknown, "steps_per_print"), nullptr);
}

TEST(ImportDeepspeed, AutoUnresolvedIsListedAndTheDefaultKept) {
  const ImportResult r = Import({"ds_auto.json"});
  EXPECT_EQ(r.job.training.global_batch, 0);  // gpuplan's default: micro-batch x dp
  EXPECT_EQ(r.job.training.micro_batch, 1);
  for (const char* k : {"train_batch_size", "train_micro_batch_size_per_gpu", "bf16.enabled"}) {
    const ImportNote* n = FindNote(r.unresolved, k);
    ASSERT_NE(n, nullptr) << k;
    EXPECT_EQ(n->where.file, Fixture("ds_auto.json"));
    EXPECT_GT(n->where.line, 0) << k;
    EXPECT_NE(n->message.find("default"), std::string::npos) << n->message;
  }
}

TEST(ImportDeepspeed, AutoResolvedFromTheLaunchLineAndTheScriptArgs) {
  const ImportResult r = Import({"torchrun_ds.sh"});
  const Job& j = r.job;
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].second, ImportKind::kLaunchLine);
  EXPECT_EQ(r.files[1].second, ImportKind::kDeepspeedConfig);
  EXPECT_EQ(j.cluster.num_gpus, 8);
  ExpectAt(j, "cluster.num_gpus", "torchrun_ds.sh", "--nproc-per-node");
  EXPECT_EQ(j.training.micro_batch, 2);
  ExpectAt(j, "training.micro_batch", "torchrun_ds.sh", "--per_device_train_batch_size");
  EXPECT_EQ(j.training.global_batch, 64);
  EXPECT_EQ(j.training.precision, Precision::kBf16);
  ExpectAt(j, "training.precision", "torchrun_ds.sh", "--bf16");
  EXPECT_EQ(j.training.recompute, Recompute::kFull);
  EXPECT_EQ(j.arch.name, "llama-3-8b");  // --model_name_or_path meta-llama/Meta-Llama-3-8B
  EXPECT_TRUE(r.unresolved.empty()) << r.unresolved[0].message;
  EXPECT_NE(FindNote(r.notes, "--output_dir", "no effect on the estimate"), nullptr);  // a TrainingArguments field: known
}

TEST(ImportDeepspeed, TrainBatchSizeThatDoesNotAddUpIsAnErrorAtItsLine) {
  const Status st = ImportError({"ds_contradiction.json"}, Base({{"cluster.num_gpus", "8"}}));
  EXPECT_EQ(st.code(), StatusCode::kBadInput);
  EXPECT_EQ(st.location().file, Fixture("ds_contradiction.json"));
  EXPECT_EQ(st.location().line, LineOf("ds_contradiction.json", "train_batch_size"));
  EXPECT_EQ(st.location().key, "train_batch_size");
  EXPECT_NE(st.reason().find("= 64"), std::string::npos) << st.reason();  // 2 x 4 x 8
  // Without a GPU count it does not divide either: 100 is not a multiple of 2 x 4.
  const Status st2 = ImportError({"ds_contradiction.json"});
  EXPECT_EQ(st2.location().line, LineOf("ds_contradiction.json", "train_batch_size"));
}

TEST(ImportDeepspeed, ParameterOffloadNeedsStage3) {
  const Status st = ImportError({"ds_param_offload_stage2.json"});
  EXPECT_EQ(st.location().line, LineOf("ds_param_offload_stage2.json", "\"device\""));
  EXPECT_NE(st.reason().find("stage 3"), std::string::npos);
}

TEST(ImportDeepspeed, TwoFilesThatDisagreeAreAnError) {
  const Status st = ImportError({"ds_full.json", "torchrun_ds.sh"});
  EXPECT_EQ(st.location().file, Fixture("ds_auto.json"));  // the second says stage 3, the first 2
  EXPECT_NE(st.reason().find(Fixture("ds_full.json")), std::string::npos) << st.reason();
}

TEST(ImportDeepspeed, CommandLineWinsAndTheFileValueIsNoted) {
  const ImportResult r = Import({"ds_full.json"}, Base({{"cluster.num_gpus", "16"}, {"parallel.zero", "3"}}));
  EXPECT_EQ(r.job.parallel.zero, 3);
  const ImportNote* n = FindNote(r.notes, "zero_optimization.stage", "not used");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->where.line, LineOf("ds_full.json", "\"stage\""));
}

// ---- accelerate ----

TEST(ImportAccelerate, Fsdp2KeysAndLines) {
  const ImportResult r = Import({"accelerate_fsdp2.yaml"});
  const Job& j = r.job;
  EXPECT_EQ(r.files[0].second, ImportKind::kAccelerateConfig);
  EXPECT_EQ(j.cluster.num_gpus, 16);
  ExpectAt(j, "cluster.num_gpus", "accelerate_fsdp2.yaml", "num_processes");
  EXPECT_EQ(j.cluster.gpus_per_node, 8);  // 16 processes / 2 machines
  ExpectAt(j, "cluster.gpus_per_node", "accelerate_fsdp2.yaml", "num_machines");
  EXPECT_EQ(j.parallel.zero, 3);
  ExpectAt(j, "parallel.zero", "accelerate_fsdp2.yaml", "fsdp_reshard_after_forward");
  EXPECT_EQ(j.training.recompute, Recompute::kFull);
  ExpectAt(j, "training.recompute", "accelerate_fsdp2.yaml", "fsdp_activation_checkpointing");
  EXPECT_EQ(j.training.precision, Precision::kBf16);
  ExpectAt(j, "training.precision", "accelerate_fsdp2.yaml", "mixed_precision");
  EXPECT_EQ(j.parallel.offload, Offload::kNone);
  EXPECT_EQ(j.training.framework, Framework::kFsdp);
  const ImportNote* typo = FindNote(r.unknown, "fsdp_config.fsdp_use_orig_parms", "fsdp_use_orig_params");
  ASSERT_NE(typo, nullptr);
  EXPECT_EQ(typo->where.line, LineOf("accelerate_fsdp2.yaml", "fsdp_use_orig_parms"));
  EXPECT_NE(FindNote(r.notes, "fsdp_config.fsdp_state_dict_type", "no effect"), nullptr);
}

TEST(ImportAccelerate, Fsdp1HybridShardAndOffload) {
  const ImportResult r = Import({"accelerate_fsdp1_hybrid.yaml"});
  EXPECT_EQ(r.job.parallel.zero, 3);
  EXPECT_NE(FindNote(r.notes, "fsdp_config.fsdp_sharding_strategy", "HYBRID_SHARD"), nullptr);
  EXPECT_EQ(r.job.parallel.offload, Offload::kOptimizerParams);
  EXPECT_EQ(r.job.training.precision, Precision::kFp16);
  EXPECT_EQ(r.job.cluster.gpus_per_node, 8);
  EXPECT_NE(FindNote(r.notes, "deepspeed_config", "not applied"), nullptr);  // DEEPSPEED's block in an FSDP file
}

TEST(ImportAccelerate, DeepspeedConfigFileIsReadRelativeToTheYaml) {
  const ImportResult r = Import({"accelerate_ds_file.yaml"});
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[1].first, Fixture("ds_full.json"));
  EXPECT_EQ(r.job.parallel.zero, 2);
  ExpectAt(r.job, "parallel.zero", "ds_full.json", "\"stage\"");
  EXPECT_EQ(r.job.training.global_batch, 128);  // 2 x 4 x 16 processes: holds
}

TEST(ImportAccelerate, KeysNextToDeepspeedConfigFileAreRefused) {
  const Status st = ImportError({"accelerate_ds_file_conflict.yaml"});
  EXPECT_EQ(st.location().line, LineOf("accelerate_ds_file_conflict.yaml", "zero_stage"));
  EXPECT_NE(st.reason().find("deepspeed_config_file"), std::string::npos);
}

TEST(ImportAccelerate, ProcessesNotAMultipleOfMachines) {
  const Status st = ImportError({"accelerate_bad_machines.yaml"});
  EXPECT_EQ(st.location().line, LineOf("accelerate_bad_machines.yaml", "num_processes"));
}

TEST(ImportAccelerate, LaunchFlagsOverTheConfigAndTheScriptsBatch) {
  const ImportResult r = Import({"accelerate_launch.sh"});
  EXPECT_EQ(r.job.cluster.num_gpus, 16);
  ExpectAt(r.job, "cluster.num_gpus", "accelerate_launch.sh", "--num_processes");
  EXPECT_EQ(r.job.training.global_batch, 1 * 2 * 16);
  EXPECT_EQ(r.job.parallel.zero, 3);
}

// ---- torchtitan ----

TEST(ImportTorchtitan, KeysAndLines) {
  const ImportResult r = Import({"titan_llama3_8b.toml"});
  const Job& j = r.job;
  EXPECT_EQ(r.files[0].second, ImportKind::kTorchtitanToml);
  EXPECT_EQ(j.arch.name, "llama-3-8b");
  ExpectAt(j, "model.preset", "titan_llama3_8b.toml", "flavor");
  EXPECT_EQ(j.training.micro_batch, 2);
  ExpectAt(j, "training.micro_batch", "titan_llama3_8b.toml", "local_batch_size");
  EXPECT_EQ(j.training.global_batch, 64);
  ExpectAt(j, "training.global_batch", "titan_llama3_8b.toml", "global_batch_size");
  EXPECT_EQ(j.training.seq_len, 8192);
  ExpectAt(j, "training.seq_len", "titan_llama3_8b.toml", "seq_len");
  EXPECT_EQ(j.parallel.tp, 2);
  ExpectAt(j, "parallel.tp", "titan_llama3_8b.toml", "tensor_parallel_degree");
  EXPECT_EQ(j.parallel.zero, 3);  // shard -1: FSDP, reshard by default
  EXPECT_EQ(j.training.recompute, Recompute::kSelective);
  EXPECT_TRUE(j.training.compile);
  EXPECT_EQ(j.training.precision, Precision::kBf16);
  EXPECT_EQ(j.training.framework, Framework::kTorchtitan);
  EXPECT_DOUBLE_EQ(j.training.tokens, 1000.0 * 64 * 8192);
  ExpectAt(j, "training.tokens", "titan_llama3_8b.toml", "steps = 1000");
  const ImportNote* typo = FindNote(r.unknown, "parallelism.fsdp_reshard_after_foward", "fsdp_reshard_after_forward");
  ASSERT_NE(typo, nullptr);
  EXPECT_EQ(typo->where.line, LineOf("titan_llama3_8b.toml", "fsdp_reshard_after_foward"));
  EXPECT_NE(FindNote(r.notes, "metrics", "no effect"), nullptr);
}

TEST(ImportTorchtitan, LaunchLineGivesTheWorldAndOverridesSteps) {
  const ImportResult r = Import({"titan_launch.sh"});
  ASSERT_EQ(r.files.size(), 2u);
  Job j = r.job;
  EXPECT_EQ(j.cluster.num_gpus, 16);
  EXPECT_DOUBLE_EQ(j.training.tokens, 2000.0 * 64 * 8192);
  ExpectAt(j, "training.tokens", "titan_launch.sh", "--training.steps");
  ASSERT_TRUE(FinalizeJob(j).ok());
  EXPECT_EQ(j.parallel.dp, 8);  // shard -1 fills 16 / tp 2
  EXPECT_EQ(GradAccumSteps(j), 64 / (2 * 8));
}

TEST(ImportTorchtitan, TruncatedTomlIsAnErrorAtItsLine) {
  const Status st = ImportError({"titan_truncated.toml"});
  EXPECT_EQ(st.location().file, Fixture("titan_truncated.toml"));
  EXPECT_GE(st.location().line, 3);
}

// ---- Megatron ----

TEST(ImportMegatron, ScriptWithArraysVariablesAndContinuations) {
  const ImportResult r = Import({"megatron_gpt.sh"});
  const Job& j = r.job;
  EXPECT_EQ(r.files[0].second, ImportKind::kMegatronArgs);
  EXPECT_EQ(j.parallel.tp, 2);
  ExpectAt(j, "parallel.tp", "megatron_gpt.sh", "--tensor-model-parallel-size");
  EXPECT_EQ(j.parallel.pp, 2);
  EXPECT_EQ(j.parallel.vpp, 32 / (2 * 4));
  ExpectAt(j, "parallel.vpp", "megatron_gpt.sh", "--num-layers-per-virtual-pipeline-stage");
  EXPECT_TRUE(j.parallel.sequence_parallel);
  EXPECT_EQ(j.parallel.zero, 1);
  ExpectAt(j, "parallel.zero", "megatron_gpt.sh", "--use-distributed-optimizer");
  EXPECT_EQ(j.training.micro_batch, 2);
  EXPECT_EQ(j.training.global_batch, 64);  // $(( 2 * 4 * 8 ))
  ExpectAt(j, "training.global_batch", "megatron_gpt.sh", "--global-batch-size");
  EXPECT_EQ(j.training.precision, Precision::kBf16);
  EXPECT_EQ(j.training.recompute, Recompute::kSelective);
  EXPECT_EQ(j.training.seq_len, 2048);
  EXPECT_EQ(j.training.framework, Framework::kMegatron);
  EXPECT_EQ(j.cluster.num_gpus, 16);  // --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES
  EXPECT_EQ(j.cluster.gpus_per_node, 8);
  ExpectAt(j, "cluster.gpus_per_node", "megatron_gpt.sh", "--nproc_per_node");
  // The shape, as Megatron builds it: gelu MLP of 4 x hidden, LayerNorm with bias, learned positions,
  // tied embeddings, the vocabulary padded to a multiple of 128 x tp.
  EXPECT_EQ(j.arch.layers, 32);
  ExpectAt(j, "model.layers", "megatron_gpt.sh", "--num-layers ");
  EXPECT_EQ(j.arch.hidden, 2560);
  EXPECT_EQ(j.arch.heads, 32);
  EXPECT_EQ(j.arch.Ffn(), 4 * 2560);
  EXPECT_EQ(j.arch.vocab, 50432);
  EXPECT_EQ(j.arch.mlp, MlpKind::kGelu);
  EXPECT_EQ(j.arch.norm, NormKind::kLayerNorm);
  EXPECT_EQ(j.arch.position, PositionKind::kLearned);
  EXPECT_TRUE(j.arch.tied_embeddings);
  EXPECT_DOUBLE_EQ(j.training.tokens, 500.0 * 64 * 2048);
  EXPECT_NE(FindNote(r.unknown, "--data-path"), nullptr);
  EXPECT_NE(FindNote(r.notes, "--lr", "no effect"), nullptr);
  Job f = j;
  ASSERT_TRUE(FinalizeJob(f).ok());
  EXPECT_EQ(f.parallel.dp, 4);
}

TEST(ImportMegatron, FlagsFileAndMegatronFsdp) {
  const ImportResult r = Import({"megatron_args.txt"});
  const Job& j = r.job;
  EXPECT_EQ(j.parallel.tp, 4);
  EXPECT_EQ(j.parallel.cp, 2);
  ExpectAt(j, "parallel.cp", "megatron_args.txt", "--context-parallel-size");
  EXPECT_EQ(j.parallel.zero, 2);  // --data-parallel-sharding-strategy optim_grads
  ExpectAt(j, "parallel.zero", "megatron_args.txt", "--data-parallel-sharding-strategy");
  EXPECT_EQ(j.training.precision, Precision::kFp16);
  EXPECT_EQ(j.training.recompute, Recompute::kFull);
  EXPECT_EQ(j.training.seq_len, 4096);
  EXPECT_EQ(j.arch.layers, 0);  // no shape flags: no model
}

TEST(ImportMegatron, LayoutThatDoesNotDivideTheWorldIsAnErrorAtItsLine) {
  const Status st = ImportError({"megatron_bad_layout.sh"});
  EXPECT_EQ(st.location().line, LineOf("megatron_bad_layout.sh", "--tensor-model-parallel-size"));
  EXPECT_NE(st.reason().find("does not divide"), std::string::npos);
}

TEST(ImportMegatron, ModelFlagsAreNotAppliedOverAGivenModel) {
  const ImportResult r = Import({"megatron_gpt.sh"}, Base({{"model.preset", "llama-3-8b"}}));
  EXPECT_EQ(r.job.arch.name, "llama-3-8b");
  EXPECT_EQ(r.job.arch.layers, 32);
  EXPECT_EQ(r.job.parallel.vpp, 4);  // 32 layers of the preset / (pp 2 x 4)
  EXPECT_NE(FindNote(r.notes, "--hidden-size", "not used"), nullptr);
}

// ---- launch lines ----

TEST(ImportLaunch, DeepspeedLauncherReadsItsHostfile) {
  const ImportResult r = Import({"deepspeed_launch.sh"});
  EXPECT_EQ(r.files[0].second, ImportKind::kLaunchLine);
  EXPECT_EQ(r.job.cluster.num_gpus, 16);
  EXPECT_EQ(r.job.cluster.gpus_per_node, 8);
  EXPECT_EQ(r.job.set_keys.at("cluster.gpus_per_node").file, Fixture("hostfile"));
  EXPECT_EQ(r.job.training.global_batch, 128);  // ds_full.json: 2 x 4 x 16
}

TEST(ImportLaunch, TorchrunElasticUnresolvedAndEnvironment) {
  const std::string dir = ::testing::TempDir();
  const std::string p = dir + "/launch_env.sh";
  std::ofstream(p) << "torchrun --nnodes 1:4 --nproc-per-node $GPUS train.py\n";
  auto r = ImportFiles({p}, Job{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ImportNote* n = FindNote(r->unresolved, "--nproc-per-node", "$GPUS");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->where.line, 1);
  EXPECT_EQ(r->job.cluster.num_gpus, 0);  // unknown stays unknown
  std::ofstream(p) << "python -m torch.distributed.run --nnodes=2 --nproc_per_node=4 train.py --bf16\n";
  r = ImportFiles({p}, Job{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->job.cluster.num_gpus, 8);
  EXPECT_EQ(r->job.cluster.gpus_per_node, 4);
  EXPECT_EQ(r->job.training.precision, Precision::kBf16);
}

// ---- detection by content, and bad files ----

TEST(ImportDetect, ByContentNotByName) {
  const ImportResult r = Import({"ds_named.yaml"});  // a ds_config named .yaml
  EXPECT_EQ(r.files[0].second, ImportKind::kDeepspeedConfig);
  EXPECT_EQ(r.job.training.micro_batch, 4);
  EXPECT_EQ(r.job.training.precision, Precision::kFp16);
  struct C {
    const char* text;
    ImportKind kind;
  };
  const C cases[] = {
      {"{\"zero_optimization\": {\"stage\": 1}}", ImportKind::kDeepspeedConfig},
      {"{\"distributed_type\": \"FSDP\", \"num_processes\": 8}", ImportKind::kAccelerateConfig},
      {"compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n", ImportKind::kAccelerateConfig},
      {"# comment\n[training]\nseq_len = 4096\n", ImportKind::kTorchtitanToml},
      {"python pretrain_gpt.py --num-layers 2\n", ImportKind::kMegatronArgs},
      {"--tensor-model-parallel-size 2\n", ImportKind::kMegatronArgs},
      {"deepspeed train.py --deepspeed_config x.json\n", ImportKind::kLaunchLine},
      {"srun accelerate launch --num_processes 8 train.py\n", ImportKind::kLaunchLine},
  };
  for (const auto& c : cases) {
    auto k = DetectImportKind(c.text, "x.cfg");
    ASSERT_TRUE(k.ok()) << c.text << ": " << k.status().ToString();
    EXPECT_EQ(*k, c.kind) << c.text;
  }
  for (const char* bad : {"", "   \n", "{\"hello\": 1}", "just words\n", "pip install deepspeedx\n"}) {
    auto k = DetectImportKind(bad, "x.cfg");
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_EQ(k.status().location().file, "x.cfg");
    EXPECT_EQ(k.status().location().line, 1);
    EXPECT_NE(k.status().reason().find("expected a DeepSpeed"), std::string::npos);
  }
}

TEST(ImportDetect, GarbageAndTruncatedFilesAreLocatedErrors) {
  for (const char* f : {"garbage.txt", "truncated.json", "titan_truncated.toml", "unterminated.sh"}) {
    const Status st = ImportError({f});
    EXPECT_EQ(st.code(), StatusCode::kBadInput) << f;
    EXPECT_EQ(st.location().file, Fixture(f)) << f;
    EXPECT_GT(st.location().line, 0) << f << ": " << st.ToString();
  }
  EXPECT_EQ(ImportError({"unterminated.sh"}).location().line, LineOf("unterminated.sh", "\"1"));
}

// Every fixture cut at many points: a result or a located BadInput, never a crash or an exception.
TEST(ImportDetect, TruncationsOfEveryFixtureNeverCrash) {
  const std::string dir = ::testing::TempDir() + "/import-cuts";
  fs::create_directories(dir);
  int errors = 0, oks = 0;
  for (const auto& entry : fs::directory_iterator(Fixture(""))) {
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t cut = 0; cut < text.size(); cut += 5) {
      const std::string p = dir + "/" + entry.path().filename().string();
      std::ofstream(p, std::ios::trunc) << text.substr(0, cut);
      auto r = ImportFiles({p}, Job{});
      if (r.ok()) {
        ++oks;
        continue;
      }
      ++errors;
      EXPECT_EQ(r.status().code(), StatusCode::kBadInput) << p << " cut " << cut << ": " << r.status().ToString();
      EXPECT_FALSE(r.status().location().file.empty()) << p << " cut " << cut;
    }
  }
  EXPECT_GT(errors, 100);
  EXPECT_GT(oks, 100);
}

// ---- the binary: the must-be-true ----

struct Proc {
  int exit_code = -1;
  std::string out;
};

Proc Exec(const std::string& args) {
  Proc r;
  const std::string cmd = "cd " + Fixture("") + " && " + std::string(GPUPLAN_BINARY) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

void ExpectSameMemory(const std::string& imported, const std::string& hand) {
  const Proc a = Exec("memory " + imported + " --json");
  const Proc b = Exec("memory " + hand + " --json");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  ASSERT_EQ(b.exit_code, 0) << b.out;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  ASSERT_TRUE(ja.contains("per_gpu"));
  EXPECT_EQ(ja["per_gpu"], jb["per_gpu"]) << "imported: " << ja["per_gpu"].dump() << "\nby hand: " << jb["per_gpu"].dump();
  EXPECT_GT(ja["per_gpu"]["total_bytes"].get<double>(), 1e9);
  EXPECT_EQ(ja["model"]["params"], jb["model"]["params"]);
}

TEST(ImportCli, DeepspeedAutoConfigGivesTheHandWrittenJobsMemory) {
  ExpectSameMemory("--from ds_auto.json --model llama-3-8b --num-gpus 8 --micro-batch 2 --precision bf16", "hand_ds_auto.yaml");
}

TEST(ImportCli, AccelerateFsdpYamlGivesTheHandWrittenJobsMemory) {
  ExpectSameMemory("--from accelerate_fsdp2.yaml --model llama-3-8b --micro-batch 1 --global-batch 32", "hand_fsdp2.yaml");
  // The job file on top of --from: its keys win, the rest comes from the config.
  ExpectSameMemory("hand_fsdp2.yaml --from accelerate_fsdp2.yaml", "hand_fsdp2.yaml");
}

TEST(ImportCli, ImportPrintsAJobFileThatReadsBack) {
  const Proc p = Exec("import ds_auto.json --model llama-3-8b --num-gpus 8 --micro-batch 2");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("# read ds_auto.json (deepspeed config)"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("ds_auto.json:6: steps_per_print:"), std::string::npos) << p.out;
  auto back = ParseJobText(p.out, "printed.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << p.out;
  EXPECT_EQ(back->training.global_batch, 64);
  EXPECT_EQ(back->parallel.zero, 3);
  EXPECT_EQ(back->parallel.offload, Offload::kOptimizer);
}

TEST(ImportCli, JsonHasJobFilesUnknownUnresolvedNotes) {
  const Proc p = Exec("import ds_auto.json --json");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  const auto j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["job"]["parallel.zero"], "3");
  EXPECT_FALSE(j["job"].contains("model.layers"));  // no model given: no model keys
  EXPECT_EQ(j["files"][0]["kind"], "deepspeed config");
  bool steps = false;
  for (const auto& u : j["unknown"]) steps |= u["key"] == "steps_per_print" && u["location"] == "ds_auto.json:6";
  EXPECT_TRUE(steps) << j["unknown"].dump();
  EXPECT_FALSE(j["unresolved"].empty());
  EXPECT_FALSE(j["notes"].empty());
  const Proc bad = Exec("import ds_contradiction.json --num-gpus 8 --json");
  EXPECT_EQ(bad.exit_code, 1);
  const auto e = nlohmann::json::parse(bad.out);
  EXPECT_EQ(e["error"]["location"], "ds_contradiction.json:2");
  EXPECT_EQ(e["error"]["key"], "train_batch_size");
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// communication_data_type fp32 (DeepSpeed config.py get_communication_data_type; engine.py allreduce_bucket casts the
// bucket): training.fp32_allreduce at its line; fp16/bf16 leave it off; another value is an error at its line.
TEST(ImportDeepspeed, CommunicationDataTypeFp32IsAnFp32Allreduce) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpuplan-commtype-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& value) {
    const std::string path = (dir / name).string();
    std::ofstream(path) << "{\n  \"train_micro_batch_size_per_gpu\": 1,\n  \"fp16\": {\"enabled\": true},\n"
                           "  \"communication_data_type\": " << value << "\n}\n";
    return path;
  };
  auto r = ImportFiles({write("fp32.json", "\"FP32\"")}, Job{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->job.training.fp32_allreduce);
  EXPECT_EQ(r->job.set_keys.at("training.fp32_allreduce").line, 4);
  auto half = ImportFiles({write("fp16.json", "\"fp16\"")}, Job{});
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_FALSE(half->job.training.fp32_allreduce);
  auto bad = ImportFiles({write("bad.json", "\"fp64\"")}, Job{});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().location().line, 4);
  EXPECT_NE(bad.status().ToString().find("communication_data_type"), std::string::npos) << bad.status().ToString();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuplan
