#include "planner/runtime_cpu/elementwise.hpp"

#include <cassert>
#include <cmath>
#include <numbers>

#include "detail.hpp"

namespace planner::runtime_cpu {

using detail::uz;

std::optional<Shape> broadcast_shape(const Shape& a, const Shape& b) {
  const std::size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const std::int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  Tensor y(shape);
  const auto m = detail::broadcast_map(x.shape, shape);
  for (std::size_t k = 0; k < m.size(); ++k) y.data[k] = x.data[uz(m[k])];
  return y;
}

Tensor sum_to_shape(const Tensor& g, const Shape& shape) {
  if (g.shape == shape) return g;
  // Accumulate in double so that long reductions (bias gradients over many rows) stay exact to fp32.
  std::vector<double> acc(uz(numel(shape)), 0.0);
  const auto m = detail::broadcast_map(shape, g.shape);
  for (std::size_t k = 0; k < m.size(); ++k) acc[uz(m[k])] += g.data[k];
  Tensor y(shape);
  for (std::size_t k = 0; k < acc.size(); ++k) y.data[k] = static_cast<float>(acc[k]);
  return y;
}

namespace {

float apply(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::sub: return a - b;
    case BinaryOp::mul: return a * b;
    case BinaryOp::div: return a / b;
  }
  return 0.0f;
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const auto shape = broadcast_shape(a.shape, b.shape);
  assert(shape);
  Tensor y(*shape);
  if (a.shape == b.shape) {
    for (std::size_t k = 0; k < y.data.size(); ++k) y.data[k] = apply(op, a.data[k], b.data[k]);
    return y;
  }
  const auto am = detail::broadcast_map(a.shape, *shape), bm = detail::broadcast_map(b.shape, *shape);
  for (std::size_t k = 0; k < y.data.size(); ++k) y.data[k] = apply(op, a.data[uz(am[k])], b.data[uz(bm[k])]);
  return y;
}

BinaryGrads binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dy) {
  const Shape& s = dy.shape;
  const auto am = detail::broadcast_map(a.shape, s), bm = detail::broadcast_map(b.shape, s);
  Tensor ga(s), gb(s);  // local gradients at the output shape, then summed down
  for (std::size_t k = 0; k < dy.data.size(); ++k) {
    const float x = a.data[uz(am[k])], z = b.data[uz(bm[k])], g = dy.data[k];
    switch (op) {
      case BinaryOp::add: ga.data[k] = g; gb.data[k] = g; break;
      case BinaryOp::sub: ga.data[k] = g; gb.data[k] = -g; break;
      case BinaryOp::mul: ga.data[k] = g * z; gb.data[k] = g * x; break;
      case BinaryOp::div: ga.data[k] = g / z; gb.data[k] = -g * x / (z * z); break;
    }
  }
  return {sum_to_shape(ga, a.shape), sum_to_shape(gb, b.shape)};
}

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

float unary_value(UnaryOp op, float xf) {
  const double x = xf;
  switch (op) {
    case UnaryOp::relu: return xf > 0.0f ? xf : 0.0f;
    case UnaryOp::gelu: return static_cast<float>(0.5 * x * (1.0 + std::erf(x * kInvSqrt2)));
    case UnaryOp::erf: return static_cast<float>(std::erf(x));
    case UnaryOp::sigmoid: return static_cast<float>(1.0 / (1.0 + std::exp(-x)));
    case UnaryOp::silu: return static_cast<float>(x / (1.0 + std::exp(-x)));
    case UnaryOp::tanh: return static_cast<float>(std::tanh(x));
    case UnaryOp::sqrt: return static_cast<float>(std::sqrt(x));
    case UnaryOp::exp: return static_cast<float>(std::exp(x));
    case UnaryOp::log: return static_cast<float>(std::log(x));
    case UnaryOp::neg: return -xf;
    case UnaryOp::cos: return static_cast<float>(std::cos(x));
    case UnaryOp::sin: return static_cast<float>(std::sin(x));
  }
  return 0.0f;
}

/// d unary / dx at x (y = unary(x)).
double unary_derivative(UnaryOp op, double x, double y) {
  switch (op) {
    case UnaryOp::relu: return x > 0.0 ? 1.0 : 0.0;
    case UnaryOp::gelu: return 0.5 * (1.0 + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
    case UnaryOp::erf: return 2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x);
    case UnaryOp::sigmoid: return y * (1.0 - y);
    case UnaryOp::silu: {
      const double s = 1.0 / (1.0 + std::exp(-x));
      return s + x * s * (1.0 - s);
    }
    case UnaryOp::tanh: return 1.0 - y * y;
    case UnaryOp::sqrt: return 0.5 / y;
    case UnaryOp::exp: return y;
    case UnaryOp::log: return 1.0 / x;
    case UnaryOp::neg: return -1.0;
    case UnaryOp::cos: return -std::sin(x);
    case UnaryOp::sin: return std::cos(x);
  }
  return 0.0;
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x) {
  Tensor y(x.shape);
  for (std::size_t k = 0; k < x.data.size(); ++k) y.data[k] = unary_value(op, x.data[k]);
  return y;
}

Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy) {
  assert(x.shape == dy.shape && y.shape == dy.shape);
  Tensor dx(x.shape);
  for (std::size_t k = 0; k < x.data.size(); ++k)
    dx.data[k] = static_cast<float>(dy.data[k] * unary_derivative(op, x.data[k], y.data[k]));
  return dx;
}

Tensor scale(const Tensor& x, float s) {
  Tensor y = x;
  for (auto& v : y.data) v *= s;
  return y;
}

void accumulate(Tensor& a, const Tensor& b) {
  assert(a.shape == b.shape);
  for (std::size_t k = 0; k < a.data.size(); ++k) a.data[k] += b.data[k];
}

}  // namespace planner::runtime_cpu
