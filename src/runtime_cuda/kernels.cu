// The runtime_cuda kernels (kernels.hpp): fill, streaming read, streaming
// write and the optimizer update; grid-stride loops, 16-byte accesses.

#include "kernels.hpp"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace planner::runtime::cuda_kernels {
namespace {

constexpr int kThreads = 256;

// Blocks for n items: enough to fill the device several times over, capped.
unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::size_t>(b, 1, 65535));
}

__global__ void fill_f32(float* p, std::size_t n, float v) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = v;
}
__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n, float v) {
  const __nv_bfloat16 h = __float2bfloat16(v);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = h;
}
__global__ void fill_f16(__half* p, std::size_t n, float v) {
  const __half h = __float2half(v);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = h;
}

__global__ void read_words(const float4* src, std::size_t words, float* sink) {
  float acc = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x) {
    const float4 v = src[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == -1.0f) *sink = acc;  // inputs are >= 0: never taken, but the reads stay
}

__global__ void write_words(float4* dst, std::size_t words, float v) {
  const float4 w = make_float4(v, v, v, v);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = w;
}

__global__ void adam(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float b1, float b2,
                     float eps) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = b1 * m[i] + (1 - b1) * gi;
    const float vi = b2 * v[i] + (1 - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * mi / (sqrtf(vi) + eps);
  }
}
__global__ void sgd_momentum(float* p, const float* g, float* v, std::size_t n, float lr, float mu) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float vi = mu * v[i] + g[i];
    v[i] = vi;
    p[i] -= lr * vi;
  }
}
__global__ void sgd(float* p, const float* g, std::size_t n, float lr) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] -= lr * g[i];
}

}  // namespace

cudaError_t fill(void* p, std::size_t n, int width, bool bf16, float v, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (width == 4) fill_f32<<<blocks_for(n), kThreads, 0, s>>>(static_cast<float*>(p), n, v);
  else if (bf16) fill_bf16<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, v);
  else fill_f16<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__half*>(p), n, v);
  return cudaGetLastError();
}

cudaError_t read(const void* src, std::size_t words, float* sink, cudaStream_t s) {
  if (words == 0) return cudaSuccess;
  read_words<<<blocks_for(words), kThreads, 0, s>>>(static_cast<const float4*>(src), words, sink);
  return cudaGetLastError();
}

cudaError_t write(void* dst, std::size_t words, float v, cudaStream_t s) {
  if (words == 0) return cudaSuccess;
  write_words<<<blocks_for(words), kThreads, 0, s>>>(static_cast<float4*>(dst), words, v);
  return cudaGetLastError();
}

cudaError_t optimizer(float* p, const float* g, float* state, std::size_t n, int states, float lr, float beta1,
                      float beta2, float eps, float momentum, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (states == 2) adam<<<blocks_for(n), kThreads, 0, s>>>(p, g, state, state + n, n, lr, beta1, beta2, eps);
  else if (states == 1) sgd_momentum<<<blocks_for(n), kThreads, 0, s>>>(p, g, state, n, lr, momentum);
  else sgd<<<blocks_for(n), kThreads, 0, s>>>(p, g, n, lr);
  return cudaGetLastError();
}

}  // namespace planner::runtime::cuda_kernels
