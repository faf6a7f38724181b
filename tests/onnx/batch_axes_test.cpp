// Batch axes and static-batch rebinding (src/onnx/batch_axes.cpp) on small
// models built in code, written as a static-batch torch export writes them:
// every Reshape target and Expand shape a constant holding the batch.
#include <catch2/catch.hpp>

#include "onnx/model_builder.hpp"
#include "planner/graph/graph.hpp"

using namespace planner;
using namespace planner::testing;
namespace importer = planner::onnx;

namespace {

using Shape = std::vector<std::int64_t>;

const graph::Tensor& tensor_of(const importer::ImportedModel& m, const std::string& name) {
  auto id = m.graph.find_tensor(name);
  REQUIRE(id.has_value());
  return m.graph.tensor(*id);
}

Shape shape_of(const importer::ImportedModel& m, const std::string& name) { return tensor_of(m, name).shape; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

importer::ImportOptions at_batch(std::int64_t n) {
  importer::ImportOptions o;
  o.batch = n;
  return o;
}

}  // namespace

TEST_CASE("batch axes: nn.MultiheadAttention's batch-second head split and merge", "[onnx][batch]") {
  // x [8, 6, 16] (batch, seq, hidden; 4 heads of 4) -> transpose to [6, 8, 16]
  // (batch second) -> heads split into the batch axis, [6, 8*4, 4] -> heads
  // first, [32, 6, 4] -> back to [6, 32, 4] -> merged, [6, 8, 16] -> [8, 6, 16].
  ModelBuilder m;
  m.input("x", kF32, {8, 6, 16});
  m.init_i64("split", {3}, {6, 32, 4}).init_i64("merge", {3}, {6, 8, 16});
  m.node("Transpose", {"x"}, {"t"}).attr("perm", {1, 0, 2});
  m.node("Reshape", {"t", "split"}, {"h"});
  m.node("Transpose", {"h"}, {"hf"}).attr("perm", {1, 0, 2});
  m.node("Softmax", {"hf"}, {"p"}).attr("axis", -1);
  m.node("Transpose", {"p"}, {"hb"}).attr("perm", {1, 0, 2});
  m.node("Reshape", {"hb", "merge"}, {"mg"});
  m.node("Transpose", {"mg"}, {"y"}).attr("perm", {1, 0, 2});
  m.output("y");

  auto r8 = import_model(m);
  REQUIRE(r8.ok());
  // The batch's axis: 0, 1 after the first transpose, 1 in [6, 32, 4] (8 x 4
  // heads, the batch outer), 0 with heads first, and back.
  CHECK(tensor_of(*r8, "t").batch_axis == 1);
  CHECK(tensor_of(*r8, "h").batch_axis == 1);
  CHECK(tensor_of(*r8, "hf").batch_axis == 0);
  CHECK(tensor_of(*r8, "p").batch_axis == 0);
  CHECK(tensor_of(*r8, "mg").batch_axis == 1);
  CHECK(tensor_of(*r8, "y").batch_axis == 0);

  auto r3 = import_model(m, at_batch(3));
  REQUIRE(r3.ok());
  CHECK(r3->report.batch_rebound);
  CHECK(shape_of(*r3, "t") == Shape{6, 3, 16});
  CHECK(shape_of(*r3, "h") == Shape{6, 12, 4});   // 3 x 4 heads
  CHECK(shape_of(*r3, "hf") == Shape{12, 6, 4});
  CHECK(shape_of(*r3, "mg") == Shape{6, 3, 16});
  CHECK(shape_of(*r3, "y") == Shape{3, 6, 16});
  // Softmax over [12, 6, 4] at batch 3 against [32, 6, 4] at batch 8: 3 / 8 of the work.
  const auto& sm8 = r8->graph.ops()[3].cost;
  const auto& sm3 = r3->graph.ops()[3].cost;
  CHECK(sm3.forward_flops.value * 8 == Approx(sm8.forward_flops.value * 3));
}

TEST_CASE("batch axes: a batch flattened into the tokens, and split back", "[onnx][batch]") {
  // [8, 6, 16] -> [48, 16] (batch outer in the merged axis) -> [8, 6, 16].
  ModelBuilder m;
  m.input("x", kF32, {8, 6, 16}).init_i64("flat", {2}, {48, 16}).init_i64("back", {3}, {8, 6, 16});
  m.init_f32("w", {16, 16});
  m.node("Reshape", {"x", "flat"}, {"f"});
  m.node("MatMul", {"f", "w"}, {"mm"});
  m.node("Reshape", {"mm", "back"}, {"y"});
  m.output("y");
  auto r = import_model(m, at_batch(5));
  REQUIRE(r.ok());
  CHECK(r->report.batch_rebound);
  CHECK(shape_of(*r, "f") == Shape{30, 16});
  CHECK(shape_of(*r, "mm") == Shape{30, 16});
  CHECK(shape_of(*r, "y") == Shape{5, 6, 16});
  // MatMul 2 * 30 * 16 * 16 = 15360 forward FLOPs.
  CHECK(r->graph.ops()[1].cost.forward_flops.value == 15360.0);
}

TEST_CASE("batch axes: reductions over the batch are batch-free outputs", "[onnx][batch]") {
  // Training-mode BatchNormalization (running statistics [C]), a mean over
  // every axis and a cross-entropy loss: no batch axis by meaning.
  ModelBuilder m(14);
  m.input("x", kF32, {8, 4, 5, 5}).input("labels", kI64, {8});
  m.init_f32("scale", {4}).init_f32("bias", {4}).init_f32("mean", {4}).init_f32("var", {4});
  m.init_f32("w", {4, 10});
  m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"bn", "rm", "rv"}).attr("training_mode", 1);
  m.node("ReduceMean", {"bn"}, {"pooled"}).attr("axes", {2, 3}).attr("keepdims", 0);
  m.node("MatMul", {"pooled", "w"}, {"logits"});
  m.node("SoftmaxCrossEntropyLoss", {"logits", "labels"}, {"loss"});
  m.node("ReduceMean", {"bn"}, {"all"}).attr("keepdims", 0);
  m.output("loss").output("rm").output("rv").output("all");
  auto r = import_model(m, at_batch(3));
  REQUIRE(r.ok());
  CHECK(r->report.batch_rebound);
  CHECK(shape_of(*r, "bn") == Shape{3, 4, 5, 5});
  CHECK(shape_of(*r, "rm") == Shape{4});
  CHECK(shape_of(*r, "logits") == Shape{3, 10});
  CHECK(shape_of(*r, "labels") == Shape{3});
  CHECK(shape_of(*r, "loss") == Shape{});
  CHECK(shape_of(*r, "all") == Shape{});
}

TEST_CASE("batch axes: a batch written into constants follows the batch", "[onnx][batch]") {
  // ViT's class token expanded to the batch (Expand to a constant [8, 1, 16])
  // and a stochastic-depth mask drawn at [8, 1, 1] (RandomUniform), combined
  // with batched tensors along their batch axis: both scale with the batch.
  ModelBuilder m;
  m.input("x", kF32, {8, 6, 16});
  m.init_f32("cls", {1, 1, 16}).init_i64("to_batch", {3}, {8, 1, 16});
  m.node("Expand", {"cls", "to_batch"}, {"cls_b"});
  m.node("Concat", {"cls_b", "x"}, {"tokens"}).attr("axis", 1);
  m.node("RandomUniform", {}, {"noise"}).attr("shape", {8, 1, 1});
  m.node("Mul", {"tokens", "noise"}, {"y"});
  m.output("y");
  auto r = import_model(m, at_batch(3));
  REQUIRE(r.ok());
  CHECK(r->report.batch_rebound);
  CHECK(shape_of(*r, "cls_b") == Shape{3, 1, 16});
  CHECK(shape_of(*r, "tokens") == Shape{3, 7, 16});
  CHECK(shape_of(*r, "noise") == Shape{3, 1, 1});
  CHECK(shape_of(*r, "y") == Shape{3, 7, 16});
  CHECK(shape_of(*r, "cls") == Shape{1, 1, 16});  // the parameter keeps its shape
}

TEST_CASE("batch axes: a batch split across two axes cannot be rebound", "[onnx][batch]") {
  // [4, 3] -> [2, 2, 3]: the batch of 4 is now two axes; nothing says which
  // would hold a batch of 8, so the static batch is kept and the note says why.
  ModelBuilder m;
  m.input("x", kF32, {4, 3}).init_i64("split", {3}, {2, 2, 3});
  m.node("Reshape", {"x", "split"}, {"r"});
  m.node("Relu", {"r"}, {"y"});
  m.output("y");
  auto r = import_model(m, at_batch(8));
  REQUIRE(r.ok());
  CHECK_FALSE(r->report.batch_rebound);
  CHECK(shape_of(*r, "x") == Shape{4, 3});
  REQUIRE(r->report.notes.size() == 1);
  CHECK(contains(r->report.notes[0], "(cannot rebind: op"));
  CHECK(contains(r->report.notes[0], "writes 'r' without a batch axis from a batched input"));
}
