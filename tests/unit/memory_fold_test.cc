// Memory mechanisms of issue 18 (docs/model/memory.md §2.1, §2.3, §3.1, §3.2): fused kernels,
// Transformer Engine fp8, gradients under offload. Expectations from the shape, never copied outputs.
#include <gtest/gtest.h>

#include "../test_util.h"

#include "gpuplan/memory.h"

namespace gpuplan {
namespace {

using testing_util::MakeJob;

Job Llama(const std::string& training, const std::string& parallel = "") {
  return MakeJob("model: {preset: llama-2-7b}\ncluster: {num_gpus: 8}\ntraining: {" + training + "}\nparallel: {" +
                 parallel + "}\n");
}

// §3.1/§3.2: a fused RMSNorm keeps no x-hat and no fp32 upcast of its input (2 B + 2 B per sbh
// element per norm) and a fused SwiGLU no silu(gate) (one sb*f less): exactly those tensors.
TEST(MemoryFold, FusedNormAndActivationKeepLess) {
  const Job eager = Llama("seq_len: 2048");
  const Job fused = Llama("seq_len: 2048, fused_ops: \"norm,act\"");
  const double sb = 2048.0, ab = 2;
  const double expected = eager.arch.norms_per_layer * sb * eager.arch.hidden * (ab + (4 - ab)) + sb * eager.arch.Ffn() * ab;
  EXPECT_NEAR(LayerActivationBytes(eager, false).saved_bytes - LayerActivationBytes(fused, false).saved_bytes, expected, 1.0);
  // torch.compile counts as fused; full recompute keeps only the layer input either way.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Llama("seq_len: 2048, compile: true"), false).saved_bytes,
                   LayerActivationBytes(fused, false).saved_bytes);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Llama("recompute: full, fused_ops: \"norm,act\""), false).saved_bytes,
                   LayerActivationBytes(Llama("recompute: full"), false).saved_bytes);
}

// §3.1: Megatron (Transformer Engine) in fp8 keeps the down projection's input in 1 B and adds a
// 1 B copy of o_proj's input; without sequence parallelism the norm outputs are 1 B too.
TEST(MemoryFold, TransformerEngineFp8KeepsFp8Inputs) {
  const Job bf16 = Llama("framework: megatron, precision: bf16");
  const Job fp8 = Llama("framework: megatron, precision: fp8");
  const double sb = 2048.0;  // default seq_len, micro-batch 1
  const Arch& a = bf16.arch;
  const double expected = a.norms_per_layer * sb * a.hidden + sb * a.Ffn() - sb * a.ODim();
  EXPECT_NEAR(LayerActivationBytes(bf16, false).saved_bytes - LayerActivationBytes(fp8, false).saved_bytes, expected, 1.0);
  // torchao (torchtitan) keeps the 16-bit inputs: fp8 saves nothing there.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(Llama("framework: torchtitan, precision: fp8"), false).saved_bytes,
                   LayerActivationBytes(Llama("framework: torchtitan, precision: bf16"), false).saved_bytes);
}

// §2.1: Megatron-Bridge/NeMo fp8 recipes keep fp8 weights (fp8_param_gather): 1 B per linear weight.
TEST(MemoryFold, NemoFp8ParamsHalveTheLinearWeights) {
  const MemoryBreakdown bf16 = EstimateMemory(Llama("framework: nemo, precision: bf16", "zero: 1"));
  const MemoryBreakdown fp8 = EstimateMemory(Llama("framework: nemo, precision: fp8", "zero: 1"));
  const MemoryBreakdown mega = EstimateMemory(Llama("framework: megatron, precision: fp8", "zero: 1"));
  const Arch& a = Llama("").arch;
  const double linear = a.layers * (a.hidden * (a.QDim() + 2.0 * a.KvDim()) + a.ODim() * a.hidden + 3.0 * a.hidden * a.Ffn());
  EXPECT_NEAR(bf16.weights_bytes - fp8.weights_bytes, linear, 1e-6 * linear);
  EXPECT_DOUBLE_EQ(mega.weights_bytes, bf16.weights_bytes);
  EXPECT_DOUBLE_EQ(fp8.optimizer_bytes, bf16.optimizer_bytes);  // the fp32 master stays
}

// §2.3: offload keeps the sharded gradients in host memory; the GPU keeps only what is in flight.
TEST(MemoryFold, OffloadMovesShardedGradientsToHost) {
  const MemoryBreakdown gpu = EstimateMemory(Llama("", "zero: 3"));
  const MemoryBreakdown host = EstimateMemory(Llama("", "zero: 3, offload: optimizer+params"));
  EXPECT_GT(gpu.gradients_bytes, 0);
  EXPECT_EQ(host.gradients_bytes, 0);
  EXPECT_NEAR(host.host_bytes, gpu.weights_bytes + gpu.gradients_bytes + gpu.optimizer_bytes, 1e-9 * host.host_bytes);
  EXPECT_LT(host.total_bytes, gpu.total_bytes);
}

}  // namespace
}  // namespace gpuplan
