// Softmax family.
//
// Memory-bound, per element of X (every elementary op 1):
//   Softmax    5 (max, sub, exp, sum, div)
//   LogSoftmax 5 (max, sub, exp, sum, sub; the log is per row)
//   com.microsoft BiasSoftmax 6 (bias add, then softmax)
// forward  reads every input, writes Y.
// backward 2x forward FLOPs; reads dY and Y (both gradients are functions of
//          the output: y (dy - sum(dy y)) and dy - exp(y) sum(dy)); writes the
//          gradients of the inputs that need one.
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

OpCost softmax_with(const CostQuery& q, double per_elem) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  return memory_bound(q, per_elem * numel(y), bytes(y));
}

OpCost softmax(const CostQuery& q) { return softmax_with(q, 5.0); }
OpCost bias_softmax(const CostQuery& q) { return softmax_with(q, 6.0); }

constexpr std::array kRules{
    OpRule{"", "Softmax", OpClass::softmax, &softmax},
    OpRule{"", "LogSoftmax", OpClass::softmax, &softmax},
    OpRule{"com.microsoft", "BiasSoftmax", OpClass::softmax, &bias_softmax},
};

}  // namespace

std::span<const OpRule> softmax_rules() { return kRules; }

}  // namespace planner::ops
