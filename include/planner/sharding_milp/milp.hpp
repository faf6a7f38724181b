#pragma once
/// The flat op-sharding problem (sharding/op_sharding.hpp) as a mixed-integer
/// linear program solved by COIN-OR CBC, as Alpa solves its intra-op ILP:
/// an exact cross-check of the fast solver sharding::solve() (--exact).
///
/// Design note (docs/sharding-milp.md has the details and sizes)
///   - Variables: x[n][s] binary, one per (node, strategy) left after the
///     presolve; y[e][a][b] in [0, 1] per entry of every coupled edge.
///   - Constraints: sum_s x[n][s] = 1 per node; marginals
///     sum_b y[e][a][b] = x[from][a] and sum_a y[e][a][b] = x[to][b] (the
///     local polytope: integral x forces integral y); the memory row
///     sum_n sum_s m[n][s] x[n][s] <= limit.
///   - Objective: sum of the chosen strategies' cost totals plus the chosen
///     edge entries, in microseconds (seconds x 1e6), plus a constant for
///     what the presolve folded away.
///   - Presolve: strategies that cannot fit the memory limit even with every
///     other node at its smallest are dropped; a node left with one strategy
///     is fixed and its edges fold into its neighbours' costs; parallel edges
///     merge; an edge whose matrix is constant becomes that constant; a
///     memory row that no choice can violate is left out.
///   - Afterwards the choice is polished: single-node moves that lower the
///     total, or keep it (within 1e-12 relative) at a lower strategy index,
///     are applied until none is left. This breaks ties toward the lowest
///     index and repairs CBC's tolerances; with one thread CBC is
///     deterministic, so the same problem gives the same choice.
///
/// Architecture invariant: only this module links CBC; the fast path (module
/// `search`) does not.

#include <cstddef>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/sharding/op_sharding.hpp"

namespace planner::sharding {

/// CBC's limits.
struct MilpOptions {
  /// CBC's time limit in seconds (wall clock).
  double time_limit_s = 60;
  /// CBC threads. 1 (the default) is deterministic; more threads run CBC's
  /// deterministic parallel mode (100 + n), repeatable but not necessarily
  /// the same choice as one thread when optima tie.
  int threads = 1;
  /// Relative gap at which CBC stops; 0 = prove optimality.
  double relative_gap = 0;
};

/// What the MILP found.
struct MilpResult {
  /// The choice and sharding::evaluate() of it (exact is the `optimal` flag).
  Solution solution;
  /// CBC proved the choice optimal. With relative_gap > 0, only when the
  /// gap closed completely (CBC stopping within the gap is not enough).
  bool optimal = false;
  /// CBC's best bound on the objective (seconds), constant included;
  /// <= solution.evaluation.total up to CBC's tolerances.
  Seconds lower_bound;
  /// The MILP objective of the returned choice, in seconds (recomputed from
  /// the model's coefficients): equals solution.evaluation.total to 1e-9
  /// relative.
  Seconds objective;
  /// Size of the model given to CBC (0 and 0 when the presolve fixed every
  /// node and CBC was not called).
  std::size_t variables = 0, constraints = 0;
  /// Wall time of the CBC call in seconds.
  double solve_seconds = 0;
};

/// Exact: min sum_n c_n[s] x_{n,s} + sum_e sum_{a,b} C_e[a][b] y_{e,a,b},
/// one-hot x per node, y_{e,a,b} linearising x_{from,a} x_{to,b} by the
/// marginal form, memory sum_n m_n[s] x_{n,s} <= limit.
/// CBC starts from a feasible choice (every node at its smallest memory,
/// polished), so a time limit returns at worst that choice, with optimal =
/// false and CBC's bound so far.
/// Errors (one line): validate() failures; a bad option; no choice within the
/// memory limit (the message gives the smallest memory any choice needs);
/// CBC giving up (numerical trouble).
/// Thread safety: calls are serialised by a lock (CBC's driver keeps global
/// state).
Result<MilpResult> solve_milp(const ShardingProblem& p, const MilpOptions& options = {});

}  // namespace planner::sharding
