// Sharding hints: parsing, globbing, and their effect on the chosen strategies.

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"
#include "planner/estimate/hints.hpp"

using namespace planner;
using namespace estimate_test;

TEST_CASE("hint globs", "[estimate][hints]") {
  CHECK(estimate::glob_match("layers.*/mlp/fc1/MatMul", "layers.12/mlp/fc1/MatMul"));
  CHECK(estimate::glob_match("*", ""));
  CHECK(estimate::glob_match("a?c", "abc"));
  CHECK_FALSE(estimate::glob_match("a?c", "ac"));
  CHECK_FALSE(estimate::glob_match("layers.*/mlp/fc1/MatMul", "layers.1/mlp/fc2/MatMul"));
  CHECK(estimate::glob_match("*fc*MatMul", "layers.1/mlp/fc2/MatMul"));
}

TEST_CASE("hint files parse with comments and name bad lines", "[estimate][hints]") {
  auto h = estimate::parse_hints("# c\n\n  lm_head/MatMul   replicated  # keep whole\nlayers.*/fc1/MatMul ((1,1),(1,2))\n", "h.txt");
  REQUIRE(h.ok());
  REQUIRE(h->size() == 2);
  CHECK((*h)[0].pattern == "lm_head/MatMul");
  CHECK((*h)[0].strategy == "replicated");
  CHECK((*h)[0].line == 3);
  CHECK((*h)[1].strategy == "((1,1),(1,2))");
  CHECK((*h)[1].line == 4);
  auto bad = estimate::parse_hints("ok tp:n\nlonely\n", "h.txt");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "h.txt:2: 'lonely' has no strategy (expected: OP_PATTERN STRATEGY)");
  CHECK_FALSE(estimate::parse_hints("a tp:n extra", "h.txt").ok());
}

TEST_CASE("hints fix strategies and the search chooses the rest", "[estimate][hints]") {
  // A GPT on tp=2 (FLOP-proportional fake costs): the hint sets the LM
  // head's strategy to the opposite of the free choice (replicated <->
  // column-split); every other unit stays the search's choice around it.
  const auto g = gpt(2, 64, 256, 4, 1024, 512, 2);
  FakeCostModel model;
  model.flops_per_s = 1e12;
  auto c = config_for(1, 2, 1, 1, 2);
  const auto free = run(g, model, c);
  auto unit = [](const estimate::Estimate& e, const std::string& name) {
    for (const auto& u : e.units)
      if (u.unit == name) return u;
    FAIL("no unit " << name);
    return estimate::UnitStrategy{};
  };
  const bool free_replicated = unit(free, "lm_head/MatMul").assignment.empty();
  c.hints = {{"lm_head/MatMul", free_replicated ? "tp:n" : "replicated", 1}};
  const auto hinted = run(g, model, c);
  CHECK(unit(hinted, "lm_head/MatMul").assignment == (free_replicated ? "tp:n" : ""));
  // Fixing a choice can only cost time (the free solve was optimal).
  CHECK(hinted.step_time.value >= free.step_time.value);
  // Errors: no op matches; a strategy the op does not offer on this mesh.
  c.hints = {{"nothing/*", "tp:n", 7}};
  auto e1 = estimate::estimate(g, model, c);
  REQUIRE_FALSE(e1.ok());
  CHECK(e1.error().message == "hints line 7: 'nothing/*' matches no op of the model");
  c.hints = {{"lm_head/MatMul", "((9,9),(9,9))", 2}};
  auto e2 = estimate::estimate(g, model, c);
  REQUIRE_FALSE(e2.ok());
  CHECK(e2.error().message.find("hints line 2: '((9,9),(9,9))' is not a strategy of 'lm_head/MatMul'") == 0);
}
