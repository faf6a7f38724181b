// Each kernel's backward against central finite differences (fd_check.hpp
// explains eps and the tolerance), plus forward values worked by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "fd_check.hpp"
#include "planner/runtime_cpu/attention.hpp"
#include "planner/runtime_cpu/elementwise.hpp"
#include "planner/runtime_cpu/gemm.hpp"
#include "planner/runtime_cpu/index.hpp"
#include "planner/runtime_cpu/norm.hpp"
#include "planner/runtime_cpu/shape_ops.hpp"

using namespace planner::runtime_cpu;
using planner::runtime_cpu::testing::check_gradients;
using planner::runtime_cpu::testing::randn;

namespace {

/// Moves values within `gap` of 0 (relu's kink, a pole) out to +-max(gap, 0.5).
Tensor away_from_zero(Tensor x, float gap) {
  const float to = std::max(gap, 0.5f);
  for (auto& v : x.data)
    if (std::abs(v) < gap) v = v < 0 ? -to : to;
  return x;
}

}  // namespace

TEST_CASE("binary ops broadcast and their backward sums over broadcast axes", "[runtime_cpu][elementwise]") {
  // [1,2,3] + [[10],[20]] = [[11,12,13],[21,22,23]].
  const Tensor y = binary(BinaryOp::add, Tensor({3}, {1, 2, 3}), Tensor({2, 1}, {10, 20}));
  REQUIRE(y.shape == Shape{2, 3});
  CHECK(y.data == std::vector<float>{11, 12, 13, 21, 22, 23});
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div}) {
    auto f = [op](const std::vector<Tensor>& x) { return binary(op, x[0], x[1]); };
    auto b = [op](const std::vector<Tensor>& x, const Tensor& dy) {
      auto g = binary_backward(op, x[0], x[1], dy);
      return std::vector<Tensor>{g.da, g.db};
    };
    // The divisor kept away from 0 (|b| >= 1): the truncation error of the
    // quotient a/b grows as eps^2 |a| / |b|^4.
    check_gradients(f, b, {randn("a", {2, 3, 4}), away_from_zero(randn("b", {3, 1}), 1.0f)});
  }
}

TEST_CASE("binary backward computes only the gradients asked for, bit for bit", "[runtime_cpu][elementwise]") {
  // A constant operand (gelu's 0.5, the scores' scale) takes no gradient:
  // its local gradient at the output's shape is never built.
  const Tensor a = randn("a", {2, 3, 4}), c = away_from_zero(randn("c", {1}), 1.0f), dy = randn("dy", {2, 3, 4});
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div}) {
    const auto both = binary_backward(op, a, c, dy);
    const auto only_a = binary_backward(op, a, c, dy, true, false);
    const auto only_c = binary_backward(op, a, c, dy, false, true);
    CHECK(only_a.da.data == both.da.data);
    CHECK(only_a.db.data.empty());
    CHECK(only_c.db.data == both.db.data);
    CHECK(only_c.da.data.empty());
  }
}

TEST_CASE("binary ops and sum_to_shape agree with index arithmetic for every broadcast pattern",
          "[runtime_cpu][elementwise]") {
  // Shapes [2,3,4] with any subset of axes set to 1, for both operands, and
  // rank-dropped / 0-d operands: y[i,j,k] = a[i',j',k'] op b[...] where a
  // broadcast axis reads index 0. The kernels walk runs of the last axis;
  // this is the per-element definition they must equal exactly.
  const Shape full{2, 3, 4};
  auto shape_of = [&](int mask) {
    Shape s = full;
    for (int d = 0; d < 3; ++d)
      if (mask & (1 << d)) s[d] = 1;
    return s;
  };
  auto at = [](const Tensor& t, int i, int j, int k) {  // t aligned on the right of [2,3,4]
    const std::size_t r = t.shape.size();
    const std::int64_t idx[3] = {i, j, k};
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < r; ++d) {
      const std::int64_t n = t.shape[d];
      flat = flat * n + (n == 1 ? 0 : idx[3 - r + d]);
    }
    return t.data[static_cast<std::size_t>(flat)];
  };
  std::vector<Shape> shapes;
  for (int m = 0; m < 8; ++m) shapes.push_back(shape_of(m));
  shapes.push_back({4});
  shapes.push_back({3, 1});
  shapes.push_back({});
  for (const Shape& sa : shapes)
    for (const Shape& sb : shapes) {
      const Tensor a = randn("a", sa), b = away_from_zero(randn("b", sb), 0.5f);
      const Tensor y = binary(BinaryOp::div, binary(BinaryOp::add, a, b), b);
      const auto out = broadcast_shape(a.shape, b.shape);
      REQUIRE(out);
      REQUIRE(y.shape == *out);
      Tensor yf = broadcast_to(y, full);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 4; ++k) {
            const float av = at(a, i, j, k), bv = at(b, i, j, k);
            REQUIRE(yf.data[static_cast<std::size_t>((i * 3 + j) * 4 + k)] == (av + bv) / bv);
          }
      // sum_to_shape(broadcast of ones-weighted g) = the sum over broadcast axes, in double.
      const Tensor g = randn("g", full);
      const Tensor ga = sum_to_shape(g, a.shape);
      std::vector<double> want(ga.data.size(), 0.0);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 4; ++k) {
            std::int64_t flat = 0;
            const std::size_t r = a.shape.size();
            const std::int64_t idx[3] = {i, j, k};
            for (std::size_t d = 0; d < r; ++d) flat = flat * a.shape[d] + (a.shape[d] == 1 ? 0 : idx[3 - r + d]);
            want[static_cast<std::size_t>(flat)] += g.data[static_cast<std::size_t>((i * 3 + j) * 4 + k)];
          }
      for (std::size_t q = 0; q < want.size(); ++q) CHECK(ga.data[q] == Approx(want[q]).epsilon(1e-6));
    }
}

TEST_CASE("unary activations: values and backward", "[runtime_cpu][elementwise]") {
  // gelu(1) = 0.5 (1 + erf(1/sqrt 2)) = 0.5 * 1.682689 = 0.841345; sigmoid(0) = 0.5; silu(2) = 2/(1+e^-2) = 1.761594.
  CHECK(unary(UnaryOp::gelu, Tensor({1}, {1.0f}))[0] == Approx(0.841345).epsilon(1e-6));
  CHECK(unary(UnaryOp::sigmoid, Tensor({1}, {0.0f}))[0] == 0.5f);
  CHECK(unary(UnaryOp::silu, Tensor({1}, {2.0f}))[0] == Approx(1.761594).epsilon(1e-6));
  CHECK(unary(UnaryOp::relu, Tensor({2}, {-1.0f, 2.0f})).data == std::vector<float>{0.0f, 2.0f});
  for (UnaryOp op : {UnaryOp::relu, UnaryOp::gelu, UnaryOp::erf, UnaryOp::sigmoid, UnaryOp::silu, UnaryOp::tanh,
                     UnaryOp::sqrt, UnaryOp::exp, UnaryOp::log, UnaryOp::neg, UnaryOp::cos, UnaryOp::sin}) {
    INFO("unary op " << static_cast<int>(op));
    Tensor x = away_from_zero(randn("x", {3, 5}), 0.05f);
    if (op == UnaryOp::sqrt || op == UnaryOp::log)  // positive domain, away from 0
      for (auto& v : x.data) v = std::abs(v) + 0.5f;
    auto f = [op](const std::vector<Tensor>& v) { return unary(op, v[0]); };
    auto b = [op](const std::vector<Tensor>& v, const Tensor& dy) {
      return std::vector<Tensor>{unary_backward(op, v[0], unary(op, v[0]), dy)};
    };
    check_gradients(f, b, {x});
  }
}

TEST_CASE("broadcast_to and sum_to_shape are adjoint", "[runtime_cpu][elementwise]") {
  auto f = [](const std::vector<Tensor>& x) { return broadcast_to(x[0], {2, 3, 4}); };
  auto b = [](const std::vector<Tensor>& x, const Tensor& dy) { return std::vector<Tensor>{sum_to_shape(dy, x[0].shape)}; };
  check_gradients(f, b, {randn("x", {3, 1})});
}

TEST_CASE("layer norm: values and backward", "[runtime_cpu][norm]") {
  // Row [1, 3]: mean 2, var 1, xh = [-1, 1]; w = [2, 1], b = [0, 10] -> [-2, 11] (eps 0).
  const Tensor y = layer_norm(Tensor({1, 2}, {1, 3}), Tensor({2}, {2, 1}), nullptr, 1, 0.0f);
  CHECK(y[0] == Approx(-2.0f));
  const Tensor bias({2}, {0, 10});
  CHECK(layer_norm(Tensor({1, 2}, {1, 3}), Tensor({2}, {2, 1}), &bias, 1, 0.0f)[1] == Approx(11.0f));
  for (std::size_t axis : {std::size_t{2}, std::size_t{1}}) {
    const Shape ws = axis == 2 ? Shape{4} : Shape{3, 4};
    auto f = [axis](const std::vector<Tensor>& x) { return layer_norm(x[0], x[1], &x[2], axis, 1e-5f); };
    auto b = [axis](const std::vector<Tensor>& x, const Tensor& dy) {
      auto g = layer_norm_backward(x[0], x[1], true, axis, 1e-5f, dy);
      return std::vector<Tensor>{g.dx, g.dw, g.db};
    };
    check_gradients(f, b, {randn("x", {2, 3, 4}), randn("w", ws), randn("b", ws)});
  }
}

TEST_CASE("rms norm: values and backward", "[runtime_cpu][norm]") {
  // Row [3, 4]: mean square 12.5, r = 1/sqrt(12.5) = 0.282843; y = [0.848528, 1.131371] (w = 1, eps 0).
  const Tensor y = rms_norm(Tensor({1, 2}, {3, 4}), Tensor({2}, {1, 1}), 0.0f);
  CHECK(y[0] == Approx(0.848528f));
  CHECK(y[1] == Approx(1.131371f));
  auto f = [](const std::vector<Tensor>& x) { return rms_norm(x[0], x[1], 1e-5f); };
  auto b = [](const std::vector<Tensor>& x, const Tensor& dy) {
    auto g = rms_norm_backward(x[0], x[1], 1e-5f, dy);
    return std::vector<Tensor>{g.dx, g.dw};
  };
  check_gradients(f, b, {randn("x", {3, 5}), randn("w", {5})});
}

TEST_CASE("softmax: values and backward along any axis", "[runtime_cpu][norm]") {
  // softmax([0, ln 3]) = [1/4, 3/4].
  const Tensor y = softmax(Tensor({2}, {0.0f, std::log(3.0f)}), 0);
  CHECK(y[0] == Approx(0.25f));
  CHECK(y[1] == Approx(0.75f));
  for (std::size_t axis : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
    auto f = [axis](const std::vector<Tensor>& x) { return softmax(x[0], axis); };
    auto b = [axis](const std::vector<Tensor>& x, const Tensor& dy) {
      return std::vector<Tensor>{softmax_backward(softmax(x[0], axis), dy, axis)};
    };
    check_gradients(f, b, {randn("x", {2, 3, 4})});
  }
}

TEST_CASE("fused attention equals the unfused composition and its backward matches FD", "[runtime_cpu][attention]") {
  const std::int64_t B = 2, H = 2, S = 3, D = 4;
  const Tensor q = randn("q", {B, H, S, D}), k = randn("k", {B, H, S, D}), v = randn("v", {B, H, S, D});
  const float sc = 0.5f;
  // Unfused: softmax(q k^T * scale + mask) v with the -inf-like mask -10000 above the diagonal.
  Tensor mask({S, S});
  for (std::int64_t i = 0; i < S; ++i)
    for (std::int64_t j = i + 1; j < S; ++j) mask[i * S + j] = -10000.0f;
  const Tensor scores = binary(BinaryOp::add, binary(BinaryOp::mul, matmul(q, transpose(k, {0, 1, 3, 2})),
                                                     Tensor({}, {sc})), mask);
  const Tensor ref = matmul(softmax(scores, 3), v);
  const Tensor fused = attention(q, k, v, nullptr, {sc, true});
  REQUIRE(fused.shape == ref.shape);
  for (std::int64_t i = 0; i < ref.size(); ++i) CHECK(fused[i] == Approx(ref[i]).margin(1e-5));
  // The first query of a causal row sees only key 0: its output is v[.., 0, :].
  CHECK(fused[0] == Approx(v[0]));
  // With the mask passed as bias instead of causal, the same numbers.
  const Tensor biased = attention(q, k, v, &mask, {sc, false});
  for (std::int64_t i = 0; i < ref.size(); ++i) CHECK(biased[i] == Approx(ref[i]).margin(1e-5));
  for (bool causal : {false, true}) {
    auto f = [=](const std::vector<Tensor>& x) { return attention(x[0], x[1], x[2], nullptr, {sc, causal}); };
    auto b = [=](const std::vector<Tensor>& x, const Tensor& dy) {
      auto g = attention_backward(x[0], x[1], x[2], nullptr, {sc, causal}, dy);
      return std::vector<Tensor>{g.dq, g.dk, g.dv};
    };
    check_gradients(f, b, {q, k, v});
  }
}

TEST_CASE("gather: lookup and scatter-add backward", "[runtime_cpu][index]") {
  const Tensor table({3, 2}, {0, 1, 10, 11, 20, 21});
  const IndexTensor ids{{2, 2}, {2, 0, 2, -1}};  // -1 is row 2
  const Tensor y = gather(table, ids, 0);
  REQUIRE(y.shape == Shape{2, 2, 2});
  CHECK(y.data == std::vector<float>{20, 21, 0, 1, 20, 21, 20, 21});
  // Row 2 is read three times: its gradient is the sum of three ones.
  const Tensor g = gather_backward(table.shape, ids, 0, Tensor({2, 2, 2}, std::vector<float>(8, 1.0f)));
  CHECK(g.data == std::vector<float>{1, 1, 0, 0, 3, 3});
  for (std::size_t axis : {std::size_t{0}, std::size_t{1}}) {
    const IndexTensor idx{{3}, {1, 0, 1}};
    auto f = [&](const std::vector<Tensor>& x) { return gather(x[0], idx, axis); };
    auto b = [&](const std::vector<Tensor>& x, const Tensor& dy) {
      return std::vector<Tensor>{gather_backward(x[0].shape, idx, axis, dy)};
    };
    check_gradients(f, b, {randn("t", {2, 3, 2})});
  }
}

TEST_CASE("cross-entropy: value by hand, ignore_index, backward", "[runtime_cpu][index]") {
  // Row [0, ln 3] label 1: -log(3/4) = 0.287682; row [0, 0] label 0: log 2 = 0.693147; mean 0.490415.
  const Tensor x({2, 2}, {0.0f, std::log(3.0f), 0.0f, 0.0f});
  CHECK(cross_entropy(x, IndexTensor{{2}, {1, 0}}, std::nullopt) == Approx(0.490415).epsilon(1e-6));
  // Row 1 ignored: the mean is over row 0 only.
  CHECK(cross_entropy(x, IndexTensor{{2}, {1, -100}}, -100) == Approx(0.287682).epsilon(1e-6));
  const IndexTensor labels{{4}, {2, -100, 0, 4}};
  auto f = [&](const std::vector<Tensor>& v) {
    return Tensor(Shape{}, {static_cast<float>(cross_entropy(v[0], labels, -100))});
  };
  auto b = [&](const std::vector<Tensor>& v, const Tensor& dy) {
    return std::vector<Tensor>{cross_entropy_backward(v[0], labels, -100, dy[0])};
  };
  check_gradients(f, b, {randn("logits", {4, 5})});
}

TEST_CASE("transpose, concat/split, slice, trilu, reduce are adjoint to their backward", "[runtime_cpu][shape]") {
  // transpose [[1,2,3],[4,5,6]] -> [[1,4],[2,5],[3,6]].
  CHECK(transpose(Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), {1, 0}).data == std::vector<float>{1, 4, 2, 5, 3, 6});
  {
    const std::vector<std::size_t> perm{2, 0, 1};
    auto f = [&](const std::vector<Tensor>& x) { return transpose(x[0], perm); };
    auto b = [&](const std::vector<Tensor>& x, const Tensor& dy) {
      return std::vector<Tensor>{transpose(dy, inverse_permutation(perm))};
    };
    check_gradients(f, b, {randn("x", {2, 3, 4})});
  }
  {
    auto f = [](const std::vector<Tensor>& x) { return concat({&x[0], &x[1]}, 1); };
    auto b = [](const std::vector<Tensor>& x, const Tensor& dy) { return split(dy, 1, {x[0].shape[1], x[1].shape[1]}); };
    check_gradients(f, b, {randn("a", {2, 1, 3}), randn("b", {2, 3, 3})});
    const auto parts = split(Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), 1, {1, 2});
    CHECK(parts[0].data == std::vector<float>{1, 4});
    CHECK(parts[1].data == std::vector<float>{2, 3, 5, 6});
  }
  {
    // Rows 1.. step 1, columns from 3 down with step -2: columns 3, 1.
    const SliceBox box{{1, 3}, {1, -2}, {2, 2}};
    CHECK(slice(Tensor({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), box).data == std::vector<float>{7, 5, 11, 9});
    auto f = [&](const std::vector<Tensor>& x) { return slice(x[0], box); };
    auto b = [&](const std::vector<Tensor>& x, const Tensor& dy) {
      return std::vector<Tensor>{slice_backward(x[0].shape, box, dy)};
    };
    check_gradients(f, b, {randn("x", {3, 4})});
  }
  {
    // upper, k = 1 on a 3x3 of ones keeps (0,1), (0,2), (1,2).
    const Tensor t = trilu(Tensor({3, 3}, std::vector<float>(9, 1.0f)), true, 1);
    CHECK(t.data == std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 0});
    auto f = [](const std::vector<Tensor>& x) { return trilu(x[0], false, 0); };
    auto b = [](const std::vector<Tensor>& x, const Tensor& dy) { return std::vector<Tensor>{trilu(dy, false, 0)}; };
    check_gradients(f, b, {randn("x", {2, 3, 3})});
  }
  {
    // mean over axis 1 of [[1,2,3],[4,5,6]] = [2, 5]; sum over both = 21.
    const Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(reduce(x, {1}, false, true).data == std::vector<float>{2, 5});
    CHECK(reduce(x, {0, 1}, false, false).data == std::vector<float>{21});
    CHECK(reduce(x, {1}, true, true).shape == Shape{2, 1});
    for (bool mean : {false, true}) {
      const std::vector<std::size_t> axes{0, 2};
      auto f = [&](const std::vector<Tensor>& v) { return reduce(v[0], axes, false, mean); };
      auto b = [&](const std::vector<Tensor>& v, const Tensor& dy) {
        return std::vector<Tensor>{reduce_backward(v[0].shape, axes, mean, dy)};
      };
      check_gradients(f, b, {randn("x", {2, 3, 4})});
    }
  }
}
