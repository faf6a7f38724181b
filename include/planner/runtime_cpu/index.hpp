#pragma once
/// Embedding lookup (ONNX Gather) and the softmax cross-entropy loss.
///
/// Gather along `axis`: y[pre, idx..., post] = data[pre, indices[idx...], post];
/// backward scatters dy back, adding where an index repeats (a token seen
/// twice sums its two gradients). Negative indices count from the end.
///
/// Cross-entropy (ONNX SoftmaxCrossEntropyLoss, reduction mean) of logits
/// [N,C] and labels [N]; rows whose label equals ignore_index are skipped and
/// the mean is over the n kept rows:
///   loss = -(1/n) sum_i log softmax(x_i)[y_i]
///   dx_i = dloss (softmax(x_i) - onehot(y_i)) / n   (0 for skipped rows)

#include <cstddef>
#include <optional>

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu {

/// Requires: axis < rank(data); every index in [-data.shape[axis], data.shape[axis]).
Tensor gather(const Tensor& data, const IndexTensor& indices, std::size_t axis);
/// Gradient of `data` (shape data_shape).
Tensor gather_backward(const Shape& data_shape, const IndexTensor& indices, std::size_t axis, const Tensor& dy);

/// Requires: logits [N,C], labels [N], each label in [0,C) or ignore_index.
/// Returns the mean loss (0 when every row is ignored).
double cross_entropy(const Tensor& logits, const IndexTensor& labels, std::optional<std::int64_t> ignore_index);
/// d loss / d logits, times dloss.
Tensor cross_entropy_backward(const Tensor& logits, const IndexTensor& labels,
                              std::optional<std::int64_t> ignore_index, float dloss);

}  // namespace planner::runtime_cpu
