// Sharding of normalisations, softmax and reductions: ops that reduce over
// some dims of their input.
//
//   LayerNormalization x[b,s,h] (axis -1), scale[h], bias[h] -> y[b,s,h]
//     letters d0 d1 d2; the normalised dims (axis..end) are SplitRule::costed:
//     splitting h over an axis needs the per-row statistics summed across it,
//     forward one all-reduce of 2 fp32 values per row (sum, sum of squares),
//     backward one of 2 more (sum dy, sum dy*xhat). Rows = b*s over the
//     other splits. Splitting b or s (sequence parallelism) is free; the
//     scale's and bias's gradients are then partial over those axes.
//   RMSNormalization / SimplifiedLayerNormalization: 1 statistic each way.
//   SkipLayerNormalization (com.microsoft): input + skip (+ bias), then
//     LayerNorm; ports align right against the input's letters.
//   BatchNormalization x[n,c,spatial...]: c free; n costed (synchronised BN:
//     2 statistics per channel each way); spatial dims never split.
//   Softmax / LogSoftmax (axis): the axis costed (forward max and sum,
//     backward sum(dy*y)).
//   ReduceSum / ReduceMean / ReduceSumSquare / ReduceL1: a reduced dim may be
//     split (output partial: the partial sums add up); ReduceMax, Min, Prod,
//     L2, LogSum, LogSumExp: reduced dims never split. Reduced dims are found
//     from the shapes (keepdims=1) or `axes` (keepdims=0; an attribute, or
//     from opset 13/18 a constant input 1).
#include <array>

#include "shard_rules.hpp"

namespace planner::ops {
namespace {

using shard_detail::shape_of;
using shard_detail::SpecBuilder;

// Letters of port `pos` aligned right against `ref` (the main input's shape
// and letters): equal sizes share the letter, others stay unsplit.
std::vector<int> align_right(const std::vector<std::int64_t>* s, const std::vector<std::int64_t>& ref,
                             const std::vector<int>& letters) {
  std::vector<int> dims;
  if (!s) return dims;
  for (std::size_t d = 0; d < s->size(); ++d) {
    if (s->size() > ref.size()) { dims.push_back(-1); continue; }
    const std::size_t rd = ref.size() - s->size() + d;
    dims.push_back((*s)[d] == ref[rd] ? letters[rd] : -1);
  }
  return dims;
}

// A norm over dims [axis, rank) of input 0, with `stats` statistics each way
// per split axis. Every port aligns right against input 0.
std::optional<ShardSpec> norm_over(const graph::OpGraph& g, graph::OpId id, std::int64_t axis_attr, int fwd_stats,
                                   int bwd_stats) {
  const graph::Op& op = g.op(id);
  const auto* x = shape_of(g, op, true, 0);
  if (!x || x->empty()) return std::nullopt;
  const auto axis = shard_detail::norm_axis(axis_attr, x->size());
  if (!axis) return std::nullopt;
  SpecBuilder sb(g, id, "norm");
  std::vector<int> letters;
  for (std::size_t d = 0; d < x->size(); ++d) {
    const bool normalised = static_cast<int>(d) >= *axis;
    const int l = sb.letter("d" + std::to_string(d), normalised ? SplitRule::costed : SplitRule::free);
    if (normalised) {
      sb.at(l).stats_port = 0;
      sb.at(l).forward_stats = fwd_stats;
      sb.at(l).backward_stats = bwd_stats;
    }
    letters.push_back(l);
  }
  for (std::size_t i = 0; i < op.inputs.size(); ++i) sb.in(i, align_right(shape_of(g, op, true, i), *x, letters));
  for (std::size_t o = 0; o < op.outputs.size(); ++o) sb.out(o, align_right(shape_of(g, op, false, o), *x, letters));
  return sb.done();
}

std::optional<ShardSpec> layer_norm(const graph::OpGraph& g, graph::OpId id) {
  return norm_over(g, id, g.op(id).attr_int("axis").value_or(-1), 2, 2);
}
std::optional<ShardSpec> rms_norm(const graph::OpGraph& g, graph::OpId id) {
  return norm_over(g, id, g.op(id).attr_int("axis").value_or(-1), 1, 1);
}
std::optional<ShardSpec> skip_layer_norm(const graph::OpGraph& g, graph::OpId id) {
  return norm_over(g, id, -1, 2, 2);
}
std::optional<ShardSpec> skip_rms_norm(const graph::OpGraph& g, graph::OpId id) { return norm_over(g, id, -1, 1, 1); }

std::optional<ShardSpec> softmax(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto* x = shape_of(g, op, true, 0);
  if (!x || x->empty()) return std::nullopt;
  const auto axis = shard_detail::norm_axis(op.attr_int("axis").value_or(-1), x->size());
  if (!axis) return std::nullopt;
  SpecBuilder sb(g, id, "softmax");
  std::vector<int> letters;
  for (std::size_t d = 0; d < x->size(); ++d) {
    const bool ax = static_cast<int>(d) == *axis;
    const int l = sb.letter("d" + std::to_string(d), ax ? SplitRule::costed : SplitRule::free);
    if (ax) {
      sb.at(l).forward_stats = 2;
      sb.at(l).backward_stats = 1;
    }
    letters.push_back(l);
  }
  sb.in(0, letters).out(0, letters);
  return sb.done();
}

// x[n, c, spatial...]; scale, bias, mean, var [c]; outputs y (+ running stats [c]).
std::optional<ShardSpec> batch_norm(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto* x = shape_of(g, op, true, 0);
  if (!x || x->size() < 2) return std::nullopt;
  SpecBuilder sb(g, id, "norm");
  const int n = sb.letter("n", SplitRule::costed);
  const int c = sb.letter("c");
  sb.at(n).stats_port = 1;  // per-channel statistics: the scale's size
  sb.at(n).forward_stats = 2;
  sb.at(n).backward_stats = 2;
  std::vector<int> dx{n, c};
  dx.resize(x->size(), -1);
  sb.in(0, dx);
  for (std::size_t i = 1; i < op.inputs.size(); ++i) {
    const auto* s = shape_of(g, op, true, i);
    sb.in(i, s && s->size() == 1 && (*s)[0] == (*x)[1] ? std::vector<int>{c} : sb.unsplit(sb.op_tensor(true, i)));
  }
  sb.out(0, dx);
  for (std::size_t o = 1; o < op.outputs.size(); ++o) {
    const auto* s = shape_of(g, op, false, o);
    sb.out(o, s && s->size() == 1 && (*s)[0] == (*x)[1] ? std::vector<int>{c} : sb.unsplit(sb.op_tensor(false, o)));
  }
  return sb.done();
}

std::optional<ShardSpec> reduce_with(const graph::OpGraph& g, graph::OpId id, bool linear) {
  const graph::Op& op = g.op(id);
  const auto *x = shape_of(g, op, true, 0), *y = shape_of(g, op, false, 0);
  if (!x || !y) return std::nullopt;
  const bool keep = op.attr_int("keepdims").value_or(1) != 0;
  std::vector<bool> reduced(x->size(), false);
  if (keep) {
    if (y->size() != x->size()) return std::nullopt;
    for (std::size_t d = 0; d < x->size(); ++d) reduced[d] = (*y)[d] != (*x)[d];
  } else {
    // opset 18 (ReduceSum: 13) moved `axes` from an attribute to input 1.
    auto axes = op.attr_ints("axes");
    if (!axes && op.inputs.size() > 1) {
      const auto* t = g.input(op, 1);
      if (t && t->values && !t->values->is_float) axes = t->values->ints;
    }
    if (!axes) return std::nullopt;
    for (auto a : *axes) {
      const auto ax = shard_detail::norm_axis(a, x->size());
      if (!ax) return std::nullopt;
      reduced[static_cast<std::size_t>(*ax)] = true;
    }
  }
  SpecBuilder sb(g, id, "reduce");
  std::vector<int> dx, dy;
  for (std::size_t d = 0; d < x->size(); ++d) {
    const int l = sb.letter("d" + std::to_string(d), reduced[d] && !linear ? SplitRule::forbidden : SplitRule::free);
    dx.push_back(l);
    if (!reduced[d]) dy.push_back(l);
    else if (keep) dy.push_back(-1);
  }
  if (dy.size() != y->size()) return std::nullopt;
  sb.in(0, dx).out(0, dy);
  return sb.done();
}

std::optional<ShardSpec> reduce_linear(const graph::OpGraph& g, graph::OpId id) { return reduce_with(g, id, true); }
std::optional<ShardSpec> reduce_other(const graph::OpGraph& g, graph::OpId id) { return reduce_with(g, id, false); }

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kRules{
    ShardRule{"", "LayerNormalization", &layer_norm},
    ShardRule{"", "RMSNormalization", &rms_norm},
    ShardRule{"", "SimplifiedLayerNormalization", &rms_norm},
    ShardRule{"", "BatchNormalization", &batch_norm},
    ShardRule{"", "Softmax", &softmax},
    ShardRule{"", "LogSoftmax", &softmax},
    ShardRule{"", "ReduceSum", &reduce_linear},
    ShardRule{"", "ReduceMean", &reduce_linear},
    ShardRule{"", "ReduceSumSquare", &reduce_linear},
    ShardRule{"", "ReduceL1", &reduce_linear},
    ShardRule{"", "ReduceMax", &reduce_other},
    ShardRule{"", "ReduceMin", &reduce_other},
    ShardRule{"", "ReduceProd", &reduce_other},
    ShardRule{"", "ReduceL2", &reduce_other},
    ShardRule{"", "ReduceLogSum", &reduce_other},
    ShardRule{"", "ReduceLogSumExp", &reduce_other},
    ShardRule{ms, "SkipLayerNormalization", &skip_layer_norm},
    ShardRule{ms, "SkipSimplifiedLayerNormalization", &skip_rms_norm},
};

}  // namespace

std::span<const ShardRule> norm_shard_rules() { return kRules; }

}  // namespace planner::ops
