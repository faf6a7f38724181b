#pragma once
// Private to src/ops: shape and byte helpers shared by the rule families, and
// the family entry points table.cpp concatenates.

#include <cstdint>
#include <span>
#include <vector>

#include "planner/ops/semantics.hpp"

namespace planner::ops {

// One span of rows per family file.
std::span<const OpRule> matmul_rules();
std::span<const OpRule> rnn_rules();
std::span<const OpRule> conv_rules();
std::span<const OpRule> elementwise_rules();
std::span<const OpRule> norm_rules();
std::span<const OpRule> softmax_rules();
std::span<const OpRule> reduce_rules();
std::span<const OpRule> movement_rules();
std::span<const OpRule> attention_rules();
std::span<const OpRule> loss_rules();
std::span<const OpRule> constant_rules();
std::span<const OpRule> legacy_rules();
std::span<const OpRule> control_flow_rules();

namespace detail {

using graph::OpCost;
using graph::Tensor;

inline double numel(const Tensor* t) { return t ? static_cast<double>(t->numel()) : 0.0; }
inline Bytes bytes(const Tensor* t) { return t ? t->bytes() : Bytes(0); }
inline bool floating(const Tensor* t) { return t && core::is_floating(t->dtype); }
inline double elem_size(const Tensor* t) { return t ? static_cast<double>(core::dtype_size(t->dtype)) : 0.0; }
inline int rank(const Tensor* t) { return t ? static_cast<int>(t->shape.size()) : 0; }

/// Axis `a` of a rank-`r` tensor, negative counted from the end, clamped to [0, r].
int norm_axis(std::int64_t a, int r);
/// Dim `a` (negative from the end); 1 when out of range or t is null.
double dim(const Tensor* t, int a);
/// Product of dims [from, to) (negative indices from the end, clamped); 1 when empty.
double prod(const Tensor* t, int from, int to);
inline double prod_from(const Tensor* t, int from) { return prod(t, from, rank(t)); }

/// Sum of bytes of every present input / output.
Bytes inputs_bytes(const CostQuery& q);
Bytes outputs_bytes(const CostQuery& q);
/// Bytes of the floating outputs: the gradients backward reads.
Bytes out_grad_bytes(const CostQuery& q);
/// Bytes of the inputs that need a gradient: the gradients backward writes.
Bytes in_grad_bytes(const CostQuery& q);
/// Bytes of the floating inputs.
Bytes float_inputs_bytes(const CostQuery& q);
/// Number of present inputs.
int present_inputs(const CostQuery& q);

/// Memory-bound cost: forward reads all inputs, writes all outputs, does
/// `fwd_flops`; backward reads the outputs' gradients plus `saved_read`,
/// writes the inputs' gradients, does 2 x fwd_flops.
OpCost memory_bound(const CostQuery& q, double fwd_flops, Bytes saved_read);

/// Backward of a gather from `table` into rows totalling `rows` bytes and
/// `elems` elements, as PyTorch's dense embedding backward does it: zero-fill
/// the table's gradient (writes bytes(table)), then scatter-add dY into it
/// (reads dY and the touched gradient rows, writes those rows back: 2 x rows
/// read, rows written, `elems` adds). Indices are read by the caller.
void add_scatter_add_backward(OpCost& c, Bytes table, Bytes rows, double elems);

/// Zeroes the four backward fields.
void clear_backward(OpCost& c);

}  // namespace detail
}  // namespace planner::ops
