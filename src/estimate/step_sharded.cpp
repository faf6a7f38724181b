// Step 3 of the estimate (step_work.hpp): local parameters per chunk, and
// the per-micro-batch weight gathers and gradient reduce-scatters of ZeRO-3
// and FSDP.

#include <algorithm>
#include <map>
#include <utility>

#include "step_work.hpp"

namespace planner::estimate::detail {

using graph::OpId;
using graph::TensorId;

void count_local_parameters(StepWork& s) {
  const auto& g = s.g;
  const auto& c = s.c;
  const auto& L = s.L;
  auto& e = s.e;
  auto& work = s.work;

  // Local parameters per chunk (gather units: ZeRO-3 / FSDP only).
  s.per_mb_sharding = per_micro_batch_sharding(c);
  const bool per_mb_sharding = s.per_mb_sharding;
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const auto& t = g.tensor(TensorId{i});
    if (t.role != graph::TensorRole::parameter || !core::is_floating(t.dtype)) continue;
    e.parameters += t.numel();
    if (t.consumers.empty()) continue;
    if (detail::param_shared(g, TensorId{i})) e.shared_weights.push_back(t.name);
    const auto& reader = g.op(t.consumers.front());
    const auto ch = static_cast<std::size_t>(L.chunk_of_op[t.consumers.front().value]);
    const bool expert = c.ep > 1 && detail::is_expert_op(L, detail::param_reader(g, TensorId{i}));
    const double local =
        static_cast<double>(t.numel()) * detail::local_fraction(L, g, TensorId{i}) / (expert ? c.ep : 1);
    work[ch].local_params += local;
    if (expert) work[ch].expert_params += local;
    // A tied weight's copies on other pipeline ranks (param_copy_chunks).
    for (int copy : detail::param_copy_chunks(g, L, TensorId{i}, c.pp))
      work[static_cast<std::size_t>(copy)].local_params += local;
    if (!per_mb_sharding) continue;
    const std::int64_t unit = c.framework == Framework::fsdp ? (reader.layer ? *reader.layer : -1)
                                                             : static_cast<std::int64_t>(i) + (1LL << 32);
    (expert ? work[ch].expert_gather_units : work[ch].gather_units)[unit] += local;
  }
}

Status add_sharded_fetches(StepWork& s) {
  const auto& model = s.model;
  const auto& c = s.c;
  const auto& L = s.L;
  const auto& ctx = s.ctx;
  const int C = s.C;
  auto& e = s.e;
  const auto& work = s.work;

  // 3. ZeRO-3 (and FSDP SHARD_GRAD_OP): weights gathered per micro-batch,
  //    gradients reduce-scattered per micro-batch, prefetched alongside
  //    compute; only what exceeds the compute it overlaps is exposed, plus the
  //    first layer's gather of each pass.
  s.grad_bytes = grad_reduce_bytes(c, ctx);
  s.param_bytes = gathered_param_bytes(ctx);
  const double grad_bytes = s.grad_bytes, param_bytes = s.param_bytes;
  s.fwd_extra.assign(static_cast<std::size_t>(C), Seconds());
  s.bwd_extra.assign(static_cast<std::size_t>(C), Seconds());
  s.dp_per_mb.assign(static_cast<std::size_t>(C), Seconds());  // ZeRO-3 traffic per micro-batch
  auto& fwd_extra = s.fwd_extra;
  auto& bwd_extra = s.bwd_extra;
  auto& dp_per_mb = s.dp_per_mb;
  const bool per_mb_sharding = s.per_mb_sharding;
  // DeepSpeed ZeRO-3 (framework `deepspeed`, as of 2021-2022): weights
  // fetched one by one on demand, each fetch waited for (not overlapped;
  // gradient reduce-scatters still overlap the backward), over a single ring
  // (a rank's own share of its node's NICs, not one NCCL channel per NIC).
  // Fitted to and checked on the four ZeRO-3 rows of Megatron SC'21 Table 2
  // (640-2240 A100s, docs/estimate.md); every deepspeed ZeRO-3 run gets it,
  // never one run alone.
  const bool ds_flat = per_mb_sharding && c.zero >= 3 && c.framework == Framework::deepspeed;
  // planner's executor (framework `executor`; src/executor/real_pipeline.cpp,
  // real_dp.cpp): one thread, nothing overlaps. ZeRO-3 all-gathers the
  // stage's whole weights before every forward and every backward pass,
  // waited for, into a zero-filled buffer, and each op then copies its
  // weights out of it into a zero-filled tensor (provide_weight): four
  // streams over the weights' bytes beside the gather. The gradients are
  // accumulated over the step and reduce-scattered once after the flush
  // (sync_and_update; step_data_parallel.cpp), not per micro-batch.
  const bool executor = per_mb_sharding && c.framework == Framework::executor;
  const double stream_bw = cost::streaming_bandwidth(ctx).value;
  s.parts.chunks.resize(static_cast<std::size_t>(C));
  if (per_mb_sharding) {
    // A unit's gather and reduce-scatter times depend only on its size and
    // group: the repeated layers share them (same sums, term by term).
    std::map<std::pair<double, bool>, std::pair<Seconds, Seconds>> unit_times;
    auto unit_time = [&](double elems, bool expert) -> Result<std::pair<Seconds, Seconds>> {
      const auto key = std::make_pair(elems, expert);
      if (auto it = unit_times.find(key); it != unit_times.end()) return it->second;
      const auto group = expert ? detail::DataGroup::expert_data : detail::DataGroup::data;
      PLANNER_TRY(Seconds ga, dp_collective(model, L, c, core::Collective::all_gather, Bytes(elems * param_bytes),
                                            ds_flat, group));
      PLANNER_TRY(Seconds rs, dp_collective(model, L, c, core::Collective::reduce_scatter, Bytes(elems * grad_bytes),
                                            ds_flat, group));
      return unit_times.emplace(key, std::make_pair(ga, rs)).first->second;
    };
    for (int ch = 0; ch < C; ++ch) {
      const auto& w = work[static_cast<std::size_t>(ch)];
      auto& ct = e.chunks[static_cast<std::size_t>(ch)];
      // One collective per gather unit: each pays its own latency (a flat
      // ring over the data-parallel ranks: (n-1) steps).
      Seconds gather, scatter;
      for (const auto& [unit, elems] : w.gather_units) {
        PLANNER_TRY(const auto t, unit_time(elems, false));
        gather += t.first;
        scatter += t.second;
      }
      for (const auto& [unit, elems] : w.expert_gather_units) {
        PLANNER_TRY(const auto t, unit_time(elems, true));
        gather += t.first;
        scatter += t.second;
      }
      const double units = std::max(1, w.layers);
      const Seconds fwd = ct.forward_compute + w.fwd_comm;
      const Seconds bwd = ct.backward_compute + ct.recompute + w.bwd_comm;
      Seconds bwd_comm = c.zero >= 3 ? gather + scatter : scatter;
      // The first unit's gather (and the last unit's reduce-scatter) cannot
      // overlap; beyond that only what exceeds the compute shows.
      Seconds fwd_x = Seconds(std::max(gather.value / units, gather.value - fwd.value));
      Seconds bwd_x = Seconds(std::max(scatter.value / units, bwd_comm.value - bwd.value));
      if (executor) {
        const Seconds copies(4.0 * w.local_params * param_bytes / stream_bw);
        scatter = Seconds(0);  // once per step, after the flush
        bwd_comm = c.zero >= 3 ? gather : Seconds(0);
        fwd_x = gather + copies;
        bwd_x = c.zero >= 3 ? gather + copies : Seconds(0);
      } else if (ds_flat) {  // weights fetched on demand, waited for; gradient
        // reduce-scatters bucketed behind the backward (overlap_comm)
        fwd_x = gather;
        bwd_x = gather + Seconds(std::max(scatter.value / units, scatter.value - bwd.value));
      }
      dp_per_mb[static_cast<std::size_t>(ch)] = gather + bwd_comm;
      auto& parts = s.parts.chunks[static_cast<std::size_t>(ch)];
      parts.forward_gather = gather;
      parts.backward_gather = c.zero >= 3 ? gather : Seconds(0);
      parts.reduce_scatter = scatter;
      fwd_extra[static_cast<std::size_t>(ch)] = fwd_x;
      bwd_extra[static_cast<std::size_t>(ch)] = bwd_x;
      ct.zero3_exposed = fwd_x + bwd_x;
    }
  }
  return Status::success();
}

}  // namespace planner::estimate::detail
