// backward_op: gradients of one op's inputs from its outputs' gradients.
#include "planner/runtime_cpu/op_attrs.hpp"
#include "planner/runtime_cpu/index.hpp"
#include "planner/runtime_cpu/norm.hpp"

namespace planner::runtime_cpu {

using namespace detail;

namespace {

/// The input gradients an op's backward keeps: those its caller needs
/// (float inputs only).
class Kept {
 public:
  Kept(const Inputs& in, const std::vector<bool>& needs) : in_(in), needs_(needs), g_(in.size()) {}
  bool need(std::size_t i) const { return i < needs_.size() && needs_[i] && i < in_.size() && as_float(in_[i]); }
  void operator()(std::size_t i, Tensor t) {
    if (need(i)) g_[i] = std::move(t);
  }
  Grads take() { return std::move(g_); }

 private:
  const Inputs& in_;
  const std::vector<bool>& needs_;
  Grads g_;
};

// Elementwise.
Status binary_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
  auto r = binary_backward(binary_of(op.type), *a, *b, *dy, keep.need(0), keep.need(1));
  keep(0, std::move(r.da));
  keep(1, std::move(r.db));
  return Status::success();
}

Status unary_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  const Tensor* y = as_float(outs[0]);
  if (!y) return op_error(op, "the forward output is missing");
  keep(0, unary_backward(unary_of(op.type), *x, *y, *dy));
  return Status::success();
}

// GEMMs.
Status matmul_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
  auto r = matmul_backward(*a, *b, *dy);
  keep(0, std::move(r.da));
  keep(1, std::move(r.db));
  return Status::success();
}

Status gemm_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
  const Tensor* c = in.size() > 2 ? as_float(in[2]) : nullptr;
  auto r = gemm_op_backward(*a, *b, c, gemm_attrs(op), *dy);
  keep(0, std::move(r.da));
  keep(1, std::move(r.db));
  if (c) keep(2, std::move(r.dc));
  return Status::success();
}

// Normalisations and softmax.
Status layer_norm_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* w, float_in(op, in, 1));
  const bool has_b = in.size() > 2 && as_float(in[2]);
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
  auto r = layer_norm_backward(*x, *w, has_b, axis, static_cast<float>(op.attr_float("epsilon").value_or(1e-5)), *dy);
  keep(0, std::move(r.dx));
  keep(1, std::move(r.dw));
  if (has_b) keep(2, std::move(r.db));
  return Status::success();
}

Status rms_norm_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* w, float_in(op, in, 1));
  auto r = rms_norm_backward(*x, *w, static_cast<float>(op.attr_float("epsilon").value_or(1e-5)), *dy);
  keep(0, std::move(r.dx));
  keep(1, std::move(r.dw));
  return Status::success();
}

Status softmax_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  const Tensor* y = as_float(outs[0]);
  if (!y) return op_error(op, "the forward output is missing");
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, y->shape.size()));
  keep(0, softmax_backward(*y, *dy, axis));
  return Status::success();
}

// Indexing and the loss.
Status gather_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* data, float_in(op, in, 0));
  PLANNER_TRY(const IndexTensor* idx, index_in(op, in, 1));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, data->shape.size()));
  keep(0, gather_backward(data->shape, *idx, axis, *dy));
  return Status::success();
}

Status cross_entropy_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(const IndexTensor* y, index_in(op, in, 1));
  keep(0, cross_entropy_backward(*x, *y, ignore_index_of(op), (*dy)[0]));
  return Status::success();
}

// Reductions.
Status reduce_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(auto axes, reduce_axes(op, in, x->shape.size()));
  keep(0, reduce_backward(x->shape, axes, op.type == "ReduceMean", *dy));
  return Status::success();
}

// Shapes.
Status reshape_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  Tensor d = *dy;
  d.shape = x->shape;
  keep(0, std::move(d));
  return Status::success();
}

Status expand_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  keep(0, sum_to_shape(*dy, x->shape));
  return Status::success();
}

Status transpose_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(auto perm, perm_of(op, x->shape.size()));
  keep(0, transpose(*dy, inverse_permutation(perm)));
  return Status::success();
}

Status split_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
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
  return Status::success();
}

Status concat_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x0, float_in(op, in, 0));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, x0->shape.size()));
  std::vector<std::int64_t> sizes;
  for (const Value* v : in) sizes.push_back(value_shape(*v)[axis]);
  auto parts = split(*dy, axis, sizes);
  for (std::size_t i = 0; i < parts.size(); ++i) keep(i, std::move(parts[i]));
  return Status::success();
}

Status slice_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(SliceBox box, slice_box(op, in, x->shape));
  keep(0, slice_backward(x->shape, box, *dy));
  return Status::success();
}

Status trilu_bwd(const graph::Op& op, const Inputs& in, const Inputs& outs,
                  const std::vector<const Tensor*>& dout, const Tensor* dy, Kept& keep) {
  std::int64_t k = 0;
  if (const IndexTensor* kt = in.size() > 1 ? as_index(in[1]) : nullptr; kt && kt->data.size() == 1) k = kt->data[0];
  keep(0, trilu(*dy, op.attr_int("upper").value_or(1) != 0, k));
  return Status::success();
}

}  // namespace

Result<std::vector<std::optional<Tensor>>> backward_op(const graph::Op& op, const Inputs& in, const Inputs& outs,
                                                       const std::vector<const Tensor*>& dout,
                                                       const std::vector<bool>& needs) {
  const auto kind = kind_of(op);
  if (!kind) return op_error(op, "no CPU kernel for this op type");
  Kept keep(in, needs);
  bool any = false;
  for (std::size_t i = 0; i < in.size(); ++i) any = any || keep.need(i);
  bool any_dout = false;
  for (const Tensor* d : dout) any_dout = any_dout || d;
  if (!any || !any_dout) return keep.take();
  const Tensor* dy = dout.empty() ? nullptr : dout[0];
  switch (*kind) {
    case Kind::binary:
      PLANNER_TRY_STATUS(binary_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::unary:
      PLANNER_TRY_STATUS(unary_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::matmul:
      PLANNER_TRY_STATUS(matmul_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::gemm:
      PLANNER_TRY_STATUS(gemm_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::layer_norm:
      PLANNER_TRY_STATUS(layer_norm_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::rms_norm:
      PLANNER_TRY_STATUS(rms_norm_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::softmax:
      PLANNER_TRY_STATUS(softmax_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::gather:
      PLANNER_TRY_STATUS(gather_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::cross_entropy:
      PLANNER_TRY_STATUS(cross_entropy_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::reduce:
      PLANNER_TRY_STATUS(reduce_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::reshape:
      PLANNER_TRY_STATUS(reshape_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::expand:
      PLANNER_TRY_STATUS(expand_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::transpose:
      PLANNER_TRY_STATUS(transpose_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::split:
      PLANNER_TRY_STATUS(split_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::concat:
      PLANNER_TRY_STATUS(concat_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::slice:
      PLANNER_TRY_STATUS(slice_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::trilu:
      PLANNER_TRY_STATUS(trilu_bwd(op, in, outs, dout, dy, keep));
      return keep.take();
    case Kind::cast:
      if (as_float(outs[0])) keep(0, *dy);
      return keep.take();
    case Kind::constant:
    case Kind::constant_of_shape:
      return keep.take();
  }
  return op_error(op, "no CPU kernel for this op type");
}

}  // namespace planner::runtime_cpu
