#pragma once
/// Fused scaled dot-product attention, causal or not, with an optional
/// additive bias (a constant mask: it receives no gradient).
///
/// Per batch-head, with q [Sq,D], k [Sk,D], v [Sk,Dv]:
///   S = scale q k^T + bias,  S_ij = -inf where causal and j > i + (Sk - Sq)
///   P = softmax_rows(S),  O = P v
/// Backward (P recomputed, never stored):
///   dv = P^T dO,  dP = dO v^T,  dS = P (dP - rowsum(dP P)),
///   dq = scale dS k,  dk = scale dS^T q
/// A row with every key masked gives a zero output and zero gradients.

#include "planner/runtime_cpu/tensor.hpp"

namespace planner::runtime_cpu {

struct AttentionAttrs {
  float scale = 1.0f;
  bool causal = false;
};

/// q [B,H,Sq,D], k [B,H,Sk,D], v [B,H,Sk,Dv] -> [B,H,Sq,Dv].
/// Requires: those shapes; bias, when given, of shape [Sq,Sk].
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* bias, const AttentionAttrs& at);
struct AttentionGrads {
  Tensor dq, dk, dv;
};
AttentionGrads attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* bias,
                                  const AttentionAttrs& at, const Tensor& dy);

}  // namespace planner::runtime_cpu
