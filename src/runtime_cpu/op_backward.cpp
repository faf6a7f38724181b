// backward_op: gradients of one op's inputs from its outputs' gradients.
#include "planner/runtime_cpu/op_attrs.hpp"
#include "planner/runtime_cpu/index.hpp"
#include "planner/runtime_cpu/norm.hpp"

namespace planner::runtime_cpu {

using namespace detail;

Result<std::vector<std::optional<Tensor>>> backward_op(const graph::Op& op, const Inputs& in, const Inputs& outs,
                                                       const std::vector<const Tensor*>& dout,
                                                       const std::vector<bool>& needs) {
  const auto kind = kind_of(op);
  if (!kind) return op_error(op, "no CPU kernel for this op type");
  Grads g(in.size());
  auto need = [&](std::size_t i) { return i < needs.size() && needs[i] && i < in.size() && as_float(in[i]); };
  bool any = false;
  for (std::size_t i = 0; i < in.size(); ++i) any = any || need(i);
  bool any_dout = false;
  for (const Tensor* d : dout) any_dout = any_dout || d;
  if (!any || !any_dout) return g;
  const Tensor* dy = dout.empty() ? nullptr : dout[0];
  auto keep = [&](std::size_t i, Tensor t) {
    if (need(i)) g[i] = std::move(t);
  };
  switch (*kind) {
    case Kind::binary: {
      PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
      PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
      auto r = binary_backward(binary_of(op.type), *a, *b, *dy);
      keep(0, std::move(r.da));
      keep(1, std::move(r.db));
      return g;
    }
    case Kind::unary: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      const Tensor* y = as_float(outs[0]);
      if (!y) return op_error(op, "the forward output is missing");
      keep(0, unary_backward(unary_of(op.type), *x, *y, *dy));
      return g;
    }
    case Kind::matmul: {
      PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
      PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
      auto r = matmul_backward(*a, *b, *dy);
      keep(0, std::move(r.da));
      keep(1, std::move(r.db));
      return g;
    }
    case Kind::gemm: {
      PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
      PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
      const Tensor* c = in.size() > 2 ? as_float(in[2]) : nullptr;
      auto r = gemm_op_backward(*a, *b, c, gemm_attrs(op), *dy);
      keep(0, std::move(r.da));
      keep(1, std::move(r.db));
      if (c) keep(2, std::move(r.dc));
      return g;
    }
    case Kind::layer_norm: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      PLANNER_TRY(const Tensor* w, float_in(op, in, 1));
      const bool has_b = in.size() > 2 && as_float(in[2]);
      PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
      auto r = layer_norm_backward(*x, *w, has_b, axis, static_cast<float>(op.attr_float("epsilon").value_or(1e-5)), *dy);
      keep(0, std::move(r.dx));
      keep(1, std::move(r.dw));
      if (has_b) keep(2, std::move(r.db));
      return g;
    }
    case Kind::rms_norm: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      PLANNER_TRY(const Tensor* w, float_in(op, in, 1));
      auto r = rms_norm_backward(*x, *w, static_cast<float>(op.attr_float("epsilon").value_or(1e-5)), *dy);
      keep(0, std::move(r.dx));
      keep(1, std::move(r.dw));
      return g;
    }
    case Kind::softmax: {
      const Tensor* y = as_float(outs[0]);
      if (!y) return op_error(op, "the forward output is missing");
      PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, y->shape.size()));
      keep(0, softmax_backward(*y, *dy, axis));
      return g;
    }
    case Kind::gather: {
      PLANNER_TRY(const Tensor* data, float_in(op, in, 0));
      PLANNER_TRY(const IndexTensor* idx, index_in(op, in, 1));
      PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, data->shape.size()));
      keep(0, gather_backward(data->shape, *idx, axis, *dy));
      return g;
    }
    case Kind::cross_entropy: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      PLANNER_TRY(const IndexTensor* y, index_in(op, in, 1));
      keep(0, cross_entropy_backward(*x, *y, ignore_index_of(op), (*dy)[0]));
      return g;
    }
    case Kind::reduce: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      PLANNER_TRY(auto axes, reduce_axes(op, in, x->shape.size()));
      keep(0, reduce_backward(x->shape, axes, op.type == "ReduceMean", *dy));
      return g;
    }
    case Kind::reshape: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      Tensor d = *dy;
      d.shape = x->shape;
      keep(0, std::move(d));
      return g;
    }
    case Kind::expand: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      keep(0, sum_to_shape(*dy, x->shape));
      return g;
    }
    case Kind::transpose: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      PLANNER_TRY(auto perm, perm_of(op, x->shape.size()));
      keep(0, transpose(*dy, inverse_permutation(perm)));
      return g;
    }
    case Kind::split: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, x->shape.size()));
      std::vector<Tensor> zeros;  // stand-ins for outputs without a gradient
      zeros.reserve(outs.size());
      std::vector<const Tensor*> parts;
      for (std::size_t i = 0; i < outs.size(); ++i) {
        if (i < dout.size() && dout[i]) {
          parts.push_back(dout[i]);
        } else {
          zeros.emplace_back(value_shape(*outs[i]));
          parts.push_back(&zeros.back());
        }
      }
      keep(0, concat(parts, axis));
      return g;
    }
    case Kind::concat: {
      PLANNER_TRY(const Tensor* x0, float_in(op, in, 0));
      PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, x0->shape.size()));
      std::vector<std::int64_t> sizes;
      for (const Value* v : in) sizes.push_back(value_shape(*v)[axis]);
      auto parts = split(*dy, axis, sizes);
      for (std::size_t i = 0; i < parts.size(); ++i) keep(i, std::move(parts[i]));
      return g;
    }
    case Kind::slice: {
      PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
      PLANNER_TRY(SliceBox box, slice_box(op, in, x->shape));
      keep(0, slice_backward(x->shape, box, *dy));
      return g;
    }
    case Kind::trilu: {
      std::int64_t k = 0;
      if (const IndexTensor* kt = in.size() > 1 ? as_index(in[1]) : nullptr; kt && kt->data.size() == 1) k = kt->data[0];
      keep(0, trilu(*dy, op.attr_int("upper").value_or(1) != 0, k));
      return g;
    }
    case Kind::cast:
      if (as_float(outs[0])) keep(0, *dy);
      return g;
    case Kind::constant:
    case Kind::constant_of_shape:
      return g;
  }
  return op_error(op, "no CPU kernel for this op type");
}

}  // namespace planner::runtime_cpu
