// Data movement and embeddings. f32 = 4 bytes, i64 = 8 bytes.
#include <catch2/catch.hpp>

#include "ops/builder.hpp"

using namespace planner;
using namespace planner::ops::testing;

TEST_CASE("Gather of a parameter table is an embedding", "[ops][movement][embedding]") {
  Builder b;
  b.param("table", {100, 16}).input("ids", {2, 8}, DType::i64).act("y", {2, 8, 16});
  auto id = b.op("Gather", {"table", "ids"}, {"y"});
  CHECK(b.op_class(id) == graph::OpClass::embedding);
  // bytes: table 1600*4 = 6400, ids 16*8 = 128, Y 256*4 = 1024.
  // forward 0 FLOPs; reads ids 128 + gathered rows 1024 = 1152, writes 1024.
  // backward scatter-add into a dense zeroed table gradient: 256 adds;
  //   reads ids 128 + dY 1024 + touched gradient rows 1024 = 2176;
  //   writes zero-fill 6400 + updated rows 1024 = 7424.
  CHECK_COST(b.cost(id), 0, 256, 1152, 1024, 2176, 7424);
}

TEST_CASE("Gather through a Cast of a parameter is an embedding", "[ops][movement][embedding]") {
  Builder b;
  b.param("table", {100, 16}).act("t16", {100, 16}, DType::f16).input("ids", {2, 8}, DType::i64).act("y", {2, 8, 16}, DType::f16);
  b.op("Cast", {"table"}, {"t16"}, {{"to", i64(10)}});
  auto id = b.op("Gather", {"t16", "ids"}, {"y"});
  CHECK(b.op_class(id) == graph::OpClass::embedding);
}

TEST_CASE("Gather of constant data with constant indices is data movement without backward", "[ops][movement]") {
  Builder b;
  b.constant("data", {10, 4}).constant("idx", {3}, DType::i64).act("y", {3, 4});
  auto id = b.op("Gather", {"data", "idx"}, {"y"});
  CHECK(b.op_class(id) == graph::OpClass::data_movement);
  // reads idx 24 + rows 48 = 72, writes 48; nothing needs a gradient.
  CHECK_COST(b.cost(id), 0, 0, 72, 48, 0, 0);
}

TEST_CASE("Views are known and free", "[ops][movement]") {
  Builder b;
  b.act("x", {4, 8}).constant("shape", {2}, DType::i64).act("y", {8, 4}).act("z", {1, 8, 4});
  auto r = b.op("Reshape", {"x", "shape"}, {"y"});
  auto u = b.op("Unsqueeze", {"y"}, {"z"}, {{"axes", ints({0})}});
  for (auto id : {r, u}) {
    CHECK_COST(b.cost(id), 0, 0, 0, 0, 0, 0);
    CHECK(b.cost(id).known);
    CHECK(b.op_class(id) == graph::OpClass::data_movement);
  }
}

TEST_CASE("Transpose and Concat copy", "[ops][movement]") {
  Builder b;
  b.act("x", {4, 8}).param("p", {2, 8}).act("t", {8, 4}).act("c", {6, 8});
  auto t = b.op("Transpose", {"x"}, {"t"}, {{"perm", ints({1, 0})}});
  auto c = b.op("Concat", {"x", "p"}, {"c"}, {{"axis", i64(0)}});
  // Transpose: reads 128, writes 128; backward reads dY 128, writes dX 128.
  CHECK_COST(b.cost(t), 0, 0, 128, 128, 128, 128);
  // Concat: reads 128 + 64, writes 192; backward reads dY 192, writes dx 128 + dp 64.
  CHECK_COST(b.cost(c), 0, 0, 192, 192, 192, 192);
}

TEST_CASE("Slice reads only the selected region", "[ops][movement]") {
  Builder b;
  b.act("x", {4, 8}).constant("st", {1}, DType::i64).constant("en", {1}, DType::i64).act("y", {4, 2});
  auto id = b.op("Slice", {"x", "st", "en"}, {"y"});
  // forward reads Y's region 32 + starts 8 + ends 8 = 48, writes 32;
  // backward reads dY 32, writes the zero-padded dX 128.
  CHECK_COST(b.cost(id), 0, 0, 48, 32, 32, 128);
}

TEST_CASE("Expand's backward reduces to the input shape", "[ops][movement]") {
  Builder b;
  b.param("x", {1, 8}).constant("shape", {2}, DType::i64).act("y", {4, 8});
  auto id = b.op("Expand", {"x", "shape"}, {"y"});
  // forward reads 32 + 16, writes 128; backward sums dY: 32 adds, reads 128, writes 32.
  CHECK_COST(b.cost(id), 0, 32, 48, 128, 128, 32);
}
