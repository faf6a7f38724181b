// The step as the slowest of N devices (straggler.hpp), against closed
// forms (n = 2, 3) and values computed independently (Python
// statistics.NormalDist, Simpson's rule on x n Phi^(n-1) phi).

#include <catch2/catch.hpp>

#include <cmath>

#include "estimate/estimate_fixtures.hpp"
#include "planner/estimate/straggler.hpp"

using namespace estimate_test;

TEST_CASE("expected maximum of n standard normals", "[estimate][straggler]") {
  CHECK(estimate::expected_max_std_normal(1) == 0);
  // n = 2: E[max] = 1/sqrt(pi) = 0.5641896.
  CHECK(estimate::expected_max_std_normal(2) == Approx(1 / std::sqrt(M_PI)).epsilon(1e-8));
  // n = 3: 3 / (2 sqrt(pi)) = 0.8462844.
  CHECK(estimate::expected_max_std_normal(3) == Approx(1.5 / std::sqrt(M_PI)).epsilon(1e-8));
  // n = 8: 1.42360, n = 1000: 3.24144 (computed independently, above).
  CHECK(estimate::expected_max_std_normal(8) == Approx(1.42360).epsilon(1e-5));
  CHECK(estimate::expected_max_std_normal(1000) == Approx(3.24144).epsilon(1e-5));
  // Below the usual sqrt(2 ln n) bound: 1024 -> 3.2482 < 3.7233.
  CHECK(estimate::expected_max_std_normal(1024) < std::sqrt(2 * std::log(1024.0)));
}

TEST_CASE("quantiles of the maximum: Phi^-1(q^(1/n))", "[estimate][straggler]") {
  CHECK(estimate::std_normal_quantile(0.5) == Approx(0).margin(1e-12));
  CHECK(estimate::std_normal_quantile(0.975) == Approx(1.959964).epsilon(1e-6));
  // n = 1: the normal's own quantiles.
  CHECK(estimate::max_std_normal_quantile(1, 0.95) == Approx(1.644854).epsilon(1e-6));
  // n = 2, median: Phi^-1(sqrt(0.5)) = Phi^-1(0.7071068) = 0.5449521.
  CHECK(estimate::max_std_normal_quantile(2, 0.5) == Approx(0.5449521).epsilon(1e-6));
  // n = 1024, p95: 0.95^(1/1024) = 0.99994991 -> 3.890156.
  CHECK(estimate::max_std_normal_quantile(1024, 0.95) == Approx(3.890156).epsilon(1e-6));
}

TEST_CASE("estimate: a device spread makes the step the expected slowest of N", "[estimate][straggler]") {
  const auto g = mlp(8, 16, 32, 4);
  const auto c = config_for(2, 1, 1, 4, 8);  // dp = 2: N = 2 devices
  const FakeCostModel plain;
  const auto mu = run(g, plain, c).step_time.value;  // 0.072002729688 (step_test.cpp)
  CHECK(mu == Approx(0.072002729688).epsilon(1e-12));
  const FakeCostModel spread(0.02);
  const auto e = run(g, spread, c);
  // cv = 2 %, N = 2: mean = mu (1 + 0.02 x 0.5641896) = mu x 1.011283792
  //   = 0.072815221;  median mu (1 + 0.02 x 0.5449521) = 0.072791219;
  //   p95: Phi^-1(sqrt(0.95) = 0.9746794) = 1.954508 -> mu x 1.03909016.
  CHECK(e.step_time.value == Approx(0.072002729688 * 1.011283792).epsilon(1e-8));
  CHECK(e.straggler.value == Approx(0.072002729688 * 0.011283792).epsilon(1e-6));
  CHECK(e.step_time_p50.value == Approx(0.072002729688 * (1 + 0.02 * 0.5449521)).epsilon(1e-8));
  CHECK(e.step_time_p95.value == Approx(0.072002729688 * (1 + 0.02 * 1.954508)).epsilon(1e-7));
  CHECK(breakdown_sum(e) == Approx(e.step_time.value).epsilon(1e-12));
  // Without a spread p50 = p95 = the step; one device never waits.
  const auto p = run(g, plain, c);
  CHECK(p.straggler.value == 0);
  CHECK(p.step_time_p50.value == p.step_time.value);
  CHECK(p.step_time_p95.value == p.step_time.value);
  const auto one = run(g, spread, config_for(1, 1, 1, 4, 8));
  CHECK(one.straggler.value == 0);
}
