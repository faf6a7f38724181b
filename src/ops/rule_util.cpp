// Shared helpers of the rule families and the CostQuery accessors.
#include "rule_util.hpp"

#include <algorithm>

namespace planner::ops {

bool needs_grad_by_role(const graph::Tensor& t) {
  return core::is_floating(t.dtype) &&
         (t.role == graph::TensorRole::parameter || t.role == graph::TensorRole::activation);
}

bool CostQuery::in_needs_grad(std::size_t i) const {
  if (i >= op.inputs.size() || !op.inputs[i]) return false;
  const auto id = *op.inputs[i];
  const auto& t = g.tensor(id);
  if (!core::is_floating(t.dtype)) return false;
  if (grad) return id.value < grad->size() && (*grad)[id.value];
  return needs_grad_by_role(t);
}

bool CostQuery::any_input_needs_grad() const {
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (in_needs_grad(i)) return true;
  return false;
}

bool CostQuery::any_output_floating() const {
  for (std::size_t i = 0; i < op.outputs.size(); ++i)
    if (detail::floating(out(i))) return true;
  return false;
}

namespace detail {

int norm_axis(std::int64_t a, int r) {
  if (a < 0) a += r;
  return static_cast<int>(std::clamp<std::int64_t>(a, 0, r));
}

double dim(const Tensor* t, int a) {
  if (!t) return 1.0;
  const int r = rank(t);
  if (a < 0) a += r;
  if (a < 0 || a >= r) return 1.0;
  return static_cast<double>(t->shape[static_cast<std::size_t>(a)]);
}

double prod(const Tensor* t, int from, int to) {
  if (!t) return 1.0;
  const int r = rank(t);
  from = norm_axis(from, r);
  to = norm_axis(to, r);
  double p = 1.0;
  for (int i = from; i < to; ++i) p *= static_cast<double>(t->shape[static_cast<std::size_t>(i)]);
  return p;
}

Bytes inputs_bytes(const CostQuery& q) {
  Bytes b;
  for (std::size_t i = 0; i < q.op.inputs.size(); ++i) b += bytes(q.in(i));
  return b;
}

Bytes outputs_bytes(const CostQuery& q) {
  Bytes b;
  for (std::size_t i = 0; i < q.op.outputs.size(); ++i) b += bytes(q.out(i));
  return b;
}

Bytes out_grad_bytes(const CostQuery& q) {
  Bytes b;
  for (std::size_t i = 0; i < q.op.outputs.size(); ++i)
    if (floating(q.out(i))) b += bytes(q.out(i));
  return b;
}

Bytes in_grad_bytes(const CostQuery& q) {
  Bytes b;
  for (std::size_t i = 0; i < q.op.inputs.size(); ++i)
    if (q.in_needs_grad(i)) b += bytes(q.in(i));
  return b;
}

Bytes float_inputs_bytes(const CostQuery& q) {
  Bytes b;
  for (std::size_t i = 0; i < q.op.inputs.size(); ++i)
    if (floating(q.in(i))) b += bytes(q.in(i));
  return b;
}

int present_inputs(const CostQuery& q) {
  int n = 0;
  for (const auto& in : q.op.inputs) n += in.has_value() ? 1 : 0;
  return n;
}

OpCost memory_bound(const CostQuery& q, double fwd_flops, Bytes saved_read) {
  OpCost c;
  c.forward_flops = Flops(fwd_flops);
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q);
  c.backward_flops = Flops(2.0 * fwd_flops);
  c.backward_bytes_read = out_grad_bytes(q) + saved_read;
  c.backward_bytes_written = in_grad_bytes(q);
  return c;
}

void add_scatter_add_backward(OpCost& c, Bytes table, Bytes rows, double elems) {
  c.backward_flops += Flops(elems);
  c.backward_bytes_read += rows * 2.0;
  c.backward_bytes_written += table + rows;
}

void clear_backward(OpCost& c) {
  c.backward_flops = Flops(0);
  c.backward_bytes_read = Bytes(0);
  c.backward_bytes_written = Bytes(0);
}

}  // namespace detail
}  // namespace planner::ops
