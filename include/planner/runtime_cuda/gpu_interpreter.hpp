#pragma once
/// The single-GPU interpreter: runtime_cpu::Interpreter's contract on one
/// CUDA device (docs/executor.md, "GPU real mode"). One graph forward,
/// backward and optimizer step on device tensors in fp32 or bf16 storage
/// (fp32 accumulation everywhere; fp32 GEMMs without TF32).
///
/// Design note. Parameters and inputs are the CPU interpreter's own draws
/// (runtime_cpu::Interpreter::create with the same options, uploaded), so a
/// GPU run and a CPU run of one graph and seed start from the same numbers
/// and --check can compare them value for value. Each op runs through the
/// GPU op layer (src/runtime_cuda/gpu_ops.hpp), whose kernels evaluate the
/// per-element and per-row math of kernel_math.hpp. Optimizer states are
/// fp32 on the device; bf16 weights are updated in fp32 and rounded back.
///
/// This header includes no CUDA header.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"
#include "planner/runtime_cpu/interpreter.hpp"

namespace planner::runtime {

/// Storage of the GPU interpreter's float tensors.
enum class GpuStorage { f32, bf16 };

class GpuInterpreter {
 public:
  /// Selects device `device`, draws the parameters and inputs as the CPU
  /// interpreter does and uploads them. Errors: an op that
  /// runtime_cpu::check_supported refuses (before the device is selected),
  /// a CUDA or cuBLAS call, or the CPU interpreter's own (no loss).
  static Result<GpuInterpreter> create(const graph::OpGraph& g, const runtime_cpu::InterpreterOptions& opt,
                                       GpuStorage storage, int device = 0);
  GpuInterpreter(GpuInterpreter&&) noexcept;
  GpuInterpreter& operator=(GpuInterpreter&&) noexcept;
  ~GpuInterpreter();

  /// Runs every op; returns the loss.
  Result<double> forward();
  /// Reverse mode from d loss = 1; the gradients, downloaded as fp32.
  Result<std::map<std::string, runtime_cpu::Tensor>> backward();
  /// forward, backward, then the optimizer on every parameter, all on the
  /// device; returns the loss before the update (nothing else downloaded).
  Result<double> step(const runtime_cpu::OptimizerConfig& optimizer);
  /// step, then the gradients and updated weights downloaded as fp32.
  Result<runtime_cpu::StepResult> train_step(const runtime_cpu::OptimizerConfig& optimizer);
  /// The gradients of the last backward (or step), as fp32.
  Result<std::map<std::string, runtime_cpu::Tensor>> last_gradients() const;
  /// The current parameters, as fp32.
  Result<std::map<std::string, runtime_cpu::Tensor>> weights() const;
  /// Parameter names, sorted.
  std::vector<std::string> parameter_names() const;
  /// Peak device memory in use so far (cudaMemGetInfo: total - free), bytes.
  double peak_device_bytes() const;

 private:
  struct Impl;
  explicit GpuInterpreter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace planner::runtime
