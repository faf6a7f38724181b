#pragma once
/// The replay executor's per-rank program: what one rank of a plan does in one
/// training step, derived from the plan and the model's graph
/// (docs/executor.md, "planner run --replay").
///
/// Design note. derive_program() is a pure function (plan, graph, rank) ->
/// RankProgram; nothing here runs anything, so the derivation is unit-tested
/// by counting GEMMs and collectives. replay.hpp executes a program.
///
///   plan.layout.schedule_steps[pp coordinate]     F0@c0 F1@c0 B0@c0 F2@c0 ...
///        │ each step: its chunk's ops, in order (backward: reversed)
///        ▼
///   step = [recv activation/gradient] + tasks of the chunk + [send]
///   task = GEMM m x n x k (x batch) | memory traffic | collective | send | recv
///        then, once per step: model-parallel gradient syncs, the
///        data-parallel gradient all-reduce (or ZeRO reduce-scatter), the
///        optimizer step, the ZeRO parameter all-gather.
///
/// Sharded shapes: a MatMul/Gemm of a single-op unit runs at the local shapes
/// of its operands under the strategy's input layouts (layout::local_shape on
/// the plan's mesh); ops of a fused pattern (attention) and memory-bound ops
/// run 1 / (product of the assigned axes' sizes) of their work, as the
/// sharding engine's compute fraction defines it. Collectives are the plan's
/// own (`strategies[].collectives`), each unit's count shared out over its
/// copies (layers) and placed after the copy's op in its chunk.
///
/// Pipeline transfers: a blocking send waits for its receiver (rendezvous),
/// so naive send/recv in schedule order deadlocks (1F1B with two ranks, or
/// the ring of the interleaved schedule). order_transfers() simulates the
/// pipeline ranks' programs with rendezvous transfers and numbers every
/// transfer in one global order; each rank then performs its transfers in
/// that order (sends deferred until the rank's next receive that comes later
/// in the order), which cannot deadlock: the first unfinished transfer of the
/// order always has both ranks ready for it.
///
/// Architecture invariant: executor includes no ONNX, CUDA or MPI header;
/// the communicator arrives through runtime::Communicator.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/core/collective.hpp"
#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"
#include "planner/plan/plan.hpp"

namespace planner::executor {

/// Where a task's time is booked.
enum class Component : std::uint8_t {
  compute,    ///< GEMMs and memory-bound ops (recomputation included)
  tp_comm,    ///< model-parallel collectives (tp, cp axes)
  pp_comm,    ///< pipeline send/recv, waiting for the neighbour included
  dp_comm,    ///< data-parallel gradient sync, ZeRO gathers
  optimizer,  ///< the optimizer step's memory traffic
};
/// "compute", "tp_comm", "pp_comm", "dp_comm", "optimizer".
std::string_view component_name(Component c);
inline constexpr int kComponents = 5;

enum class TaskKind : std::uint8_t { gemm, memory, collective, send, recv, optimizer };

/// Parses a plan collective kind (core::to_string's names); error names the kind.
Result<core::Collective> parse_coll_kind(std::string_view s);

/// One unit of work.
struct Task {
  TaskKind kind = TaskKind::memory;
  Component component = Component::compute;
  std::string op;  ///< op (or collective `where`) it comes from, for messages
  /// gemm: C[m,n] = A[m,k] B[k,n], `batch` times.
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  /// memory: bytes read and written; optimizer: elements updated.
  double read_bytes = 0, write_bytes = 0;
  std::int64_t elements = 0;
  /// collective: kind, the mesh axes of its group ("tp", "dp,cp"), group size,
  /// per-device bytes (nccl-tests convention).
  core::Collective coll = core::Collective::all_reduce;
  std::string axes;
  int group_size = 1;
  /// collective, send, recv: bytes.
  std::int64_t bytes = 0;
  /// send/recv: the peer's pipeline coordinate, direction tag (0 activations,
  /// 1 gradients) and position in the global transfer order (order_transfers).
  int peer_pp = 0, tag = 0;
  std::int64_t order = -1;
  friend bool operator==(const Task&, const Task&) = default;
};

/// One schedule step (F or B of one micro-batch through one chunk).
struct StepProgram {
  plan::ScheduleStep step;
  std::vector<Task> tasks;
};

/// Totals a test (or the memory check) reads off a program.
struct ProgramCounts {
  int gemms = 0;                 ///< GEMM tasks (a batched GEMM counts once)
  double gemm_flops = 0;         ///< 2 m n k batch summed
  int collectives = 0;           ///< collective tasks
  int sends = 0, recvs = 0;
  double memory_bytes = 0;       ///< read + written by memory tasks
};

/// What one rank runs per training step.
struct RankProgram {
  int rank = 0;
  int pp_rank = 0;                   ///< pipeline coordinate
  std::vector<StepProgram> steps;    ///< in schedule order
  std::vector<Task> finish;          ///< after the last step: grad syncs, optimizer, ZeRO gathers
  std::int64_t parameters = 0;       ///< local parameter elements (this rank's chunks, sharded)
  std::int64_t optimizer_elements = 0;  ///< elements the optimizer updates (ZeRO: a 1/dp share)
  int optimizer_states = 0;          ///< f32 state arrays per element (adam 2, sgd_momentum 1, sgd 0)
  /// Largest working sets, for buffer sizing: GEMM floats (A + B + C),
  /// memory-task bytes, collective bytes, transfer bytes.
  std::int64_t max_gemm_floats = 0;
  double max_memory_bytes = 0;
  std::int64_t max_comm_bytes = 0, max_transfer_bytes = 0;
  /// Axis sets of every collective group any rank of the plan uses, sorted
  /// (every rank creates the same sub-communicators in the same order).
  std::vector<std::string> groups;

  ProgramCounts counts() const;
  /// Bytes the replay allocates for this program (parameters, gradients,
  /// optimizer states, working buffers).
  double memory_bytes() const;
};

/// Derives rank `rank`'s program. Errors (one line) name the plan field or
/// op: an op of the plan missing from the graph, a layout that does not parse
/// or does not fit the tensor, a collective kind or axis unknown.
/// Requires: plan validated; graph annotated (ops::annotate) and analysed.
/// How the replay stands in for the framework the plan names.
struct ProgramOptions {
  /// The framework fuses elementwise chains (estimate::fuses_elementwise):
  /// an elementwise op's memory task drops the traffic of the tensors it
  /// shares with a fused neighbour (graph::fusible_elementwise_edge), as the
  /// cost model does.
  bool fuse_elementwise = false;
};
Result<RankProgram> derive_program(const plan::Plan& p, const graph::OpGraph& g, int rank,
                                   const ProgramOptions& options = {});

/// The mesh coordinate of `rank` on axis `name` (0 when the plan has no such axis).
int coordinate(const plan::Plan& p, int rank, std::string_view name);
/// The world rank with the same coordinates as `rank` except `name` = `value`.
int with_coordinate(const plan::Plan& p, int rank, std::string_view name, int value);

/// Numbers every send/recv of `programs` (one per pipeline coordinate, same
/// data-parallel and tensor-parallel coordinates) in one global order that
/// blocking rendezvous transfers can follow without deadlock (design note).
/// Errors when the transfers cannot all complete (a schedule that waits on
/// itself).
Status order_transfers(std::vector<RankProgram>& programs);

}  // namespace planner::executor
