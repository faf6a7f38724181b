// Losses: SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss, and the
// com.microsoft spellings (SoftmaxCrossEntropyLossInternal,
// SoftmaxCrossEntropy, SparseSoftmaxCrossEntropy).
//
// Softmax cross-entropy: scores[N, C, ...], labels (class indices [N, ...],
// or one-hot for SoftmaxCrossEntropy), weights[C]?:
//   forward  5 numel(scores) (log-softmax, as LogSoftmax) + 2 per label
//            (pick, accumulate), + 1 per label with class weights;
//            reads every input; writes every output, plus the log-probs
//            (bytes(scores)) when the graph has no log_prob output: training
//            keeps them for backward either way.
//   backward 2x forward FLOPs; reads dLoss, the log-probs, the labels and
//            weights; writes dScores (exp(logp) - onehot, scaled).
//   special functions: forward one exp per score and a log per row (the
//            log-sum-exp); backward two exps per score, as the reference CPU
//            kernel computes it (it keeps only the scores, so it recomputes
//            each row's log-sum-exp before exp(score - lse)).
// NegativeLogLikelihoodLoss: input[N, C, ...] (log-probs), target[N, ...]:
//   forward  2 per target (+1 with weights); reads one element of input per
//            target, the targets and weights; writes the loss.
//   backward numel(target) FLOPs; scatters -dLoss into a zero-filled dInput:
//            reads dLoss, targets, weights; writes bytes(input).
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

OpCost softmax_cross_entropy(const CostQuery& q) {
  const auto *scores = q.in(0), *labels = q.in(1), *weights = q.in(2), *loss = q.out(0), *log_prob = q.out(1);
  if (!scores || !labels || !loss) return fallback_cost(q.op, q.g, q.grad);
  // One label per row of C classes, whatever the label encoding.
  const double rows = numel(scores) / std::max(dim(scores, 1), 1.0);
  const double fwd = 5.0 * numel(scores) + (weights ? 3.0 : 2.0) * rows;
  const Bytes logp = bytes(scores);
  OpCost c;
  c.forward_flops = Flops(fwd);
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q) + (log_prob ? Bytes(0) : logp);
  c.backward_flops = Flops(2.0 * fwd);
  c.backward_bytes_read = bytes(loss) + logp + bytes(labels) + bytes(weights);
  c.backward_bytes_written = in_grad_bytes(q);
  c.forward_special = numel(scores) + rows;
  c.backward_special = 2.0 * numel(scores) + rows;
  return c;
}

OpCost nll_loss(const CostQuery& q) {
  const auto *input = q.in(0), *target = q.in(1), *weights = q.in(2), *loss = q.out(0);
  if (!input || !target || !loss) return fallback_cost(q.op, q.g, q.grad);
  const double n = numel(target);
  OpCost c;
  c.forward_flops = Flops((weights ? 3.0 : 2.0) * n);
  c.forward_bytes_read = Bytes(n * elem_size(input)) + bytes(target) + bytes(weights);
  c.forward_bytes_written = outputs_bytes(q);
  c.backward_flops = Flops(n);
  c.backward_bytes_read = bytes(loss) + bytes(target) + bytes(weights);
  c.backward_bytes_written = in_grad_bytes(q);
  return c;
}

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kRules{
    OpRule{"", "SoftmaxCrossEntropyLoss", OpClass::loss, &softmax_cross_entropy},
    OpRule{"", "NegativeLogLikelihoodLoss", OpClass::loss, &nll_loss},
    OpRule{ms, "SoftmaxCrossEntropyLossInternal", OpClass::loss, &softmax_cross_entropy},
    OpRule{ms, "SoftmaxCrossEntropy", OpClass::loss, &softmax_cross_entropy},
    OpRule{ms, "SparseSoftmaxCrossEntropy", OpClass::loss, &softmax_cross_entropy},
};

}  // namespace

std::span<const OpRule> loss_rules() { return kRules; }

}  // namespace planner::ops
