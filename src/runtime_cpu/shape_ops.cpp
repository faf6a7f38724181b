#include "planner/runtime_cpu/shape_ops.hpp"

#include <algorithm>
#include <cstring>

#include "detail.hpp"
#include "planner/runtime_cpu/elementwise.hpp"

namespace planner::runtime_cpu {

using detail::uz;

Tensor transpose(const Tensor& x, const std::vector<std::size_t>& perm) {
  const std::size_t r = perm.size();
  Shape out(r), st(r);
  const Shape xs = strides_of(x.shape);
  for (std::size_t i = 0; i < r; ++i) {
    out[i] = x.shape[perm[i]];
    st[i] = xs[perm[i]];
  }
  Tensor y(out);
  Shape idx(r, 0);
  std::int64_t pos = 0;
  for (std::int64_t k = 0; k < y.size(); ++k) {
    y[k] = x[pos];
    for (std::size_t d = r; d-- > 0;) {
      if (++idx[d] < out[d]) {
        pos += st[d];
        break;
      }
      pos -= st[d] * (out[d] - 1);
      idx[d] = 0;
    }
  }
  return y;
}

std::vector<std::size_t> inverse_permutation(const std::vector<std::size_t>& perm) {
  std::vector<std::size_t> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = i;
  return inv;
}

Tensor concat(const std::vector<const Tensor*>& parts, std::size_t axis) {
  Shape out = parts.front()->shape;
  out[axis] = 0;
  for (const Tensor* p : parts) out[axis] += p->shape[axis];
  Tensor y(out);
  const auto sp = detail::split_at(out, axis);
  std::int64_t at = 0;  // offset along axis
  for (const Tensor* p : parts) {
    const std::int64_t w = p->shape[axis] * sp.inner;
    for (std::int64_t o = 0; o < sp.outer; ++o)
      std::memcpy(y.data.data() + o * sp.n * sp.inner + at * sp.inner, p->data.data() + o * w, uz(w) * sizeof(float));
    at += p->shape[axis];
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, std::size_t axis, const std::vector<std::int64_t>& sizes) {
  const auto sp = detail::split_at(x.shape, axis);
  std::vector<Tensor> out;
  std::int64_t at = 0;
  for (std::int64_t s : sizes) {
    Shape shape = x.shape;
    shape[axis] = s;
    Tensor y(shape);
    const std::int64_t w = s * sp.inner;
    for (std::int64_t o = 0; o < sp.outer; ++o)
      std::memcpy(y.data.data() + o * w, x.data.data() + o * sp.n * sp.inner + at * sp.inner, uz(w) * sizeof(float));
    at += s;
    out.push_back(std::move(y));
  }
  return out;
}

namespace {

/// Calls f(flat output index, flat input index) over a slice box.
template <typename F>
void for_box(const Shape& x_shape, const SliceBox& box, F&& f) {
  const std::size_t r = x_shape.size();
  const Shape xs = strides_of(x_shape);
  std::int64_t pos = 0;
  for (std::size_t d = 0; d < r; ++d) pos += box.start[d] * xs[d];
  Shape idx(r, 0);
  const std::int64_t n = numel(box.out);
  for (std::int64_t k = 0; k < n; ++k) {
    f(k, pos);
    for (std::size_t d = r; d-- > 0;) {
      if (++idx[d] < box.out[d]) {
        pos += box.step[d] * xs[d];
        break;
      }
      pos -= box.step[d] * xs[d] * (box.out[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace

Tensor slice(const Tensor& x, const SliceBox& box) {
  Tensor y(box.out);
  for_box(x.shape, box, [&](std::int64_t o, std::int64_t i) { y[o] = x[i]; });
  return y;
}

Tensor slice_backward(const Shape& x_shape, const SliceBox& box, const Tensor& dy) {
  Tensor g(x_shape);
  for_box(x_shape, box, [&](std::int64_t o, std::int64_t i) { g[i] += dy[o]; });
  return g;
}

Tensor trilu(const Tensor& x, bool upper, std::int64_t k) {
  const std::size_t r = x.shape.size();
  const std::int64_t rows = x.shape[r - 2], cols = x.shape[r - 1];
  Tensor y = x;
  for (std::int64_t m = 0; m < y.size(); m += rows * cols)
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        if (!keep) y[m + i * cols + j] = 0.0f;
      }
  return y;
}

namespace {

Shape kept_shape(const Shape& s, const std::vector<std::size_t>& axes) {
  Shape k = s;
  for (auto a : axes) k[a] = 1;
  return k;
}

}  // namespace

Tensor reduce(const Tensor& x, const std::vector<std::size_t>& axes, bool keepdims, bool mean) {
  const Shape ks = kept_shape(x.shape, axes);
  Tensor y = sum_to_shape(x, ks);
  if (mean) {
    const std::int64_t n = numel(x.shape) / std::max<std::int64_t>(1, numel(ks));
    if (n > 0) y = scale(y, 1.0f / static_cast<float>(n));
  }
  if (!keepdims) {
    Shape out;
    for (std::size_t d = 0; d < x.shape.size(); ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(x.shape[d]);
    y.shape = out;
  }
  return y;
}

Tensor reduce_backward(const Shape& x_shape, const std::vector<std::size_t>& axes, bool mean, const Tensor& dy) {
  const Shape ks = kept_shape(x_shape, axes);
  Tensor d = dy;
  d.shape = ks;  // same data with the reduced axes as dims of 1
  Tensor g = broadcast_to(d, x_shape);
  if (mean) {
    const std::int64_t n = numel(x_shape) / std::max<std::int64_t>(1, numel(ks));
    if (n > 0) g = scale(g, 1.0f / static_cast<float>(n));
  }
  return g;
}

}  // namespace planner::runtime_cpu
