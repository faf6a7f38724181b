// step_timeline() on a hand-built two-stage step (arithmetic in comments).
#include "planner/estimate/timeline.hpp"

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"

using namespace planner;
using namespace planner::estimate;

namespace {

// The step's simulation with events, as estimate() runs it for a timeline.
Result<StepTimeline> laid_out(const StepParts& parts) {
  auto sim = sim::simulate(parts.problem);
  if (!sim.ok()) return sim.error();
  return step_timeline(parts, *sim);
}

// 1F1B, p = 2, m = 2, one chunk per rank; transfers 0.5 s each way.
//   chunk 0: forward 0.75 + tp 0.25 = 1,   backward 1.5 + tp 0.5 = 2
//   chunk 1: forward 1,                    recompute 0.5 + backward 1.5 = 2
//   rank 0 tail: optimizer 0.5                                 (extra 0.5)
//   rank 1 tail: dp reduce 1 in 2 buckets, 0.25 exposed; optimizer 0.5 (extra 0.75)
StepParts two_stage() {
  StepParts s;
  auto& pr = s.problem;
  pr.stages = 2;
  pr.micro_batches = 2;
  pr.schedule = sim::Schedule::one_f_one_b;
  pr.chunks = {{Seconds(1), Seconds(2), Bytes(0)}, {Seconds(1), Seconds(2), Bytes(0)}};
  pr.boundaries = {{Seconds(0.5), Seconds(0.5)}};
  pr.extra = {Seconds(0.5), Seconds(0.75)};
  ChunkParts c0, c1;
  c0.forward = Seconds(0.75);
  c0.forward_comm = Seconds(0.25);
  c0.backward = Seconds(1.5);
  c0.backward_comm = Seconds(0.5);
  c1.forward = Seconds(1);
  c1.recompute = Seconds(0.5);
  c1.backward = Seconds(1.5);
  s.chunks = {c0, c1};
  RankTail t0, t1;
  t0.optimizer = Seconds(0.5);
  t1.dp_reduce = Seconds(1);
  t1.dp_reduce_exposed = Seconds(0.25);
  t1.dp_buckets = 2;
  t1.optimizer = Seconds(0.5);
  s.ranks = {t0, t1};
  return s;
}

std::vector<Span> find(const StepTimeline& t, int stage, SpanKind kind) {
  std::vector<Span> out;
  for (const auto& s : t.spans)
    if (s.stage == stage && s.kind == kind) out.push_back(s);
  return out;
}

}  // namespace

// The simulated ops (1F1B orders: rank 0 F0 F1 B0 B1, rank 1 F0 B0 F1 B1):
//   rank 0  F0 [0,1]  F1 [1,2]                    B0 [5,7]     B1 [8,10]
//   rank 1  F0 [1.5,2.5] (F0 ends 1, +0.5)  B0 [2.5,4.5]  F1 [4.5,5.5]  B1 [5.5,7.5]
//   rank 0 B0 waits for rank 1's B0 (4.5) + 0.5 = 5; B1 for 7.5 + 0.5 = 8.
//   step = max(10 + 0.5, 7.5 + 0.75) = 10.5
TEST_CASE("step timeline of a two-stage 1F1B step", "[estimate][timeline]") {
  auto r = laid_out(two_stage());
  REQUIRE(r.ok());
  const StepTimeline& t = *r;
  CHECK(t.step_time == Seconds(10.5));
  CHECK(t.stages == 2);

  SECTION("one forward and one backward per micro-batch and rank, compute only") {
    for (int st : {0, 1}) {
      CHECK(find(t, st, SpanKind::forward).size() == 2);
      CHECK(find(t, st, SpanKind::backward).size() == 2);
    }
    // rank 0 F0: compute [0, 0.75], its tp collectives [0.75, 1].
    const auto f0 = find(t, 0, SpanKind::forward).front();
    CHECK(f0.micro_batch == 0);
    CHECK(f0.chunk == 0);
    CHECK(f0.stream == Stream::compute);
    CHECK(f0.start == Seconds(0));
    CHECK(f0.end == Seconds(0.75));
    const auto tpf = find(t, 0, SpanKind::tp_forward).front();
    CHECK(tpf.stream == Stream::tp);
    CHECK(tpf.start == Seconds(0.75));
    CHECK(tpf.end == Seconds(1));
    // rank 0 B0 [5, 7]: backward [5, 6.5], tp [6.5, 7].
    const auto b0 = find(t, 0, SpanKind::backward).front();
    CHECK(b0.start == Seconds(5));
    CHECK(b0.end == Seconds(6.5));
    CHECK(find(t, 0, SpanKind::tp_backward).front().start == Seconds(6.5));
    // rank 1 B0 [2.5, 4.5]: recompute [2.5, 3], backward [3, 4.5].
    const auto rc = find(t, 1, SpanKind::recompute);
    REQUIRE(rc.size() == 2);
    CHECK(rc.front().start == Seconds(2.5));
    CHECK(rc.front().end == Seconds(3));
    const auto b1 = find(t, 1, SpanKind::backward).front();
    CHECK(b1.start == Seconds(3));
    CHECK(b1.end == Seconds(4.5));
  }

  SECTION("pipeline transfers on both ranks") {
    // F0 of chunk 0 ends at 1: activation on the wire [1, 1.5].
    const auto sends = find(t, 0, SpanKind::send_activation);
    REQUIRE(sends.size() == 2);
    CHECK(sends[0].start == Seconds(1));
    CHECK(sends[0].end == Seconds(1.5));
    CHECK(sends[0].peer == 1);
    const auto recvs = find(t, 1, SpanKind::recv_activation);
    REQUIRE(recvs.size() == 2);
    CHECK(recvs[0].chunk == 1);
    CHECK(recvs[0].start == Seconds(1));
    // B0 of chunk 1 ends at 4.5: gradient [4.5, 5] to rank 0.
    const auto grads = find(t, 1, SpanKind::send_gradient);
    REQUIRE(grads.size() == 2);
    CHECK(grads[0].start == Seconds(4.5));
    CHECK(grads[0].end == Seconds(5));
    CHECK(find(t, 0, SpanKind::recv_gradient).size() == 2);
    CHECK(find(t, 1, SpanKind::send_activation).empty());  // the last chunk sends no activation
  }

  SECTION("tail: buckets, optimizer") {
    // rank 1: reduction ends at 7.5 + 0.25 = 7.75; two buckets of 0.5:
    // [6.75, 7.25], [7.25, 7.75]. Optimizer [8.25 - 0.5, 8.25].
    const auto buckets = find(t, 1, SpanKind::dp_reduce);
    REQUIRE(buckets.size() == 2);
    CHECK(buckets[0].start == Seconds(6.75));
    CHECK(buckets[0].end == Seconds(7.25));
    CHECK(buckets[1].end == Seconds(7.75));
    CHECK(buckets[0].stream == Stream::dp);
    const auto opt1 = find(t, 1, SpanKind::optimizer);
    REQUIRE(opt1.size() == 1);
    CHECK(opt1[0].start == Seconds(7.75));
    CHECK(opt1[0].end == Seconds(8.25));
    const auto opt0 = find(t, 0, SpanKind::optimizer);
    REQUIRE(opt0.size() == 1);
    CHECK(opt0[0].start == Seconds(10));
    CHECK(opt0[0].end == Seconds(10.5));
    CHECK(find(t, 0, SpanKind::dp_reduce).empty());  // nothing to reduce: no zero-length span
  }

  SECTION("bubbles: the gaps outside ops and tail") {
    // rank 0: [2, 5] and [7, 8] = 4 = step - busy (6) - extra (0.5).
    const auto b0 = find(t, 0, SpanKind::bubble);
    REQUIRE(b0.size() == 2);
    CHECK(b0[0].start == Seconds(2));
    CHECK(b0[0].end == Seconds(5));
    CHECK(b0[1].start == Seconds(7));
    CHECK(b0[1].end == Seconds(8));
    // rank 1: [0, 1.5] before its first forward, [8.25, 10.5] after its tail.
    const auto b1 = find(t, 1, SpanKind::bubble);
    REQUIRE(b1.size() == 2);
    CHECK(b1[0].start == Seconds(0));
    CHECK(b1[0].end == Seconds(1.5));
    CHECK(b1[1].start == Seconds(8.25));
    CHECK(b1[1].end == Seconds(10.5));
  }

  SECTION("sorted by stage, stream, start") {
    for (std::size_t i = 1; i < t.spans.size(); ++i) {
      const auto& a = t.spans[i - 1];
      const auto& b = t.spans[i];
      CHECK(std::tuple(a.stage, a.stream, a.start) <= std::tuple(b.stage, b.stream, b.start));
    }
  }
}

TEST_CASE("ZeRO-3 spans sit inside their op's window", "[estimate][timeline]") {
  // One rank, one micro-batch: forward = wait 0.25 + compute 1 (gather 0.75
  // starts with the op), backward = 2 + wait 0.5 (re-gather 0.75 first,
  // reduce-scatter 1 last).
  StepParts s;
  s.problem.chunks = {{Seconds(1.25), Seconds(2.5), Bytes(0)}};
  ChunkParts c;
  c.forward = Seconds(1);
  c.forward_wait = Seconds(0.25);
  c.forward_gather = Seconds(0.75);
  c.backward = Seconds(2);
  c.backward_wait = Seconds(0.5);
  c.backward_gather = Seconds(0.75);
  c.reduce_scatter = Seconds(1);
  s.chunks = {c};
  s.ranks = {RankTail{}};
  auto r = laid_out(s);
  REQUIRE(r.ok());
  const auto g = find(*r, 0, SpanKind::zero_gather);
  REQUIRE(g.size() == 2);
  CHECK(g[0].start == Seconds(0));
  CHECK(g[0].end == Seconds(0.75));
  CHECK(find(*r, 0, SpanKind::forward)[0].start == Seconds(0.25));  // after the exposed gather
  CHECK(g[1].start == Seconds(1.25));
  CHECK(g[1].end == Seconds(2));
  const auto rs = find(*r, 0, SpanKind::zero_reduce_scatter);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].start == Seconds(2.75));  // ends with the backward op at 3.75
  CHECK(rs[0].end == Seconds(3.75));
  CHECK(find(*r, 0, SpanKind::bubble).empty());
}

TEST_CASE("step timeline rejects parts that do not match the problem", "[estimate][timeline]") {
  StepParts s = two_stage();
  auto sim = sim::simulate(s.problem);
  REQUIRE(sim.ok());
  s.chunks.pop_back();
  auto r = step_timeline(s, *sim);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "timeline: 1 chunk parts and 2 rank tails for 2 chunks on 2 ranks");
}

TEST_CASE("step timeline needs a simulation with events", "[estimate][timeline]") {
  const StepParts s = two_stage();
  sim::SimulateOptions quiet;
  quiet.timeline = false;
  auto sim = sim::simulate(s.problem, quiet);
  REQUIRE(sim.ok());
  auto r = step_timeline(s, *sim);
  REQUIRE_FALSE(r.ok());
  // 2 chunks x 2 micro-batches x (forward, backward) = 8 events expected.
  CHECK(r.error().message == "timeline: the simulation holds 0 events on 2 ranks, not 8 on 2 (simulated without events?)");
}

TEST_CASE("step timeline keeps each rank's order of ops", "[estimate][timeline]") {
  // 1F1B, p = 2, m = 2: rank 0 runs F0 F1 B0 B1, rank 1 F0 B0 F1 B1.
  auto r = laid_out(two_stage());
  REQUIRE(r.ok());
  using sim::StepKind;
  const sim::DeviceOrders want = {
      {{StepKind::forward, 0, 0}, {StepKind::forward, 1, 0}, {StepKind::backward, 0, 0}, {StepKind::backward, 1, 0}},
      {{StepKind::forward, 0, 1}, {StepKind::backward, 0, 1}, {StepKind::forward, 1, 1}, {StepKind::backward, 1, 1}}};
  CHECK(r->orders == want);
}

// The timeline of real estimates (fake cost model of estimate_fixtures.hpp,
// the same cases as step_test.cpp): it ends at the estimate's step and its
// bubbles are the estimate's bubble.

namespace {

// An estimate with its timeline (EstimateOptions::timeline).
Estimate run_with_timeline(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c) {
  auto e = estimate::estimate(g, model, c, EstimateOptions{.timeline = true});
  if (!e.ok()) FAIL(e.error().message);
  REQUIRE(e->timeline.has_value());
  return std::move(e).value();
}

double total(const StepTimeline& t, int stage, SpanKind kind) {
  double s = 0;
  for (const auto& x : t.spans)
    if (x.stage == stage && x.kind == kind) s += (x.end - x.start).value;
  return s;
}

}  // namespace

TEST_CASE("timeline of the two-stage GPT estimate", "[estimate][timeline]") {
  using namespace estimate_test;
  const FakeCostModel fake;
  const auto e = run_with_timeline(small_gpt(4), fake, config_for(1, 1, 2, 4));
  const StepTimeline& t = *e.timeline;
  // Without the option no timeline is laid out, and the step is the same.
  const auto plain = run(small_gpt(4), fake, config_for(1, 1, 2, 4));
  CHECK_FALSE(plain.timeline.has_value());
  CHECK(plain.step_time == e.step_time);
  // f = 67 ms, b = 134 ms per chunk, transfer t = 4.096 us (step_test.cpp).
  const double f = 0.067, b = 0.134, x = 4.096e-6;
  CHECK(t.step_time == e.step_time);
  for (int st : {0, 1}) {
    CHECK(find(t, st, SpanKind::forward).size() == 4);
    CHECK(find(t, st, SpanKind::backward).size() == 4);
    CHECK(total(t, st, SpanKind::forward) == Approx(4 * f));
    CHECK(total(t, st, SpanKind::backward) == Approx(4 * b));
  }
  // Rank 1's F0 starts when F0 of chunk 0 and its transfer are done: f + t.
  CHECK(find(t, 1, SpanKind::forward).front().start.value == Approx(f + x));
  const auto send = find(t, 0, SpanKind::send_activation).front();
  CHECK(send.start.value == Approx(f));
  CHECK((send.end - send.start).value == Approx(x));
  // Megatron-Core's 1F1B waits on its sends: rank 0's F1 starts when F0's
  // send is done, f + t (the wait is bubble on the compute track).
  CHECK(find(t, 0, SpanKind::forward)[1].start.value == Approx(f + x));
  // Rank 0 is the critical device: its bubbles = the estimate's, 0.201 s + 5t.
  CHECK(total(t, 0, SpanKind::bubble) == Approx(e.bubble.value));
  CHECK(total(t, 0, SpanKind::bubble) == Approx(0.201 + 5 * x));
  // Its optimizer ends the step.
  CHECK(find(t, 0, SpanKind::optimizer).front().end == e.step_time);
  CHECK(total(t, 0, SpanKind::optimizer) == Approx(e.optimizer.value));
}

TEST_CASE("timeline of the large-MLP estimate: Megatron's gradient buckets", "[estimate][timeline]") {
  using namespace estimate_test;
  // step_test.cpp: reduce = 4 B x 80,110,010 / 1 GB/s = 0.32044004 s,
  // exposed 0.30844004 s after the last backward (m = 4, F 6 ms, B 12 ms:
  // the last backward ends at 4 x 18 ms = 0.072 s). Buckets of 40e6
  // parameters: ceil(80,110,010 / 40e6) = 3 equal buckets of 0.10681334667 s,
  // the last ending at 0.072 + 0.30844004 = 0.38044004 s, the first
  // starting at 0.38044004 - 0.32044004 = 0.06 s, the last backward's start.
  const FakeCostModel fake;
  const auto e = run_with_timeline(mlp(8, 8000, 10000, 10), fake, config_for(2, 1, 1, 4, 8));
  const auto& r = e.timeline;
  const auto buckets = find(*r, 0, SpanKind::dp_reduce);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].start.value == Approx(0.06));
  CHECK((buckets[0].end - buckets[0].start).value == Approx(0.32044004 / 3));
  CHECK(buckets[2].end.value == Approx(0.38044004));
  CHECK(find(*r, 0, SpanKind::backward).back().start.value == Approx(0.06));
  // Optimizer from 0.38044004 to the step's end; no bubble with one stage.
  CHECK(find(*r, 0, SpanKind::optimizer).front().start.value == Approx(0.38044004));
  CHECK(r->step_time == e.step_time);
  CHECK(find(*r, 0, SpanKind::bubble).empty());
}
