#pragma once
/// The real mode of `planner run --backend cuda` for a one-rank plan
/// (docs/executor.md, "GPU real mode"): the model trained on one GPU with
/// the GPU interpreter, and with check, every one of the first
/// max_checked_steps steps compared with the CPU interpreter
/// (runtime_cpu::Interpreter) run on the same graph, seed and optimizer.
///
/// What a checked step compares (each starts the CPU reference from the
/// GPU's weights, so one forward and backward from the same numbers):
///   - the loss, |gpu - cpu| / max(|cpu|, 1e-6);
///   - every gradient, norm-wise: |gpu - cpu| / max(max|cpu| over the
///     tensor, 1e-6);
///   - every updated weight, norm-wise, against runtime_cpu's optimizer
///     applied to the GPU's own weights and gradients of the step (states
///     mirrored on the CPU; bf16: the result rounded to bf16 as the device
///     stores it). Not against the CPU interpreter's weights: AdamW's
///     normalised update turns gradient noise (the key bias's gradient is
///     zero up to rounding) into +-lr steps, so two correct runs whose sums
///     round differently part there by up to 2 lr.
/// Tolerances (gpu_check_tolerance): 1e-5 in fp32 (cuBLAS without TF32;
/// the other kernels repeat the CPU's arithmetic, kernel_math.hpp), 5e-2 in
/// bf16 storage (8 significant bits per stored value, rounded once per op;
/// fp32 accumulation throughout).
///
/// This header includes no CUDA header.

#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "planner/runtime_cuda/gpu_interpreter.hpp"

namespace planner::runtime {

/// The default --check tolerance of a storage: 1e-5 (fp32), 5e-2 (bf16).
double gpu_check_tolerance(GpuStorage storage);

struct GpuTrainOptions {
  int steps = 5;
  int warmup = 1;
  bool check = false;
  int max_checked_steps = 3;
  double tolerance = 1e-5;
  GpuStorage storage = GpuStorage::f32;
  runtime_cpu::InterpreterOptions interpreter;
  runtime_cpu::OptimizerConfig optimizer;
  int device = 0;
};

struct GpuCheckedStep {
  int step = 0;  ///< 1-based, warm-up included
  double loss = 0, reference_loss = 0;
  double max_rel_error = 0;  ///< over the loss, every gradient and weight
  std::string worst;         ///< "gradient of 'fc1.weight'" etc.
};

struct GpuTrainResult {
  std::vector<double> losses;        ///< per step, warm-up included
  std::vector<double> step_times_s;  ///< per measured step (forward, backward, optimizer; synchronised)
  std::vector<GpuCheckedStep> checked;
  std::string check_failure;  ///< non-empty: --check failed (the first element out of tolerance)
  double peak_device_bytes = 0;
};

/// Trains `g` (one micro-batch, the whole batch) for warmup + steps steps.
/// Errors: CUDA, cuBLAS, an op without kernel (CPU or GPU), a graph without loss.
Result<GpuTrainResult> train_on_gpu(const graph::OpGraph& g, const GpuTrainOptions& opts);

}  // namespace planner::runtime
