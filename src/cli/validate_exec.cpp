// One plan made ready on this rank and timed once, for planner validate
// (validate_exec.hpp). The same steps as `planner run`'s prepare and its
// two modes, without the files, checks and printing.

#include "planner/cli/validate_exec.hpp"

#include "planner/estimate/config.hpp"
#include "planner/executor/real.hpp"
#include "planner/executor/replay.hpp"
#include "planner/onnx/importer.hpp"

namespace planner::cli {

Result<ExecMode> parse_exec_mode(const std::string& text) {
  if (text == "auto") return ExecMode::automatic;
  if (text == "real") return ExecMode::real;
  if (text == "replay") return ExecMode::replay;
  return make_error("--mode '{}' is not auto, real or replay", text);
}

Result<Runnable> prepare_runnable(const plan::Plan& p, const std::string& model, int rank, ExecMode mode) {
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
    if (auto st = executor::real_supported(p, imported.graph); !st) {
      if (mode == ExecMode::real) return st.error();
      out.why_replay = st.error().message;
    } else {
      out.real = true;
      out.graph = std::make_unique<graph::OpGraph>(std::move(imported.graph));
    }
  }
  return out;
}

Result<std::vector<double>> run_once(const Runnable& r, runtime::Communicator& world, int steps, int warmup) {
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
  PLANNER_TRY(auto res, executor::replay(r.program, r.plan, world, ro));
  return res.step_times_s;
}

}  // namespace planner::cli
