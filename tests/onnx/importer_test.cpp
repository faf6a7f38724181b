// Import pipeline behaviour on small models built in code: shape arithmetic,
// ordering, cycles, symbolic dims, external data, malformed files, roles,
// batch axes, unknown ops.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <unistd.h>

#include "onnx/model_builder.hpp"
#include "planner/graph/graph.hpp"

using namespace planner;
using namespace planner::testing;
namespace importer = planner::onnx;
using graph::TensorRole;

namespace {

std::vector<std::int64_t> shape_of(const importer::ImportedModel& m, const std::string& name) {
  auto id = m.graph.find_tensor(name);
  REQUIRE(id.has_value());
  return m.graph.tensor(*id).shape;
}

const graph::Tensor& tensor_of(const importer::ImportedModel& m, const std::string& name) {
  auto id = m.graph.find_tensor(name);
  REQUIRE(id.has_value());
  return m.graph.tensor(*id);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using Shape = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("Reshape target computed through Shape -> Gather -> Concat resolves", "[onnx]") {
  ModelBuilder m(13);
  m.input("x", kF32, {"batch", 3, 4});
  m.init_i64("zero", {}, {0}).init_i64("two", {}, {2}).init_i64("axes0", {1}, {0});
  m.init_i64("minus1", {1}, {-1}).init_i64("three", {1}, {3});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "zero"}, {"b"}).attr("axis", 0);
  m.node("Unsqueeze", {"b", "axes0"}, {"b1"});
  m.node("Concat", {"b1", "minus1"}, {"target"}).attr("axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"});
  // A Div in the chain: last dim 4 / 2 = 2 -> [batch, 3, 2, -1].
  m.node("Gather", {"s", "two"}, {"c"}).attr("axis", 0);
  m.node("Div", {"c", "two"}, {"half"});
  m.node("Unsqueeze", {"half", "axes0"}, {"half1"});
  m.node("Concat", {"b1", "three", "half1", "minus1"}, {"target2"}).attr("axis", 0);
  m.node("Reshape", {"x", "target2"}, {"z"});
  m.output("y").output("z");
  importer::ImportOptions o;
  o.batch = 5;
  auto r = import_model(m, o);
  REQUIRE(r.ok());
  CHECK(shape_of(*r, "y") == Shape{5, 12});
  CHECK(shape_of(*r, "z") == Shape{5, 3, 2, 2});
  CHECK(shape_of(*r, "target") == Shape{2});
  CHECK(tensor_of(*r, "y").batch_axis == 0);
  CHECK(tensor_of(*r, "z").batch_axis == 0);
  // Shape tensors carry no batch axis (their values change, not their shapes).
  CHECK_FALSE(tensor_of(*r, "s").batch_axis.has_value());
}

TEST_CASE("Slice bounds: clamped ends, negative steps, bounds from shape arithmetic", "[onnx]") {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  ModelBuilder m(13);
  m.input("x", kF32, {2, 10, 6});
  m.init_i64("s1", {1}, {1}).init_i64("e1", {1}, {kMax}).init_i64("a1", {1}, {1}).init_i64("st1", {1}, {2});
  m.node("Slice", {"x", "s1", "e1", "a1", "st1"}, {"y1"});  // 1,3,5,7,9 -> 5
  m.init_i64("s2", {1}, {-1}).init_i64("e2", {1}, {kMin}).init_i64("a2", {1}, {2}).init_i64("st2", {1}, {-2});
  m.node("Slice", {"x", "s2", "e2", "a2", "st2"}, {"y2"});  // 5,3,1 -> 3
  // ends = shape[1] - 2 = 8, through Shape -> Gather -> Sub -> Unsqueeze.
  m.init_i64("one", {}, {1}).init_i64("two", {}, {2}).init_i64("axes0", {1}, {0}).init_i64("zero1", {1}, {0});
  m.node("Shape", {"x"}, {"sh"});
  m.node("Gather", {"sh", "one"}, {"len"});
  m.node("Sub", {"len", "two"}, {"end"});
  m.node("Unsqueeze", {"end", "axes0"}, {"end1"});
  m.node("Slice", {"x", "zero1", "end1", "a1"}, {"y3"});
  // Opset-1 attribute form inside an opset-13 model is not valid; test it separately.
  m.output("y1").output("y2").output("y3");
  auto r = import_model(m);
  REQUIRE(r.ok());
  CHECK(shape_of(*r, "y1") == Shape{2, 5, 6});
  CHECK(shape_of(*r, "y2") == Shape{2, 10, 3});
  CHECK(shape_of(*r, "y3") == Shape{2, 8, 6});

  ModelBuilder old(9);
  old.input("x", kF32, {4, 10});
  old.node("Slice", {"x"}, {"y"}).attr("starts", {0, -3}).attr("ends", {2, 100}).attr("axes", {0, 1});
  old.output("y");
  auto r2 = import_model(old);
  REQUIRE(r2.ok());
  CHECK(shape_of(*r2, "y") == Shape{2, 3});
}

TEST_CASE("nodes listed out of dependency order are sorted", "[onnx]") {
  ModelBuilder m;
  m.input("x", kF32, {2, 4}).init_f32("w", {4, 3});
  m.node("Relu", {"h"}, {"y"}, "relu");       // reads h before it is written
  m.node("MatMul", {"x", "w"}, {"h"}, "mm");
  m.output("y");
  auto r = import_model(m);
  REQUIRE(r.ok());
  REQUIRE(r->graph.num_ops() == 2);
  CHECK(r->graph.ops()[0].name == "mm");
  CHECK(r->graph.ops()[1].name == "relu");
  CHECK(shape_of(*r, "y") == Shape{2, 3});
  CHECK(r->graph.topological_order().ok());
}

TEST_CASE("a cycle is an error naming an op on it", "[onnx]") {
  ModelBuilder m;
  m.input("x", kF32, {2, 4});
  m.node("Relu", {"x"}, {"a"}, "entry");
  m.node("Add", {"a", "c"}, {"b"}, "cyc_add");
  m.node("Relu", {"b"}, {"c"}, "cyc_relu");
  m.output("c");
  auto r = import_model(m);
  REQUIRE_FALSE(r.ok());
  const auto& msg = r.error().message;
  CHECK(contains(msg, "cycle"));
  CHECK((contains(msg, "'cyc_add'") || contains(msg, "'cyc_relu'")));
  CHECK_FALSE(contains(msg, "\n"));

  ModelBuilder self;
  self.input("x", kF32, {2});
  self.node("Add", {"x", "y"}, {"y"}, "loopy");
  self.output("y");
  auto r2 = import_model(self);
  REQUIRE_FALSE(r2.ok());
  CHECK(contains(r2.error().message, "'loopy'"));
}

TEST_CASE("symbolic dims: unbound ones name the tensor and the flag", "[onnx]") {
  ModelBuilder m;
  m.input("input_ids", kI64, {"batch_size", "seq_len"}).init_f32("emb", {10, 4});
  m.node("Gather", {"emb", "input_ids"}, {"h"});
  m.output("h");
  {
    auto r = import_model(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "test.onnx: tensor 'input_ids' dim 'batch_size' is symbolic: bind it with --dim batch_size=N or --batch N "
          "(also unbound: seq_len)");
  }
  {
    importer::ImportOptions o;
    o.batch = 2;
    auto r = import_model(m, o);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "tensor 'input_ids' dim 'seq_len' is symbolic: bind it with --dim seq_len=N"));
    CHECK_FALSE(contains(r.error().message, "--batch"));
  }
  {
    importer::ImportOptions o;
    o.batch = 2;
    o.dims["seq_len"] = 7;
    auto r = import_model(m, o);
    REQUIRE(r.ok());
    CHECK(shape_of(*r, "h") == Shape{2, 7, 4});
    CHECK(tensor_of(*r, "input_ids").role == TensorRole::input);
    CHECK(tensor_of(*r, "h").batch_axis == 0);
  }
  {
    importer::ImportOptions o;  // --dim alone binds the batch name too
    o.dims = {{"batch_size", 3}, {"seq_len", 5}};
    auto r = import_model(m, o);
    REQUIRE(r.ok());
    CHECK(shape_of(*r, "h") == Shape{3, 5, 4});
    CHECK(tensor_of(*r, "h").batch_axis == 0);
  }
}

TEST_CASE("unnamed dims: --batch binds a leading one, --dim TENSOR:AXIS the others", "[onnx]") {
  ModelBuilder m;
  m.input("x", kF32, {"", 3, ""});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  importer::ImportOptions o;
  o.batch = 4;
  auto r = import_model(m, o);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "tensor 'x' dim 2 has no size: bind it with --dim x:2=N"));
  o.dims["x:2"] = 6;
  auto r2 = import_model(m, o);
  REQUIRE(r2.ok());
  CHECK(shape_of(*r2, "y") == Shape{4, 3, 6});
}

TEST_CASE("batch axis follows the batch through transposes and reshapes", "[onnx]") {
  ModelBuilder m(13);
  m.input("x", kF32, {"B", 6, 8});
  m.init_i64("flat", {2}, {-1, 8}).init_i64("ax0", {1}, {0});
  m.node("Transpose", {"x"}, {"t"}).attr("perm", {1, 0, 2});
  m.node("Reshape", {"x", "flat"}, {"r"});
  m.node("ReduceMean", {"x", "ax0"}, {"m"}).attr("keepdims", 0);
  m.output("t").output("r").output("m");
  importer::ImportOptions o;
  o.batch = 2;
  auto r = import_model(m, o);
  REQUIRE(r.ok());
  CHECK(tensor_of(*r, "x").batch_axis == 0);
  CHECK(tensor_of(*r, "t").batch_axis == 1);
  CHECK(tensor_of(*r, "r").batch_axis == 0);
  CHECK(shape_of(*r, "r") == Shape{12, 8});
  CHECK_FALSE(tensor_of(*r, "m").batch_axis.has_value());

  // Static model, no flags: the inputs' leading dim is the batch.
  ModelBuilder s;
  s.input("x", kF32, {1, 3}).init_f32("w", {3, 2});
  s.node("MatMul", {"x", "w"}, {"y"});
  s.output("y");
  auto rs = import_model(s);
  REQUIRE(rs.ok());
  CHECK(tensor_of(*rs, "y").batch_axis == 0);
  CHECK(rs->report.static_batch == 1);
  CHECK_FALSE(rs->report.batch_rebound);
  importer::ImportOptions b8;
  b8.batch = 8;  // a static batch is rebound: batch axes scaled by 8 / 1, and the report says so
  auto r8 = import_model(s, b8);
  REQUIRE(r8.ok());
  CHECK(shape_of(*r8, "x") == Shape{8, 3});
  CHECK(shape_of(*r8, "y") == Shape{8, 2});
  CHECK(shape_of(*r8, "w") == Shape{3, 2});  // parameters keep their shape
  CHECK(r8->report.batch_rebound);
  REQUIRE(r8->report.notes.size() == 1);
  CHECK(contains(r8->report.notes[0], "the model's batch is static (1): rebound to --batch 8"));
  CHECK_FALSE(tensor_of(*rs, "w").batch_axis.has_value());
  // The MatMul's FLOPs follow: 2 * 8 * 3 * 2 = 96 forward at batch 8, 2 * 1 * 3 * 2 = 12 at 1.
  CHECK(r8->graph.ops()[0].cost.forward_flops.value == 96.0);
  CHECK(rs->graph.ops()[0].cost.forward_flops.value == 12.0);

  // A flattened [2*3] through a Reshape to a constant [6] follows the batch:
  // the batch is the outer factor of the flattened axis, so [8*3] at batch 8
  // (a batch split across axes cannot be rebound: batch_axes_test.cpp).
  ModelBuilder f;
  f.input("x", kF32, {2, 3}).init_i64("flat", {1}, {6});
  f.node("Reshape", {"x", "flat"}, {"r"});
  f.node("Relu", {"r"}, {"y"});
  f.output("y");
  auto rf = import_model(f, b8);
  REQUIRE(rf.ok());
  CHECK(shape_of(*rf, "x") == Shape{8, 3});
  CHECK(shape_of(*rf, "y") == Shape{24});
  CHECK(rf->report.static_batch == 2);
  CHECK(rf->report.batch_rebound);
}

TEST_CASE("external data: absent .data files import, locations outside the folder are refused", "[onnx]") {
  ModelBuilder m;
  m.input("x", kF32, {2, 4});
  m.init_external("w", {4, 8}, "weights.data");
  m.init_external("b", {8}, "sub/bias.data");
  m.node("MatMul", {"x", "w"}, {"h"});
  m.node("Add", {"h", "b"}, {"y"});
  m.output("y");
  auto dir = std::filesystem::temp_directory_path() / "planner_onnx_ext_test";
  std::filesystem::create_directories(dir);
  auto r = importer::import_bytes(m.bytes(), "ext.onnx", dir, {});
  REQUIRE(r.ok());
  CHECK(shape_of(*r, "y") == Shape{2, 8});
  CHECK(tensor_of(*r, "w").external_data);
  CHECK(tensor_of(*r, "w").role == TensorRole::parameter);
  CHECK(graph::totals(r->graph).parameter_count == 4 * 8 + 8);
  bool noted = false;
  for (const auto& n : r->report.notes) noted = noted || contains(n, "external data");
  CHECK(noted);
  // The same through a file on disk, without the .data files.
  auto path = dir / "ext.onnx";
  {
    std::ofstream f(path, std::ios::binary);
    f << m.bytes();
  }
  auto rf = importer::import_file(path, {});
  CHECK(rf.ok());
  std::filesystem::remove_all(dir);

  for (const std::string loc : {"../x.data", "/etc/passwd", "a/../../x.data", "..\\x.data"}) {
    ModelBuilder bad;
    bad.input("x", kF32, {2, 4});
    bad.init_external("w", {4, 8}, loc);
    bad.node("MatMul", {"x", "w"}, {"y"});
    bad.output("y");
    auto rb = import_model(bad);
    INFO(loc);
    REQUIRE_FALSE(rb.ok());
    CHECK(contains(rb.error().message, "outside the model's folder"));
    CHECK(contains(rb.error().message, "'" + loc + "'"));
    CHECK_FALSE(contains(rb.error().message, "\n"));
  }
}

TEST_CASE("corrupt, truncated, empty and random bytes give clean errors", "[onnx]") {
  ModelBuilder m;
  m.input("x", kF32, {2, 4}).init_f32("w", {4, 8});
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.node("Softmax", {"y"}, {"z"}).attr("axis", -1);
  m.output("z");
  const std::string good = m.bytes();
  REQUIRE(importer::import_bytes(good, "good.onnx", ".", {}).ok());

  auto empty = importer::import_bytes("", "empty.onnx", ".", {});
  REQUIRE_FALSE(empty.ok());
  CHECK(contains(empty.error().message, "empty.onnx: the file is empty"));

  for (std::size_t cut : {good.size() / 2, good.size() - 1, std::size_t{3}}) {
    auto r = importer::import_bytes(std::string_view(good).substr(0, cut), "cut.onnx", ".", {});
    CHECK_FALSE(r.ok());
  }
  std::mt19937_64 rng(42);
  for (int k = 0; k < 200; ++k) {
    std::string junk(64 + rng() % 4096, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    auto r = importer::import_bytes(junk, "junk.onnx", ".", {});
    if (!r.ok()) CHECK_FALSE(r.error().message.empty());
  }
  // Single-byte corruptions of a valid model: parse errors or imports, never a crash.
  for (int k = 0; k < 400; ++k) {
    std::string b = good;
    b[rng() % b.size()] = static_cast<char>(rng());
    auto r = importer::import_bytes(b, "flip.onnx", ".", {});
    if (!r.ok()) CHECK_FALSE(r.error().message.empty());
  }
  auto missing = importer::import_file("/nonexistent/model.onnx", {});
  REQUIRE_FALSE(missing.ok());
  CHECK(contains(missing.error().message, "no such file"));
}

TEST_CASE("a single file of 2 GiB or more is refused before reading, pointing to external data", "[onnx]") {
  auto path = std::filesystem::temp_directory_path() / fmt::format("planner_big_{}.onnx", ::getpid());
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(::ftruncate(::fileno(f), static_cast<off_t>(importer::kMaxProtoBytes) + 1) == 0);  // sparse: no disk used
    std::fclose(f);
  }
  auto r = importer::import_file(path, {});
  std::filesystem::remove(path);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "2 GiB"));
  CHECK(contains(r.error().message, "external data"));
}

TEST_CASE("huge and negative dims are clean errors", "[onnx]") {
  {
    ModelBuilder m;
    m.input("x", kF32, {2, 4});
    m.init_external("w", {4, std::int64_t{1} << 41}, "w.data");
    m.node("MatMul", {"x", "w"}, {"y"});
    m.output("y");
    auto r = import_model(m);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "2^40"));
  }
  {
    ModelBuilder m;
    m.input("x", kF32, {2, -5});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    CHECK_FALSE(import_model(m).ok());
  }
  {
    ModelBuilder m;
    m.input("x", kF32, {"n"});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    importer::ImportOptions o;
    o.dims["n"] = std::int64_t{1} << 41;
    auto r = import_model(m, o);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "--dim n="));
  }
  {
    // Tile to 2^30 x 2^30 elements along one axis: out of range, cleanly.
    ModelBuilder m(13);
    m.input("x", kF32, {1 << 30});
    m.init_i64("reps", {1}, {1 << 30});
    m.node("Tile", {"x", "reps"}, {"y"}, "tile");
    m.output("y");
    auto r = import_model(m);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "'tile'"));
  }
}

TEST_CASE("parameters: float initializers, weights made by ConstantOfShape, --params-from-inputs", "[onnx]") {
  // The light_resnet50 pattern: weights are ConstantOfShape outputs; BN running
  // statistics are not trained.
  ModelBuilder m(9, 3);
  m.input("x", kF32, {1, 3, 8, 8});
  pb::TensorProto fill = tensor_f32("", {1}, {0.02f});
  m.init_i64("w_shape", {4}, {4, 3, 3, 3}).init_i64("c_shape", {1}, {4});
  m.input("w_shape", kI64, {4}).input("c_shape", kI64, {1});  // IR 3: initializers listed as inputs
  m.node("ConstantOfShape", {"w_shape"}, {"w"}).attr("value", fill);
  m.node("ConstantOfShape", {"c_shape"}, {"scale"}).attr("value", fill);
  m.node("ConstantOfShape", {"c_shape"}, {"rm"}).attr("value", fill);
  m.init_f32("bias", {4}).init_f32("rv", {4});
  m.node("Conv", {"x", "w"}, {"c"}).attr("kernel_shape", {3, 3}).attr("pads", {1, 1, 1, 1});
  m.node("BatchNormalization", {"c", "scale", "bias", "rm", "rv"}, {"y"});
  m.output("y");
  auto r = import_model(m);
  REQUIRE(r.ok());
  CHECK(shape_of(*r, "y") == Shape{1, 4, 8, 8});
  CHECK(tensor_of(*r, "w").role == TensorRole::parameter);
  CHECK(tensor_of(*r, "scale").role == TensorRole::parameter);
  CHECK(tensor_of(*r, "bias").role == TensorRole::parameter);
  CHECK(tensor_of(*r, "rm").role == TensorRole::constant);
  CHECK(tensor_of(*r, "rv").role == TensorRole::constant);
  CHECK(tensor_of(*r, "w_shape").role == TensorRole::constant);
  CHECK(tensor_of(*r, "x").role == TensorRole::input);
  CHECK(graph::totals(r->graph).parameter_count == 4 * 3 * 3 * 3 + 4 + 4);
  // Only the data input counts as a graph input.
  REQUIRE(r->graph.graph_inputs.size() == 1);
  CHECK(r->graph.tensor(r->graph.graph_inputs[0]).name == "x");

  // Training graphs taking weights as inputs.
  ModelBuilder t;
  t.input("x", kF32, {"N", 4}).input("layer.weight", kF32, {4, 8});
  t.node("MatMul", {"x", "layer.weight"}, {"y"});
  t.output("y");
  importer::ImportOptions o;
  o.batch = 3;
  o.params_from_inputs = {"layer.*"};
  auto rt = import_model(t, o);
  REQUIRE(rt.ok());
  CHECK(tensor_of(*rt, "layer.weight").role == TensorRole::parameter);
  CHECK(shape_of(*rt, "layer.weight") == Shape{4, 8});
  CHECK(shape_of(*rt, "y") == Shape{3, 8});
  CHECK(graph::totals(rt->graph).parameter_count == 32);
}

TEST_CASE("declared shapes that disagree with the computation are reported, the computation wins", "[onnx]") {
  ModelBuilder m;
  m.input("x", kF32, {2, 4}).init_f32("w", {4, 8});
  m.node("MatMul", {"x", "w"}, {"y"});
  m.output("y", kF32, {2, 768});
  m.value_info("y", kF32, {"b", 768});
  auto r = import_model(m);
  REQUIRE(r.ok());
  CHECK(shape_of(*r, "y") == Shape{2, 8});
  REQUIRE(r->report.disagreements.size() == 1);
  CHECK(r->report.disagreements[0].tensor == "y");
  CHECK(r->report.disagreements[0].declared == Shape{2, 768});
  CHECK(r->report.disagreements[0].computed == Shape{2, 8});
}

TEST_CASE("ops without rules: declared shapes are used, unresolvable ones fail naming the op", "[onnx]") {
  ModelBuilder m;
  m.opset_import("my.domain", 1);
  m.input("x", kF32, {"B", 4});
  m.node("Frobnicate", {"x"}, {"y"}, "frob").domain("my.domain");
  m.node("Relu", {"y"}, {"z"});
  m.output("z");
  importer::ImportOptions o;
  o.batch = 2;
  auto r = import_model(m, o);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "op 'frob' (my.domain:Frobnicate): cannot determine the shape of output 'y'"));

  m.value_info("y", kF32, {"B", 6});
  auto r2 = import_model(m, o);
  REQUIRE(r2.ok());
  CHECK(shape_of(*r2, "z") == Shape{2, 6});
  CHECK(r2->report.unknown_ops.count("my.domain:Frobnicate") == 1);

  // A declared shape with an unbound name: the error says which flag binds it.
  ModelBuilder d;
  d.opset_import("my.domain", 1);
  d.input("x", kF32, {2, 4});
  d.node("Frobnicate", {"x"}, {"y"}, "frob").domain("my.domain");
  d.value_info("y", kF32, {2, "hidden"});
  d.output("y");
  auto r3 = import_model(d);
  REQUIRE_FALSE(r3.ok());
  CHECK(contains(r3.error().message, "--dim hidden=N"));
  importer::ImportOptions oh;
  oh.dims["hidden"] = 16;
  auto r4 = import_model(d, oh);
  REQUIRE(r4.ok());
  CHECK(shape_of(*r4, "y") == Shape{2, 16});
}

TEST_CASE("an inconsistent graph fails naming the op and tensor", "[onnx]") {
  ModelBuilder m;
  m.input("x", kF32, {2, 4}).init_f32("w", {5, 8});
  m.node("MatMul", {"x", "w"}, {"y"}, "bad_mm");
  m.output("y");
  auto r = import_model(m);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "op 'bad_mm' (MatMul): cannot determine the shape of output 'y'"));

  ModelBuilder u;
  u.input("x", kF32, {2, 4});
  u.node("Relu", {"nowhere"}, {"y"}, "orphan");
  u.output("y");
  auto ru = import_model(u);
  REQUIRE_FALSE(ru.ok());
  CHECK(contains(ru.error().message, "'orphan'"));
  CHECK(contains(ru.error().message, "'nowhere'"));
}

TEST_CASE("model info, unnamed ops and unused initializers", "[onnx]") {
  ModelBuilder m(15);
  m.opset_import("com.microsoft", 1);
  m.input("x", kF32, {2, 4}).init_f32("unused", {100});
  m.node("Relu", {"x"}, {"a"});
  m.node("Relu", {"a"}, {"b"});
  m.output("b");
  auto r = import_model(m);
  REQUIRE(r.ok());
  CHECK(r->graph.info.producer_name == "planner-tests");
  CHECK(r->graph.info.ir_version == 8);
  CHECK(r->graph.info.opsets.at("") == 15);
  CHECK(r->graph.info.opsets.at("com.microsoft") == 1);
  CHECK(r->graph.ops()[0].name != r->graph.ops()[1].name);
  CHECK_FALSE(r->graph.find_tensor("unused").has_value());
  CHECK(graph::totals(r->graph).parameter_count == 0);
}
