#pragma once
/// A compute device for the replay (`planner run --replay --backend cuda`)
/// and for calibration (`planner calibrate --backend cuda`): device memory,
/// GEMMs, memory traffic and the optimizer update, enqueued in order on one
/// stream, and a timer. Both commands use the same calls, so a profile
/// calibrated with them prices the kernels the replay runs.
///
/// Design notes (docs/executor.md, docs/calibrate.md):
/// - Calls enqueue and return; `synchronize` waits for everything enqueued.
///   Errors of an enqueued kernel may surface at the next synchronize.
/// - Buffers belong to the device: `allocate` hands out device memory that
///   stays valid until `release` or the device's destruction.
/// - GEMMs are row-major C[m,n] = A[m,k] B[k,n], `batch` consecutive
///   matrices in each buffer, elements of the GEMM's precision, accumulated
///   in fp32 (tf32: fp32 data on tensor cores).
/// - The CUDA implementation lives in runtime_cuda (cuBLAS and its own
///   kernels); unit tests use fakes. This header includes no CUDA header.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "planner/core/precision.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

namespace planner::runtime {

/// GEMM precisions are core::Precision; a device runs the first
/// kDevicePrecisionCount of them (fp32, tf32, bf16, fp16: no fp8 GEMM).
inline constexpr int kDevicePrecisionCount = 4;

/// The plan's precision strings (plan.training.precision): fp32, tf32,
/// bf16, fp16; fp8 is an error naming it (no fp8 GEMM here).
Result<core::Precision> parse_precision(std::string_view text);


/// Device memory as the driver reports it.
struct DeviceMemory {
  Bytes total;
  Bytes free;
};

/// Optimizer settings of `Device::optimizer`.
struct OptimizerUpdate {
  int states = 2;  ///< 2 Adam (m then v in `state`), 1 SGD with momentum, 0 SGD
  float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, momentum = 0.9f;
};

class Device {
 public:
  virtual ~Device() = default;

  /// "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)".
  virtual std::string name() const = 0;
  /// Driver and library versions, as (key, value) pairs in a fixed order.
  virtual std::vector<std::pair<std::string, std::string>> versions() const = 0;
  /// Total and free device memory now.
  virtual Result<DeviceMemory> memory() const = 0;

  /// `bytes` of zeroed device memory (at least 1 byte is allocated).
  virtual Result<void*> allocate(std::size_t bytes) = 0;
  /// Frees a buffer from `allocate` (nullptr: nothing).
  virtual void release(void* buffer) = 0;
  /// Sets `count` elements of precision `p` to `value`.
  virtual Status fill(void* buffer, std::size_t count, core::Precision p, float value) = 0;

  /// Enqueues `batch` GEMMs C[m,n] = A[m,k] B[k,n] (row-major, matrix i of
  /// each buffer after i whole matrices). Requires: m, n, k, batch >= 1.
  virtual Status gemm(core::Precision p, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                      const void* a, const void* b, void* c) = 0;
  /// Enqueues memory-bound traffic: reads `read_bytes` from `src` and writes
  /// `write_bytes` to `dst`, each in passes over a buffer of `capacity`
  /// bytes (rounded down to 16-byte words; at least one word).
  virtual Status traffic(const void* src, void* dst, std::size_t capacity, double read_bytes,
                         double write_bytes) = 0;
  /// Enqueues the optimizer update of `n` f32 parameters `param` from
  /// `grad`; `state` holds u.states arrays of n elements.
  virtual Status optimizer(float* param, const float* grad, float* state, std::size_t n,
                           const OptimizerUpdate& u) = 0;

  /// Waits for every enqueued call; reports the first failure.
  virtual Status synchronize() = 0;
  /// Device time per call of `enqueue`: one warm call, then `reps` calls
  /// between two timing events; synchronizes. Requires: reps >= 1.
  virtual Result<Seconds> time(const std::function<Status()>& enqueue, int reps) = 0;
};

}  // namespace planner::runtime
