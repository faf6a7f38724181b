#pragma once
/// Data movement and reductions: Transpose, Concat/Split, Slice, Trilu,
/// ReduceSum/ReduceMean. Each backward is the adjoint of the forward map:
/// transpose by the inverse permutation, concat <-> split, slice -> scatter
/// into zeros, trilu -> the same mask, reduce -> broadcast back (times 1/n
/// for the mean). Reshape needs no kernel: the data are unchanged.

#include <cstddef>
#include <vector>

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu {

/// y.shape[i] = x.shape[perm[i]]. Requires: perm a permutation of 0..rank-1.
Tensor transpose(const Tensor& x, const std::vector<std::size_t>& perm);
std::vector<std::size_t> inverse_permutation(const std::vector<std::size_t>& perm);

/// Requires: same rank, equal dims except along `axis`.
Tensor concat(const std::vector<const Tensor*>& parts, std::size_t axis);
/// Requires: sum(sizes) == x.shape[axis].
std::vector<Tensor> split(const Tensor& x, std::size_t axis, const std::vector<std::int64_t>& sizes);

/// A strided box: element o of the output reads x at start + o * step per axis.
struct SliceBox {
  Shape start, step, out;
};
/// Requires: the box lies inside x.
Tensor slice(const Tensor& x, const SliceBox& box);
Tensor slice_backward(const Shape& x_shape, const SliceBox& box, const Tensor& dy);

/// Keeps, over the last two axes (i, j), the elements with j - i >= k
/// (upper) or j - i <= k (lower) and zeroes the rest. Its own adjoint.
/// Requires: rank >= 2.
Tensor trilu(const Tensor& x, bool upper, std::int64_t k);

/// Sum (or mean) over `axes` (sorted, distinct, < rank); the output keeps
/// them as dims of 1 when keepdims, else drops them.
Tensor reduce(const Tensor& x, const std::vector<std::size_t>& axes, bool keepdims, bool mean);
Tensor reduce_backward(const Shape& x_shape, const std::vector<std::size_t>& axes, bool mean, const Tensor& dy);

}  // namespace planner::runtime_cpu
