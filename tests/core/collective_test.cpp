#include <catch2/catch.hpp>

#include "planner/core/collective.hpp"

using namespace planner;

TEST_CASE("Collective names round-trip", "[core]") {
  for (core::Collective c : core::kCollectives) {
    auto back = core::parse_collective(core::to_string(c));
    REQUIRE(back);
    CHECK(*back == c);
  }
  // The spellings are the profile JSON keys and the plan's kinds.
  CHECK(core::to_string(core::Collective::all_to_all) == "all_to_all");
  CHECK(core::to_string(core::Collective::send_recv) == "send_recv");
  // kCollectives lists the enumerators in order (arrays are indexed by them).
  for (std::size_t i = 0; i < core::kCollectiveCount; ++i)
    CHECK(static_cast<std::size_t>(core::kCollectives[i]) == i);
}

TEST_CASE("Collective parse rejects other text", "[core]") {
  CHECK_FALSE(core::parse_collective(""));
  CHECK_FALSE(core::parse_collective("alltoall"));
  CHECK_FALSE(core::parse_collective("All_Reduce"));
  CHECK_FALSE(core::parse_collective("local_slice"));
}
