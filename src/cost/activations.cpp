// Activations kept for backward: per-op saved tensors, fused elementwise
// regions, aliases, recompute policies. See activations.hpp for the rules.
//
//   ops ──saved_by──► raw items ──regions──► materialised items
//        ──recompute──► kept items ──alias roots, dedupe──► SavedItem list
//
// A fused region, and what it keeps (the GeLU of modelgen, written as small
// ops; f is read twice, so it is materialised and the region starts after it):
//
//      f ─┬─► Div ─► Erf ─► Add ─► Mul ─► Mul ─► g ──► MatMul (fc2)
//         └─────────────────────────┘
//   op by op: Erf keeps f/√2, Mul keeps f and 1+erf   → 3 tensors of b s 4h
//   fused:    f/√2 and 1+erf are written and read inside the region only; the
//             region keeps what they are computed from: f → 1 tensor

#include "planner/cost/activations.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "planner/ops/semantics.hpp"
#include "saved.hpp"

namespace planner::cost {
namespace {

using graph::OpId;
using graph::TensorId;

struct Entry {
  detail::RawSaved raw;
  OpId saver;
};

const graph::FusedPattern* pattern_of(const graph::Op& op, const graph::OpGraph& g) {
  if (!op.fused_group || static_cast<std::size_t>(*op.fused_group) >= g.fused.size()) return nullptr;
  return &g.fused[static_cast<std::size_t>(*op.fused_group)];
}

bool in_ops(const std::vector<OpId>& ops, std::optional<OpId> id) {
  return id && std::find(ops.begin(), ops.end(), *id) != ops.end();
}

// Union-find over the ops that may fuse (elementwise, outside flash
// patterns), joined along tensors that one op writes and one op reads.
class Regions {
 public:
  Regions(const graph::OpGraph& g, bool flash) : g_(g), parent_(g.num_ops()), member_(g.num_ops(), false) {
    std::iota(parent_.begin(), parent_.end(), 0u);
    for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
      const auto& op = g.op(OpId{i});
      member_[i] = op.op_class == graph::OpClass::elementwise && !(flash && pattern_of(op, g));
    }
    for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
      if (!member_[i]) continue;
      // Chains only: a tensor read by several ops (the residual stream, a
      // GeLU's input read twice) is materialised and ends the region.
      for (const auto& in : g.op(OpId{i}).inputs) {
        if (!in) continue;
        const auto& t = g.tensor(*in);
        if (t.producer && member_[t.producer->value] && t.consumers.size() == 1 && !is_output(*in))
          unite(i, t.producer->value);
      }
    }
  }

  /// Region of an op, or nullopt when it fuses with nothing.
  std::optional<std::uint32_t> of(std::optional<OpId> op) const {
    if (!op || !member_[op->value]) return std::nullopt;
    return find(op->value);
  }

  bool is_output(TensorId t) const {
    return std::find(g_.graph_outputs.begin(), g_.graph_outputs.end(), t) != g_.graph_outputs.end();
  }

  /// Written inside region r and read outside it (or a graph output).
  bool materialised(TensorId t, std::uint32_t r) const {
    const auto& tensor = g_.tensor(t);
    if (is_output(t)) return true;
    for (auto c : tensor.consumers)
      if (of(c) != r) return true;
    return false;
  }

  /// The materialised tensors (or region inputs) that internal tensor t is computed from.
  void sources(TensorId t, std::uint32_t r, std::vector<TensorId>& out, std::set<std::uint32_t>& seen) const {
    if (!seen.insert(t.value).second) return;
    const auto& prod = g_.tensor(t).producer;
    if (!prod || of(prod) != r || materialised(t, r)) {
      out.push_back(t);
      return;
    }
    for (const auto& in : g_.op(*prod).inputs)
      if (in) sources(*in, r, out, seen);
  }

 private:
  std::uint32_t find(std::uint32_t x) const {
    while (parent_[x] != x) x = parent_[x];
    return x;
  }
  void unite(std::uint32_t a, std::uint32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }
  const graph::OpGraph& g_;
  std::vector<std::uint32_t> parent_;
  std::vector<bool> member_;
};

// Items of a flash pattern: q, k, v, o and the log-sum-exp.
void flash_items(const graph::FusedPattern& p, const graph::OpGraph& g, const ops::GradMask& grad,
                 const ActivationOptions& o, std::vector<Entry>& out) {
  const OpId first = p.ops.front();
  if (p.ops.size() == 1) {
    for (auto& r : detail::saved_by(g.op(first), g, grad, o.precision, AttentionMode::flash))
      out.push_back({r, first});
    return;
  }
  const auto& score = g.op(first);
  const auto& context = g.op(p.ops.back());
  for (const auto& t : {score.inputs.size() > 0 ? score.inputs[0] : std::nullopt,
                        score.inputs.size() > 1 ? score.inputs[1] : std::nullopt,
                        context.inputs.size() > 1 ? context.inputs[1] : std::nullopt,
                        context.outputs.empty() ? std::nullopt : context.outputs[0]})
    if (t) out.push_back({{SavedKind::tensor, t, Bytes(0)}, first});
  const Bytes lse(static_cast<double>(p.batch * p.heads * p.seq_q) * 4.0);
  out.push_back({{SavedKind::logsumexp, context.outputs.empty() ? std::nullopt : context.outputs[0], lse}, first});
}

// Keeps, of each layernorm / moe_act unit `modules` recomputes, only its
// inputs from outside: what the unit's ops save, and what anyone saves of
// the unit's outputs (or of a view of them), is rematerialised before the
// reader's backward.
void drop_units(const graph::OpGraph& g, RecomputeModules modules, std::vector<Entry>& entries) {
  const auto unit = [&](std::optional<OpId> id) {
    return id ? ops::output_dropping_group(g.op(*id), RecomputePolicy::selective, modules) : std::nullopt;
  };
  std::erase_if(entries, [&](const Entry& e) {
    return unit(e.saver) || (e.raw.tensor && unit(g.tensor(alias_root(g, *e.raw.tensor)).producer));
  });
  for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
    const auto group = unit(OpId{i});
    if (!group) continue;
    for (const auto& in : g.op(OpId{i}).inputs) {
      if (!in) continue;
      const auto& t = g.tensor(*in);
      if (t.role != graph::TensorRole::activation && t.role != graph::TensorRole::input) continue;
      if (unit(t.producer) == group) continue;
      entries.push_back({{SavedKind::tensor, in, Bytes(0)}, OpId{i}});
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.saver < b.saver; });
}

std::vector<Entry> collect(const graph::OpGraph& g, const ActivationOptions& o, const ops::GradMask& grad,
                           RecomputePolicy policy) {
  const bool flash = o.attention == AttentionMode::flash;
  std::vector<Entry> entries;
  for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
    const OpId id{i};
    const auto& op = g.op(id);
    if (const auto* p = pattern_of(op, g); p && flash && !p->ops.empty()) {
      if (p->ops.front() == id) flash_items(*p, g, grad, o, entries);
      continue;
    }
    for (auto& r : detail::saved_by(op, g, grad, o.precision, o.attention)) entries.push_back({r, id});
  }

  if (o.fuse_elementwise) {
    const Regions regions(g, flash);
    std::vector<Entry> fused;
    for (auto& e : entries) {
      const auto r = regions.of(e.saver);
      if (e.raw.kind != SavedKind::tensor || !r || regions.of(g.tensor(*e.raw.tensor).producer) != r ||
          regions.materialised(*e.raw.tensor, *r)) {
        fused.push_back(e);
        continue;
      }
      std::vector<TensorId> src;
      std::set<std::uint32_t> seen;
      regions.sources(*e.raw.tensor, *r, src, seen);
      for (auto t : src) fused.push_back({{SavedKind::tensor, t, Bytes(0)}, e.saver});
    }
    entries = std::move(fused);
  }

  if (policy == RecomputePolicy::selective && !o.modules.is_default()) drop_units(g, o.modules, entries);
  if (policy == RecomputePolicy::selective && !flash && o.modules.has(RecomputeModules::kCoreAttn)) {
    std::erase_if(entries, [&](const Entry& e) {
      const auto* p = pattern_of(g.op(e.saver), g);
      if (!p) return false;
      if (e.raw.kind != SavedKind::tensor) return true;
      return in_ops(p->ops, g.tensor(*e.raw.tensor).producer);
    });
  } else if (policy == RecomputePolicy::full) {
    // A recomputed layer keeps only what enters it from outside.
    std::erase_if(entries, [&](const Entry& e) { return recomputed(g.op(e.saver), policy); });
    for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
      const auto group = ops::recompute_group(g.op(OpId{i}), policy);
      if (!group) continue;
      for (const auto& in : g.op(OpId{i}).inputs) {
        if (!in) continue;
        const auto& t = g.tensor(*in);
        if (t.role != graph::TensorRole::activation && t.role != graph::TensorRole::input) continue;
        if (t.producer && ops::recompute_group(g.op(*t.producer), policy) == group) continue;
        entries.push_back({{SavedKind::tensor, in, Bytes(0)}, OpId{i}});
      }
    }
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.saver < b.saver; });
  }
  return entries;
}

ActivationReport count(const graph::OpGraph& g, const ActivationOptions& o, const std::vector<Entry>& entries) {
  ActivationReport r;
  std::set<std::uint32_t> roots;
  std::set<std::pair<int, std::uint32_t>> synthetic;
  for (const auto& e : entries) {
    const auto& saver = g.op(e.saver);
    SavedItem item;
    item.kind = e.raw.kind;
    item.saver = e.saver;
    item.layer = saver.layer;
    if (e.raw.kind == SavedKind::tensor) {
      const TensorId root = alias_root(g, *e.raw.tensor);
      const auto& t = g.tensor(root);
      if (t.role != graph::TensorRole::activation && t.role != graph::TensorRole::input) continue;
      if (!roots.insert(root.value).second) continue;
      item.tensor = root;
      item.bytes = bytes_at(t, o.precision.of(t.producer ? g.op(*t.producer) : saver));
    } else {
      if (!synthetic.insert({static_cast<int>(e.raw.kind), e.saver.value}).second) continue;
      item.tensor = e.raw.tensor;
      item.bytes = e.raw.bytes;
    }
    r.total += item.bytes;
    if (item.layer) r.per_layer[*item.layer] += item.bytes;
    else r.outside_layers += item.bytes;
    r.items.push_back(item);
  }
  for (const auto& op : g.ops()) r.loss_buffer += detail::loss_buffer_bytes(op, g, o.precision);
  return r;
}

}  // namespace

std::string_view saved_kind_name(SavedKind k) {
  switch (k) {
    case SavedKind::tensor: return "tensor";
    case SavedKind::dropout_mask: return "dropout_mask";
    case SavedKind::norm_stats: return "norm_stats";
    case SavedKind::logsumexp: return "logsumexp";
    case SavedKind::attention_probs: return "attention_probs";
  }
  return "tensor";
}

graph::TensorId alias_root(const graph::OpGraph& g, graph::TensorId t) {
  for (int step = 0; step < 64; ++step) {
    const auto& prod = g.tensor(t).producer;
    if (!prod) break;
    const auto& op = g.op(*prod);
    if (!detail::is_alias_op(op) || op.inputs.empty() || !op.inputs[0]) break;
    t = *op.inputs[0];
  }
  return t;
}

namespace {

ActivationReport compute_saved_activations(const graph::OpGraph& g, const ActivationOptions& options) {
  const ops::GradMask grad = ops::gradient_mask(g);
  ActivationReport r = count(g, options, collect(g, options, grad, options.recompute));
  if (options.recompute != RecomputePolicy::none) {
    // What a layer rematerialises in backward: its activations without
    // recompute, less what the policy keeps of it.
    const ActivationReport all = count(g, options, collect(g, options, grad, RecomputePolicy::none));
    for (const auto& [layer, bytes] : all.per_layer) {
      const auto it = r.per_layer.find(layer);
      const Bytes kept = it == r.per_layer.end() ? Bytes(0) : it->second;
      r.recompute_working_set = std::max(r.recompute_working_set, bytes - kept);
    }
  }
  return r;
}

// Key of a report among the graph's derived values: every option.
struct SavedKey {
  PrecisionPolicy precision;
  AttentionMode attention;
  RecomputePolicy recompute;
  RecomputeModules modules;
  bool fuse_elementwise;
  friend bool operator==(const SavedKey&, const SavedKey&) = default;
};

}  // namespace

std::shared_ptr<const ActivationReport> shared_saved_activations(const graph::OpGraph& g,
                                                                 const ActivationOptions& options) {
  const SavedKey key{options.precision, options.attention, options.recompute, options.modules, options.fuse_elementwise};
  return g.derived<SavedKey, ActivationReport>(key, [&] { return compute_saved_activations(g, options); });
}

ActivationReport saved_activations(const graph::OpGraph& g, const ActivationOptions& options) {
  return *shared_saved_activations(g, options);
}

}  // namespace planner::cost
