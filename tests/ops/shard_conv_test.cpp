// Sharding of convolutions and pooling (src/ops/shard_conv.cpp).
#include <catch2/catch.hpp>

#include <algorithm>

#include "ops/builder.hpp"
#include "ops/shard_helpers.hpp"
#include "planner/ops/sharding.hpp"

using namespace planner;
using namespace planner::ops;
using planner::ops::testing::Builder;
using namespace planner::ops::testing;


TEST_CASE("Conv splits batch, output channels or input channels", "[ops][sharding]") {
  Builder b;
  b.input("x", {8, 16, 10, 10}).param("w", {32, 16, 3, 3}).param("c", {32}).act("y", {8, 32, 8, 8});
  const auto id = b.op("Conv", {"x", "w", "c"}, {"y"});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:n", "tp:oc", "tp:ic"});
  CHECK(s.text(s.by("tp:oc").inputs[1]) == "[tp,-,-,-]");
  CHECK(s.text(s.by("tp:oc").inputs[2]) == "[tp]");
  CHECK(s.text(s.by("tp:oc").input_grads[0]) == "[-,-,-,-]partial(tp)");
  CHECK(s.text(s.by("tp:ic").outputs[0]) == "[-,-,-,-]partial(tp)");
  CHECK(s.text(s.by("tp:n").input_grads[1]) == "[-,-,-,-]partial(tp)");
  CHECK(s.by("tp:ic").name == "((1,2,1,1),(1,2,1,1),(1,))");
}

TEST_CASE("a depthwise Conv splits its channels without communication", "[ops][sharding]") {
  Builder b;
  b.input("x", {8, 16, 10, 10}).param("w", {16, 1, 3, 3}).act("y", {8, 16, 8, 8});
  const auto id = b.op("Conv", {"x", "w"}, {"y"}, {{"group", testing::i64(16)}});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:n", "tp:c"});
  CHECK(s.text(s.by("tp:c").outputs[0]) == "[-,tp,-,-]");
  CHECK(s.text(s.by("tp:c").input_grads[0]) == "[-,tp,-,-]");
}

TEST_CASE("pooling splits batch and channels, never space", "[ops][sharding]") {
  Builder b;
  b.input("x", {8, 16, 10, 10}).act("y", {8, 16, 5, 5});
  const auto id = b.op("MaxPool", {"x"}, {"y"}, {{"kernel_shape", testing::ints({2, 2})}});
  CHECK(shard(b, id, "mesh(tp=2)", any_role(1)).assignments() == std::vector<std::string>{"", "tp:n", "tp:c"});
}
