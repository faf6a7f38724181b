// Step 2 of the estimate (step_work.hpp): the model-parallel collectives of
// the chosen op sharding, tensor-parallel overlap, expert all-to-alls.

#include <algorithm>
#include <string>

#include "step_work.hpp"

namespace planner::estimate::detail {

using graph::OpId;
using graph::TensorId;

std::optional<ExecutorStep> executor_step(const layout::CommStep& st, bool backward) {
  if (!st.kind) return std::nullopt;
  const double n = st.group_size;
  const auto gather = [](double w, std::optional<int> dim) { return dim.value_or(1) == 0 ? w : 4.0 * w; };
  switch (*st.kind) {
    case core::Collective::all_to_all: {
      const double w = st.bytes.value * n;
      if (!backward)
        return ExecutorStep{core::Collective::all_gather, Bytes(w), Bytes(gather(w, st.gather_dim) + 3.0 * w / n)};
      return ExecutorStep{core::Collective::all_reduce, Bytes(w), Bytes(w + 6.0 * w / n)};
    }
    case core::Collective::reduce_scatter: {
      const double w = st.bytes.value;
      if (backward) return ExecutorStep{core::Collective::all_reduce, Bytes(w), Bytes(3.0 * w / n)};
      return ExecutorStep{core::Collective::reduce_scatter, Bytes(w),
                          Bytes((st.scatter_dim.value_or(1) == 0 ? 0.0 : 3.0 * w) + w / n)};
    }
    case core::Collective::all_gather:
      return ExecutorStep{core::Collective::all_gather, st.bytes, Bytes(gather(st.bytes.value, st.gather_dim))};
    case core::Collective::all_reduce:
      return ExecutorStep{core::Collective::all_reduce, st.bytes, Bytes(backward ? 0.0 : 2.0 * st.bytes.value)};
    default: return std::nullopt;
  }
}

Status add_model_parallel_comm(StepWork& s) {
  const auto& g = s.g;
  const auto& model = s.model;
  const auto& c = s.c;
  const auto& L = s.L;
  const auto& ctx = s.ctx;
  const int C = s.C, pp = s.pp;
  const bool full_rc = s.full_rc;
  auto& work = s.work;

  // 2. Model-parallel collectives of the chosen sharding, per micro-batch;
  //    gradient syncs over the model-parallel axes once per step.
  s.mp_grad_sync.assign(static_cast<std::size_t>(pp), Seconds());
  s.wire = detail::wire_scale(g, model);
  auto& mp_grad_sync = s.mp_grad_sync;
  const double wire = s.wire;
  const double stream_bw = cost::streaming_bandwidth(ctx).value;
  for (const auto& pc : sharding::planned_comms(*L.lowered, g, L.choice)) {
    // Resharded activations travel at the training precision; op-issued
    // statistics (fp32) and gradient syncs are sized as they are.
    Seconds t = detail::step_time(model, pc.step, L.mp, pc.source == sharding::CostTerm::reshard ? wire : 1.0);
    layout::CommKind run_kind = pc.step.kind;
    if (c.framework == Framework::executor && pc.source == sharding::CostTerm::reshard) {
      if (const auto x = executor_step(pc.step, pc.backward)) {
        layout::CommStep as_run = pc.step;
        as_run.kind = run_kind = x->kind;
        as_run.bytes = x->bytes;
        t = detail::step_time(model, as_run, L.mp, wire) + Seconds(x->streams.value * wire / stream_bw);
      }
    }
    t = t * static_cast<double>(pc.count);
    const auto& inst = L.lowered->nodes[pc.node].instances;
    const double share = 1.0 / static_cast<double>(inst.size());
    const std::string kind(layout::comm_kind_name(run_kind));
    for (const auto& ops : inst) {
      const auto ch = static_cast<std::size_t>(L.chunk_of_op[ops.front().value]);
      const Seconds ti = t * share;
      if (pc.source == sharding::CostTerm::grad_sync) {
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
      PLANNER_TRY(Seconds d, dp_collective(model, L, c, core::Collective::all_to_all, x.dispatch * per, false,
                                           detail::DataGroup::expert));
      PLANNER_TRY(Seconds k, dp_collective(model, L, c, core::Collective::all_to_all, x.combine * per, false,
                                           detail::DataGroup::expert));
      const Seconds t = (d + k) * static_cast<double>(x.moe_layers);
      auto& w = work[static_cast<std::size_t>(ch)];
      w.fwd_comm += t;
      w.bwd_comm += full_rc ? t * 2.0 : t;
      w.comm_kind["all_to_all"] += full_rc ? t * 3.0 : t * 2.0;
    }
  }
  return Status::success();
}

}  // namespace planner::estimate::detail
