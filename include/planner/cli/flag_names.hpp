#pragma once
/// Library messages name config fields in backticks ("`tp` 5", "`global_batch`
/// 10 is not divisible by ..."); only the CLI knows its flags. with_flags()
/// writes each known field as the flag that sets it ("--tp 5").

#include <string>
#include <string_view>

namespace planner::cli {

/// `message` with every backticked config field that has a flag replaced by
/// that flag (`micro_batch` -> --micro-batch, `devices_per_node` ->
/// --gpus-per-node); other backticked text is left as it is.
std::string with_flags(std::string_view message);

}  // namespace planner::cli
