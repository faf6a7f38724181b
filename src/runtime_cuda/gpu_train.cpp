// The one-GPU real mode with --check (gpu_train.hpp).

#include "planner/runtime_cuda/gpu_train.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "planner/runtime_cpu/optim.hpp"
#include "planner/runtime_cuda/kernel_math.hpp"

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
    if (o.storage == GpuStorage::bf16) {
      // The device holds the graph's inputs as uploaded, rounded to bf16:
      // the reference reads the same numbers (a pre-activation near 0 in
      // fp32 but not in bf16 would otherwise flip a ReLU's mask, an error of
      // the element's whole size that no tolerance covers).
      for (graph::TensorId id : g.graph_inputs) {
        const graph::Tensor& t = g.tensor(id);
        if (t.role != graph::TensorRole::input) continue;
        const runtime_cpu::Value* v = cpu->value(id);
        const runtime_cpu::Tensor* f = v ? runtime_cpu::as_float(v) : nullptr;
        if (!f) continue;
        runtime_cpu::Tensor r = *f;
        for (auto& x : r.data) x = kernel_math::bf16_float(kernel_math::bf16_bits(x));
        PLANNER_TRY_STATUS(cpu->set_input(t.name, runtime_cpu::Value(std::move(r))));
      }
    }
  }
  // The CPU optimizer's states, fed the GPU's own gradients (weights check).
  std::map<std::string, runtime_cpu::OptimState> mirror;
  GpuTrainResult out;
  const int total = o.warmup + o.steps;
  for (int step = 1; step <= total; ++step) {
    const bool checked = o.check && step <= o.max_checked_steps;
    std::map<std::string, runtime_cpu::Tensor> before;
    if (checked) {
      PLANNER_TRY(before, gpu.weights());
    }
    const auto t0 = std::chrono::steady_clock::now();
    PLANNER_TRY(double loss, gpu.step(o.optimizer));  // ends with a device synchronisation
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.losses.push_back(loss);
    if (step > o.warmup) out.step_times_s.push_back(dt);
    if (!checked) continue;
    // The reference starts from the GPU's weights as the device stored them
    // (in bf16 the first step's weights are the draws rounded on upload), so
    // it compares one forward and backward from the same numbers.
    for (const auto& [name, w] : before)
      if (runtime_cpu::Tensor* p = cpu->parameter(name)) *p = w;
    PLANNER_TRY(auto ref, cpu->train_step(o.optimizer));
    PLANNER_TRY(auto grads, gpu.last_gradients());
    PLANNER_TRY(auto after, gpu.weights());
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
    // The update: the CPU optimizer on the GPU's weights and gradients of
    // this step (gpu_train.hpp says why not the CPU interpreter's weights).
    for (auto& [name, w] : before) {
      runtime_cpu::OptimState& st = mirror[name];
      if (const auto* sgd = std::get_if<runtime_cpu::SgdConfig>(&o.optimizer))
        runtime_cpu::sgd_step(*sgd, w.span(), grads.at(name).span(), st);
      else
        runtime_cpu::adamw_step(std::get<runtime_cpu::AdamWConfig>(o.optimizer), w.span(), grads.at(name).span(), st);
      if (o.storage == GpuStorage::bf16)  // the device stores the updated weight in bf16
        for (auto& v : w.data) v = kernel_math::bf16_float(kernel_math::bf16_bits(v));
      compare(after.at(name), w, fmt::format("updated weight of '{}'", name), step, o.tolerance, cs, failure);
    }
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
