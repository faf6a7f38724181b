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
// Special functions: one exp per element forward (the reference kernel keeps
// it for the normalisation); LogSoftmax adds a log per row forward and an
// exp per element backward (dy - exp(y) sum(dy)); Softmax's backward has none.
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

OpCost softmax_with(const CostQuery& q, double per_elem, bool log) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  OpCost c = memory_bound(q, per_elem * numel(y), bytes(y));
  c.forward_special = numel(y);
  if (log) {
    const double row = dim(y, static_cast<int>(q.op.attr_int("axis").value_or(-1)));
    c.forward_special += numel(y) / std::max(row, 1.0);  // one log per row
    c.backward_special = numel(y);
  }
  return c;
}

OpCost softmax(const CostQuery& q) { return softmax_with(q, 5.0, false); }
OpCost log_softmax(const CostQuery& q) { return softmax_with(q, 5.0, true); }
OpCost bias_softmax(const CostQuery& q) { return softmax_with(q, 6.0, false); }

constexpr std::array kRules{
    OpRule{"", "Softmax", OpClass::softmax, &softmax},
    OpRule{"", "LogSoftmax", OpClass::softmax, &log_softmax},
    OpRule{"com.microsoft", "BiasSoftmax", OpClass::softmax, &bias_softmax},
};

}  // namespace

std::span<const OpRule> softmax_rules() { return kRules; }

}  // namespace planner::ops
