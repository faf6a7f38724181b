#pragma once
// Builders of flat op-sharding problems for solver tests.

#include <string>
#include <utility>
#include <vector>

#include "planner/sharding/op_sharding.hpp"

namespace planner::sharding::testing {

/// A strategy with the given compute, memory and (optional) sync and op-comm times.
inline NodeStrategy strat(std::string name, double compute, double mem, double grad_sync = 0, double op_comm = 0) {
  NodeStrategy s;
  s.name = std::move(name);
  s.cost[CostTerm::compute] = Seconds(compute);
  s.cost[CostTerm::grad_sync] = Seconds(grad_sync);
  s.cost[CostTerm::op_comm] = Seconds(op_comm);
  s.memory = Bytes(mem);
  return s;
}

/// An edge from -> to with its cost matrix (row = from's strategy).
inline ProblemEdge edge(std::size_t from, std::size_t to, std::vector<double> m, std::string name = "t") {
  ProblemEdge e;
  e.from = from;
  e.to = to;
  e.name = std::move(name);
  for (double v : m) e.cost.emplace_back(v);
  return e;
}

}  // namespace planner::sharding::testing
