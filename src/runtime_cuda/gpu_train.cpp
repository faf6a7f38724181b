// The one-GPU real mode with --check (gpu_train.hpp).

#include "planner/runtime_cuda/gpu_train.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

namespace planner::runtime {

double gpu_check_tolerance(GpuStorage storage) { return storage == GpuStorage::f32 ? 1e-5 : 5e-2; }

namespace {

/// Compares one tensor norm-wise; updates the step's worst error and the
/// first failure.
void compare(const runtime_cpu::Tensor& mine, const runtime_cpu::Tensor& ref, const std::string& what, int step,
             double tol, GpuCheckedStep& cs, std::string& failure) {
  double scale = 1e-6;
  for (float b : ref.data) scale = std::max(scale, static_cast<double>(std::fabs(b)));
  for (std::int64_t i = 0; i < ref.size(); ++i) {
    const double e = std::fabs(static_cast<double>(mine[i]) - ref[i]) / scale;
    if (!(e <= cs.max_rel_error)) {
      cs.max_rel_error = std::isnan(e) ? INFINITY : e;
      cs.worst = what;
    }
    if (failure.empty() && !(e <= tol))
      failure = fmt::format("--check failed at step {}: {} element {} is {:.9g}, the CPU reference {:.9g} (error {:.3g} "
                            "relative to the tensor's largest magnitude {:.3g}; tolerance {:.0e})",
                            step, what, i, mine[i], ref[i], e, scale, tol);
  }
}

}  // namespace

Result<GpuTrainResult> train_on_gpu(const graph::OpGraph& g, const GpuTrainOptions& o) {
  PLANNER_TRY(GpuInterpreter gpu, GpuInterpreter::create(g, o.interpreter, o.storage, o.device));
  std::optional<runtime_cpu::Interpreter> cpu;
  if (o.check) {
    PLANNER_TRY(cpu, runtime_cpu::Interpreter::create(g, o.interpreter));
  }
  GpuTrainResult out;
  const int total = o.warmup + o.steps;
  for (int step = 1; step <= total; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    PLANNER_TRY(double loss, gpu.step(o.optimizer));  // ends with a device synchronisation
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.losses.push_back(loss);
    if (step > o.warmup) out.step_times_s.push_back(dt);
    if (!o.check || step > o.max_checked_steps) continue;
    PLANNER_TRY(auto ref, cpu->train_step(o.optimizer));
    PLANNER_TRY(auto grads, gpu.last_gradients());
    std::map<std::string, runtime_cpu::Tensor> weights;
    if (o.storage == GpuStorage::f32) {
      PLANNER_TRY(weights, gpu.weights());
    }
    GpuCheckedStep cs;
    cs.step = step;
    cs.loss = loss;
    cs.reference_loss = ref.loss;
    cs.max_rel_error = std::fabs(loss - ref.loss) / std::max(std::fabs(ref.loss), 1e-6);
    cs.worst = "the loss";
    std::string failure;
    if (!(cs.max_rel_error <= o.tolerance))
      failure = fmt::format("--check failed at step {}: the loss is {:.9g}, the CPU reference {:.9g} (relative error "
                            "{:.3g} > {:.0e})",
                            step, loss, ref.loss, cs.max_rel_error, o.tolerance);
    for (const auto& [name, t] : ref.gradients)
      compare(grads.at(name), t, fmt::format("gradient of '{}'", name), step, o.tolerance, cs, failure);
    if (o.storage == GpuStorage::f32)  // bf16: weights are judged through the next step (gpu_train.hpp)
      for (const auto& [name, t] : ref.weights)
        compare(weights.at(name), t, fmt::format("weight of '{}'", name), step, o.tolerance, cs, failure);
    out.checked.push_back(cs);
    if (!failure.empty()) {
      out.check_failure = failure;
      break;
    }
  }
  out.peak_device_bytes = gpu.peak_device_bytes();
  return out;
}

}  // namespace planner::runtime
