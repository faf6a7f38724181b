// Sharding of elementwise ops: numpy broadcasting.
//
//   Add x[b,s,h] + bias[h] -> y[b,s,h]
//     letters d0 d1 d2, one per output dim; every input dim aligned right
//     against the output carries the same letter, except a size-1 dim
//     broadcast against a larger one (never split there).
//   So an elementwise op follows its inputs' splits: replicated, batch,
//   sequence or hidden/ffn split alike. A broadcast input's gradient is
//   partial over the axes splitting the dims it lacks (the engine's rule):
//   the bias above, with b split over dp, returns dBias partial over dp, the
//   data-parallel sync of that bias.
//   Inputs are never partial: a row-parallel MatMul's partial output is
//   all-reduced (or reduce-scattered) before its bias Add.
//
// Every op whose semantics class is elementwise uses this rule (op_spec()
// falls back to it), when all its outputs have the broadcast shape of its
// inputs; others (DynamicQuantizeLinear's scalar outputs, RotaryEmbedding's
// caches) are replicated.
#include <array>

#include "shard_rules.hpp"

namespace planner::ops {
namespace shard_detail {

std::optional<ShardSpec> broadcast_spec(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto* y = shape_of(g, op, false, 0);
  if (!y) return std::nullopt;
  const std::size_t r = y->size();
  // The outputs must all have the broadcast shape of the inputs.
  for (std::size_t o = 0; o < op.outputs.size(); ++o) {
    const auto* s = shape_of(g, op, false, o);
    if (s && *s != *y) return std::nullopt;
  }
  std::vector<std::int64_t> bshape(r, 1);
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const auto* s = shape_of(g, op, true, i);
    if (!s) continue;
    if (s->size() > r) return std::nullopt;
    for (std::size_t d = 0; d < s->size(); ++d) {
      const std::size_t yd = r - s->size() + d;
      const auto v = (*s)[d];
      if (v != 1 && v != (*y)[yd]) return std::nullopt;
      bshape[yd] = std::max(bshape[yd], v);
    }
  }
  if (bshape != *y) return std::nullopt;

  SpecBuilder sb(g, id, "elementwise");
  std::vector<int> letters;
  for (std::size_t d = 0; d < r; ++d) letters.push_back(sb.letter("d" + std::to_string(d)));
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const auto* s = shape_of(g, op, true, i);
    std::vector<int> dims;
    if (s)
      for (std::size_t d = 0; d < s->size(); ++d) {
        const std::size_t yd = r - s->size() + d;
        dims.push_back((*s)[d] == (*y)[yd] ? letters[yd] : -1);
      }
    sb.in(i, std::move(dims));
  }
  for (std::size_t o = 0; o < op.outputs.size(); ++o) sb.out(o, letters);
  return sb.done();
}

}  // namespace shard_detail

namespace {

std::optional<ShardSpec> broadcast(const graph::OpGraph& g, graph::OpId id) { return shard_detail::broadcast_spec(g, id); }

constexpr std::string_view ms = "com.microsoft";

// Kinds listed for clarity or because their semantics class is not
// elementwise; every other elementwise-class op reaches broadcast_spec through
// op_spec()'s fallback.
constexpr std::array kRules{
    ShardRule{"", "Add", &broadcast},      ShardRule{"", "Dropout", &broadcast},
    ShardRule{"", "Mul", &broadcast},      ShardRule{"", "Where", &broadcast},
    ShardRule{ms, "BiasGelu", &broadcast}, ShardRule{ms, "FastGelu", &broadcast},
    ShardRule{ms, "BiasDropout", &broadcast},
};

}  // namespace

std::span<const ShardRule> elementwise_shard_rules() { return kRules; }

}  // namespace planner::ops
