// Sharding of contractions: MatMul, Gemm, FusedMatMul, FusedGemm,
// GemmFastGelu, Einsum.
//
//   MatMul A[..., m, k] x B[..., k, n] -> Y[..., m, n]
//     letters: one per broadcast batch dim of Y ("b", "b1", ...), m, k, n;
//     a batch dim of size 1 in an operand (broadcast) is never split there.
//     Splits (the engine derives layouts, partial outputs and gradients):
//       batch or m   data parallel / sequence split: W's gradient partial
//       n            column parallel: Y split on n, dA partial (Megatron f)
//       k            row parallel: Y partial (resolved on the outgoing edge)
//       none         replicated
//   Gemm  A[M,K] (transA: [K,M]) x B[K,N] (transB: [N,K]) + C (broadcast to
//     [M,N]) -> Y[M,N]. Row parallel keeps C whole: one member adds it (the
//     output is partial either way); C's gradient is partial only over axes
//     splitting M (dC sums dY over rows), never over k.
//   Einsum  "bsh,hf->bsf": one letter per equation letter; letters missing
//     from the output are contractions. Ellipses, diagonals and implicit
//     outputs are left to the replicated fallback.
#include <map>

#include "shard_rules.hpp"

namespace planner::ops {
namespace {

using shard_detail::SpecBuilder;

// Letters of a leading (batch) block: operand dims align right against Y's
// batch dims; a size-1 operand dim against a larger Y dim stays unsplit.
std::vector<int> batch_dims(const std::vector<std::int64_t>& operand, std::size_t operand_batch,
                            const std::vector<std::int64_t>& y, const std::vector<int>& y_letters) {
  std::vector<int> dims;
  const std::size_t yb = y_letters.size();
  for (std::size_t i = 0; i < operand_batch; ++i) {
    const std::size_t yi = yb - operand_batch + i;
    dims.push_back(operand[i] == y[yi] ? y_letters[yi] : -1);
  }
  return dims;
}

std::optional<SpecBuilder> matmul_like(const graph::OpGraph& g, graph::OpId id, bool trans_a, bool trans_b) {
  const graph::Op& op = g.op(id);
  const auto *a = shard_detail::shape_of(g, op, true, 0), *b = shard_detail::shape_of(g, op, true, 1),
             *y = shard_detail::shape_of(g, op, false, 0);
  if (!a || !b || !y || a->empty() || b->empty()) return std::nullopt;
  const std::size_t ra = a->size(), rb = b->size(), ry = y->size();
  if (ra < 2 && trans_a) return std::nullopt;
  if (rb < 2 && trans_b) return std::nullopt;
  const std::size_t yb = ry - (ra >= 2 ? 1 : 0) - (rb >= 2 ? 1 : 0);  // Y's batch dims
  if (yb > ry || ra - (ra >= 2 ? 2 : 1) > yb || rb - (rb >= 2 ? 2 : 1) > yb) return std::nullopt;

  SpecBuilder sb(g, id, "matmul");
  std::vector<int> ybatch;
  for (std::size_t i = 0; i < yb; ++i) ybatch.push_back(sb.letter(i == 0 ? "b" : "b" + std::to_string(i)));
  const int m = ra >= 2 ? sb.letter("m") : -1;
  const int k = sb.letter("k");
  const int n = rb >= 2 ? sb.letter("n") : -1;

  std::vector<int> da = batch_dims(*a, ra >= 2 ? ra - 2 : 0, *y, ybatch);
  if (ra >= 2) {
    da.push_back(trans_a ? k : m);
    da.push_back(trans_a ? m : k);
  } else {
    da.push_back(k);
  }
  std::vector<int> db = batch_dims(*b, rb >= 2 ? rb - 2 : 0, *y, ybatch);
  if (rb >= 2) {
    db.push_back(trans_b ? n : k);
    db.push_back(trans_b ? k : n);
  } else {
    db.push_back(k);
  }
  std::vector<int> dy = ybatch;
  if (m >= 0) dy.push_back(m);
  if (n >= 0) dy.push_back(n);
  if (dy.size() != ry) return std::nullopt;
  sb.in(0, std::move(da)).in(1, std::move(db)).out(0, std::move(dy));
  return sb;
}

// Appends a bias port at `pos` broadcast against Y's trailing dims.
void bias_port(const graph::OpGraph& g, SpecBuilder& sb, std::size_t pos) {
  const graph::Op& op = g.op(sb.spec().ops.front());
  const auto* c = shard_detail::shape_of(g, op, true, pos);
  const auto* y = shard_detail::shape_of(g, op, false, 0);
  if (!c || !y || c->size() > y->size()) {
    sb.in(pos, sb.unsplit(sb.op_tensor(true, pos)));
    return;
  }
  const auto& ydims = sb.spec().outputs.at(0).dims;
  std::vector<int> dims;
  for (std::size_t i = 0; i < c->size(); ++i) {
    const std::size_t yi = y->size() - c->size() + i;
    dims.push_back((*c)[i] == (*y)[yi] ? ydims[yi] : -1);
  }
  sb.in(pos, std::move(dims));
}

std::optional<ShardSpec> matmul(const graph::OpGraph& g, graph::OpId id) {
  auto sb = matmul_like(g, id, false, false);
  return sb ? std::optional(sb->done()) : std::nullopt;
}

std::optional<ShardSpec> fused_matmul(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  if (op.attr_int("transBatchA").value_or(0) || op.attr_int("transBatchB").value_or(0)) return std::nullopt;
  auto sb = matmul_like(g, id, op.attr_int("transA").value_or(0) != 0, op.attr_int("transB").value_or(0) != 0);
  return sb ? std::optional(sb->done()) : std::nullopt;
}

std::optional<ShardSpec> gemm(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  auto sb = matmul_like(g, id, op.attr_int("transA").value_or(0) != 0, op.attr_int("transB").value_or(0) != 0);
  if (!sb) return std::nullopt;
  if (op.inputs.size() > 2 && op.inputs[2]) bias_port(g, *sb, 2);
  return sb->done();
}

// X[..., K] x W[K, N] + bias[N], then FastGelu.
std::optional<ShardSpec> gemm_fast_gelu(const graph::OpGraph& g, graph::OpId id) {
  auto sb = matmul_like(g, id, false, false);
  if (!sb) return std::nullopt;
  if (g.op(id).inputs.size() > 2 && g.op(id).inputs[2]) bias_port(g, *sb, 2);
  return sb->done();
}

std::optional<ShardSpec> einsum(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto eq = op.attr_string("equation");
  if (!eq) return std::nullopt;
  std::string e;
  for (char c : *eq)
    if (c != ' ') e += c;
  const auto arrow = e.find("->");
  if (arrow == std::string::npos || e.find('.') != std::string::npos) return std::nullopt;
  std::vector<std::string> terms;
  std::string cur;
  for (char c : e.substr(0, arrow)) {
    if (c == ',') { terms.push_back(cur); cur.clear(); } else cur += c;
  }
  terms.push_back(cur);
  const std::string out = e.substr(arrow + 2);
  if (terms.size() != op.inputs.size()) return std::nullopt;

  SpecBuilder sb(g, id, "matmul");
  std::map<char, int> letter;
  std::map<char, std::int64_t> size;
  auto note = [&](const std::string& term, const std::vector<std::int64_t>* shape) -> bool {
    if (!shape || shape->size() != term.size()) return false;
    for (std::size_t i = 0; i < term.size(); ++i) {
      if (term.find(term[i]) != i) return false;  // diagonal
      if (!letter.count(term[i])) letter[term[i]] = sb.letter(std::string(1, term[i]));
      size[term[i]] = std::max(size[term[i]], (*shape)[i]);
    }
    return true;
  };
  for (std::size_t t = 0; t < terms.size(); ++t)
    if (!note(terms[t], shard_detail::shape_of(g, op, true, t))) return std::nullopt;
  if (!note(out, shard_detail::shape_of(g, op, false, 0))) return std::nullopt;
  auto dims_of = [&](const std::string& term, const std::vector<std::int64_t>& shape) {
    std::vector<int> d;
    for (std::size_t i = 0; i < term.size(); ++i) d.push_back(shape[i] == size[term[i]] ? letter[term[i]] : -1);
    return d;
  };
  for (std::size_t t = 0; t < terms.size(); ++t) sb.in(t, dims_of(terms[t], *shard_detail::shape_of(g, op, true, t)));
  sb.out(0, dims_of(out, *shard_detail::shape_of(g, op, false, 0)));
  return sb.done();
}

constexpr std::string_view ms = "com.microsoft";

constexpr std::array kRules{
    ShardRule{"", "MatMul", &matmul},
    ShardRule{"", "Gemm", &gemm},
    ShardRule{"", "Einsum", &einsum},
    ShardRule{ms, "FusedMatMul", &fused_matmul},
    ShardRule{ms, "FusedGemm", &gemm},
    ShardRule{ms, "GemmFastGelu", &gemm_fast_gelu},
};

}  // namespace

std::span<const ShardRule> matmul_shard_rules() { return kRules; }

}  // namespace planner::ops
