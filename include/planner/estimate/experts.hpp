#pragma once
/// The experts of mixture-of-experts layers, as estimate() prices expert
/// parallelism (`--ep E`).
///
/// An op belongs to expert n when its name has the path segment
/// `experts.<n>` (or `experts/<n>`, `experts_<n>`): the naming of `planner
/// model moe` (`layers.3/moe/experts.5/fc1/MatMul`) and of the PyTorch
/// exporters of Switch, Mixtral and DeepSeek-MoE (`...experts.5.w1...`).
/// A parameter is an expert's when its first reader past Cast, Identity and
/// Transpose is.
///
/// Under expert parallelism the E experts of a layer are split over E/ep
/// groups of ep data/context-parallel ranks (Megatron-Core's expert model
/// parallel group; DeepSpeed-MoE's ep_size): each rank keeps E/ep experts'
/// weights and runs them on the routed tokens of all ep ranks (the same
/// work as all E experts on its own tokens), tokens travel by all-to-all
/// (dispatch before the experts, combine after, again in the backward), and
/// the experts' gradients are reduced over the dp*cp/ep ranks holding the
/// same experts.

#include <optional>
#include <string_view>

#include "planner/graph/analysis.hpp"
#include "planner/graph/graph.hpp"

namespace planner::estimate {

/// The expert index in an op name (`experts.<n>` segment), or nullopt.
using graph::expert_index;

struct ExpertCount {
  /// Experts per MoE layer: the largest expert index + 1 (0: no experts).
  int experts = 0;
  /// Floating parameter elements whose first reader (past pass-through ops) is an expert op.
  double parameters = 0;
};

/// The experts of `g` and their parameters.
ExpertCount count_experts(const graph::OpGraph& g);

}  // namespace planner::estimate
