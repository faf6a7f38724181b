#pragma once
// Private to runtime_cpu: index helpers shared by the kernels.

#include <cstdint>
#include <vector>

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu::detail {

/// For each flat index of `out`, the flat index of `in` that numpy
/// broadcasting reads (shapes aligned on the right, dims of 1 repeated).
/// Requires: `in` broadcasts to `out`.
std::vector<std::int64_t> broadcast_map(const Shape& in, const Shape& out);

/// Splits `shape` at `axis` into outer (product before), n (shape[axis]) and
/// inner (product after).
struct AxisSplit {
  std::int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at(const Shape& shape, std::size_t axis);

inline std::size_t uz(std::int64_t v) { return static_cast<std::size_t>(v); }

}  // namespace planner::runtime_cpu::detail
