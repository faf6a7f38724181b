#pragma once
/// Host-side builders of kernel_math::View (kernel_math.hpp) from shapes:
/// the index maps of the data-movement ops (broadcast, transpose, slice,
/// split/concat parts, sums to a shape) that the GPU kernels evaluate per
/// element. Header-only, no CUDA header; the CPU tests use them too.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "planner/runtime_cuda/kernel_math.hpp"

namespace planner::kernel_math {

using Dims = std::vector<i64>;

inline Dims row_major_strides(const Dims& s) {
  Dims st(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

/// The view over `shape` with the given strides and offset; nullopt beyond kMaxRank.
inline std::optional<View> make_view(const Dims& shape, const Dims& stride, i64 offset = 0) {
  if (shape.size() > static_cast<std::size_t>(kMaxRank)) return std::nullopt;
  View v;
  v.rank = static_cast<int>(shape.size());
  v.offset = offset;
  for (std::size_t d = 0; d < shape.size(); ++d) v.shape[d] = shape[d], v.stride[d] = stride[d];
  return v;
}

/// `in` read at every element of `out` by numpy broadcasting.
/// Requires: `in` broadcasts to `out`.
inline std::optional<View> broadcast_view(const Dims& in, const Dims& out) {
  const Dims ist = row_major_strides(in);
  Dims st(out.size(), 0);
  const std::size_t off = out.size() - in.size();
  for (std::size_t d = 0; d < in.size(); ++d) st[d + off] = in[d] == 1 ? 0 : ist[d];
  return make_view(out, st);
}

/// Transpose: output dim i is input dim perm[i].
inline std::optional<View> transpose_view(const Dims& in, const std::vector<std::size_t>& perm) {
  const Dims ist = row_major_strides(in);
  Dims shape(perm.size()), st(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) shape[i] = in[perm[i]], st[i] = ist[perm[i]];
  return make_view(shape, st);
}

/// A strided box of `in`: output element o reads start + o * step per axis.
inline std::optional<View> slice_view(const Dims& in, const Dims& start, const Dims& step, const Dims& out) {
  const Dims ist = row_major_strides(in);
  Dims st(in.size());
  i64 offset = 0;
  for (std::size_t d = 0; d < in.size(); ++d) st[d] = ist[d] * step[d], offset += start[d] * ist[d];
  return make_view(out, st, offset);
}

/// The part [begin, begin + part[axis]) along `axis` of a tensor of shape
/// `full`, seen over the part's shape (split outputs, concat inputs).
inline std::optional<View> part_view(const Dims& full, std::size_t axis, i64 begin, const Dims& part) {
  const Dims fst = row_major_strides(full);
  return make_view(part, fst, begin * fst[axis]);
}

/// Sum of `big` down to `small` (numpy broadcasting, right-aligned): the
/// output view over `small` gives each element's first base index, the box
/// view the reduced axes (in big's axis order, so the sum runs in ascending
/// flat order of big). Requires: small broadcasts to big.
inline std::optional<std::pair<View, View>> sum_views(const Dims& big, const Dims& small) {
  const Dims bst = row_major_strides(big);
  const std::size_t off = big.size() - small.size();
  Dims ost(small.size(), 0), box, boxst;
  for (std::size_t d = 0; d < big.size(); ++d) {
    const bool kept = d >= off && small[d - off] == big[d];
    if (kept) ost[d - off] = bst[d];
    else if (big[d] != 1) box.push_back(big[d]), boxst.push_back(bst[d]);
  }
  auto o = make_view(small, ost);
  auto b = make_view(box, boxst);
  if (!o || !b) return std::nullopt;
  return std::pair<View, View>{*o, *b};
}

}  // namespace planner::kernel_math
