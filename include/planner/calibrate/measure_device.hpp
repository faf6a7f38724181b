#pragma once
/// Device measurements of `planner calibrate --backend cuda`: the kernels
/// the replay runs (runtime::Device: cuBLAS GEMMs, the read/write traffic
/// kernels) and the device communicator's collectives, nothing else.
///
///   gemm      square n x n x n in every precision (x = 2 n^3)
///   skinny    bf16 [d x N] x [N x N] (x = 2 d N^2)
///   aligned   bf16 at n and n - 1 (the misalignment factor)
///   copy      traffic reading S/2 and writing S/2 bytes (x = S)
///   launch    host round trip of one tiny kernel plus synchronize, minus
///             its device time (the per-task cost the replay pays)
///   comm      all_gather, reduce_scatter, all_to_all, broadcast, all_reduce
///             of f32 device buffers over the device communicator
///
/// Kernel times are device times (cudaEvent pairs around back-to-back
/// calls), averaged over ranks; a collective's time is the slowest rank's
/// host time (the NCCL communicator returns once the call completed). Each
/// point keeps the fastest of a few rounds.
///
/// Architecture invariant: no CUDA header; the device and the communicators
/// are injected, so tests run the sweep on fakes.

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "planner/calibrate/fit.hpp"
#include "planner/calibrate/measure.hpp"
#include "planner/runtime/communicator.hpp"
#include "planner/runtime/device.hpp"

namespace planner::calibrate {

struct DeviceMeasurements {
  int ranks = 1;
  std::string device;  ///< Device::name() of rank 0
  std::vector<std::pair<std::string, std::string>> versions;
  std::string host;
  /// Square GEMMs: sizes[i] is n of gemm[p][i] for every precision p.
  std::vector<int> gemm_sizes;
  std::array<std::vector<Sample>, runtime::kDevicePrecisionCount> gemm;
  /// bf16 [d x N] x [N x N]: skinny_dims[i] is d.
  int skinny_n = 0;
  std::vector<int> skinny_dims;
  std::vector<Sample> skinny;
  /// bf16 square at aligned_n and aligned_n - 1.
  int aligned_n = 0;
  Sample aligned, misaligned;
  /// Copy traffic: x = bytes read + written.
  std::vector<Sample> copy;
  /// Host cost of a launch plus synchronize beyond the kernel's device time.
  Seconds launch_sync;
  /// Per collective (indexed by core::Collective): x = message bytes.
  std::array<std::vector<Sample>, core::kCollectiveCount> collectives;
  /// Device memory: total; in use before any buffer (context, cuBLAS);
  /// what creating the device communicator and its sweep left in use once
  /// the buffers were freed (max over ranks, >= 0).
  Bytes total_memory, context_memory, communicator_memory;
};

/// Makes the device communicator over the ranks of the host communicator
/// (collective; called only with 2 ranks or more).
using DeviceCommFactory = std::function<Result<std::unique_ptr<runtime::Communicator>>()>;

/// Runs the sweep on `dev`. Collective: every rank of `host` (host buffers:
/// MPI, or the fake in tests) calls it with its own device. Errors come from
/// the device or a communicator.
Result<DeviceMeasurements> measure_device(runtime::Device& dev, runtime::Communicator& host,
                                          const DeviceCommFactory& make_device_comm, const MeasureOptions& options);

}  // namespace planner::calibrate
