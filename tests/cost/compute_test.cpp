// Compute time per op on the bundled a100-sxm4-80gb profile, against hand
// arithmetic. Profile numbers used below (cost_profiles/a100-sxm4-80gb.json):
//   peak bf16 312 TFLOP/s, fp32 19.5; HBM 2039 GB/s x 0.88 = 1.79432e12 B/s;
//   launch 4 us; GEMM table rows (1e11, 0.8194) (1e12, 0.8289) (1e13, 0.8299);
//   elementwise rows (1e4, 0.002777) (1e6, 0.2067) (1e7, 0.6216)
//   (1e8, 0.7777) (1e9, 0.7977). Tables interpolate linearly in log(x).

#include <catch2/catch.hpp>

#include "cost/cost_helpers.hpp"
#include "planner/cost/optimizer_time.hpp"
#include "planner/graph/analysis.hpp"

using namespace cost_test;
using cost::Bound;
using cost::OpScaling;
using cost::PrecisionPolicy;
using cost::time_of;

namespace {

constexpr double kBw = 2039e9 * 0.88;  // 1.79432e12 B/s achievable
constexpr double kLaunch = 4e-6;

// Y = A x W, both 8192 x 8192 parameters (so backward computes dA and dW).
graph::OpGraph big_gemm() {
  Builder B;
  B.param("A", {8192, 8192});
  B.param("W", {8192, 8192});
  B.act("Y", {8192, 8192});
  B.op("MatMul", {"A", "W"}, {"Y"});
  return B.finish();
}

// Y = Relu(X), X an n-element parameter.
graph::OpGraph relu(std::int64_t n) {
  Builder B;
  B.param("X", {n});
  B.act("Y", {n});
  B.op("Relu", {"X"}, {"Y"});
  B.constant("shape", {1}, core::DType::i64);
  B.act("Z", {n});
  B.op("Reshape", {"Y", "shape"}, {"Z"});
  return B.finish();
}

}  // namespace

TEST_CASE("a big bf16 GEMM is compute-bound at the table's plateau", "[cost][compute]") {
  const auto g = big_gemm();
  const auto ctx = context("a100-sxm4-80gb");
  const auto t = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), ctx);
  // F = 2 * 8192^3 = 1,099,511,627,776 FLOPs.
  // e = 0.8289 + (0.8299 - 0.8289) * log10(F / 1e12) = 0.8289 + 0.001 * 0.04120 = 0.828941
  //     (skinny factor 1: min dim 8192 >= 256; aligned; no bf16 precision factor).
  // compute = F / (312e12 * 0.828941) = 4.251298e-3 s.
  // memory: A, W read + Y written, f32 in the graph, bf16 here: 3 * 8192^2 * 2 = 402,653,184 B;
  //   e_mem = 0.7777 + 0.02 * log10(4.0265) = 0.789799; t = 402653184 / (1.79432e12 * 0.789799) = 2.841e-4 s.
  // forward = max(compute, memory) + 4 us = 4.255298e-3 s.
  CHECK(t.forward.value == Approx(4.255298e-3).epsilon(1e-6));
  CHECK(t.forward_bound == Bound::compute);
  CHECK(t.forward_kernels == 1);
  // Backward: dA and dW, two GEMMs of the same size class: 2 * 4.251298e-3 + 2 * 4 us.
  CHECK(t.backward_kernels == 2);
  CHECK(t.backward.value == Approx(2 * 4.251298e-3 + 2 * kLaunch).epsilon(1e-6));
  CHECK(t.forward_flops.value == 1099511627776.0);
  CHECK(t.backward_flops.value == 2 * 1099511627776.0);
  CHECK(t.recompute.value == 0);
}

TEST_CASE("a tensor-parallel split looks the efficiency up at the local shape", "[cost][compute]") {
  const auto g = big_gemm();
  const auto ctx = context("a100-sxm4-80gb");
  // split(4): F/4 = 274,877,906,944 FLOPs at m = 2048:
  // e = 0.8194 + 0.0095 * log10(2.74878) = 0.823572; F/4 / (312e12 * 0.823572) + 4 us = 1.073754e-3 s.
  const auto t = time_of(g.op(graph::OpId{0}), g, OpScaling::split(4), ctx);
  CHECK(t.forward.value == Approx(1.073754e-3).epsilon(1e-6));
  // The same split given as the local GEMM shape (n/4, e.g. column-parallel) costs the same.
  OpScaling cols = OpScaling::split(4);
  cols.gemm = cost::GemmShape{8192, 2048, 8192};
  CHECK(time_of(g.op(graph::OpId{0}), g, cols, ctx).forward.value == Approx(1.073754e-3).epsilon(1e-6));
  // Of two local shapes with the same FLOPs (F/256 = 4.29e9), the skinny one
  // (min dim 32: skinny factor 0.375) is over twice as slow as the square one.
  OpScaling skinny = OpScaling::split(256), square = OpScaling::split(256);
  skinny.gemm = cost::GemmShape{8192, 32, 8192};
  square.gemm = cost::GemmShape{1024, 1024, 2048};
  CHECK(time_of(g.op(graph::OpId{0}), g, skinny, ctx).forward.value >
        2.0 * time_of(g.op(graph::OpId{0}), g, square, ctx).forward.value);
}

TEST_CASE("fp32 GEMMs run at the fp32 peak and move twice the bytes", "[cost][compute]") {
  const auto g = big_gemm();
  const auto ctx = context("a100-sxm4-80gb", PrecisionPolicy::uniform(core::Precision::fp32),
                           cost::AttentionMode::unfused);
  // F / (19.5e12 * 0.828941) + 4 us = 6.802476e-2 s.
  CHECK(time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), ctx).forward.value == Approx(6.802476e-2).epsilon(1e-6));
}

TEST_CASE("a small elementwise op is memory-bound", "[cost][compute]") {
  const auto g = relu(1 << 20);
  const auto ctx = context("a100-sxm4-80gb");
  const auto t = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), ctx);
  // bytes: read X + write Y, 2^20 elements each, bf16: 4,194,304 B.
  // e_mem = 0.2067 + (0.6216 - 0.2067) * log10(4.194304) = 0.2067 + 0.4149 * 0.622660 = 0.465042.
  // memory = 4194304 / (1.79432e12 * 0.465042) = 5.026529e-6 s; arithmetic 2^20 / 19.5e12 = 5.4e-8 s.
  // forward = 5.026529e-6 + 4e-6 = 9.026529e-6 s.
  CHECK(t.forward_bound == Bound::memory);
  CHECK(t.forward.value == Approx(9.026529e-6).epsilon(1e-5));
  CHECK(t.backward_kernels == 1);
  CHECK(t.backward_bound == Bound::memory);
}

TEST_CASE("every launched kernel costs at least the launch overhead and the table's first row", "[cost][compute]") {
  const auto g = relu(8);
  const auto ctx = context("a100-sxm4-80gb");
  const auto t = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), ctx);
  // 32 bytes is below the first row (1e4 B): the kernel costs the first
  // row's time, 1e4 / (1.79432e12 * 0.002777) = 2.006893e-6 s (the table's
  // 2 us fixed cost), plus the 4 us launch: 6.006893e-6 s.
  CHECK(t.forward.value == Approx(6.006893e-6).epsilon(1e-5));
  CHECK(t.forward.value > kLaunch);
  // A view costs nothing, not even a launch.
  const auto view = time_of(g.op(graph::OpId{1}), g, OpScaling::whole(), ctx);
  CHECK(view.forward.value == 0);
  CHECK(view.backward.value == 0);
  CHECK(view.forward_kernels == 0);
}

TEST_CASE("ops run batched as one kernel share that kernel's time", "[cost][compute][moe]") {
  const auto ctx = context("a100-sxm4-80gb");
  // Four 32-byte Relus in one kernel: 128 B is still below the first row,
  // so the kernel costs what one Relu's does (6.006893e-6 s, above) and
  // each op a quarter of it, 1.501723e-6 s; FLOPs are each op's own.
  const auto r = relu(8);
  OpScaling four;
  four.batch = 4;
  const auto one = time_of(r.op(graph::OpId{0}), r, OpScaling::whole(), ctx);
  const auto shared = time_of(r.op(graph::OpId{0}), r, four, ctx);
  CHECK(shared.forward.value == Approx(6.006893e-6 / 4).epsilon(1e-5));
  CHECK(shared.forward_flops.value == one.forward_flops.value);
  // A GEMM share: batch 4 of the 1/256 split (m = 32) is a quarter of the
  // 1/64 split (m = 128, F/64 at its efficiency), the kernel's m x 4.
  const auto g = big_gemm();
  OpScaling small = OpScaling::split(256);
  small.batch = 4;
  const auto quarter = time_of(g.op(graph::OpId{0}), g, OpScaling::split(64), ctx);
  const auto t = time_of(g.op(graph::OpId{0}), g, small, ctx);
  CHECK(t.forward.value == Approx(quarter.forward.value / 4).epsilon(1e-12));
  CHECK(t.backward.value == Approx(quarter.backward.value / 4).epsilon(1e-12));
  // Cheaper than four kernels of their own (a fuller GEMM, one launch).
  CHECK(t.forward.value < time_of(g.op(graph::OpId{0}), g, OpScaling::split(256), ctx).forward.value);
}

TEST_CASE("integer shape arithmetic runs on the host", "[cost][compute]") {
  Builder B;
  B.act("x", {4, 8});
  B.act("shape", {2}, core::DType::i64);
  B.op("Shape", {"x"}, {"shape"});
  B.constant("idx", {}, core::DType::i64);
  B.act("dim", {}, core::DType::i64);
  B.op("Gather", {"shape", "idx"}, {"dim"});
  const auto g = B.finish();
  const auto ctx = context("a100-sxm4-80gb");
  for (const auto& op : g.ops()) CHECK(time_of(op, g, OpScaling::whole(), ctx).total().value == 0);
}

TEST_CASE("the embedding kept in fp32 moves 4-byte rows", "[cost][compute][precision]") {
  GptShape m;
  const auto g = build_gpt(m);
  const auto& gather = g.op(*g.find_op("Gather:x0"));
  REQUIRE(gather.op_class == graph::OpClass::embedding);
  const auto mixed = context("a100-sxm4-80gb");  // default: embedding and loss fp32
  const auto bf16 = context("a100-sxm4-80gb", PrecisionPolicy::uniform(core::Precision::bf16));
  CHECK(mixed.precision().of(gather) == core::Precision::fp32);
  CHECK(bf16.precision().of(gather) == core::Precision::bf16);
  // The gathered rows (b s h floats) are the traffic: fp32 reads and writes twice the bf16 bytes.
  const auto sb = cost::op_bytes(gather, g, mixed.precision()).forward;
  const auto hb = cost::op_bytes(gather, g, bf16.precision()).forward;
  // Forward: indices (b s = 256 int64 = 2048 B, unscaled) + rows read + rows
  // written (b s h = 65536 elements each): fp32 2048 + 2 * 262144, bf16 2048 + 2 * 131072.
  CHECK(sb.value == 2048 + 2 * 65536 * 4.0);
  CHECK(hb.value == 2048 + 2 * 65536 * 2.0);
}

TEST_CASE("contexts check the device supports the policy", "[cost][compute]") {
  const auto v100 = profile("v100-sxm2-16gb");
  auto bf16 = cost::ComputeContext::create(v100.device, PrecisionPolicy{}, cost::AttentionMode::unfused);
  REQUIRE_FALSE(bf16.ok());
  CHECK_THAT(bf16.error().message, Catch::Contains("bf16"));
  auto flash = cost::ComputeContext::create(v100.device, PrecisionPolicy::mixed(core::Precision::fp16));
  REQUIRE_FALSE(flash.ok());
  CHECK_THAT(flash.error().message, Catch::Contains("no fused attention kernel"));
  CHECK(cost::ComputeContext::create(v100.device, PrecisionPolicy::mixed(core::Precision::fp16),
                                     cost::AttentionMode::unfused)
            .ok());
  const auto a100 = profile("a100-sxm4-80gb");
  auto fp8 = cost::ComputeContext::create(a100.device, PrecisionPolicy::mixed(core::Precision::fp8));
  REQUIRE_FALSE(fp8.ok());
  CHECK_THAT(fp8.error().message, Catch::Contains("fp8"));
  auto fp32_flash = cost::ComputeContext::create(a100.device, PrecisionPolicy::uniform(core::Precision::fp32));
  REQUIRE_FALSE(fp32_flash.ok());
  CHECK_THAT(fp32_flash.error().message, Catch::Contains("flash attention needs"));
}

TEST_CASE("precision policies: defaults, overrides, byte sizes", "[cost][precision]") {
  const PrecisionPolicy p;
  CHECK(p.default_precision() == core::Precision::bf16);
  CHECK(p.of(graph::OpClass::embedding) == core::Precision::fp32);
  CHECK(p.of(graph::OpClass::loss) == core::Precision::fp32);
  CHECK(p.of(graph::OpClass::matmul) == core::Precision::bf16);
  CHECK(p.keeps_fp32(graph::OpClass::embedding));
  CHECK_FALSE(p.keeps_fp32(graph::OpClass::matmul));
  PrecisionPolicy q = PrecisionPolicy::mixed(core::Precision::fp16);
  q.set(graph::OpClass::matmul, core::Precision::fp8).clear(graph::OpClass::loss);
  CHECK(q.of(graph::OpClass::matmul) == core::Precision::fp8);
  CHECK(q.of(graph::OpClass::loss) == core::Precision::fp16);
  CHECK(q.used().size() == 3);  // fp16, fp32 (embedding), fp8
  CHECK(PrecisionPolicy::uniform(core::Precision::bf16).used().size() == 1);
  CHECK(p != q);
  graph::Tensor t;
  t.shape = {10, 10};
  CHECK(cost::bytes_at(t, core::Precision::bf16).value == 200);
  CHECK(cost::bytes_at(t, core::Precision::tf32).value == 400);
  CHECK(cost::bytes_at(t, core::Precision::fp8).value == 100);
  t.dtype = core::DType::i64;
  CHECK(cost::bytes_at(t, core::Precision::bf16).value == 800);
}

TEST_CASE("fp8 in layers only: LM head and attention core in bf16, the layers' linears in fp8", "[cost][precision]") {
  GptShape m;
  m.layers = 3;
  auto g = build_gpt(m);
  graph::find_repeated_blocks(g);
  REQUIRE_FALSE(g.blocks.empty());
  PrecisionPolicy te = PrecisionPolicy::mixed(core::Precision::bf16);
  te.set(graph::OpClass::matmul, core::Precision::fp8).fp8_in_layers_only(true);
  PrecisionPolicy all = PrecisionPolicy::mixed(core::Precision::bf16);
  all.set(graph::OpClass::matmul, core::Precision::fp8);
  const auto bf16 = context("h100-sxm5-80gb", PrecisionPolicy::mixed(core::Precision::bf16));
  const auto fp8_te = context("h100-sxm5-80gb", te), fp8_all = context("h100-sxm5-80gb", all);
  int head = 0, core_bmm = 0, linears = 0;
  for (const auto& op : g.ops()) {
    if (op.op_class != graph::OpClass::matmul) continue;
    const auto t_te = cost::time_of(op, g, {}, fp8_te), t_all = cost::time_of(op, g, {}, fp8_all);
    const auto t_bf16 = cost::time_of(op, g, {}, bf16);
    INFO(op.name);
    if (op.outside_layers) {
      // The LM head (lnf x wlm): bf16 under the recipe, priced as under bf16.
      ++head;
      CHECK(te.of(op) == core::Precision::bf16);
      CHECK(t_te.forward.value == t_bf16.forward.value);
      CHECK(t_te.backward.value == t_bf16.backward.value);
      CHECK(t_all.forward.value < t_te.forward.value);
    } else if (op.fused_group) {
      // The attention core's score and context GEMMs: bf16 (TE's
      // DotProductAttention without fp8 attention).
      ++core_bmm;
      CHECK(te.of(op) == core::Precision::bf16);
      CHECK(t_te.forward.value == t_bf16.forward.value);
    } else {
      // A layer's linear: fp8, as under the all-fp8 policy.
      ++linears;
      CHECK(te.of(op) == core::Precision::fp8);
      CHECK(t_te.forward.value == t_all.forward.value);
      CHECK(t_te.backward.value == t_all.backward.value);
    }
  }
  CHECK(head == 1);
  CHECK(core_bmm == 3 * 2);   // scores, context per layer
  CHECK(linears == 3 * 4);    // qkv, proj, fc1, fc2 per layer
}

namespace {

// Y = Conv(X, W), no bias, strides `stride`; X an activation (it has a
// gradient). Shapes are given (the rule reads Y's).
graph::OpGraph conv(Shape x, Shape w, Shape y, std::int64_t stride = 1) {
  Builder B;
  B.act("X", std::move(x));
  B.param("W", std::move(w));
  B.act("Y", std::move(y));
  B.op("Conv", {"X", "W"}, {"Y"}, {{"strides", std::vector<std::int64_t>{stride, stride}}});
  return B.finish();
}

cost::ComputeContext with_layout(cost::ComputeContext c, bool channels_last) {
  c.set_channels_last(channels_last);
  return c;
}

}  // namespace

TEST_CASE("tensor-core convolutions on NCHW activations pay cuDNN's layout transposes", "[cost][compute][conv]") {
  // 1x1 conv, X and Y [32, 64, 56, 56]: 6,422,528 elements, 12,845,056 B in bf16.
  const auto g = conv({32, 64, 56, 56}, {64, 64, 1, 1}, {32, 64, 56, 56});
  const auto& op = g.op(graph::OpId{0});
  const auto nchw = time_of(op, g, OpScaling::whole(), with_layout(context("a100-sxm4-80gb"), false));
  const auto nhwc = time_of(op, g, OpScaling::whole(), with_layout(context("a100-sxm4-80gb"), true));
  // One transpose reads and writes its tensor: 2 x 12,845,056 = 25,690,112 B;
  // e_mem = 0.6216 + (0.7777 - 0.6216) * log10(2.5690112) = 0.685564;
  // 25690112 / (1.79432e12 * 0.685564) = 2.088420e-5 s, + 4 us launch = 2.488420e-5 s.
  // Forward: X in, Y out = 2 transposes = 4.976840e-5 s.
  CHECK(nchw.forward.value - nhwc.forward.value == Approx(4.976840e-5).epsilon(1e-5));
  CHECK(nchw.forward_kernels == nhwc.forward_kernels + 2);
  // Backward: dY in, X in (weight gradient), dX out = 3 transposes = 7.465259e-5 s.
  CHECK(nchw.backward.value - nhwc.backward.value == Approx(7.465259e-5).epsilon(1e-5));
  CHECK(nchw.backward_kernels == nhwc.backward_kernels + 3);
  // fp32 convolutions run on CUDA cores in NCHW: no transposes.
  const auto fp32 = context("a100-sxm4-80gb", PrecisionPolicy::uniform(core::Precision::fp32),
                            cost::AttentionMode::unfused);
  CHECK(time_of(op, g, OpScaling::whole(), with_layout(fp32, false)).forward.value ==
        time_of(op, g, OpScaling::whole(), with_layout(fp32, true)).forward.value);
}

TEST_CASE("fp32 3x3 stride-1 convolutions run as Winograd F(2x2,3x3)", "[cost][compute][conv]") {
  // X, Y [32, 256, 28, 28], W [256, 256, 3, 3]: implicit GEMM m = 32*28*28 =
  // 25088, n = 256, k = 256*9 = 2304; F = 2 m n k = 29,595,009,024.
  // GEMM efficiency at F: 0.7349 + (0.7957 - 0.7349) * ln(2.9595)/ln(3) = 0.794948
  // (min dim 256: skinny 1; multiples of 4 fp32 elements: aligned).
  // Winograd: F / 2.25 / (19.5e12 * 0.794948) = 8.485213e-4 s (memory: X, W, Y
  // in fp32 = 53,739,520 B, ~4e-5 s: compute-bound), + 4 us launch.
  const auto fp32 = context("a100-sxm4-80gb", PrecisionPolicy::uniform(core::Precision::fp32),
                            cost::AttentionMode::unfused);
  const auto s1 = conv({32, 256, 28, 28}, {256, 256, 3, 3}, {32, 256, 28, 28}, 1);
  const auto t1 = time_of(s1.op(graph::OpId{0}), s1, OpScaling::whole(), fp32);
  CHECK(t1.forward.value == Approx(8.485213e-4 + kLaunch).epsilon(1e-5));
  CHECK(t1.forward_bound == Bound::compute);
  // Strided: implicit GEMM at the full F (same shape here): 1.909173e-3 s + 4 us.
  const auto s2 = conv({32, 256, 28, 28}, {256, 256, 3, 3}, {32, 256, 28, 28}, 2);
  CHECK(time_of(s2.op(graph::OpId{0}), s2, OpScaling::whole(), fp32).forward.value ==
        Approx(1.909173e-3 + kLaunch).epsilon(1e-5));
  // Tensor-core precisions never use it: the bf16 time of the stride-1 conv
  // equals the strided one's.
  const auto bf16 = with_layout(context("a100-sxm4-80gb"), true);
  CHECK(time_of(s1.op(graph::OpId{0}), s1, OpScaling::whole(), bf16).forward.value ==
        time_of(s2.op(graph::OpId{0}), s2, OpScaling::whole(), bf16).forward.value);
}

TEST_CASE("special functions are priced where the profile gives a rate", "[cost][compute]") {
  // Y = Erf(X), X an n = 2^20-element fp32 parameter: 1 FLOP and 1 erf per
  // element forward; 2 FLOPs and 1 exp (erf's derivative) backward.
  constexpr std::int64_t n = 1 << 20;
  Builder B;
  B.param("X", {n});
  B.act("Y", {n});
  B.op("Erf", {"X"}, {"Y"});
  const auto g = B.finish();
  auto device = profile("a100-sxm4-80gb").device;
  const auto fp32 = PrecisionPolicy::uniform(core::Precision::fp32);
  auto plain = cost::ComputeContext::create(device, fp32, cost::AttentionMode::unfused);
  REQUIRE(plain.ok());
  // Without a rate (every GPU profile): memory-bound. Forward moves
  // 2 x 4 MiB = 8388608 B; e = 0.2067 + 0.4149 log10(8.388608) = 0.589940;
  // 8388608 / (1.79432e12 x 0.589940) = 7.924702e-6 s, + 4 us launch.
  const auto t0 = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *plain);
  CHECK(t0.forward_bound == Bound::memory);
  CHECK(t0.forward.value == Approx(7.924702e-6 + kLaunch).epsilon(1e-5));
  // 1e9 evaluations per second: forward 2^20 / 19.5e12 + 2^20 / 1e9 =
  // 5.377313e-8 + 1.048576e-3 = 1.048630e-3 s, compute-bound, + 4 us.
  // The rate is planner's executor's (ComputeContext::executor_kernels):
  // another framework's kernels still stream.
  device.special_function_rate_per_s = 1e9;
  auto slow = cost::ComputeContext::create(device, fp32, cost::AttentionMode::unfused);
  REQUIRE(slow.ok());
  CHECK(time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *slow).forward.value == t0.forward.value);
  slow->set_executor_kernels(true);
  const auto t1 = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *slow);
  CHECK(t1.forward_bound == Bound::compute);
  CHECK(t1.forward.value == Approx(1.0526298e-3).epsilon(1e-6));
  // Backward: 2 x 2^20 / 19.5e12 + 2^20 / 1e9 = 1.075463e-7 + 1.048576e-3,
  // + 4 us.
  CHECK(t1.backward.value == Approx(1.0486835e-3 + kLaunch).epsilon(1e-6));
  // Half the op on a device (tp = 2): half the evaluations.
  OpScaling half = OpScaling::whole();
  half.flops = 0.5;
  half.bytes = 0.5;
  const auto t2 = time_of(g.op(graph::OpId{0}), g, half, *slow);
  CHECK(t2.forward.value == Approx(0.5 * 1.048630e-3 + kLaunch).epsilon(1e-5));
  // An erf rate of its own (2.5e8/s, libm's erf slower than its exp): the
  // forward's 2^20 erfs take 4.194304e-3 s, + 5.377313e-8 s of arithmetic;
  // the backward's exps stay at 1e9/s.
  REQUIRE(g.op(graph::OpId{0}).cost.forward_erf == static_cast<double>(n));
  REQUIRE(g.op(graph::OpId{0}).cost.backward_erf == 0);
  device.erf_rate_per_s = 2.5e8;
  auto erf_slow = cost::ComputeContext::create(device, fp32, cost::AttentionMode::unfused);
  REQUIRE(erf_slow.ok());
  erf_slow->set_executor_kernels(true);
  const auto t3 = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *erf_slow);
  CHECK(t3.forward.value == Approx(4.194304e-3 + 5.377313e-8 + kLaunch).epsilon(1e-6));
  CHECK(t3.backward.value == t1.backward.value);
}

TEST_CASE("an op type's, else its class's, own table replaces the elementwise table for its ops", "[cost][compute]") {
  // Y = Relu(X), X an n = 2^20-element fp32 parameter: forward moves
  // 2 x 4 MiB = 8388608 B; at the A100's elementwise table 7.924702e-6 s
  // (the Erf test above), + 4 us launch.
  constexpr std::int64_t n = 1 << 20;
  Builder B;
  B.param("X", {n});
  B.act("Y", {n});
  B.op("Relu", {"X"}, {"Y"});
  const auto g = B.finish();
  REQUIRE(g.op(graph::OpId{0}).op_class == graph::OpClass::elementwise);
  auto device = profile("a100-sxm4-80gb").device;
  const auto fp32 = PrecisionPolicy::uniform(core::Precision::fp32);
  // The tables are planner's executor's kernels (executor_kernels): another
  // framework's streams at the elementwise table whatever the tables say.
  bool executor = true;
  const auto at = [&](const cluster::DeviceProfile& d) {
    auto ctx = cost::ComputeContext::create(d, fp32, cost::AttentionMode::unfused);
    REQUIRE(ctx.ok());
    ctx->set_executor_kernels(executor);
    return time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *ctx);
  };
  const auto plain = at(device);
  CHECK(plain.forward.value == Approx(7.924702e-6 + kLaunch).epsilon(1e-5));
  // Another class's table leaves it alone.
  cluster::EfficiencyTable t;
  t.x_name = "bytes";
  t.rows = {{1e6, 0.1}};
  device.memory_bound_class_efficiency["normalization"] = t;
  CHECK(at(device).forward.value == plain.forward.value);
  // Its own: 0.1 at 1 MB, 0.3 at 100 MB. Forward, 8388608 B: interpolated
  // in log(bytes) (as every table): 0.1 + 0.2 x log10(8.388608) / 2 =
  // 0.1 + 0.2 x 0.461845 = 0.192369; 8388608 / (1.79432e12 x 0.192369) =
  // 2.430272e-5 s, + 4 us launch.
  t.rows = {{1e6, 0.1}, {1e8, 0.3}};
  device.memory_bound_class_efficiency["elementwise"] = t;
  CHECK(at(device).forward.value == Approx(2.430272e-5 + kLaunch).epsilon(1e-5));
  // Another op type's table leaves it alone; its own op type's comes before
  // its class's. Its one row, 0.2 at 1e7 B, lies above the op's 8388608 B:
  // the op streams at the first row's rate, with no floor at the row's
  // bytes (a measured kernel's table has its per-call cost in its rate):
  // 8388608 / (1.79432e12 x 0.2) = 2.337544e-5 s, not 1e7 / (...) =
  // 2.786571e-5 s.
  cluster::EfficiencyTable own;
  own.x_name = "bytes";
  own.rows = {{1e7, 0.2}};
  device.memory_bound_op_efficiency["Sigmoid"] = own;
  CHECK(at(device).forward.value == Approx(2.430272e-5 + kLaunch).epsilon(1e-5));
  device.memory_bound_op_efficiency["Relu"] = own;
  CHECK(at(device).forward.value == Approx(2.337544e-5 + kLaunch).epsilon(1e-5));
  executor = false;
  CHECK(at(device).forward.value == plain.forward.value);
}

TEST_CASE("a view is free, unless the runtime copies views", "[cost][compute]") {
  // Y = Identity(X), X an n = 2^20-element fp32 parameter. Copied (planner's
  // executor): forward reads and writes 4 MiB, 8388608 B, at the A100's
  // elementwise table 7.924702e-6 s (the Relu test above) + 4 us launch;
  // backward copies the gradient, the same.
  constexpr std::int64_t n = 1 << 20;
  Builder B;
  B.param("X", {n});
  B.act("Y", {n});
  B.op("Identity", {"X"}, {"Y"});
  const auto g = B.finish();
  auto device = profile("a100-sxm4-80gb").device;
  auto ctx = cost::ComputeContext::create(device, PrecisionPolicy::uniform(core::Precision::fp32),
                                          cost::AttentionMode::unfused);
  REQUIRE(ctx.ok());
  const auto free = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *ctx);
  CHECK(free.forward.value == 0);
  CHECK(free.backward.value == 0);
  ctx->set_executor_kernels(true);
  const auto copied = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *ctx);
  CHECK(copied.forward.value == Approx(7.924702e-6 + kLaunch).epsilon(1e-5));
  CHECK(copied.backward.value == Approx(7.924702e-6 + kLaunch).epsilon(1e-5));
  // Split in two: each device copies its half, 4194304 B, at the table there.
  const auto half = time_of(g.op(graph::OpId{0}), g, OpScaling::split(2), *ctx);
  CHECK(half.forward.value < copied.forward.value);
  CHECK(half.forward.value > kLaunch);
}

TEST_CASE("a tied head's transposed weight is the GEMM's operand flag, not a copy", "[cost][compute]") {
  // logits = X E^T with E a 4096 x 1024 parameter (a tied token embedding):
  // libraries hand cuBLAS the transpose flag and write dE transposed by
  // swapping the weight-gradient GEMM's operands, so the Transpose costs
  // nothing either way. The same Transpose feeding an Add is a real copy
  // (a launch at least, each way); so is it under planner's executor, whose
  // kernels run every op.
  // E^T read by a MatMul (Y = X E^T) or by an Add (Z = E^T + E^T).
  auto transposed_into = [](const std::string& user) {
    Builder B;
    B.param("E", {4096, 1024});
    B.act("Et", {1024, 4096});
    B.op("Transpose", {"E"}, {"Et"}, {{"perm", std::vector<std::int64_t>{1, 0}}});
    if (user == "MatMul") {
      B.act("X", {2048, 1024});
      B.act("Y", {2048, 4096});
      B.op("MatMul", {"X", "Et"}, {"Y"});
    } else {
      B.act("Z", {1024, 4096});
      B.op("Add", {"Et", "Et"}, {"Z"});
    }
    return B.finish();
  };
  auto ctx = cost::ComputeContext::create(profile("a100-sxm4-80gb").device, PrecisionPolicy{},
                                          cost::AttentionMode::flash);
  REQUIRE(ctx.ok());
  const auto g = transposed_into("MatMul");
  const auto folded = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *ctx);
  CHECK(folded.forward.value == 0);
  CHECK(folded.backward.value == 0);
  const auto h = transposed_into("Add");
  const auto copied = time_of(h.op(graph::OpId{0}), h, OpScaling::whole(), *ctx);
  CHECK(copied.forward.value > kLaunch);
  CHECK(copied.backward.value > kLaunch);
  ctx->set_executor_kernels(true);
  CHECK(time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *ctx).forward.value > kLaunch);
}

TEST_CASE("the Adam step runs at the slower of streaming and the update rate", "[cost][compute]") {
  // 1e6 parameters x 16 bytes at the streaming bandwidth 1.79432e12 x 0.7977
  // (the elementwise table at 1 GB) = 1.431329e12 B/s: 1.117842e-5 s.
  auto device = profile("a100-sxm4-80gb").device;
  auto plain = cost::ComputeContext::create(device, PrecisionPolicy{});
  REQUIRE(plain.ok());
  CHECK(cost::optimizer_step_time(*plain, cost::Optimizer::adam, 1e6, 16).value == Approx(1.117842e-5).epsilon(1e-5));
  // A CPU-like Adam update of 1e8 parameters per second: 1e6 / 1e8 = 1e-2 s;
  // SGD is not an Adam update and still streams.
  // The rate is planner's executor's Adam (executor_kernels): another
  // framework's fused Adam still streams.
  device.adam_update_rate_params_per_s = 1e8;
  auto slow = cost::ComputeContext::create(device, PrecisionPolicy{});
  REQUIRE(slow.ok());
  CHECK(cost::optimizer_step_time(*slow, cost::Optimizer::adam, 1e6, 16).value == Approx(1.117842e-5).epsilon(1e-5));
  slow->set_executor_kernels(true);
  CHECK(cost::optimizer_step_time(*slow, cost::Optimizer::adam, 1e6, 16).value == Approx(1e-2));
  CHECK(cost::optimizer_step_time(*slow, cost::Optimizer::sgd, 1e6, 16).value == Approx(1.117842e-5).epsilon(1e-5));
}

TEST_CASE("an op fused into its neighbour still pays its special functions", "[cost][compute]") {
  // X (parameter) -> Erf -> T -> Relu -> Y, n = 2^20 fp32, with elementwise
  // fusion: T stays in registers, so Erf launches nothing of its own.
  constexpr std::int64_t n = 1 << 20;
  Builder B;
  B.param("X", {n});
  B.act("T", {n});
  B.act("Y", {n});
  B.op("Erf", {"X"}, {"T"});
  B.op("Relu", {"T"}, {"Y"});
  const auto g = B.finish();
  auto device = profile("a100-sxm4-80gb").device;
  const auto fp32 = PrecisionPolicy::uniform(core::Precision::fp32);
  auto fused = cost::ComputeContext::create(device, fp32, cost::AttentionMode::unfused, cost::RecomputePolicy::none, true);
  REQUIRE(fused.ok());
  const auto t0 = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *fused);
  CHECK(t0.forward.value == 0);
  CHECK(t0.forward_kernels == 0);
  // With a rate of 1e9 evaluations per second the fused kernel evaluates
  // the 2^20 erfs: 2^20 / 19.5e12 + 2^20 / 1e9 = 1.048630e-3 s (above the
  // remaining 4 MiB of traffic), + 4 us: 1.0526298e-3 s.
  device.special_function_rate_per_s = 1e9;
  auto slow = cost::ComputeContext::create(device, fp32, cost::AttentionMode::unfused, cost::RecomputePolicy::none, true);
  REQUIRE(slow.ok());
  slow->set_executor_kernels(true);
  const auto t1 = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), *slow);
  CHECK(t1.forward.value == Approx(1.0526298e-3).epsilon(1e-6));
  CHECK(t1.forward_bound == Bound::compute);
}
