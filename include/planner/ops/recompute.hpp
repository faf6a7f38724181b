#pragma once
/// Activation recomputation (Korthikanti et al. 2022): which ops run forward
/// again inside backward under a policy, and which of them run together.
///
/// Design note: the one derivation the cost model (cost::recomputed,
/// cost/activations.cpp) and the executor's real mode
/// (src/executor/real_recompute.cpp) share, so a policy prices and runs the
/// same ops:
///   full       every op of a layer (op.layer); one group per layer;
///   selective  every op of an attention pattern (op.fused_group), the
///              "core attention"; one group per pattern.
/// (The replay's programs, src/executor/program.cpp, price recomputed
/// forward work per plan strategy instead; see docs/executor.md.)

#include <cstdint>
#include <optional>
#include <string_view>

#include "planner/graph/graph.hpp"

namespace planner::ops {

/// Activation recomputation policy.
enum class RecomputePolicy : std::uint8_t {
  none,       ///< keep every tensor a backward needs
  selective,  ///< drop the s x s attention tensors, recompute the attention core
  full,       ///< keep each layer's input only, recompute the whole layer
};

/// "none", "selective" or "full".
std::string_view recompute_name(RecomputePolicy r);
/// The policy named `name` ("none", "selective", "full"); nullopt for any other.
std::optional<RecomputePolicy> parse_recompute(std::string_view name);

/// The group `op` is recomputed with under `policy`: its layer (full) or its
/// attention pattern (selective); nullopt when the op is not recomputed.
std::optional<int> recompute_group(const graph::Op& op, RecomputePolicy policy);

/// True when the op's forward is executed again in backward under `policy`.
inline bool recomputed(const graph::Op& op, RecomputePolicy policy) {
  return recompute_group(op, policy).has_value();
}

}  // namespace planner::ops
