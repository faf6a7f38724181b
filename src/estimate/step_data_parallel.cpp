// Step 5 of the estimate (step_work.hpp): after the flush, per pipeline
// rank, the data-parallel sync not hidden and the optimizer; the pipeline
// simulated; the bottleneck device's breakdown; FLOPs and utilisation.

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "planner/cost/optimizer_time.hpp"
#include "planner/estimate/straggler.hpp"
#include "step_work.hpp"

namespace planner::estimate::detail {

using graph::OpId;
using graph::TensorId;

namespace {

// Tied weights across pipeline ranks (param_copy_chunks): the copies'
// gradients are all-reduced over the ranks holding one, once a step after
// the flush, not overlapped: Megatron-Core's finalize_model_grads
// (_allreduce_word_embedding_grads over the embedding group), Megatron-LM's
// allreduce_word_embedding_grads, DeepSpeed's PipelineEngine
// _exec_reduce_tied_grads. Booked with the model-parallel gradient syncs.
Status add_tied_grad_sync(StepWork& s) {
  const auto& g = s.g;
  const auto& L = s.L;
  const int pp = s.pp;
  if (pp <= 1) return Status::success();
  struct Group {
    double elements = 0;  // local, summed over the group's weights
    std::vector<std::string> names;
  };
  std::map<std::vector<int>, Group> groups;  // by the ranks holding a copy
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const auto& t = g.tensor(TensorId{i});
    if (t.role != graph::TensorRole::parameter || !core::is_floating(t.dtype)) continue;
    const auto copies = param_copy_chunks(g, L, TensorId{i}, pp);
    if (copies.empty()) continue;
    const auto owner = param_reader(g, TensorId{i});
    std::vector<int> ranks{L.chunk_of_op[owner->value] % pp};
    for (int ch : copies) ranks.push_back(ch % pp);
    std::sort(ranks.begin(), ranks.end());
    auto& group = groups[ranks];
    group.elements += static_cast<double>(t.numel()) * local_fraction(L, g, TensorId{i});
    group.names.push_back(t.name);
  }
  const int pp_per_node = L.full.ranks_per_node(layout::MeshAxis(0));
  for (const auto& [ranks, group] : groups) {
    const auto& list = group.names;
    s.e.notes.push_back(fmt::format(
        "tied weight{} {}{} read on pipeline ranks {}: a copy on each, gradients all-reduced over them once a step",
        list.size() > 1 ? "s" : "", list.front(), list.size() > 1 ? fmt::format(" (+{} more)", list.size() - 1) : "",
        fmt::join(ranks, ", ")));
    const int k = static_cast<int>(ranks.size());
    // The ranks of one pipeline share a node only when the whole pipeline does.
    const core::Placement where{k, pp_per_node >= pp ? k : 1};
    auto t = s.model.collective(core::Collective::all_reduce, Bytes(group.elements * s.grad_bytes), where);
    if (!t.ok()) return Error{fmt::format("tied-weight gradient all-reduce: {}", t.error().message)};
    for (int r : ranks) s.mp_grad_sync[static_cast<std::size_t>(r)] += *t;
  }
  return Status::success();
}

}  // namespace

Status add_data_parallel(StepWork& s) {
  PLANNER_TRY_STATUS(add_tied_grad_sync(s));
  const auto& model = s.model;
  const auto& c = s.c;
  const auto& L = s.L;
  const int C = s.C, pp = s.pp;
  const auto& work = s.work;
  auto& prob = s.prob;
  const auto& mp_grad_sync = s.mp_grad_sync;
  const bool per_mb_sharding = s.per_mb_sharding;
  const double grad_bytes = s.grad_bytes, param_bytes = s.param_bytes;

  // 5. After the flush, per rank: data-parallel sync not hidden, optimizer.
  s.dp_exposed.assign(static_cast<std::size_t>(pp), Seconds());
  s.dp_total.assign(static_cast<std::size_t>(pp), Seconds());
  s.opt_time.assign(static_cast<std::size_t>(pp), Seconds());
  auto& dp_exposed = s.dp_exposed;
  auto& dp_total = s.dp_total;
  auto& opt_time = s.opt_time;
  const bool overlapped = c.framework == Framework::megatron || c.framework == Framework::ddp;
  const double optimizer_shards = (c.zero >= 1 || c.distributed_optimizer) ? c.dp * c.cp : 1;
  s.parts.ranks.resize(static_cast<std::size_t>(pp));
  // Expert states are sharded over the dp*cp/ep ranks holding them.
  const double expert_shards = optimizer_shards > 1 ? optimizer_shards / c.ep : 1;
  // The executor's ZeRO-3 reduce-scatters once after the flush and keeps
  // only its shard of the weights (no all-gather; step_sharded.cpp).
  const bool executor_flush = per_mb_sharding && c.framework == Framework::executor;
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
    opt_time[static_cast<std::size_t>(r)] = cost::optimizer_step_time(
        s.ctx, c.optimizer, dense / optimizer_shards + expert_params / expert_shards,
        optimizer_bytes_per_param(c.optimizer, c.optimizer_state_bytes, c.master_weights));
    // planner's executor keeps the weights in one flat buffer, which the
    // optimizer updates; each op copies its weights out of it once a step
    // into a zero-filled tensor (real_compute.cpp, provide_weight): three
    // streams over the rank's weights, booked with the update they follow.
    // Under ZeRO-3 the copies come with every pass's gather (step_sharded.cpp).
    if (c.framework == Framework::executor && !per_mb_sharding)
      opt_time[static_cast<std::size_t>(r)] += Seconds(3.0 * params * param_bytes / cost::streaming_bandwidth(s.ctx).value);
    if (per_mb_sharding && !executor_flush) continue;
    Seconds reduce, gather;
    // Dense gradients over dp*cp; expert gradients over dp*cp/ep (nothing
    // when ep = 1: expert_params is 0).
    for (const auto& [elems, group] : {std::pair{dense, detail::DataGroup::data},
                                       std::pair{expert_params, detail::DataGroup::expert_data}}) {
      const Bytes grads(elems * grad_bytes);
      if (c.zero == 0 && !c.distributed_optimizer) {
        PLANNER_TRY(Seconds ar, dp_collective(model, L, c, core::Collective::all_reduce, grads, false, group));
        reduce += ar;
      } else {
        PLANNER_TRY(Seconds rs, dp_collective(model, L, c, core::Collective::reduce_scatter, grads, false, group));
        reduce += rs;
        if (executor_flush) continue;
        PLANNER_TRY(Seconds ag, dp_collective(model, L, c, core::Collective::all_gather, Bytes(elems * param_bytes),
                                              false, group));
        gather += ag;
      }
    }
    dp_total[static_cast<std::size_t>(r)] = reduce + gather;
    auto& rank_tail = s.parts.ranks[static_cast<std::size_t>(r)];
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
    s.parts.ranks[static_cast<std::size_t>(r)].grad_sync = mp_grad_sync[static_cast<std::size_t>(r)];
    s.parts.ranks[static_cast<std::size_t>(r)].optimizer = opt_time[static_cast<std::size_t>(r)];
    prob.extra[static_cast<std::size_t>(r)] = dp_exposed[static_cast<std::size_t>(r)] +
                                              opt_time[static_cast<std::size_t>(r)] +
                                              mp_grad_sync[static_cast<std::size_t>(r)];
  }
  return Status::success();
}

Status simulate_step(StepWork& s) {
  const auto& model = s.model;
  const auto& c = s.c;
  const int C = s.C, pp = s.pp;
  const double md = s.md;
  auto& e = s.e;
  const auto& work = s.work;
  const auto& prob = s.prob;
  const auto& mp_grad_sync = s.mp_grad_sync;
  const auto& dp_exposed = s.dp_exposed;
  const auto& dp_total = s.dp_total;
  const auto& dp_per_mb = s.dp_per_mb;
  const auto& opt_time = s.opt_time;
  const bool per_mb_sharding = s.per_mb_sharding;
  const auto& model_flops_replica = s.model_flops_replica;
  const auto& hardware_flops_replica = s.hardware_flops_replica;

  sim::SimulateOptions so;
  so.timeline = s.timeline;  // events only for the timeline
  PLANNER_TRY(s.res, sim::simulate(prob, so));
  const auto& res = s.res;
  e.step_time = res.step_time;
  s.parts.problem = prob;
  if (s.timeline) {
    PLANNER_TRY(StepTimeline spans, step_timeline(s.parts, res));
    e.timeline = std::move(spans);
  }

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

  // The synchronous step waits for the slowest device (straggler.hpp): the
  // simulated step is the typical device's, mu; the expected maximum over
  // the N devices adds cv mu E[Z_(N)].
  e.step_time_p50 = e.step_time_p95 = e.step_time;
  if (const auto cv = model.step_time_cv(); cv && c.devices() > 1) {
    const Seconds mu = e.step_time;
    const int n = c.devices();
    e.straggler = mu * (*cv * expected_max_std_normal(n));
    e.step_time = mu + e.straggler;
    e.step_time_p50 = mu * (1 + *cv * max_std_normal_quantile(n, 0.5));
    e.step_time_p95 = mu * (1 + *cv * max_std_normal_quantile(n, 0.95));
  }

  // FLOPs and utilisation (model FLOPs: the graph's forward + backward).
  const double replicas = static_cast<double>(c.dp) * md;
  e.model_flops = model_flops_replica * replicas;
  e.hardware_flops = hardware_flops_replica * replicas;
  const double per_device_s = e.step_time.value * c.devices();
  if (per_device_s > 0) {
    e.model_tflops_per_device = e.model_flops.value / per_device_s / 1e12;
    e.hardware_tflops_per_device = e.hardware_flops.value / per_device_s / 1e12;
    e.mfu = e.model_tflops_per_device * 1e12 / model.peak().value;
    e.hfu = e.hardware_tflops_per_device * 1e12 / model.peak().value;
  }
  return Status::success();
}

}  // namespace planner::estimate::detail
