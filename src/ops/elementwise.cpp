// Elementwise ops: unary math, binary/ternary arithmetic with broadcast,
// comparisons and logic, activations, casts, dropout, (de)quantisation.
//
// Memory-bound. With Y the (broadcast) output and F the per-element count in
// kSpecs below (every elementary operation 1, so exp/erf/tanh are 1 each):
//   forward  FLOPs F * numel(Y); reads every input once (a broadcast operand
//            is read at its own size), writes every output.
//   backward FLOPs 2 * F * numel(Y), plus numel(Y) per broadcast operand that
//            needs a gradient (reducing dY to the operand's shape);
//            reads dY plus the saved tensors of the gradient formula
//            (`Saved`: none, the first input, every floating input, the
//            output, or inputs and output); writes the gradient of each input
//            that needs one, at that input's shape.
// Per-element counts (F): Add/Sub/Mul/Div/Pow/Mod/compare/logic/unary math 1;
//   Relu 1; LeakyRelu, PRelu, Clip, Shrink 2; HardSigmoid, Softplus,
//   Softsign 3 (hardsigmoid: mul add clamp; softplus: exp add log);
//   Sigmoid 4 (neg exp add div); HardSwish, Elu 4; Selu, Celu, Mish 5;
//   Gelu 5 (div erf add mul mul), 9 with approximate="tanh";
//   com.microsoft: FastGelu 9 (x^3: 2, *c 1, +x 1, *k 1, tanh 1, +1 1, *x 1,
//   *0.5 1) + 1 with a bias input; BiasGelu 6; QuickGelu 6 (mul sigmoid mul);
//   BiasAdd 2; BiasSplitGelu 8 per output; RotaryEmbedding 3 (x cos + rot(x) sin);
//   variadic Sum/Max/Min n-1, Mean n; Where 1; Cast/CastLike 0;
//   QuantizeLinear 3, DequantizeLinear 2, DynamicQuantizeLinear 5.
// Special functions (OpCost::forward_special / backward_special, per output
//   element; the `special` columns of kSpecs): Exp, Log, Tanh, Sigmoid,
//   Asin/Acos/Atan, Asinh/Acosh/Atanh 1 forward, 0 backward (derivative from
//   the output or algebraic); Erf, Sin, Cos, Tan, Sinh, Cosh, Elu, Selu,
//   Celu, FastGelu, QuickGelu 1 and 1; Gelu, BiasGelu, BiasSplitGelu 1 and 2
//   (erf; erf and exp), tanh-approximate Gelu 1 and 1; Softplus 2 and 1
//   (log, exp; exp); Mish 3 and 3; Pow 1 and 2 (exp(b log a); and log a).
// Dropout (and com.microsoft BiasDropout, BitmaskDropout, BitmaskBiasDropout)
//   is costed as in training (active, whatever training_mode says): 2/elem
//   (mask draw, scale-multiply) + 1 per fused bias/residual add; writes Y and a
//   1-byte-per-element mask (the mask output, or an implicit one training
//   keeps); backward reads dY and the mask, writes dX.
#include <algorithm>
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

enum class Saved : std::uint8_t { none, first, inputs, output, inputs_output };

struct Spec {
  std::string_view domain;
  std::string_view type;
  double flops;
  Saved saved;
  /// Special-function evaluations per output element, forward and backward,
  /// as the reference CPU kernels compute them (runtime_cpu/elementwise.cpp:
  /// Erf's derivative is an exp; Exp, Tanh and Sigmoid differentiate from
  /// their output; Gelu is erf forward, erf and exp backward; Pow is
  /// exp(b log a), and its backward adds a log).
  double special = 0;
  double special_backward = 0;
};

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kSpecs{
    // Unary math.
    Spec{"", "Abs", 1, Saved::first, 0, 0}, Spec{"", "Neg", 1, Saved::none, 0, 0}, Spec{"", "Floor", 1, Saved::none, 0, 0},
    Spec{"", "Ceil", 1, Saved::none, 0, 0}, Spec{"", "Round", 1, Saved::none, 0, 0}, Spec{"", "Sign", 1, Saved::none, 0, 0},
    Spec{"", "Reciprocal", 1, Saved::output, 0, 0}, Spec{"", "Sqrt", 1, Saved::output, 0, 0},
    Spec{"", "Exp", 1, Saved::output, 1, 0}, Spec{"", "Log", 1, Saved::first, 1, 0}, Spec{"", "Erf", 1, Saved::first, 1, 1},
    Spec{"", "Tanh", 1, Saved::output, 1, 0}, Spec{"", "Sin", 1, Saved::first, 1, 1}, Spec{"", "Cos", 1, Saved::first, 1, 1},
    Spec{"", "Tan", 1, Saved::first, 1, 1}, Spec{"", "Asin", 1, Saved::first, 1, 0}, Spec{"", "Acos", 1, Saved::first, 1, 0},
    Spec{"", "Atan", 1, Saved::first, 1, 0}, Spec{"", "Sinh", 1, Saved::first, 1, 1}, Spec{"", "Cosh", 1, Saved::first, 1, 1},
    Spec{"", "Asinh", 1, Saved::first, 1, 0}, Spec{"", "Acosh", 1, Saved::first, 1, 0},
    Spec{"", "Atanh", 1, Saved::first, 1, 0}, Spec{"", "IsNaN", 1, Saved::none, 0, 0}, Spec{"", "IsInf", 1, Saved::none, 0, 0},
    Spec{"", "Not", 1, Saved::none, 0, 0}, Spec{"", "BitwiseNot", 1, Saved::none, 0, 0},
    // Binary arithmetic, comparisons, logic.
    Spec{"", "Add", 1, Saved::none, 0, 0}, Spec{"", "Sub", 1, Saved::none, 0, 0}, Spec{"", "Mul", 1, Saved::inputs, 0, 0},
    Spec{"", "Div", 1, Saved::inputs, 0, 0}, Spec{"", "Pow", 1, Saved::inputs_output, 1, 2},
    Spec{"", "Mod", 1, Saved::inputs, 0, 0}, Spec{"", "Equal", 1, Saved::none, 0, 0}, Spec{"", "Less", 1, Saved::none, 0, 0},
    Spec{"", "LessOrEqual", 1, Saved::none, 0, 0}, Spec{"", "Greater", 1, Saved::none, 0, 0},
    Spec{"", "GreaterOrEqual", 1, Saved::none, 0, 0}, Spec{"", "And", 1, Saved::none, 0, 0},
    Spec{"", "Or", 1, Saved::none, 0, 0}, Spec{"", "Xor", 1, Saved::none, 0, 0}, Spec{"", "BitShift", 1, Saved::none, 0, 0},
    Spec{"", "BitwiseAnd", 1, Saved::none, 0, 0}, Spec{"", "BitwiseOr", 1, Saved::none, 0, 0},
    Spec{"", "BitwiseXor", 1, Saved::none, 0, 0}, Spec{"", "Where", 1, Saved::first, 0, 0},
    // Variadic (count fixed up by arity in elementwise()).
    Spec{"", "Sum", 1, Saved::none, 0, 0}, Spec{"", "Mean", 1, Saved::none, 0, 0}, Spec{"", "Max", 1, Saved::inputs, 0, 0},
    Spec{"", "Min", 1, Saved::inputs, 0, 0},
    // Activations.
    Spec{"", "Relu", 1, Saved::output, 0, 0}, Spec{"", "LeakyRelu", 2, Saved::first, 0, 0},
    Spec{"", "PRelu", 2, Saved::inputs, 0, 0}, Spec{"", "ThresholdedRelu", 1, Saved::first, 0, 0},
    Spec{"", "Clip", 2, Saved::first, 0, 0}, Spec{"", "Shrink", 2, Saved::first, 0, 0},
    Spec{"", "HardSigmoid", 3, Saved::first, 0, 0}, Spec{"", "Softplus", 3, Saved::first, 2, 1},
    Spec{"", "Softsign", 3, Saved::first, 0, 0}, Spec{"", "Sigmoid", 4, Saved::output, 1, 0},
    Spec{"", "HardSwish", 4, Saved::first, 0, 0}, Spec{"", "Elu", 4, Saved::first, 1, 1}, Spec{"", "Selu", 5, Saved::first, 1, 1},
    Spec{"", "Celu", 5, Saved::first, 1, 1}, Spec{"", "Mish", 5, Saved::first, 3, 3}, Spec{"", "Gelu", 5, Saved::first, 1, 2},
    Spec{"", "RotaryEmbedding", 3, Saved::none, 0, 0},
    Spec{ms, "FastGelu", 9, Saved::first, 1, 1}, Spec{ms, "BiasGelu", 6, Saved::inputs, 1, 2},
    Spec{ms, "QuickGelu", 6, Saved::first, 1, 1}, Spec{ms, "BiasAdd", 2, Saved::none, 0, 0},
    Spec{ms, "BiasSplitGelu", 8, Saved::inputs, 1, 2}, Spec{ms, "RotaryEmbedding", 3, Saved::none, 0, 0},
    // Casts and quantisation.
    Spec{"", "Cast", 0, Saved::none, 0, 0}, Spec{"", "CastLike", 0, Saved::none, 0, 0},
    Spec{"", "QuantizeLinear", 3, Saved::none, 0, 0}, Spec{"", "DequantizeLinear", 2, Saved::none, 0, 0},
    Spec{"", "DynamicQuantizeLinear", 5, Saved::none, 0, 0},
};

const Spec* spec_of(std::string_view type) {
  for (const auto& s : kSpecs)
    if (s.type == type) return &s;
  return nullptr;
}

Bytes saved_bytes(const CostQuery& q, Saved s) {
  switch (s) {
    case Saved::none: return Bytes(0);
    case Saved::first: return bytes(q.in(0));
    case Saved::inputs: return float_inputs_bytes(q);
    case Saved::output: return bytes(q.out(0));
    case Saved::inputs_output: return float_inputs_bytes(q) + bytes(q.out(0));
  }
  return Bytes(0);
}

OpCost elementwise(const CostQuery& q) {
  const auto* spec = spec_of(q.op.type);
  const auto* y = q.out(0);
  if (!spec || !y) return fallback_cost(q.op, q.g, q.grad);
  double per_elem = spec->flops;
  const auto& type = q.op.type;
  const double n_in = present_inputs(q);
  if (type == "Sum" || type == "Max" || type == "Min") per_elem = std::max(n_in - 1.0, 1.0);
  if (type == "Mean") per_elem = n_in;
  double special = spec->special, special_backward = spec->special_backward;
  if (type == "Gelu" && q.op.attr_string("approximate").value_or("none") == "tanh") {
    per_elem = 9;
    special = special_backward = 1;  // tanh forward; its derivative from the same tanh
  }
  if (type == "FastGelu" && q.in(1)) per_elem += 1;

  const double ny = numel(y);
  OpCost c = memory_bound(q, per_elem * ny, saved_bytes(q, spec->saved));
  c.forward_special = special * ny;
  c.backward_special = special_backward * ny;
  // Of those, erf: Erf forward; exact Gelu and its fused forms forward and
  // once backward (the rest are exps).
  const bool erf_gelu = (type == "Gelu" && q.op.attr_string("approximate").value_or("none") != "tanh") ||
                        type == "BiasGelu" || type == "BiasSplitGelu";
  if (type == "Erf" || erf_gelu) c.forward_erf = ny;
  if (erf_gelu) c.backward_erf = ny;
  for (std::size_t i = 0; i < q.op.inputs.size(); ++i)
    if (q.in_needs_grad(i) && numel(q.in(i)) < ny) c.backward_flops += Flops(ny);
  return c;
}

// Dropout family: data at 0; `adds` fused bias/residual adds per element.
OpCost dropout_with(const CostQuery& q, double adds) {
  const auto* y = q.out(0);
  if (!y) return fallback_cost(q.op, q.g, q.grad);
  const double ny = numel(y);
  const Bytes mask = q.out(1) ? Bytes(0) : Bytes(ny);  // implicit 1-byte mask
  const Bytes mask_read = q.out(1) ? bytes(q.out(1)) : Bytes(ny);
  OpCost c = memory_bound(q, (2.0 + adds) * ny, mask_read);
  c.forward_bytes_written += mask;
  return c;
}

OpCost dropout(const CostQuery& q) { return dropout_with(q, 0.0); }
OpCost bias_dropout(const CostQuery& q) {
  // data, bias, residual, ratio, training_mode
  return dropout_with(q, (q.in(1) ? 1.0 : 0.0) + (q.in(2) ? 1.0 : 0.0));
}

constexpr auto kRules = [] {
  std::array<OpRule, kSpecs.size() + 4> r{};
  std::size_t i = 0;
  for (const auto& s : kSpecs) r[i++] = OpRule{s.domain, s.type, OpClass::elementwise, &elementwise};
  r[i++] = OpRule{"", "Dropout", OpClass::elementwise, &dropout};
  r[i++] = OpRule{ms, "BitmaskDropout", OpClass::elementwise, &dropout};
  r[i++] = OpRule{ms, "BiasDropout", OpClass::elementwise, &bias_dropout};
  r[i++] = OpRule{ms, "BitmaskBiasDropout", OpClass::elementwise, &bias_dropout};
  return r;
}();

}  // namespace

std::span<const OpRule> elementwise_rules() { return kRules; }

}  // namespace planner::ops
