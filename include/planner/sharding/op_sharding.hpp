#pragma once
/// Op-level sharding as FLAT data (XLA's AutoShardingSolverRequest idea): the
/// solver sees plain vectors of strategies and cost matrices, never the
/// graph. sharding/lower_sharding.hpp builds such a problem from an OpGraph,
/// a mesh and a cost oracle; tests build tiny ones by hand.
///
/// Design note
///   - A node is one unit that picks one strategy: an op, a fused attention
///     pattern, or one op of a repeated layer standing for all its copies
///     (its numbers are then already multiplied by the copy count).
///   - Each strategy has a cost split into terms (compute, the op's own
///     collectives, the data-parallel gradient sync) and a memory figure.
///   - An edge couples two nodes with a matrix: the resharding time when the
///     first picks i and the second j. Edges are undirected factors to the
///     solver; `from`/`to` only orient the matrix.
///   - The objective is the sum of the chosen strategies' costs and of the
///     edges' entries; the constraint is the sum of chosen memory <= limit.
///
/// Solver (solve()), exact in three stages:
///   1. Elimination (MindSpore's cost-graph eliminations in min-plus
///      algebra): a leaf folds into its neighbour's strategy costs, a chain
///      node between a and b becomes an a-b matrix (the best strategy of the
///      removed node for every pair is remembered), parallel edges add up.
///      A transformer block is series-parallel, so this usually removes
///      every node.
///   2. Frontier DP over the nodes left, in their stored order: variable
///      elimination along a path decomposition. A node is live from when it
///      is processed until its last neighbour is; the state is the
///      strategies of the live nodes, and each state keeps its best cost.
///   3. Under a memory limit both stages carry Pareto lists of (cost, memory)
///      instead of single costs (every node strategy, edge entry and DP
///      state), so the constraint stays exact; the lists are pruned by a
///      lower bound on the memory still to come.
///
///   order:  emb  ln1  qkv  attn  proj  add1  ln2  fc1  gelu  fc2  add2   (one layer)
///   edges:  emb-ln1 emb-add1 ln1-qkv qkv-attn attn-proj proj-add1 add1-ln2
///           add1-add2 ln2-fc1 fc1-gelu gelu-fc2 fc2-add2
///
///   elimination:  qkv, attn, proj (chains)  => ln1 ═══ add1
///                 gelu, fc1, fc2 (chains)   => ln2 ═══ add2
///                 ln2 (chain add1-add2)     => add1 ═══ add2 (added to the residual edge)
///                 ln1 (chain emb-add1), then add1, emb, add2 ... until nothing is left
///
///   frontier DP on a graph elimination cannot reduce (K5, say):
///   step  process  live frontier after the step (the state)
///    1    k0       {k0}
///    2    k1       {k0, k1}
///    3    k2       {k0, k1, k2}
///    4    k3       {k0, k1, k2, k3}     states <= product of the live nodes'
///    5    k4       {}                   strategy counts: the optimum
///
///   order: graph order, unless it leaves more than 16 nodes live; then a
///   greedy order (the node that grows the live set least, ties by graph
///   order). An MoE layer is the case: its expert branches each neighbour
///   the tokens, the routing and one Concat, so in graph order all of them
///   stay live until the Concat (a frontier of E + 2, past the beam); the
///   greedy order takes the Concat once two branches wait on it, and each
///   later branch leaves as it ends (frontier <= 4, exact). The factors are
///   undirected, so the optimum does not depend on the order.
///
/// Cost: elimination O(sum over removed nodes of s_a s_b s_x) (x Pareto
/// sizes); DP O(sum over steps of states x strategies x live neighbours).
/// Guards: when a step would hold more than SolveOptions::max_states entries
/// the cheapest are kept (a beam), and a Pareto list longer than max_pareto
/// loses its least useful options; either marks the result exact = false,
/// and under a memory limit a Lagrangian search (cost + lambda * memory,
/// bisected lambda) then looks for a cheaper feasible choice.
///
/// Architecture invariant: this header depends on core only: no graph, no
/// layouts, no costs beyond the numbers it is given.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

namespace planner::sharding {

/// The parts a cost is made of.
enum class CostTerm : std::uint8_t {
  compute,    ///< the op's kernels on one device (forward + backward)
  op_comm,    ///< collectives the op issues itself (norm statistics, CP all-gathers)
  grad_sync,  ///< data-parallel gradient synchronisation of its weights
  reshard,    ///< redistribution on edges (forward and backward)
};
inline constexpr std::size_t kCostTerms = 4;
/// "compute", "op_comm", "grad_sync", "reshard".
std::string_view cost_term_name(CostTerm t);

/// A time split into CostTerms.
struct CostBreakdown {
  std::array<Seconds, kCostTerms> terms{};

  Seconds& operator[](CostTerm t) { return terms[static_cast<std::size_t>(t)]; }
  Seconds operator[](CostTerm t) const { return terms[static_cast<std::size_t>(t)]; }
  /// Sum of the terms.
  Seconds total() const;
  CostBreakdown& operator+=(const CostBreakdown& o);
};

/// One strategy of a node.
struct NodeStrategy {
  std::string name;
  CostBreakdown cost;
  Bytes memory;
};

/// One unit that picks a strategy. Requires: at least one strategy.
struct ProblemNode {
  std::string name;
  std::vector<NodeStrategy> strategies;
};

/// Resharding between two nodes: cost[i * nodes[to].strategies.size() + j]
/// when `from` picks i and `to` picks j. Requires: from != to.
struct ProblemEdge {
  std::size_t from = 0;
  std::size_t to = 0;
  std::vector<Seconds> cost;
  /// What flows on it (tensor names), for explanations.
  std::string name;
};

/// The flat problem.
struct ShardingProblem {
  std::vector<ProblemNode> nodes;
  std::vector<ProblemEdge> edges;
  /// Per-device memory bound on the sum of the chosen strategies' memory.
  std::optional<Bytes> memory_limit;

  /// Errors (one line, naming the node or edge): a node without strategies,
  /// an edge with a bad endpoint, from == to, or a matrix of the wrong size;
  /// a negative or non-finite cost or memory.
  Status validate() const;
};

/// One strategy index per node.
using Choice = std::vector<std::size_t>;

/// What a choice costs.
struct Evaluation {
  CostBreakdown cost;
  Seconds total;
  Bytes memory;
  /// Empty when the choice is well-formed and fits the memory limit; else
  /// one line per problem (wrong size, index out of range, over the limit).
  std::vector<std::string> violations;
  bool feasible() const { return violations.empty(); }
};

/// Sums the choice's node costs, edge entries and memory; checks it.
Evaluation evaluate(const ShardingProblem& p, const Choice& c);

/// Why `a` costs less than `b` (or not): a first line with both totals and
/// memories, then the differing contributions -- per node and cost term, per
/// edge -- largest first, at most `max_lines` of them, each as
/// `node fc1: column -> row: compute +1.50 ms` (positive = b pays more).
std::string explain(const ShardingProblem& p, const Choice& a, const Choice& b, std::size_t max_lines = 8);

/// Limits of the DP.
struct SolveOptions {
  /// Most (state, Pareto entry) pairs one step may hold before the beam cut.
  std::size_t max_states = 100000;
  /// Most (cost, memory) options per list under a memory limit.
  std::size_t max_pareto = 128;
};

/// A solution.
struct Solution {
  Choice choice;
  Evaluation evaluation;
  /// False when the beam or the Pareto cap dropped candidates.
  bool exact = true;
  /// Largest number of entries one step held.
  std::size_t peak_states = 0;
  /// Largest number of live nodes.
  std::size_t max_frontier = 0;
};

/// The exact solver (eliminations, frontier DP, Pareto lists under a memory
/// limit). Errors: validate() failures; no choice within the memory limit
/// (the message gives the smallest memory any choice needs).
Result<Solution> solve(const ShardingProblem& p, const SolveOptions& options = {});

/// solve()'s first pass alone: the fastest choice with memory ignored
/// (exact unless the beam cut). It reads the time costs only, so problems
/// with the same nodes, strategies, edges and time costs share it whatever
/// their memory and memory_limit.
Result<Solution> solve_time_only(const ShardingProblem& p, const SolveOptions& options = {});

/// solve(p, options) with its first pass given: `fast` is solve_time_only of
/// a problem with p's nodes, edges and time costs (its evaluation is taken
/// again against p). The same result as solve(p, options).
Result<Solution> solve(const ShardingProblem& p, Solution fast, const SolveOptions& options = {});

/// Enumerates every choice: for tests on tiny problems. Errors as solve(),
/// and when the number of choices exceeds `max_choices`.
Result<Solution> solve_brute_force(const ShardingProblem& p, std::size_t max_choices = 2'000'000);

/// Short text of a time for explanations: `1.50 ms`, `30.0 us`, `2.00 s`.
std::string format_seconds(Seconds s);
/// Short text of a size: `1.50 MiB`.
std::string format_bytes(Bytes b);

}  // namespace planner::sharding
