// Encoder models: bert (MLM) and t5 (encoder-decoder).
#include <cmath>
#include <numeric>

#include "layers.hpp"

namespace planner::modelgen::detail {

using onnx::TensorProto;

namespace {


/// Separate q, k, v projections of `xq` (queries) and `xkv` (keys, values),
/// attention with optional scale and bias, output projection "<scope>/<out>".
T mha(Builder& b, const std::string& scope, const T& xq, const T& xkv, std::int64_t B, std::int64_t S,
      std::int64_t h, std::int64_t n, bool bias, std::optional<float> scale,
      const std::optional<T>& add, const char* out) {
  const std::int64_t d = h / n;
  auto q = split_heads(b, scope + "/q", linear(b, scope + "/q", xq, h, h, bias), B, S, n, d, false);
  auto kT = split_heads(b, scope + "/k", linear(b, scope + "/k", xkv, h, h, bias), B, S, n, d, true);
  auto v = split_heads(b, scope + "/v", linear(b, scope + "/v", xkv, h, h, bias), B, S, n, d, false);
  auto ctx = attention(b, scope, q, kT, v, B, S, n, d, scale, add);
  return linear(b, scope + "/" + out, ctx, h, h, bias);
}

}  // namespace

// BERT: token + position + segment embeddings, LN; post-LN layers with GeLU
// MLP; MLM head (dense + GeLU + LN + untied decoder with bias) and
// cross-entropy over every position (ignore_index -100). No pooler/NSP head,
// no attention padding mask, no dropout.
void build_bert(Builder& b, const ModelSpec& s) {
  const std::int64_t B = s.batch, S = s.seq, h = s.hidden, V = s.vocab, n = s.heads, f = effective_ffn(s);
  constexpr float kEps = 1e-12f;
  auto ids = b.input("input_ids", TensorProto::INT64, {B, S});
  auto seg = b.input("token_type_ids", TensorProto::INT64, {B, S});
  auto labels = b.input("labels", TensorProto::INT64, {B, S});
  auto tok = b.op("embed/tokens", "Gather", {b.weight("embed.tokens.weight", {V, h}), ids});
  auto pos = b.op("embed/positions", "Gather",
                  {b.weight("embed.positions.weight", {S, h}), b.ints({S}, iota(S), "position_ids")});
  auto sg = b.op("embed/segments", "Gather", {b.weight("embed.segments.weight", {2, h}), seg});
  auto e = b.op("embed", "Add", {tok, pos});
  e = b.op("embed", "Add", {e, sg});
  T x = layer_norm(b, "embed/ln", e, h, kEps);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(h / n)));

  for (int i = 0; i < s.layers; ++i) {
    const std::string L = fmt::format("layers.{}", i);
    auto a = mha(b, L + "/attn", x, x, B, S, h, n, true, scale, std::nullopt, "out");
    x = layer_norm(b, L + "/attn_ln", b.op(L + "/attn_residual", "Add", {x, a}), h, kEps);
    auto u = linear(b, L + "/mlp/fc1", x, h, f, true);
    auto m = linear(b, L + "/mlp/fc2", gelu(b, L + "/mlp/gelu", u), f, h, true);
    x = layer_norm(b, L + "/mlp_ln", b.op(L + "/mlp_residual", "Add", {x, m}), h, kEps);
  }
  auto t = gelu(b, "mlm/gelu", linear(b, "mlm/transform", x, h, h, true));
  t = layer_norm(b, "mlm/ln", t, h, kEps);
  lm_loss(b, linear(b, "mlm/decoder", t, h, V, true), labels, B, S, V, std::int64_t{-100});
}

// T5 (v1.0 layout): shared token embedding for encoder and decoder inputs,
// pre-norm layers with T5 LayerNorm (RMSNorm, no bias), no biases anywhere,
// unscaled attention scores, ReLU MLP, untied LM head.
// Relative position bias, simplified: one learned table [32, heads] per
// stack (as T5), but the bucket of a (query i, key j) pair is
// clip(j - i, -16, 15) + 16 in the encoder and clip(i - j, 0, 31) in the
// decoder instead of T5's log-spaced buckets: same parameters, same ops per
// layer (the [heads, S, S] bias is computed once per stack and added in every
// self-attention). The decoder reads `decoder_input_ids` of length --seq.
void build_t5(Builder& b, const ModelSpec& s) {
  const std::int64_t B = s.batch, S = s.seq, h = s.hidden, V = s.vocab, n = s.heads, f = effective_ffn(s);
  const int dec_layers = s.decoder_layers > 0 ? s.decoder_layers : s.layers;
  constexpr float kEps = 1e-6f;
  constexpr std::int64_t kBuckets = 32;
  auto ids = b.input("input_ids", TensorProto::INT64, {B, S});
  auto dids = b.input("decoder_input_ids", TensorProto::INT64, {B, S});
  auto labels = b.input("labels", TensorProto::INT64, {B, S});
  auto shared = b.weight("embed.tokens.weight", {V, h});

  // Relative positions j - i [S, S] and the per-stack bias tables.
  auto rel = b.op("rel_pos", "Sub", {b.ints({1, S}, iota(S), "rel_pos.key_positions"),
                                     b.ints({S, 1}, iota(S), "rel_pos.query_positions")});
  auto enc_buckets = b.op("encoder/rel_bias", "Add",
                          {b.op("encoder/rel_bias", "Clip", {rel, b.scalar_i(-kBuckets / 2), b.scalar_i(kBuckets / 2 - 1)}),
                           b.scalar_i(kBuckets / 2)});
  auto dec_buckets = b.op("decoder/rel_bias", "Clip",
                          {b.op("decoder/rel_bias", "Neg", {rel}), b.scalar_i(0), b.scalar_i(kBuckets - 1)});
  auto bias_of = [&](const std::string& scope, const T& buckets) {
    auto g = b.op(scope, "Gather", {b.weight_of(scope, ".weight", {kBuckets, n}), buckets});  // [S,S,n]
    return b.op(scope, "Transpose", {g}, {attr("perm", Dims{2, 0, 1})});                       // [n,S,S]
  };
  auto enc_bias = bias_of("encoder/rel_bias", enc_buckets);
  auto dec_bias = b.op("decoder/rel_bias", "Add", {bias_of("decoder/rel_bias", dec_buckets), causal_mask(b, S)});

  auto mlp = [&](const std::string& L, const T& x) {
    auto u = b.op(L + "/mlp", "Relu", {linear(b, L + "/mlp/fc1", x, h, f, false)});
    return linear(b, L + "/mlp/fc2", u, f, h, false);
  };

  T x = b.op("encoder/embed", "Gather", {shared, ids});
  for (int i = 0; i < s.layers; ++i) {
    const std::string L = fmt::format("encoder.layers.{}", i);
    auto n1 = rms_norm(b, L + "/attn_norm", x, h, kEps);
    auto a = mha(b, L + "/attn", n1, n1, B, S, h, n, false, std::nullopt, enc_bias, "o");
    x = b.op(L + "/attn_residual", "Add", {x, a});
    x = b.op(L + "/mlp_residual", "Add", {x, mlp(L, rms_norm(b, L + "/mlp_norm", x, h, kEps))});
  }
  auto enc = rms_norm(b, "encoder/final_norm", x, h, kEps);

  x = b.op("decoder/embed", "Gather", {shared, dids});
  for (int i = 0; i < dec_layers; ++i) {
    const std::string L = fmt::format("decoder.layers.{}", i);
    auto n1 = rms_norm(b, L + "/self_attn_norm", x, h, kEps);
    x = b.op(L + "/self_attn_residual", "Add",
             {x, mha(b, L + "/self_attn", n1, n1, B, S, h, n, false, std::nullopt, dec_bias, "o")});
    auto n2 = rms_norm(b, L + "/cross_attn_norm", x, h, kEps);
    x = b.op(L + "/cross_attn_residual", "Add",
             {x, mha(b, L + "/cross_attn", n2, enc, B, S, h, n, false, std::nullopt, std::nullopt, "o")});
    x = b.op(L + "/mlp_residual", "Add", {x, mlp(L, rms_norm(b, L + "/mlp_norm", x, h, kEps))});
  }
  x = rms_norm(b, "decoder/final_norm", x, h, kEps);
  lm_loss(b, linear(b, "lm_head", x, h, V, false), labels, B, S, V, std::nullopt);
}

}  // namespace planner::modelgen::detail
