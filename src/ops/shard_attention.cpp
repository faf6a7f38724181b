// Sharding of attention: the fused pattern graph::find_attention recognises
// (Q*K^T, scale, mask, Softmax, *V as one unit) and the com.microsoft
// Attention / MultiHeadAttention ops.
//
//   pattern q[b,n,sq,d]  kT[b,n,d,sk]  v[b,n,sk,dv]  (mask[.., sq, sk])
//           -> ctx[b,n,sq,dv]
//     b   batch split: nothing to communicate
//     n   head split (Megatron): each device runs its heads
//     sq  query split (context parallelism, all-gather style): q and ctx
//         split, k and v wanted whole, so the edges into k and v all-gather
//         them forward and reduce-scatter dk, dv backward (their gradients
//         are partial over the axis: every query shard contributes)
//     sk, d, dv never split (the softmax normalises over sk; d and dv are
//         contracted inside the kernel).
//   Masks and biases added to the scores align right against [.., sq, sk].
//
//   com.microsoft Attention x[b,s,hin] W[hin, 3h] bias[3h] -> y[b,s,h]
//     b; n (heads: W's columns, the bias and y's width, granule num_heads;
//     the Q, K and V column blocks are each split by heads, as Megatron lays
//     out its fused QKV weight); s (query split: the op computes k and v
//     from its local x, so it all-gathers them itself: forward all-gather of
//     2 b s h elements, backward reduce-scatter of their gradients); hin
//     never split.
//   com.microsoft MultiHeadAttention q[b,sq,h] k[b,sk,h] v[b,sk,hv] -> y[b,sq,hv]
//     b, n (granule num_heads), sq (k, v whole: gathered by the edges).
#include <array>
#include <set>

#include "shard_rules.hpp"

namespace planner::ops {
namespace shard_detail {

std::optional<ShardSpec> attention_pattern_spec(const graph::OpGraph& g, const graph::FusedPattern& p) {
  const graph::Op& score = g.op(p.ops.front());
  const graph::Op& context = g.op(p.ops.back());
  const auto *q = g.input(score, 0), *kt = g.input(score, 1), *v = g.input(context, 1);
  const auto *s = g.output(score, 0), *ctx = g.output(context, 0);
  if (!q || !kt || !v || !s || !ctx) return std::nullopt;
  const auto& S = s->shape;
  const std::size_t r = S.size();
  if (r < 3 || q->shape.size() != r || kt->shape.size() != r || v->shape.size() != r || ctx->shape.size() != r)
    return std::nullopt;

  ShardSpec spec;
  spec.family = "attention";
  spec.ops = p.ops;
  auto letter = [&](std::string name, SplitRule rule) {
    Letter l;
    l.name = std::move(name);
    l.rule = rule;
    spec.letters.push_back(std::move(l));
    return static_cast<int>(spec.letters.size()) - 1;
  };
  std::vector<int> lead;
  for (std::size_t i = 0; i + 2 < r; ++i)
    lead.push_back(letter(r == 4 ? (i == 0 ? "b" : "n") : (i == 0 ? "bn" : "b" + std::to_string(i)), SplitRule::free));
  const int sq = letter("sq", SplitRule::free);
  const int sk = letter("sk", SplitRule::forbidden);
  const int d = letter("d", SplitRule::forbidden);
  const int dv = letter("dv", SplitRule::forbidden);

  // Leading dims of a [.., x, y] operand: equal to the scores' -> its letter.
  auto with_lead = [&](const graph::Tensor& t, int a, int b) {
    std::vector<int> dims;
    for (std::size_t i = 0; i + 2 < r; ++i) dims.push_back(t.shape[i] == S[i] ? lead[i] : -1);
    dims.push_back(a);
    dims.push_back(b);
    return dims;
  };
  auto port = [&](std::vector<ShardPort>& v, graph::TensorId id, std::vector<int> dims) {
    v.push_back(ShardPort{id, std::move(dims)});
  };
  port(spec.inputs, *score.inputs[0], with_lead(*q, sq, d));
  port(spec.inputs, *score.inputs[1], with_lead(*kt, d, sk));
  port(spec.inputs, *context.inputs[1], with_lead(*v, sk, dv));

  std::vector<int> score_letters(lead);
  score_letters.push_back(sq);
  score_letters.push_back(sk);
  auto align_scores = [&](const graph::Tensor& t) {
    std::vector<int> dims;
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (t.shape.size() > r) { dims.push_back(-1); continue; }
      const std::size_t si = r - t.shape.size() + i;
      dims.push_back(t.shape[i] == S[si] ? score_letters[si] : -1);
    }
    return dims;
  };
  const std::set<graph::OpId> members(p.ops.begin(), p.ops.end());
  std::set<std::uint32_t> listed{score.inputs[0]->value, score.inputs[1]->value, context.inputs[1]->value};
  for (graph::OpId id : p.ops)
    for (const auto& in : g.op(id).inputs) {
      if (!in || listed.count(in->value)) continue;
      const auto& t = g.tensor(*in);
      if (t.producer && members.count(*t.producer)) continue;
      listed.insert(in->value);
      port(spec.inputs, *in, align_scores(t));
    }
  port(spec.outputs, *context.outputs[0], with_lead(*ctx, sq, dv));
  // Intermediate tensors read outside the pattern (rare: probabilities kept
  // as an output) are outputs too.
  for (graph::OpId id : p.ops) {
    if (id == p.ops.back()) continue;
    for (const auto& out : g.op(id).outputs) {
      if (!out) continue;
      const auto& t = g.tensor(*out);
      bool escapes = std::find(g.graph_outputs.begin(), g.graph_outputs.end(), *out) != g.graph_outputs.end();
      for (auto c : t.consumers) escapes = escapes || !members.count(c);
      if (escapes) port(spec.outputs, *out, align_scores(t));
    }
  }
  return spec;
}

}  // namespace shard_detail

namespace {

using shard_detail::shape_of;
using shard_detail::SpecBuilder;

// Context-parallel com.microsoft Attention: k and v are computed from the
// local x, so the op all-gathers them over each axis splitting s.
void gather_kv(const ShardSpec& spec, const graph::OpGraph& g, const layout::DeviceMesh& mesh,
               std::span<const int> axis_letter, Strategy& s) {
  int ls = -1, lb = -1, ln = -1;
  for (std::size_t l = 0; l < spec.letters.size(); ++l) {
    if (spec.letters[l].name == "s") ls = static_cast<int>(l);
    if (spec.letters[l].name == "b") lb = static_cast<int>(l);
    if (spec.letters[l].name == "n") ln = static_cast<int>(l);
  }
  const auto& y = g.tensor(*spec.outputs.at(0).tensor);
  if (y.shape.size() != 3) return;
  double elems = 2.0 * static_cast<double>(y.shape[0] * y.shape[1] * y.shape[2]);
  for (std::size_t a = 0; a < axis_letter.size(); ++a)
    if (axis_letter[a] >= 0 && (axis_letter[a] == lb || axis_letter[a] == ln))
      elems /= mesh.size(layout::MeshAxis(static_cast<int>(a)));
  const double elem = static_cast<double>(core::dtype_size(y.dtype));
  for (std::size_t a = 0; a < axis_letter.size(); ++a) {
    if (axis_letter[a] != ls || ls < 0) continue;
    layout::CommStep st;
    st.axis = layout::MeshAxis(static_cast<int>(a));
    st.group_size = mesh.size(st.axis);
    st.bytes = Bytes(elems * elem);
    st.kind = core::Collective::all_gather;
    s.forward_comm.push_back(st);
    st.kind = core::Collective::reduce_scatter;
    s.backward_comm.push_back(st);
  }
}

std::optional<ShardSpec> ms_attention(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto *x = shape_of(g, op, true, 0), *w = shape_of(g, op, true, 1), *y = shape_of(g, op, false, 0);
  const auto heads = op.attr_int("num_heads");
  if (!x || !w || !y || !heads || x->size() != 3 || w->size() != 2 || y->size() != 3) return std::nullopt;
  if (op.attr_ints("qkv_hidden_sizes") || op.attr_int("past_present_share_buffer").value_or(0)) return std::nullopt;
  SpecBuilder sb(g, id, "attention");
  const int b = sb.letter("b"), s = sb.letter("s"), k = sb.letter("hin", SplitRule::forbidden), n = sb.letter("n");
  sb.at(n).granule = *heads;
  sb.in(0, {b, s, k}).in(1, {-1, n});
  if (const auto* bias = shape_of(g, op, true, 2)) sb.in(2, std::vector<int>(bias->size(), bias->size() == 1 ? n : -1));
  else sb.in(2, {});
  for (std::size_t i = 3; i < op.inputs.size(); ++i) {
    const auto* t = shape_of(g, op, true, i);
    std::vector<int> dims = sb.unsplit(sb.op_tensor(true, i));
    if (t && !t->empty() && (*t)[0] == (*x)[0] && (*x)[0] > 1) dims[0] = b;  // per-batch masks and biases
    sb.in(i, std::move(dims));
  }
  sb.out(0, {b, s, n});
  sb.spec().extra = &gather_kv;
  return sb.done();
}

std::optional<ShardSpec> multi_head_attention(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto *q = shape_of(g, op, true, 0), *k = shape_of(g, op, true, 1), *v = shape_of(g, op, true, 2),
             *y = shape_of(g, op, false, 0);
  const auto heads = op.attr_int("num_heads");
  if (!q || !k || !v || !y || !heads || q->size() != 3 || k->size() != 3 || v->size() != 3 || y->size() != 3)
    return std::nullopt;
  SpecBuilder sb(g, id, "attention");
  const int b = sb.letter("b"), sq = sb.letter("sq"), sk = sb.letter("sk", SplitRule::forbidden),
            n = sb.letter("n");
  sb.at(n).granule = *heads;
  sb.in(0, {b, sq, n}).in(1, {b, sk, n}).in(2, {b, sk, n});
  for (std::size_t i = 3; i < op.inputs.size(); ++i) {
    const auto* t = shape_of(g, op, true, i);
    std::vector<int> dims = sb.unsplit(sb.op_tensor(true, i));
    if (i == 3 && t && t->size() == 1) dims[0] = n;  // packed q/k/v bias
    else if (t && !t->empty() && (*t)[0] == (*q)[0] && (*q)[0] > 1) dims[0] = b;
    sb.in(i, std::move(dims));
  }
  sb.out(0, {b, sq, n});
  return sb.done();
}

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kRules{
    ShardRule{ms, "Attention", &ms_attention},
    ShardRule{ms, "MultiHeadAttention", &multi_head_attention},
};

}  // namespace

std::span<const ShardRule> attention_shard_rules() { return kRules; }

}  // namespace planner::ops
