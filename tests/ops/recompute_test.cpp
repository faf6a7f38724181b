// Recompute policies and modules (ops/recompute.hpp): names, the module
// list's canonical text, and which group an op is recomputed with.

#include <catch2/catch.hpp>

#include "planner/ops/recompute.hpp"

using namespace planner;
using ops::RecomputeModules;
using ops::RecomputePolicy;

TEST_CASE("recompute modules: parse, canonical text, errors", "[ops][recompute]") {
  CHECK(RecomputeModules{}.text() == "core_attn");
  CHECK(RecomputeModules{}.is_default());
  auto m = RecomputeModules::parse(" moe_act, layernorm ,moe_act");
  REQUIRE(m.ok());
  CHECK(m->text() == "layernorm,moe_act");
  CHECK_FALSE(m->has(RecomputeModules::kCoreAttn));
  CHECK(RecomputeModules::parse(m->text())->bits == m->bits);  // round-trips
  CHECK(RecomputeModules::parse("core_attn")->is_default());
  for (const char* bad : {"mlp", "", "core_attn,,layernorm"}) {
    auto r = RecomputeModules::parse(bad);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("is not one of core_attn, layernorm, moe_act"));
  }
}

TEST_CASE("recompute groups: layer, attention pattern, norm, expert activation", "[ops][recompute]") {
  graph::Op attn, norm, act, plain;
  attn.fused_group = 2;
  norm.norm_unit = 2;
  act.expert_act_unit = 2;
  for (auto* op : {&attn, &norm, &act, &plain}) op->layer = 5;
  const auto all = *RecomputeModules::parse("core_attn,layernorm,moe_act");
  // full: every op of the layer, modules unread.
  for (const auto* op : {&attn, &norm, &act, &plain}) CHECK(ops::recompute_group(*op, RecomputePolicy::full, all) == 5);
  // none: nothing.
  CHECK_FALSE(ops::recomputed(attn, RecomputePolicy::none, all));
  // selective, default modules: the attention pattern only.
  CHECK(ops::recomputed(attn, RecomputePolicy::selective));
  CHECK_FALSE(ops::recomputed(norm, RecomputePolicy::selective));
  CHECK_FALSE(ops::recomputed(act, RecomputePolicy::selective));
  // selective, all three: one id each, never the same for the same unit number.
  const auto a = ops::recompute_group(attn, RecomputePolicy::selective, all);
  const auto n = ops::recompute_group(norm, RecomputePolicy::selective, all);
  const auto e = ops::recompute_group(act, RecomputePolicy::selective, all);
  REQUIRE((a && n && e));
  CHECK(*a != *n);
  CHECK(*n != *e);
  CHECK(*a != *e);
  CHECK_FALSE(ops::recomputed(plain, RecomputePolicy::selective, all));
  // Only the norm and expert units drop their outputs too.
  CHECK_FALSE(ops::output_dropping_group(attn, RecomputePolicy::selective, all));
  CHECK(ops::output_dropping_group(norm, RecomputePolicy::selective, all) == n);
  CHECK_FALSE(ops::output_dropping_group(norm, RecomputePolicy::full, all));
  // Without core_attn the pattern is not recomputed.
  CHECK_FALSE(ops::recomputed(attn, RecomputePolicy::selective, *RecomputeModules::parse("moe_act")));
}
