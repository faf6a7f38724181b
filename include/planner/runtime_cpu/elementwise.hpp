#pragma once
/// Elementwise kernels with numpy broadcasting: binary arithmetic, unary
/// activations, broadcast (ONNX Expand) and its adjoint (sum to a shape).
///
/// Backward: the local derivative times dy, then summed over every axis the
/// operand was broadcast along (sum_to_shape). Local derivatives:
///   add: 1, 1        sub: 1, -1        mul: b, a        div: 1/b, -a/b^2
///   relu: [x > 0]    sigmoid s: s(1-s)  silu x*s: s + x s (1-s)   tanh: 1-y^2
///   erf: 2/sqrt(pi) exp(-x^2)          gelu 0.5x(1+erf(x/sqrt2)): Phi(x) + x phi(x)
///   sqrt: 1/(2y)     exp: y            log: 1/x     neg: -1     cos: -sin x   sin: cos x

#include <optional>

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu {

enum class BinaryOp { add, sub, mul, div };
enum class UnaryOp { relu, gelu, erf, sigmoid, silu, tanh, sqrt, exp, log, neg, cos, sin };

/// Numpy broadcast of two shapes; nullopt when incompatible.
std::optional<Shape> broadcast_shape(const Shape& a, const Shape& b);
/// x broadcast to `shape` (ONNX Expand with a known output shape).
/// Requires: broadcast_shape(x.shape, shape) == shape.
Tensor broadcast_to(const Tensor& x, const Shape& shape);
/// The adjoint of broadcast_to: g summed over the broadcast axes down to `shape`.
/// Requires: broadcast_shape(shape, g.shape) == g.shape.
Tensor sum_to_shape(const Tensor& g, const Shape& shape);
/// The same, taking g's storage when nothing is summed (no copy).
Tensor sum_to_shape(Tensor&& g, const Shape& shape);

/// Requires: broadcast_shape(a.shape, b.shape).
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
struct BinaryGrads {
  Tensor da, db;
};
/// dA and dB; a gradient not needed (`need_a` / `need_b` false: a constant
/// operand, gelu's 0.5 or the scores' scale) is not computed and is empty.
BinaryGrads binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dy, bool need_a = true,
                            bool need_b = true);

Tensor unary(UnaryOp op, const Tensor& x);
/// y = unary(op, x). Requires: equal shapes.
Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy);

/// y = x * s (a scalar), the adjoint of itself.
Tensor scale(const Tensor& x, float s);
/// a += b elementwise. Requires: equal shapes.
void accumulate(Tensor& a, const Tensor& b);

}  // namespace planner::runtime_cpu
