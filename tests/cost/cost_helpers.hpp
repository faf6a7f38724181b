#pragma once
// Shared by the cost tests: the bundled profiles, contexts, and small graphs
// built in code (a GPT of Korthikanti's shape, a lone attention, one op).

#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "planner/cluster/profile.hpp"
#include "planner/cost/cost_model.hpp"
#include "planner/graph/analysis.hpp"
#include "planner/graph/graph.hpp"
#include "planner/ops/semantics.hpp"

#ifndef PLANNER_SOURCE_DIR
#error "compile the cost tests with -DPLANNER_SOURCE_DIR='\"/path/to/repo\"'"
#endif

namespace cost_test {

using namespace planner;
using core::DType;
using graph::TensorRole;
using Shape = std::vector<std::int64_t>;

inline cluster::ClusterProfile profile(const std::string& name) {
  auto p = cluster::load_profile(name, std::filesystem::path(PLANNER_SOURCE_DIR) / "cost_profiles");
  if (!p.ok()) FAIL(p.error().message);
  return std::move(p).value();
}

inline cost::ComputeContext context(const std::string& name, cost::PrecisionPolicy policy = {},
                                    cost::AttentionMode mode = cost::AttentionMode::flash,
                                    cost::RecomputePolicy recompute = cost::RecomputePolicy::none) {
  auto c = cost::ComputeContext::create(profile(name).device, std::move(policy), mode, recompute);
  if (!c.ok()) FAIL(c.error().message);
  return std::move(c).value();
}

/// Tensors by name, ops by name lists.
struct Builder {
  graph::OpGraph g;

  graph::TensorId tensor(const std::string& name, Shape shape, TensorRole role, DType dt = DType::f32) {
    graph::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.role = role;
    t.dtype = dt;
    return g.add_tensor(std::move(t));
  }
  std::string act(const std::string& n, Shape s, DType dt = DType::f32) {
    tensor(n, std::move(s), TensorRole::activation, dt);
    return n;
  }
  std::string param(const std::string& n, Shape s) {
    tensor(n, std::move(s), TensorRole::parameter);
    return n;
  }
  std::string input(const std::string& n, Shape s, DType dt = DType::f32) {
    tensor(n, std::move(s), TensorRole::input, dt);
    return n;
  }
  std::string constant(const std::string& n, Shape s, DType dt = DType::f32) {
    tensor(n, std::move(s), TensorRole::constant, dt);
    return n;
  }
  graph::OpId op(const std::string& type, std::vector<std::string> ins, std::vector<std::string> outs,
                 std::vector<std::pair<std::string, graph::AttrValue>> attrs = {}) {
    graph::Op o;
    o.type = type;
    o.name = type + ":" + outs.front();
    for (const auto& n : ins) o.inputs.push_back(g.find_tensor(n));
    for (const auto& n : outs) o.outputs.push_back(g.find_tensor(n));
    for (auto& [k, v] : attrs) o.attrs.emplace(k, v);
    return g.add_op(std::move(o));
  }
  /// Costs (ops::annotate) and attention patterns (graph::find_attention).
  graph::OpGraph finish() {
    ops::annotate(g);
    graph::find_attention(g);
    return std::move(g);
  }
};

/// Korthikanti's GPT: b micro-batch, s sequence, h hidden, a heads, V
/// vocabulary, l layers, ffn 4h, [b, s, h] layout.
struct GptShape {
  std::int64_t b = 2, s = 128, h = 256, a = 4, V = 1000;
  int layers = 2;
  bool dropout = true;
  /// GeLU as Div, Erf, Add, Mul, Mul (as planner model writes it) instead of one Gelu op.
  bool small_op_gelu = false;
  /// A causal mask [s, s] added to the scores (a constant).
  bool mask = true;

  double sbh() const { return static_cast<double>(s * b * h); }
  double as2b() const { return static_cast<double>(a * s * s * b); }
  double sb() const { return static_cast<double>(s * b); }
};

/// Builds the GPT; op.layer is set per layer (embedding and head outside).
/// Requires: the caller runs nothing else; the graph is costed and analysed.
inline graph::OpGraph build_gpt(const GptShape& m) {
  Builder B;
  const auto b = m.b, s = m.s, h = m.h, a = m.a, d = m.h / m.a, V = m.V;
  B.input("tokens", {b, s}, DType::i64);
  B.input("labels", {b, s}, DType::i64);
  B.param("wte", {V, h});
  B.act("x0", {b, s, h});
  B.op("Gather", {"wte", "tokens"}, {"x0"});
  B.constant("scale", {});
  B.constant("mask", {s, s});
  B.constant("split3", {3}, DType::i64);
  B.constant("shape_bsad", {4}, DType::i64);
  B.constant("shape_bsh", {3}, DType::i64);
  B.constant("c_sqrt2", {});
  B.constant("c_one", {});
  B.constant("c_half", {});
  std::vector<std::pair<graph::OpId, int>> layer_ops;
  std::string x = "x0";
  for (int l = 0; l < m.layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    const auto first = static_cast<std::uint32_t>(B.g.num_ops());
    auto n = [&](const std::string& name) { return p + name; };
    auto bsh = [&](const std::string& name) { return B.act(n(name), {b, s, h}); };
    auto ln = [&](const std::string& in, const std::string& out) {
      B.param(n(out + ".g"), {h});
      B.param(n(out + ".b"), {h});
      B.op("LayerNormalization", {in, n(out + ".g"), n(out + ".b")}, {bsh(out)}, {{"axis", std::int64_t{-1}}});
    };
    auto dropout = [&](const std::string& in, const std::string& out, Shape shape) {
      if (!m.dropout) return in;
      B.act(n(out), shape);
      B.op("Dropout", {in}, {n(out)});
      return n(out);
    };
    // Attention block.
    ln(x, "ln1");
    B.param(n("wqkv"), {h, 3 * h});
    B.param(n("bqkv"), {3 * h});
    B.act(n("qkv"), {b, s, 3 * h});
    B.act(n("qkvb"), {b, s, 3 * h});
    B.op("MatMul", {n("ln1"), n("wqkv")}, {n("qkv")});
    B.op("Add", {n("qkv"), n("bqkv")}, {n("qkvb")});
    B.op("Split", {n("qkvb"), "split3"}, {bsh("q"), bsh("k"), bsh("v")}, {{"axis", std::int64_t{2}}});
    for (const char* t : {"q", "k", "v"}) {
      const std::string r = n(std::string(t) + "r");
      B.act(r, {b, s, a, d});
      B.op("Reshape", {n(t), "shape_bsad"}, {r});
      const bool key = std::string(t) == "k";
      B.act(n(std::string(t) + "t"), key ? Shape{b, a, d, s} : Shape{b, a, s, d});
      B.op("Transpose", {r}, {n(std::string(t) + "t")},
           {{"perm", key ? std::vector<std::int64_t>{0, 2, 3, 1} : std::vector<std::int64_t>{0, 2, 1, 3}}});
    }
    const Shape bass{b, a, s, s};
    B.act(n("scores"), bass);
    B.op("MatMul", {n("qt"), n("kt")}, {n("scores")});
    B.act(n("scaled"), bass);
    B.op("Mul", {n("scores"), "scale"}, {n("scaled")});
    std::string sm = n("scaled");
    if (m.mask) {
      B.act(n("masked"), bass);
      B.op("Add", {n("scaled"), "mask"}, {n("masked")});
      sm = n("masked");
    }
    B.act(n("probs"), bass);
    B.op("Softmax", {sm}, {n("probs")}, {{"axis", std::int64_t{-1}}});
    const std::string pd = dropout(n("probs"), "probs_drop", bass);
    B.act(n("ctx"), {b, a, s, d});
    B.op("MatMul", {pd, n("vt")}, {n("ctx")});
    B.act(n("ctx_t"), {b, s, a, d});
    B.op("Transpose", {n("ctx")}, {n("ctx_t")}, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}});
    B.op("Reshape", {n("ctx_t"), "shape_bsh"}, {bsh("ctx_r")});
    B.param(n("wo"), {h, h});
    B.param(n("bo"), {h});
    B.op("MatMul", {n("ctx_r"), n("wo")}, {bsh("proj")});
    B.op("Add", {n("proj"), n("bo")}, {bsh("projb")});
    const std::string pr = dropout(n("projb"), "proj_drop", {b, s, h});
    B.op("Add", {x, pr}, {bsh("x1")});
    // MLP block.
    ln(n("x1"), "ln2");
    B.param(n("w1"), {h, 4 * h});
    B.param(n("b1"), {4 * h});
    B.param(n("w2"), {4 * h, h});
    B.param(n("b2"), {h});
    auto b4h = [&](const std::string& name) { return B.act(n(name), {b, s, 4 * h}); };
    B.op("MatMul", {n("ln2"), n("w1")}, {b4h("f1")});
    B.op("Add", {n("f1"), n("b1")}, {b4h("f1b")});
    if (m.small_op_gelu) {
      B.op("Div", {n("f1b"), "c_sqrt2"}, {b4h("g_div")});
      B.op("Erf", {n("g_div")}, {b4h("g_erf")});
      B.op("Add", {n("g_erf"), "c_one"}, {b4h("g_add")});
      B.op("Mul", {n("f1b"), n("g_add")}, {b4h("g_mul")});
      B.op("Mul", {n("g_mul"), "c_half"}, {b4h("gelu")});
    } else {
      B.op("Gelu", {n("f1b")}, {b4h("gelu")});
    }
    B.op("MatMul", {n("gelu"), n("w2")}, {bsh("f2")});
    B.op("Add", {n("f2"), n("b2")}, {bsh("f2b")});
    const std::string fd = dropout(n("f2b"), "f2_drop", {b, s, h});
    B.op("Add", {n("x1"), fd}, {bsh("x2")});
    x = n("x2");
    for (auto i = first; i < B.g.num_ops(); ++i) layer_ops.emplace_back(graph::OpId{i}, l);
  }
  B.param("lnf.g", {h});
  B.param("lnf.b", {h});
  B.act("lnf", {b, s, h});
  B.op("LayerNormalization", {x, "lnf.g", "lnf.b"}, {"lnf"}, {{"axis", std::int64_t{-1}}});
  B.param("wlm", {h, V});
  B.act("logits", {b, s, V});
  B.op("MatMul", {"lnf", "wlm"}, {"logits"});
  B.constant("shape_flat", {2}, DType::i64);
  B.constant("shape_labels", {1}, DType::i64);
  B.act("logits_flat", {b * s, V});
  B.op("Reshape", {"logits", "shape_flat"}, {"logits_flat"});
  B.act("labels_flat", {b * s}, DType::i64);
  B.op("Reshape", {"labels", "shape_labels"}, {"labels_flat"});
  B.act("loss", {});
  B.op("SoftmaxCrossEntropyLoss", {"logits_flat", "labels_flat"}, {"loss"}, {{"reduction", std::string("mean")}});
  B.g.graph_inputs = {*B.g.find_tensor("tokens"), *B.g.find_tensor("labels")};
  B.g.graph_outputs = {*B.g.find_tensor("loss")};
  graph::OpGraph g = B.finish();
  for (auto [id, l] : layer_ops) g.op(id).layer = l;
  graph::find_recompute_modules(g);
  return g;
}

}  // namespace cost_test
