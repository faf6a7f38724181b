#pragma once
// --check of the real mode (real.cpp): the unsharded reference run on rank 0
// and the comparison of a step's loss, gradients and weights with it.
// Private to the executor module.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/executor/real.hpp"
#include "planner/graph/graph.hpp"
#include "planner/plan/plan.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "real_data.hpp"

namespace planner::executor::real_detail {

// The unsharded model for --check: the single-device interpreter run over the
// global batch, one micro-batch graph at a time (the graph's batch is fixed
// at import). Gradients are summed as the distributed run sums them:
// per replica d over its micro-batches m in order, then over d in order; the
// sum scaled by 1 / (dp x micro-batches).
//
// Each checked step starts from the run's own weights (sync()), so a step's
// loss and gradients are compared from identical weights and rounding
// differences of earlier steps never compound. The updated weights are the
// reference optimizer applied to the *run's* gradients (with the reference's
// own optimizer state, fed the run's gradients every step): the comparison of
// weights then checks the distributed update (sharded optimizer state, the
// gathers of ZeRO and the distributed optimizer) exactly, without amplifying
// the gradients' rounding through Adam's m / sqrt(v), which maps a gradient
// near its rounding noise to a step of up to lr in a direction the summation
// order decides (docs/executor.md, "Real mode and --check").
class Reference {
 public:
  Reference(runtime_cpu::Interpreter it, const plan::Plan& p, const graph::OpGraph& g)
      : it_(std::move(it)), p_(p), g_(g),
        inputs_(draw_global_inputs(g, p.training.seed, static_cast<std::int64_t>(p.layout.dp) * p.training.micro_batches)),
        opt_(optimizer_of(p.training.optimizer)) {}

  /// A parameter's values by name (views into the run's gathered state).
  using Named = std::map<std::string, std::span<const float>>;

  struct Step {
    double loss = 0;
    std::map<std::string, runtime_cpu::Tensor> gradients, weights;
  };

  /// The next step over the global batch from the current weights: the loss
  /// and gradients of the reference, and the weights the optimizer makes of
  /// the current ones with `run_gradients` (one entry per parameter the
  /// reference has; a missing one is an error).
  Result<Step> step(const Named& run_gradients);

  /// Sets every parameter named in `weights` to the run's values (the start
  /// of the next checked step).
  Status sync(const Named& weights);

 private:
  runtime_cpu::Interpreter it_;
  const plan::Plan& p_;
  const graph::OpGraph& g_;
  std::map<std::uint32_t, runtime_cpu::Value> inputs_;
  runtime_cpu::OptimizerConfig opt_;
  std::map<std::string, runtime_cpu::OptimState> state_;
};

/// Rank 0's gathered state (every pipeline stage's tensors, flat in
/// stage_params order) by parameter name.
Reference::Named by_name(const graph::OpGraph& g, const std::vector<std::vector<graph::TensorId>>& stage_params,
                         const std::vector<std::vector<float>>& stage_flat);

/// Compares rank 0's gathered state of step `step` (every pipeline stage's
/// gradients and weights, flat in stage_params order) and its loss with the
/// reference's; fills `cs` (largest relative error and where) and returns
/// the failure line, empty when every value is within `tolerance`. Under
/// tp or cp gradients and weights are compared norm-wise (real_data.hpp).
std::string compare_step(const plan::Plan& p, const graph::OpGraph& g,
                         const std::vector<std::vector<graph::TensorId>>& stage_params,
                         const std::vector<std::vector<float>>& stage_grad,
                         const std::vector<std::vector<float>>& stage_w, const Reference::Step& r, int step,
                         double loss, double tolerance, CheckedStep& cs);

}  // namespace planner::executor::real_detail
