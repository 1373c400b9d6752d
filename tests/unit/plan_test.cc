// The seeds' rules of thumb fall out of the search; constraints are errors when bad.
#include <gtest/gtest.h>

#include <fstream>

#include "gpuplan/plan.h"

namespace gpuplan {
namespace {

Job MakeJob(const std::string& yaml) {
  auto j = ParseJobText(yaml, "plan.yaml");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? *j : Job{};
}

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

Catalog WithInstances(const std::string& rows) {
  const std::string path = ::testing::TempDir() + "/plan_instances.csv";
  std::ofstream(path) << "id,provider,instance,gpu_id,gpu_count,intra_link,vcpus,ram_gib,local_nvme_tb,network_gbps,"
                         "network_kind,network_link,rdma,gpudirect_rdma,nics,on_demand_usd_per_hour,spot_usd_per_hour,"
                         "reserved_usd_per_hour,region,price_date,source,notes\n"
                      << rows;
  CatalogOptions o;
  o.override_files = {path};
  auto c = LoadCatalog(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

TEST(Plan, SevenBLoraAndQloraFitOne24GBCard) {
  for (const char* method : {"lora", "qlora"}) {
    Job j = MakeJob(std::string("model: {preset: llama-2-7b}\ntraining: {method: ") + method +
                    ", seq_len: 1024, global_batch: 16, tokens: 1e7}\ncluster: {num_gpus: 1}\n"
                    "constraints: {gpus: [l4-24gb, rtx4090-24gb, a10-24gb], objective: cost}\n");
    Catalog c = WithInstances("my-4090,onprem,RTX 4090 box,rtx4090-24gb,1,pcie4-x16,16,64,2,10,tcp,tcp-10g,no,no,1,0.40,unknown,unknown,lab,2026-11-01,own box,\n");
    auto r = PlanJob(j, c, Calibration::Builtin());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_FALSE(r->plans.empty()) << method << ": " << r->relax;
    EXPECT_EQ(r->plans.front().job.cluster.num_gpus, 1);
    EXPECT_LE(r->plans.front().memory_bytes, 24.0 * 1024 * 1024 * 1024);
  }
}

TEST(Plan, SevenBFullAdamWNeedsShardingOrOffloadOnOne80GBCard) {
  Job j = MakeJob("model: {preset: llama-2-7b}\ntraining: {seq_len: 2048, global_batch: 8, tokens: 1e8}\n"
                  "parallel: {zero: 0}\ncluster: {num_gpus: 1}\nconstraints: {gpus: [a100-sxm-80gb, h100-sxm-80gb]}\n");
  auto r = PlanJob(j, Cat(), Calibration::Builtin());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->plans.empty());
  EXPECT_NE(r->relax.find("memory"), std::string::npos) << r->relax;
  EXPECT_GT(r->rejected["does not fit GPU memory"], 0);
}

TEST(Plan, TensorParallelNeverCrossesNodesUnlessAsked) {
  Job j = MakeJob("model: {preset: llama-3-70b}\ntraining: {seq_len: 4096, global_batch: 256, tokens: 1e9}\n"
                  "constraints: {max_gpus: 128, objective: time, top: 30}\n");
  auto r = PlanJob(j, Cat(), Calibration::Builtin());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->plans.empty());
  for (const auto& p : r->plans) EXPECT_LE(p.job.parallel.tp, p.instance.gpu_count) << p.instance.id;
  for (const auto& p : r->pareto) EXPECT_LE(p.job.parallel.tp, p.instance.gpu_count) << p.instance.id;
}

TEST(Plan, TcpNeverPreferredToRdmaAtEqualPrice) {
  Catalog c = WithInstances(
      "twin-tcp,onprem,8xH100 TCP,h100-sxm-80gb,8,nvswitch-nvlink4,192,2048,8,400,tcp,tcp-100g,no,no,4,40,unknown,unknown,lab,2026-11-01,test,\n"
      "twin-rdma,onprem,8xH100 RDMA,h100-sxm-80gb,8,nvswitch-nvlink4,192,2048,8,400,roce,roce-100g,yes,yes,4,40,unknown,unknown,lab,2026-11-01,test,\n");
  for (const char* objective : {"time", "cost", "balanced"}) {
    Job j = MakeJob(std::string("model: {preset: llama-2-13b}\ntraining: {seq_len: 4096, global_batch: 256, tokens: 1e9}\n"
                                "cluster: {num_gpus: 32}\nconstraints: {clouds: [onprem], objective: ") + objective + "}\n");
    auto r = PlanJob(j, c, Calibration::Builtin());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_FALSE(r->plans.empty());
    EXPECT_EQ(r->plans.front().instance.id, "twin-rdma") << objective;
  }
}

TEST(Plan, TwoPcieCardsLoseToOneForASmallModel) {
  // GPT-2 small on L4s over PCIe: two cards spend more on gradient sync than they save.
  Catalog c = WithInstances(
      "one-l4,onprem,1xL4,l4-24gb,1,pcie4-x16,16,64,1,10,tcp,tcp-10g,no,no,1,1.0,unknown,unknown,lab,2026-11-01,test,\n"
      "two-l4,onprem,2xL4,l4-24gb,2,pcie4-x16,32,128,1,10,tcp,tcp-10g,no,no,1,2.0,unknown,unknown,lab,2026-11-01,test,\n");
  Job j = MakeJob("model: {preset: gpt2}\ntraining: {seq_len: 1024, global_batch: 8, tokens: 1e8}\n"
                  "parallel: {zero: 0}\nconstraints: {clouds: [onprem], objective: cost, max_gpus: 2}\n");
  auto r = PlanJob(j, c, Calibration::Builtin());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->plans.empty());
  // Whatever the model predicts for the pair, the cost ranking must follow it.
  const Plan& best = r->plans.front();
  for (const auto& p : r->plans) EXPECT_LE(best.cost.with_rerun_usd, p.cost.with_rerun_usd + 1e-9);
  bool saw_pair = false;
  for (const auto& p : r->plans) saw_pair |= p.job.cluster.num_gpus == 2;
  EXPECT_TRUE(saw_pair);
  EXPECT_EQ(best.job.cluster.num_gpus, 1) << "two PCIe cards should not beat one on cost for gpt2";
}

TEST(Plan, BadConstraintsAreErrors) {
  auto parse_error = [](const std::string& yaml) {
    auto j = ParseJobText("model: {preset: gpt2}\ntraining: {global_batch: 8, tokens: 1e8}\n" + yaml, "c.yaml");
    return j.ok() ? std::string() : j.status().ToString();
  };
  EXPECT_EQ(parse_error("constraints: {budget_usd: -5}\n"), "c.yaml:3: constraints.budget_usd: must be > 0 USD, got -5");
  EXPECT_EQ(parse_error("constraints: {deadline_hours: 0}\n"),
            "c.yaml:3: constraints.deadline_hours: must be > 0 hours (and below 1e6), got 0");
  EXPECT_NE(parse_error("constraints: {spot: maybe}\n").find("expected one of no|allowed|only"), std::string::npos);
  Job cloud = MakeJob("model: {preset: gpt2}\ntraining: {global_batch: 8, tokens: 1e8}\nconstraints: {clouds: [mycloud]}\n");
  auto r = PlanJob(cloud, Cat(), Calibration::Builtin());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("plan.yaml:3: constraints.clouds: unknown cloud 'mycloud'"), std::string::npos)
      << r.status().ToString();
  Job gpu = MakeJob("model: {preset: gpt2}\ntraining: {global_batch: 8, tokens: 1e8}\nconstraints: {gpus: [h900]}\n");
  auto g = PlanJob(gpu, Cat(), Calibration::Builtin());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().ToString().find("unknown GPU 'h900'"), std::string::npos);
  Job tokens = MakeJob("model: {preset: gpt2}\ntraining: {global_batch: 8}\n");
  EXPECT_FALSE(PlanJob(tokens, Cat(), Calibration::Builtin()).ok());
}

TEST(Plan, NothingFeasibleSaysWhatToRelax) {
  Job j = MakeJob("model: {preset: llama-3-70b}\ntraining: {seq_len: 4096, global_batch: 256, tokens: 1e10}\n"
                  "constraints: {deadline_hours: 1, budget_usd: 100, max_gpus: 64}\n");
  auto r = PlanJob(j, Cat(), Calibration::Builtin());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->plans.empty());
  EXPECT_NE(r->relax.find("deadline_hours"), std::string::npos) << r->relax;
  EXPECT_NE(r->relax.find("budget_usd"), std::string::npos) << r->relax;
}

TEST(Plan, WholeSetupIsReported) {
  Job j = MakeJob("model: {preset: llama-3-70b}\ntraining: {seq_len: 4096, global_batch: 512, tokens: 2e9}\n"
                  "constraints: {max_gpus: 256, clouds: [aws], objective: cost}\n");
  auto r = PlanJob(j, Cat(), Calibration::Builtin());
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->plans.empty());
  const Plan& p = r->plans.front();
  EXPECT_GT(p.estimate.step_time_s, 0);
  EXPECT_TRUE(p.cost.price_known);
  EXPECT_NEAR(p.cost.with_rerun_usd, p.cost.subtotal_usd * 1.3, 1e-6 * p.cost.subtotal_usd);
  EXPECT_FALSE(p.bottleneck.empty());
  EXPECT_FALSE(p.host.empty());
  EXPECT_GT(p.storage.checkpoint_bytes, 0);
  EXPECT_GT(r->considered, 1000);
}

}  // namespace
}  // namespace gpuplan
