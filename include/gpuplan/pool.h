// Mixed pools (docs/model/pools.md): the cards a team owns or rents, in groups of one card type, and one training
// job evaluated over them with uneven pipeline stages and stages (or data-parallel replicas) on different cards.
//
//   auto pool = LoadPoolFile("examples/pool-lab.yaml", catalog);          // groups, in the order listed
//   auto layout = LayoutFromJob(job, *pool);                              // parallel.* + parallel.layer_split
//   auto est = EstimateOnPool(job, *pool, *layout, catalog, cal);         // per stage: cards, layers, time, memory
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuplan/calibration.h"
#include "gpuplan/catalog.h"
#include "gpuplan/estimate.h"
#include "gpuplan/job.h"
#include "gpuplan/memory.h"

namespace gpuplan {

// One group of identical nodes.
struct PoolGroup {
  std::string name;                 // unique in the pool
  std::string gpu;                  // a catalog GPU id (or alias, resolved to the id on load)
  int64_t nodes = 0;                // nodes in the group (>= 1)
  int64_t gpus_per_node = 0;        // >= 1
  int64_t nodes_available = 0;      // Default: 0 = all `nodes` (fewer when some are busy or broken)
  std::string intra_node;           // link id; Default: "" = the GPU's own link (catalog)
  std::string network;              // link id; a {kind, gbps} network becomes the pool link "pool-<name>-network"
  std::optional<double> price_per_gpu_hour;  // USD; a price_per_node_hour in the file is divided by gpus_per_node
  std::string price_note;           // where the price came from ("pool file", "ledger", ...)
  Location where;                   // the group's line in the pool file
  int64_t NodesUsable() const { return nodes_available > 0 ? nodes_available : nodes; }
  int64_t GpusUsable() const { return NodesUsable() * gpus_per_node; }
};

struct Pool {
  std::string name;                 // Default: the file's stem
  std::string file;
  std::vector<PoolGroup> groups;    // in the order listed: the order ranks are placed in
  std::vector<LinkSpec> links;      // networks given as {kind, gbps}: added to the catalog by AddPoolLinks
  int64_t GpusUsable() const;
};

// Parses a pool file (YAML/JSON):
//   pool: NAME (optional)
//   groups:
//     - {name, gpu, nodes, gpus_per_node, intra_node?, network?, nodes_available?, price_per_gpu_hour? |
//        price_per_node_hour?}
// `network` is a links-catalog id or {kind: tcp|roce|infiniband|efa|..., gbps: N}. Every GPU and link is checked
// against the catalog; errors carry file:line: key.
Result<Pool> ParsePoolText(const std::string& text, const std::string& file, const Catalog& catalog);
Result<Pool> LoadPoolFile(const std::string& path, const Catalog& catalog);
// The catalog with the pool's own links ({kind, gbps} networks) added.
Catalog WithPoolLinks(const Catalog& catalog, const Pool& pool);

// Where a job's ranks sit on a pool: the groups used along the pipeline (in rank order), the nodes of each used,
// uniform tp/cp/dp, and the blocks of each pipeline stage.
struct PoolLayout {
  std::vector<size_t> order;        // pool group indices, in rank order (pp slowest): the first holds stage 0
  std::vector<int64_t> nodes;       // nodes used of each group in `order` (same length)
  int64_t tp = 1, cp = 1, dp = 1, pp = 1, vpp = 1;
  std::vector<int64_t> layer_split; // blocks per stage (size pp, sum = arch.layers); the embedding rides on the
                                    // first stage, the head on the last
  int64_t micro_batch = 1;
  int64_t Gpus() const { return tp * cp * dp * pp; }
};

// The pinned layout of `job` over `pool`: parallel.tp/cp/pp/dp (dp = the GPUs the pool offers / (tp cp pp) when
// unset), parallel.layer_split (Default: even, the remainder on the first stages), the groups in the order listed,
// filled node by node until tp*cp*dp*pp GPUs are placed (Megatron's rank order: tp, cp, dp fastest, pp slowest).
// Bad input when the pool is too small, a split does not add up, or a tensor-parallel group would span two nodes.
Result<PoolLayout> LayoutFromJob(const Job& job, const Pool& pool);

// A job read without FinalizeJob, finalized for a pool: dp and num_gpus from LayoutFromJob, the first group's GPU
// and node size as the job's own (what the checks of FinalizeJob read). Planners pass the unpinned job the same way.
Result<Job> FinalizeJobForPool(Job job, const Pool& pool);

// The cards of one group that one pipeline stage holds.
struct StagePart {
  size_t group = 0;                 // pool group index
  int64_t gpus = 0;                 // this stage's GPUs in that group
  int64_t replicas = 0;             // data-parallel replicas (of tp*cp GPUs) among them
  double microbatch_s = 0;          // one micro-batch, forward + backward (+ recompute), with its exposed TP traffic
  MemoryBreakdown memory;           // per GPU on this card
  double capacity_bytes = 0;        // the card's memory
  bool fits = false;
};

struct StageEstimate {
  int64_t stage = 0;
  int64_t layers = 0;               // transformer blocks (the embedding on stage 0, the head on the last)
  std::vector<StagePart> parts;     // one per card type among the stage's replicas
  size_t pacing_part = 0;           // the part whose micro-batch is slowest: the stage's pace
  double microbatch_s = 0;          // = parts[pacing_part].microbatch_s
  double after_s = 0;               // exposed DP/CP/EP traffic, optimizer and fixed work after the last micro-batch
};

struct IdleCards {
  size_t group = 0;
  int64_t gpus = 0;
  std::string why;                  // a sentence a user can act on
};

struct PoolEstimate {
  PoolLayout layout;
  std::vector<StageEstimate> stages;
  StepBreakdown breakdown;          // compute = the pipeline's busy part, bubble = its fill and drain
  double step_time_s = 0;
  double tokens_per_step = 0, tokens_per_s = 0;
  double mfu = 0;                   // against the sum of the used cards' peaks
  double time_to_train_s = 0;       // 0 without training.tokens
  std::optional<double> cost_per_hour_usd;  // the used cards' prices (nullopt when a used group is unpriced)
  std::optional<double> cost_usd;           // time_to_train x cost per hour
  std::vector<IdleCards> idle;
  std::vector<std::string> placement;       // one line per stage: "stage 0: ranks 0-15 on a100 (2 nodes x 8)"
  bool fits = true;                 // every part fits its card's memory
  std::string not_fit_reason;       // the first part that does not, in words
};

// MX§2 the job one stage part stands for: the part's card (`g`), network and node size, the layout's tp/cp/dp/pp and
// micro-batch, and pp stages of `layers` blocks each (a homogeneous job: EstimateStep and EstimateMemoryForStage
// price it). The planner (pool_plan.cc) calls it directly so its cache prices exactly what EstimateOnPool does.
Job PartJob(const Job& job, const PoolLayout& l, const PoolGroup& g, int64_t layers, const std::string& network,
            int64_t gpus_per_node);

// MX§1-§4: every stage part is the homogeneous model of a job whose every stage were that part (same card, tp,
// blocks, micro-batch); the pipeline runs at m x the slowest stage plus the others' fill and drain; a stage is
// paced by its slowest card; memory is checked per card. A pool of one type gives the homogeneous estimate.
Result<PoolEstimate> EstimateOnPool(const Job& job, const Pool& pool, const PoolLayout& layout, const Catalog& catalog,
                                    const Calibration& cal);

}  // namespace gpuplan
