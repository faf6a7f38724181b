// Attention pattern recognition.
//
// Exporters spell attention in many ways; what they share is a Softmax whose
// input is a score MatMul (Q * K^T), optionally scaled and masked, and whose
// output (optionally through Dropout/Cast) is the left operand of a second
// MatMul with V:
//
//     Q ──┐
//         MatMul ─> [Mul|Div scale] ─> [Add|Where mask] ─> Softmax ─> [Dropout] ─> MatMul ─> context
//     Kᵀ ─┘                                                                    V ──┘
//
// The ops from the score MatMul to the context MatMul become one FusedPattern.
// A com.microsoft Attention / MultiHeadAttention op is a pattern by itself.
//
// Grouped-query attention repeats each K/V head for several query heads
// before the score MatMul, as Hugging Face's repeat_kv (expand + reshape) or
// as torch's repeat_interleave (exported as SplitToSequence, a Loop of
// SequenceAt/Expand/Reshape/SequenceInsert, ConcatFromSequence). Walking back
// from K along its data operand (through the repeats, rotary embeddings,
// layout changes) to the op that made its elements (the K projection, or the
// Slice/Split taking K out of a packed QKV projection; a Split whose pieces
// were concatenated again is one of the repeats, walked through) reaches K
// before the repeats:
//
//     k_proj [b, s, kv*d] -> Reshape -> Transpose -> (rotary) -> Unsqueeze -> Expand -> Reshape [b, h, s, d] -> Transpose -> MatMul
//
// its elements over b * s * d are the key/value heads.

#include <algorithm>

#include "planner/graph/analysis.hpp"

namespace planner::graph {
namespace {

constexpr int kMaxSteps = 6;

bool is_matmul(const Op& op) {
  return op.type == "MatMul" || (op.type == "FusedMatMul" && op.domain == "com.microsoft");
}

bool is_between_score_and_softmax(const Op& op) {
  static constexpr std::string_view kAllowed[] = {"Add", "Mul", "Div", "Sub", "Where", "Cast", "Identity"};
  return std::find(std::begin(kAllowed), std::end(kAllowed), op.type) != std::end(kAllowed);
}

bool is_between_softmax_and_context(const Op& op) {
  static constexpr std::string_view kAllowed[] = {"Dropout", "Cast", "Identity", "BitmaskDropout", "Where"};
  return std::find(std::begin(kAllowed), std::end(kAllowed), op.type) != std::end(kAllowed);
}

// The first floating, op-produced input of `op` (the "data" operand).
std::optional<OpId> data_producer(const OpGraph& g, const Op& op) {
  for (const auto& in : op.inputs) {
    if (!in) continue;
    const auto& t = g.tensor(*in);
    if (t.producer && is_floating(t.dtype) && t.role == TensorRole::activation) return t.producer;
  }
  return std::nullopt;
}

std::int64_t dim_from_end(const std::vector<std::int64_t>& s, std::size_t k) {
  return s.size() >= k ? s[s.size() - k] : 1;
}

void add_pattern(OpGraph& g, FusedPattern p) {
  const int id = static_cast<int>(g.fused.size());
  for (auto o : p.ops) g.op(o).fused_group = id;
  g.fused.push_back(std::move(p));
}

void fill_from_scores(const OpGraph& g, const Op& score_mm, const Op& ctx_mm, FusedPattern& p) {
  const Tensor* q = g.input(score_mm, 0);
  const Tensor* scores = g.output(score_mm, 0);
  const Tensor* v = g.input(ctx_mm, 1);
  if (!q || !scores || !v) return;
  const auto& s = scores->shape;
  p.seq_q = dim_from_end(s, 2);
  p.seq_k = dim_from_end(s, 1);
  p.head_dim = dim_from_end(q->shape, 1);
  p.head_dim_v = dim_from_end(v->shape, 1);
  if (s.size() >= 4) {
    p.heads = s[s.size() - 3];
    p.batch = 1;
    for (std::size_t i = 0; i + 3 < s.size(); ++i) p.batch *= s[i];
  } else {
    p.heads = 1;
    p.batch = s.size() == 3 ? s[0] : 1;
  }
}

// Ops that make or select K's elements (a projection, one piece of a packed
// QKV projection): the walk back from K stops at their output.
bool makes_keys(const Op& op) {
  static constexpr std::string_view kStops[] = {"MatMul", "Gemm", "FusedMatMul", "Einsum", "Conv",
                                                "Slice",  "Split", "Gather"};
  return std::find(std::begin(kStops), std::end(kStops), op.type) != std::end(kStops);
}

// Key/value heads of a pattern: the elements of the tensor K's repeats were
// made from, over batch x key length x head dim (see the file comment).
std::int64_t kv_heads_of(const OpGraph& g, const Op& score_mm, const FusedPattern& p) {
  const Tensor* k = g.input(score_mm, 1);
  const auto per_head = p.batch * p.seq_k * p.head_dim;
  if (!k || per_head <= 0) return 0;
  bool rejoined = false;  // through a Concat: the pieces of a split are K's heads repeated
  for (int step = 0; step < 4 * kMaxSteps && k->producer; ++step) {
    const Op& op = g.op(*k->producer);
    const bool split = op.type == "Split" || op.type == "SplitToSequence";
    if (makes_keys(op) && !(split && rejoined)) break;
    rejoined = rejoined || op.type == "Concat" || op.type == "ConcatFromSequence";
    const Tensor* next = nullptr;
    for (const auto& in : op.inputs)
      if (in && is_floating(g.tensor(*in).dtype) && g.tensor(*in).role == TensorRole::activation) {
        next = &g.tensor(*in);
        break;
      }
    if (!next) break;
    k = next;
  }
  const std::int64_t n = k->numel();
  if (n % per_head != 0) return 0;
  const std::int64_t kv = n / per_head;
  return kv > 0 && p.heads % kv == 0 ? kv : 0;
}

}  // namespace

void find_attention(OpGraph& g) {
  g.fused.clear();
  for (auto& op : g.mutable_ops()) op.fused_group.reset();
  const auto n = static_cast<std::uint32_t>(g.num_ops());
  for (std::uint32_t i = 0; i < n; ++i) {
    const Op& op = g.op(OpId{i});
    if (op.domain == "com.microsoft" && (op.type == "Attention" || op.type == "MultiHeadAttention")) {
      FusedPattern p;
      p.ops = {OpId{i}};
      const Tensor* x = g.input(op, 0);
      auto heads = op.attr_int("num_heads").value_or(1);
      if (x && x->shape.size() == 3 && heads > 0) {
        p.batch = x->shape[0];
        p.seq_q = p.seq_k = x->shape[1];
        p.heads = heads;
        p.head_dim = p.head_dim_v = x->shape[2] / heads;
        p.kv_heads = heads;
        // The unfused form would keep scores and probabilities (f32): 2 tensors of b*a*s*s.
        p.score_bytes = Bytes(2.0 * 4.0 * static_cast<double>(p.batch * p.heads * p.seq_q * p.seq_k));
      }
      add_pattern(g, std::move(p));
      continue;
    }
    if (op.type != "Softmax" || op.fused_group) continue;

    // Walk back from the Softmax to the score MatMul.
    std::vector<OpId> back;
    std::optional<OpId> cur = data_producer(g, op);
    std::optional<OpId> score;
    for (int step = 0; cur && step < kMaxSteps; ++step) {
      const Op& c = g.op(*cur);
      if (c.fused_group) break;
      if (is_matmul(c)) { score = cur; break; }
      if (!is_between_score_and_softmax(c)) break;
      back.push_back(*cur);
      cur = data_producer(g, c);
    }
    if (!score) continue;

    // Walk forward from the Softmax to the context MatMul (probabilities as operand 0).
    std::vector<OpId> fwd;
    const Tensor* out = g.output(op, 0);
    std::optional<OpId> context;
    for (int step = 0; out && step < kMaxSteps; ++step) {
      std::optional<OpId> next;
      for (auto c : out->consumers) {
        const Op& co = g.op(c);
        if (is_matmul(co) && co.inputs.size() >= 2 && co.inputs[0] &&
            &g.tensor(*co.inputs[0]) == out) { context = c; break; }
        if (is_between_softmax_and_context(co)) next = c;
      }
      if (context || !next) break;
      fwd.push_back(*next);
      out = g.output(g.op(*next), 0);
    }
    if (!context) continue;

    FusedPattern p;
    p.ops.push_back(*score);
    for (auto it = back.rbegin(); it != back.rend(); ++it) p.ops.push_back(*it);
    p.ops.push_back(OpId{i});
    p.ops.insert(p.ops.end(), fwd.begin(), fwd.end());
    p.ops.push_back(*context);
    fill_from_scores(g, g.op(*score), g.op(*context), p);
    p.kv_heads = kv_heads_of(g, g.op(*score), p);
    // Score-sized activations the unfused form keeps: every tensor written
    // between the two MatMuls (scores, scaled, masked, probabilities, dropout).
    Bytes kept;
    for (auto o : p.ops) {
      if (o == *context) continue;
      for (const auto& t : g.op(o).outputs)
        if (t && is_floating(g.tensor(*t).dtype)) kept += g.tensor(*t).bytes();
    }
    p.score_bytes = kept;
    add_pattern(g, std::move(p));
  }
}

}  // namespace planner::graph
