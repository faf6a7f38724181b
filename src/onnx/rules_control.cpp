// Shape rules: control flow (If, Loop, Scan). Subgraphs are propagated
// through RuleCtx::run_subgraph with the enclosing graph as outer scope.
#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

Info without_values(const Info& i) {
  Info r = i;
  r.values.reset();
  return r;
}

bool same_shapes(const std::vector<Info>& a, const std::vector<Info>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].shape != b[k].shape) return false;
  return true;
}

RuleStatus rule_if(RuleCtx& c) {
  const auto* then_g = c.attr_g("then_branch");
  const auto* else_g = c.attr_g("else_branch");
  if (!then_g || !else_g) return c.fail("If without then_branch/else_branch");
  if (!c.run_subgraph) return RuleStatus::unknown;
  std::optional<bool> cond;
  if (auto* v = c.vals(0); v && v->size() == 1) cond = v->d(0) != 0;
  std::vector<Info> outs;
  if (cond) {
    auto r = c.run_subgraph(*cond ? *then_g : *else_g, {});
    if (!r.ok()) return c.fail("{} branch: {}", *cond ? "then" : "else", r.error().message);
    outs = std::move(*r);
  } else {
    auto t = c.run_subgraph(*then_g, {});
    if (!t.ok()) return c.fail("then branch: {}", t.error().message);
    auto e = c.run_subgraph(*else_g, {});
    if (!e.ok()) return c.fail("else branch: {}", e.error().message);
    if (!same_shapes(*t, *e))
      return c.fail("the branches give outputs of different shapes and the condition is not a known constant");
    outs = std::move(*t);
  }
  if (outs.size() != c.out.size()) return c.fail("branch has {} outputs, If has {}", outs.size(), c.out.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].shape) return c.fail("branch output {} has no static shape", k);
    c.set(k, *outs[k].shape, outs[k].elem);
    if (outs[k].values) c.set_values(k, *outs[k].values);
  }
  return RuleStatus::ok;
}

/// Most iterations a Loop carrying a sequence is unrolled for.
constexpr I64 kMaxUnrolled = 1024;

/// A Loop whose carried values include a sequence (torch's repeat_interleave
/// inserts one piece per iteration): the body is propagated once per
/// iteration, with the iteration number known, each iteration's carried
/// outputs feeding the next.
RuleStatus unroll_loop(RuleCtx& c, const pb::GraphProto& body, I64 trips, std::size_t n_carried) {
  std::vector<Info> carried;
  for (std::size_t k = 0; k < n_carried; ++k) carried.push_back(without_values(*c.in[k + 2]));
  std::vector<Info> last;
  for (I64 i = 0; i < trips; ++i) {
    std::vector<Info> formal;
    Info iter{kInt64, Shape{}, Values::ints({i})};
    formal.push_back(std::move(iter));
    formal.push_back(Info{kBool, Shape{}, std::nullopt});
    formal.insert(formal.end(), carried.begin(), carried.end());
    auto r = c.run_subgraph(body, std::move(formal));
    if (!r.ok()) return c.fail("body, iteration {}: {}", i, r.error().message);
    if (r->size() != 1 + n_carried) return c.fail("body has {} outputs for {} carried values and no scan output",
                                                  r->size(), n_carried);
    for (std::size_t k = 0; k < n_carried; ++k) {
      const Info& o = (*r)[1 + k];
      if (!o.shape) return c.fail("body output {} has no static shape at iteration {}", 1 + k, i);
      if (!o.is_sequence && *o.shape != *carried[k].shape)
        return c.fail("loop-carried value {} changes shape from {} to {} across iterations", k,
                      shape_str(*carried[k].shape), shape_str(*o.shape));
      carried[k] = without_values(o);
    }
  }
  if (c.out.size() != n_carried) return c.fail("Loop has {} outputs for {} carried values", c.out.size(), n_carried);
  for (std::size_t k = 0; k < n_carried; ++k) c.out[k] = carried[k];
  return RuleStatus::ok;
}

RuleStatus rule_loop(RuleCtx& c) {
  const auto* body = c.attr_g("body");
  if (!body) return c.fail("Loop without body");
  if (!c.run_subgraph) return RuleStatus::unknown;
  const std::size_t n_carried = c.in.size() > 2 ? c.in.size() - 2 : 0;
  std::optional<I64> trips;
  if (c.has(0)) trips = c.scalar(0);
  bool carries_sequence = false;
  for (std::size_t k = 0; k < n_carried; ++k) {
    if (!c.has(k + 2)) return c.fail("loop-carried input {} is omitted", k);
    carries_sequence = carries_sequence || c.in[k + 2]->is_sequence;
  }
  if (carries_sequence) {
    if (!trips) return c.fail("a sequence is carried and the trip count is not a known constant");
    if (*trips > kMaxUnrolled) return c.fail("a sequence is carried over {} iterations (at most {})", *trips,
                                             kMaxUnrolled);
    return unroll_loop(c, *body, std::max<I64>(*trips, 0), n_carried);
  }
  std::vector<Info> formal;
  formal.push_back(Info{kInt64, Shape{}, std::nullopt});
  formal.push_back(Info{kBool, Shape{}, std::nullopt});
  for (std::size_t k = 0; k < n_carried; ++k) formal.push_back(without_values(*c.in[k + 2]));
  auto r = c.run_subgraph(*body, formal);
  if (!r.ok()) return c.fail("body: {}", r.error().message);
  const auto& outs = *r;
  if (outs.size() < 1 + n_carried) return c.fail("body has {} outputs for {} carried values", outs.size(), n_carried);
  const std::size_t n_scan = outs.size() - 1 - n_carried;
  if (c.out.size() != n_carried + n_scan)
    return c.fail("Loop has {} outputs, body gives {} carried + {} scanned", c.out.size(), n_carried, n_scan);
  for (std::size_t k = 0; k < n_carried; ++k) {
    const Info& o = outs[1 + k];
    if (!o.shape) return c.fail("body output {} has no static shape", 1 + k);
    if (*o.shape != c.shape(k + 2))
      return c.fail("loop-carried value {} changes shape from {} to {} across iterations", k, shape_str(c.shape(k + 2)),
                    shape_str(*o.shape));
    c.set(k, *o.shape, o.elem);
  }
  if (n_scan > 0 && !trips)
    return c.fail("the trip count is not a known constant, so the scan outputs have no static shape");
  for (std::size_t k = 0; k < n_scan; ++k) {
    const Info& o = outs[1 + n_carried + k];
    if (!o.shape) return c.fail("body scan output {} has no static shape", k);
    Shape s{std::max<I64>(*trips, 0)};
    s.insert(s.end(), o.shape->begin(), o.shape->end());
    c.set(n_carried + k, std::move(s), o.elem);
  }
  return RuleStatus::ok;
}

RuleStatus rule_scan(RuleCtx& c) {
  if (c.opset > 0 && c.opset < 9) return RuleStatus::unknown;  // opset 8 form (sequence_lens, batch axis)
  const auto* body = c.attr_g("body");
  if (!body) return c.fail("Scan without body");
  if (!c.run_subgraph) return RuleStatus::unknown;
  const I64 m = c.attr_i("num_scan_inputs", 0);
  if (m <= 0 || static_cast<std::size_t>(m) > c.in.size()) return c.fail("num_scan_inputs {} invalid", m);
  const std::size_t n_state = c.in.size() - static_cast<std::size_t>(m);
  auto in_axes = c.attr_ints("scan_input_axes").value_or(std::vector<I64>(static_cast<std::size_t>(m), 0));
  if (in_axes.size() != static_cast<std::size_t>(m)) return c.fail("scan_input_axes has {} entries", in_axes.size());
  std::vector<Info> formal;
  for (std::size_t k = 0; k < n_state; ++k) {
    if (!c.has(k)) return c.fail("state input {} is omitted", k);
    formal.push_back(without_values(*c.in[k]));
  }
  std::optional<I64> seq;
  for (std::size_t k = 0; k < static_cast<std::size_t>(m); ++k) {
    const std::size_t i = n_state + k;
    if (!c.has(i)) return c.fail("scan input {} is omitted", k);
    auto ax = norm_axis(in_axes[k], c.rank(i));
    if (!ax) return c.fail("scan_input_axes[{}] out of range", k);
    Shape s = c.shape(i);
    if (seq && *seq != s[*ax]) return c.fail("scan inputs have lengths {} and {}", *seq, s[*ax]);
    seq = s[*ax];
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(*ax));
    formal.push_back(Info{c.elem(i), s, std::nullopt});
  }
  auto r = c.run_subgraph(*body, formal);
  if (!r.ok()) return c.fail("body: {}", r.error().message);
  const auto& outs = *r;
  if (outs.size() != c.out.size() || outs.size() < n_state)
    return c.fail("body has {} outputs, Scan has {}", outs.size(), c.out.size());
  const std::size_t n_scan = outs.size() - n_state;
  auto out_axes = c.attr_ints("scan_output_axes").value_or(std::vector<I64>(n_scan, 0));
  if (out_axes.size() != n_scan) return c.fail("scan_output_axes has {} entries", out_axes.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].shape) return c.fail("body output {} has no static shape", k);
    Shape s = *outs[k].shape;
    if (k >= n_state) {
      auto ax = norm_axis(out_axes[k - n_state], s.size() + 1);
      if (!ax) return c.fail("scan_output_axes[{}] out of range", k - n_state);
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(*ax), *seq);
    }
    c.set(k, std::move(s), outs[k].elem);
  }
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "If", rule_if},
    {"", "Loop", rule_loop},
    {"", "Scan", rule_scan},
};

}  // namespace

std::span<const ShapeRule> control_rules() { return kRules; }

}  // namespace planner::onnx::detail
