// Sharding of embeddings (Gather) and of the losses that end a language
// model or a classifier.
//
//   Gather table[V,h] ids[b,s] (axis 0) -> y[b,s,h]
//     letters v (the gathered rows), h (the table's other dims), b, s (the
//     indices' dims). The engine turns each split into:
//       b, s   batch / sequence split of the lookup: the table is replicated
//              over that axis and its gradient partial (data-parallel sync)
//       v      vocabulary parallel (Megatron's VocabParallelEmbedding) and
//              the row-sharded table of the seed's Wide&Deep: each device
//              holds V/n rows, looks up the ids in its range and writes zeros
//              elsewhere, so y is partial over the axis; the outgoing edge
//              all-reduces it (or reduce-scatters it into a sequence split)
//       h      hidden split (table split on columns): y split on h, an
//              all-gather on the edge when the consumer wants it whole
//     The table's column letters give the output dims DimKind::hidden: the
//     embedding's width is the residual stream's.
//   Any other Gather (of activations) follows the same letters.
//
//   SoftmaxCrossEntropyLoss scores[n,c,...] labels[n,...] (weights[c])
//     -> loss (scalar, or [n,...] with reduction none) (, log_prob)
//     n and the extra dims are free (a scalar loss is then partial: the mean
//     of the shards' sums); c is costed: the vocabulary-parallel
//     cross-entropy (Megatron) all-reduces 3 fp32 values per row forward
//     (max, sum of exp, the target's logit) and nothing backward (softmax
//     minus one-hot is local to each vocabulary shard).
//   NegativeLogLikelihoodLoss input[n,c,...] target[n,...]: c free -- the
//     picked log-probability is a masked lookup like the embedding's, so the
//     loss is partial over an axis splitting c.
#include <array>

#include "shard_rules.hpp"

namespace planner::ops {
namespace {

using shard_detail::shape_of;
using shard_detail::SpecBuilder;

std::optional<ShardSpec> gather(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto *data = shape_of(g, op, true, 0), *idx = shape_of(g, op, true, 1), *y = shape_of(g, op, false, 0);
  if (!data || !idx || !y || data->empty()) return std::nullopt;
  const auto axis = shard_detail::norm_axis(op.attr_int("axis").value_or(0), data->size());
  if (!axis || y->size() != data->size() - 1 + idx->size()) return std::nullopt;
  const bool table = g.input(op, 0)->role == graph::TensorRole::parameter;
  SpecBuilder sb(g, id, table ? "embedding" : "gather");
  std::vector<int> dd, di, dy;
  int columns = 0;
  for (std::size_t d = 0; d < data->size(); ++d) {
    if (static_cast<int>(d) == *axis) {
      dd.push_back(sb.letter("v"));
      continue;
    }
    const std::string col = columns++ ? "h" + std::to_string(columns) : "h";
    const int l = sb.letter(table ? col : "d" + std::to_string(d));
    if (table) sb.at(l).output_kind = DimKind::hidden;
    dd.push_back(l);
  }
  for (std::size_t d = 0; d < idx->size(); ++d) di.push_back(sb.letter("i" + std::to_string(d)));
  for (std::size_t d = 0; d < static_cast<std::size_t>(*axis); ++d) dy.push_back(dd[d]);
  dy.insert(dy.end(), di.begin(), di.end());
  for (std::size_t d = static_cast<std::size_t>(*axis) + 1; d < data->size(); ++d) dy.push_back(dd[d]);
  sb.in(0, std::move(dd)).in(1, std::move(di)).out(0, std::move(dy));
  return sb.done();
}

std::optional<ShardSpec> loss_with(const graph::OpGraph& g, graph::OpId id, bool softmax) {
  const graph::Op& op = g.op(id);
  const auto *scores = shape_of(g, op, true, 0), *labels = shape_of(g, op, true, 1), *loss = shape_of(g, op, false, 0);
  if (!scores || !labels || !loss || scores->size() < 2 || labels->size() + 1 != scores->size()) return std::nullopt;
  SpecBuilder sb(g, id, "loss");
  const int n = sb.letter("n");
  const int c = sb.letter("c", softmax ? SplitRule::costed : SplitRule::free);
  if (softmax) {
    sb.at(c).stats_port = 0;
    sb.at(c).forward_stats = 3;
    sb.at(c).backward_stats = 0;
  }
  std::vector<int> ds{n, c}, dl{n};
  for (std::size_t d = 2; d < scores->size(); ++d) {
    const int l = sb.letter("d" + std::to_string(d));
    ds.push_back(l);
    dl.push_back(l);
  }
  sb.in(0, ds).in(1, dl);
  if (const auto* w = shape_of(g, op, true, 2)) sb.in(2, w->size() == 1 ? std::vector<int>{c} : std::vector<int>(w->size(), -1));
  // The loss: scalar (mean/sum) or the labels' shape (reduction none).
  sb.out(0, loss->empty() ? std::vector<int>{} : (loss->size() == dl.size() ? dl : std::vector<int>(loss->size(), -1)));
  if (const auto* lp = shape_of(g, op, false, 1)) sb.out(1, lp->size() == ds.size() ? ds : std::vector<int>(lp->size(), -1));
  return sb.done();
}

std::optional<ShardSpec> softmax_cross_entropy(const graph::OpGraph& g, graph::OpId id) { return loss_with(g, id, true); }
std::optional<ShardSpec> nll_loss(const graph::OpGraph& g, graph::OpId id) { return loss_with(g, id, false); }

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kRules{
    ShardRule{"", "Gather", &gather},
    ShardRule{"", "SoftmaxCrossEntropyLoss", &softmax_cross_entropy},
    ShardRule{"", "NegativeLogLikelihoodLoss", &nll_loss},
    ShardRule{ms, "SoftmaxCrossEntropyLossInternal", &softmax_cross_entropy},
};

}  // namespace

std::span<const ShardRule> embedding_shard_rules() { return kRules; }

}  // namespace planner::ops
