#pragma once
// Helpers of the real mode (real.cpp): what every rank and the --check
// reference draw from the plan's seed, and the plan's chunk bookkeeping.
// Private to the executor module.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "planner/graph/graph.hpp"
#include "planner/plan/plan.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"

namespace planner::executor::real_detail {

inline constexpr float kStddev = 0.02f;  // the interpreter's default (InterpreterOptions)

/// A parameter by the interpreter's rule: "*.bias" of rank 1 zeros, other
/// rank-1 parameters ones, the rest normal(0, 0.02), all keyed by name.
runtime_cpu::Tensor init_parameter(std::uint64_t seed, const graph::Tensor& t);
/// The plan's optimizer as a runtime_cpu config (adam: AdamW; sgd_momentum; sgd).
runtime_cpu::OptimizerConfig optimizer_of(const plan::OptimizerSettings& o);
void optimizer_step(const runtime_cpu::OptimizerConfig& c, std::span<float> w, std::span<const float> g,
                    runtime_cpu::OptimState& s);
/// |a - b| / max(|b|, scale, 1e-6). `scale`: 0 for an element-wise
/// relative error; the tensor's largest |b| for a norm-wise one (tp splits a
/// GEMM's contraction, so its sums run in another order than the interpreter's).
double rel_error(double a, double b, double scale = 0);
/// Which chunk runs each op (index = OpId), -1 for none.
std::vector<int> chunk_of_ops(const plan::Plan& p, const graph::OpGraph& g);
/// Parameters read by the ops of pipeline rank `stage`, sorted by name.
std::vector<graph::TensorId> stage_parameters(const plan::Plan& p, const graph::OpGraph& g,
                                              const std::vector<int>& chunk_of, int stage);
/// Every graph input at the global batch (dim 0 times `chunks`), drawn as the
/// interpreter draws an input of that shape. Key: tensor id.
std::map<std::uint32_t, runtime_cpu::Value> draw_global_inputs(const graph::OpGraph& g, std::uint64_t seed,
                                                               std::int64_t chunks);
/// Global micro-batch chunk q of an input: rows [q n, (q + 1) n) as a tensor
/// of the micro-batch graph's shape (n = its elements).
runtime_cpu::Value slice_rows(const runtime_cpu::Value& full, const graph::Tensor& t, std::int64_t q);

}  // namespace planner::executor::real_detail
