#include "planner/graph/graph.hpp"

#include "planner/graph/analysis.hpp"

#include <algorithm>
#include <queue>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

namespace planner::graph {

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

Bytes Tensor::bytes() const {
  return Bytes(static_cast<double>(numel()) * static_cast<double>(dtype_size(dtype)));
}

OpCost& OpCost::operator+=(const OpCost& o) {
  forward_flops += o.forward_flops;
  backward_flops += o.backward_flops;
  forward_bytes_read += o.forward_bytes_read;
  forward_bytes_written += o.forward_bytes_written;
  backward_bytes_read += o.backward_bytes_read;
  backward_bytes_written += o.backward_bytes_written;
  forward_special += o.forward_special;
  backward_special += o.backward_special;
  forward_erf += o.forward_erf;
  backward_erf += o.backward_erf;
  known = known && o.known;
  return *this;
}

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::matmul: return "matmul";
    case OpClass::conv: return "conv";
    case OpClass::attention: return "attention";
    case OpClass::normalization: return "normalization";
    case OpClass::softmax: return "softmax";
    case OpClass::elementwise: return "elementwise";
    case OpClass::reduction: return "reduction";
    case OpClass::data_movement: return "data_movement";
    case OpClass::embedding: return "embedding";
    case OpClass::loss: return "loss";
    case OpClass::control_flow: return "control_flow";
    case OpClass::constant: return "constant";
    case OpClass::other: return "other";
  }
  return "other";
}

namespace {
template <typename T>
std::optional<T> get_attr(const Op& op, std::string_view n) {
  auto it = op.attrs.find(n);
  if (it == op.attrs.end()) return std::nullopt;
  if (auto* v = std::get_if<T>(&it->second)) return *v;
  return std::nullopt;
}
}  // namespace

std::optional<std::int64_t> Op::attr_int(std::string_view n) const { return get_attr<std::int64_t>(*this, n); }
std::optional<double> Op::attr_float(std::string_view n) const {
  if (auto f = get_attr<double>(*this, n)) return f;
  if (auto i = get_attr<std::int64_t>(*this, n)) return static_cast<double>(*i);
  return std::nullopt;
}
std::optional<std::string> Op::attr_string(std::string_view n) const { return get_attr<std::string>(*this, n); }
std::optional<std::vector<std::int64_t>> Op::attr_ints(std::string_view n) const {
  return get_attr<std::vector<std::int64_t>>(*this, n);
}

TensorId OpGraph::add_tensor(Tensor t) {
  drop_derived();
  TensorId id{static_cast<std::uint32_t>(tensors_.size())};
  tensor_index_.emplace(t.name, id.value);
  tensors_.push_back(std::move(t));
  return id;
}

OpId OpGraph::add_op(Op op) {
  drop_derived();
  OpId id{static_cast<std::uint32_t>(ops_.size())};
  for (const auto& in : op.inputs)
    if (in) tensors_[in->value].consumers.push_back(id);
  for (const auto& out : op.outputs)
    if (out) tensors_[out->value].producer = id;
  op_index_.emplace(op.name, id.value);
  ops_.push_back(std::move(op));
  return id;
}

std::optional<TensorId> OpGraph::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  if (it == tensor_index_.end()) return std::nullopt;
  return TensorId{it->second};
}

std::optional<OpId> OpGraph::find_op(std::string_view name) const {
  auto it = op_index_.find(std::string(name));
  if (it == op_index_.end()) return std::nullopt;
  return OpId{it->second};
}

const Tensor* OpGraph::input(const Op& op, std::size_t i) const {
  if (i >= op.inputs.size() || !op.inputs[i]) return nullptr;
  return &tensors_[op.inputs[i]->value];
}

const Tensor* OpGraph::output(const Op& op, std::size_t i) const {
  if (i >= op.outputs.size() || !op.outputs[i]) return nullptr;
  return &tensors_[op.outputs[i]->value];
}

namespace {
// Key of the topological order among the graph's derived values.
struct TopoKey {
  friend bool operator==(const TopoKey&, const TopoKey&) = default;
};
}  // namespace

Result<std::vector<OpId>> OpGraph::topological_order() const {
  return *derived<TopoKey, Result<std::vector<OpId>>>(TopoKey{}, [&] { return compute_topological_order(); });
}

Result<std::vector<OpId>> OpGraph::compute_topological_order() const {
  // Kahn's algorithm with a min-heap on op id gives a deterministic order that
  // keeps the file's order where it is already valid. Boost.Graph's
  // topological_sort (DFS) is used to find a cycle to name when Kahn stalls.
  const std::size_t n = ops_.size();
  // Ops already in order (every producer before its readers; the importer
  // sorts them): Kahn with ties by id takes them as they are, op 0 first
  // and each next op the lowest ready one. O(edges), no adjacency lists.
  bool in_order = true;
  for (std::uint32_t i = 0; i < n && in_order; ++i)
    for (const auto& in : ops_[i].inputs)
      if (in && tensors_[in->value].producer && tensors_[in->value].producer->value >= i) {
        in_order = false;
        break;
      }
  if (in_order) {
    std::vector<OpId> order(n);
    for (std::uint32_t i = 0; i < n; ++i) order[i] = OpId{i};
    return order;
  }
  std::vector<std::vector<std::uint32_t>> succ(n);
  std::vector<std::uint32_t> indeg(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (const auto& in : ops_[i].inputs) {
      if (!in) continue;
      const auto& prod = tensors_[in->value].producer;
      if (prod && prod->value != i) {
        succ[prod->value].push_back(i);
        ++indeg[i];
      } else if (prod && prod->value == i) {
        return make_error("op '{}' ({}) reads its own output '{}': the graph has a cycle", ops_[i].name,
                          op_kind(ops_[i]), tensors_[in->value].name);
      }
    }
  }
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
  for (std::uint32_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(i);
  std::vector<OpId> order;
  order.reserve(n);
  while (!ready.empty()) {
    auto i = ready.top();
    ready.pop();
    order.push_back(OpId{i});
    for (auto s : succ[i])
      if (--indeg[s] == 0) ready.push(s);
  }
  if (order.size() == n) return order;

  // A cycle exists among the ops with indeg > 0. Ask Boost.Graph for it.
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  G g(n);
  for (std::uint32_t i = 0; i < n; ++i)
    if (indeg[i] > 0)
      for (auto s : succ[i])
        if (indeg[s] > 0) boost::add_edge(i, s, g);
  std::uint32_t culprit = 0;
  for (std::uint32_t i = 0; i < n; ++i)
    if (indeg[i] > 0) { culprit = i; break; }
  try {
    std::vector<std::size_t> tmp;
    boost::topological_sort(g, std::back_inserter(tmp));
  } catch (const boost::not_a_dag&) {
    // culprit stays the first op left over, which lies on or behind a cycle.
  }
  // Walk predecessors inside the leftover set until a repeat: that op is on a cycle.
  std::vector<char> seen(n, 0);
  std::uint32_t cur = culprit;
  while (!seen[cur]) {
    seen[cur] = 1;
    std::optional<std::uint32_t> next;
    for (const auto& in : ops_[cur].inputs) {
      if (!in) continue;
      const auto& prod = tensors_[in->value].producer;
      if (prod && indeg[prod->value] > 0) { next = prod->value; break; }
    }
    if (!next) break;
    cur = *next;
  }
  return make_error("the graph has a cycle through op '{}' ({})", ops_[cur].name, op_kind(ops_[cur]));
}

Status OpGraph::sort_topologically() {
  drop_derived();
  PLANNER_TRY(auto order, topological_order());
  bool sorted = true;
  for (std::size_t i = 0; i < order.size(); ++i)
    if (order[i].value != i) { sorted = false; break; }
  if (sorted) return Status::success();
  std::vector<std::uint32_t> new_id(ops_.size());
  std::vector<Op> ops;
  ops.reserve(ops_.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    new_id[order[i].value] = static_cast<std::uint32_t>(i);
    ops.push_back(std::move(ops_[order[i].value]));
  }
  ops_ = std::move(ops);
  op_index_.clear();
  for (std::uint32_t i = 0; i < ops_.size(); ++i) op_index_.emplace(ops_[i].name, i);
  for (auto& t : tensors_) {
    if (t.producer) t.producer = OpId{new_id[t.producer->value]};
    for (auto& c : t.consumers) c = OpId{new_id[c.value]};
    std::sort(t.consumers.begin(), t.consumers.end());
  }
  for (auto& f : fused)
    for (auto& o : f.ops) o = OpId{new_id[o.value]};
  return Status::success();
}

std::string op_kind(const Op& op) {
  if (op.domain.empty() || op.domain == "ai.onnx") return op.type;
  return op.domain + ":" + op.type;
}

GraphTotals totals(const OpGraph& g) {
  GraphTotals t;
  for (const auto& x : g.tensors()) {
    if (x.role == TensorRole::parameter) {
      t.parameter_count += x.numel();
      t.parameter_bytes += x.bytes();
    } else if (x.role == TensorRole::activation && is_floating(x.dtype)) {
      t.activation_bytes += x.bytes();
    }
  }
  for (const auto& op : g.ops()) {
    t.forward_flops += op.cost.forward_flops;
    t.training_flops += op.cost.forward_flops + op.cost.backward_flops;
    ++t.op_histogram[op_kind(op)];
    if (!op.cost.known) ++t.unknown_ops[op_kind(op)];
  }
  return t;
}

bool fusible_elementwise_edge(const Tensor& t, const OpGraph& g) {
  if (!t.producer || t.consumers.size() != 1 || !is_floating(t.dtype)) return false;
  const auto& p = g.op(*t.producer);
  const auto& c = g.op(t.consumers.front());
  if (p.op_class != OpClass::elementwise || c.op_class != OpClass::elementwise) return false;
  if (p.fused_group || c.fused_group) return false;
  const auto* out = g.output(c, 0);
  return out && out->numel() == t.numel();
}

}  // namespace planner::graph
