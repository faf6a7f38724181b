#pragma once
/// Counter-based random numbers: the value of element `i` of the tensor
/// named `name` under `seed` is a pure function of (seed, name, i). Any shard
/// of a tensor is therefore generated on its own and equals the matching
/// slice of the full tensor: each rank of a sharded run derives its shard of
/// every weight from the plan's seed without generating the rest.
///
///   key(seed, name) = splitmix64(seed XOR fnv1a64(name))
///   bits(key, i)    = splitmix64(key + (i + 1) * 0x9e3779b97f4a7c15)
///   uniform(key, i) = ((bits(key, i) >> 11) + 0.5) * 2^-53        in (0, 1)
///   normal(key, i)  = sqrt(-2 ln u1) * cos(2 pi u2),
///                     u1 = uniform(key, 2i), u2 = uniform(key, 2i + 1)
/// where splitmix64 is the finalizer of Steele, Lea and Flood's SplitMix64.

#include <cstdint>
#include <string_view>

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu {

/// SplitMix64's output function (a bijection on 64-bit words).
std::uint64_t splitmix64(std::uint64_t z);
/// FNV-1a 64-bit hash of a name.
std::uint64_t fnv1a64(std::string_view s);
/// The stream of one tensor under one seed.
std::uint64_t stream_key(std::uint64_t seed, std::string_view name);
/// Counter `i` of a stream: 64 random bits.
std::uint64_t random_bits(std::uint64_t key, std::uint64_t i);
/// Uniform in the open interval (0, 1).
double uniform01(std::uint64_t key, std::uint64_t i);
/// Standard normal (Box-Muller on counters 2i and 2i+1).
double standard_normal(std::uint64_t key, std::uint64_t i);

/// The block [begin, begin + extent) of the tensor `name` of shape `full`
/// whose elements are mean + stddev * normal(key, flat index in `full`).
/// Requires: begin[d] + extent[d] <= full[d] for every d.
Tensor normal_slice(std::uint64_t seed, std::string_view name, const Shape& full, const Shape& begin,
                    const Shape& extent, float mean, float stddev);
/// The whole tensor: normal_slice over all of `shape`.
Tensor normal_tensor(std::uint64_t seed, std::string_view name, const Shape& shape, float mean, float stddev);
/// Integers uniform in [0, bound): floor(bits * bound / 2^64) per element.
/// Requires: bound >= 1.
IndexTensor uniform_indices(std::uint64_t seed, std::string_view name, const Shape& shape, std::int64_t bound);

}  // namespace planner::runtime_cpu
