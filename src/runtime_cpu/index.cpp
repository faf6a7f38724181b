#include "planner/runtime_cpu/index.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "detail.hpp"

namespace planner::runtime_cpu {

using detail::uz;

namespace {

Shape gather_shape(const Shape& data, const Shape& idx, std::size_t axis) {
  Shape s(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(axis));
  s.insert(s.end(), idx.begin(), idx.end());
  s.insert(s.end(), data.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.end());
  return s;
}

}  // namespace

Tensor gather(const Tensor& data, const IndexTensor& indices, std::size_t axis) {
  const auto sp = detail::split_at(data.shape, axis);
  Tensor y(gather_shape(data.shape, indices.shape, axis));
  const std::int64_t m = indices.size();
  for (std::int64_t o = 0; o < sp.outer; ++o)
    for (std::int64_t t = 0; t < m; ++t) {
      std::int64_t r = indices[t];
      if (r < 0) r += sp.n;
      std::memcpy(y.data.data() + (o * m + t) * sp.inner, data.data.data() + (o * sp.n + r) * sp.inner,
                  uz(sp.inner) * sizeof(float));
    }
  return y;
}

Tensor gather_backward(const Shape& data_shape, const IndexTensor& indices, std::size_t axis, const Tensor& dy) {
  const auto sp = detail::split_at(data_shape, axis);
  Tensor g(data_shape);
  const std::int64_t m = indices.size();
  for (std::int64_t o = 0; o < sp.outer; ++o)
    for (std::int64_t t = 0; t < m; ++t) {
      std::int64_t r = indices[t];
      if (r < 0) r += sp.n;
      float* dst = g.data.data() + (o * sp.n + r) * sp.inner;
      const float* src = dy.data.data() + (o * m + t) * sp.inner;
      for (std::int64_t j = 0; j < sp.inner; ++j) dst[j] += src[j];
    }
  return g;
}

namespace {

/// log sum_j exp(x_j), stable.
double log_sum_exp(const float* x, std::int64_t c) {
  const float mx = *std::max_element(x, x + c);
  double s = 0.0;
  for (std::int64_t j = 0; j < c; ++j) s += detail::exp_or_zero(static_cast<double>(x[j]) - mx);
  return mx + std::log(s);
}

}  // namespace

double cross_entropy(const Tensor& logits, const IndexTensor& labels, std::optional<std::int64_t> ignore_index) {
  const std::int64_t n = logits.shape[0], c = logits.shape[1];
  double total = 0.0;
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (ignore_index && labels[i] == *ignore_index) continue;
    const float* x = logits.data.data() + i * c;
    total += log_sum_exp(x, c) - x[labels[i]];
    ++kept;
  }
  return kept == 0 ? 0.0 : total / static_cast<double>(kept);
}

Tensor cross_entropy_backward(const Tensor& logits, const IndexTensor& labels,
                              std::optional<std::int64_t> ignore_index, float dloss) {
  const std::int64_t n = logits.shape[0], c = logits.shape[1];
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) kept += !(ignore_index && labels[i] == *ignore_index);
  Tensor g(logits.shape);
  if (kept == 0) return g;
  const double k = static_cast<double>(dloss) / static_cast<double>(kept);
  for (std::int64_t i = 0; i < n; ++i) {
    if (ignore_index && labels[i] == *ignore_index) continue;
    const float* x = logits.data.data() + i * c;
    const double lse = log_sum_exp(x, c);
    for (std::int64_t j = 0; j < c; ++j)
      g[i * c + j] = static_cast<float>(k * (detail::exp_or_zero(static_cast<double>(x[j]) - lse) - (j == labels[i] ? 1.0 : 0.0)));
  }
  return g;
}

}  // namespace planner::runtime_cpu
