#pragma once
/// Normalisations and softmax, forward and backward. Statistics are taken in
/// double per row.
///
/// LayerNorm over the trailing axes from `axis` (n elements per row):
///   mu = mean(x), r = 1 / sqrt(var(x) + eps), xh = (x - mu) r, y = xh w + b
///   g = dy w:  dx = r (g - mean(g) - xh mean(g xh)),  dw = sum_rows dy xh,  db = sum_rows dy
/// RMSNorm over the last axis:
///   r = 1 / sqrt(mean(x^2) + eps), y = x r w
///   g = dy w:  dx = r (g - x r^2 mean(g x)),  dw = sum_rows dy x r
/// Softmax along `axis`: y = exp(x - max) / sum;  dx = y (dy - sum(dy y)).

#include <cstddef>

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu {

/// Requires: axis < rank; w (and b when given) hold numel(x.shape[axis:]) elements.
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor* b, std::size_t axis, float eps);
struct NormGrads {
  Tensor dx, dw, db;  ///< db empty for RMSNorm and for LayerNorm without bias
};
NormGrads layer_norm_backward(const Tensor& x, const Tensor& w, bool has_bias, std::size_t axis, float eps,
                              const Tensor& dy);

/// Requires: rank >= 1; w holds x.shape.back() elements.
Tensor rms_norm(const Tensor& x, const Tensor& w, float eps);
NormGrads rms_norm_backward(const Tensor& x, const Tensor& w, float eps, const Tensor& dy);

/// Requires: axis < rank.
Tensor softmax(const Tensor& x, std::size_t axis);
/// y = softmax(x, axis).
Tensor softmax_backward(const Tensor& y, const Tensor& dy, std::size_t axis);

}  // namespace planner::runtime_cpu
