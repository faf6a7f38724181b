#pragma once
/// The measurement file (`measured.json`, format `planner.measured/v1`,
/// docs/executor.md) that `planner run -o` writes, and `planner compare`,
/// which sets it against the plan's prediction.
///
/// Design note. Measured is plain data; to_json writes keys in a fixed
/// order; from_json rejects unknown keys, missing fields and wrong types
/// with the JSON path, like the plan reader. compare() is a pure function of
/// (plan, measured) returning rows; the CLI prints them.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/plan/plan.hpp"

namespace planner::executor {

inline constexpr const char* kMeasuredFormat = "planner.measured/v1";

struct Measured {
  std::string format = kMeasuredFormat;
  std::string mode = "replay";  ///< what ran: "replay" or "real" (the CUDA real mode: components_s empty)
  /// Where the replay computed: "cpu" (OpenBLAS, MPI) or "cuda" (cuBLAS,
  /// NCCL). Optional when read (files before it existed say cpu).
  std::string backend = "cpu";
  std::string plan_path;
  std::string plan_sha256;      ///< SHA-256 of the plan file's bytes
  int ranks = 1;
  int steps = 0, warmup = 0;
  std::vector<double> step_times_s;  ///< per measured step, max over ranks
  double step_time_s = 0;            ///< median of step_times_s
  /// compute, tp_comm, pp_comm, dp_comm, optimizer (the replay and the real
  /// mode), grad_accumulation and other (the CPU real mode: RealResult):
  /// seconds per step.
  std::map<std::string, double> components_s;
  std::vector<double> peak_memory_bytes;  ///< per rank: peak RSS
  std::string host, date;                 ///< date: UTC, ISO 8601
  /// planner, mpi (MPI_Get_library_version, first line), openblas (config);
  /// with backend cuda also device, cuda_driver, cuda_runtime, cublas, nccl.
  std::map<std::string, std::string> versions;
  friend bool operator==(const Measured&, const Measured&) = default;
};

/// The median of `v` (mean of the two middle values for an even count); 0 when empty.
double median(std::vector<double> v);

/// JSON text, keys in the field order above, two-space indent, trailing newline.
std::string to_json(const Measured& m);
/// Parses and checks a measurement file; `source` names it in errors.
Result<Measured> measured_from_json(std::string_view text, std::string_view source = "measured.json");

/// One compared quantity.
struct CompareRow {
  std::string name;                 ///< "step_time", "compute", ..., "peak_memory[pp 0]"
  std::optional<double> predicted;  ///< absent when the plan has no such figure
  std::optional<double> measured;
  /// (measured - predicted) / predicted x 100, when both exist and predicted
  /// > 0 (a time: >= 1 us; below it is rounding).
  std::optional<double> error_pct;
  std::string unit;                 ///< "s" or "B"
};

/// Predicted vs measured: step time; compute (compute + recompute), tp_comm
/// (model_parallel.*), pp_comm (bubble), dp_comm (data_parallel_exposed),
/// optimizer; peak memory per pipeline stage (measured: the largest peak RSS
/// of the ranks of that stage). `rank_pp[r]` is rank r's pipeline coordinate.
/// Errors when the measurement is not of this plan (sha256 differs) or its
/// rank count is not the plan's devices.
Result<std::vector<CompareRow>> compare(const plan::Plan& p, std::string_view plan_sha256, const Measured& m,
                                        const std::vector<int>& rank_pp);

}  // namespace planner::executor
