#pragma once
/// The real execution mode of `planner run` (no --replay): the plan's model
/// trained for real in fp32 on the CPU kernels (runtime_cpu), data-parallel
/// (ZeRO 0-3), tensor-parallel (the plan's per-op strategies, sequence
/// parallelism, the batch split over tp; src/executor/real_tp.hpp),
/// context-parallel, with recomputation, and pipeline-parallel as the plan
/// lays it out, with `--check` comparing every step against the
/// single-device interpreter on rank 0 (docs/executor.md, "Real mode and
/// --check").
///
/// Design note. Every rank draws the full weights from the plan's seed with
/// the interpreter's rules (runtime_cpu/rng.hpp) and keeps the parameters of
/// its pipeline chunks (under tp: its share of them). Synthetic inputs are
/// drawn at the global batch's shape; global micro-batch chunk q = m * dp + d (micro-batch m, replica d)
/// is rows [q r, (q + 1) r) of every input, r = its rows per micro-batch.
/// Per micro-batch the rank runs its chunks' ops forward and backward with
/// forward_op / backward_op (the interpreter's op layer), exchanging the
/// tensors that cross a chunk boundary (and their gradients) in the transfer
/// order of the replay program (order_transfers), so the same schedules
/// cannot deadlock. Gradients accumulate over micro-batches in schedule
/// order, are summed over the data-parallel group (all-reduce, or
/// reduce-scatter under ZeRO >= 1) and scaled by 1 / (dp x micro-batches).
/// Under tp the ops run at their local shapes, with the tp collectives their
/// views imply in between (real_tp.hpp's design note); under cp (tp = 1)
/// the same machinery splits the sequence over the cp group (real_cp.cpp).
/// With training.recompute the ops the cost model prices as recomputed run
/// forward again inside backward (real_recompute.hpp).
///
/// Architecture invariant: no MPI, CUDA or ONNX header; the communicator is
/// injected.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/executor/program.hpp"
#include "planner/graph/graph.hpp"
#include "planner/plan/plan.hpp"
#include "planner/runtime/communicator.hpp"
#include "planner/runtime_cpu/interpreter.hpp"

namespace planner::executor {

/// Why the real mode cannot run this plan (one line naming the layout field),
/// or success. Checked before anything is allocated.
Status real_supported(const plan::Plan& p, const graph::OpGraph& micro_graph);

struct RealOptions {
  int steps = 5;
  int warmup = 1;
  /// Compare against the interpreter on rank 0 after each of the first
  /// kMaxCheckedSteps steps (warm-up included).
  bool check = false;
  /// Relative tolerance of --check: |a - b| / max(|b|, 1e-6).
  double tolerance = 1e-5;
};
inline constexpr int kMaxCheckedSteps = 3;

/// One checked step (rank 0's view).
struct CheckedStep {
  int step = 0;              ///< 1-based, warm-up included
  double loss = 0, reference_loss = 0;
  double max_rel_error = 0;  ///< over the loss, every gradient and weight
  std::string worst;         ///< "gradient of 'fc1.weight'" etc.
};

struct RealResult {
  std::vector<double> losses;        ///< per step (warm-up included), mean over the global batch
  std::vector<double> step_times_s;  ///< per measured step, max over ranks
  /// Where the step's time went, seconds per step: mean over measured steps
  /// of the maximum over ranks, per component: "compute" (the ops' kernels:
  /// forward, backward, recompute), "tp_comm", "pp_comm" (packing, receives,
  /// send waits), "dp_comm" (ZeRO-3 gathers included), "optimizer",
  /// "grad_accumulation" (zeroing the step's gradient buffer and adding each
  /// micro-batch's parameter gradients into it) and "other" (the rest of a
  /// rank's step: the executor's own work per op: dispatch, copies of the
  /// weights an op reads, activation-gradient sums, bookkeeping).
  std::map<std::string, double> components_s;
  std::vector<CheckedStep> checked;  ///< rank 0 with check
  std::vector<double> peak_rss_bytes;  ///< per rank (getrusage ru_maxrss), after the last step
  /// Per rank: the most activation bytes held at once (every micro-batch's
  /// tensors, parameters and constants not counted), over all steps.
  std::vector<double> peak_activation_bytes;
  /// training.recompute: the ops run forward again inside backward in the
  /// last step, and their forward FLOPs (the unsharded op's, counted once
  /// per tp group), summed over ranks: per micro-batch of each replica.
  double recomputed_ops_per_step = 0, recomputed_flops_per_step = 0;
  /// Non-empty: --check failed (every rank learns it; rank 0 has the text).
  std::string check_failure;
};

/// What the real mode draws and trains with, for a caller that runs the
/// model elsewhere (`planner run --backend cuda`, runtime_cuda/gpu_train.hpp):
/// the interpreter options (the plan's seed, the real mode's stddev) and
/// the plan's optimizer (adam: AdamW; sgd_momentum; sgd).
runtime_cpu::InterpreterOptions real_interpreter_options(const plan::Plan& p);
runtime_cpu::OptimizerConfig real_optimizer(const plan::Plan& p);

/// Trains `p`'s model for opts.warmup + opts.steps steps. `prog` is this
/// rank's replay program with its transfers ordered (order_transfers);
/// `micro_graph` the model imported at the per-replica micro-batch (rank 0
/// with check also runs the interpreter on it, micro-batch by micro-batch).
/// Errors: the communicator's, a kernel's, or an op the CPU cannot run.
Result<RealResult> run_real(const plan::Plan& p, const RankProgram& prog, const graph::OpGraph& micro_graph,
                            runtime::Communicator& world,
                            const RealOptions& opts);

}  // namespace planner::executor
