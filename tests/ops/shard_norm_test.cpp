// Sharding of norms, softmax and reductions (src/ops/shard_norm.cpp).
#include <catch2/catch.hpp>

#include <algorithm>

#include "ops/builder.hpp"
#include "ops/shard_helpers.hpp"
#include "planner/ops/sharding.hpp"

using namespace planner;
using namespace planner::ops;
using planner::ops::testing::Builder;
using namespace planner::ops::testing;


TEST_CASE("LayerNorm splits rows freely and its hidden dim at a statistics price", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 16, 64}).param("g", {64}).param("beta", {64}).act("y", {2, 16, 64});
  const auto id = b.op("LayerNormalization", {"x", "g", "beta"}, {"y"}, {{"axis", testing::i64(-1)}});
  // Default roles: dp on the batch; tp neither on the sequence (no sequence
  // parallelism) nor on the hidden dim.
  CHECK(shard(b, id, "mesh(dp=2,tp=4)").assignments() == std::vector<std::string>{"", "dp:d0"});
  ShardingOptions sp;
  sp.sequence_parallel = true;
  const auto s = shard(b, id, "mesh(dp=2,tp=4)", sp);
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:d1", "dp:d0", "dp:d0 tp:d1"});
  CHECK(s.text(s.by("tp:d1").outputs[0]) == "[-,tp,-]");
  CHECK(s.text(s.by("tp:d1").input_grads[1]) == "[-]partial(tp)");  // Megatron-SP's LN grad all-reduce
  CHECK(s.by("tp:d1").forward_comm.empty());
  // Any role: the hidden split all-reduces 2 fp32 statistics per row, rows
  // = 2*16 = 32: 256 B forward and 256 B backward.
  const auto a = shard(b, id, "mesh(tp=4)", any_role(1));
  const auto& h = a.by("tp:d2");
  CHECK(a.text(h.outputs[0]) == "[-,-,tp]");
  REQUIRE(h.forward_comm.size() == 1);
  CHECK(h.forward_comm[0].kind == core::Collective::all_reduce);
  CHECK(h.forward_comm[0].bytes.value == 256.0);
  REQUIRE(h.backward_comm.size() == 1);
  CHECK(h.backward_comm[0].bytes.value == 256.0);
  // With the batch split too, each device reduces half the rows.
  const auto two = shard(b, id, "mesh(dp=2,tp=4)", any_role(2));
  CHECK(two.by("dp:d0 tp:d2").forward_comm.at(0).bytes.value == 128.0);
}

TEST_CASE("Softmax splits its axis with max/sum all-reduces", "[ops][sharding]") {
  Builder b;
  b.input("x", {4, 8, 8}).act("y", {4, 8, 8});
  const auto id = b.op("Softmax", {"x"}, {"y"}, {{"axis", testing::i64(-1)}});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  const auto& ax = s.by("tp:d2");
  // 4*8 rows: forward max and sum (2 x 32 x 4 B), backward sum(dy*y) (32 x 4 B).
  CHECK(ax.forward_comm.at(0).bytes.value == 256.0);
  CHECK(ax.backward_comm.at(0).bytes.value == 128.0);
  CHECK(s.by("tp:d0").forward_comm.empty());
}

TEST_CASE("linear reductions may split the reduced dim, others may not", "[ops][sharding]") {
  Builder b;
  b.input("x", {4, 8}).act("s", {4, 1}).act("m", {4, 1}).act("n", {4});
  const auto sum = b.op("ReduceSum", {"x"}, {"s"}, {{"keepdims", testing::i64(1)}});
  const auto max = b.op("ReduceMax", {"x"}, {"m"}, {{"keepdims", testing::i64(1)}});
  const auto mean = b.op("ReduceMean", {"x"}, {"n"}, {{"keepdims", testing::i64(0)}, {"axes", testing::ints({1})}});
  const auto s = shard(b, sum, "mesh(tp=2)", any_role(1));
  CHECK(s.text(s.by("tp:d1").outputs[0]) == "[-,-]partial(tp)");
  CHECK(shard(b, max, "mesh(tp=2)", any_role(1)).assignments() == std::vector<std::string>{"", "tp:d0"});
  const auto m = shard(b, mean, "mesh(tp=2)", any_role(1));
  CHECK(m.text(m.by("tp:d1").outputs[0]) == "[-]partial(tp)");
  CHECK(m.text(m.by("tp:d0").outputs[0]) == "[tp]");
}

TEST_CASE("ReduceSum reads its axes from a constant input (opset 13)", "[ops][sharding]") {
  // Wide & Deep's wide part: [B=4, F=4, 1] summed over the fields (axis 1),
  // keepdims 0 -> [4, 1]. The batch keeps its split; the fields may split
  // with a partial output (the partial sums add up).
  Builder b;
  b.input("x", {4, 4, 1});
  graph::Tensor axes;
  axes.name = "axes";
  axes.shape = {1};
  axes.role = TensorRole::constant;
  axes.dtype = DType::i64;
  axes.values = graph::ConstantValues{};
  axes.values->ints = {1};
  b.g.add_tensor(std::move(axes));
  b.act("y", {4, 1});
  const auto id = b.op("ReduceSum", {"x", "axes"}, {"y"}, {{"keepdims", testing::i64(0)}});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  CHECK(s.text(s.by("tp:d0").outputs[0]) == "[tp,-]");
  CHECK(s.text(s.by("tp:d1").outputs[0]) == "[-,-]partial(tp)");
}

TEST_CASE("BatchNorm splits channels freely and the batch as synchronised BN", "[ops][sharding]") {
  Builder b;
  b.input("x", {8, 4, 6, 6}).param("sc", {4}).param("bi", {4}).constant("mu", {4}).constant("var", {4});
  b.act("y", {8, 4, 6, 6});
  const auto id = b.op("BatchNormalization", {"x", "sc", "bi", "mu", "var"}, {"y"});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:n", "tp:c"});
  // Per-channel statistics: 2 x 4 channels x 4 B.
  CHECK(s.by("tp:n").forward_comm.at(0).bytes.value == 32.0);
  CHECK(s.text(s.by("tp:c").inputs[1]) == "[tp]");
  CHECK(s.by("tp:c").forward_comm.empty());
}
