#pragma once
// Private to src/search: the solver's working form of a ShardingProblem.
//
// Every node strategy and every edge entry holds a small Pareto LIST of
// options (cost, memory): one option without a memory limit, the
// non-dominated ones with it. Eliminations (eliminate.cpp) and the frontier
// DP (frontier_dp.cpp) combine lists by Minkowski sums and unions, so both
// stay exact under the memory constraint. Each option carries a provenance
// id: which strategies of eliminated nodes it assumed, read back at the end.

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "planner/sharding/op_sharding.hpp"

namespace planner::sharding::detail {

/// True when `mem` exceeds `limit` beyond rounding (the DP and evaluate()
/// must agree on what fits).
bool over_limit(double mem, double limit);

/// One option: its cost, memory and provenance (0 = assumes nothing).
struct Opt {
  double cost = 0.0;
  double mem = 0.0;
  std::uint32_t prov = 0;
};
/// Pareto list: memory ascending, cost strictly descending (one entry when
/// there is no memory limit).
using List = std::vector<Opt>;

/// A candidate before pruning: up to three sub-provenances, and optionally
/// "node := pick".
struct Cand {
  double cost = 0.0;
  double mem = 0.0;
  std::uint32_t p[3] = {0, 0, 0};
  std::uint32_t node = 0;
  std::uint32_t pick = 0;
  bool picks = false;
};

/// The working problem: lists per node strategy and per edge entry, the
/// provenance arena and the Pareto policy.
struct Factors {
  struct Mat {
    std::size_t a = 0, b = 0;  ///< rows: a's strategies, columns: b's
    std::vector<List> m;
    bool live = true;
  };
  struct Prov {
    std::uint32_t sub[3] = {0, 0, 0};
    std::uint32_t node = 0;
    std::uint32_t pick = 0;
    bool picks = false;
  };

  std::vector<std::size_t> size;
  std::vector<std::vector<List>> unary;
  std::vector<Mat> mats;
  std::vector<std::map<std::size_t, std::size_t>> nbr;  ///< node -> (neighbour -> mat)
  std::vector<bool> gone;
  std::vector<Prov> prov{Prov{}};
  bool limited = false;
  double limit = 0.0;
  std::size_t max_pareto = 32;
  /// False once a cap or a beam dropped an option.
  bool exact = true;

  /// From a validated problem; node costs are total + lambda * memory.
  Factors(const ShardingProblem& p, double lambda, const SolveOptions& o);

  /// Prunes `c` to its Pareto set (or its cheapest), caps it, and turns the
  /// survivors into options with provenance.
  List finish(std::vector<Cand>& c);
  /// Minkowski sum of two lists.
  List add(const List& x, const List& y);
  /// Entry (i of a, j of other) of mat `id`.
  const List& at(std::size_t id, std::size_t a, std::size_t i, std::size_t j) const;
  /// Adds `m` (rows a, columns b) to the a-b matrix, creating it if needed.
  void add_mat(std::size_t a, std::size_t b, std::vector<List> m);
  /// Assigns the picks recorded under provenance `p`.
  void replay(std::uint32_t p, Choice& c) const;
};

/// Eliminates leaves (degree 1) and chain nodes (degree 2) until every node
/// left has 0 or 3+ neighbours (eliminate.cpp).
void eliminate(Factors& f);

/// The frontier DP over the nodes left (frontier_dp.cpp): writes their
/// strategies and the eliminated ones' into `choice`. Errors when nothing
/// fits the memory limit.
Status frontier_dp(Factors& f, const SolveOptions& o, Choice& choice, Solution& stats);

}  // namespace planner::sharding::detail
