// The step: per-chunk times from the chosen op sharding, ZeRO-3 overlap,
// the pipeline simulation, data-parallel sync and optimizer, FLOPs, memory
// and advice. Design note: include/planner/estimate/estimate.hpp.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "internal.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/estimate/optimizer_bytes.hpp"
#include "planner/sim/pipeline.hpp"

namespace planner::estimate {
namespace {

using graph::OpId;
using graph::TensorId;

double activation_element_bytes(const cost::ComputeContext& ctx) {
  const auto p = ctx.precision().default_precision();
  return (p == cost::Precision::fp32 || p == cost::Precision::tf32) ? 4.0 : 2.0;
}

// Bytes per gradient element reduced over data parallelism.
double grad_reduce_bytes(const ParallelConfig& c, const cost::ComputeContext& ctx) {
  if (c.grad_reduce_bytes > 0) return c.grad_reduce_bytes;
  const auto p = ctx.precision().default_precision();
  if (p == cost::Precision::fp32 || p == cost::Precision::tf32) return 4.0;
  switch (c.framework) {
    case Framework::megatron_legacy:
    case Framework::deepspeed: return p == cost::Precision::fp16 ? 2.0 : 4.0;
    case Framework::megatron:
    case Framework::fsdp:
    case Framework::ddp: return 4.0;
  }
  return 4.0;
}

// ZeRO-3 (and FSDP SHARD_GRAD_OP): weights gathered and gradients
// reduce-scattered per micro-batch.
bool per_micro_batch_sharding(const ParallelConfig& c) {
  return (c.zero >= 3 || (c.zero == 2 && c.framework == Framework::fsdp)) && c.dp * c.cp > 1;
}

// Bytes per parameter element of the gathered (compute) weights.
double gathered_param_bytes(const cost::ComputeContext& ctx) {
  const auto p = ctx.precision().default_precision();
  return (p == cost::Precision::fp32 || p == cost::Precision::tf32) ? 4.0 : 2.0;
}

}  // namespace

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
      if (p == cost::Precision::bf16) return {18.0, false};
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
  }
  return {};
}

namespace {

struct ChunkWork {
  Seconds fwd_comm, bwd_comm;
  Seconds fwd_gemm, bwd_gemm;  // MatMul/Gemm time (what TP overlap can hide behind)
  std::map<std::string, Seconds> comm_kind;  // per micro-batch, fwd + bwd
  double local_params = 0;                   // elements
  int layers = 0;
  /// Local parameter elements per gather unit: one entry per layer (FSDP
  /// flattens each wrapped block into one buffer) or per tensor (DeepSpeed
  /// ZeRO-3 fetches parameters one by one).
  std::map<std::int64_t, double> gather_units;
  /// Under expert parallelism (ep > 1): the experts' share of local_params
  /// (already divided by ep) and their gather units, synchronised over the
  /// expert-data-parallel group instead.
  double expert_params = 0;
  std::map<std::int64_t, double> expert_gather_units;
};

Result<Seconds> dp_collective(const cost::CostModel& model, const detail::Layout& L, const ParallelConfig& c,
                              cluster::Collective kind, Bytes bytes, bool single_ring = false,
                              detail::DataGroup group = detail::DataGroup::data) {
  cluster::Placement where = detail::data_group(L, c, group);
  if (where.ranks <= 1 || bytes.value <= 0) return Seconds(0);
  where.single_ring = single_ring;
  auto t = model.collective(kind, bytes, where);
  if (!t.ok()) return Error{fmt::format("{} group of {} ranks: {}", group == detail::DataGroup::data ? "data-parallel"
                                        : group == detail::DataGroup::expert ? "expert-parallel" : "expert-data-parallel",
                                        where.ranks, t.error().message)};
  return *t;
}

Result<Estimate> estimate_impl(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                               bool advise, const ShardingSolver* solver = nullptr,
                               std::optional<Bytes> state_limit = std::nullopt,
                               std::pair<Bytes, Bytes>* state_bounds = nullptr);

void add_advice(Estimate& e, const graph::OpGraph& g, const cost::CostModel& model, const detail::Layout& L,
                const std::vector<Bytes>& peak_act, const std::vector<double>& in_flight) {
  const Bytes before = e.peak_stage().peak();
  auto consider = [&](std::string change, const std::vector<StageMemory>& after) {
    Bytes worst;
    for (const auto& s : after) worst = std::max(worst, s.peak());
    if (worst >= before) return;
    e.advice.push_back(Advice{std::move(change), before - worst, worst <= e.capacity});
  };
  const auto& c = e.config;
  if (c.zero < 3 && c.dp * c.cp > 1) {
    ParallelConfig z = c;
    z.zero = c.distributed_optimizer && c.zero < 1 ? 2 : c.zero + 1;
    z.distributed_optimizer = false;
    consider(fmt::format("--zero {}", z.zero),
             detail::stage_memory(g, model, z, L, model.context().recompute(), in_flight, peak_act));
  }
  if (model.context().recompute() != cost::RecomputePolicy::full) {
    // Activations scale with the per-chunk bytes under full recompute.
    const auto now = detail::chunk_activations(g, model, L, model.context().recompute());
    const auto full = detail::chunk_activations(g, model, L, cost::RecomputePolicy::full);
    std::vector<Bytes> peak = peak_act;
    for (int r = 0; r < c.pp; ++r) {
      Bytes a, b;
      for (int ch = r; ch < L.chunks; ch += c.pp) {
        a += now[static_cast<std::size_t>(ch)];
        b += full[static_cast<std::size_t>(ch)];
      }
      if (a.value > 0) peak[static_cast<std::size_t>(r)] = peak_act[static_cast<std::size_t>(r)] * (b.value / a.value);
    }
    consider("--recompute full", detail::stage_memory(g, model, c, L, cost::RecomputePolicy::full, in_flight, peak));
  }
  auto try_layout = [&](ParallelConfig alt, const std::string& change) {
    if (!validate(alt).ok()) return;
    auto r = estimate_impl(g, model, alt, false);
    if (r.ok()) consider(change, r->stages);
  };
  if (c.dp % 2 == 0) {
    ParallelConfig t = c;
    t.tp *= 2;
    t.dp /= 2;
    if (t.tp <= c.devices_per_node) try_layout(t, fmt::format("--tp {} --dp {}", t.tp, t.dp));
    ParallelConfig p = c;
    p.pp *= 2;
    p.dp /= 2;
    if (p.pp * p.vp <= L.layers) try_layout(p, fmt::format("--pp {} --dp {}", p.pp, p.dp));
  }
  std::stable_sort(e.advice.begin(), e.advice.end(), [](const Advice& a, const Advice& b) {
    if (a.fits != b.fits) return a.fits;
    return a.saves > b.saves;
  });
}

Result<Estimate> estimate_impl(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                               bool advise, const ShardingSolver* solver, std::optional<Bytes> state_limit,
                               std::pair<Bytes, Bytes>* state_bounds) {
  PLANNER_TRY_STATUS(validate(c));
  PLANNER_TRY(detail::Layout L, detail::build_layout(g, model, c, solver, state_limit));
  if (state_bounds) *state_bounds = {L.state_bound, L.min_state_bound};
  const auto& ctx = model.context();
  const int C = L.chunks, pp = c.pp;
  const std::int64_t m = c.micro_batches();
  const double md = static_cast<double>(m);
  Estimate e;
  e.config = c;
  e.micro_batches = m;
  e.capacity = model.device_memory();
  e.chunks.resize(static_cast<std::size_t>(C));
  std::vector<ChunkWork> work(static_cast<std::size_t>(C));
  const bool full_rc = ctx.recompute() == cost::RecomputePolicy::full;

  // 1. Compute per op at its local shape.
  Flops model_flops_replica, hardware_flops_replica;
  // Compute per op class and chunk, summed in op order as by_class would be
  // (a flash pattern counts as attention), moved into by_class after.
  constexpr std::size_t kClasses = static_cast<std::size_t>(graph::OpClass::other) + 1;
  std::vector<std::array<Seconds, kClasses>> class_time(static_cast<std::size_t>(C));
  std::vector<std::array<bool, kClasses>> class_seen(static_cast<std::size_t>(C));
  for (auto& seen : class_seen) seen.fill(false);
  for (OpId id : L.order) {
    const auto& op = g.op(id);
    const auto ch = static_cast<std::size_t>(L.chunk_of_op[id.value]);
    auto& ct = e.chunks[ch];
    const auto* s = L.strategy_of_op[id.value];
    const auto& t = L.op_times[id.value];
    ct.forward_compute += t.forward;
    ct.backward_compute += t.backward;
    ct.recompute += t.recompute;
    if (t.total().value > 0) {
      const bool flash_pattern = op.fused_group && ctx.attention() == cost::AttentionMode::flash;
      const auto k = static_cast<std::size_t>(flash_pattern ? graph::OpClass::attention : op.op_class);
      class_time[ch][k] += t.total();
      class_seen[ch][k] = true;
    }
    if (op.op_class == graph::OpClass::matmul && !op.fused_group) {
      work[ch].fwd_gemm += t.forward;
      work[ch].bwd_gemm += t.backward + t.recompute;
    }
    const double frac = s ? s->compute_fraction : 1.0;
    const Flops whole = op.cost.forward_flops + op.cost.backward_flops;
    const Flops redo = t.recompute.value > 0 ? op.cost.forward_flops : Flops(0);
    ct.model_flops += whole * frac;
    ct.hardware_flops += (whole + redo) * frac;
    model_flops_replica += whole;
    hardware_flops_replica += whole + redo;
  }
  for (std::size_t ch = 0; ch < static_cast<std::size_t>(C); ++ch)
    for (std::size_t k = 0; k < kClasses; ++k)
      if (class_seen[ch][k])
        e.chunks[ch].by_class[std::string(graph::op_class_name(static_cast<graph::OpClass>(k)))] = class_time[ch][k];
  for (int ch = 0; ch < C; ++ch) {
    e.chunks[static_cast<std::size_t>(ch)].has_embedding = ch == 0;
    e.chunks[static_cast<std::size_t>(ch)].has_head = ch == C - 1;
  }
  {
    // Layers in order of their first op (layers_of numbers them by id).
    const auto index = detail::layers_of(g);
    std::vector<bool> seen(static_cast<std::size_t>(index->layers), false);
    int pos = 0;
    for (OpId id : L.order) {
      const auto& op = g.op(id);
      if (!op.layer || seen[static_cast<std::size_t>(index->pos_of_op[id.value])]) continue;
      seen[static_cast<std::size_t>(index->pos_of_op[id.value])] = true;
      auto& ct = e.chunks[static_cast<std::size_t>(L.chunk_of_op[id.value])];
      if (ct.last_layer < ct.first_layer) ct.first_layer = pos;
      ct.last_layer = pos;
      ++work[static_cast<std::size_t>(L.chunk_of_op[id.value])].layers;
      ++pos;
    }
  }

  // 2. Model-parallel collectives of the chosen sharding, per micro-batch;
  //    gradient syncs over the model-parallel axes once per step.
  std::vector<Seconds> mp_grad_sync(static_cast<std::size_t>(pp));
  const double wire = detail::wire_scale(g, model);
  for (const auto& pc : search::planned_comms(L.lowered, g, L.choice)) {
    // Resharded activations travel at the training precision; op-issued
    // statistics (fp32) and gradient syncs are sized as they are.
    const Seconds t = detail::step_time(model, pc.step, L.mp, pc.source == search::CostTerm::reshard ? wire : 1.0) *
                      static_cast<double>(pc.count);
    const auto& inst = L.lowered.nodes[pc.node].instances;
    const double share = 1.0 / static_cast<double>(inst.size());
    const std::string kind(layout::collective_kind_name(pc.step.kind));
    for (const auto& ops : inst) {
      const auto ch = static_cast<std::size_t>(L.chunk_of_op[ops.front().value]);
      const Seconds ti = t * share;
      if (pc.source == search::CostTerm::grad_sync) {
        mp_grad_sync[ch % static_cast<std::size_t>(pp)] += ti;
        continue;
      }
      auto& w = work[ch];
      if (pc.backward) {
        w.bwd_comm += ti;
        w.comm_kind[kind] += ti;
      } else {
        w.fwd_comm += ti;
        w.comm_kind[kind] += ti;
        if (full_rc) {  // the recomputed forward issues its collectives again
          w.bwd_comm += ti;
          w.comm_kind[kind] += ti;
        }
      }
    }
  }

  // Tensor-parallel overlap: each collective runs in pieces alongside the
  // GEMM next to it (all-gather before the column-parallel GEMM, reduce-
  // scatter after the row-parallel one), so only what exceeds the GEMM time
  // is exposed, and never less than the first piece (10 %).
  if (c.tp_comm_overlap) {
    for (auto& w : work) {
      const auto hide = [](Seconds comm, Seconds gemm) {
        return Seconds(std::max(0.1 * comm.value, comm.value - gemm.value));
      };
      const double f = w.fwd_comm.value > 0 ? hide(w.fwd_comm, w.fwd_gemm).value / w.fwd_comm.value : 1.0;
      const double b = w.bwd_comm.value > 0 ? hide(w.bwd_comm, w.bwd_gemm).value / w.bwd_comm.value : 1.0;
      const double total = w.fwd_comm.value + w.bwd_comm.value;
      const double kept = total > 0 ? (f * w.fwd_comm.value + b * w.bwd_comm.value) / total : 1.0;
      w.fwd_comm = w.fwd_comm * f;
      w.bwd_comm = w.bwd_comm * b;
      for (auto& [k, v] : w.comm_kind) v = v * kept;
    }
  }

  // Expert parallelism: per MoE layer and micro-batch, the routed tokens go
  // to their experts' ranks and come back (two all-to-alls over the ep
  // group, each rank's buffer the local dispatch or combine tensors), and
  // their gradients the same way in the backward (again for the recomputed
  // forward under full recompute). Not overlapped with compute.
  if (c.ep > 1 && L.experts > 0) {
    const auto traffic = detail::expert_traffic(g, L, activation_element_bytes(ctx));
    for (int ch = 0; ch < C; ++ch) {
      const auto& x = traffic[static_cast<std::size_t>(ch)];
      if (x.moe_layers == 0) continue;
      const double per = 1.0 / x.moe_layers;
      PLANNER_TRY(Seconds d, dp_collective(model, L, c, cluster::Collective::all_to_all, x.dispatch * per, false,
                                           detail::DataGroup::expert));
      PLANNER_TRY(Seconds k, dp_collective(model, L, c, cluster::Collective::all_to_all, x.combine * per, false,
                                           detail::DataGroup::expert));
      const Seconds t = (d + k) * static_cast<double>(x.moe_layers);
      auto& w = work[static_cast<std::size_t>(ch)];
      w.fwd_comm += t;
      w.bwd_comm += full_rc ? t * 2.0 : t;
      w.comm_kind["all_to_all"] += full_rc ? t * 3.0 : t * 2.0;
    }
  }

  // Local parameters per chunk (gather units: ZeRO-3 / FSDP only).
  const bool per_mb_sharding = per_micro_batch_sharding(c);
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const auto& t = g.tensor(TensorId{i});
    if (t.role != graph::TensorRole::parameter || !graph::is_floating(t.dtype)) continue;
    e.parameters += t.numel();
    if (t.consumers.empty()) continue;
    const auto& reader = g.op(t.consumers.front());
    const auto ch = static_cast<std::size_t>(L.chunk_of_op[t.consumers.front().value]);
    const bool expert = c.ep > 1 && detail::is_expert_op(L, detail::param_reader(g, TensorId{i}));
    const double local =
        static_cast<double>(t.numel()) * detail::local_fraction(L, g, TensorId{i}) / (expert ? c.ep : 1);
    work[ch].local_params += local;
    if (expert) work[ch].expert_params += local;
    if (!per_mb_sharding) continue;
    const std::int64_t unit = c.framework == Framework::fsdp ? (reader.layer ? *reader.layer : -1)
                                                             : static_cast<std::int64_t>(i) + (1LL << 32);
    (expert ? work[ch].expert_gather_units : work[ch].gather_units)[unit] += local;
  }

  // 3. ZeRO-3 (and FSDP SHARD_GRAD_OP): weights gathered per micro-batch,
  //    gradients reduce-scattered per micro-batch, prefetched alongside
  //    compute; only what exceeds the compute it overlaps is exposed, plus the
  //    first layer's gather of each pass.
  const double grad_bytes = grad_reduce_bytes(c, ctx);
  const double param_bytes = gathered_param_bytes(ctx);
  std::vector<Seconds> fwd_extra(static_cast<std::size_t>(C)), bwd_extra(static_cast<std::size_t>(C));
  std::vector<Seconds> dp_per_mb(static_cast<std::size_t>(C));  // ZeRO-3 traffic per micro-batch
  // DeepSpeed ZeRO-3 (framework `deepspeed`, as of 2021-2022): weights
  // fetched one by one on demand, each fetch waited for (not overlapped;
  // gradient reduce-scatters still overlap the backward), over a single ring
  // (a rank's own share of its node's NICs, not one NCCL channel per NIC).
  // Fitted to and checked on the four ZeRO-3 rows of Megatron SC'21 Table 2
  // (640-2240 A100s, docs/estimate.md); every deepspeed ZeRO-3 run gets it,
  // never one run alone.
  const bool ds_flat = per_mb_sharding && c.zero >= 3 && c.framework == Framework::deepspeed;
  e.parts.chunks.resize(static_cast<std::size_t>(C));
  if (per_mb_sharding) {
    for (int ch = 0; ch < C; ++ch) {
      const auto& w = work[static_cast<std::size_t>(ch)];
      auto& ct = e.chunks[static_cast<std::size_t>(ch)];
      // One collective per gather unit: each pays its own latency (a flat
      // ring over the data-parallel ranks: (n-1) steps).
      Seconds gather, scatter;
      for (const auto& [unit, elems] : w.gather_units) {
        PLANNER_TRY(Seconds ga, dp_collective(model, L, c, cluster::Collective::all_gather, Bytes(elems * param_bytes),
                                              ds_flat));
        PLANNER_TRY(Seconds rs, dp_collective(model, L, c, cluster::Collective::reduce_scatter,
                                              Bytes(elems * grad_bytes), ds_flat));
        gather += ga;
        scatter += rs;
      }
      for (const auto& [unit, elems] : w.expert_gather_units) {
        PLANNER_TRY(Seconds ga, dp_collective(model, L, c, cluster::Collective::all_gather, Bytes(elems * param_bytes),
                                              ds_flat, detail::DataGroup::expert_data));
        PLANNER_TRY(Seconds rs, dp_collective(model, L, c, cluster::Collective::reduce_scatter,
                                              Bytes(elems * grad_bytes), ds_flat, detail::DataGroup::expert_data));
        gather += ga;
        scatter += rs;
      }
      const double units = std::max(1, w.layers);
      const Seconds fwd = ct.forward_compute + w.fwd_comm;
      const Seconds bwd = ct.backward_compute + ct.recompute + w.bwd_comm;
      const Seconds bwd_comm = c.zero >= 3 ? gather + scatter : scatter;
      // The first unit's gather (and the last unit's reduce-scatter) cannot
      // overlap; beyond that only what exceeds the compute shows.
      Seconds fwd_x = Seconds(std::max(gather.value / units, gather.value - fwd.value));
      Seconds bwd_x = Seconds(std::max(scatter.value / units, bwd_comm.value - bwd.value));
      if (ds_flat) {  // weights fetched on demand, waited for; gradient
        // reduce-scatters bucketed behind the backward (overlap_comm)
        fwd_x = gather;
        bwd_x = gather + Seconds(std::max(scatter.value / units, scatter.value - bwd.value));
      }
      dp_per_mb[static_cast<std::size_t>(ch)] = gather + bwd_comm;
      auto& parts = e.parts.chunks[static_cast<std::size_t>(ch)];
      parts.forward_gather = gather;
      parts.backward_gather = c.zero >= 3 ? gather : Seconds(0);
      parts.reduce_scatter = scatter;
      fwd_extra[static_cast<std::size_t>(ch)] = fwd_x;
      bwd_extra[static_cast<std::size_t>(ch)] = bwd_x;
      ct.zero3_exposed = fwd_x + bwd_x;
    }
  }

  // 4. The pipeline: chunks, boundaries, simulated. Each chunk's backward
  //    also holds the framework's gradient accumulation passes over its
  //    local parameters (memory-bound, on the compute stream).
  const auto& dev = ctx.device();
  const double stream_bw = dev.achievable_hbm_bandwidth().value * dev.memory_bound_efficiency(Bytes(1e9));
  const GradPass gpass = grad_pass(c, ctx);
  sim::PipelineProblem prob;
  prob.stages = pp;
  prob.micro_batches = static_cast<int>(m);
  prob.schedule = pp == 1 ? sim::Schedule::one_f_one_b : c.schedule;
  prob.virtual_stages = c.vp;
  const auto act = detail::chunk_activations(g, model, L, ctx.recompute());
  for (int ch = 0; ch < C; ++ch) {
    auto& ct = e.chunks[static_cast<std::size_t>(ch)];
    const auto& w = work[static_cast<std::size_t>(ch)];
    ct.model_parallel_comm = w.fwd_comm + w.bwd_comm;
    auto& parts = e.parts.chunks[static_cast<std::size_t>(ch)];
    parts.forward = ct.forward_compute;
    parts.forward_comm = w.fwd_comm;
    parts.forward_wait = fwd_extra[static_cast<std::size_t>(ch)];
    parts.recompute = ct.recompute;
    parts.backward = ct.backward_compute;
    parts.backward_comm = w.bwd_comm;
    parts.backward_wait = bwd_extra[static_cast<std::size_t>(ch)];
    ct.grad_accumulation = Seconds(w.local_params * gpass.bytes * gpass.share(m) / stream_bw);
    parts.grad_accumulation = ct.grad_accumulation;
    prob.chunks.push_back(sim::ChunkCost{ct.forward_compute + w.fwd_comm + fwd_extra[static_cast<std::size_t>(ch)],
                                         ct.backward_compute + ct.recompute + w.bwd_comm +
                                             bwd_extra[static_cast<std::size_t>(ch)] + ct.grad_accumulation,
                                         act[static_cast<std::size_t>(ch)]});
  }
  if (C > 1) {
    std::vector<Bytes> crossing(static_cast<std::size_t>(C - 1));
    const double eb = activation_element_bytes(ctx);
    for (OpId id : L.order) {
      const auto& op = g.op(id);
      const int from = L.chunk_of_op[id.value];
      for (const auto& out : op.outputs) {
        if (!out) continue;
        const auto& t = g.tensor(*out);
        if (!graph::is_floating(t.dtype) || !t.batch_axis) continue;
        int to = from;
        for (OpId cons : t.consumers) to = std::max(to, L.chunk_of_op[cons.value]);
        const Bytes b(static_cast<double>(t.numel()) * detail::local_fraction(L, g, *out) * eb);
        for (int k = from; k < to; ++k) crossing[static_cast<std::size_t>(k)] += b;
      }
    }
    const auto pp_axis = layout::MeshAxis(0);
    const int same_node = L.full.ranks_per_node(pp_axis) > 1 ? 2 : 1;
    for (int k = 0; k + 1 < C; ++k) {
      Seconds t;
      if (crossing[static_cast<std::size_t>(k)].value > 0) {
        auto r = model.collective(cluster::Collective::send_recv, crossing[static_cast<std::size_t>(k)],
                                  cluster::Placement{2, same_node});
        if (!r.ok()) return Error{fmt::format("pipeline transfer: {}", r.error().message)};
        t = *r;
      }
      prob.boundaries.push_back(sim::BoundaryCost{t, t});
      e.pipeline_p2p = std::max(e.pipeline_p2p, t);
    }
  }

  // 5. After the flush, per rank: data-parallel sync not hidden, optimizer.
  std::vector<Seconds> dp_exposed(static_cast<std::size_t>(pp)), dp_total(static_cast<std::size_t>(pp)),
      opt_time(static_cast<std::size_t>(pp));
  const bool overlapped = c.framework == Framework::megatron || c.framework == Framework::ddp;
  const double optimizer_shards = (c.zero >= 1 || c.distributed_optimizer) ? c.dp * c.cp : 1;
  e.parts.ranks.resize(static_cast<std::size_t>(pp));
  // Expert states are sharded over the dp*cp/ep ranks holding them.
  const double expert_shards = optimizer_shards > 1 ? optimizer_shards / c.ep : 1;
  for (int r = 0; r < pp; ++r) {
    double params = 0, expert_params = 0;
    Seconds bwd_window, fwd_window;
    for (int ch = r; ch < C; ch += pp) {
      params += work[static_cast<std::size_t>(ch)].local_params;
      expert_params += work[static_cast<std::size_t>(ch)].expert_params;
      bwd_window += prob.chunks[static_cast<std::size_t>(ch)].backward;
      fwd_window += prob.chunks[static_cast<std::size_t>(ch)].forward;
    }
    const double dense = params - expert_params;
    opt_time[static_cast<std::size_t>(r)] =
        Seconds((dense / optimizer_shards + expert_params / expert_shards) *
                optimizer_bytes_per_param(c.optimizer, c.optimizer_state_bytes, c.master_weights) / stream_bw);
    if (per_mb_sharding) continue;
    Seconds reduce, gather;
    // Dense gradients over dp*cp; expert gradients over dp*cp/ep (nothing
    // when ep = 1: expert_params is 0).
    for (const auto& [elems, group] : {std::pair{dense, detail::DataGroup::data},
                                       std::pair{expert_params, detail::DataGroup::expert_data}}) {
      const Bytes grads(elems * grad_bytes);
      if (c.zero == 0 && !c.distributed_optimizer) {
        PLANNER_TRY(Seconds ar, dp_collective(model, L, c, cluster::Collective::all_reduce, grads, false, group));
        reduce += ar;
      } else {
        PLANNER_TRY(Seconds rs, dp_collective(model, L, c, cluster::Collective::reduce_scatter, grads, false, group));
        PLANNER_TRY(Seconds ag, dp_collective(model, L, c, cluster::Collective::all_gather, Bytes(elems * param_bytes),
                                              false, group));
        reduce += rs;
        gather += ag;
      }
    }
    dp_total[static_cast<std::size_t>(r)] = reduce + gather;
    auto& rank_tail = e.parts.ranks[static_cast<std::size_t>(r)];
    rank_tail.dp_reduce = rank_tail.dp_reduce_exposed = reduce;
    rank_tail.dp_gather = rank_tail.dp_gather_exposed = gather;
    if (overlapped) {
      // Buckets reduce while the last micro-batch's backward runs; the last
      // bucket (Megatron: 40M parameters) cannot overlap. The parameter
      // all-gather overlaps the next step's first forward.
      const double bucket = std::min(1.0, 40e6 / std::max(1.0, params));
      const Seconds tail = reduce * bucket;
      const Seconds r_exp = Seconds(std::max(tail.value, reduce.value - bwd_window.value));
      const Seconds g_exp = Seconds(std::max(gather.value * bucket, gather.value - fwd_window.value));
      dp_exposed[static_cast<std::size_t>(r)] = r_exp + g_exp;
      rank_tail.dp_reduce_exposed = r_exp;
      rank_tail.dp_gather_exposed = g_exp;
      rank_tail.dp_buckets = static_cast<int>(std::min(64.0, std::ceil(1.0 / bucket)));
    } else {
      dp_exposed[static_cast<std::size_t>(r)] = reduce + gather;
    }
  }
  prob.extra.resize(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    e.parts.ranks[static_cast<std::size_t>(r)].grad_sync = mp_grad_sync[static_cast<std::size_t>(r)];
    e.parts.ranks[static_cast<std::size_t>(r)].optimizer = opt_time[static_cast<std::size_t>(r)];
    prob.extra[static_cast<std::size_t>(r)] = dp_exposed[static_cast<std::size_t>(r)] +
                                              opt_time[static_cast<std::size_t>(r)] +
                                              mp_grad_sync[static_cast<std::size_t>(r)];
  }
  sim::SimulateOptions so;
  so.timeline = false;
  PLANNER_TRY(sim::PipelineResult res, sim::simulate(prob, so));
  e.step_time = res.step_time;
  e.parts.problem = prob;

  // The breakdown is the bottleneck device's: the one with the most work
  // (its compute and collectives), the rest of the step being its bubble.
  auto busy_of = [&](int r) {
    Seconds b;
    for (int ch = r; ch < C; ch += pp)
      b += (prob.chunks[static_cast<std::size_t>(ch)].forward + prob.chunks[static_cast<std::size_t>(ch)].backward) * md;
    return b;
  };
  int crit = 0;
  for (int r = 1; r < pp; ++r)
    if (busy_of(r).value > busy_of(crit).value) crit = r;
  const Seconds busy = busy_of(crit);
  for (int ch = crit; ch < C; ch += pp) {
    const auto& ct = e.chunks[static_cast<std::size_t>(ch)];
    const auto& w = work[static_cast<std::size_t>(ch)];
    e.compute += (ct.forward_compute + ct.backward_compute) * md;
    e.recompute += ct.recompute * md;
    e.zero3_exposed += ct.zero3_exposed * md;
    e.grad_accumulation += ct.grad_accumulation * md;
    for (const auto& [k, v] : ct.by_class) e.compute_by_class[k] += v * md;
    for (const auto& [k, v] : w.comm_kind) e.model_parallel.by_kind[k] += v * md;
  }
  if (mp_grad_sync[static_cast<std::size_t>(crit)].value > 0)
    e.model_parallel.by_kind["grad_sync"] += mp_grad_sync[static_cast<std::size_t>(crit)];
  e.bubble = Seconds(std::max(0.0, e.step_time.value - busy.value - prob.extra[static_cast<std::size_t>(crit)].value));
  e.dp_exposed = dp_exposed[static_cast<std::size_t>(crit)];
  e.dp_total = dp_total[static_cast<std::size_t>(crit)];
  if (per_mb_sharding)
    for (int ch = crit; ch < C; ch += pp) e.dp_total += dp_per_mb[static_cast<std::size_t>(ch)] * md;
  e.optimizer = opt_time[static_cast<std::size_t>(crit)];

  // FLOPs and utilisation (model FLOPs: the graph's forward + backward).
  const double replicas = static_cast<double>(c.dp) * md;
  e.model_flops = model_flops_replica * replicas;
  e.hardware_flops = hardware_flops_replica * replicas;
  const double per_device_s = e.step_time.value * c.devices;
  if (per_device_s > 0) {
    e.model_tflops_per_device = e.model_flops.value / per_device_s / 1e12;
    e.hardware_tflops_per_device = e.hardware_flops.value / per_device_s / 1e12;
    e.mfu = e.model_tflops_per_device * 1e12 / model.peak().value;
    e.hfu = e.hardware_tflops_per_device * 1e12 / model.peak().value;
  }

  // 6. Memory per pipeline rank.
  std::vector<double> in_flight(static_cast<std::size_t>(pp));
  std::vector<Bytes> peak_act(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    in_flight[static_cast<std::size_t>(r)] =
        static_cast<double>(res.devices[static_cast<std::size_t>(r)].peak_in_flight) / c.vp;
    peak_act[static_cast<std::size_t>(r)] = res.devices[static_cast<std::size_t>(r)].peak_activation;
  }
  e.stages = detail::stage_memory(g, model, c, L, ctx.recompute(), in_flight, peak_act);
  e.fits = std::all_of(e.stages.begin(), e.stages.end(), [&](const StageMemory& s) { return s.peak() <= e.capacity; });
  e.sharding = search::describe_plan(L.lowered, L.choice);
  e.model_mesh = L.mp;
  e.speed_of_light = Seconds(e.model_flops.value / (model.peak().value * c.devices));
  e.chunk_ops.resize(static_cast<std::size_t>(C));
  for (OpId id : L.order) e.chunk_ops[static_cast<std::size_t>(L.chunk_of_op[id.value])].push_back(g.op(id).name);
  {
    const auto comms = search::planned_comms(L.lowered, g, L.choice);
    for (std::size_t n = 0; n < L.lowered.nodes.size(); ++n) {
      const auto& node = L.lowered.nodes[n];
      const auto& s = search::chosen(L.lowered, L.choice, n);
      UnitStrategy u;
      u.unit = g.op(node.instances.front().front()).name;
      for (const auto& inst : node.instances) u.instances.push_back(g.op(inst.front()).name);
      for (OpId id : node.instances.front()) u.ops.push_back(g.op(id).name);
      u.family = node.sharding.spec.family;
      u.strategy = s.name;
      u.assignment = s.assignment;
      for (const auto& l : s.inputs) u.inputs.push_back(l ? layout::to_string(*l, L.mp) : std::string());
      for (const auto& l : s.outputs) u.outputs.push_back(l ? layout::to_string(*l, L.mp) : std::string());
      for (const auto& pc : comms) {
        if (pc.node != n) continue;
        const bool per_step = pc.source == search::CostTerm::grad_sync;
        UnitCollective uc;
        uc.kind = std::string(layout::collective_kind_name(pc.step.kind));
        uc.axis = L.mp.name(pc.step.axis);
        uc.group_size = pc.step.group_size;
        uc.bytes = pc.step.bytes * (pc.source == search::CostTerm::reshard ? wire : 1.0);
        uc.count = pc.count;
        uc.backward = pc.backward;
        uc.per_step = per_step;
        uc.where = pc.where;
        u.collectives.push_back(std::move(uc));
      }
      e.units.push_back(std::move(u));
    }
  }
  if (!L.exact) e.notes.push_back("op-level sharding: the solver's beam cut candidates; the choice may not be optimal");
  if (c.ep > 1 && L.experts == 0)
    e.notes.push_back(fmt::format("--ep {}: the model has no experts (no op named experts.<n>); it changes nothing", c.ep));
  if (advise && !e.fits) add_advice(e, g, model, L, peak_act, in_flight);
  return e;
}

}  // namespace

Result<Estimate> estimate(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& config,
                          bool advise, const ShardingSolver* solver) {
  std::pair<Bytes, Bytes> bounds;  // the choice's state bound, and the least any choice has
  auto first = estimate_impl(g, model, config, advise, solver, std::nullopt, &bounds);
  if (!first.ok() || first->fits) return first;
  const Bytes bound = bounds.first;
  // The op-level search bounds model state summed over the stages (the
  // embedding and head counted pp times); activations and a stage holding
  // more than its share can still overflow one device. Solve once more with
  // the bound cut by that overflow on every stage; keep that choice only if
  // it then fits (a tighter bound can only trade time for memory).
  const Bytes over = first->peak_stage().peak() - first->capacity;
  const Bytes limit = bound - over * static_cast<double>(config.pp);
  // No choice of op strategies holds that little: the layout cannot fit.
  if (limit < bounds.second) return first;
  auto second = estimate_impl(g, model, config, /*advise=*/false, solver, limit);  // kept only if it fits
  if (second.ok() && second->fits) return second;
  return first;
}

}  // namespace planner::estimate
