// The real mode on the in-process fake communicator (one thread per rank):
// the fixture plans of tests/executor/data train the tiny GPT (vocabulary
// 128) with --check against the interpreter; a dropped collective fails the
// check; tensor parallelism is refused.

#include <cmath>
#include <thread>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "planner/executor/real.hpp"
#include "planner/runtime/fake_communicator.hpp"
#include "planner/runtime_cpu/interpreter.hpp"

namespace planner::executor {
namespace {

std::vector<Result<RealResult>> run_all(const plan::Plan& p, const RealOptions& o,
                                        std::optional<runtime::FaultSpec> drop = std::nullopt) {
  const int n = p.cluster.devices;
  std::vector<RankProgram> progs(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    if (coordinate(p, r, "pp") != 0) continue;
    std::vector<RankProgram> col;
    for (int s = 0; s < p.layout.pp; ++s) {
      auto prog = derive_program(p, testing::tiny_gpt(), with_coordinate(p, r, "pp", s));
      if (!prog) FAIL(prog.error().message);
      col.push_back(*prog);
    }
    REQUIRE(order_transfers(col).ok());
    for (int s = 0; s < p.layout.pp; ++s)
      progs[static_cast<std::size_t>(with_coordinate(p, r, "pp", s))] = col[static_cast<std::size_t>(s)];
  }
  runtime::FakeWorld world(n, Seconds(60));
  if (drop)
    for (int r = 0; r < n; ++r) world.comm(r).set_fault(drop);
  std::vector<Result<RealResult>> out(static_cast<std::size_t>(n), Error{"not run"});
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      out[static_cast<std::size_t>(r)] = run_real(p, progs[static_cast<std::size_t>(r)], testing::tiny_gpt(), world.comm(r), o);
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST_CASE("real mode: --check passes on dp, ZeRO-1, pp and interleaved plans", "[executor][real]") {
  for (const char* name : {"gpt_dp2.json", "gpt_dp2_zero1.json", "gpt_pp2.json", "gpt_dp2_pp2_vp2.json"}) {
    INFO(name);
    const auto p = testing::load_plan(name);
    RealOptions o;
    o.steps = 2;
    o.warmup = 1;
    o.check = true;
    const auto res = run_all(p, o);
    for (const auto& r : res) {
      REQUIRE(r.ok());
      CHECK(r->check_failure.empty());
      REQUIRE(r->losses.size() == 3);
      CHECK(r->step_times_s.size() == 2);
      // Every rank learns the same losses (all-reduced).
      CHECK(r->losses == res[0]->losses);
    }
    // Rank 0 checked 3 steps (kMaxCheckedSteps), each within 1e-5.
    REQUIRE(res[0]->checked.size() == 3);
    for (const auto& c : res[0]->checked) CHECK(c.max_rel_error <= 1e-5);
    // Initial weights N(0, 0.02) give near-uniform logits over 128 classes:
    // loss ~ ln 128 = 4.852.
    CHECK(std::fabs(res[0]->losses[0] - std::log(128.0)) < 0.05);
    // Adam (lr 1e-4 in the plans) lowers it.
    CHECK(res[0]->losses[2] < res[0]->losses[0]);
  }
}

TEST_CASE("real mode: the same global batch gives the same loss under every layout", "[executor][real]") {
  // gpt_dp2 (dp 2 x 1 micro-batch) and gpt_pp2 (2 micro-batches) both cover
  // 4 sequences = global rows 0-3 of the seed's inputs; the step-1 loss is
  // the mean over those sequences, so the two agree to fp32 rounding.
  RealOptions o;
  o.steps = 1;
  o.warmup = 0;
  const auto a = run_all(testing::load_plan("gpt_dp2.json"), o);
  const auto b = run_all(testing::load_plan("gpt_pp2.json"), o);
  REQUIRE(a[0].ok());
  REQUIRE(b[0].ok());
  CHECK(a[0]->losses[0] == Approx(b[0]->losses[0]).epsilon(1e-6));
}

TEST_CASE("real mode: a dropped gradient reduction fails --check", "[executor][real]") {
  RealOptions o;
  o.steps = 2;
  o.warmup = 0;
  o.check = true;
  // World collective #1 of gpt_dp2 (pp = 1, dp = world) is the gradient all-reduce.
  const auto res = run_all(testing::load_plan("gpt_dp2.json"), o, runtime::FaultSpec{1, 1});
  for (const auto& r : res) {
    REQUIRE(r.ok());
    CHECK_FALSE(r->check_failure.empty());
  }
  CHECK_THAT(res[0]->check_failure, Catch::StartsWith("--check failed at step 1: gradient of '"));
}

TEST_CASE("real mode: tensor parallelism is refused with a line naming it", "[executor][real]") {
  const auto st = real_supported(testing::load_plan("gpt_tp2.json"), testing::tiny_gpt());
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message, Catch::Contains("tensor parallelism (layout.tp = 2)"));
  CHECK_THAT(st.error().message, Catch::Contains("--replay can time this plan"));
}

TEST_CASE("Interpreter::set_input replaces an input and checks its shape", "[executor][real]") {
  auto it = runtime_cpu::Interpreter::create(testing::tiny_gpt(), {.seed = 1});
  REQUIRE(it.ok());
  std::string ids;
  for (auto id : testing::tiny_gpt().graph_inputs)
    if (!graph::is_floating(testing::tiny_gpt().tensor(id).dtype)) ids = testing::tiny_gpt().tensor(id).name;
  REQUIRE_FALSE(ids.empty());
  auto l0 = it->forward();
  REQUIRE(l0.ok());
  // All-zero token ids (and labels): another loss.
  const auto& t = testing::tiny_gpt().tensor(*testing::tiny_gpt().find_tensor(ids));
  REQUIRE(it->set_input(ids, runtime_cpu::IndexTensor{t.shape, std::vector<std::int64_t>(static_cast<std::size_t>(t.numel()), 0)}).ok());
  auto l1 = it->forward();
  REQUIRE(l1.ok());
  CHECK(*l1 != *l0);
  const auto bad = it->set_input(ids, runtime_cpu::IndexTensor{{1}, {0}});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::StartsWith("input '" + ids + "': the value given is int64 [1]"));
  CHECK_FALSE(it->set_input("no_such_input", runtime_cpu::Tensor({1})).ok());
}

}  // namespace
}  // namespace planner::executor
