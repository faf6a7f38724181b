// Batch axes of an imported graph, and the rebinding of a static batch.
//
// Where the batch lives in each tensor is found in three steps, in op order:
//
//   1. layout ops (Transpose, and the reshape family: Reshape, Flatten,
//      Squeeze, Unsqueeze) move the batch by structure: a permutation moves
//      its axis, a reshape keeps its place in the row-major element order;
//      Gather, Split, Slice and Reduce* off the batch axis keep it (shifted
//      past the axes they drop).
//      The batch is a factor of one axis, `inner` elements of that axis
//      inside it:
//
//          [L, N, E] --Reshape--> [L, N*H, E/H]      N: axis 1, inner 1
//                                   ^^^^^             -> axis 1, inner H
//          [L*N, E]  --Reshape--> [L, N, E]          N: axis 0, inner 1
//                                                     -> axis 1, inner 1
//
//      This is what follows a static export, whose reshape targets are
//      constants written at the export's batch;
//   2. any other op: the probe (a second propagation with the batch dims
//      perturbed): the one axis whose size moved;
//   3. ops the probe could not follow (downstream of a constant reshape
//      target) inherit the axis of an input whose dims up to that axis the
//      output keeps, aligned from the left or, for broadcasting, from the
//      right.
//
// Then, backwards, a tensor combined elementwise with a batched one along its
// batch axis is batched too, though no batched tensor reaches it: the batch
// was written into it as a constant (ViT's class token expanded to the batch,
// a stochastic-depth mask drawn at [N,1,1,1]).
//
// Rebinding a static batch b0 to n scales every batched tensor's axis by
// n / b0. A float output without a batch axis written from a batched input
// is allowed only where the op reduces over the batch (normalisation running
// statistics, losses, means over the batch axis: the `batch_reductions`
// table); anywhere else a size does not follow the batch and rebinding is
// refused with the op named.

#include <algorithm>
#include <array>
#include <string_view>

#include "build.hpp"

namespace planner::onnx::detail {

namespace {

using graph::TensorRole;

/// The batch factor inside a tensor: axis `axis`, with `inner` elements of
/// that axis inside it (the axis is outer * batch * inner).
struct Pos {
  int axis = 0;
  std::int64_t inner = 1;
};

/// Where a batch factor of extent `b` at `p` in `from` lands in `to` (same
/// element count, row-major): the axis whose stride range holds it whole.
std::optional<Pos> reshape_pos(const Shape& from, Pos p, std::int64_t b, const Shape& to) {
  if (p.axis < 0 || static_cast<std::size_t>(p.axis) >= from.size() || b < 1) return std::nullopt;
  __int128 s = p.inner;  // the batch factor's stride, in elements
  for (std::size_t k = static_cast<std::size_t>(p.axis) + 1; k < from.size(); ++k) s *= from[k];
  __int128 stride = 1;
  for (std::size_t k = to.size(); k-- > 0;) {
    const __int128 lo = stride, hi = stride * to[k];
    const bool inside = b > 1 ? s >= lo && s * b <= hi : s >= lo && s < hi;
    if (inside && s % lo == 0 && hi % (s * b) == 0)
      return Pos{static_cast<int>(k), static_cast<std::int64_t>(s / lo)};
    stride = hi;
  }
  return std::nullopt;
}

bool is_reshape_family(std::string_view t) {
  return t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze";
}

/// Ops whose inputs broadcast against each other elementwise (numpy rules),
/// so an input's axis aligned from the right with the output's batch axis,
/// at the same size, holds the batch too.
bool is_broadcasting(std::string_view t) {
  static constexpr std::array<std::string_view, 40> kOps = {
      "Add",  "Sub",     "Mul",       "Div",      "Pow",     "Where",    "Max",        "Min",
      "Mean", "Sum",     "Mod",       "Equal",    "Less",    "Greater",  "LessOrEqual", "GreaterOrEqual",
      "And",  "Or",      "Xor",       "Not",      "Cast",    "Identity", "Neg",        "Abs",
      "Relu", "Sigmoid", "Tanh",      "Erf",      "Sqrt",    "Exp",      "Log",        "Reciprocal",
      "Floor", "Ceil",   "Bernoulli", "Dropout",  "Clip",    "PRelu",    "BitShift",   "CastLike"};
  return std::find(kOps.begin(), kOps.end(), t) != kOps.end();
}

/// Tensors that may carry a batch axis: data, and constants the batch was
/// written into (found by `Tracker::unify`); never parameters.
bool data_role(const graph::Tensor& t) {
  return t.role == TensorRole::activation || t.role == TensorRole::input || t.role == TensorRole::constant;
}

/// The axes a Reduce* op reduces (attribute, or constant input 1); empty for
/// every axis; nullopt when computed at run time, or none with
/// noop_with_empty_axes (nothing reduced: treated as unknown).
std::optional<std::vector<std::int64_t>> reduced_axes(const graph::OpGraph& g, const graph::Op& op) {
  std::optional<std::vector<std::int64_t>> axes = op.attr_ints("axes");
  if (!axes && op.inputs.size() > 1 && op.inputs[1]) {
    const auto& a = g.tensor(*op.inputs[1]);
    if (!a.values || a.values->is_float) return std::nullopt;
    axes = a.values->ints;
  }
  if (!axes || axes->empty()) {
    if (op.attr_int("noop_with_empty_axes").value_or(0) != 0) return std::nullopt;
    return std::vector<std::int64_t>{};
  }
  return axes;
}

/// Whether output `k` of `op` is a reduction over the batch: it is batch-free
/// by meaning (running statistics, a reduced loss, a mean over the batch), so
/// a static batch may be rebound past it.
bool batch_reduction(const graph::OpGraph& g, const graph::Op& op, std::size_t k) {
  const std::string_view t = op.type;
  if (t == "BatchNormalization") return k >= 1;  // running mean / variance (training mode)
  if (t == "SoftmaxCrossEntropyLoss" || t == "NegativeLogLikelihoodLoss")
    return k == 0 && op.attr_string("reduction").value_or("mean") != "none";
  if (t.starts_with("Reduce") && k == 0 && !op.inputs.empty() && op.inputs[0]) {
    const auto& x = g.tensor(*op.inputs[0]);
    if (!x.batch_axis) return false;
    const auto axes = reduced_axes(g, op);
    if (!axes) return false;  // axes computed at run time: cannot tell
    if (axes->empty()) return true;  // every axis
    const auto rank = static_cast<std::int64_t>(x.shape.size());
    for (auto a : *axes)
      if ((a < 0 ? a + rank : a) == *x.batch_axis) return true;
  }
  return false;
}

struct Tracker {
  graph::OpGraph& g;
  std::vector<std::optional<Pos>> pos;  // per graph tensor
  std::int64_t extent = 0;              // the batch's size in the real run

  void set(graph::TensorId t, Pos p) {
    pos[t.value] = p;
    g.tensor(t).batch_axis = p.axis;
  }

  /// `inner` of a batch axis found by the probe or inherited: an input's when
  /// one has the same size on its batch axis, else 1 when the axis is the
  /// batch alone, else the batch taken as the axis' outermost factor.
  std::int64_t guess_inner(const graph::Op& op, std::int64_t d) const {
    for (const auto& in : op.inputs)
      if (in && pos[in->value]) {
        const auto& x = g.tensor(*in);
        if (x.shape[static_cast<std::size_t>(pos[in->value]->axis)] == d) return pos[in->value]->inner;
      }
    if (extent > 0 && d != extent && d % extent == 0) return d / extent;
    return 1;
  }

  /// Step 1: Transpose and the reshape family.
  std::optional<std::optional<Pos>> structural(const graph::Op& op, const graph::Tensor& out) const {
    if (op.inputs.empty() || !op.inputs[0] || !pos[op.inputs[0]->value]) return std::nullopt;
    const auto& x = g.tensor(*op.inputs[0]);
    const Pos p = *pos[op.inputs[0]->value];
    if (op.type == "Transpose") {
      auto perm = op.attr_ints("perm").value_or(std::vector<std::int64_t>{});
      if (perm.empty())
        for (std::size_t k = x.shape.size(); k-- > 0;) perm.push_back(static_cast<std::int64_t>(k));
      for (std::size_t j = 0; j < perm.size(); ++j)
        if (perm[j] == p.axis) return std::optional<Pos>(Pos{static_cast<int>(j), p.inner});
      return std::optional<Pos>();
    }
    if (is_reshape_family(op.type) && x.numel() == out.numel() && extent > 0)
      return reshape_pos(x.shape, p, extent, out.shape);
    const auto rank = static_cast<std::int64_t>(x.shape.size());
    if (op.type == "Gather" && op.inputs.size() > 1 && op.inputs[1]) {
      // Indices of rank r replace the gathered axis: axes after it shift by r - 1.
      auto a = op.attr_int("axis").value_or(0);
      if (a < 0) a += rank;
      const auto r = static_cast<std::int64_t>(g.tensor(*op.inputs[1]).shape.size());
      if (a < p.axis) return std::optional<Pos>(Pos{static_cast<int>(p.axis + r - 1), p.inner});
      if (a > p.axis) return std::optional<Pos>(p);
      return std::nullopt;
    }
    if (op.type == "Split") {  // pieces along another axis keep the batch where it was
      auto a = op.attr_int("axis").value_or(0);
      if (a < 0) a += rank;
      if (a != p.axis) return std::optional<Pos>(p);
      return std::nullopt;
    }
    if (op.type == "Slice" && op.inputs.size() > 1 && op.inputs[1]) {  // likewise
      std::vector<std::int64_t> axes;
      if (op.inputs.size() > 3 && op.inputs[3]) {
        const auto& a = g.tensor(*op.inputs[3]);
        if (!a.values || a.values->is_float) return std::nullopt;
        axes = a.values->ints;
      } else {
        const auto& starts = g.tensor(*op.inputs[1]).shape;
        for (std::int64_t k = 0; k < (starts.empty() ? 1 : starts[0]); ++k) axes.push_back(k);
      }
      for (auto a : axes)
        if ((a < 0 ? a + rank : a) == p.axis) return std::nullopt;
      return std::optional<Pos>(p);
    }
    if (op.type.starts_with("Reduce")) {
      auto axes = reduced_axes(g, op);
      if (!axes) return std::nullopt;
      if (axes->empty()) return std::optional<Pos>();  // every axis: batch-free
      int before = 0;
      for (auto a : *axes) {
        const auto k = a < 0 ? a + rank : a;
        if (k == p.axis) return std::optional<Pos>();  // over the batch: batch-free
        if (k < p.axis) ++before;
      }
      if (op.attr_int("keepdims").value_or(1) != 0) return std::optional<Pos>(p);
      return std::optional<Pos>(Pos{p.axis - before, p.inner});
    }
    return std::nullopt;
  }

  /// Step 3: the axis of an input the output keeps.
  std::optional<Pos> inherited(const graph::Op& op, const graph::Tensor& out) const {
    for (const auto& in : op.inputs) {
      if (!in || !pos[in->value]) continue;
      const auto& x = g.tensor(*in);
      const auto a = static_cast<std::size_t>(pos[in->value]->axis);
      if (a >= x.shape.size()) continue;
      // Left-aligned: the output keeps every dim up to and including the batch axis.
      if (a < out.shape.size() && std::equal(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(a) + 1,
                                             out.shape.begin()))
        return Pos{static_cast<int>(a), pos[in->value]->inner};
      // Right-aligned (broadcasting from a lower rank): every dim from the batch axis on.
      if (out.shape.size() > x.shape.size()) {
        const std::size_t off = out.shape.size() - x.shape.size();
        if (std::equal(x.shape.begin() + static_cast<std::ptrdiff_t>(a), x.shape.end(),
                       out.shape.begin() + static_cast<std::ptrdiff_t>(a + off)))
          return Pos{static_cast<int>(a + off), pos[in->value]->inner};
      }
    }
    return std::nullopt;
  }

  /// Backwards: inputs of broadcasting ops (and Concat off its axis) that
  /// meet a batched output at the same size on its batch axis.
  void unify() {
    for (std::size_t i = g.num_ops(); i-- > 0;) {
      const graph::Op& op = g.op(graph::OpId{static_cast<std::uint32_t>(i)});
      const bool concat = op.type == "Concat";
      if (!concat && !is_broadcasting(op.type)) continue;
      for (const auto& o : op.outputs) {
        if (!o || !pos[o->value]) continue;
        const auto& out = g.tensor(*o);
        const Pos p = *pos[o->value];
        const std::int64_t d = out.shape[static_cast<std::size_t>(p.axis)];
        if (d == 1) continue;
        if (concat) {
          const auto axis = op.attr_int("axis").value_or(0);
          if ((axis < 0 ? axis + static_cast<std::int64_t>(out.shape.size()) : axis) == p.axis) continue;
        }
        for (const auto& in : op.inputs) {
          if (!in || pos[in->value]) continue;
          const auto& x = g.tensor(*in);
          if (!data_role(x) || x.shape.size() > out.shape.size()) continue;
          const auto off = static_cast<int>(out.shape.size() - x.shape.size());
          const int j = concat ? p.axis : p.axis - off;
          if (j < 0 || static_cast<std::size_t>(j) >= x.shape.size() || x.shape[static_cast<std::size_t>(j)] != d)
            continue;
          set(*in, Pos{j, p.inner});
        }
      }
    }
  }
};

}  // namespace

void set_batch_axes(BuiltGraph& b, const ParsedGraph& pg, const std::vector<Info>& infos,
                    const std::vector<Info>& probe) {
  auto& g = b.graph;
  Tracker tr{g, std::vector<std::optional<Pos>>(g.num_tensors()), 0};
  std::vector<int> pg_index(g.num_tensors(), -1);
  for (std::size_t t = 0; t < pg.size(); ++t)
    if (b.tensor_id[t]) pg_index[b.tensor_id[t]->value] = static_cast<int>(t);
  // The probe's axis: the one whose size moved.
  auto probed = [&](graph::TensorId id) -> std::optional<std::optional<int>> {
    const int t = pg_index[id.value];
    if (t < 0 || !probe[static_cast<std::size_t>(t)].shape || !infos[static_cast<std::size_t>(t)].shape)
      return std::nullopt;
    const Shape& a = *infos[static_cast<std::size_t>(t)].shape;
    const Shape& p = *probe[static_cast<std::size_t>(t)].shape;
    if (a.size() != p.size()) return std::optional<int>();
    for (std::size_t k = 0; k < a.size(); ++k)
      if (a[k] != p[k]) return std::optional<int>(static_cast<int>(k));
    return std::optional<int>();
  };
  for (auto id : g.graph_inputs) {
    const auto& x = g.tensor(id);
    if (x.role != TensorRole::input) continue;
    if (auto pr = probed(id); pr && *pr) {
      tr.set(id, Pos{**pr, 1});
      if (tr.extent == 0) tr.extent = x.shape[static_cast<std::size_t>(**pr)];
    }
  }
  for (std::size_t i = 0; i < g.num_ops(); ++i) {
    const graph::Op& op = g.op(graph::OpId{static_cast<std::uint32_t>(i)});
    for (const auto& o : op.outputs) {
      if (!o) continue;
      const graph::Tensor& out = g.tensor(*o);
      if (out.role != TensorRole::activation) continue;
      if (auto s = tr.structural(op, out)) {
        if (*s) {
          tr.set(*o, **s);
          continue;
        }
      }
      if (auto pr = probed(*o)) {
        if (*pr) tr.set(*o, Pos{**pr, tr.guess_inner(op, out.shape[static_cast<std::size_t>(**pr)])});
        continue;
      }
      if (auto p = tr.inherited(op, out)) tr.set(*o, *p);
    }
  }
  tr.unify();
}

Status rebind_static_batch(graph::OpGraph& g, std::int64_t b0, std::int64_t n) {
  auto batched = [&](const graph::Tensor& t) {
    return data_role(t) && t.batch_axis && *t.batch_axis < static_cast<int>(t.shape.size());
  };
  for (const auto& op : g.ops()) {
    bool reads_batch = false;
    for (const auto& in : op.inputs)
      if (in && batched(g.tensor(*in))) reads_batch = true;
    if (!reads_batch) continue;
    for (std::size_t k = 0; k < op.outputs.size(); ++k) {
      if (!op.outputs[k]) continue;
      const auto& t = g.tensor(*op.outputs[k]);
      if (t.role == TensorRole::activation && core::is_floating(t.dtype) && !t.shape.empty() && !t.batch_axis &&
          !batch_reduction(g, op, k))
        return make_error("op '{}' ({}) writes '{}' without a batch axis from a batched input", op.name,
                          graph::op_kind(op), t.name);
    }
  }
  for (const auto& t : g.tensors()) {
    if (t.role == TensorRole::parameter && t.batch_axis)
      return make_error("parameter '{}' has the batch size on axis {}", t.name, *t.batch_axis);
    if (!batched(t)) continue;
    const std::int64_t d = t.shape[static_cast<std::size_t>(*t.batch_axis)];
    if (d % b0 != 0) return make_error("'{}' has {} on its batch axis, not a multiple of {}", t.name, d, b0);
    Shape s = t.shape;
    s[static_cast<std::size_t>(*t.batch_axis)] = static_cast<std::int64_t>(static_cast<__int128>(d / b0) * n);
    if (static_cast<__int128>(d / b0) * n > kMaxDim || !checked_numel(s))
      return make_error("'{}' would have too many elements at batch {}", t.name, n);
  }
  for (std::size_t i = 0; i < g.num_tensors(); ++i) {
    graph::Tensor& t = g.tensor(graph::TensorId{static_cast<std::uint32_t>(i)});
    if (!batched(t)) continue;
    auto& d = t.shape[static_cast<std::size_t>(*t.batch_axis)];
    d = d / b0 * n;
    t.values.reset();  // a constant's values were for the file's batch
  }
  return Status::success();
}

}  // namespace planner::onnx::detail
