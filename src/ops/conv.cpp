// Convolutions and pooling.
//
// Conv   X[N, Cin, *in], W[Cout, Cin/group, *k], B[Cout] -> Y[N, Cout, *out]
//        (stride, padding, dilation and group are already in Y's and W's shapes):
//          forward  2 * numel(Y) * prod(W[1:])     (= 2 N Cout prod(out) (Cin/group) prod(k))
//                   + numel(Y) for the bias
//          backward dX: 2 numel(Y) prod(W[1:]), reads dY + W, writes dX
//                   dW: 2 numel(Y) prod(W[1:]), reads dY + X, writes dW
//                   dB: numel(Y),               reads dY,     writes dB
//                   each only when that input needs a gradient.
// ConvTranspose X[N, Cin, *in], W[Cin, Cout/group, *k]: every input pixel
//        scatters a Cout/group x prod(k) patch: 2 * numel(X) * prod(W[1:]);
//        backward as Conv with that count.
// com.microsoft FusedConv: Conv + optional sum input Z (1/elem) + activation
//        (Relu 1, LeakyRelu 2, Sigmoid 4, Tanh 1, other 1 per elem).
// NhwcConv (com.microsoft), ConvInteger, QLinearConv: as Conv (integer
//        operands get no gradient).
// Pools (memory-bound, class reduction), with K = prod(kernel_shape):
//   MaxPool       K per output (compares);         backward reads X and Y too
//   AveragePool   K + 1 per output (adds, divide); backward reads dY only
//   LpPool        2K + 1 per output
//   GlobalAveragePool numel(X) + numel(Y); GlobalMaxPool numel(X);
//   GlobalLpPool  2 numel(X) + numel(Y)
//   backward FLOPs 2x forward; writes dX.
#include <array>
#include <map>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

/// Conv-shaped contraction with data at `ix`, weight at `iw`, bias at `ib`
/// (or -1), `mm` multiply-add FLOPs and `epi` elementwise FLOPs on Y.
OpCost conv_like(const CostQuery& q, std::size_t ix, std::size_t iw, int ib, double mm, double epi) {
  const auto* y = q.out(0);
  const auto* bias = ib >= 0 ? q.in(static_cast<std::size_t>(ib)) : nullptr;
  const double ny = numel(y);
  OpCost c;
  c.forward_flops = Flops(mm + (bias ? ny : 0.0) + epi);
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q);
  const Bytes dy = out_grad_bytes(q);
  if (q.in_needs_grad(ix)) {
    c.backward_flops += Flops(mm);
    c.backward_bytes_read += dy + bytes(q.in(iw));
    c.backward_bytes_written += bytes(q.in(ix));
  }
  if (q.in_needs_grad(iw)) {
    c.backward_flops += Flops(mm);
    c.backward_bytes_read += dy + bytes(q.in(ix));
    c.backward_bytes_written += bytes(q.in(iw));
  }
  if (bias && q.in_needs_grad(static_cast<std::size_t>(ib))) {
    c.backward_flops += Flops(ny);
    c.backward_bytes_read += dy;
    c.backward_bytes_written += bytes(bias);
  }
  if (epi > 0 && q.any_input_needs_grad()) c.backward_flops += Flops(2.0 * epi);
  return c;
}

OpCost conv_at(const CostQuery& q, std::size_t ix, std::size_t iw, int ib, double epi_per_elem) {
  const auto *x = q.in(ix), *w = q.in(iw), *y = q.out(0);
  if (!x || !w || !y || rank(w) < 2) return fallback_cost(q.op, q.g, q.grad);
  return conv_like(q, ix, iw, ib, 2.0 * numel(y) * prod_from(w, 1), epi_per_elem * numel(y));
}

OpCost conv(const CostQuery& q) { return conv_at(q, 0, 1, 2, 0.0); }
OpCost conv_integer(const CostQuery& q) { return conv_at(q, 0, 1, -1, 0.0); }
OpCost qlinear_conv(const CostQuery& q) { return conv_at(q, 0, 3, 8, 0.0); }

OpCost fused_conv(const CostQuery& q) {
  static const std::map<std::string, double, std::less<>> kAct{
      {"Relu", 1}, {"LeakyRelu", 2}, {"Sigmoid", 4}, {"Tanh", 1}};
  double per_elem = q.in(3) ? 1.0 : 0.0;  // + Z
  if (auto act = q.op.attr_string("activation")) {
    auto it = kAct.find(*act);
    per_elem += it == kAct.end() ? 1.0 : it->second;
  }
  return conv_at(q, 0, 1, 2, per_elem);
}

OpCost conv_transpose(const CostQuery& q) {
  const auto *x = q.in(0), *w = q.in(1), *y = q.out(0);
  if (!x || !w || !y || rank(w) < 2) return fallback_cost(q.op, q.g, q.grad);
  return conv_like(q, 0, 1, 2, 2.0 * numel(x) * prod_from(w, 1), 0.0);
}

double kernel_size(const CostQuery& q) {
  double k = 1.0;
  if (auto ks = q.op.attr_ints("kernel_shape"))
    for (auto d : *ks) k *= static_cast<double>(d);
  return k;
}

OpCost pool(const CostQuery& q, double per_window_elem, double per_output, bool saves_io) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  const double ny = numel(y);
  return memory_bound(q, ny * (per_window_elem * kernel_size(q) + per_output),
                      saves_io ? bytes(x) + bytes(y) : Bytes(0));
}

OpCost max_pool(const CostQuery& q) { return pool(q, 1.0, 0.0, true); }
OpCost average_pool(const CostQuery& q) { return pool(q, 1.0, 1.0, false); }
OpCost lp_pool(const CostQuery& q) { return pool(q, 2.0, 1.0, true); }

OpCost global_pool(const CostQuery& q, double per_in, double per_out, bool saves_io) {
  const auto *x = q.in(0), *y = q.out(0);
  if (!x || !y) return fallback_cost(q.op, q.g, q.grad);
  return memory_bound(q, per_in * numel(x) + per_out * numel(y), saves_io ? bytes(x) + bytes(y) : Bytes(0));
}

OpCost global_average_pool(const CostQuery& q) { return global_pool(q, 1.0, 1.0, false); }
OpCost global_max_pool(const CostQuery& q) { return global_pool(q, 1.0, 0.0, true); }
OpCost global_lp_pool(const CostQuery& q) { return global_pool(q, 2.0, 1.0, true); }

constexpr std::array kRules{
    OpRule{"", "Conv", OpClass::conv, &conv},
    OpRule{"", "ConvTranspose", OpClass::conv, &conv_transpose},
    OpRule{"", "ConvInteger", OpClass::conv, &conv_integer},
    OpRule{"", "QLinearConv", OpClass::conv, &qlinear_conv},
    OpRule{"com.microsoft", "FusedConv", OpClass::conv, &fused_conv},
    OpRule{"com.microsoft", "NhwcConv", OpClass::conv, &conv},
    OpRule{"", "MaxPool", OpClass::reduction, &max_pool},
    OpRule{"", "AveragePool", OpClass::reduction, &average_pool},
    OpRule{"", "LpPool", OpClass::reduction, &lp_pool},
    OpRule{"", "GlobalAveragePool", OpClass::reduction, &global_average_pool},
    OpRule{"", "GlobalMaxPool", OpClass::reduction, &global_max_pool},
    OpRule{"", "GlobalLpPool", OpClass::reduction, &global_lp_pool},
};

}  // namespace

std::span<const OpRule> conv_rules() { return kRules; }

}  // namespace planner::ops
