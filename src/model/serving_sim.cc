// A finite list of requests through one engine replica, step by step (docs/model/serving.md S§7):
// admission by max_num_seqs and the KV cache, decodes first and prompt chunks in the step's token
// budget, each step timed by ServingStep, sequences leaving after their output length.
#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>

#include "serving_internal.h"

namespace gpuplan {

namespace {

// The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
double NormalQuantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549671010322563e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425;
  if (p < lo || p > 1 - lo) {
    const double q = std::sqrt(-2 * std::log(p < lo ? p : 1 - p));
    const double x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
                     ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    return p < lo ? x : -x;
  }
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

constexpr double kZ90 = 1.2815515655446004;  // the standard normal's 90th percentile

// S§7 the lognormal sigma whose p90 / mean is `ratio`: ln ratio = z90 s - s^2 / 2, the smaller
// root; a ratio beyond the lognormal's largest (exp(z90^2 / 2) = 2.27) takes s = z90.
double LognormalSigma(double ratio) {
  const double disc = kZ90 * kZ90 - 2 * std::log(ratio);
  return disc <= 0 ? kZ90 : kZ90 - std::sqrt(disc);
}

// A multiplier coprime to n near share x n: request i takes quantile (i x m) mod n, so the order
// of lengths is spread over the list (no sort by length) and every quantile is used once.
int64_t Stride(int64_t n, double share) {
  int64_t m = std::max<int64_t>(1, std::llround(share * static_cast<double>(n)));
  while (std::gcd(m, n) != 1) ++m;
  return m;
}

}  // namespace

std::vector<double> RequestLengths(double mean, double p90, int64_t n, double order_share) {
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(0, n)), std::max(1.0, std::round(mean)));
  if (n <= 1 || !(p90 > mean * 1.0001)) return out;
  const double s = LognormalSigma(p90 / mean), mu = std::log(mean) - s * s / 2;
  const int64_t m = Stride(n, order_share);
  std::vector<double> q(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    q[static_cast<size_t>(k)] = std::exp(mu + s * NormalQuantile((static_cast<double>(k) + 0.5) / static_cast<double>(n)));
    sum += q[static_cast<size_t>(k)];
  }
  // The quantile grid cuts the far tail: rescale so the list keeps the stated mean.
  const double scale = mean * static_cast<double>(n) / sum;
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = std::max(1.0, std::round(q[static_cast<size_t>((i * m) % n)] * scale));
  return out;
}

namespace {

// One request's state in the simulation.
struct SimRequest {
  double in = 0;          // the prompt
  double need = 0;        // prompt tokens to compute (the prompt, or prompt + output after preemption)
  double computed = 0;    // of them, done
  double kv = 0;          // tokens it holds in the KV cache
  double out = 1, generated = 0;
  double first_s = -1, finish_s = -1;
};

// The tokens one step schedules: decodes of the running sequences, then prompt chunks.
struct StepPlan {
  std::vector<std::pair<int32_t, double>> chunks;  // request, prompt tokens this step
  double decodes = 0, decode_context = 0, prefill = 0, prompt_len = 0;
};

// S§7 preempts the newest running sequences until the decodes fit in the KV cache (vLLM V1
// recomputes a preempted request: its prompt and the tokens it generated so far).
void Preempt(std::vector<SimRequest>& r, std::vector<int32_t>& running, std::deque<int32_t>& waiting, double& kv_used,
             double capacity, int64_t& preemptions) {
  for (;;) {
    double decodes = 0;
    for (int32_t i : running) decodes += r[i].computed >= r[i].need ? 1 : 0;
    if (kv_used + decodes <= capacity || running.size() <= 1) return;
    const int32_t victim = running.back();
    running.pop_back();
    SimRequest& v = r[victim];
    kv_used -= v.kv;
    v.need = v.in + v.generated;
    v.computed = 0, v.kv = 0;
    waiting.push_front(victim);
    ++preemptions;
  }
}

// S§7 the step's schedule (vLLM V1 / SGLang chunked prefill): every running sequence past its
// prompt decodes one token; the budget left goes to unfinished prompts, then to waiting requests
// in arrival order while a slot (max_num_seqs) and the KV cache have room. Without chunked prefill
// a prompt enters whole, or alone in a step when it is longer than the budget.
StepPlan ScheduleStep(const ServingContext& c, std::vector<SimRequest>& r, std::vector<int32_t>& running,
                      std::deque<int32_t>& waiting, double& kv_used, double capacity) {
  StepPlan p;
  for (int32_t i : running)
    if (r[i].computed >= r[i].need) p.decodes += 1, p.decode_context += r[i].kv;
  double budget = std::max(static_cast<double>(c.lim.max_num_batched_tokens), static_cast<double>(c.lim.max_num_seqs)) - p.decodes;
  double room = capacity - kv_used - p.decodes;
  const bool chunked = c.engine.chunked_prefill;
  auto take = [&](int32_t i) -> bool {
    const double left = r[i].need - r[i].computed;
    double chunk = std::min({left, budget, room});
    if (!chunked && chunk < left && !(p.decodes == 0 && p.chunks.empty() && room >= left)) return false;
    if (!chunked) chunk = left;
    if (chunk <= 0) return false;
    p.chunks.push_back({i, chunk});
    budget -= chunk, room -= chunk;
    return true;
  };
  for (int32_t i : running)
    if (r[i].computed < r[i].need && budget > 0) take(i);
  while (!waiting.empty() && budget > 0 && static_cast<int64_t>(running.size()) < c.lim.max_num_seqs) {
    if (!take(waiting.front())) break;
    running.push_back(waiting.front());
    waiting.pop_front();
  }
  for (const auto& [i, chunk] : p.chunks) p.prefill += chunk, p.prompt_len += chunk * r[i].need;
  if (p.prefill > 0) p.prompt_len /= p.prefill;
  if (p.decodes > 0) p.decode_context /= p.decodes;
  return p;
}

// S§7 the step's effect: decodes and completed prompts sample a token; finished sequences leave.
void ApplyStep(const StepPlan& p, double now, std::vector<SimRequest>& r, std::vector<int32_t>& running,
               double& kv_used) {
  for (int32_t i : running) {
    SimRequest& q = r[i];
    if (q.computed >= q.need) q.generated += 1, q.kv += 1, kv_used += 1;
  }
  for (const auto& [i, chunk] : p.chunks) {
    SimRequest& q = r[i];
    q.computed += chunk, q.kv += chunk, kv_used += chunk;
    if (q.computed < q.need) continue;
    if (q.first_s < 0) q.first_s = now;
    q.generated += 1;
  }
  for (int32_t i : running)
    if (r[i].generated >= r[i].out && r[i].finish_s < 0) r[i].finish_s = now, kv_used -= r[i].kv;
  std::erase_if(running, [&](int32_t i) { return r[i].finish_s >= 0; });
}

double Percentile90(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// Per-request TTFT and TPOT as `vllm bench serve` reports them: TPOT = (E2E - TTFT) / (out - 1)
// over the requests with more than one output token.
void Summarize(const std::vector<SimRequest>& r, SimulatedRun& run) {
  std::vector<double> ttft, tpot;
  for (const SimRequest& q : r) {
    ttft.push_back(q.first_s);
    if (q.out > 1) tpot.push_back((q.finish_s - q.first_s) / (q.out - 1));
    run.output_tokens += q.out, run.input_tokens += q.in;
    run.makespan_s = std::max(run.makespan_s, q.finish_s);
  }
  auto mean = [](const std::vector<double>& v) { return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); };
  run.ttft_s = {mean(ttft), Percentile90(ttft)};
  run.tpot_s = {mean(tpot), Percentile90(tpot)};
  run.requests = static_cast<double>(r.size());
}

}  // namespace

SimulatedRun SimulateRequests(const ServingContext& c, const std::vector<double>& input_lens,
                              const std::vector<double>& output_lens, int64_t kv_capacity_tokens) {
  std::vector<SimRequest> r(input_lens.size());
  std::deque<int32_t> waiting;
  for (size_t i = 0; i < r.size(); ++i)
    r[i].in = r[i].need = std::max(1.0, input_lens[i]), r[i].out = std::max(1.0, output_lens[i]);
  // S§7 every request is sent at t = 0; the front end hands them to the engine one after another,
  // request i at (i + 1) x frontend_s (tokenisation and request handling are serial in the server).
  size_t arrived = 0;
  auto arrive = [&](double now) {
    while (arrived < r.size() && static_cast<double>(arrived + 1) * c.frontend_s <= now + 1e-12)
      waiting.push_back(static_cast<int32_t>(arrived++));
  };
  SimulatedRun run;
  std::vector<int32_t> running;
  running.reserve(static_cast<size_t>(std::max<int64_t>(1, c.lim.max_num_seqs)));
  const double capacity = static_cast<double>(kv_capacity_tokens);
  double kv_used = 0, now = 0, batch_time = 0, context_time = 0, prefill_sum = 0, plen_time = 0;
  for (;;) {
    arrive(now);
    if (running.empty() && waiting.empty()) {
      if (arrived == r.size()) break;
      now = static_cast<double>(arrived + 1) * c.frontend_s;  // the engine idles until the next request
      continue;
    }
    Preempt(r, running, waiting, kv_used, capacity, run.preemptions);
    const StepPlan p = ScheduleStep(c, r, running, waiting, kv_used, capacity);
    if (p.decodes == 0 && p.chunks.empty()) break;  // nothing fits (a prompt beyond the cache): stop
    const double step_s = ServingStep(c, p.decodes, p.decode_context, p.prefill, p.prompt_len).total_s;
    now += step_s;
    batch_time += p.decodes * step_s, context_time += p.decode_context * p.decodes * step_s;
    prefill_sum += p.prefill, plen_time += p.prompt_len * p.prefill;
    ++run.steps;
    ApplyStep(p, now, r, running, kv_used);
  }
  for (SimRequest& q : r)
    if (q.finish_s < 0) q.finish_s = now, q.first_s = q.first_s < 0 ? now : q.first_s;
  Summarize(r, run);
  if (now > 0 && run.steps > 0) {
    run.mean_running = batch_time / now;
    const double ctx = batch_time > 0 ? context_time / batch_time : 0;
    const double pre = prefill_sum / static_cast<double>(run.steps);
    run.mean_step = ServingStep(c, run.mean_running, ctx, pre, prefill_sum > 0 ? plen_time / prefill_sum : 0);
  }
  return run;
}

}  // namespace gpuplan
