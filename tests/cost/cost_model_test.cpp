// The CostModel interface: the profile-backed implementation answers as the
// free functions do, and code written against the interface takes any
// implementation (here a fake with round numbers).

#include <catch2/catch.hpp>

#include "cost/cost_helpers.hpp"
#include "planner/cluster/collective.hpp"

using namespace cost_test;
using cost::AttentionMode;
using cost::OpScaling;
using cost::RecomputePolicy;

namespace {

/// Every op: 1 ms forward, 2 ms backward; collectives 1 s per GB.
class FakeCostModel final : public cost::CostModel {
 public:
  cost::OpTime op_time(const graph::Op&, const graph::OpGraph&, const OpScaling& s) const override {
    cost::OpTime t;
    t.forward = Seconds(1e-3 * s.flops);
    t.backward = Seconds(2e-3 * s.flops);
    t.forward_kernels = t.backward_kernels = 1;
    return t;
  }
  Result<Seconds> collective(core::Collective, Bytes m, cluster::Placement) const override {
    return Seconds(m.value / 1e9);
  }
  cost::MemoryBreakdown memory(const graph::OpGraph&, const cost::MemorySetup&) const override { return {}; }
  Bytes device_memory() const override { return gib(16); }
  FlopsPerSecond peak() const override { return FlopsPerSecond(1e12); }
  const cost::ComputeContext& context() const override { return ctx_; }

 private:
  cost::ComputeContext ctx_ = cost::ComputeContext::create(profile("a100-sxm4-80gb").device, {}).value();
};

cost::ProfileCostModel model(RecomputePolicy r = RecomputePolicy::none, AttentionMode a = AttentionMode::flash) {
  auto m = cost::ProfileCostModel::create(profile("a100-sxm4-80gb"), cost::PrecisionPolicy{}, a, r);
  if (!m.ok()) FAIL(m.error().message);
  return std::move(m).value();
}

}  // namespace

TEST_CASE("code written against CostModel takes an injected fake", "[cost][model]") {
  GptShape m;
  const auto g = build_gpt(m);
  const FakeCostModel fake;
  const cost::CostModel& cm = fake;
  const auto t = cost::graph_time(cm, g);
  const double n = static_cast<double>(g.num_ops());
  CHECK(t.forward.value == Approx(1e-3 * n));
  CHECK(t.backward.value == Approx(2e-3 * n));
  CHECK(cm.collective(core::Collective::all_reduce, Bytes(2e9), {8, 8}).value().value == 2.0);
}

TEST_CASE("ProfileCostModel answers from its profile", "[cost][model]") {
  GptShape m;
  const auto g = build_gpt(m);
  const auto pm = model();
  const auto ctx = context("a100-sxm4-80gb");
  for (const auto& op : g.ops())
    CHECK(pm.op_time(op, g, OpScaling::whole()).total() == cost::time_of(op, g, OpScaling::whole(), ctx).total());
  // Collectives are the cluster module's: 1 GiB all-reduce over 8 GPUs of one node.
  const auto ar = pm.collective(core::Collective::all_reduce, gib(1), {8, 8});
  REQUIRE(ar.ok());
  const auto direct = cluster::collective_time(pm.profile(), core::Collective::all_reduce, gib(1), {8, 8});
  CHECK(ar.value() == direct.value().time);
  // A placement the cluster cannot hold is an error, not a number.
  CHECK_FALSE(pm.collective(core::Collective::all_reduce, gib(1), {8, 16}).ok());
  CHECK(pm.device_memory() == gib(79.21));
  CHECK(pm.peak().value == 312e12);
  cost::MemorySetup setup;
  CHECK(pm.memory(g, setup).total() == cost::memory(g, ctx, setup).total());
}

TEST_CASE("ProfileCostModel refuses a policy the device cannot run", "[cost][model]") {
  auto m = cost::ProfileCostModel::create(profile("v100-sxm2-32gb"), cost::PrecisionPolicy{});
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.error().message, Catch::Contains("bf16"));
}

TEST_CASE("recompute time: full re-runs every layer's forward, selective the attention core", "[cost][model]") {
  GptShape m;
  const auto g = build_gpt(m);
  // Full: recompute = the forward of every op inside a layer, none outside.
  const auto full = model(RecomputePolicy::full);
  Seconds layer_forward;
  for (const auto& op : g.ops()) {
    const auto t = full.op_time(op, g, OpScaling::whole());
    if (op.layer) layer_forward += t.forward;
    else CHECK(t.recompute.value == 0);
  }
  CHECK(cost::graph_time(full, g).recompute.value == Approx(layer_forward.value));
  CHECK(layer_forward.value > 0);
  // Selective with unfused attention: the ops of the two attention patterns.
  const auto sel = model(RecomputePolicy::selective, AttentionMode::unfused);
  Seconds core;
  for (const auto& p : g.fused)
    for (auto id : p.ops) core += sel.op_time(g.op(id), g, OpScaling::whole()).forward;
  CHECK(cost::graph_time(sel, g).recompute.value == Approx(core.value));
  // Selective with flash: the fused kernel's forward once more (Megatron-Core
  // checkpoints core attention), i.e. the attention patterns' flash forward.
  const auto sel_flash = model(RecomputePolicy::selective);
  Seconds flash_core;
  for (const auto& p : g.fused)
    for (auto id : p.ops) flash_core += sel_flash.op_time(g.op(id), g, OpScaling::whole()).forward;
  CHECK(flash_core.value > 0);
  CHECK(flash_core.value < core.value);  // the fused kernel beats the unfused ops
  CHECK(cost::graph_time(sel_flash, g).recompute.value == Approx(flash_core.value));
  // No recompute: none.
  CHECK(cost::graph_time(model(), g).recompute.value == 0);
}

TEST_CASE("hardware FLOPs of a GPT step follow the semantics, FlashAttention's count for attention", "[cost][model]") {
  GptShape m;
  const auto g = build_gpt(m);
  // Unfused: every op's own FLOPs, summed, equal the graph totals.
  const auto unfused = cost::graph_time(model(RecomputePolicy::none, AttentionMode::unfused), g);
  const auto totals = graph::totals(g);
  CHECK((unfused.forward_flops + unfused.backward_flops).value == Approx(totals.training_flops.value));
  // Flash: the attention core is 4 b a s^2 d forward (2 s^2 matmuls; causal
  // mask present in this GPT: halved) = 2 * 2 * 4 * 128^2 * 64 = 16,777,216 per layer.
  const auto flash = cost::graph_time(model(), g);
  double core_semantic = 0;
  for (const auto& p : g.fused)
    for (auto id : p.ops) core_semantic += g.op(id).cost.forward_flops.value;
  CHECK(flash.forward_flops.value == Approx(unfused.forward_flops.value - core_semantic + 2 * 16777216.0));
}
