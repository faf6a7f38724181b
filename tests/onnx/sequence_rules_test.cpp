// Shape rules of the sequence ops (src/onnx/rules_sequence.cpp), as torch
// 1.13 exports repeat_interleave: SplitToSequence with constant split sizes,
// SequenceAt with constant positions, then Expand/Reshape/Concat.
#include <catch2/catch.hpp>

#include "onnx/model_builder.hpp"
#include "planner/graph/graph.hpp"

using namespace planner;
using namespace planner::testing;
namespace importer = planner::onnx;

namespace {

using Shape = std::vector<std::int64_t>;

Shape shape_of(const importer::ImportedModel& m, const std::string& name) {
  auto id = m.graph.find_tensor(name);
  REQUIRE(id.has_value());
  return m.graph.tensor(*id).shape;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("sequence ops: split, pick, count and concatenate", "[onnx][sequence]") {
  // x [2, 4, 6] split along axis 1 into sizes [1, 1, 2] (constant), element 2
  // is [2, 2, 6]; without split sizes and keepdims=0: 4 elements of [2, 6],
  // stacked back on a new axis 1 -> [2, 4, 6]; a scalar split 3 on a length
  // 4 gives [3, 1], concatenated back to [2, 4, 6].
  ModelBuilder m(14);
  m.input("x", kF32, {2, 4, 6});
  m.init_i64("sizes", {3}, {1, 1, 2}).init_i64("two", {1}, {2}).init_i64("three", {}, {3});
  m.init_i64("minus1", {}, {-1});
  m.node("SplitToSequence", {"x", "sizes"}, {"seq"}).attr("axis", 1);
  m.node("SequenceAt", {"seq", "two"}, {"e2"});
  m.node("SequenceAt", {"seq", "minus1"}, {"last"});
  m.node("SequenceLength", {"seq"}, {"len"});
  m.node("ConcatFromSequence", {"seq"}, {"cat"}).attr("axis", 1);
  m.node("SplitToSequence", {"x"}, {"ones"}).attr("axis", 1).attr("keepdims", 0);
  m.node("SequenceAt", {"ones", "two"}, {"one"});
  m.node("ConcatFromSequence", {"ones"}, {"stacked"}).attr("axis", 1).attr("new_axis", 1);
  m.node("SplitToSequence", {"x", "three"}, {"chunks"}).attr("axis", 1);
  m.node("SequenceAt", {"chunks", "minus1"}, {"tail"});
  m.node("ConcatFromSequence", {"chunks"}, {"rejoined"}).attr("axis", -2);
  m.output("e2").output("last").output("len").output("cat").output("one").output("stacked").output("tail");
  m.output("rejoined");
  auto r = import_model(m);
  if (!r.ok()) FAIL(r.error().message);
  CHECK(shape_of(*r, "e2") == Shape{2, 2, 6});
  CHECK(shape_of(*r, "last") == Shape{2, 2, 6});
  CHECK(shape_of(*r, "len") == Shape{});
  CHECK(shape_of(*r, "cat") == Shape{2, 4, 6});
  CHECK(shape_of(*r, "one") == Shape{2, 6});
  CHECK(shape_of(*r, "stacked") == Shape{2, 4, 6});
  CHECK(shape_of(*r, "tail") == Shape{2, 1, 6});
  CHECK(shape_of(*r, "rejoined") == Shape{2, 4, 6});
  // The sequences themselves: 4 equal elements stacked, [4, 2, 6]; unequal
  // ones flattened: 2*1*6 + 2*1*6 + 2*2*6 = 48 elements.
  CHECK(shape_of(*r, "ones") == Shape{4, 2, 6});
  CHECK(shape_of(*r, "seq") == Shape{48});
}

TEST_CASE("sequence ops: construct, insert, erase", "[onnx][sequence]") {
  ModelBuilder m(14);
  m.input("a", kF32, {2, 3}).input("b", kF32, {5, 3});
  m.init_i64("zero", {}, {0});
  m.node("SequenceConstruct", {"a", "b"}, {"s"});
  m.node("SequenceInsert", {"s", "b", "zero"}, {"s2"});  // b, a, b
  m.node("SequenceErase", {"s2"}, {"s3"});               // b, a
  m.node("SequenceAt", {"s3", "zero"}, {"first"});
  m.node("ConcatFromSequence", {"s3"}, {"cat"}).attr("axis", 0);
  m.node("SequenceEmpty", {}, {"e"});
  m.node("SequenceInsert", {"e", "a"}, {"e1"});
  m.node("SequenceLength", {"e1"}, {"n"});
  m.output("first").output("cat").output("n");
  auto r = import_model(m);
  if (!r.ok()) FAIL(r.error().message);
  CHECK(shape_of(*r, "first") == Shape{5, 3});
  CHECK(shape_of(*r, "cat") == Shape{7, 3});
  CHECK(shape_of(*r, "n") == Shape{});
}

TEST_CASE("sequence ops: inconsistent nodes are one-line errors naming the op", "[onnx][sequence]") {
  SECTION("split sizes that do not sum to the axis") {
    ModelBuilder m(14);
    m.input("x", kF32, {2, 4});
    m.init_i64("sizes", {2}, {1, 2});
    m.node("SplitToSequence", {"x", "sizes"}, {"seq"}).attr("axis", 1);
    m.node("ConcatFromSequence", {"seq"}, {"y"}).attr("axis", 1);
    m.output("y");
    auto r = import_model(m);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "(SplitToSequence)"));
    CHECK(contains(r.error().message, "split sizes sum to 3, not the axis length 4"));
    CHECK(r.error().message.find('\n') == std::string::npos);
  }
  SECTION("a position outside the sequence") {
    ModelBuilder m(14);
    m.input("x", kF32, {2, 4});
    m.init_i64("pos", {}, {4});
    m.node("SplitToSequence", {"x"}, {"seq"}).attr("axis", 1);
    m.node("SequenceAt", {"seq", "pos"}, {"y"});
    m.output("y");
    auto r = import_model(m);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "(SequenceAt)"));
    CHECK(contains(r.error().message, "position 4 outside a sequence of 4"));
  }
}

TEST_CASE("sequence ops: a Loop carrying a sequence, as torch exports repeat_interleave", "[onnx][sequence]") {
  // x [2, 2, 3, 4] (batch, 2 kv heads, seq 3, head dim 4), each head repeated
  // 3 times: SplitToSequence with constant sizes [1, 1] -> a Loop of 2
  // iterations picking piece i (SequenceAt at the iteration number), [2,1,3,4]
  // -> Unsqueeze [2,1,1,3,4] -> Expand [2,1,3,3,4] -> Reshape [2,3,3,4] ->
  // SequenceInsert -> ConcatFromSequence on axis 1: [2, 6, 3, 4].
  GraphBuilder body;
  body.input("i", kI64, {}).input("cond_in", kBool, {}).input("acc", kF32, {});
  body.init_i64("ax2", {1}, {2}).init_i64("reps", {5}, {1, 1, 3, 1, 1}).init_i64("merged", {4}, {2, 3, 3, 4});
  body.node("SequenceAt", {"pieces", "i"}, {"piece"});
  body.node("Unsqueeze", {"piece", "ax2"}, {"u"});
  body.node("Expand", {"u", "reps"}, {"e"});
  body.node("Reshape", {"e", "merged"}, {"r"});
  body.node("SequenceInsert", {"acc", "r"}, {"acc_out"});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.output("cond_out").output("acc_out");

  ModelBuilder m(14);
  m.input("x", kF32, {2, 2, 3, 4});
  m.init_i64("ones", {2}, {1, 1}).init_i64("trips", {}, {2});
  pb::TensorProto t;
  t.set_name("go");
  t.set_data_type(kBool);
  t.add_int32_data(1);
  m.init(t);
  m.node("SplitToSequence", {"x", "ones"}, {"pieces"}).attr("axis", 1);
  m.node("SequenceEmpty", {}, {"empty"});
  m.node("Loop", {"trips", "go", "empty"}, {"repeated"}, "loop").attr("body", body.proto());
  m.node("ConcatFromSequence", {"repeated"}, {"y"}).attr("axis", 1);
  m.output("y");
  auto r = import_model(m);
  if (!r.ok()) FAIL(r.error().message);
  CHECK(shape_of(*r, "y") == Shape{2, 6, 3, 4});
  CHECK(shape_of(*r, "repeated") == Shape{2, 2, 3, 3, 4});  // 2 elements of [2, 3, 3, 4], stacked

  // The trip count must be known to unroll a carried sequence.
  ModelBuilder u(14);
  u.input("x", kF32, {2, 2, 3, 4}).input("n", kI64, {});
  u.init_i64("ones", {2}, {1, 1});
  u.init(t);
  u.node("SplitToSequence", {"x", "ones"}, {"pieces"}).attr("axis", 1);
  u.node("SequenceEmpty", {}, {"empty"});
  u.node("Loop", {"n", "go", "empty"}, {"repeated"}, "loop").attr("body", body.proto());
  u.node("ConcatFromSequence", {"repeated"}, {"y"}).attr("axis", 1);
  u.output("y");
  auto ru = import_model(u);
  REQUIRE_FALSE(ru.ok());
  CHECK(contains(ru.error().message, "op 'loop' (Loop)"));
  CHECK(contains(ru.error().message, "a sequence is carried and the trip count is not a known constant"));
}
