#include <catch2/catch.hpp>

#include "planner/runtime_cpu/optim.hpp"

using namespace planner::runtime_cpu;

TEST_CASE("SGD with momentum and weight decay, two steps by hand", "[runtime_cpu][optim]") {
  std::vector<float> w{1.0f};
  const std::vector<float> g{0.5f};
  OptimState s;
  const SgdConfig c{0.1f, 0.9f, 0.1f};
  // Step 1: g' = 0.5 + 0.1 * 1 = 0.6, v = 0.6, w = 1 - 0.1 * 0.6 = 0.94.
  sgd_step(c, w, g, s);
  CHECK(w[0] == Approx(0.94f));
  // Step 2: g' = 0.5 + 0.1 * 0.94 = 0.594, v = 0.9 * 0.6 + 0.594 = 1.134, w = 0.94 - 0.1134 = 0.8266.
  sgd_step(c, w, g, s);
  CHECK(w[0] == Approx(0.8266f));
  // Plain SGD: w = 2 - 0.1 * 0.5 = 1.95.
  std::vector<float> p{2.0f};
  OptimState s2;
  sgd_step(SgdConfig{0.1f, 0.0f, 0.0f}, p, g, s2);
  CHECK(p[0] == Approx(1.95f));
}

TEST_CASE("AdamW, two steps by hand", "[runtime_cpu][optim]") {
  std::vector<float> w{1.0f};
  std::vector<float> g{0.5f};
  OptimState s;
  const AdamWConfig c{0.1f, 0.9f, 0.999f, 1e-8f, 0.01f};
  // Step 1: m = 0.05, v = 0.00025, mh = 0.05 / 0.1 = 0.5, vh = 0.00025 / 0.001 = 0.25,
  // w = 1 - 0.1 (0.5 / 0.5 + 0.01 * 1) = 1 - 0.101 = 0.899.
  adamw_step(c, w, g, s);
  CHECK(w[0] == Approx(0.899f));
  // Step 2 with g = -0.5: m = 0.045 - 0.05 = -0.005, v = 0.00024975 + 0.00025 = 0.00049975,
  // mh = -0.005 / 0.19 = -0.0263158, vh = 0.00049975 / 0.001999 = 0.2500000,
  // w = 0.899 - 0.1 (-0.0263158 / 0.5 + 0.01 * 0.899) = 0.899 + 0.00526316 - 0.000899 = 0.90336416.
  g[0] = -0.5f;
  adamw_step(c, w, g, s);
  CHECK(w[0] == Approx(0.9033642f).epsilon(1e-6));
  CHECK(s.step == 2);
}
