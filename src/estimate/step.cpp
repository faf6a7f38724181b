// The step: the resolved layout worked through the steps of step_work.hpp
// (compute, model-parallel collectives, ZeRO-3 fetches, the pipeline,
// data-parallel sync and optimizer, memory), the byte counts they share,
// and advice. Design note: include/planner/estimate/estimate.hpp.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "planner/estimate/estimate.hpp"
#include "planner/estimate/optimizer_bytes.hpp"
#include "planner/graph/analysis.hpp"
#include "step_work.hpp"

namespace planner::estimate {
namespace detail {

double activation_element_bytes(const cost::ComputeContext& ctx) {
  const auto p = ctx.precision().default_precision();
  return (p == core::Precision::fp32 || p == core::Precision::tf32) ? 4.0 : 2.0;
}

double grad_reduce_bytes(const ParallelConfig& c, const cost::ComputeContext& ctx) {
  if (c.grad_reduce_bytes > 0) return c.grad_reduce_bytes;
  const auto p = ctx.precision().default_precision();
  if (p == core::Precision::fp32 || p == core::Precision::tf32) return 4.0;
  switch (c.framework) {
    case Framework::megatron_legacy:
    case Framework::deepspeed: return p == core::Precision::fp16 ? 2.0 : 4.0;
    case Framework::megatron:
    case Framework::fsdp:
    case Framework::ddp:
    case Framework::executor: return 4.0;
  }
  return 4.0;
}

bool per_micro_batch_sharding(const ParallelConfig& c) {
  return (c.zero >= 3 || (c.zero == 2 && c.framework == Framework::fsdp)) && c.dp * c.cp > 1;
}

double gathered_param_bytes(const cost::ComputeContext& ctx) {
  const auto p = ctx.precision().default_precision();
  return (p == core::Precision::fp32 || p == core::Precision::tf32) ? 4.0 : 2.0;
}

Result<Seconds> dp_collective(const cost::CostModel& model, const Layout& L, const ParallelConfig& c,
                              core::Collective kind, Bytes bytes, bool single_ring, DataGroup group) {
  core::Placement where = data_group(L, c, group);
  if (where.ranks <= 1 || bytes.value <= 0) return Seconds(0);
  where.single_ring = single_ring;
  auto t = model.collective(kind, bytes, where);
  if (!t.ok()) return Error{fmt::format("{} group of {} ranks: {}", group == DataGroup::data ? "data-parallel"
                                        : group == DataGroup::expert ? "expert-parallel" : "expert-data-parallel",
                                        where.ranks, t.error().message)};
  return *t;
}

StepWork::StepWork(const graph::OpGraph& graph, const cost::CostModel& cost_model, const ParallelConfig& config,
                   Layout layout, bool with_timeline, bool with_description)
    : g(graph), model(cost_model), c(config), L(std::move(layout)), ctx(cost_model.context()), C(L.chunks), pp(c.pp),
      m(c.micro_batches()), md(static_cast<double>(m)), full_rc(ctx.recompute() == cost::RecomputePolicy::full),
      timeline(with_timeline), describe(with_description) {
  e.config = c;
  e.micro_batches = m;
  e.capacity = model.device_memory();
  e.memory_margin = model.memory_margin();
  e.chunks.resize(static_cast<std::size_t>(C));
  work.resize(static_cast<std::size_t>(C));
}

}  // namespace detail

using detail::gathered_param_bytes;
using detail::grad_reduce_bytes;
using detail::per_micro_batch_sharding;

// Bytes the optimizer step streams through HBM per local parameter: Adam
// reads and writes the fp32 master weight, m and v (24 B), reads the fp32
// gradient (4 B), writes the 16-bit weight (2 B); the gradient-norm pass
// reads the gradient again and zeroing writes it (8 B): 38 B. SGD with
// momentum: 8 + 8 + 4 + 2 + 8 = 30 B; plain SGD: 8 + 4 + 2 + 8 = 22 B.
// States of s bytes move 2 s each; a 16-bit master remainder is read and
// written with the weight (2 x (2 + 2) = 8 B instead of 8 + 2); without a
// master copy the 16-bit weight itself is read and written (4 B).
double optimizer_bytes_per_param(cost::Optimizer o, double state_bytes, cost::MasterWeights master) {
  const double states = cost::state_elements(o);
  const double weight = master == cost::MasterWeights::fp32 ? 8.0 + 2.0
                        : master == cost::MasterWeights::remainder ? 8.0
                                                                   : 4.0;
  return weight + 2.0 * state_bytes * states + 12.0;
}

double framework_gradient_bytes(const ParallelConfig& c, core::Precision training) {
  return c.framework == Framework::deepspeed && training == core::Precision::bf16 ? 2.0 : 0.0;
}

// The gradient accumulation passes (optimizer_bytes.hpp): on the compute
// stream, or racing it for SMs and HBM (FSDP's post-backward stream).
GradPass grad_pass(const ParallelConfig& c, const cost::ComputeContext& ctx) {
  const auto p = ctx.precision().default_precision();
  const double pb = gathered_param_bytes(ctx);  // the compute copy's (and its gradient's) bytes
  switch (c.framework) {
    case Framework::fsdp: {
      // PyTorch FSDP's post-backward hook (torch/distributed/fsdp/
      // _runtime_utils.py, 2.x), per FSDP unit and micro-batch: autograd
      // assembles the flat gradient from the views' gradients (the backward
      // of torch.split is a cat: read + write in the parameter dtype), casts
      // it to the reduce dtype when that differs (read pb + write rb), and
      // pre-divides it before the reduce-scatter (read + write in rb).
      if (!per_micro_batch_sharding(c)) return {};
      const double rb = grad_reduce_bytes(c, ctx);
      double b = 2.0 * pb + 2.0 * rb;
      if (rb != pb) b += pb + rb;
      return {b, false};
    }
    case Framework::deepspeed:
      // ZeRO-2/3 (contiguous_gradients, the default): each gradient is
      // copied into the reduction bucket by its backward hook
      // (runtime/zero/stage2.py and stage3.py: ipg_buffer.narrow(...).copy_(
      // param.grad)): read + write in the gradient's dtype.
      if (c.zero >= 2) return {2.0 * pb, false};
      // DeepSpeed's BF16_Optimizer (runtime/bf16_optimizer.py,
      // update_hp_grads, called after every backward by the pipeline
      // engine): hp_grad.add_(lp_grad.to(fp32)): the cast reads 2 and writes
      // 4 B, the add reads 4 + 4 and writes 4 B.
      if (p == core::Precision::bf16) return {18.0, false};
      // fp16 (and fp32) ZeRO-0/1: autograd accumulates each further
      // micro-batch into .grad in place (read both, write one).
      return {3.0 * pb, true};
    case Framework::ddp:
      // PyTorch DDP under AMP keeps fp32 parameters and gradients; autograd
      // accumulates micro-batches after the first in place (no_sync).
      return {3.0 * 4.0, true};
    case Framework::megatron_legacy:
      // Megatron-LM's local DDP before gradient-accumulation fusion (added
      // Feb 2022, and only with fp32 accumulation; the SC'21 scripts predate
      // it): a hook per parameter runs main_grad.add_(grad) after every
      // backward (megatron/model/distributed.py): read the 16-bit gradient
      // and the main gradient, write the main gradient.
      return {pb + 2.0 * grad_reduce_bytes(c, ctx), false};
    case Framework::megatron:
      // Megatron-Core's gradient-accumulation fusion: the weight-gradient
      // GEMM accumulates into main_grad in its epilogue; no separate pass.
      return {};
    case Framework::executor:
      // planner's executor (src/executor/real_compute.cpp,
      // accumulate_parameter_grads): every micro-batch's fp32 parameter
      // gradients are added into the step's zeroed buffer (read both, write
      // one), the first micro-batch's too.
      return {3.0 * 4.0, false};
  }
  return {};
}

namespace {

Result<Estimate> estimate_impl(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                               const EstimateOptions& options, std::optional<Bytes> state_limit = std::nullopt,
                               std::pair<Bytes, Bytes>* state_bounds = nullptr);

void add_advice(Estimate& e, const graph::OpGraph& g, const cost::CostModel& model, const detail::Layout& L,
                const std::vector<Bytes>& peak_act, const std::vector<double>& in_flight) {
  // Advice is about what must fit: the allocated peak (without the
  // allocator's fragmentation, which it frees and retries before failing).
  const Bytes before = e.peak_stage().allocated();
  auto consider = [&](std::string change, const std::vector<StageMemory>& after) {
    Bytes worst;
    for (const auto& s : after) worst = std::max(worst, s.allocated());
    if (worst >= before) return;
    e.advice.push_back(Advice{std::move(change), before - worst, worst <= e.capacity});
  };
  const auto& c = e.config;
  if (c.zero < 3 && c.dp * c.cp > 1) {
    ParallelConfig z = c;
    z.zero = c.distributed_optimizer && c.zero < 1 ? 2 : c.zero + 1;
    z.distributed_optimizer = false;
    consider(fmt::format("`zero` {}", z.zero),
             detail::stage_memory(g, model, z, L, model.context().recompute(), in_flight, peak_act));
  }
  // Another recompute (from none or selective): activations held at the
  // peak scale with the per-chunk bytes of one micro-batch.
  const auto rc = model.context().recompute();
  if (rc != cost::RecomputePolicy::full) {
    const auto held = detail::chunk_activations(g, model, L, rc);
    auto consider_recompute = [&](std::string change, cost::RecomputePolicy policy,
                                  std::optional<cost::RecomputeModules> modules) {
      const auto then = detail::chunk_activations(g, model, L, policy, modules);
      std::vector<Bytes> peak = peak_act;
      for (int r = 0; r < c.pp; ++r) {
        Bytes a, b;
        for (int ch = r; ch < L.chunks; ch += c.pp) {
          a += held[static_cast<std::size_t>(ch)];
          b += then[static_cast<std::size_t>(ch)];
        }
        if (a.value > 0) peak[static_cast<std::size_t>(r)] = peak_act[static_cast<std::size_t>(r)] * (b.value / a.value);
      }
      consider(std::move(change), detail::stage_memory(g, model, c, L, policy, in_flight, peak, modules));
    };
    consider_recompute("`recompute` full", cost::RecomputePolicy::full, std::nullopt);
    // A model with experts: Megatron's MoE modules (selective recompute of
    // the experts' activation and the pre-MLP norms), where not already on.
    const auto current = model.context().recompute_modules();
    cost::RecomputeModules with = cost::RecomputeModules::moe(false);
    if (rc == cost::RecomputePolicy::selective) with.bits = static_cast<std::uint8_t>(with.bits | current.bits);
    if (graph::has_expert_activations(g) && !(rc == cost::RecomputePolicy::selective && with == current))
      consider_recompute(fmt::format("`recompute` selective `recompute_modules` {}", with.text()),
                         cost::RecomputePolicy::selective, with);
  }
  auto try_layout = [&](ParallelConfig alt, const std::string& change) {
    if (!validate(alt).ok()) return;
    auto r = estimate_impl(g, model, alt, EstimateOptions{.advise = false});
    if (r.ok()) consider(change, r->stages);
  };
  if (c.dp % 2 == 0) {
    ParallelConfig t = c;
    t.tp *= 2;
    t.dp /= 2;
    if (t.tp <= c.devices_per_node) try_layout(t, fmt::format("`tp` {} `dp` {}", t.tp, t.dp));
    ParallelConfig p = c;
    p.pp *= 2;
    p.dp /= 2;
    if (p.pp * p.vp <= L.layers) try_layout(p, fmt::format("`pp` {} `dp` {}", p.pp, p.dp));
  }
  std::stable_sort(e.advice.begin(), e.advice.end(), [](const Advice& a, const Advice& b) {
    if (a.fits != b.fits) return a.fits;
    return a.saves > b.saves;
  });
}

Result<Estimate> estimate_impl(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                               const EstimateOptions& options, std::optional<Bytes> state_limit,
                               std::pair<Bytes, Bytes>* state_bounds) {
  PLANNER_TRY_STATUS(validate(c));
  PLANNER_TRY(detail::Layout layout, detail::build_layout(g, model, c, options.solver, state_limit, options.lowering_cache));
  if (state_bounds) *state_bounds = {layout.state_bound, layout.min_state_bound};
  detail::StepWork s(g, model, c, std::move(layout), options.timeline, options.describe);
  detail::add_compute(s);                                  // 1.
  PLANNER_TRY_STATUS(detail::add_model_parallel_comm(s));  // 2.
  detail::count_local_parameters(s);                       // 3.
  PLANNER_TRY_STATUS(detail::add_sharded_fetches(s));
  PLANNER_TRY_STATUS(detail::add_pipeline(s));             // 4.
  PLANNER_TRY_STATUS(detail::add_data_parallel(s));        // 5.
  PLANNER_TRY_STATUS(detail::simulate_step(s));
  detail::add_memory_and_units(s);                         // 6.
  if (options.advise && !s.e.fits) add_advice(s.e, g, model, s.L, s.peak_act, s.in_flight);
  return std::move(s.e);
}

}  // namespace

Result<Estimate> estimate(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& config,
                          bool advise, const ShardingSolver* solver) {
  return estimate(g, model, config, EstimateOptions{.advise = advise, .solver = solver});
}

Result<Estimate> estimate(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& config,
                          const EstimateOptions& options) {
  std::pair<Bytes, Bytes> bounds;  // the choice's state bound, and the least any choice has
  auto first = estimate_impl(g, model, config, options, std::nullopt, &bounds);
  if (!first.ok() || first->fits) return first;
  const Bytes bound = bounds.first;
  // The op-level search bounds model state summed over the stages (the
  // embedding and head counted pp times); activations and a stage holding
  // more than its share can still overflow one device. Solve once more with
  // the bound cut by that overflow on every stage; keep that choice only if
  // it then fits (a tighter bound can only trade time for memory).
  const Bytes over = first->peak_stage().allocated() - first->capacity;
  const Bytes limit = bound - over * static_cast<double>(config.pp);
  // No choice of op strategies holds that little: the layout cannot fit.
  if (limit < bounds.second) return first;
  EstimateOptions again = options;
  again.advise = false;
  auto second = estimate_impl(g, model, config, again, limit);  // kept only if it fits
  if (second.ok() && second->fits) return second;
  return first;
}

}  // namespace planner::estimate
