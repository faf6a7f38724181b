// simulate() with caller-given orders: malformed orders, deadlocks (which
// must be reported, never hang), and an independent re-check of every
// event's start time on irregular problems.
#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

#include <catch2/catch.hpp>

#include "planner/sim/pipeline.hpp"

using namespace planner;
using namespace planner::sim;

namespace {

const ChunkCost kUnit{Seconds(1), Seconds(2), Bytes(1)};
constexpr StepKind F = StepKind::forward;
constexpr StepKind B = StepKind::backward;

std::string error_of(const PipelineProblem& pr, const DeviceOrders& orders) {
  auto r = simulate(pr, orders);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

// Deterministic pseudo-random costs: multiples of 0.25 in [0, 3], zero
// included (exact in binary floating point, so == comparisons hold).
struct Lcg {
  std::uint64_t state;
  int next(int n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % static_cast<std::uint64_t>(n));
  }
  Seconds time() { return Seconds(0.25 * next(13)); }
};

PipelineProblem irregular(Schedule s, int p, int m, int v, Lcg& rng) {
  PipelineProblem pr = uniform_problem(s, p, m, v, kUnit);
  for (ChunkCost& c : pr.chunks) c = {rng.time(), rng.time(), Bytes(1 + rng.next(100))};
  for (BoundaryCost& b : pr.boundaries) b = {rng.time(), rng.time()};
  pr.extra.clear();
  for (int d = 0; d < p; ++d) pr.extra.push_back(rng.time());
  return pr;
}

// Re-derives every event from the rules in pipeline.hpp and the result's
// per-device figures from the timeline.
void check_invariants(const PipelineProblem& pr, const DeviceOrders& orders, const PipelineResult& r) {
  std::map<std::tuple<int, int, int>, const TimelineEvent*> by_op;
  for (const TimelineEvent& e : r.timeline) by_op[{static_cast<int>(e.kind), e.chunk, e.micro_batch}] = &e;
  REQUIRE(by_op.size() == static_cast<std::size_t>(2 * pr.num_chunks() * pr.micro_batches));
  const int last = pr.num_chunks() - 1;
  std::size_t i = 0;
  Seconds step;
  for (int d = 0; d < pr.stages; ++d) {
    Seconds free, busy;
    int in_flight = 0, peak = 0;
    for (const ScheduleStep& s : orders[static_cast<std::size_t>(d)]) {
      const TimelineEvent& e = r.timeline[i++];
      REQUIRE(e.device == d);
      REQUIRE((e.kind == s.kind && e.micro_batch == s.micro_batch && e.chunk == s.chunk));
      Seconds ready;  // dependency end + transfer
      const BoundaryCost* bc = nullptr;
      if (s.kind == F && s.chunk > 0) {
        bc = &pr.boundaries[static_cast<std::size_t>(s.chunk - 1)];
        ready = by_op.at({static_cast<int>(F), s.chunk - 1, s.micro_batch})->end + bc->forward;
      } else if (s.kind == B && s.chunk < last) {
        bc = &pr.boundaries[static_cast<std::size_t>(s.chunk)];
        ready = by_op.at({static_cast<int>(B), s.chunk + 1, s.micro_batch})->end + bc->backward;
      } else if (s.kind == B) {
        ready = by_op.at({static_cast<int>(F), last, s.micro_batch})->end;
      }
      const ChunkCost& c = pr.chunks[static_cast<std::size_t>(s.chunk)];
      const Seconds dur = s.kind == F ? c.forward : c.backward;
      CHECK(e.start == std::max(free, ready));
      CHECK(e.end == e.start + dur);
      free = e.end;
      busy += dur;
      in_flight += s.kind == F ? 1 : -1;
      peak = std::max(peak, in_flight);
    }
    const DeviceReport& rep = r.devices[static_cast<std::size_t>(d)];
    CHECK(rep.busy.value == Approx(busy.value));
    CHECK(rep.last_finish == free);
    CHECK(rep.peak_in_flight == peak);
    CHECK(rep.idle.value == Approx((r.pipeline_time - rep.busy).value));
    step = std::max(step, free + pr.extra[static_cast<std::size_t>(d)]);
  }
  CHECK(r.step_time == step);
}

}  // namespace

TEST_CASE("every event starts when its device is free and its input has arrived", "[sim][orders]") {
  Lcg rng{42};
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved}) {
    for (int p = 1; p <= 5; ++p) {
      for (int v = 1; v <= (s == Schedule::interleaved ? 3 : 1); ++v) {
        for (int m = 1; m <= 9; ++m) {
          if (s == Schedule::interleaved && m % p != 0) continue;
          INFO(schedule_name(s) << " p=" << p << " v=" << v << " m=" << m);
          const PipelineProblem pr = irregular(s, p, m, v, rng);
          auto orders = device_orders(pr);
          REQUIRE(orders.ok());
          auto r = simulate(pr, *orders);
          REQUIRE(r.ok());
          check_invariants(pr, *orders, *r);
          // Deterministic: the convenience overload gives the same timeline.
          auto again = simulate(pr);
          REQUIRE(again.ok());
          REQUIRE(again->timeline.size() == r->timeline.size());
          for (std::size_t k = 0; k < r->timeline.size(); ++k) {
            CHECK(again->timeline[k].start == r->timeline[k].start);
            CHECK(again->timeline[k].end == r->timeline[k].end);
          }
        }
      }
    }
  }
}

TEST_CASE("any dependency-respecting order simulates, e.g. backwards in reverse", "[sim][orders]") {
  // p=2, m=2; dev 1 runs F0 F1 B1 B0, dev 0 F0 F1 B1 B0. All f=1, b=2.
  // dev 0: F0 0-1, F1 1-2; dev 1: F0 1-2, F1 2-3, B1 3-5, B0 5-7;
  // dev 0: B1 5-7, B0 7-9. Step 9.
  const PipelineProblem pr = uniform_problem(Schedule::gpipe, 2, 2, 1, kUnit);
  const DeviceOrders orders = {{{F, 0, 0}, {F, 1, 0}, {B, 1, 0}, {B, 0, 0}},
                               {{F, 0, 1}, {F, 1, 1}, {B, 1, 1}, {B, 0, 1}}};
  auto r = simulate(pr, orders);
  REQUIRE(r.ok());
  CHECK(r->step_time == Seconds(9));
}

TEST_CASE("deadlocks are errors naming who waits on what", "[sim][orders]") {
  SECTION("a device waiting on its own later forward") {
    const PipelineProblem pr = uniform_problem(Schedule::one_f_one_b, 1, 1, 1, kUnit);
    const std::string msg = error_of(pr, {{{B, 0, 0}, {F, 0, 0}}});
    CHECK_THAT(msg, Catch::Contains("deadlock"));
    CHECK_THAT(msg, Catch::Contains("device 0 at op 0 (backward of micro-batch 0 on chunk 0) waits for the forward"));
  }
  SECTION("a cycle across two devices") {
    // dev 0 runs F1, then B1 waits for dev 1's B1; dev 1 waits at F0 for
    // dev 0's F0, which dev 0 only runs after B1.
    const PipelineProblem pr = uniform_problem(Schedule::one_f_one_b, 2, 2, 1, kUnit);
    const DeviceOrders orders = {{{F, 1, 0}, {B, 1, 0}, {F, 0, 0}, {B, 0, 0}},
                                 {{F, 0, 1}, {B, 0, 1}, {F, 1, 1}, {B, 1, 1}}};
    const std::string msg = error_of(pr, orders);
    CHECK_THAT(msg, Catch::Contains("2 device(s)"));
    CHECK_THAT(msg, Catch::Contains("device 0 at op 1") && Catch::Contains("device 1 at op 0"));
  }
  SECTION("a large pipeline stuck behind one bad device returns at once") {
    const PipelineProblem pr = uniform_problem(Schedule::one_f_one_b, 128, 4096, 1, kUnit);
    auto orders = device_orders(pr);
    REQUIRE(orders.ok());
    std::swap((*orders)[127][0], (*orders)[127][1]);  // last device: B0 before F0
    const std::string msg = error_of(pr, *orders);
    CHECK_THAT(msg, Catch::Contains("deadlock") && Catch::Contains("; ..."));
  }
}

TEST_CASE("malformed orders are refused with the device and position", "[sim][orders]") {
  const PipelineProblem pr = uniform_problem(Schedule::one_f_one_b, 2, 1, 1, kUnit);
  const DeviceOrders good = {{{F, 0, 0}, {B, 0, 0}}, {{F, 0, 1}, {B, 0, 1}}};
  REQUIRE(simulate(pr, good).ok());

  CHECK_THAT(error_of(pr, {good[0]}), Catch::Contains("1 device orders given for 2 stages"));
  DeviceOrders wrong_device = good;
  wrong_device[0][1] = {B, 0, 1};
  CHECK_THAT(error_of(pr, wrong_device), Catch::Contains("device 0 op 1") && Catch::Contains("belongs to device 1"));
  DeviceOrders twice = good;
  twice[1].push_back({F, 0, 1});
  CHECK_THAT(error_of(pr, twice), Catch::Contains("device 1 op 2") && Catch::Contains("twice"));
  DeviceOrders missing = good;
  missing[1].pop_back();
  CHECK_THAT(error_of(pr, missing), Catch::Contains("device 1 lacks the backward of micro-batch 0 on chunk 1"));
  DeviceOrders out_of_range = good;
  out_of_range[0][0].micro_batch = 5;
  CHECK_THAT(error_of(pr, out_of_range), Catch::Contains("out of range"));
}
