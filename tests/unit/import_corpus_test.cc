// Every file of the import corpus (real configs and launch scripts from DeepSpeedExamples,
// LLaMA-Factory, axolotl, accelerate, torchtitan and Megatron-LM, in ../shared/fixtures/import-corpus
// with SOURCES.md) imports with the values the file states, or is refused with a location and what to
// pass. The expected values were read off each file by hand; the job is then finalized as `gpuplan
// import` does when the file gives a model.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuplan/job.h"
#include "gpuplan/job_keys.h"
#include "gpuplan/launch.h"

namespace gpuplan {
namespace {

namespace fs = std::filesystem;

std::string Corpus(const std::string& name) { return std::string(GPUPLAN_SHARED_DIR) + "/fixtures/import-corpus/" + name; }

struct Case {
  std::vector<std::string> files;
  std::map<std::string, std::string> want;  // job key -> value (JobToKeys form)
  std::vector<std::pair<std::string, std::string>> flags = {};  // base job flags
  std::string error = "";                                       // "" = imports; else words of the refusal
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> c = {
      // DeepSpeed configs
      {{"axo-zero1.json"}, {{"parallel.zero", "1"}}},
      {{"axo-zero2.json"}, {{"parallel.zero", "2"}, {"parallel.offload", "optimizer"}}},
      {{"axo-zero3_bf16.json"}, {{"parallel.zero", "3"}, {"training.precision", "bf16"}}},
      {{"axo-zero3_bf16_cpuoffload_all.json"}, {{"parallel.zero", "3"}, {"training.precision", "bf16"}, {"parallel.offload", "optimizer+params"}}},
      {{"axo-zero3_bf16_cpuoffload_params.json"}, {{"parallel.zero", "3"}, {"training.precision", "bf16"}, {"parallel.offload", "optimizer+params"}}},
      {{"dse-bingbert-bsz24.json"}, {{"training.precision", "fp16"}, {"training.micro_batch", "3"}, {"training.global_batch", "24"}}},
      {{"dse-hf-ds_config_fp16_z2.json"}, {{"parallel.zero", "2"}, {"training.precision", "fp16"}}},
      {{"lf-ds_z0_config.json"}, {{"parallel.zero", "0"}}},
      {{"lf-ds_z2_config.json"}, {{"parallel.zero", "2"}}},
      {{"lf-ds_z2_autotp_config.json"}, {{"parallel.zero", "2"}, {"parallel.tp", "2"}}},
      {{"lf-ds_z2_offload_config.json"}, {{"parallel.zero", "2"}, {"parallel.offload", "optimizer"}}},
      {{"lf-ds_z3_config.json"}, {{"parallel.zero", "3"}}},
      {{"lf-ds_z3_fp8_config.json"}, {{"parallel.zero", "3"}, {"parallel.offload", "optimizer"}}},
      {{"lf-ds_z3_offload_config.json"}, {{"parallel.zero", "3"}, {"parallel.offload", "optimizer+params"}}},
      // accelerate configs
      {{"acc-tmpl-deepspeed.yaml"}, {}, {}, "deepspeed_config_file"},
      {{"acc-tmpl-fsdp.yaml"}, {{"parallel.zero", "3"}}},
      {{"acc-tmpl-multi_gpu.yaml"}, {{"parallel.zero", "0"}, {"cluster.num_gpus", "2"}}},
      {{"acc-tmpl-multi_node.yaml"}, {{"cluster.num_gpus", "8"}, {"cluster.gpus_per_node", "4"}}},
      {{"acc-tmpl-fp8.yaml"}, {{"cluster.num_gpus", "1"}, {"training.precision", "fp8"}}},
      {{"acc-tmpl-single_accelerator.yaml"}, {{"cluster.num_gpus", "1"}, {"training.precision", "bf16"}}},
      {{"acc-tp_hsdp.yaml"}, {{"parallel.tp", "2"}, {"parallel.zero", "3"}}},
      {{"acc-cp.yaml"}, {{"parallel.cp", "8"}, {"parallel.zero", "3"}}},
      {{"lf-acc-fsdp_config.yaml"}, {{"parallel.zero", "3"}}},
      {{"lf-acc-fsdp2_config.yaml"}, {{"parallel.zero", "3"}}},
      {{"lf-acc-fsdp_config_offload.yaml"}, {{"parallel.zero", "3"}, {"parallel.offload", "optimizer+params"}}},
      {{"lf-acc-fsdp_config_multiple_nodes.yaml"}, {{"parallel.zero", "3"}, {"cluster.num_gpus", "16"}, {"cluster.gpus_per_node", "8"}}},
      {{"lf-acc-fsdp2_config_qwen35_moe.yaml"}, {{"parallel.zero", "3"}}},
      {{"pair-acc-deepspeed/config_yaml_templates/deepspeed.yaml"}, {{"parallel.zero", "1"}, {"training.precision", "fp16"}}},
      // torchtitan v0.2.2 TOMLs
      {{"tt-llama3_8b.toml"}, {{"model.preset", "llama-3-8b"}, {"training.recompute", "selective"}, {"training.seq_len", "8192"}}},
      {{"tt-llama3_70b.toml"}, {{"model.preset", "llama-3-70b"}, {"training.recompute", "full"}, {"parallel.tp", "8"}}},
      {{"tt-llama3_405b.toml"}, {{"model.preset", "llama-3.1-405b"}, {"training.recompute", "full"}, {"parallel.tp", "8"}}},
      {{"tt-debug_model.toml"}, {{"training.recompute", "none"}}, {{"model.preset", "llama-3-8b"}}},
      {{"tt-deepseek_v3_671b.toml"}, {{"training.compile", "false"}, {"training.recompute", "selective"}}, {{"model.preset", "llama-3-70b"}}},
      {{"tt-qwen3_32b.toml"}, {{"training.recompute", "full"}}, {{"model.preset", "llama-3-70b"}}},
      // Megatron-LM examples
      {{"mlm-llama3-8b-fp8.sh"}, {{"training.precision", "fp8"}, {"model.vocab", "128256"}, {"training.seq_len", "8192"}, {"parallel.tp", "1"},
                                  {"cluster.num_gpus", "8"}, {"training.global_batch", "128"}, {"model.layers", "32"}}},
      {{"mlm-fsdp-llama3-8b.sh"}, {{"training.precision", "fp8"}, {"parallel.zero", "3"}, {"model.vocab", "128256"}, {"training.seq_len", "8192"}}},
      {{"mlm-mixtral-8x7b.sh"}, {}, {}, "--vocab"},
      // one node (SLURM_NNODES unset: 1) cannot hold ep 8 with pp 4, as Megatron would also refuse; on 4 nodes it imports
      {{"mlm-mixtral-8x7b.sh"}, {}, {{"model.vocab", "32000"}}, "ep must be"},
      {{"mlm-mixtral-8x7b.sh"}, {{"parallel.tp", "1"}, {"parallel.pp", "4"}, {"parallel.ep", "8"}, {"parallel.sequence_parallel", "false"}},
       {{"model.vocab", "32000"}, {"cluster.num_gpus", "32"}}},
      {{"mlm-gpt3-175b.sh"}, {}, {}, "does not divide"},
      // DeepSpeed-Chat step 1 (their own flags build the DeepSpeed config)
      {{"dse-chat-step1-llama2-7b.sh"}, {{"parallel.zero", "3"}, {"training.seq_len", "512"}, {"training.method", "full"}, {"training.micro_batch", "4"},
                                         {"training.precision", "fp16"}, {"training.recompute", "full"}}},
      {{"dse-chat-step1-opt-66b-multinode.sh"}, {{"parallel.zero", "3"}, {"training.seq_len", "512"}, {"training.method", "lora"},
                                                 {"training.lora.rank", "128"}, {"training.micro_batch", "4"}}},
      // launch script + config pairs
      {{"pair-bingsquad-1bit/run_squad_deepspeed_onebitadam.sh"}, {{"training.global_batch", "96"}, {"training.micro_batch", "3"},
                                                                  {"training.seq_len", "384"}, {"training.precision", "fp16"}}},
      {{"pair-gpt2-zeroquant/bash_script/run_zero_quant.sh"}, {}, {}, "relative"},
  };
  return c;
}

// Every corpus file is in some case (a new file must come with its stated values).
TEST(ImportCorpus, EveryFileHasACase) {
  std::set<std::string> covered;
  for (const auto& c : Cases())
    for (const auto& f : c.files) covered.insert(f.substr(0, f.find('/')));
  for (const auto& e : fs::directory_iterator(Corpus(""))) {
    const std::string name = e.path().filename().string();
    if (name == "SOURCES.md") continue;
    EXPECT_TRUE(covered.count(name)) << name << " has no case";
  }
}

TEST(ImportCorpus, ValuesTheFilesState) {
  for (const auto& c : Cases()) {
    std::vector<std::string> paths;
    for (const auto& f : c.files) paths.push_back(Corpus(f));
    Job base;
    for (const auto& [k, v] : c.flags) ASSERT_TRUE(SetJobKey(base, k, v, {"command line", 0, "--" + FindJobKey(k)->flag}).ok());
    auto r = ImportFiles(paths, base);
    const std::string what = c.files[0];
    // As `gpuplan import` does: the job is finalized when the files give a model.
    Status st = r.ok() ? Status::Ok() : r.status();
    if (r.ok() && (r->job.arch.layers > 0 || r->job.arch.params_override > 0)) {
      Job check = r->job;
      st = FinalizeJob(check);
    }
    if (!c.error.empty()) {
      ASSERT_FALSE(st.ok()) << what << ": expected a refusal with '" << c.error << "'";
      EXPECT_NE(st.ToString().find(c.error), std::string::npos) << what << ": " << st.ToString();
      EXPECT_FALSE(st.location().file.empty()) << what << ": refusal without a location";
      EXPECT_GT(st.location().line, 0) << what << ": " << st.ToString();
      continue;
    }
    ASSERT_TRUE(st.ok()) << what << ": " << st.ToString();
    std::map<std::string, std::string> got;
    for (const auto& [k, v] : JobToKeys(r->job)) got[k] = v;
    for (const auto& [k, v] : c.want) EXPECT_EQ(got[k], v) << what << ": " << k;
    for (const auto& n : r->unknown)  // DeepSpeed's own zero field names (axolotl's) are not "unknown"
      if (n.where.key.rfind("zero_optimization.", 0) == 0)
        EXPECT_EQ(n.message.find("not a DeepSpeed key gpuplan knows"), std::string::npos) << what << ": " << n.where.key;
    for (const auto& n : r->unknown) EXPECT_NE(n.where.key, "]") << what << ": a test's bracket read as an argument";
  }
}

// Megatron's --sequence-parallel with tp 1: Megatron warns and turns it off; so does the import.
TEST(ImportCorpus, SequenceParallelWithTp1IsAWarning) {
  auto r = ImportFiles({Corpus("mlm-llama3-8b-fp8.sh")}, Job{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->job.parallel.sequence_parallel);
  bool warned = false;
  for (const auto& n : r->notes) warned |= n.where.key == "--sequence-parallel" && n.message.find("warning") != std::string::npos;
  EXPECT_TRUE(warned);
}

// "needs ... the number of GPUs" only when nothing gave it.
TEST(ImportCorpus, NoMissingGpuCountWhenNumProcessesGaveIt) {
  auto r = ImportFiles({Corpus("pair-acc-deepspeed/config_yaml_templates/deepspeed.yaml")}, Job{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const auto& n : r->unresolved) EXPECT_EQ(n.message.find("number of GPUs"), std::string::npos) << n.message;
}

}  // namespace
}  // namespace gpuplan
