// estimate() returns its errors as values, one line naming the violated
// constraint: the degrees (validate), divisibility of heads and sequence by
// their split, more pipeline chunks than layers, interleaving that does not
// divide the layers.

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"

using namespace estimate_test;

namespace {

std::string error_of(const graph::OpGraph& g, const estimate::ParallelConfig& c) {
  const FakeCostModel fake;
  const auto e = estimate::estimate(g, fake, c);
  if (e.ok()) FAIL("estimate() accepted " << estimate::describe(c));
  const auto& msg = e.error().message;
  CHECK(msg.find('\n') == std::string::npos);
  return msg;
}

}  // namespace

TEST_CASE("estimate: attention heads must divide by tp", "[estimate][errors]") {
  // h = 48 in 3 heads of 16; tp = 2 cannot split 3 heads.
  const auto g = gpt(2, 16, 48, 3, 192, 128, 2);
  CHECK(error_of(g, config_for(1, 2, 1, 4)) ==
        "attention heads 3 of 'layers.0/attn/scores/MatMul' are not divisible by `tp` 2");
  // tp = 3 does.
  const FakeCostModel fake;
  CHECK(estimate::estimate(g, fake, config_for(1, 3, 1, 4)).ok());
}

TEST_CASE("estimate: the sequence must divide by cp, and by tp*cp under sp", "[estimate][errors]") {
  auto cp3 = config_for(1, 1, 1, 4);
  cp3.cp = 3;
  CHECK(error_of(small_gpt(2), cp3) ==
        "sequence length 16 of 'layers.0/attn/scores/MatMul' is not divisible by `cp` 3");
  // S = 6 with tp = 4 and sequence parallelism: 6 % 4 != 0.
  auto sp = config_for(1, 4, 1, 4);
  sp.sequence_parallel = true;
  CHECK(error_of(gpt(2, 6, 64, 4, 256, 128, 2), sp) ==
        "sequence length 6 of 'layers.0/attn/scores/MatMul' is not divisible by tp*cp = 4 (`sequence_parallel` splits it)");
}

TEST_CASE("estimate: no more pipeline chunks than repeated layers", "[estimate][errors]") {
  CHECK(error_of(small_gpt(2), config_for(1, 1, 4, 4)) ==
        "`pp` 4 x `vp` 1 = 4 pipeline chunks need at least 4 repeated layers; the model has 2");
  // An MLP has no repeated layers at all.
  CHECK(error_of(mlp(8, 16, 32, 4), config_for(1, 1, 2, 4)) ==
        "`pp` 2 x `vp` 1 = 2 pipeline chunks need at least 2 repeated layers; the model has 0");
  // Interleaved: pp * vp chunks count.
  auto c = config_for(1, 1, 2, 4);
  c.schedule = sim::Schedule::interleaved;
  c.vp = 2;
  CHECK(error_of(small_gpt(3), c) ==
        "`pp` 2 x `vp` 2 = 4 pipeline chunks need at least 4 repeated layers; the model has 3");
}

TEST_CASE("estimate: interleaving needs layers % (pp * vp) == 0", "[estimate][errors]") {
  auto c = config_for(1, 1, 2, 4);
  c.schedule = sim::Schedule::interleaved;
  c.vp = 2;
  CHECK(error_of(small_gpt(6), c) == "interleaved schedule: 6 layers are not divisible by pp*vp = 4");
  // 8 layers divide.
  const FakeCostModel fake;
  CHECK(estimate::estimate(small_gpt(8), fake, c).ok());
}

TEST_CASE("estimate: an invalid layout fails with validate()'s message", "[estimate][errors]") {
  auto c = config_for(2, 2, 1, 4);
  c.ep = 3;
  CHECK(error_of(mlp(8, 16, 32, 4), c) == "`ep` 3 must divide dp*cp = 2 (experts are split over data/context ranks)");
  auto v = config_for(1, 1, 2, 4);
  v.vp = 2;
  CHECK(error_of(small_gpt(4), v) == "`vp` 2 needs `schedule` interleaved");
}
