// Collective costs: alpha-beta over rings, hierarchical across nodes (docs/model/communication.md).
#include <algorithm>
#include <cmath>
#include <vector>

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

namespace {

// P§4 senders [lo, hi) that each send to the rank `shift` ranks away: how many of those on node
// `n` (ranks [n·g, (n + 1)·g)) have their receiver on another node.
int64_t CrossingOnNode(int64_t lo, int64_t hi, int64_t shift, int64_t n, int64_t g) {
  const int64_t a = std::max(lo, n * g), b = std::min(hi, (n + 1) * g);
  if (b <= a) return 0;
  const int64_t in_node = std::max<int64_t>(0, std::min(b + shift, (n + 1) * g) - std::max(a + shift, n * g));
  return (b - a) - in_node;
}

}  // namespace

// P§4 / N§7 Megatron-LM's rank order (tp, cp, ep inside dp, dp, then pp: RankGenerator's
// "tp-cp-ep-dp-pp") puts stage i on ranks [i·S, (i + 1)·S), S = tp·cp·dp, and its next rank is
// (i + 1) mod pp. Each stage boundary carries v chunk hand-overs per micro-batch; with
// interleaving the last stage hands chunk c to the first stage's chunk c + 1 (v − 1 of them).
// Each hand-over sends one message forward (activations) and one backward (gradients). Links are
// full duplex: a rank's sends all leave on its out-direction. Intra-node hops: each rank's sends
// at the intra-node rate. Cross-node hops: every rank of a node that sends to another node shares
// the node's NICs (at most one NIC per sender), so the node's out-bytes over that rate is the hop's
// time. The pipeline is paced by the slower of the two.
void PipelineP2P(const ParallelSpec& p, int64_t gpus_per_node, double msg, double m, const HardwareContext& hw,
                 CommDetail& cd) {
  if (p.pp <= 1 || msg <= 0) return;
  const int64_t S = std::max<int64_t>(1, p.tp * p.cp * std::max<int64_t>(1, p.dp));
  const int64_t g = std::max<int64_t>(1, gpus_per_node), pp = p.pp, v = std::max<int64_t>(1, p.vpp);
  const int64_t world = S * pp, nodes = (world + g - 1) / g;
  std::vector<double> out_msgs(static_cast<size_t>(nodes), 0);   // per micro-batch, leaving each node
  std::vector<int64_t> senders(static_cast<size_t>(nodes), 0);   // ranks of the node that send across
  std::vector<int64_t> all_sends(static_cast<size_t>(pp), 0), cross_sends(all_sends), intra_sends(all_sends);
  for (int64_t i = 0; i < pp; ++i) {
    const int64_t j = (i + 1) % pp, c = i + 1 < pp ? v : v - 1;  // hand-overs per micro-batch
    if (c == 0) continue;
    ++cd.pp_boundaries;
    bool crosses = false;
    // Forward: stage i's ranks send to stage j's; backward: stage j's send to stage i's.
    for (const auto& [from, shift] : {std::pair<int64_t, int64_t>{i, (j - i) * S}, {j, (i - j) * S}}) {
      const int64_t lo = from * S, hi = lo + S;
      int64_t crossing = 0;
      for (int64_t n = lo / g; n <= (hi - 1) / g; ++n) {
        const int64_t x = CrossingOnNode(lo, hi, shift, n, g);
        out_msgs[static_cast<size_t>(n)] += static_cast<double>(c * x);
        senders[static_cast<size_t>(n)] += x;
        crossing += x;
      }
      crosses = crosses || crossing > 0;
      const size_t f = static_cast<size_t>(from);
      all_sends[f] += c;
      if (crossing > 0) cross_sends[f] += c;
      if (crossing < S) intra_sends[f] += c;
    }
    if (crosses) ++cd.pp_cross_boundaries;
  }
  // The busiest rank's sends (pp_bytes) and the busiest node's cross-node bytes.
  int64_t rank_sends = 0, rank_intra = 0, rank_cross = 0;
  for (int64_t i = 0; i < pp; ++i) {
    const size_t k = static_cast<size_t>(i);
    rank_sends = std::max(rank_sends, all_sends[k]);
    rank_intra = std::max(rank_intra, intra_sends[k]);
    rank_cross = std::max(rank_cross, cross_sends[k]);
  }
  cd.pp_bytes = m * static_cast<double>(rank_sends) * msg;
  cd.pp_intra_s = m * static_cast<double>(rank_intra) *
                  (msg / IntraBandwidth(Collective::kSendRecv, hw) + Latency(hw.intra, hw));
  double worst = 0;
  for (int64_t n = 0; n < nodes; ++n) {
    const size_t k = static_cast<size_t>(n);
    if (senders[k] == 0) continue;
    const int64_t on_node = std::min(g, world - n * g);
    const double node_bw = hw.inter_bytes_per_s_per_gpu * static_cast<double>(on_node);
    // One NIC's share at most per sender (NCCL sends a peer's p2p over the GPU's nearest NIC).
    const double nic_bw = hw.inter_bytes_per_s_per_gpu * static_cast<double>(g) / std::max(1.0, hw.nics_per_node);
    const double sender_bw = std::max(hw.inter_bytes_per_s_per_gpu, nic_bw);
    const double line = std::min(node_bw, static_cast<double>(std::min(senders[k], on_node)) * sender_bw);
    const double eff = hw.k.inter_eff / (hw.rdma ? 1.0 : hw.k.tcp_penalty);
    worst = std::max(worst, out_msgs[k] * msg / (line * eff));
    cd.pp_cross_node_bytes = std::max(cd.pp_cross_node_bytes, m * out_msgs[k] * msg);
  }
  cd.pp_crosses_nodes = cd.pp_cross_boundaries > 0;
  if (cd.pp_crosses_nodes) cd.pp_cross_s = m * worst + m * static_cast<double>(rank_cross) * Latency(hw.inter, hw);
  cd.pp_s = std::max(cd.pp_intra_s, cd.pp_cross_s);
}

int64_t NvlinkDomainGpus(const ClusterSpec& c, const GpuSpec& g, const LinkSpec& intra) {
  const int64_t node = std::max<int64_t>(1, c.gpus_per_node);
  int64_t d = c.nvlink_domain;
  const bool nvlink = intra.kind == "nvswitch" || intra.kind == "nvlink";
  if (d <= 0 && nvlink && g.nvlink_domain_gpus) d = *g.nvlink_domain_gpus;
  // A domain that is not a whole number of nodes (the catalog's 72 on 64-GPU nodes) is the node.
  if (d <= node || d % node != 0) return node;
  return d;
}

int64_t NvlinkDomainGpus(const Job& job, const HardwareContext& hw) {
  return NvlinkDomainGpus(job.cluster, hw.gpu, hw.intra);
}

double BusBandwidth(Collective c, double bytes, int64_t n, int64_t per_node, const HardwareContext& hw) {
  const double t = CollectiveTime(c, bytes, n, per_node, hw);
  return t > 0 ? BusFactor(c, static_cast<double>(n)) * bytes / t : 0;
}

}  // namespace gpuplan
