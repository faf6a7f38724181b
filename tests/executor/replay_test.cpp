// The replay on the in-process fake communicator (n threads): the programs
// of the fixture plans run to the end, every rank agrees on the step times,
// and time lands in the components the plan exercises.

#include <thread>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "planner/executor/replay.hpp"
#include "planner/runtime/fake_communicator.hpp"

namespace planner::executor {
namespace {

std::vector<ReplayResult> replay_all(const plan::Plan& p, const ReplayOptions& o) {
  const int n = p.cluster.devices;
  std::vector<RankProgram> progs;
  for (int r = 0; r < n; ++r) {
    auto prog = derive_program(p, testing::tiny_gpt(), r);
    if (!prog) FAIL(prog.error().message);
    progs.push_back(*prog);
  }
  // One pipeline column per (dp, tp) coordinate: number its transfers.
  for (int r = 0; r < n; ++r) {
    if (coordinate(p, r, "pp") != 0) continue;
    std::vector<RankProgram> col;
    for (int s = 0; s < p.layout.pp; ++s) col.push_back(progs[static_cast<std::size_t>(with_coordinate(p, r, "pp", s))]);
    REQUIRE(order_transfers(col).ok());
    for (int s = 0; s < p.layout.pp; ++s)
      progs[static_cast<std::size_t>(with_coordinate(p, r, "pp", s))] = col[static_cast<std::size_t>(s)];
  }
  runtime::FakeWorld world(n, Seconds(30));
  std::vector<Result<ReplayResult>> out(static_cast<std::size_t>(n), Error{"not run"});
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] { out[static_cast<std::size_t>(r)] = replay(progs[static_cast<std::size_t>(r)], p, world.comm(r), o); });
  for (auto& t : threads) t.join();
  std::vector<ReplayResult> res;
  for (auto& r : out) {
    if (!r) FAIL(r.error().message);
    res.push_back(*r);
  }
  return res;
}

TEST_CASE("replay: tensor-parallel plan on two fake ranks", "[executor]") {
  ReplayOptions o;
  o.steps = 2;
  o.warmup = 1;
  const auto res = replay_all(testing::load_plan("gpt_tp2.json"), o);
  REQUIRE(res.size() == 2);
  CHECK(res[0].step_times_s.size() == 2);  // warm-up excluded
  CHECK(res[0].step_times_s == res[1].step_times_s);  // max over ranks, the same everywhere
  CHECK(res[0].components_s[static_cast<std::size_t>(Component::compute)] > 0);
  CHECK(res[0].components_s[static_cast<std::size_t>(Component::tp_comm)] > 0);
  CHECK(res[0].components_s[static_cast<std::size_t>(Component::pp_comm)] == 0);
  CHECK(res[0].peak_rss_bytes.size() == 2);
  CHECK(res[0].peak_rss_bytes[1] > 0);
}

TEST_CASE("replay: interleaved pipeline x data-parallel plan on four fake ranks", "[executor]") {
  ReplayOptions o;
  o.steps = 1;
  o.warmup = 0;
  const auto res = replay_all(testing::load_plan("gpt_dp2_pp2_vp2.json"), o);
  REQUIRE(res.size() == 4);
  CHECK(res[3].step_times_s.size() == 1);
  CHECK(res[0].components_s[static_cast<std::size_t>(Component::pp_comm)] > 0);
  CHECK(res[0].components_s[static_cast<std::size_t>(Component::dp_comm)] > 0);
  CHECK(res[0].components_s[static_cast<std::size_t>(Component::optimizer)] > 0);
}

TEST_CASE("replay: --steps must be positive", "[executor]") {
  runtime::FakeWorld world(1);
  RankProgram prog;
  ReplayOptions o;
  o.steps = 0;
  const auto r = replay(prog, plan::Plan{}, world.comm(0), o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "--steps must be at least 1 (got 0)");
}

TEST_CASE("parse_stall_spec", "[executor]") {
  auto s = parse_stall_spec("stall:1:3");
  REQUIRE(s);
  CHECK(*s == StallSpec{1, 3});
  CHECK(parse_stall_spec("stall:1:0").error().message ==
        "--fault 'stall:1:0': STEP is not an integer >= 1 (expected stall:RANK:STEP, crash:RANK:STEP or drop:RANK:N)");
  CHECK(parse_stall_spec("stall:x:2").error().message ==
        "--fault 'stall:x:2': RANK is not an integer >= 0 (expected stall:RANK:STEP, crash:RANK:STEP or drop:RANK:N)");
  CHECK_FALSE(parse_stall_spec("sleep:1:2"));
}

}  // namespace

TEST_CASE("measured spans round-trip through their text form", "[executor][replay]") {
  const std::vector<MeasuredSpan> spans{{0.0, 0.001, Component::compute, "F0 c0"},
                                        {0.001, 0.0015, Component::tp_comm, "B1 c3"},
                                        {0.002, 0.004, Component::optimizer, "finish"}};
  const std::string text = encode_spans(spans);
  CHECK(text == "0.000000000 0.001000000 compute F0 c0\n0.001000000 0.001500000 tp_comm B1 c3\n"
                "0.002000000 0.004000000 optimizer finish\n");
  auto back = decode_spans(text);
  REQUIRE(back.ok());
  CHECK(*back == spans);
  CHECK_FALSE(decode_spans("0.1 0.2 warp F0\n").ok());
  CHECK_FALSE(decode_spans("x\n").ok());
}

TEST_CASE("replay records the last step's spans of every rank", "[executor][replay]") {
  // Two ranks of the in-process fake on the data-parallel fixture: each
  // records compute spans and its gradient sync, gathered to both ranks.
  ReplayOptions o;
  o.steps = 1;
  o.warmup = 0;
  o.record = true;
  const auto results = replay_all(testing::load_plan("gpt_dp2.json"), o);
  REQUIRE(results.size() == 2);
  for (const auto& r : results) {
    REQUIRE(r.spans.size() == 2);
    for (const auto& rank : r.spans) {
      REQUIRE_FALSE(rank.empty());
      CHECK(rank.front().label.rfind("F0", 0) == 0);
      bool dp = false;
      for (const auto& s : rank) {
        CHECK(s.end_s >= s.start_s);
        dp = dp || s.component == Component::dp_comm;
      }
      CHECK(dp);
    }
  }
  CHECK(results[0].spans == results[1].spans);
}

}  // namespace planner::executor
