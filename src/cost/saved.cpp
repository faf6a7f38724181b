// Saved-for-backward rules: which tensors each op's backward reads, as
// PyTorch autograd keeps them (torch/csrc/autograd derivatives.yaml).
//
//   MatMul, Gemm, Conv, Einsum   operand i when another operand needs a
//                                gradient (dA = dY B^T keeps B; dB = A^T dY keeps A)
//   RNNs (LSTM, GRU, RNN)        every floating input and output (approximation)
//   Mul                          operand i when the other one needs a gradient
//   Div a / b                    b; a too when b needs a gradient
//   Where                        the condition
//   Relu, Sigmoid, Tanh, Exp, Sqrt, Reciprocal: the output
//   Add, Sub, Neg, Cast, compare, logic, Sum, Mean, BiasAdd, rounding: nothing
//   Max, Min, PRelu, Mod, BiasGelu, BiasSplitGelu: the inputs; Pow: inputs + output
//   other elementwise (Gelu, Erf, Log, LeakyRelu, Clip, ...): the input
//   Dropout family               a 1-byte mask per element (the mask output if present)
//   LayerNorm, RMSNorm, Skip*    the input + f32 mean and 1/std per row (8 B)
//   BatchNorm                    the input + 8 B per channel; Instance/GroupNorm per group
//   Softmax, LogSoftmax          the output
//   ReduceSum/Mean, AveragePool, GlobalAveragePool, CumSum: nothing
//   ReduceMax/Min, MaxPool, other reductions: the input (and the output)
//   views and copies             nothing; Gather*, Scatter*: the indices
//   embedding Gather             the indices
//   cross-entropy                the labels (+ the log-probs: the loss buffer)
//   attention op, flash          q, k, v (inputs), o, f32 log-sum-exp
//   attention op, unfused        its inputs + the s x s probabilities
//   unknown ops                  every floating input (conservative)

#include "saved.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace planner::cost::detail {
namespace {

using graph::OpClass;

bool needs(const graph::Op& op, const ops::GradMask& grad, std::size_t i) {
  if (i >= op.inputs.size() || !op.inputs[i]) return false;
  const auto v = op.inputs[i]->value;
  return v < grad.size() && grad[v];
}

bool any_needs(const graph::Op& op, const ops::GradMask& grad) {
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (needs(op, grad, i)) return true;
  return false;
}

template <std::size_t N>
bool one_of(std::string_view t, const std::array<std::string_view, N>& list) {
  return std::find(list.begin(), list.end(), t) != list.end();
}

constexpr std::array<std::string_view, 24> kSaveNothing{
    "Add",   "Sub",     "Neg",        "Floor",      "Ceil",      "Round",   "Sign",       "IsNaN",
    "IsInf", "Not",     "BitwiseNot", "Equal",      "Less",      "LessOrEqual", "Greater", "GreaterOrEqual",
    "And",   "Or",      "Xor",        "Sum",        "Mean",      "Cast",    "CastLike",   "BiasAdd"};
constexpr std::array<std::string_view, 6> kSaveOutput{"Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Reciprocal"};
constexpr std::array<std::string_view, 6> kSaveInputs{"Max", "Min", "PRelu", "Mod", "BiasGelu", "BiasSplitGelu"};
constexpr std::array<std::string_view, 4> kDropout{"Dropout", "BitmaskDropout", "BiasDropout", "BitmaskBiasDropout"};
constexpr std::array<std::string_view, 5> kRowNorms{"LayerNormalization", "SimplifiedLayerNormalization",
                                                    "RMSNormalization", "SkipLayerNormalization",
                                                    "SkipSimplifiedLayerNormalization"};
constexpr std::array<std::string_view, 5> kReduceNothing{"ReduceSum", "ReduceMean", "AveragePool",
                                                         "GlobalAveragePool", "CumSum"};
constexpr std::array<std::string_view, 3> kRnn{"LSTM", "GRU", "RNN"};
constexpr std::array<std::string_view, 7> kAlias{"Reshape", "Squeeze", "Unsqueeze", "Flatten",
                                                 "Identity", "Transpose", "Split"};
constexpr std::array<std::string_view, 5> kCrossEntropy{"SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLossInternal",
                                                        "SoftmaxCrossEntropy", "SparseSoftmaxCrossEntropy",
                                                        "NegativeLogLikelihoodLoss"};

struct Out {
  std::vector<RawSaved> items;
  void tensor(const std::optional<graph::TensorId>& t) {
    if (t) items.push_back(RawSaved{SavedKind::tensor, t, Bytes(0)});
  }
  void input(const graph::Op& op, std::size_t i) {
    if (i < op.inputs.size()) tensor(op.inputs[i]);
  }
  void output(const graph::Op& op, std::size_t i) {
    if (i < op.outputs.size()) tensor(op.outputs[i]);
  }
  void floating_inputs(const graph::Op& op, const graph::OpGraph& g) {
    for (const auto& t : op.inputs)
      if (t && core::is_floating(g.tensor(*t).dtype)) tensor(t);
  }
  void synthetic(SavedKind k, const graph::Op& op, Bytes b) {
    if (b.value > 0) items.push_back(RawSaved{k, op.outputs.empty() ? std::nullopt : op.outputs[0], b});
  }
};

double rows_of(const graph::Op& op, const graph::OpGraph& g) {
  const auto* x = g.input(op, 0);
  if (!x || x->shape.empty()) return 0;
  const auto r = static_cast<std::int64_t>(x->shape.size());
  const auto& t = op.type;
  if (t == "BatchNormalization") return r >= 2 ? static_cast<double>(x->shape[1]) : 0;
  if (t == "InstanceNormalization") return r >= 2 ? static_cast<double>(x->shape[0] * x->shape[1]) : 0;
  if (t == "GroupNormalization" || t == "GroupNorm") {
    const auto groups = op.attr_int("num_groups").value_or(op.attr_int("groups").value_or(1));
    return static_cast<double>(x->shape[0] * groups);
  }
  if (!one_of(t, kRowNorms)) return 0;
  std::int64_t axis = op.attr_int("axis").value_or(-1);
  if (t.rfind("Skip", 0) == 0) axis = -1;
  if (axis < 0) axis += r;
  double rows = 1;
  for (std::int64_t i = 0; i < std::clamp<std::int64_t>(axis, 0, r); ++i) rows *= static_cast<double>(x->shape[i]);
  return rows;
}

void elementwise(const graph::Op& op, const graph::OpGraph& g, const ops::GradMask& grad, Out& out) {
  const auto& t = op.type;
  if (one_of(t, kDropout)) {
    if (op.outputs.size() > 1 && op.outputs[1]) {
      out.output(op, 1);
    } else if (const auto* y = g.output(op, 0)) {
      out.synthetic(SavedKind::dropout_mask, op, Bytes(static_cast<double>(y->numel())));
    }
    return;
  }
  if (one_of(t, kSaveNothing) || t.rfind("Bitwise", 0) == 0 || t == "BitShift" || t.find("Quantize") != std::string::npos ||
      t == "RotaryEmbedding")
    return;
  if (t == "Mul") {
    if (needs(op, grad, 1)) out.input(op, 0);
    if (needs(op, grad, 0)) out.input(op, 1);
    return;
  }
  if (t == "Div") {
    out.input(op, 1);
    if (needs(op, grad, 1)) out.input(op, 0);
    return;
  }
  if (t == "Where") return out.input(op, 0);
  if (one_of(t, kSaveOutput)) return out.output(op, 0);
  if (t == "Pow") {
    out.floating_inputs(op, g);
    return out.output(op, 0);
  }
  if (one_of(t, kSaveInputs)) return out.floating_inputs(op, g);
  out.input(op, 0);
}

void contraction(const graph::Op& op, const graph::OpGraph& g, const ops::GradMask& grad, Out& out) {
  if (one_of(op.type, kRnn)) {
    out.floating_inputs(op, g);
    for (std::size_t i = 0; i < op.outputs.size(); ++i) out.output(op, i);
    return;
  }
  const std::size_t operands = op.type == "Einsum" ? op.inputs.size() : std::min<std::size_t>(op.inputs.size(), 2);
  for (std::size_t i = 0; i < operands; ++i) {
    bool other_needs = false;
    for (std::size_t j = 0; j < operands; ++j)
      if (j != i && needs(op, grad, j)) other_needs = true;
    if (other_needs) out.input(op, i);
  }
}

void attention(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy, AttentionMode mode,
               Out& out) {
  out.floating_inputs(op, g);
  const graph::FusedPattern* p = nullptr;
  if (op.fused_group && static_cast<std::size_t>(*op.fused_group) < g.fused.size())
    p = &g.fused[static_cast<std::size_t>(*op.fused_group)];
  if (mode == AttentionMode::flash) {
    out.output(op, 0);
    if (p) out.synthetic(SavedKind::logsumexp, op, Bytes(static_cast<double>(p->batch * p->heads * p->seq_q) * 4.0));
    return;
  }
  // score_bytes holds the scores and the probabilities, graph dtype: keep
  // one of the two at the op's precision.
  if (p) out.synthetic(SavedKind::attention_probs, op, p->score_bytes * 0.5 * byte_scale(op, g, policy));
}

}  // namespace

bool is_alias_op(const graph::Op& op) { return op.domain.empty() && one_of(op.type, kAlias); }

std::vector<RawSaved> saved_by(const graph::Op& op, const graph::OpGraph& g, const ops::GradMask& grad,
                               const PrecisionPolicy& policy, AttentionMode mode) {
  Out out;
  if (!any_needs(op, grad)) return {};
  switch (op.op_class) {
    case OpClass::matmul:
    case OpClass::conv: contraction(op, g, grad, out); break;
    case OpClass::attention: attention(op, g, policy, mode, out); break;
    case OpClass::elementwise: elementwise(op, g, grad, out); break;
    case OpClass::normalization: {
      out.input(op, 0);
      if (op.type.rfind("Skip", 0) == 0) out.input(op, 1);  // x + skip: both gradients read only the sum
      out.synthetic(SavedKind::norm_stats, op, Bytes(rows_of(op, g) * 8.0));
      break;
    }
    case OpClass::softmax: out.output(op, 0); break;
    case OpClass::reduction:
      if (one_of(op.type, kReduceNothing)) break;
      if (op.type == "TopK") {
        out.output(op, 1);
        break;
      }
      out.input(op, 0);
      if (op.type.rfind("Reduce", 0) == 0 && op.type != "ReduceSumSquare") out.output(op, 0);
      break;
    case OpClass::data_movement:
      if (op.type.rfind("Gather", 0) == 0 || op.type.rfind("Scatter", 0) == 0) out.input(op, 1);
      else if (op.type == "GridSample") out.input(op, 1);
      break;
    case OpClass::embedding:
      if (op.type == "Gather") {
        out.input(op, 1);
      } else {  // EmbedLayerNormalization: ids, the embedding sum (as the output), statistics
        out.input(op, 0);
        out.output(op, 0);
        if (const auto* y = g.output(op, 0); y && !y->shape.empty())
          out.synthetic(SavedKind::norm_stats, op, Bytes(static_cast<double>(y->numel() / y->shape.back()) * 8.0));
      }
      break;
    case OpClass::loss:
      if (one_of(op.type, kCrossEntropy)) {
        out.input(op, 1);
        if (op.type == "NegativeLogLikelihoodLoss") out.input(op, 2);
      } else {
        out.floating_inputs(op, g);
      }
      break;
    case OpClass::constant: break;
    case OpClass::control_flow:
    case OpClass::other: out.floating_inputs(op, g); break;
  }
  return out.items;
}

Bytes loss_buffer_bytes(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy) {
  if (op.op_class != OpClass::loss || op.type == "NegativeLogLikelihoodLoss" || !one_of(op.type, kCrossEntropy))
    return Bytes(0);
  const auto* scores = g.input(op, 0);
  return scores ? bytes_at(*scores, policy.of(op)) : Bytes(0);
}

}  // namespace planner::cost::detail
