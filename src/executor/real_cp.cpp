// Context parallelism of the real mode (real_tp.hpp, derive_cp_layout;
// docs/executor.md "Context parallelism").
//
// The cp ranks of a replica share its micro-batch along the sequence. The
// views are the tp views (real_tp.hpp) with the cp group in the tp role,
// derived from one seed instead of the plan's strategies: the token ids an
// embedding Gather reads are read split along dim 1 (the sequence). Every op
// then runs on its inputs' views as derive_outputs allows; when it refuses:
//   1. an element-wise op reading a whole tensor along the split dim (the
//      position table, the causal mask's rows, RoPE's cos and sin) reads its
//      block at the port (free; backward: a partial sum);
//   2. otherwise split inputs are read whole, the last first, until the op
//      runs: the attention core's K^T and V (all-gathered, their gradients
//      all-reduced then cut to the rank's block: Megatron's context
//      parallelism without the ring's overlap), and the reshape of the
//      logits before the loss (the loss runs whole on every cp rank).
// Weights are read whole by ops whose work is split over cp, so their
// gradients are partial sums all-reduced over cp, as Megatron reduces
// gradients over dp x cp.

#include <algorithm>

#include <fmt/format.h>

#include "real_tp.hpp"

namespace planner::executor::real_detail {

namespace {

using graph::OpGraph;
using graph::OpId;
using graph::TensorId;

bool is_elementwise(const graph::Op& op) {
  static const char* kTypes[] = {"Add", "Sub", "Mul", "Div", "Relu", "Gelu", "Erf", "Sigmoid", "Tanh",
                                 "Sqrt", "Exp", "Log", "Neg", "Cos", "Sin", "Identity", "Cast"};
  return std::any_of(std::begin(kTypes), std::end(kTypes), [&](const char* t) { return op.type == t; });
}

bool seeded(const OpGraph& g, const graph::Op& op, std::size_t i, int cp) {
  if (op.type != "Gather" || i != 1 || !op.inputs[1]) return false;
  const auto& t = g.tensor(*op.inputs[1]);
  return !t.producer && t.role == graph::TensorRole::input && !t.values && t.shape.size() >= 2 && t.shape[1] % cp == 0;
}

}  // namespace

Result<TpLayout> derive_cp_layout(const plan::Plan& p, const OpGraph& g) {
  TpLayout l = whole_layout(g, p.layout.cp);
  if (l.tp == 1) return l;
  const int cp = l.tp;
  PLANNER_TRY(auto order, g.topological_order());
  std::vector<TpView> made(g.num_tensors());
  bool any_seed = false;
  for (OpId o : order) {
    const auto& op = g.op(o);
    std::vector<std::optional<TpView>> in(op.inputs.size());
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      if (!op.inputs[i]) continue;
      in[i] = made[op.inputs[i]->value];
      if (seeded(g, op, i, cp)) {
        in[i] = TpView::split_at(1);
        any_seed = true;
      }
    }
    auto outs = derive_outputs(op, g, in, {}, cp);
    if (!outs && is_elementwise(op) && !op.outputs.empty() && op.outputs[0]) {
      const auto& os = g.tensor(*op.outputs[0]).shape;
      const int ro = static_cast<int>(os.size());
      int a = -1;
      for (std::size_t i = 0; i < in.size() && a < 0; ++i)
        if (in[i] && in[i]->is_split()) a = in[i]->dim + ro - static_cast<int>(g.tensor(*op.inputs[i]).shape.size());
      for (std::size_t i = 0; i < in.size() && a >= 0; ++i) {
        if (!in[i] || in[i]->kind != TpView::Kind::replicated) continue;
        const auto& is = g.tensor(*op.inputs[i]).shape;
        const int d = a - (ro - static_cast<int>(is.size()));
        if (d >= 0 && is[static_cast<std::size_t>(d)] == os[static_cast<std::size_t>(a)] &&
            is[static_cast<std::size_t>(d)] % cp == 0)
          in[i] = TpView::split_at(d);
      }
      outs = derive_outputs(op, g, in, {}, cp);
    }
    for (std::size_t i = in.size(); !outs && i-- > 0;)
      if (in[i] && in[i]->kind == TpView::Kind::split) {
        in[i] = TpView::rep();
        outs = derive_outputs(op, g, in, {}, cp);
      }
    if (!outs)
      return make_error("the real mode cannot run op '{}' ({}) under context parallelism: {}", op.name, op.type,
                        outs.error().message);
    auto& info = l.ops[o.value];
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (!in[i]) continue;
      info.in[i].view = *in[i];
      if (in[i]->is_split() && g.tensor(*op.inputs[i]).shape[static_cast<std::size_t>(in[i]->dim)] % cp != 0)
        return make_error("the real mode cannot run op '{}' ({}) under context parallelism: input {} splits a dim "
                          "that cp = {} does not divide",
                          op.name, op.type, i, cp);
    }
    for (std::size_t k = 0; k < outs->size(); ++k) {
      info.out[k].view = (*outs)[k];
      made[op.outputs[k]->value] = (*outs)[k];
    }
    for (const auto& pt : info.in) info.split = info.split || pt.view.kind != TpView::Kind::replicated;
    for (const auto& pt : info.out) info.split = info.split || pt.view.kind != TpView::Kind::replicated;
  }
  if (!any_seed)
    return make_error("the real mode runs context parallelism on token ids looked up by a Gather ([batch, sequence]); "
                      "the model has none");
  // How each tensor is kept: as made when every reader reads it so, whole
  // otherwise (a split integer tensor read whole cannot be all-gathered).
  std::vector<bool> is_output(g.num_tensors(), false);
  for (auto t : g.graph_outputs) is_output[t.value] = true;
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const auto& t = g.tensor(TensorId{i});
    if (!t.producer || !made[i].is_split()) continue;
    bool same = !is_output[i];
    for (auto c : t.consumers) {
      const auto& op = g.op(c);
      for (std::size_t k = 0; k < op.inputs.size(); ++k)
        if (op.inputs[k] && op.inputs[k]->value == i) same = same && l.ops[c.value].in[k].view == made[i];
    }
    if (same) l.stored[i] = made[i];
    else if (!core::is_floating(t.dtype))
      return make_error("the real mode cannot run op '{}' under context parallelism: integer output '{}' would need an "
                        "all-gather",
                        g.op(*t.producer).name, t.name);
  }
  return l;
}

}  // namespace planner::executor::real_detail
