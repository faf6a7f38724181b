// Fused attention kernels: com.microsoft Attention, MultiHeadAttention,
// GroupQueryAttention, and ONNX Attention (opset 23).
//
// With batch B, query length S, key length L (past + new when there is a KV
// cache), h query heads, head sizes d (Q, K) and dv (V):
//   scores   2 B h S L d        (Q K^T)
//   softmax  5 B h S L          (the Softmax rule's 5/elem; scale and mask
//                                are folded in)
//   context  2 B h S L dv       (P V)
// Causal masks are not discounted (full S x L, as Megatron's formula counts).
//
// com.microsoft Attention: input[B, S, Hin], weights[Hin, Hq+Hk+Hv],
//   bias[Hq+Hk+Hv]?, mask_index?, past?, ...; num_heads; qkv_hidden_sizes
//   (default three equal thirds); d = Hq/h, dv = Hv/h; L = present's dim 3,
//   else S (+ past's dim 3).
//   forward  = proj + bias + scores + softmax + context, with
//              proj = 2 B S Hin (Hq+Hk+Hv), bias = B S (Hq+Hk+Hv) when given
//   backward = proj x (input needs grad) + proj x (weights need grad)
//              + 2 scores (dQ, dK) + 2 context (dP, dV) + 2 softmax
//              + bias (dBias: reduce of dQKV) when the bias needs grad
// MultiHeadAttention / GroupQueryAttention / ONNX Attention take Q, K, V
//   already projected: forward = scores + softmax + context (+ one add per
//   Q/K/V element for MultiHeadAttention's bias); backward = 2 scores
//   + 2 context + 2 softmax (+ bias: one add per element for dBias).
//
// Special functions: one exp per score forward, and one per score backward
// (the backward recomputes the probabilities from Q, K and the saved
// statistics, FlashAttention-style, as the reference CPU kernel does).
//
// Bytes, FlashAttention-style (the S x L scores never reach memory; the cost
// model adds graph::FusedPattern::score_bytes when it prices an unfused
// kernel). QKV = B S (Hq+Hk+Hv) elements (the packed projection), stats =
// B h S x 4 bytes (f32 log-sum-exp per query row):
//   Attention      forward reads every input, + QKV (read back after the
//                  projection); writes every output + QKV + stats.
//                  backward reads dY, Y, QKV, stats, then dQKV with the
//                  input (for dW, when the weights need a gradient) and the
//                  weights (for dX, when the input needs one); writes dQKV
//                  and the gradients of the inputs that need one.
//   the others     forward reads every input, writes every output + stats;
//                  backward reads dY, Y, Q, K, V (the inputs) and stats,
//                  writes the gradients of the inputs that need one.
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

struct Dims {
  double b = 0, h = 0, s = 0, l = 0, d = 0, dv = 0;
  double scores() const { return 2.0 * b * h * s * l * d; }
  double softmax() const { return 5.0 * b * h * s * l; }
  double context() const { return 2.0 * b * h * s * l * dv; }
  double scores_count() const { return b * h * s * l; }
  Bytes stats() const { return Bytes(b * h * s * 4.0); }
  bool valid() const { return b > 0 && h > 0 && s > 0 && l > 0 && d > 0 && dv > 0; }
};

/// Cost of the attention core on already projected Q, K, V (the inputs) plus
/// `bias_adds` elementwise adds.
OpCost core(const CostQuery& q, const Dims& m, double bias_adds, bool bias_grad) {
  OpCost c;
  c.forward_flops = Flops(m.scores() + m.softmax() + m.context() + bias_adds);
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q) + m.stats();
  c.backward_flops = Flops(2.0 * (m.scores() + m.context() + m.softmax()) + (bias_grad ? bias_adds : 0.0));
  c.backward_bytes_read = out_grad_bytes(q) + bytes(q.out(0)) + float_inputs_bytes(q) + m.stats();
  c.backward_bytes_written = in_grad_bytes(q);
  c.forward_special = c.backward_special = m.scores_count();
  return c;
}

std::optional<double> heads(const graph::Op& op, std::string_view name) {
  auto n = op.attr_int(name);
  if (!n || *n <= 0) return std::nullopt;
  return static_cast<double>(*n);
}

OpCost ms_attention(const CostQuery& q) {
  const auto *x = q.in(0), *w = q.in(1), *bias = q.in(2), *past = q.in(4), *y = q.out(0), *present = q.out(1);
  const auto h = heads(q.op, "num_heads");
  if (!x || !w || !y || !h || rank(x) != 3 || rank(w) != 2) return fallback_cost(q.op, q.g, q.grad);
  const double w3 = dim(w, 1);
  double hq = w3 / 3.0, hv = w3 / 3.0;
  if (auto sizes = q.op.attr_ints("qkv_hidden_sizes"); sizes && sizes->size() == 3) {
    hq = static_cast<double>((*sizes)[0]);
    hv = static_cast<double>((*sizes)[2]);
  }
  Dims m;
  m.b = dim(x, 0);
  m.s = dim(x, 1);
  m.h = *h;
  m.d = hq / *h;
  m.dv = hv / *h;
  m.l = present && rank(present) == 5 ? dim(present, 3) : m.s + (past && rank(past) == 5 ? dim(past, 3) : 0.0);
  if (!m.valid()) return fallback_cost(q.op, q.g, q.grad);

  const double qkv_elems = m.b * m.s * w3;
  const Bytes qkv(qkv_elems * elem_size(x));
  const double proj = 2.0 * m.b * m.s * dim(x, 2) * w3;
  const double bias_add = bias ? qkv_elems : 0.0;

  OpCost c;
  c.forward_flops = Flops(proj + bias_add + m.scores() + m.softmax() + m.context());
  c.forward_bytes_read = inputs_bytes(q) + qkv;
  c.forward_bytes_written = outputs_bytes(q) + qkv + m.stats();
  double bwd = 2.0 * (m.scores() + m.context() + m.softmax());
  Bytes read = out_grad_bytes(q) + bytes(y) + qkv + m.stats();
  if (q.in_needs_grad(0)) {
    bwd += proj;
    read += qkv + bytes(w);
  }
  if (q.in_needs_grad(1)) {
    bwd += proj;
    read += qkv + bytes(x);
  }
  if (q.in_needs_grad(2)) bwd += bias_add;
  c.backward_flops = Flops(bwd);
  c.backward_bytes_read = read;
  c.backward_bytes_written = qkv + in_grad_bytes(q);
  return c;
}

OpCost multi_head_attention(const CostQuery& q) {
  const auto *query = q.in(0), *key = q.in(1), *value = q.in(2), *bias = q.in(3), *past_key = q.in(6);
  const auto *y = q.out(0), *present_key = q.out(1);
  const auto h = heads(q.op, "num_heads");
  if (!query || !y || !h) return fallback_cost(q.op, q.g, q.grad);
  Dims m;
  m.b = dim(query, 0);
  m.s = dim(query, 1);
  m.h = *h;
  m.d = rank(query) == 5 ? dim(query, 4) : dim(query, 2) / *h;
  m.dv = dim(y, -1) / *h;
  if (present_key && rank(present_key) == 4) m.l = dim(present_key, 2);
  else if (key && rank(key) == 4) m.l = dim(key, 2);
  else if (key) m.l = dim(key, 1) + (past_key && rank(past_key) == 4 ? dim(past_key, 2) : 0.0);
  else m.l = m.s;
  if (!m.valid()) return fallback_cost(q.op, q.g, q.grad);
  const double bias_adds = bias ? numel(query) + numel(key) + numel(value) : 0.0;
  return core(q, m, bias_adds, q.in_needs_grad(3));
}

OpCost group_query_attention(const CostQuery& q) {
  const auto *query = q.in(0), *key = q.in(1), *past_key = q.in(3), *y = q.out(0), *present_key = q.out(1);
  const auto h = heads(q.op, "num_heads");
  const auto kvh = heads(q.op, "kv_num_heads");
  if (!query || !y || !h || !kvh || rank(query) != 3) return fallback_cost(q.op, q.g, q.grad);
  Dims m;
  m.b = dim(query, 0);
  m.s = dim(query, 1);
  m.h = *h;
  m.d = key ? dim(query, 2) / *h : dim(query, 2) / (*h + 2.0 * *kvh);
  m.dv = m.d;
  if (present_key && rank(present_key) == 4) m.l = dim(present_key, 2);
  else m.l = m.s + (past_key && rank(past_key) == 4 ? dim(past_key, 2) : 0.0);
  if (!m.valid()) return fallback_cost(q.op, q.g, q.grad);
  return core(q, m, 0.0, false);
}

OpCost onnx_attention(const CostQuery& q) {
  const auto *qt = q.in(0), *k = q.in(1), *v = q.in(2), *present_key = q.out(1);
  if (!qt || !k || !v || !q.out(0)) return fallback_cost(q.op, q.g, q.grad);
  Dims m;
  m.b = dim(qt, 0);
  if (rank(qt) == 4) {
    m.h = dim(qt, 1);
    m.s = dim(qt, 2);
    m.d = dim(qt, 3);
    m.l = dim(k, 2);
    m.dv = dim(v, 3);
  } else {
    const auto h = heads(q.op, "q_num_heads");
    const auto kvh = heads(q.op, "kv_num_heads");
    if (!h || !kvh || rank(qt) != 3) return fallback_cost(q.op, q.g, q.grad);
    m.h = *h;
    m.s = dim(qt, 1);
    m.d = dim(qt, 2) / *h;
    m.l = dim(k, 1);
    m.dv = dim(v, 2) / *kvh;
  }
  if (present_key && rank(present_key) == 4) m.l = dim(present_key, 2);
  if (!m.valid()) return fallback_cost(q.op, q.g, q.grad);
  return core(q, m, 0.0, false);
}

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kRules{
    OpRule{ms, "Attention", OpClass::attention, &ms_attention},
    OpRule{ms, "MultiHeadAttention", OpClass::attention, &multi_head_attention},
    OpRule{ms, "GroupQueryAttention", OpClass::attention, &group_query_attention},
    OpRule{"", "Attention", OpClass::attention, &onnx_attention},
};

}  // namespace

std::span<const OpRule> attention_rules() { return kRules; }

}  // namespace planner::ops
