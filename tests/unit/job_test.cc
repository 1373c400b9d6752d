#include <gtest/gtest.h>

#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gpuplan/catalog.h"
#include "gpuplan/csv.h"
#include "gpuplan/data.h"
#include "gpuplan/input_file.h"
#include "gpuplan/job.h"
#include "gpuplan/job_keys.h"

namespace gpuplan {
namespace {

Result<Job> Parse(const std::string& yaml) {
  auto j = ParseJobText(yaml, "job.yaml");
  if (!j.ok()) return j;
  Job job = *j;
  Status st = FinalizeJob(job);
  if (!st.ok()) return st;
  return job;
}

std::string Error(const std::string& yaml) {
  auto j = Parse(yaml);
  return j.ok() ? "" : j.status().ToString();
}

TEST(Job, ParsesAllSections) {
  auto j = Parse(R"(model: {preset: llama-2-7b}
training: {method: lora, seq_len: 4096, micro_batch: 2, global_batch: 64, precision: bf16,
           optimizer: adamw, recompute: full, flash_attention: true, lora: {rank: 8, alpha: 16, targets: [q_proj, v_proj]}}
parallel: {tp: 2, pp: 2, zero: 1}
cluster: {gpu: a100-sxm-80gb, num_gpus: 16, gpus_per_node: 8}
)");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->arch.name, "llama-2-7b");
  EXPECT_EQ(j->training.method, Method::kLora);
  EXPECT_EQ(j->training.lora.rank, 8);
  EXPECT_EQ(j->training.lora.targets.size(), 2u);
  EXPECT_EQ(j->parallel.dp, 4);  // 16 / (2*2)
  EXPECT_EQ(GradAccumSteps(*j), 8);  // 64 / (2*4)
}

TEST(Job, JsonWithSameKeys) {
  auto j = Parse(R"({"model": {"preset": "gpt2"}, "training": {"seq_len": 1024}, "cluster": {"num_gpus": 4}})");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->parallel.dp, 4);
  EXPECT_EQ(j->training.seq_len, 1024);
}

TEST(Job, InlineModelAndParams) {
  auto j = Parse("model: {layers: 2, hidden: 64, heads: 4, vocab: 100, mlp: gelu, norm: layernorm}\n");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->arch.Ffn(), 256);
  auto p = Parse("model: {params: 7.5e9}\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(CountParams(p->arch).total, 7500000000);
}

TEST(Job, ErrorsCarryFileLineAndKey) {
  EXPECT_EQ(Error("model: {preset: gpt2}\ntraining:\n  seq_len: 0\n"),
            "job.yaml:3: training.seq_len: must be in 1..16777216, got 0");
  EXPECT_EQ(Error("model: {preset: gpt2}\ntraining:\n  seq_lenn: 5\n"),
            "job.yaml:3: training.seq_lenn: unknown key (did you mean 'training.seq_len'?)");
  EXPECT_EQ(Error("model: {preset: gpt2}\nparallel:\n  tp: 5\n"),
            "job.yaml:3: parallel.tp: tp=5 does not divide heads=12");
  EXPECT_EQ(Error("model: {preset: gpt2}\nparallel:\n  tp: 2\n  dp: 2\ncluster:\n  num_gpus: 8\n"),
            "job.yaml:4: parallel.dp: dp*tp*pp*cp = 4 but num_gpus = 8");
  EXPECT_EQ(Error("model: {preset: gpt2}\ntraining:\n  micro_batch: -3\n"),
            "job.yaml:3: training.micro_batch: must be in 1..1048576, got -3");
  EXPECT_EQ(Error("model: {preset: gpt2}\ntraining:\n  precision: fp4\n"),
            "job.yaml:3: training.precision: expected one of fp32|fp16|bf16|fp8, got 'fp4'");
  EXPECT_EQ(Error("model: {preset: gpt2}\ntraining:\n  seq_len: [1, 2]\n"),
            "job.yaml:3: training.seq_len: expected a single value, got a list");
  EXPECT_EQ(Error("modle: {preset: gpt2}\n").substr(0, 11), "job.yaml:1:");
  EXPECT_NE(Error("training: {seq_len: 10}\n").find("no model"), std::string::npos);
  EXPECT_NE(Error("model: {preset: gpt2\n").find("job.yaml:"), std::string::npos);
  EXPECT_NE(Error("model: {preset: nope}\n").find("job.yaml:1: model.preset: unknown model preset"), std::string::npos);
  EXPECT_NE(Error("model: {preset: gpt2, params: 1e9}\n").find("not several"), std::string::npos);
}

// Regression: a refactor once dropped keys from the table silently; every key the issues name
// must parse from a job file and have a flag.
TEST(Job, EveryDocumentedKeyExists) {
  for (const char* k :
       {"model.preset", "model.config", "model.params", "model.layers", "model.hidden", "model.heads", "model.kv_heads",
        "model.ffn_hidden", "model.vocab", "model.mlp", "model.norm", "model.qkv_bias", "model.tied_embeddings",
        "model.position", "model.experts", "model.experts_per_token", "model.shared_experts", "model.dense_layers",
        "training.method", "training.seq_len", "training.micro_batch", "training.global_batch", "training.tokens",
        "training.precision", "training.optimizer", "training.recompute", "training.flash_attention",
        "training.lora.rank", "training.lora.alpha", "training.lora.targets", "training.data_bytes_per_token",
        "training.checkpoint_interval_min", "training.checkpoint_async", "training.checkpoint_full_state",
        "parallel.tp", "parallel.pp", "parallel.dp", "parallel.cp", "parallel.vpp", "parallel.ep",
        "parallel.sequence_parallel", "parallel.zero", "parallel.offload", "cluster.gpu", "cluster.num_gpus",
        "cluster.gpus_per_node", "cluster.intra_node", "cluster.network", "cluster.nics_per_node",
        "cluster.gpudirect_rdma", "cluster.oversubscription", "cluster.storage", "constraints.deadline_hours",
        "constraints.budget_usd", "constraints.max_gpus", "constraints.clouds", "constraints.gpus", "constraints.spot",
        "constraints.min_memory_headroom", "constraints.objective", "constraints.rerun_factor"}) {
    const JobKey* key = FindJobKey(k);
    ASSERT_NE(key, nullptr) << k;
    EXPECT_EQ(FindJobKeyByFlag(key->flag), key) << k;
  }
  auto j = Parse("model: {preset: gpt2}\ntraining: {checkpoint_interval_min: 30, checkpoint_async: true}\n");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->training.checkpoint_interval_min, 30);
}

TEST(Job, DuplicateKeysAreErrorsNotSilentOverrides) {
  EXPECT_EQ(Error("model: {preset: gpt2}\ntraining:\n  seq_len: 512\n  seq_len: 1024\n"),
            "job.yaml:4: training.seq_len: given twice (first on line 3)");
  EXPECT_EQ(Error("model: {preset: gpt2}\ntraining: {seq_len: 512}\ntraining: {micro_batch: 2}\n"),
            "job.yaml:3: training: section given twice (first on line 2)");
  EXPECT_EQ(Error("model:\n  preset: gpt2\n  vocab: 100\n  vocab: 200\n"), "job.yaml:4: model.vocab: given twice (first on line 3)");
}

TEST(Job, GlobalBatchMustDivide) {
  EXPECT_NE(Error("model: {preset: gpt2}\ntraining: {micro_batch: 3, global_batch: 10}\n").find("not a multiple"),
            std::string::npos);
}

TEST(Job, SetKeyFromFlagsMirrorsFile) {
  Job j;
  ASSERT_TRUE(SetJobKey(j, "model.preset", "llama-3-8b", {"command line", 0, "--model"}).ok());
  ASSERT_TRUE(SetJobKey(j, "parallel.zero", "3", {}).ok());
  ASSERT_TRUE(SetJobKey(j, "cluster.num_gpus", "8", {}).ok());
  ASSERT_TRUE(FinalizeJob(j).ok());
  EXPECT_EQ(j.parallel.dp, 8);
  Status bad = SetJobKey(j, "parallel.zero", "4", {"command line", 0, "--zero"});
  EXPECT_EQ(bad.ToString(), "command line: --zero: must be in 0..3, got 4");
}


TEST(Job, SamplesTimesEpochsTimesTokensPerSample) {
  // Seed 003: 50k samples x 512 tokens x 3 epochs.
  auto j = Parse("model: {preset: gpt2}\ntraining: {seq_len: 1024, samples: 50000, epochs: 3, tokens_per_sample: 512}\n");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_DOUBLE_EQ(j->training.tokens, 50000.0 * 3 * 512);
  // tokens_per_sample defaults to seq_len (each sample one padded sequence); epochs to 1.
  auto d = Parse("model: {preset: gpt2}\ntraining: {seq_len: 512, samples: 1000}\n");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_DOUBLE_EQ(d->training.tokens, 1000.0 * 512);
}

TEST(Job, SamplesFollowFlagsThatChangeSeqLen) {
  auto j = ParseJobText("model: {preset: gpt2}\ntraining: {seq_len: 512, samples: 1000, epochs: 2}\n", "job.yaml");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  Job job = *j;
  ASSERT_TRUE(SetJobKey(job, "training.seq_len", "1024", {"command line", 0, "--seq-len"}).ok());
  ASSERT_TRUE(FinalizeJob(job).ok());
  EXPECT_DOUBLE_EQ(job.training.tokens, 1000.0 * 2 * 1024);
  ASSERT_TRUE(FinalizeJob(job).ok()) << "finalizing twice is not 'tokens and samples both given'";
  EXPECT_DOUBLE_EQ(job.training.tokens, 1000.0 * 2 * 1024);
}

TEST(Job, TokensAndSamplesTogetherIsAnErrorWithBothLocations) {
  const std::string e = Error("model: {preset: gpt2}\ntraining:\n  tokens: 1e9\n  samples: 5000\n");
  EXPECT_NE(e.find("job.yaml:4: training.samples"), std::string::npos) << e;
  EXPECT_NE(e.find("training.tokens (job.yaml:3)"), std::string::npos) << e;
  EXPECT_NE(e.find("training.samples (job.yaml:4)"), std::string::npos) << e;
  EXPECT_NE(Error("model: {preset: gpt2}\ntraining: {epochs: 3}\n").find("needs training.samples"), std::string::npos);
  EXPECT_NE(Error("model: {preset: gpt2}\ntraining: {samples: 0}\n").find("training.samples"), std::string::npos);
  EXPECT_NE(Error("model: {preset: gpt2}\ntraining: {samples: 10, epochs: 0}\n").find("training.epochs"), std::string::npos);
}

TEST(Job, TabIndentationIsAPlainMessage) {
  const std::string e = Error("model:\n  preset: gpt2\ntraining:\n\tseq_len: 512\n");
  EXPECT_EQ(e, "job.yaml:4: tab character in indentation; YAML indents with spaces");
  // JSON may be indented with tabs.
  auto j = Parse("{\n\t\"model\": {\"preset\": \"gpt2\"},\n\t\"training\": {\"seq_len\": 512}\n}\n");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  // A tab after the indentation (inside a value or comment) is not indentation.
  EXPECT_TRUE(Parse("model:\n  preset: gpt2   # a\ttab\n").ok());
}

TEST(Job, ModelSaysHowToGetAConfig) {
  Job j;
  Status repo = SetJobKey(j, "model.preset", "meta-llama/Llama-2-7b-hf", {"command line", 0, "--model"});
  ASSERT_FALSE(repo.ok());
  EXPECT_NE(repo.reason().find("download its config.json"), std::string::npos) << repo.reason();
  EXPECT_NE(repo.reason().find("--model llama-2-7b"), std::string::npos) << repo.reason();
  Status missing = SetJobKey(j, "model.preset", "/no/such/config.json", {"command line", 0, "--model"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.reason().find("no such file '/no/such/config.json'"), std::string::npos) << missing.reason();
  Status cfg = SetJobKey(j, "model.config", "/no/such/config.json", {"command line", 0, "--config"});
  EXPECT_NE(cfg.reason().find("pass --model path/to/config.json"), std::string::npos) << cfg.reason();
  Status typo = SetJobKey(j, "model.preset", "mistral7b", {"command line", 0, "--model"});
  EXPECT_NE(typo.reason().find("did you mean 'mistral-7b'"), std::string::npos) << typo.reason();
}
// Issue 8 (robustness): the job side of the bad-input classes.

TEST(Job, SecondYamlDocumentIsAnError) {
  EXPECT_EQ(Error("model: {preset: gpt2}\n---\ntraining: {seq_len: 512}\n"),
            "job.yaml:3: a second YAML document (after '---'); a job file is one document");
  // A leading "---" or a trailing one with nothing after it hides nothing.
  EXPECT_TRUE(Parse("---\nmodel: {preset: gpt2}\n").ok());
  EXPECT_TRUE(Parse("model: {preset: gpt2}\n---\n").ok());
}

TEST(Job, DeepNestingIsAPlainMessage) {
  // Deep enough for yaml-cpp's own guard ("bad file") and within it (caught by the walk).
  EXPECT_EQ(Error("model: " + std::string(5000, '[') + std::string(5000, ']') + "\n"),
            "job.yaml:1: nesting deeper than 64 levels");
  const std::string e = Error("model: {preset: gpt2}\ntraining: {lora: {targets: " + std::string(100, '[') +
                              std::string(100, ']') + "}}\n");
  EXPECT_EQ(e, "job.yaml:2: nesting deeper than 64 levels");
  std::string block = "model:\n";
  for (int i = 1; i < 80; ++i) block += std::string(2 * i, ' ') + "k" + std::to_string(i) + ":\n";
  EXPECT_NE(Error(block).find("nesting deeper than 64 levels"), std::string::npos) << Error(block);
}

// A few lines of aliases expand to 10^12 values on a walk: refused by count, not walked.
std::string BillionLaughs(const std::string& first) {
  std::string t = first + "x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 12; ++i) {
    t += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) t += (k ? ", *a" : "*a") + std::to_string(i - 1);
    t += "]\n";
  }
  return t;
}

TEST(Job, YamlAliasExpansionIsRefusedNotWalked) {
  alarm(60);  // the walk was exponential: a hang fails by SIGALRM instead of blocking the run
  const std::string e = Error(BillionLaughs("model: {preset: gpt2}\n"));
  alarm(0);
  EXPECT_NE(e.find("more than 100000 values (YAML aliases expanding?)"), std::string::npos) << e;
}

// The fuzzer's yaml-cpp LoadAll hangs (fuzz/regressions/job): the parser reads one document with
// Load and finds a second document in the text, so these end (as bad input) instead of looping.
TEST(Job, FuzzedLoadAllHangsEndAsBadInput) {
  alarm(60);
  for (const char* name : {"yaml-loadall-hang-comma-after-flow-map.yaml", "yaml-loadall-hang-comma-after-adjacent-quotes.yaml"}) {
    std::ifstream f(std::string(GPUPLAN_SOURCE_DIR) + "/fuzz/regressions/job/" + name, std::ios::binary);
    ASSERT_TRUE(f.good()) << name;
    std::stringstream text;
    text << f.rdbuf();
    auto j = ParseJobText(text.str(), name);
    EXPECT_FALSE(j.ok()) << name;
  }
  alarm(0);
  EXPECT_NE(Error("model: {preset: gpt2}\n...\ntraining: {seq_len: 512}\n").find("a second YAML document (after '...')"), std::string::npos);
  EXPECT_TRUE(Parse("---\nmodel: {preset: gpt2}\n...\n# trailing comment\n").ok());
}

TEST(Job, StrayTopLevelCommaIsRefusedNotAHang) {
  // yaml-cpp loops forever on these: refused before it sees them (alarm: a hang fails, not blocks).
  alarm(60);
  for (const char* text : {"{},", ",", "{model: {preset: gpt2}, training: {seq_len: 512}},", "\"x\",",
                           "- 1\n,", "  ,", "--- {},", "{} # c\n,", "... ,?", "%x\n  !,", "!!map {},", "{\"model\": {\"preset\": \"gpt2\"}\n},\n"}) {
    const std::string e = Error(text);
    EXPECT_NE(e.find("a ',' outside any [ ] or { } list"), std::string::npos) << text << ": " << e;
  }
  alarm(0);
  // Commas inside brackets, quotes, plain scalars and block scalars are text.
  EXPECT_TRUE(Parse("model: {preset: gpt2, name: \"a, b\"}\ntraining: {lora: {targets: [q_proj, v_proj,]}}\n").ok());
  EXPECT_TRUE(Parse("model:\n  preset: gpt2\n  name: |\n    , first\n    , second\n").ok());
  EXPECT_TRUE(Parse("{\n  \"model\": {\"preset\": \"gpt2\"}\n, \"training\": {\"seq_len\": 512}\n}\n").ok());
  EXPECT_TRUE(Parse("\xEF\xBB\xBF{\"model\": {\"preset\": \"gpt2\"},\n \"training\": {\"seq_len\": 512}}\n").ok());  // BOM
}

TEST(Job, NulByteIsAPlainMessage) {
  EXPECT_EQ(Error(std::string("model:\n  preset: gp\0t2\n", 22)),
            "job.yaml:2: NUL byte in the file (not a text file?); inputs are UTF-8 text");
}

TEST(Job, NumbersAreDecimalWholeAndFinite) {
  for (const char* v : {"0x800", "512abc", "inf", "nan", "1e999", "5 12"}) {
    const std::string e = Error(std::string("model: {preset: gpt2}\ntraining:\n  seq_len: ") + v + "\n");
    EXPECT_EQ(e.rfind("job.yaml:3: training.seq_len: ", 0), 0u) << v << ": " << e;
  }
  Job j;
  EXPECT_FALSE(SetJobKey(j, "training.tokens", "1e9abc", {"command line", 0, "--tokens"}).ok());
  EXPECT_FALSE(SetJobKey(j, "training.lora.alpha", "0x10", {"command line", 0, "--lora-alpha"}).ok());
  EXPECT_FALSE(SetJobKey(j, "training.lora.alpha", "-5", {"command line", 0, "--lora-alpha"}).ok());
  EXPECT_TRUE(SetJobKey(j, "training.tokens", "2.5e9", {"command line", 0, "--tokens"}).ok());
  EXPECT_EQ(j.training.tokens, 2.5e9);
}

TEST(Job, ZeroKvHeadsOrExpertsGivenIsAnError) {
  // 0 would read as "same as heads" / "dense": not what the file said.
  EXPECT_EQ(Error("model: {layers: 2, hidden: 64, heads: 4, kv_heads: 0, vocab: 100, mlp: gelu}\n").rfind(
                "job.yaml:1: model.kv_heads: ", 0),
            0u);
  EXPECT_EQ(Error("model: {preset: mixtral-8x7b, experts: 0}\n").rfind("job.yaml:1: model.experts: ", 0), 0u);
  EXPECT_NE(Error("model: {preset: mixtral-8x7b, experts: 0}\n").find("silently dense"), std::string::npos);
  EXPECT_TRUE(Parse("model: {preset: gpt2, experts: 0}\n").ok());  // dense stays dense: nothing lost
  // MoE-only keys on a dense model say so instead of being ignored.
  EXPECT_EQ(Error("model: {preset: gpt2, experts_per_token: 2}\n"),
            "job.yaml:1: model.experts_per_token: applies to a MoE model only; give model.experts too");
  EXPECT_EQ(Error("model: {preset: gpt2, moe_ffn_hidden: 128}\n").rfind("job.yaml:1: model.moe_ffn_hidden: ", 0), 0u);
}

TEST(Job, ParamsAtTheDocumentedMaximumDoNotOverflow) {
  for (const char* p : {"9e11", "1e12", "3.3e13", "1e15"}) {
    auto j = Parse(std::string("model: {params: ") + p + "}\n");
    ASSERT_TRUE(j.ok()) << p << ": " << j.status().ToString();
    const ParamCounts c = CountParams(j->arch);
    EXPECT_EQ(c.total, static_cast<int64_t>(std::stod(p))) << p;
    EXPECT_GE(c.attn_per_layer, 0) << p;
    EXPECT_GE(c.dense_mlp_per_layer, 0) << p;
  }
  EXPECT_NE(Error("model: {params: 1.1e15}\n").find("model.params"), std::string::npos);
}

TEST(Job, ParamCountOverflowFromAShapeIsBadInputAtTheKey) {
  // Each dimension is in range; their product is not (it wrapped to garbage before).
  const std::string e = Error(
      "model:\n  layers: 16777216\n  hidden: 1048576\n  heads: 8192\n  ffn_hidden: 16777216\n  vocab: 1000\n  mlp: gelu\n");
  EXPECT_EQ(e.rfind("job.yaml:2: model.layers: 16777216 layers of up to ", 0), 0u) << e;
  EXPECT_NE(e.find("the limit is 1e+15"), std::string::npos) << e;
  const std::string v = Error("model:\n  layers: 1\n  hidden: 16777216\n  heads: 1\n  ffn_hidden: 8\n  vocab: 8\n  mlp: gelu\n");
  EXPECT_EQ(v.rfind("job.yaml:3: model.hidden: one layer holds 1.13e+15 parameters", 0), 0u) << v;
  // LoRA adapters are counted the same way.
  const std::string l = Error(
      "model: {layers: 16777216, hidden: 8, heads: 1, vocab: 10, experts: 65536, experts_per_token: 1, ffn_hidden: 8, mlp: gelu}\n"
      "training: {method: lora, lora: {rank: 65536, targets: [all-linear]}}\n");
  EXPECT_EQ(l.rfind("job.yaml:2: training.lora.rank: rank 65536 gives more adapter parameters than the 1e15 limit", 0), 0u)
      << l;  // the base model (1.4e14) is accepted; its adapters would not be exact
}

TEST(Job, EmptyNameInAListIsAnError) {
  // ["", aws] lost the empty item and planned as if only aws were given.
  EXPECT_EQ(Error("model: {preset: gpt2}\nconstraints:\n  clouds: [\"\", aws]\n"),
            "job.yaml:3: constraints.clouds: empty name in the list");
}

TEST(Job, PrecisionsThePlannerMayChoose) {
  auto j = Parse("model: {preset: gpt2}\nconstraints:\n  precisions: [bf16, fp8, bf16]\n");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->constraints.precisions, (std::vector<Precision>{Precision::kBf16, Precision::kFp8}));
  Job flags;
  ASSERT_TRUE(SetJobKey(flags, "constraints.precisions", "fp8", {"command line", 0, "--precisions"}).ok());
  EXPECT_EQ(flags.constraints.precisions, std::vector<Precision>{Precision::kFp8});
  EXPECT_EQ(FindJobKeyByFlag("precisions"), FindJobKey("constraints.precisions"));
  EXPECT_EQ(Error("model: {preset: gpt2}\nconstraints:\n  precisions: [bf16, fp4]\n"),
            "job.yaml:3: constraints.precisions: expected one of bf16|fp16|fp8|fp32, got 'fp4'");
  EXPECT_EQ(Error("model: {preset: llama-2-7b}\ntraining: {method: lora}\nconstraints:\n  precisions: [bf16, fp8]\n"),
            "job.yaml:4: constraints.precisions: fp8 is planned for full fine-tunes and pretraining only (method is lora)");
  EXPECT_EQ(Error("model: {preset: gpt2}\nconstraints:\n  precisions: [\"\", bf16]\n"),
            "job.yaml:3: constraints.precisions: empty name in the list");
  // An fp8 recipe is fine when fp8 is one of the precisions the planner may choose.
  EXPECT_EQ(Error("model: {preset: gpt2}\ntraining: {fp8_recipe: delayed}\nconstraints: {precisions: [bf16, fp8]}\n"), "");
}

TEST(Job, ConfigFileProblemsAreSaidAtTheKeyThatNamedIt) {
  EXPECT_EQ(Error("model:\n  config: /dev/zero\n"),
            "job.yaml:2: model.config: '/dev/zero': cannot read a character device: gpuplan reads job, config and CSV "
            "inputs from regular files only");
  // A shape error with no line of its own (ffn_hidden derived as 4 x hidden) gets the model's line.
  const std::string e = Error("model:\n  layers: 32\n  hidden: 16777216\n  heads: 16\n  vocab: 32000\n  mlp: gelu\n");
  EXPECT_EQ(e.rfind("job.yaml:3: model.ffn_hidden: 67108864 is beyond 2^24", 0), 0u) << e;
}

TEST(Job, UnknownCatalogIdsAreErrorsAtTheirKeyInEveryCommand) {
  // memory ignored an unknown network, link or storage that estimate refused.
  auto catalog = LoadCatalog(CatalogOptions{});
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  for (const char* key : {"network", "intra_node", "storage"}) {
    auto j = Parse(std::string("model: {preset: gpt2}\ncluster:\n  ") + key + ": no-such-id\n");
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    const Status st = CheckCatalogIds(*j, *catalog);
    EXPECT_EQ(st.ToString().rfind(std::string("job.yaml:3: cluster.") + key + ": unknown", 0), 0u) << st.ToString();
  }
  auto ok = Parse("model: {preset: gpt2}\ncluster: {network: tcp-25g, intra_node: pcie4-x16}\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(CheckCatalogIds(*ok, *catalog).ok());
}

TEST(Job, InputFilesAreRegularFilesUnderACap) {
  auto dev = ParseJobFile("/dev/zero");
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().ToString(),
            "/dev/zero: cannot read a character device: gpuplan reads job, config and CSV inputs from regular files only");
  auto dir = ParseJobFile(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().reason().find("a directory"), std::string::npos) << dir.status().ToString();
  auto missing = ParseJobFile("/no/such/job.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().reason().find("cannot open file"), std::string::npos);
  // The cap: a file over it is refused with its size (the limit given small to keep the test fast).
  const std::string path = ::testing::TempDir() + "/gpuplan_cap_test.yaml";
  std::ofstream(path) << std::string(2000, '#') << "\n";
  auto big = ReadInputFile(path, 1024);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().reason(), "file is 2001 bytes, over the 1024-byte input limit (kMaxInputFileBytes)");
  EXPECT_TRUE(ReadInputFile(path).ok());
  EXPECT_EQ(kMaxInputFileBytes, int64_t{64} << 20);
  // A FIFO is refused without waiting for a writer (O_NONBLOCK open, then fstat).
  const std::string fifo = ::testing::TempDir() + "/gpuplan_fifo_test";
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  alarm(30);  // a blocking open would hang: the alarm turns that into a failure
  auto f = ParseJobFile(fifo);
  alarm(0);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().reason().find("a FIFO"), std::string::npos) << f.status().ToString();
  std::filesystem::remove(fifo);
}

// Every value a built-in preset uses is accepted by the key (and flag) of the same name: each
// cell of data/models.csv whose column is a model.* key (0 = unset and blank cells aside), and
// each key a custom copy of every preset writes back (gpuplan's own job writer).
TEST(Job, EveryPresetValueIsAcceptedByItsFlag) {
  auto t = ParseCsv(std::string(EmbeddedData("models.csv")), "data/models.csv");
  ASSERT_TRUE(t.ok());
  int checked = 0;
  for (const auto& row : t->rows) {
    CsvRecord r(*t, row);
    for (size_t c = 0; c < t->header.size(); ++c) {
      const std::string key = "model." + t->header[c], v = row.fields[c];
      if (!FindJobKey(key) || key == "model.name" || v.empty() || v == "0") continue;
      Job j;
      Status st = SetJobKey(j, key, v, r.Where(t->header[c]));
      EXPECT_TRUE(st.ok()) << r.Str("id") << " " << key << "=" << v << ": " << st.ToString();
      ++checked;
    }
  }
  EXPECT_GT(checked, 200);
  for (const Arch& preset : Presets()) {
    Job j;
    j.arch = preset;
    j.arch.name = preset.name + "-copy";  // not the preset: the writer spells the shape out
    for (const auto& [key, v] : JobToKeys(j)) {
      if (key.rfind("model.", 0) != 0) continue;
      Job k;
      Status st = SetJobKey(k, key, v, {"written", 0, key});
      EXPECT_TRUE(st.ok()) << preset.name << " " << key << "=" << v << ": " << st.ToString();
    }
  }
  Job g;
  EXPECT_TRUE(SetJobKey(g, "model.mlp", "geglu", {"command line", 0, "--mlp"}).ok());
  EXPECT_EQ(g.arch.mlp, MlpKind::kGeGlu);
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// A serving job (model + cluster + serving) needs no training keys: FinalizeJob accepts it.
TEST(ServingKeys, ServingOnlyJobFinalizes) {
  auto j = Parse("model: {preset: llama-3-8b}\ncluster: {gpu: h100-sxm-80gb, num_gpus: 2}\nparallel: {tp: 1}\n"
                 "serving: {engine: vllm, weights: int4-awq, kv_dtype: fp8, gpu_memory_utilization: 0.85,\n"
                 "          max_model_len: 4096, max_num_seqs: 64, max_num_batched_tokens: 2048,\n"
                 "          input_len: 1000, output_len: 200, input_len_p90: 2000, output_len_p90: 400, request_rate: 5}\n");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  const ServingSpec& s = j->serving;
  EXPECT_EQ(s.engine, "vllm");
  EXPECT_EQ(s.weights, WeightFormat::kInt4Awq);
  EXPECT_EQ(s.kv_dtype, KvDtype::kFp8);
  EXPECT_DOUBLE_EQ(s.gpu_memory_utilization, 0.85);
  EXPECT_EQ(s.max_model_len, 4096);
  EXPECT_EQ(s.max_num_seqs, 64);
  EXPECT_EQ(s.max_num_batched_tokens, 2048);
  EXPECT_DOUBLE_EQ(s.input_len_p90, 2000);
  EXPECT_DOUBLE_EQ(s.output_len_p90, 400);
  EXPECT_EQ(s.load, ServingLoad::kRequestRate);
  EXPECT_DOUBLE_EQ(s.request_rate, 5);
  EXPECT_EQ(j->parallel.dp, 2);  // replicas
}

TEST(ServingKeys, DefaultsAreTheHeaders) {
  auto j = Parse("model: {preset: llama-3-8b}\n");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->serving.load, ServingLoad::kConcurrency);
  EXPECT_EQ(j->serving.weights, WeightFormat::kBf16);
  EXPECT_EQ(j->serving.engine, "vllm");
}

TEST(ServingKeys, BadValuesAreLocated) {
  const std::string head = "model: {preset: llama-3-8b}\nserving:\n";
  EXPECT_EQ(Error(head + "  weights: int3\n"),
            "job.yaml:3: serving.weights: expected one of bf16|fp16|fp8|int8|int4-awq|int4-gptq|fp4, got 'int3'");
  EXPECT_EQ(Error(head + "  kv_dtype: int8\n"), "job.yaml:3: serving.kv_dtype: expected one of auto|fp8, got 'int8'");
  EXPECT_EQ(Error(head + "  gpu_memory_utilization: 1.2\n"), "job.yaml:3: serving.gpu_memory_utilization: must be in (0, 1], got 1.2");
  EXPECT_EQ(Error(head + "  gpu_memory_utilization: 0\n"), "job.yaml:3: serving.gpu_memory_utilization: must be in (0, 1], got 0");
  EXPECT_NE(Error(head + "  max_model_len: 0\n").find("job.yaml:3: serving.max_model_len:"), std::string::npos);
  EXPECT_NE(Error(head + "  max_num_seqs: 1.5\n").find("job.yaml:3: serving.max_num_seqs: expected a whole number"), std::string::npos);
  EXPECT_NE(Error(head + "  input_len: 0\n").find("job.yaml:3: serving.input_len: must be in 1.."), std::string::npos);
  EXPECT_NE(Error(head + "  output_len: abc\n").find("job.yaml:3: serving.output_len:"), std::string::npos);
  EXPECT_NE(Error(head + "  concurrency: 0\n").find("job.yaml:3: serving.concurrency: must be in 1..1e6"), std::string::npos);
  EXPECT_NE(Error(head + "  request_rate: -1\n").find("job.yaml:3: serving.request_rate: must be in (0, 1e6]"), std::string::npos);
  EXPECT_NE(Error(head + "  max_throughput: false\n").find("job.yaml:3: serving.max_throughput: only true"), std::string::npos);
  EXPECT_NE(Error(head + "  ttft_p90_ms: 0\n").find("job.yaml:3: serving.ttft_p90_ms:"), std::string::npos);
  EXPECT_NE(Error(head + "  engine: ''\n").find("job.yaml:3: serving.engine: must not be empty"), std::string::npos);
  EXPECT_NE(Error(head + "  concurency: 4\n").find("job.yaml:3: serving.concurency: unknown key (did you mean 'serving.concurrency'?)"),
            std::string::npos);
}

TEST(ServingKeys, TwoLoadsAreAnErrorAtTheSecond) {
  const std::string e = Error("model: {preset: llama-3-8b}\nserving:\n  concurrency: 8\n  request_rate: 2\n");
  EXPECT_EQ(e.rfind("job.yaml:4: serving.request_rate: give one load", 0), 0u) << e;
  EXPECT_NE(e.find("serving.concurrency is given on line 3"), std::string::npos) << e;
  const std::string m = Error("model: {preset: llama-3-8b}\nserving: {max_throughput: true, concurrency: 4}\n");
  EXPECT_EQ(m.rfind("job.yaml:2: serving.concurrency: give one load", 0), 0u) << m;
}

TEST(ServingKeys, TwoLoadFlagsAreAnErrorAndAFlagReplacesTheFilesLoad) {
  auto parsed = ParseJobText("model: {preset: llama-3-8b}\nserving: {concurrency: 8}\n", "job.yaml");
  ASSERT_TRUE(parsed.ok());
  Job job = *parsed;
  Job* j = &job;
  ASSERT_TRUE(SetJobKey(*j, "serving.request_rate", "3", {"command line", 0, "--request-rate"}).ok());
  EXPECT_EQ(j->serving.load, ServingLoad::kRequestRate);
  EXPECT_FALSE(j->IsSet("serving.concurrency"));
  const Status st = SetJobKey(*j, "serving.max_throughput", "true", {"command line", 0, "--max-throughput"});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("--max-throughput: give one load"), std::string::npos) << st.ToString();
  EXPECT_NE(st.ToString().find("as --request-rate on the command line"), std::string::npos) << st.ToString();
}

TEST(ServingKeys, P90BelowTheMeanIsAnErrorAtTheP90) {
  EXPECT_EQ(Error("model: {preset: llama-3-8b}\nserving:\n  input_len: 2000\n  input_len_p90: 1500\n"),
            "job.yaml:4: serving.input_len_p90: the p90 (1500) is below the mean serving.input_len (2000); a p90 is at least the mean");
  EXPECT_NE(Error("model: {preset: llama-3-8b}\nserving: {output_len_p90: 100}\n").find("job.yaml:2: serving.output_len_p90: the p90 (100)"),
            std::string::npos);
  EXPECT_EQ(Error("model: {preset: llama-3-8b}\nserving: {input_len: 500, input_len_p90: 500}\n"), "");
}

TEST(ServingKeys, MaxModelLenHoldsAMeanRequest) {
  EXPECT_NE(Error("model: {preset: llama-3-8b}\nserving: {max_model_len: 1000}\n").find("job.yaml:2: serving.max_model_len: 1000 tokens is shorter"),
            std::string::npos);
  EXPECT_EQ(Error("model: {preset: llama-3-8b}\nserving: {max_model_len: 1200}\n"), "");
}

TEST(ServingKeys, FlagsMirrorTheKeys) {
  for (const auto& [flag, key] : std::vector<std::pair<std::string, std::string>>{
           {"engine", "serving.engine"}, {"engine-version", "serving.engine_version"}, {"weights", "serving.weights"},
           {"kv-dtype", "serving.kv_dtype"}, {"gpu-memory-utilization", "serving.gpu_memory_utilization"},
           {"max-model-len", "serving.max_model_len"}, {"max-num-seqs", "serving.max_num_seqs"},
           {"max-num-batched-tokens", "serving.max_num_batched_tokens"}, {"input-len", "serving.input_len"},
           {"output-len", "serving.output_len"}, {"input-len-p90", "serving.input_len_p90"},
           {"output-len-p90", "serving.output_len_p90"}, {"concurrency", "serving.concurrency"},
           {"request-rate", "serving.request_rate"}, {"max-throughput", "serving.max_throughput"},
           {"num-requests", "serving.num_requests"}, {"frontend", "serving.frontend"},
           {"ttft-p90-ms", "serving.ttft_p90_ms"}, {"tpot-p90-ms", "serving.tpot_p90_ms"},
           {"target-output-tokens-per-s", "serving.target_output_tokens_per_s"}}) {
    const JobKey* k = FindJobKeyByFlag(flag);
    ASSERT_NE(k, nullptr) << flag;
    EXPECT_EQ(k->key, key);
  }
}

TEST(ServingKeys, ToStringNamesEveryValue) {
  EXPECT_EQ(ToString(WeightFormat::kInt4Gptq), "int4-gptq");
  EXPECT_EQ(ToString(WeightFormat::kFp4), "fp4");
  EXPECT_EQ(ToString(KvDtype::kFp8), "fp8");
  EXPECT_EQ(ToString(ServingLoad::kMaxThroughput), "max_throughput");
  EXPECT_EQ(ToString(ServingLoad::kRequestRate), "request_rate");
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// KeyLocations is shared between copies of a job until one of them changes it: a change never shows in the other copy.
TEST(Job, KeyLocationsOfACopyAreItsOwnOnceChanged) {
  Job a;
  a.set_keys["parallel.tp"] = Location{"a.yaml", 3, "parallel.tp"};
  a.set_keys["parallel.dp"] = Location{"a.yaml", 4, "parallel.dp"};
  Job b = a;
  b.set_keys.erase("parallel.tp");
  b.set_keys["cluster.gpu"] = Location{"b.yaml", 1, "cluster.gpu"};
  EXPECT_TRUE(a.IsSet("parallel.tp"));
  EXPECT_FALSE(a.IsSet("cluster.gpu"));
  EXPECT_FALSE(b.IsSet("parallel.tp"));
  EXPECT_EQ(b.set_keys.at("parallel.dp").line, 4);
  Job c = a;
  c.set_keys.erase(c.set_keys.find("parallel.dp"));  // an iterator into the map c still shares with a
  EXPECT_FALSE(c.IsSet("parallel.dp"));
  EXPECT_TRUE(a.IsSet("parallel.dp"));
  EXPECT_EQ(a.set_keys.size(), 2u);
  EXPECT_EQ(c.set_keys.erase("absent"), 0u);
  const Job empty;
  EXPECT_EQ(empty.set_keys.find("x"), empty.set_keys.end());
  EXPECT_TRUE(empty.set_keys.empty());
}

}  // namespace
}  // namespace gpuplan
