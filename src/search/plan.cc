// PlanJob: validate -> enumerate -> search items (prune, estimate, price) -> rank -> describe ->
// relax. Each stage is its own function in src/search (docs/model/planner.md mirrors them).
#include "gpuplan/plan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "gpuplan/engines.h"
#include "gpuplan/error_bands.h"
#include "gpuplan/strings.h"
#include "stages.h"

namespace gpuplan {

std::string ToString(Tier t) {
  switch (t) {
    case Tier::kSingleCard: return "L1 single card";
    case Tier::kSingleNode: return "L2 single node, multi-card";
    case Tier::kMultiNode: return "L3 multi-node";
  }
  return "";
}

std::string ToString(CheckState c) {
  switch (c) {
    case CheckState::kOk: return "ok";
    case CheckState::kWarn: return "warn";
    case CheckState::kUnknown: return "unknown";
  }
  return "";
}

namespace {
using namespace search;

Location Loc(const Job& j, const std::string& key) {
  auto it = j.set_keys.find(key);
  return it != j.set_keys.end() ? it->second : Location{j.source, 0, key};
}

// The job must be valid as given (model, pins, constraints); defaults derived here are not pins,
// except the token count, which samples x epochs x tokens_per_sample may give instead.
Status ValidateInputs(Job& job, const Catalog& catalog) {
  Job check = job;
  GPUPLAN_RETURN_IF_ERROR(FinalizeJob(check));
  GPUPLAN_RETURN_IF_ERROR(CheckCatalogIds(job, catalog));  // pinned gpu, links and storage exist
  job.training.tokens = check.training.tokens;
  if (job.training.tokens <= 0)
    return Status::BadInput(Loc(job, "training.tokens"), "the planner needs training.tokens (how much to train) to size time and cost");
  for (const auto& c : job.constraints.clouds) {
    if (std::any_of(catalog.instances.begin(), catalog.instances.end(), [&](const InstanceSpec& i) { return i.provider == Lower(c); })) continue;
    std::string all;
    for (const auto& i : catalog.instances)
      if (all.find(i.provider) == std::string::npos) all += (all.empty() ? "" : ", ") + i.provider;
    return Status::BadInput(Loc(job, "constraints.clouds"), "unknown cloud '" + c + "' (catalog has: " + all + ")");
  }
  for (const auto& g : job.constraints.gpus) {
    auto spec = catalog.FindGpu(g);
    if (!spec.ok()) return Status::BadInput(Loc(job, "constraints.gpus"), spec.status().reason());
  }
  if (job.IsSet("cluster.gpu")) {
    auto spec = catalog.FindGpu(job.cluster.gpu);
    if (!spec.ok()) return Status::BadInput(Loc(job, "cluster.gpu"), spec.status().reason());
    // A pinned precision the pinned GPU lacks is the same error as in memory and estimate.
    if (job.IsSet("training.precision"))
      if (const std::string why = spec->PrecisionProblem(job.training.precision); !why.empty())
        return Status::BadInput(Loc(job, "training.precision"), why);
  }
  // A named framework's engine must be able to train the job at all (data/engines.csv).
  if (const EngineCaps* e = EngineFor(job.training.framework); e && job.IsSet("training.framework")) {
    Job whole = check;
    if (!job.IsSet("training.precision")) whole.training.precision = Precision::kBf16;
    if (const std::string why = EngineCannotTrain(*e, whole, e->id); !why.empty())
      return Status::BadInput(Loc(job, "training.framework"), why);
  }
  if (job.training.global_batch <= 0 || !job.IsSet("training.global_batch"))
    return Status::BadInput(Loc(job, "training.global_batch"),
                            "the planner needs training.global_batch (sequences per optimizer step) so layouts are compared at the same batch");
  return Status::Ok();
}

// §2-§5 every work item on `threads` threads pulling from one counter; results merged and ranked.
SearchState SearchAll(const Context& ctx, const LayoutSpace& sp, const std::vector<Setup>& setups,
                      const std::vector<Variant>& variants, const std::vector<Item>& items, const PlanOptions& options) {
  std::atomic<size_t> next{0};
  std::vector<SearchState> states(static_cast<size_t>(std::max(1, options.threads)));
  auto worker = [&](SearchState& st) {
    for (size_t idx = next++; idx < items.size(); idx = next++) {
      if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) break;
      if (options.progress) ++*options.progress;
      SearchItem(ctx, sp, setups, variants, items, idx, st);
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < states.size(); ++t) threads.emplace_back(worker, std::ref(states[t]));
  worker(states[0]);
  for (auto& t : threads) t.join();
  SearchState all;
  for (auto& st : states) {
    all.best.insert(all.best.end(), st.best.begin(), st.best.end());
    all.rejects.Merge(st.rejects);
    for (int r = 0; r < kHotRejectCount; ++r)
      if (st.hot[r] > 0) all.rejects.Add(HotRejectCode(r), HotRejectReason(r), st.hot[r]);
    all.considered += st.considered;
    all.evaluated += st.evaluated;
    all.any_fits_memory |= st.any_fits_memory;
  }
  return all;
}

// §7 nothing feasible: which constraint to relax, and by how much.
void Relax(const Job& job, const Catalog& catalog, const Calibration& cal, const PlanOptions& options, bool no_items,
           bool any_fit, double headroom, PlanResult& out) {
  const Constraints& con = job.constraints;
  if (no_items) {
    out.relax_code = "no_instance";
    out.relax = "no instance in the catalog matches the pins and filters (GPU, GPUs per node, clouds, spot, max_gpus): "
                "relax them, or describe your own machines with --catalog FILE (instances.csv header)";
    return;
  }
  char buf[500];
  if (!any_fit && con.deadline_hours == 0 && con.budget_usd == 0) {
    out.relax_code = "memory";
    std::snprintf(buf, sizeof buf,
                  "no layout fits GPU memory within max_gpus=%lld with %.0f%% headroom (%s): raise constraints.max_gpus, allow GPUs "
                  "with more memory, use LoRA/QLoRA, or lower constraints.min_memory_headroom at your own risk",
                  static_cast<long long>(con.max_gpus), 100 * headroom, out.memory_headroom_source.c_str());
    out.relax = buf;
    return;
  }
  if (con.deadline_hours == 0 && con.budget_usd == 0) {
    // Something fits memory and nothing bounds time or money: the rejections say why (a search
    // without deadline and budget would be this one again).
    out.relax_code = "all_rejected";
    out.relax = "layouts fit memory, but every setup was rejected: ";
    int64_t shown = 0;
    std::vector<Rejection> by_count = out.rejected;
    std::sort(by_count.begin(), by_count.end(), [](const Rejection& a, const Rejection& b) { return a.count > b.count; });
    for (const auto& x : by_count)
      if (shown < 3 && x.code != "batch_not_divisible" && x.code != "memory" && x.code != "recompute_dominated" &&
          x.code != "gpu_not_allowed" && x.code != "cloud_not_allowed" && x.code != "gpus_per_node_pin" && x.code != "max_gpus")
        out.relax += (shown++ ? "; " : "") + x.reason + " (" + std::to_string(x.count) + ")";
    if (shown == 0) out.relax += "see the rejected table";
    return;
  }
  // Search again without deadline and budget: the fastest and the cheapest plans say how far each
  // constraint is from reachable.
  Job open = job;
  open.constraints.deadline_hours = 0;
  open.constraints.budget_usd = 0;
  open.constraints.objective = Objective::kTime;
  // The same options (threads, cancel, the price date) without the progress counters of the first search.
  PlanOptions again = options;
  again.progress = nullptr, again.progress_total = nullptr;
  auto unconstrained = PlanJob(open, catalog, cal, again);
  if (unconstrained.ok() && unconstrained->plans.empty()) {
    out.relax = unconstrained->relax;
    out.relax_code = unconstrained->relax_code;
    return;
  }
  double fastest = 1e300, cheapest = 1e300;
  if (unconstrained.ok()) {
    fastest = unconstrained->plans.front().time_s;
    for (const auto& p : unconstrained->pareto) cheapest = std::min(cheapest, p.cost.with_rerun_usd);
  }
  std::string r;
  const bool deadline = con.deadline_hours > 0 && fastest > con.deadline_hours * 3600;
  const bool budget = con.budget_usd > 0 && cheapest > con.budget_usd;
  if (deadline) {
    std::snprintf(buf, sizeof buf, "the fastest plan needs %.2f h wall-clock: relax constraints.deadline_hours from %.2f to %.2f (+%.2f h) or raise max_gpus",
                  fastest / 3600, con.deadline_hours, fastest / 3600, fastest / 3600 - con.deadline_hours);
    r += buf;
  }
  if (budget) {
    std::snprintf(buf, sizeof buf, "%sthe cheapest plan costs $%.0f with the %.2fx rerun factor: raise constraints.budget_usd from $%.0f to $%.0f (+$%.0f)",
                  r.empty() ? "" : "; ", cheapest, con.rerun_factor, con.budget_usd, cheapest, cheapest - con.budget_usd);
    r += buf;
  }
  out.relax_code = deadline && budget ? "deadline_and_budget" : deadline ? "deadline" : budget ? "budget" : "deadline_or_budget";
  if (r.empty()) r = "deadline and budget are each reachable but not together: relax either (see the fastest and cheapest plans with one of them removed)";
  out.relax = r;
}
// The headroom's GPU family: the pinned GPU's (any family when the GPU is open).
std::string HeadroomFamily(const Job& job, const Catalog& catalog) {
  if (job.IsSet("cluster.gpu"))
    if (auto g = catalog.FindGpu(job.cluster.gpu); g.ok()) return g->family;
  return "";
}
}  // namespace

Result<PlanResult> PlanJob(const Job& job_in, const Catalog& catalog, const Calibration& cal, const PlanOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  Job job = job_in;
  GPUPLAN_RETURN_IF_ERROR(ValidateInputs(job, catalog));
  // The memory model resolves its constants once for the built-in calibration and per call for any
  // other; a copy that holds the same values (the CLI loads one even without --calibration) is the
  // built-in one, so the search's millions of memory estimates skip the per-call lookups.
  const Calibration& search_cal = cal.values() == Calibration::Builtin().values() ? Calibration::Builtin() : cal;
  Context ctx{job, catalog, search_cal, 0, 0, ""};
  PlanResult out;
  // §3 headroom: the memory model's own error margin unless the user set one (docs/model/memory.md
  // "The margin"; the same figure `memory` and `estimate` hold a layout to).
  const MemoryHeadroom headroom = MemoryHeadroomFor(job, HeadroomFamily(job, catalog), cal);
  ctx.headroom = headroom.fraction;
  out.memory_headroom_source = headroom.source;
  out.memory_headroom = ctx.headroom;
  ctx.today = options.today.empty() ? TodayUtcIso() : options.today;
  const bool lora = IsAdapterMethod(job.training.method);
  ctx.mflops = ModelFlopsPerToken(job.arch, job.training.seq_len, lora);

  Rejects rejects;
  const std::vector<Setup> setups = EnumerateSetups(ctx, rejects, out.notes);
  const std::vector<Variant> variants = ResolveVariants(ctx, setups, rejects);
  const std::vector<Item> items = EnumerateItems(ctx, setups, variants, rejects);
  if (options.max_items > 0 && static_cast<int64_t>(items.size()) > options.max_items)
    return Status::Infeasible("the search covers " + std::to_string(items.size()) +
                              " work items (instance type x node count x variant), over the limit of " +
                              std::to_string(options.max_items) +
                              " set for this caller: pin more keys (cluster.gpu, constraints.clouds, constraints.max_gpus) "
                              "to narrow it");
  if (options.progress_total) *options.progress_total = static_cast<int64_t>(items.size());
  const LayoutSpace space = BuildLayoutSpace(ctx);
  SearchState found = SearchAll(ctx, space, setups, variants, items, options);
  if (options.cancel != nullptr && options.cancel->load())
    return Status::Infeasible("the search was cancelled by its caller before it finished");
  rejects.Merge(found.rejects);
  out.considered = found.considered;
  out.evaluated = found.evaluated;
  out.rejected = rejects.List();

  Rank(ctx, variants, items, found.best);
  const std::vector<Candidate> front = ParetoFront(found.best);
  const size_t top = static_cast<size_t>(job.constraints.top);
  // The top rows, then the best row of each engine family not among them (planner.md §5).
  std::vector<std::string> families;
  for (const auto& c : TopWithFamilies(variants, items, found.best, top)) {
    Plan p = Describe(ctx, setups, variants, items, c);
    if (out.plans.empty()) AddFp8WhatIf(ctx, setups, variants, items, c, p);
    p.beyond_top = out.plans.size() >= top;
    p.family_best = std::find(families.begin(), families.end(), p.engine_family) == families.end();
    if (p.family_best) families.push_back(p.engine_family);
    out.plans.push_back(std::move(p));
  }
  for (const auto& c : front) out.pareto.push_back(Describe(ctx, setups, variants, items, c));
  if (out.plans.empty()) Relax(job, catalog, cal, options, items.empty(), found.any_fits_memory, ctx.headroom, out);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace gpuplan
