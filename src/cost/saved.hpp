#pragma once
// Saved-for-backward rules per op (src/cost/saved.cpp). Internal.

#include <optional>
#include <vector>

#include "planner/cost/activations.hpp"
#include "planner/ops/semantics.hpp"

namespace planner::cost::detail {

/// One item an op's backward reads: a graph tensor (bytes decided later, at
/// its producer's precision), or a synthetic one with its bytes.
struct RawSaved {
  SavedKind kind = SavedKind::tensor;
  std::optional<graph::TensorId> tensor;
  Bytes bytes;
};

/// What `op` keeps for its backward when run on its own. Nothing when no
/// input needs a gradient. Cross-entropy log-probs are not listed (they are
/// the loss buffer, see loss_buffer_bytes). Attention-class ops follow `mode`.
std::vector<RawSaved> saved_by(const graph::Op& op, const graph::OpGraph& g, const ops::GradMask& grad,
                               const PrecisionPolicy& policy, AttentionMode mode);

/// Loss buffer of a cross-entropy op: numel(scores) at the loss precision;
/// 0 for other ops.
Bytes loss_buffer_bytes(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy);

/// True for ops whose output is a view (no copy) of input 0 in PyTorch:
/// Reshape, Squeeze, Unsqueeze, Flatten, Identity, Transpose, Split.
bool is_alias_op(const graph::Op& op);

}  // namespace planner::cost::detail
