// The reliability layer (docs/model/reliability.md): wall-clock, Young interval, targets, rates.
#include <gtest/gtest.h>

#include <cmath>

#include "gpuplan/reliability.h"

namespace gpuplan {
namespace {

const Catalog& Cat() {
  static const Catalog c = *LoadCatalog();
  return c;
}

WallClockInputs Base() {
  WallClockInputs in;
  in.train_s = 10 * 3600;
  in.startup_s = 700;
  in.rates.failures_per_s = 1.0 / (24 * 3600);  // one failure a day
  in.rates.failure_restart_s = 600;
  in.stall_s = 60;
  in.durable_s = 60;
  in.final_save_s = 30;
  return in;
}

TEST(WallClock, PartsAddUpAndGoodputIsTheirRatio) {
  const WallClock w = ComputeWallClock(Base());
  EXPECT_NEAR(w.time_s, w.startup_s + w.train_s + w.checkpoint_stall_s + w.expected_lost_s + w.final_save_s, 1e-6);
  EXPECT_NEAR(w.goodput, w.train_s / w.time_s, 1e-12);
  EXPECT_GT(w.expected_lost_s, 0);
  EXPECT_GT(w.expected_failures, 0.4);  // ~10.5 h at one a day
}

TEST(WallClock, YoungIntervalFromStallAndRate) {
  const WallClock w = ComputeWallClock(Base());
  // sqrt(2 x 60 s x 86400 s) = 3220 s
  EXPECT_NEAR(w.interval_s, std::sqrt(2 * 60.0 * 86400), 1e-6);
  EXPECT_EQ(w.checkpoints, static_cast<int64_t>(std::ceil(36000 / w.interval_s)) - 1);
}

TEST(WallClock, IntervalNeverLongerThanTheRun) {
  WallClockInputs in = Base();
  in.train_s = 600;  // a 10-minute run
  const WallClock w = ComputeWallClock(in);
  EXPECT_LE(w.interval_s, in.train_s);
  EXPECT_EQ(w.checkpoints, 0);
}

TEST(WallClock, InterruptionsAddTimeAndShortenTheInterval) {
  WallClockInputs od = Base();
  WallClockInputs spot = Base();
  spot.rates.interruptions_per_s = 4.2e-3 / 3600 * 4;  // four nodes at GCP's rate
  spot.rates.interruption_restart_s = 900;
  const WallClock a = ComputeWallClock(od), b = ComputeWallClock(spot);
  EXPECT_GT(b.expected_interruptions, 0);
  EXPECT_GT(b.time_s, a.time_s);
  EXPECT_LT(b.interval_s, a.interval_s);
}

TEST(WallClock, FlooredIntervalIsSaid) {
  WallClockInputs in = Base();  // Young: sqrt(2 x 60 s x 86400 s) = 3220 s
  in.min_interval_s = 900;
  EXPECT_FALSE(ComputeWallClock(in).interval_floored);  // Young's is longer than the floor
  in.rates.failures_per_s = 1.0 / 3600;                 // Young: sqrt(2 x 60 x 3600) = 657 s < 900 s
  const WallClock w = ComputeWallClock(in);
  EXPECT_TRUE(w.interval_floored);
  EXPECT_NEAR(w.interval_s, 900, 1e-9);
  in.durable_s = 1200;  // the durable time, not the floor, sets the interval
  EXPECT_FALSE(ComputeWallClock(in).interval_floored);
  in.durable_s = 60;
  in.pinned_interval_s = 1800;  // a pinned interval is never floored
  EXPECT_FALSE(ComputeWallClock(in).interval_floored);
  in.pinned_interval_s = 0;
  in.train_s = 600;  // the run, shorter than the floor, caps the interval
  EXPECT_FALSE(ComputeWallClock(in).interval_floored);
}

TEST(WallClock, PinnedIntervalIsUsed) {
  WallClockInputs in = Base();
  in.pinned_interval_s = 1800;
  EXPECT_NEAR(ComputeWallClock(in).interval_s, 1800, 1e-9);
}

TEST(WallClock, SlowerCheckpointsCostMoreTime) {
  WallClockInputs fast = Base(), slow = Base();
  slow.stall_s = slow.durable_s = 600;
  EXPECT_GT(ComputeWallClock(slow).time_s, ComputeWallClock(fast).time_s);
}

CheckpointSizes Sizes(double bytes) {
  CheckpointSizes s;
  s.full_state_bytes = s.intermediate_bytes = bytes;
  s.weights_only_bytes = s.final_bytes = bytes / 7;
  return s;
}

TEST(CheckpointTargets, WriteTimeFollowsSizeAndTarget) {
  CheckpointTargetInputs in;
  in.provider = "aws";
  in.nodes = 8;
  in.gpus = 64;
  in.local_nvme_bytes = 30e12;
  const auto small = CheckpointTargets(Sizes(1e11), in, Cat(), Calibration::Builtin());
  const auto big = CheckpointTargets(Sizes(1e12), in, Cat(), Calibration::Builtin());
  ASSERT_GT(small.size(), 1u);
  bool saw_local = false, saw_object = false;
  for (const auto& t : big) {
    saw_local |= t.kind == "local-nvme+upload";
    saw_object |= t.kind == "object";
    EXPECT_GT(t.stall_s, 0);
    EXPECT_GE(t.durable_s, t.stall_s);
  }
  EXPECT_TRUE(saw_local);
  EXPECT_TRUE(saw_object);
  // Same target id, ten times the bytes: ten times the stall.
  for (const auto& s : small)
    for (const auto& b : big)
      if (s.id == b.id && s.provisioned_bytes == b.provisioned_bytes && s.kind == b.kind) {
        EXPECT_NEAR(b.stall_s, 10 * s.stall_s, 1e-6 * b.stall_s);
      }
}

TEST(CheckpointTargets, ObjectStoreScalesWithWritingNodes) {
  CheckpointTargetInputs one, many;
  one.provider = many.provider = "aws";
  one.nodes = 1;
  many.nodes = 16;
  auto obj = [](const std::vector<CheckpointTarget>& ts) {
    for (const auto& t : ts)
      if (t.kind == "object") return t.stall_s;
    return -1.0;
  };
  const double a = obj(CheckpointTargets(Sizes(1e12), one, Cat(), Calibration::Builtin()));
  const double b = obj(CheckpointTargets(Sizes(1e12), many, Cat(), Calibration::Builtin()));
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  EXPECT_NEAR(a / b, 16, 1e-6);
}

TEST(CheckpointTargets, PinnedStorageOnlyForItsProvider) {
  CheckpointTargetInputs in;
  in.provider = "gcp";
  in.pinned_storage = "aws-s3-standard";
  for (const auto& t : CheckpointTargets(Sizes(1e11), in, Cat(), Calibration::Builtin())) EXPECT_NE(t.id, "aws-s3-standard");
  in.provider = "aws";
  const auto ts = CheckpointTargets(Sizes(1e11), in, Cat(), Calibration::Builtin());
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].id, "aws-s3-standard");
}

TEST(EventRates, SpotRatesComeFromDataMostSpecificFirst) {
  const Calibration& cal = Calibration::Builtin();
  const EventRates aws = LookupEventRates("aws", "hopper", true, 16, 2, 900, cal);
  EXPECT_EQ(aws.interruption_source, "spot_interruptions_per_node_hour.aws.hopper");
  EXPECT_NEAR(aws.interruptions_per_s, cal.Get("spot_interruptions_per_node_hour.aws.hopper") * 2 / 3600, 1e-18);
  const EventRates other = LookupEventRates("vast", "ada", true, 1, 1, 900, cal);
  EXPECT_EQ(other.interruption_source, "spot_interruptions_per_node_hour.default");
  const EventRates od = LookupEventRates("aws", "hopper", false, 16, 2, 900, cal);
  EXPECT_EQ(od.interruptions_per_s, 0);
  EXPECT_NEAR(od.failures_per_s, cal.Get("gpu_failure_rate_per_gpu_day") * 16 / 86400, 1e-18);
}

TEST(Startup, WeightsAndDatasetAtTheStoreRate) {
  StartupInputs in;
  in.weights_bytes = 1.4e11;
  in.dataset_bytes = 2e10;
  in.store_read_bytes_per_s_per_node = 1e9;
  const StartupBreakdown s = EstimateStartup(in, Calibration::Builtin());
  EXPECT_NEAR(s.weights_s, 140, 1e-9);
  EXPECT_NEAR(s.dataset_s, 20, 1e-9);
  EXPECT_GT(s.provision_s, 0);
  EXPECT_GT(s.Total(), s.weights_s + s.dataset_s);
}

// Issue 16 item 2: where the catalog has no write rate, the instance row's local NVMe (then an
// upload where the provider has an object store), else the object store, else the instance's
// disk, all flagged assumed; never no target.
TEST(CheckpointTargets, UnknownWriteRatesFallBackToTheInstanceRow) {
  const Calibration& cal = Calibration::Builtin();
  CheckpointTargetInputs gcp;
  gcp.provider = "gcp";
  gcp.nodes = 2;
  gcp.gpus = 16;
  gcp.local_nvme_bytes = 6e12;
  auto ts = CheckpointTargets(Sizes(1e12), gcp, Cat(), cal);
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].kind, "local-nvme+upload");
  EXPECT_TRUE(ts[0].assumed);
  EXPECT_NEAR(ts[0].stall_s, 1e12 / (2 * cal.Get("local_nvme_write_bytes_per_s_per_node")), 1e-6);
  EXPECT_NEAR(ts[0].durable_s - ts[0].stall_s, 1e12 / (2 * cal.Get("object_store_write_bytes_per_s_per_node_assumed")), 1e-6);
  gcp.local_nvme_bytes.reset();  // no local NVMe: the object store at the assumed rate
  ts = CheckpointTargets(Sizes(1e12), gcp, Cat(), cal);
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].kind, "object");
  EXPECT_TRUE(ts[0].assumed);
  CheckpointTargetInputs onprem;  // no object store: local NVMe, kept on the node
  onprem.provider = "onprem-lab";
  onprem.local_nvme_bytes = 15e12;
  ts = CheckpointTargets(Sizes(1e11), onprem, Cat(), cal);
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].kind, "local-nvme");
  EXPECT_TRUE(ts[0].node_local);
  onprem.local_nvme_bytes.reset();  // nothing in the row: the instance's disk
  ts = CheckpointTargets(Sizes(1e11), onprem, Cat(), cal);
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].kind, "instance-disk");
  EXPECT_NEAR(ts[0].stall_s, 1e11 / cal.Get("instance_disk_write_bytes_per_s_assumed"), 1e-6);
  // A provider with a known write rate keeps its sourced targets, none assumed.
  CheckpointTargetInputs aws;
  aws.provider = "aws";
  for (const auto& t : CheckpointTargets(Sizes(1e11), aws, Cat(), cal)) EXPECT_FALSE(t.assumed) << t.id;
}

// R§3: the planner may save asynchronously; an async copy stalls less and is durable later.
TEST(CheckpointTargets, AsyncCopiesStallLessAndAreDurableLater) {
  CheckpointTargetInputs in;
  in.provider = "aws";
  in.nodes = 4;
  in.gpus = 32;
  in.local_nvme_bytes = 30e12;
  in.host_bytes_per_s = 25e9;
  in.choose_async = true;
  const auto ts = CheckpointTargets(Sizes(1e12), in, Cat(), Calibration::Builtin());
  int async = 0;
  for (const auto& t : ts) {
    if (!t.async) continue;
    ++async;
    EXPECT_LT(t.stall_s, t.sync_stall_s) << t.id;
    EXPECT_NEAR(t.stall_s, 1e12 / 32 / 25e9, 1e-9);
    EXPECT_GT(t.durable_s, t.sync_stall_s);
  }
  EXPECT_GT(async, 0);
}

// Item 7: spot rates of AWS and GCP are of one order (the advisor's bands read per day-long run,
// as GCP publishes its rate), a pinned rate replaces the data, and each provider has its notice.
TEST(EventRates, SpotRatesNoticeAndPinnedRate) {
  const Calibration& cal = Calibration::Builtin();
  const EventRates aws = LookupEventRates("aws", "hopper", true, 32, 4, 900, cal);
  const EventRates gcp = LookupEventRates("gcp", "hopper", true, 32, 4, 900, cal);
  EXPECT_LT(std::max(aws.interruptions_per_s, gcp.interruptions_per_s) / std::min(aws.interruptions_per_s, gcp.interruptions_per_s), 3);
  EXPECT_EQ(aws.reclaim_notice_s, 120);
  EXPECT_EQ(gcp.reclaim_notice_s, 30);
  EXPECT_EQ(LookupEventRates("vast", "ada", true, 1, 1, 900, cal).reclaim_notice_s, cal.Get("spot_reclaim_notice_s.default"));
  EXPECT_EQ(LookupEventRates("aws", "hopper", false, 32, 4, 900, cal).reclaim_notice_s, 0);
  const EventRates pinned = LookupEventRates("aws", "hopper", true, 32, 4, 900, cal, 0.02);
  EXPECT_NEAR(pinned.interruptions_per_s, 0.02 * 4 / 3600, 1e-15);
  EXPECT_EQ(pinned.interruption_source, "constraints.spot_interruptions_per_node_hour");
}

// Item 11: owned or already running machines provision nothing; clouds take the data's 600 s.
TEST(Startup, OwnedMachinesProvisionNothing) {
  const Calibration& cal = Calibration::Builtin();
  StartupInputs in;
  in.provider = "aws";
  EXPECT_EQ(EstimateStartup(in, cal).provision_s, cal.Get("startup_provision_s"));
  in.provider = "onprem";
  EXPECT_EQ(EstimateStartup(in, cal).provision_s, 0);
  in.provider = "lambda";
  in.owned = true;
  EXPECT_EQ(EstimateStartup(in, cal).provision_s, 0);
}

// A pinned interval is the policy as given, even past the end of a short run.
TEST(WallClock, PinnedIntervalIsKept) {
  WallClockInputs in;
  in.train_s = 600;
  in.stall_s = in.durable_s = 5;
  in.pinned_interval_s = 1800;
  const WallClock w = ComputeWallClock(in);
  EXPECT_EQ(w.interval_s, 1800);
  EXPECT_EQ(w.checkpoints, 0);
}

}  // namespace
}  // namespace gpuplan
