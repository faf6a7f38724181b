// Step 6 of the estimate (step_work.hpp): memory per pipeline rank, the
// chosen op strategies and their collectives as units, notes.

#include <algorithm>
#include <fmt/format.h>

#include "step_work.hpp"

namespace planner::estimate::detail {

using graph::OpId;
using graph::TensorId;

void add_memory_and_units(StepWork& s) {
  const auto& g = s.g;
  const auto& model = s.model;
  const auto& c = s.c;
  const auto& L = s.L;
  const auto& ctx = s.ctx;
  const int C = s.C, pp = s.pp;
  const double wire = s.wire;
  const auto& res = s.res;
  auto& e = s.e;

  // 6. Memory per pipeline rank.
  s.in_flight.assign(static_cast<std::size_t>(pp), 0.0);
  s.peak_act.assign(static_cast<std::size_t>(pp), Bytes());
  auto& in_flight = s.in_flight;
  auto& peak_act = s.peak_act;
  for (int r = 0; r < pp; ++r) {
    in_flight[static_cast<std::size_t>(r)] =
        static_cast<double>(res.devices[static_cast<std::size_t>(r)].peak_in_flight) / c.vp;
    peak_act[static_cast<std::size_t>(r)] = res.devices[static_cast<std::size_t>(r)].peak_activation;
  }
  e.stages = detail::stage_memory(g, model, c, L, ctx.recompute(), in_flight, peak_act);
  e.fits = std::all_of(e.stages.begin(), e.stages.end(), [&](const StageMemory& s) { return s.allocated() <= e.capacity; });
  e.model_mesh = L.mp;
  e.speed_of_light = Seconds(e.model_flops.value / (model.peak().value * c.devices()));
  if (s.describe) {
    e.sharding = sharding::describe_plan(*L.lowered, L.choice);
    e.chunk_ops.resize(static_cast<std::size_t>(C));
    for (OpId id : L.order) e.chunk_ops[static_cast<std::size_t>(L.chunk_of_op[id.value])].push_back(g.op(id).name);
    const auto comms = sharding::planned_comms(*L.lowered, g, L.choice);
    for (std::size_t n = 0; n < L.lowered->nodes.size(); ++n) {
      const auto& node = L.lowered->nodes[n];
      const auto& s = sharding::chosen(*L.lowered, L.choice, n);
      UnitStrategy u;
      u.unit = g.op(node.instances.front().front()).name;
      for (const auto& inst : node.instances) u.instances.push_back(g.op(inst.front()).name);
      for (OpId id : node.instances.front()) u.ops.push_back(g.op(id).name);
      u.family = node.sharding.spec.family;
      u.strategy = s.name;
      u.assignment = ops::to_string(s.assignment);
      for (const auto& l : s.inputs) u.inputs.push_back(l ? layout::to_string(*l, L.mp) : std::string());
      for (const auto& l : s.outputs) u.outputs.push_back(l ? layout::to_string(*l, L.mp) : std::string());
      for (const auto& pc : comms) {
        if (pc.node != n) continue;
        const bool per_step = pc.source == sharding::CostTerm::grad_sync;
        UnitCollective uc;
        uc.kind = std::string(layout::comm_kind_name(pc.step.kind));
        uc.axis = L.mp.name(pc.step.axis);
        uc.group_size = pc.step.group_size;
        uc.bytes = pc.step.bytes * (pc.source == sharding::CostTerm::reshard ? wire : 1.0);
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
    e.notes.push_back(fmt::format("`ep` {}: the model has no experts (no op named experts.<n>); it changes nothing", c.ep));
}

}  // namespace planner::estimate::detail
