// The rule table: every family's rows in one sorted immutable vector, lookup,
// the fallback for kinds without a rule, gradient propagation and annotate().
#include <algorithm>
#include <cassert>
#include <tuple>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using graph::OpClass;
using graph::OpCost;

bool rule_less(const OpRule& a, const OpRule& b) {
  return std::tie(a.domain, a.type) < std::tie(b.domain, b.type);
}

const std::vector<OpRule>& table() {
  static const std::vector<OpRule> rows = [] {
    std::vector<OpRule> v;
    for (auto family : {matmul_rules(), rnn_rules(), conv_rules(), elementwise_rules(), norm_rules(),
                        softmax_rules(), reduce_rules(), movement_rules(), attention_rules(), loss_rules(),
                        constant_rules(), legacy_rules(), control_flow_rules()})
      v.insert(v.end(), family.begin(), family.end());
    std::sort(v.begin(), v.end(), rule_less);
    return v;
  }();
  return rows;
}

const OpRule* lookup(std::string_view domain, std::string_view type) {
  const auto& rows = table();
  const OpRule key{domain, type, OpClass::other, nullptr};
  auto it = std::lower_bound(rows.begin(), rows.end(), key, rule_less);
  if (it != rows.end() && it->domain == domain && it->type == type) return &*it;
  return nullptr;
}

}  // namespace

std::string_view canonical_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string_view{} : domain;
}

const OpRule* find_rule(std::string_view domain, std::string_view type) {
  const auto d = canonical_domain(domain);
  if (const auto* r = lookup(d, type)) return r;
  if (!d.empty()) return lookup("", type);
  return nullptr;
}

std::span<const OpRule> all_rules() { return table(); }

OpCost OpRule::cost(const graph::Op& op, const graph::OpGraph& g, const GradMask* grad) const {
  const CostQuery q{op, g, grad};
  OpCost c = fn(q);
  if (!q.any_input_needs_grad() || !q.any_output_floating()) detail::clear_backward(c);
  return c;
}

graph::OpClass OpRule::class_of(const graph::Op& op, const graph::OpGraph& g) const {
  return classify ? classify(op, g) : op_class;
}

OpCost fallback_cost(const graph::Op& op, const graph::OpGraph& g, const GradMask* grad) {
  using namespace detail;
  const CostQuery q{op, g, grad};
  double out_elems = 0;
  for (std::size_t i = 0; i < op.outputs.size(); ++i) out_elems += numel(q.out(i));
  // Never zero: an op with only empty outputs still counts one FLOP.
  OpCost c = memory_bound(q, std::max(out_elems, 1.0), float_inputs_bytes(q));
  if (!q.any_input_needs_grad() || !q.any_output_floating()) clear_backward(c);
  c.known = false;
  return c;
}

namespace {

GradMask compute_gradient_mask(const graph::OpGraph& g) {
  GradMask mask(g.num_tensors(), false);
  const auto& tensors = g.tensors();
  for (std::size_t i = 0; i < tensors.size(); ++i)
    mask[i] = tensors[i].role == graph::TensorRole::parameter && core::is_floating(tensors[i].dtype);

  std::vector<graph::OpId> order;
  if (auto topo = g.topological_order(); topo.ok()) {
    order = std::move(topo).value();
  } else {
    for (std::uint32_t i = 0; i < g.num_ops(); ++i) order.push_back(graph::OpId{i});
  }
  for (auto id : order) {
    const auto& op = g.op(id);
    const OpRule* r = find_rule(op.domain, op.type);
    if (r && r->class_of(op, g) == OpClass::constant) continue;
    bool any = false;
    for (const auto& in : op.inputs)
      if (in && mask[in->value]) { any = true; break; }
    if (!any) continue;
    for (const auto& out : op.outputs)
      if (out && core::is_floating(g.tensor(*out).dtype) &&
          g.tensor(*out).role == graph::TensorRole::activation)
        mask[out->value] = true;
  }
  return mask;
}

// Key of the gradient mask among the graph's derived values (no options).
struct GradMaskKey {
  friend bool operator==(const GradMaskKey&, const GradMaskKey&) = default;
};

}  // namespace

GradMask gradient_mask(const graph::OpGraph& g) {
  return *g.derived<GradMaskKey, GradMask>(GradMaskKey{}, [&] { return compute_gradient_mask(g); });
}

bool importer_costed(const graph::Op& op) { return op.op_class == OpClass::control_flow; }

OpSemantics op_semantics(const graph::Op& op, const graph::OpGraph& g, const GradMask* grad) {
  if (const auto* r = find_rule(op.domain, op.type)) return {r->class_of(op, g), r->cost(op, g, grad)};
  return {OpClass::other, fallback_cost(op, g, grad)};
}

std::map<std::string, int> annotate(graph::OpGraph& g) {
  const GradMask mask = gradient_mask(g);
  std::map<std::string, int> unknown;
  for (auto& op : g.mutable_ops()) {
    if (importer_costed(op)) continue;
    auto s = op_semantics(op, g, &mask);
    op.op_class = s.op_class;
    op.cost = s.cost;
    if (!op.cost.known) ++unknown[graph::op_kind(op)];
  }
  return unknown;
}

}  // namespace planner::ops
