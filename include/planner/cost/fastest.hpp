#pragma once
/// The fastest the cost model ever prices a kind of work: the rates and
/// constants a lower bound on a step (the layout search's bound) needs, so
/// that it shares every number with the model it bounds. Nothing outside
/// cost reads a device profile's tables; a bound reads them through these.
///
/// Each function names the pricing rule it is the best case of
/// (src/cost/compute.cpp, attention.cpp); a change there must keep the
/// function a bound (tests/search/bound_test.cpp checks bound <= every
/// scored layout).

#include "planner/core/units.hpp"
#include "planner/cost/compute.hpp"
#include "planner/graph/graph.hpp"

namespace planner::cost {

/// FlashAttention's backward FLOPs per forward FLOP (dQ, dK, dV, dP and the
/// scores again): attention.cpp prices the fused kernel's backward so.
inline constexpr double kFlashBackwardFactor = 2.5;

/// Multiplication saving of cuDNN's fused Winograd F(2x2,3x3) kernel: 16
/// products per 2x2 output tile instead of 4 x 9 = 36 (Lavin & Gray, "Fast
/// Algorithms for Convolutional Neural Networks", 2016). A convolution runs
/// at most this many times faster than its counted GEMM FLOPs.
inline constexpr double kWinogradF2x2 = 36.0 / 16.0;

/// Outputs of integer shape arithmetic up to this many elements in all run
/// on the host in a training framework (PyTorch never launches them).
inline constexpr double kHostShapeElements = 64;

/// Whether `op` is host-side shape arithmetic: no floating output and at
/// most kHostShapeElements output elements. Priced at nothing.
bool is_host_side(const graph::Op& op, const graph::OpGraph& g);

/// FlashAttention's forward FLOPs of a pattern, 2 b a sq sk (d + dv),
/// halved when causal (the kernel skips the masked half).
double flash_forward_flops(const graph::FusedPattern& p, bool causal);

/// The fastest GEMM peak of the precisions the policy uses: each peak x its
/// gemm_precision_factor (at most 1).
FlopsPerSecond fastest_peak(const ComputeContext& ctx);

/// The fastest any kernel runs: fastest_peak x the GEMM table's best
/// efficiency (a table maximum, at most 1; attention and memory-bound
/// kernels are slower).
FlopsPerSecond fastest_rate(const ComputeContext& ctx);

/// The GEMM table's best efficiency over sizes up to `flops` (2mnk; a GEMM
/// below the table's first row runs at most at that row's efficiency), in
/// [0, 1]; 1 without a table.
double best_gemm_efficiency(const ComputeContext& ctx, double flops);

/// The fused attention kernel's rate at key length `seq_k`: the attention
/// precision's peak x the attention table (x 1 without one).
FlopsPerSecond attention_rate(const ComputeContext& ctx, std::int64_t seq_k, bool causal);

/// The best bandwidth a memory-bound kernel streams at: achievable HBM
/// bandwidth x the elementwise table's best efficiency.
BytesPerSecond best_streaming_bandwidth(const ComputeContext& ctx);

/// The bandwidth of large streaming passes (the optimizer step, gradient
/// accumulation): achievable HBM bandwidth x the elementwise table at 1 GB.
BytesPerSecond streaming_bandwidth(const ComputeContext& ctx);

/// Launch overhead of one kernel.
Seconds launch_overhead(const ComputeContext& ctx);

}  // namespace planner::cost
