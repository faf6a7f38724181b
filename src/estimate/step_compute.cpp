// Step 1 of the estimate (step_work.hpp): compute per op at its local shape.

#include <algorithm>
#include <array>

#include "step_work.hpp"

namespace planner::estimate::detail {

using graph::OpId;
using graph::TensorId;

void add_compute(StepWork& s) {
  const auto& g = s.g;
  const auto& L = s.L;
  const auto& ctx = s.ctx;
  const int C = s.C;
  auto& e = s.e;
  auto& work = s.work;
  auto& model_flops_replica = s.model_flops_replica;
  auto& hardware_flops_replica = s.hardware_flops_replica;

  // 1. Compute per op at its local shape.
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
}

}  // namespace planner::estimate::detail
