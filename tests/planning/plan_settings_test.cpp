// An estimate made a plan and read back gives the layout it was made from
// (planning::build_plan, planning::plan_settings, planning::check_plan_ops).

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "estimate/estimate_fixtures.hpp"
#include "planner/planning/plan_build.hpp"
#include "planner/planning/plan_settings.hpp"

using namespace planner;
using namespace estimate_test;

namespace {

plan::Plan plan_of(const graph::OpGraph& g, const estimate::ParallelConfig& c, const std::string& precision) {
  const FakeCostModel model;
  auto e = estimate::estimate(g, model, c, estimate::EstimateOptions{.timeline = true});
  if (!e) FAIL(e.error().message);
  planning::PlanSources src{"estimate", "gpt.onnx", "00", {}, {"a100", "0123456789abcdef", "gpus_per_node=4"},
                            precision, "selective", "flash"};
  auto p = planning::build_plan(*e, src);
  if (!p) FAIL(p.error().message);
  return std::move(p).value();
}

}  // namespace

TEST_CASE("planning: a plan read back gives its layout", "[planning]") {
  // gpt with 4 layers on dp=2 tp=2 pp=2 (8 devices), interleaved vp=2,
  // micro-batch 1, 4 micro-batches per replica: global batch 1 x 2 x 4 = 8.
  auto c = config_for(2, 2, 2, 4);
  c.vp = 2;
  c.schedule = sim::Schedule::interleaved;
  c.zero = 1;
  c.optimizer = cost::Optimizer::sgd_momentum;
  c.framework = estimate::Framework::deepspeed;
  c.optimizer_state_bytes = 2;
  c.master_weights = cost::MasterWeights::remainder;
  const auto g = small_gpt(4);
  const plan::Plan p = plan_of(g, c, "fp8");
  auto s = planning::plan_settings(p, "plan.json");
  REQUIRE(s.ok());
  const auto& r = s->config;
  CHECK(s->devices == 8);
  CHECK(r.devices() == 8);
  CHECK((r.dp == 2 && r.tp == 2 && r.pp == 2 && r.cp == 1 && r.vp == 2));
  CHECK(r.schedule == sim::Schedule::interleaved);
  CHECK(r.zero == 1);
  CHECK(r.optimizer == cost::Optimizer::sgd_momentum);
  CHECK(r.framework == estimate::Framework::deepspeed);
  CHECK(r.optimizer_state_bytes == 2);
  CHECK(r.master_weights == cost::MasterWeights::remainder);
  CHECK((r.micro_batch == 1 && r.global_batch == 8));
  // pp x vp = 4 chunks of one layer each, in the plan's own cut.
  CHECK(r.layers_per_chunk == std::vector<int>{1, 1, 1, 1});
  // fp8 is recorded as bf16 with fp8 matmuls, and read back as fp8.
  CHECK(p.training.precision == "bf16");
  CHECK(s->precision == "fp8");
  CHECK(s->recompute == "selective");
  CHECK(s->profile == "a100");
  CHECK(s->gpus_per_node == 4);
  CHECK(!s->inter_node_GBps);
  // Every op of the model is placed, once.
  CHECK(s->ops.size() == g.ops().size());
  CHECK(planning::check_plan_ops(*s, "plan.json", "gpt.onnx", g).ok());
}

TEST_CASE("planning: a plan for another model is refused naming the op", "[planning]") {
  const auto c = config_for(1, 1, 1, 2);
  const plan::Plan p = plan_of(small_gpt(2), c, "bf16");
  auto s = planning::plan_settings(p, "plan.json");
  REQUIRE(s.ok());
  // The same model with one more layer: every plan op exists, one is missing.
  const auto bigger = small_gpt(3);
  auto st = planning::check_plan_ops(*s, "plan.json", "gpt3.onnx", bigger);
  REQUIRE(!st.ok());
  CHECK(st.error().message == "plan.json: layout.chunks: the plan places " + std::to_string(s->ops.size()) +
                                  " ops, gpt3.onnx has " + std::to_string(bigger.ops().size()));
  // A model without those ops: the first unknown name.
  auto mlp_g = mlp(8, 16, 32, 4);
  auto st2 = planning::check_plan_ops(*s, "plan.json", "mlp.onnx", mlp_g);
  REQUIRE(!st2.ok());
  CHECK(st2.error().message.starts_with("plan.json: layout.chunks[0].ops[0]: '"));
  CHECK(st2.error().message.ends_with("' is not an op of mlp.onnx (a plan for another model, or edited by hand?)"));
}

TEST_CASE("planning: malformed cluster overrides name the field", "[planning]") {
  plan::Plan p = plan_of(small_gpt(2), config_for(1, 1, 1, 2), "bf16");
  const std::pair<const char*, const char*> bad[] = {
      {"gpus_per_node=x", "cannot read 'gpus_per_node=x'"},
      {"inter_node_GBps=0", "'inter_node_GBps=0' must be positive"},
      {"oversubscription=2", "nodes_per_leaf and oversubscription go together"},
      {"nodes_per_leaf=8, oversubscription=0.5", "'oversubscription=0.5' must be at least 1"},
  };
  for (const auto& [overrides, message] : bad) {
    p.cluster.overrides = overrides;
    auto s = planning::plan_settings(p, "plan.json");
    REQUIRE(!s.ok());
    CHECK(s.error().message == std::string("plan.json: cluster.overrides: ") + message);
  }
  p.cluster.overrides = "gpus_per_node=4, nodes_per_leaf=8, oversubscription=2";
  auto s = planning::plan_settings(p, "plan.json");
  REQUIRE(s.ok());
  CHECK(s->gpus_per_node == 4);
  CHECK(s->nodes_per_leaf == 8);
  CHECK(s->oversubscription == 2.0);
}

TEST_CASE("planning: the plan's schedule and timeline are the estimate's own", "[planning]") {
  // gpt with 4 layers on pp=2, 4 micro-batches, 1F1B: rank 0 runs
  // F0 F1 B0 F2 B1 F3 B2 B3 (warm-up of p - r = 2 forwards), as the
  // estimate's simulation ran it, and the timeline ends at its step.
  const auto c = config_for(1, 1, 2, 4);
  const auto g = small_gpt(4);
  const plan::Plan p = plan_of(g, c, "bf16");
  REQUIRE(p.layout.schedule_steps.size() == 2);
  std::string rank0;
  for (const auto& s : p.layout.schedule_steps[0]) rank0 += fmt::format("{}{} ", s.kind, s.micro_batch);
  CHECK(rank0 == "F0 F1 B0 F2 B1 F3 B2 B3 ");
  REQUIRE(p.prediction.timeline.size() == 2);
  double end = 0;
  for (const auto& st : p.prediction.timeline)
    for (const auto& sp : st.spans) end = std::max(end, sp.end_s);
  CHECK(end == p.prediction.step_time_s);

  // An estimate made without its timeline makes no plan.
  const FakeCostModel model;
  auto e = estimate::estimate(g, model, c);
  REQUIRE(e.ok());
  planning::PlanSources src{"estimate", "gpt.onnx", "00", {}, {"a100", "0123456789abcdef", ""}, "bf16", "none", "flash"};
  auto none = planning::build_plan(*e, src);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message == "internal: the estimate was made without its timeline (EstimateOptions::timeline)");
}
