// Pipeline cuts: explicit layers per chunk, and the balanced cut (dynamic
// programming over layer cuts) for models whose head outweighs a layer.

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"

using namespace planner;
using namespace estimate_test;

TEST_CASE("explicit layers per chunk are honoured and checked", "[estimate][stages]") {
  const auto g = small_gpt(4);
  FakeCostModel model;
  auto c = config_for(1, 1, 2, 4);
  c.layers_per_chunk = {1, 3};
  const auto e = run(g, model, c);
  REQUIRE(e.chunks.size() == 2);
  CHECK(e.chunks[0].first_layer == 0);
  CHECK(e.chunks[0].last_layer == 0);
  CHECK(e.chunks[1].first_layer == 1);
  CHECK(e.chunks[1].last_layer == 3);
  c.layers_per_chunk = {2, 3};
  auto bad = estimate::estimate(g, model, c);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "2 pipeline chunks with 5 layers in all given; the layout has 2 chunks and the model 4 layers");
  c.layers_per_chunk = {0, 4};
  CHECK_FALSE(estimate::estimate(g, model, c).ok());
}

TEST_CASE("a balanced cut gives the head's stage fewer layers", "[estimate][stages]") {
  // Vocabulary 16384 with hidden 64: the LM head (2*B*S*h*V FLOPs forward)
  // weighs about as much as several layers, so the even 2+2 split leaves the
  // last stage the slowest; the balanced cut moves a layer off it.
  const auto g = gpt(2, 16, 64, 4, 256, 16384, 4);
  FakeCostModel model;
  model.flops_per_s = 1e12;  // time proportional to FLOPs
  auto c = config_for(1, 1, 2, 8);
  const auto even = run(g, model, c);
  c.balance_stages = true;
  const auto balanced = run(g, model, c);
  const int first = balanced.chunks[0].last_layer - balanced.chunks[0].first_layer + 1;
  const int last = balanced.chunks[1].last_layer - balanced.chunks[1].first_layer + 1;
  CHECK(first + last == 4);
  CHECK(last < first);
  CHECK(balanced.step_time.value < even.step_time.value);
  // Balanced work: the slower chunk's forward + backward is no slower than the even cut's.
  auto slowest = [](const estimate::Estimate& e) {
    double s = 0;
    for (const auto& ch : e.chunks) s = std::max(s, (ch.forward_compute + ch.backward_compute).value);
    return s;
  };
  CHECK(slowest(balanced) < slowest(even));
}
