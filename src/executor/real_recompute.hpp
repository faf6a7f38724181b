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
//   modules    with training.recompute_modules (selective), also each norm
//              and each expert's activation (op.norm_unit,
//              op.expert_act_unit): Megatron's CheckpointWithoutOutput units,
//              whose outputs are dropped too once their last reader has run.
// One group = the recomputed ops of one layer (or pattern, norm, expert
// activation) in one chunk. A tensor a group makes is dropped when every
// reader is in the group and it is no graph output, or, for a norm or expert
// activation, when every reader is in the group's chunk; the dropped tensors
// go in forward after the group's last op (or the last reader of one of
// them), the group's ops run forward again (their tp collectives included)
// before the first backward op that is the group's or reads what it dropped,
// and the group's dropped tensors are freed once backward has passed its
// first op.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"

namespace planner::executor::real_detail {

struct RecomputeGroup {
  int chunk = 0;
  std::vector<graph::OpId> ops;          ///< in the chunk's (forward) order
  std::vector<graph::TensorId> dropped;  ///< made by the group, dropped after forward
  /// The chunk op after whose forward the dropped tensors go: the group's
  /// last op, or the last reader of a dropped output.
  graph::OpId drop_after;
};

struct RecomputePlan {
  std::vector<RecomputeGroup> groups;
  std::vector<int> group_of;  ///< per op: index into groups, -1 when not recomputed
  /// Per op: the groups (other than its own) whose dropped tensors it reads.
  std::vector<std::vector<int>> reads_dropped;
  /// Per op: the groups whose dropped tensors go after its forward.
  std::vector<std::vector<int>> drops_after;
  bool any() const { return !groups.empty(); }
};

/// The groups for `policy` ("none", "selective", "full") and, under
/// selective, `modules` (training.recompute_modules; "" = core_attn);
/// chunk_ops: each chunk's ops in order. Error: an unknown policy or module.
Result<RecomputePlan> plan_recompute(const graph::OpGraph& g, const std::string& policy, const std::string& modules,
                                     const std::vector<std::vector<graph::OpId>>& chunk_ops);

}  // namespace planner::executor::real_detail
