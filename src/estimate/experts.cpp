// Experts of MoE layers: found by name, their parameters, and the tokens
// the expert-parallel all-to-alls move (include/planner/estimate/experts.hpp).

#include "planner/estimate/experts.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "internal.hpp"
#include "planner/cost/memory.hpp"

namespace planner::estimate {
namespace detail {

std::optional<graph::OpId> param_reader(const graph::OpGraph& g, graph::TensorId t, int depth) {
  for (graph::OpId c : g.tensor(t).consumers) {
    const auto& op = g.op(c);
    const bool pass = op.type == "Cast" || op.type == "Identity" || op.type == "Transpose" || op.type == "CastLike";
    if (pass && depth < 4 && !op.outputs.empty() && op.outputs[0]) {
      if (auto r = param_reader(g, *op.outputs[0], depth + 1)) return r;
    }
    return c;
  }
  return std::nullopt;
}

bool param_shared(const graph::OpGraph& g, graph::TensorId t) { return cost::parameter_readers(g, t).size() > 1; }

std::vector<int> param_copy_chunks(const graph::OpGraph& g, const Layout& L, graph::TensorId t, int pp) {
  std::map<int, int> by_rank;  // rank -> its first chunk reading t
  if (pp <= 1) return {};
  const auto owner = param_reader(g, t);
  if (!owner) return {};
  const int home = L.chunk_of_op[owner->value] % pp;
  for (graph::OpId r : cost::parameter_readers(g, t)) {
    const int chunk = L.chunk_of_op[r.value];
    if (chunk % pp == home) continue;
    auto [it, fresh] = by_rank.emplace(chunk % pp, chunk);
    if (!fresh) it->second = std::min(it->second, chunk);
  }
  std::vector<int> out;
  for (const auto& [rank, chunk] : by_rank) out.push_back(chunk);
  return out;
}

}  // namespace detail

ExpertCount count_experts(const graph::OpGraph& g) {
  ExpertCount out;
  for (const auto& op : g.ops())
    if (const auto e = expert_index(op.name)) out.experts = std::max(out.experts, *e + 1);
  if (out.experts == 0) return out;
  // The reader memory() places the parameter by (detail::param_reader), so
  // the search's memory floor splits exactly the parameters estimate splits.
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const auto& t = g.tensor(graph::TensorId{i});
    if (t.role != graph::TensorRole::parameter || !core::is_floating(t.dtype)) continue;
    const auto reader = detail::param_reader(g, graph::TensorId{i});
    if (reader && expert_index(g.op(*reader).name)) out.parameters += static_cast<double>(t.numel());
  }
  return out;
}

namespace detail {

namespace {
struct ExpertsKey {
  friend bool operator==(const ExpertsKey&, const ExpertsKey&) = default;
};
struct Experts {
  std::vector<int> expert_of_op;
  int experts = 0;
};
}  // namespace

namespace {
std::shared_ptr<const Experts> experts_by_op(const graph::OpGraph& g) {
  // From the op names alone: once per graph (OpGraph::derived).
  return g.derived<ExpertsKey, Experts>(ExpertsKey{}, [&] {
    Experts x;
    x.expert_of_op.assign(g.num_ops(), -1);
    for (std::uint32_t i = 0; i < g.num_ops(); ++i)
      if (const auto e = expert_index(g.op(graph::OpId{i}).name)) {
        x.expert_of_op[i] = *e;
        x.experts = std::max(x.experts, *e + 1);
      }
    return x;
  });
}
}  // namespace

void find_experts(const graph::OpGraph& g, Layout& L) {
  const auto found = experts_by_op(g);
  L.expert_of_op = found->expert_of_op;
  L.experts = found->experts;
}

int experts_per_layer(const graph::OpGraph& g) { return experts_by_op(g)->experts; }

bool is_expert_op(const Layout& L, std::optional<graph::OpId> op) {
  return op && L.experts > 0 && L.expert_of_op[op->value] >= 0;
}

std::vector<ExpertTraffic> expert_traffic(const graph::OpGraph& g, const Layout& L, double element_bytes) {
  std::vector<ExpertTraffic> out(static_cast<std::size_t>(L.chunks));
  if (L.experts == 0) return out;
  // The MoE layer of an expert op: its repeated layer when that layer holds
  // several experts (a transformer block with its MoE MLP); when each
  // expert is a repeated block of its own (identical experts and nothing
  // else), the experts of the graph form one MoE layer (key -1).
  std::map<int, std::set<int>> experts_in_layer;
  for (graph::OpId id : L.order)
    if (L.expert_of_op[id.value] >= 0 && g.op(id).layer) experts_in_layer[*g.op(id).layer].insert(L.expert_of_op[id.value]);
  auto moe_layer = [&](const graph::Op& op) {
    return op.layer && experts_in_layer[*op.layer].size() > 1 ? *op.layer : -1;
  };
  // Per (MoE layer, expert): its first and last GEMM in topological order.
  std::map<std::pair<int, int>, std::pair<graph::OpId, graph::OpId>> ends;
  for (graph::OpId id : L.order) {
    const int e = L.expert_of_op[id.value];
    const auto& op = g.op(id);
    if (e < 0 || op.op_class != graph::OpClass::matmul) continue;
    const std::pair<int, int> key{moe_layer(op), e};
    auto it = ends.find(key);
    if (it == ends.end()) ends.emplace(key, std::pair{id, id});
    else it->second.second = id;
  }
  auto bytes_of = [&](graph::TensorId t) {
    return Bytes(static_cast<double>(g.tensor(t).numel()) * local_fraction(L, g, t) * element_bytes);
  };
  std::vector<std::set<int>> layers(out.size());
  for (const auto& [key, fl] : ends) {
    const auto ch = static_cast<std::size_t>(L.chunk_of_op[fl.first.value]);
    layers[ch].insert(key.first);
    // Dispatch: the activation the first GEMM reads (not a weight).
    for (const auto& in : g.op(fl.first).inputs)
      if (in && g.tensor(*in).role != graph::TensorRole::parameter && core::is_floating(g.tensor(*in).dtype)) {
        out[ch].dispatch += bytes_of(*in);
        break;
      }
    // Combine: what the last GEMM writes.
    const auto& outs = g.op(fl.second).outputs;
    if (!outs.empty() && outs[0]) out[ch].combine += bytes_of(*outs[0]);
  }
  for (std::size_t ch = 0; ch < out.size(); ++ch) out[ch].moe_layers = static_cast<int>(layers[ch].size());
  return out;
}

core::Placement data_group(const Layout& L, const ParallelConfig& c, DataGroup which) {
  const int n = c.dp * c.cp;
  const int ep = std::max(1, std::min(c.ep, n));
  const int rpn = std::min(n, L.full.ranks_per_node(layout::MeshAxis(1)) * L.full.ranks_per_node(layout::MeshAxis(2)));
  // Consecutive dp*cp ranks share a node rpn at a time: an ep group of
  // consecutive ranks has min(ep, rpn) on a node; the ranks of stride ep
  // sharing a node are the rpn / that of them.
  const int ep_per_node = std::max(1, std::min(ep, rpn));
  switch (which) {
    case DataGroup::data: return core::Placement{n, std::max(1, rpn)};
    case DataGroup::expert: return core::Placement{ep, ep_per_node};
    case DataGroup::expert_data: {
      const int ranks = n / ep;
      return core::Placement{ranks, std::max(1, std::min(ranks, rpn / ep_per_node))};
    }
  }
  return core::Placement{n, std::max(1, rpn)};
}

}  // namespace detail
}  // namespace planner::estimate
