// CostModelOracle: the cost module seen by the op-sharding search; local
// GEMM shapes of a strategy; collective steps priced on the mesh's nodes.

#include <algorithm>

#include "internal.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/estimate/experts.hpp"

namespace planner::estimate {
namespace detail {

double wire_scale(const graph::OpGraph& g, const cost::CostModel& model) {
  const auto p = model.context().precision().default_precision();
  const double wire = (p == core::Precision::fp32 || p == core::Precision::tf32) ? 4.0 : 2.0;
  for (const auto& t : g.tensors())
    if (t.role == graph::TensorRole::activation && core::is_floating(t.dtype))
      return wire / static_cast<double>(core::dtype_size(t.dtype));
  return 1.0;
}

Seconds step_time(const cost::CostModel& model, const layout::CommStep& step, const layout::DeviceMesh& mesh,
                  double scale) {
  if (layout::is_local(step.kind) || step.group_size <= 1) return Seconds(0);
  const core::Placement where{step.group_size, std::min(step.group_size, mesh.ranks_per_node(step.axis))};
  auto t = model.collective(*step.kind, step.bytes * scale, where);
  // The mesh guarantees a valid placement; a profile that cannot price it
  // (no inter-node level) makes the step free rather than the search fail:
  // estimate() checks the data-parallel and pipeline placements itself.
  return t.ok() ? *t : Seconds(0);
}

}  // namespace detail

cost::OpScaling local_scaling(const graph::Op& op, const graph::OpGraph& g, const ops::Strategy& s,
                              const layout::DeviceMesh& mesh) {
  cost::OpScaling sc;
  sc.flops = sc.bytes = s.compute_fraction;
  if (op.fused_group) return sc;  // a fused pattern: its FLOP share (ports are the pattern's, not the op's)
  const auto full = cost::gemm_shape(op, g);
  if (!full) return sc;
  const bool is_matmul = op.type == "MatMul" || op.type == "Gemm" || op.type == "FusedMatMul";
  if (!is_matmul || op.inputs.size() < 2 || s.inputs.size() < 2 || !op.inputs[0] || !op.inputs[1]) {
    // Conv and others: the local shape keeps k and n, m carries the split.
    sc.gemm = cost::GemmShape{std::max<std::int64_t>(1, std::llround(static_cast<double>(full->m) * s.compute_fraction)),
                              full->n, full->k};
    return sc;
  }
  auto local = [&](std::size_t port) {
    const auto& t = g.tensor(*op.inputs[port]);
    return s.inputs[port] ? s.inputs[port]->local_shape(t.shape, mesh) : t.shape;
  };
  const auto a = local(0), b = local(1);
  if (a.empty() || b.empty()) return sc;
  const bool ta = op.attr_int("transA").value_or(0) != 0, tb = op.attr_int("transB").value_or(0) != 0;
  const std::size_t ra = a.size(), rb = b.size();
  const std::int64_t k = ra == 1 ? a[0] : (ta ? a[ra - 2] : a[ra - 1]);
  const std::int64_t n = rb == 1 ? 1 : (tb ? b[rb - 2] : b[rb - 1]);
  // m: the local FLOPs over n k (batch dims folded in).
  const double local_mnk = static_cast<double>(full->m) * static_cast<double>(full->n) *
                           static_cast<double>(full->k) * s.compute_fraction;
  const double nk = std::max(1.0, static_cast<double>(n) * static_cast<double>(k));
  const std::int64_t m = std::max<std::int64_t>(1, std::llround(local_mnk / nk));
  sc.gemm = cost::GemmShape{m, std::max<std::int64_t>(1, n), std::max<std::int64_t>(1, k)};
  return sc;
}

int expert_batch(int experts, const ParallelConfig& c) {
  if (experts <= 0) return 1;
  return groups_local_experts(c.framework) ? experts : std::max(1, c.ep);
}

Seconds CostModelOracle::op_time(const graph::Op& op, const graph::OpGraph& g, const ops::Strategy& s) const {
  cost::OpScaling sc = local_scaling(op, g, s, mesh_);
  if (expert_batch_ > 1 && expert_index(op.name)) sc.batch = expert_batch_;
  return model_.op_time(op, g, sc).total();
}

Seconds CostModelOracle::comm_time(const layout::CommStep& step, const layout::DeviceMesh& mesh) const {
  return detail::step_time(model_, step, mesh, wire_scale_);
}

Bytes CostModelOracle::memory(const ops::OpSharding& unit, const ops::Strategy& s, const graph::OpGraph& g,
                              const layout::DeviceMesh& mesh) const {
  double b = 0;
  for (std::size_t p = 0; p < unit.spec.inputs.size() && p < s.inputs.size(); ++p) {
    const auto& port = unit.spec.inputs[p];
    if (!port.tensor || !s.inputs[p]) continue;
    const auto& t = g.tensor(*port.tensor);
    if (t.role != graph::TensorRole::parameter || !core::is_floating(t.dtype)) continue;
    b += ops::local_bytes(t, *s.inputs[p], mesh).value / static_cast<double>(core::dtype_size(t.dtype)) *
         bytes_per_param_;
  }
  return Bytes(b);
}

}  // namespace planner::estimate
