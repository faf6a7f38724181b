// ProfileCostModel: the CostModel interface answered from a cluster profile.

#include "planner/cost/cost_model.hpp"

namespace planner::cost {

Result<ProfileCostModel> ProfileCostModel::create(cluster::ClusterProfile profile, PrecisionPolicy precision,
                                                  AttentionMode attention, RecomputePolicy recompute,
                                                  bool fuse_elementwise, bool channels_last) {
  PLANNER_TRY(ComputeContext ctx,
              ComputeContext::create(profile.device, std::move(precision), attention, recompute, fuse_elementwise));
  ctx.set_channels_last(channels_last);
  return ProfileCostModel(std::move(profile), std::move(ctx));
}

OpTime ProfileCostModel::op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling) const {
  return time_of(op, g, scaling, ctx_);
}

Result<Seconds> ProfileCostModel::collective(core::Collective kind, Bytes message, core::Placement where) const {
  PLANNER_TRY(cluster::CollectiveCost c, cluster::collective_time(profile_, kind, message, where));
  return c.time;
}

MemoryBreakdown ProfileCostModel::memory(const graph::OpGraph& g, const MemorySetup& setup) const {
  return cost::memory(g, ctx_, setup);
}

Bytes ProfileCostModel::device_memory() const { return profile_.device.visible_memory; }

FlopsPerSecond ProfileCostModel::peak() const { return ctx_.peak(ctx_.precision().default_precision()); }

OpTime graph_time(const CostModel& model, const graph::OpGraph& g) {
  OpTime sum;
  for (const auto& op : g.ops()) sum += model.op_time(op, g, OpScaling::whole());
  return sum;
}

}  // namespace planner::cost
