#pragma once
/// Host-side builders of kernel_math::View (kernel_math.hpp) from shapes:
/// the index maps of the data-movement ops (broadcast, transpose, slice,
/// split/concat parts, sums to a shape) that the GPU kernels evaluate per
/// element. Header-only, no CUDA header; the CPU tests use them too.

#include <algorithm>
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

namespace planner::kernel_math {

/// cuBLAS is column-major; a row-major X [r, c] is the column-major X^T
/// with leading dimension c. So row-major C[M,N] = op(A) op(B) is
/// column-major C^T = op(B)^T op(A)^T: B is cuBLAS's first operand,
/// transposed (for cuBLAS) exactly when tb, with ld = its row-major row
/// length; likewise A second; C^T is N x M with ld = N.
struct ColMajorCall {
  bool first_t = false, second_t = false;  ///< CUBLAS_OP_T for B, for A
  i64 m = 0, n = 0, k = 0;                 ///< cuBLAS m = N, n = M, k = K
  i64 ld_first = 0, ld_second = 0, ldc = 0;
};
/// Requires: A is [M,K] ([K,M] when ta), B is [K,N] ([N,K] when tb).
inline ColMajorCall col_major_call(bool ta, bool tb, i64 M, i64 N, i64 K) {
  return {tb, ta, N, M, K, tb ? K : N, ta ? M : K, N};
}

/// One row-major GEMM C = alpha op(A) op(B) + beta C, its operands given as
/// element offsets into the caller's buffers.
struct GemmCall {
  bool ta = false, tb = false;
  i64 M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  i64 a_off = 0, b_off = 0, c_off = 0;
};

/// ONNX MatMul a [..., M, K] @ b [..., K, N] as GEMMs: one per batch entry
/// (numpy broadcasting of the batch dims), or one folded GEMM (M' = entries
/// M) when b has no batch and a's batch is the output's.
struct MatMulGemms {
  Dims out;  ///< the output shape
  std::vector<GemmCall> forward;
  /// da = dy b^T (into a's buffer) and db = a^T dy (into b's buffer), beta
  /// 1 after the first call into an entry, so broadcast entries sum; the
  /// caller zero-fills da and db first.
  std::vector<GemmCall> grad_a, grad_b;
};
/// nullopt when the shapes do not multiply (rank < 2, inner dims differ,
/// batch dims do not broadcast) or the batch rank exceeds kMaxRank.
inline std::optional<MatMulGemms> matmul_gemms(const Dims& a, const Dims& b) {
  if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2]) return std::nullopt;
  const Dims ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const std::size_t r = std::max(ba.size(), bb.size());
  Dims batch(r, 1);
  for (std::size_t i = 0; i < r; ++i) {
    const i64 da = i < r - ba.size() ? 1 : ba[i - (r - ba.size())];
    const i64 db = i < r - bb.size() ? 1 : bb[i - (r - bb.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    batch[i] = da == 1 ? db : da;
  }
  const i64 M = a[a.size() - 2], K = a.back(), N = b.back();
  i64 entries = 1, bn = 1;
  for (i64 d : batch) entries *= d;
  for (i64 d : bb) bn *= d;
  MatMulGemms g;
  g.out = batch;
  g.out.push_back(M);
  g.out.push_back(N);
  if (bn == 1 && ba == batch) {
    const i64 rows = entries * M;
    g.forward.push_back({false, false, rows, N, K, 1.0f, 0.0f, 0, 0, 0});
    g.grad_a.push_back({false, true, rows, K, N, 1.0f, 0.0f, 0, 0, 0});  // A = dy, B = b, C = da
    g.grad_b.push_back({true, false, K, N, rows, 1.0f, 0.0f, 0, 0, 0});  // A = a, B = dy, C = db
    return g;
  }
  const auto av = broadcast_view(ba, batch), bv = broadcast_view(bb, batch);
  if (!av || !bv) return std::nullopt;
  for (i64 e = 0; e < entries; ++e) {
    const i64 ae = view_index(*av, e), be = view_index(*bv, e);
    g.forward.push_back({false, false, M, N, K, 1.0f, 0.0f, ae * M * K, be * K * N, e * M * N});
    g.grad_a.push_back({false, true, M, K, N, 1.0f, 1.0f, e * M * N, be * K * N, ae * M * K});
    g.grad_b.push_back({true, false, K, N, M, 1.0f, 1.0f, ae * M * K, e * M * N, be * K * N});
  }
  return g;
}

/// ONNX Gemm's gradients y = alpha op(a) op(b) + beta c, dy [M,N]:
///   da = alpha dy op(b)^T, transposed back when trans_a: trans_a false:
///        dy [M,N] @ (b^T when b is [K,N]) -> [M,K]; trans_a true:
///        op(b) [K,N] @ dy^T -> [K,M];
///   db = alpha op(a)^T dy, transposed back when trans_b: trans_b false:
///        (a^T when a is [M,K]) @ dy -> [K,N]; trans_b true: dy^T @ op(a) -> [N,K].
/// grad_a's operands are (dy, b) when !trans_a, else (b, dy); grad_b's are
/// (a, dy) when !trans_b, else (dy, a): `first_is_dy` says which.
struct GemmGradCall {
  GemmCall call;
  bool first_is_dy = false;
};
inline GemmGradCall gemm_grad_a(bool trans_a, bool trans_b, i64 M, i64 N, i64 K, float alpha) {
  if (!trans_a) return {{false, !trans_b, M, K, N, alpha, 0.0f, 0, 0, 0}, true};
  return {{trans_b, true, K, M, N, alpha, 0.0f, 0, 0, 0}, false};
}
inline GemmGradCall gemm_grad_b(bool trans_a, bool trans_b, i64 M, i64 N, i64 K, float alpha) {
  if (!trans_b) return {{!trans_a, false, K, N, M, alpha, 0.0f, 0, 0, 0}, false};
  return {{true, trans_a, N, K, M, alpha, 0.0f, 0, 0, 0}, true};
}

}  // namespace planner::kernel_math
