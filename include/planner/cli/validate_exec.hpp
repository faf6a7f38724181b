#pragma once
/// `planner validate`'s use of the executor: one plan made ready to run on
/// this rank (its program, and for the real mode its graph) and one timed
/// run of it, as `planner run` does for one plan (src/cli/run_cmd.cpp).

#include <memory>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/executor/program.hpp"
#include "planner/graph/graph.hpp"
#include "planner/plan/plan.hpp"
#include "planner/runtime/communicator.hpp"
#include "planner/runtime/device.hpp"

namespace planner::cli {

/// --mode: real where the real mode supports the plan, else replay (auto),
/// or one of them for every row.
enum class ExecMode { automatic, real, replay };

/// Parses auto | real | replay. Errors name --mode.
Result<ExecMode> parse_exec_mode(const std::string& text);

/// --backend cuda: this rank's GPU and the NCCL world over the ranks
/// (both null: the cpu backend).
struct ExecDevice {
  int index = 0;  ///< the GPU's device index
  runtime::Device* device = nullptr;
  runtime::Communicator* world = nullptr;
};

/// A plan ready to run on this rank.
struct Runnable {
  plan::Plan plan;
  executor::RankProgram program;
  /// The model at the plan's micro-batch (the real mode only).
  std::unique_ptr<graph::OpGraph> graph;
  bool real = false;
  /// Why the real mode does not run it (auto fell back to the replay).
  std::string why_replay;
};

/// Imports `model` at the plan's micro-batch and derives this rank's
/// program (transfers ordered over its pipeline column). Every rank gets
/// the same verdict for the same inputs. On a GPU (`gpu` with a device),
/// the real mode is the GPU real mode (runtime_cuda/gpu_train.hpp): a
/// one-device plan of one micro-batch per step; other plans replay on the
/// device. Errors: import, program derivation, or --mode real for a plan
/// the real mode cannot run.
Result<Runnable> prepare_runnable(const plan::Plan& p, const std::string& model, int rank, ExecMode mode,
                                  const ExecDevice& gpu = {});

/// Runs it once on `world` (and on `gpu`'s device where it has one):
/// `warmup` steps, then `steps` timed steps; the step times (max over
/// ranks, the same on every rank). Errors: the executor's (a communicator
/// deadline, a kernel, CUDA).
Result<std::vector<double>> run_once(const Runnable& r, runtime::Communicator& world, int steps, int warmup,
                                     const ExecDevice& gpu = {});

}  // namespace planner::cli
