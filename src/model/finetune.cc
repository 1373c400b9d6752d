// Fine-tuning terms of the step (docs/model/finetune.md).
#include "gpuplan/finetune.h"

#include <algorithm>

#include "gpuplan/memory.h"

namespace gpuplan {

AdapterCost AdapterLayerCost(const Job&, const HardwareContext&, double) { return {}; }

double DequantLayerTime(const Job&, const HardwareContext&) { return 0; }

double ComputeSeqLen(const TrainingSpec& t) { return static_cast<double>(t.seq_len); }

double UsefulTokensPerSequence(const TrainingSpec& t) {
  if (t.padding == Padding::kPacked || t.tokens_per_sample <= 0) return static_cast<double>(t.seq_len);
  return static_cast<double>(std::min(t.tokens_per_sample, t.seq_len));
}

double OptimizerStepTime(const Job& job, const HardwareContext& hw, double params, double grad_bytes,
                         double weight_bytes) {
  const EfficiencyConstants& k = hw.k;
  if (job.parallel.offload == Offload::kNone)
    return params * k.optimizer_bytes_per_param / (*hw.gpu.mem_bw_bytes_per_s * k.hbm_eff);
  // C§5 offload: gradients down and weights up over PCIe, then CPU-Adam on the host's vCPUs
  // (memory-bandwidth bound, cpu_adam_params_per_s_per_vcpu); unknown vCPUs -> the host minimum.
  const double vcpus = job.cluster.cpu_cores_per_gpu > 0 ? static_cast<double>(job.cluster.cpu_cores_per_gpu)
                                                         : hw.cal.Get("host_vcpus_per_gpu_min");
  return params * (grad_bytes + weight_bytes) / hw.host_bytes_per_s +
         params / (vcpus * hw.cal.Get("cpu_adam_params_per_s_per_vcpu"));
}

double ActivationOffloadTime(const Job& job, const HardwareContext& hw, double layers) {
  if (!job.training.activation_offload) return 0;
  // Every saved activation goes down to host memory in forward and comes back in backward, over
  // the GPU's PCIe link; counted as fully exposed (no overlap with compute).
  const double saved = LayerActivationBytes(job, job.arch.IsMoe()).saved_bytes * layers;
  return 2 * saved / hw.host_bytes_per_s;
}

}  // namespace gpuplan
