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
  const float* in = x.data.data();
  float* out = y.data.data();
  detail::BroadcastRuns(shape, x.shape, x.shape).each([&](std::int64_t o, std::int64_t p, std::int64_t s, std::int64_t,
                                                          std::int64_t, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) out[o + j] = in[p + j * s];
  });
  return y;
}

Tensor sum_to_shape(const Tensor& g, const Shape& shape) {
  if (g.shape == shape) return g;
  // Accumulate in double so that long reductions (bias gradients over many rows) stay exact to fp32.
  std::vector<double> acc(uz(numel(shape)), 0.0);
  const float* in = g.data.data();
  double* a = acc.data();
  detail::BroadcastRuns(g.shape, shape, shape).each([&](std::int64_t o, std::int64_t p, std::int64_t s, std::int64_t,
                                                        std::int64_t, std::int64_t n) {
    if (s == 0) {
      double t = 0;
      for (std::int64_t j = 0; j < n; ++j) t += in[o + j];
      a[p] += t;
    } else {
      for (std::int64_t j = 0; j < n; ++j) a[p + j] += in[o + j];
    }
  });
  Tensor y(shape);
  for (std::size_t k = 0; k < acc.size(); ++k) y.data[k] = static_cast<float>(acc[k]);
  return y;
}

Tensor sum_to_shape(Tensor&& g, const Shape& shape) {
  if (g.shape == shape) return std::move(g);
  return sum_to_shape(static_cast<const Tensor&>(g), shape);
}

namespace {

template <BinaryOp op>
float apply(float a, float b) {
  if constexpr (op == BinaryOp::add) return a + b;
  else if constexpr (op == BinaryOp::sub) return a - b;
  else if constexpr (op == BinaryOp::mul) return a * b;
  else return a / b;
}

// y = a op b over the broadcast shape of y, one run of the last axis at a time.
template <BinaryOp op>
void binary_into(const Tensor& a, const Tensor& b, Tensor& y) {
  const float *pa = a.data.data(), *pb = b.data.data();
  float* py = y.data.data();
  if (a.shape == b.shape) {
    for (std::size_t k = 0; k < y.data.size(); ++k) py[k] = apply<op>(pa[k], pb[k]);
    return;
  }
  detail::BroadcastRuns(y.shape, a.shape, b.shape)
      .each([&](std::int64_t o, std::int64_t ia, std::int64_t sa, std::int64_t ib, std::int64_t sb, std::int64_t n) {
        for (std::int64_t j = 0; j < n; ++j) py[o + j] = apply<op>(pa[ia + j * sa], pb[ib + j * sb]);
      });
}

// The local gradients of y = a op b (mul, div) at y's shape (summed down to
// a's and b's shapes by the caller; add and sub need none: binary_backward),
// each only where it is needed (`qa` / `qb` null: not).
template <BinaryOp op>
void binary_grads_into(const Tensor& a, const Tensor& b, const Tensor& dy, float* qa, float* qb) {
  const float *pa = a.data.data(), *pb = b.data.data(), *g = dy.data.data();
  detail::BroadcastRuns(dy.shape, a.shape, b.shape)
      .each([&](std::int64_t o, std::int64_t ia, std::int64_t sa, std::int64_t ib, std::int64_t sb, std::int64_t n) {
        if (qa) {
          for (std::int64_t j = 0; j < n; ++j) {
            const float z = pb[ib + j * sb];
            if constexpr (op == BinaryOp::mul) qa[o + j] = g[o + j] * z;
            else qa[o + j] = g[o + j] / z;
          }
        }
        if (qb) {
          for (std::int64_t j = 0; j < n; ++j) {
            if constexpr (op == BinaryOp::mul) {
              qb[o + j] = g[o + j] * pa[ia + j * sa];
            } else {
              const float x = pa[ia + j * sa], z = pb[ib + j * sb];
              qb[o + j] = -g[o + j] * x / (z * z);
            }
          }
        }
      });
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const auto shape = broadcast_shape(a.shape, b.shape);
  assert(shape);
  Tensor y(*shape);
  switch (op) {
    case BinaryOp::add: binary_into<BinaryOp::add>(a, b, y); break;
    case BinaryOp::sub: binary_into<BinaryOp::sub>(a, b, y); break;
    case BinaryOp::mul: binary_into<BinaryOp::mul>(a, b, y); break;
    case BinaryOp::div: binary_into<BinaryOp::div>(a, b, y); break;
  }
  return y;
}

BinaryGrads binary_backward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dy, bool need_a,
                            bool need_b) {
  BinaryGrads r;
  if (op == BinaryOp::add || op == BinaryOp::sub) {
    // dA = dY and dB = +-dY, summed down to each operand's shape: no
    // output-sized scratch per operand (a bias's gradient reads dY once).
    // The same sums as below, so the same bits (negation commutes with the
    // double-precision sum and the cast to float).
    if (need_b) {
      r.db = sum_to_shape(dy, b.shape);
      if (op == BinaryOp::sub)
        for (auto& v : r.db.data) v = -v;
    }
    if (need_a) r.da = sum_to_shape(dy, a.shape);
    return r;
  }
  const Shape& s = dy.shape;
  // Local gradients at the output shape, then summed down.
  Tensor ga(need_a ? s : Shape{0}), gb(need_b ? s : Shape{0});
  float* qa = need_a ? ga.data.data() : nullptr;
  float* qb = need_b ? gb.data.data() : nullptr;
  if (op == BinaryOp::mul) binary_grads_into<BinaryOp::mul>(a, b, dy, qa, qb);
  else binary_grads_into<BinaryOp::div>(a, b, dy, qa, qb);  // add and sub returned above
  if (need_a) r.da = sum_to_shape(std::move(ga), a.shape);
  if (need_b) r.db = sum_to_shape(std::move(gb), b.shape);
  return r;
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
