// Shape rules: ops that change the layout or read the shape (Reshape, Flatten,
// Transpose, Squeeze, Unsqueeze, Expand, Tile, Shape, Size), with values
// carried through so shape arithmetic folds.
#include <algorithm>
#include <numeric>

#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

void pass_values(RuleCtx& c) {
  if (auto* v = c.vals(0)) c.set_values(0, *v);
}

RuleStatus rule_reshape(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  std::optional<std::vector<I64>> target;
  if (c.has(1)) target = c.ints(1);
  else target = c.attr_ints("shape");  // opset 1-4
  if (!target) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  const bool allowzero = c.attr_i("allowzero", 0) != 0;
  Shape out(target->size());
  int infer_at = -1;
  for (std::size_t k = 0; k < target->size(); ++k) {
    const I64 t = (*target)[k];
    if (t == -1) {
      if (infer_at >= 0) return c.fail("target {} has more than one -1", shape_str(*target));
      infer_at = static_cast<int>(k);
      out[k] = 1;
    } else if (t == 0 && !allowzero) {
      if (k >= x.size()) return c.fail("target {} copies dim {} of a rank-{} input", shape_str(*target), k, x.size());
      out[k] = x[k];
    } else if (t < 0) {
      return c.fail("target {} has a negative dim", shape_str(*target));
    } else {
      out[k] = t;
    }
  }
  auto n_in = checked_numel(x);
  auto n_known = checked_numel(out);
  if (!n_in || !n_known) return c.fail("element count overflows");
  if (infer_at >= 0) {
    if (*n_known == 0 || *n_in % *n_known != 0)
      return c.fail("cannot reshape {} ({} elements) to {}", shape_str(x), *n_in, shape_str(*target));
    out[static_cast<std::size_t>(infer_at)] = *n_in / *n_known;
  } else if (*n_in != *n_known) {
    return c.fail("cannot reshape {} ({} elements) to {} ({} elements)", shape_str(x), *n_in, shape_str(out), *n_known);
  }
  c.set(0, std::move(out), c.elem(0));
  pass_values(c);
  return RuleStatus::ok;
}

RuleStatus rule_flatten(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  I64 axis = c.attr_i("axis", 1);
  if (axis < 0) axis += static_cast<I64>(x.size());
  if (axis < 0 || axis > static_cast<I64>(x.size())) return c.fail("axis out of range for {}", shape_str(x));
  I64 a = 1, b = 1;
  for (std::size_t k = 0; k < x.size(); ++k) (static_cast<I64>(k) < axis ? a : b) *= x[k];
  c.set(0, {a, b}, c.elem(0));
  pass_values(c);
  return RuleStatus::ok;
}

RuleStatus rule_transpose(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  std::vector<I64> perm = c.attr_ints("perm").value_or(std::vector<I64>{});
  if (perm.empty()) {
    perm.resize(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) perm[k] = static_cast<I64>(x.size() - 1 - k);
  }
  if (perm.size() != x.size()) return c.fail("perm {} for input {}", shape_str(perm), shape_str(x));
  std::vector<char> seen(x.size(), 0);
  Shape out(x.size());
  for (std::size_t k = 0; k < perm.size(); ++k) {
    auto ax = norm_axis(perm[k], x.size());
    if (!ax || seen[*ax]) return c.fail("perm {} is not a permutation", shape_str(perm));
    seen[*ax] = 1;
    out[k] = x[*ax];
  }
  c.set(0, out, c.elem(0));
  if (auto* v = c.vals(0)) {
    const auto st_in = strides_of(x), st_out = strides_of(out);
    Values r = *v;
    for (std::size_t k = 0; k < v->size(); ++k) {
      I64 rem = static_cast<I64>(k), src = 0;
      for (std::size_t ax = 0; ax < out.size(); ++ax) {
        I64 idx = rem / st_out[ax];
        rem %= st_out[ax];
        src += idx * st_in[static_cast<std::size_t>(norm_axis(perm[ax], x.size()).value())];
      }
      if (r.is_float) r.f[k] = v->f[static_cast<std::size_t>(src)];
      else r.i[k] = v->i[static_cast<std::size_t>(src)];
    }
    c.set_values(0, std::move(r));
  }
  return RuleStatus::ok;
}

/// Axes from the attribute (older opsets) or input 1 (opset 13+).
std::optional<std::vector<I64>> axes_of(RuleCtx& c, bool& absent) {
  absent = false;
  if (auto a = c.attr_ints("axes")) return a;
  if (c.has(1)) return c.ints(1);
  absent = true;
  return std::vector<I64>{};
}

RuleStatus rule_squeeze(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  bool absent = false;
  auto axes = axes_of(c, absent);
  if (!axes) return RuleStatus::unknown;
  std::vector<char> drop(x.size(), 0);
  if (absent || axes->empty()) {
    for (std::size_t k = 0; k < x.size(); ++k) drop[k] = x[k] == 1;
  } else {
    for (auto a : *axes) {
      auto ax = norm_axis(a, x.size());
      if (!ax) return c.fail("axis {} out of range for {}", a, shape_str(x));
      if (x[*ax] != 1) return c.fail("cannot squeeze dim {} of size {} in {}", *ax, x[*ax], shape_str(x));
      drop[*ax] = 1;
    }
  }
  Shape out;
  for (std::size_t k = 0; k < x.size(); ++k)
    if (!drop[k]) out.push_back(x[k]);
  c.set(0, std::move(out), c.elem(0));
  pass_values(c);
  return RuleStatus::ok;
}

RuleStatus rule_unsqueeze(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  bool absent = false;
  auto axes = axes_of(c, absent);
  if (!axes) return RuleStatus::unknown;
  if (absent) return c.fail("Unsqueeze without axes");
  const std::size_t r = x.size() + axes->size();
  std::vector<char> ins(r, 0);
  for (auto a : *axes) {
    auto ax = norm_axis(a, r);
    if (!ax || ins[*ax]) return c.fail("axes {} invalid for input {}", shape_str(*axes), shape_str(x));
    ins[*ax] = 1;
  }
  Shape out;
  std::size_t src = 0;
  for (std::size_t k = 0; k < r; ++k) out.push_back(ins[k] ? 1 : x[src++]);
  c.set(0, std::move(out), c.elem(0));
  pass_values(c);
  return RuleStatus::ok;
}

RuleStatus rule_expand(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  auto target = c.ints(1);
  if (!target) return RuleStatus::unknown;
  for (auto d : *target)
    if (d < 0) return c.fail("target shape {} has a negative dim", shape_str(*target));
  auto out = broadcast_shapes(c.shape(0), *target);
  if (!out) return c.fail("input {} does not broadcast to {}", shape_str(c.shape(0)), shape_str(*target));
  c.set(0, *out, c.elem(0));
  auto n = checked_numel(*out);
  if (auto* v = c.vals(0); v && n && static_cast<std::size_t>(*n) <= kMaxTracked)
    c.set_values(0, broadcast_values(*v, c.shape(0), *out));
  return RuleStatus::ok;
}

RuleStatus rule_tile(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  std::optional<std::vector<I64>> reps = c.ints(1);
  if (!reps && c.has(2) && c.has(1)) {  // opset 1: (input, tiles, axis)
    auto t = c.scalar(1), a = c.scalar(2);
    if (t && a) {
      auto ax = norm_axis(*a, x.size());
      if (!ax) return c.fail("axis out of range");
      reps = std::vector<I64>(x.size(), 1);
      (*reps)[*ax] = *t;
    }
  }
  if (!reps) return RuleStatus::unknown;
  if (reps->size() != x.size()) return c.fail("{} repeats for input {}", reps->size(), shape_str(x));
  Shape out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    if ((*reps)[k] < 0) return c.fail("negative repeat");
    out[k] = x[k] * (*reps)[k];
  }
  c.set(0, out, c.elem(0));
  auto n = checked_numel(out);
  if (auto* v = c.vals(0); v && n && static_cast<std::size_t>(*n) <= kMaxTracked) {
    const auto st_out = strides_of(out), st_in = strides_of(x);
    Values r;
    r.is_float = v->is_float;
    for (I64 k = 0; k < *n; ++k) {
      I64 rem = k, src = 0;
      for (std::size_t ax = 0; ax < out.size(); ++ax) {
        I64 idx = rem / st_out[ax];
        rem %= st_out[ax];
        src += (idx % x[ax]) * st_in[ax];
      }
      if (r.is_float) r.f.push_back(v->f[static_cast<std::size_t>(src)]);
      else r.i.push_back(v->i[static_cast<std::size_t>(src)]);
    }
    c.set_values(0, std::move(r));
  }
  return RuleStatus::ok;
}

RuleStatus rule_shape(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  const I64 r = static_cast<I64>(x.size());
  I64 start = c.attr_i("start", 0), end = c.attr_i("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<I64>(start, 0, r);
  end = std::clamp<I64>(end, 0, r);
  std::vector<I64> dims;
  for (I64 k = start; k < end; ++k) dims.push_back(x[static_cast<std::size_t>(k)]);
  c.set(0, {static_cast<I64>(dims.size())}, kInt64);
  c.set_values(0, Values::ints(std::move(dims)));
  return RuleStatus::ok;
}

RuleStatus rule_size(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  auto n = checked_numel(c.shape(0));
  if (!n) return c.fail("element count overflows");
  c.set(0, {}, kInt64);
  c.set_values(0, Values::ints({*n}));
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "Reshape", rule_reshape},     {"", "Flatten", rule_flatten}, {"", "Transpose", rule_transpose},
    {"", "Squeeze", rule_squeeze},     {"", "Unsqueeze", rule_unsqueeze}, {"", "Expand", rule_expand},
    {"", "Tile", rule_tile},           {"", "Shape", rule_shape},     {"", "Size", rule_size},
};

}  // namespace

std::span<const ShapeRule> layout_rules() { return kRules; }

}  // namespace planner::onnx::detail
