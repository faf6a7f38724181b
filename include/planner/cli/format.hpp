#pragma once
/// Human-readable numbers for terminal output.

#include <cstdint>
#include <string>

#include "planner/core/units.hpp"

namespace planner::cli {

/// 174.56 B, 6.7 M, 1,234 (counts).
std::string human_count(double n);
/// 1.50 GiB, 12.0 MiB.
std::string human_bytes(Bytes b);
/// 3.14 PFLOP, 12.0 GFLOP.
std::string human_flops(Flops f);

}  // namespace planner::cli
