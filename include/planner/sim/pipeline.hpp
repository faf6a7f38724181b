#pragma once
/// Pipeline schedule simulation: one training step as events per device.
///
/// Design note. The bubble formula (p-1)/m (BRIEF §3; Narayanan et al.,
/// SC'21 §2.2) holds only for equal stages and free transfers. Real
/// pipelines are uneven: the first stage also runs the embedding, the last
/// one the LM head and the loss. So the step is simulated instead:
///
///   1. schedule.hpp turns (schedule, p, m, v) into one op order per device.
///   2. Each device runs its order strictly in sequence. An op starts when
///      the device is free and its one dependency has finished, plus the
///      point-to-point time across the boundary:
///        F(c, i) <- F(c-1, i) + boundary[c-1].forward      (c > 0)
///        B(c, i) <- B(c+1, i) + boundary[c].backward       (c < C-1)
///        B(C-1, i) <- F(C-1, i)                            (same device)
///      Sends are asynchronous and never block the sender (unbounded
///      buffers), so a device waits only on what it needs.
///   3. step time = max over devices of (last finish + extra time), where
///      extra is the exposed data-parallel sync and optimizer step.
///
/// Each op has exactly one dependent op, so a device blocked on op X is the
/// only waiter of X: the simulator parks it on X and resumes it when X ends.
/// Every op is handled once (O(p m v)); devices still parked when no device
/// can move are a deadlock, reported as an error naming who waits on what.
/// In-flight counts depend only on the order (ops on a device are serial).
///
/// 1F1B, p = 4, m = 8, forward 1, backward 2, no transfer (timeline_chart,
/// one character per time unit; digit = forward of that micro-batch,
/// letter a-h = backward of micro-batch 0-7, '.' = idle):
///
///   dev 0  0123......aa4bb5cc6dd7ee.ff.gg.hh   step = (m+p-1)(f+b) = 33
///   dev 1  .012....aa3bb4cc5dd6ee7ff.gg.hh..
///   dev 2  ..01..aa2bb3cc4dd5ee6ff7gg.hh....
///   dev 3  ...0aa1bb2cc3dd4ee5ff6gg7hh......   busy 24 + idle 9 on each
///          warm-up, then one forward per backward, then cool-down
///
/// Device 0 holds p = 4 micro-batches in flight (F0..F3 before B0); GPipe
/// would hold all m.

#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/sim/problem.hpp"
#include "planner/sim/schedule.hpp"

namespace planner::sim {

/// One executed op.
struct TimelineEvent {
  int device = 0;
  StepKind kind = StepKind::forward;
  int micro_batch = 0;
  int chunk = 0;  ///< global chunk index
  Seconds start;
  Seconds end;
};

/// What one device did during the step.
struct DeviceReport {
  Seconds busy;         ///< sum of its forward and backward times
  Seconds idle;         ///< pipeline_time - busy: its bubble (extra time not counted)
  Seconds last_finish;  ///< end of its last op
  Seconds extra;        ///< the problem's extra time for this device
  /// Most forward units started whose backward had not yet finished. A unit
  /// is one chunk on one micro-batch: with v > 1 divide by v for whole
  /// stages' worth of activations.
  int peak_in_flight = 0;
  /// Most activation bytes held at once (sum of the in-flight units' chunk
  /// activation bytes).
  Bytes peak_activation;
};

/// Outcome of simulating one step.
struct PipelineResult {
  Seconds step_time;      ///< max over devices of (last_finish + extra)
  Seconds pipeline_time;  ///< max over devices of last_finish
  /// (pipeline_time - max busy) / max busy: the bubble relative to the
  /// busiest device's compute; (p-1)/m for balanced 1F1B. 0 if no work.
  double bubble_fraction = 0.0;
  std::vector<DeviceReport> devices;     ///< one per device
  std::vector<TimelineEvent> timeline;   ///< grouped by device, each in execution order
};

/// Knobs of simulate().
struct SimulateOptions {
  bool timeline = true;  ///< record the timeline (off: skip 2 p m v events)
};

/// Simulates the schedule's own orders (device_orders(problem)).
/// Errors: invalid problem (validate()).
Result<PipelineResult> simulate(const PipelineProblem& problem, SimulateOptions options = {});

/// Simulates caller-given orders. Errors: invalid problem; an order that
/// does not hold each of its device's ops exactly once (named by device
/// and position); deadlock (an op whose dependency can never finish).
Result<PipelineResult> simulate(const PipelineProblem& problem, const DeviceOrders& orders,
                                SimulateOptions options = {});

/// Textbook bubble fraction: (p-1)/m for GPipe and 1F1B, (p-1)/(v m)
/// interleaved (SC'21 §2.2). Requires: p, m, v >= 1.
double bubble_fraction_formula(Schedule schedule, int stages, int micro_batches, int virtual_stages);

/// Textbook bubble time: bubble_fraction_formula() x the busiest device's
/// compute (m x the sum of f + b of its chunks) = (p-1)(f+b) per stage
/// when balanced. Ignores transfers and imbalance; for comparison with
/// simulate(). Requires: validate(problem) ok.
Seconds bubble_formula(const PipelineProblem& problem);

/// ASCII Gantt chart of a recorded timeline, one row per device, one
/// character per `per_char` seconds: forward of micro-batch i prints the
/// digit i mod 10, its backward the letter 'a' + i mod 10, idle '.'; a
/// character shows the op covering its midpoint. Requires: per_char > 0.
std::string timeline_chart(const PipelineResult& result, Seconds per_char);

}  // namespace planner::sim
