// §1 setups and variants, §2 work items and the layout space (docs/model/planner.md).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gpuplan/strings.h"
#include "stages.h"

namespace gpuplan::search {

std::vector<Rejection> Rejects::List() const {
  std::vector<Rejection> out;
  for (const auto& [k, v] : counts_) out.push_back({k.first, k.second, v});
  return out;
}

namespace {
bool Allowed(const std::vector<std::string>& list, const std::string& v) {
  return list.empty() || std::any_of(list.begin(), list.end(), [&](const std::string& c) { return Lower(c) == v; });
}

// The row's links and NICs, or the user's pinned fabric (planner.md §1).
Setup BaseSetup(const Context& ctx, const InstanceSpec& inst) {
  Setup s;
  s.inst = inst;
  s.intra = inst.intra_link == "unknown" ? "" : inst.intra_link;
  if (ctx.pinned("cluster.intra_node")) s.intra = ctx.job.cluster.intra_node;
  if (!inst.network_link.empty() && inst.network_link != "unknown") {
    s.network = inst.network_link;
    auto link = ctx.catalog.FindLink(inst.network_link);
    if (inst.nics) s.nics = static_cast<int64_t>(*inst.nics);
    else if (link.ok() && inst.network_bits_per_s && link->bw_bytes_per_s_per_dir > 0)
      s.nics = std::max<int64_t>(1, std::llround(*inst.network_bits_per_s / 8 / link->bw_bytes_per_s_per_dir));
    else s.nics = 1;
  } else {
    s.multi_node_ok = false;
    s.network = "tcp-10g";  // placeholder for single-node hardware resolution; never used across nodes
    s.nics = 1;
  }
  if (ctx.pinned("cluster.network")) {
    s.network = ctx.job.cluster.network;
    s.multi_node_ok = true;
  }
  if (ctx.pinned("cluster.nics_per_node")) s.nics = ctx.job.cluster.nics_per_node;
  auto gpu = ctx.catalog.FindGpu(inst.gpu_id);
  s.gpu_family = gpu.ok() ? gpu->family : "unknown";
  return s;
}
// §1 spot: --spot-price-ratio prices every spot setup at that share of on-demand. Otherwise a
// built-in spot price below spot_price_ratio_default x on-demand is a cheapest-zone minimum; such
// rows are planned at that share (a --catalog row is the user's own price and is used as given,
// with the warning from Describe when it is implausibly low).
void SpotPrice(const Context& ctx, const InstanceSpec& inst, Setup& sp) {
  if (!inst.on_demand_usd_per_hour) return;
  const double od = *inst.on_demand_usd_per_hour;
  if (ctx.pinned("constraints.spot_price_ratio")) {
    sp.price = ctx.job.constraints.spot_price_ratio * od;
    sp.price_date = inst.price_date;  // derived from the on-demand price: its date
    return;
  }
  const double ratio = ctx.cal.Get("spot_price_ratio_default");
  if (!sp.price || *sp.price >= ratio * od) return;
  if (inst.where.file != "data/instances.csv") return;  // a --catalog row is the user's own price
  char buf[240];
  std::snprintf(buf, sizeof buf, "planned at %.0f%% of on-demand ($%.2f/node-h): the catalog's $%.2f is %.0f%% of on-demand, a cheapest-zone price",
                100 * ratio, ratio * od, *sp.price, 100 * *sp.price / od);
  sp.price_note = buf;
  sp.price = ratio * od;
  sp.price_date = inst.price_date;  // derived from the on-demand price: its date
}

// Whether a row can be planned as spot: it has a spot price, or --spot-price-ratio prices it and
// its provider sells spot (another of its rows has a spot price).
bool SpotOffered(const Context& ctx, const InstanceSpec& inst) {
  if (inst.spot_usd_per_hour) return true;
  if (!ctx.pinned("constraints.spot_price_ratio") || !inst.on_demand_usd_per_hour) return false;
  return std::any_of(ctx.catalog.instances.begin(), ctx.catalog.instances.end(),
                     [&](const InstanceSpec& o) { return o.provider == inst.provider && o.spot_usd_per_hour; });
}
}  // namespace

std::vector<const EngineCaps*> PlanningEngines(const Job& job) {
  if (const EngineCaps* e = EngineFor(job.training.framework)) return {e};
  std::vector<const EngineCaps*> out;
  for (Framework f : GenericPlanningEngines())
    if (const EngineCaps* e = EngineFor(f)) out.push_back(e);
  return out;
}

std::vector<Setup> EnumerateSetups(const Context& ctx, Rejects& rejects, std::vector<std::string>& notes) {
  const Constraints& con = ctx.job.constraints;
  std::vector<std::string> gpus;
  for (const auto& g : con.gpus) gpus.push_back(ctx.catalog.FindGpu(g)->id);  // validated by PlanJob
  if (ctx.pinned("cluster.gpu")) gpus = {ctx.catalog.FindGpu(ctx.job.cluster.gpu)->id};
  std::vector<Setup> out;
  for (const auto& inst : ctx.catalog.instances) {
    if (inst.gpu_count <= 0) { rejects.Add("instance_gpu_count_unknown", "instance skipped: GPU count unknown"); continue; }
    if (!Allowed(con.clouds, inst.provider)) { rejects.Add("cloud_not_allowed", "instance skipped: cloud not allowed"); continue; }
    if (!gpus.empty() && std::find(gpus.begin(), gpus.end(), inst.gpu_id) == gpus.end()) {
      rejects.Add("gpu_not_allowed", "instance skipped: GPU not allowed");
      continue;
    }
    if (ctx.pinned("cluster.gpus_per_node") && inst.gpu_count != ctx.job.cluster.gpus_per_node) {
      rejects.Add("gpus_per_node_pin", "instance skipped: GPUs per node differ from the pin");
      continue;
    }
    if (!ctx.catalog.FindGpu(inst.gpu_id).ok()) {
      rejects.Add("instance_gpu_unknown", "instance skipped: GPU '" + inst.gpu_id + "' is not in gpus.csv");
      continue;
    }
    const Setup base = BaseSetup(ctx, inst);
    if (con.spot != SpotPolicy::kOnly) {
      Setup od = base;
      od.price_kind = "on-demand";
      od.price = inst.on_demand_usd_per_hour;
      od.price_date = inst.price_date;
      out.push_back(od);
    }
    const bool spot_offered = SpotOffered(ctx, inst);
    if (con.spot != SpotPolicy::kNo && spot_offered) {
      Setup sp = base;
      sp.price_kind = "spot";
      sp.price = inst.spot_usd_per_hour;
      sp.price_date = inst.spot_usd_per_hour ? inst.spot_price_date : inst.price_date;
      SpotPrice(ctx, inst, sp);
      out.push_back(sp);
    }
    if (con.spot == SpotPolicy::kOnly && !spot_offered) rejects.Add("no_spot_price", "instance skipped: no spot price");
    for (const auto& b : ctx.catalog.capacity_blocks) {
      if (b.id != inst.id || con.spot == SpotPolicy::kOnly) continue;
      Setup cb = base;
      cb.price_kind = "capacity-block";
      cb.price = b.usd_per_node_hour;
      cb.price_date = b.price_date;
      cb.node_counts = b.node_counts;
      cb.billing_increment_s = b.billing_increment_s;
      out.push_back(cb);
    }
  }
  int64_t unknown = 0;
  for (const auto& s : out) unknown += !s.price;
  if (unknown > 0)
    notes.push_back(std::to_string(unknown) + " instance rows have no known price: they are planned for time but not ranked on cost");
  return out;
}

namespace {
// The precisions a setup is planned at: the pinned one, else those of constraints.precisions the
// GPU has, else bf16 (fp16 where the GPU has no bf16, as on V100/T4). fp8 only when the job asks for
// it (training.precision: fp8 or constraints.precisions): its numerics need validating on the
// user's loss curve, so the planner never picks it alone (planner.md §2).
std::vector<Precision> Precisions(const Context& ctx, const GpuSpec& g, Rejects& rejects) {
  if (ctx.pinned("training.precision")) return {ctx.job.training.precision};
  if (ctx.job.constraints.precisions.empty()) return {g.bf16_supported ? Precision::kBf16 : Precision::kFp16};
  std::vector<Precision> out;
  for (Precision p : ctx.job.constraints.precisions) {
    if (const std::string why = g.PrecisionProblem(p); !why.empty() || (p == Precision::kFp8 && !g.fp8_flops)) {
      rejects.Add("precision_unsupported", "precision skipped: " + (why.empty() ? "GPU '" + g.id + "' has no fp8 rate" : why));
      continue;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

Job VariantJob(const Context& ctx, const Setup& su, const EngineCaps& engine, Precision p) {
  Job j = ctx.job;
  j.training.precision = p;
  j.training.framework = engine.framework;
  j.cluster.gpu = su.inst.gpu_id;
  j.cluster.gpus_per_node = su.inst.gpu_count;
  j.cluster.num_gpus = su.inst.gpu_count;
  j.cluster.intra_node = su.intra;
  j.cluster.network = su.network;
  j.cluster.nics_per_node = su.nics;
  j.cluster.gpudirect_rdma = su.inst.gpudirect_rdma != "no" && su.inst.rdma != "no";
  if (su.inst.vcpus && !ctx.pinned("cluster.cpu_cores_per_gpu"))
    j.cluster.cpu_cores_per_gpu = static_cast<int64_t>(*su.inst.vcpus / static_cast<double>(su.inst.gpu_count));
  return j;
}

std::vector<Variant> ResolveVariants(const Context& ctx, const std::vector<Setup>& setups, Rejects& rejects) {
  std::vector<Variant> out;
  for (size_t si = 0; si < setups.size(); ++si) {
    const Setup& su = setups[si];
    const GpuSpec g = *ctx.catalog.FindGpu(su.inst.gpu_id);
    for (const EngineCaps* engine : PlanningEngines(ctx.job))
    for (Precision p : Precisions(ctx, g, rejects)) {
      Job j = VariantJob(ctx, su, *engine, p);
      if (const std::string why = EngineCannotTrain(*engine, j, engine->id); !why.empty()) {
        rejects.Add("engine_cannot_train", why);
        continue;
      }
      auto hw = ResolveHardware(j, ctx.catalog, ctx.cal);
      if (!hw.ok()) {
        rejects.Add("hardware_unresolved", "instance skipped: " + hw.status().reason());
        continue;
      }
      Variant v;
      v.setup = si;
      v.precision = p;
      v.engine = engine;
      v.hw = *hw;
      // Checkpoint sizes depend on the model and recipe, not the layout: size them on one node.
      Job one = j;
      one.parallel = ParallelSpec{};
      one.training.micro_batch = 1;
      one.training.global_batch = su.inst.gpu_count;
      if (Status st = FinalizeJob(one); !st.ok()) {
        rejects.Add("hardware_unresolved", "instance skipped: checkpoint size: " + st.reason());
        continue;
      }
      v.sizes = SizeCheckpoints(one);
      out.push_back(std::move(v));
    }
  }
  return out;
}

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

namespace {
const StorageSpec* ReadableStore(const Catalog& cat, const std::string& provider) {
  for (const auto& s : cat.storage)
    if (s.provider == provider && s.tier == "object" && s.read_bytes_per_s) return &s;
  return nullptr;
}

// R§1 start-up of one setup on n nodes: each node pulls the image, the base weights of a
// fine-tune and its share of the dataset.
StartupBreakdown Startup(const Context& ctx, const Setup& su, const Variant& v, int64_t nodes) {
  Job j = ctx.job;
  j.training.precision = v.precision;
  std::optional<double> read;
  if (const StorageSpec* s = ReadableStore(ctx.catalog, su.inst.provider)) read = s->read_bytes_per_s;
  StartupInputs in = StartupInputsFor(j, nodes, read);
  in.provider = su.inst.provider;
  // A row priced at 0 is owned or already running (R§1: nothing to provision).
  in.owned = su.inst.on_demand_usd_per_hour && *su.inst.on_demand_usd_per_hour == 0 && su.price_kind == "on-demand";
  return EstimateStartup(in, ctx.cal);
}
}  // namespace

std::vector<Item> EnumerateItems(const Context& ctx, const std::vector<Setup>& setups, const std::vector<Variant>& variants,
                                 Rejects& rejects) {
  const Constraints& con = ctx.job.constraints;
  std::vector<Item> items;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const Setup& su = setups[variants[vi].setup];
    const int64_t per = su.inst.gpu_count;
    int64_t max_nodes = su.multi_node_ok ? con.max_gpus / per : std::min<int64_t>(1, con.max_gpus / per);
    if (!su.multi_node_ok && con.max_gpus / per > 1) rejects.Add("network_unknown", "multi-node skipped: instance network unknown");
    // Owned or reserved machines: never more nodes than the row has (docs/model/planner.md).
    if (su.inst.nodes_available && *su.inst.nodes_available < max_nodes) {
      rejects.Add("nodes_available", "more nodes skipped: " + su.inst.id + " has nodes_available=" +
                                         std::to_string(*su.inst.nodes_available) + " (owned or reserved machines)");
      max_nodes = *su.inst.nodes_available;
    }
    if (con.max_gpus < per) rejects.Add("max_gpus", "instance skipped: more GPUs per node than constraints.max_gpus");
    for (int64_t n : NodeCounts(max_nodes)) {
      if (ctx.pinned("cluster.num_gpus") && n * per != ctx.job.cluster.num_gpus) continue;
      if (!su.node_counts.empty() && std::find(su.node_counts.begin(), su.node_counts.end(), n) == su.node_counts.end()) continue;
      Item it;
      it.variant = vi;
      it.nodes = n;
      it.startup = Startup(ctx, su, variants[vi], n);
      CheckpointTargetInputs ci;
      ci.provider = su.inst.provider;
      ci.nodes = n;
      ci.gpus = n * per;
      ci.local_nvme_bytes = su.inst.local_nvme_bytes;
      ci.host_bytes_per_s = variants[vi].hw.host_bytes_per_s;
      ci.async = ctx.job.training.checkpoint_async;
      ci.choose_async = !ctx.pinned("training.checkpoint_async");  // R§3: the planner picks async where the stall matters
      if (ctx.pinned("cluster.storage")) ci.pinned_storage = ctx.job.cluster.storage;
      it.targets = CheckpointTargets(variants[vi].sizes, ci, ctx.catalog, ctx.cal);
      // A reclaimed spot node is replaced by a fresh one: the whole start-up again.
      const double restart = it.startup.Total();
      std::optional<double> pinned_rate;
      if (ctx.pinned("constraints.spot_interruptions_per_node_hour")) pinned_rate = con.spot_interruptions_per_node_hour;
      it.rates = LookupEventRates(su.inst.provider, su.gpu_family, su.price_kind == "spot", n * per, n, restart, ctx.cal, pinned_rate);
      for (const auto& s : ctx.catalog.storage)
        if (s.provider == su.inst.provider && s.tier == "object" && s.usd_per_gb_month) {
          it.object_usd_per_gb_month = *s.usd_per_gb_month;
          it.usd_per_1k_put = s.usd_per_1k_put.value_or(0);
          break;
        }
      const double ckpt = variants[vi].sizes.intermediate_bytes, part = ctx.cal.Get("object_store_part_bytes");
      it.dataset_bytes = ctx.job.training.tokens * ctx.job.training.data_bytes_per_token;
      it.kept_checkpoint_bytes = ctx.cal.Get("checkpoints_kept") * ckpt;
      it.puts_per_checkpoint = std::ceil(ckpt / part);
      it.puts_final_save = std::ceil(variants[vi].sizes.final_bytes / part);
      items.push_back(std::move(it));
    }
  }
  return items;
}

LayoutSpace BuildLayoutSpace(const Context& ctx) {
  const Arch& a = ctx.job.arch;
  LayoutSpace sp;
  for (int64_t tp : {1, 2, 4, 8, 16, 32, 64})
    if (a.heads % tp == 0 && (a.KvHeads() % tp == 0 || tp % a.KvHeads() == 0)) sp.tps.push_back(tp);
  for (int64_t pp : {1, 2, 4, 8, 16, 32, 64})
    if (pp <= a.layers) sp.pps.push_back(pp);
  sp.cps = {1};
  if (ctx.job.training.seq_len >= 16384)
    for (int64_t cp : {2, 4, 8, 16})
      if (ctx.job.training.seq_len % cp == 0) sp.cps.push_back(cp);
  sp.zeros = {0, 1, 2, 3};
  sp.rcs = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  sp.mbs = {1, 2, 4, 8, 16, 32};
  sp.offloads = {Offload::kNone, Offload::kOptimizer, Offload::kOptimizerParams};
  const Job& j = ctx.job;
  if (ctx.pinned("parallel.tp")) sp.tps = {j.parallel.tp};
  if (ctx.pinned("parallel.pp")) sp.pps = {j.parallel.pp};
  if (ctx.pinned("parallel.cp")) sp.cps = {j.parallel.cp};
  if (ctx.pinned("parallel.zero")) sp.zeros = {j.parallel.zero};
  if (ctx.pinned("training.recompute")) sp.rcs = {j.training.recompute};
  if (ctx.pinned("training.micro_batch")) sp.mbs = {j.training.micro_batch};
  if (ctx.pinned("parallel.vpp")) sp.vpps = {j.parallel.vpp};
  if (ctx.pinned("parallel.offload")) sp.offloads = {j.parallel.offload};
  return sp;
}

}  // namespace gpuplan::search
