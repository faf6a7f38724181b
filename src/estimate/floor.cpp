// model_parallel_floor(): the op-level lowering's time-only optimum, the
// least one micro-batch's ops and model-parallel collectives can take on a
// layout's mesh (estimate.hpp).
//
// Why it is at most what estimate charges (src/estimate/step_*.cpp): a
// chunk's forward and backward in the pipeline problem hold its ops' times
// at the chosen strategies (op_time: forward + backward + recompute, the
// same numbers as the lowered nodes' compute term) and the collectives
// sharding::planned_comms lists for the choice, each at least its entry in
// the problem (node op_comm, edge reshard), with waits, gradient
// accumulation passes and expert all-to-alls on top. Under
// tp_comm_overlap each chunk keeps max(0.1 x comm, comm - GEMMs) of its
// collectives, at least 0.1 x them. Op-issued collectives are priced by the
// oracle at the activations' wire scale but charged by the estimate as
// sized; when that scale is above 1 (fp32 training of an fp16 graph) a
// collective of b bytes costs at least 1 / scale of one of scale x b bytes
// (an affine time), so they count / scale here. Weights' gradient syncs
// are not per micro-batch work (0 in the lowered problem, priced per
// layout by add_state_costs): left out.

#include <algorithm>

#include "internal.hpp"
#include "planner/estimate/estimate.hpp"

namespace planner::estimate {

Result<std::optional<Seconds>> model_parallel_floor(const graph::OpGraph& g, const cost::CostModel& model,
                                                    const ParallelConfig& c, LoweringCache* cache) {
  // The layout's own errors first, as estimate() gives them (the whole
  // mesh's placement is checked by the caller's estimate; the floor needs
  // the model-parallel mesh only).
  PLANNER_TRY(layout::DeviceMesh mp, detail::model_parallel_mesh(c));
  PLANNER_TRY_STATUS(detail::check_attention_split(g, c));
  const sharding::LoweringOptions lo = detail::lowering_options(c, mp);
  const double wire = detail::wire_scale(g, model);
  // The lowering's time part reads no state term: bytes per parameter 0.
  const CostModelOracle oracle(model, mp, 0.0, wire, expert_batch(detail::experts_per_layer(g), c));
  PLANNER_TRY(detail::KeptLowering times, detail::lowered_times(g, model, c, mp, oracle, lo, cache));
  const double scale = c.tp_comm_overlap ? 0.1 : 1.0;
  auto make = [&]() -> std::optional<Seconds> {
    sharding::ShardingProblem p = times.lowered->problem;
    const double op_comm_scale = scale * std::min(1.0, 1.0 / wire);
    for (auto& node : p.nodes)
      for (auto& st : node.strategies) {
        st.cost[sharding::CostTerm::op_comm] = st.cost[sharding::CostTerm::op_comm] * op_comm_scale;
        st.cost[sharding::CostTerm::reshard] = st.cost[sharding::CostTerm::reshard] * scale;
        st.cost[sharding::CostTerm::grad_sync] = Seconds(0);
      }
    if (scale != 1.0)
      for (auto& e : p.edges)
        for (auto& x : e.cost) x = x * scale;
    auto solved = sharding::solve_time_only(p);
    if (!solved.ok() || !solved->exact) return std::nullopt;
    return solved->evaluation.total;
  };
  if (times.kept) return times.kept->floor(scale, make);
  return make();
}

}  // namespace planner::estimate
