// Shape rules: ops that make tensors (Constant, ConstantOfShape, Range,
// Random*, Multinomial).
#include <cmath>

#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

RuleStatus rule_constant(RuleCtx& c) {
  if (const auto* t = c.attr_t("value")) {
    auto s = tensor_shape(*t);
    if (!s.ok()) return c.fail("{}", s.error().message);
    c.set(0, *s, t->data_type());
    if (auto v = tensor_values(*t)) c.set_values(0, std::move(*v));
    return RuleStatus::ok;
  }
  if (const auto* a = c.attr("sparse_value"); a && a->has_sparse_tensor()) {
    const auto& sp = a->sparse_tensor();
    c.set(0, Shape(sp.dims().begin(), sp.dims().end()), sp.values().data_type());
    return RuleStatus::ok;
  }
  if (auto f = c.attr("value_float")) {
    c.set(0, {}, kFloat);
    c.set_values(0, Values::floats({f->f()}));
    return RuleStatus::ok;
  }
  if (auto fs = c.attr("value_floats")) {
    c.set(0, {fs->floats_size()}, kFloat);
    c.set_values(0, Values::floats(std::vector<double>(fs->floats().begin(), fs->floats().end())));
    return RuleStatus::ok;
  }
  if (auto i = c.attr("value_int")) {
    c.set(0, {}, kInt64);
    c.set_values(0, Values::ints({i->i()}));
    return RuleStatus::ok;
  }
  if (auto is = c.attr("value_ints")) {
    c.set(0, {is->ints_size()}, kInt64);
    c.set_values(0, Values::ints(std::vector<I64>(is->ints().begin(), is->ints().end())));
    return RuleStatus::ok;
  }
  if (c.attr("value_string")) {
    c.set(0, {}, kString);
    return RuleStatus::ok;
  }
  if (auto ss = c.attr("value_strings")) {
    c.set(0, {ss->strings_size()}, kString);
    return RuleStatus::ok;
  }
  return c.fail("Constant without a value attribute");
}

RuleStatus rule_constant_of_shape(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  auto dims = c.ints(0);
  if (!dims) return RuleStatus::unknown;
  for (auto d : *dims)
    if (d < 0) return c.fail("shape {} has a negative dim", shape_str(*dims));
  int elem = kFloat;
  std::optional<Values> fill;
  if (const auto* t = c.attr_t("value")) {
    elem = t->data_type();
    fill = tensor_values(*t, 1);
  }
  c.set(0, *dims, elem);
  auto n = checked_numel(*dims);
  if (!n) return c.fail("shape {} overflows", shape_str(*dims));
  if (static_cast<std::size_t>(*n) <= kMaxTracked) {
    Values v;
    v.is_float = is_float_elem(elem);
    const double x = fill && fill->size() == 1 ? fill->d(0) : 0.0;
    if (v.is_float) v.f.assign(static_cast<std::size_t>(*n), x);
    else v.i.assign(static_cast<std::size_t>(*n), fill && fill->size() == 1 ? fill->n(0) : 0);
    c.set_values(0, std::move(v));
  }
  return RuleStatus::ok;
}

}  // namespace

/// Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements.
RuleStatus rule_range(RuleCtx& c) {
  const Values* s = c.vals(0);
  const Values* l = c.vals(1);
  const Values* d = c.has(2) ? c.vals(2) : nullptr;
  if (!s || !l || s->size() != 1 || l->size() != 1 || (c.has(2) && (!d || d->size() != 1)))
    return RuleStatus::unknown;
  const int elem = c.elem(0);
  const bool fl = is_float_elem(elem);
  const double start = s->d(0), limit = l->d(0), delta = d ? d->d(0) : 1.0;
  if (delta == 0) return c.fail("delta is 0");
  const double count = std::ceil((limit - start) / delta);
  if (!(count < static_cast<double>(kMaxDim))) return c.fail("{} elements is too many", count);
  const I64 n = count > 0 ? static_cast<I64>(count) : 0;
  c.set(0, {n}, elem);
  if (static_cast<std::size_t>(n) <= kMaxTracked) {
    Values v;
    v.is_float = fl;
    for (I64 k = 0; k < n; ++k) {
      if (fl) v.f.push_back(start + static_cast<double>(k) * delta);
      else v.i.push_back(s->n(0) + k * (d ? d->n(0) : 1));
    }
    c.set_values(0, std::move(v));
  }
  return RuleStatus::ok;
}

namespace {

RuleStatus rule_random(RuleCtx& c) {
  auto s = c.attr_ints("shape");
  if (!s) return c.fail("no shape attribute");
  for (auto d : *s)
    if (d < 0) return c.fail("negative dim in shape {}", shape_str(*s));
  c.set(0, *s, static_cast<int>(c.attr_i("dtype", kFloat)));
  return RuleStatus::ok;
}

RuleStatus rule_multinomial(RuleCtx& c) {
  if (!c.has(0) || c.rank(0) != 2) return RuleStatus::unknown;
  c.set(0, {c.shape(0)[0], c.attr_i("sample_size", 1)}, static_cast<int>(c.attr_i("dtype", kInt32)));
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "Constant", rule_constant},
    {"", "ConstantOfShape", rule_constant_of_shape},
    {"", "Range", rule_range},
    {"", "RandomNormal", rule_random},
    {"", "RandomUniform", rule_random},
    {"", "Multinomial", rule_multinomial},
};

}  // namespace

std::span<const ShapeRule> generator_rules() { return kRules; }

}  // namespace planner::onnx::detail
