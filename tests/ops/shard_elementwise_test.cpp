// Sharding of elementwise ops (src/ops/shard_elementwise.cpp): broadcasting,
// and the dim kinds that decide which axis may split which letter.
#include <catch2/catch.hpp>

#include <algorithm>

#include "ops/builder.hpp"
#include "ops/shard_helpers.hpp"
#include "planner/ops/sharding.hpp"

using namespace planner;
using namespace planner::ops;
using planner::ops::testing::Builder;
using namespace planner::ops::testing;


TEST_CASE("a bias Add follows its input and syncs the bias gradient", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 16, 64}).param("w", {64, 32}).act("y", {2, 16, 32}).param("bias", {32}).act("z", {2, 16, 32});
  b.op("MatMul", {"x", "w"}, {"y"});
  const auto id = b.op("Add", {"y", "bias"}, {"z"});
  const auto s = shard(b, id, "mesh(dp=2,tp=4)");
  // y's last dim is inner (a weight's columns): tp may split it.
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:d2", "dp:d0", "dp:d0 tp:d2"});
  const auto& both = s.by("dp:d0 tp:d2");
  CHECK(both.name == "((2,1,4),(4,))");
  CHECK(s.text(both.inputs[1]) == "[tp]");
  CHECK(s.text(both.input_grads[1]) == "[tp]partial(dp)");  // dBias sums over the batch
  CHECK(s.text(both.input_grads[0]) == "[dp,-,tp]");
  CHECK(s.text(both.outputs[0]) == "[dp,-,tp]");
}

TEST_CASE("size-1 broadcast dims are never split", "[ops][sharding]") {
  Builder b;
  b.input("a", {4, 1, 8}).input("c", {4, 6, 8}).act("y", {4, 6, 8});
  const auto id = b.op("Mul", {"a", "c"}, {"y"});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:d0", "tp:d1", "tp:d2"});
  const auto& mid = s.by("tp:d1");
  CHECK(s.text(mid.inputs[0]) == "[-,-,-]");
  CHECK(s.text(mid.inputs[1]) == "[-,tp,-]");
  CHECK(s.text(mid.input_grads[0]) == "[-,-,-]partial(tp)");  // summed over the broadcast dim
}

TEST_CASE("elementwise ops whose outputs are not the broadcast shape are replicated", "[ops][sharding]") {
  Builder b;
  b.input("x", {4, 8}).act("y", {4, 8}, core::DType::u8).act("scale", {}).act("zp", {}, core::DType::u8);
  const auto id = b.op("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  CHECK(op_spec(b.g, id).family == "replicated");
  // Any other elementwise-class op without a row uses broadcasting.
  b.act("t", {4, 8});
  CHECK(op_spec(b.g, b.op("Tanh", {"x"}, {"t"})).family == "elementwise");
}

TEST_CASE("dim kinds: batch, sequence, the hidden residual stream, inner weight dims", "[ops][sharding]") {
  Builder b;
  b.input("ids", {2, 16}, core::DType::i64).param("table", {100, 64}).act("e", {2, 16, 64});
  b.param("w", {64, 256}).act("u", {2, 16, 256}).act("r", {2, 16, 64}).param("w2", {256, 64});
  b.act("o", {2, 16, 64}).act("x2", {2, 16, 64});
  b.op("Gather", {"table", "ids"}, {"e"});
  b.op("MatMul", {"e", "w"}, {"u"});
  b.op("MatMul", {"u", "w2"}, {"o"});
  b.op("Add", {"e", "o"}, {"x2"});
  const auto k = dim_kinds(b.g);
  auto of = [&](const char* n) { return k[b.g.find_tensor(n)->value]; };
  using K = DimKind;
  CHECK(of("ids") == std::vector<K>{K::batch, K::sequence});
  CHECK(of("e") == std::vector<K>{K::batch, K::sequence, K::hidden});   // the embedding's width
  CHECK(of("u") == std::vector<K>{K::batch, K::sequence, K::inner});    // the weight's columns
  CHECK(of("o") == std::vector<K>{K::batch, K::sequence, K::inner});
  CHECK(of("x2") == std::vector<K>{K::batch, K::sequence, K::hidden});  // the residual joins hidden
  CHECK(dim_kind_name(K::hidden) == "hidden");
  CHECK(ShardingOptions::role_from_name("dp") == AxisRole::data);
  CHECK(ShardingOptions::role_from_name("tp") == AxisRole::model);
  CHECK(ShardingOptions::role_from_name("cp") == AxisRole::sequence);
  CHECK(ShardingOptions::role_from_name("ep") == AxisRole::any);
}
