#pragma once
// The runtime_cuda kernels (kernels.cu), launched on a caller's stream.
// Private to runtime_cuda: this header includes cuda_runtime.h.

#include <cstddef>

#include <cuda_runtime.h>

namespace planner::runtime::cuda_kernels {

/// Sets n f32 (width 4) or 16-bit (width 2, bf16 when bf16 is true, else fp16) elements to v.
cudaError_t fill(void* p, std::size_t n, int width, bool bf16, float v, cudaStream_t s);
/// Reads `words` 16-byte words of src and sums them; the sum is stored in
/// *sink only when it equals a value no input reaches (so the reads stay).
cudaError_t read(const void* src, std::size_t words, float* sink, cudaStream_t s);
/// Writes `words` 16-byte words of dst with `v`.
cudaError_t write(void* dst, std::size_t words, float v, cudaStream_t s);
/// Adam (states 2: m = state, v = state + n), SGD with momentum (1) or SGD (0).
cudaError_t optimizer(float* p, const float* g, float* state, std::size_t n, int states, float lr,
                      float beta1, float beta2, float eps, float momentum, cudaStream_t s);

}  // namespace planner::runtime::cuda_kernels
