// Invariants over random valid jobs (seed printed; GPUPLAN_SEED=N replays one): every number that
// `plan --json` and `estimate --json` would print is finite, the text reports print no nan/inf, and
// the plan ranking is the same across runs and across thread counts. Sized for the ASan stage: small
// models, a few GPU types, a handful of iterations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.h"
#include "gpuplan/plan.h"
#include "gpuplan/report.h"

namespace gpuplan {
namespace {

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

uint64_t Seed() {
  const char* env = std::getenv("GPUPLAN_SEED");
  const uint64_t seed = env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("property seed: %llu (GPUPLAN_SEED=%llu replays it)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

template <typename T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> xs) {
  return *(xs.begin() + std::uniform_int_distribution<size_t>(0, xs.size() - 1)(rng));
}

// A random plan job: a small model, two or three GPU types, a few constraints. `open`: gpt2 with no
// budget or deadline, so that it has plans whatever the draw.
std::string RandomPlanYaml(std::mt19937_64& rng, bool open = false) {
  const std::string gpus = Pick<const char*>(rng, {"[a100-80gb, l4]", "[h100, rtx4090]", "[a10g, l40s, a100-40gb]", "[h100, a100-80gb]"});
  const std::string model = Pick<const char*>(rng, {"gpt2", "gpt2", "llama-2-7b", "qwen3-8b"});
  const std::string limit = Pick<const char*>(rng, {"", ", budget_usd: 200", ", deadline_hours: 12"});
  return "model: {preset: " + (open ? std::string("gpt2") : model) + "}\n" +
         "training: {method: " + Pick<const char*>(rng, {"full", "lora"}) + ", seq_len: " + Pick<const char*>(rng, {"512", "1024", "2048"}) +
         ", global_batch: " + Pick<const char*>(rng, {"16", "32", "64"}) + ", tokens: " + Pick<const char*>(rng, {"1e7", "1e8", "1e9"}) + "}\n" +
         "constraints: {max_gpus: " + Pick<const char*>(rng, {"1", "8", "16"}) + ", gpus: " + gpus +
         ", objective: " + Pick<const char*>(rng, {"time", "cost", "balanced"}) + ", spot: " + Pick<const char*>(rng, {"no", "allowed"}) +
         (open ? std::string() : limit) + "}\n";
}

// A random pinned job for estimate: model, GPU, layout, network and storage.
std::string RandomEstimateYaml(std::mt19937_64& rng) {
  const int64_t nodes = Pick<int64_t>(rng, {1, 1, 2, 4});
  const int64_t per_node = Pick<int64_t>(rng, {1, 8});
  return std::string("model: {preset: ") + Pick<const char*>(rng, {"gpt2", "llama-2-7b", "mistral-7b", "mixtral-8x7b", "qwen3-8b"}) + "}\n" +
         "training: {method: " + Pick<const char*>(rng, {"full", "lora", "qlora", "pretrain"}) + ", seq_len: " + Pick<const char*>(rng, {"512", "2048", "4096"}) +
         ", recompute: " + Pick<const char*>(rng, {"none", "selective", "full"}) + ", tokens: " + Pick<const char*>(rng, {"0", "1e8", "1e10"}) + "}\n" +
         "parallel: {zero: " + Pick<const char*>(rng, {"0", "1", "2", "3"}) + "}\n" +
         "cluster: {gpu: " + Pick<const char*>(rng, {"h100", "a100-80gb", "l4", "rtx4090", "v100"}) + ", num_gpus: " + std::to_string(nodes * per_node) +
         ", gpus_per_node: " + std::to_string(per_node) + ", network: " + Pick<const char*>(rng, {"ib-hdr", "tcp-25g", "efa-v1"}) +
         Pick<const char*>(rng, {"", ", storage: aws-ebs-gp3"}) + "}\n";
}

// Every number in a JSON document, by its path; the first one that is not finite, or "".
std::string FirstNonFinite(const nlohmann::json& j, const std::string& path = "$") {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) return path + " = " + std::to_string(j.get<double>());
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it)
      if (std::string bad = FirstNonFinite(it.value(), path + "." + it.key()); !bad.empty()) return bad;
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i)
      if (std::string bad = FirstNonFinite(j[i], path + "[" + std::to_string(i) + "]"); !bad.empty()) return bad;
  return "";
}

// nan/inf printed as a number (a whole token: "nan", "-nan", "inf"; not "info" or "InfiniBand").
std::string FirstNonFiniteToken(const std::string& text) {
  static const std::regex kToken(R"((^|[^A-Za-z0-9_.])([-+]?(nan|inf))($|[^A-Za-z0-9_]))", std::regex::icase);
  std::smatch m;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, m, kToken)) return line;
  return "";
}

Job ParsePlanJob(const std::string& yaml) {
  auto j = ParseJobText(yaml, "random.yaml");
  EXPECT_TRUE(j.ok()) << yaml << j.status().ToString();
  return j.ok() ? *j : Job{};
}

// What one plan is, for comparing rankings: instance, nodes, the whole layout, time and cost.
std::string Describe(const Plan& p) {
  const ParallelSpec& l = p.job.parallel;
  const TrainingSpec& t = p.job.training;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s x%lld tp%lld pp%lld vpp%lld dp%lld cp%lld ep%lld z%d sp%d %s mb%lld gb%lld %s %s time=%.17g cost=%.17g %s",
                p.instance.id.c_str(), static_cast<long long>(p.nodes), static_cast<long long>(l.tp), static_cast<long long>(l.pp),
                static_cast<long long>(l.vpp), static_cast<long long>(l.dp), static_cast<long long>(l.cp), static_cast<long long>(l.ep),
                l.zero, l.sequence_parallel ? 1 : 0, ToString(l.offload).c_str(), static_cast<long long>(t.micro_batch),
                static_cast<long long>(t.global_batch), ToString(t.recompute).c_str(), ToString(t.precision).c_str(), p.time_s,
                p.cost.with_rerun_usd, p.cost.price_kind.c_str());
  return buf;
}

std::vector<std::string> Ranking(const std::vector<Plan>& plans) {
  std::vector<std::string> out;
  for (const auto& p : plans) out.push_back(Describe(p));
  return out;
}

TEST(Invariants, PlanRankingIsTheSameAcrossRunsAndThreadCounts) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  size_t ranked = 0;
  for (int i = 0, n = testing_util::PropertyCases(6, 2); i < n; ++i) {
    const std::string yaml = RandomPlanYaml(rng, /*open=*/i == 0);
    const Job job = ParsePlanJob(yaml);
    PlanOptions one, two;
    one.threads = 1;
    two.threads = 2;
    auto a = PlanJob(job, Cat(), Calibration::Builtin(), one);
    auto b = PlanJob(job, Cat(), Calibration::Builtin(), two);
    auto c = PlanJob(job, Cat(), Calibration::Builtin(), two);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << yaml << (a.ok() ? "" : a.status().ToString());
    EXPECT_EQ(Ranking(a->plans), Ranking(b->plans)) << "threads 1 vs 2, seed " << seed << "\n" << yaml;
    EXPECT_EQ(Ranking(b->plans), Ranking(c->plans)) << "two runs with 2 threads, seed " << seed << "\n" << yaml;
    EXPECT_EQ(Ranking(a->pareto), Ranking(b->pareto)) << "Pareto front, threads 1 vs 2, seed " << seed << "\n" << yaml;
    EXPECT_EQ(a->considered, b->considered) << yaml;
    EXPECT_EQ(a->relax_code, b->relax_code) << yaml;
    ranked += a->plans.size();
    // The printed plan is the same whole document whatever the thread count (search time aside).
    nlohmann::json ja = PlanToJson(*a, job), jb = PlanToJson(*b, job);
    ja.erase("wall_s");
    jb.erase("wall_s");
    EXPECT_EQ(ja.dump(), jb.dump()) << "plan --json, threads 1 vs 2, seed " << seed << "\n" << yaml;
    EXPECT_EQ(FirstNonFinite(ja), "") << "seed " << seed << "\n" << yaml;
    EXPECT_EQ(FirstNonFiniteToken(PlanToText(*a, job, false)), "") << "seed " << seed << "\n" << yaml;
    EXPECT_EQ(FirstNonFiniteToken(PlanToText(*b, job, true)), "") << "seed " << seed << "\n" << yaml;
  }
  EXPECT_GT(ranked, 0u) << "seed " << seed << ": no random job had a plan to rank";
}

TEST(Invariants, EveryPlanNumberIsFinite) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  for (int i = 0, n = testing_util::PropertyCases(6, 3); i < n; ++i) {
    const std::string yaml = RandomPlanYaml(rng);
    const Job job = ParsePlanJob(yaml);
    auto r = PlanJob(job, Cat(), Calibration::Builtin());
    ASSERT_TRUE(r.ok()) << yaml << r.status().ToString();
    EXPECT_EQ(FirstNonFinite(PlanToJson(*r, job)), "") << "seed " << seed << "\n" << yaml;
    for (const auto* list : {&r->plans, &r->pareto})
      for (const auto& p : *list) {
        EXPECT_TRUE(std::isfinite(p.time_s) && p.time_s > 0) << Describe(p) << "\nseed " << seed;
        EXPECT_TRUE(std::isfinite(p.cost.with_rerun_usd) && p.cost.with_rerun_usd >= 0) << Describe(p) << "\nseed " << seed;
        EXPECT_TRUE(std::isfinite(p.memory_bytes) && p.memory_bytes > 0) << Describe(p) << "\nseed " << seed;
      }
  }
}

TEST(Invariants, EveryEstimateNumberIsFinite) {
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  int estimated = 0;
  for (int i = 0, n = testing_util::PropertyCases(48, 16); i < n; ++i) {
    const std::string yaml = RandomEstimateYaml(rng);
    auto parsed = ParseJobText(yaml, "random.yaml");
    ASSERT_TRUE(parsed.ok()) << yaml << parsed.status().ToString();
    Job job = *parsed;
    if (!FinalizeJob(job).ok()) continue;  // e.g. qlora in fp32, or a layout the model does not divide
    auto hw = ResolveHardware(job, Cat(), Calibration::Builtin());
    if (!hw.ok()) continue;  // e.g. bf16 on a V100: a located bad-input error, not a number
    const StepEstimate step = EstimateStep(job, *hw);
    const BottleneckReport b = AnalyzeBottleneck(job, &Cat(), *hw, step);
    EstimateReport r{job, *hw, step, BuildMemoryReport(job, hw->gpu, Calibration::Builtin()), b.sentence, b.what_ifs, std::nullopt};
    if (job.training.tokens > 0) r.wall = EstimateJobWallClock(job, *hw, step, Cat(), Calibration::Builtin());
    EXPECT_EQ(FirstNonFinite(EstimateToJson(r)), "") << "seed " << seed << "\n" << yaml;
    EXPECT_EQ(FirstNonFinite(MemoryToJson(r.memory)), "") << "seed " << seed << "\n" << yaml;
    EXPECT_EQ(FirstNonFiniteToken(EstimateToText(r, false)), "") << "seed " << seed << "\n" << yaml;
    EXPECT_EQ(FirstNonFiniteToken(MemoryToText(r.memory, true)), "") << "seed " << seed << "\n" << yaml;
    ++estimated;
  }
  EXPECT_GT(estimated, 0) << "seed " << seed << ": no random job was valid";
}

TEST(Invariants, TheTokenCheckCanFail) {
  EXPECT_NE(FirstNonFiniteToken("1   vast-h100  inf h / $-nan"), "");
  EXPECT_NE(FirstNonFiniteToken("mfu: nan"), "");
  EXPECT_EQ(FirstNonFiniteToken("info: inference on InfiniBand, ZeRO-Infinity, file x_inf.csv"), "");
  nlohmann::json j = {{"a", {1.0, std::nan("")}}};
  EXPECT_EQ(FirstNonFinite(j), "$.a[1] = nan");
}

}  // namespace
}  // namespace gpuplan
