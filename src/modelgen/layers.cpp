#include "layers.hpp"

#include <cmath>

namespace planner::modelgen::detail {

using onnx::TensorProto;

T linear(Builder& b, const std::string& scope, const T& x, std::int64_t in, std::int64_t out, bool bias) {
  auto w = b.weight_of(scope, ".weight", {in, out});
  auto y = b.op(scope, "MatMul", {x, w});
  if (!bias) return y;
  auto bb = b.weight_of(scope, ".bias", {out}, Init::zeros);
  return b.op(scope, "Add", {y, bb});
}

T layer_norm(Builder& b, const std::string& scope, const T& x, std::int64_t h, float eps) {
  auto w = b.weight_of(scope, ".weight", {h}, Init::ones);
  auto bb = b.weight_of(scope, ".bias", {h}, Init::zeros);
  return b.op(scope, "LayerNormalization", {x, w, bb},
              {attr("axis", std::int64_t{-1}), attr("epsilon", eps)});
}

T rms_norm(Builder& b, const std::string& scope, const T& x, std::int64_t h, float eps) {
  auto w = b.weight_of(scope, ".weight", {h}, Init::ones);
  auto sq = b.op(scope, "Mul", {x, x});
  auto ms = b.op(scope, "ReduceMean", {sq}, {attr("axes", Dims{-1}), attr("keepdims", std::int64_t{1})});
  auto e = b.op(scope, "Add", {ms, b.scalar(fmt::format("const.norm_eps.{}", eps), eps)});
  auto rms = b.op(scope, "Sqrt", {e});
  auto n = b.op(scope, "Div", {x, rms});
  return b.op(scope, "Mul", {n, w});
}

T gelu(Builder& b, const std::string& scope, const T& x) {
  auto s = b.op(scope, "Div", {x, b.scalar("const.sqrt2", static_cast<float>(std::sqrt(2.0)))});
  auto e = b.op(scope, "Erf", {s});
  auto p = b.op(scope, "Add", {e, b.scalar("const.one", 1.0f)});
  auto m = b.op(scope, "Mul", {x, p});
  return b.op(scope, "Mul", {m, b.scalar("const.half", 0.5f)});
}

T causal_mask(Builder& b, std::int64_t S) {
  TensorProto fill;
  fill.set_data_type(TensorProto::FLOAT);
  fill.add_dims(1);
  fill.add_float_data(-10000.0f);
  auto full = b.op("causal_mask", "ConstantOfShape", {b.vec({S, S})}, {attr("value", fill)});
  // Trilu(upper=1, k=1) keeps the strictly upper triangle (key after query).
  return b.op("causal_mask", "Trilu", {full, b.scalar_i(1)}, {attr("upper", std::int64_t{1})});
}

T split_heads(Builder& b, const std::string& scope, const T& x, std::int64_t B, std::int64_t S,
              std::int64_t n, std::int64_t d, bool transposed) {
  auto r = b.op(scope, "Reshape", {x, b.vec({-1, S, n, d})});
  return b.op(scope, "Transpose", {r}, {attr("perm", transposed ? Dims{0, 2, 3, 1} : Dims{0, 2, 1, 3})});
}

T attention(Builder& b, const std::string& scope, const T& q, const T& kT, const T& v,
            std::int64_t B, std::int64_t S, std::int64_t n, std::int64_t d,
            std::optional<float> scale, const std::optional<T>& bias) {
  const std::string sc = scope + "/scores";
  auto s = b.op(sc, "MatMul", {q, kT});                       // [B,n,S,S]
  if (scale) s = b.op(sc, "Mul", {s, b.scalar(fmt::format("const.attn_scale.d{}", d), *scale)});
  if (bias) s = b.op(sc, "Add", {s, *bias});
  auto p = b.op(scope, "Softmax", {s}, {attr("axis", std::int64_t{-1})});
  const std::string cc = scope + "/context";
  auto c = b.op(cc, "MatMul", {p, v});                        // [B,n,S,d]
  auto t = b.op(cc, "Transpose", {c}, {attr("perm", Dims{0, 2, 1, 3})});
  return b.op(cc, "Reshape", {t, b.vec({-1, S, n * d})});
}

void lm_loss(Builder& b, const T& logits, const T& labels, std::int64_t B, std::int64_t S,
             std::int64_t V, std::optional<std::int64_t> ignore_index) {
  auto lf = b.op("loss/logits", "Reshape", {logits, b.vec({-1, V})});
  auto yf = b.op("loss/labels", "Reshape", {labels, b.vec({-1})});
  std::vector<onnx::AttributeProto> attrs{attr("reduction", std::string("mean"))};
  if (ignore_index) attrs.push_back(attr("ignore_index", *ignore_index));
  auto l = b.op("loss", "SoftmaxCrossEntropyLoss", {lf, yf}, std::move(attrs));
  b.output(b.rename_last_output(l, "loss"), TensorProto::FLOAT, {});
}

void class_loss(Builder& b, const T& logits, const T& labels) {
  auto l = b.op("loss", "SoftmaxCrossEntropyLoss", {logits, labels},
                {attr("reduction", std::string("mean"))});
  b.output(b.rename_last_output(l, "loss"), TensorProto::FLOAT, {});
}

}  // namespace planner::modelgen::detail
