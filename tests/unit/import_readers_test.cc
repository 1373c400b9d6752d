// One case per reader unit of gpuplan import (src/launch/import/): small files written here, each
// checking a rule of its reader (not a particular real file): torchtitan recompute and compile,
// accelerate distributed_type NO, DeepSpeed's own zero field names, DeepSpeed-Chat and LLaMA-Factory
// script arguments, Megatron's sequence-parallel warning and the vocabulary refusal, and the shell
// reader's words reaching the launch line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "gpuplan/job.h"
#include "gpuplan/job_keys.h"
#include "gpuplan/launch.h"

namespace gpuplan {
namespace {

namespace fs = std::filesystem;

class ImportReaders : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuplan_import_readers_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  Result<ImportResult> Import(const std::string& name, const std::string& text, const Job& base = Job{}) {
    return ImportFiles({Write(name, text)}, base);
  }
  static std::map<std::string, std::string> Keys(const ImportResult& r) {
    std::map<std::string, std::string> m;
    for (const auto& [k, v] : JobToKeys(r.job)) m[k] = v;
    return m;
  }
  static bool HasNote(const std::vector<ImportNote>& v, const std::string& words) {
    for (const auto& n : v)
      if (n.message.find(words) != std::string::npos) return true;
    return false;
  }
  fs::path dir_;
};

const char* kTitanHead = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\nseq_len = 4096\n";

TEST_F(ImportReaders, TorchtitanSelectiveWithoutOptionIsEverySecondBlock) {
  auto r = Import("a.toml", std::string(kTitanHead) + "[activation_checkpoint]\nmode = \"selective\"\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Keys(*r)["training.recompute"], "none");
  EXPECT_TRUE(HasNote(r->notes, "torchtitan's default '2'"));
  r = Import("b.toml", std::string(kTitanHead) + "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"1\"\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Keys(*r)["training.recompute"], "full");
  r = Import("c.toml", std::string(kTitanHead) + "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Keys(*r)["training.recompute"], "selective");
  r = Import("d.toml", std::string(kTitanHead) + "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"x\"\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().location().line, 9);
}

TEST_F(ImportReaders, TorchtitanCompileOfTheLossOnlyIsNotModelCompile) {
  auto r = Import("a.toml", std::string(kTitanHead) + "[compile]\nenable = true\ncomponents = [\"loss\"]\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->job.training.compile);
  r = Import("b.toml", std::string(kTitanHead) + "[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->job.training.compile);
  r = Import("c.toml", std::string(kTitanHead) + "[compile]\nenable = true\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->job.training.compile);
}

// A table header whose key starts with a character no key starts with is bad input at its line, never handed to the
// TOML parser (which assumes it away); the same characters inside strings and array values are data.
TEST_F(ImportReaders, TorchtitanTableHeaderWithoutAKeyIsRefusedAtItsLine) {
  for (const std::string header : {"[,model]", "[#x]", "[", "[[ ;a]]", "[\t{x}]"}) {
    auto r = Import("h.toml", std::string(kTitanHead) + "[job]\ndescription = \"a\"\n" + header + "\nname = \"x\"\n");
    ASSERT_FALSE(r.ok()) << header;
    EXPECT_EQ(r.status().code(), StatusCode::kBadInput) << header;
    EXPECT_EQ(r.status().location().line, 9) << header << ": " << r.status().ToString();
  }
  const std::string data = "[job]\ndescription = \"\"\"\n[,not a header]\n\"\"\"\n# [,comment]\n"
                           "[compile]\ncomponents = [\n  \"model\",\n]\n[metrics]\nlog_freq = 10\n";
  auto r = Import("ok.toml", std::string(kTitanHead) + data);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(ImportReaders, AccelerateNoIsOneGpu) {
  auto r = Import("a.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nnum_processes: 4\nmixed_precision: bf16\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->job.cluster.num_gpus, 1);
  EXPECT_TRUE(HasNote(r->notes, "accelerate runs one process"));
  r = Import("b.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 4\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->job.cluster.num_gpus, 4);
}

TEST_F(ImportReaders, DeepspeedZeroFieldsByTheirOwnNames) {
  auto r = Import("ds.json", "{\"zero_optimization\": {\"stage\": 3, \"max_live_parameters\": 1e9, \"max_reuse_distance\": 1e9,\n"
                             "\"gather_16bit_weights_on_model_save\": true, \"stage3_prefetch_bucket_size\": 1e6}}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->job.parallel.zero, 3);
  EXPECT_TRUE(r->unknown.empty()) << r->unknown[0].where.key;
}

TEST_F(ImportReaders, DeepspeedChatArguments) {
  auto r = Import("run.sh",
                  "ZERO_STAGE=$1\nif [ \"$ZERO_STAGE\" == \"\" ]; then\n  ZERO_STAGE=2\nfi\n"
                  "LORA=\"--lora_dim 64\"\n"
                  "deepspeed main.py --model_name_or_path x/y --zero_stage $ZERO_STAGE $LORA --offload --dtype bf16 \\\n"
                  "  --max_seq_len 1024 --per_device_train_batch_size 2 --deepspeed --output_dir out\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto k = Keys(*r);
  EXPECT_EQ(k["parallel.zero"], "2");
  EXPECT_EQ(k["parallel.offload"], "optimizer");  // parameters offload at ZeRO-3 only
  EXPECT_EQ(k["training.precision"], "bf16");
  EXPECT_EQ(k["training.seq_len"], "1024");
  EXPECT_EQ(k["training.method"], "lora");
  EXPECT_EQ(k["training.lora.rank"], "64");
  EXPECT_EQ(k["training.micro_batch"], "2");
  EXPECT_TRUE(HasNote(r->notes, "the first branch is read"));
  // Its defaults when the flags are left out: fp16, ZeRO 0, 512 tokens, 16 per GPU.
  r = Import("run2.sh", "deepspeed main.py --model_name_or_path x/y --lora_dim 0\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  k = Keys(*r);
  EXPECT_EQ(k["training.precision"], "fp16");
  EXPECT_EQ(k["training.seq_len"], "512");
  EXPECT_EQ(k["training.micro_batch"], "16");
  EXPECT_EQ(k["training.method"], "full");
}

TEST_F(ImportReaders, LlamaFactoryArguments) {
  auto r = Import("lf.sh", "torchrun --nproc_per_node 8 train.py --finetuning_type lora --lora_rank 32 --cutoff_len 4096 --bf16\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto k = Keys(*r);
  EXPECT_EQ(k["training.method"], "lora");
  EXPECT_EQ(k["training.lora.rank"], "32");
  EXPECT_EQ(k["training.seq_len"], "4096");
}

const char* kMegatronShape =
    "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 512 --max-position-embeddings 512 "
    "--micro-batch-size 1 --global-batch-size 32";

TEST_F(ImportReaders, MegatronSequenceParallelWithTp1IsAWarning) {
  auto r = Import("m.sh", std::string("torchrun --nproc_per_node 8 pretrain_gpt.py ") + kMegatronShape +
                              " --vocab-size 1024 --tensor-model-parallel-size 1 --sequence-parallel\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->job.parallel.sequence_parallel);
  EXPECT_TRUE(HasNote(r->notes, "warning: Megatron-LM disables sequence parallelism"));
  r = Import("m2.sh", std::string("torchrun --nproc_per_node 8 pretrain_gpt.py ") + kMegatronShape +
                          " --vocab-size 1024 --tensor-model-parallel-size 2 --sequence-parallel\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->job.parallel.sequence_parallel);
}

TEST_F(ImportReaders, MegatronWithoutVocabularyNamesWhatToPass) {
  auto r = Import("m.sh", std::string("torchrun --nproc_per_node 8 pretrain_gpt.py ") + kMegatronShape + " --tokenizer-type Llama2Tokenizer\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().location().line, 1);
  EXPECT_NE(r.status().reason().find("--vocab"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().reason().find("--model"), std::string::npos) << r.status().ToString();
  Job base;  // --vocab alone fills in the vocabulary; the script's shape is still read
  ASSERT_TRUE(SetJobKey(base, "model.vocab", "32000", {"command line", 0, "--vocab"}).ok());
  r = Import("m2.sh", std::string("torchrun --nproc_per_node 8 pretrain_gpt.py ") + kMegatronShape + "\n", base);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->job.arch.layers, 4);
  EXPECT_EQ(r->job.arch.vocab, 32000);
}

TEST_F(ImportReaders, ShellWordsReachTheLaunchLine) {
  auto r = Import("s.sh",
                  "NNODES=${SLURM_NNODES:-\"2\"}\nARGS=(\"--fp8-format hybrid\" \"--vocab-size 1024\")\n"
                  "torchrun --nnodes $NNODES --nproc_per_node 8 pretrain_gpt.py " + std::string(kMegatronShape) + " ${ARGS[@]}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->job.cluster.num_gpus, 16);
  EXPECT_EQ(r->job.training.precision, Precision::kFp8);
  EXPECT_GT(r->job.arch.vocab, 0);
}

}  // namespace
}  // namespace gpuplan
