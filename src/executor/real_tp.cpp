// Tensor parallelism of the real mode: the views derived from a plan
// (real_tp.hpp has the design note; the share helpers and TpRank, one
// rank's side, are in real_tp_rank.cpp).

#include "real_tp.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "planner/layout/mesh.hpp"
#include "planner/layout/tensor_layout.hpp"

namespace planner::executor::real_detail {

namespace {

using graph::OpGraph;
using graph::OpId;
using graph::TensorId;
using runtime_cpu::Shape;

bool elementwise(std::string_view t) {
  static const std::set<std::string_view> kTypes{"Add", "Sub", "Mul",  "Div",  "Relu", "Gelu", "Erf",      "Sigmoid",
                                                 "Tanh", "Sqrt", "Exp", "Log", "Neg",  "Cos",  "Sin", "Identity", "Cast"};
  return kTypes.contains(t);
}
bool reshape_like(std::string_view t) {
  return t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze";
}

int rank_of(const Shape& s) { return static_cast<int>(s.size()); }

// axis attribute normalised to [0, rank), or -1 when out of range.
int axis_attr(const graph::Op& op, std::string_view name, std::int64_t dflt, int rank) {
  std::int64_t a = op.attr_int(name).value_or(dflt);
  if (a < 0) a += rank;
  return a < 0 || a >= rank ? -1 : static_cast<int>(a);
}

}  // namespace

std::string view_name(const TpView& v) {
  switch (v.kind) {
    case TpView::Kind::replicated: return "replicated";
    case TpView::Kind::split: return fmt::format("split({})", v.dim);
    case TpView::Kind::partial: return "partial";
  }
  return "?";
}

Shape local_shape(const Shape& full, const TpView& v, int t) {
  Shape s = full;
  if (v.is_split()) s[static_cast<std::size_t>(v.dim)] /= t;
  return s;
}

std::vector<std::int64_t> held_indices(const IndexMap& m, std::int64_t n, int t, int r) {
  if (!m.empty()) return m[static_cast<std::size_t>(r)];
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n / t));
  std::iota(idx.begin(), idx.end(), r * (n / t));
  return idx;
}

IndexMap split_input_map(const std::vector<std::int64_t>& sizes, int t) {
  IndexMap m(static_cast<std::size_t>(t));
  for (int r = 0; r < t; ++r) {
    std::int64_t off = 0;
    for (auto s : sizes) {
      for (std::int64_t j = 0; j < s / t; ++j) m[static_cast<std::size_t>(r)].push_back(off + r * (s / t) + j);
      off += s;
    }
  }
  return m;
}

namespace {

/// derive_outputs' rules for one op whose inputs are not all replicated:
/// its inputs' views and shapes, the outputs' views being derived.
struct OutputRules {
  const graph::Op& op;
  const OpGraph& g;
  const std::vector<std::optional<TpView>>& in;
  const std::vector<TpView>& declared;
  const int t;
  const std::string& type = op.type;
  const Shape& os = g.tensor(*op.outputs[0]).shape;
  const int ro = rank_of(os);
  std::vector<TpView> out = std::vector<TpView>(op.outputs.size());

  const Shape& in_shape(std::size_t i) const { return g.tensor(*op.inputs[i]).shape; }
  int split_in(std::size_t i) const { return i < in.size() && in[i] && in[i]->is_split() ? in[i]->dim : -1; }
  // A replicated input broadcast along output dim `o` (absent or of size 1 there).
  bool broadcast_along(std::size_t i, int o) const {
    const int d = o - (ro - rank_of(in_shape(i)));
    return d < 0 || in_shape(i)[static_cast<std::size_t>(d)] == 1;
  }

  Result<std::vector<TpView>> elementwise_outputs();
  Result<std::vector<TpView>> matmul_outputs();
  Result<std::vector<TpView>> outputs_by_type();
  Result<std::vector<TpView>> split_data_outputs(int d);
  Result<std::vector<TpView>> slice_outputs(int d);
  Result<std::vector<TpView>> reshape_outputs(int d);
  Result<std::vector<TpView>> reduce_outputs(int d);
};

// Elementwise ops: every split input along one output dim, the others
// broadcast along it.
Result<std::vector<TpView>> OutputRules::elementwise_outputs() {
  int a = -1;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (split_in(i) < 0) continue;
    const int ai = split_in(i) + ro - rank_of(in_shape(i));
    if (a >= 0 && ai != a) return make_error("its inputs are split along different dims");
    a = ai;
  }
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i] && !in[i]->is_split() && !broadcast_along(i, a))
      return make_error("input {} is whole along the split dim {}", i, a);
  out[0] = TpView::split_at(a);
  return out;
}

// MatMul and Gemm: column, row (contraction), row-block or batch splits.
Result<std::vector<TpView>> OutputRules::matmul_outputs() {
  const bool gemm = type == "Gemm";
  if (gemm && op.attr_int("transA").value_or(0) != 0) return make_error("a split Gemm with transA");
  const bool tb = gemm && op.attr_int("transB").value_or(0) != 0;
  const int ra = rank_of(in_shape(0)), rb = rank_of(in_shape(1));
  if (ra < 2 || rb < 2) return make_error("a split matrix-vector product");
  const int a = split_in(0), b = split_in(1);
  const int kb = gemm ? (tb ? 1 : 0) : rb - 2, nb = gemm ? (tb ? 0 : 1) : rb - 1;
  TpView res;
  if (a == ra - 1 && b == kb) {
    res = TpView::part();  // row-parallel: contraction split
  } else if (a < 0 && b == nb) {
    res = TpView::split_at(ro - 1);  // column-parallel
  } else if (a == ra - 2 && b < 0) {
    res = TpView::split_at(ro - 2);  // rows
  } else if (!gemm && ((a >= 0 && a < ra - 2) || (b >= 0 && b < rb - 2))) {
    const int oa = a >= 0 ? a + ro - ra : -1, ob = b >= 0 ? b + ro - rb : -1;
    if ((a >= 0 && oa < 0) || (b >= 0 && ob < 0) || (oa >= 0 && ob >= 0 && oa != ob) ||
        (a >= ra - 2) || (b >= rb - 2))
      return make_error("its inputs are split along different dims");
    const int o = std::max(oa, ob);
    if (a < 0 && !broadcast_along(0, o)) return make_error("input 0 is whole along the split batch dim {}", o);
    if (b < 0 && !broadcast_along(1, o)) return make_error("input 1 is whole along the split batch dim {}", o);
    res = TpView::split_at(o);  // batch (attention heads)
  } else {
    return make_error("inputs split as {} and {} are none of the column, row, contraction or batch splits",
                      in[0] ? view_name(*in[0]) : "absent", in[1] ? view_name(*in[1]) : "absent");
  }
  if (gemm && in.size() > 2 && in[2]) {
    const Shape& cs = in_shape(2);
    const int rc = rank_of(cs);
    if (res.kind == TpView::Kind::partial) {
      // Row-parallel with a bias: tp rank 0 adds it (TpRank::forward), as
      // Megatron adds it once after the all-reduce.
      if (split_in(2) >= 0) return make_error("a split bias added to a partial sum");
      out[0] = res;
      return out;
    }
    if (res.dim == 1) {
      const bool needs = rc >= 1 && cs.back() != 1;
      if (needs != (split_in(2) == rc - 1) || (!needs && split_in(2) >= 0))
        return make_error("the bias is not split as the output columns");
    } else if (split_in(2) >= 0 || !broadcast_along(2, 0)) {
      return make_error("the bias is not split as the output rows");
    }
  }
  out[0] = res;
  return out;
}

// Lookups, losses and joins, then the ops of one split data input.
Result<std::vector<TpView>> OutputRules::outputs_by_type() {
  const int d = split_in(0);
  if (type == "Gather" && d >= 0 && split_in(1) < 0) {
    // A table split along a dim it is not indexed by (tp:h): each rank looks
    // up its columns. Split along the indexed axis 0 (vocabulary-parallel):
    // each rank looks up the ids in its rows, zeros elsewhere, a partial sum
    // (TpRank::forward).
    const int axis = axis_attr(op, "axis", 0, rank_of(in_shape(0)));
    if (d != axis) {
      out[0] = TpView::split_at(d < axis ? d : d + rank_of(in_shape(1)) - 1);
      return out;
    }
    if (axis != 0) return make_error("a lookup split along its indexed axis {} (only axis 0 is masked)", axis);
    out[0] = TpView::part();
    return out;
  }
  if (type == "Gather" && d < 0 && split_in(1) >= 0) {
    // Whole table, ids split (sequence parallelism: each rank looks up its
    // sequence block): the output is split along the ids' dim, shifted by
    // the gather axis; the table's gradient is a partial sum over tp.
    const int axis = axis_attr(op, "axis", 0, rank_of(in_shape(0)));
    out[0] = TpView::split_at(axis + split_in(1));
    return out;
  }
  if (type == "SoftmaxCrossEntropyLoss" && d == 1 && split_in(1) < 0 && in.size() == 2 && out.size() == 1 &&
      op.attr_string("reduction").value_or("mean") == "mean") {
    out[0] = TpView::rep();  // vocabulary-parallel: TpRank::forward reduces max, sum and target over tp
    return out;
  }
  if (type == "SoftmaxCrossEntropyLoss" && d == 0 && split_in(1) == 0 && in.size() == 2 && out.size() == 1 &&
      op.attr_string("reduction").value_or("mean") == "mean" && !op.attr_int("ignore_index")) {
    out[0] = TpView::part();  // batch-split (tp_splits_batch): each rank's mean / tp, all-reduced (real_tp_vocab.cpp)
    return out;
  }
  if (type == "Concat") {  // every input split alike, along a dim it does not join
    const int axis = axis_attr(op, "axis", 0, ro);
    for (std::size_t i = 0; i < in.size(); ++i)
      if (in[i] && split_in(i) != d) return make_error("its inputs are not split alike");
    if (d == axis) return make_error("it joins along the split dim {}", d);
    out[0] = TpView::split_at(d);
    return out;
  }
  for (std::size_t i = 1; i < in.size(); ++i)
    if (split_in(i) >= 0 && type != "Split") return make_error("input {} (not the data) is split", i);
  return split_data_outputs(d);
}

// Ops whose data (input 0) is split and whose other inputs are whole.
Result<std::vector<TpView>> OutputRules::split_data_outputs(int d) {
  if (type == "Slice") return slice_outputs(d);
  if (in[0] && in[0]->kind == TpView::Kind::partial) return make_error("input 0 is a partial sum");
  if (type == "Expand") {  // a broadcast along other dims than the split one (GQA's repeated kv heads)
    const int o = d + ro - rank_of(in_shape(0));
    if (o < 0 || os[static_cast<std::size_t>(o)] != in_shape(0)[static_cast<std::size_t>(d)])
      return make_error("it broadcasts the split dim {}", d);
    out[0] = TpView::split_at(o);
    return out;
  }
  if (type == "Transpose") {
    std::vector<std::int64_t> perm = op.attr_ints("perm").value_or(std::vector<std::int64_t>{});
    if (perm.empty())
      for (int i = ro - 1; i >= 0; --i) perm.push_back(i);
    for (int j = 0; j < static_cast<int>(perm.size()); ++j)
      if (perm[static_cast<std::size_t>(j)] == d) out[0] = TpView::split_at(j);
    return out;
  }
  if (reshape_like(type)) return reshape_outputs(d);
  if (type == "Split") {
    const int axis = axis_attr(op, "axis", 0, rank_of(in_shape(0)));
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (axis == d && g.tensor(*op.outputs[k]).shape[static_cast<std::size_t>(d)] % t != 0)
        return make_error("output {} of the split axis {} does not divide by tp = {}", k, d, t);
      out[k] = TpView::split_at(d);
    }
    return out;
  }
  if (type == "Softmax") {
    if (axis_attr(op, "axis", -1, ro) == d) return make_error("its softmax axis {} is split", d);
    out[0] = TpView::split_at(d);
    return out;
  }
  if (type.rfind("Reduce", 0) == 0) return reduce_outputs(d);
  if (type == "LayerNormalization" || type == "RMSNormalization") {
    const int axis = axis_attr(op, "axis", -1, ro);
    if (d >= axis) return make_error("its normalised axis {} is split", d);
    if (out.size() > 1) return make_error("a split normalisation with statistics outputs");
    out[0] = TpView::split_at(d);
    return out;
  }
  return make_error("a {} op cannot run on the shares of a split input", type);
}

// A slice along other dims than the split one (RoPE halves).
Result<std::vector<TpView>> OutputRules::slice_outputs(int d) {
  std::vector<std::int64_t> axes;
  if (op.inputs.size() > 3 && op.inputs[3]) {
    const auto& v = g.tensor(*op.inputs[3]).values;
    if (!v || v->is_float) return make_error("its axes are not a known constant");
    axes = v->ints;
  } else if (op.inputs.size() > 1 && op.inputs[1]) {
    for (std::int64_t a = 0; a < g.tensor(*op.inputs[1]).numel(); ++a) axes.push_back(a);
  }
  for (auto a : axes)
    if ((a < 0 ? a + ro : a) == d) return make_error("it slices the split dim {}", d);
  out[0] = TpView::split_at(d);
  return out;
}

Result<std::vector<TpView>> OutputRules::reshape_outputs(int d) {
  const Shape& is = in_shape(0);
  if (!declared.empty() && declared[0].is_split()) {
    if (!reshape_keeps_blocks(is, d, os, declared[0].dim, t))
      return make_error("the reshape moves elements between the shares of split dim {}", d);
    out[0] = declared[0];
    return out;
  }
  for (int b = 0; b < ro; ++b)
    if (os[static_cast<std::size_t>(b)] != 1 && reshape_keeps_blocks(is, d, os, b, t)) {
      out[0] = TpView::split_at(b);
      return out;
    }
  return make_error("the reshape moves elements between the shares of split dim {}", d);
}

// A reduction over other dims (RMSNorm's mean over the hidden dim) keeps
// the split; a sum or mean over the split dim itself is a partial sum over
// tp (a mean: each rank's mean / tp, TpRank::forward), all-reduced where it
// is read whole, as the cost model's partial layout is.
Result<std::vector<TpView>> OutputRules::reduce_outputs(int d) {
  std::vector<std::int64_t> axes = op.attr_ints("axes").value_or(std::vector<std::int64_t>{});
  if (axes.empty() && op.inputs.size() > 1 && op.inputs[1]) {
    const auto& v = g.tensor(*op.inputs[1]).values;
    if (!v || v->is_float) return make_error("its axes are not a known constant");
    axes = v->ints;
  }
  if (axes.empty()) return make_error("it reduces every dim, the split dim {} among them", d);
  const int ri = rank_of(in_shape(0));
  const bool keep = op.attr_int("keepdims").value_or(1) != 0;
  int below = 0;
  for (auto a : axes) {
    const auto ax = a < 0 ? a + ri : a;
    if (ax == d) {
      if (type != "ReduceSum" && type != "ReduceMean")
        return make_error("it reduces the split dim {} (only a sum or a mean over it is a partial sum)", d);
      out[0] = TpView::part();
      return out;
    }
    if (ax < d) ++below;
  }
  out[0] = TpView::split_at(keep ? d : d - below);
  return out;
}

}  // namespace

Result<std::vector<TpView>> derive_outputs(const graph::Op& op, const OpGraph& g,
                                           const std::vector<std::optional<TpView>>& in,
                                           const std::vector<TpView>& declared, int t) {
  std::vector<TpView> out(op.outputs.size());
  bool any = false;
  for (const auto& v : in) any = any || (v && v->kind != TpView::Kind::replicated);
  if (!any || out.empty()) return out;
  OutputRules r{op, g, in, declared, t};
  if (elementwise(op.type)) return r.elementwise_outputs();
  if (op.type == "MatMul" || op.type == "Gemm") return r.matmul_outputs();
  return r.outputs_by_type();
}

namespace {

class Deriver {
 public:
  Deriver(const plan::Plan& p, const OpGraph& g, TpLayout& l) : p_(p), g_(g), l_(l) {}

  Status run() {
    PLANNER_TRY(mesh_, layout::DeviceMesh::create({{"dp", p_.layout.dp}, {"cp", p_.layout.cp}, {"tp", l_.tp}}));
    tp_axis_ = layout::MeshAxis(2);
    unit_.assign(g_.num_ops(), nullptr);
    declared_.assign(g_.num_ops(), false);
    for (const auto& s : p_.layout.strategies)
      for (const auto& name : s.instances) {
        const auto id = g_.find_op(name);
        if (!id) continue;
        std::vector<OpId> ops{*id};
        if (s.ops.size() > 1 && g_.op(*id).fused_group)
          ops = g_.fused[static_cast<std::size_t>(*g_.op(*id).fused_group)].ops;
        for (auto o : ops) unit_[o.value] = &s;
        declared_[id->value] = s.ops.size() == 1;
      }
    PLANNER_TRY(order_, g_.topological_order());
    PLANNER_TRY_STATUS(views());
    PLANNER_TRY_STATUS(stored());
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) PLANNER_TRY_STATUS(split_maps(*it));
    return Status::success();
  }

 private:
  Error refuse(OpId o, std::string_view why) const {
    const auto& op = g_.op(o);
    const auto* s = unit_[o.value];
    return make_error("the real mode cannot run op '{}' ({}) under tensor parallelism with strategy {} ({}): {}",
                      op.name, op.type, s ? s->strategy : "(none)",
                      s && !s->assignment.empty() ? s->assignment : "replicated", why);
  }

  Result<TpView> parse_view(OpId o, const std::string& text, const graph::Tensor& t) const {
    auto lay = layout::parse_layout(text, mesh_);
    if (!lay) return refuse(o, lay.error().message);
    if (lay->rank() != rank_of(t.shape)) return refuse(o, fmt::format("layout {} does not fit '{}'", text, t.name));
    if (lay->is_partial(tp_axis_)) return TpView::part();
    const auto d = lay->split_dim(tp_axis_);
    if (!d) return TpView::rep();
    if (lay->dim_axes(*d).size() != 1) return refuse(o, fmt::format("layout {} splits a dim over tp and more", text));
    if (t.shape[static_cast<std::size_t>(*d)] % l_.tp != 0)
      return refuse(o, fmt::format("layout {} splits a dim of '{}' that tp does not divide", text, t.name));
    return TpView::split_at(*d);
  }

  Status views() {
    made_.assign(g_.num_tensors(), TpView{});
    for (OpId o : order_) {
      const auto& op = g_.op(o);
      auto& info = l_.ops[o.value];
      const auto* s = declared_[o.value] ? unit_[o.value] : nullptr;
      std::vector<std::optional<TpView>> in(op.inputs.size());
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        if (!op.inputs[i]) continue;
        TpView v = made_[op.inputs[i]->value];
        if (s && i < s->inputs.size() && !s->inputs[i].empty()) {
          PLANNER_TRY(v, parse_view(o, s->inputs[i], g_.tensor(*op.inputs[i])));
        }
        if (v.kind == TpView::Kind::partial) return refuse(o, fmt::format("input {} is read as a partial sum", i));
        in[i] = v;
        info.in[i].view = v;
      }
      std::vector<TpView> decl;
      if (s && s->outputs.size() >= op.outputs.size())
        for (std::size_t k = 0; k < op.outputs.size(); ++k) {
          if (!op.outputs[k]) return refuse(o, "an omitted output");
          PLANNER_TRY(auto v, parse_view(o, s->outputs[k], g_.tensor(*op.outputs[k])));
          decl.push_back(v);
        }
      if (p_.layout.sequence_parallel && sequence_region(op, in, decl)) {
        // Sequence parallelism: the op runs on this rank's sequence block.
        const Shape& os = g_.tensor(*op.outputs[0]).shape;
        for (std::size_t i = 0; i < op.inputs.size(); ++i) {
          if (!op.inputs[i]) continue;
          const Shape& is = g_.tensor(*op.inputs[i]).shape;
          const int a = 1 - (rank_of(os) - rank_of(is));
          in[i] = a >= 0 && is[static_cast<std::size_t>(a)] == os[1] ? TpView::split_at(a) : TpView::rep();
          info.in[i].view = *in[i];
        }
        decl.clear();
      }
      auto outs = derive_outputs(op, g_, in, decl, l_.tp);
      if (!outs) return refuse(o, outs.error().message);
      for (std::size_t k = 0; k < outs->size(); ++k) {
        const TpView v = (*outs)[k];
        if (!decl.empty() && decl[k] != v)
          return refuse(o, fmt::format("its output layout {} does not follow from its inputs (the kernels make it {})",
                                       s->outputs[k], view_name(v)));
        info.out[k].view = v;
        made_[op.outputs[k]->value] = v;
      }
      for (const auto& pt : info.in) info.split = info.split || pt.view.kind != TpView::Kind::replicated;
      for (const auto& pt : info.out) info.split = info.split || pt.view.kind != TpView::Kind::replicated;
    }
    return Status::success();
  }

  // Megatron's sequence-parallel region: element-wise ops and norms the plan
  // runs whole on [b, s, h] activations (s divisible by tp), reading whole
  // values or the sequence blocks of an earlier such op.
  bool sequence_region(const graph::Op& op, const std::vector<std::optional<TpView>>& in,
                       const std::vector<TpView>& decl) const {
    if (!elementwise(op.type) && op.type != "LayerNormalization" && op.type != "RMSNormalization") return false;
    if (op.outputs.size() != 1 || !op.outputs[0]) return false;
    const Shape& os = g_.tensor(*op.outputs[0]).shape;
    if (rank_of(os) != 3 || os[1] % l_.tp != 0 || !core::is_floating(g_.tensor(*op.outputs[0]).dtype)) return false;
    for (const auto& v : decl)
      if (v.kind != TpView::Kind::replicated) return false;
    for (const auto& v : in)
      if (v && v->kind != TpView::Kind::replicated && *v != TpView::split_at(1)) return false;
    return true;
  }

  // How each tensor is kept: as its producer makes it when every reader
  // reads it so (a partial sum never), whole otherwise; a parameter every
  // reader reads with one split is kept as that share.
  Status stored() {
    std::vector<bool> is_output(g_.num_tensors(), false);
    for (auto t : g_.graph_outputs) is_output[t.value] = true;
    for (std::uint32_t i = 0; i < g_.num_tensors(); ++i) {
      const auto& t = g_.tensor(TensorId{i});
      std::vector<TpView> reads;
      for (auto c : t.consumers) {
        const auto& op = g_.op(c);
        for (std::size_t k = 0; k < op.inputs.size(); ++k)
          if (op.inputs[k] && op.inputs[k]->value == i) reads.push_back(l_.ops[c.value].in[k].view);
      }
      const bool uniform = !reads.empty() && std::all_of(reads.begin(), reads.end(), [&](const TpView& v) { return v == reads[0]; });
      TpView v;
      if (t.producer) {
        const TpView m = made_[i];
        if (m.is_split() && !is_output[i] && (reads.empty() || (uniform && reads[0] == m))) v = m;
        // A partial sum every reader reads as one split: reduce-scatter (sp).
        if (m.kind == TpView::Kind::partial && !is_output[i] && uniform && reads[0].is_split() &&
            core::is_floating(t.dtype))
          v = reads[0];
      } else if (t.role == graph::TensorRole::parameter && uniform && reads[0].is_split()) {
        v = reads[0];
      }
      l_.stored[i] = v;
      if (t.producer && made_[i].is_split() && !v.is_split() && !core::is_floating(t.dtype))
        return refuse(*t.producer, fmt::format("integer output '{}' would need an all-gather", t.name));
    }
    return Status::success();
  }

  // A Split along the split dim of its input: walk the permuted shares up.
  Status split_maps(OpId o) {
    const auto& op = g_.op(o);
    if (op.type != "Split" || !l_.ops[o.value].in[0].view.is_split()) return Status::success();
    const int d = l_.ops[o.value].in[0].view.dim;
    if (axis_attr(op, "axis", 0, rank_of(g_.tensor(*op.inputs[0]).shape)) != d) return Status::success();
    std::vector<std::int64_t> sizes;
    for (const auto& out : op.outputs) sizes.push_back(g_.tensor(*out).shape[static_cast<std::size_t>(d)]);
    return propagate(o, 0, split_input_map(sizes, l_.tp));
  }

  Status propagate(OpId o, std::size_t port, const IndexMap& m) {
    auto& info = l_.ops[o.value];
    info.in[port].map = m;
    const TensorId id = *g_.op(o).inputs[port];
    if (!l_.stored[id.value].is_split()) return Status::success();  // sliced from the whole value
    const auto& t = g_.tensor(id);
    for (auto c : t.consumers) {
      const auto& op = g_.op(c);
      for (std::size_t k = 0; k < op.inputs.size(); ++k)
        if (op.inputs[k] == id && !(c == o && k == port))
          return refuse(o, fmt::format("'{}' would need its shares permuted for this op only", t.name));
    }
    auto& sm = l_.stored_map[id.value];
    if (!sm.empty() && sm != m) return refuse(o, fmt::format("'{}' would need two permutations", t.name));
    sm = m;
    if (!t.producer) {
      if (t.role == graph::TensorRole::parameter) return Status::success();
      return refuse(o, fmt::format("input '{}' would need permuted shares", t.name));
    }
    const OpId p = *t.producer;
    const auto& pop = g_.op(p);
    auto& pinfo = l_.ops[p.value];
    for (std::size_t k = 0; k < pop.outputs.size(); ++k)
      if (pop.outputs[k] == id) pinfo.out[k].map = m;
    if (elementwise(pop.type)) {
      for (std::size_t k = 0; k < pop.inputs.size(); ++k)
        if (pop.inputs[k] && pinfo.in[k].view.is_split()) PLANNER_TRY_STATUS(propagate(p, k, m));
      return Status::success();
    }
    if ((pop.type == "MatMul" || pop.type == "Gemm") && !pinfo.in[0].view.is_split()) {
      for (std::size_t k = 1; k < pop.inputs.size(); ++k)
        if (pop.inputs[k] && pinfo.in[k].view.is_split()) PLANNER_TRY_STATUS(propagate(p, k, m));
      return Status::success();
    }
    return refuse(p, fmt::format("a Split downstream needs the shares of '{}' permuted, which the real mode derives "
                                 "through element-wise ops and column-parallel MatMuls only",
                                 t.name));
  }

  const plan::Plan& p_;
  const OpGraph& g_;
  TpLayout& l_;
  layout::DeviceMesh mesh_;
  layout::MeshAxis tp_axis_;
  std::vector<const plan::OpStrategy*> unit_;
  std::vector<bool> declared_;
  std::vector<OpId> order_;
  std::vector<TpView> made_;
};

}  // namespace

TpLayout whole_layout(const OpGraph& g, int degree) {
  TpLayout l;
  l.tp = degree;
  l.stored.assign(g.num_tensors(), TpView{});
  l.stored_map.assign(g.num_tensors(), {});
  l.ops.resize(g.num_ops());
  for (std::size_t o = 0; o < g.num_ops(); ++o) {
    l.ops[o].in.resize(g.ops()[o].inputs.size());
    l.ops[o].out.resize(g.ops()[o].outputs.size());
  }
  return l;
}

Result<TpLayout> derive_tp_layout(const plan::Plan& p, const OpGraph& g) {
  TpLayout l = whole_layout(g, p.layout.tp);
  if (l.tp == 1) return l;
  Deriver d(p, g, l);
  PLANNER_TRY_STATUS(d.run());
  return l;
}

}  // namespace planner::executor::real_detail
