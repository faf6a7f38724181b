// Shape rules: MatMul (numpy semantics), Gemm, FusedMatMul, Einsum.
#include <algorithm>
#include <map>

#include "infer.hpp"

namespace planner::onnx::detail {

namespace {

/// numpy.matmul of shapes a and b (1-D operands promoted and squeezed back).
RuleStatus matmul_shapes(RuleCtx& c, Shape a, Shape b, int elem) {
  if (a.empty() || b.empty()) return c.fail("MatMul operands must have rank >= 1");
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  const std::int64_t k_a = a.back(), k_b = b[b.size() - 2];
  if (k_a != k_b) return c.fail("inner dims differ: {} x {}", shape_str(a), shape_str(b));
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(ba, bb);
  if (!batch) return c.fail("batch dims {} and {} do not broadcast", shape_str(ba), shape_str(bb));
  Shape out = *batch;
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b.back());
  c.set(0, std::move(out), elem);
  return RuleStatus::ok;
}

}  // namespace

RuleStatus rule_matmul(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  return matmul_shapes(c, c.shape(0), c.shape(1), c.elem(0));
}

namespace {

RuleStatus rule_matmul_integer(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  return matmul_shapes(c, c.shape(0), c.shape(1), kInt32);
}

RuleStatus rule_qlinear_matmul(RuleCtx& c) {
  if (!c.has(0) || !c.has(3)) return RuleStatus::unknown;
  return matmul_shapes(c, c.shape(0), c.shape(3), c.has(7) ? c.elem(7) : c.elem(0));
}

/// com.microsoft FusedMatMul / TransposeMatMul: optional transposes of the last
/// two dims (transBatch* moves the first batch dim; rare, handled as ONNX Runtime).
RuleStatus rule_fused_matmul(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  Shape a = c.shape(0), b = c.shape(1);
  auto trans = [](Shape& s, bool t, bool tb) {
    if (s.size() < 2) return;
    if (tb && s.size() > 2) {
      // transBatch: [b0, ..., m, k] -> [..., m, b0, k]-like; ORT moves dim 0 after the batch dims.
      std::int64_t first = s.front();
      s.erase(s.begin());
      s.insert(s.end() - 1, first);
    }
    if (t) std::swap(s[s.size() - 1], s[s.size() - 2]);
  };
  trans(a, c.attr_i("transA", 0) != 0, c.attr_i("transBatchA", 0) != 0);
  trans(b, c.attr_i("transB", 0) != 0, c.attr_i("transBatchB", 0) != 0);
  return matmul_shapes(c, a, b, c.elem(0));
}

}  // namespace

RuleStatus rule_gemm(RuleCtx& c) {
  if (!c.has(0) || !c.has(1)) return RuleStatus::unknown;
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  if (a.size() != 2 || b.size() != 2)
    return c.fail("Gemm needs 2-D operands, got {} and {}", shape_str(a), shape_str(b));
  const bool ta = c.attr_i("transA", 0) != 0, tb = c.attr_i("transB", 0) != 0;
  const std::int64_t m = ta ? a[1] : a[0], ka = ta ? a[0] : a[1];
  const std::int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (ka != kb) return c.fail("inner dims differ: {} x {} (transA={}, transB={})", shape_str(a), shape_str(b), ta, tb);
  if (c.has(2) && !broadcast_shapes(c.shape(2), Shape{m, n}))
    return c.fail("bias {} does not broadcast to [{},{}]", shape_str(c.shape(2)), m, n);
  c.set(0, {m, n}, c.elem(0));
  return RuleStatus::ok;
}

namespace {

/// Einsum: explicit ("ij,jk->ik") and implicit forms, with "..." broadcasting.
RuleStatus rule_einsum(RuleCtx& c) {
  auto eq_attr = c.attr_s("equation");
  if (!eq_attr) return c.fail("Einsum without equation");
  std::string eq;
  for (char ch : *eq_attr)
    if (ch != ' ') eq += ch;
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  {
    std::size_t start = 0;
    for (std::size_t k = 0; k <= lhs.size(); ++k)
      if (k == lhs.size() || lhs[k] == ',') {
        terms.push_back(lhs.substr(start, k - start));
        start = k + 1;
      }
  }
  if (terms.size() != c.in.size()) return c.fail("equation '{}' names {} operands, node has {}", eq, terms.size(), c.in.size());
  std::map<char, std::int64_t> size;
  std::map<char, int> count;
  Shape ellipsis;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    if (!c.has(t)) return RuleStatus::unknown;
    const Shape& s = c.shape(t);
    std::string term = terms[t];
    const auto dots = term.find("...");
    std::size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
    if (letters > s.size() || (dots == std::string::npos && letters != s.size()))
      return c.fail("operand {} has rank {}, equation term '{}'", t, s.size(), term);
    const std::size_t ell_rank = s.size() - letters;
    std::size_t dim = 0;
    for (std::size_t k = 0; k < term.size();) {
      if (term.compare(k, 3, "...") == 0) {
        Shape e(s.begin() + static_cast<std::ptrdiff_t>(dim), s.begin() + static_cast<std::ptrdiff_t>(dim + ell_rank));
        auto b = broadcast_shapes(ellipsis, e);
        if (!b) return c.fail("'...' dims do not broadcast");
        ellipsis = *b;
        dim += ell_rank;
        k += 3;
        continue;
      }
      const char ch = term[k];
      const std::int64_t d = s[dim];
      auto it = size.find(ch);
      if (it == size.end() || it->second == 1) size[ch] = d;
      else if (d != 1 && it->second != d) return c.fail("label '{}' has sizes {} and {}", ch, it->second, d);
      ++count[ch];
      ++dim;
      ++k;
    }
  }
  Shape out;
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    for (std::size_t k = 0; k < rhs.size();) {
      if (rhs.compare(k, 3, "...") == 0) {
        out.insert(out.end(), ellipsis.begin(), ellipsis.end());
        k += 3;
        continue;
      }
      auto it = size.find(rhs[k]);
      if (it == size.end()) return c.fail("output label '{}' is not in any operand", rhs[k]);
      out.push_back(it->second);
      ++k;
    }
  } else {
    out = ellipsis;
    for (const auto& [ch, n] : count)
      if (n == 1) out.push_back(size[ch]);
  }
  c.set(0, std::move(out), c.elem(0));
  return RuleStatus::ok;
}

constexpr ShapeRule kRules[] = {
    {"", "MatMul", rule_matmul},
    {"", "MatMulInteger", rule_matmul_integer},
    {"", "QLinearMatMul", rule_qlinear_matmul},
    {"", "Gemm", rule_gemm},
    {"", "Einsum", rule_einsum},
    {"com.microsoft", "FusedMatMul", rule_fused_matmul},
    {"com.microsoft", "TransposeMatMul", rule_fused_matmul},
    {"com.microsoft", "FusedGemm", rule_gemm},
};

}  // namespace

std::span<const ShapeRule> matmul_rules() { return kRules; }

}  // namespace planner::onnx::detail
