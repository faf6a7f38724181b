#pragma once
/// Activation recomputation (Korthikanti et al. 2022): which ops run forward
/// again inside backward under a policy, and which of them run together.
///
/// Design note: the one derivation the cost model (cost::recomputed,
/// cost/activations.cpp) and the executor's real mode
/// (src/executor/real_recompute.cpp) share, so a policy prices and runs the
/// same ops:
///   full       every op of a layer (op.layer); one group per layer;
///   selective  the ops of the chosen modules (RecomputeModules): by default
///              every op of an attention pattern (op.fused_group), the
///              "core attention"; one group per pattern, norm or expert
///              activation.
/// (The replay's programs, src/executor/program.cpp, price recomputed
/// forward work per plan strategy instead; see docs/executor.md.)

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"

namespace planner::ops {

/// Activation recomputation policy.
enum class RecomputePolicy : std::uint8_t {
  none,       ///< keep every tensor a backward needs
  selective,  ///< recompute the chosen modules (default: the attention core)
  full,       ///< keep each layer's input only, recompute the whole layer
};

/// "none", "selective" or "full".
std::string_view recompute_name(RecomputePolicy r);
/// The policy named `name` ("none", "selective", "full"); nullopt for any other.
std::optional<RecomputePolicy> parse_recompute(std::string_view name);

/// What selective recompute recomputes: Megatron-Core's recompute_modules
/// (TransformerConfig; `--recompute-modules`), of which planner knows
///   core_attn  the attention pattern (op.fused_group): its s x s tensors
///              are dropped (unfused) and its forward runs again;
///   layernorm  each normalisation (op.norm_unit);
///   moe_act    each expert's activation (op.expert_act_unit).
/// layernorm and moe_act are Megatron's CheckpointWithoutOutput units: the
/// unit's output is freed once the next op has read it, and the unit runs
/// again (from its kept inputs) just before that op's backward, so neither
/// its own saved tensors nor its outputs stay from forward to backward.
struct RecomputeModules {
  static constexpr std::uint8_t kCoreAttn = 1, kLayernorm = 2, kMoeAct = 4;
  std::uint8_t bits = kCoreAttn;  ///< Megatron's default: ["core_attn"]

  bool has(std::uint8_t m) const { return (bits & m) != 0; }
  /// Anything beyond Megatron's default.
  bool is_default() const { return bits == kCoreAttn; }
  /// Canonical text: the names in the order core_attn, layernorm, moe_act,
  /// joined by ','; "" for none.
  std::string text() const;
  /// Parses a ','-separated list (spaces ignored; repeats allowed). Errors
  /// name the unknown module and the known ones; an empty list is an error.
  static Result<RecomputeModules> parse(std::string_view list);
  /// Megatron's modules for a model with experts, as NVIDIA's MoE recipes
  /// set them: layernorm and moe_act, with core_attn when `core_attn`.
  static RecomputeModules moe(bool core_attn) {
    return {static_cast<std::uint8_t>(kLayernorm | kMoeAct | (core_attn ? kCoreAttn : 0))};
  }
  friend bool operator==(const RecomputeModules&, const RecomputeModules&) = default;
  friend auto operator<=>(const RecomputeModules&, const RecomputeModules&) = default;
};

/// The group `op` is recomputed with under `policy`: its layer (full), or
/// under selective its attention pattern, norm or expert activation when
/// `modules` names that module; nullopt when the op is not recomputed. Ids
/// of different modules never collide.
std::optional<int> recompute_group(const graph::Op& op, RecomputePolicy policy, RecomputeModules modules = {});

/// True when the op's forward is executed again in backward under `policy`.
inline bool recomputed(const graph::Op& op, RecomputePolicy policy, RecomputeModules modules = {}) {
  return recompute_group(op, policy, modules).has_value();
}

/// The group of `op` when it is in a layernorm or moe_act unit that
/// `modules` names under selective recompute (the units whose outputs are
/// dropped too); nullopt otherwise.
std::optional<int> output_dropping_group(const graph::Op& op, RecomputePolicy policy, RecomputeModules modules);

}  // namespace planner::ops
