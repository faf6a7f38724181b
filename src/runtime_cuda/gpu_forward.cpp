// forward_op on the device (gpu_ops.hpp): the same checks as runtime_cpu's
// op_forward.cpp, then the kernels of op_kernels.cu and cuBLAS.

#include <fmt/format.h>

#include "gpu_ops.hpp"
#include "planner/runtime_cpu/op_attrs.hpp"
#include "planner/runtime_cuda/views.hpp"

namespace planner::runtime::gpu_ops {

using namespace runtime_cpu::detail;
using runtime_cpu::IndexTensor;
using runtime_cpu::numel;
using runtime_cpu::shape_str;

namespace {

using Outs = std::vector<GValue>;

Outs single(GValue v) {
  Outs r;
  r.push_back(std::move(v));
  return r;
}

/// Whether every input is a host integer value (or absent): shape arithmetic
/// and constants, run by runtime_cpu on the host.
bool host_only(const GInputs& in) {
  for (const GValue* v : in)
    if (v && as_device(v)) return false;
  return true;
}

Result<Outs> on_host(const Context& c, const graph::Op& op, const GInputs& in,
                     const std::vector<runtime_cpu::OutputSpec>& out) {
  const Shadow s = shadow_of(in);
  PLANNER_TRY(auto vals, runtime_cpu::forward_op(op, s.ptrs, out));
  Outs r;
  for (auto& v : vals) {
    if (auto* t = std::get_if<runtime_cpu::Tensor>(&v)) {
      PLANNER_TRY(DTensor d, upload(*t, c.store));
      r.emplace_back(std::move(d));
    } else {
      r.emplace_back(std::move(std::get<IndexTensor>(v)));
    }
  }
  return r;
}

/// A single device output, checked against the caller's shape.
Result<Outs> one(const graph::Op& op, const std::vector<runtime_cpu::OutputSpec>& out, DTensor t) {
  PLANNER_TRY_STATUS(check_shape(op, t.shape, out[0]));
  Outs r;
  r.emplace_back(std::move(t));
  return r;
}

// Elementwise.
Result<Outs> binary_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* a, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* b, dev_in(op, in, 1));
  const auto shape = runtime_cpu::broadcast_shape(a->shape, b->shape);
  if (!shape)
    return op_error(op, fmt::format("shapes {} and {} do not broadcast", shape_str(a->shape), shape_str(b->shape)));
  PLANNER_TRY(View av, view_or_error(op, kernel_math::broadcast_view(a->shape, *shape)));
  PLANNER_TRY(View bv, view_or_error(op, kernel_math::broadcast_view(b->shape, *shape)));
  PLANNER_TRY(DTensor y, empty_tensor(*shape, S));
  PLANNER_TRY_STATUS(launched(op, binary(S, static_cast<kernel_math::Binary>(binary_of(op.type)), a->data(), av,
                                         b->data(), bv, y.data(), y.size())));
  return one(op, out, std::move(y));
}

Result<Outs> unary_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  if (op.type == "Gelu" && op.attr_string("approximate").value_or("none") != "none")
    return op_error(op, "only the erf form of Gelu (approximate=none) is implemented");
  PLANNER_TRY(DTensor y, empty_tensor(x->shape, S));
  PLANNER_TRY_STATUS(launched(op, unary(S, static_cast<kernel_math::Unary>(unary_of(op.type)), x->data(), y.data(),
                                        y.size())));
  return one(op, out, std::move(y));
}

// GEMMs.
Result<Outs> matmul_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* a, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* b, dev_in(op, in, 1));
  const auto plan = kernel_math::matmul_gemms(a->shape, b->shape);
  if (!plan)
    return op_error(op, fmt::format("cannot multiply {} by {} (both operands need rank >= 2)", shape_str(a->shape),
                                    shape_str(b->shape)));
  PLANNER_TRY(DTensor y, empty_tensor(plan->out, S));
  for (const auto& call : plan->forward) PLANNER_TRY_STATUS(gemm(c, call, a->data(), b->data(), y.data()));
  return one(op, out, std::move(y));
}

Result<Outs> gemm_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* a, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* b, dev_in(op, in, 1));
  const DTensor* cc = in.size() > 2 ? as_device(in[2]) : nullptr;
  const runtime_cpu::GemmAttrs at = gemm_attrs(op);
  if (a->shape.size() != 2 || b->shape.size() != 2 || a->shape[at.trans_a ? 0 : 1] != b->shape[at.trans_b ? 1 : 0])
    return op_error(op, fmt::format("operands {} and {} do not fit", shape_str(a->shape), shape_str(b->shape)));
  const i64 M = a->shape[at.trans_a ? 1 : 0], K = a->shape[at.trans_a ? 0 : 1], N = b->shape[at.trans_b ? 0 : 1];
  const Shape mn{M, N};
  if (cc && runtime_cpu::broadcast_shape(cc->shape, mn) != mn) return op_error(op, "C does not broadcast to [M,N]");
  PLANNER_TRY(DTensor y, zero_tensor(mn, S));
  const bool with_c = cc && at.beta != 0.0f;
  if (with_c) {  // y = beta * broadcast(c), then += alpha op(a) op(b)
    PLANNER_TRY(View cv, view_or_error(op, kernel_math::broadcast_view(cc->shape, mn)));
    PLANNER_TRY_STATUS(launched(op, copy_view(S, cc->data(), cv, y.data(), y.size())));
    PLANNER_TRY_STATUS(launched(op, scale(S, y.data(), y.data(), y.size(), at.beta)));
  }
  PLANNER_TRY_STATUS(gemm(c, at.trans_a, at.trans_b, M, N, K, at.alpha, a->data(), b->data(), with_c ? 1.0f : 0.0f,
                          y.data()));
  return one(op, out, std::move(y));
}

// Normalisations and softmax.
Result<Outs> layer_norm_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* w, dev_in(op, in, 1));
  const DTensor* b = in.size() > 2 ? as_device(in[2]) : nullptr;
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
  const Shape tail(x->shape.begin() + static_cast<std::ptrdiff_t>(axis), x->shape.end());
  const i64 n = numel(tail);
  if (w->size() != n || (b && b->size() != n)) return op_error(op, "scale/bias do not match the normalised axes");
  // Defensive: the op's own outputs passed unsupported_variant (check_supported)
  // above; this refuses a caller asking for more outputs than the op has.
  if (out.size() > 1) return op_error(op, "the Mean and InvStdDev outputs are not implemented");
  PLANNER_TRY(DTensor y, empty_tensor(x->shape, S));
  const float eps = static_cast<float>(op.attr_float("epsilon").value_or(1e-5));
  PLANNER_TRY_STATUS(launched(op, layer_norm(S, x->data(), w->data(), b ? b->data() : nullptr, y.data(),
                                             n ? x->size() / n : 0, n, eps)));
  return one(op, out, std::move(y));
}

Result<Outs> rms_norm_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* w, dev_in(op, in, 1));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
  if (axis + 1 != x->shape.size() || w->size() != x->shape.back())
    return op_error(op, "only normalisation over the last axis with a scale of its size is implemented");
  const i64 n = x->shape.back();
  PLANNER_TRY(DTensor y, empty_tensor(x->shape, S));
  PLANNER_TRY_STATUS(launched(op, rms_norm(S, x->data(), w->data(), y.data(), n ? x->size() / n : 0, n,
                                           static_cast<float>(op.attr_float("epsilon").value_or(1e-5)))));
  return one(op, out, std::move(y));
}

Result<Outs> softmax_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
  const AxisSplit sp = split_axis(x->shape, axis);
  PLANNER_TRY(DTensor y, empty_tensor(x->shape, S));
  PLANNER_TRY_STATUS(launched(op, softmax(S, x->data(), y.data(), sp.outer, sp.n, sp.inner)));
  return one(op, out, std::move(y));
}

// Indexing and the loss.
Result<Outs> gather_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* data, dev_in(op, in, 0));
  const IndexTensor* idx = in.size() > 1 ? as_host_index(in[1]) : nullptr;
  if (!idx) return op_error(op, "input 1 must be an integer tensor");
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, data->shape.size()));
  const i64 n = data->shape[axis];
  for (auto v : idx->data)
    if (v < -n || v >= n) return op_error(op, fmt::format("index {} is out of range [0, {})", v, n));
  const AxisSplit sp = split_axis(data->shape, axis);
  Shape ys(data->shape.begin(), data->shape.begin() + static_cast<std::ptrdiff_t>(axis));
  ys.insert(ys.end(), idx->shape.begin(), idx->shape.end());
  ys.insert(ys.end(), data->shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data->shape.end());
  PLANNER_TRY(DeviceBuffer di, upload_indices(idx->data));
  PLANNER_TRY(DTensor y, empty_tensor(ys, S));
  PLANNER_TRY_STATUS(launched(op, gather(S, data->data(), static_cast<const i64*>(di.get()), y.data(), sp.outer, n,
                                         sp.inner, idx->size())));
  return one(op, out, std::move(y));
}

Result<Outs> cross_entropy_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  const IndexTensor* y = in.size() > 1 ? as_host_index(in[1]) : nullptr;
  if (!y) return op_error(op, "input 1 must be an integer tensor");
  // Defensive, as for LayerNormalization: a weights input or log_prob output
  // the op itself lacks, passed by a caller.
  if (in.size() > 2 && in[2]) return op_error(op, "class weights are not implemented");
  if (op.attr_string("reduction").value_or("mean") != "mean") return op_error(op, "only reduction=mean is implemented");
  if (out.size() > 1) return op_error(op, "the log_prob output is not implemented");
  if (x->shape.size() != 2 || y->shape != Shape{x->shape[0]}) return op_error(op, "scores must be [N,C] and labels [N]");
  const auto ig = ignore_index_of(op);
  std::int64_t kept = 0;
  for (auto v : y->data) {
    if ((v < 0 || v >= x->shape[1]) && !(ig && v == *ig))
      return op_error(op, fmt::format("label {} is out of range [0, {})", v, x->shape[1]));
    kept += !(ig && v == *ig);
  }
  PLANNER_TRY(DeviceBuffer labels, upload_indices(y->data));
  PLANNER_TRY(DeviceBuffer rows, device_alloc(static_cast<std::size_t>(x->shape[0] + 1) * sizeof(double)));
  auto* row_loss = static_cast<double*>(rows.get());
  PLANNER_TRY_STATUS(launched(op, cross_entropy(S, x->data(), static_cast<const i64*>(labels.get()), x->shape[0],
                                                x->shape[1], ig.has_value(), ig.value_or(0), row_loss,
                                                row_loss + x->shape[0])));
  double total = 0;
  PLANNER_TRY_STATUS(cuda_status(cudaMemcpy(&total, row_loss + x->shape[0], sizeof total, cudaMemcpyDeviceToHost),
                                 "cross-entropy total"));
  const double loss = kept == 0 ? 0.0 : total / static_cast<double>(kept);
  PLANNER_TRY(DTensor t, upload(runtime_cpu::Tensor(Shape{}, {static_cast<float>(loss)}), S));
  return one(op, out, std::move(t));
}

// Reductions.
Result<Outs> reduce_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  const Shadow sh = shadow_of(in);
  PLANNER_TRY(auto axes, reduce_axes(op, sh.ptrs, x->shape.size()));
  const bool keepdims = op.attr_int("keepdims").value_or(1) != 0, mean = op.type == "ReduceMean";
  Shape ks = x->shape, dropped;
  for (auto ax : axes) ks[ax] = 1;
  for (std::size_t d = 0; d < x->shape.size(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) dropped.push_back(x->shape[d]);
  auto views = kernel_math::sum_views(x->shape, ks);
  if (!views) return op_error(op, "rank above 8 is not supported on the GPU");
  const i64 n = numel(x->shape) / std::max<i64>(1, numel(ks));
  PLANNER_TRY(DTensor y, empty_tensor(keepdims ? ks : dropped, S));
  PLANNER_TRY_STATUS(launched(op, sum_view(S, x->data(), false, views->first, views->second, y.data(), y.size(),
                                           1.0f / static_cast<float>(std::max<i64>(n, 1)), mean && n > 0)));
  return one(op, out, std::move(y));
}

// Shapes.
Result<Outs> reshape_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  if (in.empty() || !in[0]) return op_error(op, "input 0 is missing");
  const Shape& from = gvalue_shape(*in[0]);
  if (numel(from) != numel(out[0].shape))
    return op_error(op, fmt::format("cannot reshape {} to {}", shape_str(from), shape_str(out[0].shape)));
  if (const auto* ix = as_host_index(in[0])) {
    IndexTensor r = *ix;
    r.shape = out[0].shape;
    return single(GValue(std::move(r)));
  }
  PLANNER_TRY(DTensor y, clone(*as_device(in[0]), out[0].shape));
  return one(op, out, std::move(y));
}

Result<Outs> expand_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  if (runtime_cpu::broadcast_shape(x->shape, out[0].shape) != out[0].shape)
    return op_error(op, fmt::format("cannot expand {} to {}", shape_str(x->shape), shape_str(out[0].shape)));
  PLANNER_TRY(View v, view_or_error(op, kernel_math::broadcast_view(x->shape, out[0].shape)));
  PLANNER_TRY(DTensor y, empty_tensor(out[0].shape, S));
  PLANNER_TRY_STATUS(launched(op, copy_view(S, x->data(), v, y.data(), y.size())));
  return one(op, out, std::move(y));
}

Result<Outs> transpose_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(auto perm, perm_of(op, x->shape.size()));
  PLANNER_TRY(View v, view_or_error(op, kernel_math::transpose_view(x->shape, perm)));
  Shape ys(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) ys[i] = x->shape[perm[i]];
  PLANNER_TRY(DTensor y, empty_tensor(ys, S));
  PLANNER_TRY_STATUS(launched(op, copy_view(S, x->data(), v, y.data(), y.size())));
  return one(op, out, std::move(y));
}

Result<Outs> split_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, x->shape.size()));
  std::int64_t total = 0;
  for (const auto& o : out) {
    if (o.shape.size() != x->shape.size()) return op_error(op, "an output has the wrong rank");
    total += o.shape[axis];
  }
  if (total != x->shape[axis]) return op_error(op, "the outputs do not add up to the input along the axis");
  Outs r;
  i64 begin = 0;
  for (const auto& o : out) {
    Shape part = x->shape;
    part[axis] = o.shape[axis];
    PLANNER_TRY(View v, view_or_error(op, kernel_math::part_view(x->shape, axis, begin, part)));
    PLANNER_TRY(DTensor y, empty_tensor(part, S));
    PLANNER_TRY_STATUS(launched(op, copy_view(S, x->data(), v, y.data(), y.size())));
    PLANNER_TRY_STATUS(check_shape(op, y.shape, o));
    r.emplace_back(std::move(y));
    begin += o.shape[axis];
  }
  return r;
}

Result<Outs> concat_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  std::vector<const DTensor*> parts;
  for (std::size_t i = 0; i < in.size(); ++i) {
    PLANNER_TRY(const DTensor* t, dev_in(op, in, i));
    parts.push_back(t);
  }
  if (parts.empty()) return op_error(op, "no inputs");
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, parts[0]->shape.size()));
  Shape ys = parts[0]->shape;
  ys[axis] = 0;
  for (const DTensor* p : parts) {
    Shape a = p->shape, b = parts[0]->shape;
    if (a.size() != b.size()) return op_error(op, "inputs differ in rank");
    a[axis] = b[axis] = 0;
    if (a != b) return op_error(op, "inputs differ off the concatenation axis");
    ys[axis] += p->shape[axis];
  }
  PLANNER_TRY(DTensor y, empty_tensor(ys, S));
  i64 begin = 0;
  for (const DTensor* p : parts) {
    PLANNER_TRY(View v, view_or_error(op, kernel_math::part_view(ys, axis, begin, p->shape)));
    PLANNER_TRY_STATUS(launched(op, scatter_view(S, p->data(), y.data(), v, p->size())));
    begin += p->shape[axis];
  }
  return one(op, out, std::move(y));
}

Result<Outs> slice_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  const Shadow sh = shadow_of(in);
  PLANNER_TRY(runtime_cpu::SliceBox box, slice_box(op, sh.ptrs, x->shape));
  PLANNER_TRY(View v, view_or_error(op, kernel_math::slice_view(x->shape, box.start, box.step, box.out)));
  PLANNER_TRY(DTensor y, empty_tensor(box.out, S));
  PLANNER_TRY_STATUS(launched(op, copy_view(S, x->data(), v, y.data(), y.size())));
  return one(op, out, std::move(y));
}

Result<Outs> trilu_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  std::int64_t k = 0;
  if (in.size() > 1 && in[1]) {
    const IndexTensor* kt = as_host_index(in[1]);
    if (!kt || kt->data.size() != 1) return op_error(op, "k must be an integer scalar");
    k = kt->data[0];
  }
  if (x->shape.size() < 2) return op_error(op, "input rank must be >= 2");
  PLANNER_TRY(DTensor y, empty_tensor(x->shape, S));
  PLANNER_TRY_STATUS(launched(op, trilu(S, x->data(), y.data(), y.size(), x->shape[x->shape.size() - 2],
                                        x->shape.back(), op.attr_int("upper").value_or(1) != 0, k)));
  return one(op, out, std::move(y));
}

// Casts.
Result<Outs> cast_fwd(const Context& c, const graph::Op& op, const GInputs& in,
                  const std::vector<runtime_cpu::OutputSpec>& out) {
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  if (out[0].dtype == core::DType::f32) {
    PLANNER_TRY(DTensor y, clone(*x, x->shape));
    return one(op, out, std::move(y));
  }
  // fp32 -> integers: on the host (truncation, as runtime_cpu).
  PLANNER_TRY(runtime_cpu::Tensor h, download(*x));
  const runtime_cpu::Value hv(std::move(h));
  PLANNER_TRY(auto vals, runtime_cpu::forward_op(op, {&hv}, out));
  return single(GValue(std::move(std::get<IndexTensor>(vals[0]))));
}

}  // namespace

Result<std::vector<GValue>> forward_op(const Context& c, const graph::Op& op, const GInputs& in,
                                       const std::vector<runtime_cpu::OutputSpec>& out) {
  const auto kind = kind_of(op);
  if (!kind) return op_error(op, "no GPU kernel for this op type");
  if (auto why = unsupported_variant(op, *kind)) return op_error(op, *why);
  if (out.empty()) return op_error(op, "no outputs");
  if (host_only(in) && *kind != Kind::reshape) return on_host(c, op, in, out);
  switch (*kind) {
    case Kind::binary:
      return binary_fwd(c, op, in, out);
    case Kind::unary:
      return unary_fwd(c, op, in, out);
    case Kind::matmul:
      return matmul_fwd(c, op, in, out);
    case Kind::gemm:
      return gemm_fwd(c, op, in, out);
    case Kind::layer_norm:
      return layer_norm_fwd(c, op, in, out);
    case Kind::rms_norm:
      return rms_norm_fwd(c, op, in, out);
    case Kind::softmax:
      return softmax_fwd(c, op, in, out);
    case Kind::gather:
      return gather_fwd(c, op, in, out);
    case Kind::cross_entropy:
      return cross_entropy_fwd(c, op, in, out);
    case Kind::reduce:
      return reduce_fwd(c, op, in, out);
    case Kind::reshape:
      return reshape_fwd(c, op, in, out);
    case Kind::expand:
      return expand_fwd(c, op, in, out);
    case Kind::transpose:
      return transpose_fwd(c, op, in, out);
    case Kind::split:
      return split_fwd(c, op, in, out);
    case Kind::concat:
      return concat_fwd(c, op, in, out);
    case Kind::slice:
      return slice_fwd(c, op, in, out);
    case Kind::trilu:
      return trilu_fwd(c, op, in, out);
    case Kind::cast:
      return cast_fwd(c, op, in, out);
    case Kind::constant:
    case Kind::constant_of_shape:
      return on_host(c, op, in, out);
  }
  return op_error(op, "no GPU kernel for this op type");
}

}  // namespace planner::runtime::gpu_ops
