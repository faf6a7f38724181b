#include "planner/runtime_cpu/norm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "detail.hpp"

namespace planner::runtime_cpu {

using detail::uz;

namespace {

/// Rows and row length of a normalisation over the axes from `axis` on.
std::pair<std::int64_t, std::int64_t> rows_cols(const Shape& s, std::size_t axis) {
  std::int64_t rows = 1, cols = 1;
  for (std::size_t d = 0; d < s.size(); ++d) (d < axis ? rows : cols) *= s[d];
  return {rows, cols};
}

struct Stats {
  double mu, r;
};

Stats layer_stats(const float* x, std::int64_t n, float eps) {
  double s = 0.0;
  for (std::int64_t j = 0; j < n; ++j) s += x[j];
  const double mu = s / static_cast<double>(n);
  double v = 0.0;
  for (std::int64_t j = 0; j < n; ++j) v += (x[j] - mu) * (x[j] - mu);
  return {mu, 1.0 / std::sqrt(v / static_cast<double>(n) + eps)};
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor* b, std::size_t axis, float eps) {
  const auto [rows, n] = rows_cols(x.shape, axis);
  Tensor y(x.shape);
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x.data.data() + i * n;
    const Stats st = layer_stats(xi, n, eps);
    for (std::int64_t j = 0; j < n; ++j)
      y[i * n + j] = static_cast<float>((xi[j] - st.mu) * st.r * w[j] + (b ? (*b)[j] : 0.0f));
  }
  return y;
}

NormGrads layer_norm_backward(const Tensor& x, const Tensor& w, bool has_bias, std::size_t axis, float eps,
                              const Tensor& dy) {
  const auto [rows, n] = rows_cols(x.shape, axis);
  NormGrads g{Tensor(x.shape), Tensor(w.shape), has_bias ? Tensor(w.shape) : Tensor()};
  std::vector<double> dw(uz(n), 0.0), db(uz(n), 0.0), xh(uz(n)), gw(uz(n));
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x.data.data() + i * n;
    const float* dyi = dy.data.data() + i * n;
    const Stats st = layer_stats(xi, n, eps);
    double mg = 0.0, mgx = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      xh[uz(j)] = (xi[j] - st.mu) * st.r;
      gw[uz(j)] = static_cast<double>(dyi[j]) * w[j];
      mg += gw[uz(j)];
      mgx += gw[uz(j)] * xh[uz(j)];
      dw[uz(j)] += dyi[j] * xh[uz(j)];
      db[uz(j)] += dyi[j];
    }
    mg /= static_cast<double>(n);
    mgx /= static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j)
      g.dx[i * n + j] = static_cast<float>(st.r * (gw[uz(j)] - mg - xh[uz(j)] * mgx));
  }
  for (std::int64_t j = 0; j < n; ++j) {
    g.dw[j] = static_cast<float>(dw[uz(j)]);
    if (has_bias) g.db[j] = static_cast<float>(db[uz(j)]);
  }
  return g;
}

Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) {
  const auto [rows, n] = rows_cols(x.shape, x.shape.size() - 1);
  Tensor y(x.shape);
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x.data.data() + i * n;
    double ss = 0.0;
    for (std::int64_t j = 0; j < n; ++j) ss += static_cast<double>(xi[j]) * xi[j];
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (std::int64_t j = 0; j < n; ++j) y[i * n + j] = static_cast<float>(xi[j] * r * w[j]);
  }
  return y;
}

NormGrads rms_norm_backward(const Tensor& x, const Tensor& w, float eps, const Tensor& dy) {
  const auto [rows, n] = rows_cols(x.shape, x.shape.size() - 1);
  NormGrads g{Tensor(x.shape), Tensor(w.shape), Tensor()};
  std::vector<double> dw(uz(n), 0.0);
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x.data.data() + i * n;
    const float* dyi = dy.data.data() + i * n;
    double ss = 0.0, mgx = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      ss += static_cast<double>(xi[j]) * xi[j];
      mgx += static_cast<double>(dyi[j]) * w[j] * xi[j];
    }
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    mgx /= static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) {
      g.dx[i * n + j] = static_cast<float>(r * (static_cast<double>(dyi[j]) * w[j] - xi[j] * r * r * mgx));
      dw[uz(j)] += static_cast<double>(dyi[j]) * xi[j] * r;
    }
  }
  for (std::int64_t j = 0; j < n; ++j) g.dw[j] = static_cast<float>(dw[uz(j)]);
  return g;
}

Tensor softmax(const Tensor& x, std::size_t axis) {
  const auto sp = detail::split_at(x.shape, axis);
  Tensor y(x.shape);
  std::vector<double> e(uz(sp.n));  // one exp per element, kept for the normalisation
  for (std::int64_t o = 0; o < sp.outer; ++o)
    for (std::int64_t in = 0; in < sp.inner; ++in) {
      const std::int64_t base = o * sp.n * sp.inner + in;
      float mx = -INFINITY;
      for (std::int64_t j = 0; j < sp.n; ++j) mx = std::max(mx, x[base + j * sp.inner]);
      double s = 0.0;
      for (std::int64_t j = 0; j < sp.n; ++j) {
        e[uz(j)] = detail::exp_or_zero(static_cast<double>(x[base + j * sp.inner]) - mx);
        s += e[uz(j)];
      }
      for (std::int64_t j = 0; j < sp.n; ++j) y[base + j * sp.inner] = static_cast<float>(e[uz(j)] / s);
    }
  return y;
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy, std::size_t axis) {
  const auto sp = detail::split_at(y.shape, axis);
  Tensor dx(y.shape);
  for (std::int64_t o = 0; o < sp.outer; ++o)
    for (std::int64_t in = 0; in < sp.inner; ++in) {
      const std::int64_t base = o * sp.n * sp.inner + in;
      double dot = 0.0;
      for (std::int64_t j = 0; j < sp.n; ++j)
        dot += static_cast<double>(dy[base + j * sp.inner]) * y[base + j * sp.inner];
      for (std::int64_t j = 0; j < sp.n; ++j) {
        const std::int64_t k = base + j * sp.inner;
        dx[k] = static_cast<float>(y[k] * (dy[k] - dot));
      }
    }
  return dx;
}

}  // namespace planner::runtime_cpu
