// Collective times on small hand-built interconnects, with the arithmetic in
// the comments. Constant efficiency tables keep the numbers readable.

#include <catch2/catch.hpp>

#include "cluster_helpers.hpp"

#include "planner/cluster/collective.hpp"

using namespace planner;
using namespace planner::cluster;
using Catch::Matchers::Contains;

namespace {

using cluster_test::dgx;
using cluster_test::flat;
using cluster_test::intra;
using cluster_test::seconds;

Algorithm algorithm(const Interconnect& net, core::Collective c, double bytes, int ranks, int per_node) {
  auto r = collective_time(net, c, Bytes(bytes), Placement{ranks, per_node});
  REQUIRE(r.ok());
  return r->algorithm;
}

}  // namespace

TEST_CASE("one node: ring formulas with busbw 240 GB/s", "[cluster]") {
  auto net = dgx();
  // all-reduce 1 GB on 8 GPUs: 2*7/8 * 1e9 / 240e9 + 2*7 * 2.5e-6
  //   = 7.291667e-3 + 35e-6 = 7.326667e-3 s
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 8, 8) == Approx(7.326667e-3).epsilon(1e-6));
  CHECK(algorithm(net, core::Collective::all_reduce, 1e9, 8, 8) == Algorithm::ring);
  // all-gather / reduce-scatter: 7/8 * 1e9/240e9 + 7 * 2.5e-6 = 3.645833e-3 + 17.5e-6
  CHECK(seconds(net, core::Collective::all_gather, 1e9, 8, 8) == Approx(3.663333e-3).epsilon(1e-6));
  CHECK(seconds(net, core::Collective::reduce_scatter, 1e9, 8, 8) == Approx(3.663333e-3).epsilon(1e-6));
  // broadcast: 1e9/240e9 + 7 * 2.5e-6 = 4.166667e-3 + 17.5e-6
  CHECK(seconds(net, core::Collective::broadcast, 1e9, 8, 8) == Approx(4.184167e-3).epsilon(1e-6));
  // all-to-all: 7/8 * 1e9/240e9 + 2.5e-6
  CHECK(seconds(net, core::Collective::all_to_all, 1e9, 8, 8) == Approx(3.648333e-3).epsilon(1e-6));
  // 2 GPUs: 2*1/2 * 1e9/240e9 + 2 * 2.5e-6 = 4.166667e-3 + 5e-6
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 2, 2) == Approx(4.171667e-3).epsilon(1e-6));
  // one rank: nothing to do
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 1, 1) == 0);
  CHECK(algorithm(net, core::Collective::all_reduce, 1e9, 1, 1) == Algorithm::local);
  // bus bandwidth of the 8-GPU all-reduce without latency: exactly 240 GB/s
  CHECK(bus_bandwidth(core::Collective::all_reduce, Bytes(1e9), 8, Seconds(7.291667e-3)).value == Approx(240e9).epsilon(1e-6));
}

TEST_CASE("send/recv inside and across nodes", "[cluster]") {
  auto net = dgx();
  // same node: 1e9 / 240e9 + 2.5e-6
  CHECK(seconds(net, core::Collective::send_recv, 1e9, 2, 2) == Approx(4.169167e-3).epsilon(1e-6));
  // across nodes, one rank per node: one NIC, 1e9 / (25e9 * 0.96) + 4e-6 = 41.666667e-3 + 4e-6
  CHECK(seconds(net, core::Collective::send_recv, 1e9, 2, 1) == Approx(41.670667e-3).epsilon(1e-6));
  CHECK(algorithm(net, core::Collective::send_recv, 1e9, 2, 1) == Algorithm::point_to_point);
}

TEST_CASE("two nodes: the flat ring is limited by the NICs", "[cluster]") {
  auto net = dgx();
  // 16 ranks, 8 per node, 1 GB. Flat ring: bandwidth min(300e9*0.8, 8 NICs * 25e9 * 0.96)
  //   = min(240e9, 192e9) = 192e9; latency (NCCL split): 2*(16-2) intra steps * 2.5 us
  //   + 2*(2-1) inter steps * 4 us = 70 + 8 = 78 us.
  //   t = 2*15/16 * 1e9/192e9 + 78e-6 = 9.765625e-3 + 78e-6 = 9.843625e-3
  // Hierarchical: RS in node 3.663333e-3, all-reduce of 1e9/8 over 2 nodes at one
  //   NIC per rank: 2*1/2 * 1.25e8/(25e9*0.96) + 2*4e-6 = 5.216333e-3, AG 3.663333e-3:
  //   12.543e-3 -> slower, so the ring is chosen.
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 16, 8) == Approx(9.843625e-3).epsilon(1e-6));
  CHECK(algorithm(net, core::Collective::all_reduce, 1e9, 16, 8) == Algorithm::ring);
  // All-gather on the same placement: flat 15/16 * 1e9/192e9 + (14*2.5 + 1*4) us
  //   = 4.8828125e-3 + 39e-6 = 4.9218125e-3; hierarchical 1.25e8 ring over 2 nodes
  //   (1/2 * 1.25e8/24e9 + 4e-6 = 2.608333e-3) + 3.663333e-3 = 6.271667e-3.
  CHECK(seconds(net, core::Collective::all_gather, 1e9, 16, 8) == Approx(4.9218125e-3).epsilon(1e-6));
  // A single ring (Placement::single_ring) crosses each node through one NIC:
  //   min(240e9, 1 * 25e9 * 0.96) = 24e9; 15/16 * 1e9/24e9 + 39e-6 = 39.1015e-3.
  auto single = collective_time(net, core::Collective::all_gather, Bytes(1e9), Placement{16, 8, true});
  REQUIRE(single.ok());
  CHECK(single->time.value == Approx(39.1015e-3).epsilon(1e-6));
  auto rs = collective_time(net, core::Collective::reduce_scatter, Bytes(1e9), Placement{16, 8, true});
  REQUIRE(rs.ok());
  CHECK(rs->time.value == Approx(39.1015e-3).epsilon(1e-6));
}

TEST_CASE("many nodes, small message: hierarchical tree wins on latency", "[cluster]") {
  auto net = dgx();
  // 128 ranks = 16 nodes x 8, 64 KiB. Flat ring latency alone: 2*(128-16)*2.5 us
  //   + 2*15*4 us = 680 us. Hierarchical: RS in node 7/8*65536/240e9 + 17.5e-6
  //   = 17.739e-6; tree all-reduce of 8192 B over 16 nodes at 25e9 * 0.864:
  //   2*15/16 * 8192/21.6e9 + 2*log2(16)*4e-6 = 0.711e-6 + 32e-6 = 32.711e-6;
  //   AG 17.739e-6. Total 68.189e-6 s.
  CHECK(seconds(net, core::Collective::all_reduce, 65536, 128, 8) == Approx(68.189e-6).epsilon(1e-4));
  CHECK(algorithm(net, core::Collective::all_reduce, 65536, 128, 8) == Algorithm::hierarchical_tree);
}

TEST_CASE("one rank per node uses one NIC", "[cluster]") {
  auto net = dgx();
  // 4 nodes x 1 rank, 1 GB: a single inter-node stage. Ring: 2*3/4 * 1e9/(25e9*0.96)
  //   + 2*3*4e-6 = 62.5e-3 + 24e-6; tree: 2*3/4 * 1e9/(25e9*0.864) + 2*2*4e-6 -> slower.
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 4, 1) == Approx(62.524e-3).epsilon(1e-6));
  // all-to-all over 2 nodes x 8: 8/16 of the buffer leaves the node at one NIC per
  //   rank (25e9 * 0.96): 0.5e9/24e9 = 20.833e-3; 7/16 stays at 240e9: 1.823e-3;
  //   the slower plus the larger alpha: 20.833333e-3 + 4e-6.
  CHECK(seconds(net, core::Collective::all_to_all, 1e9, 16, 8) == Approx(20.837333e-3).epsilon(1e-6));
}

TEST_CASE("NVLS: algbw table, only from min_ranks and min_bytes", "[cluster]") {
  auto net = dgx();
  net.levels[0].nvls = CollectiveTable{EfficiencyTable{{{1, 0.6}}, "message_bytes"}, 5, Bytes(2097152)};
  // 8 ranks, 1 GB: 1e9/(300e9 * 0.6) + 2 * 2.5e-6 = 5.555556e-3 + 5e-6 (ring: 7.326667e-3)
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 8, 8) == Approx(5.560556e-3).epsilon(1e-6));
  CHECK(algorithm(net, core::Collective::all_reduce, 1e9, 8, 8) == Algorithm::nvls);
  // 4 ranks: NVLS not available -> ring 2*3/4*1e9/240e9 + 6*2.5e-6 = 6.25e-3 + 15e-6
  CHECK(algorithm(net, core::Collective::all_reduce, 1e9, 4, 4) == Algorithm::ring);
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 4, 4) == Approx(6.265e-3).epsilon(1e-6));
  // 1 MiB: below min_bytes -> ring
  CHECK(algorithm(net, core::Collective::all_reduce, 1048576, 8, 8) == Algorithm::ring);
  // NVLS never applies to all-gather
  CHECK(algorithm(net, core::Collective::all_gather, 1e9, 8, 8) == Algorithm::ring);
}

TEST_CASE("three levels (Ascend-like HCCS groups of 4 inside a node of 8)", "[cluster]") {
  Level x;
  x.name = "roce";
  x.inter_node = true;
  x.nics_per_node = 8;
  x.nic_bandwidth = BytesPerSecond(12.5e9);
  x.latency = Seconds(4e-6);
  x.ring = flat(0.9);
  Interconnect net{{intra("hccs", 4, 90, 2.5, 0.8), intra("pcie", 8, 32, 2.5, 0.8), x}};
  // 8 ranks in one node: stages hccs (p=4) and pcie (p=2, 4 parallel links).
  // Flat ring: bandwidth min(90e9*0.8, 4 * 32e9*0.8) = min(72e9, 102.4e9) = 72e9;
  //   latency 2*(8-2)*2.5 us + 2*(2-1)*2.5 us = 35 us; t = 1.75e9/72e9 + 35e-6
  //   = 24.305556e-3 + 35e-6 = 24.340556e-3.
  // Hierarchical: RS over 4: 3/4*1e9/72e9 + 7.5e-6 = 10.424167e-3; AR of 2.5e8 over
  //   2 at 25.6e9: 2.5e8/25.6e9 + 5e-6 = 9.770625e-3; AG 10.424167e-3 -> 30.62e-3.
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 8, 8) == Approx(24.340556e-3).epsilon(1e-6));
  // 4 ranks stay inside one HCCS group: 2*3/4 * 1e9/72e9 + 6 * 2.5e-6
  CHECK(seconds(net, core::Collective::all_reduce, 1e9, 4, 4) == Approx(20.848333e-3).epsilon(1e-6));
  // 6 ranks per node cannot fill groups of 4 evenly
  auto six = collective_time(net, core::Collective::all_reduce, Bytes(1e9), Placement{6, 6});
  REQUIRE_FALSE(six.ok());
  CHECK_THAT(six.error().message, Contains("hccs"));
}

TEST_CASE("impossible placements are errors", "[cluster]") {
  auto net = dgx();
  auto check = [&](core::Collective c, double bytes, Placement p, const char* what) {
    auto r = collective_time(net, c, Bytes(bytes), p);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Contains(what));
  };
  check(core::Collective::all_reduce, 1e9, {16, 9}, "ranks_per_node 9");
  check(core::Collective::all_reduce, 1e9, {12, 8}, "not a multiple");
  check(core::Collective::all_reduce, 1e9, {4, 8}, "exceeds ranks");
  check(core::Collective::all_reduce, 1e9, {0, 1}, "ranks must be >= 1");
  check(core::Collective::send_recv, 1e9, {3, 3}, "send_recv");
  check(core::Collective::all_gather, -1, {8, 8}, "message size");
}

namespace {

/// dgx() with NCCL's Simple-protocol latencies (tuning.cc: base 8.4 us per
/// ring collective, 3.4 us per NVLink step, 14 us per network step).
Interconnect dgx_simple(bool tree = true) {
  Interconnect net = dgx();
  net.simple_base_latency = Seconds(8.4e-6);
  net.levels[0].simple_latency = Seconds(3.4e-6);
  net.levels[1].simple_latency = Seconds(14e-6);
  if (!tree) net.levels[1].tree.reset();
  return net;
}

}  // namespace

TEST_CASE("rings across nodes choose LL128 (fitted latency, 0.92 bandwidth) or Simple", "[cluster]") {
  const auto ag = core::Collective::all_gather;
  // all-gather on 1024 ranks, 8 per node (128 nodes). Stages: nvlink p = 8
  // over 1024 units -> 1024 - 128 = 896 steps; ib p = 128 -> 127 steps.
  // Bandwidth: min(nvlink 300e9 * 0.8 = 240e9, ib 8 rings * 25e9 * 0.96 =
  // 192e9) = 192e9.
  //   fitted latency = 896 * 2.5 + 127 * 4        = 2748 us
  //   Simple latency = 8.4 + 896 * 3.4 + 127 * 14 = 4832.8 us
  // 1 MB: bw_time = 1023/1024 * 1e6 / 192e9 = 5.20325e-6 s
  //   LL128 5.20325e-6 / 0.92 + 2748e-6 = 2.753656e-3  <- chosen
  //   Simple 5.20325e-6 + 4832.8e-6      = 4.838003e-3
  CHECK(seconds(dgx_simple(), ag, 1e6, 1024, 8) == Approx(2.753656e-3).epsilon(1e-5));
  // 10 GB: bw_time = 1023/1024 * 1e10 / 192e9 = 0.0520325521 s
  //   LL128 0.0520325521 / 0.92 + 2.748e-3 = 0.0593051
  //   Simple 0.0520325521 + 4.8328e-3      = 0.0568654  <- chosen
  CHECK(seconds(dgx_simple(), ag, 1e10, 1024, 8) == Approx(0.0568654).epsilon(1e-5));
  // Without the Simple keys: bw_time + fitted = 0.0520325521 + 2.748e-3.
  CHECK(seconds(dgx(), ag, 1e10, 1024, 8) == Approx(0.0547806).epsilon(1e-5));
}

TEST_CASE("ring all-reduce latency at 1024 ranks, one per node", "[cluster]") {
  const auto ar = core::Collective::all_reduce;
  // 1024 nodes, 1 rank each: one ib stage, 2 (1024 - 1) = 2046 steps;
  // per-rank bandwidth min(1, 8) * 25e9 / 1 = 25e9, e = 0.96 -> 24e9.
  //   fitted latency = 2046 * 4 us              = 8.184 ms
  //   Simple latency = 8.4 + 2046 * 14 us       = 28.6524 ms
  // 10 GB: bw_time = 2 * 1023/1024 * 1e10 / 24e9 = 0.832519531 s
  //   LL128 0.832519531 / 0.92 + 8.184e-3 = 0.913096534
  //   Simple 0.832519531 + 28.6524e-3     = 0.861171931  <- chosen
  CHECK(seconds(dgx_simple(false), ar, 1e10, 1024, 1) == Approx(0.861171931).epsilon(1e-6));
  CHECK(algorithm(dgx_simple(false), ar, 1e10, 1024, 1) == Algorithm::ring);
  // 1 MB: bw_time = 8.32519531e-5; LL128 9.04912534e-5 + 8.184e-3 =
  // 8.2744913e-3 (chosen); Simple 8.32519531e-5 + 28.6524e-3 = 28.7357e-3.
  CHECK(seconds(dgx_simple(false), ar, 1e6, 1024, 1) == Approx(8.2744913e-3).epsilon(1e-6));
}

TEST_CASE("rings inside one node ignore the Simple keys (their tables were fitted with alpha)", "[cluster]") {
  const auto ar = core::Collective::all_reduce;
  for (double bytes : {1e4, 1e6, 1e9})
    CHECK(seconds(dgx_simple(), ar, bytes, 8, 8) == Approx(seconds(dgx(), ar, bytes, 8, 8)).epsilon(1e-12));
}
