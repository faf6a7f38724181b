// Decoder-only language models: gpt, moe (gpt with routed experts), llama,
// llama-moe (llama with routed SwiGLU experts).
#include <cmath>
#include <functional>
#include <numeric>

#include "layers.hpp"

namespace planner::modelgen::detail {

using onnx::TensorProto;

namespace {


/// The MLP of one layer: x [B,S,h] (already normalised) -> [B,S,h].
using MlpFn = std::function<T(Builder&, const std::string& layer_scope, const T& x)>;

/// The LM head's logits: its own [h,V] weight, or with tie_embeddings the
/// token embedding `wte` [V,h] read transposed.
T lm_head(Builder& b, const ModelSpec& s, const T& x, const T& wte) {
  if (!s.tie_embeddings) return linear(b, "lm_head", x, s.hidden, s.vocab, false);
  return b.op("lm_head", "MatMul", {x, b.op("lm_head/tied", "Transpose", {wte}, {attr("perm", Dims{1, 0})})});
}

/// Megatron GPT: learned positions, pre-LN, fused QKV, causal attention,
/// `mlp` per layer, final LN, LM head (untied, or reading the token
/// embedding transposed with tie_embeddings), cross-entropy.
void gpt_stack(Builder& b, const ModelSpec& s, const MlpFn& mlp) {
  const std::int64_t B = s.batch, S = s.seq, h = s.hidden, V = s.vocab, n = s.heads, d = h / n;
  auto ids = b.input("input_ids", TensorProto::INT64, {B, S});
  auto labels = b.input("labels", TensorProto::INT64, {B, S});
  auto wte = b.weight("embed.tokens.weight", {V, h});
  auto wpe = b.weight("embed.positions.weight", {S, h});
  auto tok = b.op("embed/tokens", "Gather", {wte, ids});                                 // [B,S,h]
  auto pos = b.op("embed/positions", "Gather", {wpe, b.ints({S}, iota(S), "position_ids")});  // [S,h]
  T x = b.op("embed", "Add", {tok, pos});
  auto mask = causal_mask(b, S);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));

  for (int i = 0; i < s.layers; ++i) {
    const std::string L = fmt::format("layers.{}", i);
    auto h1 = layer_norm(b, L + "/ln1", x, h, 1e-5f);
    auto qkv = linear(b, L + "/attn/qkv", h1, h, 3 * h, s.bias);                           // [B,S,3h]
    auto parts = b.node(L + "/attn/qkv", "Split", {qkv, b.vec({h, h, h})}, 3, {attr("axis", std::int64_t{-1})});
    auto q = split_heads(b, L + "/attn/q", parts[0], B, S, n, d, false);
    auto kT = split_heads(b, L + "/attn/k", parts[1], B, S, n, d, true);
    auto v = split_heads(b, L + "/attn/v", parts[2], B, S, n, d, false);
    auto ctx = attention(b, L + "/attn", q, kT, v, B, S, n, d, scale, mask);
    auto o = linear(b, L + "/attn/proj", ctx, h, h, s.bias);
    x = b.op(L + "/attn_residual", "Add", {x, o});
    auto h2 = layer_norm(b, L + "/ln2", x, h, 1e-5f);
    x = b.op(L + "/mlp_residual", "Add", {x, mlp(b, L, h2)});
  }
  x = layer_norm(b, "final_ln", x, h, 1e-5f);
  lm_loss(b, lm_head(b, s, x, wte), labels, B, S, V, std::nullopt);  // logits [B,S,V]
}

/// Rotary tables cos, sin [S, d] (rotate-half convention, base 10000),
/// computed once from positions and inverse frequencies.
std::pair<T, T> rope_tables(Builder& b, std::int64_t S, std::int64_t d) {
  std::vector<float> inv(static_cast<std::size_t>(d / 2));
  for (std::int64_t i = 0; i < d / 2; ++i)
    inv[static_cast<std::size_t>(i)] =
        static_cast<float>(std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d)));
  auto invf = b.constant("rope.inv_freq", {1, d / 2}, inv);
  auto pos = b.op("rope", "Cast", {b.ints({S, 1}, iota(S), "rope.positions")},
                  {attr("to", std::int64_t{TensorProto::FLOAT})});
  auto freqs = b.op("rope", "Mul", {pos, invf});                                    // [S,d/2]
  auto emb = b.op("rope", "Concat", {freqs, freqs}, {attr("axis", std::int64_t{-1})});  // [S,d]
  return {b.op("rope", "Cos", {emb}), b.op("rope", "Sin", {emb})};
}

/// x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[d/2:], x[:d/2]).
T apply_rope(Builder& b, const std::string& scope, const T& x, const std::pair<T, T>& cs, std::int64_t d) {
  auto axes = b.vec({-1});
  auto x1 = b.op(scope, "Slice", {x, b.vec({0}), b.vec({d / 2}), axes});
  auto x2 = b.op(scope, "Slice", {x, b.vec({d / 2}), b.vec({d}), axes});
  auto rot = b.op(scope, "Concat", {b.op(scope, "Neg", {x2}), x1}, {attr("axis", std::int64_t{-1})});
  auto a = b.op(scope, "Mul", {x, cs.first});
  auto c = b.op(scope, "Mul", {rot, cs.second});
  return b.op(scope, "Add", {a, c});
}

/// [B, kv, S, d] -> [B, kv*rep, S, d], each kv head repeated rep times.
T repeat_kv(Builder& b, const std::string& scope, const T& x, std::int64_t B, std::int64_t kv,
            std::int64_t rep, std::int64_t S, std::int64_t d) {
  auto r = b.op(scope, "Reshape", {x, b.vec({-1, kv, 1, S, d})});
  auto e = b.op(scope, "Expand", {r, b.vec({1, kv, rep, S, d})});
  return b.op(scope, "Reshape", {e, b.vec({-1, kv * rep, S, d})});
}

// Token-choice top-k routing with a static capacity C = ceil(T*k/E) per
// expert (T = B*S tokens):
//   router: probs = Softmax(x @ Wr) [T,E]; (vals, idx) = TopK(probs, k) [T,k]
//   gates = ScatterElements(zeros[T,E], idx, vals, axis=1)      [T,E], 0 where not routed
//   expert e: (g, t) = TopK(gates[:,e], C) over tokens           [1,C]
//             y_e = MLP_e(Gather(x, t)) * g                      [1,C,h]
//   out = ScatterND(zeros[T,h], concat_e t, concat_e y_e, reduction=add)  [T,h]
// Each expert runs on exactly C tokens (its highest-gate ones): tokens beyond
// capacity are dropped as in GShard/Switch; unfilled slots carry gate 0.
// The outputs come back in one scatter of all E*C rows (a framework's
// "unpermute"): a scatter per expert would rewrite the whole [T,h] output
// E times, traffic no MoE layer has.
using ExpertFn = std::function<T(Builder&, const std::string& expert_scope, const T& x)>;

T routed_experts(Builder& b, const std::string& M, const T& x, const ModelSpec& s, const T& zeros_gates,
                 const T& zeros_out, const ExpertFn& expert) {
  const std::int64_t B = s.batch, S = s.seq, h = s.hidden;
  const std::int64_t Tk = B * S, E = s.experts, C = moe_capacity(s);
  auto flat = b.op(M, "Reshape", {x, b.vec({Tk, h})});
  auto logits = linear(b, M + "/router", flat, h, E, false);
  auto probs = b.op(M + "/router", "Softmax", {logits}, {attr("axis", std::int64_t{-1})});
  auto top = b.node(M + "/router", "TopK", {probs, b.vec({s.top_k})}, 2, {attr("axis", std::int64_t{-1})});
  auto gates = b.op(M + "/gates", "ScatterElements", {zeros_gates, top[1], top[0]}, {attr("axis", std::int64_t{1})});
  auto gT = b.op(M + "/gates", "Transpose", {gates}, {attr("perm", Dims{1, 0})});  // [E,T]
  auto per = b.node(M + "/gates", "Split", {gT}, static_cast<int>(E), {attr("axis", std::int64_t{0})});
  std::vector<T> rows, outs;
  for (std::int64_t e = 0; e < E; ++e) {
    const std::string X = fmt::format("{}/experts.{}", M, e);
    auto sel = b.node(X, "TopK", {per[e], b.vec({C})}, 2, {attr("axis", std::int64_t{-1})});  // [1,C]
    auto xe = b.op(X, "Gather", {flat, sel[1]}, {attr("axis", std::int64_t{0})});             // [1,C,h]
    auto y = expert(b, X, xe);
    auto w = b.op(X, "Unsqueeze", {sel[0], b.vec({2})});                                      // [1,C,1]
    outs.push_back(b.op(X, "Mul", {y, w}));
    rows.push_back(b.op(X, "Unsqueeze", {sel[1], b.vec({2})}));                               // [1,C,1]
  }
  auto at = b.op(M + "/combine", "Concat", rows, {attr("axis", std::int64_t{0})});           // [E,C,1]
  auto ys = b.op(M + "/combine", "Concat", outs, {attr("axis", std::int64_t{0})});           // [E,C,h]
  auto out = b.op(M + "/combine", "ScatterND", {zeros_out, at, ys}, {attr("reduction", std::string("add"))});  // [T,h]
  return b.op(M, "Reshape", {out, b.vec({B, S, h})});
}

/// The [T,E] and [T,h] zeros the routed layers scatter into (made once).
std::pair<T, T> moe_zeros(Builder& b, const ModelSpec& s) {
  const std::int64_t Tk = s.batch * s.seq;
  TensorProto zero;
  zero.set_data_type(TensorProto::FLOAT);
  zero.add_dims(1);
  zero.add_float_data(0.0f);
  return {b.op("moe/zeros_gates", "ConstantOfShape", {b.vec({Tk, s.experts})}, {attr("value", zero)}),
          b.op("moe/zeros_out", "ConstantOfShape", {b.vec({Tk, s.hidden})}, {attr("value", zero)})};
}

/// Llama: RMSNorm, rotary positions, grouped-query attention with head
/// size d (default hidden/heads), `mlp` per layer, final norm, LM head
/// (untied, or the token embedding transposed with tie_embeddings: Llama
/// 3.2 1B/3B, Gemma).
void llama_stack(Builder& b, const ModelSpec& s, const MlpFn& mlp) {
  const std::int64_t B = s.batch, S = s.seq, h = s.hidden, V = s.vocab, n = s.heads, d = head_size(s);
  const std::int64_t kv = s.kv_heads > 0 ? s.kv_heads : n;
  constexpr float kEps = 1e-5f;
  auto ids = b.input("input_ids", TensorProto::INT64, {B, S});
  auto labels = b.input("labels", TensorProto::INT64, {B, S});
  auto wte = b.weight("embed.tokens.weight", {V, h});
  T x = b.op("embed/tokens", "Gather", {wte, ids});
  auto mask = causal_mask(b, S);
  auto cs = rope_tables(b, S, d);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));

  for (int i = 0; i < s.layers; ++i) {
    const std::string L = fmt::format("layers.{}", i);
    auto h1 = rms_norm(b, L + "/attn_norm", x, h, kEps);
    auto q = split_heads(b, L + "/attn/q", linear(b, L + "/attn/q", h1, h, n * d, false), B, S, n, d, false);
    auto k = split_heads(b, L + "/attn/k", linear(b, L + "/attn/k", h1, h, kv * d, false), B, S, kv, d, false);
    auto v = split_heads(b, L + "/attn/v", linear(b, L + "/attn/v", h1, h, kv * d, false), B, S, kv, d, false);
    q = apply_rope(b, L + "/attn/q_rope", q, cs, d);
    k = apply_rope(b, L + "/attn/k_rope", k, cs, d);
    if (kv < n) {
      k = repeat_kv(b, L + "/attn/k_repeat", k, B, kv, n / kv, S, d);
      v = repeat_kv(b, L + "/attn/v_repeat", v, B, kv, n / kv, S, d);
    }
    auto kT = b.op(L + "/attn/k", "Transpose", {k}, {attr("perm", Dims{0, 1, 3, 2})});
    auto ctx = attention(b, L + "/attn", q, kT, v, B, S, n, d, scale, mask);
    x = b.op(L + "/attn_residual", "Add", {x, linear(b, L + "/attn/o", ctx, n * d, h, false)});
    auto h2 = rms_norm(b, L + "/mlp_norm", x, h, kEps);
    x = b.op(L + "/mlp_residual", "Add", {x, mlp(b, L, h2)});
  }
  x = rms_norm(b, "final_norm", x, h, kEps);
  lm_loss(b, lm_head(b, s, x, wte), labels, B, S, V, std::nullopt);
}

/// SwiGLU: down(silu(gate(x)) * up(x)), no biases.
T swiglu(Builder& b, const std::string& scope, const T& x, std::int64_t h, std::int64_t f) {
  auto g = linear(b, scope + "/gate", x, h, f, false);
  auto silu = b.op(scope + "/act", "Mul", {g, b.op(scope + "/act", "Sigmoid", {g})});
  auto u = linear(b, scope + "/up", x, h, f, false);
  auto p = b.op(scope, "Mul", {silu, u});
  return linear(b, scope + "/down", p, f, h, false);
}

}  // namespace

void build_gpt(Builder& b, const ModelSpec& s) {
  const std::int64_t h = s.hidden, f = effective_ffn(s);
  gpt_stack(b, s, [&](Builder& b, const std::string& L, const T& x) {
    auto u = linear(b, L + "/mlp/fc1", x, h, f, s.bias);
    auto g = gelu(b, L + "/mlp/gelu", u);
    return linear(b, L + "/mlp/fc2", g, f, h, s.bias);
  });
}

void build_moe(Builder& b, const ModelSpec& s) {
  const std::int64_t h = s.hidden, f = effective_ffn(s);
  const auto [zeros_gates, zeros_out] = moe_zeros(b, s);
  gpt_stack(b, s, [&](Builder& b, const std::string& L, const T& x) {
    return routed_experts(b, L + "/moe", x, s, zeros_gates, zeros_out, [&](Builder& b, const std::string& X, const T& xe) {
      auto u = linear(b, X + "/fc1", xe, h, f, s.bias);
      auto g = gelu(b, X + "/gelu", u);
      return linear(b, X + "/fc2", g, f, h, s.bias);
    });
  });
}

void build_llama(Builder& b, const ModelSpec& s) {
  const std::int64_t h = s.hidden, f = effective_ffn(s);
  llama_stack(b, s, [&](Builder& b, const std::string& L, const T& x) { return swiglu(b, L + "/mlp", x, h, f); });
}

void build_llama_moe(Builder& b, const ModelSpec& s) {
  const std::int64_t h = s.hidden, f = effective_ffn(s);
  const auto [zeros_gates, zeros_out] = moe_zeros(b, s);
  llama_stack(b, s, [&](Builder& b, const std::string& L, const T& x) {
    return routed_experts(b, L + "/moe", x, s, zeros_gates, zeros_out,
                          [&](Builder& b, const std::string& X, const T& xe) { return swiglu(b, X, xe, h, f); });
  });
}

}  // namespace planner::modelgen::detail
