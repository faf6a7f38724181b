// Attention: one FlashAttention kernel vs the unfused ops, in time and in
// memory. a100-sxm4-80gb: bf16 peak 312 TFLOP/s; attention efficiency at
// s = 2048: 0.5994 (no mask), 0.4968 (causal); launch 4 us; achievable HBM
// 1.79432e12 B/s.

#include <catch2/catch.hpp>

#include "cost/cost_helpers.hpp"

using namespace cost_test;
using cost::AttentionMode;
using cost::OpScaling;
using cost::time_of;

namespace {

// q [b,a,s,d] x kT [b,a,d,s] -> scale -> [mask] -> Softmax -> x v -> ctx,
// b = 4, a = 16, s = 2048, d = 128 (the FlashAttention-2 benchmark's head dim).
// `mask`: "" none, "causal" [s, s], "padding" [b, 1, 1, s].
graph::OpGraph lone_attention(const std::string& mask = "") {
  const std::int64_t b = 4, a = 16, s = 2048, d = 128;
  Builder B;
  B.param("q", {b, a, s, d});
  B.param("kT", {b, a, d, s});
  B.param("v", {b, a, s, d});
  B.constant("scale", {});
  B.act("scores", {b, a, s, s});
  B.op("MatMul", {"q", "kT"}, {"scores"});
  B.act("scaled", {b, a, s, s});
  B.op("Mul", {"scores", "scale"}, {"scaled"});
  std::string sm = "scaled";
  if (!mask.empty()) {
    B.constant("mask", mask == "causal" ? Shape{s, s} : Shape{b, 1, 1, s});
    B.act("masked", {b, a, s, s});
    B.op("Add", {"scaled", "mask"}, {"masked"});
    sm = "masked";
  }
  B.act("probs", {b, a, s, s});
  B.op("Softmax", {sm}, {"probs"}, {{"axis", std::int64_t{-1}}});
  B.act("ctx", {b, a, s, d});
  B.op("MatMul", {"probs", "v"}, {"ctx"});
  return B.finish();
}

cost::OpTime total(const graph::OpGraph& g, const cost::ComputeContext& ctx) {
  cost::OpTime t;
  for (const auto& op : g.ops()) t += time_of(op, g, OpScaling::whole(), ctx);
  return t;
}

}  // namespace

TEST_CASE("flash attention is one kernel priced with the attention table", "[cost][attention]") {
  const auto g = lone_attention();
  REQUIRE(g.fused.size() == 1);
  CHECK_FALSE(cost::is_causal(g.fused[0], g));
  const auto ctx = context("a100-sxm4-80gb");
  const auto first = time_of(g.op(g.fused[0].ops.front()), g, OpScaling::whole(), ctx);
  // FA2 count: forward 4 b a s^2 d = 4 * 4 * 16 * 2048^2 * 128 = 137,438,953,472 FLOPs.
  // forward = F / (312e12 * 0.5994) + 4 us = 7.349174e-4 + 4e-6 = 7.389174e-4 s.
  // backward = 2.5 F / (312e12 * 0.5994) + 4 us = 1.841293e-3 s.
  // Memory term: q, k, v read, o written (4 x 33,554,432 B) + log-sum-exp
  // (b a s 4 B = 524,288): 134,742,016 B -> 9.62e-5 s: compute-bound.
  CHECK(first.forward_flops.value == 137438953472.0);
  CHECK(first.backward_flops.value == 2.5 * 137438953472.0);
  CHECK(first.forward.value == Approx(7.389174e-4).epsilon(1e-6));
  CHECK(first.backward.value == Approx(1.841293e-3).epsilon(1e-6));
  CHECK(first.forward_bound == cost::Bound::compute);
  CHECK(first.forward_kernels == 1);
  // The pattern's other ops are inside the kernel.
  for (std::size_t i = 1; i < g.fused[0].ops.size(); ++i)
    CHECK(time_of(g.op(g.fused[0].ops[i]), g, OpScaling::whole(), ctx).total().value == 0);
  // Splitting the heads over 4 devices divides the work; the efficiency
  // depends on the sequence only.
  CHECK(time_of(g.op(g.fused[0].ops.front()), g, OpScaling::split(4), ctx).forward.value ==
        Approx(7.349174e-4 / 4 + 4e-6).epsilon(1e-6));
}

TEST_CASE("a causal mask halves the FLOPs and uses the causal table", "[cost][attention]") {
  const auto causal = lone_attention("causal");
  REQUIRE(causal.fused.size() == 1);
  CHECK(cost::is_causal(causal.fused[0], causal));
  const auto ctx = context("a100-sxm4-80gb");
  // F/2 / (312e12 * 0.4968) + 4 us = 6.8719476736e10 / 1.550016e14 + 4e-6 = 4.473469e-4 s.
  CHECK(time_of(causal.op(causal.fused[0].ops.front()), causal, OpScaling::whole(), ctx).forward.value ==
        Approx(4.473469e-4).epsilon(1e-6));
  // A padding mask [b, 1, 1, s] varies over keys only: not causal.
  const auto padding = lone_attention("padding");
  REQUIRE(padding.fused.size() == 1);
  CHECK_FALSE(cost::is_causal(padding.fused[0], padding));
}

TEST_CASE("unfused attention prices each op and is slower at s = 2048", "[cost][attention]") {
  const auto g = lone_attention();
  const auto flash = context("a100-sxm4-80gb");
  const auto unfused = context("a100-sxm4-80gb", cost::PrecisionPolicy{}, AttentionMode::unfused);
  // The score GEMM on its own: m = b a s = 131072, n = s = 2048, k = d = 128.
  //   F = 2 * 131072 * 2048 * 128 = 68,719,476,736; e = table 0.812015 x skinny(128) 0.9 = 0.730814;
  //   compute = F / (312e12 * 0.730814) = 3.013828e-4 s.
  //   bytes: q, kT read (2 x 33,554,432) + scores written (4*16*2048^2*2 = 536,870,912) = 603,979,776;
  //   e_mem = 0.7777 + 0.02 * log10(6.0398) = 0.793320; memory = 4.243008e-4 s: memory-bound.
  //   forward = 4.243008e-4 + 4e-6 = 4.283008e-4 s.
  const auto score = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), unfused);
  CHECK(score.forward_bound == cost::Bound::memory);
  CHECK(score.forward.value == Approx(4.283008e-4).epsilon(1e-5));
  const auto f = total(g, flash), u = total(g, unfused);
  CHECK(u.forward_kernels == 4);  // QK^T, scale, softmax, PV
  CHECK(f.forward_kernels == 1);
  CHECK(u.forward.value > 2.0 * f.forward.value);
  CHECK(u.total().value > f.total().value);
}

TEST_CASE("flash keeps no s x s activations, unfused keeps 5as^2b", "[cost][attention][memory]") {
  GptShape m;  // b 2, s 128, h 256, a 4
  const auto g = build_gpt(m);
  cost::ActivationOptions o;
  o.precision = cost::PrecisionPolicy::uniform(core::Precision::bf16);
  o.attention = AttentionMode::flash;
  const auto flash = cost::saved_activations(g, o);
  o.attention = AttentionMode::unfused;
  const auto unfused = cost::saved_activations(g, o);
  // Per layer, sbh = 65536, as^2b = 131072, sb = 256:
  //   unfused: 34 sbh + 5 as^2b + 16 sb (LayerNorm statistics) = 2,228,224 + 655,360 + 4,096 = 2,887,680
  //   flash:   34 sbh + 4 abs (log-sum-exp, f32) + 16 sb = 2,228,224 + 4,096 + 4,096 = 2,236,416
  //   (flash keeps q, k, v and o: q, k, v are views of the QKV output (6 sbh),
  //   o is the storage the output projection reads through Transpose/Reshape (2 sbh).)
  for (int l = 0; l < 2; ++l) {
    CHECK(unfused.per_layer.at(l).value == 34 * m.sbh() + 5 * m.as2b() + 16 * m.sb());
    CHECK(flash.per_layer.at(l).value == 34 * m.sbh() + 4.0 * m.a * m.s * m.b + 16 * m.sb());
  }
  int lse = 0, probs = 0;
  for (const auto& item : flash.items) lse += item.kind == cost::SavedKind::logsumexp;
  for (const auto& item : unfused.items)
    probs += item.kind == cost::SavedKind::tensor && g.tensor(*item.tensor).shape == Shape{m.b, m.a, m.s, m.s};
  CHECK(lse == 2);
  CHECK(probs == 4);  // per layer: the softmax output and the dropout output
}

TEST_CASE("a fused com.microsoft Attention op: flash core plus its projection GEMM", "[cost][attention]") {
  const std::int64_t b = 2, s = 1024, h = 1024, a = 8;
  Builder B;
  B.param("x", {b, s, h});
  B.param("w", {h, 3 * h});
  B.act("y", {b, s, h});
  graph::Op op;
  op.name = "attn";
  op.type = "Attention";
  op.domain = "com.microsoft";
  op.inputs = {B.g.find_tensor("x"), B.g.find_tensor("w")};
  op.outputs = {B.g.find_tensor("y")};
  op.attrs.emplace("num_heads", a);
  B.g.add_op(std::move(op));
  const auto g = B.finish();
  REQUIRE(g.fused.size() == 1);
  const auto flash = context("a100-sxm4-80gb");
  const auto t = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), flash);
  // FA2 core 4 b a s^2 (h/a) = 4 * 2 * 8 * 1024^2 * 128 = 8,589,934,592
  // + projection 2 b s h 3h = 2 * 2 * 1024 * 1024 * 3072 = 12,884,901,888.
  CHECK(t.forward_flops.value == 8589934592.0 + 12884901888.0);
  CHECK(t.forward_kernels == 2);
  const auto unfused = context("a100-sxm4-80gb", cost::PrecisionPolicy{}, AttentionMode::unfused);
  const auto u = time_of(g.op(graph::OpId{0}), g, OpScaling::whole(), unfused);
  CHECK(u.forward_kernels == 4);
  CHECK(u.forward.value > 0);
}
