// Attention: a pattern as one FlashAttention-2 kernel, causal detection, and
// attention-class ops without a pattern.
//
// FLOPs as the FlashAttention-2 benchmark counts them (the profile's
// attention table was read off that benchmark, so the two must agree):
//   forward  2 b a sq sk (d + dv)      (= 4 b a s^2 d for self-attention, dv = d)
//            halved when causal
//   backward 2.5 x forward             (dQ, dK, dV, dP, and the scores again)
// Bytes (at the attention precision): forward reads q, k, v, writes o and the
// f32 log-sum-exp (b a sq 4 B); backward reads q, k, v, o, dO and the
// log-sum-exp, writes dq, dk, dv. No s x s tensor reaches memory.

#include <algorithm>
#include <cmath>

#include "internal.hpp"
#include "planner/cost/compute.hpp"
#include "planner/cost/fastest.hpp"

namespace planner::cost {
namespace {

using graph::OpClass;


struct Core {
  double b = 0, a = 0, sq = 0, sk = 0, d = 0, dv = 0;
  bool valid() const { return b > 0 && a > 0 && sq > 0 && sk > 0 && d > 0 && dv > 0; }
  /// The semantics rules' count (ops/attention.cpp): scores + softmax + context.
  double semantic_forward() const { return 2 * b * a * sq * sk * d + 5 * b * a * sq * sk + 2 * b * a * sq * sk * dv; }
  double fa_forward() const { return 2 * b * a * sq * sk * (d + dv); }
};

Core core_of(const graph::FusedPattern& p) {
  return Core{static_cast<double>(p.batch),   static_cast<double>(p.heads),    static_cast<double>(p.seq_q),
              static_cast<double>(p.seq_k),   static_cast<double>(p.head_dim), static_cast<double>(p.head_dim_v)};
}

bool attr_set(const graph::Op& op, std::string_view name) { return op.attr_int(name).value_or(0) != 0; }

// A mask operand that varies over both of the last two axes is causal
// (or another 2-D pattern, which FlashAttention prices like causal only when
// it is the causal one; we assume it is).
bool masks_both_axes(const graph::Tensor& t) {
  const auto r = t.shape.size();
  return r >= 2 && t.shape[r - 1] > 1 && t.shape[r - 2] > 1;
}

OpTime flash_kernel(const Core& c, bool causal, Bytes fwd_bytes, Bytes bwd_bytes, const OpScaling& s,
                    const ComputeContext& ctx) {
  const Flops fwd(c.fa_forward() * (causal ? 0.5 : 1.0) * s.flops);  // as flash_forward_flops (fastest.hpp)
  const Flops bwd = fwd * kFlashBackwardFactor;
  const FlopsPerSecond rate = attention_rate(ctx, static_cast<std::int64_t>(c.sk), causal);  // fastest.hpp
  OpTime t = detail::roofline(fwd / rate, detail::memory_time(fwd_bytes, ctx), 1, bwd / rate,
                              detail::memory_time(bwd_bytes, ctx), 1, ctx);
  t.forward_flops = fwd;
  t.backward_flops = bwd;
  return t;
}

Bytes at_attention(const graph::Tensor* t, const ComputeContext& ctx) {
  return t ? bytes_at(*t, ctx.precision().of(OpClass::attention)) : Bytes(0);
}

}  // namespace

bool is_causal(const graph::FusedPattern& p, const graph::OpGraph& g) {
  if (p.ops.empty()) return false;
  if (p.ops.size() == 1) {
    const auto& op = g.op(p.ops.front());
    return attr_set(op, "unidirectional") || attr_set(op, "is_causal");
  }
  // Walk the chain from the score MatMul to the Softmax; any other operand of
  // a masking op there is a mask.
  const auto& score = g.op(p.ops.front());
  if (score.outputs.empty() || !score.outputs[0]) return false;
  graph::TensorId chain = *score.outputs[0];
  for (std::size_t i = 1; i < p.ops.size(); ++i) {
    const auto& op = g.op(p.ops[i]);
    if (op.type == "Softmax") break;
    if (op.type == "Add" || op.type == "Sub" || op.type == "Where") {
      for (const auto& in : op.inputs)
        if (in && *in != chain && masks_both_axes(g.tensor(*in))) return true;
    }
    if (!op.outputs.empty() && op.outputs[0]) chain = *op.outputs[0];
  }
  return false;
}

OpTime flash_attention_time(const graph::FusedPattern& p, const graph::OpGraph& g, const OpScaling& s,
                            const ComputeContext& ctx) {
  Core c = core_of(p);
  if (!c.valid() || p.ops.empty()) {
    // Dimensions unknown: price the ops one by one.
    OpTime sum;
    for (auto id : p.ops) sum += detail::single_op_time(g.op(id), g, s, ctx);
    return sum;
  }
  if (s.seq_len) c.sq = static_cast<double>(*s.seq_len);
  const bool causal = is_causal(p, g);
  const Bytes lse(c.b * c.a * c.sq * 4.0);
  const auto& first = g.op(p.ops.front());
  if (p.ops.size() > 1) {
    const auto& ctx_mm = g.op(p.ops.back());
    const Bytes q = at_attention(g.input(first, 0), ctx), k = at_attention(g.input(first, 1), ctx);
    const Bytes v = at_attention(g.input(ctx_mm, 1), ctx), o = at_attention(g.output(ctx_mm, 0), ctx);
    const double local = c.sq / std::max(1.0, static_cast<double>(p.seq_q));  // context-parallel share of q, o
    const Bytes fwd = (q * local + k + v + o * local + lse) * s.bytes;
    const Bytes bwd = (q * local + k + v + o * local * 2.0 + lse + q * local + k + v) * s.bytes;
    return flash_kernel(c, causal, fwd, bwd, s, ctx);
  }
  // One fused op (com.microsoft Attention / MultiHeadAttention): its bytes
  // are flash-style already; a QKV projection inside it is a GEMM.
  const auto bytes = detail::scaled_bytes(first, g, ctx.precision(), s.bytes);
  OpTime t = flash_kernel(c, causal, bytes.forward, bytes.backward, s, ctx);
  const double proj_fwd = std::max(0.0, first.cost.forward_flops.value - c.semantic_forward());
  const double proj_bwd = std::max(0.0, first.cost.backward_flops.value - 2.0 * c.semantic_forward());
  if (proj_fwd > c.semantic_forward() * 0.01) {
    const core::Precision pm = ctx.precision().of(OpClass::matmul);
    const auto *x = g.input(first, 0), *w = g.input(first, 1);
    std::optional<GemmShape> shape;
    if (x && w && x->shape.size() == 3 && w->shape.size() == 2)
      shape = GemmShape{x->shape[0] * x->shape[1], w->shape[1], x->shape[2]};
    auto gemm = [&](double f) {
      const Flops fl(f * s.flops);
      return shape ? detail::gemm_time(fl, *shape, pm, ctx) : detail::gemm_time_unshaped(fl, pm, ctx);
    };
    const Seconds launch = ctx.device().launch_overhead;
    const int bwd_gemms = proj_bwd > 1.5 * proj_fwd ? 2 : (proj_bwd > 0 ? 1 : 0);
    t.forward += gemm(proj_fwd) + launch;
    t.forward_kernels += 1;
    if (bwd_gemms > 0) {
      t.backward += gemm(proj_bwd) + launch * bwd_gemms;
      t.backward_kernels += bwd_gemms;
    }
    t.forward_flops += Flops(proj_fwd * s.flops);
    t.backward_flops += Flops(proj_bwd * s.flops);
  }
  return t;
}

namespace detail {

OpTime attention_op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& s, const ComputeContext& ctx) {
  const core::Precision p = ctx.precision().of(op);
  const auto bytes = scaled_bytes(op, g, ctx.precision(), s.bytes);
  const graph::FusedPattern* pattern = nullptr;
  if (op.fused_group && static_cast<std::size_t>(*op.fused_group) < g.fused.size())
    pattern = &g.fused[static_cast<std::size_t>(*op.fused_group)];
  const Flops fwd = op.cost.forward_flops * s.flops, bwd = op.cost.backward_flops * s.flops;

  if (pattern && pattern->ops.size() == 1) {
    // Unfused execution of a fused op: QK^T, softmax, PV (+ projection) as
    // separate kernels; the s x s scores and probabilities go through memory.
    const Core c = core_of(*pattern);
    const double k = byte_scale(op, g, ctx.precision());
    const Bytes scores = pattern->score_bytes * k * s.bytes;
    const bool proj = fwd.value > c.semantic_forward() * s.flops * 1.01;
    const int fk = proj ? 4 : 3;
    std::optional<GemmShape> shape;
    if (c.valid())
      shape = GemmShape{std::max<std::int64_t>(1, std::llround(c.b * c.a * c.sq * s.flops)),
                        static_cast<std::int64_t>(c.sk), static_cast<std::int64_t>(c.d)};
    auto gemm = [&](Flops f) { return shape ? gemm_time(f, *shape, p, ctx) : gemm_time_unshaped(f, p, ctx); };
    // The softmax kernel's exps (special_time, zero on GPUs) add to the GEMMs'.
    const Seconds fs = special_time(op.cost.forward_special * s.flops, 0, ctx);
    const Seconds bs = special_time(op.cost.backward_special * s.flops, 0, ctx);
    return roofline(gemm(fwd) + fs, memory_time(bytes.forward + scores, ctx), fk, gemm(bwd) + bs,
                    memory_time(bytes.backward + scores, ctx), 2 * fk, ctx);
  }
  if (ctx.attention() == AttentionMode::flash) {
    // An attention op the analysis did not make a pattern (GroupQueryAttention,
    // ONNX Attention): the query's sequence axis, causal by attribute
    // (GroupQueryAttention is always causal).
    const auto* q = g.input(op, 0);
    const std::int64_t seq = q && q->shape.size() == 4 ? dim_of(q, 2) : dim_of(q, 1);
    const bool causal = op.type == "GroupQueryAttention" || attr_set(op, "is_causal") ||
                        attr_set(op, "unidirectional");
    const Flops f = fwd * (causal ? 0.5 : 1.0);
    const double e = ctx.device().attention_efficiency(seq, causal).value_or(1.0);
    const FlopsPerSecond rate = ctx.peak(p) * e;
    OpTime t = roofline(f / rate, memory_time(bytes.forward, ctx), 1, f * kFlashBackwardFactor / rate,
                        memory_time(bytes.backward, ctx), 1, ctx);
    t.forward_flops = f;
    t.backward_flops = f * kFlashBackwardFactor;
    return t;
  }
  return roofline(gemm_time_unshaped(fwd, p, ctx) + special_time(op.cost.forward_special * s.flops, 0, ctx),
                  memory_time(bytes.forward, ctx), 3,
                  gemm_time_unshaped(bwd, p, ctx) + special_time(op.cost.backward_special * s.flops, 0, ctx),
                  memory_time(bytes.backward, ctx), 6, ctx);
}

}  // namespace detail
}  // namespace planner::cost
