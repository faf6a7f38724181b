// The fabric across nodes beyond its NICs: oversubscribed leaf/spine fabrics
// (Level::nodes_per_leaf, ::oversubscription) and in-network reduction
// (Level::collnet), worked by hand on a DGX-like interconnect, and the
// profile keys that describe them.

#include <cmath>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cluster_helpers.hpp"
#include "planner/cluster/collective.hpp"
#include "planner/core/io.hpp"

using namespace planner;
using namespace planner::cluster;
using nlohmann::json;

namespace {

/// cluster_test::dgx() (8 GPUs at 240 GB/s busbw, alpha 2.5 us; 8 NICs at
/// 24 GB/s, alpha 4 us; tree 0.864) with leaves of `leaf` nodes at ratio r.
Interconnect dgx(std::optional<int> leaf = std::nullopt, std::optional<double> r = std::nullopt) {
  Interconnect net = cluster_test::dgx();
  net.levels.back().nodes_per_leaf = leaf;
  net.levels.back().oversubscription = r;
  return net;
}

using cluster_test::seconds;

json a100() {
  auto t = io::read_file(cluster_test::profiles_dir() / "a100-sxm4-80gb.json");
  REQUIRE(t.ok());
  return json::parse(*t);
}

json sourced(double v) { return {{"value", v}, {"source", "test"}}; }

std::string error_of(const json& j) {
  auto p = parse_profile(j.dump(), "test.json");
  REQUIRE_FALSE(p.ok());
  return p.error().message;
}

}  // namespace

TEST_CASE("all-to-all over several leaves runs at the uplinks' share", "[cluster][collective]") {
  // 64 ranks = 8 nodes x 8, 1 GB. The bytes that leave a node:
  //   S * 8 * 7/64 = 0.875e9 per rank at one NIC (24 GB/s): 36.458333 ms.
  //   Inside the node 7/64 * 1e9 / 240e9 = 0.456 ms; alpha the larger, 4 us.
  const double open = 0.875e9 / 24e9 + 4e-6;  // 36.462333e-3
  CHECK(seconds(dgx(), core::Collective::all_to_all, 1e9, 64, 8) == Approx(open).epsilon(1e-9));
  // Leaves of 4 nodes at 2:1: g = gcd(8, 4) = 4, a node sends (8-4)/(8-1) = 4/7 of
  //   those bytes out of its leaf at half its NIC rate: stretch 2 * 4/7 = 8/7:
  //   0.875e9 * 8/7 / 24e9 + 4e-6 = 41.666667e-3 + 4e-6.
  CHECK(seconds(dgx(4, 2.0), core::Collective::all_to_all, 1e9, 64, 8) == Approx(41.670667e-3).epsilon(1e-6));
  // Leaves of 6: groups of 8 straddle them in pieces of g = gcd(8, 6) = 2 nodes:
  //   stretch 2 * 6/7 = 12/7: 0.875e9 * 12/7 / 24e9 + 4e-6 = 62.5e-3 + 4e-6.
  CHECK(seconds(dgx(6, 2.0), core::Collective::all_to_all, 1e9, 64, 8) == Approx(62.504e-3).epsilon(1e-6));
  // The whole group under one leaf (8 nodes), or a non-blocking fabric (r = 1): no stretch.
  CHECK(seconds(dgx(8, 2.0), core::Collective::all_to_all, 1e9, 64, 8) == Approx(open).epsilon(1e-9));
  CHECK(seconds(dgx(4, 1.0), core::Collective::all_to_all, 1e9, 64, 8) == Approx(open).epsilon(1e-9));
  // Inside one node nothing crosses a leaf.
  CHECK(seconds(dgx(1, 4.0), core::Collective::all_to_all, 1e9, 8, 8) == seconds(dgx(), core::Collective::all_to_all, 1e9, 8, 8));
}

TEST_CASE("rings stretch only when a leaf holds fewer nodes than the ratio", "[cluster][collective]") {
  // All-gather 1 GB on 16 ranks = 2 nodes x 8 (collective_test.cpp): flat ring at
  //   min(240e9, 8 * 24e9 = 192e9): 15/16 * 1e9/192e9 + (14 * 2.5 + 1 * 4) us = 4.9218125e-3.
  CHECK(seconds(dgx(), core::Collective::all_gather, 1e9, 16, 8) == Approx(4.9218125e-3).epsilon(1e-6));
  // Both nodes under one leaf (g = 2) at 2:1: one ring edge per 2 nodes leaves it,
  //   stretch max(1, 2/2) = 1.
  CHECK(seconds(dgx(2, 2.0), core::Collective::all_gather, 1e9, 16, 8) == Approx(4.9218125e-3).epsilon(1e-6));
  // Even at 4:1: with the whole group under one leaf no ring edge leaves it.
  CHECK(seconds(dgx(2, 4.0), core::Collective::all_gather, 1e9, 16, 8) == Approx(4.9218125e-3).epsilon(1e-6));
  CHECK(seconds(dgx(4, 4.0), core::Collective::all_gather, 1e9, 16, 8) == Approx(4.9218125e-3).epsilon(1e-6));
  // One node per leaf (g = 1): every ring edge between nodes crosses the spine at
  //   half rate: 192e9 / 2 = 96e9 < 240e9: 15/16 * 1e9/96e9 + 39e-6 = 9.804625e-3.
  CHECK(seconds(dgx(1, 2.0), core::Collective::all_gather, 1e9, 16, 8) == Approx(9.804625e-3).epsilon(1e-6));
  // All-reduce over 16 nodes, leaves of 4 at 2:1: g = 4 > r, so neither the flat
  //   ring nor the hierarchical variants change.
  for (double s : {65536.0, 1e9})
    CHECK(seconds(dgx(4, 2.0), core::Collective::all_reduce, s, 128, 8) ==
          seconds(dgx(), core::Collective::all_reduce, s, 128, 8));
  // ... but at 8:1 they stretch by 8/4 = 2: the flat ring's inter-node offer
  //   8 * 24e9 / 2 = 96e9; 2 * 127/128 * 1e9 / 96e9 = 20.670573e-3, plus latency
  //   2 * (128 - 16) * 2.5 us + 2 * 15 * 4 us = 680 us: 21.350573e-3. The
  //   hierarchical ring: RS and AG in node 3.663333e-3 each, all-reduce of
  //   1.25e8 over 16 nodes at one NIC per rank, stretched: 2 * 15/16 * 1.25e8 * 2
  //   / 24e9 + 2 * 15 * 4e-6 = 19.53125e-3 + 120e-6; total 26.978e-3: the flat ring wins.
  CHECK(seconds(dgx(4, 8.0), core::Collective::all_reduce, 1e9, 128, 8) == Approx(21.350573e-3).epsilon(1e-6));
}

TEST_CASE("profile keys nodes_per_leaf and oversubscription", "[cluster][profile]") {
  json j = a100();
  json& ib = j["interconnect"]["levels"].back();
  ib["nodes_per_leaf"] = sourced(16);
  ib["oversubscription"] = sourced(2);
  auto p = parse_profile(j.dump(), "test.json");
  REQUIRE(p.ok());
  const Level& x = p->interconnect.inter_node();
  CHECK(x.nodes_per_leaf == 16);
  CHECK(x.oversubscription == 2.0);
  const std::string at = fmt::format("interconnect.levels[{}].", j["interconnect"]["levels"].size() - 1);
  CHECK(p->sources.count(at + "oversubscription") == 1);
  CHECK(p->sources.count(at + "nodes_per_leaf") == 1);

  json half = j;
  half["interconnect"]["levels"].back().erase("nodes_per_leaf");
  CHECK(error_of(half) == "test.json: " + at +
                              "nodes_per_leaf: missing key: nodes_per_leaf and oversubscription describe the fabric together");
  json below = j;
  below["interconnect"]["levels"].back()["oversubscription"] = sourced(0.5);
  CHECK(error_of(below) == "test.json: " + at +
                               "oversubscription.value: must be >= 1 (downlink over uplink bandwidth; 1 = non-blocking), got 0.5");
  json bare = j;
  bare["interconnect"]["levels"].back()["oversubscription"] = 2;
  CHECK_THAT(error_of(bare), Catch::Matchers::Contains("number without a source"));
  json inside = j;
  inside["interconnect"]["levels"][0]["oversubscription"] = sourced(2);
  CHECK_THAT(error_of(inside), Catch::Matchers::Contains("oversubscription"));
}

TEST_CASE("apply_overrides sets the fabric's leaves, together or not at all", "[cluster][profile]") {
  const auto p = cluster_test::load("a100-sxm4-80gb");
  ProfileOverrides o;
  o.nodes_per_leaf = 16;
  o.oversubscription = 2;
  auto leafy = apply_overrides(p, o);
  REQUIRE(leafy.ok());
  CHECK(leafy->interconnect.inter_node().nodes_per_leaf == 16);
  CHECK(leafy->interconnect.inter_node().oversubscription == 2.0);
  CHECK(leafy->overrides == "nodes_per_leaf=16, oversubscription=2");
  CHECK(leafy->content_hash != p.content_hash);
  o.gpus_per_node = 4;
  CHECK(apply_overrides(p, o)->overrides == "gpus_per_node=4, nodes_per_leaf=16, oversubscription=2");

  ProfileOverrides half;
  half.oversubscription = 2;
  auto r = apply_overrides(p, half);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "override oversubscription: give nodes_per_leaf and oversubscription together");
  for (double bad : {0.5, 0.0, std::nan("")}) {
    ProfileOverrides b;
    b.nodes_per_leaf = 4;
    b.oversubscription = bad;
    auto e = apply_overrides(p, b);
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.error().message, Catch::Matchers::Contains("override oversubscription: must be in [1, 1000]"));
  }
  ProfileOverrides zero;
  zero.nodes_per_leaf = 0;
  zero.oversubscription = 2;
  CHECK_THAT(apply_overrides(p, zero).error().message, Catch::Matchers::Contains("override nodes_per_leaf"));
}

TEST_CASE("CollNet: in-network all-reduce across nodes, when the fabric has it", "[cluster][collective]") {
  // 16 nodes x 8 = 128 ranks, 1 GB, on dgx() with CollNet at 0.9 of the NIC and 31 us.
  Interconnect net = dgx();
  net.levels.back().collnet = Level::CollNet{Seconds(31e-6), 0.9};
  auto at = [&](double bytes, int ranks) {
    auto r = collective_time(net, core::Collective::all_reduce, Bytes(bytes), Placement{ranks, 8});
    REQUIRE(r.ok());
    return *r;
  };
  // Inside the node, reduce-scatter + all-gather: 2 * 7/8 * 1e9/240e9 = 7.291667e-3,
  //   latency 2 * 7 * 2.5 us = 35 us; across nodes each rank's 1.25e8-byte shard up and
  //   back once at its NIC (25e9 * 0.9): 5.555556e-3. Streamed: the larger, 7.291667e-3,
  //   + 35 us + 31 us = 7.357667e-3, against the flat ring's 2*127/128 * 1e9/192e9 + 680 us
  //   = 11.015286e-3 (and the hierarchical variants, slower).
  CHECK(at(1e9, 128).time.value == Approx(7.357667e-3).epsilon(1e-6));
  CHECK(at(1e9, 128).algorithm == Algorithm::collnet);
  CHECK(algorithm_name(Algorithm::collnet) == "collnet");
  // One NIC per node (8 ranks share 25 GB/s): the network term 1.25e8 / (3.125e9 * 0.9)
  //   = 44.444444e-3 sets the time: + 66 us = 44.510444e-3 (flat ring: 1.984375e9/24e9
  //   + 680 us = 83.362e-3).
  net.levels.back().nics_per_node = 1;
  CHECK(at(1e9, 128).time.value == Approx(44.510444e-3).epsilon(1e-6));
  // Small messages: the rings' latency across 16 nodes against 31 us + 35 us; a
  //   hierarchical tree is absent here (no tree table), so CollNet wins at 64 KiB too:
  //   max(2*7/8*65536/240e9, 8192/2.8125e9) = 2.913e-6, + 66 us = 68.913e-6.
  CHECK(at(65536, 128).time.value == Approx(68.9128e-6).epsilon(1e-4));
  // One rank per node (data-parallel groups of a tp = 8 layout): no phase inside the
  //   node; the 1e9-byte buffer up and back at one NIC, 1e9 / (25e9 * 0.9) + 31 us =
  //   44.475444e-3, against the ring's 2*15/16 * 1e9/24e9 + 2*15*4 us = 78.245e-3
  //   and the tree's 2*15/16 * 1e9/21.6e9 + 2*4*4 us = 86.838e-3.
  auto one = collective_time(net, core::Collective::all_reduce, Bytes(1e9), Placement{16, 1});
  REQUIRE(one.ok());
  CHECK(one->algorithm == Algorithm::collnet);
  CHECK(one->time.value == Approx(44.475444e-3).epsilon(1e-6));
  // Inside one node CollNet does not apply; all-gather never uses it.
  CHECK(at(1e9, 8).algorithm != Algorithm::collnet);
  auto ag = collective_time(net, core::Collective::all_gather, Bytes(1e9), Placement{128, 8});
  REQUIRE(ag.ok());
  CHECK(ag->algorithm == Algorithm::ring);
}

TEST_CASE("profile key collnet on the inter-node level", "[cluster][profile]") {
  json j = a100();
  json& ib = j["interconnect"]["levels"].back();
  ib["collnet"] = {{"latency_us", sourced(31)}, {"efficiency", sourced(0.9)}};
  auto p = parse_profile(j.dump(), "test.json");
  REQUIRE(p.ok());
  REQUIRE(p->interconnect.inter_node().collnet);
  CHECK(p->interconnect.inter_node().collnet->latency.value == Approx(31e-6));
  CHECK(p->interconnect.inter_node().collnet->efficiency == 0.9);
  const std::string at = fmt::format("interconnect.levels[{}].", j["interconnect"]["levels"].size() - 1);
  CHECK(p->sources.count(at + "collnet.latency_us") == 1);
  json over = j;
  over["interconnect"]["levels"].back()["collnet"]["efficiency"] = sourced(1.5);
  CHECK(error_of(over) == "test.json: " + at + "collnet.efficiency.value: must be in (0, 1], got 1.5");
  json missing = j;
  missing["interconnect"]["levels"].back()["collnet"].erase("latency_us");
  CHECK_THAT(error_of(missing), Catch::Matchers::Contains("collnet.latency_us"));
  json inside = j;
  inside["interconnect"]["levels"][0]["collnet"] = ib["collnet"];
  CHECK_THAT(error_of(inside), Catch::Matchers::Contains("collnet"));
}
