// The CUDA runtime::Device (include/planner/runtime_cuda/cuda_device.hpp):
// cuBLAS GEMMs, the kernels of kernels.cu, cudaEvent timing, one stream.

#include "planner/runtime_cuda/cuda_device.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include "kernels.hpp"

namespace planner::runtime {
namespace {

Status cuda_ok(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return {};
  return make_error("{}: CUDA error {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

Status cublas_ok(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return make_error("{}: cuBLAS error {} ({})", what, cublasGetStatusName(s), cublasGetStatusString(s));
}

// "12.8" from 12080 (CUDA's major * 1000 + minor * 10).
std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

class CudaDevice final : public Device {
 public:
  CudaDevice(int device, cudaStream_t stream, cublasHandle_t blas, float* sink)
      : device_(device), stream_(stream), blas_(blas), sink_(sink) {}
  ~CudaDevice() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    for (void* p : buffers_) cudaFree(p);
    cudaFree(sink_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, device_) != cudaSuccess) return fmt::format("CUDA device {}", device_);
    return fmt::format("{} (sm_{}{}, {} SMs, {:.1f} GiB)", p.name, p.major, p.minor, p.multiProcessorCount,
                       static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  }

  std::vector<std::pair<std::string, std::string>> versions() const override {
    std::vector<std::pair<std::string, std::string>> out;
    int v = 0;
    out.emplace_back("cuda_driver", cudaDriverGetVersion(&v) == cudaSuccess ? cuda_version(v) : "unknown");
    out.emplace_back("cuda_runtime", cudaRuntimeGetVersion(&v) == cudaSuccess ? cuda_version(v) : "unknown");
    int major = 0, minor = 0, patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
      out.emplace_back("cublas", fmt::format("{}.{}.{}", major, minor, patch));
    else
      out.emplace_back("cublas", "unknown");
    // ncclGetVersion: major * 10000 + minor * 100 + patch since NCCL 2.9.
    out.emplace_back("nccl", ncclGetVersion(&v) == ncclSuccess
                                 ? fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
                                 : "unknown");
    return out;
  }

  Result<DeviceMemory> memory() const override {
    PLANNER_TRY_STATUS(cuda_ok(cudaSetDevice(device_), "cudaSetDevice"));
    std::size_t free = 0, total = 0;
    PLANNER_TRY_STATUS(cuda_ok(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"));
    return DeviceMemory{Bytes(static_cast<double>(total)), Bytes(static_cast<double>(free))};
  }

  Result<void*> allocate(std::size_t bytes) override {
    PLANNER_TRY_STATUS(cuda_ok(cudaSetDevice(device_), "cudaSetDevice"));
    void* p = nullptr;
    PLANNER_TRY_STATUS(cuda_ok(cudaMalloc(&p, std::max<std::size_t>(bytes, 16)),
                               fmt::format("cudaMalloc of {:.1f} MiB", bytes / (1024.0 * 1024.0))));
    buffers_.insert(p);
    PLANNER_TRY_STATUS(cuda_ok(cudaMemsetAsync(p, 0, std::max<std::size_t>(bytes, 16), stream_), "cudaMemsetAsync"));
    return p;
  }

  void release(void* buffer) override {
    if (buffer == nullptr || !buffers_.erase(buffer)) return;
    cudaStreamSynchronize(stream_);
    cudaFree(buffer);
  }

  Status fill(void* buffer, std::size_t count, core::Precision p, float value) override {
    return cuda_ok(cuda_kernels::fill(buffer, count, static_cast<int>(core::precision_bytes(p)), p == core::Precision::bf16, value,
                                      stream_),
                   "fill kernel");
  }

  Status gemm(core::Precision p, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
              const void* b, void* c) override {
    if (m < 1 || n < 1 || k < 1 || batch < 1)
      return make_error("gemm {}x{}x{} (batch {}): every dimension must be >= 1", m, n, k, batch);
    if (std::max({m, n, k}) > (1LL << 31) - 1 || batch > (1LL << 31) - 1)
      return make_error("gemm {}x{}x{} (batch {}): a dimension exceeds cuBLAS's int range", m, n, k, batch);
    cudaDataType_t type = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    switch (p) {
      case core::Precision::fp32: break;
      case core::Precision::tf32: compute = CUBLAS_COMPUTE_32F_FAST_TF32; break;
      case core::Precision::bf16: type = CUDA_R_16BF; break;
      case core::Precision::fp16: type = CUDA_R_16F; break;
    }
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS computes the
    // n x m product of B (ld n) and A (ld k) into C (ld n).
    return cublas_ok(
        cublasGemmStridedBatchedEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                   static_cast<int>(k), &alpha, b, type, static_cast<int>(n), k * n, a, type,
                                   static_cast<int>(k), m * k, &beta, c, type, static_cast<int>(n), m * n,
                                   static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
        fmt::format("cublasGemmStridedBatchedEx {} {}x{}x{} batch {}", core::precision_name(p), m, n, k, batch));
  }

  Status traffic(const void* src, void* dst, std::size_t capacity, double read_bytes, double write_bytes) override {
    const std::size_t cap = std::max<std::size_t>(capacity / 16, 1);
    auto left = static_cast<std::size_t>(std::ceil(read_bytes / 16));
    while (left > 0) {
      const std::size_t w = std::min(left, cap);
      PLANNER_TRY_STATUS(cuda_ok(cuda_kernels::read(src, w, sink_, stream_), "read kernel"));
      left -= w;
    }
    left = static_cast<std::size_t>(std::ceil(write_bytes / 16));
    while (left > 0) {
      const std::size_t w = std::min(left, cap);
      PLANNER_TRY_STATUS(cuda_ok(cuda_kernels::write(dst, w, 1e-3f, stream_), "write kernel"));
      left -= w;
    }
    return {};
  }

  Status optimizer(float* param, const float* grad, float* state, std::size_t n, const OptimizerUpdate& u) override {
    return cuda_ok(cuda_kernels::optimizer(param, grad, state, n, u.states, u.lr, u.beta1, u.beta2, u.eps, u.momentum,
                                           stream_),
                   "optimizer kernel");
  }

  Status synchronize() override { return cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  Result<Seconds> time(const std::function<Status()>& enqueue, int reps) override {
    if (reps < 1) return make_error("time: reps must be >= 1 (got {})", reps);
    if (!start_) {
      PLANNER_TRY_STATUS(cuda_ok(cudaEventCreate(&start_), "cudaEventCreate"));
      PLANNER_TRY_STATUS(cuda_ok(cudaEventCreate(&stop_), "cudaEventCreate"));
    }
    PLANNER_TRY_STATUS(enqueue());  // warm: cuBLAS heuristics, lazy module loading
    PLANNER_TRY_STATUS(synchronize());
    PLANNER_TRY_STATUS(cuda_ok(cudaEventRecord(start_, stream_), "cudaEventRecord"));
    for (int i = 0; i < reps; ++i) PLANNER_TRY_STATUS(enqueue());
    PLANNER_TRY_STATUS(cuda_ok(cudaEventRecord(stop_, stream_), "cudaEventRecord"));
    PLANNER_TRY_STATUS(cuda_ok(cudaEventSynchronize(stop_), "cudaEventSynchronize"));
    float ms = 0;
    PLANNER_TRY_STATUS(cuda_ok(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime"));
    return Seconds(ms * 1e-3 / reps);
  }

 private:
  int device_;
  cudaStream_t stream_;
  cublasHandle_t blas_;
  float* sink_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::set<void*> buffers_;
};

}  // namespace

Result<int> local_cuda_device(int fallback_rank) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    return make_error("no CUDA device is visible ({})",
                      e == cudaSuccess ? "cudaGetDeviceCount returned 0" : cudaGetErrorString(e));
  int local = fallback_rank;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = std::getenv(var); v && *v) {
      local = std::atoi(v);
      break;
    }
  // NCCL refuses two ranks on one GPU; say so before it does.
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(var); v && *v) {
      if (const int ranks = std::atoi(v); ranks > count)
        return make_error("{} ranks on this host but {} visible CUDA device(s): one GPU per rank", ranks, count);
      break;
    }
  return std::max(local, 0) % count;
}

Result<std::unique_ptr<Device>> make_cuda_device(int device) {
  int count = 0;
  PLANNER_TRY_STATUS(cuda_ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (device < 0 || device >= count)
    return make_error("CUDA device {} does not exist ({} visible)", device, count);
  PLANNER_TRY_STATUS(cuda_ok(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device)));
  cudaStream_t stream = nullptr;
  PLANNER_TRY_STATUS(cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  cublasHandle_t blas = nullptr;
  if (Status s = cublas_ok(cublasCreate(&blas), "cublasCreate"); !s) {
    cudaStreamDestroy(stream);
    return s.error();
  }
  float* sink = nullptr;
  Status s = cublas_ok(cublasSetStream(blas, stream), "cublasSetStream");
  if (s) s = cuda_ok(cudaMalloc(&sink, sizeof(float)), "cudaMalloc");
  if (!s) {
    cublasDestroy(blas);
    cudaStreamDestroy(stream);
    return s.error();
  }
  return std::unique_ptr<Device>(new CudaDevice(device, stream, blas, sink));
}

}  // namespace planner::runtime
