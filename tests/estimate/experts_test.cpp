// Expert parallelism in estimate(): experts found by name, the all-to-all
// dispatch and combine, expert weights and gradients split over ep, against
// hand-computed totals with the fake cost model of estimate_fixtures.hpp
// (1 ms forward, 2 ms backward per op, collectives 1 s per GB without
// latency, optimizer streaming at 1e12 B/s, bf16 activations: 2 B).

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"
#include "planner/estimate/experts.hpp"

using namespace estimate_test;

namespace {

Approx rel(double v) { return Approx(v).epsilon(1e-12).margin(1e-15); }

// moe_mlp(B=4, h=8, f=16, E=4, classes=2): 1 + 12 + 3 + 2 = 18 ops;
// parameters pre 64 + experts 4 x (128 + 128) = 1,024 + head 16 = 1,104.
graph::OpGraph small_moe() { return moe_mlp(4, 8, 16, 4, 2); }

// dp = 4 (one node), micro-batch 4 (the graph's batch), m = 1, ZeRO 0.
estimate::ParallelConfig moe_config(int ep) {
  auto c = config_for(4, 1, 1, 1, 4);
  c.ep = ep;
  return c;
}

}  // namespace

TEST_CASE("expert_index: the experts.<n> path segment", "[estimate][experts]") {
  using estimate::expert_index;
  CHECK(expert_index("layers.3/moe/experts.5/fc1/MatMul") == 5);
  CHECK(expert_index("model.layers.0.block_sparse_moe.experts.7.w1") == 7);
  CHECK(expert_index("mlp/experts/12/MatMul") == 12);
  CHECK(expert_index("experts_3") == 3);
  CHECK_FALSE(expert_index("mlp/fc1/MatMul").has_value());
  CHECK_FALSE(expert_index("moe/experts/gate").has_value());    // no index
  CHECK_FALSE(expert_index("moe/experts.3x/fc1").has_value());  // not a number
  CHECK_FALSE(expert_index("mlp/shared_experts.0/fc1").has_value());  // DeepSeek's shared expert is dense
  CHECK_FALSE(expert_index("num_experts.2").has_value());
}

TEST_CASE("expert_batch: the experts' ops a rank runs as one kernel", "[estimate][experts]") {
  using estimate::expert_batch;
  using estimate::Framework;
  auto c = moe_config(4);
  c.framework = Framework::megatron;  // grouped GEMM over the local experts: all 8 steps as one
  CHECK(expert_batch(8, c) == 8);
  c.framework = Framework::deepspeed;  // a kernel per local expert over the 4 ranks' tokens
  CHECK(expert_batch(8, c) == 4);
  c.ep = 1;
  CHECK(expert_batch(8, c) == 1);  // the graph's own kernels
  c.framework = Framework::megatron;
  CHECK(expert_batch(0, c) == 1);  // no experts
}

TEST_CASE("count_experts: experts per layer and their parameters", "[estimate][experts]") {
  const auto c = estimate::count_experts(small_moe());
  CHECK(c.experts == 4);
  CHECK(c.parameters == 1024);  // 4 x (8*16 + 16*8)
  CHECK(estimate::count_experts(mlp(8, 16, 32, 4)).experts == 0);
}

TEST_CASE("estimate ep: all-to-all instead of replicated expert gradients", "[estimate][experts]") {
  const auto g = small_moe();
  REQUIRE(g.num_ops() == 18);
  // ep = 1: every rank keeps all 1,104 parameters. Compute 18 x 3 ms = 54 ms;
  // all-reduce of 1,104 x 4 B = 4,416 B over dp = 4 (exposed: far below
  // Megatron's 40M-parameter bucket) = 4.416e-6 s; Adam 1,104 x 38 B at
  // 1e12 B/s = 4.1952e-8 s.
  {
    const FakeCostModel fake;
    const auto e = run(g, fake, moe_config(1));
    CHECK(e.step_time.value == rel(0.054 + 4.416e-6 + 4.1952e-8));
    CHECK(calls_of(fake, core::Collective::all_to_all).empty());
    CHECK(e.stages[0].parameters == 1104);
  }
  // ep = 2: each rank keeps 2 of the 4 experts: 80 dense + 1,024 / 2 = 512
  // expert parameters = 592.
  //   all-to-all per micro-batch: dispatch = the experts' fc1 inputs, 4 x
  //   [4, 8] x 2 B = 256 B; combine = their fc2 outputs, 256 B; forward and
  //   backward: 2 x (256 + 256) B = 1.024e-6 s, on the critical path;
  //   gradients: dense 80 x 4 = 320 B over 4 ranks + expert 512 x 4 =
  //   2,048 B over dp/ep = 2 ranks = 2.368e-6 s;
  //   Adam 592 x 38 B = 2.2496e-8 s.
  const FakeCostModel fake;
  const auto e = run(g, fake, moe_config(2));
  CHECK(e.step_time.value == rel(0.054 + 1.024e-6 + 2.368e-6 + 2.2496e-8));
  CHECK(e.model_parallel.by_kind.at("all_to_all").value == rel(1.024e-6));
  CHECK(e.dp_total.value == rel(2.368e-6));
  CHECK(e.optimizer.value == rel(2.2496e-8));
  CHECK(e.stages[0].parameters == 592);
  // Weights, fp32 main gradients and Adam states: 592 x (2 + 4 + 12) B.
  const auto& m = e.stages[0].breakdown;
  CHECK((m.weights + m.gradients + m.optimizer_states).value == rel(592.0 * 18));
  // Two all-to-alls (dispatch, combine) in the forward over the ep group of
  // 2 ranks on one node; two all-reduces: dense over 4, experts over 2.
  const auto a2a = calls_of(fake, core::Collective::all_to_all);
  REQUIRE(a2a.size() == 2);
  for (const auto& c : a2a) {
    CHECK(c.bytes.value == 256);
    CHECK(c.where.ranks == 2);
    CHECK(c.where.ranks_per_node == 2);
  }
  const auto ar = calls_of(fake, core::Collective::all_reduce);
  REQUIRE(ar.size() == 2);
  CHECK(ar[0].bytes.value == 320);
  CHECK(ar[0].where.ranks == 4);
  CHECK(ar[1].bytes.value == 2048);
  CHECK(ar[1].where.ranks == 2);
  CHECK(breakdown_sum(e) == rel(e.step_time.value));
}

TEST_CASE("estimate ep: the distributed optimizer shards expert states over dp/ep", "[estimate][experts]") {
  const auto g = small_moe();
  auto c = moe_config(4);
  c.distributed_optimizer = true;
  const FakeCostModel fake;
  const auto e = run(g, fake, c);
  // ep = 4: one expert per rank, 80 + 256 = 336 local parameters. The
  // experts' states shard over dp/ep = 1 rank (not sharded): 256 x (2 + 4 +
  // 12) B; the dense ones over 4: 80 x (2 + 4 + 12/4) B.
  const auto& m = e.stages[0].breakdown;
  CHECK((m.weights + m.gradients + m.optimizer_states).value == rel(256.0 * 18 + 80.0 * 9));
  // Dense: reduce-scatter 80 x 4 = 320 B and all-gather 80 x 2 = 160 B over
  // 4 ranks; experts: over 1 rank, nothing. Adam: (80/4 + 256/1) x 38 B.
  CHECK(e.dp_total.value == rel(480e-9));
  CHECK(e.optimizer.value == rel(276.0 * 38 / 1e12));
  // bf16 states without a master copy stream 4 (weight r/w) + 2 x 2 x 2
  // (m, v r/w) + 12 (gradient) = 24 B per parameter; with 16-bit master
  // remainders and fp32 states 8 + 16 + 12 = 36 B.
  c.optimizer_state_bytes = 2;
  c.master_weights = cost::MasterWeights::none;
  CHECK(run(g, fake, c).optimizer.value == rel(276.0 * 24 / 1e12));
  c.optimizer_state_bytes = 4;
  c.master_weights = cost::MasterWeights::remainder;
  CHECK(run(g, fake, c).optimizer.value == rel(276.0 * 36 / 1e12));
}

TEST_CASE("estimate ep: full recompute repeats the forward all-to-alls", "[estimate][experts]") {
  const auto g = small_moe();
  const FakeCostModel fake(cost::RecomputePolicy::full);
  const auto e = run(g, fake, moe_config(2));
  // Forward 512 B, backward 512 B, recomputed forward 512 B.
  CHECK(e.model_parallel.by_kind.at("all_to_all").value == rel(1.536e-6));
}

TEST_CASE("estimate ep: errors and notes", "[estimate][experts]") {
  const auto g = small_moe();
  const FakeCostModel fake;
  // dp = 3: ep = 3 divides dp but not the 4 experts.
  auto c = config_for(3, 1, 1, 1, 4);
  c.ep = 3;
  auto r = estimate::estimate(g, fake, c);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "`ep` 3 does not divide the 4 experts per MoE layer");
  // A model without experts: ep changes nothing, and says so.
  const auto dense = mlp(4, 16, 32, 4);
  auto d = config_for(2, 1, 1, 1, 4);
  const auto e1 = run(dense, fake, d);
  d.ep = 2;
  const auto e2 = run(dense, fake, d);
  CHECK(e2.step_time.value == e1.step_time.value);
  REQUIRE_FALSE(e2.notes.empty());
  CHECK(e2.notes.back().find("no experts") != std::string::npos);
}
