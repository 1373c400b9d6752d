// enumerate -> prune -> estimate -> rank (docs/model/planner.md mirrors this).
#include "gpuplan/plan.h"

#include "gpuplan/strings.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>

namespace gpuplan {

std::string ToString(Tier t) {
  switch (t) {
    case Tier::kSingleCard: return "L1 single card";
    case Tier::kSingleNode: return "L2 single node, multi-card";
    case Tier::kMultiNode: return "L3 multi-node";
  }
  return "";
}

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kTiB = 1024.0 * kGiB;
// Issue 4 / seed 000 §7.1: communication should stay under 20% of the step.
constexpr double kMaxCommShare = 0.2;
// The bandwidth search spans 50 Mb/s (a slow office link) to 6.4 Tb/s per node (p6-b300, the
// fastest node in the catalog), in bits/s; converted to bytes per second per GPU where used.
constexpr double kMinNodeBitsPerS = 0.05e9, kMaxNodeBitsPerS = 6400e9;

// One purchasable hardware setup: an instance row at a price kind.
struct Setup {
  InstanceSpec inst;
  std::string price_kind;        // on-demand | spot
  std::optional<double> price;   // per node-hour
  std::string intra, network;    // link ids ("" = default for the GPU)
  int64_t nics = 0;
  bool multi_node_ok = true;
  std::string multi_node_why;
};

// Per (setup, node count): the fastest feasible layout (cost is proportional to time for a fixed
// setup, so the fastest layout is also the cheapest).
struct Best {
  bool found = false;
  size_t setup = 0;
  int64_t nodes = 0;
  ParallelSpec par;
  int64_t micro_batch = 0;
  Recompute recompute = Recompute::kNone;
  double time_s = 0, memory_bytes = 0, cost_usd = 0;
  bool price_known = false;
};

struct ThreadState {
  std::vector<Best> bests;
  std::map<std::string, int64_t> rejected;
  int64_t considered = 0, evaluated = 0;
  double fastest_any_s = 1e300, cheapest_any_usd = 1e300;  // ignoring deadline/budget
  bool any_fits_memory = false;
};

std::vector<int64_t> NodeCounts(int64_t max_nodes) {
  // Every count up to 8, then powers of two and 1.5x powers of two (docs/model/planner.md §2).
  std::vector<int64_t> out;
  for (int64_t n = 1; n <= std::min<int64_t>(8, max_nodes); ++n) out.push_back(n);
  for (int64_t p = 8; p <= max_nodes; p *= 2) {
    if (p > 8) out.push_back(p);
    if (p * 3 / 2 <= max_nodes && p * 3 / 2 > 8) out.push_back(p * 3 / 2);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// §4 storage and requests for the run: dataset + kept checkpoints on the provider's object store.
void StorageCost(const Job& j, const Catalog& cat, const Calibration& cal, const std::string& provider, double hours,
                 double ckpt_bytes, CostBreakdown& c, StoragePlan* sp) {
  const double dataset = j.training.tokens * j.training.data_bytes_per_token;
  const StorageSpec* obj = nullptr;
  for (const auto& s : cat.storage)
    if (s.provider == provider && s.tier == "object" && s.usd_per_gb_month) {
      obj = &s;
      break;
    }
  const double months = hours / (24 * 30);
  const double kept = cal.Get("checkpoints_kept");
  if (obj) {
    c.storage_usd = (dataset + kept * ckpt_bytes) / 1e9 * *obj->usd_per_gb_month * months;
    const double ckpts = std::max(1.0, hours * 60 / j.training.checkpoint_interval_min);
    const double puts = ckpts * std::ceil(ckpt_bytes / cal.Get("object_store_part_bytes"));
    c.requests_usd = puts / 1000 * obj->usd_per_1k_put.value_or(0);
  }
  if (sp) {
    sp->dataset_bytes = dataset;
    sp->dataset_home = obj ? obj->id : "unknown (no priced object store for " + provider + " in the catalog)";
    if (obj && obj->read_bytes_per_s) sp->stage_time_s = dataset / *obj->read_bytes_per_s;
    sp->shared_fs = "none in catalog";
    for (const auto& s : cat.storage)
      if (s.provider == provider && s.tier == "parallel-fs") {
        sp->shared_fs = s.id;
        break;
      }
    sp->checkpoint_bytes = ckpt_bytes;
  }
}

}  // namespace

Result<PlanResult> PlanJob(const Job& job_in, const Catalog& catalog, const Calibration& cal, const PlanOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const Constraints& con = job_in.constraints;
  auto loc = [&](const std::string& key) {
    auto it = job_in.set_keys.find(key);
    return it != job_in.set_keys.end() ? it->second : Location{job_in.source, 0, key};
  };
  {
    // The job must be valid as given (model, pins); defaults derived here are not pins.
    Job check = job_in;
    GPUPLAN_RETURN_IF_ERROR(FinalizeJob(check));
  }
  if (job_in.training.tokens <= 0)
    return Status::BadInput(loc("training.tokens"), "the planner needs training.tokens (how much to train) to size time and cost");
  // Bad constraints are errors (unknown cloud or GPU).
  for (const auto& c : con.clouds) {
    bool known = false;
    for (const auto& i : catalog.instances) known |= i.provider == Lower(c);
    if (!known) {
      std::string all;
      for (const auto& i : catalog.instances)
        if (all.find(i.provider) == std::string::npos) all += (all.empty() ? "" : ", ") + i.provider;
      return Status::BadInput(loc("constraints.clouds"), "unknown cloud '" + c + "' (catalog has: " + all + ")");
    }
  }
  std::vector<std::string> allowed_gpus;
  for (const auto& g : con.gpus) {
    auto spec = catalog.FindGpu(g);
    if (!spec.ok()) return Status::BadInput(loc("constraints.gpus"), spec.status().reason());
    allowed_gpus.push_back(spec->id);
  }
  if (job_in.IsSet("cluster.gpu")) {
    auto spec = catalog.FindGpu(job_in.cluster.gpu);
    if (!spec.ok()) return Status::BadInput(loc("cluster.gpu"), spec.status().reason());
    allowed_gpus = {spec->id};
  }

  auto pinned = [&](const char* key) { return job_in.IsSet(key); };
  PlanResult out;
  // §1 setups: each instance (and its spot variant) with usable facts.
  std::vector<Setup> setups;
  for (const auto& inst : catalog.instances) {
    auto reject = [&](const std::string& why) { ++out.rejected["instance skipped: " + why]; };
    if (inst.gpu_count <= 0) { reject("GPU count unknown"); continue; }
    if (!con.clouds.empty() && std::none_of(con.clouds.begin(), con.clouds.end(), [&](const std::string& c) { return Lower(c) == inst.provider; })) {
      reject("cloud not allowed");
      continue;
    }
    if (!allowed_gpus.empty() && std::find(allowed_gpus.begin(), allowed_gpus.end(), inst.gpu_id) == allowed_gpus.end()) {
      reject("GPU not allowed");
      continue;
    }
    if (job_in.IsSet("cluster.gpus_per_node") && inst.gpu_count != job_in.cluster.gpus_per_node) { reject("GPUs per node differ from the pin"); continue; }
    Setup s;
    s.inst = inst;
    s.intra = inst.intra_link == "unknown" ? "" : inst.intra_link;
    if (pinned("cluster.intra_node")) s.intra = job_in.cluster.intra_node;
    if (!inst.network_link.empty() && inst.network_link != "unknown") {
      s.network = inst.network_link;
      auto link = catalog.FindLink(inst.network_link);
      if (inst.nics) s.nics = static_cast<int64_t>(*inst.nics);
      else if (link.ok() && inst.network_bits_per_s && link->bw_bytes_per_s_per_dir > 0)
        s.nics = std::max<int64_t>(1, std::llround(*inst.network_bits_per_s / 8 / link->bw_bytes_per_s_per_dir));
      else s.nics = 1;
    } else {
      s.multi_node_ok = false;
      s.multi_node_why = "network unknown";
      s.network = "tcp-10g";  // placeholder for single-node hardware resolution; never used across nodes
      s.nics = 1;
    }
    // A pinned network describes the user's fabric for every instance.
    if (pinned("cluster.network")) {
      s.network = job_in.cluster.network;
      s.multi_node_ok = true;
      s.multi_node_why.clear();
    }
    if (pinned("cluster.nics_per_node")) s.nics = job_in.cluster.nics_per_node;
    if (con.spot != SpotPolicy::kOnly) {
      Setup od = s;
      od.price_kind = "on-demand";
      od.price = inst.on_demand_usd_per_hour;
      setups.push_back(od);
    }
    if (con.spot != SpotPolicy::kNo && inst.spot_usd_per_hour) {
      Setup sp = s;
      sp.price_kind = "spot";
      sp.price = inst.spot_usd_per_hour;
      setups.push_back(sp);
    }
    if (con.spot == SpotPolicy::kOnly && !inst.spot_usd_per_hour) reject("no spot price");
  }
  int64_t unknown_price = 0;
  for (const auto& s : setups) unknown_price += !s.price;
  if (unknown_price > 0)
    out.notes.push_back(std::to_string(unknown_price) + " instance rows have no known price: they are planned for time but not ranked on cost");

  const Arch& a = job_in.arch;
  const int64_t L = a.layers;
  const double tokens = job_in.training.tokens;
  const bool lora = job_in.training.method == Method::kLora || job_in.training.method == Method::kQlora;
  const double mflops = ModelFlopsPerToken(a, job_in.training.seq_len, lora);

  // §2 the layout space (pins restrict it).
  std::vector<int64_t> tps, pps, cps, vpps, mbs;
  std::vector<int> zeros;
  std::vector<Recompute> rcs;
  for (int64_t tp : {1, 2, 4, 8, 16, 32, 64})
    if (a.heads % tp == 0 && (a.KvHeads() % tp == 0 || tp % a.KvHeads() == 0)) tps.push_back(tp);
  for (int64_t pp : {1, 2, 4, 8, 16, 32, 64})
    if (pp <= L) pps.push_back(pp);
  cps = {1};
  if (job_in.training.seq_len >= 16384)
    for (int64_t cp : {2, 4, 8, 16})
      if (job_in.training.seq_len % cp == 0) cps.push_back(cp);
  zeros = {0, 1, 2, 3};
  rcs = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  mbs = {1, 2, 4, 8, 16, 32};
  if (pinned("parallel.tp")) tps = {job_in.parallel.tp};
  if (pinned("parallel.pp")) pps = {job_in.parallel.pp};
  if (pinned("parallel.cp")) cps = {job_in.parallel.cp};
  if (pinned("parallel.zero")) zeros = {job_in.parallel.zero};
  if (pinned("training.recompute")) rcs = {job_in.training.recompute};
  if (pinned("training.micro_batch")) mbs = {job_in.training.micro_batch};
  if (pinned("parallel.vpp")) vpps = {job_in.parallel.vpp};
  const int64_t global_batch = job_in.training.global_batch;
  if (global_batch <= 0 || !pinned("training.global_batch"))
    return Status::BadInput(loc("training.global_batch"), "the planner needs training.global_batch (sequences per optimizer step) so layouts are compared at the same batch");

  // Work items: (setup, node count).
  struct Item { size_t setup; int64_t nodes; };
  std::vector<Item> items;
  for (size_t si = 0; si < setups.size(); ++si) {
    const int64_t per = setups[si].inst.gpu_count;
    const int64_t max_nodes = setups[si].multi_node_ok ? con.max_gpus / per : std::min<int64_t>(1, con.max_gpus / per);
    if (!setups[si].multi_node_ok && con.max_gpus / per > 1) ++out.rejected["multi-node skipped: instance network unknown"];
    for (int64_t n : NodeCounts(max_nodes)) {
      if (pinned("cluster.num_gpus") && n * per != job_in.cluster.num_gpus) continue;
      items.push_back({si, n});
    }
  }
  if (options.progress_total) *options.progress_total = static_cast<int64_t>(items.size());

  // Hardware per setup, resolved once.
  std::vector<std::optional<HardwareContext>> hws(setups.size());
  for (size_t si = 0; si < setups.size(); ++si) {
    Job j = job_in;
    j.cluster.gpu = setups[si].inst.gpu_id;
    j.cluster.gpus_per_node = setups[si].inst.gpu_count;
    j.cluster.num_gpus = setups[si].inst.gpu_count;
    j.cluster.intra_node = setups[si].intra;
    j.cluster.network = setups[si].network;
    j.cluster.nics_per_node = setups[si].nics;
    j.cluster.gpudirect_rdma = setups[si].inst.gpudirect_rdma != "no" && setups[si].inst.rdma != "no";
    auto hw = ResolveHardware(j, catalog, cal);
    if (hw.ok()) hws[si] = *hw;
    else ++out.rejected["instance skipped: " + hw.status().reason()];
  }

  // §4 storage and request fees grow linearly with the run's hours: price them per hour per setup
  // so the budget check covers the whole bill.
  std::vector<double> storage_usd_per_hour(setups.size(), 0);
  {
    // Checkpoint size depends on the model and recipe only (validated at the top of PlanJob).
    Job j = job_in;
    double ckpt = 0;
    if (FinalizeJob(j).ok())
      for (const auto& hw : hws)
        if (hw) {
          ckpt = EstimateStep(j, *hw).checkpoint_bytes;
          break;
        }
    for (size_t si = 0; si < setups.size(); ++si) {
      CostBreakdown c;
      StorageCost(job_in, catalog, cal, setups[si].inst.provider, 1.0, ckpt, c, nullptr);
      storage_usd_per_hour[si] = c.storage_usd + c.requests_usd;
    }
  }
  std::atomic<size_t> next{0};
  std::vector<ThreadState> states(std::max(1, options.threads));
  auto worker = [&](ThreadState& st) {
    Job j = job_in;
    for (size_t idx = next++; idx < items.size(); idx = next++) {
      const Item it = items[idx];
      const Setup& su = setups[it.setup];
      if (options.progress) ++*options.progress;
      if (!hws[it.setup]) continue;
      const HardwareContext& hw = *hws[it.setup];
      const int64_t per = su.inst.gpu_count, gpus = it.nodes * per;
      j.cluster.gpu = su.inst.gpu_id;
      j.cluster.gpus_per_node = per;
      j.cluster.num_gpus = gpus;
      j.cluster.intra_node = su.intra;
      j.cluster.network = su.network;
      j.cluster.nics_per_node = su.nics;
      const double cap = hw.gpu.memory_bytes * (1 - con.min_memory_headroom);
      const double peak = hw.gpu.PeakFlops(j.training.precision).value_or(0);
      // §3 prune the whole group when even the ideal (peak x MAMF) cannot meet the deadline/budget.
      const double lb_s = tokens * mflops / (gpus * peak * hw.k.matmul_eff_max);
      const double usd_per_hour = su.price ? *su.price * it.nodes + storage_usd_per_hour[it.setup] : 0;
      const double lb_usd = usd_per_hour * lb_s / 3600 * con.rerun_factor;
      if (con.deadline_hours > 0 && lb_s > con.deadline_hours * 3600) { ++st.rejected["misses deadline (even at peak; whole setup pruned)"]; continue; }
      if (con.budget_usd > 0 && su.price && lb_usd > con.budget_usd) { ++st.rejected["over budget (even at peak; whole setup pruned)"]; continue; }
      Best best;
      for (int64_t tp : tps) {
        if (gpus % tp) continue;
        for (int64_t cp : cps) {
          for (int64_t pp : pps) {
            if (gpus % (tp * cp * pp)) continue;
            const int64_t dp = gpus / (tp * cp * pp);
            if (pinned("parallel.dp") && dp != job_in.parallel.dp) continue;
            if (job_in.parallel.ep > 1 && (job_in.parallel.ep > dp * tp || a.experts % job_in.parallel.ep != 0)) {
              ++st.rejected["ep does not fit the layout"];
              continue;
            }
            const std::vector<int64_t> vp = !vpps.empty() ? vpps : (pp > 1 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1});
            for (int64_t vpp : vp) {
              if (pp * vpp > L || (vpp > 1 && pp == 1)) continue;
              for (int zero : zeros) {
                if (zero > 0 && dp * cp == 1) continue;
                for (Recompute rc : rcs) {
                  for (int64_t mb : mbs) {
                    ++st.considered;
                    if (tp > per && !con.allow_tp_across_nodes) { ++st.rejected["tp crosses nodes"]; break; }
                    if (global_batch % (dp * mb) != 0) { ++st.rejected["global batch not divisible by dp x micro-batch"]; continue; }
                    j.parallel.tp = tp;
                    j.parallel.pp = pp;
                    j.parallel.cp = cp;
                    j.parallel.dp = dp;
                    j.parallel.vpp = vpp;
                    j.parallel.zero = zero;
                    // Sequence parallel whenever tp > 1 unless pinned; offload and ep as the job says.
                    j.parallel.sequence_parallel = tp > 1 && (!pinned("parallel.sequence_parallel") || job_in.parallel.sequence_parallel);
                    j.parallel.offload = job_in.parallel.offload;
                    j.parallel.ep = job_in.parallel.ep;
                    j.training.micro_batch = mb;
                    j.training.recompute = rc;
                    j.training.global_batch = global_batch;
                    const double mem = EstimateMemory(j, cal, false).total_bytes;
                    if (mem > cap) { ++st.rejected["does not fit GPU memory"]; break; }  // monotone in micro-batch
                    st.any_fits_memory = true;
                    ++st.evaluated;
                    const StepEstimate e = EstimateStep(j, hw);
                    const double time_s = tokens / e.tokens_per_s;
                    const double usd = usd_per_hour * time_s / 3600 * con.rerun_factor;
                    st.fastest_any_s = std::min(st.fastest_any_s, time_s);
                    if (su.price) st.cheapest_any_usd = std::min(st.cheapest_any_usd, usd);
                    if (con.deadline_hours > 0 && time_s > con.deadline_hours * 3600) { ++st.rejected["misses deadline"]; continue; }
                    if (con.budget_usd > 0 && su.price && usd > con.budget_usd) { ++st.rejected["over budget"]; continue; }
                    if (con.budget_usd > 0 && !su.price) { ++st.rejected["price unknown (budget set)"]; continue; }
                    if (!best.found || time_s < best.time_s) {
                      best = {true, it.setup, it.nodes, j.parallel, mb, rc, time_s, mem, usd, su.price.has_value()};
                    }
                  }
                }
              }
            }
          }
        }
      }
      if (best.found) st.bests.push_back(best);
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < states.size(); ++t) threads.emplace_back(worker, std::ref(states[t]));
  worker(states[0]);
  for (auto& t : threads) t.join();

  std::vector<Best> bests;
  double fastest_any = 1e300, cheapest_any = 1e300;
  bool any_fit = false;
  for (auto& st : states) {
    bests.insert(bests.end(), st.bests.begin(), st.bests.end());
    for (auto& [k, v] : st.rejected) out.rejected[k] += v;
    out.considered += st.considered;
    out.evaluated += st.evaluated;
    fastest_any = std::min(fastest_any, st.fastest_any_s);
    cheapest_any = std::min(cheapest_any, st.cheapest_any_usd);
    any_fit |= st.any_fits_memory;
  }
  // §5 rank: time, cost, or balanced (time x cost); unknown prices rank after known ones on cost.
  // Ties break toward faster, RDMA fabrics, cheaper, fewer nodes, then catalog order (deterministic
  // whatever the thread interleaving).
  auto score = [&](const Best& b) {
    const double inf = 1e300;
    switch (con.objective) {
      case Objective::kTime: return b.time_s;
      case Objective::kCost: return b.price_known ? b.cost_usd : inf;
      case Objective::kBalanced: return b.price_known ? b.time_s * b.cost_usd : inf;
    }
    return b.time_s;
  };
  std::sort(bests.begin(), bests.end(), [&](const Best& x, const Best& y) {
    const double sx = score(x), sy = score(y);
    if (sx != sy) return sx < sy;
    if (x.time_s != y.time_s) return x.time_s < y.time_s;
    const bool rx = hws[x.setup]->rdma, ry = hws[y.setup]->rdma;
    if (rx != ry) return rx;
    if (x.price_known != y.price_known) return x.price_known;
    if (x.cost_usd != y.cost_usd) return x.cost_usd < y.cost_usd;
    if (x.nodes != y.nodes) return x.nodes < y.nodes;
    return x.setup < y.setup;
  });
  // Pareto front (time vs cost) among priced setups.
  std::vector<Best> priced;
  for (const auto& b : bests) if (b.price_known) priced.push_back(b);
  std::sort(priced.begin(), priced.end(), [](const Best& x, const Best& y) {
    if (x.time_s != y.time_s) return x.time_s < y.time_s;
    if (x.cost_usd != y.cost_usd) return x.cost_usd < y.cost_usd;
    return x.setup != y.setup ? x.setup < y.setup : x.nodes < y.nodes;
  });
  std::vector<Best> front;
  for (const auto& b : priced)
    if (front.empty() || b.cost_usd < front.back().cost_usd) front.push_back(b);

  // §6 the whole setup for each shown plan.
  auto materialize = [&](const Best& b) {
    const Setup& su = setups[b.setup];
    const HardwareContext& hw = *hws[b.setup];
    Plan p;
    p.instance = su.inst;
    p.nodes = b.nodes;
    p.job = job_in;
    p.job.cluster.gpu = su.inst.gpu_id;
    p.job.cluster.gpus_per_node = su.inst.gpu_count;
    p.job.cluster.num_gpus = b.nodes * su.inst.gpu_count;
    p.job.cluster.intra_node = hw.intra.id;
    p.job.cluster.network = hw.inter.id;
    p.job.cluster.nics_per_node = static_cast<int64_t>(hw.nics_per_node);
    p.job.parallel = b.par;
    p.job.training.micro_batch = b.micro_batch;
    p.job.training.recompute = b.recompute;
    p.network = b.nodes > 1 ? hw.inter.id : "none (single node)";
    p.estimate = EstimateStep(p.job, hw);
    p.memory_bytes = b.memory_bytes;
    p.time_to_train_s = b.time_s;
    const int64_t gpus = p.job.cluster.num_gpus;
    p.tier = gpus == 1 ? Tier::kSingleCard : b.nodes == 1 ? Tier::kSingleNode : Tier::kMultiNode;
    CostBreakdown& c = p.cost;
    c.price_known = su.price.has_value();
    c.price_kind = su.price_kind;
    c.price_per_node_hour = su.price.value_or(0);
    const double hours = b.time_s / 3600;
    c.compute_usd = c.price_per_node_hour * b.nodes * hours;
    StorageCost(p.job, catalog, cal, su.inst.provider, hours, p.estimate.checkpoint_bytes, c, &p.storage);
    c.subtotal_usd = c.compute_usd + c.storage_usd + c.requests_usd;
    c.with_rerun_usd = c.subtotal_usd * con.rerun_factor;
    // Checkpoints go to the provider's parallel file system, else its object store (the first
    // with a known write throughput); Young (1974): interval = sqrt(2 x write time x MTBF).
    p.storage.checkpoint_write_s = -1;
    for (const char* tier : {"parallel-fs", "object"}) {
      if (p.storage.checkpoint_write_s > 0) break;
      for (const auto& s : catalog.storage)
        if (s.provider == su.inst.provider && s.tier == tier && s.write_bytes_per_s) {
          const double scale = s.throughput_scope == "per-TiB" ? std::max(1.0, p.estimate.checkpoint_bytes * cal.Get("checkpoints_kept") / kTiB) : 1.0;
          p.storage.checkpoint_write_s = p.estimate.checkpoint_bytes / (*s.write_bytes_per_s * scale);
          p.storage.checkpoint_target = s.id;
          break;
        }
    }
    const double mtbf_s = 86400.0 / (cal.Get("gpu_failure_rate_per_gpu_day") * gpus);
    p.storage.suggested_interval_min = p.storage.checkpoint_write_s > 0 ? std::sqrt(2 * p.storage.checkpoint_write_s * mtbf_s) / 60 : 0;
    // Goodput (Young 1974 / Daly 2006 first order): checkpoint cost C every tau, and per failure half
    // an interval of lost work plus the restart: lost fraction = C/tau + (tau/2 + R)/MTBF.
    {
      // A run shorter than the interval still writes its final checkpoint once.
      const double tau = std::min(b.time_s, (p.storage.suggested_interval_min > 0 ? p.storage.suggested_interval_min
                                                                                  : p.job.training.checkpoint_interval_min) * 60);
      const double c_s = std::max(0.0, p.storage.checkpoint_write_s);
      const double lost = c_s / tau + (tau / 2 + cal.Get("restart_overhead_s")) / mtbf_s;
      p.goodput = 1 / (1 + lost);
      p.expected_failures = b.time_s / mtbf_s;
      p.lost_hours = b.time_s * lost / 3600;
    }
    if (su.inst.local_nvme_bytes) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "local NVMe %.1f TB per node (dataset %.2f TB %s)", *su.inst.local_nvme_bytes / 1e12,
                    p.storage.dataset_bytes / 1e12, *su.inst.local_nvme_bytes >= p.storage.dataset_bytes ? "fits" : "does NOT fit");
      p.storage.local_cache = buf;
    } else {
      p.storage.local_cache = "local NVMe size unknown for this instance";
    }
    // Host sizing checks.
    char buf[200];
    if (su.inst.vcpus) {
      const double per_gpu = *su.inst.vcpus / su.inst.gpu_count;
      std::snprintf(buf, sizeof buf, "%.0f vCPUs per GPU (want >= %.0f for data loading)", per_gpu, cal.Get("host_vcpus_per_gpu_min"));
      p.host.push_back({"CPU", per_gpu >= cal.Get("host_vcpus_per_gpu_min"), buf});
    } else {
      p.host.push_back({"CPU", true, "vCPU count unknown"});
    }
    if (su.inst.ram_bytes) {
      const double need = cal.Get("host_ram_per_gpu_memory_min") * hw.gpu.memory_bytes * su.inst.gpu_count;
      std::snprintf(buf, sizeof buf, "%.0f GiB RAM vs %.0f GiB (%.1fx GPU memory)", *su.inst.ram_bytes / kGiB, need / kGiB,
                    cal.Get("host_ram_per_gpu_memory_min"));
      p.host.push_back({"RAM", *su.inst.ram_bytes >= need, buf});
    } else {
      p.host.push_back({"RAM", true, "RAM size unknown"});
    }
    if (su.inst.local_nvme_bytes)
      p.host.push_back({"local NVMe", *su.inst.local_nvme_bytes >= p.storage.dataset_bytes, p.storage.local_cache});
    // Network: what the exposed communication needs to stay under 20% of the step.
    if (b.nodes > 1) {
      HardwareContext h2 = hw;
      h2.rdma = true;
      double lo = kMinNodeBitsPerS / 8 / su.inst.gpu_count, hi = kMaxNodeBitsPerS / 8 / su.inst.gpu_count;  // per GPU, bytes/s
      auto share = [&](double per_gpu_bw) {
        h2.inter_bytes_per_s_per_gpu = per_gpu_bw;
        const StepEstimate e = EstimateStep(p.job, h2);
        const StepBreakdown& bd = e.breakdown;
        return (bd.tp_comm_s + bd.cp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.ep_comm_s) / e.step_time_s;
      };
      if (share(hi) > kMaxCommShare) {
        p.min_inter_node_gbps = -1;  // even 6.4 Tb/s per node is not enough
      } else {
        for (int i = 0; i < 40; ++i) {
          const double mid = std::sqrt(lo * hi);
          (share(mid) <= kMaxCommShare ? hi : lo) = mid;
        }
        p.min_inter_node_gbps = hi * 8 * su.inst.gpu_count / 1e9;
      }
      // RDMA is required when plain TCP cannot reach that: over the fastest TCP link in the catalog,
      // one port per GPU, with the host-copy penalty.
      double tcp_bw = 0;
      for (const auto& l : catalog.links)
        if (l.kind == "tcp") tcp_bw = std::max(tcp_bw, l.bw_bytes_per_s_per_dir);
      HardwareContext tcp = hw;
      tcp.rdma = false;
      tcp.inter_bytes_per_s_per_gpu = tcp_bw;
      tcp.k.inter_eff = cal.Get("link_eff.tcp");
      const StepEstimate et = EstimateStep(p.job, tcp);
      const StepBreakdown& bt = et.breakdown;
      p.rdma_required = (bt.tp_comm_s + bt.cp_comm_s + bt.pp_comm_s + bt.dp_comm_s + bt.ep_comm_s) / et.step_time_s > kMaxCommShare;
    }
    p.bottleneck = Bottleneck(p.job, hw, p.estimate);
    return p;
  };
  const size_t top = static_cast<size_t>(con.top);
  for (size_t i = 0; i < bests.size() && i < top; ++i) out.plans.push_back(materialize(bests[i]));
  for (const auto& b : front) out.pareto.push_back(materialize(b));
  // §7 nothing feasible: which constraint to relax, and by how much.
  if (out.plans.empty()) {
    char buf[400];
    if (items.empty()) {
      out.relax = "no instance in the catalog matches the pins and filters (GPU, GPUs per node, clouds, spot, max_gpus): "
                  "relax them, or describe your own machines with --catalog FILE (instances.csv header)";
    } else if (!any_fit && con.deadline_hours == 0 && con.budget_usd == 0) {
      std::snprintf(buf, sizeof buf,
                    "no layout fits GPU memory within max_gpus=%lld (with %.0f%% headroom): raise constraints.max_gpus, allow GPUs with more memory, or use LoRA/QLoRA",
                    static_cast<long long>(con.max_gpus), 100 * con.min_memory_headroom);
      out.relax = buf;
    } else {
      // Search again without deadline and budget: the fastest and the cheapest plans say how far
      // each constraint is from reachable.
      Job open = job_in;
      open.constraints.deadline_hours = 0;
      open.constraints.budget_usd = 0;
      open.constraints.objective = Objective::kTime;
      auto unconstrained = PlanJob(open, catalog, cal, PlanOptions{options.threads, nullptr, nullptr});
      if (unconstrained.ok() && unconstrained->plans.empty()) {
        out.relax = unconstrained->relax;
        out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return out;
      }
      if (unconstrained.ok()) {
        fastest_any = unconstrained->plans.front().time_to_train_s;
        for (const auto& p : unconstrained->pareto) cheapest_any = std::min(cheapest_any, p.cost.with_rerun_usd);
      }
      std::string r;
      if (con.deadline_hours > 0 && fastest_any > con.deadline_hours * 3600) {
        std::snprintf(buf, sizeof buf, "the fastest plan needs %.1f h: relax constraints.deadline_hours from %.1f to %.1f (+%.1f h) or raise max_gpus",
                      fastest_any / 3600, con.deadline_hours, fastest_any / 3600, fastest_any / 3600 - con.deadline_hours);
        r += buf;
      }
      if (con.budget_usd > 0 && cheapest_any > con.budget_usd) {
        std::snprintf(buf, sizeof buf, "%sthe cheapest plan costs $%.0f with the %.2fx rerun factor: raise constraints.budget_usd from $%.0f to $%.0f (+$%.0f)",
                      r.empty() ? "" : "; ", cheapest_any, con.rerun_factor, con.budget_usd, cheapest_any, cheapest_any - con.budget_usd);
        r += buf;
      }
      if (r.empty()) r = "deadline and budget are each reachable but not together: relax either (see the fastest and cheapest plans with one of them removed)";
      out.relax = r;
    }
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace gpuplan
