// Ops removed from the ONNX standard that old exporters (opset <= 9) still
// emit.
//   ImageScaler  y = scale * x + bias[c]: 2/elem, elementwise (memory-bound
//                rule: backward 2x FLOPs, reads dY, writes dX).
//   Affine       y = alpha * x + beta: 2/elem, elementwise.
//   ScaledTanh   alpha * tanh(beta * x): 3/elem, keeps the output.
//   ParametricSoftplus alpha * ln(1 + exp(beta x)): 5/elem, keeps the input.
//   Crop         a slice: reads and writes bytes(Y); backward reads dY,
//                writes the zero-padded dX.
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

OpCost scale_shift(const CostQuery& q) {
  if (!q.out(0)) return fallback_cost(q.op, q.g, q.grad);
  return memory_bound(q, 2.0 * numel(q.out(0)), Bytes(0));
}

OpCost scaled_tanh(const CostQuery& q) {
  if (!q.out(0)) return fallback_cost(q.op, q.g, q.grad);
  return memory_bound(q, 3.0 * numel(q.out(0)), bytes(q.out(0)));
}

OpCost parametric_softplus(const CostQuery& q) {
  if (!q.out(0)) return fallback_cost(q.op, q.g, q.grad);
  return memory_bound(q, 5.0 * numel(q.out(0)), bytes(q.in(0)));
}

OpCost crop(const CostQuery& q) {
  const auto* y = q.out(0);
  if (!q.in(0) || !y) return fallback_cost(q.op, q.g, q.grad);
  OpCost c;
  c.forward_bytes_read = bytes(y);
  c.forward_bytes_written = bytes(y);
  c.backward_bytes_read = bytes(y);
  c.backward_bytes_written = in_grad_bytes(q);
  return c;
}

constexpr std::array kRules{
    OpRule{"", "ImageScaler", OpClass::elementwise, &scale_shift},
    OpRule{"", "Affine", OpClass::elementwise, &scale_shift},
    OpRule{"", "ScaledTanh", OpClass::elementwise, &scaled_tanh},
    OpRule{"", "ParametricSoftplus", OpClass::elementwise, &parametric_softplus},
    OpRule{"", "Crop", OpClass::data_movement, &crop},
};

}  // namespace

std::span<const OpRule> legacy_rules() { return kRules; }

}  // namespace planner::ops
