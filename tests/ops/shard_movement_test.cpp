// Sharding of data movement (src/ops/shard_movement.cpp): split dims mapped
// through reshapes, transposes, splits, concatenations and slices.
#include <catch2/catch.hpp>

#include <algorithm>

#include "ops/builder.hpp"
#include "ops/shard_helpers.hpp"
#include "planner/ops/sharding.hpp"

using namespace planner;
using namespace planner::ops;
using planner::ops::testing::Builder;
using namespace planner::ops::testing;


TEST_CASE("Reshape maps a hidden split onto heads", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 16, 64}).constant("shape", {4}, core::DType::i64).act("y", {2, 16, 4, 16});
  const auto id = b.op("Reshape", {"x", "shape"}, {"y"});
  const auto spec = op_spec(b.g, id);
  CHECK(spec.inputs[0].dims == std::vector<int>{0, 1, 2});
  CHECK(spec.outputs[0].dims == std::vector<int>{0, 1, 2, -1});  // d never split
  const auto s = shard(b, id, "mesh(tp=4)", any_role(1));
  CHECK(s.text(s.by("tp:g2").outputs[0]) == "[-,-,tp,-]");
  CHECK(s.by("tp:g2").name == "((1,1,4))");  // the shape argument is no tensor to MindSpore
}

TEST_CASE("Reshape merging batch and sequence keeps a batch split", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 16, 100}).constant("shape", {2}, core::DType::i64).act("y", {32, 100});
  const auto id = b.op("Reshape", {"x", "shape"}, {"y"});
  const auto s = shard(b, id, "mesh(dp=2)");
  CHECK(s.text(s.by("dp:g0").inputs[0]) == "[dp,-,-]");
  CHECK(s.text(s.by("dp:g0").outputs[0]) == "[dp,-]");
  // A sequence split alone is not contiguous in [b*s]: no letter for it.
  CHECK(op_spec(b.g, id).inputs[0].dims == std::vector<int>{0, -1, 1});
}

TEST_CASE("Transpose moves the split with its dim", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 16, 4, 8}).act("y", {2, 4, 16, 8});
  const auto id = b.op("Transpose", {"x"}, {"y"}, {{"perm", testing::ints({0, 2, 1, 3})}});
  const auto s = shard(b, id, "mesh(tp=4)", any_role(1));
  CHECK(s.text(s.by("tp:d2").inputs[0]) == "[-,-,tp,-]");
  CHECK(s.text(s.by("tp:d2").outputs[0]) == "[-,tp,-,-]");
}

TEST_CASE("Split may cut its axis only when the columns are a weight's", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 8, 16}).param("w", {16, 48}).act("qkv", {2, 8, 48}).constant("sizes", {3}, core::DType::i64);
  b.act("q", {2, 8, 16}).act("k", {2, 8, 16}).act("v", {2, 8, 16});
  b.input("raw", {2, 8, 48}).act("a", {2, 8, 16}).act("c", {2, 8, 16}).act("d", {2, 8, 16});
  b.op("MatMul", {"x", "w"}, {"qkv"});
  const auto fused = b.op("Split", {"qkv", "sizes"}, {"q", "k", "v"}, {{"axis", testing::i64(-1)}});
  const auto plain = b.op("Split", {"raw", "sizes"}, {"a", "c", "d"}, {{"axis", testing::i64(-1)}});
  const auto s = shard(b, fused, "mesh(tp=4)", any_role(1));
  CHECK(s.text(s.by("tp:d2").outputs[1]) == "[-,-,tp]");  // each of q, k, v split by heads
  CHECK_FALSE(shard(b, plain, "mesh(tp=4)", any_role(1)).has("tp:d2"));
}

TEST_CASE("Concat, Slice and Expand keep their other dims' letters", "[ops][sharding]") {
  Builder b;
  b.input("a", {8, 4}).input("c", {8, 6}).act("cat", {8, 10});
  const auto cat = b.op("Concat", {"a", "c"}, {"cat"}, {{"axis", testing::i64(1)}});
  CHECK(shard(b, cat, "mesh(tp=2)", any_role(1)).assignments() == std::vector<std::string>{"", "tp:d0"});
  b.constant("st", {1}, core::DType::i64).constant("en", {1}, core::DType::i64).act("sl", {8, 2});
  const auto sl = b.op("Slice", {"a", "st", "en"}, {"sl"});
  CHECK(shard(b, sl, "mesh(tp=2)", any_role(1)).assignments() == std::vector<std::string>{"", "tp:d0"});
  b.input("row", {1, 16}).constant("shape", {2}, core::DType::i64).act("big", {8, 16});
  const auto ex = b.op("Expand", {"row", "shape"}, {"big"});
  const auto s = shard(b, ex, "mesh(tp=2)", any_role(1));
  CHECK(s.text(s.by("tp:d0").inputs[0]) == "[-,-]");
  CHECK(s.text(s.by("tp:d0").input_grads[0]) == "[-,-]partial(tp)");  // dX sums the copies
  CHECK(s.text(s.by("tp:d0").outputs[0]) == "[tp,-]");
}
