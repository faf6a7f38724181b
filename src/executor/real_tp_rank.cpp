// Tensor parallelism of the real mode, one rank's side (real_tp.hpp): the
// share helpers (blocks taken out of and put into whole tensors) and TpRank,
// which keeps this rank's tensors as the derived views say and runs the
// collectives between them. The views themselves are derived in real_tp.cpp.

#include <algorithm>

#include "real_tp.hpp"

#include "planner/runtime_cpu/elementwise.hpp"

namespace planner::executor::real_detail {

using graph::OpId;
using graph::TensorId;
using runtime_cpu::IndexTensor;
using runtime_cpu::Shape;
using runtime_cpu::Tensor;
using runtime_cpu::Value;

namespace {

// Outer x n x inner decomposition of a shape around `dim`.
struct Around {
  std::int64_t outer = 1, n = 1, inner = 1;
};
Around around(const Shape& s, int dim) {
  Around a;
  for (int i = 0; i < static_cast<int>(s.size()); ++i) {
    if (i < dim) a.outer *= s[static_cast<std::size_t>(i)];
    else if (i == dim) a.n = s[static_cast<std::size_t>(i)];
    else a.inner *= s[static_cast<std::size_t>(i)];
  }
  return a;
}

// The rows `idx` along `dim` of x (of shape s) written to out, in order.
template <typename T>
void take_into(const T* x, const Shape& s, int dim, std::span<const std::int64_t> idx, T* out) {
  const Around a = around(s, dim);
  const auto m = static_cast<std::int64_t>(idx.size());
  for (std::int64_t o = 0; o < a.outer; ++o)
    for (std::int64_t j = 0; j < m; ++j)
      std::copy_n(x + (o * a.n + idx[static_cast<std::size_t>(j)]) * a.inner, a.inner, out + (o * m + j) * a.inner);
}

template <typename T>
std::vector<T> take_data(const std::vector<T>& x, const Shape& s, int dim, std::span<const std::int64_t> idx) {
  std::vector<T> out(x.size() / static_cast<std::size_t>(around(s, dim).n) * idx.size());
  take_into(x.data(), s, dim, idx, out.data());
  return out;
}

}  // namespace

bool reshape_keeps_blocks(const Shape& in, int a, const Shape& out, int b, int t) {
  if (a < 0 || b < 0 || a >= static_cast<int>(in.size()) || b >= static_cast<int>(out.size())) return false;
  if (in[static_cast<std::size_t>(a)] % t != 0 || out[static_cast<std::size_t>(b)] % t != 0) return false;
  if (runtime_cpu::numel(in) != runtime_cpu::numel(out)) return false;
  return around(in, a).outer == around(out, b).outer;
}

Value take(const Value& x, int dim, std::span<const std::int64_t> idx) {
  if (const auto* f = std::get_if<Tensor>(&x)) {
    Shape s = f->shape;
    s[static_cast<std::size_t>(dim)] = static_cast<std::int64_t>(idx.size());
    return Tensor(s, take_data(f->data, f->shape, dim, idx));
  }
  const auto& ix = std::get<IndexTensor>(x);
  Shape s = ix.shape;
  s[static_cast<std::size_t>(dim)] = static_cast<std::int64_t>(idx.size());
  return IndexTensor{s, take_data(ix.data, ix.shape, dim, idx)};
}

void put_add(Tensor& full, int dim, std::span<const std::int64_t> idx, const Tensor& part) {
  const Around a = around(full.shape, dim);
  const auto m = static_cast<std::int64_t>(idx.size());
  for (std::int64_t o = 0; o < a.outer; ++o)
    for (std::int64_t j = 0; j < m; ++j) {
      float* dst = full.data.data() + (o * a.n + idx[static_cast<std::size_t>(j)]) * a.inner;
      const float* src = part.data.data() + (o * m + j) * a.inner;
      for (std::int64_t i = 0; i < a.inner; ++i) dst[i] += src[i];
    }
}

namespace {


// The inverse: a block of rows `idx` (laid out in order) written into full.
void put_rows(Tensor& full, int dim, std::span<const std::int64_t> idx, const float* block) {
  const Around a = around(full.shape, dim);
  const auto m = static_cast<std::int64_t>(idx.size());
  for (std::int64_t o = 0; o < a.outer; ++o)
    for (std::int64_t j = 0; j < m; ++j)
      std::copy_n(block + (o * m + j) * a.inner, a.inner,
                  full.data.data() + (o * a.n + idx[static_cast<std::size_t>(j)]) * a.inner);
}

// Rank q's rows are rows q*n/t .. (q+1)*n/t - 1 and nothing lies outside
// the split dim: the ranks' blocks laid end to end are the whole tensor.
bool blocks_in_rank_order(const IndexMap& map, const Shape& full, int dim) {
  return map.empty() && around(full, dim).outer == 1;
}

}  // namespace

Result<Tensor> TpRank::gather_whole(const Tensor& part, const Shape& full_shape, int dim, const IndexMap& map) const {
  Tensor whole(full_shape);
  const std::size_t m = part.data.size();
  if (blocks_in_rank_order(map, full_shape, dim)) {
    PLANNER_TRY_STATUS(comm_->all_gather(part.data.data(), whole.data.data(), m, core::DType::f32));
    return whole;
  }
  std::vector<float> all(m * static_cast<std::size_t>(l_.tp));
  PLANNER_TRY_STATUS(comm_->all_gather(part.data.data(), all.data(), m, core::DType::f32));
  const auto n = full_shape[static_cast<std::size_t>(dim)];
  for (int q = 0; q < l_.tp; ++q)
    put_rows(whole, dim, held_indices(map, n, l_.tp, q), all.data() + m * static_cast<std::size_t>(q));
  return whole;
}

// ---- TpRank -----------------------------------------------------------------

Shape TpRank::shape(TensorId id) const { return local_shape(g_.tensor(id).shape, l_.stored[id.value], l_.tp); }
std::int64_t TpRank::numel(TensorId id) const { return runtime_cpu::numel(shape(id)); }

Tensor TpRank::shard(TensorId id, const Tensor& whole) const {
  const TpView& v = l_.stored[id.value];
  if (!v.is_split()) return whole;
  const auto idx = held_indices(l_.stored_map[id.value], whole.shape[static_cast<std::size_t>(v.dim)], l_.tp, r_);
  return std::get<Tensor>(take(whole, v.dim, idx));
}

std::optional<Value> TpRank::port_input(OpId o, std::size_t i, const Value& stored) const {
  const auto& port = l_.ops[o.value].in[i];
  const TensorId id = *g_.op(o).inputs[i];
  if (!port.view.is_split() || l_.stored[id.value].is_split()) return std::nullopt;
  const auto n = g_.tensor(id).shape[static_cast<std::size_t>(port.view.dim)];
  return take(stored, port.view.dim, held_indices(port.map, n, l_.tp, r_));
}

Shape TpRank::out_shape(OpId o, std::size_t k) const {
  return local_shape(g_.tensor(*g_.op(o).outputs[k]).shape, l_.ops[o.value].out[k].view, l_.tp);
}

Result<bool> TpRank::store_output(OpId o, std::size_t k, const Value& made, Value& stored) {
  const auto& port = l_.ops[o.value].out[k];
  const TensorId id = *g_.op(o).outputs[k];
  if (port.view.kind == TpView::Kind::replicated || port.view == l_.stored[id.value]) return false;
  const auto& x = std::get<Tensor>(made);
  const TpView& sv = l_.stored[id.value];
  if (port.view.kind == TpView::Kind::partial && sv.is_split()) {
    // Reduce-scatter: lay the blocks out rank after rank, then each rank
    // receives the sum of its block.
    const auto n = x.shape[static_cast<std::size_t>(sv.dim)];
    Tensor mine(local_shape(x.shape, sv, l_.tp));
    const std::size_t m = mine.data.size();
    const float* send = x.data.data();
    std::vector<float> laid;
    if (!blocks_in_rank_order(l_.stored_map[id.value], x.shape, sv.dim)) {
      laid.resize(x.data.size());
      for (int q = 0; q < l_.tp; ++q)
        take_into(x.data.data(), x.shape, sv.dim, held_indices(l_.stored_map[id.value], n, l_.tp, q),
                  laid.data() + m * static_cast<std::size_t>(q));
      send = laid.data();
    }
    PLANNER_TRY_STATUS(comm_->reduce_scatter(send, mine.data.data(), m, core::DType::f32, runtime::ReduceOp::sum));
    stored = std::move(mine);
    return true;
  }
  if (port.view.kind == TpView::Kind::partial) {
    Tensor sum = x;
    PLANNER_TRY_STATUS(comm_->all_reduce(sum.data.data(), sum.data.size(), core::DType::f32, runtime::ReduceOp::sum));
    stored = std::move(sum);
    return true;
  }
  // Split -> whole: all-gather the shares, each put where it belongs.
  PLANNER_TRY(auto whole, gather_whole(x, g_.tensor(id).shape, port.view.dim, port.map));
  stored = std::move(whole);
  return true;
}

Result<std::optional<Tensor>> TpRank::out_grad(OpId o, std::size_t k, const Tensor& stored) const {
  const auto& port = l_.ops[o.value].out[k];
  const TensorId id = *g_.op(o).outputs[k];
  const TpView& sv = l_.stored[id.value];
  if (port.view.kind == TpView::Kind::partial && sv.is_split()) {
    // Reduce-scattered forward: every addend's gradient is the whole one.
    PLANNER_TRY(auto whole, gather_whole(stored, g_.tensor(id).shape, sv.dim, l_.stored_map[id.value]));
    return std::optional<Tensor>(std::move(whole));
  }
  if (!port.view.is_split() || sv.is_split()) return std::optional<Tensor>();
  const auto n = stored.shape[static_cast<std::size_t>(port.view.dim)];
  return std::optional<Tensor>(std::get<Tensor>(take(stored, port.view.dim, held_indices(port.map, n, l_.tp, r_))));
}

TpRank::Contribution TpRank::contribution(OpId o, std::size_t i) const {
  const auto& info = l_.ops[o.value];
  const TensorId id = *g_.op(o).inputs[i];
  if (l_.stored[id.value].is_split()) return Contribution::whole;  // the rank's exact block
  if (info.in[i].view.is_split()) return Contribution::scatter;
  return info.split ? Contribution::partial : Contribution::whole;
}

Tensor TpRank::scatter(OpId o, std::size_t i, const Tensor& block) const {
  const auto& port = l_.ops[o.value].in[i];
  const auto& full_shape = g_.tensor(*g_.op(o).inputs[i]).shape;
  Tensor whole(full_shape);
  put_add(whole, port.view.dim,
          held_indices(port.map, full_shape[static_cast<std::size_t>(port.view.dim)], l_.tp, r_), block);
  return whole;
}

Status TpRank::finalize(std::optional<Tensor>& whole, std::optional<Tensor>& partial) {
  if (!partial) return Status::success();
  PLANNER_TRY_STATUS(
      comm_->all_reduce(partial->data.data(), partial->data.size(), core::DType::f32, runtime::ReduceOp::sum));
  if (whole) runtime_cpu::accumulate(*whole, *partial);
  else whole = std::move(*partial);
  partial.reset();
  return Status::success();
}

Status TpRank::all_reduce(std::vector<float>& x) {
  return comm_->all_reduce(x.data(), x.size(), core::DType::f32, runtime::ReduceOp::sum);
}

Status TpRank::gather_full(const std::vector<TensorId>& params, std::span<const float> local, std::vector<float>& full) {
  std::size_t total = 0;
  for (auto id : params) total += static_cast<std::size_t>(g_.tensor(id).numel());
  full.assign(total, 0.0f);
  std::size_t at_local = 0, at_full = 0;
  for (auto id : params) {
    const auto& t = g_.tensor(id);
    const auto n_local = static_cast<std::size_t>(numel(id));
    const TpView& v = l_.stored[id.value];
    if (v.is_split()) {
      Tensor part(shape(id), std::vector<float>(local.begin() + static_cast<std::ptrdiff_t>(at_local),
                                                local.begin() + static_cast<std::ptrdiff_t>(at_local + n_local)));
      Tensor whole(t.shape);
      put_add(whole, v.dim, held_indices(l_.stored_map[id.value], t.shape[static_cast<std::size_t>(v.dim)], l_.tp, r_),
              part);
      std::copy(whole.data.begin(), whole.data.end(), full.begin() + static_cast<std::ptrdiff_t>(at_full));
    } else if (r_ == 0) {  // replicated: every tp rank holds the same; rank 0 speaks for them
      std::copy_n(local.begin() + static_cast<std::ptrdiff_t>(at_local), n_local,
                  full.begin() + static_cast<std::ptrdiff_t>(at_full));
    }
    at_local += n_local;
    at_full += static_cast<std::size_t>(t.numel());
  }
  if (l_.tp > 1)
    PLANNER_TRY_STATUS(comm_->all_reduce(full.data(), full.size(), core::DType::f32, runtime::ReduceOp::sum));
  return Status::success();
}

}  // namespace planner::executor::real_detail
