#pragma once
// Central finite differences for the kernel tests.
//
// A kernel y = f(x_1..x_n) is checked through the scalar L = sum_k r_k y_k
// with fixed random weights r (so every output element matters): the
// analytic dL/dx_i = backward(dy = r) against
//   (L(x + eps e_j) - L(x - eps e_j)) / (2 eps),  L summed in double.
// Error budget with eps = 1e-2 on inputs of size ~1: truncation
// eps^2/6 |L'''| ~ 2e-5, fp32 rounding of L (~1e-6 over a few hundred
// terms) divided by 2 eps ~ 5e-5. A tolerance of 1e-3 (1 + |g|) is 10x
// that budget, while a wrong backward (a dropped term, a transposed
// operand) is off by O(|g|).

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "planner/runtime_cpu/rng.hpp"
#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu::testing {

using Fwd = std::function<Tensor(const std::vector<Tensor>&)>;
using Bwd = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const Tensor&)>;

inline double weighted_sum(const Tensor& y, const Tensor& r) {
  double s = 0.0;
  for (std::int64_t k = 0; k < y.size(); ++k) s += static_cast<double>(y[k]) * r[k];
  return s;
}

/// Checks every element of every input in `check` (default: all inputs).
inline void check_gradients(const Fwd& f, const Bwd& b, std::vector<Tensor> xs, std::vector<std::size_t> check = {},
                            double eps = 1e-2, double tol = 1e-3) {
  if (check.empty())
    for (std::size_t i = 0; i < xs.size(); ++i) check.push_back(i);
  const Tensor y = f(xs);
  const Tensor r = normal_tensor(99, "fd.weights", y.shape, 0.0f, 1.0f);
  const auto grads = b(xs, r);
  for (std::size_t i : check) {
    REQUIRE(grads[i].shape == xs[i].shape);
    for (std::int64_t j = 0; j < xs[i].size(); ++j) {
      const float keep = xs[i][j];
      xs[i][j] = static_cast<float>(keep + eps);
      const double up = weighted_sum(f(xs), r);
      xs[i][j] = static_cast<float>(keep - eps);
      const double down = weighted_sum(f(xs), r);
      xs[i][j] = keep;
      const double fd = (up - down) / (2 * eps), an = grads[i][j];
      INFO("input " << i << " element " << j << ": analytic " << an << " vs finite difference " << fd);
      CHECK(std::abs(an - fd) <= tol * (1.0 + std::abs(fd)));
    }
  }
}

/// A tensor of normal(0, 1) values named `name` (seed 7).
inline Tensor randn(const std::string& name, const Shape& s, float stddev = 1.0f) {
  return normal_tensor(7, name, s, 0.0f, stddev);
}

}  // namespace planner::runtime_cpu::testing
