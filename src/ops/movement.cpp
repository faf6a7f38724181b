// Data movement: views, copies, gathers and scatters, padding, resizing.
//
// Views: Reshape, Squeeze, Unsqueeze, Flatten, Identity. No copy: 0 FLOPs and
//   0 bytes forward and backward (the gradient is a view too), known.
// Copies (0 FLOPs): Transpose, Concat, Split, DepthToSpace, SpaceToDepth,
//   ReverseSequence, CenterCropPad, Compress, OneHot, MaxUnpool, Unique,
//   NonZero: forward reads every input, writes every output; backward reads
//   the outputs' gradients, writes the inputs' gradients.
// Selections read only what they select:
//   Slice    forward reads the selected region (bytes(Y)) and the index
//            inputs, writes Y; backward reads dY, writes the zero-padded dX.
//   Pad      forward reads X and the pads, writes Y; backward reads the
//            interior of dY (bytes(X)), writes dX.
//   Expand, Tile: forward reads X, writes Y; backward reduces dY to X's
//            shape: numel(Y) adds, reads dY, writes dX.
//   Trilu    1 compare per element, otherwise a copy.
// Gathers (Gather, GatherElements, GatherND): forward reads the indices and
//   the gathered elements (bytes(Y)), writes Y; backward reads the indices
//   and scatter-adds dY into a dense, zero-filled gradient of the data input
//   (add_scatter_add_backward: numel(Y) adds, reads 2 bytes(Y), writes the
//   data's bytes + bytes(Y)). A Gather whose data input is a parameter
//   (directly or through Cast/CastLike/Identity) is OpClass::embedding.
// Scatters (ScatterND, ScatterElements, Scatter): forward reads data, indices
//   and updates, writes Y; numel(updates) FLOPs when a reduction is set.
//   Backward: dData = dY with the scattered positions zeroed (reads dY,
//   writes dData); dUpdates = dY gathered (reads the indices and
//   bytes(updates) of dY, writes dUpdates).
// Resize/Upsample, GridSample: per output element 2 * 2^d FLOPs (linear) or
//   2 * 4^d (cubic), 0 for nearest, over d interpolated axes (Resize: axes
//   whose size changes; GridSample: the spatial axes); backward 2x forward,
//   reads dY (and the grid), writes dX (and dGrid).
#include <array>
#include <cmath>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

OpCost view(const CostQuery&) { return OpCost{}; }

OpCost copy(const CostQuery& q) { return memory_bound(q, 0.0, Bytes(0)); }

Bytes index_bytes(const CostQuery& q, std::size_t from) {
  Bytes b;
  for (std::size_t i = from; i < q.op.inputs.size(); ++i) b += bytes(q.in(i));
  return b;
}

OpCost slice(const CostQuery& q) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  OpCost c;
  c.forward_bytes_read = bytes(y) + index_bytes(q, 1);
  c.forward_bytes_written = bytes(y);
  c.backward_bytes_read = bytes(y);
  c.backward_bytes_written = in_grad_bytes(q);
  return c;
}

OpCost pad(const CostQuery& q) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  OpCost c = memory_bound(q, 0.0, Bytes(0));
  c.backward_bytes_read = bytes(x);
  return c;
}

OpCost expand(const CostQuery& q) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  OpCost c = memory_bound(q, 0.0, Bytes(0));
  if (q.in_needs_grad(0)) c.backward_flops = Flops(numel(y));
  return c;
}

OpCost trilu(const CostQuery& q) {
  if (!q.out(0)) return fallback_cost(q.op, q.g, q.grad);
  return memory_bound(q, numel(q.out(0)), Bytes(0));
}

OpCost gather(const CostQuery& q) {
  const auto *data = q.in(0), *idx = q.in(1), *y = q.out(0);
  if (!data || !idx || !y) return fallback_cost(q.op, q.g, q.grad);
  OpCost c;
  c.forward_bytes_read = bytes(idx) + bytes(y);
  c.forward_bytes_written = bytes(y);
  if (q.in_needs_grad(0)) {
    c.backward_bytes_read = bytes(idx);
    add_scatter_add_backward(c, bytes(data), bytes(y), numel(y));
  }
  return c;
}

graph::OpClass gather_class(const graph::Op& op, const graph::OpGraph& g) {
  const graph::Op* cur = &op;
  for (int hop = 0; hop < 4; ++hop) {
    const auto* data = g.input(*cur, 0);
    if (!data) break;
    if (data->role == graph::TensorRole::parameter) return OpClass::embedding;
    if (!data->producer) break;
    const auto& prod = g.op(*data->producer);
    if (prod.type != "Cast" && prod.type != "CastLike" && prod.type != "Identity") break;
    cur = &prod;
  }
  return OpClass::data_movement;
}

// Scatter*: data, indices, updates.
OpCost scatter(const CostQuery& q) {
  const auto *data = q.in(0), *idx = q.in(1), *upd = q.in(2), *y = q.out(0);
  if (!data || !idx || !upd || !y) return fallback_cost(q.op, q.g, q.grad);
  OpCost c;
  const bool reduces = q.op.attr_string("reduction").value_or("none") != "none";
  c.forward_flops = Flops(reduces ? numel(upd) : 0.0);
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = bytes(y);
  if (q.in_needs_grad(0)) {
    c.backward_bytes_read += bytes(y);
    c.backward_bytes_written += bytes(data);
  }
  if (q.in_needs_grad(2)) {
    c.backward_bytes_read += bytes(idx) + bytes(upd);
    c.backward_bytes_written += bytes(upd);
  }
  return c;
}

double interp_flops_per_output(std::string_view mode, int axes) {
  if (axes <= 0 || mode == "nearest") return 0.0;
  const double base = mode == "cubic" || mode == "bicubic" ? 4.0 : 2.0;
  return 2.0 * std::pow(base, axes);
}

OpCost resize(const CostQuery& q) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  int axes = 0;
  for (int i = 0; i < rank(x) && i < rank(y); ++i) axes += dim(x, i) != dim(y, i) ? 1 : 0;
  const auto mode = q.op.attr_string("mode").value_or("nearest");
  return memory_bound(q, numel(y) * interp_flops_per_output(mode, axes), Bytes(0));
}

OpCost grid_sample(const CostQuery& q) {
  const auto *x = q.in(0), *grid = q.in(1), *y = q.out(0);
  if (!x || !grid || !y) return fallback_cost(q.op, q.g, q.grad);
  const auto mode = q.op.attr_string("mode").value_or("linear");
  return memory_bound(q, numel(y) * interp_flops_per_output(mode, rank(x) - 2), bytes(x) + bytes(grid));
}

constexpr std::array kRules{
    OpRule{"", "Reshape", OpClass::data_movement, &view},
    OpRule{"", "Squeeze", OpClass::data_movement, &view},
    OpRule{"", "Unsqueeze", OpClass::data_movement, &view},
    OpRule{"", "Flatten", OpClass::data_movement, &view},
    OpRule{"", "Identity", OpClass::data_movement, &view},
    OpRule{"", "Transpose", OpClass::data_movement, &copy},
    OpRule{"", "Concat", OpClass::data_movement, &copy},
    OpRule{"", "Split", OpClass::data_movement, &copy},
    OpRule{"", "DepthToSpace", OpClass::data_movement, &copy},
    OpRule{"", "SpaceToDepth", OpClass::data_movement, &copy},
    OpRule{"", "ReverseSequence", OpClass::data_movement, &copy},
    OpRule{"", "CenterCropPad", OpClass::data_movement, &copy},
    OpRule{"", "Compress", OpClass::data_movement, &copy},
    OpRule{"", "OneHot", OpClass::data_movement, &copy},
    OpRule{"", "MaxUnpool", OpClass::data_movement, &copy},
    OpRule{"", "Unique", OpClass::data_movement, &copy},
    OpRule{"", "NonZero", OpClass::data_movement, &copy},
    OpRule{"", "Slice", OpClass::data_movement, &slice},
    OpRule{"", "Pad", OpClass::data_movement, &pad},
    OpRule{"", "Expand", OpClass::data_movement, &expand},
    OpRule{"", "Tile", OpClass::data_movement, &expand},
    OpRule{"", "Trilu", OpClass::data_movement, &trilu},
    OpRule{"", "Gather", OpClass::data_movement, &gather, &gather_class},
    OpRule{"", "GatherElements", OpClass::data_movement, &gather},
    OpRule{"", "GatherND", OpClass::data_movement, &gather},
    OpRule{"", "ScatterND", OpClass::data_movement, &scatter},
    OpRule{"", "ScatterElements", OpClass::data_movement, &scatter},
    OpRule{"", "Scatter", OpClass::data_movement, &scatter},
    OpRule{"", "Resize", OpClass::data_movement, &resize},
    OpRule{"", "Upsample", OpClass::data_movement, &resize},
    OpRule{"", "GridSample", OpClass::data_movement, &grid_sample},
};

}  // namespace

std::span<const OpRule> movement_rules() { return kRules; }

}  // namespace planner::ops
