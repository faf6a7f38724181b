#pragma once
/// One training step as spans per pipeline rank and stream: what every
/// device computes and communicates when, for `--trace`, the plan's
/// `prediction.timeline` and `planner report` (docs/report.md).
///
/// Design note. The timeline is produced once, by the estimate that scores
/// the step: asked for it (EstimateOptions::timeline), estimate() simulates
/// the pipeline with events on and hands that simulation and the parts of
/// the step it priced (StepParts: the pipeline problem and how each chunk's
/// time splits) to step_timeline(), which lays each op out. The search
/// scores candidates without events and asks only for its winner's:
///
///   forward op  [s, e)   compute  forward          [s + wait, + forward)
///                        tp       tp_forward       right after it (exposed tp/cp collectives)
///                        dp       zero_gather      [s, s + gather)   (ZeRO-3 / FSDP)
///                        pp       send_activation -> recv_activation
///                                 [e, e + transfer) on both ranks (send_gradient,
///                                 recv_gradient after a backward)
///   backward op [s, e)   compute  recompute, backward from s
///                        tp       tp_backward      right after them
///                        dp       zero_gather      [s, s + gather)   (ZeRO-3)
///                           zero_reduce_scatter    [e - scatter, e)
///   after the last op l  dp       dp_reduce buckets ending at l + exposed reduce,
///                                 dp_gather (its exposed part)
///                        tp       grad_sync (model-parallel gradient sync)
///                        compute  optimizer        ending at l + extra
///   compute bubble: every gap of [0, step) outside the ops and the tail
///
/// The tp collectives of a chunk are drawn as one block after its compute
/// (in the run they interleave layer by layer); durations are the
/// estimate's, so the spans of a rank add up to its part of the step and
/// the bubbles of the critical rank to the estimate's bubble.
///
/// All devices of one pipeline rank (its dp x cp x tp replicas) run the
/// same timeline under the model, so spans are per pipeline rank.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/sim/pipeline.hpp"
#include "planner/sim/problem.hpp"

namespace planner::estimate {

/// How one chunk's per-micro-batch time splits (the problem's chunk
/// forward = forward + forward_comm + forward_wait, backward = recompute +
/// backward + backward_comm + backward_wait).
struct ChunkParts {
  Seconds forward;         ///< forward compute
  Seconds forward_comm;    ///< exposed tp/cp collectives of the forward
  Seconds forward_wait;    ///< ZeRO-3 weight gather not hidden by compute
  Seconds forward_gather;  ///< the whole ZeRO-3 gather of the forward (0 without)
  Seconds recompute;       ///< forward again before the backward
  Seconds backward;        ///< backward compute
  Seconds backward_comm;   ///< exposed tp/cp collectives of the backward
  Seconds backward_wait;   ///< ZeRO gathers / reduce-scatters not hidden
  Seconds backward_gather; ///< ZeRO-3 re-gather of the backward (0 without)
  Seconds reduce_scatter;  ///< per-micro-batch gradient reduce-scatter (0 without)
  Seconds grad_accumulation;  ///< gradient accumulation passes after the backward (0 without)
};

/// What one pipeline rank does after its last backward.
struct RankTail {
  Seconds dp_reduce;          ///< the whole data-parallel gradient reduction
  Seconds dp_reduce_exposed;  ///< its part after the last backward
  int dp_buckets = 1;         ///< buckets it is reduced in
  Seconds dp_gather;          ///< distributed-optimizer parameter all-gather
  Seconds dp_gather_exposed;  ///< its part after the reduction
  Seconds grad_sync;          ///< model-parallel gradient sync (tp/cp axes)
  Seconds optimizer;          ///< optimizer step
};

/// The parts of a step estimate() simulated (Estimate::parts).
/// Invariant: chunks.size() == problem.num_chunks(), ranks.size() ==
/// problem.stages, problem.extra[r] = dp_reduce_exposed + dp_gather_exposed
/// + optimizer + grad_sync of rank r.
struct StepParts {
  sim::PipelineProblem problem;
  std::vector<ChunkParts> chunks;
  std::vector<RankTail> ranks;
};

/// Which stream of a device a span runs on.
enum class Stream : std::uint8_t {
  compute,  ///< kernels: forward, recompute, backward, optimizer; bubbles
  tp,       ///< tensor/context-parallel collectives, model-parallel gradient sync
  pp,       ///< pipeline send/receive
  dp,       ///< data-parallel gradient reduction, ZeRO gathers and reduce-scatters
};

/// What a span is.
enum class SpanKind : std::uint8_t {
  forward, recompute, backward, optimizer, bubble,
  tp_forward, tp_backward, grad_sync,
  send_activation, recv_activation, send_gradient, recv_gradient,
  zero_gather, zero_reduce_scatter, dp_reduce, dp_gather,
};

/// "compute", "tp", "pp", "dp".
std::string_view stream_name(Stream s);
/// The enumerator's name, e.g. "zero_reduce_scatter".
std::string_view span_kind_name(SpanKind k);

/// One interval on one stream of one pipeline rank.
struct Span {
  int stage = 0;  ///< pipeline rank
  Stream stream = Stream::compute;
  SpanKind kind = SpanKind::forward;
  std::optional<int> micro_batch;  ///< per-micro-batch spans
  std::optional<int> chunk;        ///< global chunk on this rank (chunk % pp == stage): a
                                   ///< send's source chunk, a receive's destination chunk
  std::optional<int> peer;         ///< send/recv: the other pipeline rank
  Seconds start, end;
};

/// The spans of one step.
struct StepTimeline {
  Seconds step_time;
  int stages = 1;
  /// Sorted by (stage, stream, start, end, kind); no zero-length span
  /// except forward/backward (one per micro-batch and chunk, always).
  std::vector<Span> spans;
  /// Each pipeline rank's forwards and backwards in the order the
  /// simulated step ran them (the plan's schedule).
  sim::DeviceOrders orders;
};

/// Lays out the spans (design note) of `simulated`: `parts.problem`
/// simulated with events (sim::SimulateOptions::timeline).
/// Errors: the parts do not match the problem, or the simulation holds no
/// events.
Result<StepTimeline> step_timeline(const StepParts& parts, const sim::PipelineResult& simulated);

}  // namespace planner::estimate
