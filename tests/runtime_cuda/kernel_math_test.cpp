// The shared per-element/per-row math of the GPU kernels
// (planner/runtime_cuda/kernel_math.hpp), run here in plain CPU loops over
// whole tensors, against the runtime_cpu kernels. Where the GPU function
// repeats the CPU arithmetic step for step the comparison is exact
// (bit-identical floats); attention, whose CPU kernel multiplies through
// OpenBLAS in another summation order, is compared to 1e-5 relative.
// No GPU needed: this binary is built in every preset.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "planner/runtime_cpu/attention.hpp"
#include "planner/runtime_cpu/elementwise.hpp"
#include "planner/runtime_cpu/gemm.hpp"
#include "planner/runtime_cpu/index.hpp"
#include "planner/runtime_cpu/norm.hpp"
#include "planner/runtime_cpu/optim.hpp"
#include "planner/runtime_cpu/rng.hpp"
#include "planner/runtime_cpu/shape_ops.hpp"
#include "planner/runtime_cuda/kernel_math.hpp"
#include "planner/runtime_cuda/views.hpp"

namespace km = planner::kernel_math;
using namespace planner::runtime_cpu;

namespace {

Tensor randn(const char* name, const Shape& s, float stddev = 1.0f) { return normal_tensor(7, name, s, 0.0f, stddev); }

std::size_t uz(std::int64_t v) { return static_cast<std::size_t>(v); }

/// Element-for-element equality of two fp32 tensors (same bits, NaN aside).
void require_same(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape == want.shape);
  for (std::size_t k = 0; k < want.data.size(); ++k) {
    INFO("element " << k);
    REQUIRE(got.data[k] == want.data[k]);
  }
}

void require_close(const Tensor& got, const Tensor& want, double rel) {
  REQUIRE(got.shape == want.shape);
  double scale = 1e-6;
  for (float v : want.data) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (std::size_t k = 0; k < want.data.size(); ++k) {
    INFO("element " << k << ": " << got.data[k] << " vs " << want.data[k]);
    REQUIRE(std::fabs(got.data[k] - want.data[k]) <= rel * scale);
  }
}

}  // namespace

TEST_CASE("bf16 rounds to nearest, ties to even, and keeps NaN and infinity", "[kernel_math][bf16]") {
  // bf16 keeps the top 16 bits of fp32: 1.0f = 0x3f800000 -> 0x3f80 exactly.
  CHECK(km::bf16_bits(1.0f) == 0x3f80);
  // 1 + 2^-8 = 0x3f808000: exactly half an ulp of bf16 (whose ulp at 1 is
  // 2^-7); kept lsb (0x3f80) even -> stays 0x3f80.
  CHECK(km::bf16_bits(km::bits_float(0x3f808000u)) == 0x3f80);
  // 1 + 3 * 2^-8 = 0x3f818000: a tie above the odd 0x3f81 -> up to 0x3f82.
  CHECK(km::bf16_bits(km::bits_float(0x3f818000u)) == 0x3f82);
  // Just above the tie (0x3f808001) rounds up; just below (0x3f807fff) down.
  CHECK(km::bf16_bits(km::bits_float(0x3f808001u)) == 0x3f81);
  CHECK(km::bf16_bits(km::bits_float(0x3f807fffu)) == 0x3f80);
  // -1.5 = 0xbfc00000 -> 0xbfc0; the sign rides along.
  CHECK(km::bf16_bits(-1.5f) == 0xbfc0);
  // The largest float 0x7f7fffff rounds up into the exponent: +infinity 0x7f80.
  CHECK(km::bf16_bits(km::bits_float(0x7f7fffffu)) == 0x7f80);
  CHECK(km::bf16_bits(INFINITY) == 0x7f80);
  // A NaN whose payload sits only in the low 16 bits (0x7f800001) would
  // truncate to infinity; the quiet bit 0x0040 keeps it a NaN: 0x7fc0.
  CHECK(km::bf16_bits(km::bits_float(0x7f800001u)) == 0x7fc0);
  CHECK(std::isnan(km::bf16_float(km::bf16_bits(NAN))));
  // Widening is exact: 0x4049 = 0x40490000 = 3.140625 (pi to 8 bits).
  CHECK(km::bf16_float(0x4049) == 3.140625f);
  CHECK(km::bf16_bits(3.14159265f) == 0x4049);  // 3.1415927 lies below the 3.140625/3.15625 midpoint
}

TEST_CASE("unary ops forward and backward equal runtime_cpu's", "[kernel_math][elementwise]") {
  const Tensor x0 = randn("ux", {4, 33});
  for (int u = 0; u <= static_cast<int>(UnaryOp::sin); ++u) {
    const auto op = static_cast<UnaryOp>(u);
    Tensor x = x0;
    if (op == UnaryOp::sqrt || op == UnaryOp::log)  // positive domain
      for (auto& v : x.data) v = std::fabs(v) + 0.1f;
    INFO("unary op " << u);
    const Tensor y = unary(op, x), dy = randn("udy", x.shape);
    const Tensor dx = unary_backward(op, x, y, dy);
    Tensor gy(x.shape), gdx(x.shape);
    for (std::size_t k = 0; k < x.data.size(); ++k) {
      gy.data[k] = km::unary_value(static_cast<km::Unary>(u), x.data[k]);
      gdx.data[k] = km::unary_grad(static_cast<km::Unary>(u), x.data[k], gy.data[k], dy.data[k]);
    }
    require_same(gy, y);
    require_same(gdx, dx);
  }
}

TEST_CASE("binary ops with broadcasting: views and box sums equal runtime_cpu", "[kernel_math][elementwise]") {
  // a [2,1,5] op b [3,1] -> [2,3,5]; da sums dy over axis 1, db over 0 and 2.
  const Tensor a = randn("ba", {2, 1, 5}), b0 = randn("bb", {3, 1}), dy = randn("bdy", {2, 3, 5});
  Tensor b = b0;
  for (auto& v : b.data) v = v < 0 ? v - 0.5f : v + 0.5f;  // away from 0 for div
  const km::Dims out{2, 3, 5};
  const auto av = km::broadcast_view(a.shape, out), bv = km::broadcast_view(b.shape, out);
  const auto as = km::sum_views(out, a.shape), bs = km::sum_views(out, b.shape);
  REQUIRE((av && bv && as && bs));
  for (int o = 0; o <= 3; ++o) {
    INFO("binary op " << o);
    const auto op = static_cast<BinaryOp>(o);
    const Tensor y = binary(op, a, b);
    const auto g = binary_backward(op, a, b, dy);
    Tensor gy(out), ga_full(out), gb_full(out), ga(a.shape), gb(b.shape);
    for (std::int64_t k = 0; k < 30; ++k) {
      const float x = a[km::view_index(*av, k)], z = b[km::view_index(*bv, k)];
      gy[k] = km::binary_value(static_cast<km::Binary>(o), x, z);
      km::binary_grads(static_cast<km::Binary>(o), x, z, dy[k], ga_full.data[uz(k)], gb_full.data[uz(k)]);
    }
    for (std::int64_t k = 0; k < a.size(); ++k) ga[k] = static_cast<float>(km::box_sum(ga_full.data.data(), as->first, as->second, k));
    for (std::int64_t k = 0; k < b.size(); ++k) gb[k] = static_cast<float>(km::box_sum(gb_full.data.data(), bs->first, bs->second, k));
    require_same(gy, y);
    require_same(ga, g.da);
    require_same(gb, g.db);
  }
}

TEST_CASE("transpose, slice, split parts and reductions through views equal runtime_cpu", "[kernel_math][views]") {
  const Tensor x = randn("vx", {2, 3, 4, 5});
  const std::vector<std::size_t> perm{2, 0, 3, 1};
  const Tensor t = transpose(x, perm);
  const auto tv = km::transpose_view(x.shape, perm);
  REQUIRE(tv);
  Tensor gt(t.shape);
  for (std::int64_t k = 0; k < t.size(); ++k) gt[k] = x[km::view_index(*tv, k)];
  require_same(gt, t);

  // Slice axis 2 from 3 down by -2 (elements 3, 1) and axis 3 from 1 by 2 (1, 3).
  const SliceBox box{{0, 0, 3, 1}, {1, 1, -2, 2}, {2, 3, 2, 2}};
  const Tensor s = slice(x, box);
  const auto sv = km::slice_view(x.shape, box.start, box.step, box.out);
  REQUIRE(sv);
  Tensor gs(s.shape);
  for (std::int64_t k = 0; k < s.size(); ++k) gs[k] = x[km::view_index(*sv, k)];
  require_same(gs, s);

  // Split axis 1 into 1 + 2: the second part starts at row 1.
  const auto parts = split(x, 1, {1, 2});
  const auto pv = km::part_view(x.shape, 1, 1, parts[1].shape);
  REQUIRE(pv);
  Tensor gp(parts[1].shape);
  for (std::int64_t k = 0; k < gp.size(); ++k) gp[k] = x[km::view_index(*pv, k)];
  require_same(gp, parts[1]);

  // ReduceSum over axes 1 and 3 (keepdims): sum_to_shape, ascending order.
  const Tensor r = reduce(x, {1, 3}, true, false);
  const auto rv = km::sum_views(x.shape, r.shape);
  REQUIRE(rv);
  Tensor gr(r.shape);
  for (std::int64_t k = 0; k < r.size(); ++k) gr[k] = static_cast<float>(km::box_sum(x.data.data(), rv->first, rv->second, k));
  require_same(gr, r);
}

TEST_CASE("LayerNorm and RMSNorm rows and weight columns equal runtime_cpu", "[kernel_math][norm]") {
  const std::int64_t rows = 6, n = 24;
  const Tensor x = randn("nx", {2, 3, n}), w = randn("nw", {n}), b = randn("nb", {n}), dy = randn("ndy", {2, 3, n});
  const float eps = 1e-5f;
  const Tensor y = layer_norm(x, w, &b, 2, eps);
  const auto g = layer_norm_backward(x, w, true, 2, eps, dy);
  Tensor gy(x.shape), gdx(x.shape), gdw(w.shape), gdb(w.shape);
  std::vector<km::RowStats> stats;
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x.data.data() + i * n;
    km::layer_norm_row(xi, w.data.data(), b.data.data(), gy.data.data() + i * n, n, eps);
    km::layer_norm_dx_row(xi, w.data.data(), dy.data.data() + i * n, gdx.data.data() + i * n, n, eps);
    stats.push_back(km::layer_stats(xi, n, eps));
  }
  for (std::int64_t j = 0; j < n; ++j) {
    double dw = 0, db = 0;
    km::layer_norm_dw_col(x.data.data(), dy.data.data(), stats.data(), rows, n, j, dw, db);
    gdw[j] = static_cast<float>(dw), gdb[j] = static_cast<float>(db);
  }
  require_same(gy, y);
  require_same(gdx, g.dx);
  require_same(gdw, g.dw);
  require_same(gdb, g.db);

  const Tensor ry = rms_norm(x, w, eps);
  const auto rg = rms_norm_backward(x, w, eps, dy);
  Tensor hy(x.shape), hdx(x.shape), hdw(w.shape);
  std::vector<double> r;
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x.data.data() + i * n;
    km::rms_norm_row(xi, w.data.data(), hy.data.data() + i * n, n, eps);
    km::rms_norm_dx_row(xi, w.data.data(), dy.data.data() + i * n, hdx.data.data() + i * n, n, eps);
    r.push_back(km::rms_r(xi, n, eps));
  }
  for (std::int64_t j = 0; j < n; ++j) hdw[j] = static_cast<float>(km::rms_norm_dw_col(x.data.data(), dy.data.data(), r.data(), rows, n, j));
  require_same(hy, ry);
  require_same(hdx, rg.dx);
  require_same(hdw, rg.dw);
}

TEST_CASE("RMSNorm of [3, 4] by hand, in fp32 and bf16 storage", "[kernel_math][norm][bf16]") {
  // mean(x^2) = (9 + 16) / 2 = 12.5, r = 1 / sqrt(12.5) = 0.2828427;
  // y = x r = [0.8485281, 1.1313708].
  const float x[2] = {3.0f, 4.0f}, w[2] = {1.0f, 1.0f};
  float y[2];
  km::rms_norm_row(x, w, y, 2, 0.0f);
  CHECK(y[0] == Approx(0.8485281f).epsilon(1e-6));
  CHECK(y[1] == Approx(1.1313708f).epsilon(1e-6));
  // bf16: 3 and 4 are exact. 0.8485281 = 1.6970563 * 2^-1, mantissa
  // 0.6970563 * 128 = 89.22 -> 89: 1.6953125 / 2 = 0.84765625.
  // 1.1313708: 0.1313708 * 128 = 16.82 -> 17: 1 + 17/128 = 1.1328125.
  const km::Bf16 xb[2] = {{km::bf16_bits(3.0f)}, {km::bf16_bits(4.0f)}};
  km::Bf16 yb[2];
  km::rms_norm_row(xb, w, yb, 2, 0.0f);
  CHECK(km::ld(yb[0]) == 0.84765625f);
  CHECK(km::ld(yb[1]) == 1.1328125f);
}

TEST_CASE("softmax rows along an inner axis equal runtime_cpu", "[kernel_math][softmax]") {
  // Axis 1 of [3, 7, 4]: rows of 7 elements 4 apart, outer 3 x inner 4 rows.
  const Tensor x = randn("sx", {3, 7, 4}, 3.0f), dy = randn("sdy", {3, 7, 4});
  const Tensor y = softmax(x, 1), dx = softmax_backward(y, dy, 1);
  Tensor gy(x.shape), gdx(x.shape);
  for (std::int64_t o = 0; o < 3; ++o)
    for (std::int64_t in = 0; in < 4; ++in) {
      const std::int64_t base = o * 28 + in;
      km::softmax_row(x.data.data() + base, gy.data.data() + base, 7, 4);
      km::softmax_backward_row(y.data.data() + base, dy.data.data() + base, gdx.data.data() + base, 7, 4);
    }
  require_same(gy, y);
  require_same(gdx, dx);
}

TEST_CASE("embedding gather and its scatter-add, and cross-entropy, equal runtime_cpu", "[kernel_math][index]") {
  // Table [5, 3]; ids [2, 4] with a repeat (row 1 twice) and a negative (-1 = row 4).
  const Tensor table = randn("et", {5, 3});
  const IndexTensor ids{{2, 4}, {1, 3, 1, -1, 0, 1, 4, 2}};
  const Tensor y = gather(table, ids, 0);
  Tensor gy(y.shape);
  for (std::int64_t k = 0; k < gy.size(); ++k) gy[k] = table[km::gather_source(k, ids.data.data(), 8, 5, 3)];
  require_same(gy, y);
  // rows_of, row by row: row 0: t 4; row 1: t 0, 2, 5; row 2: t 7; row 3: t 1; row 4: t 3 (-1), 6.
  const std::vector<std::int64_t> offsets{0, 1, 4, 5, 6, 8}, rows_of{4, 0, 2, 5, 7, 1, 3, 6};
  const Tensor dy = randn("edy", y.shape);
  const Tensor dt = gather_backward(table.shape, ids, 0, dy);
  Tensor gdt(table.shape);
  for (std::int64_t r = 0; r < 5; ++r)
    for (std::int64_t j = 0; j < 3; ++j)
      gdt[r * 3 + j] = km::gather_grad(dy.data.data(), offsets.data(), rows_of.data(), 0, r, j, 8, 3);
  require_same(gdt, dt);

  // Cross-entropy of [4, 6] logits; label -100 ignored: mean over 3 rows.
  const Tensor logits = randn("cl", {4, 6}, 2.0f);
  const IndexTensor labels{{4}, {5, -100, 0, 3}};
  const double loss = cross_entropy(logits, labels, -100);
  double total = 0;
  for (std::int64_t i = 0; i < 4; ++i)
    if (labels[i] != -100) total += km::cross_entropy_row(logits.data.data() + i * 6, 6, labels[i]);
  CHECK(total / 3.0 == loss);
  const Tensor dl = cross_entropy_backward(logits, labels, -100, 0.5f);
  Tensor gdl(logits.shape);
  for (std::int64_t i = 0; i < 4; ++i)
    if (labels[i] != -100) km::cross_entropy_grad_row(logits.data.data() + i * 6, 6, labels[i], 0.5 / 3.0, gdl.data.data() + i * 6);
  require_same(gdl, dl);
}

TEST_CASE("attention rows forward and backward match runtime_cpu to 1e-5", "[kernel_math][attention]") {
  for (const bool causal : {false, true})
    for (const bool with_bias : {false, true}) {
      INFO("causal " << causal << " bias " << with_bias);
      // B*H = 2 x 2, Sq = 3 queries over Sk = 5 keys (causal: row i sees i + 3 keys), D = 4, Dv = 6.
      const Tensor q = randn("aq", {2, 2, 3, 4}), k = randn("ak", {2, 2, 5, 4}), v = randn("av", {2, 2, 5, 6});
      const Tensor bias = randn("ab", {3, 5}), dy = randn("ady", {2, 2, 3, 6});
      const AttentionAttrs at{0.5f, causal};
      const Tensor* bp = with_bias ? &bias : nullptr;
      const Tensor y = attention(q, k, v, bp, at);
      const auto g = attention_backward(q, k, v, bp, at, dy);
      const km::AttnDims a{3, 5, 4, 6, 0.5f, causal};
      Tensor gy(y.shape), gdq(q.shape), gdk(k.shape), gdv(v.shape);
      std::vector<float> acc(10);
      for (std::int64_t h = 0; h < 4; ++h) {
        const float* qh = q.data.data() + h * 12;
        const float* kh = k.data.data() + h * 20;
        const float* vh = v.data.data() + h * 30;
        const float* dyh = dy.data.data() + h * 18;
        const float* bb = with_bias ? bias.data.data() : nullptr;
        std::vector<km::AttnRow> rows;
        std::vector<double> delta;
        for (std::int64_t i = 0; i < 3; ++i) {
          km::attn_out_row(qh, kh, vh, bb, a, i, acc.data(), gy.data.data() + h * 18);
          rows.push_back(km::attn_row(qh, kh, bb, a, i));
          delta.push_back(km::attn_delta(qh, kh, vh, bb, dyh, a, rows.back(), i));
          km::attn_dq_row(qh, kh, vh, bb, dyh, a, rows.back(), delta.back(), i, acc.data(), gdq.data.data() + h * 12);
        }
        for (std::int64_t j = 0; j < 5; ++j)
          km::attn_dkv_row(qh, kh, vh, bb, dyh, a, rows.data(), delta.data(), j, acc.data(), gdk.data.data() + h * 20,
                           gdv.data.data() + h * 30);
      }
      require_close(gy, y, 1e-5);
      require_close(gdq, g.dq, 1e-5);
      require_close(gdk, g.dk, 1e-5);
      require_close(gdv, g.dv, 1e-5);
    }
}

TEST_CASE("optimizer elements equal runtime_cpu's sgd_step and adamw_step over three steps", "[kernel_math][optim]") {
  const Tensor w0 = randn("ow", {17}), g = randn("og", {17});
  {
    std::vector<float> w = w0.data, m(17, 0.0f), ref = w0.data;
    OptimState s;
    const SgdConfig c{0.1f, 0.9f, 0.01f};
    for (int step = 0; step < 3; ++step) {
      sgd_step(c, ref, g.span(), s);
      for (std::size_t i = 0; i < w.size(); ++i) km::sgd_element(w[i], g.data[i], m[i], step == 0, c.lr, c.momentum, c.weight_decay);
      REQUIRE(w == ref);
    }
  }
  {
    std::vector<float> w = w0.data, m(17, 0.0f), v(17, 0.0f), ref = w0.data;
    OptimState s;
    const AdamWConfig c{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f};
    for (int step = 1; step <= 3; ++step) {
      adamw_step(c, ref, g.span(), s);
      const double bc1 = 1.0 - std::pow(static_cast<double>(0.9f), step), bc2 = 1.0 - std::pow(static_cast<double>(0.999f), step);
      for (std::size_t i = 0; i < w.size(); ++i)
        km::adamw_element(w[i], g.data[i], m[i], v[i], c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, bc1, bc2);
      REQUIRE(w == ref);
    }
  }
}

namespace {

/// Column-major BLAS semantics (what cuBLAS computes), in double:
/// C(i,j) = alpha sum_l op(A)(i,l) op(B)(l,j) + beta C(i,j), X(i,j) = X[i + j ld].
void colmajor_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* A,
                   std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        const double a = ta ? A[l + i * lda] : A[i + l * lda];
        const double b = tb ? B[j + l * ldb] : B[l + j * ldb];
        s += a * b;
      }
      const double c = beta == 0.0f ? 0.0 : static_cast<double>(beta) * C[i + j * ldc];
      C[i + j * ldc] = static_cast<float>(alpha * s + c);
    }
}

/// The GPU's gemm() on the CPU: a planned call through col_major_call.
void emulated(const km::GemmCall& g, const float* A, const float* B, float* C) {
  const km::ColMajorCall k = km::col_major_call(g.ta, g.tb, g.M, g.N, g.K);
  colmajor_gemm(k.first_t, k.second_t, k.m, k.n, k.k, g.alpha, B + g.b_off, k.ld_first, A + g.a_off, k.ld_second,
                g.beta, C + g.c_off, k.ldc);
}

}  // namespace

TEST_CASE("the row-major to column-major cuBLAS mapping equals gemm_reference for every transpose", "[kernel_math][gemm]") {
  // A [3,5] ([5,3] when ta), B [5,4] ([4,5] when tb), C [3,4], alpha 0.5, beta 2.
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      INFO("ta " << ta << " tb " << tb);
      const Tensor A = randn("ga", ta ? Shape{5, 3} : Shape{3, 5}), B = randn("gb", tb ? Shape{4, 5} : Shape{5, 4});
      const Tensor C0 = randn("gc", {3, 4});
      Tensor want = C0, got = C0;
      gemm_reference(ta, tb, 3, 4, 5, 0.5f, A.data.data(), B.data.data(), 2.0f, want.data.data());
      emulated({ta, tb, 3, 4, 5, 0.5f, 2.0f, 0, 0, 0}, A.data.data(), B.data.data(), got.data.data());
      require_same(got, want);
    }
}

TEST_CASE("MatMul as planned GEMMs (folded, broadcast batches) equals runtime_cpu forward and backward",
          "[kernel_math][gemm]") {
  struct Case {
    Shape a, b;
    bool folded;
  };
  // [2,3,4,5] @ [5,6]: b has no batch, one GEMM of 24 rows. [2,1,4,5] @ [3,5,6]:
  // batch [2,3], a repeated over 3, b over 2. [4,5] @ [2,5,6]: a repeated over 2.
  for (const Case& c : {Case{{2, 3, 4, 5}, {5, 6}, true}, Case{{2, 1, 4, 5}, {3, 5, 6}, false},
                        Case{{4, 5}, {2, 5, 6}, false}}) {
    INFO("a " << shape_str(c.a) << " b " << shape_str(c.b));
    const Tensor a = randn("ma", c.a), b = randn("mb", c.b);
    const auto plan = km::matmul_gemms(c.a, c.b);
    REQUIRE(plan);
    CHECK((plan->forward.size() == 1) == c.folded);
    const Tensor y = matmul(a, b);
    REQUIRE(plan->out == y.shape);
    Tensor gy(y.shape);
    for (const auto& call : plan->forward) emulated(call, a.data.data(), b.data.data(), gy.data.data());
    require_close(gy, y, 1e-5);
    const Tensor dy = randn("mdy", y.shape);
    const auto g = matmul_backward(a, b, dy);
    Tensor da(a.shape), db(b.shape);
    for (const auto& call : plan->grad_a) emulated(call, dy.data.data(), b.data.data(), da.data.data());
    for (const auto& call : plan->grad_b) emulated(call, a.data.data(), dy.data.data(), db.data.data());
    require_close(da, g.da, 1e-5);
    require_close(db, g.db, 1e-5);
  }
  CHECK_FALSE(km::matmul_gemms({3, 4}, {5, 6}));         // inner dims differ
  CHECK_FALSE(km::matmul_gemms({2, 3, 4}, {3, 4, 5}));   // batch 2 vs 3
}

TEST_CASE("Gemm's gradient calls equal runtime_cpu's gemm_op_backward for every transpose", "[kernel_math][gemm]") {
  // M 3, N 4, K 5, alpha 0.75: a [3,5] or [5,3], b [5,4] or [4,5], dy [3,4].
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      INFO("trans_a " << ta << " trans_b " << tb);
      const Tensor a = randn("qa", ta ? Shape{5, 3} : Shape{3, 5}), b = randn("qb", tb ? Shape{4, 5} : Shape{5, 4});
      const Tensor dy = randn("qdy", {3, 4});
      GemmAttrs at;
      at.trans_a = ta, at.trans_b = tb, at.alpha = 0.75f;
      const auto want = gemm_op_backward(a, b, nullptr, at, dy);
      const auto ga = km::gemm_grad_a(ta, tb, 3, 4, 5, 0.75f), gb = km::gemm_grad_b(ta, tb, 3, 4, 5, 0.75f);
      Tensor da(a.shape), db(b.shape);
      emulated(ga.call, ga.first_is_dy ? dy.data.data() : b.data.data(), ga.first_is_dy ? b.data.data() : dy.data.data(),
               da.data.data());
      emulated(gb.call, gb.first_is_dy ? dy.data.data() : a.data.data(), gb.first_is_dy ? a.data.data() : dy.data.data(),
               db.data.data());
      require_close(da, want.da, 1e-5);
      require_close(db, want.db, 1e-5);
    }
}
