// Compute time per op: roofline + launch overhead (BRIEF §3).

#include "planner/cost/compute.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <cmath>

#include "internal.hpp"
#include "planner/graph/analysis.hpp"

namespace planner::cost {
namespace {

using graph::OpClass;

bool is_free(const graph::Op& op, const graph::OpGraph& g) {
  const auto& c = op.cost;
  if (c.forward_flops.value <= 0 && c.forward_bytes_read.value <= 0 && c.forward_bytes_written.value <= 0 &&
      c.backward_flops.value <= 0 && c.backward_bytes_read.value <= 0 && c.backward_bytes_written.value <= 0)
    return true;  // views, Shape, Constant
  return is_host_side(op, g);  // integer shape arithmetic (fastest.hpp)
}

// A 2-D Transpose of a parameter read only as a GEMM's B operand (a tied LM
// head: logits = x wte^T): libraries pass the transpose to cuBLAS as the
// operand's op flag (torch.nn.functional.linear, Megatron's tied output
// layer) and the weight gradient GEMM writes dW in either layout by
// swapping its operands, so no copy runs forward or backward.
bool folded_weight_transpose(const graph::Op& op, const graph::OpGraph& g) {
  if (op.type != "Transpose" || !op.domain.empty() || op.inputs.empty() || !op.inputs[0] || op.outputs.empty() ||
      !op.outputs[0])
    return false;
  const auto& in = g.tensor(*op.inputs[0]);
  if (in.role != graph::TensorRole::parameter || in.shape.size() != 2) return false;
  const auto& out = g.tensor(*op.outputs[0]);
  if (out.consumers.empty()) return false;
  for (graph::OpId c : out.consumers) {
    const auto& user = g.op(c);
    if (user.op_class != OpClass::matmul || user.inputs.size() < 2 || user.inputs[1] != op.outputs[0]) return false;
  }
  return true;
}

constexpr std::array<std::string_view, 5> kViews{"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};

bool is_view(const graph::Op& op) {
  return op.domain.empty() && std::find(kViews.begin(), kViews.end(), op.type) != kViews.end();
}

// A view copied by the runtime (ComputeContext::executor_kernels): its output
// read and written forward, and, for a float output, its gradient backward,
// at the measured rate of the device's Reshape kernels where the profile
// has one (memory_bound_op_efficiency), else at the elementwise table.
OpTime view_copy_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& s, const ComputeContext& ctx) {
  if (op.outputs.empty() || !op.outputs[0]) return {};
  const auto& y = g.tensor(*op.outputs[0]);
  if (y.numel() <= 0) return {};
  const Bytes copy = bytes_at(y, ctx.precision().of(op)) * (2.0 * s.bytes);
  const Bytes back = core::is_floating(y.dtype) ? copy : Bytes(0);
  const auto* own = ctx.device().kernel_table("Reshape", graph::op_class_name(op.op_class));
  const auto memory = [&](Bytes b) {
    return own ? detail::kernel_memory_time(b, ctx, *own) : detail::memory_time(b, ctx);
  };
  return detail::roofline(Seconds(0), memory(copy), 1, Seconds(0), memory(back), back.value > 0 ? 1 : 0, ctx);
}

GemmShape local_shape(const graph::Op& op, const graph::OpGraph& g, const OpScaling& s, bool& shaped) {
  if (s.gemm) {
    shaped = true;
    return *s.gemm;
  }
  auto shape = gemm_shape(op, g);
  shaped = shape.has_value();
  if (!shape) return {};
  shape->m = std::max<std::int64_t>(1, std::llround(static_cast<double>(shape->m) * s.flops));
  return *shape;
}

}  // namespace

namespace detail {

double winograd_factor(const graph::Op& op, const graph::OpGraph& g, core::Precision p) {
  if (p != core::Precision::fp32 || op.type != "Conv") return 1.0;
  const auto* w = g.input(op, 1);
  if (!w || w->shape.size() != 4 || w->shape[2] != 3 || w->shape[3] != 3) return 1.0;
  if (op.attr_int("group").value_or(1) != 1) return 1.0;
  auto all_one = [&](const char* name) {
    const auto v = op.attr_ints(name);
    return !v || std::all_of(v->begin(), v->end(), [](std::int64_t x) { return x == 1; });
  };
  return all_one("strides") && all_one("dilations") ? kWinogradF2x2 : 1.0;
}

ConvLayoutTime conv_layout_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& s,
                                const ComputeContext& ctx) {
  const core::Precision p = ctx.precision().of(op);
  if (ctx.channels_last() || p == core::Precision::fp32 || op.op_class != OpClass::conv || op.type == "NhwcConv")
    return {};  // NhwcConv (com.microsoft) is channels-last already
  const auto *x = g.input(op, 0), *y = g.output(op, 0);
  if (!x || !y || !core::is_floating(x->dtype) || x->shape.size() < 3) return {};
  const Seconds launch = ctx.device().launch_overhead;
  // One transpose kernel reads and writes its tensor once.
  auto transpose = [&](const graph::Tensor& t) { return memory_time(bytes_at(t, p) * (2.0 * s.bytes), ctx) + launch; };
  ConvLayoutTime r;
  r.forward = transpose(*x) + transpose(*y);  // X in, Y back out
  r.forward_kernels = 2;
  r.backward = transpose(*y) + transpose(*x);  // dY in (data and weight grads), X in (weight grad)
  r.backward_kernels = 2;
  if (x->role == graph::TensorRole::activation) {  // dX back out
    r.backward += transpose(*x);
    r.backward_kernels += 1;
  }
  return r;
}

}  // namespace detail

namespace {

OpTime gemm_op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& s, const ComputeContext& ctx) {
  const core::Precision p = ctx.precision().of(op);
  const Flops fwd = op.cost.forward_flops * s.flops;
  const Flops bwd = op.cost.backward_flops * s.flops;
  const auto bytes = detail::scaled_bytes(op, g, ctx.precision(), s.bytes);
  bool shaped = false;
  const GemmShape shape = local_shape(op, g, s, shaped);
  // Winograd-domain convolutions do fewer multiplications (same shape).
  const double wino = detail::winograd_factor(op, g, p);
  auto kernel = [&](Flops f) {
    f = f / wino;
    return shaped ? detail::gemm_time(f, shape, p, ctx) : detail::gemm_time_unshaped(f, p, ctx);
  };
  // One gradient GEMM per operand needing a gradient (dX, dW), each the
  // forward's size: backward/forward FLOPs rounds to their number.
  int bwd_kernels = 0;
  if (bwd.value > 0 || bytes.backward.value > 0) {
    const double ratio = fwd.value > 0 ? bwd.value / fwd.value : 1.0;
    bwd_kernels = std::clamp(static_cast<int>(std::lround(ratio)), 1, 2);
  }
  const int fwd_kernels = (fwd.value > 0 || bytes.forward.value > 0) ? 1 : 0;
  const double n = std::max(bwd_kernels, 1);
  OpTime t = detail::roofline(kernel(fwd), detail::memory_time(bytes.forward, ctx), fwd_kernels,
                              kernel(bwd / n) * n, detail::memory_time(bytes.backward / n, ctx) * n, bwd_kernels, ctx);
  if (fwd_kernels > 0) {
    const auto layout = detail::conv_layout_time(op, g, s, ctx);
    t.forward += layout.forward;
    t.forward_kernels += layout.forward_kernels;
    if (bwd_kernels > 0) {
      t.backward += layout.backward;
      t.backward_kernels += layout.backward_kernels;
    }
  }
  return t;
}

OpTime unshaped_op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& s,
                        const ComputeContext& ctx) {
  const core::Precision p = ctx.precision().of(op);
  const auto bytes = detail::scaled_bytes(op, g, ctx.precision(), s.bytes);
  const Flops fwd = op.cost.forward_flops * s.flops, bwd = op.cost.backward_flops * s.flops;
  const int fk = (fwd.value > 0 || bytes.forward.value > 0) ? 1 : 0;
  const int bk = (bwd.value > 0 || bytes.backward.value > 0) ? 1 : 0;
  return detail::roofline(detail::gemm_time_unshaped(fwd, p, ctx), detail::memory_time(bytes.forward, ctx), fk,
                          detail::gemm_time_unshaped(bwd, p, ctx), detail::memory_time(bytes.backward, ctx), bk, ctx);
}

OpTime memory_bound_op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& s,
                            const ComputeContext& ctx) {
  auto bytes = detail::scaled_bytes(op, g, ctx.precision(), s.bytes);
  const Flops fwd = op.cost.forward_flops * s.flops, bwd = op.cost.backward_flops * s.flops;
  int fk = (fwd.value > 0 || bytes.forward.value > 0) ? 1 : 0;
  int bk = (bwd.value > 0 || bytes.backward.value > 0) ? 1 : 0;
  if (ctx.fuse_elementwise() && op.op_class == OpClass::elementwise && bytes.forward.value > 0) {
    const core::Precision p = ctx.precision().of(op);
    double fused = 0;
    bool all_out_fused = !op.outputs.empty();
    for (const auto& in : op.inputs)
      if (in && graph::fusible_elementwise_edge(g.tensor(*in), g)) fused += bytes_at(g.tensor(*in), p).value * s.bytes;
    for (const auto& out : op.outputs) {
      if (out && graph::fusible_elementwise_edge(g.tensor(*out), g)) fused += bytes_at(g.tensor(*out), p).value * s.bytes;
      else all_out_fused = false;
    }
    const double keep = std::max(0.0, 1.0 - fused / bytes.forward.value);
    bytes.forward = bytes.forward * keep;
    bytes.backward = bytes.backward * keep;
    if (all_out_fused) fk = bk = 0;
  }
  // Arithmetic and special functions share the core: their times add. An op
  // fused into its neighbour launches nothing of its own, but the fused
  // kernel still evaluates its special functions (zero where the profile
  // has no rate, so GPU pricing is unchanged).
  const Seconds fs = detail::special_time(op.cost.forward_special * s.flops, op.cost.forward_erf * s.flops, ctx);
  const Seconds bs = detail::special_time(op.cost.backward_special * s.flops, op.cost.backward_erf * s.flops, ctx);
  if (fk == 0 && fs.value > 0) fk = 1;
  if (bk == 0 && bs.value > 0) bk = 1;
  // The device's kernels of this op type or class may stream at their own
  // measured rate (a CPU backend's strided transposes and row-wise norms;
  // profile keys memory_bound_op_efficiency and
  // memory_bound_class_efficiency, measured by calibrate).
  const auto* own =
      ctx.executor_kernels() ? ctx.device().kernel_table(op.type, graph::op_class_name(op.op_class)) : nullptr;
  const auto memory = [&](Bytes b) {
    return own ? detail::kernel_memory_time(b, ctx, *own) : detail::memory_time(b, ctx);
  };
  return detail::roofline(fwd / ctx.vector_peak() + fs, memory(bytes.forward), fk, bwd / ctx.vector_peak() + bs,
                          memory(bytes.backward), bk, ctx);
}

}  // namespace

std::string_view attention_mode_name(AttentionMode m) {
  return m == AttentionMode::flash ? "flash" : "unfused";
}

OpTime& OpTime::operator+=(const OpTime& o) {
  forward += o.forward;
  backward += o.backward;
  recompute += o.recompute;
  forward_flops += o.forward_flops;
  backward_flops += o.backward_flops;
  forward_kernels += o.forward_kernels;
  backward_kernels += o.backward_kernels;
  if (forward_bound == Bound::none) forward_bound = o.forward_bound;
  if (backward_bound == Bound::none) backward_bound = o.backward_bound;
  return *this;
}

Result<ComputeContext> ComputeContext::create(cluster::DeviceProfile device, PrecisionPolicy precision,
                                              AttentionMode attention, RecomputePolicy recompute,
                                              bool fuse_elementwise) {
  ComputeContext c;
  c.fuse_elementwise_ = fuse_elementwise;
  for (core::Precision p : precision.used()) {
    auto peak = device.peak(p);
    if (!peak) return make_error("cost: {} (the precision policy uses {})", peak.error().message, core::precision_name(p));
    c.peaks_[static_cast<std::size_t>(p)] = *peak;
  }
  if (attention == AttentionMode::flash) {
    if (!device.attention)
      return make_error("cost: device '{}' has no fused attention kernel (no attention_efficiency in its profile); "
                        "use attention mode unfused",
                        device.name);
    const core::Precision pa = precision.of(graph::OpClass::attention);
    if (pa == core::Precision::fp32 || pa == core::Precision::tf32)
      return make_error("cost: flash attention needs a 16-bit or fp8 attention precision, the policy says {}",
                        core::precision_name(pa));
  }
  if (auto fp32 = device.peak(core::Precision::fp32)) {
    c.vector_peak_ = *fp32;
  } else {
    std::optional<FlopsPerSecond> lowest;
    for (const auto& pk : device.peak_by_precision)
      if (pk && (!lowest || *pk < *lowest)) lowest = *pk;
    c.vector_peak_ = lowest.value_or(FlopsPerSecond(1));
  }
  c.device_ = std::move(device);
  c.precision_ = std::move(precision);
  c.attention_ = attention;
  c.recompute_ = recompute;
  return c;
}

FlopsPerSecond ComputeContext::peak(core::Precision p) const { return peaks_[static_cast<std::size_t>(p)]; }

std::optional<GemmShape> gemm_shape(const graph::Op& op, const graph::OpGraph& g) {
  const auto *a = g.input(op, 0), *b = g.input(op, 1), *y = g.output(op, 0);
  if (!a || !b || !y || a->shape.empty() || b->shape.empty()) return std::nullopt;
  const bool matmul = op.type == "MatMul" || op.type == "FusedMatMul" || op.type == "MatMulInteger" ||
                      op.type == "MatMulIntegerToFloat" || op.type == "DynamicQuantizeMatMul";
  const bool gemm = op.type == "Gemm" || op.type == "FusedGemm" || op.type == "GemmFastGelu";
  const bool ta = op.attr_int("transA").value_or(0) != 0, tb = op.attr_int("transB").value_or(0) != 0;
  std::int64_t m = 1, n = 1, k = 1;
  if (matmul || gemm) {
    const auto ra = a->shape.size(), rb = b->shape.size();
    if (ra == 1) {
      k = a->shape[0];
    } else {
      m = ta ? a->shape[ra - 1] : a->shape[ra - 2];
      k = ta ? a->shape[ra - 2] : a->shape[ra - 1];
    }
    n = rb == 1 ? 1 : (tb ? b->shape[rb - 2] : b->shape[rb - 1]);
    const double per_batch = static_cast<double>(m) * static_cast<double>(n);
    const double batch = per_batch > 0 ? static_cast<double>(y->numel()) / per_batch : 1.0;
    m = std::max<std::int64_t>(1, std::llround(static_cast<double>(m) * std::max(batch, 1.0)));
  } else if (op.type == "Conv" || op.type == "FusedConv" || op.type == "NhwcConv") {
    // Implicit GEMM: rows = output pixels, cols = output channels, depth =
    // input channels per group x kernel window.
    if (y->shape.size() < 2 || b->shape.size() < 2) return std::nullopt;
    n = b->shape[0];
    k = 1;
    for (std::size_t i = 1; i < b->shape.size(); ++i) k *= b->shape[i];
    m = std::max<std::int64_t>(1, y->numel() / std::max<std::int64_t>(n, 1));
  } else {
    return std::nullopt;
  }
  if (m < 1 || n < 1 || k < 1) return std::nullopt;
  return GemmShape{m, n, k};
}

OpTime time_of(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling, const ComputeContext& ctx) {
  if (scaling.flops <= 0 && scaling.bytes <= 0) return {};
  if (scaling.batch > 1) {
    // One kernel runs `batch` ops like this one: its time over batch.
    const double b = scaling.batch;
    OpScaling one = scaling;
    one.batch = 1;
    one.flops *= b;
    one.bytes *= b;
    if (one.gemm) one.gemm->m = std::max<std::int64_t>(1, std::llround(static_cast<double>(one.gemm->m) * b));
    OpTime t = time_of(op, g, one, ctx);
    t.forward = t.forward / b;
    t.backward = t.backward / b;
    t.recompute = t.recompute / b;
    t.forward_flops = t.forward_flops / b;
    t.backward_flops = t.backward_flops / b;
    return t;
  }
  OpTime t;
  const graph::FusedPattern* pattern = nullptr;
  if (op.fused_group && *op.fused_group >= 0 && static_cast<std::size_t>(*op.fused_group) < g.fused.size())
    pattern = &g.fused[static_cast<std::size_t>(*op.fused_group)];
  if (pattern && ctx.attention() == AttentionMode::flash && !pattern->ops.empty()) {
    if (&g.op(pattern->ops.front()) != &op) return {};  // charged to the pattern's first op
    t = flash_attention_time(*pattern, g, scaling, ctx);
  } else if (ctx.attention() == AttentionMode::flash && !pattern && feeds_only_flash_masks(op, g)) {
    return {};
  } else {
    t = detail::single_op_time(op, g, scaling, ctx);
  }
  if (recomputed(op, ctx.recompute(), ctx.recompute_modules())) t.recompute = t.forward;
  return t;
}

namespace {

bool mask_only(const graph::Op& op, const graph::OpGraph& g, int depth) {
  if (depth > 32 || op.outputs.empty()) return false;
  bool any = false;
  for (const auto& out : op.outputs) {
    if (!out) continue;
    const auto& t = g.tensor(*out);
    if (t.consumers.empty()) return false;  // a graph output or unused: keep it
    for (auto c : t.consumers) {
      const auto& cop = g.op(c);
      if (cop.fused_group) {
        if (cop.type == "MatMul" || cop.type == "Einsum") return false;  // q, k or v: real data
        any = true;
        continue;
      }
      if (!mask_only(cop, g, depth + 1)) return false;
      any = true;
    }
  }
  return any;
}

// Key of the per-op answers among the graph's derived values.
struct MaskOnlyKey {
  friend bool operator==(const MaskOnlyKey&, const MaskOnlyKey&) = default;
};

}  // namespace

bool feeds_only_flash_masks(const graph::Op& op, const graph::OpGraph& g) {
  if (op.fused_group) return false;
  // Every op's answer, computed once per graph (each walks up to 32 ops
  // downstream; the cost model asks for every op in every estimate).
  const auto ops = g.ops();
  const std::less<const graph::Op*> before;
  if (ops.empty() || before(&op, ops.data()) || !before(&op, ops.data() + ops.size()))
    return mask_only(op, g, 0);  // an op that is not g's
  const auto answers = g.derived<MaskOnlyKey, std::vector<bool>>(MaskOnlyKey{}, [&] {
    std::vector<bool> v(ops.size(), false);
    for (std::size_t i = 0; i < ops.size(); ++i) v[i] = !ops[i].fused_group && mask_only(ops[i], g, 0);
    return v;
  });
  return (*answers)[static_cast<std::size_t>(&op - ops.data())];
}

OpBytes op_bytes(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy) {
  const double k = byte_scale(op, g, policy);
  Bytes int_in, int_out;
  for (const auto& t : op.inputs)
    if (t && !core::is_floating(g.tensor(*t).dtype)) int_in += g.tensor(*t).bytes();
  for (const auto& t : op.outputs)
    if (t && !core::is_floating(g.tensor(*t).dtype)) int_out += g.tensor(*t).bytes();
  auto split = [k](Bytes total, Bytes integer) {
    const Bytes i(std::min(total.value, integer.value));
    return i + (total - i) * k;
  };
  const auto& c = op.cost;
  return OpBytes{split(c.forward_bytes_read, int_in) + split(c.forward_bytes_written, int_out),
                 split(c.backward_bytes_read, int_in) + c.backward_bytes_written * k};
}

namespace detail {

OpTime single_op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling,
                      const ComputeContext& ctx) {
  if (ctx.executor_kernels() && is_view(op)) return view_copy_time(op, g, scaling, ctx);
  if (is_free(op, g) || (!ctx.executor_kernels() && folded_weight_transpose(op, g))) return {};
  OpTime t;
  switch (op.op_class) {
    case OpClass::matmul:
    case OpClass::conv: t = gemm_op_time(op, g, scaling, ctx); break;
    case OpClass::attention: t = attention_op_time(op, g, scaling, ctx); break;
    case OpClass::control_flow: t = unshaped_op_time(op, g, scaling, ctx); break;
    default: t = memory_bound_op_time(op, g, scaling, ctx); break;
  }
  if (t.forward_flops.value == 0 && t.backward_flops.value == 0) {
    t.forward_flops = op.cost.forward_flops * scaling.flops;
    t.backward_flops = op.cost.backward_flops * scaling.flops;
  }
  return t;
}

Seconds special_time(double evaluations, double erf, const ComputeContext& ctx) {
  const auto rate = ctx.device().special_function_rate_per_s;
  if (!ctx.executor_kernels() || !rate || evaluations <= 0) return Seconds(0);
  const double e = std::clamp(erf, 0.0, evaluations);
  return Seconds((evaluations - e) / *rate + e / ctx.device().erf_rate_per_s.value_or(*rate));
}

Seconds memory_time(Bytes b, const ComputeContext& ctx) {
  if (b.value <= 0) return Seconds(0);
  const auto& table = ctx.device().elementwise_table;
  const Bytes at(std::max(b.value, table.rows.front().x));
  return at / (ctx.device().achievable_hbm_bandwidth() * table.interpolate(at.value));
}

Seconds kernel_memory_time(Bytes b, const ComputeContext& ctx, const cluster::EfficiencyTable& table) {
  if (b.value <= 0) return Seconds(0);
  return b / (ctx.device().achievable_hbm_bandwidth() * table.interpolate(std::max(b.value, table.rows.front().x)));
}

Seconds gemm_time(Flops f, const GemmShape& s, core::Precision p, const ComputeContext& ctx) {
  if (f.value <= 0) return Seconds(0);
  const auto& d = ctx.device();
  const double mnk2 = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  const double e = d.gemm_efficiency(s.m, s.n, s.k, p);
  const double x0 = d.gemm_table.rows.front().x;
  if (mnk2 >= x0 || mnk2 <= 0) return f / (ctx.peak(p) * e);
  // Below the table: the first row's time, times how many such GEMMs f holds.
  const double other = e / d.gemm_table.interpolate(mnk2);
  const Seconds first = Flops(x0) / (ctx.peak(p) * (d.gemm_table.interpolate(x0) * other));
  return first * (f.value / mnk2);
}

Seconds gemm_time_unshaped(Flops f, core::Precision p, const ComputeContext& ctx) {
  if (f.value <= 0) return Seconds(0);
  const auto& d = ctx.device();
  double factor = 1.0;
  if (const auto& pf = d.gemm_precision_factor[static_cast<std::size_t>(p)]) factor = *pf;
  const Flops at(std::max(f.value, d.gemm_table.rows.front().x));
  return at / (ctx.peak(p) * std::min(1.0, d.gemm_table.interpolate(at.value) * factor));
}

ScaledBytes scaled_bytes(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy,
                         double fraction) {
  OpBytes b = op_bytes(op, g, policy);
  b.forward *= fraction;
  b.backward *= fraction;
  return b;
}

OpTime roofline(Seconds fc, Seconds fm, int fk, Seconds bc, Seconds bm, int bk, const ComputeContext& ctx) {
  OpTime t;
  const Seconds launch = ctx.device().launch_overhead;
  t.forward_kernels = fk;
  t.backward_kernels = bk;
  if (fk > 0) {
    t.forward = std::max(fc, fm) + launch * fk;
    t.forward_bound = fm > fc ? Bound::memory : Bound::compute;
  }
  if (bk > 0) {
    t.backward = std::max(bc, bm) + launch * bk;
    t.backward_bound = bm > bc ? Bound::memory : Bound::compute;
  }
  return t;
}

double numel_of(const graph::Tensor* t) { return t ? static_cast<double>(t->numel()) : 0.0; }

std::int64_t dim_of(const graph::Tensor* t, int i) {
  if (!t) return 1;
  const int r = static_cast<int>(t->shape.size());
  const int j = i < 0 ? r + i : i;
  return (j >= 0 && j < r) ? t->shape[static_cast<std::size_t>(j)] : 1;
}

}  // namespace detail
}  // namespace planner::cost
