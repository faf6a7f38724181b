// Normalisation: LayerNormalization (any domain), RMS norms, Skip*
// (com.microsoft), BatchNormalization, InstanceNormalization,
// GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN, and
// com.microsoft EmbedLayerNormalization.
//
// Memory-bound. X is input 0; F per element of X (every elementary op 1):
//   LayerNormalization 7 (sum, sub, square+sum 2, mul rstd, mul gamma, add beta;
//     6 without a bias input)
//   SimplifiedLayerNormalization / RMSNormalization 4 (square, sum, mul rstd, mul gamma)
//   SkipLayerNormalization 7 + 1 (skip add) + 1 with a bias input
//   SkipSimplifiedLayerNormalization 4 + 1 + 1 with a bias input
//   BatchNormalization, InstanceNormalization, GroupNormalization 7 (batch
//     statistics, as in training, whatever training_mode says); BatchNorm
//     reads X once more forward and dY and X once more backward (two-pass
//     kernels, batch_norm() below);
//     com.microsoft GroupNorm + 5 when activation = 1 (SiLU)
//   LpNormalization 3, MeanVarianceNormalization 5, LRN size + 5
// forward  F * numel(X) FLOPs; reads every input, writes every output, plus
//          the saved statistics (mean and 1/std in f32: 8 bytes per
//          normalised row) when the op has no Mean/InvStdDev outputs.
// backward 2 F numel(X) FLOPs; reads dY (output 0 only: statistic outputs
//          carry no gradient), every floating input (X, gamma, beta, skip) and
//          the statistics; writes the gradients of the inputs that need one.
// Rows (statistics count): LayerNorm/RMS over axis (default -1): prod(X[:axis]);
//   Skip*: numel(X) / last dim; BatchNorm: C; InstanceNorm: N*C; GroupNorm:
//   N * num_groups; LRN, Lp, MVN: none.
//
// EmbedLayerNormalization (com.microsoft; class embedding): inputs input_ids,
//   segment_ids?, word_embedding, position_embedding, segment_embedding?,
//   gamma, beta, mask?, position_ids?; Y[B, S, H].
//   forward  (t - 1 + 7) * numel(Y) FLOPs for t tables used (sums, then LN);
//            reads ids, masks, gamma, beta and one gathered row per token per
//            table (numel(Y) elements each), writes every output.
//   backward LayerNorm backward (2 * 7 numel(Y); reads dY, the embedding sum
//            (numel(Y) elements), gamma and statistics) plus, per table
//            needing a gradient, the dense scatter-add of an embedding
//            (add_scatter_add_backward); writes dGamma, dBeta.
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

constexpr double kStatBytesPerRow = 8.0;  // mean + 1/std, f32

OpCost normalize(const CostQuery& q, double per_elem, double rows, bool stats_as_outputs) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  const Bytes stats(rows * kStatBytesPerRow);
  OpCost c;
  c.forward_flops = Flops(per_elem * numel(x));
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q) + (stats_as_outputs && q.out(1) ? Bytes(0) : stats);
  c.backward_flops = Flops(2.0 * per_elem * numel(x));
  c.backward_bytes_read = bytes(y) + float_inputs_bytes(q) + stats;
  c.backward_bytes_written = in_grad_bytes(q);
  return c;
}

double rows_before_axis(const CostQuery& q, std::int64_t default_axis) {
  const auto* x = q.in(0);
  const int axis = norm_axis(q.op.attr_int("axis").value_or(default_axis), rank(x));
  return prod(x, 0, axis);
}

OpCost layer_norm(const CostQuery& q) {
  return normalize(q, q.in(2) ? 7.0 : 6.0, rows_before_axis(q, -1), true);
}
OpCost rms_norm(const CostQuery& q) { return normalize(q, 4.0, rows_before_axis(q, -1), true); }

double last_dim_rows(const CostQuery& q) { return numel(q.in(0)) / std::max(dim(q.in(0), -1), 1.0); }

// SkipLayerNormalization: input, skip, gamma, beta?, bias?
OpCost skip_layer_norm(const CostQuery& q) {
  return normalize(q, 7.0 + 1.0 + (q.in(4) ? 1.0 : 0.0), last_dim_rows(q), true);
}
// SkipSimplifiedLayerNormalization: input, skip, gamma, bias?
OpCost skip_rms_norm(const CostQuery& q) {
  return normalize(q, 4.0 + 1.0 + (q.in(3) ? 1.0 : 0.0), last_dim_rows(q), true);
}

// Batch statistics span the whole batch (N x spatial per channel), far more
// than one kernel keeps on chip, so training BatchNorm runs as a reduction
// kernel then an elementwise one (cuDNN and PyTorch's native kernels alike):
// forward reads X for the statistics, then X again to write Y; backward
// reduces dY and dY*(X - mean) for dgamma/dbeta, then reads dY and X again
// to write dX. One extra read of X forward, of dY and X backward, over
// normalize()'s single pass. (LayerNorm/RMSNorm rows fit on chip: one pass.)
OpCost batch_norm(const CostQuery& q) {
  OpCost c = normalize(q, 7.0, dim(q.in(0), 1), false);
  if (!q.in(0) || !q.out(0)) return c;
  c.forward_bytes_read += bytes(q.in(0));
  c.backward_bytes_read += bytes(q.out(0)) + bytes(q.in(0));
  return c;
}
OpCost instance_norm(const CostQuery& q) { return normalize(q, 7.0, dim(q.in(0), 0) * dim(q.in(0), 1), false); }
OpCost group_norm(const CostQuery& q) {
  const double groups = static_cast<double>(q.op.attr_int("num_groups").value_or(q.op.attr_int("groups").value_or(1)));
  const double act = q.op.attr_int("activation").value_or(0) == 1 ? 5.0 : 0.0;
  return normalize(q, 7.0 + act, dim(q.in(0), 0) * groups, false);
}
OpCost lp_norm(const CostQuery& q) { return normalize(q, 3.0, 0.0, false); }
OpCost mvn(const CostQuery& q) { return normalize(q, 5.0, 0.0, false); }
OpCost lrn(const CostQuery& q) {
  return normalize(q, static_cast<double>(q.op.attr_int("size").value_or(1)) + 5.0, 0.0, false);
}

OpCost embed_layer_norm(const CostQuery& q) {
  const auto* y = q.out(0);
  if (!y || !q.in(0) || !q.in(2)) return fallback_cost(q.op, q.g, q.grad);
  const double ny = numel(y);
  const double es = elem_size(q.in(2));
  const Bytes rows(ny * es);
  const double rows_count = ny / std::max(dim(y, -1), 1.0);
  const Bytes stats(rows_count * kStatBytesPerRow);
  constexpr std::array<std::size_t, 3> kTables{2, 3, 4};
  OpCost c;
  double tables = 0;
  for (std::size_t i = 0; i < q.op.inputs.size(); ++i) {
    const bool is_table = i == 2 || i == 3 || i == 4;
    if (!q.in(i)) continue;
    if (is_table) {
      tables += 1;
      c.forward_bytes_read += rows;
    } else {
      c.forward_bytes_read += bytes(q.in(i));
    }
  }
  c.forward_flops = Flops((tables - 1.0 + 7.0) * ny);
  c.forward_bytes_written = outputs_bytes(q) + stats;
  c.backward_flops = Flops(2.0 * 7.0 * ny);
  c.backward_bytes_read = bytes(y) + rows + bytes(q.in(5)) + stats;
  for (auto i : {std::size_t{5}, std::size_t{6}})
    if (q.in_needs_grad(i)) c.backward_bytes_written += bytes(q.in(i));
  for (auto i : kTables)
    if (q.in_needs_grad(i)) add_scatter_add_backward(c, bytes(q.in(i)), rows, ny);
  return c;
}

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kRules{
    OpRule{"", "LayerNormalization", OpClass::normalization, &layer_norm},
    OpRule{"", "SimplifiedLayerNormalization", OpClass::normalization, &rms_norm},
    OpRule{"", "RMSNormalization", OpClass::normalization, &rms_norm},
    OpRule{"", "BatchNormalization", OpClass::normalization, &batch_norm},
    OpRule{"", "InstanceNormalization", OpClass::normalization, &instance_norm},
    OpRule{"", "GroupNormalization", OpClass::normalization, &group_norm},
    OpRule{"", "LpNormalization", OpClass::normalization, &lp_norm},
    OpRule{"", "MeanVarianceNormalization", OpClass::normalization, &mvn},
    OpRule{"", "LRN", OpClass::normalization, &lrn},
    OpRule{ms, "SkipLayerNormalization", OpClass::normalization, &skip_layer_norm},
    OpRule{ms, "SkipSimplifiedLayerNormalization", OpClass::normalization, &skip_rms_norm},
    OpRule{ms, "GroupNorm", OpClass::normalization, &group_norm},
    OpRule{ms, "EmbedLayerNormalization", OpClass::embedding, &embed_layer_norm},
};

}  // namespace

std::span<const OpRule> norm_rules() { return kRules; }

}  // namespace planner::ops
