#pragma once
/// Collective communication time on a profile's interconnect (BRIEF §3).
///
/// Message size S follows nccl-tests: all_reduce and broadcast: the buffer;
/// all_gather: the gathered output (all ranks' parts); reduce_scatter: the
/// input (all ranks' parts); all_to_all: one rank's whole send buffer;
/// send_recv: the bytes sent.
///
/// One level, n ranks, per-rank bandwidth B, efficiency e(S), latency alpha:
///   ring all-reduce      2(n-1)/n * S/(B e) + 2(n-1) alpha
///   ring all-gather/RS    (n-1)/n * S/(B e) +  (n-1) alpha
///   tree all-reduce      2(n-1)/n * S/(B e_tree) + 2 ceil(log2 n) alpha
///   NVLS all-reduce      S/(B e_nvls) + 2 alpha   (e_nvls: algbw fraction)
///   broadcast            S/(B e) + (n-1) alpha
///   all-to-all           (n-1)/n * S/(B e) + alpha
///   send/recv            S/(B e) + alpha
/// Several levels (ranks on more than one node, or across HCCS groups):
///   flat ring: bandwidth = the slowest level, where a level crossed by the
///     ring offers (ranks inside one of its sub-groups) x (per-rank bandwidth);
///     latency split over levels as NCCL's tuning model does;
///   hierarchical (all-reduce only): reduce-scatter inside, all-reduce of
///     S/k outside (ring or tree, whichever is faster), all-gather inside;
/// and the faster of the two is taken.
/// Rings that cross nodes choose a protocol as NCCL's tuning model does,
/// where the profile gives Simple's latencies (simple_base_latency,
/// Level::simple_latency): min(bandwidth term / 0.92 + fitted latency
/// (LL128), bandwidth term + Simple base + Simple per-step latencies);
/// docs/profile-format.md. All-gather and reduce-scatter are
/// flat rings only, as NCCL runs them: (n-1) steps, so their latency grows
/// with the rank count. Ranks are placed compactly.
/// In-network reduction (Level::collnet; NCCL's CollNet over InfiniBand
/// SHARP), all-reduce across nodes only: reduce-scatter and all-gather
/// inside the node, each rank's shard S/k up to the switches and the sum
/// back once, streamed so the slowest phase sets the time:
///   max(2(k-1)/k S/(B_node e), S/k/(B_nic e_collnet)) + 2(k-1) alpha_node + latency
/// whatever the node count; taken when faster than the rings and trees.
/// Not stretched on an oversubscribed fabric (the leaf switches reduce).
/// Oversubscribed leaf/spine fabrics (Level::nodes_per_leaf and
/// Level::oversubscription on the inter-node level): the bytes that cross
/// nodes take longer by the stretch of the placement (collective.cpp
/// leaf_stretch): with m nodes, leaves of L, ratio r and g = gcd(m, L),
/// all-to-all max(1, r (m - g)/(m - 1)), rings and trees max(1, r / g); a
/// group inside one leaf (g = m) is not stretched.
/// Rings and trees barely notice (one edge per piece of g nodes leaves
/// the leaf); an all-to-all over many leaves runs at about 1/r of the NICs.
/// Send/recv is not stretched (the two nodes' leaves are not known).
/// Where a level has a table of its own for a collective (Level::
/// per_collective, written by planner calibrate), that collective reads it in
/// place of e(S), and its latency in place of alpha, in every formula above;
/// the hierarchical all-reduce's inner phases read the reduce_scatter and
/// all_gather tables. Profiles without them are priced as before.
///
///          node 0                 node 1
///   [r0 r1 .. r7]==NVLink   [r8 .. r15]      ring: r0->..->r7->NIC->r8..->r15->NIC->r0
///        |  8 NICs (one per GPU)  |          hier: RS in node, AR of S/8 per rail, AG

#include <optional>
#include <string_view>

#include "planner/cluster/profile.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

namespace planner::cluster {

/// How the time was obtained.
enum class Algorithm : std::uint8_t {
  local,              ///< one rank: nothing to send
  ring,               ///< ring over all ranks (one level or flat across levels)
  tree,               ///< tree at a single level
  nvls,               ///< NVLink SHARP, single node
  hierarchical_ring,  ///< inner phases + ring at the outermost level
  hierarchical_tree,  ///< inner phases + tree at the outermost level
  collnet,            ///< inner phases + in-network reduction across nodes (SHARP)
  pairwise,           ///< all-to-all
  point_to_point,     ///< send/recv
};

std::string_view algorithm_name(Algorithm a);

/// Where the ranks of one collective sit (core/collective.hpp).
using Placement = core::Placement;

struct CollectiveCost {
  Seconds time;
  Algorithm algorithm = Algorithm::local;
};

/// Time of one collective. Errors (one line) for an impossible placement.
Result<CollectiveCost> collective_time(const Interconnect& net, core::Collective kind, Bytes message,
                                       Placement where);
inline Result<CollectiveCost> collective_time(const ClusterProfile& p, core::Collective kind, Bytes message,
                                              Placement where) {
  return collective_time(p.interconnect, kind, message, where);
}

/// nccl-tests bus bandwidth of a collective that took `time`:
/// S/t x 2(n-1)/n (all-reduce), x (n-1)/n (all-gather, reduce-scatter,
/// all-to-all), x 1 (broadcast, send/recv).
BytesPerSecond bus_bandwidth(core::Collective kind, Bytes message, int ranks, Seconds time);

}  // namespace planner::cluster
