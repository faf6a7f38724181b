// Recurrent layers: LSTM, GRU, RNN (ONNX layouts).
//
// With G gates (LSTM 4, GRU 3, RNN 1), D directions, hidden size H, input size
// I and S x B steps per direction (layout 0: X[S, B, I]; layout 1: X[B, S, I]),
// per step and direction:
//   forward   2 G H (I + H)            input and recurrent projections
//           + 2 G H                    both biases, when B is given
//           + E H                      gate arithmetic: LSTM E = 18 (3 sigmoids
//                                      of 4, 2 tanh, c = f c + i g: 3, h = o tanh c: 1),
//                                      GRU E = 14, RNN E = 1
//   backward 2 G H H                   dh_prev (always, through time)
//           + 2 G H I  if X needs a gradient (dX)
//           + 2 G H I  if W needs one (dW)
//           + 2 G H H  if R needs one (dR)
//           + 2 x (bias + gate arithmetic)
// Bytes: forward reads every input, writes every output plus the G*H gate
// activations per step that training keeps for backward; backward reads the
// outputs' gradients, those gates, X, W and R, and writes the gradients of
// the inputs that need one.
#include <array>

#include "rule_util.hpp"

namespace planner::ops {
namespace {

using namespace detail;
using graph::OpClass;

OpCost recurrent(const CostQuery& q, double gates, double gate_flops) {
  const auto *x = q.in(0), *w = q.in(1), *r = q.in(2), *bias = q.in(3);
  if (!x || !w || !r || rank(x) != 3 || rank(w) != 3 || rank(r) != 3) return fallback_cost(q.op, q.g, q.grad);
  const bool batch_first = q.op.attr_int("layout").value_or(0) == 1;
  const double seq = batch_first ? dim(x, 1) : dim(x, 0);
  const double batch = batch_first ? dim(x, 0) : dim(x, 1);
  const double dirs = dim(w, 0);
  const double in_size = dim(w, 2);
  const double h = static_cast<double>(q.op.attr_int("hidden_size").value_or(static_cast<std::int64_t>(dim(r, 2))));
  const double steps = seq * batch * dirs;
  const double gh = gates * h;
  const double elem = (bias ? 2.0 * gh : 0.0) + gate_flops * h;
  const double gate_bytes = steps * gh * elem_size(x);

  OpCost c;
  c.forward_flops = Flops(steps * (2.0 * gh * (in_size + h) + elem));
  c.forward_bytes_read = inputs_bytes(q);
  c.forward_bytes_written = outputs_bytes(q) + Bytes(gate_bytes);
  double bwd = 2.0 * gh * h + 2.0 * elem;
  if (q.in_needs_grad(0)) bwd += 2.0 * gh * in_size;
  if (q.in_needs_grad(1)) bwd += 2.0 * gh * in_size;
  if (q.in_needs_grad(2)) bwd += 2.0 * gh * h;
  c.backward_flops = Flops(steps * bwd);
  c.backward_bytes_read = out_grad_bytes(q) + Bytes(gate_bytes) + bytes(x) + bytes(w) + bytes(r);
  c.backward_bytes_written = in_grad_bytes(q);
  return c;
}

OpCost lstm(const CostQuery& q) { return recurrent(q, 4.0, 18.0); }
OpCost gru(const CostQuery& q) { return recurrent(q, 3.0, 14.0); }
OpCost rnn(const CostQuery& q) { return recurrent(q, 1.0, 1.0); }

constexpr std::array kRules{
    OpRule{"", "LSTM", OpClass::matmul, &lstm},
    OpRule{"", "GRU", OpClass::matmul, &gru},
    OpRule{"", "RNN", OpClass::matmul, &rnn},
};

}  // namespace

std::span<const OpRule> rnn_rules() { return kRules; }

}  // namespace planner::ops
