// Failures, spot interruptions, checkpoint targets, start-up and the wall-clock
// (docs/model/reliability.md R§1-R§5 mirror this file).
#include "gpuplan/reliability.h"

#include "gpuplan/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpuplan {

namespace {
constexpr double kSecondsPerHour = 3600, kHoursPerMonth = 720, kTiB = 1024.0 * 1024 * 1024 * 1024;

std::string Fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// The aggregate write rate of a row for a job on `nodes` nodes (R§3): per-node rows scale with the
// nodes writing their shards in parallel (multipart uploads), per-TiB rows with provisioned
// capacity, anything else is the row's figure.
double AggregateWrite(const StorageSpec& s, int64_t nodes, double provisioned_bytes) {
  const double w = s.write_bytes_per_s.value_or(0);
  if (s.throughput_scope == "per-node") return w * static_cast<double>(nodes);
  if (s.throughput_scope == "per-TiB") return w * provisioned_bytes / kTiB;
  return w;
}

const StorageSpec* ObjectStore(const Catalog& cat, const std::string& provider) {
  for (const auto& s : cat.storage)
    if (s.provider == provider && s.tier == "object" && s.write_bytes_per_s) return &s;
  return nullptr;
}

// Stall and durability of a synchronous write (R§3): training waits until it is written.
void Timing(CheckpointTarget& t, double bytes) {
  t.stall_s = bytes / t.write_bytes_per_s;
  t.durable_s = t.stall_s;
}

// The asynchronous form of a target (R§3): a snapshot to host memory (each GPU its shard over its
// host link) blocks training, the write follows in the background.
CheckpointTarget Async(const CheckpointTarget& t, double bytes, const CheckpointTargetInputs& in) {
  CheckpointTarget a = t;
  const double snapshot_s = in.host_bytes_per_s > 0 ? bytes / static_cast<double>(in.gpus) / in.host_bytes_per_s : t.stall_s;
  a.async = true;
  a.sync_stall_s = t.stall_s;
  a.stall_s = std::min(snapshot_s, t.stall_s);
  a.durable_s = snapshot_s + t.durable_s;
  return a;
}

// Parallel-FS capacities tried for a per-TiB row: the minimum that holds the kept checkpoints,
// then doublings (throughput is bought with capacity).
std::vector<double> FsCapacities(const StorageSpec& s, double kept_bytes, const Calibration& cal) {
  const double step = cal.Get("parallel_fs_capacity_step_bytes");
  const double min = std::max(step, std::ceil(kept_bytes / step) * step);
  // Without a capacity price, more capacity would look free: only the minimum is offered.
  if (s.throughput_scope != "per-TiB") return {0};
  if (!s.usd_per_gb_month) return {min};
  std::vector<double> out;
  const int doublings = static_cast<int>(cal.Get("parallel_fs_capacity_doublings"));
  for (int i = 0; i <= doublings; ++i) out.push_back(min * std::pow(2.0, i));
  return out;
}

void AddParallelFs(const StorageSpec& s, const CheckpointSizes& sz, const CheckpointTargetInputs& in, const Calibration& cal,
                   std::vector<CheckpointTarget>& out) {
  const double kept = cal.Get("checkpoints_kept") * sz.intermediate_bytes;
  for (double cap : FsCapacities(s, kept, cal)) {
    CheckpointTarget t;
    t.id = s.id;
    t.kind = "parallel-fs";
    t.provisioned_bytes = cap;
    t.write_bytes_per_s = AggregateWrite(s, in.nodes, cap);
    if (t.write_bytes_per_s <= 0) continue;
    if (s.usd_per_gb_month) t.usd_per_hour = cap / 1e9 * *s.usd_per_gb_month / kHoursPerMonth;
    Timing(t, sz.intermediate_bytes);
    t.final_save_s = sz.final_bytes / t.write_bytes_per_s;
    t.detail = cap > 0 ? Fmt("%.1f TiB provisioned x %.0f MB/s per TiB", cap / kTiB, *s.write_bytes_per_s / 1e6)
                       : Fmt("%.0f MB/s for the file system", t.write_bytes_per_s / 1e6);
    out.push_back(t);
  }
}

// An object store at the row's rate, or (assumed_bytes_per_s_per_node > 0) at the fallback rate.
void AddObject(const StorageSpec& s, const CheckpointSizes& sz, const CheckpointTargetInputs& in, std::vector<CheckpointTarget>& out,
               double assumed_bytes_per_s_per_node = 0) {
  CheckpointTarget t;
  t.id = s.id;
  t.kind = "object";
  t.assumed = assumed_bytes_per_s_per_node > 0;
  t.write_bytes_per_s = t.assumed ? assumed_bytes_per_s_per_node * static_cast<double>(in.nodes) : AggregateWrite(s, in.nodes, 0);
  if (t.write_bytes_per_s <= 0) return;
  Timing(t, sz.intermediate_bytes);
  t.final_save_s = sz.final_bytes / t.write_bytes_per_s;
  t.usd_per_hour = 0.0;  // capacity is billed per GB-month with the dataset (planner §4)
  if (t.assumed)
    t.detail = Fmt("assumed %.0f MB/s per node x %.0f nodes", assumed_bytes_per_s_per_node / 1e6, static_cast<double>(in.nodes));
  else
    t.detail = s.throughput_scope == "per-node"
                   ? Fmt("multipart from %.0f nodes x %.0f MB/s", static_cast<double>(in.nodes), *s.write_bytes_per_s / 1e6)
                   : Fmt("%.0f MB/s", t.write_bytes_per_s / 1e6);
  out.push_back(t);
}

// Local NVMe first (each node its shard), uploaded to the object store in the background: the
// stall is the local write, durability waits for the upload (R§3). Without an object store the
// checkpoint stays on the node (node_local). upload_bytes_per_s: aggregate, 0 = no upload.
void AddLocalThenUpload(const StorageSpec* obj, double upload_bytes_per_s, bool assumed, const CheckpointSizes& sz,
                        const CheckpointTargetInputs& in, const Calibration& cal, std::vector<CheckpointTarget>& out) {
  if (!in.local_nvme_bytes) return;
  const double nodes = static_cast<double>(in.nodes);
  const double per_node = sz.intermediate_bytes / nodes;
  if (per_node * 2 > *in.local_nvme_bytes) return;  // keeps the one being uploaded and the next
  const double local_per_node = cal.Get("local_nvme_write_bytes_per_s_per_node");
  CheckpointTarget t;
  t.assumed = assumed;
  t.write_bytes_per_s = local_per_node * nodes;
  t.stall_s = sz.intermediate_bytes / t.write_bytes_per_s;
  t.usd_per_hour = 0.0;
  if (obj && upload_bytes_per_s > 0) {
    t.kind = "local-nvme+upload";
    t.id = "local NVMe -> " + obj->id;
    t.durable_s = t.stall_s + sz.intermediate_bytes / upload_bytes_per_s;
    t.final_save_s = sz.final_bytes / upload_bytes_per_s;  // the final save must reach durable storage
    t.detail = Fmt(assumed ? "%.1f GB/s local per node, then an assumed %.0f MB/s upload" : "%.1f GB/s local per node, then %.0f MB/s upload",
                   local_per_node / 1e9, upload_bytes_per_s / 1e6);
  } else {
    t.kind = "local-nvme";
    t.id = "local NVMe";
    t.node_local = true;
    t.durable_s = t.stall_s;
    t.final_save_s = sz.final_bytes / t.write_bytes_per_s;
    t.detail = Fmt("%.1f GB/s per node; no object store in the catalog: copy it off the node", local_per_node / 1e9);
  }
  out.push_back(t);
}

// R§3 fallback when no storage row of the provider has a write rate: what the instance row has.
// Local NVMe at the data's conservative rate, uploaded to the provider's object store (if any) at
// an assumed rate; else that object store alone; else the instance's own disk. Flagged assumed.
void AddFallback(const Catalog& cat, const CheckpointSizes& sz, const CheckpointTargetInputs& in, const Calibration& cal,
                 std::vector<CheckpointTarget>& out) {
  const StorageSpec* obj = nullptr;
  for (const auto& s : cat.storage)
    if (s.provider == in.provider && s.tier == "object") {
      obj = &s;
      break;
    }
  const double upload_per_node = cal.Get("object_store_write_bytes_per_s_per_node_assumed");
  AddLocalThenUpload(obj, obj ? upload_per_node * static_cast<double>(in.nodes) : 0, true, sz, in, cal, out);
  if (!out.empty()) return;
  if (obj) {
    AddObject(*obj, sz, in, out, upload_per_node);
    return;
  }
  CheckpointTarget t;
  t.id = "instance disk";
  t.kind = "instance-disk";
  t.assumed = true;
  t.node_local = true;
  const double per_node = cal.Get("instance_disk_write_bytes_per_s_assumed");
  t.write_bytes_per_s = per_node * static_cast<double>(in.nodes);
  Timing(t, sz.intermediate_bytes);
  t.final_save_s = sz.final_bytes / t.write_bytes_per_s;
  t.usd_per_hour = 0.0;
  t.detail = Fmt("assumed %.0f MB/s per node; no local NVMe or object store in the catalog", per_node / 1e6);
  out.push_back(t);
}

// A target no better on stall, durability, final save and price than another, and worse on one,
// can never be the best choice: dropped before the search prices each layout with each target.
bool Dominates(const CheckpointTarget& a, const CheckpointTarget& b) {
  if (!a.usd_per_hour || !b.usd_per_hour) return false;
  const bool no_worse = a.stall_s <= b.stall_s && a.durable_s <= b.durable_s && a.final_save_s <= b.final_save_s &&
                        *a.usd_per_hour <= *b.usd_per_hour;
  const bool better = a.stall_s < b.stall_s || a.durable_s < b.durable_s || a.final_save_s < b.final_save_s ||
                      *a.usd_per_hour < *b.usd_per_hour;
  return no_worse && better;
}

std::vector<CheckpointTarget> Undominated(const std::vector<CheckpointTarget>& all) {
  std::vector<CheckpointTarget> out;
  for (const auto& t : all)
    if (std::none_of(all.begin(), all.end(), [&](const CheckpointTarget& o) { return Dominates(o, t); })) out.push_back(t);
  return out;
}
}  // namespace

namespace {
// Every synchronous target: the pinned row's (where it is this provider's), else every row of the
// provider with a write rate; the fallback when none has one.
std::vector<CheckpointTarget> SyncTargets(const CheckpointSizes& sz, const CheckpointTargetInputs& in, const Catalog& catalog,
                                          const Calibration& cal) {
  std::vector<CheckpointTarget> out;
  if (!in.pinned_storage.empty()) {
    auto pinned = catalog.FindStorage(in.pinned_storage);
    if (pinned.ok() && (pinned->provider == in.provider || pinned->provider.empty())) {
      const StorageSpec* obj = ObjectStore(catalog, in.provider);
      if (pinned->tier == "parallel-fs") AddParallelFs(*pinned, sz, in, cal, out);
      else if (pinned->tier == "local-nvme") AddLocalThenUpload(obj, obj ? AggregateWrite(*obj, in.nodes, 0) : 0, false, sz, in, cal, out);
      else AddObject(*pinned, sz, in, out);
      for (auto& t : out) t.kind = "pinned " + t.kind;
      return out;  // a pinned row without a write rate leaves no target: the caller says so
    }
  }
  const StorageSpec* obj = ObjectStore(catalog, in.provider);
  if (obj) AddLocalThenUpload(obj, AggregateWrite(*obj, in.nodes, 0), false, sz, in, cal, out);
  for (const auto& s : catalog.storage) {
    if (s.provider != in.provider || !s.write_bytes_per_s) continue;
    if (s.tier == "parallel-fs") AddParallelFs(s, sz, in, cal, out);
    else if (s.tier == "object") AddObject(s, sz, in, out);
  }
  if (out.empty()) AddFallback(catalog, sz, in, cal, out);
  return out;
}
}  // namespace

std::vector<CheckpointTarget> CheckpointTargets(const CheckpointSizes& sz, const CheckpointTargetInputs& in,
                                                const Catalog& catalog, const Calibration& cal) {
  std::vector<CheckpointTarget> out = SyncTargets(sz, in, catalog, cal);
  if (in.async) {
    for (auto& t : out) t = Async(t, sz.intermediate_bytes, in);
    return Undominated(out);
  }
  out = Undominated(out);
  if (!in.choose_async || in.host_bytes_per_s <= 0) return out;
  // The async copies compete among themselves: the search takes one only where it is worth it.
  std::vector<CheckpointTarget> async;
  for (const auto& t : out) async.push_back(Async(t, sz.intermediate_bytes, in));
  for (auto& t : Undominated(async)) out.push_back(std::move(t));
  return out;
}

namespace {
// The most specific of <prefix>.<provider>.<family>, <prefix>.<provider>, <prefix>.default.
std::string MostSpecificKey(const std::string& prefix, const std::string& provider, const std::string& gpu_family, const Calibration& cal) {
  for (const std::string& key : {prefix + "." + provider + "." + gpu_family, prefix + "." + provider, prefix + ".default"})
    if (cal.Has(key)) return key;
  return "";
}
}  // namespace

EventRates LookupEventRates(const std::string& provider, const std::string& gpu_family, bool spot, int64_t gpus,
                            int64_t nodes, double startup_restart_s, const Calibration& cal,
                            std::optional<double> pinned_interruptions_per_node_hour) {
  EventRates r;
  r.failures_per_s = cal.Get("gpu_failure_rate_per_gpu_day") * static_cast<double>(gpus) / 86400;
  r.failure_restart_s = cal.Get("restart_overhead_s");
  if (!spot) return r;
  if (pinned_interruptions_per_node_hour) {
    r.interruptions_per_node_hour = *pinned_interruptions_per_node_hour;
    r.interruption_source = "constraints.spot_interruptions_per_node_hour";
  } else if (const std::string key = MostSpecificKey("spot_interruptions_per_node_hour", provider, gpu_family, cal); !key.empty()) {
    r.interruptions_per_node_hour = cal.Get(key);
    r.interruption_source = key;
  }
  if (const std::string key = MostSpecificKey("spot_reclaim_notice_s", provider, gpu_family, cal); !key.empty())
    r.reclaim_notice_s = cal.Get(key);
  r.interruptions_per_s = r.interruptions_per_node_hour * static_cast<double>(nodes) / kSecondsPerHour;
  r.interruption_restart_s = startup_restart_s;
  return r;
}

// R§5: Young (1974) interval sqrt(2·C·M) from the stall C and the MTBF M of all events, capped
// at the run; Daly (2006) first-order wall-clock W = (T + n·C) / (1 − Σλ_k (R_k + τ/2 + D)) with
// D the time until a checkpoint is durable.
WallClock ComputeWallClock(const WallClockInputs& in) {
  WallClock w;
  w.train_s = in.train_s;
  w.startup_s = in.startup_s;
  w.final_save_s = in.final_save_s;
  const double lambda = in.rates.failures_per_s + in.rates.interruptions_per_s;
  double tau = in.train_s;
  double young_s = 0;
  if (in.pinned_interval_s > 0) tau = in.pinned_interval_s;
  else if (lambda > 0 && in.stall_s > 0) tau = std::max({young_s = std::sqrt(2 * in.stall_s / lambda), in.min_interval_s, in.durable_s});
  tau = std::max(1.0, std::min(tau, in.train_s));
  // The floor, not Young's interval nor the durable time nor the run's length, set the interval.
  w.interval_floored = in.pinned_interval_s <= 0 && young_s > 0 && young_s < in.min_interval_s && tau == in.min_interval_s;
  // A pinned interval is the policy as given (the run may be shorter); the loss math uses tau.
  w.interval_s = in.pinned_interval_s > 0 ? in.pinned_interval_s : tau;
  w.checkpoints = std::max<int64_t>(0, static_cast<int64_t>(std::ceil(in.train_s / tau - 1e-9)) - 1);
  w.checkpoint_stall_s = static_cast<double>(w.checkpoints) * in.stall_s;
  const double per_event_lost = tau / 2 + in.durable_s;
  const double loss_rate = in.rates.failures_per_s * (in.rates.failure_restart_s + per_event_lost) +
                           in.rates.interruptions_per_s * (in.rates.interruption_restart_s + per_event_lost);
  const double useful = in.train_s + w.checkpoint_stall_s;
  if (loss_rate >= 0.5) {  // half of every hour lost: the first-order model no longer holds
    w.converges = false;
    w.expected_lost_s = useful;  // reported as at least doubling the run
  } else {
    w.expected_lost_s = useful / (1 - loss_rate) - useful;
  }
  const double run_s = useful + w.expected_lost_s;
  w.expected_failures = in.rates.failures_per_s * run_s;
  w.expected_interruptions = in.rates.interruptions_per_s * run_s;
  w.time_s = in.startup_s + run_s + in.final_save_s;
  w.goodput = w.time_s > 0 ? in.train_s / w.time_s : 1;
  return w;
}

CheckpointSizes SizeCheckpoints(const Job& j) {
  CheckpointSizes s;
  const bool lora = IsAdapterMethod(j.training.method);
  const double params = lora ? static_cast<double>(CountLoraParams(j.arch, j.training.lora)) : static_cast<double>(CountParams(j.arch).total);
  // io.md §2's per-parameter bytes: weights + optimizer state (an adapter with its AdamW state: 16 B),
  // whatever checkpoint_full_state says (the step's checkpoint_bytes follows it).
  s.full_state_bytes = lora ? params * 16 : params * (WeightBytesPerParam(j) + OptimizerBytesPerParam(j));
  s.weights_only_bytes = lora ? params * 2 : params * WeightBytesPerParam(j);  // a LoRA adapter ships in bf16
  s.intermediate_bytes = j.training.checkpoint_full_state ? s.full_state_bytes : s.weights_only_bytes;
  // A fine-tune ships weights (a LoRA run its adapter); pretraining keeps the resumable state.
  if (j.training.method == Method::kPretrain) {
    s.final_bytes = s.full_state_bytes;
    s.final_content = "full state";
  } else {
    s.final_bytes = s.weights_only_bytes;
    s.final_content = lora ? "adapter only" : "weights only";
  }
  return s;
}

JobWallClock EstimateJobWallClock(const Job& job, const HardwareContext& hw, const StepEstimate& e, const Catalog& catalog,
                                  const Calibration& cal) {
  JobWallClock out;
  out.sizes = SizeCheckpoints(job);
  const int64_t nodes = (job.cluster.num_gpus + job.cluster.gpus_per_node - 1) / job.cluster.gpus_per_node;
  std::string provider;
  std::optional<double> read;
  if (hw.storage) {
    provider = hw.storage->provider;
    read = hw.storage->read_bytes_per_s;
  }
  out.startup = EstimateStartup(StartupInputsFor(job, nodes, read), cal);
  if (hw.storage) {
    CheckpointTargetInputs ci;
    ci.provider = provider;
    ci.nodes = nodes;
    ci.gpus = job.cluster.num_gpus;
    ci.host_bytes_per_s = hw.host_bytes_per_s;
    ci.async = job.training.checkpoint_async;
    ci.pinned_storage = hw.storage->id;
    auto targets = CheckpointTargets(out.sizes, ci, catalog, cal);
    if (!targets.empty()) out.target = targets.front();
  }
  out.rates = LookupEventRates(provider, hw.gpu.family, false, job.cluster.num_gpus, nodes, 0, cal);
  WallClockInputs w;
  const double steps = e.tokens_per_step > 0 ? job.training.tokens / e.tokens_per_step : 0;
  w.train_s = steps * (e.step_time_s - e.breakdown.checkpoint_s);
  w.startup_s = out.startup.Total();
  w.rates = out.rates;
  if (out.target) {
    w.stall_s = out.target->stall_s;
    w.durable_s = out.target->durable_s;
    w.final_save_s = out.target->final_save_s;
  }
  if (job.IsSet("training.checkpoint_interval_min")) w.pinned_interval_s = job.training.checkpoint_interval_min * 60;
  w.min_interval_s = cal.Get("checkpoint_interval_floor_s");
  out.wall = ComputeWallClock(w);
  return out;
}

StartupInputs StartupInputsFor(const Job& job, int64_t nodes, std::optional<double> store_read_bytes_per_s_per_node) {
  StartupInputs in;
  in.nodes = nodes;
  const Method m = job.training.method;
  if (m != Method::kPretrain)
    in.weights_bytes = static_cast<double>(CountParams(job.arch).total) * (m == Method::kQlora ? 2.0 : WeightBytesPerParam(job));
  in.dataset_bytes = job.training.tokens * job.training.data_bytes_per_token / static_cast<double>(nodes);
  in.store_read_bytes_per_s_per_node = store_read_bytes_per_s_per_node;
  return in;
}

StartupBreakdown EstimateStartup(const StartupInputs& in, const Calibration& cal) {
  StartupBreakdown s;
  // Owned or already running machines boot nothing (R§1); a provider's own figure where the data has one.
  if (in.owned) s.provision_s = cal.Get("startup_provision_s.owned");
  else if (cal.Has("startup_provision_s." + in.provider)) s.provision_s = cal.Get("startup_provision_s." + in.provider);
  else s.provision_s = cal.Get("startup_provision_s");
  s.image_pull_s = cal.Get("startup_image_bytes") / cal.Get("startup_image_pull_bytes_per_s");
  const double read = in.store_read_bytes_per_s_per_node.value_or(cal.Get("startup_download_bytes_per_s_per_node"));
  s.weights_s = in.weights_bytes / read;
  s.dataset_s = in.dataset_bytes / read;
  return s;
}

}  // namespace gpuplan
