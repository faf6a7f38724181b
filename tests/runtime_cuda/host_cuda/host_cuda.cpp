// The stand-in CUDA runtime and cuBLAS of host_cuda/ (see cuda_runtime.h).
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "planner/runtime_cuda/kernel_math.hpp"

namespace {
std::size_t g_in_use = 0;
constexpr std::size_t kTotal = std::size_t{1} << 36;
}  // namespace

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  // A size header in front, so cudaFree can count what is in use.
  auto* raw = static_cast<std::size_t*>(std::malloc(bytes + 16));
  if (!raw) return cudaErrorMemoryAllocation;
  raw[0] = bytes;
  g_in_use += bytes;
  *p = reinterpret_cast<char*>(raw) + 16;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  auto* raw = reinterpret_cast<std::size_t*>(static_cast<char*>(p) - 16);
  g_in_use -= raw[0];
  std::free(raw);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  if (bytes) std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
  *total = kTotal;
  *free = kTotal - g_in_use;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
const char* cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorMemoryAllocation"; }
const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "out of memory"; }

struct cublasContext {
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
};

cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  h->mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {
double load(const void* p, cudaDataType_t t, std::int64_t i) {
  if (t == CUDA_R_32F) return static_cast<const float*>(p)[i];
  return planner::kernel_math::bf16_float(static_cast<const std::uint16_t*>(p)[i]);
}
void store(void* p, cudaDataType_t t, std::int64_t i, double v) {
  if (t == CUDA_R_32F) static_cast<float*>(p)[i] = static_cast<float>(v);
  else static_cast<std::uint16_t*>(p)[i] = planner::kernel_math::bf16_bits(static_cast<float>(v));
}
}  // namespace

// C(i,j) = alpha sum_l op(A)(i,l) op(B)(l,j) + beta C(i,j), X(i,j) = X[i + j ld]
// (column-major, as cuBLAS); the ld checks are cuBLAS's own.
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType_t at, int lda, const void* B,
                            cudaDataType_t bt, int ldb, const void* beta, void* C, cudaDataType_t ct, int ldc,
                            cublasComputeType_t, cublasGemmAlgo_t) {
  if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) || lda < ((ta == CUBLAS_OP_N ? m : k) > 1 ? (ta == CUBLAS_OP_N ? m : k) : 1) ||
      ldb < ((tb == CUBLAS_OP_N ? k : n) > 1 ? (tb == CUBLAS_OP_N ? k : n) : 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  const double a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t l = 0; l < k; ++l)
        s += load(A, at, ta == CUBLAS_OP_N ? i + l * lda : l + i * lda) *
             load(B, bt, tb == CUBLAS_OP_N ? l + j * ldb : j + l * ldb);
      const double c = b == 0 ? 0.0 : b * load(C, ct, i + j * ldc);
      store(C, ct, i + j * ldc, a * s + c);
    }
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusName(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE";
}
const char* cublasGetStatusString(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "success" : "invalid value"; }
