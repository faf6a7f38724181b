// Vocabulary-parallel kernels of the real mode's tensor parallelism
// (real_tp.hpp: TpRank::forward / backward): masked lookups of a table split
// along its rows, cross entropy over scores split along the classes.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "real_tp.hpp"

namespace planner::executor::real_detail {

using graph::OpId;
using runtime_cpu::IndexTensor;
using runtime_cpu::Shape;
using runtime_cpu::Tensor;
using runtime_cpu::Value;

namespace {

// A vocabulary-parallel Gather: ids outside this rank's rows [lo, lo + n)
// look up row 0 and are masked out; a negative id counts from the end of
// the whole table (`vocab` rows), as the kernel's Gather does.
struct Masked {
  IndexTensor ids;
  std::vector<bool> keep;
  std::int64_t row = 1;  // output elements per id
};
Masked mask_ids(const IndexTensor& ids, std::int64_t lo, std::int64_t n, std::int64_t vocab, const Shape& table) {
  Masked m{ids, std::vector<bool>(ids.data.size()), 1};
  for (std::size_t i = 1; i < table.size(); ++i) m.row *= table[i];
  for (std::size_t i = 0; i < ids.data.size(); ++i) {
    const std::int64_t id = (ids.data[i] < 0 ? ids.data[i] + vocab : ids.data[i]) - lo;
    m.keep[i] = id >= 0 && id < n;
    m.ids.data[i] = m.keep[i] ? id : 0;
  }
  return m;
}
void zero_masked(std::vector<float>& x, const Masked& m) {
  for (std::size_t i = 0; i < m.keep.size(); ++i)
    if (!m.keep[i])
      std::fill_n(x.begin() + static_cast<std::ptrdiff_t>(i) * m.row, m.row, 0.0f);
}

}  // namespace

bool TpRank::vocab_loss(OpId o) const {
  return g_.op(o).type == "SoftmaxCrossEntropyLoss" && l_.ops[o.value].in[0].view == TpView::split_at(1);
}
bool TpRank::partial_bias(OpId o) const {
  const auto& op = g_.op(o);
  return op.type == "Gemm" && op.inputs.size() > 2 && op.inputs[2] &&
         l_.ops[o.value].out[0].view.kind == TpView::Kind::partial;
}
bool TpRank::batch_loss(OpId o) const {
  return g_.op(o).type == "SoftmaxCrossEntropyLoss" && l_.ops[o.value].in[0].view == TpView::split_at(0);
}
// A mean over the split dim: each rank's mean of its share, / tp, summed over tp.
bool TpRank::split_mean(OpId o) const {
  return g_.op(o).type == "ReduceMean" && l_.ops[o.value].out[0].view.kind == TpView::Kind::partial;
}

// Per row of this rank's [N, C/t] logits: the log-sum-exp over all C classes
// and the target logit (0 where another rank holds the label); two tp
// all-reduces (max, then sums of exp and targets), in f32 as the
// communicator reduces.
Status TpRank::vocab_rows(const Tensor& x, const IndexTensor& labels, std::vector<double>& lse,
                          std::vector<double>& target) const {
  const std::int64_t n = x.shape[0], c = x.shape[1], lo = r_ * c;
  std::vector<float> mx(static_cast<std::size_t>(n)), sums(static_cast<std::size_t>(2 * n), 0.0f);
  for (std::int64_t i = 0; i < n; ++i)
    mx[static_cast<std::size_t>(i)] = *std::max_element(x.data.begin() + i * c, x.data.begin() + (i + 1) * c);
  PLANNER_TRY_STATUS(comm_->all_reduce(mx.data(), mx.size(), core::DType::f32, runtime::ReduceOp::max));
  for (std::int64_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (std::int64_t j = 0; j < c; ++j) s += std::exp(static_cast<double>(x[i * c + j]) - mx[static_cast<std::size_t>(i)]);
    sums[static_cast<std::size_t>(i)] = static_cast<float>(s);
    const std::int64_t y = labels[i] - lo;
    if (y >= 0 && y < c) sums[static_cast<std::size_t>(n + i)] = x[i * c + y];
  }
  PLANNER_TRY_STATUS(comm_->all_reduce(sums.data(), sums.size(), core::DType::f32, runtime::ReduceOp::sum));
  lse.resize(static_cast<std::size_t>(n));
  target.resize(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    lse[i] = mx[i] + std::log(static_cast<double>(sums[i]));
    target[i] = sums[static_cast<std::size_t>(n) + i];
  }
  return Status::success();
}

bool TpRank::masked_lookup(OpId o) const {
  const auto& info = l_.ops[o.value];
  return g_.op(o).type == "Gather" && info.in[0].view.is_split() && info.out[0].view.kind == TpView::Kind::partial;
}

Result<std::vector<Value>> TpRank::forward(OpId o, const std::vector<const Value*>& in,
                                           const std::vector<runtime_cpu::OutputSpec>& specs) const {
  const auto& op = g_.op(o);
  if (vocab_loss(o)) {
    const auto* x = runtime_cpu::as_float(in[0]);
    const auto* y = runtime_cpu::as_index(in[1]);
    if (!x || !y || x->shape.size() != 2 || y->shape != Shape{x->shape[0]})
      return make_error("op '{}': a vocabulary-parallel loss needs [N,C] scores and [N] labels", op.name);
    std::vector<double> lse, target;
    PLANNER_TRY_STATUS(vocab_rows(*x, *y, lse, target));
    const auto ig = op.attr_int("ignore_index");
    double total = 0;
    std::int64_t kept = 0;
    for (std::int64_t i = 0; i < x->shape[0]; ++i) {
      if (ig && (*y)[i] == *ig) continue;
      total += lse[static_cast<std::size_t>(i)] - target[static_cast<std::size_t>(i)];
      ++kept;
    }
    std::vector<Value> out;
    out.emplace_back(Tensor(Shape{}, {static_cast<float>(kept == 0 ? 0.0 : total / static_cast<double>(kept))}));
    return out;
  }
  if (batch_loss(o) || split_mean(o)) {
    // The rows split over tp (equal shares, no ignore_index), or a mean over
    // the split dim: the global mean is the sum over ranks of each rank's
    // mean / tp (a partial sum).
    PLANNER_TRY(auto out, runtime_cpu::forward_op(op, in, specs));
    for (auto& x : std::get<Tensor>(out[0]).data) x /= static_cast<float>(l_.tp);
    return out;
  }
  if (partial_bias(o) && r_ != 0) {
    // A row-parallel Gemm's bias is added on tp rank 0 only (the others add
    // zeros), so the all-reduced sum holds it once.
    const Value zero = Tensor(runtime_cpu::as_float(in[2])->shape);
    std::vector<const Value*> without = in;
    without[2] = &zero;
    return runtime_cpu::forward_op(op, without, specs);
  }
  if (!masked_lookup(o)) return runtime_cpu::forward_op(op, in, specs);
  const auto* table = runtime_cpu::as_float(in[0]);
  const auto* ids = runtime_cpu::as_index(in[1]);
  if (!table || !ids) return make_error("op '{}': a vocabulary-parallel lookup needs fp32 rows and int64 ids", op.name);
  const std::int64_t n = table->shape[0];
  const Masked m = mask_ids(*ids, r_ * n, n, n * l_.tp, table->shape);
  const Value local_ids = m.ids;
  PLANNER_TRY(auto outs, runtime_cpu::forward_op(op, {in[0], &local_ids}, specs));
  zero_masked(std::get<Tensor>(outs[0]).data, m);
  return outs;
}

Result<std::vector<std::optional<Tensor>>> TpRank::backward(OpId o, const std::vector<const Value*>& in,
                                                            const std::vector<const Value*>& outs,
                                                            const std::vector<const Tensor*>& dout,
                                                            const std::vector<bool>& needs) const {
  const auto& op = g_.op(o);
  if (vocab_loss(o) && dout[0]) {
    // d scores[i, j] = dloss / kept (softmax - onehot), on this rank's classes.
    const auto& x = std::get<Tensor>(*in[0]);
    const auto& y = std::get<IndexTensor>(*in[1]);
    std::vector<double> lse, target;
    PLANNER_TRY_STATUS(vocab_rows(x, y, lse, target));
    const auto ig = op.attr_int("ignore_index");
    const std::int64_t n = x.shape[0], c = x.shape[1], lo = r_ * c;
    std::int64_t kept = 0;
    for (std::int64_t i = 0; i < n; ++i) kept += !(ig && y[i] == *ig);
    std::vector<std::optional<Tensor>> g(in.size());
    Tensor dx(x.shape);
    if (kept > 0 && needs[0])
      for (std::int64_t i = 0; i < n; ++i) {
        if (ig && y[i] == *ig) continue;
        const double k = static_cast<double>((*dout[0])[0]) / static_cast<double>(kept);
        for (std::int64_t j = 0; j < c; ++j)
          dx[i * c + j] = static_cast<float>(
              k * (std::exp(static_cast<double>(x[i * c + j]) - lse[static_cast<std::size_t>(i)]) -
                   (j + lo == y[i] ? 1.0 : 0.0)));
      }
    if (needs[0]) g[0] = std::move(dx);
    return g;
  }
  if ((batch_loss(o) || split_mean(o)) && dout[0]) {
    Tensor d = *dout[0];
    for (auto& x : d.data) x /= static_cast<float>(l_.tp);
    return runtime_cpu::backward_op(op, in, outs, {&d}, needs);
  }
  if (partial_bias(o) && r_ != 0) {
    // Only rank 0 added the bias: the others' share of its (partial-sum)
    // gradient is zero, so the all-reduce over tp gives rank 0's, the whole.
    PLANNER_TRY(auto g, runtime_cpu::backward_op(op, in, outs, dout, needs));
    if (g.size() > 2 && g[2]) std::fill(g[2]->data.begin(), g[2]->data.end(), 0.0f);
    return g;
  }
  if (!masked_lookup(o) || !dout[0]) return runtime_cpu::backward_op(op, in, outs, dout, needs);
  const auto& table = std::get<Tensor>(*in[0]);
  const std::int64_t n = table.shape[0];
  const Masked m = mask_ids(std::get<IndexTensor>(*in[1]), r_ * n, n, n * l_.tp, table.shape);
  const Value local_ids = m.ids;
  Tensor d = *dout[0];
  zero_masked(d.data, m);
  return runtime_cpu::backward_op(op, {in[0], &local_ids}, outs, {&d}, needs);
}

}  // namespace planner::executor::real_detail
