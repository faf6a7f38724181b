// The real execution mode (include/planner/executor/real.hpp,
// docs/executor.md "Real mode and --check").

#include "planner/executor/real.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include <fmt/format.h>

#include "planner/executor/replay.hpp"
#include "planner/ops/recompute.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "real_check.hpp"
#include "real_data.hpp"
#include "real_runner.hpp"
#include "real_tp.hpp"

namespace planner::executor {

namespace {

using graph::OpGraph;
using graph::TensorId;
using namespace real_detail;  // NOLINT: the module's own helpers

constexpr int kTagCheck = 5;

}  // namespace

runtime_cpu::InterpreterOptions real_interpreter_options(const plan::Plan& p) {
  return {.seed = p.training.seed, .stddev = kStddev};
}

runtime_cpu::OptimizerConfig real_optimizer(const plan::Plan& p) { return optimizer_of(p.training.optimizer); }

Status real_supported(const plan::Plan& p, const graph::OpGraph& g) {
  const auto& l = p.layout;
  const auto no = [&](std::string_view what) {
    return make_error("the real mode cannot run {} yet (it runs data, tensor and pipeline parallelism, ZeRO "
                      "0-3, recomputation and context parallelism without tp); --replay can time this plan",
                      what);
  };
  if (l.cp > 1 && l.tp > 1)
    return no(fmt::format("context parallelism with tensor parallelism (layout.cp = {}, layout.tp = {})", l.cp, l.tp));
  if (l.ep > 1) return no(fmt::format("expert parallelism (layout.ep = {})", l.ep));
  if (p.model.batch && *p.model.batch != p.training.micro_batch)
    return make_error("model.batch {} differs from training.micro_batch {}: the real mode runs the graph as one "
                      "micro-batch",
                      *p.model.batch, p.training.micro_batch);
  if (!ops::parse_recompute(p.training.recompute))
    return make_error("training.recompute '{}' is none of none, selective, full", p.training.recompute);
  for (const auto& op : g.ops())
    if (auto st = runtime_cpu::check_supported(op); !st)
      return make_error("the real mode cannot run {}; --replay can time this plan", st.error().message);
  const auto chunk_of = chunk_of_ops(p, g);
  for (std::size_t o = 0; o < g.num_ops(); ++o)
    if (chunk_of[o] < 0) return make_error("op '{}' of the model is in no chunk of layout.chunks", g.ops()[o].name);
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const auto& t = g.tensor(TensorId{i});
    if (t.producer) continue;
    if (t.role == graph::TensorRole::parameter) {
      if (t.dtype != core::DType::f32)
        return make_error("parameter '{}' is {}: the real mode trains fp32 only", t.name, core::dtype_name(t.dtype));
    } else if (t.role == graph::TensorRole::input && !t.values) {
      if (t.shape.empty() && l.dp * p.training.micro_batches > 1)
        return make_error("graph input '{}' is a scalar: the real mode splits inputs along their first axis", t.name);
      if (!core::is_floating(t.dtype) && !runtime_cpu::index_bound(g, TensorId{i}))
        return make_error("integer input '{}' indexes no Gather table or loss classes, so its range is unknown",
                          t.name);
    }
  }
  if (l.tp > 1) PLANNER_TRY_STATUS(derive_tp_layout(p, g));
  if (l.cp > 1) PLANNER_TRY_STATUS(derive_cp_layout(p, g));
  return Status::success();
}


namespace real_detail {

Status Runner::init() {
  const auto& l = p_.layout;
  rank_ = world_.rank();
  dp_ = l.dp;
  M_ = static_cast<int>(p_.training.micro_batches);
  C_ = static_cast<int>(l.chunks.size());
  pp_rank_ = coordinate(p_, rank_, "pp");
  dp_rank_ = coordinate(p_, rank_, "dp");
  // The group sharing an op's work: tp, or cp (the sequence; tp = 1).
  shard_axis_ = l.cp > 1 ? "cp" : "tp";
  tp_rank_ = coordinate(p_, rank_, shard_axis_);
  if (l.cp > 1) {
    PLANNER_TRY(tpl_, derive_cp_layout(p_, g_));
  } else {
    PLANNER_TRY(tpl_, derive_tp_layout(p_, g_));
  }
  tp_.emplace(tpl_, g_, tp_rank_, &world_);  // its group comes in init_groups, after the dp group
  seed_ = p_.training.seed;
  PLANNER_TRY_STATUS(init_graph());
  init_boundaries();
  init_parameters();
  PLANNER_TRY_STATUS(init_groups());
  inputs_ = draw_global_inputs(g_, seed_, static_cast<std::int64_t>(dp_) * M_);
  return Status::success();
}

}  // namespace real_detail

namespace {

// --check after a step: every stage's dp-rank-0 member sends its whole state
// to rank 0, which steps the reference from it and compares. Returns whether
// the check failed (on every rank; rank 0 records why in `out`).
Result<bool> check_step(const plan::Plan& p, const graph::OpGraph& micro_graph, runtime::Communicator& world,
                        Runner& run, const std::vector<std::vector<TensorId>>& stage_params,
                        std::optional<Reference>& ref, int step, double tolerance, RealResult& out) {
  const int rank = world.rank();
  std::vector<float> grad, w;
  PLANNER_TRY_STATUS(run.full_state(grad, w));
  std::vector<std::vector<float>> stage_grad(static_cast<std::size_t>(p.layout.pp)), stage_w = stage_grad;
  if (rank == 0) {
    stage_grad[0] = grad, stage_w[0] = w;
    for (int s = 1; s < p.layout.pp; ++s) {
      std::int64_t n = 0;
      for (auto id : stage_params[static_cast<std::size_t>(s)]) n += micro_graph.tensor(id).numel();
      const int src = with_coordinate(p, 0, "pp", s);
      auto& sg = stage_grad[static_cast<std::size_t>(s)];
      auto& sw = stage_w[static_cast<std::size_t>(s)];
      sg.resize(static_cast<std::size_t>(n)), sw.resize(static_cast<std::size_t>(n));
      PLANNER_TRY_STATUS(world.recv(sg.data(), sg.size(), core::DType::f32, src, kTagCheck));
      PLANNER_TRY_STATUS(world.recv(sw.data(), sw.size(), core::DType::f32, src, kTagCheck));
    }
  } else if (run.dp_rank() == 0 && coordinate(p, rank, "tp") == 0 && coordinate(p, rank, "cp") == 0) {
    std::int64_t n = 0;
    for (auto id : stage_params[static_cast<std::size_t>(run.pp_rank())]) n += micro_graph.tensor(id).numel();
    PLANNER_TRY_STATUS(world.send(grad.data(), static_cast<std::size_t>(n), core::DType::f32, 0, kTagCheck));
    PLANNER_TRY_STATUS(world.send(w.data(), static_cast<std::size_t>(n), core::DType::f32, 0, kTagCheck));
  }
  float verdict = 0;
  if (rank == 0) {
    // The reference's step from the run's weights, its optimizer on the
    // run's gradients; then the next step starts from the run's weights.
    PLANNER_TRY(auto r, ref->step(by_name(micro_graph, stage_params, stage_grad)));
    CheckedStep cs;
    const std::string failure =
        compare_step(p, micro_graph, stage_params, stage_grad, stage_w, r, step, out.losses.back(), tolerance, cs);
    out.checked.push_back(cs);
    if (!failure.empty()) {
      out.check_failure = failure;
      verdict = 1;
    } else {
      PLANNER_TRY_STATUS(ref->sync(by_name(micro_graph, stage_params, stage_w)));
    }
  }
  PLANNER_TRY_STATUS(world.broadcast(&verdict, 1, core::DType::f32, 0));
  return verdict != 0;
}

// Peak RSS and peak activations of every rank (as the replay reports it),
// the recomputed work of the last step summed over ranks.
Status gather_totals(runtime::Communicator& world, const Runner& run, RealResult& out) {
  float mine[2] = {static_cast<float>(peak_rss_bytes()), static_cast<float>(run.peak_held_bytes())};
  std::vector<float> all(2 * static_cast<std::size_t>(world.size()));
  PLANNER_TRY_STATUS(world.all_gather(mine, all.data(), 2, core::DType::f32));
  for (std::size_t r = 0; r < all.size(); r += 2) {
    out.peak_rss_bytes.push_back(all[r]);
    out.peak_activation_bytes.push_back(all[r + 1]);
  }
  // (doubles gathered as their raw bits, two f32 words each: exact sums)
  const double work[2] = {run.recomputed_ops(), run.recomputed_flops()};
  std::vector<double> works(2 * static_cast<std::size_t>(world.size()));
  PLANNER_TRY_STATUS(world.all_gather(work, works.data(), 4, core::DType::f32));
  for (std::size_t r = 0; r < works.size(); r += 2) {
    out.recomputed_ops_per_step += works[r];
    out.recomputed_flops_per_step += works[r + 1];
  }
  return Status::success();
}

}  // namespace

Result<RealResult> run_real(const plan::Plan& p, const RankProgram& prog, const graph::OpGraph& micro_graph,
                            runtime::Communicator& world, const RealOptions& opts) {
  PLANNER_TRY_STATUS(real_supported(p, micro_graph));
  const int rank = world.rank();
  const bool checking = opts.check && rank == 0;
  std::optional<Reference> ref;
  if (checking) {
    PLANNER_TRY(auto it, runtime_cpu::Interpreter::create(micro_graph, {.seed = p.training.seed, .stddev = kStddev}));
    ref.emplace(std::move(it), p, micro_graph);
  }
  Runner run(p, prog, micro_graph, world);
  PLANNER_TRY_STATUS(run.init());
  // Every stage's parameters, for rank 0 to read the gathered state.
  std::vector<std::vector<TensorId>> stage_params;
  for (int s = 0; s < p.layout.pp; ++s) stage_params.push_back(stage_parameters(p, micro_graph, run.chunk_of(), s));
  const double chunks = static_cast<double>(p.layout.dp) * static_cast<double>(p.training.micro_batches);

  RealResult out;
  const int total = opts.warmup + opts.steps;
  for (int step = 1; step <= total; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    double local_loss = 0;
    PLANNER_TRY_STATUS(run.step(local_loss));
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The step's loss (mean over the global batch) and time (max over ranks).
    float loss = run.holds_loss() ? static_cast<float>(local_loss) : 0.0f;
    PLANNER_TRY_STATUS(world.all_reduce(&loss, 1, core::DType::f32, runtime::ReduceOp::sum));
    // The step time and its components (RealPhase, then the rest), max over ranks.
    std::array<float, kRealPhases + 2> times{};
    times[0] = static_cast<float>(dt);
    double booked = 0;
    for (std::size_t i = 0; i < kRealPhases; ++i) {
      times[i + 1] = static_cast<float>(run.phase_s()[i]);
      booked += run.phase_s()[i];
    }
    times[kRealPhases + 1] = static_cast<float>(std::max(0.0, dt - booked));
    PLANNER_TRY_STATUS(world.all_reduce(times.data(), times.size(), core::DType::f32, runtime::ReduceOp::max));
    out.losses.push_back(static_cast<double>(loss) / chunks);
    if (step > opts.warmup) {
      out.step_times_s.push_back(times[0]);
      for (std::size_t i = 0; i + 1 < times.size(); ++i)
        out.components_s[std::string(kRealComponentNames[i])] += times[i + 1] / static_cast<double>(opts.steps);
    }
    if (!opts.check || step > kMaxCheckedSteps) continue;
    PLANNER_TRY(const bool failed, check_step(p, micro_graph, world, run, stage_params, ref, step, opts.tolerance, out));
    if (failed) {
      if (out.check_failure.empty()) out.check_failure = "--check failed (rank 0 prints why)";
      return out;
    }
  }
  PLANNER_TRY_STATUS(gather_totals(world, run, out));
  return out;
}

}  // namespace planner::executor
