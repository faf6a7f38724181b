// The GPU op kernels (op_kernels.hpp): index arithmetic around the shared
// math of kernel_math.hpp. Every kernel is one grid-stride loop over
// elements, rows or columns running a __device__ lambda (nvcc
// --extended-lambda); one template per kernel, instantiated for fp32 and
// bf16 storage. A host compiler with the stand-in CUDA headers of
// tests/runtime_cuda/host_cuda/ compiles the same file into plain loops
// (gpu_emulated_test: the GPU op layer and interpreter on the CPU).

#include "op_kernels.hpp"

#include <algorithm>

namespace planner::runtime::gpu_ops {

using kernel_math::AttnDims;
using kernel_math::AttnRow;
using kernel_math::Bf16;
using kernel_math::ld;
using kernel_math::RowStats;
using kernel_math::st;

namespace launch {

constexpr int kThreads = 256;

#if defined(__CUDACC__)
template <class F>
__global__ void each_kernel(i64 n, F f) {
  for (i64 i = blockIdx.x * i64(blockDim.x) + threadIdx.x; i < n; i += i64(gridDim.x) * blockDim.x) f(i);
}
#endif

/// Runs f(i) for i in [0, n) on the default stream. Compiled by a host
/// compiler (the CPU emulation of tests/runtime_cuda/host_cuda/), a loop.
template <class F>
cudaError_t each(i64 n, F f) {
  if (n <= 0) return cudaSuccess;
#if defined(__CUDACC__)
  const i64 blocks = std::min<i64>((n + kThreads - 1) / kThreads, 65535);
  each_kernel<<<static_cast<unsigned>(blocks), kThreads>>>(n, f);
  return cudaGetLastError();
#else
  for (i64 i = 0; i < n; ++i) f(i);
  return cudaSuccess;
#endif
}

template <class T>
cudaError_t fill(void* yp, i64 n, float v) {
  T* y = static_cast<T*>(yp);
  return each(n, [=] __device__(i64 k) { st(y[k], v); });
}

template <class T>
cudaError_t copy_view(const void* xp, View v, void* yp, i64 n) {
  const T* x = static_cast<const T*>(xp);
  T* y = static_cast<T*>(yp);
  return each(n, [=] __device__(i64 k) { y[k] = x[kernel_math::view_index(v, k)]; });
}

template <class T>
cudaError_t scatter_view(const void* xp, void* yp, View v, i64 n) {
  const T* x = static_cast<const T*>(xp);
  T* y = static_cast<T*>(yp);
  return each(n, [=] __device__(i64 k) { y[kernel_math::view_index(v, k)] = x[k]; });
}

template <class TI, class T>
cudaError_t sum_view(const void* xp, View out, View box, void* yp, i64 n, float scale, bool apply) {
  const TI* x = static_cast<const TI*>(xp);
  T* y = static_cast<T*>(yp);
  return each(n, [=] __device__(i64 k) {
    const float s = static_cast<float>(kernel_math::box_sum(x, out, box, k));
    st(y[k], apply ? s * scale : s);
  });
}

template <class T>
cudaError_t scale(const void* xp, void* yp, i64 n, float f) {
  const T* x = static_cast<const T*>(xp);
  T* y = static_cast<T*>(yp);
  return each(n, [=] __device__(i64 k) { st(y[k], ld(x[k]) * f); });
}

template <class T>
cudaError_t accumulate(void* ap, const void* bp, i64 n) {
  T* a = static_cast<T*>(ap);
  const T* b = static_cast<const T*>(bp);
  return each(n, [=] __device__(i64 k) { st(a[k], ld(a[k]) + ld(b[k])); });
}

template <class T>
cudaError_t unary(kernel_math::Unary op, const void* xp, void* yp, i64 n) {
  const T* x = static_cast<const T*>(xp);
  T* y = static_cast<T*>(yp);
  return each(n, [=] __device__(i64 k) { st(y[k], kernel_math::unary_value(op, ld(x[k]))); });
}

template <class T>
cudaError_t unary_backward(kernel_math::Unary op, const void* xp, const void* yp, const void* dyp, void* dxp, i64 n) {
  const T* x = static_cast<const T*>(xp);
  const T* y = static_cast<const T*>(yp);
  const T* dy = static_cast<const T*>(dyp);
  T* dx = static_cast<T*>(dxp);
  return each(n, [=] __device__(i64 k) { st(dx[k], kernel_math::unary_grad(op, ld(x[k]), ld(y[k]), ld(dy[k]))); });
}

template <class T>
cudaError_t binary(kernel_math::Binary op, const void* ap, View av, const void* bp, View bv, void* yp, i64 n) {
  const T* a = static_cast<const T*>(ap);
  const T* b = static_cast<const T*>(bp);
  T* y = static_cast<T*>(yp);
  return each(n, [=] __device__(i64 k) {
    st(y[k], kernel_math::binary_value(op, ld(a[kernel_math::view_index(av, k)]), ld(b[kernel_math::view_index(bv, k)])));
  });
}

template <class T>
cudaError_t binary_grads(kernel_math::Binary op, const void* ap, View av, const void* bp, View bv, const void* dyp,
                         float* ga, float* gb, i64 n) {
  const T* a = static_cast<const T*>(ap);
  const T* b = static_cast<const T*>(bp);
  const T* dy = static_cast<const T*>(dyp);
  return each(n, [=] __device__(i64 k) {
    kernel_math::binary_grads(op, ld(a[kernel_math::view_index(av, k)]), ld(b[kernel_math::view_index(bv, k)]),
                              ld(dy[k]), ga[k], gb[k]);
  });
}

template <class T>
cudaError_t trilu(const void* xp, void* yp, i64 n, i64 rows, i64 cols, bool upper, i64 kk) {
  const T* x = static_cast<const T*>(xp);
  T* y = static_cast<T*>(yp);
  return each(n, [=] __device__(i64 k) {
    const i64 j = k % cols, i = (k / cols) % rows;
    const bool keep = upper ? j - i >= kk : j - i <= kk;
    y[k] = x[k];
    if (!keep) st(y[k], 0.0f);
  });
}

template <class T>
cudaError_t layer_norm(const void* xp, const void* wp, const void* bp, void* yp, i64 rows, i64 n, float eps) {
  const T* x = static_cast<const T*>(xp);
  const T* w = static_cast<const T*>(wp);
  const T* b = static_cast<const T*>(bp);
  T* y = static_cast<T*>(yp);
  return each(rows, [=] __device__(i64 i) { kernel_math::layer_norm_row(x + i * n, w, b, y + i * n, n, eps); });
}

template <class T>
cudaError_t layer_norm_backward(const void* xp, const void* wp, const void* dyp, void* dxp, void* dwp, void* dbp,
                                RowStats* stats, i64 rows, i64 n, float eps) {
  const T* x = static_cast<const T*>(xp);
  const T* w = static_cast<const T*>(wp);
  const T* dy = static_cast<const T*>(dyp);
  T* dx = static_cast<T*>(dxp);
  T* dw = static_cast<T*>(dwp);
  T* db = static_cast<T*>(dbp);
  cudaError_t e = each(rows, [=] __device__(i64 i) {
    kernel_math::layer_norm_dx_row(x + i * n, w, dy + i * n, dx + i * n, n, eps);
    stats[i] = kernel_math::layer_stats(x + i * n, n, eps);
  });
  if (e != cudaSuccess) return e;
  return each(n, [=] __device__(i64 j) {
    double sw = 0, sb = 0;
    kernel_math::layer_norm_dw_col(x, dy, stats, rows, n, j, sw, sb);
    st(dw[j], static_cast<float>(sw));
    if (db) st(db[j], static_cast<float>(sb));
  });
}

template <class T>
cudaError_t rms_norm(const void* xp, const void* wp, void* yp, i64 rows, i64 n, float eps) {
  const T* x = static_cast<const T*>(xp);
  const T* w = static_cast<const T*>(wp);
  T* y = static_cast<T*>(yp);
  return each(rows, [=] __device__(i64 i) { kernel_math::rms_norm_row(x + i * n, w, y + i * n, n, eps); });
}

template <class T>
cudaError_t rms_norm_backward(const void* xp, const void* wp, const void* dyp, void* dxp, void* dwp, double* r,
                              i64 rows, i64 n, float eps) {
  const T* x = static_cast<const T*>(xp);
  const T* w = static_cast<const T*>(wp);
  const T* dy = static_cast<const T*>(dyp);
  T* dx = static_cast<T*>(dxp);
  T* dw = static_cast<T*>(dwp);
  cudaError_t e = each(rows, [=] __device__(i64 i) {
    kernel_math::rms_norm_dx_row(x + i * n, w, dy + i * n, dx + i * n, n, eps);
    r[i] = kernel_math::rms_r(x + i * n, n, eps);
  });
  if (e != cudaSuccess) return e;
  return each(n, [=] __device__(i64 j) {
    st(dw[j], static_cast<float>(kernel_math::rms_norm_dw_col(x, dy, r, rows, n, j)));
  });
}

template <class T>
cudaError_t softmax(const void* xp, void* yp, i64 outer, i64 n, i64 inner) {
  const T* x = static_cast<const T*>(xp);
  T* y = static_cast<T*>(yp);
  return each(outer * inner, [=] __device__(i64 r) {
    const i64 base = (r / inner) * n * inner + r % inner;
    kernel_math::softmax_row(x + base, y + base, n, inner);
  });
}

template <class T>
cudaError_t softmax_backward(const void* yp, const void* dyp, void* dxp, i64 outer, i64 n, i64 inner) {
  const T* y = static_cast<const T*>(yp);
  const T* dy = static_cast<const T*>(dyp);
  T* dx = static_cast<T*>(dxp);
  return each(outer * inner, [=] __device__(i64 r) {
    const i64 base = (r / inner) * n * inner + r % inner;
    kernel_math::softmax_backward_row(y + base, dy + base, dx + base, n, inner);
  });
}

template <class T>
cudaError_t gather(const void* dp, const i64* idx, void* yp, i64 outer, i64 n, i64 inner, i64 m) {
  const T* d = static_cast<const T*>(dp);
  T* y = static_cast<T*>(yp);
  return each(outer * m * inner, [=] __device__(i64 k) { y[k] = d[kernel_math::gather_source(k, idx, m, n, inner)]; });
}

template <class T>
cudaError_t gather_backward(const void* dyp, const i64* offsets, const i64* rows_of, void* gp, i64 outer, i64 n,
                            i64 inner, i64 m) {
  const T* dy = static_cast<const T*>(dyp);
  T* g = static_cast<T*>(gp);
  return each(outer * n * inner, [=] __device__(i64 k) {
    const i64 j = k % inner, r = (k / inner) % n, o = k / (inner * n);
    st(g[k], kernel_math::gather_grad(dy, offsets, rows_of, o, r, j, m, inner));
  });
}

template <class T>
cudaError_t cross_entropy(const void* xp, const i64* labels, i64 n, i64 c, bool has_ignore, i64 ignore,
                          double* row_loss, double* total) {
  const T* x = static_cast<const T*>(xp);
  cudaError_t e = each(n, [=] __device__(i64 i) {
    row_loss[i] = has_ignore && labels[i] == ignore ? 0.0 : kernel_math::cross_entropy_row(x + i * c, c, labels[i]);
  });
  if (e != cudaSuccess) return e;
  return each(1, [=] __device__(i64) {  // one thread: the rows in order, as on the CPU
    double t = 0.0;
    for (i64 i = 0; i < n; ++i) t += row_loss[i];
    *total = t;
  });
}

template <class T>
cudaError_t cross_entropy_backward(const void* xp, const i64* labels, i64 n, i64 c, bool has_ignore, i64 ignore,
                                   double kk, void* dxp) {
  const T* x = static_cast<const T*>(xp);
  T* dx = static_cast<T*>(dxp);
  return each(n, [=] __device__(i64 i) {
    if (has_ignore && labels[i] == ignore) {
      for (i64 j = 0; j < c; ++j) st(dx[i * c + j], 0.0f);
    } else {
      kernel_math::cross_entropy_grad_row(x + i * c, c, labels[i], kk, dx + i * c);
    }
  });
}

template <class T>
cudaError_t attention(const void* qp, const void* kp, const void* vp, const float* bias, AttnDims a, i64 bh, float* acc,
                      void* yp) {
  const T* q = static_cast<const T*>(qp);
  const T* k = static_cast<const T*>(kp);
  const T* v = static_cast<const T*>(vp);
  T* y = static_cast<T*>(yp);
  const i64 w = a.d > a.dv ? a.d : a.dv;
  return each(bh * a.sq, [=] __device__(i64 r) {
    const i64 h = r / a.sq, i = r % a.sq;
    kernel_math::attn_out_row(q + h * a.sq * a.d, k + h * a.sk * a.d, v + h * a.sk * a.dv, bias, a, i, acc + r * w,
                              y + h * a.sq * a.dv);
  });
}

template <class T>
cudaError_t attention_backward(const void* qp, const void* kp, const void* vp, const float* bias, const void* dyp,
                               AttnDims a, i64 bh, AttnRow* rows, double* delta, float* acc, void* dqp, void* dkp,
                               void* dvp) {
  const T* q = static_cast<const T*>(qp);
  const T* k = static_cast<const T*>(kp);
  const T* v = static_cast<const T*>(vp);
  const T* dy = static_cast<const T*>(dyp);
  T* dq = static_cast<T*>(dqp);
  T* dk = static_cast<T*>(dkp);
  T* dv = static_cast<T*>(dvp);
  const i64 w = a.d + a.dv;
  cudaError_t e = each(bh * a.sq, [=] __device__(i64 r) {
    const i64 h = r / a.sq, i = r % a.sq;
    const T* qh = q + h * a.sq * a.d;
    const T* kh = k + h * a.sk * a.d;
    const T* vh = v + h * a.sk * a.dv;
    const T* dyh = dy + h * a.sq * a.dv;
    rows[r] = kernel_math::attn_row(qh, kh, bias, a, i);
    delta[r] = kernel_math::attn_delta(qh, kh, vh, bias, dyh, a, rows[r], i);
    kernel_math::attn_dq_row(qh, kh, vh, bias, dyh, a, rows[r], delta[r], i, acc + r * w, dq + h * a.sq * a.d);
  });
  if (e != cudaSuccess) return e;
  return each(bh * a.sk, [=] __device__(i64 r) {
    const i64 h = r / a.sk, j = r % a.sk;
    kernel_math::attn_dkv_row(q + h * a.sq * a.d, k + h * a.sk * a.d, v + h * a.sk * a.dv, bias, dy + h * a.sq * a.dv,
                              a, rows + h * a.sq, delta + h * a.sq, j, acc + r * w, dk + h * a.sk * a.d,
                              dv + h * a.sk * a.dv);
  });
}

template <class T>
cudaError_t sgd(void* wp, const void* gp, float* m, i64 n, bool first, float lr, float mom, float wd) {
  T* w = static_cast<T*>(wp);
  const T* g = static_cast<const T*>(gp);
  return each(n, [=] __device__(i64 k) {
    float wv = ld(w[k]), mv = m ? m[k] : 0.0f;
    kernel_math::sgd_element(wv, ld(g[k]), mv, first, lr, mom, wd);
    st(w[k], wv);
    if (m) m[k] = mv;
  });
}

template <class T>
cudaError_t adamw(void* wp, const void* gp, float* m, float* v, i64 n, float lr, float b1, float b2, float eps,
                  float wd, double bc1, double bc2) {
  T* w = static_cast<T*>(wp);
  const T* g = static_cast<const T*>(gp);
  return each(n, [=] __device__(i64 k) {
    float wv = ld(w[k]);
    kernel_math::adamw_element(wv, ld(g[k]), m[k], v[k], lr, b1, b2, eps, wd, bc1, bc2);
    st(w[k], wv);
  });
}

}  // namespace launch

// fn<float>(...) for fp32 storage, fn<Bf16>(...) for bf16.
#define PLANNER_BY_STORE(s, fn, ...) ((s) == Store::f32 ? launch::fn<float>(__VA_ARGS__) : launch::fn<Bf16>(__VA_ARGS__))

cudaError_t fill(Store s, void* y, i64 n, float v) { return PLANNER_BY_STORE(s, fill, y, n, v); }
cudaError_t copy_view(Store s, const void* x, const View& v, void* y, i64 n) {
  return PLANNER_BY_STORE(s, copy_view, x, v, y, n);
}
cudaError_t scatter_view(Store s, const void* x, void* y, const View& v, i64 n) {
  return PLANNER_BY_STORE(s, scatter_view, x, y, v, n);
}
cudaError_t sum_view(Store s, const void* x, bool x_f32, const View& out, const View& box, void* y, i64 n, float scale,
                     bool apply_scale) {
  if (x_f32)
    return s == Store::f32 ? launch::sum_view<float, float>(x, out, box, y, n, scale, apply_scale)
                           : launch::sum_view<float, Bf16>(x, out, box, y, n, scale, apply_scale);
  return s == Store::f32 ? launch::sum_view<float, float>(x, out, box, y, n, scale, apply_scale)
                         : launch::sum_view<Bf16, Bf16>(x, out, box, y, n, scale, apply_scale);
}
cudaError_t scale(Store s, const void* x, void* y, i64 n, float f) { return PLANNER_BY_STORE(s, scale, x, y, n, f); }
cudaError_t accumulate(Store s, void* a, const void* b, i64 n) { return PLANNER_BY_STORE(s, accumulate, a, b, n); }
cudaError_t unary(Store s, kernel_math::Unary op, const void* x, void* y, i64 n) {
  return PLANNER_BY_STORE(s, unary, op, x, y, n);
}
cudaError_t unary_backward(Store s, kernel_math::Unary op, const void* x, const void* y, const void* dy, void* dx,
                           i64 n) {
  return PLANNER_BY_STORE(s, unary_backward, op, x, y, dy, dx, n);
}
cudaError_t binary(Store s, kernel_math::Binary op, const void* a, const View& av, const void* b, const View& bv,
                   void* y, i64 n) {
  return PLANNER_BY_STORE(s, binary, op, a, av, b, bv, y, n);
}
cudaError_t binary_grads(Store s, kernel_math::Binary op, const void* a, const View& av, const void* b,
                         const View& bv, const void* dy, float* ga, float* gb, i64 n) {
  return PLANNER_BY_STORE(s, binary_grads, op, a, av, b, bv, dy, ga, gb, n);
}
cudaError_t trilu(Store s, const void* x, void* y, i64 n, i64 rows, i64 cols, bool upper, i64 k) {
  return PLANNER_BY_STORE(s, trilu, x, y, n, rows, cols, upper, k);
}
cudaError_t layer_norm(Store s, const void* x, const void* w, const void* b, void* y, i64 rows, i64 n, float eps) {
  return PLANNER_BY_STORE(s, layer_norm, x, w, b, y, rows, n, eps);
}
cudaError_t layer_norm_backward(Store s, const void* x, const void* w, const void* dy, void* dx, void* dw, void* db,
                                RowStats* stats, i64 rows, i64 n, float eps) {
  return PLANNER_BY_STORE(s, layer_norm_backward, x, w, dy, dx, dw, db, stats, rows, n, eps);
}
cudaError_t rms_norm(Store s, const void* x, const void* w, void* y, i64 rows, i64 n, float eps) {
  return PLANNER_BY_STORE(s, rms_norm, x, w, y, rows, n, eps);
}
cudaError_t rms_norm_backward(Store s, const void* x, const void* w, const void* dy, void* dx, void* dw, double* r,
                              i64 rows, i64 n, float eps) {
  return PLANNER_BY_STORE(s, rms_norm_backward, x, w, dy, dx, dw, r, rows, n, eps);
}
cudaError_t softmax(Store s, const void* x, void* y, i64 outer, i64 n, i64 inner) {
  return PLANNER_BY_STORE(s, softmax, x, y, outer, n, inner);
}
cudaError_t softmax_backward(Store s, const void* y, const void* dy, void* dx, i64 outer, i64 n, i64 inner) {
  return PLANNER_BY_STORE(s, softmax_backward, y, dy, dx, outer, n, inner);
}
cudaError_t gather(Store s, const void* data, const i64* idx, void* y, i64 outer, i64 n, i64 inner, i64 m) {
  return PLANNER_BY_STORE(s, gather, data, idx, y, outer, n, inner, m);
}
cudaError_t gather_backward(Store s, const void* dy, const i64* offsets, const i64* rows_of, void* g, i64 outer,
                            i64 n, i64 inner, i64 m) {
  return PLANNER_BY_STORE(s, gather_backward, dy, offsets, rows_of, g, outer, n, inner, m);
}
cudaError_t cross_entropy(Store s, const void* x, const i64* labels, i64 n, i64 c, bool has_ignore, i64 ignore,
                          double* row_loss, double* total) {
  return PLANNER_BY_STORE(s, cross_entropy, x, labels, n, c, has_ignore, ignore, row_loss, total);
}
cudaError_t cross_entropy_backward(Store s, const void* x, const i64* labels, i64 n, i64 c, bool has_ignore,
                                   i64 ignore, double k, void* dx) {
  return PLANNER_BY_STORE(s, cross_entropy_backward, x, labels, n, c, has_ignore, ignore, k, dx);
}
cudaError_t attention(Store s, const void* q, const void* k, const void* v, const float* bias,
                      const kernel_math::AttnDims& a, i64 bh, float* acc, void* y) {
  return PLANNER_BY_STORE(s, attention, q, k, v, bias, a, bh, acc, y);
}
cudaError_t attention_backward(Store s, const void* q, const void* k, const void* v, const float* bias,
                               const void* dy, const kernel_math::AttnDims& a, i64 bh, AttnRow* rows, double* delta,
                               float* acc, void* dq, void* dk, void* dv) {
  return PLANNER_BY_STORE(s, attention_backward, q, k, v, bias, dy, a, bh, rows, delta, acc, dq, dk, dv);
}
cudaError_t sgd(Store s, void* w, const void* g, float* m, i64 n, bool first, float lr, float momentum, float wd) {
  return PLANNER_BY_STORE(s, sgd, w, g, m, n, first, lr, momentum, wd);
}
cudaError_t adamw(Store s, void* w, const void* g, float* m, float* v, i64 n, float lr, float b1, float b2, float eps,
                  float wd, double bc1, double bc2) {
  return PLANNER_BY_STORE(s, adamw, w, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2);
}

}  // namespace planner::runtime::gpu_ops
