#include <catch2/catch.hpp>

#include "fd_check.hpp"
#include "planner/runtime_cpu/gemm.hpp"

using namespace planner::runtime_cpu;
using planner::runtime_cpu::testing::check_gradients;
using planner::runtime_cpu::testing::randn;

TEST_CASE("gemm on a 2x2 example worked by hand", "[runtime_cpu][gemm]") {
  // [1 2; 3 4] @ [5 6; 7 8] = [19 22; 43 50]; alpha 2, beta 0.5 on C = 10:
  // 2 * 19 + 5 = 43, 2 * 22 + 5 = 49, 2 * 43 + 5 = 91, 2 * 50 + 5 = 105.
  const float A[] = {1, 2, 3, 4}, B[] = {5, 6, 7, 8};
  float C[] = {10, 10, 10, 10};
  gemm(false, false, 2, 2, 2, 2.0f, A, B, 0.5f, C);
  CHECK(C[0] == 43.0f);
  CHECK(C[1] == 49.0f);
  CHECK(C[2] == 91.0f);
  CHECK(C[3] == 105.0f);
  // A^T @ B = [1 3; 2 4] @ [5 6; 7 8] = [26 30; 38 44].
  float D[4] = {};
  gemm(true, false, 2, 2, 2, 1.0f, A, B, 0.0f, D);
  CHECK(D[0] == 26.0f);
  CHECK(D[3] == 44.0f);
}

TEST_CASE("gemm equals the naive triple loop for every transpose", "[runtime_cpu][gemm]") {
  const std::int64_t M = 7, N = 5, K = 9;
  const Tensor a = randn("a", {M * K}), b = randn("b", {K * N}), c0 = randn("c", {M * N});
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor c1 = c0, c2 = c0;
      gemm(ta, tb, M, N, K, 0.7f, a.data.data(), b.data.data(), -0.3f, c1.data.data());
      gemm_reference(ta, tb, M, N, K, 0.7f, a.data.data(), b.data.data(), -0.3f, c2.data.data());
      for (std::int64_t i = 0; i < M * N; ++i) CHECK(c1[i] == Approx(c2[i]).margin(1e-5));
    }
}

TEST_CASE("matmul broadcasts batch dims like numpy", "[runtime_cpu][gemm]") {
  // a [2,1,3,4] @ b [3,4,2] -> [2,3,3,2]; entry (i,j) uses a[i,0] and b[j].
  const Tensor a = randn("a", {2, 1, 3, 4}), b = randn("b", {3, 4, 2});
  const Tensor y = matmul(a, b);
  REQUIRE(y.shape == Shape{2, 3, 3, 2});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float ref[6] = {};
      gemm_reference(false, false, 3, 2, 4, 1.0f, a.data.data() + i * 12, b.data.data() + j * 8, 0.0f, ref);
      for (int k = 0; k < 6; ++k) CHECK(y[(i * 3 + j) * 6 + k] == Approx(ref[k]).margin(1e-5));
    }
  CHECK_FALSE(matmul_shape({2, 3}, {4, 2}));
  CHECK_FALSE(matmul_shape({2, 2, 3}, {3, 3, 2}));
}

TEST_CASE("matmul backward matches finite differences", "[runtime_cpu][gemm]") {
  auto f = [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); };
  auto b = [](const std::vector<Tensor>& x, const Tensor& dy) {
    auto g = matmul_backward(x[0], x[1], dy);
    return std::vector<Tensor>{g.da, g.db};
  };
  SECTION("weights [K,N]") { check_gradients(f, b, {randn("a", {2, 3, 4}), randn("b", {4, 5})}); }
  SECTION("batched, both broadcast") { check_gradients(f, b, {randn("a", {2, 1, 3, 4}), randn("b", {3, 4, 2})}); }
}

TEST_CASE("Gemm op backward matches finite differences for every transpose", "[runtime_cpu][gemm]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const GemmAttrs at{ta, tb, 0.5f, 2.0f};
      auto f = [&](const std::vector<Tensor>& x) { return gemm_op(x[0], x[1], &x[2], at); };
      auto b = [&](const std::vector<Tensor>& x, const Tensor& dy) {
        auto g = gemm_op_backward(x[0], x[1], &x[2], at, dy);
        return std::vector<Tensor>{g.da, g.db, g.dc};
      };
      // M = 3, K = 4, N = 2; c [N] broadcast over rows.
      const Shape as = ta ? Shape{4, 3} : Shape{3, 4}, bs = tb ? Shape{2, 4} : Shape{4, 2};
      check_gradients(f, b, {randn("a", as), randn("b", bs), randn("c", {2})});
    }
}
