// Activation recomputation (include/planner/ops/recompute.hpp).

#include "planner/ops/recompute.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace planner::ops {
namespace {

struct ModuleName {
  std::uint8_t bit;
  std::string_view name;
};
constexpr std::array<ModuleName, 3> kModules{{{RecomputeModules::kCoreAttn, "core_attn"},
                                              {RecomputeModules::kLayernorm, "layernorm"},
                                              {RecomputeModules::kMoeAct, "moe_act"}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

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

std::string RecomputeModules::text() const {
  std::string out;
  for (const auto& m : kModules)
    if (has(m.bit)) out += (out.empty() ? "" : ",") + std::string(m.name);
  return out;
}

Result<RecomputeModules> RecomputeModules::parse(std::string_view list) {
  RecomputeModules out{0};
  while (true) {
    const auto comma = list.find(',');
    const std::string_view item = trim(list.substr(0, comma));
    const auto* m = std::find_if(kModules.begin(), kModules.end(), [&](const ModuleName& k) { return k.name == item; });
    if (m == kModules.end())
      return make_error("recompute module '{}' is not one of core_attn, layernorm, moe_act", item);
    out.bits = static_cast<std::uint8_t>(out.bits | m->bit);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<int> output_dropping_group(const graph::Op& op, RecomputePolicy policy, RecomputeModules modules) {
  if (policy != RecomputePolicy::selective) return std::nullopt;
  if (op.norm_unit && modules.has(RecomputeModules::kLayernorm)) return 3 * *op.norm_unit + 1;
  if (op.expert_act_unit && modules.has(RecomputeModules::kMoeAct)) return 3 * *op.expert_act_unit + 2;
  return std::nullopt;
}

std::optional<int> recompute_group(const graph::Op& op, RecomputePolicy policy, RecomputeModules modules) {
  switch (policy) {
    case RecomputePolicy::none: return std::nullopt;
    case RecomputePolicy::full: return op.layer;
    // Korthikanti's core attention: the unfused ops, or the flash kernel's
    // forward (Megatron-Core checkpoints core attention under selective
    // recompute with Transformer Engine's flash attention too).
    case RecomputePolicy::selective:
      if (op.fused_group && modules.has(RecomputeModules::kCoreAttn)) return 3 * *op.fused_group;
      return output_dropping_group(op, policy, modules);
  }
  return std::nullopt;
}

}  // namespace planner::ops
