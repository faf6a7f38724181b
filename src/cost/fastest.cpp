// The fastest rates and shared constants of the cost model
// (include/planner/cost/fastest.hpp).

#include "planner/cost/fastest.hpp"

#include <algorithm>

namespace planner::cost {

bool is_host_side(const graph::Op& op, const graph::OpGraph& g) {
  double elems = 0;
  for (const auto& t : op.outputs) {
    if (!t) continue;
    if (core::is_floating(g.tensor(*t).dtype)) return false;
    elems += static_cast<double>(g.tensor(*t).numel());
  }
  return elems <= kHostShapeElements;
}

double flash_forward_flops(const graph::FusedPattern& p, bool causal) {
  return 2.0 * static_cast<double>(p.batch) * static_cast<double>(p.heads) * static_cast<double>(p.seq_q) *
         static_cast<double>(p.seq_k) * static_cast<double>(p.head_dim + p.head_dim_v) * (causal ? 0.5 : 1.0);
}

FlopsPerSecond fastest_peak(const ComputeContext& ctx) {
  double peak = 0;
  for (auto p : ctx.precision().used()) {
    double f = 1;
    if (const auto& pf = ctx.device().gemm_precision_factor[static_cast<std::size_t>(p)]) f = std::min(1.0, *pf);
    peak = std::max(peak, ctx.peak(p).value * f);
  }
  return FlopsPerSecond(peak);
}

FlopsPerSecond fastest_rate(const ComputeContext& ctx) {
  double eff = 0;
  for (const auto& r : ctx.device().gemm_table.rows) eff = std::max(eff, r.y);
  if (eff <= 0 || eff > 1) eff = 1;
  return FlopsPerSecond(fastest_peak(ctx).value * eff);
}

double best_gemm_efficiency(const ComputeContext& ctx, double flops) {
  const auto& t = ctx.device().gemm_table;
  if (t.rows.empty()) return 1.0;
  double e = t.interpolate(std::max(flops, t.rows.front().x));
  for (const auto& r : t.rows)
    if (r.x <= flops) e = std::max(e, r.y);
  return std::clamp(e, 0.0, 1.0);
}

FlopsPerSecond attention_rate(const ComputeContext& ctx, std::int64_t seq_k, bool causal) {
  const double pa = ctx.peak(ctx.precision().of(graph::OpClass::attention)).value;
  return FlopsPerSecond(pa * ctx.device().attention_efficiency(seq_k, causal).value_or(1.0));
}

BytesPerSecond best_streaming_bandwidth(const ComputeContext& ctx) {
  const auto& dev = ctx.device();
  double best = 0;
  for (const auto& r : dev.elementwise_table.rows) best = std::max(best, r.y);
  return BytesPerSecond(dev.achievable_hbm_bandwidth().value * best);
}

BytesPerSecond streaming_bandwidth(const ComputeContext& ctx) {
  const auto& dev = ctx.device();
  return BytesPerSecond(dev.achievable_hbm_bandwidth().value * dev.memory_bound_efficiency(Bytes(1e9)));
}

Seconds launch_overhead(const ComputeContext& ctx) { return ctx.device().launch_overhead; }

}  // namespace planner::cost
