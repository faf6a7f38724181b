// Pipeline cuts: explicit layers per chunk, and the balanced cut (dynamic
// programming over layer cuts) for models whose head outweighs a layer.

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <random>

#include "estimate/estimate_fixtures.hpp"
#include "../../src/estimate/internal.hpp"

using namespace planner;
using namespace estimate_test;

TEST_CASE("explicit layers per chunk are honoured and checked", "[estimate][stages]") {
  const auto g = small_gpt(4);
  FakeCostModel model;
  auto c = config_for(1, 1, 2, 4);
  c.layers_per_chunk = {1, 3};
  const auto e = run(g, model, c);
  REQUIRE(e.chunks.size() == 2);
  CHECK(e.chunks[0].first_layer == 0);
  CHECK(e.chunks[0].last_layer == 0);
  CHECK(e.chunks[1].first_layer == 1);
  CHECK(e.chunks[1].last_layer == 3);
  c.layers_per_chunk = {2, 3};
  auto bad = estimate::estimate(g, model, c);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "2 pipeline chunks with 5 layers in all given; the layout has 2 chunks and the model 4 layers");
  c.layers_per_chunk = {0, 4};
  CHECK_FALSE(estimate::estimate(g, model, c).ok());
}

TEST_CASE("embedding and loss counted as layers (Megatron-Core account_for_*_in_pipeline_split)", "[estimate][stages]") {
  // 6 layers + 2 = 8 slots over 4 chunks: 2 per chunk, the first (embedding)
  // and the last (loss) one layer fewer: 1 + 2 + 2 + 1 = 6.
  auto sizes = estimate::detail::embedding_loss_chunk_sizes(6, 4);
  REQUIRE(sizes.ok());
  CHECK(*sizes == std::vector<int>{1, 2, 2, 1});
  // Llama 3.1 405B on pp 8 x vp 8: 126 + 2 = 128 slots, 2 per chunk.
  auto big = estimate::detail::embedding_loss_chunk_sizes(126, 64);
  REQUIRE(big.ok());
  REQUIRE(big->size() == 64);
  CHECK(big->front() == 1);
  CHECK(big->back() == 1);
  CHECK(std::count(big->begin(), big->end(), 2) == 62);
  // 5 + 2 = 7 slots do not divide over 4 chunks; 2 + 2 = 4 slots leave the
  // first and last chunks empty.
  auto odd = estimate::detail::embedding_loss_chunk_sizes(5, 4);
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.error().message ==
        "embedding and loss counted as layers: 5 layers + 2 = 7 are not divisible by pp*vp = 4");
  CHECK_FALSE(estimate::detail::embedding_loss_chunk_sizes(2, 4).ok());

  // In an estimate: 6 layers on pp 2 x vp 2 are refused by the even
  // interleaved split (6 % 4 != 0) and cut 1 + 2 + 2 + 1 with the flag.
  const auto g = small_gpt(6);
  FakeCostModel model;
  auto c = config_for(1, 1, 2, 4);
  c.vp = 2;
  c.schedule = sim::Schedule::interleaved;
  auto even = estimate::estimate(g, model, c);
  REQUIRE_FALSE(even.ok());
  CHECK(even.error().message == "interleaved schedule: 6 layers are not divisible by pp*vp = 4");
  c.split_embedding_loss = true;
  const auto e = run(g, model, c);
  REQUIRE(e.chunks.size() == 4);
  const std::vector<std::pair<int, int>> want{{0, 0}, {1, 2}, {3, 4}, {5, 5}};
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(e.chunks[i].first_layer == want[i].first);
    CHECK(e.chunks[i].last_layer == want[i].second);
  }
  // An explicit cut wins over the flag.
  c.layers_per_chunk = {2, 1, 1, 2};
  const auto explicit_cut = run(g, model, c);
  CHECK(explicit_cut.chunks[0].last_layer == 1);
}

TEST_CASE("a balanced cut gives the head's stage fewer layers", "[estimate][stages]") {
  // Vocabulary 16384 with hidden 64: the LM head (2*B*S*h*V FLOPs forward)
  // weighs about as much as several layers, so the even 2+2 split leaves the
  // last stage the slowest; the balanced cut moves a layer off it.
  const auto g = gpt(2, 16, 64, 4, 256, 16384, 4);
  FakeCostModel model;
  model.flops_per_s = 1e12;  // time proportional to FLOPs
  auto c = config_for(1, 1, 2, 8);
  const auto even = run(g, model, c);
  c.balance_stages = true;
  const auto balanced = run(g, model, c);
  const int first = balanced.chunks[0].last_layer - balanced.chunks[0].first_layer + 1;
  const int last = balanced.chunks[1].last_layer - balanced.chunks[1].first_layer + 1;
  CHECK(first + last == 4);
  CHECK(last < first);
  CHECK(balanced.step_time.value < even.step_time.value);
  // Balanced work: the slower chunk's forward + backward is no slower than the even cut's.
  auto slowest = [](const estimate::Estimate& e) {
    double s = 0;
    for (const auto& ch : e.chunks) s = std::max(s, (ch.forward_compute + ch.backward_compute).value);
    return s;
  };
  CHECK(slowest(balanced) < slowest(even));
}

namespace {
// The exhaustive dynamic programme the balanced cut used before its binary
// search (O(C L^2)): the reference the fast one must equal exactly.
std::vector<int> exhaustive_cut(const std::vector<double>& layer_time, double pre, double post, int C) {
  const int layers = static_cast<int>(layer_time.size());
  std::vector<double> prefix(layer_time.size() + 1, 0.0);
  for (int i = 0; i < layers; ++i) prefix[i + 1] = prefix[i] + layer_time[i];
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(C + 1, std::vector<double>(layers + 1, inf));
  std::vector<std::vector<int>> cut(C + 1, std::vector<int>(layers + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= C; ++k)
    for (int i = k; i <= layers - (C - k); ++i)
      for (int j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == inf) continue;
        double chunk = prefix[i] - prefix[j];
        if (k == 1) chunk += pre;
        if (k == C) chunk += post;
        const double v = std::max(best[k - 1][j], chunk);
        if (v < best[k][i]) best[k][i] = v, cut[k][i] = j;
      }
  std::vector<int> sizes(C, 0);
  for (int k = C, i = layers; k >= 1; --k) sizes[k - 1] = i - cut[k][i], i = cut[k][i];
  return sizes;
}
}  // namespace

TEST_CASE("the balanced cut equals the exhaustive programme, ties included", "[estimate][stages]") {
  // Times from a small set (0, 1, 2, 3, 0.1) so that equal chunk times and
  // zero-time layers (ties, plateaus) are common; pre and post likewise.
  std::mt19937 rng(12345);
  const double values[] = {0.0, 1.0, 2.0, 3.0, 0.1};
  int compared = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const int layers = 1 + static_cast<int>(rng() % 12);
    const int C = 1 + static_cast<int>(rng() % std::min(layers, 5));
    std::vector<double> t(layers);
    for (auto& x : t) x = values[rng() % 5];
    const double pre = values[rng() % 5] * 2, post = values[rng() % 5] * 3;
    const auto fast = estimate::detail::balanced_chunk_sizes(t, pre, post, C);
    INFO("trial " << trial << " layers " << layers << " chunks " << C);
    REQUIRE(fast == exhaustive_cut(t, pre, post, C));
    ++compared;
  }
  CHECK(compared == 4000);
  // By hand: six layers of 1 and a head of 3, 2 chunks; first chunk j layers:
  //   j=3: max(3, 3+3) = 6;  j=4: max(4, 2+3) = 5;  j=5: max(5, 1+3) = 5
  // least worst 5, earliest cut: 4 + 2.
  CHECK(estimate::detail::balanced_chunk_sizes({1, 1, 1, 1, 1, 1}, 0, 3, 2) == std::vector<int>{4, 2});
}

TEST_CASE("the balanced cut of 250,000 layers takes no quadratic time", "[estimate][stages]") {
  std::vector<double> t(250000, 1.0);
  const auto sizes = estimate::detail::balanced_chunk_sizes(t, 0, 0, 8);
  // 250,000 / 8 = 31,250 layers per chunk.
  CHECK(sizes == std::vector<int>(8, 31250));
}
