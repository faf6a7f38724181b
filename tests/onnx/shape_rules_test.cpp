// Shape rules, op by op, on one-node (or few-node) models. Expected shapes
// are worked out by hand from the ONNX operator specs in the comments.
#include <catch2/catch.hpp>

#include <limits>

#include "onnx/model_builder.hpp"
#include "planner/graph/graph.hpp"

using namespace planner;
using namespace planner::testing;
namespace importer = planner::onnx;

namespace {

using Shape = std::vector<std::int64_t>;

importer::ImportedModel imported(const ModelBuilder& m, importer::ImportOptions o = {}) {
  auto r = import_model(m, o);
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return std::move(*r);
}

Shape shape_of(const importer::ImportedModel& m, const std::string& name) {
  auto id = m.graph.find_tensor(name);
  REQUIRE(id.has_value());
  return m.graph.tensor(*id).shape;
}

core::DType dtype_of(const importer::ImportedModel& m, const std::string& name) {
  return m.graph.tensor(*m.graph.find_tensor(name)).dtype;
}

}  // namespace

TEST_CASE("convolutions and pools", "[onnx][rules]") {
  ModelBuilder m(13);
  m.input("x", kF32, {1, 3, 32, 32}).init_f32("w", {8, 3, 5, 5}).init_f32("wg", {8, 1, 3, 3});
  m.init_f32("wt", {8, 4, 4, 4});
  // floor((32 + 2 + 2 - 5) / 2) + 1 = 16
  m.node("Conv", {"x", "w"}, {"c1"}).attr("strides", {2, 2}).attr("pads", {2, 2, 2, 2});
  // SAME_UPPER: ceil(32 / 2) = 16
  m.node("Conv", {"x", "w"}, {"c2"}).attr("strides", {2, 2}).attr("auto_pad", "SAME_UPPER");
  // dilation 2: effective kernel 9 -> 32 - 9 + 1 = 24
  m.node("Conv", {"x", "w"}, {"c3"}).attr("dilations", {2, 2});
  // depthwise: 8 groups of 1 channel, 16 - 3 + 1 = 14
  m.node("Conv", {"c1", "wg"}, {"c4"}).attr("group", 8);
  // transposed: (16 - 1) * 2 + 4 - 1 - 1 = 32 ; channels 4 * group 1
  m.node("ConvTranspose", {"c1", "wt"}, {"ct"}).attr("strides", {2, 2}).attr("pads", {1, 1, 1, 1});
  m.node("ConvTranspose", {"c1", "wt"}, {"ct2"}).attr("strides", {2, 2}).attr("output_shape", {33, 33});
  // floor((32 + 1 + 1 - 3) / 2) + 1 = 16 ; indices output is int64
  m.node("MaxPool", {"x"}, {"p1", "idx"}).attr("kernel_shape", {3, 3}).attr("strides", {2, 2}).attr("pads", {1, 1, 1, 1});
  // ceil_mode: ceil((32 - 3) / 2) + 1 = 16 (15.5 -> 16)
  m.node("AveragePool", {"x"}, {"p2"}).attr("kernel_shape", {3, 3}).attr("strides", {2, 2}).attr("ceil_mode", 1);
  m.node("GlobalAveragePool", {"c1"}, {"gp"});
  m.output("c2").output("c3").output("c4").output("ct").output("ct2").output("p1").output("idx").output("p2").output("gp");
  auto r = imported(m);
  CHECK(shape_of(r, "c1") == Shape{1, 8, 16, 16});
  CHECK(shape_of(r, "c2") == Shape{1, 8, 16, 16});
  CHECK(shape_of(r, "c3") == Shape{1, 8, 24, 24});
  CHECK(shape_of(r, "c4") == Shape{1, 8, 14, 14});
  CHECK(shape_of(r, "ct") == Shape{1, 4, 32, 32});
  CHECK(shape_of(r, "ct2") == Shape{1, 4, 33, 33});
  CHECK(shape_of(r, "p1") == Shape{1, 3, 16, 16});
  CHECK(dtype_of(r, "idx") == core::DType::i64);
  CHECK(shape_of(r, "p2") == Shape{1, 3, 16, 16});
  CHECK(shape_of(r, "gp") == Shape{1, 8, 1, 1});
}

TEST_CASE("normalisations", "[onnx][rules]") {
  ModelBuilder m(17);
  m.input("x", kF32, {2, 5, 8}).init_f32("g", {8}).init_f32("b", {8}).init_f32("c", {5});
  m.node("LayerNormalization", {"x", "g", "b"}, {"ln", "mean", "istd"}).attr("axis", -1);
  m.node("LayerNormalization", {"x", "g", "b"}, {"ln1", "mean1"}).attr("axis", 1);
  m.node("InstanceNormalization", {"x", "c", "c"}, {"in"});
  m.node("BatchNormalization", {"x", "c", "c", "c", "c"}, {"bn", "rm", "rv"}).attr("training_mode", 1);
  m.output("ln").output("istd").output("mean1").output("in").output("bn").output("rm");
  auto r = imported(m);
  CHECK(shape_of(r, "ln") == Shape{2, 5, 8});
  CHECK(shape_of(r, "mean") == Shape{2, 5, 1});
  CHECK(shape_of(r, "mean1") == Shape{2, 1, 1});
  CHECK(shape_of(r, "in") == Shape{2, 5, 8});
  CHECK(shape_of(r, "bn") == Shape{2, 5, 8});
  CHECK(shape_of(r, "rm") == Shape{5});

  // ONNX Runtime's contrib LayerNormalization, declared in the default domain at opset 12.
  ModelBuilder o(12);
  o.input("x", kF32, {2, 5, 8}).init_f32("g", {8}).init_f32("b", {8});
  o.node("LayerNormalization", {"x", "g", "b"}, {"y"});
  o.node("LayerNormalization", {"y", "g", "b"}, {"z"}).domain("com.microsoft");
  o.output("z");
  auto ro = imported(o);
  CHECK(shape_of(ro, "z") == Shape{2, 5, 8});
}

TEST_CASE("matrix products", "[onnx][rules]") {
  ModelBuilder m(13);
  m.opset_import("com.microsoft", 1);
  m.input("a", kF32, {2, 1, 3, 4}).input("b", kF32, {5, 4, 6}).input("v", kF32, {4});
  m.input("g1", kF32, {3, 5}).input("g2", kF32, {7, 5}).init_f32("gc", {7});
  m.node("MatMul", {"a", "b"}, {"ab"});       // batch [2,1] x [5] -> [2,5], then [3,6]
  m.node("MatMul", {"v", "b"}, {"vb"});       // [4] x [5,4,6] -> [5,6]
  m.node("Gemm", {"g1", "g2", "gc"}, {"gemm"}).attr("transB", 1);  // [3,5] x [5,7] -> [3,7]
  m.node("FusedMatMul", {"g1", "g2"}, {"fm"}).attr("transB", 1).domain("com.microsoft");
  m.node("Einsum", {"a", "b"}, {"es"}).attr("equation", "...ij,kjl->...kil");
  m.node("Einsum", {"g1", "g2"}, {"ei"}).attr("equation", "ij,kj");  // implicit: letters once, sorted -> i,k
  m.output("ab").output("vb").output("gemm").output("fm").output("es").output("ei");
  auto r = imported(m);
  CHECK(shape_of(r, "ab") == Shape{2, 5, 3, 6});
  CHECK(shape_of(r, "vb") == Shape{5, 6});
  CHECK(shape_of(r, "gemm") == Shape{3, 7});
  CHECK(shape_of(r, "fm") == Shape{3, 7});
  CHECK(shape_of(r, "es") == Shape{2, 1, 5, 3, 6});
  CHECK(shape_of(r, "ei") == Shape{3, 7});
}

TEST_CASE("layout ops across opsets", "[onnx][rules]") {
  SECTION("opset 11: attribute forms") {
    ModelBuilder m(11);
    m.input("x", kF32, {4, 1, 5});
    m.node("Squeeze", {"x"}, {"sq"}).attr("axes", {1});
    m.node("Unsqueeze", {"sq"}, {"us"}).attr("axes", {0, 3});
    m.node("Split", {"sq"}, {"s1", "s2"}).attr("axis", 1).attr("split", {2, 3});
    m.node("ReduceSum", {"x"}, {"rs"}).attr("axes", {0, 2}).attr("keepdims", 0);
    m.node("Pad", {"sq", "pads"}, {"pd"});
    m.init_i64("pads", {4}, {0, 1, 2, 1});
    m.output("us").output("s1").output("s2").output("rs").output("pd");
    auto r = imported(m);
    CHECK(shape_of(r, "sq") == Shape{4, 5});
    CHECK(shape_of(r, "us") == Shape{1, 4, 5, 1});
    CHECK(shape_of(r, "s1") == Shape{4, 2});
    CHECK(shape_of(r, "s2") == Shape{4, 3});
    CHECK(shape_of(r, "rs") == Shape{1});
    CHECK(shape_of(r, "pd") == Shape{6, 7});
  }
  SECTION("opset 13: input forms") {
    ModelBuilder m(13);
    m.input("x", kF32, {4, 1, 9});
    m.init_i64("ax1", {1}, {1}).init_i64("ax_neg", {2}, {0, -1}).init_i64("sizes", {2}, {4, 5});
    m.node("Squeeze", {"x", "ax1"}, {"sq"});
    m.node("Squeeze", {"x"}, {"sq_all"});
    m.node("Unsqueeze", {"sq", "ax_neg"}, {"us"});
    m.node("Split", {"sq", "sizes"}, {"s1", "s2"}).attr("axis", 1);
    m.node("Split", {"sq"}, {"e1", "e2", "e3"}).attr("axis", 1);  // equal thirds of 9
    m.node("ReduceSum", {"x", "ax1"}, {"rs"});                     // keepdims default 1
    m.node("ReduceMean", {"x"}, {"rm"}).attr("keepdims", 1);       // all axes
    m.node("Flatten", {"x"}, {"f0"}).attr("axis", 0);
    m.node("Flatten", {"x"}, {"f2"}).attr("axis", 2);
    m.node("Transpose", {"x"}, {"tr"});
    m.output("sq_all").output("us").output("s1").output("s2").output("e3").output("rs").output("rm");
    m.output("f0").output("f2").output("tr");
    auto r = imported(m);
    CHECK(shape_of(r, "sq") == Shape{4, 9});
    CHECK(shape_of(r, "sq_all") == Shape{4, 9});
    CHECK(shape_of(r, "us") == Shape{1, 4, 9, 1});
    CHECK(shape_of(r, "s1") == Shape{4, 4});
    CHECK(shape_of(r, "s2") == Shape{4, 5});
    CHECK(shape_of(r, "e3") == Shape{4, 3});
    CHECK(shape_of(r, "rs") == Shape{4, 1, 9});
    CHECK(shape_of(r, "rm") == Shape{1, 1, 1});
    CHECK(shape_of(r, "f0") == Shape{1, 36});
    CHECK(shape_of(r, "f2") == Shape{4, 9});
    CHECK(shape_of(r, "tr") == Shape{9, 1, 4});
  }
  SECTION("opset 18: Split num_outputs, Reduce axes input") {
    ModelBuilder m(18);
    m.input("x", kF32, {10, 3});
    m.init_i64("ax", {1}, {1});
    m.node("Split", {"x"}, {"a", "b", "c"}).attr("axis", 0).attr("num_outputs", 3);  // 4, 4, 2
    m.node("ReduceMax", {"x", "ax"}, {"mx"}).attr("keepdims", 0);
    m.output("a").output("c").output("mx");
    auto r = imported(m);
    CHECK(shape_of(r, "a") == Shape{4, 3});
    CHECK(shape_of(r, "c") == Shape{2, 3});
    CHECK(shape_of(r, "mx") == Shape{10});
  }
}

TEST_CASE("broadcasting, Where, Cast, Dropout, Clip", "[onnx][rules]") {
  ModelBuilder m(13);
  m.input("c", kBool, {2, 1}).input("x", kF32, {1, 3}).input("y", kF32, {});
  m.init(tensor_f32("lo", {}, {0.0f})).init(tensor_f32("hi", {}, {6.0f}));
  m.node("Where", {"c", "x", "y"}, {"w"});
  m.node("Add", {"x", "c2"}, {"add"});
  m.input("c2", kF32, {4, 1, 1});
  m.node("Equal", {"x", "y"}, {"eq"});
  m.node("Cast", {"w"}, {"ci"}).attr("to", 6);
  m.node("Dropout", {"w"}, {"d", "mask"});
  m.node("Clip", {"w", "lo", "hi"}, {"cl"});
  m.node("Sum", {"x", "w", "y"}, {"sum"});
  m.output("add").output("eq").output("ci").output("d").output("mask").output("cl").output("sum");
  auto r = imported(m);
  CHECK(shape_of(r, "w") == Shape{2, 3});
  CHECK(shape_of(r, "add") == Shape{4, 1, 3});
  CHECK(dtype_of(r, "eq") == core::DType::boolean);
  CHECK(dtype_of(r, "ci") == core::DType::i32);
  CHECK(shape_of(r, "mask") == Shape{2, 3});
  CHECK(dtype_of(r, "mask") == core::DType::boolean);
  CHECK(shape_of(r, "cl") == Shape{2, 3});
  CHECK(shape_of(r, "sum") == Shape{2, 3});
}

TEST_CASE("value tracking through mask and shape arithmetic", "[onnx][rules]") {
  // Exporter patterns: Expand to Where(Equal(shape, -1), 1, shape); ReduceProd
  // of a shape slice as a Reshape target (keras2onnx); Range over a dim;
  // ConstantOfShape of a computed shape; Min/Max/Neg/Cast in between.
  ModelBuilder m(13);
  m.input("x", kF32, {"B", 6, 4});
  m.init_i64("neg1", {3}, {-1, -1, -1}).init_i64("ones", {3}, {1, 1, 1}).init_i64("zero", {}, {0});
  m.init_i64("one", {}, {1}).init_i64("s1", {1}, {1}).init_i64("end", {1}, {3}).init_i64("axes0", {1}, {0});
  m.init_i64("m1", {1}, {-1});
  m.node("Shape", {"x"}, {"sh"});
  m.node("Equal", {"sh", "neg1"}, {"is_neg"});
  m.node("Where", {"is_neg", "ones", "sh"}, {"target"});
  m.input("row", kF32, {1, 4});
  m.node("Expand", {"row", "target"}, {"expanded"});
  m.node("Slice", {"sh", "s1", "end"}, {"tail"});
  m.node("ReduceProd", {"tail"}, {"prod"}).attr("keepdims", 1);
  m.node("Concat", {"m1", "prod"}, {"flat_shape"}).attr("axis", 0);
  m.node("Reshape", {"x", "flat_shape"}, {"flat"});
  m.node("Gather", {"sh", "one"}, {"seq"});
  m.node("Range", {"zero", "seq", "one"}, {"positions"});
  m.node("Cast", {"seq"}, {"seq_f"}).attr("to", 1);
  m.node("Sqrt", {"seq_f"}, {"root"});
  m.node("Ceil", {"root"}, {"root_c"});
  m.node("Cast", {"root_c"}, {"root_i"}).attr("to", 7);  // ceil(sqrt(6)) = 3
  m.node("Neg", {"root_i"}, {"nr"});
  m.node("Neg", {"nr"}, {"r2"});
  m.node("Max", {"r2", "one"}, {"r3"});
  m.node("Min", {"r3", "seq"}, {"r4"});
  m.node("Unsqueeze", {"r4", "axes0"}, {"r5"});
  m.node("ConstantOfShape", {"r5"}, {"zeros"});
  m.output("expanded").output("flat").output("positions").output("zeros");
  importer::ImportOptions o;
  o.batch = 2;
  auto r = imported(m, o);
  CHECK(shape_of(r, "expanded") == Shape{2, 6, 4});
  CHECK(shape_of(r, "flat") == Shape{2, 24});
  CHECK(shape_of(r, "positions") == Shape{6});
  CHECK(shape_of(r, "zeros") == Shape{3});
}

TEST_CASE("indexing, generators and data movement", "[onnx][rules]") {
  ModelBuilder m(13);
  m.input("x", kF32, {2, 3, 4}).input("ids", kI64, {5, 7}).input("nd", kI64, {2, 1}).input("ge_idx", kI64, {2, 3, 1});
  m.init_f32("emb", {100, 16}).init_i64("reps", {3}, {1, 2, 3}).init_i64("k", {1}, {2});
  m.init_i64("depth", {}, {10}).init_f32("onoff", {2});
  m.node("Gather", {"emb", "ids"}, {"g"});                      // [5,7,16]
  m.node("Gather", {"x", "ids"}, {"g1"}).attr("axis", 1);        // [2,5,7,4]
  m.node("GatherND", {"x", "nd"}, {"gnd"});                      // [2] + [3,4]
  m.node("GatherND", {"x", "nd"}, {"gnd_b"}).attr("batch_dims", 1);  // [2] + [4]
  m.node("GatherElements", {"x", "ge_idx"}, {"ge"}).attr("axis", 2);
  m.node("Tile", {"x", "reps"}, {"tile"});                       // [2,6,12]
  m.node("TopK", {"x", "k"}, {"tv", "ti"});                      // [2,3,2]
  m.node("OneHot", {"ids", "depth", "onoff"}, {"oh"});           // [5,7,10]
  m.node("OneHot", {"ids", "depth", "onoff"}, {"oh0"}).attr("axis", 0);  // [10,5,7]
  m.node("ArgMax", {"x"}, {"am"}).attr("axis", 2).attr("keepdims", 0);   // [2,3]
  m.node("CumSum", {"x", "k"}, {"cs"});
  m.node("Trilu", {"x"}, {"tri"});
  m.node("Shape", {"x"}, {"sh_tail"}).attr("start", 1);
  m.node("Size", {"x"}, {"n"});
  m.node("DepthToSpace", {"x4"}, {"d2s"}).attr("blocksize", 2);
  m.input("x4", kF32, {1, 8, 3, 3});
  m.output("g").output("g1").output("gnd").output("gnd_b").output("ge").output("tile").output("tv").output("ti");
  m.output("oh").output("oh0").output("am").output("cs").output("tri").output("sh_tail").output("n").output("d2s");
  auto r = imported(m);
  CHECK(shape_of(r, "g") == Shape{5, 7, 16});
  CHECK(shape_of(r, "g1") == Shape{2, 5, 7, 4});
  CHECK(shape_of(r, "gnd") == Shape{2, 3, 4});
  CHECK(shape_of(r, "gnd_b") == Shape{2, 4});
  CHECK(shape_of(r, "ge") == Shape{2, 3, 1});
  CHECK(shape_of(r, "tile") == Shape{2, 6, 12});
  CHECK(shape_of(r, "tv") == Shape{2, 3, 2});
  CHECK(dtype_of(r, "ti") == core::DType::i64);
  CHECK(shape_of(r, "oh") == Shape{5, 7, 10});
  CHECK(shape_of(r, "oh0") == Shape{10, 5, 7});
  CHECK(shape_of(r, "am") == Shape{2, 3});
  CHECK(shape_of(r, "cs") == Shape{2, 3, 4});
  CHECK(shape_of(r, "tri") == Shape{2, 3, 4});
  CHECK(shape_of(r, "sh_tail") == Shape{2});
  CHECK(shape_of(r, "n") == Shape{});
  CHECK(shape_of(r, "d2s") == Shape{1, 2, 6, 6});
  CHECK(graph::totals(r.graph).parameter_count == 100 * 16 + 2);
}

TEST_CASE("resizing: Resize scales and sizes, Upsample attribute and input forms", "[onnx][rules]") {
  ModelBuilder m(13);
  m.input("x", kF32, {1, 3, 10, 20});
  m.init(tensor_f32("scales", {4}, {1.0f, 1.0f, 2.0f, 0.5f})).init_i64("sizes", {4}, {1, 3, 7, 9});
  m.init(tensor_f32("empty", {0}, {}));
  m.node("Resize", {"x", "", "scales"}, {"r1"});
  m.node("Resize", {"x", "", "", "sizes"}, {"r2"});
  m.node("Resize", {"x", "empty", "empty", "sizes"}, {"r3"});
  m.output("r1").output("r2").output("r3");
  auto r = imported(m);
  CHECK(shape_of(r, "r1") == Shape{1, 3, 20, 10});
  CHECK(shape_of(r, "r2") == Shape{1, 3, 7, 9});
  CHECK(shape_of(r, "r3") == Shape{1, 3, 7, 9});

  ModelBuilder u7(7);
  u7.input("x", kF32, {1, 3, 10, 20});
  u7.node("Upsample", {"x"}, {"y"}).attr_floats("scales", {1, 1, 2, 2});
  u7.output("y");
  CHECK(shape_of(imported(u7), "y") == Shape{1, 3, 20, 40});

  ModelBuilder u9(9);
  u9.input("x", kF32, {1, 3, 10, 20}).init(tensor_f32("s", {4}, {1, 1, 3, 3}));
  u9.node("Upsample", {"x", "s"}, {"y"});
  u9.output("y");
  CHECK(shape_of(imported(u9), "y") == Shape{1, 3, 30, 60});
}

TEST_CASE("losses", "[onnx][rules]") {
  ModelBuilder m(13);
  m.input("scores", kF32, {4, 10}).input("labels", kI64, {4});
  m.input("s3", kF32, {4, 10, 3}).input("l3", kI64, {4, 3});
  m.node("SoftmaxCrossEntropyLoss", {"scores", "labels"}, {"loss", "logp"});
  m.node("SoftmaxCrossEntropyLoss", {"s3", "l3"}, {"loss_none"}).attr("reduction", "none");
  m.node("NegativeLogLikelihoodLoss", {"s3", "l3"}, {"nll"}).attr("reduction", "none");
  m.node("NegativeLogLikelihoodLoss", {"s3", "l3"}, {"nll_mean"});
  m.output("loss").output("logp").output("loss_none").output("nll").output("nll_mean");
  auto r = imported(m);
  CHECK(shape_of(r, "loss") == Shape{});
  CHECK(shape_of(r, "logp") == Shape{4, 10});
  CHECK(shape_of(r, "loss_none") == Shape{4, 3});
  CHECK(shape_of(r, "nll") == Shape{4, 3});
  CHECK(shape_of(r, "nll_mean") == Shape{});
}

TEST_CASE("com.microsoft ops", "[onnx][rules]") {
  ModelBuilder m(13);
  m.opset_import("com.microsoft", 1);
  m.input("x", kF32, {2, 5, 16}).input("ids", kI32, {2, 5}).input("past", kF32, {2, 2, 4, 3, 4});
  m.input("mask", kI32, {2, 8});
  m.init_f32("qkv_w", {16, 48}).init_f32("qkv_b", {48}).init_f32("g", {16}).init_f32("b", {16});
  m.init_f32("wemb", {50, 16}).init_f32("pemb", {32, 16}).init_f32("semb", {2, 16});
  auto ms = [&](const std::string& type, std::vector<std::string> in, std::vector<std::string> out) {
    return m.node(type, std::move(in), std::move(out)).domain("com.microsoft");
  };
  ms("Attention", {"x", "qkv_w", "qkv_b", "mask", "past"}, {"att", "present"}).attr("num_heads", 4);
  ms("SkipLayerNormalization", {"att", "x", "g", "b"}, {"sln", "", "", "sum"});
  ms("EmbedLayerNormalization", {"ids", "ids", "wemb", "pemb", "semb", "g", "b"}, {"emb", "mask_index"});
  ms("FastGelu", {"x", "b"}, {"fg"});
  ms("BiasGelu", {"x", "b"}, {"bg"});
  ms("Gelu", {"x"}, {"ge"});
  ms("BiasDropout", {"x", "b", "x"}, {"bd", "bd_mask"});
  m.output("present").output("sln").output("sum").output("emb").output("mask_index");
  m.output("fg").output("bg").output("ge").output("bd").output("bd_mask");
  auto r = imported(m);
  CHECK(shape_of(r, "att") == Shape{2, 5, 16});
  CHECK(shape_of(r, "present") == Shape{2, 2, 4, 8, 4});  // past 3 + 5 new
  CHECK(shape_of(r, "sln") == Shape{2, 5, 16});
  CHECK(shape_of(r, "sum") == Shape{2, 5, 16});
  CHECK(shape_of(r, "emb") == Shape{2, 5, 16});
  CHECK(shape_of(r, "mask_index") == Shape{2});
  CHECK(shape_of(r, "fg") == Shape{2, 5, 16});
  CHECK(shape_of(r, "bd_mask") == Shape{2, 5, 16});
}

TEST_CASE("removed standard ops old converters still emit", "[onnx][rules]") {
  ModelBuilder m(7);
  m.input("x", kF32, {1, 3, 20, 30});
  m.node("ImageScaler", {"x"}, {"s"}).attr_floats("bias", {1, 2, 3}).attr("scale", 1.0);
  m.node("Crop", {"s"}, {"c"}).attr("border", {2, 3, 4, 5});  // W: 30-2-4, H: 20-3-5
  m.node("Crop", {"s"}, {"c2"}).attr("border", {1, 1, 0, 0}).attr("scale", {8, 9});
  m.node("Affine", {"c"}, {"a"}).attr("alpha", 2.0);
  m.output("a").output("c2");
  auto r = imported(m);
  CHECK(shape_of(r, "c") == Shape{1, 3, 12, 24});
  CHECK(shape_of(r, "c2") == Shape{1, 3, 8, 9});
  CHECK(shape_of(r, "a") == Shape{1, 3, 12, 24});
}

TEST_CASE("recurrent ops", "[onnx][rules]") {
  ModelBuilder m(14);
  m.input("x", kF32, {7, 2, 10}).init_f32("w", {2, 64, 10}).init_f32("r", {2, 64, 16});
  m.node("LSTM", {"x", "w", "r"}, {"y", "yh", "yc"}).attr("hidden_size", 16).attr("direction", "bidirectional");
  m.output("y").output("yh").output("yc");
  auto r = imported(m);
  CHECK(shape_of(r, "y") == Shape{7, 2, 2, 16});
  CHECK(shape_of(r, "yh") == Shape{2, 2, 16});
}

TEST_CASE("shapes that do not fit are errors naming the op", "[onnx][rules]") {
  ModelBuilder m(13);
  m.input("x", kF32, {2, 3, 4}).init_i64("shape", {3}, {3, 1, 1}).init_i64("bad", {2}, {5, -1});
  m.node("Expand", {"x", "shape"}, {"e"}, "expand");  // [2,3,4] and [3,1,1] do not broadcast
  m.output("e");
  auto r = import_model(m);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("op 'expand' (Expand)") != std::string::npos);

  ModelBuilder m2(13);
  m2.input("x", kF32, {2, 3, 4}).init_i64("bad", {2}, {5, -1});
  m2.node("Reshape", {"x", "bad"}, {"y"}, "reshape");  // 24 elements do not split into rows of 5
  m2.output("y");
  auto r2 = import_model(m2);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().message.find("op 'reshape' (Reshape): cannot determine the shape of output 'y'") != std::string::npos);
}

TEST_CASE("ops without our rule fall back to ONNX's per-node inference", "[onnx][rules]") {
  ModelBuilder m(16);
  m.input("x", kF32, {3, 4, 4}).input("img", kF32, {2, 5, 10, 10}).input("grid", kF32, {2, 6, 7, 2});
  m.node("Det", {"x"}, {"det"});                   // [3]
  m.node("GridSample", {"img", "grid"}, {"gs"});   // [N, C, H_out, W_out] = [2, 5, 6, 7]
  m.output("det").output("gs");
  auto r = imported(m);
  CHECK(shape_of(r, "det") == Shape{3});
  CHECK(shape_of(r, "gs") == Shape{2, 5, 6, 7});
}

TEST_CASE("Gather of known values with out-of-range indices keeps its shape", "[onnx][rules]") {
  // A shrunk position table (8 rows) read at 12 positions: the values cannot
  // be folded, the shape is still [12, 4].
  ModelBuilder m(13);
  m.init_f32("wpe", {8, 4}).init_i64("zero", {}, {0}).init_i64("n", {}, {12}).init_i64("one", {}, {1});
  m.node("Range", {"zero", "n", "one"}, {"pos"});
  m.node("Gather", {"wpe", "pos"}, {"pe"});
  m.output("pe");
  CHECK(shape_of(imported(m), "pe") == Shape{12, 4});
}

TEST_CASE("int64 arithmetic that overflows is not tracked, never undefined", "[onnx][rules]") {
  // Found by fuzz_onnx_import (UBSan: 768 * -8574572219831681022). An int64
  // result that overflows leaves the value unknown. Wrapped, 2^62 x 4 would
  // be 0 and ConstantOfShape would silently make a [0] tensor; unknown, the
  // shape cannot be determined and the error names the op.
  constexpr std::int64_t big = 4611686018427387904;  // 2^62
  constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  const std::vector<std::pair<const char*, std::vector<const char*>>> cases = {
      {"Mul", {"big", "four"}},  // 2^64
      {"Add", {"big", "big3"}},  // 2^62 + 1.5 x 2^62
      {"Pow", {"two", "sixty_four"}},  // 2^64
      {"Neg", {"low"}},          // -(-2^63)
      {"Abs", {"low"}},
  };
  for (const auto& [op, inputs] : cases) {
    ModelBuilder m(13);
    m.init_i64("big", {1}, {big}).init_i64("four", {1}, {4}).init_i64("big3", {1}, {6917529027641081856});
    m.init_i64("two", {1}, {2}).init_i64("sixty_four", {1}, {64}).init_i64("low", {1}, {lowest});
    m.node(op, std::vector<std::string>(inputs.begin(), inputs.end()), {"v"}, "arith");
    m.node("ConstantOfShape", {"v"}, {"c"}, "fill");
    m.output("c");
    auto r = import_model(m);
    INFO(op);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("op 'fill' (ConstantOfShape)") != std::string::npos);
  }
}
