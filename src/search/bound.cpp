// layout_bound(): a lower bound on one layout's step time under the cost
// model, valid for every op strategy, stage cut and schedule estimate could
// pick (design note 3 in include/planner/search/search.hpp).
//
// Why each part holds (src/estimate/step.cpp):
//  - the simulator ends a step at max over pipeline ranks r of
//    (r's last finish + extra_r), and r's last finish is at least its busy
//    time m x sum of its chunks' forward + backward; so the step is at least
//    the mean over ranks of (busy_r + extra_r);
//  - the ranks' busy time sums to m x every op's local time; an op's local
//    time is at least its local FLOPs (>= its FLOPs / (tp cp)) at the
//    fastest rate the cost model charges that op at (src/cost/compute.cpp,
//    attention.cpp): a shaped GEMM at the fastest peak x the GEMM table's
//    best efficiency up to its 2mnk (its local shape is never larger than
//    the whole micro-batch's; split over s of the tp x cp devices at most
//    x / s, each device doing (tp cp) / s times its share);
//    a convolution at the best rate x 2.25
//    (Winograd); memory-bound classes at the vector peak (elementwise ones
//    only without elementwise fusion, which can make them free), or their
//    bytes / (tp cp) at the best streaming bandwidth when that is more; a flash
//    pattern at its FlashAttention FLOPs over peak x the attention table at
//    its key length (context parallelism splits its queries, so its FLOPs,
//    over cp: that share is the 1/(tp cp) above, not a further division;
//    the cost model charges the split pattern compute_fraction = 1/(tp cp)
//    of the whole pattern's FLOPs at the whole key length's rate,
//    src/cost/attention.cpp); the mask ops flash skips and
//    host-side shape ops count nothing. Each kernel also pays the launch
//    overhead (roofline: max(compute, memory) + launch x kernels). Summed
//    and divided by pp that is `compute`;
//  - a chunk's backward also holds the framework's gradient accumulation
//    passes, m x its local parameters x bytes / streaming bandwidth
//    (estimate::grad_pass); summed over chunks that is at least every
//    parameter at its smallest shard over tp x cp (experts over ep too),
//    added to `compute` over pp;
//  - extra_r includes the optimizer step, its local parameters (each
//    tensor's local shape, never below its smallest split over tp x cp)
//    / optimizer shards x bytes per parameter / the streaming bandwidth;
//    summed over ranks and divided by pp that is `optimizer`;
//  - the pipeline's stretch bound (1 + (p-1)/(v m)) on the compute alone,
//    as before;
//  - the step is the typical device's (mu, bounded above) times
//    1 + cv E[Z_(N)] when the profile gives a step-time spread cv
//    (estimate::simulate_step adds the straggler so).

#include <algorithm>
#include <optional>
#include <limits>

#include "planner/cost/compute.hpp"
#include "planner/cost/fastest.hpp"
#include "planner/estimate/experts.hpp"
#include "planner/estimate/optimizer_bytes.hpp"
#include "planner/estimate/straggler.hpp"
#include "planner/search/search.hpp"

namespace planner::search {
namespace {

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

double total(const Work& w, bool full) { return w.fwd + w.bwd + (full ? w.fwd_layer : 0.0); }

}  // namespace

void add_compute_facts(ModelFacts& f, const graph::OpGraph& g) {
  const double b = static_cast<double>(std::max<std::int64_t>(1, f.batch));
  auto& cf = f.compute;
  cf = ComputeFacts{};
  auto work_of = [&](const graph::Op& op) {
    Work w;
    w.fwd = op.cost.forward_flops.value / b;
    w.bwd = op.cost.backward_flops.value / b;
    w.fwd_layer = op.layer ? w.fwd : 0.0;
    return w;
  };
  std::vector<bool> in_valid_pattern(g.num_ops(), false);
  for (const auto& p : g.fused) {
    if (p.ops.size() < 2 || p.batch <= 0 || p.heads <= 0 || p.seq_q <= 0 || p.seq_k <= 0 || p.head_dim <= 0 ||
        p.head_dim_v <= 0)
      continue;  // priced op by op, or one fused op (counted as nothing)
    for (auto id : p.ops) in_valid_pattern[id.value] = true;
    const bool causal = cost::is_causal(p, g);
    const double fa = cost::flash_forward_flops(p, causal) / b;
    Work w;
    w.fwd = fa;
    w.bwd = cost::kFlashBackwardFactor * fa;
    w.fwd_layer = g.op(p.ops.front()).layer ? fa : 0.0;
    cf.flash[{p.seq_k, causal}] += w;
    const double kv = static_cast<double>(p.kv_heads > 0 ? p.kv_heads : p.heads) *
                      static_cast<double>(p.head_dim + p.head_dim_v);
    const double x = static_cast<double>(p.heads) * static_cast<double>(std::min(p.head_dim, p.head_dim_v));
    cf.exchanges.push_back(
        {std::min(kv, x) * static_cast<double>(p.seq_k) * static_cast<double>(p.batch) / b, w.fwd + w.bwd, p.seq_k, causal});
  }
  for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
    const auto& op = g.op(graph::OpId{i});
    if (op.cost.forward_flops.value <= 0 && op.cost.backward_flops.value <= 0) continue;
    if (cost::is_host_side(op, g)) continue;
    const bool pattern = op.fused_group && *op.fused_group >= 0 && static_cast<std::size_t>(*op.fused_group) < g.fused.size();
    if (pattern) {
      // Unfused attention prices the pattern's ops one by one (at most the
      // GEMM rate); a flash pattern is counted above (or as nothing).
      if (in_valid_pattern[i]) cf.unfused_attention += work_of(op);
      continue;
    }
    if (cost::feeds_only_flash_masks(op, g)) continue;  // free under flash; not counted at all
    switch (op.op_class) {
      case graph::OpClass::matmul: {
        if (const auto s = cost::gemm_shape(op, g)) {
          // An expert's GEMM may run as one kernel with all E experts' rows
          // (estimate's batch_expert_ops: G = E when grouped, else ep <= E).
          const double grouped = f.experts > 1 && estimate::expert_index(op.name) ? f.experts : 1.0;
          const double x = 2.0 * static_cast<double>(s->m) * static_cast<double>(s->n) * static_cast<double>(s->k) * grouped;
          cf.gemm[x] += work_of(op);
        } else {
          cf.fast += work_of(op);
        }
        break;
      }
      case graph::OpClass::conv: cf.conv += work_of(op); break;
      case graph::OpClass::attention:
      case graph::OpClass::control_flow: cf.fast += work_of(op); break;
      case graph::OpClass::elementwise: cf.elementwise += work_of(op); break;
      default: cf.vector += work_of(op); break;
    }
  }
}

MemoryFacts memory_facts(const graph::OpGraph& g, const cost::CostModel& model) {
  MemoryFacts m;
  const auto& ctx = model.context();
  const auto& policy = ctx.precision();
  const bool flash = ctx.attention() == cost::AttentionMode::flash;
  if (flash)
    for (const auto& p : g.fused) {
      if (p.ops.size() < 2 || p.batch <= 0 || p.heads <= 0 || p.seq_q <= 0 || p.seq_k <= 0 || p.head_dim <= 0 ||
          p.head_dim_v <= 0)
        continue;
      m.kernels += 2;  // one FlashAttention kernel forward, one backward
      if (g.op(p.ops.front()).layer) m.layer_forward_kernels += 1;
    }
  // An expert op launches at least 1/E of a kernel: estimate runs the E
  // experts' ops of one step as one grouped kernel at best (batch_expert_ops).
  const double experts = std::max(1, estimate::count_experts(g).experts);
  for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
    const auto& op = g.op(graph::OpId{i});
    if (op.fused_group || cost::is_host_side(op, g) || cost::feeds_only_flash_masks(op, g)) continue;
    if (op.op_class == graph::OpClass::attention || op.op_class == graph::OpClass::control_flow) continue;
    const auto b = cost::op_bytes(op, g, policy);
    const bool fwd = op.cost.forward_flops.value > 0 || b.forward.value > 0;
    const bool bwd = op.cost.backward_flops.value > 0 || b.backward.value > 0;
    const bool elementwise = op.op_class == graph::OpClass::elementwise;
    if (!(elementwise && ctx.fuse_elementwise())) {
      const double share = experts > 1 && estimate::expert_index(op.name) ? 1.0 / experts : 1.0;
      m.kernels += ((fwd ? 1 : 0) + (bwd ? 1 : 0)) * share;
      if (fwd && op.layer) m.layer_forward_kernels += share;
    }
    if (op.op_class == graph::OpClass::matmul || op.op_class == graph::OpClass::conv) continue;
    (elementwise ? m.elementwise : m.vector) += b.forward.value + b.backward.value;
  }
  return m;
}

double min_local_parameters(const ModelFacts& facts, int shards) {
  const auto divs = divisors_of(std::max(1, shards));
  double total = 0;
  for (const auto& [shape, count] : facts.parameter_shapes)
    total += min_local(shape, 0, std::max(1, shards), divs) * count;
  return total;
}

LayoutBound layout_bound(const Candidate& c, const ModelFacts& f, const cost::CostModel& model,
                         const MemoryFacts* memory) {
  return layout_bound(c, f, model, memory, nullptr);
}

LayoutBound layout_bound(const Candidate& c, const ModelFacts& f, const cost::CostModel& model,
                         const MemoryFacts* memory, BoundMemo* memo) {
  const auto& k = c.config;
  LayoutBound b;
  const auto& ctx = model.context();
  const auto& cf = f.compute;
  const bool full = c.recompute == cost::RecomputePolicy::full;
  const bool flash = ctx.attention() == cost::AttentionMode::flash;
  const double peak = cost::fastest_peak(ctx).value, best = cost::fastest_rate(ctx).value;
  // Seconds per sample on one device's worth of work.
  double per_sample = total(cf.fast, full) / best;
  if (!flash) per_sample += total(cf.unfused_attention, full) / best;
  per_sample += total(cf.conv, full) / (best * cost::kWinogradF2x2);
  const double mb_scale = std::max(1.0, static_cast<double>(k.micro_batch) / static_cast<double>(f.batch));
  // A GEMM runs on the model-parallel mesh (axes cp and tp, each whole:
  // the op-level solver splits a dim over an axis or not at all). Split
  // over a set of those axes, s devices of the tp x cp (1, tp, cp or
  // tp x cp), its local 2mnk is at most x / s (a split divides its dim;
  // the cp axis splits sequence dims only) and each device does (tp cp) / s
  // times its 1/N share of the FLOPs; so it runs at most at the best over
  // those sets of peak x the table's best up to x / s x s / (tp cp). With
  // tp = cp = 1 that is the table's best up to x (the whole micro-batch).
  auto gemm_rates = [&] {
    std::vector<int> splits = {1};
    for (int s : {k.tp, k.cp, k.tp * k.cp})
      if (s > 1 && std::find(splits.begin(), splits.end(), s) == splits.end()) splits.push_back(s);
    const double mp_size = static_cast<double>(k.tp) * k.cp;
    std::vector<double> rates;
    for (const auto& entry : cf.gemm) {
      const double x = entry.first;
      double eff = 0;
      for (int s : splits) eff = std::max(eff, cost::best_gemm_efficiency(ctx, x * mb_scale / s) * s / mp_size);
      rates.push_back(peak * eff);
    }
    return rates;
  };
  std::vector<double> fresh_rates;
  const std::vector<double>* rates = nullptr;
  if (memo) {
    const auto key = std::make_tuple(k.micro_batch, k.tp, k.cp);
    auto it = memo->gemm_rates.find(key);
    if (it == memo->gemm_rates.end()) it = memo->gemm_rates.emplace(key, gemm_rates()).first;
    rates = &it->second;
  } else {
    fresh_rates = gemm_rates();
    rates = &fresh_rates;
  }
  {
    std::size_t i = 0;
    for (const auto& entry : cf.gemm) {
      const double rate = (*rates)[i++];
      if (rate > 0) per_sample += total(entry.second, full) / rate;
    }
  }
  // Memory-bound ops: each at least max(FLOPs at the vector peak, bytes at
  // the best streaming bandwidth), so the class at least the larger sum.
  const double vec = ctx.vector_peak().value;
  const double vector_flops = total(cf.vector, full) + (ctx.fuse_elementwise() ? 0.0 : total(cf.elementwise, full));
  const double vector_compute =
      vec > 0 ? vector_flops / vec * static_cast<double>(k.global_batch) / k.devices() : 0.0;
  double vector_memory = 0;
  if (memory) {
    const double bw = cost::best_streaming_bandwidth(ctx).value;
    const double bytes = memory->vector + (ctx.fuse_elementwise() ? 0.0 : memory->elementwise);
    // Per micro-batch, each op moves at least its bytes / (tp cp); a
    // micro-batch at least the facts' batch (bytes grow with it); the mean
    // pipeline rank holds 1/pp of the ops.
    if (bw > 0)
      vector_memory = static_cast<double>(k.micro_batches()) * bytes / (static_cast<double>(k.tp) * k.cp * k.pp) / bw;
  }
  if (flash) {
    for (const auto& [key, w] : cf.flash) {
      const double rate = cost::attention_rate(ctx, key.first, key.second).value;
      if (rate > 0) per_sample += total(w, full) / rate;
    }
  }
  // Launches: every kernel pays the launch overhead on top of its roofline
  // time, per micro-batch, on the rank holding its op.
  double launches = 0;
  if (memory)
    launches = static_cast<double>(k.micro_batches()) *
               (memory->kernels + (full ? memory->layer_forward_kernels : 0.0)) * cost::launch_overhead(ctx).value / k.pp;
  // Gradient accumulation passes (estimate: per chunk and micro-batch, its
  // local parameters x the framework's bytes / stream bandwidth, inside the
  // chunk's backward): at least every local parameter at its smallest shard
  // over tp x cp (experts over ep too), over pp ranks.
  const double stream_bw = cost::streaming_bandwidth(ctx).value;
  const int mp = k.tp * k.cp;
  auto min_local = [&]() -> double {
    if (!memo) return min_local_parameters(f, mp);
    auto it = memo->min_local.find(mp);
    if (it == memo->min_local.end()) it = memo->min_local.emplace(mp, min_local_parameters(f, mp)).first;
    return it->second;
  };
  const estimate::GradPass gpass = estimate::grad_pass(k, ctx);
  double grad_passes = 0;
  if (gpass.bytes > 0 && stream_bw > 0)
    grad_passes = static_cast<double>(k.micro_batches()) * gpass.share(k.micro_batches()) *
                  (min_local() / (f.experts > 0 ? static_cast<double>(k.ep) : 1.0)) / k.pp *
                  gpass.bytes / stream_bw;
  // Context parallelism (argument in docs/search.md, "Bound"): every
  // pattern, split over cp or not, needs its whole keys and values on
  // every cp rank. Between the previous pattern and it, either some tensor
  // carrying them is all-gathered over cp (its gradient reduce-scattered
  // back), or every op on the way is whole on each cp rank: the previous
  // pattern's output too, so that pattern ran unsplit over cp (its 1/tp
  // share, not 1/(tp cp); its layer's other ops, not counted, as well).
  // Only the first pattern may take the tokens whole for nothing: P - 1
  // payments of the cheaper of the two, per micro-batch, over pp ranks.
  double exchange = 0;
  if (flash && k.cp > 1 && cf.exchanges.size() > 1) {
    const auto prec = ctx.precision().default_precision();
    const double wire = (prec == core::Precision::fp32 || prec == core::Precision::tf32) ? 4.0 : 2.0;
    const int per_node = std::max(1, std::min(k.devices_per_node, k.cp * k.tp));
    const int rpn = k.tp >= per_node ? 1 : std::max(1, std::min(k.cp, per_node / k.tp));
    const core::Placement where{k.cp, rpn};
    const auto key = std::make_tuple(k.cp, k.tp, k.micro_batch, k.devices_per_node, k.tp_comm_overlap);
    std::optional<double> kept;
    if (memo)
      if (const auto it = memo->exchange.find(key); it != memo->exchange.end()) kept = it->second;
    double cheapest = kept.value_or(std::numeric_limits<double>::infinity());
    for (const auto& x : cf.exchanges) {
      if (kept) break;
      const Bytes bytes(x.elems * k.micro_batch * wire / k.tp);
      const auto ag = model.collective(core::Collective::all_gather, bytes, where);
      const auto rs = model.collective(core::Collective::reduce_scatter, bytes, where);
      const double comm = (ag.ok() ? ag->value : 0.0) + (rs.ok() ? rs->value : 0.0);
      const double rate = cost::attention_rate(ctx, x.key, x.causal).value;
      const double unsplit = rate > 0 ? x.flops * k.micro_batch / k.tp * (1.0 - 1.0 / k.cp) / rate : 0.0;
      cheapest = std::min(cheapest, std::min(comm * (k.tp_comm_overlap ? 0.1 : 1.0), unsplit));
    }
    if (memo && !kept) memo->exchange.emplace(key, cheapest);
    const double payments = static_cast<double>(cf.exchanges.size() - 1);
    exchange = payments * cheapest * static_cast<double>(k.micro_batches()) / k.pp;
  }
  b.context_exchange = Seconds(exchange);
  b.grad_accumulation = Seconds(grad_passes);
  b.compute = Seconds(per_sample * static_cast<double>(k.global_batch) / k.devices() +
                      std::max(vector_compute, vector_memory) + launches + grad_passes + exchange);
  const double m = static_cast<double>(k.micro_batches());
  const double stretch = k.pp > 1 ? 1.0 + (k.pp - 1.0) / (k.vp * m) : 1.0;
  b.pipelined = b.compute * stretch;

  // Optimizer step (estimate: (dense / shards + expert / expert shards) x
  // bytes per parameter / stream bandwidth per pipeline rank, expert
  // parameters already split over ep, expert shards = shards / ep when the
  // states are sharded): at least all local parameters / (shards > 1 ?
  // shards : ep), where ep counts only for a model with experts.
  const double shards = (k.zero >= 1 || k.distributed_optimizer) ? static_cast<double>(k.dp) * k.cp : 1.0;
  const double divide = shards > 1 ? shards : (f.experts > 0 ? static_cast<double>(k.ep) : 1.0);
  const double local = min_local() / divide;
  if (stream_bw > 0)
    b.optimizer = Seconds(local / k.pp * estimate::optimizer_bytes_per_param(k.optimizer, k.optimizer_state_bytes, k.master_weights) / stream_bw);
  b.total = std::max(b.pipelined, b.compute + b.optimizer);
  // The step is the slowest of the N devices (estimate/straggler.hpp): the
  // typical device's step mu, which every term above bounds, times
  // 1 + cv E[max of N standard normals] when the profile gives a spread cv.
  if (const auto cv = model.step_time_cv(); cv && *cv > 0 && k.devices() > 1) {
    double z = 0;
    if (!memo) z = estimate::expected_max_std_normal(k.devices());
    else if (auto it = memo->expected_max.find(k.devices()); it != memo->expected_max.end()) z = it->second;
    else z = memo->expected_max.emplace(k.devices(), estimate::expected_max_std_normal(k.devices())).first->second;
    b.straggler = 1.0 + *cv * z;
    b.total = b.total * b.straggler;
  }
  return b;
}

// The floor F is at most the sum over chunks of one micro-batch's forward
// and backward (ops at their strategies, recompute, exposed model-parallel
// collectives: src/estimate/floor.cpp); each chunk's backward also holds
// its gradient accumulation passes, at least grad_accumulation in all. The
// ranks' busy time is m x that, so the mean rank's at least
// m F / pp + grad_accumulation: the same place in the argument as the
// per-class `compute`, so the stretch and the optimizer apply to it alike.
LayoutBound with_model_parallel_floor(LayoutBound b, const Candidate& c, Seconds floor) {
  const auto& k = c.config;
  const double m = static_cast<double>(k.micro_batches());
  b.model_parallel = Seconds(m * floor.value / k.pp) + b.grad_accumulation;
  if (b.model_parallel.value <= b.compute.value) return b;
  b.compute = b.model_parallel;
  const double stretch = k.pp > 1 ? 1.0 + (k.pp - 1.0) / (k.vp * m) : 1.0;
  b.pipelined = b.compute * stretch;
  b.total = std::max(b.pipelined, b.compute + b.optimizer) * b.straggler;
  return b;
}

}  // namespace planner::search
