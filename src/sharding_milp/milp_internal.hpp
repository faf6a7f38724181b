#pragma once
// Private to src/sharding_milp: the MILP as plain arrays (milp_model.cpp
// builds it from a ShardingProblem without CBC; milp.cpp hands it to CBC).

#include <cstddef>
#include <optional>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/sharding/op_sharding.hpp"

namespace planner::sharding::milp_detail {

/// Objective unit: seconds x 1e6 = microseconds.
inline constexpr double kTimeScale = 1e6;
/// Memory-row unit: bytes / 2^20 = MiB.
inline constexpr double kMemoryScale = 1.0 / (1024.0 * 1024.0);

/// The MILP: columns x (binary, one per live strategy of a free node) then
/// y (continuous in [0, 1], one per entry of a coupled pair), rows as
/// triplets with bounds.
struct Model {
  // Columns.
  std::vector<double> obj;  ///< scaled objective coefficients
  std::vector<bool> integer;
  // Rows: lower/upper bounds, entries (row, col, value).
  std::vector<double> row_lo, row_hi;
  struct Entry {
    int row = 0, col = 0;
    double value = 0;
  };
  std::vector<Entry> entries;
  /// Scaled objective constant (what the presolve folded away).
  double constant = 0;

  /// Per node: the strategy the presolve fixed, if any.
  std::vector<std::optional<std::size_t>> fixed;
  /// Per node: (strategy, column) of its x variables (empty when fixed).
  std::vector<std::vector<std::pair<std::size_t, int>>> xcols;
  /// A coupled pair of free nodes (parallel edges merged, u < v): y columns
  /// first_col + i * sv.size() + j for (su[i], sv[j]).
  struct Block {
    std::size_t u = 0, v = 0;
    std::vector<std::size_t> su, sv;
    int first_col = 0;
  };
  std::vector<Block> blocks;
  /// Index of the memory row, or -1 when the limit cannot bind.
  int memory_row = -1;

  /// Strategies the memory presolve dropped, edges folded, constant pairs.
  std::size_t dropped_strategies = 0, folded_edges = 0, constant_pairs = 0;

  std::size_t columns() const { return obj.size(); }
  std::size_t rows() const { return row_lo.size(); }
};

/// Builds the model of a validated problem. Errors: no choice fits the
/// memory limit (with the smallest memory any choice needs).
Result<Model> build_model(const ShardingProblem& p);

/// The model's objective of a choice in seconds (constant included); NaN
/// when the choice uses a strategy the model does not have.
double model_objective(const Model& m, const ShardingProblem& p, const Choice& c);

/// Column values of a choice (for checks and a MIP start).
std::vector<double> columns_of(const Model& m, const Choice& c);

/// A feasible choice to start CBC from: every free node at its smallest
/// memory (the lowest index on ties), fixed nodes as fixed, then polished.
Choice start_choice(const Model& m, const ShardingProblem& p);

/// Single-node moves until none helps: a move is taken when it lowers the
/// total by more than 1e-12 relative, or keeps it within 1e-12 relative of
/// the best total seen at a lower strategy index; memory must still fit.
/// Nodes the model fixed do not move. Requires: c is a feasible choice of p.
void polish(const Model& m, const ShardingProblem& p, Choice& c);

}  // namespace planner::sharding::milp_detail
