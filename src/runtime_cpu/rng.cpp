#include "planner/runtime_cpu/rng.hpp"

#include <cassert>
#include <cmath>
#include <numbers>

namespace planner::runtime_cpu {

namespace {
constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ull;
}

std::uint64_t splitmix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::uint64_t stream_key(std::uint64_t seed, std::string_view name) { return splitmix64(seed ^ fnv1a64(name)); }

std::uint64_t random_bits(std::uint64_t key, std::uint64_t i) { return splitmix64(key + (i + 1) * kGamma); }

double uniform01(std::uint64_t key, std::uint64_t i) {
  return (static_cast<double>(random_bits(key, i) >> 11) + 0.5) * 0x1.0p-53;
}

double standard_normal(std::uint64_t key, std::uint64_t i) {
  const double u1 = uniform01(key, 2 * i), u2 = uniform01(key, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

Tensor normal_slice(std::uint64_t seed, std::string_view name, const Shape& full, const Shape& begin,
                    const Shape& extent, float mean, float stddev) {
  assert(full.size() == begin.size() && full.size() == extent.size());
  const std::uint64_t key = stream_key(seed, name);
  Tensor out(extent);
  const Shape fs = strides_of(full);
  const std::size_t r = full.size();
  Shape idx(r, 0);  // position inside the block
  for (std::int64_t k = 0; k < out.size(); ++k) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < r; ++d) flat += (begin[d] + idx[d]) * fs[d];
    out[k] = mean + stddev * static_cast<float>(standard_normal(key, static_cast<std::uint64_t>(flat)));
    for (std::size_t d = r; d-- > 0;) {  // odometer, last axis fastest
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor normal_tensor(std::uint64_t seed, std::string_view name, const Shape& shape, float mean, float stddev) {
  return normal_slice(seed, name, shape, Shape(shape.size(), 0), shape, mean, stddev);
}

IndexTensor uniform_indices(std::uint64_t seed, std::string_view name, const Shape& shape, std::int64_t bound) {
  assert(bound >= 1);
  const std::uint64_t key = stream_key(seed, name);
  IndexTensor out{shape, std::vector<std::int64_t>(static_cast<std::size_t>(numel(shape)))};
  for (std::size_t k = 0; k < out.data.size(); ++k) {
    const unsigned __int128 p = static_cast<unsigned __int128>(random_bits(key, k)) * static_cast<std::uint64_t>(bound);
    out.data[k] = static_cast<std::int64_t>(p >> 64);
  }
  return out;
}

}  // namespace planner::runtime_cpu
