#pragma once
// Helpers shared by the cluster module's sources; not a public header.

#include <string>
#include <string_view>

namespace planner::cluster {

/// FNV-1a 64 of `bytes`, continued over `salt`, as 16 lowercase hex digits.
std::string hash_hex(std::string_view bytes, std::string_view salt);

}  // namespace planner::cluster
