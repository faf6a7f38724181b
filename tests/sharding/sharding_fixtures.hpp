#pragma once
// Test fixtures for the op-sharding search: a simple cost oracle and small
// models built in code (a Megatron GPT as `planner model gpt` writes it, an
// MLP), annotated and analysed like imported graphs.

#include <cmath>
#include <string>
#include <vector>

#include "planner/graph/analysis.hpp"
#include "planner/graph/graph.hpp"
#include "planner/ops/semantics.hpp"
#include "planner/ops/sharding.hpp"
#include "planner/sharding/lower_sharding.hpp"

namespace planner::sharding::testing {

/// time = flops / 1e12 + bytes / 1e11 per op; ring collectives (BRIEF §3)
/// with link bandwidth `bw` and latency `alpha`; memory = 16 B per weight
/// element plus the floating outputs kept for backward.
struct SimpleOracle final : ShardingCostOracle {
  double flops_per_s = 1e12;
  double bytes_per_s = 1e11;
  double bw = 1e11;
  double alpha = 5e-6;
  double bytes_per_param = 16.0;

  Seconds op_time(const graph::Op& op, const graph::OpGraph&, const ops::Strategy& s) const override {
    const auto& c = op.cost;
    const double flops = c.forward_flops.value + c.backward_flops.value;
    const double bytes = c.forward_bytes_read.value + c.forward_bytes_written.value + c.backward_bytes_read.value +
                         c.backward_bytes_written.value;
    return Seconds((flops / flops_per_s + bytes / bytes_per_s) * s.compute_fraction);
  }
  Seconds comm_time(const layout::CommStep& st, const layout::DeviceMesh&) const override {
    const double n = st.group_size, S = st.bytes.value;
    if (layout::is_local(st.kind)) return Seconds(0);
    switch (*st.kind) {
      case core::Collective::all_reduce: return Seconds(2 * (n - 1) / n * S / bw + 2 * (n - 1) * alpha);
      case core::Collective::all_gather:
      case core::Collective::reduce_scatter: return Seconds((n - 1) / n * S / bw + (n - 1) * alpha);
      case core::Collective::all_to_all: return Seconds((n - 1) / n * S / bw + alpha);
      default: return Seconds(S / bw + alpha);
    }
  }
  Bytes memory(const ops::OpSharding& unit, const ops::Strategy& s, const graph::OpGraph& g,
               const layout::DeviceMesh& mesh) const override {
    double b = 0;
    for (std::size_t p = 0; p < unit.spec.inputs.size(); ++p) {
      const auto& port = unit.spec.inputs[p];
      if (!port.tensor || !s.inputs[p]) continue;
      const auto& t = g.tensor(*port.tensor);
      if (t.role != graph::TensorRole::parameter) continue;
      b += ops::local_bytes(t, *s.inputs[p], mesh).value / static_cast<double>(core::dtype_size(t.dtype)) *
           bytes_per_param;
    }
    for (std::size_t p = 0; p < unit.spec.outputs.size(); ++p) {
      const auto& port = unit.spec.outputs[p];
      if (!port.tensor || !s.outputs[p]) continue;
      const auto& t = g.tensor(*port.tensor);
      if (core::is_floating(t.dtype)) b += ops::local_bytes(t, *s.outputs[p], mesh).value;
    }
    return Bytes(b);
  }
};

/// A small graph builder with the layers of src/modelgen (linear, layer
/// norm, erf-GeLU, heads split, attention with a causal mask, LM loss).
struct ModelBuilder {
  graph::OpGraph g;
  int serial = 0;

  graph::TensorId tensor(const std::string& name, std::vector<std::int64_t> shape,
                         graph::TensorRole role = graph::TensorRole::activation,
                         core::DType dt = core::DType::f32) {
    graph::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.role = role;
    t.dtype = dt;
    return g.add_tensor(std::move(t));
  }
  graph::TensorId param(const std::string& name, std::vector<std::int64_t> shape) {
    return tensor(name, std::move(shape), graph::TensorRole::parameter);
  }
  graph::TensorId input(const std::string& name, std::vector<std::int64_t> shape, core::DType dt) {
    auto id = tensor(name, std::move(shape), graph::TensorRole::input, dt);
    g.tensor(id).batch_axis = 0;
    g.graph_inputs.push_back(id);
    return id;
  }
  graph::TensorId ints(const std::string& name, std::vector<std::int64_t> shape) {
    return tensor(name, std::move(shape), graph::TensorRole::constant, core::DType::i64);
  }
  graph::TensorId scalar(const std::string& name) { return tensor(name, {}, graph::TensorRole::constant); }
  /// Adds op `name` writing one new tensor of `shape` (named like the op).
  graph::TensorId op(const std::string& name, const std::string& type, std::vector<graph::TensorId> ins,
                     std::vector<std::int64_t> shape, std::vector<std::pair<std::string, graph::AttrValue>> attrs = {},
                     core::DType dt = core::DType::f32) {
    auto out = tensor(name, std::move(shape), graph::TensorRole::activation, dt);
    graph::Op o;
    o.name = name;
    o.type = type;
    for (auto i : ins) o.inputs.emplace_back(i);
    o.outputs.emplace_back(out);
    for (auto& [k, v] : attrs) o.attrs.emplace(k, v);
    g.add_op(std::move(o));
    return out;
  }
  std::vector<std::int64_t> shape(graph::TensorId t) const { return g.tensor(t).shape; }
  std::vector<std::int64_t> with_last(graph::TensorId t, std::int64_t v) const {
    auto s = shape(t);
    s.back() = v;
    return s;
  }

  graph::TensorId linear(const std::string& n, graph::TensorId x, std::int64_t in, std::int64_t out, bool bias) {
    auto w = param(n + ".weight", {in, out});
    auto y = op(n + "/MatMul", "MatMul", {x, w}, with_last(x, out));
    if (!bias) return y;
    return op(n + "/Add", "Add", {y, param(n + ".bias", {out})}, shape(y));
  }
  graph::TensorId layer_norm(const std::string& n, graph::TensorId x, std::int64_t h) {
    return op(n, "LayerNormalization", {x, param(n + ".weight", {h}), param(n + ".bias", {h})}, shape(x),
              {{"axis", std::int64_t{-1}}});
  }
  graph::TensorId gelu(const std::string& n, graph::TensorId x) {
    auto s = op(n + "/Div", "Div", {x, scalar(n + ".sqrt2")}, shape(x));
    auto e = op(n + "/Erf", "Erf", {s}, shape(x));
    auto p = op(n + "/Add", "Add", {e, scalar(n + ".one")}, shape(x));
    auto m = op(n + "/Mul", "Mul", {x, p}, shape(x));
    return op(n + "/Mul2", "Mul", {m, scalar(n + ".half")}, shape(x));
  }
  graph::TensorId split_heads(const std::string& n, graph::TensorId x, std::int64_t B, std::int64_t S,
                              std::int64_t heads, std::int64_t d, bool transposed) {
    auto r = op(n + "/Reshape", "Reshape", {x, ints(n + ".shape", {4})}, {B, S, heads, d});
    if (transposed) return op(n + "/Transpose", "Transpose", {r}, {B, heads, d, S}, {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}});
    return op(n + "/Transpose", "Transpose", {r}, {B, heads, S, d}, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}});
  }
  graph::TensorId causal_mask(std::int64_t S) {
    auto full = op("causal_mask/ConstantOfShape", "ConstantOfShape", {ints("causal_mask.shape", {2})}, {S, S});
    return op("causal_mask/Trilu", "Trilu", {full, ints("causal_mask.k", {})}, {S, S}, {{"upper", std::int64_t{1}}});
  }

  /// Megatron GPT: learned positions, pre-LN, fused QKV, causal attention,
  /// GeLU MLP of width `ffn`, final LN, untied LM head, cross-entropy.
  /// tied: the LM head reads embed.tokens.weight through a Transpose
  /// (GPT-2, Megatron GPT) instead of its own weight.
  void gpt(std::int64_t B, std::int64_t S, std::int64_t h, std::int64_t heads, std::int64_t ffn, std::int64_t V,
           int layers, bool tied = false) {
    const std::int64_t d = h / heads;
    auto ids = input("input_ids", {B, S}, core::DType::i64);
    auto labels = input("labels", {B, S}, core::DType::i64);
    const auto wte = param("embed.tokens.weight", {V, h});
    auto tok = op("embed/tokens", "Gather", {wte, ids}, {B, S, h});
    auto pos = op("embed/positions", "Gather", {param("embed.positions.weight", {S, h}), ints("position_ids", {S})}, {S, h});
    auto x = op("embed/Add", "Add", {tok, pos}, {B, S, h});
    auto mask = causal_mask(S);
    for (int i = 0; i < layers; ++i) {
      const std::string L = "layers." + std::to_string(i);
      auto h1 = layer_norm(L + "/ln1", x, h);
      auto qkv = linear(L + "/attn/qkv", h1, h, 3 * h, true);
      std::vector<graph::TensorId> parts;
      {
        graph::Op o;
        o.name = L + "/attn/Split";
        o.type = "Split";
        o.inputs = {qkv, ints(L + ".split", {3})};
        for (const char* p : {"q", "k", "v"}) o.outputs.emplace_back(parts.emplace_back(tensor(L + "/attn/" + p, {B, S, h})));
        o.attrs.emplace("axis", std::int64_t{-1});
        g.add_op(std::move(o));
      }
      auto q = split_heads(L + "/attn/q", parts[0], B, S, heads, d, false);
      auto kT = split_heads(L + "/attn/k", parts[1], B, S, heads, d, true);
      auto v = split_heads(L + "/attn/v", parts[2], B, S, heads, d, false);
      auto s = op(L + "/attn/scores/MatMul", "MatMul", {q, kT}, {B, heads, S, S});
      s = op(L + "/attn/scores/Mul", "Mul", {s, scalar(L + ".scale")}, {B, heads, S, S});
      s = op(L + "/attn/scores/Add", "Add", {s, mask}, {B, heads, S, S});
      auto p = op(L + "/attn/Softmax", "Softmax", {s}, {B, heads, S, S}, {{"axis", std::int64_t{-1}}});
      auto c = op(L + "/attn/context/MatMul", "MatMul", {p, v}, {B, heads, S, d});
      c = op(L + "/attn/context/Transpose", "Transpose", {c}, {B, S, heads, d}, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}});
      c = op(L + "/attn/context/Reshape", "Reshape", {c, ints(L + ".ctx_shape", {3})}, {B, S, h});
      auto o = linear(L + "/attn/proj", c, h, h, true);
      x = op(L + "/attn_residual", "Add", {x, o}, {B, S, h});
      auto h2 = layer_norm(L + "/ln2", x, h);
      auto u = linear(L + "/mlp/fc1", h2, h, ffn, true);
      auto a = gelu(L + "/mlp/gelu", u);
      auto y = linear(L + "/mlp/fc2", a, ffn, h, true);
      x = op(L + "/mlp_residual", "Add", {x, y}, {B, S, h});
    }
    x = layer_norm("final_ln", x, h);
    auto logits = tied ? op("lm_head/MatMul", "MatMul",
                            {x, op("lm_head/tied", "Transpose", {wte}, {h, V}, {{"perm", std::vector<std::int64_t>{1, 0}}})},
                            {B, S, V})
                       : linear("lm_head", x, h, V, false);
    auto lf = op("loss/logits", "Reshape", {logits, ints("loss.logits_shape", {2})}, {B * S, V});
    auto yf = op("loss/labels", "Reshape", {labels, ints("loss.labels_shape", {1})}, {B * S}, {}, core::DType::i64);
    auto loss = op("loss", "SoftmaxCrossEntropyLoss", {lf, yf}, {}, {{"reduction", std::string("mean")}});
    g.graph_outputs.push_back(loss);
    finish();
  }

  /// x[B,h] -> fc1 (h x ffn) -> Relu -> fc2 (ffn x classes) -> cross-entropy.
  void mlp(std::int64_t B, std::int64_t h, std::int64_t ffn, std::int64_t classes) {
    auto x = input("x", {B, h}, core::DType::f32);
    auto labels = input("labels", {B}, core::DType::i64);
    auto u = linear("fc1", x, h, ffn, true);
    auto a = op("relu", "Relu", {u}, shape(u));
    auto y = linear("fc2", a, ffn, classes, true);
    auto loss = op("loss", "SoftmaxCrossEntropyLoss", {y, labels}, {}, {{"reduction", std::string("mean")}});
    g.graph_outputs.push_back(loss);
    finish();
  }

  /// Costs, attention patterns and repeated layers, as after import.
  void finish() {
    ops::annotate(g);
    graph::analyze(g);
  }
};

/// Number of planned collectives matching the filter, weighted by count.
template <typename F>
int count_comms(const std::vector<PlannedComm>& v, F&& f) {
  int n = 0;
  for (const auto& c : v)
    if (f(c)) n += c.count;
  return n;
}

}  // namespace planner::sharding::testing
