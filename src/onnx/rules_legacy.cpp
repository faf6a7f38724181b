// Shape rules: ops removed from the ONNX standard (experimental ops of opsets
// 1-9) that old converters still emit: ImageScaler, Crop, Affine, Scale,
// ScaledTanh, ParametricSoftplus, ConstantFill, GivenTensorFill.
#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

/// Crop(input [N,C,H,W]; border = [left, top, right, bottom]; scale = [h, w]).
RuleStatus rule_crop(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  if (x.size() != 4) return c.fail("input {} is not NCHW", shape_str(x));
  auto border = c.attr_ints("border");
  if (!border || border->size() != 4) return c.fail("border must hold 4 values");
  const I64 left = (*border)[0], top = (*border)[1], right = (*border)[2], bottom = (*border)[3];
  Shape out = x;
  if (auto sc = c.attr_ints("scale"); sc && sc->size() == 2) {
    out[2] = (*sc)[0];
    out[3] = (*sc)[1];
  } else {
    out[2] = x[2] - top - bottom;
    out[3] = x[3] - left - right;
  }
  if (out[2] < 0 || out[3] < 0) return c.fail("border {} larger than input {}", shape_str(*border), shape_str(x));
  c.set(0, std::move(out), c.elem(0));
  return RuleStatus::ok;
}

/// ConstantFill: shape from the attribute or the values of input 0.
RuleStatus rule_constant_fill(RuleCtx& c) {
  Shape s;
  if (c.attr_i("input_as_shape", 0) != 0) {
    auto v = c.ints(0);
    if (!v) return RuleStatus::unknown;
    s = *v;
  } else if (auto a = c.attr_ints("shape")) {
    s = *a;
  } else if (c.has(0)) {
    s = c.shape(0);
  }
  if (auto extra = c.attr_ints("extra_shape")) s.insert(s.end(), extra->begin(), extra->end());
  for (auto d : s)
    if (d < 0) return c.fail("negative dim in {}", shape_str(s));
  c.set(0, std::move(s), static_cast<int>(c.attr_i("dtype", kFloat)));
  return RuleStatus::ok;
}

RuleStatus rule_given_tensor_fill(RuleCtx& c) {
  auto s = c.attr_ints("shape");
  if (!s) return RuleStatus::unknown;
  c.set(0, *s, kFloat);
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "ImageScaler", rule_same_shape},
    {"", "Affine", rule_same_shape},
    {"", "Scale", rule_same_shape},
    {"", "ScaledTanh", rule_same_shape},
    {"", "ParametricSoftplus", rule_same_shape},
    {"", "Crop", rule_crop},
    {"", "ConstantFill", rule_constant_fill},
    {"", "GivenTensorFill", rule_given_tensor_fill},
};

}  // namespace

std::span<const ShapeRule> legacy_rules() { return kRules; }

}  // namespace planner::onnx::detail
