// Contractions: MatMul, Gemm, Einsum and their com.microsoft / quantised
// spellings.
//
// Conventions (multiply-add = 2 FLOPs):
//   MatMul  A[.., M, K] x B[.., K, N] -> Y[.., M, N] (batch dims broadcast;
//           a 1-D operand has its M or N = 1):
//             forward  2 * numel(Y) * K          (= 2 * batch * M * N * K)
//             backward dA = dY x B^T: 2 * numel(Y) * K, reads dY + B, writes dA
//                      dB = A^T x dY: 2 * numel(Y) * K, reads dY + A, writes dB
//             each only when that operand needs a gradient (floating
//             activation or parameter; never an integer, graph input or
//             constant). Usual case (activation x weight): 3x forward in all.
//   Gemm    Y[M, N] = alpha * op(A)[M, K] x op(B)[K, N] + beta * C:
//             forward 2MNK, + MN when alpha != 1, + MN for adding C (beta != 0),
//             + MN more when beta is neither 0 nor 1;
//             backward dA, dB as MatMul (2MNK each), dC: MN (reduce dY to C's
//             shape), reads dY, writes dC.
//   FusedMatMul (com.microsoft): MatMul with transA/transB/alpha.
//   FusedGemm (com.microsoft): Gemm + activation (1-4 FLOPs per output).
//   GemmFastGelu (com.microsoft): X x W + bias, then FastGelu (9/elem).
//   MatMulNBits (com.microsoft): A[.., K] x dequant(B)[K, N]: 2 numel(Y) K
//           + 2NK to dequantise; B is integer, so only dA backward.
//   MatMulInteger, QLinearMatMul, MatMulIntegerToFloat, DynamicQuantizeMatMul:
//           as MatMul; integer operands get no gradient.
//   Einsum  with T = product of the sizes of all distinct letters (the
//           ellipsis counts its broadcast size): (operands - 1) * T multiplies
//           + T adds when some letter is summed away; backward, per operand
//           needing a gradient, the same count again (its gradient is an
//           einsum over the same letters).
// Bytes: forward reads every input, writes Y.
#include <array>
#include <cctype>
#include <map>
#include <string>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

/// Forward plus backward of a two-operand contraction `mm_flops` (operands at
/// input indices 0 and 1), with `extra_fwd` elementwise FLOPs on the output.
OpCost contraction(const CostQuery& q, double mm_flops, double extra_fwd) {
  OpCost c;
  c.forward_flops = Flops(mm_flops + extra_fwd);
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q);
  const Bytes dy = out_grad_bytes(q);
  for (std::size_t i = 0; i < 2; ++i) {
    if (!q.in_needs_grad(i)) continue;
    c.backward_flops += Flops(mm_flops);
    c.backward_bytes_read += dy + bytes(q.in(1 - i));
    c.backward_bytes_written += bytes(q.in(i));
  }
  // Elementwise epilogue (alpha, activation): its gradient, 2x as for every
  // memory-bound part, fused into the dY pass.
  if (q.any_input_needs_grad()) c.backward_flops += Flops(2.0 * extra_fwd);
  return c;
}

OpCost matmul_with(const CostQuery& q, bool trans_a, double alpha) {
  const auto *a = q.in(0), *b = q.in(1), *y = q.out(0);
  if (!a || !b || !y) return fallback_cost(q.op, q.g, q.grad);
  const double k = (trans_a && rank(a) >= 2) ? dim(a, -2) : dim(a, -1);
  const double extra = alpha != 1.0 ? numel(y) : 0.0;
  return contraction(q, 2.0 * numel(y) * k, extra);
}

OpCost matmul(const CostQuery& q) { return matmul_with(q, false, 1.0); }

OpCost fused_matmul(const CostQuery& q) {
  return matmul_with(q, q.op.attr_int("transA").value_or(0) != 0, q.op.attr_float("alpha").value_or(1.0));
}

// QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp (integers:
// no gradient). K from input 0.
OpCost qlinear_matmul(const CostQuery& q) {
  const auto *a = q.in(0), *y = q.out(0);
  if (!a || !y) return fallback_cost(q.op, q.g, q.grad);
  OpCost c;
  c.forward_flops = Flops(2.0 * numel(y) * dim(a, -1));
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q);
  return c;
}

OpCost matmul_nbits(const CostQuery& q) {
  const auto *a = q.in(0), *y = q.out(0);
  if (!a || !y) return fallback_cost(q.op, q.g, q.grad);
  const double k = static_cast<double>(q.op.attr_int("K").value_or(static_cast<std::int64_t>(dim(a, -1))));
  const double n = static_cast<double>(q.op.attr_int("N").value_or(static_cast<std::int64_t>(dim(y, -1))));
  const double mm = 2.0 * numel(y) * k;
  OpCost c;
  c.forward_flops = Flops(mm + 2.0 * n * k);
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q);
  if (q.in_needs_grad(0)) {
    c.backward_flops = Flops(mm + 2.0 * n * k);
    c.backward_bytes_read = out_grad_bytes(q) + bytes(q.in(1));
    c.backward_bytes_written = bytes(a);
  }
  return c;
}

double activation_flops(const std::optional<std::string>& act) {
  if (!act) return 0.0;
  static const std::map<std::string, double, std::less<>> k{
      {"Relu", 1}, {"LeakyRelu", 2}, {"Tanh", 1}, {"Sigmoid", 4}, {"HardSigmoid", 3}};
  auto it = k.find(*act);
  return it == k.end() ? 1.0 : it->second;
}

OpCost gemm_impl(const CostQuery& q, double act_per_elem) {
  const auto *a = q.in(0), *b = q.in(1), *cin = q.in(2), *y = q.out(0);
  if (!a || !b || !y) return fallback_cost(q.op, q.g, q.grad);
  const bool ta = q.op.attr_int("transA").value_or(0) != 0;
  const double alpha = q.op.attr_float("alpha").value_or(1.0);
  const double beta = q.op.attr_float("beta").value_or(1.0);
  const double k = ta ? dim(a, 0) : dim(a, 1);
  const double mn = numel(y);
  double extra = alpha != 1.0 ? mn : 0.0;
  const bool has_c = cin && beta != 0.0;
  if (has_c) extra += (beta != 1.0 ? 2.0 : 1.0) * mn;
  extra += act_per_elem * mn;
  OpCost c = contraction(q, 2.0 * mn * k, 0.0);
  c.forward_flops += Flops(extra);
  if (q.any_input_needs_grad() && act_per_elem > 0) c.backward_flops += Flops(2.0 * act_per_elem * mn);
  if (has_c && q.in_needs_grad(2)) {
    // dC = sum of dY over the dims C was broadcast along.
    c.backward_flops += Flops(mn);
    c.backward_bytes_read += out_grad_bytes(q);
    c.backward_bytes_written += bytes(cin);
  }
  return c;
}

OpCost gemm(const CostQuery& q) { return gemm_impl(q, 0.0); }
OpCost fused_gemm(const CostQuery& q) { return gemm_impl(q, activation_flops(q.op.attr_string("activation"))); }

// GemmFastGelu: X[.., K] x W[K, N] + bias[N] -> FastGelu. Bias add 1/elem,
// FastGelu 9/elem; bias gradient is a reduction of dY (numel(Y)).
OpCost gemm_fast_gelu(const CostQuery& q) {
  const auto *a = q.in(0), *b = q.in(1), *bias = q.in(2), *y = q.out(0);
  if (!a || !b || !y) return fallback_cost(q.op, q.g, q.grad);
  const double elems = numel(y);
  const double epi = (bias ? 1.0 : 0.0) * elems + 9.0 * elems;
  OpCost c = contraction(q, 2.0 * elems * dim(a, -1), epi);
  if (bias && q.in_needs_grad(2)) {
    c.backward_flops += Flops(elems);
    c.backward_bytes_read += out_grad_bytes(q);
    c.backward_bytes_written += bytes(bias);
  }
  return c;
}

/// Letters of each operand and of the output, with '.' standing for "...".
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
};

std::optional<EinsumSpec> parse_einsum(std::string eq) {
  std::string s;
  for (std::size_t i = 0; i < eq.size(); ++i) {
    if (std::isspace(static_cast<unsigned char>(eq[i]))) continue;
    if (eq.compare(i, 3, "...") == 0) { s += '.'; i += 2; continue; }
    s += eq[i];
  }
  EinsumSpec spec;
  const auto arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  std::string cur;
  for (char ch : lhs) {
    if (ch == ',') { spec.inputs.push_back(cur); cur.clear(); }
    else if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '.') cur += ch;
    else return std::nullopt;
  }
  spec.inputs.push_back(cur);
  if (arrow != std::string::npos) {
    spec.output = s.substr(arrow + 2);
  } else {
    // Implicit mode: letters appearing once, in alphabetical order, after "...".
    std::map<char, int> count;
    for (const auto& in : spec.inputs)
      for (char ch : in) ++count[ch];
    if (count.count('.')) spec.output += '.';
    for (auto [ch, n] : count)
      if (ch != '.' && n == 1) spec.output += ch;
  }
  return spec;
}

OpCost einsum(const CostQuery& q) {
  auto eq = q.op.attr_string("equation");
  auto spec = eq ? parse_einsum(*eq) : std::nullopt;
  if (!spec || spec->inputs.size() != static_cast<std::size_t>(present_inputs(q)) || !q.out(0))
    return fallback_cost(q.op, q.g, q.grad);
  std::map<char, double> size;
  double ellipsis = 1.0;
  for (std::size_t i = 0; i < spec->inputs.size(); ++i) {
    const auto* t = q.in(i);
    if (!t) return fallback_cost(q.op, q.g, q.grad);
    const auto& letters = spec->inputs[i];
    const int r = rank(t);
    const int n_letters = static_cast<int>(letters.size()) - (letters.find('.') != std::string::npos ? 1 : 0);
    const int ell_rank = r - n_letters;
    int axis = 0;
    for (char ch : letters) {
      if (ch == '.') {
        ellipsis = std::max(ellipsis, prod(t, axis, axis + ell_rank));
        axis += ell_rank;
        continue;
      }
      size[ch] = std::max(size[ch], dim(t, axis));
      ++axis;
    }
  }
  double total = ellipsis;
  for (auto [ch, n] : size) total *= n;
  bool summed = false;
  for (auto [ch, n] : size)
    if (spec->output.find(ch) == std::string::npos) summed = true;
  const double n_ops = static_cast<double>(spec->inputs.size());
  const double fwd = (n_ops - 1.0) * total + (summed ? total : 0.0);

  OpCost c;
  c.forward_flops = Flops(fwd);
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q);
  const Bytes dy = out_grad_bytes(q);
  for (std::size_t i = 0; i < spec->inputs.size(); ++i) {
    if (!q.in_needs_grad(i)) continue;
    c.backward_flops += Flops(std::max(fwd, total));
    c.backward_bytes_read += dy + inputs_bytes(q) - bytes(q.in(i));
    c.backward_bytes_written += bytes(q.in(i));
  }
  return c;
}

constexpr std::array kRules{
    OpRule{"", "MatMul", OpClass::matmul, &matmul},
    OpRule{"", "Gemm", OpClass::matmul, &gemm},
    OpRule{"", "Einsum", OpClass::matmul, &einsum},
    OpRule{"", "MatMulInteger", OpClass::matmul, &matmul},
    OpRule{"", "QLinearMatMul", OpClass::matmul, &qlinear_matmul},
    OpRule{"com.microsoft", "FusedMatMul", OpClass::matmul, &fused_matmul},
    OpRule{"com.microsoft", "FusedGemm", OpClass::matmul, &fused_gemm},
    OpRule{"com.microsoft", "GemmFastGelu", OpClass::matmul, &gemm_fast_gelu},
    OpRule{"com.microsoft", "MatMulIntegerToFloat", OpClass::matmul, &matmul},
    OpRule{"com.microsoft", "DynamicQuantizeMatMul", OpClass::matmul, &matmul},
    OpRule{"com.microsoft", "MatMulNBits", OpClass::matmul, &matmul_nbits},
};

}  // namespace

std::span<const OpRule> matmul_rules() { return kRules; }

}  // namespace planner::ops
