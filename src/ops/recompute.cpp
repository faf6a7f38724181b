// Activation recomputation (include/planner/ops/recompute.hpp).

#include "planner/ops/recompute.hpp"

namespace planner::ops {

std::string_view recompute_name(RecomputePolicy r) {
  switch (r) {
    case RecomputePolicy::none: return "none";
    case RecomputePolicy::selective: return "selective";
    case RecomputePolicy::full: return "full";
  }
  return "none";
}

std::optional<RecomputePolicy> parse_recompute(std::string_view name) {
  for (auto r : {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full})
    if (name == recompute_name(r)) return r;
  return std::nullopt;
}

std::optional<int> recompute_group(const graph::Op& op, RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::none: return std::nullopt;
    case RecomputePolicy::full: return op.layer;
    // Korthikanti's core attention: the unfused ops, or the flash kernel's
    // forward (Megatron-Core checkpoints core attention under selective
    // recompute with Transformer Engine's flash attention too).
    case RecomputePolicy::selective: return op.fused_group;
  }
  return std::nullopt;
}

}  // namespace planner::ops
