// Pipeline simulation against timelines computed by hand (arithmetic in
// the comments). f = forward, b = backward time of one chunk for one
// micro-batch; p stages, m micro-batches, v chunks per device.
#include "planner/sim/pipeline.hpp"

#include <chrono>
#include <cmath>

#include <catch2/catch.hpp>

using namespace planner;
using namespace planner::sim;

namespace {

PipelineResult run(const PipelineProblem& pr) {
  auto r = simulate(pr);
  if (!r.ok()) FAIL(r.error().message);
  return std::move(r).value();
}

// First event of `device` with this kind, micro-batch and chunk.
const TimelineEvent& event(const PipelineResult& r, int device, StepKind kind, int mb, int chunk) {
  for (const TimelineEvent& e : r.timeline)
    if (e.device == device && e.kind == kind && e.micro_batch == mb && e.chunk == chunk) return e;
  FAIL("no such event");
  return r.timeline.front();
}

const ChunkCost kUnit{Seconds(1), Seconds(2), Bytes(100)};  // f = 1, b = 2, 100 B per micro-batch

}  // namespace

TEST_CASE("1F1B, 4 stages, 8 micro-batches, f=1 b=2: (m+p-1)(f+b) = 33", "[sim][pipeline]") {
  const PipelineResult r = run(uniform_problem(Schedule::one_f_one_b, 4, 8, 1, kUnit));
  // Fill: F0 reaches device 3 at t=3; B0 runs 4-6 on dev 3, 6-8 on dev 2,
  // 8-10 on dev 1, 10-12 on dev 0. Drain mirrors it. Step = 11 x 3 = 33.
  CHECK(r.step_time == Seconds(33));
  CHECK(r.pipeline_time == Seconds(33));
  CHECK(event(r, 3, StepKind::forward, 0, 3).start == Seconds(3));
  CHECK(event(r, 0, StepKind::backward, 0, 0).start == Seconds(10));
  CHECK(timeline_chart(r, Seconds(1)) ==
        "dev 0  0123......aa4bb5cc6dd7ee.ff.gg.hh\n"
        "dev 1  .012....aa3bb4cc5dd6ee7ff.gg.hh..\n"
        "dev 2  ..01..aa2bb3cc4dd5ee6ff7gg.hh....\n"
        "dev 3  ...0aa1bb2cc3dd4ee5ff6gg7hh......\n");
  REQUIRE(r.devices.size() == 4);
  for (int d = 0; d < 4; ++d) {
    const DeviceReport& dev = r.devices[static_cast<std::size_t>(d)];
    CHECK(dev.busy == Seconds(24));  // 8 x (1 + 2)
    CHECK(dev.idle == Seconds(9));   // 33 - 24 = (p-1)(f+b)
    CHECK(dev.last_finish == Seconds(33 - 2 * d));  // B7 climbs one b = 2 per hop
    CHECK(dev.peak_in_flight == 4 - d);  // warm-up p-d-1, plus the first steady forward
    CHECK(dev.peak_activation == Bytes(100.0 * (4 - d)));
  }
  // Device 0 holds p = 4 micro-batches; its activations peak at p x 100 B.
  CHECK(r.devices[0].peak_in_flight == 4);
  CHECK(r.devices[0].peak_activation == Bytes(400));
  CHECK(r.bubble_fraction == Approx(3.0 / 8.0));  // 9 / 24 = (p-1)/m
  CHECK(bubble_fraction_formula(Schedule::one_f_one_b, 4, 8, 1) == Approx(0.375));
  CHECK(bubble_formula(uniform_problem(Schedule::one_f_one_b, 4, 8, 1, kUnit)) == Seconds(9));
  CHECK(r.timeline.size() == 64);  // 2 x p x m
}

TEST_CASE("GPipe holds all m micro-batches in flight, same step time", "[sim][pipeline]") {
  const PipelineResult r = run(uniform_problem(Schedule::gpipe, 4, 8, 1, kUnit));
  // Dev 3 forwards 3..11, backwards 11..27; dev d's B(i) runs 2 later per
  // hop, so dev 0 ends 27 + 3 x 2 = 33 = (m+p-1)(f+b).
  CHECK(r.step_time == Seconds(33));
  for (const DeviceReport& dev : r.devices) {
    CHECK(dev.peak_in_flight == 8);
    CHECK(dev.peak_activation == Bytes(800));
  }
}

TEST_CASE("uneven stages: a heavy last stage dominates", "[sim][pipeline]") {
  // Stages 0-2: f=1 b=2; stage 3 (LM head + loss): f=2 b=4. p=4, m=8.
  PipelineProblem pr = uniform_problem(Schedule::one_f_one_b, 4, 8, 1, kUnit);
  pr.chunks[3] = {Seconds(2), Seconds(4), Bytes(100)};
  // F0 reaches dev 3 at t=3. Dev 3 (no warm-up) then runs F(i) B(i) back to
  // back, 6 per micro-batch, never waiting: dev 2 sends F(i+1) right after
  // its B(i-1), i.e. 2 + 1 = 3 after dev 3's B(i-1) ends, and dev 3 needs it
  // only 6 after. So dev 3 ends at 3 + 8 x 6 = 51. B7 then drains up:
  // dev 2 51-53, dev 1 53-55, dev 0 55-57.
  // Step = 57 = sum of all stages (3+3+3+6 = 15) + (m-1) x 6 = 15 + 42.
  const PipelineResult r = run(pr);
  CHECK(r.step_time == Seconds(57));
  CHECK(r.devices[3].busy == Seconds(48));
  CHECK(r.devices[3].last_finish == Seconds(51));
  CHECK(r.devices[3].idle == Seconds(9));   // 57 - 48
  CHECK(r.devices[0].idle == Seconds(33));  // 57 - 24
  CHECK(event(r, 3, StepKind::forward, 7, 3).start == Seconds(45));  // 3 + 7 x 6
  CHECK(r.bubble_fraction == Approx(9.0 / 48.0));
  // The formula, taking the bottleneck as every stage's time, predicts a
  // bubble of (p-1)/m x 48 = 18 (step 66): 9 too much here.
  CHECK(bubble_formula(pr) == Seconds(18));

  // GPipe, same stages: dev 3 forwards 3..19, backwards 19..51; drain to 57.
  pr.schedule = Schedule::gpipe;
  CHECK(run(pr).step_time == Seconds(57));
}

TEST_CASE("transfer time lengthens fill and drain, and 1F1B's steady state", "[sim][pipeline]") {
  const BoundaryCost half{Seconds(0.5), Seconds(0.5)};
  SECTION("GPipe: 2(p-1) transfers on the critical path") {
    // Dev d's F(i) starts at 1.5 d + i; dev 3's forwards end 12.5, its
    // backwards 12.5..28.5; each hop up costs 0.5 + 2: dev 0 ends at
    // 28.5 + 3 x 2.5 = 36 = 33 + 2 x 3 x 0.5.
    CHECK(run(uniform_problem(Schedule::gpipe, 4, 8, 1, kUnit, half)).step_time == Seconds(36));
  }
  SECTION("1F1B, p=2 m=4: the transfer also enters the steady-state cycle") {
    // dev 0: F0 0-1, F1 1-2 (warm-up 1 + first steady F)
    // dev 1: F0 1.5-2.5, B0 2.5-4.5, F1 4.5-5.5 (ready 2.5), B1 5.5-7.5
    // dev 0: B0 5-7 (ready 4.5+0.5), F2 7-8, B1 8-10 (ready 7.5+0.5), F3 10-11
    // dev 1: F2 8.5-9.5 (ready 8+0.5), B2 9.5-11.5, F3 11.5-12.5, B3 12.5-14.5
    // dev 0: B2 12-14 (ready 11.5+0.5), B3 15-17 (ready 14.5+0.5).
    // Step 17 vs (m+p-1)(f+b) = 15 without transfers: +2, not just 2 x 0.5.
    const PipelineResult r = run(uniform_problem(Schedule::one_f_one_b, 2, 4, 1, kUnit, half));
    CHECK(r.step_time == Seconds(17));
    CHECK(event(r, 0, StepKind::backward, 0, 0).start == Seconds(5));
    CHECK(event(r, 1, StepKind::forward, 2, 1).start == Seconds(8.5));
    CHECK(r.devices[1].last_finish == Seconds(14.5));
    CHECK(run(uniform_problem(Schedule::one_f_one_b, 2, 4, 1, kUnit)).step_time == Seconds(15));
  }
}

TEST_CASE("blocking transfers also hold the sending device (DeepSpeed's synchronous p2p)", "[sim][pipeline]") {
  // The 1F1B p=2 m=4 case above, each send now also occupying its sender:
  // dev 0: F0 0-1 (+0.5 send), F1 1.5-2.5 (+0.5)
  // dev 1: F0 1.5-2.5, B0 2.5-4.5 (+0.5 send), F1 5-6 (ready 3), B1 6-8 (+0.5)
  // dev 0: B0 5-7 (ready 4.5+0.5), F2 7-8 (+0.5), B1 8.5-10.5 (ready 8+0.5),
  //        F3 10.5-11.5 (+0.5)
  // dev 1: F2 8.5-9.5 (ready 8+0.5), B2 9.5-11.5 (+0.5), F3 12-13 (ready
  //        11.5+0.5), B3 13-15 (+0.5)
  // dev 0: B2 12-14 (ready 11.5+0.5), B3 15.5-17.5 (ready 15+0.5).
  // Step 17.5 against 17 when the sender goes on.
  PipelineProblem pr = uniform_problem(Schedule::one_f_one_b, 2, 4, 1, kUnit, {Seconds(0.5), Seconds(0.5)});
  pr.blocking_transfers = true;
  const PipelineResult r = run(pr);
  CHECK(r.step_time == Seconds(17.5));
  CHECK(event(r, 0, StepKind::forward, 1, 0).start == Seconds(1.5));
  CHECK(event(r, 1, StepKind::forward, 1, 1).start == Seconds(5));
  CHECK(event(r, 0, StepKind::backward, 1, 0).start == Seconds(8.5));
  CHECK(event(r, 0, StepKind::backward, 3, 0).start == Seconds(15.5));
  CHECK(r.devices[1].last_finish == Seconds(15.5));  // its last gradient send
  SECTION("without boundaries there is nothing to block on") {
    PipelineProblem none = uniform_problem(Schedule::one_f_one_b, 2, 4, 1, kUnit);
    none.blocking_transfers = true;
    CHECK(run(none).step_time == Seconds(15));
  }
}

TEST_CASE("interleaved p=4 m=8 v=2: bubble (p-1)/(v m) of ideal", "[sim][pipeline]") {
  // Each stage (f=1 b=2 per micro-batch, 100 B) cut into v=2 chunks:
  // f=0.5 b=1 and 50 B each. Ideal = m v (0.5 + 1) = 24 per device.
  const PipelineProblem pr =
      uniform_problem(Schedule::interleaved, 4, 8, 2, {Seconds(0.5), Seconds(1), Bytes(50)});
  const PipelineResult r = run(pr);
  // Dev 0 (chunks 0, 4): warm-up (p-1)*2 + (v-1)*p = 10 units: F0-3@c0
  // 0-2, F0-3@c4 2-4, F4-5@c0 4-5, then steady F6@c0 5-5.5. Its first
  // backward B0@c4 needs: dev 3 F0@c7 3.5-4 (after F0-3@c3 1.5-3.5),
  // B0@c7 4-5, dev 2 B0@c6 5-6, dev 1 B0@c5 6-7, so it starts at 7:
  // idle 1.5. Afterwards it waits 0.5 six times for backwards from dev 1
  // (the '.' in the chart): idle 1.5 + 3 = 4.5 = (p-1)(f+b)/v = 3 x 3 / 2,
  // and dev 0 ends at 24 + 4.5 = 28.5 (1F1B: 24 + 9 = 33).
  CHECK(event(r, 0, StepKind::backward, 0, 4).start == Seconds(7));
  CHECK(r.step_time == Seconds(28.5));
  CHECK(r.devices[0].busy == Seconds(24));
  CHECK(r.devices[0].idle == Seconds(4.5));
  CHECK(r.bubble_fraction == Approx(3.0 / 16.0));  // (p-1)/(v m) = 4.5 / 24
  CHECK(bubble_fraction_formula(Schedule::interleaved, 4, 8, 2) == Approx(3.0 / 16.0));
  CHECK(bubble_formula(pr) == Seconds(4.5));
  CHECK(timeline_chart(r, Seconds(0.5)) ==
        "dev 0  01230123456...aa7bb.4cc5dd6aa7bbcc.dd.ee.ff.gg.hheeffgghh\n"
        "dev 1  .012301234..aa5bb6cc7dd4aa5bb6cc7dd.ee.ff.gg.hheeffgghh..\n"
        "dev 2  ..0123012.aa3bb4cc5dd6aa7bb4cc5dd6ee7ff.gg.hheeffgghh....\n"
        "dev 3  ...01230aa1bb2cc3dd4aa5bb6cc7dd4ee5ff6gg7hheeffgghh......\n");

  // Peak in-flight units on dev 0: warm-up 10 + the first steady forward =
  // 11 = v p + p - 1; at 50 B each 550 B vs 1F1B's p x 100 = 400 B:
  // 550 / 400 = 1.375 = 1 + (p-1)/(p v) = 1 + 3/8 exactly.
  CHECK(r.devices[0].peak_in_flight == 11);
  CHECK(r.devices[0].peak_activation == Bytes(550));
  CHECK(r.devices[0].peak_activation / Bytes(400) == Approx(1.0 + 3.0 / 8.0));
  // Dev r: 2(p-r-1) + (v-1)p + 1 units: 9, 7, 5.
  CHECK(r.devices[1].peak_in_flight == 9);
  CHECK(r.devices[2].peak_in_flight == 7);
  CHECK(r.devices[3].peak_in_flight == 5);
}

TEST_CASE("interleaved m % p != 0 is an error naming the constraint", "[sim][pipeline]") {
  auto r = simulate(uniform_problem(Schedule::interleaved, 4, 6, 2, kUnit));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("micro_batches % stages == 0"));
}

TEST_CASE("p = 1: no pipeline, step = m(f+b)", "[sim][pipeline]") {
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b}) {
    const PipelineResult r = run(uniform_problem(s, 1, 5, 1, kUnit));
    CHECK(r.step_time == Seconds(15));  // 5 x 3
    CHECK(r.devices[0].idle == Seconds(0));
    CHECK(r.bubble_fraction == 0.0);
    CHECK(r.devices[0].peak_in_flight == (s == Schedule::gpipe ? 5 : 1));
  }
  // Interleaved with one device: 3 micro-batches x 2 chunks x (0.5 + 1) = 9.
  CHECK(run(uniform_problem(Schedule::interleaved, 1, 3, 2, {Seconds(0.5), Seconds(1), Bytes(0)})).step_time ==
        Seconds(9));
}

TEST_CASE("m = 1: the step is one pass down and up", "[sim][pipeline]") {
  const PipelineResult r = run(uniform_problem(Schedule::one_f_one_b, 4, 1, 1, kUnit));
  CHECK(r.step_time == Seconds(12));  // 4 x 1 + 4 x 2 = (1 + 3) x 3
  CHECK(r.bubble_fraction == Approx(3.0));  // (p-1)/m
  for (const DeviceReport& d : r.devices) CHECK(d.peak_in_flight == 1);
}

TEST_CASE("per-device extra time is added at the step end", "[sim][pipeline]") {
  PipelineProblem pr = uniform_problem(Schedule::one_f_one_b, 4, 8, 1, kUnit);
  pr.extra = {Seconds(5), Seconds(0), Seconds(0), Seconds(10)};
  // Dev 0 ends at 33 (+5 = 38); dev 3 at 27 (+10 = 37). Step = 38.
  const PipelineResult r = run(pr);
  CHECK(r.pipeline_time == Seconds(33));
  CHECK(r.step_time == Seconds(38));
  CHECK(r.devices[3].extra == Seconds(10));
  CHECK(r.devices[0].idle == Seconds(9));  // extras are not bubble
}

TEST_CASE("balanced pipelines match the textbook formulas exactly", "[sim][pipeline]") {
  for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b}) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 16; ++m) {
        INFO(schedule_name(s) << " p=" << p << " m=" << m);
        const PipelineResult r = run(uniform_problem(s, p, m, 1, kUnit));
        CHECK(r.step_time == Seconds(3.0 * (m + p - 1)));
        CHECK(r.bubble_fraction == Approx(bubble_fraction_formula(s, p, m, 1)));
        for (int d = 0; d < p; ++d)
          CHECK(r.devices[static_cast<std::size_t>(d)].peak_in_flight ==
                (s == Schedule::gpipe ? m : std::min(p - d, m)));
      }
    }
  }
  for (int p = 1; p <= 6; ++p) {
    for (int v = 1; v <= 4; ++v) {
      for (int m = p; m <= 4 * p; m += p) {
        INFO("interleaved p=" << p << " v=" << v << " m=" << m);
        const PipelineResult r =
            run(uniform_problem(Schedule::interleaved, p, m, v, {Seconds(0.5), Seconds(1), Bytes(1)}));
        CHECK(r.step_time == Seconds(1.5 * (m * v + p - 1)));  // ideal + (p-1)(f+b)/v per stage
        CHECK(r.bubble_fraction == Approx(bubble_fraction_formula(Schedule::interleaved, p, m, v)));
        const int units = m * v;
        const int expected0 = m == p ? units : std::min(2 * (p - 1) + (v - 1) * p + 1, units);
        CHECK(r.devices[0].peak_in_flight == expected0);
      }
    }
  }
}

TEST_CASE("a 128-stage, 4096-micro-batch pipeline simulates quickly", "[sim][pipeline][perf]") {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = simulate(uniform_problem(Schedule::one_f_one_b, 128, 4096, 1, kUnit), SimulateOptions{false});
  REQUIRE(r.ok());
  CHECK(r->step_time == Seconds(3.0 * (4096 + 127)));  // 12669
  CHECK(r->timeline.empty());

  // Benchmark scale: 16 stages x 96 micro-batches (3072 ops); ~0.1 ms on a
  // loaded 2-core machine at -O1. Bound loose enough never to flake.
  const PipelineProblem bench = uniform_problem(Schedule::interleaved, 16, 96, 2, kUnit);
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) REQUIRE(simulate(bench).ok());
  const auto t2 = std::chrono::steady_clock::now();
  const double big_s = std::chrono::duration<double>(t1 - t0).count();
  const double bench_ms = std::chrono::duration<double, std::milli>(t2 - t1).count() / 100;
  INFO("128x4096 1F1B: " << big_s << " s; 16x96 interleaved v=2: " << bench_ms << " ms");
  CHECK(big_s < 10.0);
  CHECK(bench_ms < 20.0);
}
