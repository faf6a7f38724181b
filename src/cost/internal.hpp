#pragma once
// Helpers shared by the cost module's sources (not installed).

#include <cstdint>

#include "planner/cost/compute.hpp"
#include "planner/cost/fastest.hpp"  // kWinogradF2x2, is_host_side

namespace planner::cost::detail {

/// Time of one memory-bound kernel moving `b` bytes: b / (achievable HBM
/// bandwidth x elementwise efficiency(b)); a kernel below the table's first
/// row costs as much as the first row (its fixed cost). 0 for b <= 0.
Seconds memory_time(Bytes b, const ComputeContext& ctx);
/// Time of a kernel measured whole (DeviceProfile::kernel_table, an op
/// type's or class's table): b / (achievable HBM bandwidth x the table's
/// efficiency at b), its first row's below it. No fixed cost: the table's
/// rows are whole calls, so a per-call cost is in their rate, and a smaller
/// call streams at the smallest measured rate (a CPU backend's kernels have
/// no launch; the rate is flat across the rows, docs/calibrate.md).
Seconds kernel_memory_time(Bytes b, const ComputeContext& ctx, const cluster::EfficiencyTable& table);
/// Time of `evaluations` special-function evaluations (exp, erf, ...) at the
/// device's special_function_rate_per_s, the `erf` of them at its
/// erf_rate_per_s where it has one; zero where the profile has no rate.
Seconds special_time(double evaluations, double erf, const ComputeContext& ctx);

/// Time of GEMM kernels executing `f` FLOPs of local shape `shape` at `p`:
/// f / (peak(p) x gemm_efficiency(shape, p)). A shape whose 2mnk is below the
/// GEMM table's first row costs as much as the first row, in proportion.
Seconds gemm_time(Flops f, const GemmShape& shape, core::Precision p, const ComputeContext& ctx);

/// As gemm_time, for work without a shape: efficiency from the GEMM table at
/// `f` itself, no skinny or alignment factor.
Seconds gemm_time_unshaped(Flops f, core::Precision p, const ComputeContext& ctx);

/// op_bytes() times the scaling's byte fraction.
using ScaledBytes = OpBytes;
ScaledBytes scaled_bytes(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy,
                         double fraction);

/// One kernel group: compute term, memory term, kernels (each adds one launch).
OpTime roofline(Seconds fwd_compute, Seconds fwd_memory, int fwd_kernels, Seconds bwd_compute,
                Seconds bwd_memory, int bwd_kernels, const ComputeContext& ctx);

/// Number of elements of a possibly absent tensor (0 when absent).
double numel_of(const graph::Tensor* t);

/// Dimension `i` (negative counts from the end) of `t`, 1 when out of range.
std::int64_t dim_of(const graph::Tensor* t, int i);

/// How many times fewer GEMM FLOPs a convolution executes than it counts:
/// kWinogradF2x2 for an fp32 (CUDA-core) Conv with a 3x3 kernel, stride 1,
/// dilation 1 and one group (cuDNN's autotuner, cudnn.benchmark, picks
/// Winograd for these; tensor-core precisions run implicit GEMM), else 1.
double winograd_factor(const graph::Op& op, const graph::OpGraph& g, core::Precision p);

/// cuDNN's NCHW <-> NHWC transposes around one tensor-core convolution when
/// activations are NCHW (ComputeContext::channels_last() false, precision
/// not fp32; not com.microsoft NhwcConv): forward transposes X in and Y out; backward dY and X in, and
/// dX out when X is an activation (has a gradient). Each is one kernel
/// reading and writing its tensor (local bytes at the op's precision,
/// scaling.bytes of it): memory_time(2 b) + launch. Zero otherwise.
struct ConvLayoutTime {
  Seconds forward{0}, backward{0};
  int forward_kernels = 0, backward_kernels = 0;
};
ConvLayoutTime conv_layout_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling,
                                const ComputeContext& ctx);

/// Time of one op on its own (no flash pattern handling, no recompute).
OpTime single_op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling,
                      const ComputeContext& ctx);

/// Time of an attention-class op (no pattern, or a one-op pattern priced
/// unfused) and of a flash pattern. Defined in attention.cpp.
OpTime attention_op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling,
                         const ComputeContext& ctx);

}  // namespace planner::cost::detail
