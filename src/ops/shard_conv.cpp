// Sharding of convolutions and pooling.
//
//   Conv x[n,ic,H,W] w[oc,ic,kh,kw] (b[oc]) -> y[n,oc,H',W']   (group 1)
//     n   batch split (data parallel): w's gradient partial
//     oc  output-channel split: y split on channels, dx partial (like a
//         column-parallel MatMul)
//     ic  input-channel split: y partial (like a row-parallel MatMul); the
//         bias is added by one member
//     spatial dims never split (halo exchange is not modelled).
//   Depthwise (group == ic == oc): one channel letter c shared by x, w's
//   first dim, y and b: a channel split needs no communication.
//   Other grouped convolutions: n only.
//   ConvTranspose x[n,ic,..] w[ic,oc/group,..] -> y[n,oc,..] (group 1): n, ic
//   (y partial), oc.
//   Pools (Max, Average, Lp, Global*) x[n,c,spatial] -> y[n,c,spatial']:
//   n and c free, spatial never split.
#include <array>

#include "shard_rules.hpp"

namespace planner::ops {
namespace {

using shard_detail::shape_of;
using shard_detail::SpecBuilder;

std::vector<int> pad(std::vector<int> v, std::size_t rank) {
  v.resize(rank, -1);
  return v;
}

std::optional<ShardSpec> conv_with(const graph::OpGraph& g, graph::OpId id, bool transpose) {
  const graph::Op& op = g.op(id);
  const auto *x = shape_of(g, op, true, 0), *w = shape_of(g, op, true, 1), *y = shape_of(g, op, false, 0);
  if (!x || !w || !y || x->size() < 3 || w->size() != x->size() || y->size() != x->size()) return std::nullopt;
  const auto group = op.attr_int("group").value_or(1);
  SpecBuilder sb(g, id, "conv");
  const int n = sb.letter("n");
  const std::size_t r = x->size();
  std::vector<int> dx{n, -1}, dw{-1, -1}, dy{n, -1}, db{-1};
  if (group == 1) {
    const int oc = sb.letter("oc"), ic = sb.letter("ic");
    dx[1] = ic;
    dy[1] = oc;
    dw = transpose ? std::vector<int>{ic, oc} : std::vector<int>{oc, ic};
    db[0] = oc;
  } else if (!transpose && group == (*x)[1] && group == (*y)[1] && (*w)[1] == 1) {
    const int c = sb.letter("c");
    dx[1] = dy[1] = dw[0] = db[0] = c;
  }
  for (std::size_t d = 2; d < r; ++d) sb.letter("sp" + std::to_string(d - 2), SplitRule::forbidden);
  sb.in(0, pad(dx, r)).in(1, pad(dw, r));
  if (const auto* b = shape_of(g, op, true, 2)) sb.in(2, b->size() == 1 ? db : std::vector<int>(b->size(), -1));
  sb.out(0, pad(dy, r));
  return sb.done();
}

std::optional<ShardSpec> conv(const graph::OpGraph& g, graph::OpId id) { return conv_with(g, id, false); }
std::optional<ShardSpec> conv_transpose(const graph::OpGraph& g, graph::OpId id) { return conv_with(g, id, true); }

std::optional<ShardSpec> pool(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto *x = shape_of(g, op, true, 0), *y = shape_of(g, op, false, 0);
  if (!x || !y || x->size() < 3 || y->size() != x->size()) return std::nullopt;
  SpecBuilder sb(g, id, "conv");
  const int n = sb.letter("n"), c = sb.letter("c");
  sb.in(0, pad({n, c}, x->size()));
  for (std::size_t o = 0; o < op.outputs.size(); ++o) {
    const auto* s = shape_of(g, op, false, o);
    sb.out(o, s && s->size() == x->size() ? pad({n, c}, s->size()) : sb.unsplit(sb.op_tensor(false, o)));
  }
  return sb.done();
}

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kRules{
    ShardRule{"", "Conv", &conv},
    ShardRule{"", "ConvTranspose", &conv_transpose},
    ShardRule{"", "MaxPool", &pool},
    ShardRule{"", "AveragePool", &pool},
    ShardRule{"", "LpPool", &pool},
    ShardRule{"", "GlobalAveragePool", &pool},
    ShardRule{"", "GlobalMaxPool", &pool},
    ShardRule{"", "GlobalLpPool", &pool},
    ShardRule{ms, "FusedConv", &conv},
};

}  // namespace

std::span<const ShardRule> conv_shard_rules() { return kRules; }

}  // namespace planner::ops
