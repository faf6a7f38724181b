// solve(): the exact solver's driver.
//
//   1. Time only: eliminate leaves and chains over one-option lists, run the
//      frontier DP on what remains, read the eliminated nodes back. Without
//      a memory limit, or when this optimum fits, it is the answer.
//   2. Memory-bound: the same over Pareto lists of (cost, memory) -- exact
//      unless a Pareto cap (SolveOptions::max_pareto) or the beam
//      (max_states) dropped an option.
//   3. Only then: Lagrangian relaxation, minimising cost + lambda * memory by
//      step 1 for a bisected lambda, keeping the cheapest choice that fits;
//      marked exact = false.
#include <algorithm>

#include <fmt/format.h>

#include "op_sharding_internal.hpp"

namespace planner::sharding {
namespace {

// One pass; `exact` tells whether the pass dropped nothing (also on error).
Result<Solution> pass(const ShardingProblem& p, double lambda, bool limited, const SolveOptions& o, bool& exact) {
  detail::Factors f(p, lambda, o);
  f.limited = limited && p.memory_limit.has_value();
  detail::eliminate(f);
  Solution s;
  s.choice.assign(p.nodes.size(), 0);
  const Status st = detail::frontier_dp(f, o, s.choice, s);
  exact = f.exact;
  if (!st.ok()) return st.error();
  s.evaluation = evaluate(p, s.choice);
  s.exact = f.exact;
  return s;
}

Status check(const ShardingProblem& p, const SolveOptions& o) {
  PLANNER_TRY_STATUS(p.validate());
  if (o.max_states < 1 || o.max_pareto < 2) return make_error("solve: need max_states >= 1 and max_pareto >= 2");
  return {};
}

// Steps 2 and 3, after the first pass `fast` (evaluated against p).
Result<Solution> finish(const ShardingProblem& p, Solution fast, const SolveOptions& o);

}  // namespace

Result<Solution> solve_time_only(const ShardingProblem& p, const SolveOptions& o) {
  PLANNER_TRY_STATUS(check(p, o));
  bool exact = true;
  return pass(p, 0.0, false, o, exact);
}

Result<Solution> solve(const ShardingProblem& p, const SolveOptions& o) {
  PLANNER_TRY_STATUS(check(p, o));
  bool exact = true;
  PLANNER_TRY(auto fast, pass(p, 0.0, false, o, exact));
  return finish(p, std::move(fast), o);
}

Result<Solution> solve(const ShardingProblem& p, Solution fast, const SolveOptions& o) {
  PLANNER_TRY_STATUS(check(p, o));
  if (fast.choice.size() != p.nodes.size())
    return make_error("solve: the given first pass has {} choices for {} nodes", fast.choice.size(), p.nodes.size());
  fast.evaluation = evaluate(p, fast.choice);
  return finish(p, std::move(fast), o);
}

namespace {

Result<Solution> finish(const ShardingProblem& p, Solution fast, const SolveOptions& o) {
  bool exact = true;
  if (!p.memory_limit || fast.evaluation.feasible()) return fast;

  auto bounded = pass(p, 0.0, true, o, exact);
  if (exact) return bounded;  // the optimum, or certainly infeasible

  // Lagrangian relaxation on memory.
  std::optional<Solution> best;
  if (bounded.ok() && bounded->evaluation.feasible()) best = *bounded;
  auto consider = [&](Solution s) {
    if (s.evaluation.feasible() && (!best || s.evaluation.total < best->evaluation.total)) best = std::move(s);
  };
  const double scale = std::max(fast.evaluation.total.value, 1e-30) / std::max(fast.evaluation.memory.value, 1.0);
  double lo = 0.0, hi = scale;
  bool found = false;
  for (int i = 0; i < 60; ++i, hi *= 4) {
    PLANNER_TRY(auto s, pass(p, hi, false, o, exact));
    found = s.evaluation.feasible();
    consider(std::move(s));
    if (found) break;
    lo = hi;
  }
  for (int i = 0; i < 40 && found; ++i) {
    const double mid = 0.5 * (lo + hi);
    PLANNER_TRY(auto s, pass(p, mid, false, o, exact));
    (s.evaluation.feasible() ? hi : lo) = mid;
    consider(std::move(s));
  }
  if (!best)
    return make_error("no choice found within the memory limit {} (the leanest tried needs {})",
                      format_bytes(*p.memory_limit), format_bytes(fast.evaluation.memory));
  best->exact = false;
  return std::move(*best);
}

}  // namespace
}  // namespace planner::sharding
