// forward_op: one op forward on caller-owned tensors.
#include <cmath>

#include "planner/runtime_cpu/op_attrs.hpp"
#include "planner/runtime_cpu/index.hpp"
#include "planner/runtime_cpu/norm.hpp"

namespace planner::runtime_cpu {

using namespace detail;

namespace {

using Outs = std::vector<Value>;

/// One output, moved in (a braced Outs{v} would copy v: an initializer
/// list's elements are const).
Outs single(Value v) {
  Outs o;
  o.push_back(std::move(v));
  return o;
}

/// Same data, the caller's shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity).
Result<Outs> reshape_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  if (in.empty() || !in[0]) return op_error(op, "input 0 is missing");
  Value v = *in[0];
  const Shape& from = value_shape(v);
  if (numel(from) != numel(out[0].shape))
    return op_error(op, fmt::format("cannot reshape {} to {}", shape_str(from), shape_str(out[0].shape)));
  std::visit([&](auto& t) { t.shape = out[0].shape; }, v);
  return single(std::move(v));
}

Result<Outs> cast_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  if (in.empty() || !in[0]) return op_error(op, "input 0 is missing");
  const bool to_float = out[0].dtype == core::DType::f32;
  if (!to_float && !is_index_dtype(out[0].dtype))
    return op_error(op, fmt::format("cast to {} is not supported (fp32 and integers only)", core::dtype_name(out[0].dtype)));
  if (const Tensor* t = as_float(in[0])) {
    if (to_float) return single(Value(*t));
    IndexTensor r{t->shape, std::vector<std::int64_t>(t->data.size())};
    for (std::size_t k = 0; k < r.data.size(); ++k) r.data[k] = static_cast<std::int64_t>(std::trunc(t->data[k]));
    return single(Value(std::move(r)));
  }
  const IndexTensor* t = as_index(in[0]);
  if (!to_float) return single(Value(*t));
  Tensor r(t->shape);
  for (std::size_t k = 0; k < r.data.size(); ++k) r.data[k] = static_cast<float>(t->data[k]);
  return single(Value(std::move(r)));
}

Result<Outs> constant_of_shape_fwd(const graph::Op& op, const std::vector<OutputSpec>& out) {
  double fill = 0.0;
  if (auto it = op.attrs.find("value"); it != op.attrs.end()) {
    if (const auto* d = std::get_if<double>(&it->second)) fill = *d;
    else if (const auto* i = std::get_if<std::int64_t>(&it->second)) fill = static_cast<double>(*i);
    else return op_error(op, "value attribute is not a number");
  }
  if (out[0].dtype == core::DType::f32) {
    Tensor t(out[0].shape);
    std::fill(t.data.begin(), t.data.end(), static_cast<float>(fill));
    return single(Value(std::move(t)));
  }
  if (!is_index_dtype(out[0].dtype)) return op_error(op, "output dtype is neither fp32 nor integer");
  return single(Value(IndexTensor{out[0].shape, std::vector<std::int64_t>(static_cast<std::size_t>(numel(out[0].shape)),
                                                                          static_cast<std::int64_t>(fill))}));
}

/// A single float output, checked against the caller's shape.
Result<Outs> one(const graph::Op& op, const std::vector<OutputSpec>& out, Tensor t) {
  PLANNER_TRY_STATUS(check_shape(op, t.shape, out[0]));
  return single(Value(std::move(t)));
}

// Elementwise.
Result<Outs> binary_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
  if (!broadcast_shape(a->shape, b->shape))
    return op_error(op, fmt::format("shapes {} and {} do not broadcast", shape_str(a->shape), shape_str(b->shape)));
  return one(op, out, binary(binary_of(op.type), *a, *b));
}

Result<Outs> unary_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  if (op.type == "Gelu" && op.attr_string("approximate").value_or("none") != "none")
    return op_error(op, "only the erf form of Gelu (approximate=none) is implemented");
  return one(op, out, unary(unary_of(op.type), *x));
}

// GEMMs.
Result<Outs> matmul_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
  if (!matmul_shape(a->shape, b->shape))
    return op_error(op, fmt::format("cannot multiply {} by {} (both operands need rank >= 2)", shape_str(a->shape),
                                    shape_str(b->shape)));
  return one(op, out, matmul(*a, *b));
}

Result<Outs> gemm_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* a, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* b, float_in(op, in, 1));
  const Tensor* c = in.size() > 2 ? as_float(in[2]) : nullptr;
  const GemmAttrs at = gemm_attrs(op);
  if (a->shape.size() != 2 || b->shape.size() != 2 ||
      a->shape[at.trans_a ? 0 : 1] != b->shape[at.trans_b ? 1 : 0])
    return op_error(op, fmt::format("operands {} and {} do not fit", shape_str(a->shape), shape_str(b->shape)));
  const Shape mn{a->shape[at.trans_a ? 1 : 0], b->shape[at.trans_b ? 0 : 1]};
  if (c && broadcast_shape(c->shape, mn) != mn) return op_error(op, "C does not broadcast to [M,N]");
  return one(op, out, gemm_op(*a, *b, c, at));
}

// Normalisations and softmax.
Result<Outs> layer_norm_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* w, float_in(op, in, 1));
  const Tensor* b = in.size() > 2 ? as_float(in[2]) : nullptr;
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
  const Shape tail(x->shape.begin() + static_cast<std::ptrdiff_t>(axis), x->shape.end());
  if (w->size() != numel(tail) || (b && b->size() != numel(tail)))
    return op_error(op, "scale/bias do not match the normalised axes");
  // Defensive: the op's own outputs passed unsupported_variant (check_supported)
  // above; this refuses a caller asking for more outputs than the op has.
  if (out.size() > 1) return op_error(op, "the Mean and InvStdDev outputs are not implemented");
  return one(op, out, layer_norm(*x, *w, b, axis, static_cast<float>(op.attr_float("epsilon").value_or(1e-5))));
}

Result<Outs> rms_norm_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(const Tensor* w, float_in(op, in, 1));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
  if (axis + 1 != x->shape.size() || w->size() != x->shape.back())
    return op_error(op, "only normalisation over the last axis with a scale of its size is implemented");
  return one(op, out, rms_norm(*x, *w, static_cast<float>(op.attr_float("epsilon").value_or(1e-5))));
}

Result<Outs> softmax_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
  return one(op, out, softmax(*x, axis));
}

// Indexing and the loss.
Result<Outs> gather_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* data, float_in(op, in, 0));
  PLANNER_TRY(const IndexTensor* idx, index_in(op, in, 1));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, data->shape.size()));
  const std::int64_t n = data->shape[axis];
  for (auto v : idx->data)
    if (v < -n || v >= n) return op_error(op, fmt::format("index {} is out of range [0, {})", v, n));
  return one(op, out, gather(*data, *idx, axis));
}

Result<Outs> cross_entropy_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(const IndexTensor* y, index_in(op, in, 1));
  // Defensive, as for LayerNormalization: a weights input or log_prob output
  // the op itself lacks, passed by a caller.
  if (in.size() > 2 && in[2]) return op_error(op, "class weights are not implemented");
  if (op.attr_string("reduction").value_or("mean") != "mean") return op_error(op, "only reduction=mean is implemented");
  if (out.size() > 1) return op_error(op, "the log_prob output is not implemented");
  if (x->shape.size() != 2 || y->shape != Shape{x->shape[0]})
    return op_error(op, "scores must be [N,C] and labels [N]");
  const auto ig = ignore_index_of(op);
  for (auto v : y->data)
    if ((v < 0 || v >= x->shape[1]) && !(ig && v == *ig))
      return op_error(op, fmt::format("label {} is out of range [0, {})", v, x->shape[1]));
  return one(op, out, Tensor(Shape{}, {static_cast<float>(cross_entropy(*x, *y, ig))}));
}

// Reductions.
Result<Outs> reduce_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(auto axes, reduce_axes(op, in, x->shape.size()));
  return one(op, out, reduce(*x, axes, op.attr_int("keepdims").value_or(1) != 0, op.type == "ReduceMean"));
}

// Shapes.
Result<Outs> expand_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  if (broadcast_shape(x->shape, out[0].shape) != out[0].shape)
    return op_error(op, fmt::format("cannot expand {} to {}", shape_str(x->shape), shape_str(out[0].shape)));
  return one(op, out, broadcast_to(*x, out[0].shape));
}

Result<Outs> transpose_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(auto perm, perm_of(op, x->shape.size()));
  return one(op, out, transpose(*x, perm));
}

Result<Outs> split_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, x->shape.size()));
  std::vector<std::int64_t> sizes;
  std::int64_t total = 0;
  for (const auto& o : out) {
    if (o.shape.size() != x->shape.size()) return op_error(op, "an output has the wrong rank");
    sizes.push_back(o.shape[axis]);
    total += o.shape[axis];
  }
  if (total != x->shape[axis]) return op_error(op, "the outputs do not add up to the input along the axis");
  Outs r;
  for (auto& t : split(*x, axis, sizes)) {
    PLANNER_TRY_STATUS(check_shape(op, t.shape, out[r.size()]));
    r.emplace_back(std::move(t));
  }
  return r;
}

Result<Outs> concat_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  std::vector<const Tensor*> parts;
  for (std::size_t i = 0; i < in.size(); ++i) {
    PLANNER_TRY(const Tensor* t, float_in(op, in, i));
    parts.push_back(t);
  }
  if (parts.empty()) return op_error(op, "no inputs");
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, parts[0]->shape.size()));
  for (const Tensor* p : parts) {
    Shape a = p->shape, b = parts[0]->shape;
    if (a.size() != b.size()) return op_error(op, "inputs differ in rank");
    a[axis] = b[axis] = 0;
    if (a != b) return op_error(op, "inputs differ off the concatenation axis");
  }
  return one(op, out, concat(parts, axis));
}

Result<Outs> slice_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  PLANNER_TRY(SliceBox box, slice_box(op, in, x->shape));
  return one(op, out, slice(*x, box));
}

Result<Outs> trilu_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  PLANNER_TRY(const Tensor* x, float_in(op, in, 0));
  std::int64_t k = 0;
  if (in.size() > 1 && in[1]) {
    PLANNER_TRY(const IndexTensor* kt, index_in(op, in, 1));
    if (kt->data.size() != 1) return op_error(op, "k must be a scalar");
    k = kt->data[0];
  }
  if (x->shape.size() < 2) return op_error(op, "input rank must be >= 2");
  return one(op, out, trilu(*x, op.attr_int("upper").value_or(1) != 0, k));
}

// Constants.
Result<Outs> constant_fwd(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  if (!out[0].values) return op_error(op, "the constant's values were not kept (more than 4096 elements?)");
  PLANNER_TRY(Value v, constant_value(*out[0].values, out[0].shape, out[0].dtype, op.name));
  return single(std::move(v));
}

}  // namespace

Result<std::vector<Value>> forward_op(const graph::Op& op, const Inputs& in, const std::vector<OutputSpec>& out) {
  const auto kind = kind_of(op);
  if (!kind) return op_error(op, "no CPU kernel for this op type");
  if (auto why = unsupported_variant(op, *kind)) return op_error(op, *why);
  if (out.empty()) return op_error(op, "no outputs");
  switch (*kind) {
    case Kind::binary:
      return binary_fwd(op, in, out);
    case Kind::unary:
      return unary_fwd(op, in, out);
    case Kind::matmul:
      return matmul_fwd(op, in, out);
    case Kind::gemm:
      return gemm_fwd(op, in, out);
    case Kind::layer_norm:
      return layer_norm_fwd(op, in, out);
    case Kind::rms_norm:
      return rms_norm_fwd(op, in, out);
    case Kind::softmax:
      return softmax_fwd(op, in, out);
    case Kind::gather:
      return gather_fwd(op, in, out);
    case Kind::cross_entropy:
      return cross_entropy_fwd(op, in, out);
    case Kind::reduce:
      return reduce_fwd(op, in, out);
    case Kind::reshape:
      return reshape_fwd(op, in, out);
    case Kind::expand:
      return expand_fwd(op, in, out);
    case Kind::transpose:
      return transpose_fwd(op, in, out);
    case Kind::split:
      return split_fwd(op, in, out);
    case Kind::concat:
      return concat_fwd(op, in, out);
    case Kind::slice:
      return slice_fwd(op, in, out);
    case Kind::trilu:
      return trilu_fwd(op, in, out);
    case Kind::constant:
      return constant_fwd(op, in, out);
    case Kind::constant_of_shape:
      return constant_of_shape_fwd(op, out);
    case Kind::cast:
      return cast_fwd(op, in, out);
  }
  return op_error(op, "no CPU kernel for this op type");
}

}  // namespace planner::runtime_cpu
