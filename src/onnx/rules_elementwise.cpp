// Shape rules: elementwise ops (unary, numpy-broadcast binary and variadic,
// comparisons, Where, Cast, Clip, Dropout) with value tracking for the small
// integer arithmetic exporters use to compute shapes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "infer.hpp"

namespace planner::onnx::detail {

RuleStatus rule_same_shape(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0);
  return RuleStatus::ok;
}

namespace {

using I64 = std::int64_t;

// A double as int64 when it is a value int64 holds (the cast is undefined otherwise).
std::optional<I64> to_int(double f) {
  if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) return std::nullopt;
  return static_cast<I64>(f);
}

// --- unary ------------------------------------------------------------------

std::optional<Values> eval_unary(std::string_view op, const Values& v, int elem) {
  const bool fl = is_float_elem(elem);
  Values r;
  r.is_float = fl;
  const std::size_t n = v.size();
  for (std::size_t k = 0; k < n; ++k) {
    double x = v.d(k);
    double y;
    if (op == "Identity") y = x;
    else if (op == "Neg") y = -x;
    else if (op == "Abs") y = std::fabs(x);
    else if (op == "Floor") y = std::floor(x);
    else if (op == "Ceil") y = std::ceil(x);
    else if (op == "Round") y = std::nearbyint(x);
    else if (op == "Sqrt") y = std::sqrt(x);
    else if (op == "Reciprocal") y = fl ? 1.0 / x : (x != 0 ? 1.0 / x : 0.0);
    else if (op == "Relu") y = std::max(0.0, x);
    else if (op == "Sign") y = (x > 0) - (x < 0);
    else if (op == "Not") y = x == 0 ? 1 : 0;
    else if (op == "Exp") y = std::exp(x);
    else if (op == "Log") y = std::log(x);
    else return std::nullopt;
    if (fl) r.f.push_back(y);
    else if (!v.is_float && (op == "Neg" || op == "Abs") && v.i[k] == std::numeric_limits<I64>::min())
      return std::nullopt;  // -INT64_MIN overflows
    else if (!v.is_float && (op == "Identity" || op == "Neg" || op == "Abs" || op == "Not" || op == "Sign" ||
                             op == "Relu" || op == "Floor" || op == "Ceil" || op == "Round"))
      r.i.push_back(op == "Identity" || op == "Floor" || op == "Ceil" || op == "Round" ? v.i[k]
                    : op == "Neg" ? -v.i[k]
                    : op == "Abs" ? (v.i[k] < 0 ? -v.i[k] : v.i[k])
                    : static_cast<I64>(y));  // Not, Sign, Relu of an int64: 0, +-1 or the value itself
    else if (auto yi = to_int(y)) r.i.push_back(*yi);
    else return std::nullopt;
  }
  return r;
}

RuleStatus rule_unary(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0);
  if (auto* v = c.vals(0))
    if (auto r = eval_unary(c.node.op_type(), *v, c.elem(0))) c.set_values(0, std::move(*r));
  return RuleStatus::ok;
}

RuleStatus rule_bool_unary(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0, kBool);
  if (c.node.op_type() == "Not")
    if (auto* v = c.vals(0))
      if (auto r = eval_unary("Not", *v, kBool)) c.set_values(0, std::move(*r));
  return RuleStatus::ok;
}

// --- binary -------------------------------------------------------------------

// Integer results that overflow int64 are not tracked (nullopt: the value
// is unknown), never computed with undefined behaviour (found by
// fuzz_onnx_import: a Mul of 768 and -8.6e18).
std::optional<I64> int_pow(I64 b, I64 e) {
  if (e < 0) return 0;
  I64 r = 1;
  for (I64 k = 0; k < e && k < 64; ++k)
    if (__builtin_mul_overflow(r, b, &r)) return std::nullopt;
  return r;
}


/// One scalar step of a binary op; integers keep integer semantics.
std::optional<double> eval_float(std::string_view op, double a, double b) {
  if (op == "Add" || op == "Sum") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Pow") return std::pow(a, b);
  if (op == "Mod") return std::fmod(a, b);
  if (op == "Max") return std::max(a, b);
  if (op == "Min") return std::min(a, b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "Greater") return a > b;
  if (op == "GreaterOrEqual") return a >= b;
  if (op == "And") return (a != 0) && (b != 0);
  if (op == "Or") return (a != 0) || (b != 0);
  if (op == "Xor") return (a != 0) != (b != 0);
  return std::nullopt;
}

std::optional<I64> eval_int(std::string_view op, I64 a, I64 b, bool fmod_mode) {
  I64 r = 0;
  if (op == "Add" || op == "Sum") return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional<I64>{r};
  if (op == "Sub") return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional<I64>{r};
  if (op == "Mul") return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional<I64>{r};
  const bool min_by_minus_one = a == std::numeric_limits<I64>::min() && b == -1;  // overflows a / b and a % b
  if (op == "Div") return b == 0 || min_by_minus_one ? std::optional<I64>{} : a / b;
  if (op == "Pow") return int_pow(a, b);
  if (op == "Mod") {
    if (b == 0 || min_by_minus_one) return std::nullopt;
    I64 m = a % b;
    if (!fmod_mode && m != 0 && ((m < 0) != (b < 0))) m += b;  // Python-style sign
    return m;
  }
  if (op == "Max") return std::max(a, b);
  if (op == "Min") return std::min(a, b);
  if (auto f = eval_float(op, static_cast<double>(a), static_cast<double>(b))) return to_int(*f);
  return std::nullopt;
}

bool is_compare(std::string_view op) {
  return op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" || op == "GreaterOrEqual" ||
         op == "And" || op == "Or" || op == "Xor";
}

std::optional<Values> eval_binary(std::string_view op, const Values& a, const Shape& sa, const Values& b,
                                  const Shape& sb, const Shape& so, int in_elem, bool fmod_mode) {
  auto n = checked_numel(so);
  if (!n || static_cast<std::size_t>(*n) > kMaxTracked) return std::nullopt;
  Values x = broadcast_values(a, sa, so), y = broadcast_values(b, sb, so);
  const bool fl = is_float_elem(in_elem) || a.is_float || b.is_float;
  Values r;
  r.is_float = fl && !is_compare(op);
  for (I64 k = 0; k < *n; ++k) {
    if (fl) {
      auto v = eval_float(op, x.d(k), y.d(k));
      if (!v) return std::nullopt;
      if (r.is_float) r.f.push_back(*v);
      else r.i.push_back(static_cast<I64>(*v));
    } else {
      auto v = eval_int(op, x.i[k], y.i[k], fmod_mode);
      if (!v) return std::nullopt;
      r.i.push_back(*v);
    }
  }
  return r;
}

/// Numpy-broadcast binary/variadic ops; comparisons give bool.
RuleStatus rule_broadcast(RuleCtx& c) {
  const std::string_view op = c.node.op_type();
  std::optional<Shape> s;
  std::size_t first = 0;
  for (std::size_t k = 0; k < c.in.size(); ++k) {
    if (!c.has(k)) continue;
    if (!s) {
      s = c.shape(k);
      first = k;
      continue;
    }
    auto b = broadcast_shapes(*s, c.shape(k));
    if (!b) {
      // Opset < 7 "broadcast" attribute: the output takes A's shape.
      if (c.attr_i("broadcast", 0) == 1 && k == 1) continue;
      return c.fail("inputs {} and {} do not broadcast", shape_str(*s), shape_str(c.shape(k)));
    }
    s = std::move(*b);
  }
  if (!s) return RuleStatus::unknown;
  if (c.attr_i("broadcast", 0) == 1 && c.has(0)) s = c.shape(0);
  const int elem = is_compare(op) ? kBool : c.elem(first);
  c.set(0, *s, elem);
  // Values: fold pairwise when every input is known.
  std::optional<Values> acc;
  Shape acc_shape;
  for (std::size_t k = 0; k < c.in.size(); ++k) {
    if (!c.has(k)) continue;
    const Values* v = c.vals(k);
    if (!v) return RuleStatus::ok;
    if (!acc) {
      acc = *v;
      acc_shape = c.shape(k);
      continue;
    }
    auto so = broadcast_shapes(acc_shape, c.shape(k));
    if (!so) return RuleStatus::ok;
    acc = eval_binary(op == "Mean" ? "Sum" : op, *acc, acc_shape, *v, c.shape(k), *so, c.elem(first),
                      c.attr_i("fmod", 0) == 1);
    if (!acc) return RuleStatus::ok;
    acc_shape = *so;
  }
  if (acc && op == "Mean" && acc->is_float) {
    double cnt = 0;
    for (std::size_t k = 0; k < c.in.size(); ++k) cnt += c.has(k) ? 1 : 0;
    for (auto& x : acc->f) x /= cnt;
  }
  if (acc && acc_shape == *s) c.set_values(0, acc->cast_to(elem));
  return RuleStatus::ok;
}

RuleStatus rule_where(RuleCtx& c) {
  if (!c.has(0) || !c.has(1) || !c.has(2)) return RuleStatus::unknown;
  auto s = broadcast_shapes(c.shape(0), c.shape(1));
  if (s) s = broadcast_shapes(*s, c.shape(2));
  if (!s) return c.fail("inputs {}, {}, {} do not broadcast", shape_str(c.shape(0)), shape_str(c.shape(1)),
                        shape_str(c.shape(2)));
  const int elem = c.elem(1) != kUndefined ? c.elem(1) : c.elem(2);
  c.set(0, *s, elem);
  auto* cv = c.vals(0);
  auto* xv = c.vals(1);
  auto* yv = c.vals(2);
  auto n = checked_numel(*s);
  if (cv && xv && yv && n && static_cast<std::size_t>(*n) <= kMaxTracked) {
    Values cc = broadcast_values(*cv, c.shape(0), *s);
    Values x = broadcast_values(xv->cast_to(elem), c.shape(1), *s);
    Values y = broadcast_values(yv->cast_to(elem), c.shape(2), *s);
    Values r;
    r.is_float = x.is_float;
    for (I64 k = 0; k < *n; ++k) {
      bool take = cc.d(k) != 0;
      if (r.is_float) r.f.push_back(take ? x.f[k] : y.f[k]);
      else r.i.push_back(take ? x.i[k] : y.i[k]);
    }
    c.set_values(0, std::move(r));
  }
  return RuleStatus::ok;
}

RuleStatus rule_cast(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  int to = static_cast<int>(c.attr_i("to", c.elem(0)));
  if (c.node.op_type() == "CastLike" && c.has(1)) to = c.elem(1);
  c.same_as(0, 0, to);
  if (auto* v = c.vals(0)) c.set_values(0, v->cast_to(to));
  return RuleStatus::ok;
}

RuleStatus rule_clip(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0);
  auto* v = c.vals(0);
  if (!v) return RuleStatus::ok;
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  if (auto a = c.attr_f("min")) lo = *a;
  if (auto a = c.attr_f("max")) hi = *a;
  if (c.has(1)) {
    auto* m = c.vals(1);
    if (!m || m->size() != 1) return RuleStatus::ok;
    lo = m->d(0);
  }
  if (c.has(2)) {
    auto* m = c.vals(2);
    if (!m || m->size() != 1) return RuleStatus::ok;
    hi = m->d(0);
  }
  if (!(lo <= hi)) return RuleStatus::ok;  // std::clamp needs lo <= hi: values not tracked
  Values r = *v;
  for (std::size_t k = 0; k < r.size(); ++k) {
    if (r.is_float) r.f[k] = std::clamp(r.f[k], lo, hi);
    else if (auto clamped = to_int(std::clamp(static_cast<double>(r.i[k]), lo, hi))) r.i[k] = *clamped;
    else return RuleStatus::ok;  // a bound beyond int64: the values are not tracked
  }
  c.set_values(0, std::move(r));
  return RuleStatus::ok;
}

RuleStatus rule_dropout(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0);
  c.same_as(1, 0, kBool);
  if (auto* v = c.vals(0)) c.set_values(0, *v);
  return RuleStatus::ok;
}

RuleStatus rule_like_with_dtype(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  int dt = static_cast<int>(c.attr_i("dtype", c.elem(0)));
  c.same_as(0, 0, dt);
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    // unary, same shape and type, values tracked where cheap
    {"", "Identity", rule_unary}, {"", "Neg", rule_unary}, {"", "Abs", rule_unary},
    {"", "Floor", rule_unary}, {"", "Ceil", rule_unary}, {"", "Round", rule_unary},
    {"", "Sqrt", rule_unary}, {"", "Reciprocal", rule_unary}, {"", "Relu", rule_unary},
    {"", "Sign", rule_unary}, {"", "Exp", rule_unary}, {"", "Log", rule_unary},
    {"", "Not", rule_bool_unary}, {"", "IsNaN", rule_bool_unary}, {"", "IsInf", rule_bool_unary},
    // unary, same shape and type
    {"", "Acos", rule_same_shape}, {"", "Acosh", rule_same_shape}, {"", "Asin", rule_same_shape},
    {"", "Asinh", rule_same_shape}, {"", "Atan", rule_same_shape}, {"", "Atanh", rule_same_shape},
    {"", "Cos", rule_same_shape}, {"", "Cosh", rule_same_shape}, {"", "Sin", rule_same_shape},
    {"", "Sinh", rule_same_shape}, {"", "Tan", rule_same_shape}, {"", "Tanh", rule_same_shape},
    {"", "Erf", rule_same_shape}, {"", "Sigmoid", rule_same_shape}, {"", "HardSigmoid", rule_same_shape},
    {"", "HardSwish", rule_same_shape}, {"", "LeakyRelu", rule_same_shape}, {"", "Elu", rule_same_shape},
    {"", "Selu", rule_same_shape}, {"", "Celu", rule_same_shape}, {"", "Softplus", rule_same_shape},
    {"", "Softsign", rule_same_shape}, {"", "ThresholdedRelu", rule_same_shape}, {"", "Mish", rule_same_shape},
    {"", "Gelu", rule_same_shape}, {"", "Shrink", rule_same_shape}, {"", "BitwiseNot", rule_same_shape},
    {"", "Softmax", rule_same_shape}, {"", "LogSoftmax", rule_same_shape}, {"", "Hardmax", rule_same_shape},
    {"", "LpNormalization", rule_same_shape}, {"", "MeanVarianceNormalization", rule_same_shape},
    {"", "Trilu", rule_same_shape}, {"", "CumSum", rule_same_shape}, {"", "ReverseSequence", rule_same_shape},
    {"", "Bernoulli", rule_like_with_dtype}, {"", "RandomNormalLike", rule_like_with_dtype},
    {"", "RandomUniformLike", rule_like_with_dtype}, {"", "EyeLike", rule_like_with_dtype},
    // broadcasting
    {"", "Add", rule_broadcast}, {"", "Sub", rule_broadcast}, {"", "Mul", rule_broadcast},
    {"", "Div", rule_broadcast}, {"", "Pow", rule_broadcast}, {"", "Mod", rule_broadcast},
    {"", "Max", rule_broadcast}, {"", "Min", rule_broadcast}, {"", "Sum", rule_broadcast},
    {"", "Mean", rule_broadcast}, {"", "PRelu", rule_broadcast}, {"", "BitShift", rule_broadcast},
    {"", "BitwiseAnd", rule_broadcast}, {"", "BitwiseOr", rule_broadcast}, {"", "BitwiseXor", rule_broadcast},
    {"", "And", rule_broadcast}, {"", "Or", rule_broadcast}, {"", "Xor", rule_broadcast},
    {"", "Equal", rule_broadcast}, {"", "Less", rule_broadcast}, {"", "LessOrEqual", rule_broadcast},
    {"", "Greater", rule_broadcast}, {"", "GreaterOrEqual", rule_broadcast},
    {"", "Where", rule_where}, {"", "Cast", rule_cast}, {"", "CastLike", rule_cast},
    {"", "Clip", rule_clip}, {"", "Dropout", rule_dropout},
};

}  // namespace

std::span<const ShapeRule> elementwise_rules() { return kRules; }

}  // namespace planner::onnx::detail
