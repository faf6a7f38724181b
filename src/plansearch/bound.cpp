// layout_bound(): a lower bound on one layout's step time under the cost
// model, valid for every op strategy, stage cut and schedule estimate could
// pick (design note 3 in include/planner/plansearch/search.hpp).
//
// Why each part holds (src/estimate/step.cpp):
//  - the simulator ends a step at max over pipeline ranks r of
//    (r's last finish + extra_r), and r's last finish is at least its busy
//    time m x sum of its chunks' forward + backward; so the step is at least
//    the mean over ranks of (busy_r + extra_r);
//  - the ranks' busy time sums to m x every op's local time; an op's local
//    time is at least its local FLOPs (>= its FLOPs / (tp cp)) at the
//    fastest kernel rate (the best GEMM efficiency x the fastest peak):
//    summed and divided by pp that is `compute`;
//  - extra_r includes the optimizer step, its local parameters (each
//    tensor's local shape, never below its smallest split over tp x cp)
//    / optimizer shards x bytes per parameter / the streaming bandwidth;
//    summed over ranks and divided by pp that is `optimizer`;
//  - the pipeline's stretch bound (1 + (p-1)/(v m)) on the compute alone,
//    as before.

#include <algorithm>
#include <limits>

#include "planner/estimate/optimizer_bytes.hpp"
#include "planner/plansearch/search.hpp"

namespace planner::plansearch {
namespace {

// The fastest any kernel runs: the device's best GEMM efficiency (a table
// maximum; attention and memory-bound kernels are slower) at the fastest
// peak the precision policy uses.
FlopsPerSecond best_rate(const cost::CostModel& m) {
  const auto& ctx = m.context();
  double eff = 0;
  for (const auto& r : ctx.device().gemm_table.rows) eff = std::max(eff, r.y);
  if (eff <= 0 || eff > 1) eff = 1;
  double peak = 0;
  for (auto p : ctx.precision().used()) {
    double f = 1;
    if (const auto& pf = ctx.device().gemm_precision_factor[static_cast<std::size_t>(p)]) f = std::min(1.0, *pf);
    peak = std::max(peak, ctx.peak(p).value * f);
  }
  return FlopsPerSecond(peak * eff);
}

std::vector<int> divisors_of(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

// Smallest product over dims of floor(shape[d] / s[d]) with prod s | shards.
double min_local(const std::vector<std::int64_t>& shape, std::size_t d, int left, const std::vector<int>& divs) {
  if (d == shape.size()) return 1.0;
  double best = std::numeric_limits<double>::infinity();
  for (int s : divs) {
    if (left % s != 0) continue;
    const double here = static_cast<double>(shape[d] / s);
    best = std::min(best, here * min_local(shape, d + 1, left / s, divs));
  }
  return best;
}

}  // namespace

double min_local_parameters(const ModelFacts& facts, int shards) {
  const auto divs = divisors_of(std::max(1, shards));
  double total = 0;
  for (const auto& [shape, count] : facts.parameter_shapes)
    total += min_local(shape, 0, std::max(1, shards), divs) * count;
  return total;
}

LayoutBound layout_bound(const Candidate& c, const ModelFacts& f, const cost::CostModel& model) {
  const auto& k = c.config;
  LayoutBound b;
  double flops = f.flops_per_sample.value * static_cast<double>(k.global_batch);
  if (c.recompute == cost::RecomputePolicy::full)
    flops += f.forward_flops_per_sample.value * static_cast<double>(k.global_batch);
  b.compute = Seconds(flops / k.devices / best_rate(model).value);
  const double m = static_cast<double>(k.micro_batches());
  const double stretch = k.pp > 1 ? 1.0 + (k.pp - 1.0) / (k.vp * m) : 1.0;
  b.pipelined = b.compute * stretch;

  // Optimizer step (estimate: (dense / shards + expert / expert shards) x
  // bytes per parameter / stream bandwidth per pipeline rank, expert
  // parameters already split over ep, expert shards = shards / ep when the
  // states are sharded): at least all local parameters / (shards > 1 ?
  // shards : ep), where ep counts only for a model with experts.
  const auto& dev = model.context().device();
  const double stream_bw = dev.achievable_hbm_bandwidth().value * dev.memory_bound_efficiency(Bytes(1e9));
  const int mp = k.tp * k.cp;
  const double shards = (k.zero >= 1 || k.distributed_optimizer) ? static_cast<double>(k.dp) * k.cp : 1.0;
  const double divide = shards > 1 ? shards : (f.experts > 0 ? static_cast<double>(k.ep) : 1.0);
  const double local = min_local_parameters(f, mp) / divide;
  if (stream_bw > 0)
    b.optimizer = Seconds(local / k.pp * estimate::optimizer_bytes_per_param(k.optimizer) / stream_bw);
  b.total = std::max(b.pipelined, b.compute + b.optimizer);
  return b;
}

}  // namespace planner::plansearch
