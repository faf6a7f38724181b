#pragma once
/// Per-device op orders of the pipeline schedules (GPipe, 1F1B, interleaved
/// 1F1B). Pure functions of (schedule, p, m, v); costs play no part.
///
/// Rank r of p, micro-batches 0..m-1, F(i) / B(i) on the rank's own chunk:
///   GPipe:  F(0) .. F(m-1), B(0) .. B(m-1)
///   1F1B:   w = min(p - r - 1, m) warmup forwards F(0)..F(w-1);
///           steady F(w+k), B(k) for k = 0 .. m-w-1; cooldown B(m-w)..B(m-1)
///   interleaved (Megatron-LM, schedules.py): forward units k = 0 .. m v - 1
///           visit micro-batches in groups of p: unit k runs local chunk
///           (k mod pv) / p (global chunk local * p + r) on micro-batch
///           (k / pv) * p + k mod p; backward unit k visits the local chunks
///           in reverse (v - 1 - that). Warmup w = (p - r - 1) * 2 + (v - 1) p
///           forward units (all m v when m == p, as Megatron does), capped at
///           m v; then F(w+k), B(k) pairs; then the remaining backward units.
///           v = 1 is accepted and follows that formula literally (twice
///           1F1B's warm-up, so more memory): use one_f_one_b for v = 1.

#include <cstdint>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/sim/problem.hpp"

namespace planner::sim {

/// Forward or backward pass of one chunk on one micro-batch.
enum class StepKind : std::uint8_t { forward, backward };

/// One op of a device's order.
struct ScheduleStep {
  StepKind kind = StepKind::forward;
  int micro_batch = 0;  ///< 0 .. m-1
  int chunk = 0;        ///< global chunk index 0 .. p*v-1 (lives on device chunk % p)
  friend bool operator==(const ScheduleStep&, const ScheduleStep&) = default;
};

/// orders[d] is the sequence of ops device d executes.
using DeviceOrders = std::vector<std::vector<ScheduleStep>>;

/// The op order of every device. Errors as validate_shape().
Result<DeviceOrders> device_orders(Schedule schedule, int stages, int micro_batches, int virtual_stages);

/// Same, from a problem's shape fields (costs are not looked at).
Result<DeviceOrders> device_orders(const PipelineProblem& problem);

/// Number of forward ops device `rank` runs before its first backward
/// (1F1B and interleaved warmup; m * v for GPipe).
/// Requires: validate_shape() ok, 0 <= rank < stages.
int warmup_forwards(Schedule schedule, int stages, int micro_batches, int virtual_stages, int rank);

}  // namespace planner::sim
