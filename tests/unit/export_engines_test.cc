// The engine exporters (src/launch/export_engines.cc): every emitted file parsed with a real parser
// (nlohmann::json, yaml-cpp, toml++, bash) and checked against the plan's numbers; what a format
// cannot express is refused with the field, its value and the formats that can.
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <toml++/toml.h>

#include "gpuplan/engines.h"
#include "gpuplan/launch.h"
#include "gpuplan/plan.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;
using Files = std::map<std::string, Artifact>;

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

// A hand-built launch plan: the job's layout on nodes of cluster.gpus_per_node GPUs.
LaunchPlan MakePlan(const std::string& yaml) {
  LaunchPlan p;
  p.job = MakeJob(yaml);
  const int64_t per = std::min(p.job.cluster.num_gpus, p.job.cluster.gpus_per_node);
  p.gpus_per_node = per;
  p.nodes = p.job.cluster.num_gpus / per;
  p.grad_accum = GradAccumSteps(p.job);
  if (p.nodes > 1) p.network = *Cat().FindLink("ib-ndr");
  p.step_time_s = 1.5;
  p.tokens_per_s = 1e5;
  p.memory_per_gpu_bytes = 60e9;
  p.gpu_memory_bytes = 80e9;
  p.origin = "export_engines_test";
  return p;
}

Files Export(ExportFormat f, const LaunchPlan& p) {
  auto r = ExportEngine(f, p, Cat());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  Files out;
  if (!r.ok()) return out;
  for (const auto& a : *r) out[a.name] = a;
  return out;
}

// Runs bash on a script file and returns its stdout; the exit status goes to *rc.
std::string Bash(const std::string& command, int* rc) {
  FILE* f = ::popen(("bash -c '" + command + "' 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (f && std::fgets(buf.data(), buf.size(), f)) out += buf.data();
  const int st = f ? ::pclose(f) : -1;
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

// Writes the files to a fresh directory (as `gpuplan export --out` does) and returns it.
std::string WriteAll(const Files& files, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpuplan-engines-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::vector<Artifact> v;
  for (const auto& [name, a] : files) v.push_back(a);
  Status st = WriteArtifacts(v, dir.string());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return dir.string();
}

// The words launch.sh hands to torchrun, one per line (TORCHRUN replaced by printf).
std::vector<std::string> LaunchWords(const Files& files, const std::string& tag, const std::string& script = "launch.sh",
                                     const std::string& env = "") {
  const std::string dir = WriteAll(files, tag);
  int rc = 0;
  const std::string out = Bash(env + " TORCHRUN=\"printf %s\\\\n\" DEEPSPEED=\"printf %s\\\\n\" ACCELERATE=\"printf %s\\\\n\" bash " + dir + "/" +
                                   script,
                               &rc);
  EXPECT_EQ(rc, 0) << out;
  std::filesystem::remove_all(dir);
  std::vector<std::string> words;
  std::istringstream in(out);
  for (std::string w; std::getline(in, w);) words.push_back(w);
  return words;
}

// The value after `flag` in a word list ("" when absent; "<switch>" when the flag takes none).
std::string After(const std::vector<std::string>& w, const std::string& flag) {
  for (size_t i = 0; i < w.size(); ++i)
    if (w[i] == flag) return i + 1 < w.size() && w[i + 1].rfind("--", 0) != 0 ? w[i + 1] : "<switch>";
  return "";
}

bool Has(const std::vector<std::string>& w, const std::string& word) { return std::find(w.begin(), w.end(), word) != w.end(); }

const char* k2x8 = R"(model: {preset: llama-3-8b}
training: {micro_batch: 1, global_batch: 128, seq_len: 4096}
cluster: {num_gpus: 16, gpus_per_node: 8}
)";

std::string With(const std::string& base, const std::string& parallel) { return base + "parallel: {" + parallel + "}\n"; }

// 2 nodes x 8 with extra training keys.
std::string J2x8(const std::string& parallel, const std::string& training) {
  return "model: {preset: llama-3-8b}\ntraining: {micro_batch: 1, global_batch: 128, seq_len: 4096, " + training +
         "}\ncluster: {num_gpus: 16, gpus_per_node: 8}\nparallel: {" + parallel + "}\n";
}

// ---- deepspeed ----

TEST(ExportDeepspeed, BatchArithmeticStageAndPrecisionFromThePlan) {
  const LaunchPlan p = MakePlan(With(k2x8, "zero: 3"));
  ASSERT_EQ(p.job.parallel.dp, 16);
  ASSERT_EQ(p.grad_accum, 8);
  Files f = Export(ExportFormat::kDeepspeed, p);
  for (const char* name : {"ds_config.json", "hostfile", "launch.sh", "launch-deepspeed.sh", "fabric.env"}) ASSERT_TRUE(f.count(name)) << name;
  const auto c = nlohmann::json::parse(f["ds_config.json"].content);
  EXPECT_EQ(c["train_batch_size"], 128);
  EXPECT_EQ(c["train_micro_batch_size_per_gpu"], 1);
  EXPECT_EQ(c["gradient_accumulation_steps"], 8);
  EXPECT_EQ(c["train_micro_batch_size_per_gpu"].get<int>() * c["gradient_accumulation_steps"].get<int>() * p.job.parallel.dp,
            c["train_batch_size"].get<int>());
  EXPECT_TRUE(c["bf16"]["enabled"].get<bool>());
  EXPECT_FALSE(c.contains("fp16"));
  EXPECT_EQ(c["zero_optimization"]["stage"], 3);
  EXPECT_TRUE(c["zero_optimization"]["overlap_comm"].get<bool>());
  EXPECT_EQ(c["zero_optimization"]["reduce_bucket_size"], 500000000);
  EXPECT_FALSE(c["zero_optimization"].contains("offload_optimizer"));
  EXPECT_FALSE(c.contains("tensor_parallel"));
  EXPECT_EQ(c["_gpuplan"]["header"].get<std::vector<std::string>>(), HeaderLines(p));
  EXPECT_TRUE(f["launch.sh"].executable);
  EXPECT_TRUE(f["launch-deepspeed.sh"].executable);
  EXPECT_FALSE(f["ds_config.json"].executable);
}

TEST(ExportDeepspeed, HostfileHasOneLinePerNodeWithTheGpusPerNode) {
  Files f = Export(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "zero: 2")));
  std::istringstream in(f["hostfile"].content);
  std::vector<std::string> hosts;
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l[0] != '#') hosts.push_back(l);
  EXPECT_EQ(hosts, (std::vector<std::string>{"node-0 slots=8", "node-1 slots=8"}));
}

TEST(ExportDeepspeed, OffloadOnlyWhereTheStageAllowsIt) {
  auto c2 = nlohmann::json::parse(
      Export(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "zero: 2, offload: optimizer")))["ds_config.json"].content);
  EXPECT_EQ(c2["zero_optimization"]["offload_optimizer"]["device"], "cpu");
  EXPECT_FALSE(c2["zero_optimization"].contains("offload_param"));
  auto c3 = nlohmann::json::parse(
      Export(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "zero: 3, offload: optimizer+params")))["ds_config.json"].content);
  EXPECT_EQ(c3["zero_optimization"]["offload_optimizer"]["device"], "cpu");
  EXPECT_EQ(c3["zero_optimization"]["offload_param"]["device"], "cpu");
  // ZeRO-1 with optimizer offload: accelerate's DeepSpeed plugin refuses it below stage 2 (§1.1).
  const LaunchPlan z1 = MakePlan(With(k2x8, "zero: 1, offload: optimizer"));
  const std::string why = CannotExpress(ExportFormat::kDeepspeed, z1);
  EXPECT_NE(why.find("parallel.zero 1"), std::string::npos) << why;
  auto r = ExportEngine(ExportFormat::kDeepspeed, z1, Cat());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kBadInput);
  EXPECT_EQ(r.status().location().key, "--to");
  EXPECT_EQ(r.status().reason(), why);
}

TEST(ExportDeepspeed, PrecisionFlagsPerPrecision) {
  auto cfg = [](const std::string& training) {
    return nlohmann::json::parse(Export(ExportFormat::kDeepspeed, MakePlan(J2x8("zero: 2", training)))["ds_config.json"].content);
  };
  const auto fp16 = cfg("precision: fp16");
  EXPECT_TRUE(fp16["fp16"]["enabled"].get<bool>());
  EXPECT_FALSE(fp16.contains("bf16"));
  const auto fp32 = cfg("precision: fp32");
  EXPECT_FALSE(fp32.contains("fp16"));
  EXPECT_FALSE(fp32.contains("bf16"));
  const auto fp8 = cfg("precision: fp8");
  EXPECT_TRUE(fp8["bf16"]["enabled"].get<bool>());
  bool noted = false;
  for (const auto& n : fp8["_gpuplan"]["notes"]) noted |= n.get<std::string>().find("fp8") != std::string::npos;
  EXPECT_TRUE(noted) << fp8.dump();
}

// training.fp32_allreduce exports as communication_data_type fp32 (the key gpuplan import reads it from: import_test).
TEST(ExportDeepspeed, Fp32AllreduceIsTheCommunicationDataType) {
  auto cfg = [](const std::string& training) {
    return nlohmann::json::parse(Export(ExportFormat::kDeepspeed, MakePlan(J2x8("zero: 1", training)))["ds_config.json"].content);
  };
  EXPECT_EQ(cfg("precision: fp16, fp32_allreduce: true")["communication_data_type"], "fp32");
  EXPECT_FALSE(cfg("precision: fp16").contains("communication_data_type"));
}

TEST(ExportDeepspeed, AutoTpWithinANodeAtZeroTwoOrBelow) {
  auto c = nlohmann::json::parse(
      Export(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "tp: 2, zero: 2")))["ds_config.json"].content);
  EXPECT_EQ(c["tensor_parallel"]["autotp_size"], 2);
  EXPECT_EQ(c["train_batch_size"], 128);  // dp 8 x micro 1 x accumulation 16
  EXPECT_EQ(c["gradient_accumulation_steps"], 16);
  EXPECT_NE(CannotExpress(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "tp: 2, zero: 3"))).find("parallel.zero 3"), std::string::npos);
}

TEST(ExportDeepspeed, RefusesWhatItsConfigCannotSayNamingFieldValueAndFormats) {
  const std::string pp = CannotExpress(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "pp: 2, zero: 1")));
  EXPECT_NE(pp.find("parallel.pp 2"), std::string::npos) << pp;
  EXPECT_NE(pp.find("megatron"), std::string::npos) << pp;
  const std::string cp = CannotExpress(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "cp: 2, zero: 3")));
  EXPECT_NE(cp.find("parallel.cp 2"), std::string::npos) << cp;
  const std::string tp = CannotExpress(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "tp: 16")));
  EXPECT_NE(tp.find("across nodes"), std::string::npos) << tp;
  EXPECT_NE(tp.find("parallel.tp 16"), std::string::npos) << tp;
  EXPECT_TRUE(CannotExpress(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "zero: 3"))).empty());
}

TEST(ExportDeepspeed, LaunchShIsTheTorchrunCommandWithTheConfig) {
  LaunchPlan p = MakePlan(With(k2x8, "zero: 3"));
  p.script = "my train.py";
  p.script_args = {"--lr", "it's"};
  p.port = 29611;
  const auto w = LaunchWords(Export(ExportFormat::kDeepspeed, p), "ds");
  EXPECT_EQ(After(w, "--nnodes"), "2");
  EXPECT_EQ(After(w, "--nproc_per_node"), "8");
  EXPECT_EQ(After(w, "--rdzv_backend"), "c10d");
  EXPECT_EQ(After(w, "--rdzv_endpoint"), "localhost:29611");
  EXPECT_EQ(After(w, "--rdzv_id"), "gpuplan");
  EXPECT_TRUE(Has(w, "my train.py"));
  EXPECT_EQ(After(w, "--lr"), "it's");
  EXPECT_EQ(After(w, "--deepspeed"), "<switch>");
  EXPECT_NE(After(w, "--deepspeed_config").find("/ds_config.json"), std::string::npos);
  // The environment overrides the defaults.
  const auto w2 = LaunchWords(Export(ExportFormat::kDeepspeed, p), "ds2", "launch.sh", "GPUPLAN_HEAD=10.0.0.1 GPUPLAN_JOB_ID=j7");
  EXPECT_EQ(After(w2, "--rdzv_endpoint"), "10.0.0.1:29611");
  EXPECT_EQ(After(w2, "--rdzv_id"), "j7");
  const auto d = LaunchWords(Export(ExportFormat::kDeepspeed, p), "ds3", "launch-deepspeed.sh");
  EXPECT_NE(After(d, "--hostfile").find("/hostfile"), std::string::npos);
  EXPECT_EQ(After(d, "--num_nodes"), "2");
  EXPECT_EQ(After(d, "--num_gpus"), "8");
  // DeepSpeed's runner finds the master (the hostfile's first host) when --master_addr is absent.
  EXPECT_EQ(After(d, "--master_addr"), "");
  EXPECT_EQ(After(d, "--master_port"), "29611");
  const auto d2 = LaunchWords(Export(ExportFormat::kDeepspeed, p), "ds4", "launch-deepspeed.sh", "GPUPLAN_HEAD=10.0.0.9");
  EXPECT_EQ(After(d2, "--master_addr"), "10.0.0.9");
}

// ---- accelerate ----

YAML::Node AccelYaml(const Files& f, const std::string& name = "accelerate.yaml") {
  EXPECT_TRUE(f.count(name)) << name;
  return f.count(name) ? YAML::Load(f.at(name).content) : YAML::Node();
}

TEST(ExportAccelerate, ZeroThreeIsFsdp2FullShardWithAllProcesses) {
  const LaunchPlan p = MakePlan(With(k2x8, "zero: 3"));
  Files f = Export(ExportFormat::kAccelerate, p);
  const YAML::Node y = AccelYaml(f);
  EXPECT_EQ(y["distributed_type"].as<std::string>(), "FSDP");
  EXPECT_EQ(y["num_processes"].as<int>(), 16);
  EXPECT_EQ(y["num_machines"].as<int>(), 2);
  EXPECT_EQ(y["machine_rank"].as<int>(), 0);
  EXPECT_EQ(y["mixed_precision"].as<std::string>(), "bf16");
  EXPECT_EQ(y["fsdp_config"]["fsdp_version"].as<int>(), 2);
  EXPECT_TRUE(y["fsdp_config"]["fsdp_reshard_after_forward"].as<bool>());
  EXPECT_FALSE(y["fsdp_config"]["fsdp_offload_params"].as<bool>());
  EXPECT_FALSE(y["parallelism_config"]);
  const YAML::Node v1 = AccelYaml(f, "accelerate-fsdp1.yaml");
  EXPECT_EQ(v1["fsdp_config"]["fsdp_version"].as<int>(), 1);
  EXPECT_EQ(v1["fsdp_config"]["fsdp_sharding_strategy"].as<std::string>(), "FULL_SHARD");
  EXPECT_FALSE(f.count("launch-accelerate.sh"));  // launch.sh is the accelerate launch form
  const auto w = LaunchWords(f, "acc", "launch.sh", "GPUPLAN_NODE_RANK=1 GPUPLAN_HEAD=h0 PET_RDZV_CONF=is_host=0");
  ASSERT_FALSE(w.empty());
  EXPECT_EQ(w[0], "launch");
  EXPECT_NE(After(w, "--config_file").find("/accelerate.yaml"), std::string::npos);
  EXPECT_EQ(After(w, "--num_machines"), "2");
  EXPECT_EQ(After(w, "--rdzv_conf"), "is_host=0");  // the wrappers' is_host survives accelerate's own --rdzv_conf
  EXPECT_EQ(After(w, "--machine_rank"), "1");
  EXPECT_EQ(After(w, "--main_process_ip"), "h0");
  EXPECT_EQ(After(w, "--num_processes"), "16");
  EXPECT_EQ(After(w, "--per_device_train_batch_size"), "1");
  EXPECT_EQ(After(w, "--gradient_accumulation_steps"), "8");
  EXPECT_EQ(After(w, "--accelerate_config"), "");  // no argument a script does not know
  EXPECT_EQ(After(w, "--nnodes"), "");
}

TEST(ExportAccelerate, StageMapsToShardingOrDdpOrDeepspeed) {
  const YAML::Node z2 = AccelYaml(Export(ExportFormat::kAccelerate, MakePlan(With(k2x8, "zero: 2"))));
  EXPECT_EQ(z2["distributed_type"].as<std::string>(), "FSDP");
  EXPECT_FALSE(z2["fsdp_config"]["fsdp_reshard_after_forward"].as<bool>());
  const YAML::Node z2v1 = AccelYaml(Export(ExportFormat::kAccelerate, MakePlan(With(k2x8, "zero: 2"))), "accelerate-fsdp1.yaml");
  EXPECT_EQ(z2v1["fsdp_config"]["fsdp_sharding_strategy"].as<std::string>(), "SHARD_GRAD_OP");
  const YAML::Node z0 = AccelYaml(Export(ExportFormat::kAccelerate, MakePlan(With(k2x8, "zero: 0"))));
  EXPECT_EQ(z0["distributed_type"].as<std::string>(), "MULTI_GPU");
  EXPECT_FALSE(z0["fsdp_config"]);
  const YAML::Node z1 = AccelYaml(Export(ExportFormat::kAccelerate, MakePlan(With(k2x8, "zero: 1"))));
  EXPECT_EQ(z1["distributed_type"].as<std::string>(), "DEEPSPEED");
  EXPECT_EQ(z1["deepspeed_config"]["zero_stage"].as<int>(), 1);
  EXPECT_EQ(z1["deepspeed_config"]["gradient_accumulation_steps"].as<int>(), 8);
  EXPECT_EQ(z1["deepspeed_config"]["offload_optimizer_device"].as<std::string>(), "none");
  const YAML::Node off = AccelYaml(Export(ExportFormat::kAccelerate, MakePlan(With(k2x8, "zero: 3, offload: optimizer"))));
  EXPECT_EQ(off["distributed_type"].as<std::string>(), "DEEPSPEED");
  EXPECT_EQ(off["deepspeed_config"]["offload_optimizer_device"].as<std::string>(), "cpu");
  EXPECT_EQ(off["deepspeed_config"]["offload_param_device"].as<std::string>(), "none");
  const YAML::Node params = AccelYaml(Export(ExportFormat::kAccelerate, MakePlan(With(k2x8, "zero: 3, offload: optimizer+params"))));
  EXPECT_EQ(params["distributed_type"].as<std::string>(), "FSDP");
  EXPECT_TRUE(params["fsdp_config"]["fsdp_offload_params"].as<bool>());
}

TEST(ExportAccelerate, TensorAndContextParallelGoToParallelismConfigUnderFsdp2) {
  const LaunchPlan p = MakePlan(With(k2x8, "tp: 2, cp: 2, zero: 3, sequence_parallel: false"));
  Files f = Export(ExportFormat::kAccelerate, p);
  const YAML::Node y = AccelYaml(f);
  const YAML::Node pc = y["parallelism_config"];
  ASSERT_TRUE(pc);
  EXPECT_EQ(pc["parallelism_config_tp_size"].as<int>(), 2);
  EXPECT_EQ(pc["parallelism_config_cp_size"].as<int>(), 2);
  EXPECT_EQ(pc["parallelism_config_dp_shard_size"].as<int>(), 4);
  EXPECT_EQ(pc["parallelism_config_dp_replicate_size"].as<int>() * pc["parallelism_config_dp_shard_size"].as<int>() *
                pc["parallelism_config_tp_size"].as<int>() * pc["parallelism_config_cp_size"].as<int>(),
            y["num_processes"].as<int>());
  EXPECT_FALSE(f.count("accelerate-fsdp1.yaml"));  // tp/cp need FSDP2
  const std::string ddp_tp = CannotExpress(ExportFormat::kAccelerate, MakePlan(With(k2x8, "tp: 2, zero: 1, sequence_parallel: false")));
  EXPECT_NE(ddp_tp.find("parallel.zero 1"), std::string::npos) << ddp_tp;
  EXPECT_NE(CannotExpress(ExportFormat::kAccelerate, MakePlan(With(k2x8, "pp: 2, zero: 1"))).find("parallel.pp 2"), std::string::npos);
}

TEST(ExportAccelerate, RecomputeAndPrecisionFromTheJob) {
  const std::string job = std::string(R"(model: {preset: llama-3-8b}
training: {micro_batch: 2, global_batch: 64, seq_len: 2048, recompute: full, precision: fp32}
cluster: {num_gpus: 8, gpus_per_node: 8}
parallel: {zero: 3}
)");
  const YAML::Node y = AccelYaml(Export(ExportFormat::kAccelerate, MakePlan(job)));
  EXPECT_TRUE(y["fsdp_config"]["fsdp_activation_checkpointing"].as<bool>());
  EXPECT_EQ(y["mixed_precision"].as<std::string>(), "no");
  EXPECT_EQ(y["num_machines"].as<int>(), 1);
  EXPECT_EQ(y["num_processes"].as<int>(), 8);
}

// ---- torchrun ----

TEST(ExportTorchrun, LaunchShAloneWithNodesAndProcesses) {
  Files f = Export(ExportFormat::kTorchrun, MakePlan(With(k2x8, "tp: 2, pp: 2, zero: 1")));
  EXPECT_EQ(f.size(), 2u);
  ASSERT_TRUE(f.count("launch.sh"));
  EXPECT_TRUE(f.count("fabric.env"));
  const auto w = LaunchWords(f, "tr");
  EXPECT_EQ(After(w, "--nnodes"), "2");
  EXPECT_EQ(After(w, "--nproc_per_node"), "8");
  EXPECT_TRUE(Has(w, "train.py"));
  EXPECT_TRUE(CannotExpress(ExportFormat::kTorchrun, MakePlan(With(k2x8, "pp: 4, zero: 1"))).empty());
}

// ---- megatron ----

const char* k70b = R"(model: {preset: llama-3-70b}
training: {micro_batch: 1, global_batch: 64, seq_len: 4096, recompute: full, tokens: 2.0e9}
cluster: {num_gpus: 16, gpus_per_node: 8}
)";

std::vector<std::string> MegatronArgs(const Files& f) {
  const std::string dir = WriteAll(f, "mg");
  int rc = 0;
  const std::string out = Bash("source " + dir + "/megatron-args.sh && printf \"%s\\n\" \"${MEGATRON_ARGS[@]}\"", &rc);
  EXPECT_EQ(rc, 0) << out;
  std::filesystem::remove_all(dir);
  std::vector<std::string> w;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) w.push_back(l);
  return w;
}

TEST(ExportMegatron, FlagsCarryTheModelLayoutAndBatch) {
  const LaunchPlan p = MakePlan(With(k70b, "tp: 8, pp: 2, vpp: 5, zero: 1, sequence_parallel: true"));
  Files f = Export(ExportFormat::kMegatron, p);
  const auto a = MegatronArgs(f);
  EXPECT_EQ(After(a, "--num-layers"), "80");
  EXPECT_EQ(After(a, "--hidden-size"), "8192");
  EXPECT_EQ(After(a, "--num-attention-heads"), "64");
  EXPECT_EQ(After(a, "--group-query-attention"), "<switch>");
  EXPECT_EQ(After(a, "--num-query-groups"), "8");
  EXPECT_EQ(After(a, "--ffn-hidden-size"), std::to_string(p.job.arch.Ffn()));
  EXPECT_EQ(After(a, "--seq-length"), "4096");
  EXPECT_EQ(After(a, "--vocab-size"), "128256");
  EXPECT_EQ(After(a, "--tensor-model-parallel-size"), "8");
  EXPECT_EQ(After(a, "--pipeline-model-parallel-size"), "2");
  EXPECT_EQ(After(a, "--num-layers-per-virtual-pipeline-stage"), "8");  // 80 / (2 x 5)
  EXPECT_EQ(After(a, "--context-parallel-size"), "1");
  EXPECT_EQ(After(a, "--sequence-parallel"), "<switch>");
  EXPECT_EQ(After(a, "--recompute-granularity"), "full");
  EXPECT_EQ(After(a, "--recompute-method"), "uniform");
  EXPECT_EQ(After(a, "--recompute-num-layers"), "1");
  EXPECT_EQ(After(a, "--use-distributed-optimizer"), "<switch>");
  EXPECT_EQ(After(a, "--use-megatron-fsdp"), "");
  EXPECT_EQ(After(a, "--micro-batch-size"), "1");
  EXPECT_EQ(After(a, "--global-batch-size"), "64");
  EXPECT_EQ(After(a, "--train-iters"), std::to_string(static_cast<int64_t>(std::ceil(2.0e9 / (64.0 * 4096)))));
  EXPECT_EQ(After(a, "--bf16"), "<switch>");
  EXPECT_EQ(After(a, "--fp16"), "");
  // dp = 16 / (8 x 2) = 1: no data-parallel traffic to overlap.
  EXPECT_EQ(After(a, "--overlap-grad-reduce"), "");
  const auto w = LaunchWords(f, "mgl");
  EXPECT_TRUE(Has(w, "pretrain_gpt.py"));
  EXPECT_EQ(After(w, "--tensor-model-parallel-size"), "8");  // launch.sh passes MEGATRON_ARGS
  EXPECT_NE(f["launch.sh"].content.find("export CUDA_DEVICE_MAX_CONNECTIONS=1"), std::string::npos);
}

std::map<std::string, std::string> Overrides(const Files& f) {
  std::map<std::string, std::string> o;
  std::istringstream in(f.at("bridge-overrides.txt").content);
  for (std::string l; std::getline(in, l);) {
    if (l.empty() || l[0] == '#') continue;
    const auto eq = l.find('=');
    EXPECT_NE(eq, std::string::npos) << l;
    o[l.substr(0, eq)] = l.substr(eq + 1);
  }
  return o;
}

TEST(ExportMegatron, BridgeOverridesCarryTheSameNumbers) {
  Files f = Export(ExportFormat::kMegatron, MakePlan(With(k70b, "tp: 8, pp: 2, vpp: 5, zero: 1, sequence_parallel: true")));
  auto o = Overrides(f);
  EXPECT_EQ(o["model.tensor_model_parallel_size"], "8");
  EXPECT_EQ(o["model.pipeline_model_parallel_size"], "2");
  EXPECT_EQ(o["model.virtual_pipeline_model_parallel_size"], "5");
  EXPECT_EQ(o["model.sequence_parallel"], "true");
  EXPECT_EQ(o["model.recompute_granularity"], "full");
  EXPECT_EQ(o["ddp.use_distributed_optimizer"], "true");
  EXPECT_EQ(o["optimizer.use_distributed_optimizer"], "true");
  EXPECT_EQ(o["train.micro_batch_size"], "1");
  EXPECT_EQ(o["train.global_batch_size"], "64");
  EXPECT_EQ(o["mixed_precision"], "bf16_mixed");
}

TEST(ExportMegatron, ZeroThreeIsMegatronFsdpAndOptimizerOffloadIsCpuOffload) {
  Files f = Export(ExportFormat::kMegatron, MakePlan(With(k70b, "zero: 3")));
  const auto a = MegatronArgs(f);
  EXPECT_EQ(After(a, "--use-megatron-fsdp"), "<switch>");
  EXPECT_EQ(After(a, "--data-parallel-sharding-strategy"), "optim_grads_params");
  EXPECT_EQ(After(a, "--overlap-grad-reduce"), "<switch>");
  EXPECT_EQ(After(a, "--overlap-param-gather"), "<switch>");
  EXPECT_EQ(f["launch.sh"].content.find("export CUDA_DEVICE_MAX_CONNECTIONS=1"), std::string::npos);
  EXPECT_EQ(Overrides(f)["ddp.use_megatron_fsdp"], "true");
  const auto off = MegatronArgs(Export(ExportFormat::kMegatron, MakePlan(With(k70b, "zero: 2, offload: optimizer"))));
  EXPECT_EQ(After(off, "--optimizer-cpu-offload"), "<switch>");
  EXPECT_EQ(After(off, "--optimizer-offload-fraction"), "1.0");
  const std::string params = CannotExpress(ExportFormat::kMegatron, MakePlan(With(k70b, "zero: 3, offload: optimizer+params")));
  EXPECT_NE(params.find("parallel.offload optimizer+params"), std::string::npos) << params;
}

TEST(ExportMegatron, TensorParallelAcrossNodesIsExpressedWithAWarning) {
  Files f = Export(ExportFormat::kMegatron, MakePlan(With(k70b, "tp: 16, zero: 1, sequence_parallel: true")));
  EXPECT_NE(f["megatron-args.sh"].content.find("WARNING: tensor parallelism spans nodes"), std::string::npos);
  EXPECT_EQ(After(MegatronArgs(f), "--tensor-model-parallel-size"), "16");
}

TEST(ExportMegatron, Fp8IsHybridWithTheRecipe) {
  const std::string job = std::string(R"(model: {preset: llama-3-70b}
training: {micro_batch: 1, global_batch: 64, seq_len: 4096, precision: fp8, fp8_recipe: delayed}
cluster: {num_gpus: 16, gpus_per_node: 8}
parallel: {zero: 1}
)");
  Files f = Export(ExportFormat::kMegatron, MakePlan(job));
  const auto a = MegatronArgs(f);
  EXPECT_EQ(After(a, "--fp8-format"), "hybrid");
  EXPECT_EQ(After(a, "--fp8-recipe"), "delayed");
  EXPECT_EQ(After(a, "--bf16"), "<switch>");
  EXPECT_EQ(Overrides(f)["mixed_precision"], "bf16_with_fp8_delayed_scaling_mixed");
}

TEST(ExportMegatron, RefusesWhatPretrainGptCannotRun) {
  const std::string alibi = CannotExpress(ExportFormat::kMegatron, MakePlan("model: {preset: mpt-7b}\ncluster: {num_gpus: 8}\nparallel: {zero: 1}\n"));
  EXPECT_NE(alibi.find("model.position alibi"), std::string::npos) << alibi;
  const std::string lora = CannotExpress(
      ExportFormat::kMegatron, MakePlan("model: {preset: llama-3-8b}\ntraining: {method: lora}\ncluster: {num_gpus: 8}\nparallel: {zero: 1}\n"));
  EXPECT_NE(lora.find("training.method lora"), std::string::npos) << lora;
  const std::string rowwise = CannotExpress(ExportFormat::kMegatron, MakePlan(J2x8("zero: 1", "precision: fp8, fp8_recipe: rowwise")));
  EXPECT_NE(rowwise.find("training.fp8_recipe rowwise"), std::string::npos) << rowwise;
  auto r = ExportEngine(ExportFormat::kMegatron, MakePlan(J2x8("zero: 1", "precision: fp8, fp8_recipe: rowwise")), Cat());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kBadInput);
}

// Megatron-Core's interleaved schedule (megatron/core/pipeline_parallel/schedules.py at d98e8a6):
// a group G of micro-batches per virtual stage runs m micro-batches only when pp <= G <= m and
// m mod G is 0 or at least pp; G defaults to pp.
bool MegatronRunsInterleaved(int64_t m, int64_t pp, int64_t g) { return pp <= g && g <= m && (m % g == 0 || m % g >= pp); }

TEST(ExportMegatron, InterleavedGroupIsSetWhenTheDefaultCannotRun) {
  // 16 GPUs: tp 4 x pp 4, dp 1; global batch 10 at micro-batch 1 = 10 micro-batches, 10 mod 4 = 2 < pp.
  const std::string job = R"(model: {preset: llama-3-70b}
training: {micro_batch: 1, global_batch: 10, seq_len: 4096, tokens: 2.0e9}
cluster: {num_gpus: 16, gpus_per_node: 8}
parallel: {tp: 4, pp: 4, vpp: 5, zero: 1}
)";
  const LaunchPlan p = MakePlan(job);
  ASSERT_EQ(GradAccumSteps(p.job), 10);
  ASSERT_FALSE(MegatronRunsInterleaved(10, 4, 4));
  Files f = Export(ExportFormat::kMegatron, p);
  const auto a = MegatronArgs(f);
  const std::string g = After(a, "--microbatch-group-size-per-virtual-pipeline-stage");
  ASSERT_FALSE(g.empty()) << f["megatron-args.sh"].content;
  EXPECT_TRUE(MegatronRunsInterleaved(10, 4, std::stoll(g))) << g;
  EXPECT_EQ(g, "5");  // the smallest: 10 mod 5 = 0
  EXPECT_NE(f["megatron-args.sh"].content.find("# Interleaved pipeline: 10 micro-batches"), std::string::npos);
  EXPECT_EQ(Overrides(f)["model.microbatch_group_size_per_vp_stage"], g);
  EXPECT_NE(f["bridge-overrides.txt"].content.find("# Interleaved pipeline"), std::string::npos);
  // Every m from pp to 40 gets a group Megatron runs, and none where the default runs.
  for (int64_t m = 4; m <= 40; ++m) {
    const int64_t gm = MegatronMicrobatchGroup(m, 4);
    EXPECT_TRUE(MegatronRunsInterleaved(m, 4, gm)) << m << " " << gm;
    if (m % 4 == 0) {
      EXPECT_EQ(gm, 4) << m;
    }
  }
  // m mod pp = 0: the default group runs, no flag and no override.
  Files even = Export(ExportFormat::kMegatron, MakePlan(R"(model: {preset: llama-3-70b}
training: {micro_batch: 1, global_batch: 12, seq_len: 4096}
cluster: {num_gpus: 16, gpus_per_node: 8}
parallel: {tp: 4, pp: 4, vpp: 5, zero: 1}
)"));
  EXPECT_EQ(After(MegatronArgs(even), "--microbatch-group-size-per-virtual-pipeline-stage"), "");
  EXPECT_EQ(Overrides(even).count("model.microbatch_group_size_per_vp_stage"), 0u);
}

TEST(ExportMegatron, RefusesInterleavingWithFewerMicrobatchesThanStages) {
  // 2 micro-batches on pp 4: no group in [4, 2] exists.
  const LaunchPlan p = MakePlan(R"(model: {preset: llama-3-70b}
training: {micro_batch: 1, global_batch: 2, seq_len: 4096}
cluster: {num_gpus: 16, gpus_per_node: 8}
parallel: {tp: 4, pp: 4, vpp: 5, zero: 1}
)");
  const std::string why = CannotExpress(ExportFormat::kMegatron, p);
  EXPECT_NE(why.find("2 micro-batches < parallel.pp 4"), std::string::npos) << why;
  EXPECT_NE(why.find("--to torchtitan"), std::string::npos) << why;
  EXPECT_FALSE(ExportEngine(ExportFormat::kMegatron, p, Cat()).ok());
}

// ---- torchtitan ----

// The v0.2.x TOML (--engine-version 0.2); the default is torchtitan main's Python config.
Files ExportTitan02(LaunchPlan p) {
  p.engine_version = "0.2";
  return Export(ExportFormat::kTorchtitan, p);
}

toml::table Titan(const Files& f) {
  EXPECT_TRUE(f.count("torchtitan.toml"));
  try {
    return toml::parse(f.at("torchtitan.toml").content);
  } catch (const toml::parse_error& e) {
    ADD_FAILURE() << e.what() << "\n" << f.at("torchtitan.toml").content;
    return {};
  }
}

int64_t I(const toml::table& t, const char* path) { return t.at_path(path).value_or<int64_t>(-999); }
std::string S(const toml::table& t, const char* path) { return t.at_path(path).value_or<std::string>("?"); }

TEST(ExportTorchtitan, DegreesBatchAndScheduleFromThePlan) {
  const char* job = R"(model: {preset: llama-3-8b}
training: {micro_batch: 1, global_batch: 64, seq_len: 8192, recompute: selective, tokens: 1.0e9, compile: true}
cluster: {num_gpus: 16, gpus_per_node: 8}
parallel: {tp: 2, pp: 2, vpp: 2, zero: 3, sequence_parallel: true}
)";
  const LaunchPlan p = MakePlan(job);
  ASSERT_EQ(p.job.parallel.dp, 4);
  ASSERT_EQ(p.grad_accum, 16);
  Files f = ExportTitan02(p);
  const toml::table t = Titan(f);
  EXPECT_EQ(S(t, "model.name"), "llama3");
  EXPECT_EQ(S(t, "model.flavor"), "8B");
  EXPECT_EQ(I(t, "parallelism.data_parallel_shard_degree"), 4);
  EXPECT_EQ(I(t, "parallelism.data_parallel_replicate_degree"), 1);
  EXPECT_EQ(I(t, "parallelism.tensor_parallel_degree"), 2);
  EXPECT_EQ(I(t, "parallelism.pipeline_parallel_degree"), 2);
  EXPECT_EQ(S(t, "parallelism.pipeline_parallel_schedule"), "Interleaved1F1B");
  EXPECT_EQ(I(t, "parallelism.pipeline_parallel_layers_per_stage"), 8);  // 32 / (2 x 2)
  EXPECT_EQ(I(t, "parallelism.context_parallel_degree"), 1);
  // With pp the accumulation runs as pipeline microbatches of one local batch.
  EXPECT_EQ(I(t, "training.local_batch_size"), 16);
  EXPECT_EQ(I(t, "parallelism.pipeline_parallel_microbatch_size"), 1);
  EXPECT_EQ(I(t, "training.global_batch_size"), 64);
  EXPECT_EQ(I(t, "training.local_batch_size") * I(t, "parallelism.data_parallel_shard_degree"), I(t, "training.global_batch_size"));
  EXPECT_EQ(I(t, "training.seq_len"), 8192);
  EXPECT_EQ(I(t, "training.steps"), static_cast<int64_t>(std::ceil(1.0e9 / (64.0 * 8192))));
  EXPECT_EQ(S(t, "training.mixed_precision_param"), "bfloat16");
  EXPECT_EQ(S(t, "activation_checkpoint.mode"), "selective");
  EXPECT_EQ(S(t, "activation_checkpoint.selective_ac_option"), "op");  // alone, "selective" is every 2nd block in full
  EXPECT_EQ(I(t, "parallelism.pipeline_parallel_first_stage_less_layers"), 0);
  EXPECT_EQ(I(t, "parallelism.pipeline_parallel_last_stage_less_layers"), 0);
  EXPECT_TRUE(t.at_path("compile.enable").value_or(false));
  const auto w = LaunchWords(f, "tt");
  EXPECT_EQ(After(w, "-m"), "torchtitan.train");
  EXPECT_NE(After(w, "--job.config_file").find("/torchtitan.toml"), std::string::npos);
}

TEST(ExportTorchtitan, StagesMapToReplicateOrShard) {
  const toml::table z0 = Titan(ExportTitan02(MakePlan(With(k2x8, "zero: 0"))));
  EXPECT_EQ(I(z0, "parallelism.data_parallel_replicate_degree"), 16);
  EXPECT_EQ(I(z0, "parallelism.data_parallel_shard_degree"), 1);
  EXPECT_EQ(I(z0, "training.local_batch_size"), 1);
  EXPECT_EQ(I(z0, "training.steps"), 10000);
  const toml::table z2 = Titan(ExportTitan02(MakePlan(With(k2x8, "zero: 2"))));
  EXPECT_EQ(I(z2, "parallelism.data_parallel_shard_degree"), 16);
  EXPECT_EQ(S(z2, "parallelism.fsdp_reshard_after_forward"), "never");
  const std::string z1 = CannotExpress(ExportFormat::kTorchtitan, MakePlan(With(k2x8, "zero: 1")));
  EXPECT_NE(z1.find("parallel.zero 1"), std::string::npos) << z1;
  const std::string off = CannotExpress(ExportFormat::kTorchtitan, MakePlan(With(k2x8, "zero: 3, offload: optimizer")));
  EXPECT_NE(off.find("parallel.offload optimizer"), std::string::npos) << off;
  EXPECT_NE(CannotExpress(ExportFormat::kTorchtitan, MakePlan(With(k2x8, "tp: 16, zero: 3, sequence_parallel: true"))).find("across nodes"),
            std::string::npos);
}

TEST(ExportTorchtitan, ANonLlamaShapeSaysItsFlavorMustBeRegistered) {
  const toml::table t = Titan(ExportTitan02(MakePlan(R"(model: {preset: mistral-7b}
training: {micro_batch: 1, global_batch: 8}
cluster: {num_gpus: 8, gpus_per_node: 8}
parallel: {zero: 3}
)")));
  EXPECT_EQ(S(t, "model.flavor"), "gpuplan-custom");
  const std::string text =
      ExportTitan02(MakePlan("model: {preset: mistral-7b}\ncluster: {num_gpus: 8}\nparallel: {zero: 3}\n"))["torchtitan.toml"]
          .content;
  EXPECT_NE(text.find("register it"), std::string::npos);
  const toml::table q = Titan(ExportTitan02(MakePlan("model: {preset: qwen3-8b}\ncluster: {num_gpus: 8}\nparallel: {zero: 3}\n")));
  EXPECT_EQ(S(q, "model.name"), "qwen3");
  EXPECT_EQ(S(q, "model.flavor"), "gpuplan-custom");
  EXPECT_NE(text.find("layers 32, hidden 4096"), std::string::npos);
}

// ---- every engine ----

// Issue 16 item 2: every engine that can carries the plan's checkpoint policy: the interval in
// steps (interval / step time), the directory and async.
TEST(ExportCheckpoints, EveryEngineCarriesTheIntervalDirectoryAndAsync) {
  LaunchPlan p = MakePlan(With(k70b, "tp: 8, pp: 2, zero: 1, sequence_parallel: true"));
  p.checkpoint_interval_s = 1800;  // 30 min at 1.5 s per step: 1200 steps
  p.checkpoint_async = true;
  p.checkpoint_target = "local NVMe -> aws-s3-standard";
  auto a = MegatronArgs(Export(ExportFormat::kMegatron, p));
  EXPECT_EQ(After(a, "--save"), "checkpoints");
  EXPECT_EQ(After(a, "--save-interval"), "1200");
  EXPECT_EQ(After(a, "--async-save"), "<switch>");
  EXPECT_EQ(After(a, "--use-persistent-ckpt-worker"), "<switch>");
  auto o = Overrides(Export(ExportFormat::kMegatron, p));
  EXPECT_EQ(o["checkpoint.save_interval"], "1200");
  EXPECT_EQ(o["checkpoint.async_save"], "true");
  p.checkpoint_async = false;
  a = MegatronArgs(Export(ExportFormat::kMegatron, p));
  EXPECT_EQ(After(a, "--async-save"), "");
  // torchtitan [checkpoint] (v0.2.x keys).
  LaunchPlan t = MakePlan("model: {preset: llama-3-8b}\ntraining: {micro_batch: 1, global_batch: 64, seq_len: 8192, tokens: 1.0e9}\n"
                          "cluster: {num_gpus: 8, gpus_per_node: 8}\nparallel: {zero: 3}\n");
  t.checkpoint_interval_s = 600;
  t.checkpoint_async = true;
  const toml::table tt = Titan(ExportTitan02(t));
  EXPECT_EQ(tt.at_path("checkpoint.enable").value_or(false), true);
  EXPECT_EQ(I(tt, "checkpoint.interval"), 400);
  EXPECT_EQ(S(tt, "checkpoint.async_mode"), "async");
  EXPECT_EQ(S(tt, "checkpoint.folder"), "checkpoints");
  // DeepSpeed: the config's _gpuplan block; an HF Trainer script gets --save_steps on its command line.
  LaunchPlan d = MakePlan("model: {preset: llama-2-7b}\ntraining: {micro_batch: 2, global_batch: 64, seq_len: 2048, tokens: 1e9, "
                          "framework: hf-trainer}\ncluster: {num_gpus: 8, gpus_per_node: 8}\nparallel: {zero: 3}\n");
  d.checkpoint_interval_s = 900;
  Files f = Export(ExportFormat::kDeepspeed, d);
  const auto c = nlohmann::json::parse(f["ds_config.json"].content);
  EXPECT_EQ(c["_gpuplan"]["checkpoint"]["save_steps"], 600);
  EXPECT_EQ(c["_gpuplan"]["checkpoint"]["async"], false);
  const auto w = LaunchWords(f, "dsck");
  EXPECT_EQ(After(w, "--save_steps"), "600");
  EXPECT_EQ(After(w, "--output_dir"), "checkpoints");
}

TEST(ExportEngines, EveryLaunchScriptParsesAndSourcesTheFabric) {
  const LaunchPlan p = MakePlan(With(k2x8, "zero: 3"));
  for (ExportFormat e : {ExportFormat::kDeepspeed, ExportFormat::kAccelerate, ExportFormat::kTorchrun, ExportFormat::kMegatron,
                         ExportFormat::kTorchtitan}) {
    Files f = Export(e, p);
    ASSERT_TRUE(f.count("launch.sh")) << ToString(e);
    ASSERT_TRUE(f.count("fabric.env")) << ToString(e);
    const std::string& s = f["launch.sh"].content;
    EXPECT_EQ(s.rfind("#!/usr/bin/env bash\n" + CommentHeader(p, "# "), 0), 0u) << ToString(e);
    EXPECT_NE(s.find("set -euo pipefail"), std::string::npos);
    EXPECT_NE(s.find("source \"$(dirname \"$0\")/fabric.env\""), std::string::npos);
    const std::string dir = WriteAll(f, "n" + ToString(e));
    for (const auto& [name, a] : f) {
      if (!a.executable) continue;
      int rc = 0;
      const std::string out = Bash("bash -n " + dir + "/" + name, &rc);
      EXPECT_EQ(rc, 0) << ToString(e) << " " << name << ": " << out;
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(ExportEngines, PinsAreJobKeysThatMakeTheLayoutExpressible) {
  for (ExportFormat e : {ExportFormat::kDeepspeed, ExportFormat::kAccelerate, ExportFormat::kTorchrun, ExportFormat::kMegatron,
                         ExportFormat::kTorchtitan}) {
    Job j = MakeJob(std::string(k2x8));
    for (const auto& [k, v] : PinsForFormat(e)) {
      Status st = SetJobKey(j, k, v, {"pins", 0, k});
      EXPECT_TRUE(st.ok()) << ToString(e) << " " << k << "=" << v << ": " << st.ToString();
    }
  }
  // The format's own engine (data/engines.csv) as the job's framework.
  const auto ds = PinsForFormat(ExportFormat::kDeepspeed);
  EXPECT_NE(std::find(ds.begin(), ds.end(), std::make_pair(std::string("training.framework"), std::string("deepspeed"))), ds.end());
  const auto acc = PinsForFormat(ExportFormat::kAccelerate);
  EXPECT_NE(std::find(acc.begin(), acc.end(), std::make_pair(std::string("training.framework"), std::string("fsdp"))), acc.end());
  EXPECT_TRUE(PinsForFormat(ExportFormat::kTorchrun).empty());
}

TEST(ExportEngines, AWrapperIsNotAnEngine) {
  auto r = ExportEngine(ExportFormat::kSlurm, MakePlan(With(k2x8, "zero: 3")), Cat());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

// ---- the model's own numbers (rope, norm epsilon, dropout, vocab padding) in every engine ----

TEST(ExportMegatron, Llama3CarriesItsRotaryBaseNormEpsilonAndNoScaling) {
  const auto a = MegatronArgs(Export(ExportFormat::kMegatron, MakePlan(With(k70b, "tp: 8, pp: 2, zero: 1, sequence_parallel: true"))));
  EXPECT_EQ(After(a, "--rotary-base"), "500000");  // Megatron's default is 10000
  EXPECT_EQ(After(a, "--use-rope-scaling"), "");    // Llama 3.0 has none
  EXPECT_EQ(After(a, "--norm-epsilon"), "1e-05");
  EXPECT_EQ(After(a, "--position-embedding-type"), "rope");
  EXPECT_EQ(After(a, "--normalization"), "RMSNorm");
  EXPECT_EQ(After(a, "--swiglu"), "<switch>");
  EXPECT_EQ(After(a, "--untie-embeddings-and-output-weights"), "<switch>");
  EXPECT_EQ(After(a, "--disable-bias-linear"), "<switch>");
  EXPECT_EQ(After(a, "--add-qkv-bias"), "");
  EXPECT_EQ(After(a, "--attention-dropout"), "0.0");  // Megatron's default is 0.1
  EXPECT_EQ(After(a, "--hidden-dropout"), "0.0");
  // 128256 = 501 x 256: divisible by 32 x tp 8, not by 64 x 8, so no padding row is added.
  EXPECT_EQ(After(a, "--make-vocab-size-divisible-by"), "32");
  EXPECT_EQ(After(a, "--padded-vocab-size"), "128256");
}

TEST(ExportMegatron, Llama31CarriesItsRopeScaling) {
  const std::string job = R"(model: {preset: llama-3.1-70b}
training: {micro_batch: 1, global_batch: 64, seq_len: 8192}
cluster: {num_gpus: 16, gpus_per_node: 8}
parallel: {tp: 8, pp: 2, zero: 1, sequence_parallel: true}
)";
  Files f = Export(ExportFormat::kMegatron, MakePlan(job));
  const auto a = MegatronArgs(f);
  EXPECT_EQ(After(a, "--rotary-base"), "500000");
  EXPECT_EQ(After(a, "--use-rope-scaling"), "<switch>");
  EXPECT_EQ(After(a, "--rope-scaling-factor"), "8");
  // low 1, high 4, original 8192 are Megatron's fixed values: no warning.
  EXPECT_EQ(f["megatron-args.sh"].content.find("WARNING: llama3 rope"), std::string::npos);
  auto o = Overrides(f);
  EXPECT_EQ(o["model.rotary_base"], "500000");
  EXPECT_EQ(o["model.rope_scaling"], "true");
  EXPECT_EQ(o["model.rope_scaling_factor"], "8");
  EXPECT_EQ(o["model.layernorm_epsilon"], "1e-05");
  EXPECT_EQ(o["model.share_embeddings_and_output_weights"], "false");
  EXPECT_EQ(o["model.make_vocab_size_divisible_by"], "32");
  // Llama 3.2's factor 32 with other frequency factors than Megatron's fixed ones is said, not dropped.
  std::string odd_job = job;
  odd_job.replace(odd_job.find("llama-3.1-70b}"), 14, "llama-3.1-70b, rope_factor: 32, rope_high_freq_factor: 2}");
  auto odd = MakePlan(odd_job);
  const std::string text = Export(ExportFormat::kMegatron, odd)["megatron-args.sh"].content;
  EXPECT_NE(text.find("WARNING: llama3 rope scaling low 1, high 2"), std::string::npos) << text;
}

TEST(ExportMegatron, QkvBiasEpsilonTiedHeadAndVocabPaddingFollowTheModel) {
  const auto q = MegatronArgs(Export(ExportFormat::kMegatron, MakePlan(R"(model: {preset: qwen2.5-7b}
training: {micro_batch: 1, global_batch: 16, seq_len: 4096}
cluster: {num_gpus: 8, gpus_per_node: 8}
parallel: {tp: 4, zero: 1, sequence_parallel: true}
)")));
  EXPECT_EQ(After(q, "--add-qkv-bias"), "<switch>");
  EXPECT_EQ(After(q, "--rotary-base"), "1000000");
  EXPECT_EQ(After(q, "--norm-epsilon"), "1e-06");
  EXPECT_EQ(After(q, "--padded-vocab-size"), "152064");
  // gpt2: tied embeddings, biases, learned positions (no rotary flags), an odd vocab padded to tp.
  const auto g = MegatronArgs(Export(ExportFormat::kMegatron, MakePlan(R"(model: {preset: gpt2}
training: {method: pretrain, micro_batch: 1, global_batch: 16, seq_len: 1024}
cluster: {num_gpus: 2, gpus_per_node: 2}
parallel: {tp: 2, zero: 1}
)")));
  EXPECT_EQ(After(g, "--untie-embeddings-and-output-weights"), "");
  EXPECT_EQ(After(g, "--disable-bias-linear"), "");
  EXPECT_EQ(After(g, "--rotary-base"), "");
  EXPECT_EQ(After(g, "--make-vocab-size-divisible-by"), "1");
  EXPECT_EQ(After(g, "--padded-vocab-size"), "50258");
}

TEST(ExportMegatron, FineTuneSaysHowToLoadConvertedWeights) {
  Files f = Export(ExportFormat::kMegatron, MakePlan(With(k70b, "tp: 8, pp: 2, zero: 1, sequence_parallel: true")));
  const std::string& text = f["megatron-args.sh"].content;
  EXPECT_NE(text.find("scripts/conversion/convert.sh import"), std::string::npos);
  EXPECT_NE(text.find("--finetune --no-load-optim --no-load-rng"), std::string::npos);
  EXPECT_EQ(After(MegatronArgs(f), "--pretrained-checkpoint"), "");  // not set: nothing to load
  const std::string dir = WriteAll(f, "ft");
  int rc = 0;
  const std::string out =
      Bash("GPUPLAN_PRETRAINED=/ckpt/l3 && source " + dir + "/megatron-args.sh && printf \"%s\\n\" \"${MEGATRON_ARGS[@]}\"", &rc);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("--pretrained-checkpoint\n/ckpt/l3\n"), std::string::npos) << out;
  EXPECT_NE(Export(ExportFormat::kMegatron, MakePlan(With(k70b, "tp: 8, pp: 2, zero: 1, sequence_parallel: true")))["bridge-overrides.txt"]
                .content.find("checkpoint.pretrained_checkpoint"),
            std::string::npos);
  // Pre-training starts from nothing: no loading advice.
  std::string pre_job = With(k70b, "tp: 8, pp: 2, zero: 1, sequence_parallel: true");
  pre_job.replace(pre_job.find("training: {"), 11, "training: {method: pretrain, ");
  auto pre = Export(ExportFormat::kMegatron, MakePlan(pre_job));
  EXPECT_EQ(pre["megatron-args.sh"].content.find("GPUPLAN_PRETRAINED"), std::string::npos);
}

TEST(ExportTorchtitan, FlavorRopeDifferencesAreSaid) {
  const char* l3 = R"(model: {preset: llama-3-8b}
training: {micro_batch: 1, global_batch: 64, seq_len: 8192}
cluster: {num_gpus: 8, gpus_per_node: 8}
parallel: {zero: 3}
)";
  const std::string t3 = ExportTitan02(MakePlan(l3))["torchtitan.toml"].content;
  EXPECT_NE(t3.find("rope_theta 500000, norm_eps 1e-05, rope scaling none"), std::string::npos) << t3;
  EXPECT_NE(t3.find("WARNING: the built-in 8B flavor"), std::string::npos) << t3;  // its flavor scales, Llama 3.0 does not
  EXPECT_NE(t3.find("--checkpoint.initial_load_in_hf"), std::string::npos);
  std::string l31 = l3;
  l31.replace(l31.find("llama-3-8b"), 10, "llama-3.1-8b");
  const std::string t31 = ExportTitan02(MakePlan(l31))["torchtitan.toml"].content;
  EXPECT_EQ(t31.find("WARNING"), std::string::npos) << t31;
  EXPECT_NE(t31.find("rope scaling llama3 (factor 8, low 1, high 4, original 8192)"), std::string::npos) << t31;
}


// ---- issue 17: exports that start on the pinned upstream versions ----

// ZeRO-Offload with a client optimizer fails in deepspeed.initialize unless the config lets it
// (zero_force_ds_cpu_optimizer false); bf16 master weights + offload need DeepSpeed's own CPUAdam,
// which only a config optimizer block builds.
TEST(ExportDeepspeed, OffloadCarriesTheForceFlagOrAnOptimizerBlockAndNamesTheOptimizer) {
  for (const char* parallel : {"zero: 2, offload: optimizer", "zero: 3, offload: optimizer+params"}) {
    const auto c = nlohmann::json::parse(Export(ExportFormat::kDeepspeed, MakePlan(With(k2x8, parallel)))["ds_config.json"].content);
    EXPECT_TRUE(c.contains("zero_force_ds_cpu_optimizer")) << parallel;
    EXPECT_FALSE(c.value("zero_force_ds_cpu_optimizer", true)) << parallel;
    EXPECT_NE(c["_gpuplan"]["notes"].dump().find("DeepSpeedCPUAdam"), std::string::npos) << parallel;
  }
  const auto none = nlohmann::json::parse(
      Export(ExportFormat::kDeepspeed, MakePlan(J2x8("zero: 2, offload: optimizer", "master_weights: none")))["ds_config.json"].content);
  EXPECT_TRUE(none["bf16"]["bf16_master_weights_and_grads"].get<bool>());
  ASSERT_TRUE(none.contains("optimizer"));
  EXPECT_EQ(none["optimizer"]["type"], "AdamW");
  EXPECT_TRUE(none["optimizer"]["params"].is_object());
  EXPECT_NE(none["_gpuplan"]["notes"].dump().find("fp32_optimizer_states"), std::string::npos);
  const auto plain = nlohmann::json::parse(Export(ExportFormat::kDeepspeed, MakePlan(With(k2x8, "zero: 2")))["ds_config.json"].content);
  EXPECT_FALSE(plain.contains("optimizer"));
  EXPECT_FALSE(plain.contains("zero_force_ds_cpu_optimizer"));
}

// One node: no placeholder hostfile (the runner would ssh to it), the local GPUs, no --master_addr.
TEST(ExportDeepspeed, OneNodeLauncherNeedsNoHostfile) {
  Files f = Export(ExportFormat::kDeepspeed, MakePlan("model: {preset: llama-3-8b}\ncluster: {num_gpus: 8, gpus_per_node: 8}\nparallel: {zero: 3}\n"));
  EXPECT_FALSE(f.count("hostfile"));
  const auto d = LaunchWords(f, "ds1", "launch-deepspeed.sh");
  EXPECT_EQ(After(d, "--hostfile"), "");
  EXPECT_EQ(After(d, "--num_nodes"), "");
  EXPECT_EQ(After(d, "--num_gpus"), "8");
  EXPECT_EQ(After(d, "--master_addr"), "");
  EXPECT_NE(f["launch-deepspeed.sh"].content.find("written for DeepSpeed"), std::string::npos);
}

// Every accelerate kind: launch.sh (what the wrappers run) applies the YAML through accelerate launch.
TEST(ExportAccelerate, LaunchShRunsAccelerateLaunchForEveryKind) {
  for (const char* parallel : {"zero: 0", "zero: 1", "zero: 2", "zero: 3", "zero: 3, offload: optimizer"}) {
    Files f = Export(ExportFormat::kAccelerate, MakePlan(With(k2x8, parallel)));
    const auto w = LaunchWords(f, "accall", "launch.sh", "GPUPLAN_NODE_RANK=1 GPUPLAN_HEAD=h0");
    ASSERT_FALSE(w.empty()) << parallel;
    EXPECT_EQ(w[0], "launch") << parallel;
    EXPECT_NE(After(w, "--config_file").find("/accelerate.yaml"), std::string::npos) << parallel;
    EXPECT_EQ(After(w, "--machine_rank"), "1") << parallel;
    EXPECT_EQ(After(w, "--main_process_ip"), "h0") << parallel;
    EXPECT_EQ(After(w, "--main_process_port"), "29500") << parallel;
    EXPECT_EQ(After(w, "--accelerate_config"), "") << parallel;
  }
}

TEST(ExportAccelerate, MasterWeightsNoneIsSaidWithItsCost) {
  const std::string y = Export(ExportFormat::kAccelerate, MakePlan(J2x8("zero: 3", "master_weights: none")))["accelerate.yaml"].content;
  EXPECT_NE(y.find("master_weights none"), std::string::npos) << y;
  EXPECT_NE(y.find("GiB per GPU"), std::string::npos) << y;
  EXPECT_EQ(Export(ExportFormat::kAccelerate, MakePlan(With(k2x8, "zero: 3")))["accelerate.yaml"].content.find("master_weights"),
            std::string::npos);
}

TEST(ExportMegatron, BridgeFp16IsTheFp16MixedRecipe) {
  const std::string b = Export(ExportFormat::kMegatron, MakePlan(J2x8("zero: 1", "precision: fp16")))["bridge-overrides.txt"].content;
  EXPECT_NE(b.find("\nmixed_precision=fp16_mixed\n"), std::string::npos) << b;
  EXPECT_EQ(b.find("16-mixed"), std::string::npos) << b;
  EXPECT_NE(b.find("written for Megatron-Bridge"), std::string::npos);
}

// torchtitan's split (distributed/pipeline_parallel.py, v0.2.2 and main): stages = ceil((layers +
// first_less + last_less) / layers_per_stage), a multiple of pp, >= 2 a rank for interleaved schedules,
// and every stage at least one layer after the embedding/output weights.
void ExpectTitanStagesStart(int64_t layers, int64_t pp, int64_t vpp, int64_t per_stage, int64_t first_less, int64_t last_less,
                            const std::string& what) {
  ASSERT_GT(per_stage, 0) << what;
  const int64_t stages = (layers + first_less + last_less + per_stage - 1) / per_stage;
  EXPECT_EQ(stages % pp, 0) << what << ": " << stages << " stages over pp " << pp;
  EXPECT_GE(stages / pp, 2) << what;
  EXPECT_EQ(stages / pp, vpp) << what << ": the plan's virtual stages";
  const int64_t effective = layers + first_less + last_less;
  EXPECT_GE(effective / stages, std::max<int64_t>({1, first_less, last_less})) << what;
}

TEST(ExportTorchtitan, EveryInterleavedSplitPassesTorchtitansStageCheck) {
  struct M {
    const char* preset;
    int64_t layers;
  };
  int checked = 0;
  for (const M m : {M{"llama-3-8b", 32}, M{"llama-3-70b", 80}}) {
    for (int64_t pp : {2, 4, 5, 8}) {
      for (int64_t vpp : {2, 3, 4, 5, 8}) {
        if (m.layers % (pp * vpp) != 0) continue;
        const std::string yaml = std::string("model: {preset: ") + m.preset +
                                 "}\ntraining: {micro_batch: 1, global_batch: 64, seq_len: 4096}\ncluster: {num_gpus: " + std::to_string(2 * pp) +
                                 ", gpus_per_node: 8}\nparallel: {pp: " + std::to_string(pp) + ", vpp: " + std::to_string(vpp) + ", zero: 3}\n";
        const std::string what = std::string(m.preset) + " pp " + std::to_string(pp) + " vpp " + std::to_string(vpp);
        const LaunchPlan p = MakePlan(yaml);
        ASSERT_EQ(p.job.parallel.vpp, vpp) << what;
        const toml::table t = Titan(ExportTitan02(p));
        EXPECT_EQ(S(t, "parallelism.pipeline_parallel_schedule"), "Interleaved1F1B") << what;
        ExpectTitanStagesStart(m.layers, pp, vpp, I(t, "parallelism.pipeline_parallel_layers_per_stage"),
                               t.at_path("parallelism.pipeline_parallel_first_stage_less_layers").value_or<int64_t>(1),
                               t.at_path("parallelism.pipeline_parallel_last_stage_less_layers").value_or<int64_t>(1), what + " (0.2 TOML)");
        // main's Python config carries the same three numbers.
        const std::string py = Export(ExportFormat::kTorchtitan, p)["gpuplan_torchtitan.py"].content;
        auto num = [&](const std::string& key) -> int64_t {
          const size_t at = py.find("par." + key + " = ");
          return at == std::string::npos ? 1 : std::stoll(py.substr(at + key.size() + 7));
        };
        ExpectTitanStagesStart(m.layers, pp, vpp, num("pipeline_parallel_layers_per_stage"), num("pipeline_parallel_first_stage_less_layers"),
                               num("pipeline_parallel_last_stage_less_layers"), what + " (main)");
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 8);
}

// The default is torchtitan main's form: a Python module named by --module/--config, valid Python.
TEST(ExportTorchtitan, DefaultIsMainsPythonConfigAndVersionZeroTwoIsTheToml) {
  const char* job = R"(model: {preset: llama-3-8b}
training: {micro_batch: 1, global_batch: 64, seq_len: 8192, recompute: selective, tokens: 1.0e9}
cluster: {num_gpus: 16, gpus_per_node: 8}
parallel: {tp: 2, pp: 2, vpp: 2, zero: 3, sequence_parallel: true}
)";
  const LaunchPlan p = MakePlan(job);
  Files f = Export(ExportFormat::kTorchtitan, p);
  ASSERT_TRUE(f.count("gpuplan_torchtitan.py"));
  EXPECT_FALSE(f.count("torchtitan.toml"));
  const std::string py = f["gpuplan_torchtitan.py"].content;
  EXPECT_NE(py.find("written for torchtitan main (pytorch/torchtitan @ b5bcd76"), std::string::npos);
  EXPECT_NE(py.find("def gpuplan_config() -> Trainer.Config:"), std::string::npos);
  EXPECT_NE(py.find("config = llama3_8b()"), std::string::npos);
  EXPECT_NE(py.find("t.num_tokens_per_microbatch_per_dp_rank = 8192"), std::string::npos);
  EXPECT_NE(py.find("t.num_tokens_per_train_step = " + std::to_string(64 * 8192)), std::string::npos);
  EXPECT_NE(py.find("par.num_pp_microbatches = 16"), std::string::npos);
  EXPECT_NE(py.find("config.activation_checkpoint = SelectiveAC.Config()"), std::string::npos);
  const std::string dir = WriteAll(f, "ttpy");
  int rc = 0;
  const std::string out = Bash("python3 -c \"import ast,sys; ast.parse(open(sys.argv[1]).read())\" " + dir + "/gpuplan_torchtitan.py", &rc);
  EXPECT_EQ(rc, 0) << out << py;
  std::filesystem::remove_all(dir);
  const auto w = LaunchWords(f, "ttmain");
  EXPECT_EQ(After(w, "-m"), "torchtitan.train");
  EXPECT_EQ(After(w, "--module"), "gpuplan_torchtitan");
  EXPECT_EQ(After(w, "--config"), "gpuplan_config");
  EXPECT_EQ(After(w, "--job.config_file"), "");
  Files v02 = ExportTitan02(p);
  EXPECT_TRUE(v02.count("torchtitan.toml"));
  EXPECT_NE(v02["torchtitan.toml"].content.find("written for torchtitan v0.2.2"), std::string::npos);
}

TEST(ExportEngineVersion, TorchtitanAndMegatronTakeOneTheOthersRefuse) {
  LaunchPlan p = MakePlan(With(k2x8, "zero: 3"));
  p.engine_version = "0.2.2";
  EXPECT_TRUE(ExportEngine(ExportFormat::kTorchtitan, p, Cat()).ok());
  p.engine_version = "0.3";
  auto bad = ExportEngine(ExportFormat::kTorchtitan, p, Cat());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kBadInput);
  // megatron: the Megatron-Core release uneven pipeline stages are checked against (export_split_test.cc).
  LaunchPlan m = MakePlan(With(k2x8, "tp: 2, pp: 2"));
  m.engine_version = "core_v0.12.0";
  EXPECT_TRUE(ExportEngine(ExportFormat::kMegatron, m, Cat()).ok());
  m.engine_version = "latest";
  EXPECT_FALSE(ExportEngine(ExportFormat::kMegatron, m, Cat()).ok());
  p.engine_version = "0.2";
  auto acc = ExportEngine(ExportFormat::kAccelerate, p, Cat());
  ASSERT_FALSE(acc.ok());
  EXPECT_NE(acc.status().ToString().find("--engine-version"), std::string::npos) << acc.status().ToString();
}

}  // namespace
}  // namespace gpuplan
