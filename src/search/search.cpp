// The outer layout search: enumeration, memory pruning, bounds, batched
// branch and bound over estimate::estimate. Design note in
// include/planner/search/search.hpp.

#include "planner/search/search.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "planner/estimate/experts.hpp"

namespace planner::search {
namespace {

// The divisors of n up to 2^30, ascending: O(sqrt n) trial divisions (a
// linear scan took seconds per call for n near 10^9).
std::vector<int> divisors(std::int64_t n) {
  std::vector<int> small, large;
  constexpr std::int64_t kCap = std::int64_t{1} << 30;
  for (std::int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    if (i <= kCap) small.push_back(static_cast<int>(i));
    const std::int64_t j = n / i;
    if (j != i && j <= kCap) large.push_back(static_cast<int>(j));
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

Result<int> parse_int(std::string_view key, std::string_view v) {
  int x = 0;
  std::size_t used = 0;
  try {
    x = std::stoi(std::string(v), &used);
  } catch (...) {
    used = 0;
  }
  if (used != v.size() || v.empty() || x < 0)
    return make_error("`fix` {}: '{}' is not a non-negative integer", key, v);
  return x;
}

}  // namespace

Result<Fixed> parse_fixed(std::string_view text) {
  Fixed f;
  std::size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return make_error("`fix`: '{}' is not KEY=VALUE (keys: dp tp pp cp ep vp mb zero recompute schedule sp)", item);
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "recompute") {
      if (value == "none") f.recompute = cost::RecomputePolicy::none;
      else if (value == "selective") f.recompute = cost::RecomputePolicy::selective;
      else if (value == "full") f.recompute = cost::RecomputePolicy::full;
      else return make_error("`fix` recompute: '{}' is not none, selective or full", value);
    } else if (key == "schedule") {
      if (value == "1f1b") f.schedule = sim::Schedule::one_f_one_b;
      else if (value == "gpipe") f.schedule = sim::Schedule::gpipe;
      else if (value == "interleaved") f.schedule = sim::Schedule::interleaved;
      else return make_error("`fix` schedule: '{}' is not 1f1b, gpipe or interleaved", value);
    } else {
      PLANNER_TRY(int v, parse_int(key, value));
      if (key == "dp") f.dp = v;
      else if (key == "tp") f.tp = v;
      else if (key == "pp") f.pp = v;
      else if (key == "cp") f.cp = v;
      else if (key == "ep") f.ep = v;
      else if (key == "vp") f.vp = v;
      else if (key == "mb" || key == "micro-batch") f.micro_batch = v;
      else if (key == "zero") f.zero = v;
      else if (key == "sp") f.sequence_parallel = v != 0;
      else return make_error("`fix`: unknown key '{}' (keys: dp tp pp cp ep vp mb zero recompute schedule sp)", key);
      if (key != "zero" && key != "sp" && v < 1) return make_error("`fix` {}: must be at least 1", key);
    }
    if (comma >= text.size()) break;
    pos = comma + 1;
  }
  return f;
}

std::string describe(const Candidate& c, std::string_view modules) {
  const bool listed = c.recompute == cost::RecomputePolicy::selective && !modules.empty();
  return fmt::format("{} recompute={}{}", estimate::describe(c.config), cost::recompute_name(c.recompute),
                     listed ? fmt::format("({})", modules) : "");
}

ModelFacts facts_of(const graph::OpGraph& g, std::int64_t batch) {
  ModelFacts f;
  std::set<int> layers;
  for (const auto& op : g.ops())
    if (op.layer) layers.insert(*op.layer);
  f.layers = static_cast<int>(layers.size());
  for (const auto& p : g.fused) {
    f.heads = f.heads == 0 ? p.heads : std::min(f.heads, p.heads);
    f.seq = std::max(f.seq, p.seq_q);
  }
  for (const auto& t : g.tensors())
    if (t.role == graph::TensorRole::parameter && core::is_floating(t.dtype)) {
      f.parameters += static_cast<double>(t.numel());
      ++f.parameter_shapes[t.shape];
    }
  const auto experts = estimate::count_experts(g);
  f.experts = experts.experts;
  f.expert_parameters = experts.parameters;
  const auto tot = graph::totals(g);
  const double b = static_cast<double>(std::max<std::int64_t>(1, batch));
  f.flops_per_sample = tot.training_flops * (1.0 / b);
  f.forward_flops_per_sample = tot.forward_flops * (1.0 / b);
  f.batch = std::max<std::int64_t>(1, batch);
  add_compute_facts(f, g);
  return f;
}

bool sequence_parallel_for(const Space& s, int tp) {
  const bool no_sp = s.framework == estimate::Framework::deepspeed;
  return s.fixed.sequence_parallel ? (*s.fixed.sequence_parallel && tp > 1) : (tp > 1 && !no_sp);
}

std::vector<int> context_parallel_degrees(const Space& s, const ModelFacts& facts, int tp) {
  std::vector<int> out = {1};
  if (tp < 1 || s.devices % tp != 0 || facts.seq <= 0 || !estimate::supports_context_parallel(s.framework))
    return out;
  const bool sp = sequence_parallel_for(s, tp);
  for (int cp : divisors(s.devices / tp))
    if (cp > 1 && !estimate::context_parallel_error(facts.seq, tp, cp, sp)) out.push_back(cp);
  return out;
}

std::vector<Candidate> enumerate_layouts(const Space& s, const ModelFacts& facts) {
  std::vector<Candidate> out;
  const auto& fx = s.fixed;
  const int N = s.devices;
  auto pick = [](const std::optional<int>& fixed, std::vector<int> all) {
    return fixed ? std::vector<int>{*fixed} : all;
  };
  // What the framework can run: PyTorch DDP and FSDP (llm-foundry) are data
  // parallel only; Megatron-LM of 2021-2022 has sequence parallelism
  // (Korthikanti et al.) but no distributed optimizer; Megatron-DeepSpeed
  // has neither (ZeRO instead).
  const bool data_only = s.framework == estimate::Framework::fsdp || s.framework == estimate::Framework::ddp;
  std::vector<int> tps;
  for (int tp : divisors(N))
    if (tp <= s.devices_per_node && (facts.heads == 0 || facts.heads % tp == 0) && (!data_only || tp == 1))
      tps.push_back(tp);
  if (fx.tp) tps = {*fx.tp};
  const std::vector<cost::RecomputePolicy> policies =
      fx.recompute ? std::vector<cost::RecomputePolicy>{*fx.recompute} : s.recompute;
  for (int tp : tps) {
    if (tp < 1 || N % tp != 0) continue;
    for (int cp : pick(fx.cp, context_parallel_degrees(s, facts, tp))) {
      if (cp < 1 || (N / tp) % cp != 0) continue;
      const int rest = N / tp / cp;
      std::vector<int> pps;
      for (int pp : divisors(rest))
        if (pp == 1 || (pp <= facts.layers && !data_only)) pps.push_back(pp);
      if (fx.pp) pps = {*fx.pp};
      for (int pp : pps) {
        if (pp < 1 || rest % pp != 0) continue;
        const int dp = rest / pp;
        if (fx.dp && *fx.dp != dp) continue;
        if (s.global_batch % dp != 0) continue;
        {
          // Degrees whose meshes cannot be placed on the nodes (tp 3 or 6
          // on nodes of 8: groups straddle nodes unevenly) are not layouts
          // the estimate can cost: left out, not scored as failures.
          estimate::ParallelConfig probe;
          probe.dp = dp;
          probe.tp = tp;
          probe.pp = pp;
          probe.cp = cp;
          probe.devices_per_node = s.devices_per_node;
          if (estimate::placement_error(probe)) continue;
        }
        const std::int64_t per_replica = s.global_batch / dp;
        std::vector<int> mbs;
        for (int mb = 1; mb <= s.max_micro_batch && mb <= per_replica; ++mb)
          if (per_replica % mb == 0) mbs.push_back(mb);
        if (fx.micro_batch) mbs = {*fx.micro_batch};
        for (int mb : mbs) {
          if (mb < 1 || per_replica % mb != 0) continue;
          const std::int64_t m = per_replica / mb;
          if (m > estimate::kMaxMicroBatches) continue;  // validate() refuses it
          // Schedules: 1F1B (v = 1), interleaved with v chunks per device.
          std::vector<std::pair<sim::Schedule, int>> scheds;
          if (pp == 1) {
            scheds.push_back({sim::Schedule::one_f_one_b, 1});
          } else {
            scheds.push_back({sim::Schedule::one_f_one_b, 1});
            // Every interleaving the layers allow (Megatron needs layers
            // divisible by pp x v), down to one layer per chunk.
            if (m % pp == 0 && facts.layers % pp == 0)
              for (int v = 2; v <= facts.layers / pp; ++v)
                if ((facts.layers / pp) % v == 0 && (!fx.vp || *fx.vp == v)) scheds.push_back({sim::Schedule::interleaved, v});
            if (fx.schedule == sim::Schedule::gpipe) scheds = {{sim::Schedule::gpipe, 1}};
          }
          if (fx.schedule && *fx.schedule != sim::Schedule::gpipe)
            std::erase_if(scheds, [&](const auto& sv) { return sv.first != *fx.schedule; });
          if (fx.vp) std::erase_if(scheds, [&](const auto& sv) { return sv.second != *fx.vp; });
          // Optimizer-state sharding the framework offers.
          std::vector<std::pair<int, bool>> zeros;  // (zero stage, distributed optimizer)
          const bool data = dp * cp > 1;
          switch (s.framework) {
            case estimate::Framework::megatron:
              zeros = data ? std::vector<std::pair<int, bool>>{{0, false}, {0, true}} : std::vector<std::pair<int, bool>>{{0, false}};
              break;
            case estimate::Framework::megatron_legacy: zeros = {{0, false}}; break;
            case estimate::Framework::deepspeed:
              zeros = data ? std::vector<std::pair<int, bool>>{{0, false}, {1, false}, {3, false}}
                           : std::vector<std::pair<int, bool>>{{0, false}};
              break;
            case estimate::Framework::fsdp:
              zeros = data ? std::vector<std::pair<int, bool>>{{2, false}, {3, false}} : std::vector<std::pair<int, bool>>{{0, false}};
              break;
            case estimate::Framework::ddp: zeros = {{0, false}}; break;
            case estimate::Framework::executor:
              zeros = data ? std::vector<std::pair<int, bool>>{{0, false}, {1, false}, {3, false}}
                           : std::vector<std::pair<int, bool>>{{0, false}};
              break;
          }
          if (fx.zero) zeros = {{*fx.zero, false}};
          // Expert parallelism (MoE models; Megatron-Core and DeepSpeed-MoE):
          // ep over the divisors of dp*cp that divide the experts per layer.
          std::vector<int> eps = {1};
          if (facts.experts > 0 && (s.framework == estimate::Framework::megatron ||
                                    s.framework == estimate::Framework::deepspeed))
            for (int ep : divisors(std::int64_t{dp} * cp))
              if (ep > 1 && facts.experts % ep == 0) eps.push_back(ep);
          if (fx.ep) {
            if ((dp * cp) % *fx.ep != 0 || (facts.experts > 0 && facts.experts % *fx.ep != 0)) continue;
            eps = {*fx.ep};
          }
          // (zero stage, distributed optimizer, ep): experts split over ep
          // with ZeRO-1 sharding at most (what Megatron-Core's MoE and
          // DeepSpeed-MoE of 2022 run) unless --fix asks for more.
          struct Sharding {
            int zero;
            bool distopt;
            int ep;
          };
          std::vector<Sharding> shardings;
          for (const auto& [zero, distopt] : zeros)
            for (int ep : eps)
              if (ep == 1 || zero < 2 || fx.ep) shardings.push_back({zero, distopt, ep});
          for (const auto& [sched, v] : scheds)
            for (const auto& [zero, distopt, ep] : shardings)
              for (auto rc : policies) {
                Candidate c;
                auto& k = c.config;
                k.dp = dp;
                k.tp = tp;
                k.pp = pp;
                k.cp = cp;
                k.ep = ep;
                k.vp = v;
                k.micro_batch = mb;
                k.global_batch = s.global_batch;
                k.schedule = sched;
                k.zero = zero;
                k.distributed_optimizer = distopt;
                k.sequence_parallel = sequence_parallel_for(s, tp);
                k.framework = s.framework;
                k.optimizer = s.optimizer;
                k.tp_comm_overlap = s.base.tp_comm_overlap && tp > 1 && k.sequence_parallel;
                k.fused_loss = s.base.fused_loss;
                k.grad_reduce_bytes = s.base.grad_reduce_bytes;
                k.optimizer_state_bytes = s.base.optimizer_state_bytes;
                k.master_weights = s.base.master_weights;
                k.hints = s.base.hints;
                k.devices_per_node = s.devices_per_node;
                c.recompute = rc;
                c.order = out.size();
                if (!estimate::validate(k).ok()) continue;
                out.push_back(c);
                // Uneven stages: the layers cut where the stages' work is
                // most even (the first and last stages also hold the
                // embedding and the head).
                if (pp > 1 && v == 1) {
                  Candidate b = c;
                  b.config.balance_stages = true;
                  out.push_back(b);
                }
                // The same devices may also split the batch on the tp axis
                // (hybrid data/model parallelism) when nothing pins it.
                if (tp > 1 && pp == 1 && s.hybrid_tp && !data_only) {
                  c.config.tp_splits_batch = true;
                  c.config.sequence_parallel = false;
                  out.push_back(c);
                }
              }
        }
      }
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) out[i].order = i;
  return out;
}

std::vector<std::optional<std::size_t>> twin_of(const std::vector<Candidate>& layouts) {
  // Everything but dp and cp, then dp x cp.
  auto key = [](const Candidate& c) {
    const auto& k = c.config;
    return std::make_tuple(k.tp, k.pp, k.vp, k.ep, k.micro_batch, static_cast<int>(k.schedule), k.zero,
                           k.distributed_optimizer, k.sequence_parallel, k.tp_splits_batch, k.balance_stages,
                           k.split_embedding_loss, static_cast<int>(c.recompute), k.dp * k.cp);
  };
  std::map<decltype(key(layouts.front())), std::size_t> plain;
  for (std::size_t i = 0; i < layouts.size(); ++i)
    if (layouts[i].config.cp == 1 && layouts[i].config.layers_per_chunk.empty()) plain.emplace(key(layouts[i]), i);
  std::vector<std::optional<std::size_t>> out(layouts.size());
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    if (layouts[i].config.cp == 1 || !layouts[i].config.layers_per_chunk.empty()) continue;
    const auto it = plain.find(key(layouts[i]));
    if (it != plain.end()) out[i] = it->second;
  }
  return out;
}

SpaceRanges space_ranges(const std::vector<Candidate>& layouts) {
  SpaceRanges r;
  for (const auto& c : layouts) {
    const auto& k = c.config;
    r.tp.insert(k.tp);
    r.cp.insert(k.cp);
    r.pp.insert(k.pp);
    r.dp.insert(k.dp);
    r.ep.insert(k.ep);
    r.micro_batch.insert(k.micro_batch);
    r.pp_vp.insert({k.pp, k.vp});
    r.schedules.insert(k.schedule);
    r.state_sharding.insert({k.zero, k.distributed_optimizer});
    r.recompute.insert(c.recompute);
    if (k.tp > 1) r.sequence_parallel.insert(k.sequence_parallel);
    if (k.pp > 1) r.stage_cuts.insert(k.balance_stages ? "balanced" : "even");
  }
  return r;
}

namespace {

// A rank's parameters: split over tp x pp, experts over ep too, only when
// the model has them (estimate ignores ep otherwise).
struct LocalParameters {
  double dense = 0, experts = 0;
  int ep = 1;
};
LocalParameters local_parameters(const Candidate& c, const ModelFacts& facts) {
  const auto& k = c.config;
  LocalParameters p;
  p.ep = facts.experts > 0 ? k.ep : 1;
  const double expert = p.ep > 1 ? facts.expert_parameters : 0.0;
  const double split = static_cast<double>(k.tp) * k.pp;
  p.dense = (facts.parameters - expert) / split;
  p.experts = expert / (split * p.ep);
  return p;
}

}  // namespace

Bytes memory_floor(const Candidate& c, const ModelFacts& facts) {
  const auto& k = c.config;
  // Expert states shard over the dp*cp/ep ranks holding the same experts.
  const LocalParameters local = local_parameters(c, facts);
  cost::ParamCounts pc;
  pc.low_precision = local.dense;
  cost::OptimizerSetup os;
  os.optimizer = k.optimizer;
  os.sharding = k.state_sharding();
  os.data_parallel = k.dp * k.cp;
  os.fp32_grads = false;  // the smallest gradient any framework keeps
  // The layout's own optimizer-state dtype, master copy and gradient
  // reduction width, as estimate holds them (a default fp32 Adam would
  // overstate a bf16-state recipe's floor and prune layouts that fit).
  os.grads_16bit = k.grad_reduce_bytes == 2;
  os.state_bytes = k.optimizer_state_bytes;
  os.master = k.master_weights;
  Bytes floor = cost::model_state(pc, os).total();
  if (local.experts > 0) {
    cost::ParamCounts pe;
    pe.low_precision = local.experts;
    cost::OptimizerSetup oe = os;
    oe.data_parallel = std::max(1, k.dp * k.cp / local.ep);
    floor += cost::model_state(pe, oe).total();
  }
  return floor;
}

// Why it is at most the fullest stage's peak (src/estimate/memory.cpp):
// rank r's peak is at least S_r + A_r f_r (+ L f_L on the last rank) +
// reserve + fragmentation x its allocated bytes, S_r its model state (with
// the framework's gradient buffers per local parameter), A_r one
// micro-batch's activations of its chunks, f_r the micro-batches it holds
// at its peak, L the loss buffer's local share (at least the whole / (tp
// cp), halved when fused) and f_L the times it is held (m under GPipe,
// else 1: f_L >= f_(pp-1) below); the S_r sum to at least pp x
// memory_floor, the A_r to at least the whole micro-batch's activations /
// (tp cp) (each item split over tp x cp at most). The schedule holds f_r >=
// min(m, pp - r) under 1F1B and interleaved 1F1B (the warm-up forwards of
// rank r before its first backward) and m under GPipe. The maximum over
// ranks is at least any weighted mean: weights 1 give S + (A + L) / pp
// (f_r >= 1), weights 1 / f_r give (sum S_r / f_r + A + L) / H with H =
// sum 1 / f_r and sum S_r / f_r >= pp S / max f.
Bytes stage_memory_floor(const Candidate& c, const ModelFacts& facts, const estimate::SavedBytes& saved, Bytes reserve,
                         double fragmentation, double gradient_bytes) {
  const auto& k = c.config;
  // The framework's gradient buffers per local parameter.
  const LocalParameters local = local_parameters(c, facts);
  const double state = memory_floor(c, facts).value + gradient_bytes * (local.dense + local.experts);
  const double a = saved.activations.value / (static_cast<double>(k.tp) * k.cp);
  const double loss = saved.loss_buffer.value / (static_cast<double>(k.tp) * k.cp) * (k.fused_loss ? 0.5 : 1.0);
  const auto m = static_cast<double>(k.micro_batches());
  double h = 0, most = 1;
  for (int r = 0; r < k.pp; ++r) {
    const double f = k.pp > 1 && k.schedule == sim::Schedule::gpipe ? m : std::max(1.0, std::min(m, static_cast<double>(k.pp - r)));
    h += 1.0 / f;
    most = std::max(most, f);
  }
  const double held = std::max(state + (a + loss) / k.pp, (state * k.pp / most + a + loss) / h);
  return Bytes(held * (1.0 + fragmentation)) + reserve;
}

}  // namespace planner::search

