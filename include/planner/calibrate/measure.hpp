#pragma once
/// CPU measurements of `planner calibrate --backend cpu`: real kernels and
/// real collectives, nothing else (never a plan, never a model).
///
///   sgemm   OpenBLAS cblas_sgemm on square sizes (efficiency vs 2n^3), on
///           skinny shapes [d x N]x[N x N] (factor vs min dim) and on an
///           odd size next to an aligned one (misalignment factor)
///   triad   a[i] = b[i] + s*c[i] over doubles (STREAM's triad; bytes moved
///           counted as STREAM does, 24 per element), over array sizes
///   comm    all_reduce, all_gather, reduce_scatter, all_to_all, broadcast
///           of f32 buffers through the project's runtime::Communicator,
///           over nccl-tests message sizes (see cluster/collective.hpp)
///
/// Every rank runs the kernels at the same time (so a rank's memory
/// bandwidth is its share of the host's, as when the executor runs); kernel
/// times are averaged over ranks; a collective's time is the slowest rank's.
/// Each point repeats until it has run for a time budget and keeps the
/// fastest round.

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/calibrate/fit.hpp"
#include "planner/cluster/profile.hpp"
#include "planner/core/result.hpp"
#include "planner/runtime/communicator.hpp"

namespace planner::calibrate {

/// The collectives calibrate times, in the order it times them.
inline constexpr std::array<core::Collective, 5> kCalibratedCollectives{
    core::Collective::all_gather, core::Collective::reduce_scatter, core::Collective::all_to_all,
    core::Collective::broadcast, core::Collective::all_reduce};

struct MeasureOptions {
  /// Small sweep, short budgets (tests; seconds).
  bool quick = false;
  /// Called on rank 0 before each group of measurements; may be empty.
  std::function<void(std::string_view)> progress;
};

/// What one calibration measured (identical on every rank after measure_cpu).
/// One op of a memory-bound class run forward and backward by the CPU
/// backend's kernels: the bytes and special-function evaluations the cost
/// model counts for it (graph::OpCost from the ops rules) and the
/// measured seconds of each pass.
struct ClassKernelSample {
  std::string op_class;  ///< graph::op_class_name
  std::string op_type;   ///< the ONNX op type, e.g. "Softmax"
  std::string op;        ///< the op and its input shapes, e.g. "Softmax [8,8,128,128]"
  /// The batch of the activations it ran at: a class's or an op type's
  /// samples at one batch make one row of its table.
  std::int64_t batch = 0;
  Bytes forward_bytes, backward_bytes;
  /// Special-function evaluations (exp-like, and erf apart) of each pass.
  double forward_special = 0, backward_special = 0;
  double forward_erf = 0, backward_erf = 0;
  Seconds forward, backward;
};

struct CpuMeasurements {
  int ranks = 1;
  /// Square sgemm: x = 2 n^3 FLOPs; sizes[i] is n of gemm[i].
  std::vector<int> gemm_sizes;
  std::vector<Sample> gemm;
  /// Skinny sgemm [d x N] x [N x N]: x = 2 d N^2; skinny_dims[i] is d.
  int skinny_n = 0;
  std::vector<int> skinny_dims;
  std::vector<Sample> skinny;
  /// Square sgemm of side aligned_n and aligned_n - 1.
  int aligned_n = 0;
  Sample aligned;
  Sample misaligned;
  /// Triad: x = 24 * elements bytes.
  std::vector<Sample> triad;
  /// The CPU backend's own kernels (runtime_cpu): seconds per element of
  /// its exp and erf unary kernels (special_elements elements, cache
  /// resident), and per parameter of its AdamW step over adam_params
  /// parameters (weights, gradients and both states out of cache).
  std::int64_t special_elements = 0;
  Seconds exp_per_element;
  Seconds erf_per_element;
  std::int64_t adam_params = 0;
  Seconds adam_per_param;
  /// Its memory-bound kernels (runtime_cpu::forward_op and backward_op),
  /// one representative op at a time.
  std::vector<ClassKernelSample> class_kernels;
  /// The spread of a rank's pace: every rank runs the same sgemm work
  /// (side step_gemm_n, step_calls calls a round, about step_round_s) at
  /// once, step_rounds times; step_cv = standard deviation / mean of the
  /// round times over every rank and round (0 when not measured).
  int step_gemm_n = 0;
  long step_calls = 0;
  int step_rounds = 0;
  double step_round_s = 0;
  double step_cv = 0;
  /// Per collective (indexed by core::Collective): x = message bytes.
  std::array<std::vector<Sample>, core::kCollectiveCount> collectives;
  /// Resident memory of a rank after start-up (MPI, OpenBLAS), before any
  /// buffer (mean over ranks), and what the collective sweep left resident
  /// once its buffers were freed (max over ranks, >= 0).
  Bytes startup_resident;
  Bytes communicator_resident;
  /// Host facts (rank 0).
  std::string host;
  std::string cpu_model;
  std::string openblas_config;
  int openblas_threads = 0;
  /// Total memory of the host (/proc/meminfo MemTotal).
  Bytes host_memory;
};

/// Runs the sweep. Collective: every rank of `comm` must call it. Errors
/// come from the communicator, or say that the ranks span several hosts
/// (this backend calibrates one host).
Result<CpuMeasurements> measure_cpu(runtime::Communicator& comm, const MeasureOptions& options);

}  // namespace planner::calibrate
