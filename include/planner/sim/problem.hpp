#pragma once
/// Input of the pipeline simulator: plain data describing one training step
/// of a pipeline schedule (see planner/sim/pipeline.hpp for the design note).
///
/// Chunks: the model is cut into C = p * v consecutive chunks; chunk c lives
/// on device c % p. With v = 1 (GPipe, 1F1B) chunk c is simply stage c.
/// Boundary c sits between chunk c and chunk c + 1 (C - 1 boundaries).

#include <cstdint>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

namespace planner::sim {

/// Which pipeline schedule the devices follow.
enum class Schedule : std::uint8_t {
  gpipe,        ///< all forwards, then all backwards (Huang et al. 2019)
  one_f_one_b,  ///< PipeDream-flush 1F1B (Narayanan et al. 2021)
  interleaved,  ///< Megatron's interleaved 1F1B with v model chunks per device
};

/// "gpipe", "1f1b" or "interleaved".
std::string_view schedule_name(Schedule s);

/// Cost of one model chunk for one micro-batch.
struct ChunkCost {
  Seconds forward;   ///< forward compute time
  Seconds backward;  ///< backward compute time (include recompute here)
  Bytes activation;  ///< activation bytes kept from its forward until its backward ends
};

/// Point-to-point time across one chunk boundary, for one micro-batch.
struct BoundaryCost {
  Seconds forward;   ///< activation send, chunk c -> c + 1
  Seconds backward;  ///< gradient send, chunk c + 1 -> c
};

/// One training step of a pipeline, as plain data.
/// Requires (checked by validate()): stages, micro_batches, virtual_stages
/// >= 1; virtual_stages == 1 unless interleaved; chunks.size() == stages *
/// virtual_stages; boundaries empty (no transfer time) or of size
/// chunks.size() - 1; extra empty or of size stages; every time and byte
/// count finite and >= 0; interleaved needs micro_batches % stages == 0.
struct PipelineProblem {
  int stages = 1;          ///< p: pipeline devices
  int micro_batches = 1;   ///< m: micro-batches per step
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;  ///< v: model chunks per device (interleaved only)
  std::vector<ChunkCost> chunks;         ///< one per chunk, in model order
  std::vector<BoundaryCost> boundaries;  ///< one per boundary, or empty
  /// Per device, time added after its last backward (exposed data-parallel
  /// gradient sync, optimizer step); empty means none.
  std::vector<Seconds> extra;
  /// Blocking point-to-point: the sender's stream waits for each boundary
  /// transfer it starts (DeepSpeed's pipeline engine: p2p.send/recv are
  /// synchronous, async_op unsupported), so a transfer occupies the sending
  /// device as well as delaying the receiver. False: the sender goes on.
  bool blocking_transfers = false;

  /// Number of chunks, p * v.
  int num_chunks() const { return stages * virtual_stages; }
};

/// Checks only the shape fields (stages, micro_batches, virtual_stages and
/// the schedule's constraints). Errors name the field and the constraint.
Status validate_shape(Schedule schedule, int stages, int micro_batches, int virtual_stages);

/// Checks the whole problem (see PipelineProblem's Requires).
Status validate(const PipelineProblem& problem);

/// A problem whose chunks all cost `chunk` and whose boundaries all cost
/// `boundary`: the balanced pipeline of the textbook formulas. Sizes follow
/// from p and v; no extra time. Not validated.
PipelineProblem uniform_problem(Schedule schedule, int stages, int micro_batches, int virtual_stages,
                                ChunkCost chunk, BoundaryCost boundary = {});

}  // namespace planner::sim
