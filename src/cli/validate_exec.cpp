// One plan made ready on this rank and timed once, for planner validate
// (validate_exec.hpp). The same steps as `planner run`'s prepare and its
// two modes, without the files, checks and printing.

#include "planner/cli/validate_exec.hpp"

#include <fmt/format.h>

#include "planner/estimate/config.hpp"
#include "planner/executor/real.hpp"
#include "planner/executor/replay.hpp"
#include "planner/onnx/importer.hpp"
#ifdef PLANNER_WITH_CUDA
#include "planner/runtime_cuda/gpu_train.hpp"
#endif

namespace planner::cli {

Result<ExecMode> parse_exec_mode(const std::string& text) {
  if (text == "auto") return ExecMode::automatic;
  if (text == "real") return ExecMode::real;
  if (text == "replay") return ExecMode::replay;
  return make_error("--mode '{}' is not auto, real or replay", text);
}

namespace {

// Why the GPU real mode cannot train `p` (empty: it can): one device, one
// micro-batch per step (run_cmd.cpp's run_real_cuda).
std::string gpu_real_refusal(const plan::Plan& p) {
  if (p.cluster.devices != 1)
    return fmt::format("the GPU real mode trains one-device plans (cluster.devices is {})", p.cluster.devices);
  if (p.training.micro_batches != 1)
    return fmt::format("the GPU real mode runs one micro-batch per step (training.micro_batches is {})",
                       p.training.micro_batches);
  return "";
}

}  // namespace

Result<Runnable> prepare_runnable(const plan::Plan& p, const std::string& model, int rank, ExecMode mode,
                                  const ExecDevice& gpu) {
  Runnable out;
  out.plan = p;
  onnx::ImportOptions opts;
  opts.dims = p.model.dims;
  opts.batch = p.model.batch.value_or(p.training.micro_batch);
  opts.params_from_inputs = p.model.params_from_inputs;
  PLANNER_TRY(auto imported, onnx::import_file(model, opts));
  PLANNER_TRY(auto framework, estimate::parse_framework(p.training.framework));
  executor::ProgramOptions popts;
  popts.fuse_elementwise = estimate::fuses_elementwise(framework);
  // One program per pipeline coordinate of this rank's column, their
  // transfers numbered in one deadlock-free order.
  std::vector<executor::RankProgram> column;
  for (int s = 0; s < p.layout.pp; ++s) {
    PLANNER_TRY(auto prog,
                executor::derive_program(p, imported.graph, executor::with_coordinate(p, rank, "pp", s), popts));
    column.push_back(std::move(prog));
  }
  PLANNER_TRY_STATUS(executor::order_transfers(column));
  out.program = std::move(column[static_cast<std::size_t>(executor::coordinate(p, rank, "pp"))]);
  if (mode != ExecMode::replay) {
    Status st = executor::real_supported(p, imported.graph);
    if (const auto why = gpu.device ? gpu_real_refusal(p) : ""; st && !why.empty()) st = make_error("{}", why);
    if (!st) {
      if (mode == ExecMode::real) return st.error();
      out.why_replay = st.error().message;
    } else {
      out.real = true;
      out.graph = std::make_unique<graph::OpGraph>(std::move(imported.graph));
    }
  }
  return out;
}

Result<std::vector<double>> run_once(const Runnable& r, runtime::Communicator& world, int steps, int warmup,
                                     const ExecDevice& gpu) {
  if (r.real && gpu.device) {
#ifndef PLANNER_WITH_CUDA
    (void)world;
    return make_error("--backend cuda: this planner was built without CUDA");
#else
    // The GPU real mode, as `planner run --backend cuda` trains a one-rank
    // plan: the plan's storage (bf16 or fp32), interpreter and optimizer.
    runtime::GpuTrainOptions o;
    o.steps = steps;
    o.warmup = warmup;
    o.storage = r.plan.training.precision == "bf16" ? runtime::GpuStorage::bf16 : runtime::GpuStorage::f32;
    o.interpreter = executor::real_interpreter_options(r.plan);
    o.optimizer = executor::real_optimizer(r.plan);
    o.device = gpu.index;
    PLANNER_TRY(auto res, runtime::train_on_gpu(*r.graph, o));
    return res.step_times_s;
#endif
  }
  if (r.real) {
    executor::RealOptions ro;
    ro.steps = steps;
    ro.warmup = warmup;
    PLANNER_TRY(auto res, executor::run_real(r.plan, r.program, *r.graph, world, ro));
    return res.step_times_s;
  }
  executor::ReplayOptions ro;
  ro.steps = steps;
  ro.warmup = warmup;
  ro.device = gpu.device;
  ro.device_world = gpu.world;
  PLANNER_TRY(auto res, executor::replay(r.program, r.plan, world, ro));
  return res.step_times_s;
}

}  // namespace planner::cli
