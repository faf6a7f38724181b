// Step 4 of the estimate (step_work.hpp): the pipeline problem: each
// chunk's forward and backward (with its collectives, waits and gradient
// accumulation passes), and the transfers at chunk boundaries.

#include <algorithm>
#include <fmt/format.h>

#include "step_work.hpp"

namespace planner::estimate::detail {

using graph::OpId;
using graph::TensorId;

Status add_pipeline(StepWork& s) {
  const auto& g = s.g;
  const auto& model = s.model;
  const auto& c = s.c;
  const auto& L = s.L;
  const auto& ctx = s.ctx;
  const int C = s.C, pp = s.pp;
  const std::int64_t m = s.m;
  auto& e = s.e;
  const auto& work = s.work;
  const auto& fwd_extra = s.fwd_extra;
  const auto& bwd_extra = s.bwd_extra;

  // 4. The pipeline: chunks, boundaries, simulated. Each chunk's backward
  //    also holds the framework's gradient accumulation passes over its
  //    local parameters (memory-bound, on the compute stream).
  s.stream_bw = cost::streaming_bandwidth(ctx).value;
  const double stream_bw = s.stream_bw;
  const GradPass gpass = grad_pass(c, ctx);
  auto& prob = s.prob;
  prob.stages = pp;
  prob.micro_batches = static_cast<int>(m);
  prob.schedule = pp == 1 ? sim::Schedule::one_f_one_b : c.schedule;
  prob.virtual_stages = c.vp;
  const auto act = detail::chunk_activations(g, model, L, ctx.recompute());
  for (int ch = 0; ch < C; ++ch) {
    auto& ct = e.chunks[static_cast<std::size_t>(ch)];
    const auto& w = work[static_cast<std::size_t>(ch)];
    ct.model_parallel_comm = w.fwd_comm + w.bwd_comm;
    auto& parts = s.parts.chunks[static_cast<std::size_t>(ch)];
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
    // Megatron-LM (2021-22) and DeepSpeed's pipeline engine send a boundary
    // tensor that every tensor-parallel rank holds whole in 1/tp slices, and
    // the receiving group all-gathers it: Megatron-LM's
    // scatter_gather_tensors_in_pipeline (p2p_communication.py, default on),
    // DeepSpeed's PipelineEngine.is_pipe_partitioned / is_grad_partitioned
    // (on with tp > 1). Megatron-Core sends what it holds (sequence parallel
    // already splits it). Both older libraries also wait for every transfer
    // before computing on: Megatron-LM's batch_isend_irecv, req.wait() and
    // torch.cuda.synchronize(); DeepSpeed's runtime/pipe/p2p.py dist.send /
    // dist.recv (async_op unsupported), whose NCCL work holds the sender's
    // stream. The simulation then keeps the sender busy for each transfer.
    const bool older = c.framework == Framework::deepspeed || c.framework == Framework::megatron_legacy;
    const bool partitioned = older && c.tp > 1;
    // Megatron-Core's 1F1B (forward_backward_pipelining_without_interleaving)
    // waits on its requests too (_communicate(wait_on_reqs=True), with
    // batch_p2p_sync's torch.cuda.synchronize()); only its interleaved
    // schedule overlaps p2p with compute (overlap_p2p_comm, which the NeMo
    // and Megatron-Bridge recipes turn on with virtual pipelining).
    prob.blocking_transfers = older || (c.framework == Framework::megatron && c.schedule != sim::Schedule::interleaved);
    std::vector<Bytes> sent(static_cast<std::size_t>(C - 1)), gathered(static_cast<std::size_t>(C - 1));
    const double eb = activation_element_bytes(ctx);
    for (OpId id : L.order) {
      const auto& op = g.op(id);
      const int from = L.chunk_of_op[id.value];
      for (const auto& out : op.outputs) {
        if (!out) continue;
        const auto& t = g.tensor(*out);
        if (!core::is_floating(t.dtype) || !t.batch_axis) continue;
        int to = from;
        for (OpId cons : t.consumers) to = std::max(to, L.chunk_of_op[cons.value]);
        const double fraction = detail::local_fraction(L, g, *out);
        const Bytes b(static_cast<double>(t.numel()) * fraction * eb);
        // Whole on every tensor-parallel rank: no split beyond context
        // parallelism's.
        const bool whole = partitioned && fraction * c.cp > 1.0 / c.tp + 1e-9;
        for (int k = from; k < to; ++k) {
          sent[static_cast<std::size_t>(k)] += whole ? b * (1.0 / c.tp) : b;
          if (whole) gathered[static_cast<std::size_t>(k)] += b;
        }
      }
    }
    const auto pp_axis = layout::MeshAxis(0);
    const int same_node = L.full.ranks_per_node(pp_axis) > 1 ? 2 : 1;
    const core::Placement tp_group{c.tp, std::max(1, std::min(c.tp, L.full.ranks_per_node(layout::MeshAxis(3))))};
    for (int k = 0; k + 1 < C; ++k) {
      Seconds t;
      if (sent[static_cast<std::size_t>(k)].value > 0) {
        auto r = model.collective(core::Collective::send_recv, sent[static_cast<std::size_t>(k)],
                                  core::Placement{2, same_node});
        if (!r.ok()) return Error{fmt::format("pipeline transfer: {}", r.error().message)};
        t = *r;
      }
      if (gathered[static_cast<std::size_t>(k)].value > 0) {
        auto r = model.collective(core::Collective::all_gather, gathered[static_cast<std::size_t>(k)], tp_group);
        if (!r.ok()) return Error{fmt::format("pipeline transfer: {}", r.error().message)};
        t += *r;
      }
      prob.boundaries.push_back(sim::BoundaryCost{t, t});
      e.pipeline_p2p = std::max(e.pipeline_p2p, t);
    }
  }
  return Status::success();
}

}  // namespace planner::estimate::detail
