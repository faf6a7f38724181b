// Shape rules: reductions (Reduce*, ArgMax/ArgMin) and losses
// (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss), with values for the
// small reductions exporters use in shape arithmetic (ReduceProd of a shape).
#include <algorithm>
#include <cmath>
#include <limits>

#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

using I64 = std::int64_t;

std::optional<Values> reduce_values(std::string_view op, const Values& v, const Shape& x, const std::vector<char>& red,
                                    const Shape& out_keep) {
  auto n_out = checked_numel(out_keep);
  if (!n_out) return std::nullopt;
  const bool fl = v.is_float;
  const bool is_prod = op == "ReduceProd", is_max = op == "ReduceMax", is_min = op == "ReduceMin";
  const bool is_sum = op == "ReduceSum", is_mean = op == "ReduceMean";
  if (!is_prod && !is_max && !is_min && !is_sum && !is_mean) return std::nullopt;
  std::vector<double> acc(static_cast<std::size_t>(*n_out),
                          is_prod ? 1.0 : is_max ? -std::numeric_limits<double>::infinity()
                                  : is_min ? std::numeric_limits<double>::infinity() : 0.0);
  std::vector<I64> cnt(acc.size(), 0);
  const auto st_in = strides_of(x), st_out = strides_of(out_keep);
  for (std::size_t k = 0; k < v.size(); ++k) {
    I64 rem = static_cast<I64>(k), dst = 0;
    for (std::size_t ax = 0; ax < x.size(); ++ax) {
      I64 idx = rem / st_in[ax];
      rem %= st_in[ax];
      if (!red[ax]) dst += idx * st_out[ax];
    }
    double& a = acc[static_cast<std::size_t>(dst)];
    const double y = v.d(k);
    a = is_prod ? a * y : is_max ? std::max(a, y) : is_min ? std::min(a, y) : a + y;
    ++cnt[static_cast<std::size_t>(dst)];
  }
  if (is_mean)
    for (std::size_t k = 0; k < acc.size(); ++k) acc[k] = cnt[k] ? acc[k] / static_cast<double>(cnt[k]) : 0.0;
  Values r;
  r.is_float = fl;
  for (double a : acc) {
    if (fl) r.f.push_back(a);
    else r.i.push_back(static_cast<I64>(a));
  }
  return r;
}

}  // namespace

/// Reduce*: axes from the attribute (older opsets) or input 1; keepdims
/// (default 1); noop_with_empty_axes.
RuleStatus rule_reduce(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& x = c.shape(0);
  std::optional<std::vector<I64>> axes = c.attr_ints("axes");
  if (!axes && c.has(1)) {
    axes = c.ints(1);
    if (!axes) return RuleStatus::unknown;
  }
  const bool keep = c.attr_i("keepdims", 1) != 0;
  std::vector<char> red(x.size(), 0);
  if (!axes || axes->empty()) {
    if (c.attr_i("noop_with_empty_axes", 0) != 0) {
      c.same_as(0, 0);
      if (auto* v = c.vals(0)) c.set_values(0, *v);
      return RuleStatus::ok;
    }
    std::fill(red.begin(), red.end(), 1);
  } else {
    for (auto a : *axes) {
      auto ax = norm_axis(a, x.size());
      if (!ax) return c.fail("axis {} out of range for {}", a, shape_str(x));
      red[*ax] = 1;
    }
  }
  Shape out, out_keep;
  for (std::size_t k = 0; k < x.size(); ++k) {
    out_keep.push_back(red[k] ? 1 : x[k]);
    if (!red[k] || keep) out.push_back(red[k] ? 1 : x[k]);
  }
  c.set(0, out, c.elem(0));
  if (auto* v = c.vals(0))
    if (auto r = reduce_values(c.node.op_type(), *v, x, red, out_keep)) c.set_values(0, std::move(*r));
  return RuleStatus::ok;
}

namespace {

RuleStatus rule_arg(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  Shape x = c.shape(0);
  auto axis = norm_axis(c.attr_i("axis", 0), x.size());
  if (!axis) return c.fail("axis out of range for {}", shape_str(x));
  if (c.attr_i("keepdims", 1) != 0) x[*axis] = 1;
  else x.erase(x.begin() + static_cast<std::ptrdiff_t>(*axis));
  c.set(0, std::move(x), kInt64);
  return RuleStatus::ok;
}

/// scores [N, C, d...], labels [N, d...]; loss is a scalar unless reduction
/// is "none" (then [N, d...]); output 1 (log_prob) is like scores.
RuleStatus rule_sce_loss(RuleCtx& c) {
  if (!c.has(0)) return RuleStatus::unknown;
  const Shape& s = c.shape(0);
  if (s.size() < 2) return c.fail("scores {} need rank >= 2", shape_str(s));
  const std::string red = c.attr_s("reduction").value_or("mean");
  if (red == "none") {
    Shape l{s[0]};
    l.insert(l.end(), s.begin() + 2, s.end());
    c.set(0, std::move(l), c.elem(0));
  } else {
    c.set(0, {}, c.elem(0));
  }
  c.same_as(1, 0);
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "ReduceSum", rule_reduce},        {"", "ReduceMean", rule_reduce},
    {"", "ReduceMax", rule_reduce},        {"", "ReduceMin", rule_reduce},
    {"", "ReduceProd", rule_reduce},       {"", "ReduceL1", rule_reduce},
    {"", "ReduceL2", rule_reduce},         {"", "ReduceLogSum", rule_reduce},
    {"", "ReduceLogSumExp", rule_reduce},  {"", "ReduceSumSquare", rule_reduce},
    {"", "ArgMax", rule_arg},              {"", "ArgMin", rule_arg},
    {"", "SoftmaxCrossEntropyLoss", rule_sce_loss},
    {"", "NegativeLogLikelihoodLoss", rule_sce_loss},
    {"com.microsoft", "ReduceSumTraining", rule_reduce},
};

}  // namespace

std::span<const ShapeRule> reduce_rules() { return kRules; }

}  // namespace planner::onnx::detail
