#include <catch2/catch.hpp>

#include <cmath>

#include "planner/runtime_cpu/rng.hpp"

using namespace planner::runtime_cpu;

TEST_CASE("splitmix64 counter 0 of key 0 is SplitMix64's first output for seed 0", "[runtime_cpu][rng]") {
  // Reference SplitMix64 seeded with 0: state += 0x9e3779b97f4a7c15, then the
  // finalizer; its first output is 0xe220a8397b1dcdaf (Vigna's splitmix64.c).
  CHECK(random_bits(0, 0) == 0xe220a8397b1dcdafull);
  // Its second output (state 2 * gamma) is 0x6e789e6aa1b965f4.
  CHECK(random_bits(0, 1) == 0x6e789e6aa1b965f4ull);
}

TEST_CASE("fnv1a64 matches the published test vectors", "[runtime_cpu][rng]") {
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
}

TEST_CASE("any shard of a tensor equals the slice of the full tensor", "[runtime_cpu][rng]") {
  const Shape full{6, 4, 10};
  const Tensor all = normal_tensor(42, "layers.0.attn.qkv.weight", full, 0.0f, 0.02f);
  // Every block on a grid of begins and extents (column shards, row shards, both).
  for (std::int64_t b0 : {0, 2, 3})
    for (std::int64_t e0 : {1, 3})
      for (std::int64_t b2 : {0, 5})
        for (std::int64_t e2 : {2, 5}) {
          const Shape begin{b0, 1, b2}, extent{e0, 3, e2};
          const Tensor part = normal_slice(42, "layers.0.attn.qkv.weight", full, begin, extent, 0.0f, 0.02f);
          REQUIRE(part.shape == extent);
          for (std::int64_t i = 0; i < e0; ++i)
            for (std::int64_t j = 0; j < 3; ++j)
              for (std::int64_t k = 0; k < e2; ++k)
                REQUIRE(part[(i * 3 + j) * e2 + k] == all[((b0 + i) * 4 + (1 + j)) * 10 + (b2 + k)]);
        }
}

TEST_CASE("streams differ by seed and by name, and repeat exactly", "[runtime_cpu][rng]") {
  const Tensor a = normal_tensor(1, "w", {64}, 0.0f, 1.0f);
  CHECK(a.data == normal_tensor(1, "w", {64}, 0.0f, 1.0f).data);
  CHECK(a.data != normal_tensor(2, "w", {64}, 0.0f, 1.0f).data);
  CHECK(a.data != normal_tensor(1, "v", {64}, 0.0f, 1.0f).data);
}

TEST_CASE("normal values have mean 0 and variance 1, indices stay in range", "[runtime_cpu][rng]") {
  const Tensor x = normal_tensor(5, "stats", {20000}, 0.0f, 1.0f);
  double s = 0.0, s2 = 0.0;
  for (float v : x.data) {
    s += v;
    s2 += static_cast<double>(v) * v;
  }
  const double mean = s / 20000.0, var = s2 / 20000.0 - mean * mean;
  // Standard error of the mean: 1/sqrt(20000) = 0.0071; of the variance: sqrt(2/20000) = 0.01.
  CHECK(std::abs(mean) < 0.03);
  CHECK(std::abs(var - 1.0) < 0.04);
  const IndexTensor ids = uniform_indices(5, "ids", {1000}, 7);
  std::vector<int> count(7, 0);
  for (auto v : ids.data) {
    REQUIRE(v >= 0);
    REQUIRE(v < 7);
    ++count[static_cast<std::size_t>(v)];
  }
  for (int c : count) CHECK(c > 100);  // 1000/7 = 143 expected per value
}
