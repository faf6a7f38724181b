// Lowering an OpGraph to the flat op-sharding problem (design note in
// include/planner/sharding/lower_sharding.hpp).
#include "planner/sharding/lower_sharding.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "planner/ops/semantics.hpp"

namespace planner::sharding {
namespace {

using graph::OpGraph;
using graph::OpId;
using graph::TensorId;
using layout::TensorLayout;

// Ops taking part: reading a parameter, a graph input or an active output.
std::vector<bool> active_ops(const OpGraph& g, const std::vector<OpId>& order) {
  std::vector<bool> active(g.num_ops(), false);
  for (OpId id : order) {
    const graph::Op& op = g.op(id);
    if (op.type == "Shape" || op.type == "Size") continue;
    for (const auto& in : op.inputs) {
      if (!in) continue;
      const graph::Tensor& t = g.tensor(*in);
      if (t.role == graph::TensorRole::parameter || t.role == graph::TensorRole::input ||
          (t.producer && active[t.producer->value]))
        active[id.value] = true;
    }
  }
  return active;
}

struct Unit {
  std::vector<OpId> ops;
  std::optional<ops::ShardSpec> spec;  // set for fused patterns
  std::size_t pos = 0;                 // topological position of its first op
};

std::optional<std::size_t> find_port(const std::vector<ops::ShardPort>& ports, std::optional<TensorId> t) {
  if (!t) return std::nullopt;
  for (std::size_t i = 0; i < ports.size(); ++i)
    if (ports[i].tensor && *ports[i].tensor == *t) return i;
  return std::nullopt;
}

TensorLayout drop_partial(TensorLayout l) {
  for (auto a : l.partial_axes()) l = l.without(a);
  return l;
}

struct CommKey {
  std::uint32_t tensor;
  TensorLayout a, b;
  friend bool operator==(const CommKey&, const CommKey&) = default;
};
struct CommKeyHash {
  std::size_t operator()(const CommKey& k) const noexcept {
    return (k.a.hash() * 1000003u) ^ (k.b.hash() * 7919u) ^ k.tensor;
  }
};

// Repeated layers: copy c's op k stands for copy 0's op k (when every unit
// of every copy maps onto a unit of copy 0 op for op).
void share_blocks(const OpGraph& g, const std::vector<OpId>& order, const std::vector<int>& unit_of,
                  const std::vector<Unit>& units, std::vector<OpId>& rep) {
  std::map<int, std::vector<OpId>> by_layer;
  for (OpId id : order)
    if (g.op(id).layer) by_layer[*g.op(id).layer].push_back(id);
  for (const auto& b : g.blocks) {
    bool ok = true;
    for (int l = b.first_layer; l < b.first_layer + b.count && ok; ++l)
      ok = by_layer[l].size() == static_cast<std::size_t>(b.ops_per_block);
    if (!ok || b.count < 2) continue;
    std::vector<OpId> saved = rep;
    const auto& first = by_layer[b.first_layer];
    for (int l = b.first_layer + 1; l < b.first_layer + b.count; ++l)
      for (std::size_t k = 0; k < first.size(); ++k) rep[by_layer[l][k].value] = first[k];
    // Every unit of a copy must map onto a unit of copy 0 op for op.
    for (int l = b.first_layer + 1; l < b.first_layer + b.count && ok; ++l)
      for (OpId id : by_layer[l]) {
        const int u = unit_of[id.value], r = unit_of[rep[id.value].value];
        if ((u < 0) != (r < 0) || g.op(id).type != g.op(rep[id.value]).type) { ok = false; break; }
        if (u < 0) continue;
        const auto &uo = units[static_cast<std::size_t>(u)].ops, &ro = units[static_cast<std::size_t>(r)].ops;
        if (uo.size() != ro.size()) { ok = false; break; }
        for (std::size_t i = 0; i < uo.size() && ok; ++i) ok = rep[uo[i].value] == ro[i];
      }
    if (!ok) rep = std::move(saved);
  }
}

// What lowering reads of the graph alone, whatever the mesh, options of the
// strategies and costs: kept with the graph (OpGraph::derived), so the
// layouts of a search build it once.
struct Structure {
  std::vector<OpId> order;
  std::vector<std::size_t> pos;  // topological position of each op
  std::vector<int> unit_of;      // unit of each op, -1: inactive
  std::vector<Unit> units;       // fused patterns first, then every other active op
  std::vector<OpId> rep;         // representative of each op (itself outside shared layers)
};
struct StructureKey {
  bool fuse_attention = true, share_repeated_layers = true;
  friend bool operator==(const StructureKey&, const StructureKey&) = default;
};

Result<std::shared_ptr<const Structure>> structure_of(const OpGraph& g, bool fuse_attention, bool share) {
  PLANNER_TRY(auto order, g.topological_order());
  return g.derived<StructureKey, Structure>(StructureKey{fuse_attention, share}, [&] {
    Structure st;
    st.order = std::move(order);
    st.pos.assign(g.num_ops(), 0);
    for (std::size_t i = 0; i < st.order.size(); ++i) st.pos[st.order[i].value] = i;
    const auto active = active_ops(g, st.order);
    st.unit_of.assign(g.num_ops(), -1);
    if (fuse_attention)
      for (const auto& p : g.fused) {
        if (p.ops.size() < 2 || !std::all_of(p.ops.begin(), p.ops.end(), [&](OpId o) { return active[o.value]; }))
          continue;
        auto spec = ops::pattern_spec(g, p);
        if (!spec) continue;
        for (OpId o : p.ops) st.unit_of[o.value] = static_cast<int>(st.units.size());
        st.units.push_back(Unit{p.ops, std::move(spec), st.pos[p.ops.front().value]});
      }
    for (OpId id : st.order)
      if (active[id.value] && st.unit_of[id.value] < 0) {
        st.unit_of[id.value] = static_cast<int>(st.units.size());
        st.units.push_back(Unit{{id}, std::nullopt, st.pos[id.value]});
      }
    st.rep.resize(g.num_ops());
    for (std::uint32_t i = 0; i < g.num_ops(); ++i) st.rep[i] = OpId{i};
    if (share) share_blocks(g, st.order, st.unit_of, st.units, st.rep);
    return st;
  });
}

class Lowerer {
 public:
  Lowerer(const OpGraph& g, const layout::DeviceMesh& mesh, const ShardingCostOracle& oracle, const LoweringOptions& o)
      : g_(g), mesh_(mesh), oracle_(oracle), o_(o) {}

  Result<LoweredSharding> run() {
    PLANNER_TRY(const auto st, structure_of(g_, o_.fuse_attention, o_.share_repeated_layers));
    const std::vector<OpId>& order = st->order;
    const std::vector<std::size_t>& pos = st->pos;
    const std::vector<int>& unit_of = st->unit_of;
    const std::vector<Unit>& units = st->units;
    const std::vector<OpId>& rep = st->rep;
    const auto kinds_memo = ops::shared_dim_kinds(g_);
    const auto& kinds = *kinds_memo;
    grad_ = ops::gradient_mask(g_);

    // Nodes: one per representative unit, in topological order.
    std::vector<int> rep_unit(units.size());
    for (std::size_t u = 0; u < units.size(); ++u) rep_unit[u] = unit_of[rep[units[u].ops.front().value].value];
    std::vector<std::size_t> reps;
    for (std::size_t u = 0; u < units.size(); ++u)
      if (rep_unit[u] == static_cast<int>(u)) reps.push_back(u);
    std::sort(reps.begin(), reps.end(), [&](std::size_t a, std::size_t b) { return units[a].pos < units[b].pos; });
    std::vector<std::size_t> node_of_unit(units.size());
    for (std::size_t n = 0; n < reps.size(); ++n) node_of_unit[reps[n]] = n;
    for (std::size_t u = 0; u < units.size(); ++u) node_of_unit[u] = node_of_unit[static_cast<std::size_t>(rep_unit[u])];

    out_.mesh = mesh_;
    out_.nodes.resize(reps.size());
    for (std::size_t n = 0; n < reps.size(); ++n) {
      const Unit& u = units[reps[n]];
      ops::ShardSpec spec = u.spec ? *u.spec : ops::op_spec(g_, u.ops.front());
      out_.nodes[n].sharding = ops::enumerate_strategies(std::move(spec), g_, mesh_, o_.sharding, kinds);
    }
    for (std::size_t u = 0; u < units.size(); ++u) out_.nodes[node_of_unit[u]].instances.push_back(units[u].ops);
    for (auto& node : out_.nodes)  // the representative first
      std::stable_sort(node.instances.begin(), node.instances.end(),
                       [&](const auto& a, const auto& b) { return pos[a.front().value] < pos[b.front().value]; });
    out_.node_of_op.assign(g_.num_ops(), std::nullopt);
    for (std::uint32_t i = 0; i < g_.num_ops(); ++i)
      if (unit_of[i] >= 0) out_.node_of_op[i] = node_of_unit[static_cast<std::size_t>(unit_of[i])];

    PLANNER_TRY_STATUS(collect_uses(order, unit_of, node_of_unit, rep));
    build_nodes();
    build_edges();
    return std::move(out_);
  }

 private:
  Status collect_uses(const std::vector<OpId>& order, const std::vector<int>& unit_of,
                      const std::vector<std::size_t>& node_of_unit, const std::vector<OpId>& rep) {
    std::map<std::pair<std::size_t, std::size_t>, std::size_t> edge_index;
    auto add_use = [&](std::size_t from, std::size_t to, EdgeUse use) {
      if (from == to) {
        add_to(out_.nodes[from].self_uses, use);
        return;
      }
      auto [it, fresh] = edge_index.try_emplace({from, to}, out_.edge_uses.size());
      if (fresh) out_.edge_uses.emplace_back();
      add_to(out_.edge_uses[it->second], use);
      if (fresh) edge_ends_.push_back({from, to});
    };
    std::map<std::uint32_t, std::pair<int, std::size_t>> first_reader;  // parameter -> (unit, port)
    for (OpId c : order) {
      if (unit_of[c.value] < 0) continue;
      const auto cu = static_cast<std::size_t>(unit_of[c.value]);
      const std::size_t cn = node_of_unit[cu];
      const auto& cspec = out_.nodes[cn].sharding.spec;
      const graph::Op& cop = g_.op(c);
      const graph::Op& crep = g_.op(rep[c.value]);
      for (std::size_t i = 0; i < cop.inputs.size(); ++i) {
        if (!cop.inputs[i]) continue;
        const TensorId t = *cop.inputs[i];
        const graph::Tensor& tt = g_.tensor(t);
        if (tt.role == graph::TensorRole::parameter) {
          const auto in_port = find_port(cspec.inputs, crep.inputs[i]);
          if (!in_port) continue;
          auto [it, fresh] = first_reader.try_emplace(t.value, static_cast<int>(cu), *in_port);
          if (fresh || it->second.first == static_cast<int>(cu)) continue;
          const auto fu = static_cast<std::size_t>(it->second.first);
          add_use(node_of_unit[fu], cn, EdgeUse{t, it->second.second, *in_port, 1, true, true});
          continue;
        }
        if (!tt.producer || unit_of[tt.producer->value] < 0) continue;  // free: inputs, constants
        const OpId p = *tt.producer;
        const auto pu = static_cast<std::size_t>(unit_of[p.value]);
        if (pu == cu) continue;  // inside a fused pattern
        const graph::Op& pop = g_.op(p);
        std::size_t o = 0;
        while (o < pop.outputs.size() && !(pop.outputs[o] && *pop.outputs[o] == t)) ++o;
        const graph::Op& prep = g_.op(rep[p.value]);
        const std::size_t pn = node_of_unit[pu];
        const auto out_port = find_port(out_.nodes[pn].sharding.spec.outputs, o < prep.outputs.size() ? prep.outputs[o] : std::nullopt);
        const auto in_port = find_port(cspec.inputs, crep.inputs[i]);
        if (!out_port || !in_port)
          return make_error("op '{}' input {} ('{}'): no port on its unit or on producer '{}'", cop.name, i, tt.name, pop.name);
        const TensorId rt = *out_.nodes[pn].sharding.spec.outputs[*out_port].tensor;
        add_use(pn, cn, EdgeUse{rt, *out_port, *in_port, 1, grad_[t.value] && core::is_floating(tt.dtype), false});
      }
    }
    return {};
  }

  static void add_to(std::vector<EdgeUse>& v, const EdgeUse& u) {
    for (auto& x : v)
      if (x.tensor == u.tensor && x.out_port == u.out_port && x.in_port == u.in_port && x.tied == u.tied &&
          x.backward == u.backward) {
        x.count += u.count;
        return;
      }
    v.push_back(u);
  }

  double comm(TensorId t, const TensorLayout& a, const TensorLayout& b) {
    if (a == b) return 0.0;
    CommKey key{t.value, a, b};
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const graph::Tensor& tt = g_.tensor(t);
    double s = 0.0;
    for (const auto& step : layout::redistribute(a, b, tt.shape, tt.dtype, mesh_))
      if (!layout::is_local(step.kind)) s += oracle_.comm_time(step, mesh_).value;
    cache_.emplace(std::move(key), s);
    return s;
  }

  // Forward + backward time of one crossing between strategies sf and st.
  double use_time(const EdgeUse& u, const ops::Strategy& sf, const ops::Strategy& st) {
    const auto& to_in = st.inputs[u.in_port];
    if (u.tied) {
      const auto& from_in = sf.inputs[u.out_port];
      if (!from_in || !to_in) return 0.0;
      return comm(u.tensor, *from_in, *to_in) + comm(u.tensor, *to_in, *from_in);
    }
    const auto& from_out = sf.outputs[u.out_port];
    if (!from_out || !to_in) return 0.0;
    double s = comm(u.tensor, *from_out, *to_in);
    if (u.backward && st.input_grads[u.in_port]) s += comm(u.tensor, *st.input_grads[u.in_port], drop_partial(*from_out));
    return s;
  }

  double steps_time(const std::vector<layout::CommStep>& steps) {
    double s = 0.0;
    for (const auto& st : steps)
      if (!layout::is_local(st.kind)) s += oracle_.comm_time(st, mesh_).value;
    return s;
  }

  void build_nodes() {
    for (auto& node : out_.nodes) {
      const auto& sh = node.sharding;
      const double count = static_cast<double>(node.instances.size());
      ProblemNode pn;
      const graph::Op& first = g_.op(node.instances.front().front());
      pn.name = sh.spec.family == "attention" && sh.spec.ops.size() > 1 ? "attention(" + first.name + ")" : first.name;
      if (node.instances.size() > 1) pn.name += fmt::format(" x{}", node.instances.size());
      std::vector<std::vector<GradSyncTerm>> node_syncs;
      for (const auto& s : sh.strategies) {
        NodeStrategy ns;
        ns.name = s.assignment.is_replicated() ? s.name + " replicated" : s.name + " " + ops::to_string(s.assignment);
        double compute = 0.0;
        for (OpId id : node.instances.front()) compute += oracle_.op_time(g_.op(id), g_, s).value;
        std::vector<GradSyncTerm> syncs;
        for (std::size_t p = 0; p < sh.spec.inputs.size(); ++p)
          for (auto st : ops::weight_grad_sync(sh, s, p, g_, mesh_)) {
            if (layout::is_local(st.kind)) continue;
            double t = oracle_.comm_time(st, mesh_).value;
            if (o_.bucket_grad_sync) {
              st.bytes = Bytes(0);
              t -= oracle_.comm_time(st, mesh_).value;
            }
            syncs.push_back(GradSyncTerm{static_cast<std::size_t>(st.axis.index()), t});
          }
        double self = 0.0;
        for (const auto& u : node.self_uses) self += u.count * use_time(u, s, s);
        ns.cost[CostTerm::compute] = Seconds(compute * count);
        ns.cost[CostTerm::op_comm] = Seconds((steps_time(s.forward_comm) + steps_time(s.backward_comm)) * count);
        ns.cost[CostTerm::reshard] = Seconds(self);
        pn.strategies.push_back(std::move(ns));
        node_syncs.push_back(std::move(syncs));
      }
      out_.problem.nodes.push_back(std::move(pn));
      out_.grad_syncs.push_back(std::move(node_syncs));
    }
  }

  void build_edges() {
    for (std::size_t e = 0; e < out_.edge_uses.size(); ++e) {
      const auto [from, to] = edge_ends_[e];
      const auto& sf = out_.nodes[from].sharding.strategies;
      const auto& st = out_.nodes[to].sharding.strategies;
      ProblemEdge pe;
      pe.from = from;
      pe.to = to;
      std::vector<std::string> names;
      for (const auto& u : out_.edge_uses[e]) names.push_back(g_.tensor(u.tensor).name);
      pe.name = fmt::format("{}", fmt::join(names, ","));
      pe.cost.reserve(sf.size() * st.size());
      for (const auto& a : sf)
        for (const auto& b : st) {
          double s = 0.0;
          for (const auto& u : out_.edge_uses[e]) s += u.count * use_time(u, a, b);
          pe.cost.emplace_back(s);
        }
      out_.problem.edges.push_back(std::move(pe));
    }
  }

  const OpGraph& g_;
  const layout::DeviceMesh& mesh_;
  const ShardingCostOracle& oracle_;
  const LoweringOptions& o_;
  ops::GradMask grad_;
  LoweredSharding out_;
  std::vector<std::pair<std::size_t, std::size_t>> edge_ends_;
  std::unordered_map<CommKey, double, CommKeyHash> cache_;
};

}  // namespace

Result<LoweredSharding> lower_times(const OpGraph& g, const layout::DeviceMesh& mesh,
                                    const ShardingCostOracle& oracle, const LoweringOptions& options) {
  return Lowerer(g, mesh, oracle, options).run();
}

void add_state_costs(ShardingProblem& problem, const LoweredSharding& l, const OpGraph& g,
                     const ShardingCostOracle& oracle, const LoweringOptions& o) {
  for (std::size_t n = 0; n < l.nodes.size(); ++n) {
    const auto& node = l.nodes[n];
    const auto& sh = node.sharding;
    const double count = static_cast<double>(node.instances.size());
    const double weight = g.op(node.instances.front().front()).layer ? 1.0 : o.outside_layers_memory_weight;
    for (std::size_t k = 0; k < sh.strategies.size(); ++k) {
      double sync = 0.0;
      for (const auto& t : l.grad_syncs[n][k])
        sync += t.seconds * (t.axis < o.axis_grad_sync_weight.size() ? o.axis_grad_sync_weight[t.axis] : o.grad_sync_weight);
      auto& ns = problem.nodes[n].strategies[k];
      ns.cost[CostTerm::grad_sync] = Seconds(sync * count);
      ns.memory = oracle.memory(sh, sh.strategies[k], g, l.mesh) * count * weight;
    }
  }
  problem.memory_limit = o.memory_limit;
}

Result<LoweredSharding> lower_sharding(const OpGraph& g, const layout::DeviceMesh& mesh,
                                       const ShardingCostOracle& oracle, const LoweringOptions& options) {
  PLANNER_TRY(LoweredSharding l, lower_times(g, mesh, oracle, options));
  add_state_costs(l.problem, l, g, oracle, options);
  return l;
}

const ops::Strategy& chosen(const LoweredSharding& l, const Choice& c, std::size_t node) {
  return l.nodes[node].sharding.strategies[c[node]];
}

std::optional<std::size_t> find_node(const LoweredSharding& l, const OpGraph& g, std::string_view op_name) {
  const auto id = g.find_op(op_name);
  if (!id || id->value >= l.node_of_op.size()) return std::nullopt;
  return l.node_of_op[id->value];
}

std::vector<PlannedComm> planned_comms(const LoweredSharding& l, const OpGraph& g, const Choice& c) {
  std::vector<PlannedComm> out;
  std::size_t at = 0;  // node the pushed collectives belong to
  auto push = [&](CostTerm src, bool bwd, const std::vector<layout::CommStep>& steps, int count, const std::string& where) {
    for (const auto& s : steps)
      if (!layout::is_local(s.kind)) out.push_back(PlannedComm{src, bwd, s, count, where, at});
  };
  auto crossing = [&](const EdgeUse& u, const ops::Strategy& sf, const ops::Strategy& st, const std::string& where) {
    const graph::Tensor& t = g.tensor(u.tensor);
    const auto& to_in = st.inputs[u.in_port];
    const auto& from = u.tied ? sf.inputs[u.out_port] : sf.outputs[u.out_port];
    if (!from || !to_in) return;
    push(CostTerm::reshard, false, layout::redistribute(*from, *to_in, t.shape, t.dtype, l.mesh), u.count, where);
    if (u.tied) {
      push(CostTerm::reshard, true, layout::redistribute(*to_in, *from, t.shape, t.dtype, l.mesh), u.count, where);
    } else if (u.backward && st.input_grads[u.in_port]) {
      push(CostTerm::reshard, true,
           layout::redistribute(*st.input_grads[u.in_port], drop_partial(*from), t.shape, t.dtype, l.mesh), u.count,
           where);
    }
  };
  for (std::size_t n = 0; n < l.nodes.size(); ++n) {
    const auto& node = l.nodes[n];
    const auto& s = chosen(l, c, n);
    at = n;
    const int count = static_cast<int>(node.instances.size());
    const std::string where = "node " + l.problem.nodes[n].name;
    push(CostTerm::op_comm, false, s.forward_comm, count, where);
    push(CostTerm::op_comm, true, s.backward_comm, count, where);
    for (std::size_t p = 0; p < node.sharding.spec.inputs.size(); ++p)
      push(CostTerm::grad_sync, true, ops::weight_grad_sync(node.sharding, s, p, g, l.mesh), count, where);
    for (const auto& u : node.self_uses) crossing(u, s, s, where + " (next copy)");
  }
  for (std::size_t e = 0; e < l.problem.edges.size(); ++e) {
    const auto& pe = l.problem.edges[e];
    at = pe.to;
    const std::string where = fmt::format("edge {} -> {} ({})", l.problem.nodes[pe.from].name,
                                          l.problem.nodes[pe.to].name, pe.name);
    for (const auto& u : l.edge_uses[e]) crossing(u, chosen(l, c, pe.from), chosen(l, c, pe.to), where);
  }
  return out;
}

std::string describe_plan(const LoweredSharding& l, const Choice& c) {
  std::string out;
  for (std::size_t n = 0; n < l.nodes.size(); ++n)
    out += fmt::format("{}: {}\n", l.problem.nodes[n].name, ops::describe(l.nodes[n].sharding, chosen(l, c, n), l.mesh));
  return out;
}

}  // namespace planner::sharding
