#pragma once
/// Replaying a rank's program (program.hpp) for real: GEMMs with OpenBLAS's
/// cblas_sgemm (or an injected runtime::Device's) at the sharded shapes, memory-bound ops as real memory
/// traffic of the same bytes, the plan's collectives and pipeline transfers
/// over a runtime::Communicator, then the optimizer step over real parameter,
/// gradient and state arrays. Every step is timed between barriers; the
/// step's time is the maximum over ranks (docs/executor.md).
///
/// Architecture invariant: no MPI, CUDA or ONNX header; the communicator is
/// injected (MPI in `planner run`, the in-process fake in unit tests).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/executor/program.hpp"
#include "planner/runtime/communicator.hpp"
#include "planner/runtime/device.hpp"

namespace planner::executor {

/// `--fault stall:RANK:STEP`: rank RANK sleeps forever when step STEP
/// (1-based, warm-up steps included) begins, as a stopped process would;
/// `crash:RANK:STEP`: it raises SIGSEGV there instead, as a crashing one would.
struct StallSpec {
  int rank = 0;
  int step = 1;
  bool crash = false;
  friend bool operator==(const StallSpec&, const StallSpec&) = default;
};
/// Parses "stall:RANK:STEP" or "crash:RANK:STEP" (RANK >= 0, STEP >= 1).
/// Errors name the field.
Result<StallSpec> parse_stall_spec(std::string_view text);

struct ReplayOptions {
  int steps = 5;   ///< measured steps
  int warmup = 1;  ///< steps run before, not measured
  std::optional<StallSpec> stall;
  /// Record the last measured step's intervals (ReplayResult::spans).
  bool record = false;
  /// The device backend (`planner run --replay --backend cuda`): GEMMs in
  /// the plan's precision, traffic and the optimizer on `device` (each task
  /// synchronized before its time is taken), the plan's collectives and
  /// transfers over `device_world` (the same ranks as world, device
  /// buffers); world still agrees and gathers the times. Both null (the
  /// default): host arrays, OpenBLAS and world. Requires: both or neither.
  runtime::Device* device = nullptr;
  runtime::Communicator* device_world = nullptr;
};

/// One measured interval of a rank's step: consecutive tasks of one
/// schedule step booked to one component, merged ("F3 c0", "finish").
struct MeasuredSpan {
  double start_s = 0, end_s = 0;  ///< from the step's start (after its barrier)
  Component component = Component::compute;
  std::string label;
  friend bool operator==(const MeasuredSpan&, const MeasuredSpan&) = default;
};

/// What every rank learns at the end (identical on every rank).
struct ReplayResult {
  std::vector<double> step_times_s;  ///< per measured step, max over ranks
  /// Per component, seconds per step: mean over measured steps of the
  /// maximum over ranks (index = Component).
  std::array<double, kComponents> components_s{};
  /// Per rank: peak RSS (getrusage ru_maxrss), or with a device the device
  /// memory in use once every buffer exists (cudaMemGetInfo total - free).
  std::vector<double> peak_rss_bytes;
  /// With ReplayOptions::record: every rank's spans of the last measured
  /// step, indexed by rank (the same on every rank).
  std::vector<std::vector<MeasuredSpan>> spans;
};

/// Spans as text, one per line ("start end component label"), and back.
std::string encode_spans(const std::vector<MeasuredSpan>& spans);
Result<std::vector<MeasuredSpan>> decode_spans(std::string_view text);

/// Runs `prog` on `world` (size = the plan's devices). Every rank calls it
/// with its own program. Errors are the communicator's (naming a stalled
/// rank) or a failed allocation.
Result<ReplayResult> replay(const RankProgram& prog, const plan::Plan& p, runtime::Communicator& world,
                            const ReplayOptions& opts);

/// The OpenBLAS build ("OpenBLAS 0.3.21 DYNAMIC_ARCH ... Haswell MAX_THREADS=64").
std::string blas_config();

/// This process's peak resident set size, bytes.
double peak_rss_bytes();

}  // namespace planner::executor
