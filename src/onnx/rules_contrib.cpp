// Shape rules: com.microsoft contrib ops emitted by ONNX Runtime's transformer
// optimizer and training graph builder, and PyTorch ATen fallbacks.
#include <algorithm>

#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

/// Output k like input i, for each (k, i) pair listed.
template <std::size_t N>
RuleStatus like_inputs(RuleCtx& c, const std::size_t (&pairs)[N][2]) {
  bool any = false;
  for (const auto& p : pairs)
    if (c.has(p[1])) {
      c.same_as(p[0], p[1]);
      any = true;
    }
  return any ? RuleStatus::ok : RuleStatus::unknown;
}

/// Attention: input [B,S,Hin], weights [Hin, Hq+Hk+Hv], past [2,B,N,P,H/N];
/// output [B,S,Hv], present [2,B,N,P+S,Hk/N].
RuleStatus rule_attention(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  if (x.size() != 3 || w.size() != 2) return c.fail("input {} / weights {} not [B,S,H] / [H,3H]", shape_str(x), shape_str(w));
  if (w[0] != x[2]) return c.fail("weights {} do not match hidden {}", shape_str(w), x[2]);
  const I64 heads = c.attr_i("num_heads", 0);
  if (heads <= 0) return c.fail("num_heads missing");
  I64 hk, hv;
  if (auto q = c.attr_ints("qkv_hidden_sizes"); q && q->size() == 3) {
    hk = (*q)[1];
    hv = (*q)[2];
  } else {
    if (w[1] % 3 != 0) return c.fail("weights {} not divisible into q, k, v", shape_str(w));
    hk = hv = w[1] / 3;
  }
  c.set(0, {x[0], x[1], hv}, c.elem(0));
  if (c.out.size() > 1) {
    I64 past = 0;
    if (c.has(4)) {
      const Shape& p = c.shape(4);
      if (p.size() != 5) return c.fail("past {} is not 5-D", shape_str(p));
      past = c.attr_i("past_present_share_buffer", 0) != 0 ? p[3] - x[1] : p[3];
    }
    c.set(1, {2, x[0], heads, past + x[1], hk / heads}, c.elem(0));
  }
  return RuleStatus::ok;
}

/// MultiHeadAttention: query [B,S,D], key [B,L,D] (or 4-D past forms),
/// value [B,L,Dv]; output [B,S,Dv].
RuleStatus rule_mha(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& q = c.shape(0);
  if (q.size() != 3) return RuleStatus::unknown;
  I64 dv = q[2];
  if (c.has(2) && c.rank(2) == 3) dv = c.shape(2)[2];
  c.set(0, {q[0], q[1], dv}, c.elem(0));
  return RuleStatus::ok;
}

/// SkipLayerNormalization: output and input_skip_bias_sum like input; mean
/// and inv_std_var like input with the last dim 1.
RuleStatus rule_skip_layer_norm(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  Shape stat = c.shape(0);
  if (!stat.empty()) stat.back() = 1;
  c.same_as(0, 0);
  c.set(1, stat, kFloat);
  c.set(2, stat, kFloat);
  c.same_as(3, 0);
  return RuleStatus::ok;
}

/// EmbedLayerNormalization: input_ids [B,S], word_embedding [V,H] ->
/// output [B,S,H], mask_index [B], embedding_sum [B,S,H].
RuleStatus rule_embed_layer_norm(RuleCtx& c) {
  if (!c.has(0) || !c.has(2)) return RuleStatus::unknown;
  const Shape& ids = c.shape(0);
  const Shape& emb = c.shape(2);
  if (ids.size() != 2 || emb.size() != 2) return c.fail("input_ids {} / word_embedding {}", shape_str(ids), shape_str(emb));
  c.set(0, {ids[0], ids[1], emb[1]}, c.elem(2));
  c.set(1, {ids[0]}, kInt32);
  c.set(2, {ids[0], ids[1], emb[1]}, c.elem(2));
  return RuleStatus::ok;
}

RuleStatus rule_bias_split_gelu(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  Shape s = c.shape(0);
  if (s.empty() || s.back() % 2) return c.fail("last dim of {} is odd", shape_str(s));
  s.back() /= 2;
  c.set(0, std::move(s), c.elem(0));
  return RuleStatus::ok;
}

/// BiasDropout(data, bias, residual, ratio, training): output and mask like data.
RuleStatus rule_bias_dropout(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0);
  c.same_as(1, 0, kBool);
  return RuleStatus::ok;
}

RuleStatus rule_bitmask_dropout(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0);
  auto n = checked_numel(c.shape(0));
  if (!n) return c.fail("element count overflows");
  c.set(1, {(*n + 31) / 32}, kUint32);
  return RuleStatus::ok;
}

/// YieldOp: output i is the gradient of input i (same shape).
RuleStatus rule_yield(RuleCtx& c) {
  for (std::size_t k = 0; k < c.out.size(); ++k)
    if (c.has(k)) c.same_as(k, k);
  return RuleStatus::ok;
}

/// Gradient ops whose (first) output is shaped like input `I`.
template <std::size_t I>
RuleStatus rule_like_input(RuleCtx& c) {
  if (!c.has(I)) return RuleStatus::unknown;
  c.same_as(0, I);
  return RuleStatus::ok;
}

/// LayerNormalizationGrad(Y_grad, X, scale, mean, inv_std): X_grad, scale_grad, bias_grad.
RuleStatus rule_layer_norm_grad(RuleCtx& c) {
  static constexpr std::size_t pairs[3][2] = {{0, 1}, {1, 2}, {2, 2}};
  return like_inputs(c, pairs);
}

/// InvertibleLayerNormalizationGrad(Y_grad, Y, scale, bias, inv_std).
RuleStatus rule_inv_layer_norm_grad(RuleCtx& c) {
  static constexpr std::size_t pairs[3][2] = {{0, 1}, {1, 2}, {2, 2}};
  return like_inputs(c, pairs);
}

/// Output shaped by the values of input `I` (SliceGrad, GatherGrad, ...).
template <std::size_t I, std::size_t ElemFrom>
RuleStatus rule_shape_from_input(RuleCtx& c) {
  auto s = c.ints(I);
  if (!s) return RuleStatus::unknown;
  for (auto d : *s)
    if (d < 0) return c.fail("shape {} has a negative dim", shape_str(*s));
  c.set(0, *s, c.elem(ElemFrom));
  return RuleStatus::ok;
}

/// BroadcastGradientArgs(a_shape, b_shape) -> the axes each operand's gradient
/// is summed over.
RuleStatus rule_broadcast_gradient_args(RuleCtx& c) {
  auto a = c.ints(0), b = c.ints(1);
  if (!a || !b) return RuleStatus::unknown;
  const std::size_t r = std::max(a->size(), b->size());
  std::vector<I64> ra, rb;
  for (std::size_t k = 0; k < r; ++k) {
    const bool has_a = k + a->size() >= r, has_b = k + b->size() >= r;
    const I64 da = has_a ? (*a)[k + a->size() - r] : 1;
    const I64 db = has_b ? (*b)[k + b->size() - r] : 1;
    if (da == db && has_a && has_b) continue;
    if (!has_a || (da == 1 && db != 1)) ra.push_back(static_cast<I64>(k));
    if (!has_b || (db == 1 && da != 1)) rb.push_back(static_cast<I64>(k));
    if (has_a && has_b && da != 1 && db != 1 && da != db)
      return c.fail("shapes {} and {} do not broadcast", shape_str(*a), shape_str(*b));
  }
  c.set(0, {static_cast<I64>(ra.size())}, kInt64);
  c.set(1, {static_cast<I64>(rb.size())}, kInt64);
  c.set_values(0, Values::ints(std::move(ra)));
  c.set_values(1, Values::ints(std::move(rb)));
  return RuleStatus::ok;
}

/// ATen fallback ops (org.pytorch.aten): the PyTorch operators exporters route through it.
RuleStatus rule_aten(RuleCtx& c) {
  const std::string op = c.attr_s("operator").value_or("");
  if (op == "embedding") {
    if (!c.has(0) || !c.has(1) || c.rank(0) != 2) return RuleStatus::unknown;
    Shape s = c.shape(1);
    s.push_back(c.shape(0)[1]);
    c.set(0, std::move(s), c.elem(0));
    return RuleStatus::ok;
  }
  if (op == "embedding_backward") {
    auto n = c.scalar(2);
    if (!c.has(0) || !n) return RuleStatus::unknown;
    c.set(0, {*n, c.shape(0).back()}, c.elem(0));
    return RuleStatus::ok;
  }
  return RuleStatus::unknown;
}

RuleStatus rule_sce_internal(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const std::string red = c.attr_s("reduction").value_or("mean");
  if (red == "none" && c.has(1)) c.same_as(0, 1, c.elem(0));
  else c.set(0, {}, c.elem(0));
  c.same_as(1, 0);
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"com.microsoft", "Attention", rule_attention},
    {"com.microsoft", "MultiHeadAttention", rule_mha},
    {"com.microsoft", "SkipLayerNormalization", rule_skip_layer_norm},
    {"com.microsoft", "SkipSimplifiedLayerNormalization", rule_skip_layer_norm},
    {"com.microsoft", "EmbedLayerNormalization", rule_embed_layer_norm},
    {"com.microsoft", "FastGelu", rule_same_shape},
    {"com.microsoft", "BiasGelu", rule_same_shape},
    {"com.microsoft", "Gelu", rule_same_shape},
    {"com.microsoft", "QuickGelu", rule_same_shape},
    {"com.microsoft", "BiasAdd", rule_same_shape},
    {"com.microsoft", "BiasSoftmax", rule_same_shape},
    {"com.microsoft", "RotaryEmbedding", rule_same_shape},
    {"com.microsoft", "BiasSplitGelu", rule_bias_split_gelu},
    {"com.microsoft", "BiasDropout", rule_bias_dropout},
    {"com.microsoft", "BitmaskDropout", rule_bitmask_dropout},
    {"com.microsoft", "BitmaskBiasDropout", rule_bitmask_dropout},
    {"com.microsoft", "LayerNormalization", rule_layer_norm},
    {"com.microsoft", "SimplifiedLayerNormalization", rule_layer_norm},
    {"com.microsoft", "ConcatTraining", rule_concat},
    {"com.microsoft", "Range", rule_range},
    {"com.microsoft", "GatherND", rule_gather_nd},
    {"com.microsoft", "YieldOp", rule_yield},
    {"com.microsoft", "SoftmaxCrossEntropyLossInternal", rule_sce_internal},
    {"com.microsoft", "SoftmaxCrossEntropyLossInternalGrad", rule_like_input<1>},
    {"com.microsoft", "SoftmaxCrossEntropyLossGrad", rule_like_input<1>},
    {"com.microsoft", "SoftmaxCrossEntropyGrad", rule_like_input<1>},
    {"com.microsoft", "LayerNormalizationGrad", rule_layer_norm_grad},
    {"com.microsoft", "SimplifiedLayerNormalizationGrad", rule_layer_norm_grad},
    {"com.microsoft", "InvertibleLayerNormalizationGrad", rule_inv_layer_norm_grad},
    {"com.microsoft", "BroadcastGradientArgs", rule_broadcast_gradient_args},
    {"com.microsoft", "SliceGrad", rule_shape_from_input<1, 0>},
    {"com.microsoft", "GatherGrad", rule_shape_from_input<0, 2>},
    {"com.microsoft", "GatherElementsGrad", rule_shape_from_input<1, 0>},
    {"com.microsoft", "GatherNDGrad", rule_shape_from_input<0, 2>},
    {"com.microsoft", "BiasFastGeluGrad_dX", rule_like_input<1>},
    {"com.microsoft", "BiasGeluGrad_dX", rule_like_input<1>},
    {"com.microsoft", "FastGeluGrad", rule_like_input<1>},
    {"com.microsoft", "GeluGrad", rule_like_input<1>},
    {"com.microsoft", "SoftmaxGrad", rule_like_input<1>},
    {"com.microsoft", "SoftmaxGrad_13", rule_like_input<1>},
    {"com.microsoft", "LogSoftmaxGrad", rule_like_input<1>},
    {"com.microsoft", "LogSoftmaxGrad_13", rule_like_input<1>},
    {"com.microsoft", "ReluGrad", rule_like_input<0>},
    {"com.microsoft", "SigmoidGrad", rule_like_input<0>},
    {"com.microsoft", "TanhGrad", rule_like_input<0>},
    {"com.microsoft", "DropoutGrad", rule_like_input<0>},
    {"com.microsoft", "BiasDropoutGrad", rule_like_input<0>},
    {"com.microsoft", "InPlaceAccumulator", rule_like_input<0>},
    {"com.microsoft", "ZeroGradient", rule_like_input<0>},
    {"com.microsoft", "ATen", rule_aten},
    {"org.pytorch.aten", "ATen", rule_aten},
};

}  // namespace

std::span<const ShapeRule> contrib_rules() { return kRules; }

}  // namespace planner::onnx::detail
