#pragma once
// A tiny in-code graph builder for the ops tests: tensors by name, ops by
// name lists ("" = an omitted optional input).

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "planner/graph/graph.hpp"
#include "planner/ops/semantics.hpp"

namespace planner::ops::testing {

using core::DType;
using graph::TensorRole;
using Shape = std::vector<std::int64_t>;

struct Builder {
  graph::OpGraph g;

  Builder& tensor(const std::string& name, Shape shape, TensorRole role, DType dt = DType::f32) {
    graph::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.role = role;
    t.dtype = dt;
    g.add_tensor(std::move(t));
    return *this;
  }
  /// An op output or other run-time value.
  Builder& act(const std::string& n, Shape s, DType dt = DType::f32) { return tensor(n, std::move(s), TensorRole::activation, dt); }
  /// A trainable weight.
  Builder& param(const std::string& n, Shape s, DType dt = DType::f32) { return tensor(n, std::move(s), TensorRole::parameter, dt); }
  /// A graph input carrying data.
  Builder& input(const std::string& n, Shape s, DType dt = DType::f32) { return tensor(n, std::move(s), TensorRole::input, dt); }
  /// A non-trainable initializer.
  Builder& constant(const std::string& n, Shape s, DType dt = DType::f32) { return tensor(n, std::move(s), TensorRole::constant, dt); }

  /// Adds op `name` of `type`; the op is named after its first output.
  graph::OpId op(const std::string& type, std::initializer_list<std::string> ins,
                 std::initializer_list<std::string> outs,
                 std::vector<std::pair<std::string, graph::AttrValue>> attrs = {},
                 const std::string& domain = "") {
    graph::Op o;
    o.type = type;
    o.domain = domain;
    o.name = type + ":" + (outs.size() ? *outs.begin() : std::string("?"));
    for (const auto& n : ins) o.inputs.push_back(n.empty() ? std::nullopt : g.find_tensor(n));
    for (const auto& n : outs) o.outputs.push_back(n.empty() ? std::nullopt : g.find_tensor(n));
    for (auto& [k, v] : attrs) o.attrs.emplace(k, v);
    return g.add_op(std::move(o));
  }

  /// The op's cost with gradients judged by role (no graph-wide mask).
  graph::OpCost cost(graph::OpId id) const { return op_semantics(g.op(id), g).cost; }
  graph::OpClass op_class(graph::OpId id) const { return op_semantics(g.op(id), g).op_class; }
};

}  // namespace planner::ops::testing

namespace planner::ops::testing {
inline graph::AttrValue i64(std::int64_t v) { return v; }
inline graph::AttrValue f64(double v) { return v; }
inline graph::AttrValue ints(std::vector<std::int64_t> v) { return v; }
inline graph::AttrValue str(std::string v) { return v; }
}  // namespace planner::ops::testing

/// Checks the six numbers of an OpCost: forward FLOPs, backward FLOPs,
/// forward bytes read, forward bytes written, backward bytes read, backward
/// bytes written (all exact: the figures are small integers).
#define CHECK_COST(c, ff, bf, fr, fw, br, bw)          \
  do {                                                 \
    const auto& c_ = (c);                              \
    CHECK(c_.forward_flops.value == (ff));             \
    CHECK(c_.backward_flops.value == (bf));            \
    CHECK(c_.forward_bytes_read.value == (fr));        \
    CHECK(c_.forward_bytes_written.value == (fw));     \
    CHECK(c_.backward_bytes_read.value == (br));       \
    CHECK(c_.backward_bytes_written.value == (bw));    \
  } while (0)
