#pragma once
/// Matrix products: GEMM through OpenBLAS (cblas_sgemm), a naive reference,
/// ONNX MatMul (batched, numpy broadcasting of the batch dims) and ONNX Gemm,
/// each with its backward.
///
/// Backward of y = a @ b with upstream gradient dy (per batch entry):
///   da = dy @ b^T,  db = a^T @ dy,
/// summed over the batch entries an operand was broadcast to.

#include <cstdint>
#include <optional>

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu {

/// Row-major C[M,N] = alpha * op(A) @ op(B) + beta * C, op(X) = X^T when
/// trans_x. A is [M,K] ([K,M] when trans_a), B is [K,N] ([N,K] when trans_b).
/// Runs cblas_sgemm (one thread unless OPENBLAS_NUM_THREADS says otherwise).
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float* A, const float* B, float beta, float* C);
/// The same contract by three loops accumulating in double: the reference.
void gemm_reference(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                    const float* A, const float* B, float beta, float* C);

/// Output shape of ONNX MatMul for operands of rank >= 2, or nullopt when the
/// inner dims differ or the batch dims do not broadcast.
std::optional<Shape> matmul_shape(const Shape& a, const Shape& b);
/// ONNX MatMul: a [..., M, K] @ b [..., K, N] -> [batch..., M, N].
/// Requires: matmul_shape(a.shape, b.shape).
Tensor matmul(const Tensor& a, const Tensor& b);
struct MatMulGrads {
  Tensor da, db;
};
/// Requires: dy.shape == *matmul_shape(a.shape, b.shape).
MatMulGrads matmul_backward(const Tensor& a, const Tensor& b, const Tensor& dy);

/// ONNX Gemm: y = alpha * op(a) @ op(b) + beta * c, a and b 2-D, c (optional)
/// broadcast to [M, N].
struct GemmAttrs {
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
};
/// Requires: 2-D a and b with matching inner dims; c broadcastable to [M,N].
Tensor gemm_op(const Tensor& a, const Tensor& b, const Tensor* c, const GemmAttrs& at);
struct GemmGrads {
  Tensor da, db, dc;  ///< dc empty (no shape) when c is absent
};
/// da = alpha * dy @ op(b)^T (transposed back when trans_a), likewise db;
/// dc = beta * dy summed to c's shape.
GemmGrads gemm_op_backward(const Tensor& a, const Tensor& b, const Tensor* c, const GemmAttrs& at, const Tensor& dy);

}  // namespace planner::runtime_cpu
