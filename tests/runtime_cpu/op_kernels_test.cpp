// The op layer on explicit tensors, as a sharded executor will call it.
#include <catch2/catch.hpp>

#include <limits>

#include "planner/runtime_cpu/op_kernels.hpp"
#include "planner/runtime_cpu/rng.hpp"
#include "planner/runtime_cpu/shape_ops.hpp"

using namespace planner;
using namespace planner::runtime_cpu;

namespace {

graph::Op make_op(std::string type, std::map<std::string, graph::AttrValue, std::less<>> attrs = {}) {
  graph::Op op;
  op.name = "test/" + type;
  op.type = std::move(type);
  op.attrs = std::move(attrs);
  return op;
}

}  // namespace

TEST_CASE("column-parallel MatMul on RNG shards equals the full product", "[runtime_cpu][ops]") {
  // x [2,3,4] @ W [4,6]; two ranks each hold W[:, 3r:3r+3], drawn alone from the seed.
  const Value x = normal_tensor(1, "x", {2, 3, 4}, 0.0f, 1.0f);
  const Value w = normal_tensor(1, "w", {4, 6}, 0.0f, 1.0f);
  const graph::Op mm = make_op("MatMul");
  auto full = forward_op(mm, {&x, &w}, {OutputSpec{{2, 3, 6}}});
  REQUIRE(full.ok());
  std::vector<Tensor> parts;
  for (std::int64_t r = 0; r < 2; ++r) {
    const Value shard = normal_slice(1, "w", {4, 6}, {0, 3 * r}, {4, 3}, 0.0f, 1.0f);
    auto y = forward_op(mm, {&x, &shard}, {OutputSpec{{2, 3, 3}}});
    REQUIRE(y.ok());
    parts.push_back(std::get<Tensor>((*y)[0]));
  }
  const Tensor joined = concat({&parts[0], &parts[1]}, 2);
  const Tensor& ref = std::get<Tensor>((*full)[0]);
  for (std::int64_t k = 0; k < ref.size(); ++k) CHECK(joined[k] == Approx(ref[k]).margin(1e-6));
}

TEST_CASE("Reshape takes the caller's shape, so a head shard reshapes to its own heads", "[runtime_cpu][ops]") {
  // Full: [2,4,8] -> [2,4,4,2] (4 heads of 2). A tp=2 shard [2,4,4] -> [2,4,2,2].
  const Value x = Tensor(Shape{2, 4, 4});
  auto y = forward_op(make_op("Reshape"), {&x, nullptr}, {OutputSpec{{2, 4, 2, 2}}});
  REQUIRE(y.ok());
  CHECK(value_shape((*y)[0]) == Shape{2, 4, 2, 2});
  auto bad = forward_op(make_op("Reshape"), {&x, nullptr}, {OutputSpec{{2, 4, 3}}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "op 'test/Reshape' (Reshape): cannot reshape [2,4,4] to [2,4,3]");
}

TEST_CASE("the op layer names the op and the problem", "[runtime_cpu][ops]") {
  const Value a = Tensor(Shape{2, 3}), b = Tensor(Shape{4, 2});
  auto mm = forward_op(make_op("MatMul"), {&a, &b}, {OutputSpec{{2, 2}}});
  REQUIRE_FALSE(mm.ok());
  CHECK(mm.error().message ==
        "op 'test/MatMul' (MatMul): cannot multiply [2,3] by [4,2] (both operands need rank >= 2)");
  auto conv = forward_op(make_op("Conv"), {&a}, {OutputSpec{{2, 3}}});
  REQUIRE_FALSE(conv.ok());
  CHECK(conv.error().message == "op 'test/Conv' (Conv): no CPU kernel for this op type");
  // A wrong output shape asked of a kernel is refused, not written past.
  auto add = forward_op(make_op("Add"), {&a, &a}, {OutputSpec{{3, 2}}});
  REQUIRE_FALSE(add.ok());
  CHECK(add.error().message == "op 'test/Add' (Add): computes shape [2,3] but the output is [3,2]");
}

TEST_CASE("Slice follows ONNX clamping and its backward scatters", "[runtime_cpu][ops]") {
  // x = 0..9; starts -3, ends INT64_MAX (clamped to 10): elements 7, 8, 9.
  const Value x = Tensor(Shape{10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Value starts = IndexTensor{{1}, {-3}}, ends = IndexTensor{{1}, {std::numeric_limits<std::int64_t>::max()}};
  const graph::Op sl = make_op("Slice");
  auto y = forward_op(sl, {&x, &starts, &ends}, {OutputSpec{{3}}});
  REQUIRE(y.ok());
  CHECK(std::get<Tensor>((*y)[0]).data == std::vector<float>{7, 8, 9});
  const Tensor dy(Shape{3}, {1, 2, 3});
  const Value& out = (*y)[0];
  auto g = backward_op(sl, {&x, &starts, &ends}, {&out}, {&dy}, {true, false, false});
  REQUIRE(g.ok());
  REQUIRE((*g)[0]);
  CHECK((*g)[0]->data == std::vector<float>{0, 0, 0, 0, 0, 0, 0, 1, 2, 3});
  CHECK_FALSE((*g)[1]);
}
