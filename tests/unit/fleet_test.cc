// gpuplan fleet (docs/fleet.md): three jobs (pretraining, a deadline fine-tune, a chat service) on the lab's mixed
// pool; capacity never exceeded, the deadline met when the pool can, utilisation and the baseline reported; bad
// input at file:line; the simulation and the exports.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "gpuplan/fleet.h"
#include "gpuplan/csv.h"
#include "gpuplan/fleet_export.h"
#include "../fleet_jobs.h"
#include "../test_util.h"

namespace gpuplan {
namespace {

using testing_util::BuiltinCatalog;
using testing_util::BuiltinServingEngines;
using testing_util::ThreeJobs;

const std::string kSrc = GPUPLAN_SOURCE_DIR;

Fleet MustParse(const std::string& text) {
  auto f = ParseFleetText(text, "fleet.yaml", BuiltinCatalog());
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? *f : Fleet{};
}

FleetResult MustPlan(const Fleet& f, const std::vector<FleetArrival>& arrivals = {}) {
  auto r = PlanFleet(f, BuiltinCatalog(), Calibration::Builtin(), BuiltinServingEngines(), arrivals);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : FleetResult{};
}

// At every start, the cards held per group (serving to the horizon) are at most the group's usable cards.
void ExpectNoOvercommit(const Fleet& f, const FleetSchedule& s) {
  for (const auto& a : s.assignments) {
    for (size_t g = 0; g < f.pool.groups.size(); ++g) {
      int64_t held = 0;
      for (const auto& b : s.assignments) {
        if (b.start_s > a.start_s || (b.end_s <= a.start_s && b.kind == FleetJobKind::kTraining)) continue;
        for (const auto& x : b.gpus)
          if (x.group == g) held += x.count;
      }
      EXPECT_LE(held, f.pool.groups[g].GpusUsable()) << s.policy << " at " << a.start_s << " s, group " << f.pool.groups[g].name;
    }
  }
}

const FleetAssignment& Find(const FleetSchedule& s, const std::string& job) {
  for (const auto& a : s.assignments)
    if (a.job == job) return a;
  ADD_FAILURE() << "no assignment for " << job;
  static FleetAssignment none;
  return none;
}

TEST(FleetTest, ThreeJobsOnTheLabPoolMeetTheDeadlineWithinCapacity) {
  const Fleet f = MustParse(ThreeJobs("24"));
  ASSERT_EQ(f.jobs.size(), 3u);
  const FleetResult r = MustPlan(f);
  EXPECT_TRUE(r.missed.empty()) << r.missed.front();
  ASSERT_EQ(r.policy.assignments.size(), 3u);
  for (const auto& a : r.policy.assignments) {
    EXPECT_FALSE(a.gpus.empty()) << a.job << ": " << a.note;
    EXPECT_FALSE(a.layout.empty()) << a.job;
    EXPECT_GT(a.time_s, 0) << a.job;
    ASSERT_TRUE(a.cost_usd.has_value()) << a.job;  // every group of the lab pool is priced
    EXPECT_GT(*a.cost_usd, 0) << a.job;
  }
  const FleetAssignment& ft = Find(r.policy, "finetune");
  EXPECT_TRUE(ft.has_deadline);
  EXPECT_TRUE(ft.deadline_met);
  EXPECT_LE(ft.end_s, 24 * 3600.0);
  EXPECT_TRUE(Find(r.policy, "chat").deadline_met);  // the SLA
  ExpectNoOvercommit(f, r.policy);
  ExpectNoOvercommit(f, r.baseline);
  EXPECT_GT(r.policy.utilization, 0);
  EXPECT_LE(r.policy.utilization, 1 + 1e-9);
  EXPECT_EQ(r.policy.pool_gpus, 64);
  // The baseline: the same jobs, type-blind, with its own times and utilisation.
  ASSERT_EQ(r.baseline.assignments.size(), 3u);
  EXPECT_EQ(r.baseline.policy, "fcfs-type-blind");
  EXPECT_GT(r.baseline.utilization, 0);
  EXPECT_LE(r.baseline.utilization, 1 + 1e-9);
  EXPECT_GT(r.baseline.horizon_s, 0);
}

TEST(FleetTest, ServingTakesTheFewestCardsOfOneGroup) {
  const FleetResult r = MustPlan(MustParse(ThreeJobs("24")));
  const FleetAssignment& chat = Find(r.policy, "chat");
  ASSERT_EQ(chat.gpus.size(), 1u);  // one type
  EXPECT_LE(chat.gpus[0].count, 8);  // an 8B model at 2 req/s fits within one node of any of the lab's groups
  EXPECT_GT(chat.tokens_per_s, 0);
}

TEST(FleetTest, AnImpossibleDeadlineIsReportedWithWhy) {
  const FleetResult r = MustPlan(MustParse(ThreeJobs("0.01")));
  ASSERT_FALSE(r.missed.empty());
  const std::string& m = r.missed.front();
  EXPECT_NE(m.find("finetune"), std::string::npos) << m;
  EXPECT_NE(m.find("whole pool"), std::string::npos) << m;
  const FleetAssignment& ft = Find(r.policy, "finetune");
  EXPECT_FALSE(ft.deadline_met);
  EXPECT_FALSE(ft.gpus.empty());  // still placed with the rest (best effort)
}

TEST(FleetTest, TheDeadlineJobIsPlacedBeforeTheRest) {
  // A deadline the fine-tune meets only on fast cards: it must get them before the pretraining run does.
  const Fleet f = MustParse(ThreeJobs("6"));
  const FleetResult r = MustPlan(f);
  const FleetAssignment& ft = Find(r.policy, "finetune");
  EXPECT_TRUE(ft.deadline_met) << ft.note;
}

TEST(FleetTest, TheExampleFleetParses) {
  auto f = LoadFleetFile(kSrc + "/examples/fleet-lab.yaml", BuiltinCatalog());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->pool.name, "lab-mixed");
  EXPECT_EQ(f->jobs.size(), 3u);
  EXPECT_EQ(f->jobs[1].deadline_hours, 12);
  EXPECT_EQ(f->jobs[2].priority, 1);
  auto trace = LoadFleetTrace(kSrc + "/examples/fleet-lab-trace.csv", *f);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ(trace->size(), 5u);
}

TEST(FleetTest, SimulationIsDeterministicAndReportsCompletionTimes) {
  const Fleet f = MustParse(ThreeJobs("24"));
  auto trace = ParseFleetTrace("arrival_s,job,name,tokens\n0,pretrain,p1,2e9\n0,chat,chat,\n600,finetune,ft,\n3600,pretrain,p2,1e9\n",
                               "trace.csv", f);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const FleetResult a = MustPlan(f, *trace), b = MustPlan(f, *trace);
  ASSERT_EQ(a.policy.assignments.size(), 4u);
  EXPECT_GT(a.policy.avg_completion_s, 0);
  EXPECT_GT(a.baseline.avg_completion_s, 0);
  EXPECT_EQ(a.policy.avg_completion_s, b.policy.avg_completion_s);
  EXPECT_EQ(a.baseline.utilization, b.baseline.utilization);
  for (const auto& x : a.policy.assignments) EXPECT_GE(x.start_s, x.arrival_s) << x.job;
  EXPECT_EQ(Find(a.policy, "p2").arrival_s, 3600);
  ExpectNoOvercommit(f, a.policy);
  ExpectNoOvercommit(f, a.baseline);
}

TEST(FleetTest, InlinePoolAndAJobFileBesideTheFleetFile) {
  const std::string dir = testing_util::UniqueTempPath("fleet", "");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  {
    std::ofstream(dir + "/job.yaml") << "model: {preset: gpt2}\ntraining: {seq_len: 1024, global_batch: 32, tokens: 1e9}\n"
                                        "cluster: {num_gpus: 8}\n";
    std::ofstream(dir + "/fleet.yaml")
        << "pool:\n"
           "  pool: two\n"
           "  groups:\n"
           "    - {name: fast, gpu: a100-sxm-80gb, nodes: 1, gpus_per_node: 8, network: ib-hdr, price_per_gpu_hour: 1.1}\n"
           "    - {name: slow, gpu: v100-sxm-32gb, nodes: 2, gpus_per_node: 8, nodes_available: 1, price_per_gpu_hour: 0.35}\n"
           "jobs:\n"
           "  - {name: a, kind: training, job: job.yaml}\n"
           "  - {name: b, kind: training, job: job.yaml}\n";
  }
  auto f = LoadFleetFile(dir + "/fleet.yaml", BuiltinCatalog());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->pool.name, "two");
  EXPECT_EQ(f->pool.GpusUsable(), 16);
  EXPECT_EQ(f->jobs[0].ask_gpus, 8);  // cluster.num_gpus: what it asks first come, first served
  const FleetResult r = MustPlan(*f);
  ExpectNoOvercommit(*f, r.policy);
  ExpectNoOvercommit(*f, r.baseline);
  // The baseline gives the first job the first 8 cards listed (the A100s), the second the V100s.
  EXPECT_EQ(r.baseline.assignments[0].gpus.size(), 1u);
  EXPECT_EQ(r.baseline.assignments[0].gpus[0].group, 0u);
  EXPECT_EQ(r.baseline.assignments[1].gpus[0].group, 1u);
  EXPECT_EQ(r.baseline.assignments[1].gpus[0].count, 8);
}

// A fleet file written as indented JSON (what the web API posts): the inline pool is a flow mapping over many
// lines, with a nested flow mapping (network: {kind, gbps}); it is read like the YAML block.
TEST(FleetTest, InlinePoolInIndentedJson) {
  const std::string text =
      "{\n"
      "  \"pool\": {\n"
      "    \"pool\": \"two\",\n"
      "    \"groups\": [\n"
      "      {\"name\": \"fast\", \"gpu\": \"a100-sxm-80gb\", \"nodes\": 1, \"gpus_per_node\": 8,\n"
      "       \"network\": \"ib-hdr\", \"price_per_gpu_hour\": 1.1},\n"
      "      {\n"
      "        \"name\": \"slow\",\n"
      "        \"gpu\": \"rtx4090-24gb\",\n"
      "        \"nodes\": 2,\n"
      "        \"gpus_per_node\": 8,\n"
      "        \"network\": {\n"
      "          \"kind\": \"tcp\",\n"
      "          \"gbps\": 25\n"
      "        },\n"
      "        \"price_per_gpu_hour\": 0.3\n"
      "      }\n"
      "    ]\n"
      "  },\n"
      "  \"jobs\": [\n"
      "    {\"name\": \"a\", \"kind\": \"training\", \"model\": {\"preset\": \"gpt2\"},\n"
      "     \"training\": {\"seq_len\": 1024, \"global_batch\": 32, \"tokens\": 1e9}}\n"
      "  ]\n"
      "}\n";
  auto f = ParseFleetText(text, "fleet.json", BuiltinCatalog());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->pool.name, "two");
  EXPECT_EQ(f->pool.GpusUsable(), 24);
  ASSERT_EQ(f->jobs.size(), 1u);
}

// ---- bad input at file:line ------------------------------------------------------------------------------------

struct BadCase {
  const char* what;
  std::string text;
  int line;
  const char* key;
  const char* says;
};

TEST(FleetTest, BadInputIsAtFileLineKey) {
  const std::string pool = "pool: " + kSrc + "/examples/pool-lab-mixed.yaml\n";
  const std::string job = "    model: {preset: gpt2}\n    training: {tokens: 1e9, global_batch: 8}\n";
  const std::vector<BadCase> cases = {
      {"unknown top key", pool + "jobz: []\n", 2, "jobz", "unknown key"},
      {"no jobs", pool + "jobs: []\n", 2, "jobs", "at least one"},
      {"unknown kind", pool + "jobs:\n  - name: a\n    kind: batch\n" + job, 4, "jobs.kind", "training or serving"},
      {"unknown job key", pool + "jobs:\n  - name: a\n    kind: training\n    gpus: 4\n" + job, 5, "jobs.gpus", "unknown key"},
      {"unknown inline job key", pool + "jobs:\n  - name: a\n    kind: training\n    model: {preset: gpt2}\n    training: {tokenz: 1e9}\n",
       6, "training.tokenz", "unknown key"},
      {"no tokens", pool + "jobs:\n  - name: a\n    kind: training\n    model: {preset: gpt2}\n", 3, "jobs.training.tokens", "training.tokens"},
      {"no global batch", pool + "jobs:\n  - name: a\n    kind: training\n    model: {preset: gpt2}\n    training: {tokens: 1e9}\n", 3,
       "jobs.training.global_batch", "global_batch"},
      {"cluster.gpu pinned", pool + "jobs:\n  - name: a\n    kind: training\n" + job + "    cluster: {gpu: a100-sxm-80gb}\n", 7,
       "cluster.gpu", "chooses"},
      {"negative deadline", pool + "jobs:\n  - name: a\n    kind: training\n    deadline_hours: -1\n" + job, 5,
       "jobs.deadline_hours", ""},
      {"serving without a rate", pool + "jobs:\n  - name: s\n    kind: serving\n    model: {preset: gpt2}\n", 3,
       "jobs.serving.request_rate", "request_rate"},
      {"twice the same name", pool + "jobs:\n  - name: a\n    kind: training\n" + job + "  - name: a\n    kind: training\n" + job, 7,
       "jobs", "used twice"},
      {"every job serves, no horizon", pool + "jobs:\n  - name: s\n    kind: serving\n    model: {preset: gpt2}\n"
                                       "    serving: {request_rate: 1}\n", 1, "horizon_hours", "horizon_hours"},
      {"missing pool file", "pool: nowhere.yaml\njobs: []\n", 1, "pool", "cannot open"},
      {"inline pool error", "horizon_hours: 2\npool:\n  groups:\n    - name: x\n      gpu: no-such-gpu\n      nodes: 1\n"
                            "      gpus_per_node: 8\njobs:\n  - name: a\n    kind: training\n" + job, 5, "groups.gpu", ""},
  };
  for (const auto& c : cases) {
    auto f = ParseFleetText(c.text, "fleet.yaml", BuiltinCatalog());
    ASSERT_FALSE(f.ok()) << c.what;
    const Status& st = f.status();
    EXPECT_EQ(st.code(), StatusCode::kBadInput) << c.what;
    EXPECT_EQ(st.location().file, "fleet.yaml") << c.what << ": " << st.ToString();
    EXPECT_EQ(st.location().line, c.line) << c.what << ": " << st.ToString();
    EXPECT_EQ(st.location().key, c.key) << c.what << ": " << st.ToString();
    EXPECT_NE(st.reason().find(c.says), std::string::npos) << c.what << ": " << st.ToString();
  }
}

TEST(FleetTest, BadTraceIsAtFileLine) {
  const Fleet f = MustParse(ThreeJobs("24"));
  auto unknown = ParseFleetTrace("arrival_s,job\n0,pretrain\n5,nope\n", "trace.csv", f);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().location().line, 3);
  EXPECT_EQ(unknown.status().location().key, "job");
  auto tokens = ParseFleetTrace("arrival_s,job,tokens\n0,chat,5\n", "trace.csv", f);
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().location().line, 2);
  auto column = ParseFleetTrace("arrival_s,job,gpus\n0,chat,5\n", "trace.csv", f);
  ASSERT_FALSE(column.ok());
  EXPECT_EQ(column.status().location().key, "gpus");
  auto negative = ParseFleetTrace("arrival_s,job\n-5,chat\n", "trace.csv", f);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().location().line, 2);
}

// ---- exports ---------------------------------------------------------------------------------------------------

std::map<std::string, std::string> Files(FleetExportFormat format, const Fleet& f, const FleetSchedule& s) {
  auto files = FleetArtifacts(format, f, s);
  EXPECT_TRUE(files.ok()) << files.status().ToString();
  std::map<std::string, std::string> out;
  if (files.ok())
    for (const auto& a : *files) out[a.name] = a.content;
  return out;
}

TEST(FleetTest, SlurmExportHasAPartitionPerGroupAndAScriptPerJob) {
  const Fleet f = MustParse(ThreeJobs("24"));
  const FleetResult r = MustPlan(f);
  auto files = Files(FleetExportFormat::kSlurm, f, r.policy);
  ASSERT_TRUE(files.count("slurm.conf"));
  for (const auto& g : f.pool.groups) {
    EXPECT_NE(files["slurm.conf"].find("PartitionName=" + g.name + " "), std::string::npos) << g.name;
    EXPECT_NE(files["slurm.conf"].find("Gres=gpu:" + g.gpu + ":" + std::to_string(g.gpus_per_node)), std::string::npos);
  }
  for (const auto& a : r.policy.assignments) {
    ASSERT_TRUE(files.count(a.job + ".sbatch")) << a.job;
    const std::string& s = files[a.job + ".sbatch"];
    for (const auto& g : a.gpus) {
      const PoolGroup& grp = f.pool.groups[g.group];
      EXPECT_NE(s.find("#SBATCH --partition=" + grp.name + "\n"), std::string::npos) << s;
      const int64_t per = std::min(g.count, grp.gpus_per_node);
      EXPECT_NE(s.find("#SBATCH --nodes=" + std::to_string(g.count / per) + "\n"), std::string::npos) << s;
      EXPECT_NE(s.find("#SBATCH --gres=gpu:" + grp.gpu + ":" + std::to_string(per) + "\n"), std::string::npos) << s;
    }
    EXPECT_EQ(a.gpus.size() > 1, s.find("#SBATCH hetjob") != std::string::npos) << s;
  }
}

TEST(FleetTest, KueueExportQuotasMatchTheGroupsAndJobsCarryTheQueueLabel) {
  const Fleet f = MustParse(ThreeJobs("24"));
  const FleetResult r = MustPlan(f);
  auto files = Files(FleetExportFormat::kKueue, f, r.policy);
  auto flavors = YAML::LoadAll(files["resource-flavors.yaml"]);
  ASSERT_EQ(flavors.size(), f.pool.groups.size());
  for (size_t g = 0; g < flavors.size(); ++g) {
    EXPECT_EQ(flavors[g]["kind"].as<std::string>(), "ResourceFlavor");
    EXPECT_EQ(flavors[g]["spec"]["nodeLabels"]["gpuplan.io/pool-group"].as<std::string>(), f.pool.groups[g].name);
  }
  auto queues = YAML::LoadAll(files["cluster-queue.yaml"]);
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0]["kind"].as<std::string>(), "ClusterQueue");
  const YAML::Node rg = queues[0]["spec"]["resourceGroups"][0];
  EXPECT_EQ(rg["coveredResources"][0].as<std::string>(), "nvidia.com/gpu");
  ASSERT_EQ(rg["flavors"].size(), f.pool.groups.size());
  for (size_t g = 0; g < f.pool.groups.size(); ++g) {
    EXPECT_EQ(rg["flavors"][g]["name"].as<std::string>(), f.pool.groups[g].name);
    EXPECT_EQ(rg["flavors"][g]["resources"][0]["nominalQuota"].as<int64_t>(), f.pool.groups[g].GpusUsable());
  }
  EXPECT_EQ(queues[1]["kind"].as<std::string>(), "LocalQueue");
  EXPECT_EQ(queues[1]["spec"]["clusterQueue"].as<std::string>(), queues[0]["metadata"]["name"].as<std::string>());
  for (const auto& a : r.policy.assignments) {
    auto docs = YAML::LoadAll(files["job-" + a.job + ".yaml"]);
    ASSERT_EQ(docs.size(), 1u) << a.job;
    const YAML::Node& j = docs[0];
    EXPECT_EQ(j["metadata"]["labels"]["kueue.x-k8s.io/queue-name"].as<std::string>(), queues[1]["metadata"]["name"].as<std::string>());
    EXPECT_TRUE(j["spec"]["suspend"].as<bool>());
    int64_t gpus = 0;
    auto count = [&](const YAML::Node& spec) {
      gpus += spec["parallelism"].as<int64_t>() *
              spec["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].as<int64_t>();
    };
    if (a.gpus.size() == 1) {
      EXPECT_EQ(j["kind"].as<std::string>(), "Job");
      EXPECT_EQ(j["spec"]["template"]["spec"]["nodeSelector"]["gpuplan.io/pool-group"].as<std::string>(),
                f.pool.groups[a.gpus[0].group].name);
      count(j["spec"]);
    } else {
      EXPECT_EQ(j["kind"].as<std::string>(), "JobSet");
      for (const auto& rj : j["spec"]["replicatedJobs"]) count(rj["template"]["spec"]);
    }
    int64_t want = 0;
    for (const auto& g : a.gpus) want += g.count;
    EXPECT_EQ(gpus, want) << a.job;
  }
}

}  // namespace
}  // namespace gpuplan

namespace gpuplan {
namespace {

// ---- per-type speeds against Gavel's measurements ----------------------------------------------------------------

// Gavel (Narayanan et al., OSDI 2020) measured each workload on K80, P100 and V100 (../shared/validation/
// fleet_gavel_throughputs.csv; the K80 and P100 rows of the catalog come from the test fixture with their datasheets).
// The fleet's speed of a small transformer on one card of each type must rank the types as the measurements of
// Gavel's Transformer at one GPU do (all but one of its batch sizes: V100 > P100 > K80).
TEST(FleetTest, PerTypeSpeedsRankAsGavelMeasured) {
  CatalogOptions o;
  o.override_files = {kSrc + "/tests/fixtures/gavel/gpus_k80_p100.csv"};
  auto catalog = LoadCatalog(o);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  const std::vector<std::string> types = {"k80-12gb", "p100-pcie-16gb", "v100-sxm-16gb"};
  std::vector<double> predicted;
  for (const auto& gpu : types) {
    const std::string text = "horizon_hours: 1\npool:\n  groups:\n    - {name: g, gpu: " + gpu +
                             ", nodes: 1, gpus_per_node: 1}\njobs:\n  - name: t\n    kind: training\n"
                             "    model: {preset: gpt2}\n"
                             "    training: {precision: fp32, seq_len: 512, global_batch: 8, tokens: 1e7}\n";
    auto f = ParseFleetText(text, "gavel.yaml", *catalog);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    auto r = PlanFleet(*f, *catalog, Calibration::Builtin(), BuiltinServingEngines());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_FALSE(r->policy.assignments[0].gpus.empty()) << gpu << ": " << r->policy.assignments[0].note;
    predicted.push_back(r->policy.assignments[0].tokens_per_s);
  }
  EXPECT_LT(predicted[0], predicted[1]) << "K80 vs P100";
  EXPECT_LT(predicted[1], predicted[2]) << "P100 vs V100";
  auto table = ReadCsvFile(std::string(GPUPLAN_SHARED_DIR) + "/validation/fleet_gavel_throughputs.csv");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  int rows = 0, agree = 0;
  for (const auto& row : table->rows) {
    CsvRecord r(*table, row);
    if (r.Str("job_type").rfind("Transformer", 0) != 0 || r.Str("scale_factor_gpus") != "1") continue;
    const double k80 = *r.Number("k80_steps_per_s"), p100 = *r.Number("p100_steps_per_s"), v100 = *r.Number("v100_steps_per_s");
    ++rows;
    agree += (k80 < p100) == (predicted[0] < predicted[1]) && (p100 < v100) == (predicted[1] < predicted[2]);
  }
  EXPECT_EQ(rows, 5);
  EXPECT_GE(agree, 4) << "of " << rows << " measured single-GPU Transformer rows";
}

}  // namespace
}  // namespace gpuplan
