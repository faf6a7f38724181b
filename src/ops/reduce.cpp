// Reductions, arg-reductions, TopK, CumSum, Hardmax.
//
// Memory-bound. Reduce*: F per input element + P per output element:
//   ReduceSum, ReduceMax, ReduceMin, ReduceProd 1 + 0
//   ReduceMean 1 + 1 (divide), ReduceL1 2 + 0 (abs, add), ReduceL2 2 + 1 (sqrt),
//   ReduceSumSquare 2 + 0, ReduceLogSum 1 + 1, ReduceLogSumExp 3 + 1
//   forward reads data (and the axes input), writes Y;
//   backward 2x forward FLOPs (broadcast dY back, times the local derivative);
//   reads dY plus X and/or Y where the derivative needs them (Max, Min,
//   Prod, L2, LogSumExp: X and Y; L1, SumSquare: X; LogSum: Y; Sum, Mean:
//   nothing); writes dX.
// ArgMax, ArgMin: numel(X) compares; integer output, so no backward.
// Hardmax: numel(X) compares + numel(Y) writes; piecewise constant, so no
//   backward.
// TopK: numel(X) * max(1, log2 k) compares (k = the values' size along
//   axis); backward scatters dValues into a zeroed dX: numel(values) FLOPs,
//   reads dValues and the indices, writes dX.
// CumSum: numel(X) adds; backward is a reverse cumsum (2x forward FLOPs by
//   the memory-bound rule), reads dY, writes dX.
#include <array>
#include <cmath>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

enum class Keep : std::uint8_t { none, x, y, xy };

struct ReduceSpec {
  std::string_view type;
  double per_in;
  double per_out;
  Keep keep;
};

constexpr std::array kReduce{
    ReduceSpec{"ReduceSum", 1, 0, Keep::none},      ReduceSpec{"ReduceMean", 1, 1, Keep::none},
    ReduceSpec{"ReduceMax", 1, 0, Keep::xy},        ReduceSpec{"ReduceMin", 1, 0, Keep::xy},
    ReduceSpec{"ReduceProd", 1, 0, Keep::xy},       ReduceSpec{"ReduceL1", 2, 0, Keep::x},
    ReduceSpec{"ReduceL2", 2, 1, Keep::xy},         ReduceSpec{"ReduceSumSquare", 2, 0, Keep::x},
    ReduceSpec{"ReduceLogSum", 1, 1, Keep::y},      ReduceSpec{"ReduceLogSumExp", 3, 1, Keep::xy},
};

OpCost reduce(const CostQuery& q) {
  const auto *x = q.in(0), *y = q.out(0);
  const ReduceSpec* spec = nullptr;
  for (const auto& s : kReduce)
    if (s.type == q.op.type) spec = &s;
  if (!x || !y || !spec) return fallback_cost(q.op, q.g, q.grad);
  Bytes keep;
  if (spec->keep == Keep::x || spec->keep == Keep::xy) keep += bytes(x);
  if (spec->keep == Keep::y || spec->keep == Keep::xy) keep += bytes(y);
  return memory_bound(q, spec->per_in * numel(x) + spec->per_out * numel(y), keep);
}

OpCost no_backward(const CostQuery& q, double flops) {
  OpCost c = memory_bound(q, flops, Bytes(0));
  clear_backward(c);
  return c;
}

OpCost arg_reduce(const CostQuery& q) {
  if (!q.in(0)) return fallback_cost(q.op, q.g, q.grad);
  return no_backward(q, numel(q.in(0)));
}

OpCost hardmax(const CostQuery& q) {
  if (!q.in(0) || !q.out(0)) return fallback_cost(q.op, q.g, q.grad);
  return no_backward(q, numel(q.in(0)) + numel(q.out(0)));
}

OpCost top_k(const CostQuery& q) {
  const auto *x = q.in(0), *values = q.out(0);
  if (!x || !values) return fallback_cost(q.op, q.g, q.grad);
  const int axis = norm_axis(q.op.attr_int("axis").value_or(-1), rank(values));
  const double k = dim(values, axis);
  OpCost c;
  c.forward_flops = Flops(numel(x) * std::max(1.0, std::log2(std::max(k, 1.0))));
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q);
  if (q.in_needs_grad(0)) {
    c.backward_flops = Flops(numel(values));
    c.backward_bytes_read = bytes(values) + bytes(q.out(1));
    c.backward_bytes_written = bytes(x);
  }
  return c;
}

OpCost cum_sum(const CostQuery& q) {
  if (!q.in(0)) return fallback_cost(q.op, q.g, q.grad);
  return memory_bound(q, numel(q.in(0)), Bytes(0));
}

constexpr auto kRules = [] {
  std::array<OpRule, kReduce.size() + 5> r{};
  std::size_t i = 0;
  for (const auto& s : kReduce) r[i++] = OpRule{"", s.type, OpClass::reduction, &reduce};
  r[i++] = OpRule{"", "ArgMax", OpClass::reduction, &arg_reduce};
  r[i++] = OpRule{"", "ArgMin", OpClass::reduction, &arg_reduce};
  r[i++] = OpRule{"", "Hardmax", OpClass::reduction, &hardmax};
  r[i++] = OpRule{"", "TopK", OpClass::reduction, &top_k};
  r[i++] = OpRule{"", "CumSum", OpClass::reduction, &cum_sum};
  return r;
}();

}  // namespace

std::span<const OpRule> reduce_rules() { return kRules; }

}  // namespace planner::ops
