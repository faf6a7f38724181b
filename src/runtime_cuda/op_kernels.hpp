#pragma once
// The GPU op kernels (op_kernels.cu): thin launchers around the shared math
// of planner/runtime_cuda/kernel_math.hpp, one thread per element, row or
// column, on the legacy default stream. Storage is fp32 or bf16 (Store);
// fp32 scratch where a sum must not round to the storage between terms.
// Private to runtime_cuda: this header includes cuda_runtime.h.

#include <cstdint>

#include <cuda_runtime.h>

#include "planner/runtime_cuda/kernel_math.hpp"

namespace planner::runtime::gpu_ops {

using kernel_math::i64;
using kernel_math::View;

enum class Store { f32, bf16 };

/// Bytes per element of a storage type.
inline std::size_t store_bytes(Store s) { return s == Store::f32 ? 4 : 2; }

cudaError_t fill(Store s, void* y, i64 n, float v);
/// y[k] = x[view(k)] for k < n (broadcast, transpose, slice, a split part).
cudaError_t copy_view(Store s, const void* x, const View& v, void* y, i64 n);
/// y[view(k)] = x[k] for k < n (a concat part, slice backward into zeros).
cudaError_t scatter_view(Store s, const void* x, void* y, const View& v, i64 n);
/// y[k] = scale * sum over the box of x (kernel_math::box_sum), k < n; x is
/// fp32 scratch when x_f32, else storage. apply_scale false: no multiply.
cudaError_t sum_view(Store s, const void* x, bool x_f32, const View& out, const View& box, void* y, i64 n,
                     float scale, bool apply_scale);
/// y = x * s.
cudaError_t scale(Store s, const void* x, void* y, i64 n, float factor);
/// a += b.
cudaError_t accumulate(Store s, void* a, const void* b, i64 n);

cudaError_t unary(Store s, kernel_math::Unary op, const void* x, void* y, i64 n);
cudaError_t unary_backward(Store s, kernel_math::Unary op, const void* x, const void* y, const void* dy, void* dx,
                           i64 n);
/// y[k] = a[av(k)] op b[bv(k)], k < n.
cudaError_t binary(Store s, kernel_math::Binary op, const void* a, const View& av, const void* b, const View& bv,
                   void* y, i64 n);
/// The local gradients at every output element into fp32 ga, gb (n each).
cudaError_t binary_grads(Store s, kernel_math::Binary op, const void* a, const View& av, const void* b,
                         const View& bv, const void* dy, float* ga, float* gb, i64 n);
/// Trilu over the last two axes (rows x cols per matrix, n elements in all).
cudaError_t trilu(Store s, const void* x, void* y, i64 n, i64 rows, i64 cols, bool upper, i64 k);

/// Row statistics scratch: rows RowStats (LayerNorm) or rows doubles (RMSNorm).
cudaError_t layer_norm(Store s, const void* x, const void* w, const void* b, void* y, i64 rows, i64 n, float eps);
cudaError_t layer_norm_backward(Store s, const void* x, const void* w, const void* dy, void* dx, void* dw, void* db,
                                kernel_math::RowStats* stats, i64 rows, i64 n, float eps);
cudaError_t rms_norm(Store s, const void* x, const void* w, void* y, i64 rows, i64 n, float eps);
cudaError_t rms_norm_backward(Store s, const void* x, const void* w, const void* dy, void* dx, void* dw, double* r,
                              i64 rows, i64 n, float eps);
/// Softmax along an axis split as [outer, n, inner].
cudaError_t softmax(Store s, const void* x, void* y, i64 outer, i64 n, i64 inner);
cudaError_t softmax_backward(Store s, const void* y, const void* dy, void* dx, i64 outer, i64 n, i64 inner);

/// Gather along an axis split as [outer, n, inner] of the data, m indices
/// (device int64): y has outer * m * inner elements.
cudaError_t gather(Store s, const void* data, const i64* idx, void* y, i64 outer, i64 n, i64 inner, i64 m);
/// Its gradient (outer * n * inner elements) from the rows' index lists.
cudaError_t gather_backward(Store s, const void* dy, const i64* offsets, const i64* rows_of, void* g, i64 outer,
                            i64 n, i64 inner, i64 m);
/// Per row of logits [n, c]: the loss term into row_loss (0 for ignored
/// rows), then their sum in row order into *total (device doubles).
cudaError_t cross_entropy(Store s, const void* x, const i64* labels, i64 n, i64 c, bool has_ignore, i64 ignore,
                          double* row_loss, double* total);
/// dx = k (softmax - onehot) per kept row, 0 elsewhere.
cudaError_t cross_entropy_backward(Store s, const void* x, const i64* labels, i64 n, i64 c, bool has_ignore,
                                   i64 ignore, double k, void* dx);

/// Attention over bh batch-heads (kernel_math::AttnDims); bias [Sq,Sk] fp32
/// or null; acc: fp32 scratch of bh * Sq * max(D, Dv) floats.
cudaError_t attention(Store s, const void* q, const void* k, const void* v, const float* bias,
                      const kernel_math::AttnDims& a, i64 bh, float* acc, void* y);
/// rows: bh * Sq AttnRow, delta: bh * Sq doubles, acc: bh * max(Sq, Sk) * (D + Dv) floats.
cudaError_t attention_backward(Store s, const void* q, const void* k, const void* v, const float* bias,
                               const void* dy, const kernel_math::AttnDims& a, i64 bh, kernel_math::AttnRow* rows,
                               double* delta, float* acc, void* dq, void* dk, void* dv);

/// SGD (m: fp32 momentum buffer, may be null when momentum is 0) and AdamW
/// (m, v fp32) on storage w with storage gradients g.
cudaError_t sgd(Store s, void* w, const void* g, float* m, i64 n, bool first, float lr, float momentum, float wd);
cudaError_t adamw(Store s, void* w, const void* g, float* m, float* v, i64 n, float lr, float b1, float b2,
                  float eps, float wd, double bc1, double bc2);

}  // namespace planner::runtime::gpu_ops
