// backward_op on the device (gpu_ops.hpp): the gradients of runtime_cpu's
// op_backward.cpp, with the kernels of op_kernels.cu and cuBLAS.

#include <fmt/format.h>

#include "gpu_ops.hpp"
#include "planner/runtime_cpu/op_attrs.hpp"
#include "planner/runtime_cuda/views.hpp"

namespace planner::runtime::gpu_ops {

using namespace runtime_cpu::detail;
using runtime_cpu::IndexTensor;
using runtime_cpu::numel;

namespace {

/// g (storage or fp32 scratch, shape `big`) summed down to `small`, times
/// `factor` when apply.
Result<DTensor> sum_to(const Context& c, const graph::Op& op, const void* g, bool g_f32, const Shape& big,
                       const Shape& small, float factor = 1.0f, bool apply = false) {
  auto views = kernel_math::sum_views(big, small);
  if (!views) return op_error(op, "rank above 8 is not supported on the GPU");
  PLANNER_TRY(DTensor y, empty_tensor(small, c.store));
  PLANNER_TRY_STATUS(launched(op, sum_view(c.store, g, g_f32, views->first, views->second, y.data(), y.size(), factor,
                                           apply)));
  return y;
}

using DGrads = std::vector<std::optional<DTensor>>;

/// Whether the caller needs input i's gradient (device inputs only).
struct Need {
  const GInputs& in;
  const std::vector<bool>& needs;
  bool operator()(std::size_t i) const { return i < needs.size() && needs[i] && i < in.size() && as_device(in[i]); }
};

// Elementwise.
Status binary_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* a, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* b, dev_in(op, in, 1));
  PLANNER_TRY(View av, view_or_error(op, kernel_math::broadcast_view(a->shape, dy->shape)));
  PLANNER_TRY(View bv, view_or_error(op, kernel_math::broadcast_view(b->shape, dy->shape)));
  PLANNER_TRY(DeviceBuffer scratch, device_alloc(static_cast<std::size_t>(dy->size()) * 2 * sizeof(float)));
  auto* ga = static_cast<float*>(scratch.get());
  float* gb = ga + dy->size();
  PLANNER_TRY_STATUS(launched(op, binary_grads(S, static_cast<kernel_math::Binary>(binary_of(op.type)), a->data(),
                                               av, b->data(), bv, dy->data(), ga, gb, dy->size())));
  if (need(0)) {
    PLANNER_TRY(g[0], sum_to(c, op, ga, true, dy->shape, a->shape));
  }
  if (need(1)) {
    PLANNER_TRY(g[1], sum_to(c, op, gb, true, dy->shape, b->shape));
  }
  return Status::success();
}

Status unary_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  const DTensor* y = as_device(outs[0]);
  if (!y) return op_error(op, "the forward output is missing");
  PLANNER_TRY(DTensor dx, empty_tensor(x->shape, S));
  PLANNER_TRY_STATUS(launched(op, unary_backward(S, static_cast<kernel_math::Unary>(unary_of(op.type)), x->data(),
                                                 y->data(), dy->data(), dx.data(), dx.size())));
  g[0] = std::move(dx);
  return Status::success();
}

// GEMMs.
Status matmul_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* a, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* b, dev_in(op, in, 1));
  const auto plan = kernel_math::matmul_gemms(a->shape, b->shape);
  if (!plan) return op_error(op, "the operands do not multiply");
  // da = dy b^T, db = a^T dy per batch entry (views.hpp, matmul_gemms).
  if (need(0)) {
    PLANNER_TRY(DTensor da, zero_tensor(a->shape, S));
    for (const auto& call : plan->grad_a) PLANNER_TRY_STATUS(gemm(c, call, dy->data(), b->data(), da.data()));
    g[0] = std::move(da);
  }
  if (need(1)) {
    PLANNER_TRY(DTensor db, zero_tensor(b->shape, S));
    for (const auto& call : plan->grad_b) PLANNER_TRY_STATUS(gemm(c, call, a->data(), dy->data(), db.data()));
    g[1] = std::move(db);
  }
  return Status::success();
}

Status gemm_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* a, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* b, dev_in(op, in, 1));
  const DTensor* cc = in.size() > 2 ? as_device(in[2]) : nullptr;
  const runtime_cpu::GemmAttrs at = gemm_attrs(op);
  const i64 M = dy->shape[0], N = dy->shape[1], K = a->shape[at.trans_a ? 0 : 1];
  if (need(0)) {  // da = alpha dy op(b)^T, transposed back when trans_a (views.hpp)
    const auto ga = kernel_math::gemm_grad_a(at.trans_a, at.trans_b, M, N, K, at.alpha);
    PLANNER_TRY(DTensor da, empty_tensor(a->shape, S));
    PLANNER_TRY_STATUS(gemm(c, ga.call, ga.first_is_dy ? dy->data() : b->data(),
                            ga.first_is_dy ? b->data() : dy->data(), da.data()));
    g[0] = std::move(da);
  }
  if (need(1)) {  // db = alpha op(a)^T dy, transposed back when trans_b
    const auto gb = kernel_math::gemm_grad_b(at.trans_a, at.trans_b, M, N, K, at.alpha);
    PLANNER_TRY(DTensor db, empty_tensor(b->shape, S));
    PLANNER_TRY_STATUS(gemm(c, gb.call, gb.first_is_dy ? dy->data() : a->data(),
                            gb.first_is_dy ? a->data() : dy->data(), db.data()));
    g[1] = std::move(db);
  }
  if (cc && need(2)) {
    PLANNER_TRY(g[2], sum_to(c, op, dy->data(), false, dy->shape, cc->shape, at.beta, true));
  }
  return Status::success();
}

// Normalisations and softmax.
Status layer_norm_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* wt, dev_in(op, in, 1));
  const bool has_b = in.size() > 2 && as_device(in[2]);
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, x->shape.size()));
  const i64 n = wt->size(), rows = n ? x->size() / n : 0;
  PLANNER_TRY(DTensor dx, empty_tensor(x->shape, S));
  PLANNER_TRY(DTensor dw, empty_tensor(wt->shape, S));
  DTensor db;
  if (has_b) {
    PLANNER_TRY(db, empty_tensor(wt->shape, S));
  }
  PLANNER_TRY(DeviceBuffer stats, device_alloc(static_cast<std::size_t>(rows) * sizeof(kernel_math::RowStats)));
  PLANNER_TRY_STATUS(launched(op, layer_norm_backward(S, x->data(), wt->data(), dy->data(), dx.data(), dw.data(),
                                                      has_b ? db.data() : nullptr,
                                                      static_cast<kernel_math::RowStats*>(stats.get()), rows, n,
                                                      static_cast<float>(op.attr_float("epsilon").value_or(1e-5)))));
  (void)axis;
  if (need(0)) g[0] = std::move(dx);
  if (need(1)) g[1] = std::move(dw);
  if (has_b && need(2)) g[2] = std::move(db);
  return Status::success();
}

Status rms_norm_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(const DTensor* wt, dev_in(op, in, 1));
  const i64 n = wt->size(), rows = n ? x->size() / n : 0;
  PLANNER_TRY(DTensor dx, empty_tensor(x->shape, S));
  PLANNER_TRY(DTensor dw, empty_tensor(wt->shape, S));
  PLANNER_TRY(DeviceBuffer r, device_alloc(static_cast<std::size_t>(rows) * sizeof(double)));
  PLANNER_TRY_STATUS(launched(op, rms_norm_backward(S, x->data(), wt->data(), dy->data(), dx.data(), dw.data(),
                                                    static_cast<double*>(r.get()), rows, n,
                                                    static_cast<float>(op.attr_float("epsilon").value_or(1e-5)))));
  if (need(0)) g[0] = std::move(dx);
  if (need(1)) g[1] = std::move(dw);
  return Status::success();
}

Status softmax_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  const DTensor* y = as_device(outs[0]);
  if (!y) return op_error(op, "the forward output is missing");
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", -1, y->shape.size()));
  const AxisSplit sp = split_axis(y->shape, axis);
  PLANNER_TRY(DTensor dx, empty_tensor(y->shape, S));
  PLANNER_TRY_STATUS(launched(op, softmax_backward(S, y->data(), dy->data(), dx.data(), sp.outer, sp.n, sp.inner)));
  g[0] = std::move(dx);
  return Status::success();
}

// Indexing and the loss.
Status gather_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* data, dev_in(op, in, 0));
  const IndexTensor* idx = as_host_index(in[1]);
  if (!idx) return op_error(op, "input 1 must be an integer tensor");
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, data->shape.size()));
  const AxisSplit sp = split_axis(data->shape, axis);
  // The indices t that name each table row, row by row, t ascending.
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(sp.n) + 1, 0), rows_of(idx->data.size());
  auto row = [&](std::int64_t v) { return static_cast<std::size_t>(v < 0 ? v + sp.n : v); };
  for (auto v : idx->data) ++offsets[row(v) + 1];
  for (std::size_t r = 0; r < static_cast<std::size_t>(sp.n); ++r) offsets[r + 1] += offsets[r];
  std::vector<std::int64_t> fill = offsets;
  for (std::size_t t = 0; t < idx->data.size(); ++t) rows_of[static_cast<std::size_t>(fill[row(idx->data[t])]++)] = static_cast<std::int64_t>(t);
  PLANNER_TRY(DeviceBuffer od, upload_indices(offsets));
  PLANNER_TRY(DeviceBuffer rd, upload_indices(rows_of));
  PLANNER_TRY(DTensor dd, empty_tensor(data->shape, S));
  PLANNER_TRY_STATUS(launched(op, gather_backward(S, dy->data(), static_cast<const i64*>(od.get()),
                                                  static_cast<const i64*>(rd.get()), dd.data(), sp.outer, sp.n,
                                                  sp.inner, idx->size())));
  g[0] = std::move(dd);
  return Status::success();
}

Status cross_entropy_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  const IndexTensor* y = as_host_index(in[1]);
  if (!y) return op_error(op, "input 1 must be an integer tensor");
  const auto ig = ignore_index_of(op);
  std::int64_t kept = 0;
  for (auto v : y->data) kept += !(ig && v == *ig);
  PLANNER_TRY(runtime_cpu::Tensor d, download(*dy));
  PLANNER_TRY(DTensor dx, zero_tensor(x->shape, S));
  if (kept > 0) {
    PLANNER_TRY(DeviceBuffer labels, upload_indices(y->data));
    const double k = static_cast<double>(d[0]) / static_cast<double>(kept);
    PLANNER_TRY_STATUS(launched(op, cross_entropy_backward(S, x->data(), static_cast<const i64*>(labels.get()),
                                                           x->shape[0], x->shape[1], ig.has_value(), ig.value_or(0),
                                                           k, dx.data())));
  }
  g[0] = std::move(dx);
  return Status::success();
}

// Reductions.
Status reduce_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  const Shadow sh = shadow_of(in);
  PLANNER_TRY(auto axes, reduce_axes(op, sh.ptrs, x->shape.size()));
  Shape ks = x->shape;
  for (auto ax : axes) ks[ax] = 1;
  PLANNER_TRY(View v, view_or_error(op, kernel_math::broadcast_view(ks, x->shape)));
  PLANNER_TRY(DTensor dx, empty_tensor(x->shape, S));
  PLANNER_TRY_STATUS(launched(op, copy_view(S, dy->data(), v, dx.data(), dx.size())));
  const i64 n = numel(x->shape) / std::max<i64>(1, numel(ks));
  if (op.type == "ReduceMean" && n > 0)
    PLANNER_TRY_STATUS(launched(op, scale(S, dx.data(), dx.data(), dx.size(), 1.0f / static_cast<float>(n))));
  g[0] = std::move(dx);
  return Status::success();
}

// Shapes.
Status reshape_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(g[0], clone(*dy, x->shape));
  return Status::success();
}

Status expand_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(g[0], sum_to(c, op, dy->data(), false, dy->shape, x->shape));
  return Status::success();
}

Status transpose_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(auto perm, perm_of(op, x->shape.size()));
  PLANNER_TRY(View v, view_or_error(op, kernel_math::transpose_view(dy->shape, runtime_cpu::inverse_permutation(perm))));
  PLANNER_TRY(DTensor dx, empty_tensor(x->shape, S));
  PLANNER_TRY_STATUS(launched(op, copy_view(S, dy->data(), v, dx.data(), dx.size())));
  g[0] = std::move(dx);
  return Status::success();
}

Status split_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, x->shape.size()));
  PLANNER_TRY(DTensor dx, zero_tensor(x->shape, S));  // outputs without a gradient stay zero
  i64 begin = 0;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const Shape& part = gvalue_shape(*outs[i]);
    if (i < dout.size() && dout[i]) {
      PLANNER_TRY(View v, view_or_error(op, kernel_math::part_view(x->shape, axis, begin, part)));
      PLANNER_TRY_STATUS(launched(op, scatter_view(S, dout[i]->data(), dx.data(), v, dout[i]->size())));
    }
    begin += part[axis];
  }
  g[0] = std::move(dx);
  return Status::success();
}

Status concat_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x0, dev_in(op, in, 0));
  PLANNER_TRY(std::size_t axis, axis_attr(op, "axis", 0, x0->shape.size()));
  i64 begin = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Shape& part = gvalue_shape(*in[i]);
    if (need(i)) {
      PLANNER_TRY(View v, view_or_error(op, kernel_math::part_view(dy->shape, axis, begin, part)));
      PLANNER_TRY(DTensor dx, empty_tensor(part, S));
      PLANNER_TRY_STATUS(launched(op, copy_view(S, dy->data(), v, dx.data(), dx.size())));
      g[i] = std::move(dx);
    }
    begin += part[axis];
  }
  return Status::success();
}

Status slice_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  PLANNER_TRY(const DTensor* x, dev_in(op, in, 0));
  const Shadow sh = shadow_of(in);
  PLANNER_TRY(runtime_cpu::SliceBox box, slice_box(op, sh.ptrs, x->shape));
  PLANNER_TRY(View v, view_or_error(op, kernel_math::slice_view(x->shape, box.start, box.step, box.out)));
  PLANNER_TRY(DTensor dx, zero_tensor(x->shape, S));
  PLANNER_TRY_STATUS(launched(op, scatter_view(S, dy->data(), dx.data(), v, dy->size())));
  g[0] = std::move(dx);
  return Status::success();
}

Status trilu_bwd(const Context& c, const graph::Op& op, const GInputs& in, const GInputs& outs,
              const std::vector<const DTensor*>& dout, const DTensor* dy, DGrads& g, const Need& need) {
  const Store S = c.store;
  std::int64_t k = 0;
  if (const IndexTensor* kt = in.size() > 1 ? as_host_index(in[1]) : nullptr; kt && kt->data.size() == 1)
    k = kt->data[0];
  PLANNER_TRY(DTensor dx, empty_tensor(dy->shape, S));
  PLANNER_TRY_STATUS(launched(op, trilu(S, dy->data(), dx.data(), dx.size(), dy->shape[dy->shape.size() - 2],
                                        dy->shape.back(), op.attr_int("upper").value_or(1) != 0, k)));
  g[0] = std::move(dx);
  return Status::success();
}

}  // namespace

Result<std::vector<std::optional<DTensor>>> backward_op(const Context& c, const graph::Op& op, const GInputs& in,
                                                        const GInputs& outs, const std::vector<const DTensor*>& dout,
                                                        const std::vector<bool>& needs) {
  const auto kind = kind_of(op);
  if (!kind) return op_error(op, "no GPU kernel for this op type");
  DGrads g(in.size());
  const Need need{in, needs};
  bool any = false, any_dout = false;
  for (std::size_t i = 0; i < in.size(); ++i) any = any || need(i);
  for (const DTensor* d : dout) any_dout = any_dout || d;
  if (!any || !any_dout) return g;
  const DTensor* dy = dout.empty() ? nullptr : dout[0];
  switch (*kind) {
    case Kind::binary:
      PLANNER_TRY_STATUS(binary_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::unary:
      PLANNER_TRY_STATUS(unary_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::matmul:
      PLANNER_TRY_STATUS(matmul_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::gemm:
      PLANNER_TRY_STATUS(gemm_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::layer_norm:
      PLANNER_TRY_STATUS(layer_norm_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::rms_norm:
      PLANNER_TRY_STATUS(rms_norm_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::softmax:
      PLANNER_TRY_STATUS(softmax_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::gather:
      PLANNER_TRY_STATUS(gather_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::cross_entropy:
      PLANNER_TRY_STATUS(cross_entropy_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::reduce:
      PLANNER_TRY_STATUS(reduce_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::reshape:
      PLANNER_TRY_STATUS(reshape_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::expand:
      PLANNER_TRY_STATUS(expand_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::transpose:
      PLANNER_TRY_STATUS(transpose_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::split:
      PLANNER_TRY_STATUS(split_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::concat:
      PLANNER_TRY_STATUS(concat_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::slice:
      PLANNER_TRY_STATUS(slice_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::trilu:
      PLANNER_TRY_STATUS(trilu_bwd(c, op, in, outs, dout, dy, g, need));
      return g;
    case Kind::cast:
      if (as_device(outs[0])) {
        PLANNER_TRY(g[0], clone(*dy, dy->shape));
      }
      return g;
    case Kind::constant:
    case Kind::constant_of_shape:
      return g;
  }
  return op_error(op, "no GPU kernel for this op type");
}

}  // namespace planner::runtime::gpu_ops
