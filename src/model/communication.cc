// Collective costs: alpha-beta over rings, hierarchical across nodes (docs/model/communication.md).
#include <algorithm>
#include <cmath>

#include "gpuplan/estimate.h"

namespace gpuplan {

namespace {

// §1 nccl-tests doc/PERFORMANCE.md: busbw = algbw x factor.
double BusFactor(Collective c, double n) {
  switch (c) {
    case Collective::kAllReduce: return 2 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return (n - 1) / n;
    case Collective::kSendRecv: return 1;
  }
  return 1;
}

double RingSteps(Collective c, double n);

// §3 NCCL picks ring or tree per size: an all-reduce across nodes can use the double binary tree,
// whose latency grows with 2 log2(nodes) steps instead of the ring's 2(n - 1); at large sizes both
// move the same bytes per link, so only the latency term differs (NCCL docs, "NCCL_ALGO").
double CrossNodeSteps(Collective c, double nodes) {
  if (c == Collective::kAllReduce) return std::min(2 * (nodes - 1), 2 * std::ceil(std::log2(nodes)));
  return RingSteps(c, nodes);
}

double RingSteps(Collective c, double n) {
  switch (c) {
    case Collective::kAllReduce: return 2 * (n - 1);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return n - 1;
    case Collective::kSendRecv: return 1;
  }
  return 1;
}

// §2 achievable bandwidth of one GPU's share of a link for a collective.
double IntraBandwidth(Collective c, const HardwareContext& hw) {
  const double eff = c == Collective::kAllReduce ? hw.k.intra_allreduce_eff : hw.k.intra_eff;
  return hw.intra_bytes_per_s * eff;
}
double InterBandwidth(const HardwareContext& hw) {
  const double bw = hw.inter_bytes_per_s_per_gpu * hw.k.inter_eff;
  return hw.rdma ? bw : bw / hw.k.tcp_penalty;
}
double Latency(const LinkSpec& l, const HardwareContext& hw) {
  return hw.k.collective_latency_s + l.latency_s.value_or(0);
}

}  // namespace

double CollectiveTime(Collective c, double bytes, int64_t n_i, int64_t per_node_i, const HardwareContext& hw) {
  if (n_i <= 1 || bytes <= 0) return 0;
  const double n = static_cast<double>(n_i);
  const double per_node = static_cast<double>(std::max<int64_t>(1, std::min(per_node_i, n_i)));
  const double nodes = std::ceil(n / per_node);
  if (nodes <= 1) {
    // §2 single node: ring (or NVLS) over the intra-node link.
    return BusFactor(c, n) * bytes / IntraBandwidth(c, hw) + RingSteps(c, n) * Latency(hw.intra, hw);
  }
  const double inter_bw = InterBandwidth(hw);
  if (per_node <= 1 || c == Collective::kSendRecv) {
    // §3 one rank per node, or a point-to-point step whose slowest hop crosses nodes with the whole
    // message (a ring neighbour on the next node).
    return BusFactor(c, n) * bytes / inter_bw + CrossNodeSteps(c, n) * Latency(hw.inter, hw);
  }
  // §3 hierarchical: an intra-node phase over the whole buffer and an inter-node phase in which
  // each GPU carries 1/per_node of it over its share of the NICs (NCCL's tree/ring across rails);
  // the phases pipeline, and the cross-node phase reaches 1/factor of the NIC rate:
  // time = max(intra, factor x inter).
  double t_intra, t_inter;
  if (c == Collective::kAllToAll) {
    t_intra = bytes * (per_node - 1) / n / IntraBandwidth(c, hw);
    t_inter = bytes * (n - per_node) / n / inter_bw;
  } else {
    t_intra = BusFactor(c, per_node) * bytes / IntraBandwidth(c, hw);
    t_inter = BusFactor(c, nodes) * (bytes / per_node) / inter_bw;
  }
  const double t = std::max(t_intra, hw.k.hierarchical_inter_factor * t_inter);
  return t + RingSteps(c, per_node) * Latency(hw.intra, hw) + CrossNodeSteps(c, nodes) * Latency(hw.inter, hw);
}

double BusBandwidth(Collective c, double bytes, int64_t n, int64_t per_node, const HardwareContext& hw) {
  const double t = CollectiveTime(c, bytes, n, per_node, hw);
  return t > 0 ? BusFactor(c, static_cast<double>(n)) * bytes / t : 0;
}

}  // namespace gpuplan
