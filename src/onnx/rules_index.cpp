// Shape rules: indexing and slicing (Gather*, Scatter*, Slice, Split, Concat,
// Pad, OneHot, TopK, NonZero), with values where shape arithmetic needs them.
#include <algorithm>
#include <limits>

#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

/// Copies element `src` of `from` onto the end of `to`.
void push_value(Values& to, const Values& from, std::size_t src) {
  if (from.is_float) to.f.push_back(from.f[src]);
  else to.i.push_back(from.i[src]);
}

RuleStatus rule_gather(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  const Shape& d = c.shape(0);
  const Shape& idx = c.shape(1);
  auto axis = norm_axis(c.attr_i("axis", 0), d.size());
  if (!axis) return c.fail("axis out of range for data {}", shape_str(d));
  Shape out(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(*axis));
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), d.begin() + static_cast<std::ptrdiff_t>(*axis) + 1, d.end());
  c.set(0, out, c.elem(0));
  const Values* dv = c.vals(0);
  const Values* iv = c.vals(1);
  auto n = checked_numel(out);
  if (!dv || !iv || !n || static_cast<std::size_t>(*n) > kMaxTracked) return RuleStatus::ok;
  // out[outer, j, inner] = data[outer, idx[j], inner]
  I64 outer = 1, inner = 1;
  for (std::size_t k = 0; k < *axis; ++k) outer *= d[k];
  for (std::size_t k = *axis + 1; k < d.size(); ++k) inner *= d[k];
  const I64 dim = d[*axis];
  Values r;
  r.is_float = dv->is_float;
  for (I64 o = 0; o < outer; ++o)
    for (std::size_t j = 0; j < iv->size(); ++j) {
      I64 ix = iv->n(j);
      if (ix < 0) ix += dim;
      if (ix < 0 || ix >= dim) return RuleStatus::ok;  // the shape stands; the values are unknowable
      for (I64 in = 0; in < inner; ++in) push_value(r, *dv, static_cast<std::size_t>((o * dim + ix) * inner + in));
    }
  c.set_values(0, std::move(r));
  return RuleStatus::ok;
}

RuleStatus rule_gather_elements(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  c.set(0, c.shape(1), c.elem(0));
  return RuleStatus::ok;
}

}  // namespace

RuleStatus rule_gather_nd(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  const Shape& d = c.shape(0);
  const Shape& idx = c.shape(1);
  const I64 b = c.attr_i("batch_dims", 0);
  if (idx.empty()) return c.fail("indices must have rank >= 1");
  const I64 k = idx.back();
  if (b < 0 || b + k > static_cast<I64>(d.size()))
    return c.fail("indices {} (batch_dims {}) do not fit data {}", shape_str(idx), b, shape_str(d));
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), d.begin() + static_cast<std::ptrdiff_t>(b + k), d.end());
  c.set(0, std::move(out), c.elem(0));
  return RuleStatus::ok;
}

namespace {

RuleStatus rule_like_data(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  c.same_as(0, 0);
  return RuleStatus::ok;
}

}  // namespace

/// Slice (opset 1-9: attributes; 10+: inputs starts, ends, axes, steps).
RuleStatus rule_slice(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  std::optional<std::vector<I64>> starts, ends, axes, steps;
  if (auto s = c.attr_ints("starts")) {
    starts = s;
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    starts = c.ints(1);
    ends = c.ints(2);
    if (c.has(3)) {
      axes = c.ints(3);
      if (!axes) return RuleStatus::unknown;
    }
    if (c.has(4)) {
      steps = c.ints(4);
      if (!steps) return RuleStatus::unknown;
    }
  }
  if (!starts || !ends) return RuleStatus::unknown;
  const std::size_t n = starts->size();
  if (ends->size() != n) return c.fail("{} starts but {} ends", n, ends->size());
  if (!axes) {
    axes = std::vector<I64>(n);
    for (std::size_t k = 0; k < n; ++k) (*axes)[k] = static_cast<I64>(k);
  }
  if (!steps) steps = std::vector<I64>(n, 1);
  if (axes->size() != n || steps->size() != n) return c.fail("starts/ends/axes/steps lengths differ");
  Shape out = x;
  std::vector<I64> first(x.size(), 0), step(x.size(), 1);
  constexpr I64 kBig = std::int64_t{1} << 62;
  for (std::size_t k = 0; k < n; ++k) {
    auto ax = norm_axis((*axes)[k], x.size());
    if (!ax) return c.fail("axis {} out of range for {}", (*axes)[k], shape_str(x));
    const I64 dim = x[*ax];
    const I64 st = (*steps)[k];
    if (st == 0) return c.fail("step 0");
    I64 s = std::clamp<I64>((*starts)[k], -kBig, kBig), e = std::clamp<I64>((*ends)[k], -kBig, kBig);
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    I64 len;
    if (st > 0) {
      s = std::clamp<I64>(s, 0, dim);
      e = std::clamp<I64>(e, 0, dim);
      len = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<I64>(s, 0, dim - 1);
      e = std::clamp<I64>(e, -1, dim - 1);
      len = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    out[*ax] = len;
    first[*ax] = s;
    step[*ax] = st;
  }
  c.set(0, out, c.elem(0));
  const Values* v = c.vals(0);
  auto cnt = checked_numel(out);
  if (v && cnt && static_cast<std::size_t>(*cnt) <= kMaxTracked) {
    const auto st_in = strides_of(x), st_out = strides_of(out);
    Values r;
    r.is_float = v->is_float;
    for (I64 k = 0; k < *cnt; ++k) {
      I64 rem = k, src = 0;
      for (std::size_t ax = 0; ax < out.size(); ++ax) {
        I64 idx = rem / st_out[ax];
        rem %= st_out[ax];
        src += (first[ax] + idx * step[ax]) * st_in[ax];
      }
      push_value(r, *v, static_cast<std::size_t>(src));
    }
    c.set_values(0, std::move(r));
  }
  return RuleStatus::ok;
}

namespace {

RuleStatus rule_split(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  auto axis = norm_axis(c.attr_i("axis", 0), x.size());
  if (!axis) return c.fail("axis out of range for {}", shape_str(x));
  const std::size_t n_out = c.out.size();
  const I64 dim = x[*axis];
  std::vector<I64> sizes;
  if (auto s = c.attr_ints("split")) sizes = *s;
  else if (c.has(1)) {
    auto v = c.ints(1);
    if (!v) return RuleStatus::unknown;
    sizes = *v;
  } else {
    const I64 parts = c.attr_i("num_outputs", static_cast<I64>(n_out));
    if (parts <= 0) return c.fail("no outputs to split into");
    const I64 chunk = (dim + parts - 1) / parts;
    for (I64 k = 0; k < parts; ++k) sizes.push_back(std::max<I64>(0, std::min(chunk, dim - k * chunk)));
  }
  if (sizes.size() != n_out) return c.fail("{} split sizes for {} outputs", sizes.size(), n_out);
  I64 total = 0;
  for (auto s : sizes) {
    if (s < 0) return c.fail("negative split size");
    total += s;
  }
  if (total != dim) return c.fail("split sizes sum to {}, dim {} of {} is {}", total, *axis, shape_str(x), dim);
  I64 offset = 0;
  for (std::size_t k = 0; k < n_out; ++k) {
    Shape s = x;
    s[*axis] = sizes[k];
    c.set(k, s, c.elem(0));
    if (auto* v = c.vals(0); v && x.size() == 1) {
      Values r;
      r.is_float = v->is_float;
      for (I64 j = 0; j < sizes[k]; ++j) push_value(r, *v, static_cast<std::size_t>(offset + j));
      c.set_values(k, std::move(r));
    }
    offset += sizes[k];
  }
  return RuleStatus::ok;
}

}  // namespace

RuleStatus rule_concat(RuleCtx& c) {
  std::optional<Shape> out;
  std::size_t axis = 0;
  int elem = kUndefined;
  // Exporters (and tools that shrink models) sometimes concatenate scalars
  // with 1-D shape pieces; treat the scalars as [1] as runtimes do.
  bool has_1d = false;
  for (std::size_t k = 0; k < c.in.size(); ++k) has_1d = has_1d || (c.has(k) && c.rank(k) == 1);
  auto shape_of = [&](std::size_t k) { return has_1d && c.rank(k) == 0 ? Shape{1} : c.shape(k); };
  for (std::size_t k = 0; k < c.in.size(); ++k) {
    if (!c.has(k)) continue;
    const Shape s = shape_of(k);
    if (!out) {
      auto ax = norm_axis(c.attr_i("axis", 0), s.size());
      if (!ax) return c.fail("axis out of range for {}", shape_str(s));
      axis = *ax;
      out = s;
      elem = c.elem(k);
      continue;
    }
    if (s.size() != out->size()) return c.fail("inputs have ranks {} and {}", out->size(), s.size());
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (d == axis) continue;
      if (s[d] != (*out)[d]) return c.fail("inputs {} and {} differ off axis {}", shape_str(*out), shape_str(s), axis);
    }
    (*out)[axis] += s[axis];
  }
  if (!out) return RuleStatus::unknown;
  c.set(0, *out, elem);
  // ConcatTraining's second output: each input's length along the axis.
  if (c.out.size() > 1) {
    std::vector<I64> lens;
    for (std::size_t k = 0; k < c.in.size(); ++k)
      if (c.has(k)) lens.push_back(shape_of(k)[axis]);
    c.set(1, {static_cast<I64>(lens.size())}, kInt64);
    c.set_values(1, Values::ints(std::move(lens)));
  }
  // Values: concatenation along the axis.
  auto n = checked_numel(*out);
  if (!n || static_cast<std::size_t>(*n) > kMaxTracked) return RuleStatus::ok;
  I64 outer = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= (*out)[d];
  Values r;
  for (std::size_t k = 0; k < c.in.size(); ++k)
    if (c.has(k) && !c.vals(k)) return RuleStatus::ok;
  for (std::size_t k = 0; k < c.in.size(); ++k)
    if (c.has(k) && c.vals(k)->is_float) r.is_float = true;
  for (I64 o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < c.in.size(); ++k) {
      if (!c.has(k)) continue;
      const Values v = c.vals(k)->cast_to(r.is_float ? kDouble : kInt64);
      const I64 block = outer ? static_cast<I64>(v.size()) / outer : 0;
      for (I64 j = 0; j < block; ++j) push_value(r, v, static_cast<std::size_t>(o * block + j));
    }
  c.set_values(0, std::move(r));
  return RuleStatus::ok;
}

namespace {

RuleStatus rule_pad(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  std::optional<std::vector<I64>> pads = c.attr_ints("pads");
  if (!pads) pads = c.attr_ints("paddings");  // opset 1
  if (!pads) {
    if (!c.has(1)) return c.fail("Pad without pads");
    pads = c.ints(1);
  }
  if (!pads) return RuleStatus::unknown;
  std::vector<std::size_t> axes;
  if (c.has(3)) {
    auto a = c.ints(3);
    if (!a) return RuleStatus::unknown;
    for (auto v : *a) {
      auto ax = norm_axis(v, x.size());
      if (!ax) return c.fail("axis {} out of range", v);
      axes.push_back(*ax);
    }
  } else {
    for (std::size_t k = 0; k < x.size(); ++k) axes.push_back(k);
  }
  if (pads->size() != 2 * axes.size()) return c.fail("{} pads for input {}", pads->size(), shape_str(x));
  Shape out = x;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    out[axes[k]] += (*pads)[k] + (*pads)[k + axes.size()];
    if (out[axes[k]] < 0) return c.fail("pads make dim {} negative", axes[k]);
  }
  c.set(0, std::move(out), c.elem(0));
  return RuleStatus::ok;
}

RuleStatus rule_one_hot(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  auto depth = c.vals(1);
  if (!depth || depth->size() != 1) return RuleStatus::unknown;
  const Shape& idx = c.shape(0);
  auto axis = norm_axis(c.attr_i("axis", -1), idx.size() + 1);
  if (!axis) return c.fail("axis out of range");
  Shape out = idx;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(*axis), depth->n(0));
  c.set(0, std::move(out), c.has(2) ? c.elem(2) : kFloat);
  return RuleStatus::ok;
}

RuleStatus rule_topk(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  auto axis = norm_axis(c.attr_i("axis", -1), x.size());
  if (!axis) return c.fail("axis out of range");
  std::optional<I64> k = c.attr_i("k");
  if (c.has(1)) k = c.scalar(1);
  if (!k) return RuleStatus::unknown;
  if (*k < 0 || *k > x[*axis]) return c.fail("k = {} for a dim of {}", *k, x[*axis]);
  Shape out = x;
  out[*axis] = *k;
  c.set(0, out, c.elem(0));
  c.set(1, out, kInt64);
  return RuleStatus::ok;
}

RuleStatus rule_nonzero(RuleCtx& c) {
  auto* v = c.vals(0);
  if (!v) return c.fail("NonZero's output size depends on the data; its input is not a known constant");
  I64 nz = 0;
  for (std::size_t k = 0; k < v->size(); ++k) nz += v->d(k) != 0;
  c.set(0, {static_cast<I64>(c.rank(0)), nz}, kInt64);
  return RuleStatus::ok;
}

RuleStatus rule_compress(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  auto* cond = c.vals(1);
  if (!cond) return c.fail("Compress's output size depends on its condition, which is not a known constant");
  I64 kept = 0;
  for (std::size_t k = 0; k < cond->size(); ++k) kept += cond->d(k) != 0;
  if (auto a = c.attr_i("axis")) {
    auto ax = norm_axis(*a, c.rank(0));
    if (!ax) return c.fail("axis out of range");
    Shape out = c.shape(0);
    out[*ax] = kept;
    c.set(0, std::move(out), c.elem(0));
  } else {
    c.set(0, {kept}, c.elem(0));
  }
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "Gather", rule_gather},
    {"", "GatherElements", rule_gather_elements},
    {"", "GatherND", rule_gather_nd},
    {"", "ScatterND", rule_like_data},
    {"", "ScatterElements", rule_like_data},
    {"", "Scatter", rule_like_data},
    {"", "Slice", rule_slice},
    {"", "DynamicSlice", rule_slice},
    {"", "Split", rule_split},
    {"", "Concat", rule_concat},
    {"", "Pad", rule_pad},
    {"", "OneHot", rule_one_hot},
    {"", "TopK", rule_topk},
    {"", "NonZero", rule_nonzero},
    {"", "Compress", rule_compress},
};

}  // namespace

std::span<const ShapeRule> index_rules() { return kRules; }

}  // namespace planner::onnx::detail
