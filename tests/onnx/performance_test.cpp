// Import speed: 100k+ ops in seconds; a GPT-3-sized shape-only model
// (weights as absent external data, ~2000 ops) well under a second.
#include <catch2/catch.hpp>

#include <chrono>

#include "onnx/model_builder.hpp"
#include "planner/graph/graph.hpp"

using namespace planner;
using namespace planner::testing;
namespace importer = planner::onnx;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

#if defined(__SANITIZE_ADDRESS__)
constexpr double kSlowdown = 10.0;
#else
constexpr double kSlowdown = 1.0;
#endif

/// GPT-3 175B: 96 layers, hidden 12288, 96 heads, ffn 4h, vocab 50257.
ModelBuilder gpt3(std::int64_t layers, std::int64_t h, std::int64_t heads, std::int64_t vocab) {
  ModelBuilder m(17);
  m.opset_import("com.microsoft", 1);
  m.input("input_ids", kI64, {"batch", "seq"});
  m.init_external("wte", {vocab, h}, "gpt3.data");
  m.init_i64("split", {3}, {h, h, h});
  m.init_i64("heads_shape", {4}, {0, 0, heads, h / heads});
  m.init_i64("merge_shape", {3}, {0, 0, h});
  m.init(tensor_f32("scale", {}, {8.0f}));
  m.node("Gather", {"wte", "input_ids"}, {"h0"});
  std::string x = "h0";
  for (std::int64_t l = 0; l < layers; ++l) {
    auto p = [&](const std::string& s) { return "l" + std::to_string(l) + "." + s; };
    m.init_external(p("ln1.g"), {h}, "gpt3.data").init_external(p("ln1.b"), {h}, "gpt3.data");
    m.init_external(p("qkv.w"), {h, 3 * h}, "gpt3.data").init_external(p("qkv.b"), {3 * h}, "gpt3.data");
    m.init_external(p("proj.w"), {h, h}, "gpt3.data").init_external(p("proj.b"), {h}, "gpt3.data");
    m.init_external(p("ln2.g"), {h}, "gpt3.data").init_external(p("ln2.b"), {h}, "gpt3.data");
    m.init_external(p("fc1.w"), {h, 4 * h}, "gpt3.data").init_external(p("fc1.b"), {4 * h}, "gpt3.data");
    m.init_external(p("fc2.w"), {4 * h, h}, "gpt3.data").init_external(p("fc2.b"), {h}, "gpt3.data");
    m.node("LayerNormalization", {x, p("ln1.g"), p("ln1.b")}, {p("ln1")}).attr("axis", -1);
    m.node("MatMul", {p("ln1"), p("qkv.w")}, {p("qkv0")});
    m.node("Add", {p("qkv0"), p("qkv.b")}, {p("qkv")});
    m.node("Split", {p("qkv"), "split"}, {p("q0"), p("k0"), p("v0")}).attr("axis", 2);
    for (const char* n : {"q", "k", "v"}) {
      m.node("Reshape", {p(std::string(n) + "0"), "heads_shape"}, {p(std::string(n) + "1")});
      m.node("Transpose", {p(std::string(n) + "1")}, {p(n)})
          .attr("perm", n[0] == 'k' ? std::initializer_list<std::int64_t>{0, 2, 3, 1}
                                    : std::initializer_list<std::int64_t>{0, 2, 1, 3});
    }
    m.node("MatMul", {p("q"), p("k")}, {p("s0")});
    m.node("Div", {p("s0"), "scale"}, {p("s")});
    m.node("Softmax", {p("s")}, {p("a")}).attr("axis", -1);
    m.node("MatMul", {p("a"), p("v")}, {p("o0")});
    m.node("Transpose", {p("o0")}, {p("o1")}).attr("perm", {0, 2, 1, 3});
    m.node("Reshape", {p("o1"), "merge_shape"}, {p("o2")});
    m.node("MatMul", {p("o2"), p("proj.w")}, {p("o3")});
    m.node("Add", {p("o3"), p("proj.b")}, {p("o4")});
    m.node("Add", {x, p("o4")}, {p("r1")});
    m.node("LayerNormalization", {p("r1"), p("ln2.g"), p("ln2.b")}, {p("ln2")}).attr("axis", -1);
    m.node("MatMul", {p("ln2"), p("fc1.w")}, {p("f0")});
    m.node("FastGelu", {p("f0"), p("fc1.b")}, {p("f1")}).domain("com.microsoft");
    m.node("MatMul", {p("f1"), p("fc2.w")}, {p("f2")});
    m.node("Add", {p("f2"), p("fc2.b")}, {p("f3")});
    m.node("Add", {p("r1"), p("f3")}, {p("out")});
    x = p("out");
  }
  m.output(x);
  return m;
}

}  // namespace

TEST_CASE("a GPT-3-sized shape-only model imports well under a second", "[onnx][perf]") {
  const std::int64_t layers = 96, h = 12288, vocab = 50257;
  ModelBuilder m = gpt3(layers, h, 96, vocab);
  const std::string bytes = m.bytes();
  importer::ImportOptions o;
  o.batch = 1;
  o.dims["seq"] = 2048;
  auto t0 = std::chrono::steady_clock::now();
  auto r = importer::import_bytes(bytes, "gpt3.onnx", ".", o);
  const double secs = seconds_since(t0);
  REQUIRE(r.ok());
  CHECK(r->graph.num_ops() > 2000);
  CHECK(secs < 1.0 * kSlowdown);
  // 12 h^2 + 13 h per layer, plus the embedding.
  const std::int64_t expected = layers * (12 * h * h + 13 * h) + vocab * h;
  CHECK(graph::totals(r->graph).parameter_count == expected);
  CHECK(expected == 174'579'068'928);  // by hand: 96 * 1,812,099,072 + 617,558,016
  const auto out = r->graph.tensor(r->graph.graph_outputs.at(0));
  CHECK(out.shape == std::vector<std::int64_t>{1, 2048, h});
  CHECK(out.batch_axis == 0);
  // The forward pass of a layer is ~24 b s h^2 + 4 b s^2 h FLOPs.
  const double per_layer = 24.0 * 2048 * h * h + 4.0 * 2048.0 * 2048 * h;
  CHECK(graph::totals(r->graph).forward_flops.value >= 0.95 * layers * per_layer);
  int blocks = 0;
  for (const auto& b : r->graph.blocks) blocks = std::max(blocks, b.count);
  CHECK(blocks >= 95);
}

TEST_CASE("a model with 100k+ ops imports in seconds", "[onnx][perf]") {
  ModelBuilder m;
  m.input("x", kF32, {"batch", 16}).init_f32("c", {16});
  std::string prev = "x";
  const int n = 100'000;
  for (int k = 0; k < n; ++k) {
    const std::string out = "t" + std::to_string(k);
    if (k % 2) m.node("Relu", {prev}, {out});
    else m.node("Add", {prev, "c"}, {out});
    prev = out;
  }
  m.output(prev);
  // Reverse the node list: the importer must sort 100k nodes without recursion.
  auto& nodes = *m.proto().mutable_node();
  for (int i = 0, j = nodes.size() - 1; i < j; ++i, --j) nodes.SwapElements(i, j);
  importer::ImportOptions o;
  o.batch = 4;
  auto t0 = std::chrono::steady_clock::now();
  auto r = import_model(m, o);
  const double secs = seconds_since(t0);
  REQUIRE(r.ok());
  CHECK(r->graph.num_ops() == static_cast<std::size_t>(n));
  CHECK(r->graph.tensor(r->graph.graph_outputs.at(0)).shape == std::vector<std::int64_t>{4, 16});
  CHECK(secs < 10.0 * kSlowdown);
}
