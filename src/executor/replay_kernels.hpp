#pragma once
// The replay's compute kernels (private to the executor module): GEMMs on
// OpenBLAS, memory traffic, the optimizer update. Buffers are owned by the
// caller and reused by every task.

#include <cstdint>
#include <memory>
#include <vector>

#include "planner/executor/program.hpp"
#include "planner/plan/plan.hpp"
#include "planner/runtime/device.hpp"

namespace planner::executor::detail {

/// Working buffers, sized once from the program.
struct Buffers {
  std::vector<float> gemm;            ///< A, B, C of the largest GEMM
  std::vector<float> mem_src, mem_dst;  ///< memory traffic
  std::vector<float> params, grads, state;  ///< optimizer arrays
};

/// Allocates and touches the buffers (so that the RSS counts them).
void allocate(Buffers& b, const RankProgram& prog);

/// Runs one GEMM task (forward or a backward GEMM; same kernel, its shape).
void run_gemm(Buffers& b, const Task& t);

/// Reads t.read_bytes and writes t.write_bytes (streaming, in chunks of the
/// buffers when a task is larger than them).
void run_memory(Buffers& b, const Task& t);

/// The optimizer update over the first t.elements parameters: adam
/// (states 2), SGD with momentum (1) or plain SGD (0).
void run_optimizer(Buffers& b, const Task& t, int states, double lr, double beta1, double beta2, double eps,
                   double momentum);

/// The OpenBLAS configuration string.
std::string blas_config();

/// Where the replay's compute runs and its buffers live: host arrays with
/// OpenBLAS (host_backend, the functions above), or a runtime::Device
/// (device_backend, replay_device.cpp: device buffers for the device
/// communicator, GEMMs in the plan's precision).
class Backend {
 public:
  virtual ~Backend() = default;
  /// Sizes every buffer from the program: collective buffers of
  /// `comm_words` f32, transfer buffers of `transfer_words` f32.
  virtual Status allocate(const RankProgram& prog, std::size_t comm_words, std::size_t transfer_words) = 0;
  virtual Status gemm(const Task& t) = 0;
  virtual Status memory(const Task& t) = 0;
  virtual Status optimizer(const Task& t, int states, const plan::OptimizerSettings& o) = 0;
  /// Returns once the work enqueued so far is done (the host's is at once).
  virtual Status finish() = 0;
  /// Collective buffers (a, b) and transfer buffers (send, recv).
  virtual void* comm_a() = 0;
  virtual void* comm_b() = 0;
  virtual void* send_buf() = 0;
  virtual void* recv_buf() = 0;
  /// Peak memory of this rank: host peak RSS, or device memory in use.
  virtual double peak_memory_bytes() = 0;
};

std::unique_ptr<Backend> host_backend();
/// Requires: `dev` outlives the backend.
std::unique_ptr<Backend> device_backend(runtime::Device& dev, core::Precision precision);

}  // namespace planner::executor::detail
