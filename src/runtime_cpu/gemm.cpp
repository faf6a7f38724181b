#include "planner/runtime_cpu/gemm.hpp"

#include <algorithm>
#include <cassert>

#include <cblas.h>

#include "detail.hpp"
#include "planner/runtime_cpu/elementwise.hpp"

namespace planner::runtime_cpu {

using detail::uz;

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float* A, const float* B, float beta, float* C) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // C = beta * C (BLAS would not read A or B either)
    for (std::int64_t i = 0; i < M * N; ++i) C[i] = beta == 0.0f ? 0.0f : beta * C[i];
    return;
  }
  const auto lda = std::max<std::int64_t>(1, trans_a ? M : K);
  const auto ldb = std::max<std::int64_t>(1, trans_b ? K : N);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B,
              static_cast<int>(ldb), beta, C, static_cast<int>(N));
}

void gemm_reference(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                    const float* A, const float* B, float beta, float* C) {
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = 0.0;
      for (std::int64_t k = 0; k < K; ++k) {
        const double a = trans_a ? A[k * M + i] : A[i * K + k];
        const double b = trans_b ? B[j * K + k] : B[k * N + j];
        s += a * b;
      }
      const double c = beta == 0.0f ? 0.0 : static_cast<double>(beta) * C[i * N + j];
      C[i * N + j] = static_cast<float>(alpha * s + c);
    }
}

std::optional<Shape> matmul_shape(const Shape& a, const Shape& b) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  if (a[a.size() - 1] != b[b.size() - 2]) return std::nullopt;
  auto batch = broadcast_shape(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch) return std::nullopt;
  batch->push_back(a[a.size() - 2]);
  batch->push_back(b.back());
  return batch;
}

namespace {

struct MatMulDims {
  std::int64_t M, N, K;
  Shape batch_a, batch_b, batch;
};

MatMulDims dims_of(const Shape& a, const Shape& b) {
  MatMulDims d;
  d.M = a[a.size() - 2];
  d.K = a.back();
  d.N = b.back();
  d.batch_a.assign(a.begin(), a.end() - 2);
  d.batch_b.assign(b.begin(), b.end() - 2);
  d.batch = *broadcast_shape(d.batch_a, d.batch_b);
  return d;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const auto shape = matmul_shape(a.shape, b.shape);
  assert(shape);
  const MatMulDims d = dims_of(a.shape, b.shape);
  Tensor y(*shape);
  if (numel(d.batch_b) == 1) {  // weights: one GEMM over all rows of a
    gemm(false, false, numel(d.batch_a) * d.M, d.N, d.K, 1.0f, a.data.data(), b.data.data(), 0.0f, y.data.data());
    return y;
  }
  const auto am = detail::broadcast_map(d.batch_a, d.batch), bm = detail::broadcast_map(d.batch_b, d.batch);
  for (std::size_t i = 0; i < am.size(); ++i)
    gemm(false, false, d.M, d.N, d.K, 1.0f, a.data.data() + am[i] * d.M * d.K, b.data.data() + bm[i] * d.K * d.N,
         0.0f, y.data.data() + static_cast<std::int64_t>(i) * d.M * d.N);
  return y;
}

MatMulGrads matmul_backward(const Tensor& a, const Tensor& b, const Tensor& dy) {
  const MatMulDims d = dims_of(a.shape, b.shape);
  MatMulGrads g{Tensor(a.shape), Tensor(b.shape)};
  if (numel(d.batch_b) == 1) {
    const std::int64_t rows = numel(d.batch_a) * d.M;
    gemm(false, true, rows, d.K, d.N, 1.0f, dy.data.data(), b.data.data(), 0.0f, g.da.data.data());
    gemm(true, false, d.K, d.N, rows, 1.0f, a.data.data(), dy.data.data(), 0.0f, g.db.data.data());
    return g;
  }
  const auto am = detail::broadcast_map(d.batch_a, d.batch), bm = detail::broadcast_map(d.batch_b, d.batch);
  for (std::size_t i = 0; i < am.size(); ++i) {
    const float* dyi = dy.data.data() + static_cast<std::int64_t>(i) * d.M * d.N;
    // beta = 1: operands broadcast over several batch entries sum their gradients.
    gemm(false, true, d.M, d.K, d.N, 1.0f, dyi, b.data.data() + bm[i] * d.K * d.N, 1.0f,
         g.da.data.data() + am[i] * d.M * d.K);
    gemm(true, false, d.K, d.N, d.M, 1.0f, a.data.data() + am[i] * d.M * d.K, dyi, 1.0f,
         g.db.data.data() + bm[i] * d.K * d.N);
  }
  return g;
}

Tensor gemm_op(const Tensor& a, const Tensor& b, const Tensor* c, const GemmAttrs& at) {
  const std::int64_t M = at.trans_a ? a.shape[1] : a.shape[0], K = at.trans_a ? a.shape[0] : a.shape[1];
  const std::int64_t N = at.trans_b ? b.shape[0] : b.shape[1];
  Tensor y(Shape{M, N});
  if (c && at.beta != 0.0f) y = scale(broadcast_to(*c, y.shape), at.beta);
  gemm(at.trans_a, at.trans_b, M, N, K, at.alpha, a.data.data(), b.data.data(), c && at.beta != 0.0f ? 1.0f : 0.0f,
       y.data.data());
  return y;
}

GemmGrads gemm_op_backward(const Tensor& a, const Tensor& b, const Tensor* c, const GemmAttrs& at, const Tensor& dy) {
  const std::int64_t M = dy.shape[0], N = dy.shape[1], K = at.trans_a ? a.shape[0] : a.shape[1];
  GemmGrads g{Tensor(a.shape), Tensor(b.shape), Tensor()};
  const float* A = a.data.data();
  const float* B = b.data.data();
  const float* G = dy.data.data();
  // With A' = op(a), B' = op(b): dA' = alpha dy B'^T [M,K], dB' = alpha A'^T dy [K,N].
  if (!at.trans_a) gemm(false, !at.trans_b, M, K, N, at.alpha, G, B, 0.0f, g.da.data.data());
  else gemm(at.trans_b, true, K, M, N, at.alpha, B, G, 0.0f, g.da.data.data());  // da = dA'^T = alpha B' dy^T
  if (!at.trans_b) gemm(!at.trans_a, false, K, N, M, at.alpha, A, G, 0.0f, g.db.data.data());
  else gemm(true, at.trans_a, N, K, M, at.alpha, G, A, 0.0f, g.db.data.data());  // db = dB'^T = alpha dy^T A'
  if (c) g.dc = scale(sum_to_shape(dy, c->shape), at.beta);
  return g;
}

}  // namespace planner::runtime_cpu
