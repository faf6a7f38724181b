// Collective times: the formulas in collective.hpp over the levels a
// placement spans.
//
// A placement is turned into stages, innermost first. Stage s is one level
// the collective crosses, with p_s ranks in each of its sub-collectives:
//
//   DGX, 16 ranks, 8 per node:   stage 0 nvlink p=8 | stage 1 infiniband p=2
//   Ascend 910, 8 ranks, 8/node: stage 0 hccs  p=4 | stage 1 pcie p=2
//   DGX, 2 ranks, 1 per node:    stage 0 infiniband p=2
//
// Levels the placement does not cross (p = 1) are skipped.

#include "planner/cluster/collective.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <fmt/format.h>

namespace planner::cluster {
namespace {

struct Stage {
  const Level* level = nullptr;
  int p = 1;                 ///< ranks in one sub-collective at this level
  double parallel = 1;       ///< ranks in one unit of the previous stage
  BytesPerSecond per_rank;   ///< bandwidth one rank gets here
  double units = 1;          ///< units entering this stage: n / prod(p of earlier stages)
  /// Inter-node stage on an oversubscribed leaf/spine fabric: how much
  /// longer the bytes that cross nodes take, for rings and trees and for
  /// all-to-all (leaf_stretch). 1 elsewhere.
  double ring_stretch = 1;
  double pairwise_stretch = 1;

  /// Efficiency and latency of collective `kind` here (its own table where
  /// the level has one, else the ring table and the level's latency).
  double eff(core::Collective kind, double s) const { return level->table_for(kind).interpolate(s); }
  Seconds alpha(core::Collective kind) const { return level->latency_for(kind); }
};

/// The stretch of the bytes that cross nodes when `nodes` nodes of one
/// collective sit on a fabric with leaves of L nodes and oversubscription r
/// (Level::nodes_per_leaf, Level::oversubscription). Groups of nodes are
/// placed compactly, leaf after leaf, and every node of a leaf runs a
/// collective of the same kind at once (SPMD: all data-parallel groups
/// reduce together), so a node's share of its leaf's uplinks is 1/r of its
/// NIC bandwidth. The smallest piece of a group inside one leaf is
/// g = gcd(nodes, L) nodes.
///   all-to-all: a node of a piece of g sends (nodes - g)/(nodes - 1) of its
///     inter-node bytes out of the leaf: stretch max(1, r (nodes - g)/(nodes - 1));
///   rings and trees: one edge per ring (channel) or tree leaves each piece,
///     one node's bandwidth per g nodes: stretch max(1, r / g); none when
///     the group sits inside one leaf (g = nodes: L is a multiple of it).
/// No leaves described, or r = 1: 1.
struct LeafStretch {
  double ring = 1;
  double pairwise = 1;
};

LeafStretch leaf_stretch(const Level& x, int nodes) {
  if (!x.nodes_per_leaf || !x.oversubscription || nodes < 2) return {};
  const double r = *x.oversubscription;
  const double g = std::gcd(nodes, *x.nodes_per_leaf);
  const double m = nodes;
  if (g >= m) return {};  // the whole group under one leaf: nothing crosses the spine
  return {std::max(1.0, r / g), std::max(1.0, r * (m - g) / (m - 1))};
}

Result<std::vector<Stage>> make_stages(const Interconnect& net, Placement where) {
  const int n = where.ranks;
  const int k = where.ranks_per_node;
  const int per_node = net.devices_per_node();
  if (k < 1 || k > per_node)
    return make_error("placement: ranks_per_node {} must be in [1, {}] (devices per node)", k, per_node);
  if (k > n) return make_error("placement: ranks_per_node {} exceeds ranks {}", k, n);
  if (n % k != 0) return make_error("placement: ranks {} is not a multiple of ranks_per_node {}", n, k);

  std::vector<Stage> stages;
  int inner = 1;  // ranks of one node inside one group of the previous level
  const Level* prev = nullptr;
  for (const Level& l : net.levels) {
    if (l.inter_node) continue;
    int r = std::min(l.devices_per_group, k);
    if (r % inner != 0)
      return make_error("placement: {} ranks per node cannot be split into whole '{}' groups of {}", k,
                        prev ? prev->name : l.name, inner);
    if (r / inner > 1) stages.push_back({&l, r / inner, static_cast<double>(inner), l.bandwidth, 0});
    inner = r;
    prev = &l;
  }
  const int nodes = n / k;
  if (nodes > 1) {
    const Level& x = net.inter_node();
    const LeafStretch stretch = leaf_stretch(x, nodes);
    stages.push_back({&x, nodes, static_cast<double>(k), x.per_rank_bandwidth(k), 0, stretch.ring, stretch.pairwise});
  }
  double units = n;
  for (Stage& s : stages) {
    s.units = units;
    units /= s.p;
  }
  return stages;
}

/// NCCL's LL128 protocol carries 120 useful bytes per 128-byte line, so its
/// ring bus bandwidth is 0.92 of Simple's (NVIDIA/nccl src/graph/tuning.cc:
/// "busBw * (0.92 /*120.0/128.0*/)" for Ring/LL128).
constexpr double kLl128BandwidthFactor = 0.92;

/// The protocol choice of a ring that crosses nodes (NCCL's tuning model
/// takes, per call, the protocol of least latency + bytes / bandwidth):
/// the profile's fitted per-step latency, which is LL128's (the NET ring
/// LL128 value) at LL128's bandwidth, or Simple at full bandwidth with
/// Simple's base latency and per-step latencies (each stage's steps at its
/// level's `simple_latency`). `bw_time` is the bandwidth term at full
/// bandwidth, `fitted` the latency with the fitted alphas; c = 2 for
/// all-reduce (2 steps per rank), 1 otherwise. Rings inside one node, and
/// profiles without the Simple keys, keep bw_time + fitted: their tables
/// were fitted that way. So does a collective with its own measured
/// latency at a level it crosses (planner calibrate): the measurement
/// already holds the protocol NCCL chose.
Seconds ring_protocols(const std::vector<Stage>& stages, core::Collective kind, std::optional<Seconds> simple_base,
                       Seconds bw_time, Seconds fitted, double c) {
  const Seconds plain = bw_time + fitted;
  bool crosses = false;
  for (const Stage& s : stages) {
    const auto& own = s.level->per_collective[static_cast<std::size_t>(kind)];
    if (!s.level->simple_latency || (own && own->latency)) return plain;
    crosses = crosses || s.level->inter_node;
  }
  if (!crosses || !simple_base) return plain;
  Seconds simple = *simple_base;
  for (const Stage& s : stages) simple += *s.level->simple_latency * (c * (s.units - s.units / s.p));
  return std::min(bw_time * (1.0 / kLl128BandwidthFactor) + fitted, bw_time + simple);
}

/// Ring all-reduce (c = 2) or all-gather/reduce-scatter (c = 1) inside one
/// stage, with the table and latency of `kind` (protocols as ring_protocols).
Seconds ring_level(const Stage& s, core::Collective kind, double bytes, double c,
                   std::optional<Seconds> simple_base) {
  const double p = s.p;
  Stage one = s;
  one.units = p;  // steps of this ring alone: c (p - 1)
  return ring_protocols({one}, kind, simple_base,
                        Seconds(c * (p - 1) / p * bytes * s.ring_stretch / (s.per_rank.value * s.eff(kind, bytes))),
                        s.alpha(kind) * (c * (p - 1)), c);
}

/// Tree all-reduce inside one stage, when the level has a tree table.
std::optional<Seconds> tree_level(const Stage& s, double bytes) {
  const auto& tree = s.level->tree;
  if (!tree || s.p < tree->min_ranks || bytes < tree->min_bytes.value) return std::nullopt;
  const double p = s.p;
  double e = tree->efficiency.interpolate(bytes);
  return Seconds(2 * (p - 1) / p * bytes * s.ring_stretch / (s.per_rank.value * e)) +
         s.level->latency * (2 * std::ceil(std::log2(p)));
}

/// NVLink SHARP all-reduce (single stage): the table is an algbw fraction.
std::optional<Seconds> nvls_level(const Stage& s, double bytes) {
  const auto& nv = s.level->nvls;
  if (!nv || s.p < nv->min_ranks || bytes < nv->min_bytes.value) return std::nullopt;
  return Seconds(bytes / (s.per_rank.value * nv->efficiency.interpolate(bytes))) + s.level->latency * 2.0;
}

/// Flat ring across all stages for `kind`: c = 2 all-reduce, 1 otherwise;
/// `factor` is the bytes factor (2(n-1)/n, (n-1)/n or 1). `single_ring`:
/// one ring, so across nodes one rank's share of the NICs (Placement).
Seconds flat_ring(const std::vector<Stage>& stages, std::optional<Seconds> simple_base, core::Collective kind,
                  double bytes, double c, double factor, bool single_ring = false) {
  double bw = 0;
  Seconds latency(0);
  bool first = true;
  for (const Stage& s : stages) {
    double offer = (single_ring ? 1.0 : s.parallel) * s.per_rank.value * s.eff(kind, bytes) / s.ring_stretch;
    bw = first ? offer : std::min(bw, offer);
    first = false;
    // NCCL tuning model: steps that cross this level pay its latency.
    latency += s.alpha(kind) * (c * (s.units - s.units / s.p));
  }
  return ring_protocols(stages, kind, simple_base, Seconds(factor * bytes / bw), latency, c);
}

struct Timed {
  Seconds time;
  Algorithm algorithm;
};

/// Hierarchical all-reduce from stage i outwards.
Timed hier_all_reduce(const std::vector<Stage>& st, std::size_t i, double bytes, std::optional<Seconds> simple_base) {
  const Stage& s = st[i];
  if (i + 1 == st.size()) {
    Timed best{ring_level(s, core::Collective::all_reduce, bytes, 2, simple_base), Algorithm::hierarchical_ring};
    if (auto t = tree_level(s, bytes); t && *t < best.time) best = {*t, Algorithm::hierarchical_tree};
    return best;
  }
  Timed outer = hier_all_reduce(st, i + 1, bytes / s.p, simple_base);
  return {ring_level(s, core::Collective::reduce_scatter, bytes, 1, simple_base) + outer.time +
              ring_level(s, core::Collective::all_gather, bytes, 1, simple_base),
          outer.algorithm};
}

/// In-network all-reduce (Level::collnet): each rank reduce-scatters and
/// all-gathers inside the node, and across nodes sends its shard up once
/// and gets the sum back once at its NIC share. The phases stream chunk by
/// chunk, so the slowest sets the time (NCCL's tuning model prices CollNet
/// at the node's bandwidth, bwIntra, not the phases' sum); latency: the
/// rings' steps inside the node and the CollNet latency. nullopt when the
/// placement stays in one node or the fabric has no CollNet.
std::optional<Seconds> collnet_all_reduce(const std::vector<Stage>& st, double bytes) {
  const Stage& x = st.back();
  if (!x.level->inter_node || !x.level->collnet) return std::nullopt;
  Seconds inside(0), latency(0);
  double shard = bytes;
  for (std::size_t i = 0; i + 1 < st.size(); ++i) {
    const Stage& s = st[i];
    const double p = s.p;
    inside += Seconds(2 * (p - 1) / p * shard / (s.per_rank.value * s.eff(core::Collective::all_reduce, shard)));
    latency += s.alpha(core::Collective::all_reduce) * (2 * (p - 1));
    shard /= p;
  }
  const auto& cn = *x.level->collnet;
  return std::max(inside, Seconds(shard / (x.per_rank.value * cn.efficiency))) + latency + cn.latency;
}

}  // namespace

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::local: return "local";
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::nvls: return "nvls";
    case Algorithm::hierarchical_ring: return "hierarchical_ring";
    case Algorithm::hierarchical_tree: return "hierarchical_tree";
    case Algorithm::collnet: return "collnet";
    case Algorithm::pairwise: return "pairwise";
    case Algorithm::point_to_point: return "point_to_point";
  }
  return "?";
}

Result<CollectiveCost> collective_time(const Interconnect& net, core::Collective kind, Bytes message, Placement where) {
  const double bytes = message.value;
  if (!std::isfinite(bytes) || bytes < 0)
    return make_error("{}: message size must be a finite number of bytes >= 0, got {}", core::to_string(kind), bytes);
  if (where.ranks < 1) return make_error("{}: ranks must be >= 1, got {}", core::to_string(kind), where.ranks);
  if (kind == core::Collective::send_recv && where.ranks != 2)
    return make_error("send_recv: needs ranks = 2 (ranks_per_node 2: same node, 1: different nodes), got {}",
                      where.ranks);
  if (where.ranks == 1) return CollectiveCost{Seconds(0), Algorithm::local};
  PLANNER_TRY(std::vector<Stage> st, make_stages(net, where));
  if (st.empty()) return CollectiveCost{Seconds(0), Algorithm::local};
  const double n = where.ranks;
  const std::optional<Seconds> base = net.simple_base_latency;

  switch (kind) {
    case core::Collective::all_reduce: {
      if (st.size() == 1) {
        CollectiveCost best{ring_level(st[0], kind, bytes, 2, base), Algorithm::ring};
        if (auto t = tree_level(st[0], bytes); t && *t < best.time) best = {*t, Algorithm::tree};
        if (auto t = nvls_level(st[0], bytes); t && *t < best.time) best = {*t, Algorithm::nvls};
        if (auto t = collnet_all_reduce(st, bytes); t && *t < best.time) best = {*t, Algorithm::collnet};
        return best;
      }
      CollectiveCost best{flat_ring(st, base, kind, bytes, 2, 2 * (n - 1) / n), Algorithm::ring};
      Timed h = hier_all_reduce(st, 0, bytes, base);
      if (h.time < best.time) best = {h.time, h.algorithm};
      if (auto t = collnet_all_reduce(st, bytes); t && *t < best.time) best = {*t, Algorithm::collnet};
      return best;
    }
    case core::Collective::all_gather:
    case core::Collective::reduce_scatter: {
      // NCCL runs all-gather and reduce-scatter as rings over every rank
      // (one ring per NIC across nodes): (n-1) steps, each paying the latency
      // of the levels it crosses. It has no hierarchical variant (its PAT
      // algorithm, 2.23+, serves one rank per node only).
      if (st.size() == 1) return CollectiveCost{ring_level(st[0], kind, bytes, 1, base), Algorithm::ring};
      return CollectiveCost{flat_ring(st, base, kind, bytes, 1, (n - 1) / n, where.single_ring), Algorithm::ring};
    }
    case core::Collective::broadcast:
      return CollectiveCost{flat_ring(st, base, kind, bytes, 1, 1.0), Algorithm::ring};
    case core::Collective::all_to_all: {
      // Each rank sends S/n to every rank; the bytes that leave a unit of the
      // previous stage but stay inside this stage's group cross this level.
      Seconds slowest(0), alpha(0);
      double inner = 1;
      for (const Stage& s : st) {
        double crossing = bytes * inner * (s.p - 1) / n;
        slowest = std::max(slowest, Seconds(crossing * s.pairwise_stretch / (s.per_rank.value * s.eff(kind, bytes))));
        alpha = std::max(alpha, s.alpha(kind));
        inner *= s.p;
      }
      return CollectiveCost{slowest + alpha, Algorithm::pairwise};
    }
    case core::Collective::send_recv: {
      const Stage& s = st.front();
      return CollectiveCost{Seconds(bytes / (s.per_rank.value * s.eff(kind, bytes))) + s.alpha(kind),
                            Algorithm::point_to_point};
    }
  }
  return make_error("unknown collective");
}

BytesPerSecond bus_bandwidth(core::Collective kind, Bytes message, int ranks, Seconds time) {
  if (!(time.value > 0) || ranks < 1) return BytesPerSecond(0);
  const double n = ranks;
  double factor = 1;
  switch (kind) {
    case core::Collective::all_reduce: factor = 2 * (n - 1) / n; break;
    case core::Collective::all_gather:
    case core::Collective::reduce_scatter:
    case core::Collective::all_to_all: factor = (n - 1) / n; break;
    case core::Collective::broadcast:
    case core::Collective::send_recv: factor = 1; break;
  }
  return BytesPerSecond(message.value / time.value * factor);
}

}  // namespace planner::cluster
