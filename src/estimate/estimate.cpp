// estimate(): one training step of a layout, composed from op-level
// sharding, per-op costs, the pipeline simulator and the memory model. The
// design note is in include/planner/estimate/estimate.hpp; formulas in
// docs/estimate.md.

#include "planner/estimate/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "internal.hpp"
#include "planner/sharding/op_sharding.hpp"
#include "planner/sim/pipeline.hpp"

namespace planner::estimate {
namespace {

using graph::OpId;
using graph::TensorId;

// Chunk of each layer position: even when it divides, else the remainder
// spread over the middle chunks first (the first and last chunks also hold
// the embedding and the head).
std::vector<int> partition_layers(int layers, int chunks) {
  std::vector<int> sizes(static_cast<std::size_t>(chunks), layers / chunks);
  int extra = layers % chunks;
  for (int c = 1; c + 1 < chunks && extra > 0; ++c, --extra) ++sizes[static_cast<std::size_t>(c)];
  for (int c = chunks - 1; extra > 0; c = (c == 0 ? chunks - 1 : c - 1), --extra) ++sizes[static_cast<std::size_t>(c)];
  std::vector<int> of;
  for (int c = 0; c < chunks; ++c)
    for (int i = 0; i < sizes[static_cast<std::size_t>(c)]; ++i) of.push_back(c);
  return of;
}

// Added to every strategy a hint rules out: no real choice costs this much,
// so the solver keeps the hinted ones and chooses the rest around them.
constexpr double kHintPenalty = 1e9;

// The first hint matching any op of the unit (any copy), or null.
const Hint* hint_for(const sharding::LoweredNode& node, const graph::OpGraph& g, const std::vector<Hint>& hints) {
  for (const auto& h : hints)
    for (const auto& inst : node.instances)
      for (graph::OpId id : inst)
        if (glob_match(h.pattern, g.op(id).name)) return &h;
  return nullptr;
}

bool strategy_matches(const ops::Strategy& s, std::string_view want) {
  if (s.name == want) return true;
  if (want == "replicated") return s.assignment.is_replicated();
  const auto a = ops::parse_assignment(want);
  return a.ok() && !a->is_replicated() && *a == s.assignment;
}

Status apply_hints(sharding::ShardingProblem& problem, const sharding::LoweredSharding& l, const graph::OpGraph& g,
                   const std::vector<Hint>& hints) {
  if (hints.empty()) return {};
  std::vector<bool> used(hints.size(), false);
  for (std::size_t n = 0; n < l.nodes.size(); ++n) {
    const Hint* h = hint_for(l.nodes[n], g, hints);
    if (!h) continue;
    used[static_cast<std::size_t>(h - hints.data())] = true;
    const auto& strategies = l.nodes[n].sharding.strategies;
    bool any = false;
    for (std::size_t s = 0; s < strategies.size(); ++s) {
      if (strategy_matches(strategies[s], h->strategy)) {
        any = true;
        continue;
      }
      problem.nodes[n].strategies[s].cost[sharding::CostTerm::compute] += Seconds(kHintPenalty);
    }
    if (!any) {
      std::string offered;
      for (std::size_t s = 0; s < strategies.size() && s < 8; ++s)
        offered += fmt::format("{}{} [{}]", s ? ", " : "", strategies[s].name,
                               strategies[s].assignment.is_replicated() ? "replicated" : ops::to_string(strategies[s].assignment));
      return make_error("hints line {}: '{}' is not a strategy of '{}' on this mesh (offered: {})", h->line, h->strategy,
                        problem.nodes[n].name, offered);
    }
  }
  for (std::size_t i = 0; i < hints.size(); ++i)
    if (!used[i]) return make_error("hints line {}: '{}' matches no op of the model", hints[i].line, hints[i].pattern);
  return {};
}

// Megatron's --sequence-parallel is a layout, not an option the solver may
// decline: the ops outside the tensor-parallel GEMMs (layer norms, dropout,
// residual adds) run sequence-sharded over tp, so their activations are 1/t
// per device (Korthikanti et al. 2022, section 4.2.2). Under --sp every unit
// that has a strategy using the tp axis is kept off the strategies that
// leave tp unused (replicated), whatever the collectives cost (an NVLS
// all-reduce can beat the ring reduce-scatter + all-gather pair, yet
// Megatron still issues the pair).
constexpr double kSequenceParallelPenalty = 1e6;

// Whether strategy s splits one of the unit's weights over mesh axis `tp`.
bool splits_weight(const ops::OpSharding& sh, const ops::Strategy& s, const graph::OpGraph& g, layout::MeshAxis tp) {
  for (std::size_t i = 0; i < sh.spec.inputs.size() && i < s.inputs.size(); ++i) {
    const auto& port = sh.spec.inputs[i];
    if (!port.tensor || g.tensor(*port.tensor).role != graph::TensorRole::parameter || !s.inputs[i]) continue;
    for (int d = 0; d < s.inputs[i]->rank(); ++d) {
      const auto axes = s.inputs[i]->dim_axes(d);
      if (std::find(axes.begin(), axes.end(), tp) != axes.end()) return true;
    }
  }
  return false;
}

// Also, a GEMM (matmul family) with a weight is column- or row-parallel in
// Megatron: its weight is split over tp. A sequence-split GEMM with the
// weight replicated, which the solver may find cheaper for a small GQA
// key/value projection, is not a Megatron layout. (Biases and norm weights of
// the sequence-parallel regions stay replicated.)
void enforce_sequence_parallel(sharding::ShardingProblem& problem, const sharding::LoweredSharding& l,
                               const graph::OpGraph& g) {
  const auto tp = l.mesh.find("tp");
  for (std::size_t n = 0; n < l.nodes.size(); ++n) {
    const auto& sh = l.nodes[n].sharding;
    const auto& strategies = sh.strategies;
    // Index bookkeeping (labels, positions) carries no activation memory.
    const bool floating = std::any_of(sh.spec.outputs.begin(), sh.spec.outputs.end(), [&](const ops::ShardPort& p) {
      return p.tensor && core::is_floating(g.tensor(*p.tensor).dtype);
    });
    if (!floating) continue;
    const bool any_tp = std::any_of(strategies.begin(), strategies.end(), [](const ops::Strategy& s) { return s.assignment.uses_axis("tp"); });
    if (!any_tp) continue;
    const bool any_weight = tp && sh.spec.family == "matmul" && std::any_of(strategies.begin(), strategies.end(),
                                              [&](const ops::Strategy& s) { return splits_weight(sh, s, g, *tp); });
    for (std::size_t s = 0; s < strategies.size(); ++s)
      if (!strategies[s].assignment.uses_axis("tp") || (any_weight && !splits_weight(sh, strategies[s], g, *tp)))
        problem.nodes[n].strategies[s].cost[sharding::CostTerm::compute] += Seconds(kSequenceParallelPenalty);
  }
}

}  // namespace

std::optional<std::string> placement_error(const ParallelConfig& c) {
  detail::Layout L;
  if (auto st = detail::make_meshes(c, L); !st.ok()) return st.error().message;
  return std::nullopt;
}

Seconds CommTotals::total() const {
  Seconds s;
  for (const auto& [k, v] : by_kind) s += v;
  return s;
}

std::string_view Estimate::memory_status() const {
  if (!fits) return "does not fit";
  return peak_stage().peak() > capacity * (1.0 - memory_margin) ? "at risk" : "fits";
}

const StageMemory& Estimate::peak_stage() const {
  return *std::max_element(stages.begin(), stages.end(),
                           [](const StageMemory& a, const StageMemory& b) { return a.peak() < b.peak(); });
}

namespace detail {

namespace {
struct LayerIndexKey {
  friend bool operator==(const LayerIndexKey&, const LayerIndexKey&) = default;
};
}  // namespace

std::shared_ptr<const LayerIndex> layers_of(const graph::OpGraph& g) {
  return g.derived<LayerIndexKey, LayerIndex>(LayerIndexKey{}, [&] {
    std::set<int> ids;
    for (const auto& op : g.ops())
      if (op.layer) ids.insert(*op.layer);
    std::map<int, int> pos;
    for (int id : ids) pos.emplace(id, static_cast<int>(pos.size()));
    LayerIndex x;
    x.layers = static_cast<int>(ids.size());
    x.pos_of_op.assign(g.num_ops(), -1);
    for (std::uint32_t i = 0; i < g.num_ops(); ++i)
      if (const auto& l = g.op(OpId{i}).layer) x.pos_of_op[i] = pos.at(*l);
    return x;
  });
}

Status make_meshes(const ParallelConfig& c, Layout& L) {
  // Meshes: the whole cluster (Megatron's order, tp fastest) and the
  // model-parallel sub-mesh the op-level search runs on.
  PLANNER_TRY(L.full, layout::DeviceMesh::create({{"pp", c.pp}, {"dp", c.dp}, {"cp", c.cp}, {"tp", c.tp}},
                                                 c.devices_per_node));
  PLANNER_TRY(L.mp, model_parallel_mesh(c));
  return Status::success();
}

Result<layout::DeviceMesh> model_parallel_mesh(const ParallelConfig& c) {
  std::vector<layout::AxisSpec> mp_axes;
  if (c.cp > 1) mp_axes.push_back({"cp", c.cp});
  if (c.tp > 1) mp_axes.push_back({"tp", c.tp});
  return layout::DeviceMesh::create(mp_axes, std::min(c.devices_per_node, c.cp * c.tp));
}

Status check_attention_split(const graph::OpGraph& g, const ParallelConfig& c) {
  // Divisibility the op-level search cannot choose around.
  for (const auto& p : g.fused) {
    const auto& first = g.op(p.ops.front());
    if (c.tp > 1 && p.heads % c.tp != 0)
      return Error{fmt::format("attention heads {} of '{}' are not divisible by `tp` {}", p.heads, first.name, c.tp)};
    if (auto why = context_parallel_error(p.seq_q, c.tp, c.cp, c.sequence_parallel)) {
      // "sequence length S of 'op' is not ..." (the op named after the length).
      const std::string prefix = fmt::format("sequence length {}", p.seq_q);
      return Error{fmt::format("{} of '{}'{}", prefix, first.name, why->substr(prefix.size()))};
    }
  }
  return Status::success();
}

sharding::LoweringOptions lowering_options(const ParallelConfig& c, const layout::DeviceMesh& mp) {
  sharding::LoweringOptions lo;
  lo.sharding.sequence_parallel = c.sequence_parallel;
  if (c.tp_splits_batch)
    for (const auto axis : mp.axes())
      lo.sharding.roles.push_back(mp.name(axis) == "tp" ? ops::AxisRole::any : ops::AxisRole::sequence);
  return lo;
}

Result<KeptLowering> lowered_times(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                                   const layout::DeviceMesh& mp, const CostModelOracle& oracle,
                                   const sharding::LoweringOptions& lo, LoweringCache* cache) {
  KeptLowering r;
  const LoweringCache::Key key{&g, &model, c.cp, c.tp, mp.devices_per_node(), c.sequence_parallel,
                              c.tp_splits_batch, oracle.expert_batch()};
  r.kept = cache ? cache->find(key) : nullptr;
  if (r.kept) {
    r.lowered = r.kept->lowered();
    return r;
  }
  PLANNER_TRY(sharding::LoweredSharding fresh, sharding::lower_times(g, mp, oracle, lo));
  r.lowered = std::make_shared<const sharding::LoweredSharding>(std::move(fresh));
  if (cache && (r.kept = cache->keep(key, r.lowered))) r.lowered = r.kept->lowered();
  return r;
}

Result<Layout> build_layout(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                            const ShardingSolver* solver, std::optional<Bytes> state_limit, LoweringCache* cache) {
  Layout L;
  PLANNER_TRY_STATUS(make_meshes(c, L));
  PLANNER_TRY_STATUS(check_attention_split(g, c));

  // Layers and chunks.
  const auto layer_index = layers_of(g);
  const std::vector<int>& pos_of_op = layer_index->pos_of_op;
  L.chunks = c.pp * c.vp;
  const int layers = layer_index->layers;
  L.layers = layers;
  if (L.chunks > 1 && layers < L.chunks)
    return Error{fmt::format("`pp` {} x `vp` {} = {} pipeline chunks need at least {} repeated layers; the model has {}",
                                  c.pp, c.vp, L.chunks, L.chunks, layers)};
  // Megatron-Core's split with the embedding and the loss as layers.
  std::vector<int> accounted;
  if (c.split_embedding_loss && c.layers_per_chunk.empty() && L.chunks > 1) {
    PLANNER_TRY(accounted, embedding_loss_chunk_sizes(layers, L.chunks));
  }
  // An explicit cut (a plan's own, or the accounted split) may be uneven.
  if (c.vp > 1 && c.layers_per_chunk.empty() && accounted.empty() && layers % L.chunks != 0)
    return Error{fmt::format("interleaved schedule: {} layers are not divisible by pp*vp = {}", layers, L.chunks)};
  if (!c.layers_per_chunk.empty()) {
    int sum = 0;
    for (int n : c.layers_per_chunk) {
      if (n < 1) return Error{fmt::format("layers per pipeline chunk must be at least 1 (got {})", n)};
      sum += n;
    }
    if (static_cast<int>(c.layers_per_chunk.size()) != L.chunks || sum != layers)
      return Error{fmt::format("{} pipeline chunks with {} layers in all given; the layout has {} chunks and the model {} layers",
                               c.layers_per_chunk.size(), sum, L.chunks, layers)};
  }
  PLANNER_TRY(std::vector<OpId> order, g.topological_order());
  L.order = order;
  find_experts(g, L);
  if (c.ep > 1 && L.experts > 0 && L.experts % c.ep != 0)
    return Error{fmt::format("`ep` {} does not divide the {} experts per MoE layer", c.ep, L.experts)};

  // Op-level sharding on the model-parallel mesh.
  sharding::LoweringOptions lo = lowering_options(c, L.mp);
  // The solver's objective is one micro-batch's time. Weights are always
  // replicated over cp (Megatron reduces their gradients over dp x cp once
  // per step; step.cpp adds that sync once), so a micro-batch carries 1/m
  // of it: charged in full, it outweighed the cp split of the compute on
  // fast (fp8) GEMMs and the search left cp unused. A weight replicated over
  // tp keeps weight 1: its sync stands in for what the solver does not see
  // (a tp-times larger data-parallel gradient and optimizer step).
  lo.grad_sync_weight = 1.0;
  for (const auto axis : L.mp.axes())
    lo.axis_grad_sync_weight.push_back(
        L.mp.name(axis) == "cp" ? 1.0 / static_cast<double>(std::max<std::int64_t>(1, c.micro_batches())) : 1.0);
  const auto sb =
      cost::state_bytes_per_param(c.optimizer, false, true, c.optimizer_state_bytes, c.master_weights);
  const double d = c.dp * c.cp;
  const double bytes_per_param =
      c.zero >= 3 ? sb.total() / d
                  : (c.zero == 2 ? sb.weight + (sb.gradient + sb.optimizer) / d
                                 : (c.zero == 1 || c.distributed_optimizer ? sb.weight + sb.gradient + sb.optimizer / d
                                                                          : sb.total()));
  const int batch = expert_batch(L.experts, c);
  const CostModelOracle oracle(model, L.mp, bytes_per_param, wire_scale(g, model), batch);
  // Model state may take at most 3/4 of the memory of the pp devices that
  // hold the model (the rest is for activations, buffers and reserve), so
  // the search does not trade memory it does not have for time (a
  // replicated weight saves a collective but costs 16+ bytes per element);
  // estimate() retries with a tighter state_limit when a stage overflows.
  lo.memory_limit = state_limit ? *state_limit : model.device_memory() * (0.75 * c.pp);
  // The embedding and the head sit whole on one stage: counted pp times
  // against that bound, a stage's layers plus both must fit one device's
  // budget (a replicated 2 B-parameter embedding cannot hide in the sum).
  lo.outside_layers_memory_weight = static_cast<double>(c.pp);
  // The time part of the lowering: kept across the layouts of a search.
  PLANNER_TRY(KeptLowering times, lowered_times(g, model, c, L.mp, oracle, lo, cache));
  L.lowered = times.lowered;
  const std::shared_ptr<LoweringCache::Entry> kept = times.kept;
  // This layout's problem: its state costs, hints and sequence parallelism.
  auto price = [&]() -> Status {
    L.problem = L.lowered->problem;
    sharding::add_state_costs(L.problem, *L.lowered, g, oracle, lo);
    PLANNER_TRY_STATUS(apply_hints(L.problem, *L.lowered, g, c.hints));
    if (c.sequence_parallel) enforce_sequence_parallel(L.problem, *L.lowered, g);
    return Status::success();
  };
  PLANNER_TRY_STATUS(price());
  auto solve = [&](const sharding::ShardingProblem& p) -> Result<sharding::Solution> {
    if (solver) return (*solver)(p);
    // The default solver's first pass reads the time costs only: the same
    // for every layout of the kept lowering with these sync weights.
    if (!kept || !c.hints.empty()) return sharding::solve(p);
    PLANNER_TRY(sharding::Solution fast, kept->first_pass(lo.axis_grad_sync_weight, [&] { return sharding::solve_time_only(p); }));
    return sharding::solve(p, std::move(fast));
  };
  auto solved = solve(L.problem);
  if (!solved.ok()) {
    // Nothing fits the bound: take the fastest choice; the memory report
    // will say it does not fit.
    lo.memory_limit.reset();
    PLANNER_TRY_STATUS(price());
    solved = solve(L.problem);
  }
  PLANNER_TRY(sharding::Solution sol, std::move(solved));
  L.choice = std::move(sol.choice);
  L.state_bound = sol.evaluation.memory;
  for (const auto& node : L.problem.nodes) {
    Bytes least = node.strategies.front().memory;
    for (const auto& st : node.strategies) least = std::min(least, st.memory);
    L.min_state_bound += least;
  }
  // A hinted unit must have kept its hinted strategy (the penalty could only
  // lose to an infeasible memory bound).
  for (std::size_t n = 0; n < L.lowered->nodes.size(); ++n)
    if (L.problem.nodes[n].strategies[L.choice[n]].cost[sharding::CostTerm::compute].value >= kHintPenalty)
      return make_error("hints: '{}' cannot keep its hinted strategy within the memory bound", L.problem.nodes[n].name);
  L.exact = sol.exact;

  // Strategy per op; layout per tensor (every copy of a shared node); each
  // tensor's local fraction. The same for every layout of a kept lowering
  // that makes the same choice: kept with it.
  auto assign = [&] {
    L.strategy_of_op.assign(g.num_ops(), nullptr);
    L.layout_of_tensor.assign(g.num_tensors(), nullptr);
    auto set_layout = [&](TensorId t, const layout::TensorLayout& l) {
      if (!L.layout_of_tensor[t.value]) L.layout_of_tensor[t.value] = &l;  // the first copy's port wins
    };
    for (std::size_t n = 0; n < L.lowered->nodes.size(); ++n) {
      const auto& node = L.lowered->nodes[n];
      const auto& s = sharding::chosen(*L.lowered, L.choice, n);
      const auto& rep = node.instances.front();
      for (const auto& inst : node.instances) {
        for (OpId id : inst) L.strategy_of_op[id.value] = &s;
        if (inst.size() != rep.size()) continue;
        // Port tensors of this copy: same op position, same input/output index.
        auto copy_tensor = [&](TensorId t0, bool input) -> std::optional<TensorId> {
          for (std::size_t k = 0; k < rep.size(); ++k) {
            const auto& op0 = g.op(rep[k]);
            const auto& list0 = input ? op0.inputs : op0.outputs;
            for (std::size_t i = 0; i < list0.size(); ++i)
              if (list0[i] && *list0[i] == t0) {
                const auto& opc = g.op(inst[k]);
                const auto& listc = input ? opc.inputs : opc.outputs;
                if (i < listc.size() && listc[i]) return *listc[i];
              }
          }
          return std::nullopt;
        };
        for (std::size_t p = 0; p < node.sharding.spec.outputs.size() && p < s.outputs.size(); ++p) {
          const auto& port = node.sharding.spec.outputs[p];
          if (!port.tensor || !s.outputs[p]) continue;
          if (auto t = copy_tensor(*port.tensor, false)) set_layout(*t, *s.outputs[p]);
        }
        for (std::size_t p = 0; p < node.sharding.spec.inputs.size() && p < s.inputs.size(); ++p) {
          const auto& port = node.sharding.spec.inputs[p];
          if (!port.tensor || !s.inputs[p]) continue;
          if (g.tensor(*port.tensor).role != graph::TensorRole::parameter) continue;
          if (auto t = copy_tensor(*port.tensor, true)) set_layout(*t, *s.inputs[p]);
        }
      }
    }

    {
      std::vector<double> fraction(g.num_tensors());
      for (std::uint32_t t = 0; t < g.num_tensors(); ++t) fraction[t] = local_fraction(L, g, TensorId{t});
      L.fraction_of_tensor = std::move(fraction);
    }
  };
  if (kept) {
    const auto a = kept->assignment(L.choice, [&] {
      assign();
      return LoweringCache::Entry::Assignment{L.strategy_of_op, L.layout_of_tensor, L.fraction_of_tensor};
    });
    if (L.strategy_of_op.empty()) {  // found kept: copy it
      L.strategy_of_op = a->strategy_of_op;
      L.layout_of_tensor = a->layout_of_tensor;
      L.fraction_of_tensor = a->fraction_of_tensor;
    }
  } else {
    assign();
  }

  // Every op's time at its chosen strategy (the step and the balanced cut
  // both read these).
  L.op_times.resize(g.num_ops());
  auto op_time = [&](OpId id) {
    const auto* st = L.strategy_of_op[id.value];
    cost::OpScaling sc = st ? local_scaling(g.op(id), g, *st, L.mp) : cost::OpScaling::whole();
    if (batch > 1 && L.expert_of_op[id.value] >= 0) sc.batch = batch;  // as the oracle prices it
    return model.op_time(g.op(id), g, sc);
  };
  if (kept) {
    // The ops of the lowered nodes: their times at the chosen strategies,
    // kept for the other layouts of the key (the same numbers).
    std::vector<bool> done(g.num_ops(), false);
    for (std::size_t n = 0; n < L.lowered->nodes.size(); ++n) {
      const auto& instances = L.lowered->nodes[n].instances;
      const auto times = kept->node_times(n, L.choice[n], [&] {
        std::vector<cost::OpTime> t;
        for (const auto& inst : instances)
          for (OpId id : inst) t.push_back(op_time(id));
        return t;
      });
      std::size_t i = 0;
      for (const auto& inst : instances)
        for (OpId id : inst) {
          L.op_times[id.value] = (*times)[i++];
          done[id.value] = true;
        }
    }
    for (OpId id : order)
      if (!done[id.value]) L.op_times[id.value] = op_time(id);
  } else {
    for (OpId id : order) L.op_times[id.value] = op_time(id);
  }

  // Layers to pipeline chunks: explicit, balanced or even. An op goes with
  // the layer before it (ops before the first layer to chunk 0, the head and
  // loss to the last layer's chunk).
  std::vector<int> sizes;
  if (!c.layers_per_chunk.empty()) {
    sizes = c.layers_per_chunk;
  } else if (!accounted.empty()) {
    sizes = accounted;
  } else if (c.balance_stages && c.vp == 1 && L.chunks > 1) {
    // Linear partition by dynamic programming over layer cuts: the work of
    // each layer position at its chosen strategies (forward + backward +
    // recompute), the embedding in front of the first chunk and the head and
    // loss behind the last; minimise the slowest chunk (ties: earliest cut).
    std::vector<double> layer_time(static_cast<std::size_t>(layers), 0.0);
    double pre = 0, post = 0;
    int pos = -1;
    for (OpId id : order) {
      const auto& op = g.op(id);
      if (op.layer) pos = pos_of_op[id.value];
      const double t = L.op_times[id.value].total().value;
      if (pos < 0) pre += t;
      else if (!op.layer && pos == layers - 1) post += t;
      else layer_time[static_cast<std::size_t>(pos)] += t;
    }
    sizes = balanced_chunk_sizes(layer_time, pre, post, L.chunks);
  }
  std::vector<int> chunk_of_pos;
  if (sizes.empty()) {
    chunk_of_pos = L.chunks > 1 ? partition_layers(layers, L.chunks) : std::vector<int>(static_cast<std::size_t>(layers), 0);
  } else {
    for (int k = 0; k < static_cast<int>(sizes.size()); ++k)
      for (int n = 0; n < sizes[static_cast<std::size_t>(k)]; ++n) chunk_of_pos.push_back(k);
  }
  L.chunk_of_op.assign(g.num_ops(), 0);
  int current = 0;
  for (OpId id : order) {
    const auto& op = g.op(id);
    if (op.layer) current = chunk_of_pos[static_cast<std::size_t>(pos_of_op[id.value])];
    L.chunk_of_op[id.value] = current;
  }
  return L;
}

Result<std::vector<int>> embedding_loss_chunk_sizes(int layers, int chunks) {
  // E.g. 126 layers on pp 8 x vp 8 = 64 chunks: 128 slots, 2 per chunk;
  // chunk 0 holds the embedding and 1 layer, chunk 63 1 layer and the loss.
  const int slots = layers + 2;
  if (slots % chunks != 0)
    return Error{fmt::format("embedding and loss counted as layers: {} layers + 2 = {} are not divisible by pp*vp = {}",
                             layers, slots, chunks)};
  const int per = slots / chunks;
  if (per < 2)
    return Error{fmt::format("embedding and loss counted as layers: {} slots per chunk leave the first and last "
                             "chunks no layer ({} layers, pp*vp = {})", per, layers, chunks)};
  std::vector<int> sizes(static_cast<std::size_t>(chunks), per);
  sizes.front() -= 1;
  sizes.back() -= 1;
  return sizes;
}

std::vector<int> balanced_chunk_sizes(const std::vector<double>& layer_time, double pre, double post, int chunks) {
  const int layers = static_cast<int>(layer_time.size());
  std::vector<double> prefix(static_cast<std::size_t>(layers) + 1, 0.0);
  for (int i = 0; i < layers; ++i) prefix[static_cast<std::size_t>(i) + 1] = prefix[static_cast<std::size_t>(i)] + layer_time[static_cast<std::size_t>(i)];
  const int C = chunks;
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: slowest chunk when the first i layers form k chunks.
  std::vector<std::vector<double>> best(static_cast<std::size_t>(C) + 1, std::vector<double>(static_cast<std::size_t>(layers) + 1, inf));
  std::vector<std::vector<int>> cut(static_cast<std::size_t>(C) + 1, std::vector<int>(static_cast<std::size_t>(layers) + 1, 0));
  best[0][0] = 0;
  // For chunk k ending at layer i, over the previous cut j:
  //   A(j) = best[k-1][j]  is nondecreasing in j (k-1 < C: no head term;
  //          more layers never make the best cut of k-1 chunks faster),
  //   B(j) = the last chunk's time  is nonincreasing in j,
  // so max(A, B) falls while A < B and rises after: binary search finds
  // the first j with A(j) >= B(j) (O(log L) instead of a scan of all j;
  // 250,000 layers took hours). The earliest cut among equal values is
  // kept, as the exhaustive scan did:
  //   j < j*:  value B(j), least at j*-1, earliest j with B(j) == B(j*-1);
  //   j >= j*: value A(j), least (and earliest) at j*.
  for (int k = 1; k <= C; ++k) {
    const auto& A = best[static_cast<std::size_t>(k) - 1];
    for (int i = k; i <= layers - (C - k); ++i) {
      auto B = [&](int j) {
        double chunk = prefix[static_cast<std::size_t>(i)] - prefix[static_cast<std::size_t>(j)];
        if (k == 1) chunk += pre;
        if (k == C) chunk += post;
        return chunk;
      };
      // k == 1: only j = 0 (no layers before the first chunk).
      const int lo = k - 1, hi = k == 1 ? 0 : i - 1;
      int a = lo, b = hi + 1;  // first j in [lo, hi] with A(j) >= B(j), else hi + 1
      while (a < b) {
        const int m = a + (b - a) / 2;
        if (A[static_cast<std::size_t>(m)] >= B(m)) b = m;
        else a = m + 1;
      }
      const int js = a;
      double v = inf;
      int at = lo;
      if (js > lo) {
        const double vb = B(js - 1);  // > A(js - 1): the value there
        int x = lo, y = js - 1;       // earliest j with B(j) <= vb (B is nonincreasing)
        while (x < y) {
          const int m = x + (y - x) / 2;
          if (B(m) <= vb) y = m;
          else x = m + 1;
        }
        v = vb;
        at = x;
      }
      if (js <= hi && A[static_cast<std::size_t>(js)] < v) {
        v = A[static_cast<std::size_t>(js)];
        at = js;
      }
      best[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] = v;
      cut[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] = at;
    }
  }
  std::vector<int> sizes;
  sizes.assign(static_cast<std::size_t>(C), 0);
  for (int k = C, i = layers; k >= 1; --k) {
    const int j = cut[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)];
    sizes[static_cast<std::size_t>(k) - 1] = i - j;
    i = j;
  }
  return sizes;
}

double local_fraction(const Layout& L, const graph::OpGraph& g, TensorId t) {
  if (t.value < L.fraction_of_tensor.size()) return L.fraction_of_tensor[t.value];
  const auto* l = t.value < L.layout_of_tensor.size() ? L.layout_of_tensor[t.value] : nullptr;
  const auto& tensor = g.tensor(t);
  if (!l || tensor.numel() <= 0) return 1.0;
  // The local shape's element count (TensorLayout::local_shape, without
  // building it).
  double n = 1;
  for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
    const int di = static_cast<int>(d);
    n *= static_cast<double>(tensor.shape[d] / (di < l->rank() ? l->shard_count(di, L.mp) : 1));
  }
  return n / static_cast<double>(tensor.numel());
}

}  // namespace detail
}  // namespace planner::estimate
