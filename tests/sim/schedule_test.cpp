// Per-device op orders: exact sequences for small cases, written out by
// hand from the rules in schedule.hpp, and properties over enumerations.
#include "planner/sim/schedule.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace planner;
using namespace planner::sim;

namespace {

// "F1@c2" = forward of micro-batch 1 on chunk 2; chunk omitted when v = 1.
std::string render(const std::vector<ScheduleStep>& order, bool with_chunk) {
  std::string out;
  for (const ScheduleStep& s : order) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}{}", s.kind == StepKind::forward ? 'F' : 'B', s.micro_batch);
    if (with_chunk) out += fmt::format("@c{}", s.chunk);
  }
  return out;
}

DeviceOrders orders_of(Schedule s, int p, int m, int v) {
  auto r = device_orders(s, p, m, v);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("1F1B: warm-up p-r-1 forwards, steady F/B pairs, cool-down", "[sim][schedule]") {
  const DeviceOrders o = orders_of(Schedule::one_f_one_b, 4, 8, 1);
  REQUIRE(o.size() == 4);
  // rank 0: warm-up 3 (F0 F1 F2); steady k=0..4: F(3+k) B(k); cool-down B5 B6 B7.
  CHECK(render(o[0], false) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  // rank 2: warm-up 1.
  CHECK(render(o[2], false) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  // rank 3 (last): no warm-up, strict alternation.
  CHECK(render(o[3], false) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  for (int r = 0; r < 4; ++r)
    for (const ScheduleStep& s : o[static_cast<std::size_t>(r)]) CHECK(s.chunk == r);
}

TEST_CASE("1F1B with fewer micro-batches than stages caps the warm-up at m", "[sim][schedule]") {
  const DeviceOrders o = orders_of(Schedule::one_f_one_b, 4, 2, 1);
  CHECK(render(o[0], false) == "F0 F1 B0 B1");  // warm-up min(3, 2) = 2
  CHECK(render(o[2], false) == "F0 F1 B0 B1");  // warm-up 1, steady F1 B0, cool-down B1
  CHECK(render(o[3], false) == "F0 B0 F1 B1");
  CHECK(warmup_forwards(Schedule::one_f_one_b, 4, 2, 1, 0) == 2);
}

TEST_CASE("GPipe: all forwards, then all backwards", "[sim][schedule]") {
  const DeviceOrders o = orders_of(Schedule::gpipe, 3, 4, 1);
  for (const auto& order : o) CHECK(render(order, false) == "F0 F1 F2 F3 B0 B1 B2 B3");
  CHECK(warmup_forwards(Schedule::gpipe, 3, 4, 1, 2) == 4);
}

TEST_CASE("interleaved: Megatron's unit order, p=2 v=2 m=4", "[sim][schedule]") {
  const DeviceOrders o = orders_of(Schedule::interleaved, 2, 4, 2);
  // Device 0 holds chunks 0 and 2, device 1 chunks 1 and 3. Units go in
  // groups of p*v = 4: forward unit k -> local chunk (k%4)/2, micro-batch
  // (k/4)*2 + k%2; backward units visit local chunks in reverse.
  // Device 0 forward units:  F0@c0 F1@c0 F0@c2 F1@c2 | F2@c0 F3@c0 F2@c2 F3@c2
  //          backward units: B0@c2 B1@c2 B0@c0 B1@c0 | B2@c2 B3@c2 B2@c0 B3@c0
  // Warm-up (p-r-1)*2 + (v-1)*p = 2 + 2 = 4 forward units, then 4 F/B pairs,
  // then the last 4 backward units.
  CHECK(render(o[0], true) ==
        "F0@c0 F1@c0 F0@c2 F1@c2 "
        "F2@c0 B0@c2 F3@c0 B1@c2 F2@c2 B0@c0 F3@c2 B1@c0 "
        "B2@c2 B3@c2 B2@c0 B3@c0");
  // Device 1: warm-up 0 + 2 = 2 units, then 6 pairs, then 2 backward units.
  CHECK(render(o[1], true) ==
        "F0@c1 F1@c1 "
        "F0@c3 B0@c3 F1@c3 B1@c3 F2@c1 B0@c1 F3@c1 B1@c1 F2@c3 B2@c3 F3@c3 B3@c3 "
        "B2@c1 B3@c1");
  CHECK(warmup_forwards(Schedule::interleaved, 2, 4, 2, 0) == 4);
  CHECK(warmup_forwards(Schedule::interleaved, 2, 4, 2, 1) == 2);
}

TEST_CASE("interleaved with m == p runs all forward units first (as Megatron)", "[sim][schedule]") {
  const DeviceOrders o = orders_of(Schedule::interleaved, 2, 2, 2);
  // Formula would give device 1 a warm-up of 2 of its 4 units; Megatron
  // special-cases m == p to all 4.
  CHECK(render(o[1], true) == "F0@c1 F1@c1 F0@c3 F1@c3 B0@c3 B1@c3 B0@c1 B1@c1");
  CHECK(warmup_forwards(Schedule::interleaved, 2, 2, 2, 1) == 4);
  CHECK(warmup_forwards(Schedule::interleaved, 4, 8, 2, 0) == 10);  // 3*2 + 1*4
  CHECK(warmup_forwards(Schedule::interleaved, 4, 8, 2, 3) == 4);   // 0 + 1*4
}

TEST_CASE("interleaved requires m % p == 0 and other shape errors", "[sim][schedule]") {
  auto r = device_orders(Schedule::interleaved, 4, 6, 2);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("micro_batches % stages == 0"));
  CHECK_THAT(r.error().message, Catch::Contains("m = 6") && Catch::Contains("p = 4"));

  auto v = device_orders(Schedule::one_f_one_b, 4, 8, 2);
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().message, Catch::Contains("virtual_stages") && Catch::Contains("interleaved"));
  CHECK_FALSE(device_orders(Schedule::gpipe, 0, 8, 1).ok());
  CHECK_FALSE(device_orders(Schedule::gpipe, 2, 0, 1).ok());
  CHECK_FALSE(device_orders(Schedule::interleaved, 2, 4, 0).ok());
}

TEST_CASE("every schedule gives each device each of its ops exactly once, F before B", "[sim][schedule]") {
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved}) {
    for (int p = 1; p <= 6; ++p) {
      for (int v = 1; v <= (s == Schedule::interleaved ? 3 : 1); ++v) {
        for (int m = 1; m <= 13; ++m) {
          if (s == Schedule::interleaved && m % p != 0) continue;
          const DeviceOrders o = orders_of(s, p, m, v);
          REQUIRE(o.size() == static_cast<std::size_t>(p));
          for (int r = 0; r < p; ++r) {
            const auto& order = o[static_cast<std::size_t>(r)];
            INFO(fmt::format("{} p={} v={} m={} rank={}", schedule_name(s), p, v, m, r));
            REQUIRE(order.size() == static_cast<std::size_t>(2 * m * v));
            std::set<std::tuple<int, int, int>> seen;
            int in_flight = 0, warmup = 0;
            bool backward_seen = false;
            for (const ScheduleStep& st : order) {
              CHECK(st.chunk % p == r);
              CHECK(st.chunk < p * v);
              CHECK(seen.insert({static_cast<int>(st.kind), st.chunk, st.micro_batch}).second);
              if (st.kind == StepKind::forward) {
                ++in_flight;
                if (!backward_seen) ++warmup;
              } else {
                backward_seen = true;
                CHECK(seen.count({static_cast<int>(StepKind::forward), st.chunk, st.micro_batch}) == 1);
                --in_flight;
              }
              CHECK(in_flight >= 0);
            }
            // Forwards before the first backward: the warm-up, plus the
            // first steady-state forward unless the warm-up took them all.
            CHECK(warmup == std::min(warmup_forwards(s, p, m, v, r) + 1, m * v));
          }
        }
      }
    }
  }
}
