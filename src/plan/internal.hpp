#pragma once
// Helpers shared by the plan reader, writer and validator (not public).

#include <array>
#include <string>
#include <string_view>

#include "planner/core/result.hpp"
#include "planner/plan/plan.hpp"

namespace planner::plan::detail {

// The enumerations validate() enforces (docs/plan-format.md lists the same).
inline constexpr std::array<std::string_view, 5> kPrecisions{"bf16", "fp16", "fp8", "tf32", "fp32"};
inline constexpr std::array<std::string_view, 3> kRecompute{"none", "selective", "full"};
/// training.recompute_modules items, in their canonical order (ops::RecomputeModules).
inline constexpr std::array<std::string_view, 3> kRecomputeModules{"core_attn", "layernorm", "moe_act"};
inline constexpr std::array<std::string_view, 2> kAttention{"flash", "unfused"};
inline constexpr std::array<std::string_view, 2> kMemoryFormat{"nchw", "nhwc"};
inline constexpr std::array<std::string_view, 3> kSchedules{"1f1b", "gpipe", "interleaved"};
inline constexpr std::array<std::string_view, 3> kOptimizers{"adam", "sgd_momentum", "sgd"};
inline constexpr std::array<std::string_view, 2> kStateDtypes{"fp32", "bf16"};
inline constexpr std::array<std::string_view, 3> kMasterWeights{"fp32", "remainder", "none"};
inline constexpr std::array<std::string_view, 6> kFrameworks{"megatron", "megatron-legacy", "deepspeed", "fsdp",
                                                             "ddp",      "executor"};
inline constexpr std::array<std::string_view, 2> kCommands{"search", "estimate"};
inline constexpr std::array<std::string_view, 4> kMeshAxes{"pp", "dp", "cp", "tp"};
inline constexpr std::array<std::string_view, 6> kCollectives{"all_reduce",  "all_gather", "reduce_scatter",
                                                              "all_to_all",  "send_recv",  "broadcast"};

inline constexpr std::array<std::string_view, 4> kStreams{"compute", "tp", "pp", "dp"};
inline constexpr std::array<std::string_view, 16> kSpanKinds{
    "forward",         "recompute",       "backward",      "optimizer",     "bubble",      "tp_forward",
    "tp_backward",     "grad_sync",       "send_activation", "recv_activation", "send_gradient", "recv_gradient",
    "zero_gather",     "zero_reduce_scatter", "dp_reduce",  "dp_gather"};

/// "F3@c1": kind, micro-batch, '@c', chunk.
std::string step_text(const ScheduleStep& s);

/// Parses step_text(); nullopt-like failure as an Error without a path (the
/// caller adds it).
Result<ScheduleStep> parse_step(std::string_view text);

/// Makes a message one line: control characters become \xNN.
std::string one_line(std::string_view s);

}  // namespace planner::plan::detail
