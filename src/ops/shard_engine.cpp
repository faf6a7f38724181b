// The sharding engine: from a rule's ShardSpec to strategies, mechanically
// (see the design note of include/planner/ops/sharding.hpp), plus the dim-kind
// propagation that decides which axis may split which letter.
//
// Enumeration, for mesh(dp=2,tp=4) and MatMul letters {m, k, n}:
//
//     dp:  -   m   k   n          each axis of size > 1 takes one letter its
//     tp:  -   m   k   n          role allows, or none: (L+1)^A assignments,
//                                 minus those whose splits do not divide
//   data role -> dp: {-, m}; model role -> tp: {-, k, n}: 2 x 3 = 6 strategies
#include <algorithm>
#include <cassert>
#include <map>
#include <set>

#include <fmt/format.h>

#include "shard_rules.hpp"

namespace planner::ops {

using graph::OpGraph;
using graph::Tensor;
using layout::CommStep;
using layout::DeviceMesh;
using layout::MeshAxis;
using layout::TensorLayout;

std::string_view dim_kind_name(DimKind k) {
  switch (k) {
    case DimKind::inner: return "inner";
    case DimKind::hidden: return "hidden";
    case DimKind::sequence: return "sequence";
    case DimKind::batch: return "batch";
  }
  return "?";
}

std::string_view axis_role_name(AxisRole r) {
  switch (r) {
    case AxisRole::data: return "data";
    case AxisRole::model: return "model";
    case AxisRole::sequence: return "sequence";
    case AxisRole::any: return "any";
  }
  return "?";
}

AxisRole ShardingOptions::role_from_name(std::string_view n) {
  if (n == "dp" || n == "data" || n == "batch") return AxisRole::data;
  if (n == "tp" || n == "mp" || n == "model") return AxisRole::model;
  if (n == "cp" || n == "context" || n == "seq") return AxisRole::sequence;
  return AxisRole::any;
}

AxisRole ShardingOptions::role(MeshAxis axis, const DeviceMesh& mesh) const {
  const auto i = static_cast<std::size_t>(axis.index());
  return i < roles.size() ? roles[i] : role_from_name(mesh.name(axis));
}

namespace {

bool role_allows(AxisRole role, DimKind kind, bool sequence_parallel) {
  switch (role) {
    case AxisRole::any: return true;
    case AxisRole::data: return kind == DimKind::batch;
    case AxisRole::sequence: return kind == DimKind::sequence;
    case AxisRole::model: return kind == DimKind::inner || (sequence_parallel && kind == DimKind::sequence);
  }
  return false;
}

DimKind kind_at(const DimKinds& kinds, const ShardPort& p, std::size_t d) {
  if (!p.tensor || p.tensor->value >= kinds.size()) return DimKind::inner;
  const auto& v = kinds[p.tensor->value];
  return d < v.size() ? v[d] : DimKind::inner;
}

// Kind of each letter: the highest kind among the input dims carrying it;
// a letter only outputs carry takes the outputs' kinds.
std::vector<DimKind> letter_kinds(const ShardSpec& spec, const DimKinds& kinds, std::vector<bool>* in_inputs) {
  const std::size_t n = spec.letters.size();
  std::vector<DimKind> lk(n, DimKind::inner);
  std::vector<bool> seen(n, false);
  auto scan = [&](const std::vector<ShardPort>& ports, bool only_unseen, std::vector<bool>& mark) {
    for (const auto& p : ports)
      for (std::size_t d = 0; d < p.dims.size(); ++d) {
        const int l = p.dims[d];
        if (l < 0 || (only_unseen && seen[static_cast<std::size_t>(l)])) continue;
        auto& k = lk[static_cast<std::size_t>(l)];
        k = std::max(k, kind_at(kinds, p, d));
        mark[static_cast<std::size_t>(l)] = true;
      }
  };
  scan(spec.inputs, false, seen);
  std::vector<bool> out_seen(n, false);
  scan(spec.outputs, true, out_seen);
  if (in_inputs) *in_inputs = seen;
  return lk;
}

bool port_has(const ShardPort& p, int l) { return std::find(p.dims.begin(), p.dims.end(), l) != p.dims.end(); }

std::string tuple_text(const std::vector<std::int64_t>& v) {
  if (v.size() == 1) return fmt::format("({},)", v[0]);
  return fmt::format("({})", fmt::join(v, ","));
}

// Ports MindSpore's notation lists: inputs that are not integer constants
// (shape arguments) and not scalars.
bool named_port(const OpGraph& g, const ShardPort& p) {
  if (!p.tensor) return false;
  const Tensor& t = g.tensor(*p.tensor);
  if (t.shape.empty()) return false;
  return !(t.role == graph::TensorRole::constant && !core::is_floating(t.dtype));
}

class Enumerator {
 public:
  Enumerator(const ShardSpec& spec, const OpGraph& g, const DeviceMesh& mesh, const ShardingOptions& opt,
             const DimKinds& kinds)
      : spec_(spec), g_(g), mesh_(mesh) {
    const auto lk = letter_kinds(spec, kinds, nullptr);
    for (MeshAxis a : mesh.axes()) {
      if (mesh.size(a) <= 1) continue;
      axes_.push_back(a);
      std::vector<int> allowed{-1};
      for (std::size_t l = 0; l < spec.letters.size(); ++l)
        if (spec.letters[l].rule != SplitRule::forbidden &&
            role_allows(opt.role(a, mesh), lk[l], opt.sequence_parallel))
          allowed.push_back(static_cast<int>(l));
      options_.push_back(std::move(allowed));
    }
  }

  std::vector<Strategy> run() {
    std::vector<int> pick(axes_.size(), -1);
    recurse(0, pick);
    return std::move(out_);
  }

 private:
  void recurse(std::size_t i, std::vector<int>& pick) {
    if (i == axes_.size()) {
      build(pick);
      return;
    }
    for (int l : options_[i]) {
      pick[i] = l;
      recurse(i + 1, pick);
    }
  }

  // Split count of each letter under `pick`.
  std::vector<std::int64_t> counts(const std::vector<int>& pick) const {
    std::vector<std::int64_t> c(spec_.letters.size(), 1);
    for (std::size_t i = 0; i < axes_.size(); ++i)
      if (pick[i] >= 0) c[static_cast<std::size_t>(pick[i])] *= mesh_.size(axes_[i]);
    return c;
  }

  bool divides(const std::vector<std::int64_t>& c) const {
    for (std::size_t l = 0; l < c.size(); ++l) {
      const auto gr = spec_.letters[l].granule;
      if (c[l] > 1 && gr > 0 && gr % c[l] != 0) return false;
    }
    for (const auto* ports : {&spec_.inputs, &spec_.outputs})
      for (const auto& p : *ports) {
        if (!p.tensor) continue;
        const auto& shape = g_.tensor(*p.tensor).shape;
        for (std::size_t d = 0; d < p.dims.size() && d < shape.size(); ++d) {
          const int l = p.dims[d];
          if (l >= 0 && c[static_cast<std::size_t>(l)] > 1 && shape[d] % c[static_cast<std::size_t>(l)] != 0)
            return false;
        }
      }
    return true;
  }

  TensorLayout port_layout(const ShardPort& p, const std::vector<int>& pick) const {
    TensorLayout t = TensorLayout::replicated(static_cast<int>(p.dims.size()));
    for (std::size_t d = 0; d < p.dims.size(); ++d) {
      if (p.dims[d] < 0) continue;
      for (std::size_t i = 0; i < axes_.size(); ++i)
        if (pick[i] == p.dims[d]) t = t.with_split(static_cast<int>(d), axes_[i]);
    }
    return t;
  }

  void build(const std::vector<int>& pick) {
    const auto c = counts(pick);
    if (!divides(c)) return;
    Strategy s;
    double fraction = 1.0;
    for (std::size_t i = 0; i < axes_.size(); ++i) {
      if (pick[i] < 0) continue;
      fraction /= mesh_.size(axes_[i]);
      s.assignment.items.push_back(
          {std::string(mesh_.name(axes_[i])), spec_.letters[static_cast<std::size_t>(pick[i])].name});
    }
    s.compute_fraction = fraction;

    for (const auto& p : spec_.outputs) {
      if (!p.tensor) { s.outputs.emplace_back(); continue; }
      TensorLayout t = port_layout(p, pick);
      for (std::size_t i = 0; i < axes_.size(); ++i) {
        const int l = pick[i];
        if (l >= 0 && !port_has(p, l) && spec_.letters[static_cast<std::size_t>(l)].rule != SplitRule::costed)
          t = t.with_partial(axes_[i]);
      }
      s.outputs.push_back(std::move(t));
    }
    std::vector<std::string> names;
    for (const auto& p : spec_.inputs) {
      if (!p.tensor) {
        s.inputs.emplace_back();
        s.input_grads.emplace_back();
        continue;
      }
      TensorLayout t = port_layout(p, pick);
      if (named_port(g_, p)) names.push_back(tuple_text(to_shard_strategy(t, mesh_)));
      if (core::is_floating(g_.tensor(*p.tensor).dtype)) {
        TensorLayout grad = t;
        for (std::size_t i = 0; i < axes_.size(); ++i) {
          const int l = pick[i];
          if (l < 0 || port_has(p, l)) continue;
          const bool in_output = std::any_of(spec_.outputs.begin(), spec_.outputs.end(),
                                             [&](const ShardPort& o) { return port_has(o, l); });
          if (in_output) grad = grad.with_partial(axes_[i]);
        }
        s.input_grads.emplace_back(std::move(grad));
      } else {
        s.input_grads.emplace_back();
      }
      s.inputs.push_back(std::move(t));
    }
    s.name = fmt::format("({})", fmt::join(names, ","));
    add_stats(pick, c, s);
    if (spec_.extra) spec_.extra(spec_, g_, mesh_, full_pick(pick), s);

    std::string key;
    for (const auto* v : {&s.inputs, &s.outputs})
      for (const auto& l : *v) key += (l ? to_string(*l, mesh_) : std::string("~")) + ";";
    if (!seen_.insert(key).second) return;
    out_.push_back(std::move(s));
  }

  // Per mesh axis index, the letter assigned (-1 for none or size-1 axes).
  std::vector<int> full_pick(const std::vector<int>& pick) const {
    std::vector<int> v(static_cast<std::size_t>(mesh_.num_axes()), -1);
    for (std::size_t i = 0; i < axes_.size(); ++i) v[static_cast<std::size_t>(axes_[i].index())] = pick[i];
    return v;
  }

  // Costed letters: all-reduces of fp32 per-row statistics over each axis
  // splitting them.
  void add_stats(const std::vector<int>& pick, const std::vector<std::int64_t>& c, Strategy& s) const {
    for (std::size_t i = 0; i < axes_.size(); ++i) {
      const int l = pick[i];
      if (l < 0) continue;
      const Letter& L = spec_.letters[static_cast<std::size_t>(l)];
      if (L.rule != SplitRule::costed) continue;
      const auto& port = spec_.inputs.at(static_cast<std::size_t>(L.stats_port));
      if (!port.tensor) continue;
      const auto& shape = g_.tensor(*port.tensor).shape;
      double rows = 1.0;
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const int pl = d < port.dims.size() ? port.dims[d] : -1;
        if (pl == l) continue;
        rows *= static_cast<double>(shape[d]) / static_cast<double>(pl >= 0 ? c[static_cast<std::size_t>(pl)] : 1);
      }
      auto step = [&](int n) {
        CommStep st;
        st.kind = core::Collective::all_reduce;
        st.axis = axes_[i];
        st.group_size = mesh_.size(axes_[i]);
        st.bytes = Bytes(rows * 4.0 * n);
        return st;
      };
      if (L.forward_stats > 0) s.forward_comm.push_back(step(L.forward_stats));
      if (L.backward_stats > 0) s.backward_comm.push_back(step(L.backward_stats));
    }
  }

  const ShardSpec& spec_;
  const OpGraph& g_;
  const DeviceMesh& mesh_;
  std::vector<MeshAxis> axes_;
  std::vector<std::vector<int>> options_;
  std::set<std::string> seen_;
  std::vector<Strategy> out_;
};

}  // namespace

OpSharding enumerate_strategies(ShardSpec spec, const OpGraph& g, const DeviceMesh& mesh,
                                const ShardingOptions& options, const DimKinds& kinds) {
  OpSharding out;
  out.strategies = Enumerator(spec, g, mesh, options, kinds).run();
  out.spec = std::move(spec);
  return out;
}

Bytes local_bytes(const Tensor& t, const TensorLayout& l, const DeviceMesh& mesh) {
  double n = 1.0;
  for (auto d : l.local_shape(t.shape, mesh)) n *= static_cast<double>(d);
  return Bytes(n * static_cast<double>(core::dtype_size(t.dtype)));
}

std::vector<CommStep> weight_grad_sync(const OpSharding& op, const Strategy& s, std::size_t port, const OpGraph& g,
                                       const DeviceMesh& mesh) {
  if (port >= op.spec.inputs.size() || !op.spec.inputs[port].tensor) return {};
  const Tensor& t = g.tensor(*op.spec.inputs[port].tensor);
  if (t.role != graph::TensorRole::parameter || !s.input_grads[port] || !s.inputs[port]) return {};
  return layout::redistribute(*s.input_grads[port], *s.inputs[port], t.shape, t.dtype, mesh);
}

std::string describe(const OpSharding& op, const Strategy& s, const DeviceMesh& mesh) {
  auto list = [&](const std::vector<std::optional<TensorLayout>>& v) {
    std::vector<std::string> parts;
    for (const auto& l : v) parts.push_back(l ? to_string(*l, mesh) : std::string("~"));
    return fmt::format("{}", fmt::join(parts, " "));
  };
  return fmt::format("{} [{}] in {} out {}", s.name, s.assignment.is_replicated() ? "replicated" : to_string(s.assignment),
                     list(s.inputs), list(s.outputs));
}

namespace {
// Key of the dimension kinds among the graph's derived values.
struct DimKindsKey {
  friend bool operator==(const DimKindsKey&, const DimKindsKey&) = default;
};
}  // namespace

std::shared_ptr<const DimKinds> shared_dim_kinds(const OpGraph& g) {
  return g.derived<DimKindsKey, DimKinds>(DimKindsKey{}, [&] { return dim_kinds(g); });
}

DimKinds dim_kinds(const OpGraph& g) {
  DimKinds kinds(g.num_tensors());
  for (std::size_t i = 0; i < g.num_tensors(); ++i) {
    const Tensor& t = g.tensors()[i];
    const std::size_t r = t.shape.size();
    auto& k = kinds[i];
    k.assign(r, DimKind::inner);
    if (t.role == graph::TensorRole::input && r > 0) {
      const bool integer = !core::is_floating(t.dtype);
      for (std::size_t d = 0; d < r; ++d)
        k[d] = integer ? DimKind::sequence : (d + 1 == r ? DimKind::hidden : DimKind::sequence);
      const std::size_t b = t.batch_axis ? static_cast<std::size_t>(*t.batch_axis) : 0;
      if (b < r) k[b] = DimKind::batch;
    }
  }
  auto order = g.topological_order();
  std::vector<graph::OpId> ops;
  if (order.ok()) ops = std::move(order.value());
  else
    for (std::uint32_t i = 0; i < g.num_ops(); ++i) ops.push_back(graph::OpId{i});
  for (graph::OpId id : ops) {
    const ShardSpec spec = op_spec(g, id);
    std::vector<bool> in_inputs;
    const auto lk = letter_kinds(spec, kinds, &in_inputs);
    for (const auto& p : spec.outputs) {
      if (!p.tensor) continue;
      const Tensor& t = g.tensor(*p.tensor);
      auto& k = kinds[p.tensor->value];
      k.assign(t.shape.size(), DimKind::inner);
      for (std::size_t d = 0; d < p.dims.size() && d < k.size(); ++d) {
        const int l = p.dims[d];
        if (l < 0) continue;
        const Letter& L = spec.letters[static_cast<std::size_t>(l)];
        k[d] = L.output_kind ? *L.output_kind
                             : (in_inputs[static_cast<std::size_t>(l)] ? lk[static_cast<std::size_t>(l)] : DimKind::inner);
      }
      if (t.batch_axis && static_cast<std::size_t>(*t.batch_axis) < k.size())
        k[static_cast<std::size_t>(*t.batch_axis)] = DimKind::batch;
    }
  }
  return kinds;
}

}  // namespace planner::ops
