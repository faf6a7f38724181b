#pragma once
// The replay's compute kernels (private to the executor module): GEMMs on
// OpenBLAS, memory traffic, the optimizer update. Buffers are owned by the
// caller and reused by every task.

#include <cstdint>
#include <vector>

#include "planner/executor/program.hpp"

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

}  // namespace planner::executor::detail
