#pragma once
// --check of the real mode (real.cpp): the unsharded reference run on rank 0
// and the comparison of a step's loss, gradients and weights with it.
// Private to the executor module.

#include <cstdint>
#include <map>
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
// sum scaled by 1 / (dp x micro-batches); then the optimizer on every tensor.
class Reference {
 public:
  Reference(runtime_cpu::Interpreter it, const plan::Plan& p, const graph::OpGraph& g)
      : it_(std::move(it)), p_(p), g_(g),
        inputs_(draw_global_inputs(g, p.training.seed, static_cast<std::int64_t>(p.layout.dp) * p.training.micro_batches)),
        opt_(optimizer_of(p.training.optimizer)) {}

  struct Step {
    double loss = 0;
    std::map<std::string, runtime_cpu::Tensor> gradients, weights;
  };

  /// The next step over the global batch; the optimizer applied.
  Result<Step> step();

 private:
  runtime_cpu::Interpreter it_;
  const plan::Plan& p_;
  const graph::OpGraph& g_;
  std::map<std::uint32_t, runtime_cpu::Value> inputs_;
  runtime_cpu::OptimizerConfig opt_;
  std::map<std::string, runtime_cpu::OptimState> state_;
};


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
