// Per-collective efficiency tables (written by planner calibrate): optional,
// read by their collective only, with their own latency; profiles without
// them price every collective as before.

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cluster_helpers.hpp"
#include "planner/cluster/collective.hpp"
#include "planner/core/io.hpp"

using namespace planner;
using namespace planner::cluster;
using nlohmann::json;

namespace {

json a100() {
  auto t = io::read_file(cluster_test::profiles_dir() / "a100-sxm4-80gb.json");
  REQUIRE(t.ok());
  return json::parse(*t);
}

ClusterProfile parse(const json& j) {
  auto p = parse_profile(j.dump(), "test.json");
  if (!p.ok()) FAIL(p.error().message);
  return std::move(p).value();
}

double time_of(const ClusterProfile& p, core::Collective c, double bytes, int ranks, int per_node) {
  auto t = collective_time(p, c, Bytes(bytes), {ranks, per_node});
  REQUIRE(t.ok());
  return t->time.value;
}

json table(double e, std::optional<double> latency_us) {
  json t = {{"x", "message_bytes"}, {"source", "test"}, {"rows", {{1e6, e}}}};
  if (latency_us) t["latency_us"] = *latency_us;
  return t;
}

}  // namespace

TEST_CASE("an all_to_all table with its own latency prices all_to_all only", "[cluster][collective]") {
  json j = a100();
  const ClusterProfile before = parse(j);
  j["interconnect"]["levels"][0]["efficiency"]["all_to_all"] = table(0.5, 10.0);
  const ClusterProfile p = parse(j);
  REQUIRE(p.interconnect.levels[0].per_collective[static_cast<int>(core::Collective::all_to_all)]);
  CHECK(p.sources.count("interconnect.levels[0].efficiency.all_to_all") == 1);
  // 8 ranks on NVLink (300 GB/s), S = 1e6: (n-1)/n * S / (B e) + alpha
  //   = 0.875e6 / (300e9 * 0.5) + 10 us = 5.8333 us + 10 us = 15.8333 us.
  CHECK(time_of(p, core::Collective::all_to_all, 1e6, 8, 8) == Approx(15.8333e-6).epsilon(1e-4));
  // Everything else is unchanged.
  for (core::Collective c : {core::Collective::all_reduce, core::Collective::all_gather, core::Collective::reduce_scatter,
                       core::Collective::broadcast})
    for (double s : {1e4, 1e6, 1e8}) {
      CHECK(time_of(p, c, s, 8, 8) == time_of(before, c, s, 8, 8));
      CHECK(time_of(p, c, s, 16, 8) == time_of(before, c, s, 16, 8));
    }
}

TEST_CASE("a per-collective table without latency keeps the level's latency", "[cluster][collective]") {
  json j = a100();
  j["interconnect"]["levels"][0]["efficiency"]["all_gather"] = table(0.25, std::nullopt);
  const ClusterProfile p = parse(j);
  // all_gather, 8 ranks: 7/8 * 1e6 / (300e9 * 0.25) + 7 * 2.5 us = 11.6667 + 17.5 = 29.1667 us.
  CHECK(time_of(p, core::Collective::all_gather, 1e6, 8, 8) == Approx(29.1667e-6).epsilon(1e-4));
}

TEST_CASE("the hierarchical all-reduce reads the inner reduce_scatter and all_gather tables", "[cluster][collective]") {
  json j = a100();
  const ClusterProfile before = parse(j);
  // Slower inner phases make the 16-rank all-reduce slower; the 8-rank one
  // (a single ring on NVLink) is untouched.
  j["interconnect"]["levels"][0]["efficiency"]["reduce_scatter"] = table(0.05, std::nullopt);
  j["interconnect"]["levels"][0]["efficiency"]["all_gather"] = table(0.05, std::nullopt);
  const ClusterProfile p = parse(j);
  CHECK(time_of(p, core::Collective::all_reduce, 1e6, 8, 8) == time_of(before, core::Collective::all_reduce, 1e6, 8, 8));
  auto hier = collective_time(before, core::Collective::all_reduce, Bytes(1e9), {16, 8});
  REQUIRE(hier.ok());
  if (hier->algorithm == Algorithm::hierarchical_ring || hier->algorithm == Algorithm::hierarchical_tree)
    CHECK(time_of(p, core::Collective::all_reduce, 1e9, 16, 8) > hier->time.value);
}

TEST_CASE("per-collective tables are checked like every table", "[cluster][collective]") {
  auto error = [](const json& j) {
    auto p = parse_profile(j.dump(), "test.json");
    REQUIRE_FALSE(p.ok());
    return p.error().message;
  };
  json j = a100();
  j["interconnect"]["levels"][0]["efficiency"]["all_to_all"] = table(0.5, -1.0);
  CHECK(error(j) == "test.json: interconnect.levels[0].efficiency.all_to_all.latency_us: must be >= 0, got -1");
  j = a100();
  j["interconnect"]["levels"][0]["efficiency"]["all_to_all"] = table(1.5, std::nullopt);
  CHECK(error(j) == "test.json: interconnect.levels[0].efficiency.all_to_all.rows[0][1]: must be in (0, 1], got 1.5");
  j = a100();
  auto t = table(0.5, std::nullopt);
  t["min_ranks"] = 4;
  j["interconnect"]["levels"][0]["efficiency"]["all_to_all"] = t;
  CHECK(error(j).find("efficiency.all_to_all.min_ranks: unknown key") != std::string::npos);
  j = a100();
  j["interconnect"]["levels"][0]["efficiency"]["alltoall"] = table(0.5, std::nullopt);
  CHECK(error(j).find("efficiency.alltoall: unknown key") != std::string::npos);
}

TEST_CASE("provenance is an object of strings", "[cluster][profile]") {
  json j = a100();
  j["provenance"] = {{"date", "2026-01-01T00:00:00Z"}, {"host", "h"}};
  CHECK(parse_profile(j.dump(), "test.json").ok());
  j["provenance"]["ranks"] = 2;
  auto p = parse_profile(j.dump(), "test.json");
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message == "test.json: provenance.ranks: expected a string, got a number");
}
