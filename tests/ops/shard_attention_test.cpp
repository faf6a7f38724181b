// Sharding of attention (src/ops/shard_attention.cpp): the fused pattern and
// the com.microsoft ops.
#include "planner/graph/analysis.hpp"
#include <catch2/catch.hpp>

#include <algorithm>

#include "ops/builder.hpp"
#include "ops/shard_helpers.hpp"
#include "planner/ops/sharding.hpp"

using namespace planner;
using namespace planner::ops;
using planner::ops::testing::Builder;
using namespace planner::ops::testing;


TEST_CASE("a fused attention pattern splits batch, heads or queries", "[ops][sharding]") {
  Builder b;
  b.input("q", {2, 4, 16, 8}).input("kt", {2, 4, 8, 16}).input("v", {2, 4, 16, 8}).constant("scale", {});
  b.constant("mask", {16, 16}).act("s", {2, 4, 16, 16}).act("s2", {2, 4, 16, 16}).act("s3", {2, 4, 16, 16});
  b.act("p", {2, 4, 16, 16}).act("ctx", {2, 4, 16, 8});
  b.op("MatMul", {"q", "kt"}, {"s"});
  b.op("Mul", {"s", "scale"}, {"s2"});
  b.op("Add", {"s2", "mask"}, {"s3"});
  b.op("Softmax", {"s3"}, {"p"}, {{"axis", testing::i64(-1)}});
  b.op("MatMul", {"p", "v"}, {"ctx"});
  graph::find_attention(b.g);
  REQUIRE(b.g.fused.size() == 1);
  auto spec = pattern_spec(b.g, b.g.fused[0]);
  REQUIRE(spec);
  CHECK(spec->family == "attention");
  CHECK(spec->ops.size() == 5);
  REQUIRE(spec->inputs.size() == 5);  // q, kt, v, then the scale and the mask
  REQUIRE(spec->outputs.size() == 1);
  auto m = layout::DeviceMesh::parse("mesh(tp=4)").value();
  const Sharded s{m, enumerate_strategies(*spec, b.g, m, any_role(1), dim_kinds(b.g))};
  // sk, d and dv are never split.
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:n", "tp:sq"});
  const auto& heads = s.by("tp:n");
  CHECK(s.text(heads.inputs[0]) == "[-,tp,-,-]");
  CHECK(s.text(heads.inputs[1]) == "[-,tp,-,-]");
  CHECK(s.text(heads.inputs[4]) == "[-,-]");
  CHECK(s.text(heads.outputs[0]) == "[-,tp,-,-]");
  // Query split: k and v whole (gathered on their edges), their gradients
  // partial (every query shard contributes).
  const auto& cp = s.by("tp:sq");
  CHECK(s.text(cp.inputs[0]) == "[-,-,tp,-]");
  CHECK(s.text(cp.inputs[1]) == "[-,-,-,-]");
  CHECK(s.text(cp.input_grads[1]) == "[-,-,-,-]partial(tp)");
  CHECK(s.text(cp.input_grads[2]) == "[-,-,-,-]partial(tp)");
  CHECK(s.text(cp.inputs[4]) == "[tp,-]");  // the mask's query rows
  CHECK(s.text(cp.outputs[0]) == "[-,-,tp,-]");
}

TEST_CASE("com.microsoft Attention: heads split, or queries with its own k/v all-gather", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 16, 64}).param("w", {64, 192}).param("bias", {192}).act("y", {2, 16, 64});
  const auto id = b.op("Attention", {"x", "w", "bias"}, {"y"}, {{"num_heads", testing::i64(4)}}, "com.microsoft");
  const auto s = shard(b, id, "mesh(tp=4)", any_role(1));
  // A batch of 2 does not divide by 4; hin is never split.
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:s", "tp:n"});
  const auto& heads = s.by("tp:n");
  CHECK(s.text(heads.inputs[1]) == "[-,tp]");
  CHECK(s.text(heads.inputs[2]) == "[tp]");
  CHECK(s.text(heads.outputs[0]) == "[-,-,tp]");
  // Query split: k and v (2 x 2*16*64 f32 = 16384 B) gathered forward,
  // their gradients reduce-scattered backward.
  const auto& cp = s.by("tp:s");
  REQUIRE(cp.forward_comm.size() == 1);
  CHECK(cp.forward_comm[0].kind == core::Collective::all_gather);
  CHECK(cp.forward_comm[0].bytes.value == 16384.0);
  CHECK(cp.backward_comm.at(0).kind == core::Collective::reduce_scatter);
  // 8 ranks cannot split 4 heads.
  CHECK_FALSE(shard(b, id, "mesh(tp=8)", any_role(1)).has("tp:n"));
}

TEST_CASE("com.microsoft MultiHeadAttention splits queries with k and v whole", "[ops][sharding]") {
  Builder b;
  b.input("q", {2, 16, 64}).input("k", {2, 16, 64}).input("v", {2, 16, 64}).act("y", {2, 16, 64});
  const auto id = b.op("MultiHeadAttention", {"q", "k", "v"}, {"y"}, {{"num_heads", testing::i64(4)}}, "com.microsoft");
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  const auto& cp = s.by("tp:sq");
  CHECK(s.text(cp.inputs[1]) == "[-,-,-]");
  CHECK(s.text(cp.input_grads[1]) == "[-,-,-]partial(tp)");
  CHECK(s.text(s.by("tp:n").inputs[2]) == "[-,-,tp]");
}
