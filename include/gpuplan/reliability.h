// Failures, spot interruptions, checkpoint policy, start-up and the wall-clock a user sees
// (docs/model/reliability.md mirrors this one-to-one; section numbers are its R§n).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"

namespace gpuplan {

// R§1 start-up: from "launch" to the first training step, on every node in parallel.
struct StartupBreakdown {
  double provision_s = 0;   // nodes booted, drivers up, joined to the job
  double image_pull_s = 0;  // the training container image pulled to each node
  double weights_s = 0;     // base weights downloaded to each node (fine-tunes; 0 for pretraining)
  double dataset_s = 0;     // dataset staged to each node's local disk or read from the store
  double Total() const { return provision_s + image_pull_s + weights_s + dataset_s; }
};

// R§2 checkpoint sizes by content.
struct CheckpointSizes {
  double full_state_bytes = 0;   // weights + optimizer state (+ master weights): resumable
  double weights_only_bytes = 0; // weights in the compute dtype (LoRA: the adapter only)
  double intermediate_bytes = 0; // what each periodic checkpoint writes (the job's choice)
  double final_bytes = 0;        // what the final save writes (a fine-tune keeps weights only)
  std::string final_content;     // "weights only" | "adapter only" | "full state"
};

// R§2 sizes for a job (checkpoint_full_state picks the periodic content).
CheckpointSizes SizeCheckpoints(const Job& job);

// R§3 one place a checkpoint can go, with what it costs the run.
struct CheckpointTarget {
  std::string id;                // storage row id ("local NVMe -> <object id>" for the two-step target)
  std::string kind;              // local-nvme+upload | parallel-fs | object, "pinned " before it when pinned
  double write_bytes_per_s = 0;  // aggregate over the job's nodes, as written
  double stall_s = 0;            // training blocked per checkpoint
  double durable_s = 0;          // until the checkpoint survives losing a node (>= stall_s)
  double final_save_s = 0;       // the final save (final_bytes), synchronous to durable storage
  double provisioned_bytes = 0;  // parallel FS capacity bought for throughput (0 = not provisioned)
  std::optional<double> usd_per_hour;  // provisioned capacity; nullopt = price unknown
  std::string detail;            // how write_bytes_per_s follows from the row
  bool assumed = false;          // a rate from the fallback data (no storage row with a write rate): said in output
  bool async = false;            // written in the background after a snapshot to host memory (R§3)
  double sync_stall_s = 0;       // async targets: the stall the same write costs synchronously
  bool node_local = false;       // stays on the node (no object store): lost with the node
};

struct CheckpointTargetInputs {
  std::string provider;
  int64_t nodes = 1;
  int64_t gpus = 1;
  std::optional<double> local_nvme_bytes;  // per node
  double host_bytes_per_s = 0;             // GPU -> host, per GPU (async snapshot)
  bool async = false;                      // training.checkpoint_async
  bool choose_async = false;               // async not pinned: offer an async copy of each target (R§3)
  std::string pinned_storage;              // cluster.storage ("" = search)
};

// Every checkpoint target of the provider (or the pinned one where it is this provider's).
std::vector<CheckpointTarget> CheckpointTargets(const CheckpointSizes& sizes, const CheckpointTargetInputs& in,
                                                const Catalog& catalog, const Calibration& cal);

// R§4 rates of losing the job.
struct EventRates {
  double failures_per_s = 0;       // hardware failures, whole job
  double interruptions_per_s = 0;  // spot reclaims, whole job
  double failure_restart_s = 0;    // per failure: reschedule, reload, warm up
  double interruption_restart_s = 0;  // per reclaim: new nodes, image, reload
  double interruptions_per_node_hour = 0;  // as looked up (for the report)
  std::string interruption_source;         // calibration key used
  double reclaim_notice_s = 0;             // spot: warning before a reclaim (spot_reclaim_notice_s.*); 0 = on demand
};
// pinned_interruptions_per_node_hour: constraints.spot_interruptions_per_node_hour (replaces the data's rate).
EventRates LookupEventRates(const std::string& provider, const std::string& gpu_family, bool spot, int64_t gpus,
                            int64_t nodes, double startup_restart_s, const Calibration& cal,
                            std::optional<double> pinned_interruptions_per_node_hour = std::nullopt);

// R§5 the wall-clock: steps + start-up + checkpoint stalls + expected lost work and restarts + final save.
struct WallClockInputs {
  double train_s = 0;            // the steps alone (tokens / tokens per second)
  double startup_s = 0;
  EventRates rates;
  double stall_s = 0, durable_s = 0, final_save_s = 0;  // from the checkpoint target
  double pinned_interval_s = 0;  // training.checkpoint_interval_min when set; 0 = Young
  double min_interval_s = 0;     // Young's interval is never shorter (checkpoint_interval_floor_s); 0 = none
};

struct WallClock {
  double time_s = 0;             // what the user waits: startup + run + final save
  double train_s = 0;
  double startup_s = 0;
  double interval_s = 0;         // between checkpoints (capped at the run)
  bool interval_floored = false; // Young's interval was raised to min_interval_s (checkpoint_interval_floor_s)
  int64_t checkpoints = 0;       // periodic ones (the final save is separate)
  double checkpoint_stall_s = 0; // all periodic stalls
  double expected_failures = 0, expected_interruptions = 0;
  double expected_lost_s = 0;    // re-done work and restarts
  double final_save_s = 0;
  double goodput = 1;            // train_s / time_s
  bool converges = true;         // false: losses outrun progress (events too frequent for the interval)
};
WallClock ComputeWallClock(const WallClockInputs& in);

// R§1 start-up for one setup.
struct StartupInputs {
  int64_t nodes = 1;
  std::string provider;          // startup_provision_s.<provider> when the data has it (onprem: 0)
  bool owned = false;            // machines already running (a price of 0): startup_provision_s.owned
  double weights_bytes = 0;      // base weights to download (0: pretraining)
  double dataset_bytes = 0;
  std::optional<double> store_read_bytes_per_s_per_node;  // the provider's object store, if known
};
// The start-up inputs of a job on `nodes` nodes: a fine-tune downloads its base weights (QLoRA's
// in bf16, quantized on load), every run stages its dataset share.
StartupInputs StartupInputsFor(const Job& job, int64_t nodes, std::optional<double> store_read_bytes_per_s_per_node);
StartupBreakdown EstimateStartup(const StartupInputs& in, const Calibration& cal);

// R§1-R§5 for one pinned job (`gpuplan estimate`): on demand, checkpoints to the job's
// cluster.storage when it has a write rate (else none), start-up at its store's read rate.
struct JobWallClock {
  StartupBreakdown startup;
  CheckpointSizes sizes;
  std::optional<CheckpointTarget> target;
  EventRates rates;
  WallClock wall;
};
JobWallClock EstimateJobWallClock(const Job& job, const HardwareContext& hw, const StepEstimate& e, const Catalog& catalog,
                                  const Calibration& cal);

}  // namespace gpuplan
