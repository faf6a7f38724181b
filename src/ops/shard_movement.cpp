// Sharding of data movement: the split dims are mapped through the op, so a
// strategy chosen upstream flows through views and copies for free.
//
//   Reshape (also Flatten, Squeeze, Unsqueeze, Identity): the two shapes are
//   cut into groups of dims with equal products (size-1 dims aside):
//
//       [b, s, h]        -> [b, s, n, d]        groups {b}{s}{h|n,d}
//       [b, s, V]        -> [b*s, V]            groups {b,s|b*s}{V}
//
//     one letter per group, on its MAJOR dim on both sides: a split of h
//     into k blocks is a split of n into k blocks (heads), and a split of b
//     is a split of b*s. Minor dims of a group are never split (a split of s
//     alone is not contiguous in b*s).
//   Transpose: letters follow `perm`.
//   Split (axis): every dim keeps its letter in each output. The split axis
//     may be split too only when the input's columns can be permuted for
//     free -- it comes from a MatMul/Gemm with a weight (through a bias Add),
//     like Megatron's fused QKV weight whose Q, K and V blocks are each split
//     by heads; otherwise the axis is never split.
//   Concat (axis), Slice, Pad: the concatenated, sliced or padded dims are
//     never split; the others keep their letters.
//   Expand: letters per output dim; an input dim of size 1 is never split
//     (its gradient is partial over axes splitting the expanded dim).
#include <array>
#include <numeric>

#include "shard_rules.hpp"

namespace planner::ops {
namespace {

using shard_detail::shape_of;
using shard_detail::SpecBuilder;

std::optional<ShardSpec> reshape(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto *x = shape_of(g, op, true, 0), *y = shape_of(g, op, false, 0);
  if (!x || !y) return std::nullopt;
  for (auto v : *x)
    if (v <= 0) return std::nullopt;
  for (auto v : *y)
    if (v <= 0) return std::nullopt;
  SpecBuilder sb(g, id, "movement");
  std::vector<int> dx(x->size(), -1), dy(y->size(), -1);
  std::size_t i = 0, j = 0;
  while (i < x->size() || j < y->size()) {
    if (i < x->size() && (*x)[i] == 1) { ++i; continue; }
    if (j < y->size() && (*y)[j] == 1) { ++j; continue; }
    if (i == x->size() || j == y->size()) return std::nullopt;
    const std::size_t i0 = i, j0 = j;
    std::int64_t px = (*x)[i++], py = (*y)[j++];
    while (px != py) {
      if (px < py) {
        if (i == x->size()) return std::nullopt;
        px *= (*x)[i++];
      } else {
        if (j == y->size()) return std::nullopt;
        py *= (*y)[j++];
      }
    }
    const int l = sb.letter("g" + std::to_string(i0));
    dx[i0] = l;
    dy[j0] = l;
  }
  sb.in(0, std::move(dx)).out(0, std::move(dy));
  return sb.done();
}

std::optional<ShardSpec> transpose(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto *x = shape_of(g, op, true, 0), *y = shape_of(g, op, false, 0);
  if (!x || !y || x->size() != y->size()) return std::nullopt;
  std::vector<std::int64_t> perm(x->size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto p = op.attr_ints("perm")) perm = *p;
  if (perm.size() != x->size()) return std::nullopt;
  SpecBuilder sb(g, id, "movement");
  std::vector<int> dx, dy;
  for (std::size_t d = 0; d < x->size(); ++d) dx.push_back(sb.letter("d" + std::to_string(d)));
  for (auto p : perm) {
    if (p < 0 || p >= static_cast<std::int64_t>(dx.size())) return std::nullopt;
    dy.push_back(dx[static_cast<std::size_t>(p)]);
  }
  sb.in(0, std::move(dx)).out(0, std::move(dy));
  return sb.done();
}

// True when the last dim of `t` comes from a weight's columns (MatMul or
// Gemm with a parameter operand, possibly through a bias Add), so its order
// is the planner's to choose.
bool columns_free(const graph::OpGraph& g, graph::TensorId t, int axis) {
  if (axis + 1 != static_cast<int>(g.tensor(t).shape.size())) return false;
  for (int step = 0; step < 3; ++step) {
    const auto& prod = g.tensor(t).producer;
    if (!prod) return false;
    const graph::Op& op = g.op(*prod);
    auto is_param = [&](std::size_t i) {
      const auto* x = g.input(op, i);
      return x && x->role == graph::TensorRole::parameter;
    };
    if (op.type == "MatMul" || op.type == "Gemm" || op.type == "FusedMatMul") return is_param(1);
    if (op.type != "Add" || op.inputs.size() != 2) return false;
    if (is_param(1) && op.inputs[0]) t = *op.inputs[0];
    else if (is_param(0) && op.inputs[1]) t = *op.inputs[1];
    else return false;
  }
  return false;
}

// Letters per dim of input 0; dims in `fixed` never split.
std::optional<ShardSpec> keep_dims(const graph::OpGraph& g, graph::OpId id, const std::vector<bool>& fixed,
                                   bool all_inputs) {
  const graph::Op& op = g.op(id);
  const auto* x = shape_of(g, op, true, 0);
  if (!x) return std::nullopt;
  SpecBuilder sb(g, id, "movement");
  std::vector<int> dims;
  for (std::size_t d = 0; d < x->size(); ++d)
    dims.push_back(fixed[d] ? -1 : sb.letter("d" + std::to_string(d)));
  const std::size_t n_in = all_inputs ? op.inputs.size() : 1;
  for (std::size_t i = 0; i < n_in; ++i) {
    const auto* s = shape_of(g, op, true, i);
    if (s && s->size() != x->size()) return std::nullopt;
    sb.in(i, s ? dims : std::vector<int>{});
  }
  for (std::size_t o = 0; o < op.outputs.size(); ++o) {
    const auto* s = shape_of(g, op, false, o);
    if (s && s->size() != x->size()) return std::nullopt;
    sb.out(o, s ? dims : std::vector<int>{});
  }
  return sb.done();
}

std::optional<ShardSpec> split(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto* x = shape_of(g, op, true, 0);
  if (!x) return std::nullopt;
  const auto axis = shard_detail::norm_axis(op.attr_int("axis").value_or(0), x->size());
  if (!axis) return std::nullopt;
  std::vector<bool> fixed(x->size(), false);
  fixed[static_cast<std::size_t>(*axis)] = !columns_free(g, *op.inputs[0], *axis);
  return keep_dims(g, id, fixed, false);
}

std::optional<ShardSpec> concat(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto* y = shape_of(g, op, false, 0);
  if (!y) return std::nullopt;
  const auto axis = shard_detail::norm_axis(op.attr_int("axis").value_or(0), y->size());
  if (!axis) return std::nullopt;
  std::vector<bool> fixed(y->size(), false);
  fixed[static_cast<std::size_t>(*axis)] = true;
  return keep_dims(g, id, fixed, true);
}

// Slice and Pad: dims whose size changes are never split.
std::optional<ShardSpec> same_size_dims(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto *x = shape_of(g, op, true, 0), *y = shape_of(g, op, false, 0);
  if (!x || !y || x->size() != y->size()) return std::nullopt;
  std::vector<bool> fixed(x->size());
  for (std::size_t d = 0; d < x->size(); ++d) fixed[d] = (*x)[d] != (*y)[d];
  return keep_dims(g, id, fixed, false);
}

std::optional<ShardSpec> expand(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto *x = shape_of(g, op, true, 0), *y = shape_of(g, op, false, 0);
  if (!x || !y || x->size() > y->size()) return std::nullopt;
  SpecBuilder sb(g, id, "movement");
  std::vector<int> dy, dx;
  for (std::size_t d = 0; d < y->size(); ++d) dy.push_back(sb.letter("d" + std::to_string(d)));
  for (std::size_t d = 0; d < x->size(); ++d) {
    const std::size_t yd = y->size() - x->size() + d;
    dx.push_back((*x)[d] == (*y)[yd] ? dy[yd] : -1);
  }
  sb.in(0, std::move(dx)).out(0, std::move(dy));
  return sb.done();
}

constexpr std::array kRules{
    ShardRule{"", "Concat", &concat},      ShardRule{"", "Expand", &expand},
    ShardRule{"", "Flatten", &reshape},    ShardRule{"", "Identity", &reshape},
    ShardRule{"", "Pad", &same_size_dims}, ShardRule{"", "Reshape", &reshape},
    ShardRule{"", "Slice", &same_size_dims}, ShardRule{"", "Split", &split},
    ShardRule{"", "Squeeze", &reshape},    ShardRule{"", "Transpose", &transpose},
    ShardRule{"", "Unsqueeze", &reshape},
};

}  // namespace

std::span<const ShardRule> movement_shard_rules() { return kRules; }

}  // namespace planner::ops
