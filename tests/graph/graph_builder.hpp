#pragma once
// A tiny fluent builder for graphs in tests (no ONNX involved).
#include <string>
#include <vector>

#include "planner/graph/graph.hpp"

namespace planner::testing {

struct GraphBuilder {
  graph::OpGraph g;

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
  graph::OpId op(const std::string& name, const std::string& type, std::vector<graph::TensorId> ins,
                 std::vector<graph::TensorId> outs) {
    graph::Op o;
    o.name = name;
    o.type = type;
    for (auto i : ins) o.inputs.emplace_back(i);
    for (auto i : outs) o.outputs.emplace_back(i);
    return g.add_op(std::move(o));
  }
};

}  // namespace planner::testing
