#pragma once
/// Per-op semantics: forward and backward FLOPs, bytes read and written, and
/// the op's class, from its kind, attributes and the static shapes of its
/// tensors.
///
/// Design note: rules live in a table, one source file per op family
/// (src/ops/matmul.cpp, conv.cpp, elementwise.cpp, norm.cpp, ...), each
/// exposing a span of {domain, type, class, cost function} rows that
/// src/ops/table.cpp concatenates into one sorted, immutable table. No
/// inheritance, no registration side effects. An op kind without a rule is
/// costed as memory-bound from its tensor sizes and marked `known = false`,
/// never silently as zero.
///
/// Conventions (every rule follows them; the family files repeat the
/// formulas with their inputs spelled out):
///
///  FLOPs
///   - A multiply-add counts 2. Any other elementary operation counts 1,
///     including exp, log, erf, tanh, sqrt, division and comparisons (so
///     softmax is 5/elem: max, sub, exp, sum, div).
///   - Contractions (MatMul, Gemm, Conv, Einsum, attention, RNNs) count
///     2 x (multiply-adds). Backward computes one contraction of the same size
///     per operand that needs a gradient: MatMul with two gradient-needing
///     operands costs 2x forward backward (3x forward in all); with a weight
///     applied to a graph input (no dX), 1x.
///   - Memory-bound ops (elementwise, normalisation, softmax, reductions,
///     losses, copies with arithmetic) count a small per-element figure
///     forward, listed in their family file; their backward FLOPs are 2x
///     forward.
///
///  Bytes
///   - Forward reads every input the kernel touches (floating and integer
///     alike; a Gather/Slice reads only the selected region) and writes every
///     present output.
///   - Backward reads the gradients of the floating outputs plus the saved
///     tensors the gradient formula needs, and writes one gradient per input
///     that needs one, at that input's shape and dtype (a broadcast operand's
///     gradient is reduced to its own shape).
///   - Views (Reshape, Squeeze, Unsqueeze, Flatten, Identity) move 0 bytes but
///     are known; Shape, Size and Constant cost nothing; generators
///     (ConstantOfShape, Range, EyeLike, Random*) write their output.
///
///  Gradients
///   - A tensor needs a gradient when it is floating and is a parameter, or
///     an activation produced by an op that has an input needing one
///     (gradient_mask()). Graph inputs and constants never need one. Without
///     a mask (CostQuery::grad == nullptr) every floating activation or
///     parameter is assumed to need one.
///   - An op is charged no backward work at all when no input needs a
///     gradient or no output is floating (integer/bool shape arithmetic,
///     ArgMax, Shape, quantisation to integers).
///
///  Control flow
///   - If, Loop, Scan and SequenceMap are costed by the ONNX importer from
///     their bodies. The importer marks an op it has costed by setting
///     op_class = OpClass::control_flow before calling annotate(); annotate()
///     leaves every such op untouched (importer_costed()). A control-flow op
///     that reaches annotate() without that mark is costed from its boundary
///     tensors like an unknown op (known = false) and counted as unknown.
///
/// Architecture invariant: this module depends on `graph` and `layout` only (no ONNX header).

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "planner/graph/graph.hpp"

namespace planner::ops {

/// Per tensor id (TensorId::value): true when backward computes that
/// tensor's gradient.
using GradMask = std::vector<bool>;

/// What a cost rule sees: the op, its graph, and which tensors need a
/// gradient.
struct CostQuery {
  const graph::Op& op;
  const graph::OpGraph& g;
  /// Null: a tensor needs a gradient when it is floating and an activation
  /// or a parameter (needs_grad_by_role).
  const GradMask* grad = nullptr;

  /// Input/output `i`, or nullptr when absent or omitted.
  const graph::Tensor* in(std::size_t i) const { return g.input(op, i); }
  const graph::Tensor* out(std::size_t i) const { return g.output(op, i); }
  /// True when input `i` is present and its gradient is computed.
  bool in_needs_grad(std::size_t i) const;
  /// True when some input needs a gradient.
  bool any_input_needs_grad() const;
  /// True when some output is floating (a gradient can flow back through it).
  bool any_output_floating() const;
};

/// Computes the cost of one op. The op's tensors are all statically shaped.
using RuleFn = graph::OpCost (*)(const CostQuery& q);
/// Picks the class of one op when it depends on the op's tensors.
using ClassFn = graph::OpClass (*)(const graph::Op& op, const graph::OpGraph& g);

/// One table row.
struct OpRule {
  std::string_view domain;  ///< "" = default ONNX domain ("ai.onnx" is folded to "")
  std::string_view type;
  graph::OpClass op_class;
  RuleFn fn;
  /// When set, decides the class per op (Gather of a parameter table is
  /// OpClass::embedding, other Gathers data_movement); else op_class.
  ClassFn classify = nullptr;

  /// The op's cost under this rule. Backward fields are zeroed when no input
  /// needs a gradient or no output is floating (see the header comment).
  /// Requires: op's kind matches this rule.
  graph::OpCost cost(const graph::Op& op, const graph::OpGraph& g, const GradMask* grad = nullptr) const;
  /// The op's class under this rule.
  graph::OpClass class_of(const graph::Op& op, const graph::OpGraph& g) const;
};

/// "" for "" and "ai.onnx", else the domain unchanged.
std::string_view canonical_domain(std::string_view domain);

/// The rule for an op kind, or nullptr. A kind is first looked up under its
/// own (canonical) domain; when that domain has no rule of this type name, the
/// default-domain rule of the same type name is used (so com.microsoft:Gelu
/// and LayerNormalization declared under any contrib domain find the ONNX
/// rule, while com.microsoft:Attention finds its own).
const OpRule* find_rule(std::string_view domain, std::string_view type);

/// All rules, sorted by (domain, type), no duplicate kind: for docs and tests.
std::span<const OpRule> all_rules();

/// True when the role and dtype alone say the tensor needs a gradient:
/// floating, and a parameter or an activation.
bool needs_grad_by_role(const graph::Tensor& t);

/// Which tensors need a gradient, propagated forward through the graph from
/// the floating parameters (ops of class constant do not propagate; integer
/// and bool tensors never need one). Walks ops in topological order (in
/// stored order when the graph has a cycle).
GradMask gradient_mask(const graph::OpGraph& g);

/// True when the importer has costed the op itself (op_class == control_flow):
/// annotate() leaves its class and cost as they are.
bool importer_costed(const graph::Op& op);

/// The op's class and cost from its rule, or (other, fallback_cost()).
struct OpSemantics {
  graph::OpClass op_class = graph::OpClass::other;
  graph::OpCost cost;
};
OpSemantics op_semantics(const graph::Op& op, const graph::OpGraph& g, const GradMask* grad = nullptr);

/// Fills op_class and cost of every op of `g` not importer_costed(), with
/// gradients from gradient_mask(g). Returns the kinds ("domain:Type" or
/// "Type", graph::op_kind) of the ops it costed with known = false (no rule,
/// or an unmarked control-flow op) and their counts.
/// Requires: tensor roles (parameters) are final: they decide the backward.
std::map<std::string, int> annotate(graph::OpGraph& g);

/// The memory-bound fallback for an op without a rule: reads every input,
/// writes every output forward, 1 FLOP per output element; backward reads
/// outputs' gradients and floating inputs, writes inputs' gradients (floating
/// tensors needing one only), 2 FLOPs per output element. known = false.
graph::OpCost fallback_cost(const graph::Op& op, const graph::OpGraph& g, const GradMask* grad = nullptr);

}  // namespace planner::ops
