// Serving time: one engine step as a pass over the training model's op lists (LayerOps, HeadOps)
// with weights and KV reads, continuous batching and queueing, throughput and cost
// (docs/model/serving.md S§3-S§6).
#include "serving_internal.h"

#include <algorithm>
#include <cmath>

#include "gpuplan/ops.h"

namespace gpuplan {

namespace {

// S§3 the job the op lists see: a forward pass of the served model in its compute dtype (fp8
// W8A8 GEMMs where the weights are fp8 on a GPU with fp8), flash attention, the engine's fused
// norm/rotary/activation kernels, no training mechanisms.
Job InferenceJob(const Job& job, const GpuSpec& gpu) {
  Job j = job;
  TrainingSpec& tr = j.training;
  tr.method = Method::kFull;
  tr.precision = gpu.bf16_supported ? Precision::kBf16 : Precision::kFp16;
  // fp8 weights run W8A8 GEMMs; fp4 (NVFP4 W4A4 on Blackwell) runs at least at the fp8 rate (the
  // catalog holds no fp4 peak, so its 2x over fp8 is not counted).
  const bool low = job.serving.weights == WeightFormat::kFp8 || job.serving.weights == WeightFormat::kFp4;
  if (low && gpu.fp8_supported) tr.precision = Precision::kFp8;
  tr.flash_attention = true;
  tr.recompute = Recompute::kNone;
  tr.framework = Framework::kGeneric;
  tr.fused_ops = kFusedNorm | kFusedRope | kFusedAct;
  j.parallel.sequence_parallel = false;
  j.parallel.cp = 1;
  return j;
}

Precision KvCompute(const GpuSpec& gpu) { return gpu.bf16_supported ? Precision::kBf16 : Precision::kFp16; }

// S§3 experts a step's tokens touch on one GPU: each of E routed experts is missed by all
// `tokens` top-k draws with probability (1 - k/E)^tokens; shared experts always run.
double TouchedExpertShare(const Arch& a, double tokens) {
  if (!a.IsMoe() || a.experts <= 0) return 1;
  const double k = static_cast<double>(a.experts_per_token), e = static_cast<double>(a.experts);
  const double routed = e * (1 - std::pow(1 - k / e, tokens));
  return (routed + a.shared_experts) / (k + a.shared_experts);
}

// S§3 one op's time in a serving step: the longer of its math (the training model's forward time)
// and its HBM traffic with the weights at their stored width.
double ServingOpSeconds(const Op& op, double weight_scale, const ServingContext& c) {
  const double ab = ActivationBytesPerElement(c.job.training.precision);
  const double weights = op.weight_elems * weight_scale;
  const double act_bytes = std::max(0.0, op.hbm_bytes - op.weight_elems * ab);
  const double bytes = act_bytes + weights * c.weight_bpp;
  return std::max(op.fwd_s, bytes / c.hbm) + op.fwd_kernels * c.graph_gap_s;
}

}  // namespace

// S§3 one step: `batch` decode tokens at `context` keys each and `prefill` prompt tokens of
// prompts `prompt_len` long, through the fullest pipeline stage; pp stages run in turn.
StepTime ServingStep(const ServingContext& c, double batch, double context, double prefill, double prompt_len) {
  const Arch& a = c.job.arch;
  const double tokens = std::max(1.0, batch + prefill);
  const std::vector<Op> ops = LayerOps(c.job, c.hw, tokens, std::max(1.0, prompt_len));
  StepTime st;
  double layer_s = 0, layer_weights_s = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kAttention) {
      // Prefill tokens attend causally within their prompt (the op's own count, scaled to them);
      // each decode token reads its sequence's whole KV cache (S§3).
      const double prefill_s = op.fwd_s * prefill / tokens;
      const double kv_bytes = batch * context * c.kv_per_token_gpu / static_cast<double>(c.stage_layers);
      const double decode_flops = 4 * batch * context * a.QDim() / static_cast<double>(c.job.parallel.tp);
      const double decode_s = std::max(kv_bytes / c.hbm, decode_flops / (op.fwd_flops > 0 ? op.fwd_flops / op.fwd_s : 1));
      st.kv_read_s += kv_bytes / c.hbm;
      layer_s += prefill_s + decode_s + op.fwd_kernels * c.graph_gap_s;
      continue;
    }
    const bool expert = op.name == "expert_up" || op.name == "expert_down";
    const double scale = expert ? TouchedExpertShare(a, tokens) * (a.experts_per_token + a.shared_experts) : 1.0;
    layer_s += ServingOpSeconds(op, scale, c);
    layer_weights_s += op.weight_elems * scale * c.weight_bpp / c.hbm;
  }
  const double L = static_cast<double>(c.stage_layers);
  st.weights_read_s = L * layer_weights_s;
  st.kv_read_s *= L;
  // The output layer for the tokens that sample (decodes and the last chunk of each prompt).
  const double sampled = std::max(1.0, batch + (prefill > 0 ? 1.0 : 0.0));
  double head_s = 0;
  for (const Op& op : HeadOps(c.job, c.hw, sampled))
    if (op.kind == OpKind::kGemm) head_s += ServingOpSeconds(op, 1, c), st.weights_read_s += op.weight_elems * 2 / c.hbm;
  // S§3 tensor parallel: two all-reduces of the step's hidden states per layer.
  const int64_t tp = c.job.parallel.tp;
  const double ar_bytes = tokens * a.hidden * ActivationBytesPerElement(c.job.training.precision);
  const int64_t per_node = std::min(tp, c.job.cluster.gpus_per_node);
  if (tp > 1) st.tp_comm_s = 2 * L * CollectiveTime(Collective::kAllReduce, ar_bytes, tp, per_node, c.hw);
  const double pp = static_cast<double>(c.job.parallel.pp);
  const double pp_hop = pp > 1 ? (pp - 1) * CollectiveTime(Collective::kSendRecv, ar_bytes, 2, 2, c.hw) : 0;
  st.overhead_s = c.step_fixed_s + c.step_per_seq_s * batch;
  const double stage_s = L * layer_s + head_s;
  st.compute_s = std::max(0.0, pp * stage_s - st.weights_read_s * pp - st.kv_read_s * pp);
  st.total_s = pp * (stage_s + st.tp_comm_s) + pp_hop + st.overhead_s;
  st.weights_read_s *= pp, st.kv_read_s *= pp, st.tp_comm_s *= pp, st.tp_comm_s += pp_hop;
  return st;
}


ServingLimits ResolveLimits(const Job& job, const GpuSpec& gpu, const ServingEngineProfile& e) {
  const ServingSpec& s = job.serving;
  std::string name = gpu.name + " " + gpu.id;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  // S§4 the engine's defaults by GPU size (vLLM: >= 70 GiB and not an A100 gets the larger ones).
  const bool large = gpu.memory_bytes >= e.large_gpu_min_bytes &&
                     (e.large_gpu_excludes.empty() || name.find(e.large_gpu_excludes) == std::string::npos);
  ServingLimits lim;
  lim.memory_fraction = s.gpu_memory_utilization > 0 ? s.gpu_memory_utilization : e.memory_fraction_default;
  lim.max_num_seqs = s.max_num_seqs > 0 ? s.max_num_seqs : large ? e.max_num_seqs_large : e.max_num_seqs_small;
  lim.max_num_batched_tokens = s.max_num_batched_tokens > 0 ? s.max_num_batched_tokens
                               : large ? e.max_num_batched_tokens_large : e.max_num_batched_tokens_small;
  const double in90 = std::max(s.input_len, s.input_len_p90), out90 = std::max(s.output_len, s.output_len_p90);
  lim.max_model_len = s.max_model_len > 0 ? s.max_model_len : static_cast<int64_t>(std::ceil(in90 + out90));
  // Without chunked prefill a whole prompt must fit one step's token budget.
  if (!e.chunked_prefill) lim.max_num_batched_tokens = std::max(lim.max_num_batched_tokens, lim.max_model_len);
  return lim;
}

namespace {

Location ServingWhere(const Job& job, const std::string& key) {
  auto it = job.set_keys.find(key);
  if (it != job.set_keys.end()) return it->second;
  return {job.source, 0, key};
}

Result<ServingContext> MakeServingContext(const Job& job, const Catalog& catalog, const Calibration& cal,
                                          const std::vector<ServingEngineProfile>& engines) {
  const ServingSpec& s = job.serving;
  ServingContext c;
  auto engine = FindServingEngine(engines, s.engine, s.engine_version, ServingWhere(job, "serving.engine"));
  if (!engine.ok()) return engine.status();
  c.engine = *engine;
  auto gpu = catalog.FindGpu(job.cluster.gpu);
  if (!gpu.ok()) return Status::BadInput(ServingWhere(job, "cluster.gpu"), gpu.status().reason());
  if (std::string why = WeightFormatProblem(s.weights, *gpu); !why.empty())
    return Status::BadInput(ServingWhere(job, "serving.weights"), why);
  const Arch& a = job.arch;
  if (a.heads % job.parallel.tp != 0)
    return Status::BadInput(ServingWhere(job, "parallel.tp"), "tp " + std::to_string(job.parallel.tp) +
                                  " does not divide the model's " + std::to_string(a.heads) + " attention heads");
  if (job.parallel.pp > a.layers)
    return Status::BadInput(ServingWhere(job, "parallel.pp"), "pp " + std::to_string(job.parallel.pp) + " exceeds the " +
                                  std::to_string(a.layers) + " layers");
  c.job = InferenceJob(job, *gpu);
  auto hw = ResolveHardware(c.job, catalog, cal);
  if (!hw.ok()) return hw.status();
  c.hw = *hw;
  if (!c.hw.gpu.mem_bw_bytes_per_s || !c.hw.gpu.PeakFlops(c.job.training.precision))
    return Status::BadInput(ServingWhere(job, "cluster.gpu"), "the catalog has no memory bandwidth or peak FLOP/s for " +
                                  c.hw.gpu.name + ": its serving speed cannot be estimated");
  c.lim = ResolveLimits(job, c.hw.gpu, c.engine);
  c.weights = WeightsPerGpu(a, s.weights, job.parallel.tp, job.parallel.pp, cal);
  c.weight_bpp = WeightBytesPerParam(s.weights, cal);
  c.kv_per_token_gpu = KvBytesPerTokenPerGpu(a, s.kv_dtype, KvCompute(c.hw.gpu), job.parallel.tp, job.parallel.pp);
  c.hbm = *c.hw.gpu.mem_bw_bytes_per_s * c.hw.k.hbm_eff;
  c.step_fixed_s = cal.Get("serving.step_fixed_s");
  c.step_per_seq_s = cal.Get("serving.step_per_seq_s");
  c.graph_gap_s = cal.Get("serving.graph_kernel_gap_s");
  // S§4 the HTTP front end: its time before a request's first token, and its handling of every
  // streamed token (detokenisation, the response chunk) in each step.
  if (s.frontend) {
    c.frontend_s = cal.Get("serving.frontend_s");
    c.step_per_seq_s += cal.Get("serving.frontend_per_seq_s");
  }
  c.stage_layers = (a.layers + job.parallel.pp - 1) / job.parallel.pp;
  return c;
}

// S§4 one replica at `running` sequences decoding: the steady step and its latencies, before any
// wait for a free slot.
struct Operating {
  double running = 0;
  StepTime step;
  double tpot = 0, tpot_p90 = 0;
  double ttft = 0, ttft_p90 = 0;   // without queueing for a slot
  double requests_per_s = 0;       // completions at this concurrency
  double prefill_alone_s = 0;
};

struct Lengths {
  double in = 0, out = 0, in90 = 0, out90 = 0;
};

// S§7 the two length lists are read in different orders so that a long prompt does not go with a
// long output (the shares of the list the order steps by: 1/golden ratio, sqrt(2) - 1).
constexpr double kOutputOrderShare = 0.6180339887, kInputOrderShare = 0.4142135624;

// S§4 chunked prefill: a prompt goes through in chunks of the step's token budget left by the
// decodes (vLLM schedules running decodes first); each chunk shares a step with them.
double PromptSeconds(const ServingContext& c, double running, double prompt, double context) {
  const double budget = std::max(1.0, static_cast<double>(c.lim.max_num_batched_tokens) - running);
  const double chunks = std::ceil(prompt / budget);
  const double chunk = std::min(prompt, budget);
  return chunks * ServingStep(c, running, context, chunk, prompt).total_s;
}

Operating AtConcurrency(const ServingContext& c, double running, const Lengths& n) {
  Operating o;
  o.running = running;
  const double out = std::max(1.0, n.out), budget = static_cast<double>(c.lim.max_num_batched_tokens);
  // Steady state: every step carries the prompt tokens of the requests that replace finished
  // ones, running x in / out on average, within the budget the decodes leave.
  const double prefill = std::min(std::max(0.0, budget - running), running * n.in / out);
  o.step = ServingStep(c, running, n.in + n.out / 2, prefill, n.in);
  o.tpot = o.step.total_s;
  const double prefill90 = std::min(std::max(0.0, budget - running), running * n.in90 / out);
  o.tpot_p90 = std::max(o.tpot, ServingStep(c, running, n.in90 + n.out90 / 2, prefill90, n.in90).total_s);
  const double others = std::max(0.0, running - 1);
  o.prefill_alone_s = PromptSeconds(c, 0, n.in, n.in);
  // An arrival waits for the step in flight (half a step on average, 0.9 of one at p90).
  // An arrival waits for the step in flight when others are decoding (half a step on average, 0.9
  // of one at p90; none when it runs alone), and for the server's front end.
  const double in_flight = std::min(1.0, others);
  o.ttft = c.frontend_s + PromptSeconds(c, others, n.in, n.in + n.out / 2) + 0.5 * in_flight * o.tpot;
  o.ttft_p90 = c.frontend_s + PromptSeconds(c, others, n.in90, n.in90 + n.out90 / 2) + 0.9 * in_flight * o.tpot_p90;
  o.requests_per_s = running / (o.ttft + (out - 1) * o.tpot);
  return o;
}

// S§5 Erlang C: the probability an arrival waits when `servers` slots serve offered load `a`
// (Erlangs); 1 at or above saturation.
double ErlangC(double servers, double a) {
  if (a >= servers) return 1;
  // Erlang B by its stable recursion, then C = n B / (n - a (1 - B)).
  const int n = std::max(1, static_cast<int>(std::floor(servers)));
  double b = 1;
  for (int k = 1; k <= n; ++k) b = a * b / (k + a * b);
  return n * b / (n - a * (1 - b));
}

}  // namespace

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
std::string GiB(double bytes) { return Fixed(bytes / kGiB, 1) + " GiB"; }

// S§6 the cheapest on-demand catalog instance with this GPU, per GPU-hour.
void PriceFromCatalog(const Catalog& catalog, const std::string& gpu_id, ServingEstimate& e) {
  for (const InstanceSpec& in : catalog.instances) {
    if (in.gpu_id != gpu_id || in.gpu_count <= 0 || !in.on_demand_usd_per_hour) continue;
    const double per_gpu = *in.on_demand_usd_per_hour / static_cast<double>(in.gpu_count);
    if (!e.usd_per_gpu_hour || per_gpu < *e.usd_per_gpu_hour) e.usd_per_gpu_hour = per_gpu, e.price_instance = in.id;
  }
}

// S§2 whether the engine starts: the budget holds weights and reserves, and the KV cache holds
// one sequence of max_model_len tokens (vLLM and SGLang refuse to start otherwise).
void CheckFits(const ServingContext& c, ServingEstimate& e) {
  const ServingMemory& m = e.memory;
  if (m.kv_bytes <= 0) {
    e.fits = false;
    e.fit_problem = "weights " + GiB(m.weights_bytes) + " + activation peak " + GiB(m.activation_bytes) +
                    " + non-torch " + GiB(m.non_torch_bytes) +
                    (c.engine.cuda_graph_before_kv ? " + CUDA graphs " + GiB(m.cuda_graph_bytes) : std::string()) +
                    " per GPU exceed the " + GiB(m.budget_bytes) + " the engine may use (" +
                    c.engine.memory_fraction_key + " " + Fixed(c.lim.memory_fraction, 2) + " x " + GiB(m.device_bytes) + ")";
  } else if (e.kv_capacity_tokens < e.max_model_len) {
    e.fits = false;
    e.fit_problem = "the KV cache holds " + std::to_string(e.kv_capacity_tokens) + " tokens (" + GiB(m.kv_bytes) +
                    "), fewer than one sequence of max_model_len " + std::to_string(e.max_model_len) + " tokens";
  }
}

// S§4 the replica's operating point for the job's load; fills latency, throughput and saturation.
Operating ResolveLoad(const ServingContext& c, const Lengths& n, double slots, ServingEstimate& e) {
  const ServingSpec& s = c.job.serving;
  const double replicas = static_cast<double>(e.replicas);
  if (s.load == ServingLoad::kMaxThroughput) {
    Operating o = AtConcurrency(c, slots, n);
    e.ttft_s = {o.ttft, o.ttft_p90};
    return o;
  }
  if (s.load == ServingLoad::kConcurrency) {
    const double users = std::max(1.0, s.concurrency / replicas);
    Operating o = AtConcurrency(c, std::min(users, slots), n);
    // Users beyond the slots queue: each of them waits its turn (Little's law over the replica).
    const double wait = users > slots ? users / o.requests_per_s - (o.ttft + (std::max(1.0, n.out) - 1) * o.tpot) : 0;
    e.ttft_s = {o.ttft + wait, o.ttft_p90 + wait};
    return o;
  }
  // Request rate: the running sequences satisfy Little's law, C = rate x time in the engine.
  const double rate = s.request_rate / replicas;
  Operating full = AtConcurrency(c, slots, n);
  if (rate >= full.requests_per_s) {
    e.saturated = true;
    e.ttft_s = {full.ttft, full.ttft_p90};
    return full;
  }
  double running = std::min(slots, std::max(1.0, rate * full.prefill_alone_s));
  Operating o = AtConcurrency(c, running, n);
  for (int i = 0; i < 40; ++i) {
    const double next = std::min(slots, std::max(1.0, rate * (o.ttft + (std::max(1.0, n.out) - 1) * o.tpot)));
    if (std::fabs(next - running) < 1e-3 * running) break;
    running = 0.5 * (running + next);
    o = AtConcurrency(c, running, n);
  }
  // S§5 waits for a slot: M/M/c over the slots, service time = a request's time in the engine.
  const double service = o.ttft + (std::max(1.0, n.out) - 1) * o.tpot;
  const double a = rate * service, pw = ErlangC(slots, a);
  const double mean_wait = pw * service / (slots - a);
  const double p90_wait = pw > 0.1 ? std::log(pw / 0.1) * service / (slots - a) : 0;
  e.ttft_s = {o.ttft + mean_wait, o.ttft_p90 + p90_wait};
  o.requests_per_s = rate;
  return o;
}

// S§7 serving.num_requests: the batch split evenly over the replicas, each replica's share simulated
// step by step; throughput = the batch's tokens over the makespan.
void SimulateBatch(const ServingContext& c, const Lengths& n, ServingEstimate& e) {
  const int64_t per_replica = (c.job.serving.num_requests + e.replicas - 1) / e.replicas;
  const std::vector<double> in = RequestLengths(n.in, n.in90, per_replica, kInputOrderShare);
  const std::vector<double> out = RequestLengths(n.out, n.out90, per_replica, kOutputOrderShare);
  const SimulatedRun run = SimulateRequests(c, in, out, e.kv_capacity_tokens);
  const double replicas = static_cast<double>(e.replicas);
  e.ttft_s = run.ttft_s, e.tpot_s = run.tpot_s;  // TTFT from t = 0, the front end's queue included
  e.makespan_s = run.makespan_s;
  e.simulated_steps = run.steps, e.simulated_preemptions = run.preemptions;
  e.concurrency = run.mean_running;
  e.decode_step = run.mean_step;
  e.prefill_s = PromptSeconds(c, 0, n.in, n.in);
  if (run.makespan_s <= 0) return;
  e.requests_per_s = replicas * run.requests / run.makespan_s;
  e.output_tokens_per_s = replicas * run.output_tokens / run.makespan_s;
  e.input_tokens_per_s = replicas * run.input_tokens / run.makespan_s;
}

// S§2 the alternatives that make the engine start: smaller weight formats on the same cards, more
// tensor-parallel cards in the node, each with the KV cache it would leave.
std::vector<std::string> WhatWouldFit(const Job& job, const Catalog& catalog, const Calibration& cal,
                                      const std::vector<ServingEngineProfile>& engines) {
  // cluster.gpus_per_node when the user set it, else the widest node the catalog rents this GPU in,
  // and at least a common server's GPUs (serving.what_if_gpus_per_node).
  int64_t node = job.IsSet("cluster.gpus_per_node") ? job.cluster.gpus_per_node : 0;
  if (node == 0) {
    node = static_cast<int64_t>(cal.Get("serving.what_if_gpus_per_node"));
    auto gpu = catalog.FindGpu(job.cluster.gpu);
    for (const InstanceSpec& in : catalog.instances)
      if (gpu.ok() && in.gpu_id == gpu->id) node = std::max(node, in.gpu_count);
  }
  std::vector<std::string> out;
  auto try_job = [&](const Job& j) {
    auto c = MakeServingContext(j, catalog, cal, engines);
    if (!c.ok()) return false;
    const ServingMemory m = StartupMemory(j, c->hw.gpu, c->engine, c->lim, cal);
    const int64_t tokens = KvCapacityTokens(m.kv_bytes, c->kv_per_token_gpu, c->engine.block_size);
    if (tokens < c->lim.max_model_len) return false;
    out.push_back("serving.weights " + ToString(j.serving.weights) + ", parallel.tp " + std::to_string(j.parallel.tp) +
                  " (" + std::to_string(j.parallel.tp * j.parallel.pp) + " GPUs per replica): weights " +
                  GiB(m.weights_bytes) + " per GPU, KV cache " + std::to_string(tokens) + " tokens (" +
                  Fixed(static_cast<double>(tokens) / c->lim.max_model_len, 1) + " sequences of " +
                  std::to_string(c->lim.max_model_len) + ")");
    return true;
  };
  // S§2 for the job's weight format and each smaller one, the fewest tensor-parallel cards that hold it.
  const WeightFormat formats[] = {job.serving.weights, WeightFormat::kFp8, WeightFormat::kInt4Awq};
  double last_bytes = 1e9;
  for (WeightFormat w : formats) {
    const double bytes = WeightBytesPerParam(w, cal);
    if (bytes > WeightBytesPerParam(job.serving.weights, cal) || bytes >= last_bytes) continue;
    last_bytes = bytes;
    Job j = job;
    j.serving.weights = w;
    for (int64_t tp = job.parallel.tp; tp <= node; tp *= 2) {
      if (job.arch.heads % tp != 0 || (w == job.serving.weights && tp == job.parallel.tp)) continue;
      j.parallel.tp = tp;
      if (try_job(j)) break;
    }
  }
  if (out.empty())
    out.push_back("no weight format or tensor-parallel size on " + std::to_string(node) +
                  " of these GPUs holds it: use a GPU with more memory or pipeline stages across nodes (parallel.pp)");
  return out;
}

// S§4 the one sentence: what limits the setup at this load, with the numbers behind it.
std::string ServingBottleneck(const ServingContext& c, const ServingEstimate& e, double slots, double by_kv) {
  const ServingSpec& s = c.job.serving;
  if (e.saturated)
    return "the request rate " + Fixed(s.request_rate, 2) + "/s exceeds the " + Fixed(e.requests_per_s, 2) +
           "/s these " + std::to_string(e.replicas) + " replica(s) serve: requests queue without bound; add replicas";
  const bool queueing = (s.load == ServingLoad::kRequestRate || s.load == ServingLoad::kConcurrency) &&
                        e.concurrency >= slots - 1e-9 &&
                        (s.load == ServingLoad::kRequestRate || s.concurrency / e.replicas > slots);
  if (queueing) {
    if (by_kv < static_cast<double>(c.lim.max_num_seqs))
      return "the KV cache (" + std::to_string(e.kv_capacity_tokens) + " tokens) holds " + Fixed(slots, 0) +
             " sequences at once, so further requests wait; fp8 KV (serving.kv_dtype fp8), a higher memory fraction, "
             "more tensor parallelism or more replicas raise it";
    return "max_num_seqs " + std::to_string(c.lim.max_num_seqs) + " caps the running sequences, so further requests wait";
  }
  const StepTime& st = e.decode_step;
  const std::pair<double, std::string> parts[] = {
      {st.weights_read_s, "reading the weights (" + GiB(c.weights.per_gpu_bytes) + " per GPU) from HBM; "
                          "smaller weights (fp8/int4) or more tensor parallelism cut it"},
      {st.kv_read_s, "reading the KV cache of " + Fixed(e.concurrency, 0) + " sequences; fp8 KV halves it"},
      {st.compute_s, "the math of the step's tokens (compute-bound); a faster GPU or fp8 GEMMs cut it"},
      {st.tp_comm_s, "tensor-parallel all-reduces; fewer tp ranks with replicas, or a faster link, cut it"},
      {st.overhead_s, "the engine's per-step host work (scheduling, sampling); larger batches amortise it"}};
  const auto* top = &parts[0];
  for (const auto& p : parts)
    if (p.first > top->first) top = &p;
  const std::string batch = s.load != ServingLoad::kNumRequests ? std::string()
      : "the " + std::to_string(s.num_requests) + " requests take " + Fixed(e.makespan_s, 1) + " s at " +
            Fixed(e.concurrency, 0) + " sequences decoding on average (" + std::to_string(e.simulated_preemptions) +
            " preemptions); ";
  return batch + "a decode step takes " + Fixed(st.total_s * 1e3, 1) + " ms, " + Fixed(top->first * 1e3, 1) +
         " ms of it " + top->second;
}

}  // namespace

Result<ServingEstimate> EstimateServing(const Job& job, const Catalog& catalog, const Calibration& cal,
                                        const std::vector<ServingEngineProfile>& engines) {
  auto ctx = MakeServingContext(job, catalog, cal, engines);
  if (!ctx.ok()) return ctx.status();
  const ServingContext& c = *ctx;
  const ServingSpec& s = job.serving;
  ServingEstimate e;
  e.engine = c.engine.engine, e.engine_version = c.engine.version;
  e.replicas = std::max<int64_t>(1, job.parallel.dp);
  e.num_gpus = job.parallel.tp * job.parallel.pp * e.replicas;
  e.memory = StartupMemory(job, c.hw.gpu, c.engine, c.lim, cal);
  e.kv_bytes_per_token = KvBytesPerToken(job.arch, s.kv_dtype, KvCompute(c.hw.gpu));
  e.kv_bytes_per_token_per_gpu = c.kv_per_token_gpu;
  e.kv_capacity_tokens = KvCapacityTokens(e.memory.kv_bytes, c.kv_per_token_gpu, c.engine.block_size);
  e.max_model_len = c.lim.max_model_len;
  e.max_num_seqs = c.lim.max_num_seqs, e.max_num_batched_tokens = c.lim.max_num_batched_tokens;
  e.frontend_s = c.frontend_s;
  e.max_concurrency_at_tokens = static_cast<double>(e.max_model_len);
  e.max_concurrency = static_cast<double>(e.kv_capacity_tokens) / e.max_concurrency_at_tokens;
  PriceFromCatalog(catalog, c.hw.gpu.id, e);
  if (!c.engine.version_note.empty()) e.notes.push_back(c.engine.version_note);
  if (!c.hw.efficiency_note.empty()) e.notes.push_back(c.hw.efficiency_note);
  CheckFits(c, e);
  if (!e.fits) {
    e.what_would_fit = WhatWouldFit(job, catalog, cal, engines);
    return e;
  }
  const Lengths n{s.input_len, s.output_len, std::max(s.input_len, s.input_len_p90),
                  std::max(s.output_len, s.output_len_p90)};
  // S§4 sequences a replica runs at once: the scheduler's max_num_seqs, and the KV cache's room
  // for whole sequences at the mean length (paged blocks are taken as tokens arrive).
  const double by_kv = std::floor(static_cast<double>(e.kv_capacity_tokens) / (n.in + n.out / 2));
  const double slots = std::max(1.0, std::min(static_cast<double>(c.lim.max_num_seqs), by_kv));
  if (s.load == ServingLoad::kNumRequests) {
    SimulateBatch(c, n, e);
  } else {
    const Operating o = ResolveLoad(c, n, slots, e);
    e.concurrency = o.running;
    e.decode_step = o.step;
    e.prefill_s = o.prefill_alone_s;
    e.tpot_s = {o.tpot, o.tpot_p90};
    e.requests_per_s = o.requests_per_s * e.replicas;
    e.output_tokens_per_s = e.requests_per_s * n.out;
    e.input_tokens_per_s = e.requests_per_s * n.in;
  }
  e.output_tokens_per_s_per_gpu = e.output_tokens_per_s / static_cast<double>(e.num_gpus);
  if (e.usd_per_gpu_hour && e.output_tokens_per_s > 0) {
    // S§6 the setup's spend per second over the tokens it serves (the same spend per input token).
    const double usd_per_s = *e.usd_per_gpu_hour * static_cast<double>(e.num_gpus) / 3600.0;
    e.cost_per_million_output_tokens_usd = usd_per_s / e.output_tokens_per_s * 1e6;
    if (e.input_tokens_per_s > 0) e.cost_per_million_input_tokens_usd = usd_per_s / e.input_tokens_per_s * 1e6;
  }
  e.bottleneck = ServingBottleneck(c, e, slots, by_kv);
  return e;
}

}  // namespace gpuplan
