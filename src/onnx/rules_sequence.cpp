// Shape rules: sequence ops (SplitToSequence, SequenceConstruct,
// SequenceEmpty, SequenceAt, SequenceLength, SequenceInsert, SequenceErase,
// ConcatFromSequence). torch.onnx lowers `repeat_interleave`, `split` with
// sizes it cannot read and `unbind` to them.
//
// A sequence value is an Info with `is_sequence` and its elements, each a
// fully shaped Info; positions must be known values (constants or shape
// arithmetic), else the rule cannot tell which element is meant.
#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

/// Output k as the sequence `elems` of element type `elem`.
void set_sequence(RuleCtx& c, std::size_t k, std::vector<Info> elems, int elem) {
  if (k >= c.out.size()) return;
  Shape s;
  bool same = true;
  for (const auto& e : elems) same = same && e.shape == elems.front().shape;
  if (!elems.empty() && same) {
    s.push_back(static_cast<I64>(elems.size()));
    s.insert(s.end(), elems.front().shape->begin(), elems.front().shape->end());
  } else {
    I64 total = 0;
    for (const auto& e : elems) total += checked_numel(*e.shape).value_or(0);
    s.push_back(total);
  }
  Info& o = c.out[k];
  o.shape = std::move(s);
  o.elem = elem;
  o.is_sequence = true;
  o.elements = std::move(elems);  // small elements keep their values (repeat counts, shape pieces)
}

const std::vector<Info>* sequence_in(const RuleCtx& c, std::size_t i) {
  return c.has(i) && c.in[i]->is_sequence ? &c.in[i]->elements : nullptr;
}

/// Position input i in [0, size] (insert) or [0, size) (others); nullopt when
/// its value is unknown, -1 when out of range.
std::optional<I64> position(const RuleCtx& c, std::size_t i, I64 size, bool insert) {
  auto v = c.scalar(i);
  if (!v) return std::nullopt;
  I64 p = *v < 0 ? *v + size : *v;
  const I64 hi = insert ? size : size - 1;
  return p < 0 || p > hi ? -1 : p;
}

RuleStatus rule_split_to_sequence(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  if (x.empty()) return c.fail("input is a scalar");
  auto axis = norm_axis(c.attr_i("axis", 0), x.size());
  if (!axis) return c.fail("axis {} out of range for {}", c.attr_i("axis", 0), shape_str(x));
  const I64 len = x[*axis];
  std::vector<I64> sizes;
  bool keep = true;
  if (!c.has(1)) {
    sizes.assign(static_cast<std::size_t>(len), 1);  // one element per index along the axis
    keep = c.attr_i("keepdims", 1) != 0;
  } else {
    auto split = c.ints(1);
    if (!split) return RuleStatus::unknown;
    if (c.rank(1) == 0) {
      const I64 chunk = split->empty() ? 0 : split->front();
      if (chunk <= 0) return c.fail("split size {} is not positive", chunk);
      for (I64 at = 0; at < len; at += chunk) sizes.push_back(std::min(chunk, len - at));
    } else {
      I64 sum = 0;
      for (auto s : *split) {
        if (s < 0) return c.fail("negative split size {}", s);
        sum += s;
      }
      if (sum != len) return c.fail("split sizes sum to {}, not the axis length {}", sum, len);
      sizes = std::move(*split);
    }
  }
  if (sizes.size() > kMaxTracked) return c.fail("{} elements: too many for a sequence", sizes.size());
  // Values of each piece, when the input's are known: rows [at, at + s) of
  // the axis, for every outer index.
  const Values* v = c.vals(0);
  I64 outer = 1, inner = 1;
  for (std::size_t k = 0; k < *axis; ++k) outer *= x[k];
  for (std::size_t k = *axis + 1; k < x.size(); ++k) inner *= x[k];
  std::vector<Info> elems;
  I64 at = 0;
  for (auto s : sizes) {
    Info e;
    e.elem = c.elem(0);
    Shape es = x;
    if (keep) es[*axis] = s;
    else es.erase(es.begin() + static_cast<std::ptrdiff_t>(*axis));
    e.shape = std::move(es);
    if (v && static_cast<I64>(v->size()) == outer * len * inner) {
      Values piece;
      piece.is_float = v->is_float;
      for (I64 o = 0; o < outer; ++o)
        for (I64 r = at; r < at + s; ++r)
          for (I64 i = 0; i < inner; ++i) {
            const auto k = static_cast<std::size_t>((o * len + r) * inner + i);
            if (v->is_float) piece.f.push_back(v->f[k]);
            else piece.i.push_back(v->i[k]);
          }
      e.values = std::move(piece);
    }
    at += s;
    elems.push_back(std::move(e));
  }
  set_sequence(c, 0, std::move(elems), c.elem(0));
  return RuleStatus::ok;
}

RuleStatus rule_sequence_construct(RuleCtx& c) {
  std::vector<Info> elems;
  int elem = kUndefined;
  for (std::size_t k = 0; k < c.in.size(); ++k) {
    if (!c.has(k)) return c.fail("input {} is omitted", k);
    if (elem != kUndefined && c.elem(k) != elem)
      return c.fail("inputs of types {} and {}", elem_name(elem), elem_name(c.elem(k)));
    elem = c.elem(k);
    elems.push_back(*c.in[k]);
  }
  set_sequence(c, 0, std::move(elems), elem == kUndefined ? kFloat : elem);
  return RuleStatus::ok;
}

RuleStatus rule_sequence_empty(RuleCtx& c) {
  set_sequence(c, 0, {}, static_cast<int>(c.attr_i("dtype", kFloat)));
  return RuleStatus::ok;
}

RuleStatus rule_sequence_at(RuleCtx& c) {
  const auto* seq = sequence_in(c, 0);
  if (!seq) return c.has(0) ? c.fail("input 0 is not a sequence") : RuleStatus::unknown;
  auto p = position(c, 1, static_cast<I64>(seq->size()), false);
  if (!p) return RuleStatus::unknown;
  if (*p < 0) return c.fail("position {} outside a sequence of {}", c.scalar(1).value_or(0), seq->size());
  if (c.out.empty()) return RuleStatus::ok;
  c.out[0] = (*seq)[static_cast<std::size_t>(*p)];
  return RuleStatus::ok;
}

RuleStatus rule_sequence_length(RuleCtx& c) {
  const auto* seq = sequence_in(c, 0);
  if (!seq) return c.has(0) ? c.fail("input 0 is not a sequence") : RuleStatus::unknown;
  c.set(0, {}, kInt64);
  c.set_values(0, Values::ints({static_cast<I64>(seq->size())}));
  return RuleStatus::ok;
}

RuleStatus rule_sequence_insert(RuleCtx& c) {
  const auto* seq = sequence_in(c, 0);
  if (!seq) return c.has(0) ? c.fail("input 0 is not a sequence") : RuleStatus::unknown;
  if (!c.has(1)) return c.fail("no tensor to insert");
  std::vector<Info> elems = *seq;
  I64 p = static_cast<I64>(elems.size());
  if (c.has(2)) {
    auto q = position(c, 2, static_cast<I64>(elems.size()), true);
    if (!q) return RuleStatus::unknown;
    if (*q < 0) return c.fail("position {} outside a sequence of {}", c.scalar(2).value_or(0), elems.size());
    p = *q;
  }
  elems.insert(elems.begin() + p, *c.in[1]);
  set_sequence(c, 0, std::move(elems), c.elem(1));
  return RuleStatus::ok;
}

RuleStatus rule_sequence_erase(RuleCtx& c) {
  const auto* seq = sequence_in(c, 0);
  if (!seq) return c.has(0) ? c.fail("input 0 is not a sequence") : RuleStatus::unknown;
  if (seq->empty()) return c.fail("erase from an empty sequence");
  std::vector<Info> elems = *seq;
  I64 p = static_cast<I64>(elems.size()) - 1;
  if (c.has(1)) {
    auto q = position(c, 1, static_cast<I64>(elems.size()), false);
    if (!q) return RuleStatus::unknown;
    if (*q < 0) return c.fail("position {} outside a sequence of {}", c.scalar(1).value_or(0), elems.size());
    p = *q;
  }
  elems.erase(elems.begin() + p);
  set_sequence(c, 0, std::move(elems), c.elem(0));
  return RuleStatus::ok;
}

RuleStatus rule_concat_from_sequence(RuleCtx& c) {
  const auto* seq = sequence_in(c, 0);
  if (!seq) return c.has(0) ? c.fail("input 0 is not a sequence") : RuleStatus::unknown;
  if (seq->empty()) return c.fail("concatenation of an empty sequence");
  const bool new_axis = c.attr_i("new_axis", 0) != 0;
  const Shape& first = *seq->front().shape;
  const std::size_t rank = first.size() + (new_axis ? 1 : 0);
  auto axis = norm_axis(c.attr_i("axis", 0), rank);
  if (!axis || (!new_axis && first.empty()))
    return c.fail("axis {} out of range for elements {}", c.attr_i("axis", 0), shape_str(first));
  Shape out = first;
  if (new_axis) out.insert(out.begin() + static_cast<std::ptrdiff_t>(*axis), 0);
  for (const auto& e : *seq) {
    const Shape& s = *e.shape;
    if (s.size() != first.size()) return c.fail("elements of ranks {} and {}", first.size(), s.size());
    for (std::size_t d = 0; d < s.size(); ++d)
      if (s[d] != first[d] && (new_axis || d != *axis))
        return c.fail("elements {} and {} differ off axis {}", shape_str(first), shape_str(s), *axis);
    out[*axis] += new_axis ? 1 : s[*axis];
  }
  if (!new_axis) out[*axis] -= first[*axis];
  c.set(0, std::move(out), c.elem(0));
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "SplitToSequence", rule_split_to_sequence},
    {"", "SequenceConstruct", rule_sequence_construct},
    {"", "SequenceEmpty", rule_sequence_empty},
    {"", "SequenceAt", rule_sequence_at},
    {"", "SequenceLength", rule_sequence_length},
    {"", "SequenceInsert", rule_sequence_insert},
    {"", "SequenceErase", rule_sequence_erase},
    {"", "ConcatFromSequence", rule_concat_from_sequence},
};

}  // namespace

std::span<const ShapeRule> sequence_rules() { return kRules; }

}  // namespace planner::onnx::detail
