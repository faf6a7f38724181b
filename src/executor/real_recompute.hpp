#pragma once
// Recomputation in the real mode (real.cpp; docs/executor.md "Recomputation"):
// which ops a micro-batch runs forward again inside its backward, and which
// of their outputs it drops after the forward. Private to the executor module.
//
// The ops and their groups are ops::recompute_group's, the derivation the
// cost model prices with (cost::recomputed; what they keep:
// src/cost/activations.cpp):
//   full       every op of a layer (op.layer): a layer keeps only what enters
//              it from outside (its input), Megatron's full recompute per layer;
//   selective  every op of an attention pattern (op.fused_group): the scores,
//              their scaling and mask, softmax probabilities, Megatron's
//              selective recompute of the "core attention". The CPU runs
//              attention unfused; under plan attention "flash" the cost model
//              prices the same work inside the flash backward (2.5x forward).
// One group = the recomputed ops of one layer (or pattern) in one chunk. A
// tensor a group makes is dropped after its last op in forward when every
// reader is in the group and it is no graph output; the first backward op of
// the group runs the group's ops forward again (their tp collectives
// included), the group's dropped tensors are freed when backward leaves it.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"

namespace planner::executor::real_detail {

struct RecomputeGroup {
  int chunk = 0;
  std::vector<graph::OpId> ops;          ///< in the chunk's (forward) order
  std::vector<graph::TensorId> dropped;  ///< made and read inside the group only
};

struct RecomputePlan {
  std::vector<RecomputeGroup> groups;
  std::vector<int> group_of;  ///< per op: index into groups, -1 when not recomputed
  bool any() const { return !groups.empty(); }
};

/// The groups for `policy` ("none", "selective", "full"); chunk_ops: each
/// chunk's ops in order. Error: an unknown policy.
Result<RecomputePlan> plan_recompute(const graph::OpGraph& g, const std::string& policy,
                                     const std::vector<std::vector<graph::OpId>>& chunk_ops);

}  // namespace planner::executor::real_detail
