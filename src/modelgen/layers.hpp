#pragma once
/// Private to modelgen: layers shared by the architectures, each a handful
/// of standard opset-17 ops. Shapes in comments: B batch, S sequence,
/// h hidden, n heads, d head dim.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "builder.hpp"
#include "planner/modelgen/modelgen.hpp"

namespace planner::modelgen::detail {

using T = std::string;  ///< a tensor name

/// x [.., in] @ W [in, out] (+ b [out]); weights "<scope>.weight", "<scope>.bias".
T linear(Builder& b, const std::string& scope, const T& x, std::int64_t in, std::int64_t out, bool bias);
/// LayerNormalization over the last axis, weight and bias [h].
T layer_norm(Builder& b, const std::string& scope, const T& x, std::int64_t h, float eps);
/// RMSNorm (also T5's LayerNorm) from small ops: x / sqrt(mean(x*x) + eps) * w.
T rms_norm(Builder& b, const std::string& scope, const T& x, std::int64_t h, float eps);
/// GeLU, erf form: 0.5 * x * (1 + erf(x / sqrt(2))).
T gelu(Builder& b, const std::string& scope, const T& x);
/// Additive causal mask [S, S]: 0 on and below the diagonal, -10000 above
/// (ConstantOfShape + Trilu; computed once, shared by the layers).
T causal_mask(Builder& b, std::int64_t S);

/// [B, S, n*d] -> [B, n, S, d], or [B, n, d, S] when `transposed` (K^T).
T split_heads(Builder& b, const std::string& scope, const T& x, std::int64_t B, std::int64_t S,
              std::int64_t n, std::int64_t d, bool transposed);
/// softmax(q @ kT * scale + bias) @ v, merged back to [B, S, n*d].
/// q [B,n,Sq,d], kT [B,n,d,Sk], v [B,n,Sk,d]; bias broadcasts to [B,n,Sq,Sk].
T attention(Builder& b, const std::string& scope, const T& q, const T& kT, const T& v,
            std::int64_t B, std::int64_t S, std::int64_t n, std::int64_t d,
            std::optional<float> scale, const std::optional<T>& bias);

/// Flattens logits [B, S, V] and labels [B, S] and adds
/// SoftmaxCrossEntropyLoss (mean); the graph output is "loss".
void lm_loss(Builder& b, const T& logits, const T& labels, std::int64_t B, std::int64_t S,
             std::int64_t V, std::optional<std::int64_t> ignore_index);
/// SoftmaxCrossEntropyLoss (mean) of logits [B, C] and labels [B]; output "loss".
void class_loss(Builder& b, const T& logits, const T& labels);

// Architectures (each validated before it is called).
void build_gpt(Builder& b, const ModelSpec& s);
void build_moe(Builder& b, const ModelSpec& s);
void build_llama(Builder& b, const ModelSpec& s);
void build_llama_moe(Builder& b, const ModelSpec& s);
void build_bert(Builder& b, const ModelSpec& s);
void build_t5(Builder& b, const ModelSpec& s);
void build_mlp(Builder& b, const ModelSpec& s);
void build_resnet(Builder& b, const ModelSpec& s);
void build_widedeep(Builder& b, const ModelSpec& s);

/// Bottleneck blocks per stage for ResNet-50/101/152 (empty for other depths).
std::vector<int> resnet_stages(int depth);

/// 0, 1, ..., n-1 (position ids).
inline std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

}  // namespace planner::modelgen::detail
