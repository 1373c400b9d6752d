// Serving memory: weights per GPU at a weight format, KV bytes per token, and the start-up memory
// budget that leaves the KV cache (docs/model/serving.md S§1-S§2).
#include "serving_internal.h"

#include <algorithm>
#include <cmath>

namespace gpuplan {

double WeightBytesPerParam(WeightFormat w, const Calibration& cal) {
  // S§1 stored bytes per quantised parameter, group scales and zero points included (data).
  switch (w) {
    case WeightFormat::kBf16:
    case WeightFormat::kFp16: return 2;
    case WeightFormat::kFp8: return cal.Get("serving.weight_bytes.fp8");
    case WeightFormat::kInt8: return cal.Get("serving.weight_bytes.int8");
    case WeightFormat::kInt4Awq: return cal.Get("serving.weight_bytes.int4_awq");
    case WeightFormat::kInt4Gptq: return cal.Get("serving.weight_bytes.int4_gptq");
    case WeightFormat::kFp4: return cal.Get("serving.weight_bytes.fp4");
  }
  return 2;
}

std::string WeightFormatProblem(WeightFormat w, const GpuSpec& gpu) {
  if (w == WeightFormat::kBf16 && !gpu.bf16_supported)
    return gpu.name + " has no bf16; serve fp16 weights (serving.weights: fp16)";
  // S§1 fp4 (NVFP4/MXFP4) tensor cores are Blackwell's; a GPU without fp8 support has none either.
  if (w == WeightFormat::kFp4 && gpu.family != "blackwell")
    return gpu.name + " has no fp4 tensor cores (Blackwell only); use int4-awq or int4-gptq for 4-bit weights";
  return "";
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

double KvBytesPerToken(const Arch& a, KvDtype kv, Precision compute) {
  const double bytes = kv == KvDtype::kFp8 ? 1.0 : ActivationBytesPerElement(compute);
  // S§1 MLA caches the compressed latent and the rotary key once per token (DeepSeek-V2 §2.1.2);
  // MHA/GQA/MQA cache a key and a value per KV head.
  if (a.IsMla()) return static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim) * a.layers * bytes;
  return static_cast<double>(a.KvHeads()) * (a.HeadDim() + a.VHeadDim()) * a.layers * bytes;
}

double KvBytesPerTokenPerGpu(const Arch& a, KvDtype kv, Precision compute, int64_t tp, int64_t pp) {
  const double bytes = kv == KvDtype::kFp8 ? 1.0 : ActivationBytesPerElement(compute);
  const double layers = static_cast<double>(CeilDiv(a.layers, pp));  // the fullest stage sets the tokens
  if (a.IsMla()) return static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim) * layers * bytes;
  // S§1 KV heads split over tp; fewer heads than ranks are replicated (one head per rank).
  const double heads = std::max<double>(1.0, static_cast<double>(a.KvHeads()) / static_cast<double>(tp));
  return heads * (a.HeadDim() + a.VHeadDim()) * layers * bytes;
}

// S§1 weights on the fullest GPU: the decoder layers' linear weights at the weight format split
// over tp (experts too: vLLM's default shards each expert over the tensor-parallel ranks), norms
// replicated, the embedding and the output layer in 16 bits split over tp (vocab-parallel) on the
// first and last pipeline stage.
ServingWeights WeightsPerGpu(const Arch& a, WeightFormat w, int64_t tp, int64_t pp, const Calibration& cal) {
  const ParamCounts n = CountParams(a);
  const double t = static_cast<double>(tp), wb = WeightBytesPerParam(w, cal);
  const double moe = static_cast<double>(a.MoeLayers()), dense = static_cast<double>(a.layers) - moe;
  const double linear_per_layer_avg =
      (a.layers * static_cast<double>(n.attn_per_layer) + dense * n.dense_mlp_per_layer +
       moe * (n.expert_per_layer + n.shared_expert_per_layer)) / a.layers;
  const double router_norm = static_cast<double>(n.norm_per_layer) +
                             (a.layers > 0 ? moe * n.router_per_layer / a.layers : 0.0);
  const double stage_layers = static_cast<double>(CeilDiv(a.layers, pp));
  ServingWeights out;
  out.layer_bytes = linear_per_layer_avg * wb / t + router_norm * 2;
  const double embed = static_cast<double>(n.embedding) * 2 / t;
  const double head = static_cast<double>(n.lm_head + n.final_norm) * 2 / t;
  out.head_bytes = head;
  out.per_gpu_bytes = stage_layers * out.layer_bytes + (pp == 1 ? embed + head : std::max(embed, head));
  out.total_bytes = a.layers * out.layer_bytes * t + embed * t + head * t;
  return out;
}

// S§2 the profile run's activation peak: the larger of one forward of max_num_batched_tokens
// tokens (the residual stream and this rank's MLP intermediate, routed copies in a MoE layer) and
// the dummy sampler over min(max_num_seqs, max_num_batched_tokens) sequences, whose logits and
// copies span the whole vocabulary on every rank (the vLLM 0.19 logs: the peak does not shrink
// with tp and grows with the vocabulary), plus a fixed part. The last pipeline stage, which
// samples, sets the capacity.
double ActivationPeakBytes(const Arch& a, const ServingEngineProfile& e, int64_t tp, int64_t batched_tokens,
                           int64_t max_seqs) {
  const double t = static_cast<double>(tp);
  const double mlp_local = a.IsMoe() ? static_cast<double>(a.MoeFfn()) * (a.experts_per_token + a.shared_experts) / t
                                     : static_cast<double>(a.Ffn()) / t;
  const double forward = static_cast<double>(batched_tokens) * (a.hidden + mlp_local) * e.activation_bytes_per_token_elem;
  const double sampler = static_cast<double>(std::min(max_seqs, batched_tokens)) * static_cast<double>(a.vocab) *
                         e.activation_sampler_bytes_per_seq_vocab;
  return std::max(forward, sampler) + e.activation_fixed_bytes;
}

ServingMemory StartupMemory(const Job& job, const GpuSpec& gpu, const ServingEngineProfile& e, const ServingLimits& lim,
                            const Calibration& cal) {
  const ServingSpec& s = job.serving;
  const int64_t tp = job.parallel.tp, pp = job.parallel.pp;
  ServingMemory m;
  // S§2 the engine sees the board's memory less what the driver keeps (H100 80 GB: 79.19 GiB).
  m.device_bytes = gpu.memory_bytes - cal.Get("serving.driver_reserved_bytes");
  m.weights_bytes = WeightsPerGpu(job.arch, s.weights, tp, pp, cal).per_gpu_bytes;
  m.activation_bytes = ActivationPeakBytes(job.arch, e, tp, lim.max_num_batched_tokens, lim.max_num_seqs);
  // S§2 NCCL's buffers come with tensor parallelism (the logs: 2.1 GiB at tp 2-4, 0.07-0.25 GiB at
  // tp 1 whatever pp).
  m.non_torch_bytes = tp > 1 ? e.non_torch_bytes_tp : e.non_torch_bytes_tp1;
  m.cuda_graph_bytes = e.cuda_graph_bytes;
  const double graphs = e.cuda_graph_before_kv ? m.cuda_graph_bytes : 0.0;
  const double used = m.weights_bytes + m.activation_bytes + m.non_torch_bytes + graphs;
  // S§2 "total": the fraction caps everything the engine holds; "free": the KV cache takes the
  // fraction of what is left once the weights and the profile run are in place.
  if (e.memory_fraction_of == "free") {
    m.budget_bytes = m.device_bytes;
    m.kv_bytes = lim.memory_fraction * (m.device_bytes - used);
    if (m.device_bytes - used < 0) m.kv_bytes = m.device_bytes - used;
  } else {
    m.budget_bytes = lim.memory_fraction * m.device_bytes;
    m.kv_bytes = m.budget_bytes - used;
  }
  return m;
}

int64_t KvCapacityTokens(double kv_bytes, double per_token_per_gpu, int64_t block_size) {
  // S§2 whole blocks of block_size tokens.
  if (kv_bytes <= 0 || per_token_per_gpu <= 0) return 0;
  const double blocks = std::floor(kv_bytes / (per_token_per_gpu * static_cast<double>(block_size)));
  return static_cast<int64_t>(blocks) * block_size;
}

}  // namespace gpuplan
