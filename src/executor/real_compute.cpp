// The real mode's compute (real_runner.hpp): the graph's bookkeeping, one
// chunk's forward and backward through TpRank, and recomputation.

#include <algorithm>

#include "planner/runtime_cpu/elementwise.hpp"
#include "real_data.hpp"
#include "real_runner.hpp"

namespace planner::executor::real_detail {

using graph::TensorId;
using runtime_cpu::IndexTensor;
using runtime_cpu::Tensor;
using runtime_cpu::Value;

Status Runner::init_graph() {
  opt_ = optimizer_of(p_.training.optimizer);
  chunk_of_ = chunk_of_ops(p_, g_);
  for (const auto& c : l().chunks) {
    std::vector<graph::OpId> ops;
    for (const auto& name : c.ops) ops.push_back(*g_.find_op(name));
    chunk_ops_.push_back(std::move(ops));
  }
  PLANNER_TRY(rc_, plan_recompute(g_, p_.training.recompute, p_.training.recompute_modules, chunk_ops_));
  weights_.assign(g_.num_tensors(), std::nullopt);
  // Tensors that need a gradient: downstream of a parameter.
  needs_grad_.assign(g_.num_tensors(), false);
  for (std::uint32_t i = 0; i < g_.num_tensors(); ++i) {
    const auto& t = g_.tensor(TensorId{i});
    if (!t.producer && t.role == graph::TensorRole::parameter) needs_grad_[i] = true;
  }
  PLANNER_TRY(auto order, g_.topological_order());
  for (graph::OpId oid : order) {
    const auto& op = g_.op(oid);
    bool any = false;
    for (const auto& in : op.inputs) any = any || (in && needs_grad_[in->value]);
    for (const auto& out : op.outputs)
      if (out && g_.tensor(*out).dtype == core::DType::f32) needs_grad_[out->value] = any;
  }
  for (const auto& out : g_.graph_outputs)
    if (g_.tensor(out).name == "loss") loss_ = out;
  if (!loss_)
    for (const auto& out : g_.graph_outputs)
      if (g_.tensor(out).dtype == core::DType::f32 && g_.tensor(out).numel() == 1) loss_ = out;
  if (!loss_) return make_error("the model has no scalar loss output");
  return Status::success();
}

Runner::Values& Runner::vals(int mb) {
  auto& v = values_[mb];
  if (v.empty()) v.resize(g_.num_tensors());
  return v;
}

Runner::Grads& Runner::grs(int mb) {
  auto& v = grads_[mb];
  if (v.empty()) v.resize(g_.num_tensors());
  return v;
}

Runner::Grads& Runner::gps(int mb) {
  auto& v = partials_[mb];
  if (v.empty()) v.resize(g_.num_tensors());
  return v;
}

bool Runner::is_weight(TensorId id) const {
  const auto& t = g_.tensor(id);
  return t.role == graph::TensorRole::parameter && !t.producer;
}

// The value op `o` reads at input port i: the stored one (a parameter: this
// step's weight), or its tp block.
const Value* Runner::port(Values& v, graph::OpId o, std::size_t i, std::vector<Value>& keep) {
  const TensorId id = *g_.op(o).inputs[i];
  const Value& base = is_weight(id) ? *weights_[id.value] : *v[id.value];
  if (auto b = tp().port_input(o, i, base)) {
    keep.push_back(std::move(*b));
    return &keep.back();
  }
  return &base;
}

// A parameter as the ops read it: made from the flat buffer once per step
// (under ZeRO-3 once per gather) and shared by every op and micro-batch that
// reads it, as a framework's module holds its weight; copying it for every
// reading op and micro-batch cost the 4-layer GPT of docs/validation-speedup.md
// 8 bytes per parameter per micro-batch (about 50 ms of a 2.1 s step at 16
// micro-batches), which no framework pays.
Status Runner::provide_weight(TensorId id) {
  if (weights_[id.value]) return Status::success();
  const auto it = offset_.find(id.value);
  if (it == offset_.end() || (zero3_ && !gathered_))
    return make_error("parameter '{}' is not held by pipeline rank {}", g_.tensor(id).name, pp_rank_);
  Tensor w(tp().shape(id));
  std::copy(flat_w_.begin() + it->second, flat_w_.begin() + it->second + w.size(), w.data.begin());
  weights_[id.value] = std::move(w);
  return Status::success();
}

void Runner::drop_weights() {
  for (auto id : params_) weights_[id.value].reset();
}

// A tensor made by no op: a parameter (in weights_, not v), a constant or
// this chunk's rows of an input.
Status Runner::provide(Values& v, TensorId id, int mb) {
  const auto& t = g_.tensor(id);
  if (is_weight(id)) {
    return provide_weight(id);
  } else if (t.values) {
    PLANNER_TRY(Value c, runtime_cpu::constant_value(*t.values, t.shape, t.dtype, t.name));
    v[id.value] = std::move(c);
  } else if (const auto it = inputs_.find(id.value); it != inputs_.end()) {
    v[id.value] = slice_rows(it->second, t, static_cast<std::int64_t>(mb) * dp_ + dp_rank_);
  } else {
    return make_error("tensor '{}' has no value on pipeline rank {}", t.name, pp_rank_);
  }
  return Status::success();
}

Status Runner::forward(const plan::ScheduleStep& st, double& loss_sum) {
  auto& v = vals(st.micro_batch);
  const auto& ops = chunk_ops_[static_cast<std::size_t>(st.chunk)];
  for (std::size_t j = 0; j < ops.size(); ++j) {
    PLANNER_TRY_STATUS(run_op(ops[j], st.micro_batch));
    note_held();
    // Recompute: a group's dropped tensors go once its last op (or their
    // last reader) has run.
    for (const int gi : rc_.drops_after[ops[j].value]) drop_group(gi, st.micro_batch);
  }
  if (chunk_of_[g_.tensor(*loss_).producer->value] == st.chunk) {
    const Tensor* x = runtime_cpu::as_float(v[loss_->value] ? &*v[loss_->value] : nullptr);
    if (!x || x->size() != 1) return make_error("the loss '{}' is not a scalar", g_.tensor(*loss_).name);
    loss_sum += (*x)[0];
  }
  return Status::success();
}

// Forward of one op of micro-batch mb: its outputs stored in vals(mb).
Status Runner::run_op(graph::OpId oid, int mb) {
  auto& v = vals(mb);
  const graph::Op& op = g_.op(oid);
  std::vector<const Value*> in;
  std::vector<Value> keep;
  keep.reserve(op.inputs.size());
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const auto& t = op.inputs[i];
    if (!t) {
      in.push_back(nullptr);
      continue;
    }
    if (is_weight(*t) || !v[t->value]) PLANNER_TRY_STATUS(provide(v, *t, mb));
    in.push_back(port(v, oid, i, keep));
  }
  std::vector<runtime_cpu::OutputSpec> specs;
  for (std::size_t k = 0; k < op.outputs.size(); ++k) {
    const auto& t = op.outputs[k];
    if (!t) return make_error("op '{}' ({}): omitted outputs are not supported", op.name, op.type);
    const auto& x = g_.tensor(*t);
    specs.push_back({tp().out_shape(oid, k), x.dtype, x.values ? &*x.values : nullptr});
  }
  PLANNER_TRY(auto outs, timed(RealPhase::compute, [&] { return tp().forward(oid, in, specs); }));
  for (std::size_t k = 0; k < outs.size(); ++k) {
    // tp: a partial sum is all-reduced, a split read whole all-gathered;
    // the op's own output is kept for its backward.
    Value stored;
    PLANNER_TRY(const bool converted,
                timed(RealPhase::tp_comm, [&] { return tp().store_output(oid, k, outs[k], stored); }));
    auto& slot = v[op.outputs[k]->value];
    if (converted) {
      slot = std::move(stored);
      auto& m = made_[mb];
      if (m.empty()) m.resize(g_.num_tensors());
      m[op.outputs[k]->value] = std::move(outs[k]);
    } else {
      slot = std::move(outs[k]);
    }
  }
  return Status::success();
}

// Recompute: free group gi's inner tensors of micro-batch mb.
void Runner::drop_group(int gi, int mb) {
  auto& v = vals(mb);
  auto& m = made_[mb];
  for (TensorId t : rc_.groups[static_cast<std::size_t>(gi)].dropped) {
    v[t.value].reset();
    if (!m.empty()) m[t.value].reset();
  }
}

// Recompute: run group gi's ops forward again (their tp collectives too),
// counted once per tp group: ops and the unsharded ops' forward FLOPs.
Status Runner::recompute_group(int gi, int mb) {
  for (graph::OpId o : rc_.groups[static_cast<std::size_t>(gi)].ops) {
    PLANNER_TRY_STATUS(run_op(o, mb));
    note_held();
    if (tp_rank_ == 0) {
      ++recomputed_ops_;
      recomputed_flops_ += g_.op(o).cost.forward_flops.value;
    }
  }
  return Status::success();
}

// The activation bytes this rank holds now (every micro-batch's values
// and tp's outputs as made; parameters and constants not counted); keeps
// the peak.
void Runner::note_held() {
  double bytes = 0;
  const auto add = [&](const std::optional<Value>& x, std::uint32_t i) {
    if (!x) return;
    const auto& t = g_.tensor(TensorId{i});
    if (t.values || (t.role == graph::TensorRole::parameter && !t.producer)) return;
    if (const auto* f = std::get_if<Tensor>(&*x)) bytes += 4.0 * static_cast<double>(f->size());
    else bytes += 8.0 * static_cast<double>(std::get<IndexTensor>(*x).data.size());
  };
  for (const auto* m : {&values_, &made_})
    for (const auto& [mb, v] : *m)
      for (std::uint32_t i = 0; i < v.size(); ++i) add(v[i], i);
  peak_held_ = std::max(peak_held_, bytes);
}

Status Runner::backward(const plan::ScheduleStep& st) {
  auto& gr = grs(st.micro_batch);
  if (chunk_of_[g_.tensor(*loss_).producer->value] == st.chunk) {
    Tensor one(g_.tensor(*loss_).shape);
    std::fill(one.data.begin(), one.data.end(), 1.0f);
    gr[loss_->value] = std::move(one);
  }
  const auto& ops = chunk_ops_[static_cast<std::size_t>(st.chunk)];
  std::vector<int> live;  // recomputed groups whose dropped tensors are held again
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    // Before the op's backward: its own group, and the groups whose dropped
    // outputs it reads (a norm's or expert activation's reader).
    std::vector<int> need = rc_.reads_dropped[it->value];
    if (const int gi = rc_.group_of[it->value]; gi >= 0) need.push_back(gi);
    for (const int gi : need)
      if (std::find(live.begin(), live.end(), gi) == live.end()) {
        PLANNER_TRY_STATUS(recompute_group(gi, st.micro_batch));
        live.push_back(gi);
      }
    PLANNER_TRY_STATUS(backward_op(*it, st.micro_batch));
    // Past a group's first op, nothing reads what it dropped.
    if (const int gi = rc_.group_of[it->value];
        gi >= 0 && rc_.groups[static_cast<std::size_t>(gi)].ops.front() == *it) {
      drop_group(gi, st.micro_batch);
      std::erase(live, gi);
    }
  }
  for (const int gi : live) drop_group(gi, st.micro_batch);
  return accumulate_parameter_grads(st.micro_batch);
}

// Backward of one op of micro-batch mb: its output gradients (tp: finalized
// and cut to the op's block) in, its input gradients accumulated, whole or
// partial as tp says.
Status Runner::backward_op(graph::OpId oid, int mb) {
  auto& v = vals(mb);
  auto& gr = grs(mb);
  auto& gp = gps(mb);
  auto& made = made_[mb];
  const graph::Op& op = g_.op(oid);
  std::vector<const Tensor*> dout;
  std::vector<const Value*> outs;
  std::vector<Tensor> out_keep;
  out_keep.reserve(op.outputs.size());
  bool any = false;
  for (std::size_t k = 0; k < op.outputs.size(); ++k) {
    const auto id = op.outputs[k]->value;
    Timed comm(*this, RealPhase::tp_comm);
    PLANNER_TRY_STATUS(tp().finalize(gr[id], gp[id]));
    const Tensor* d = gr[id] ? &*gr[id] : nullptr;
    if (d) {
      PLANNER_TRY(auto b, tp().out_grad(oid, k, *d));
      if (b) {
        out_keep.push_back(std::move(*b));
        d = &out_keep.back();
      }
    }
    dout.push_back(d);
    const bool raw = !made.empty() && made[id];
    outs.push_back(raw ? &*made[id] : v[id] ? &*v[id] : nullptr);
    any = any || dout.back();
  }
  if (!any) return Status::success();
  std::vector<const Value*> in;
  std::vector<Value> keep;
  keep.reserve(op.inputs.size());
  std::vector<bool> needs;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const auto& t = op.inputs[i];
    if (t && (is_weight(*t) || !v[t->value])) PLANNER_TRY_STATUS(provide(v, *t, mb));
    in.push_back(t ? port(v, oid, i, keep) : nullptr);
    needs.push_back(t && needs_grad_[t->value]);
  }
  PLANNER_TRY(auto gin, timed(RealPhase::compute, [&] { return tp().backward(oid, in, outs, dout, needs); }));
  for (std::size_t k = 0; k < gin.size(); ++k) {
    if (!gin[k]) continue;
    using C = TpRank::Contribution;
    const C c = tp().contribution(oid, k);
    if (c == C::scatter) gin[k] = timed(RealPhase::tp_comm, [&] { return tp().scatter(oid, k, *gin[k]); });
    auto& slot = (c == C::whole ? gr : gp)[op.inputs[k]->value];
    if (slot) runtime_cpu::accumulate(*slot, *gin[k]);
    else slot = std::move(gin[k]);
  }
  return Status::success();
}

// Parameter gradients join the step's accumulator, micro-batch by micro-batch.
// A tp partial sum (a replicated weight of a split op) joins a partial
// accumulator instead, all-reduced once a step (reduce_partial_grads), as
// the plan's per-step gradient syncs say: the sum of the micro-batches'
// all-reduces is the all-reduce of their sum.
Status Runner::accumulate_parameter_grads(int mb) {
  auto& gr = grs(mb);
  auto& gp = gps(mb);
  const auto add = [](float* dst, const runtime_cpu::Tensor& x) {
    for (std::int64_t i = 0; i < x.size(); ++i) dst[i] += x[i];
  };
  for (auto id : params_) {
    auto& part = gp[id.value];
    if (part) {
      Timed t(*this, RealPhase::grad_accumulation);
      auto [it, fresh] = partial_at_.try_emplace(id.value, static_cast<std::int64_t>(grad_part_.size()), part->size());
      if (fresh) grad_part_.resize(grad_part_.size() + static_cast<std::size_t>(part->size()), 0.0f);
      add(grad_part_.data() + it->second.first, *part);
      part.reset();
    }
    auto& slot = gr[id.value];
    if (!slot) continue;
    Timed t(*this, RealPhase::grad_accumulation);
    add(grad_acc_.data() + offset_.at(id.value), *slot);
    slot.reset();
  }
  return Status::success();
}

// The step's tp partial parameter gradients: one all-reduce over the tp
// group for all of them (every tp rank met the same partial parameters in
// the same order: the layout decides which are partial), then added to the
// accumulator.
Status Runner::reduce_partial_grads() {
  if (grad_part_.empty()) return Status::success();
  {
    Timed t(*this, RealPhase::tp_comm);
    PLANNER_TRY_STATUS(tp().all_reduce(grad_part_));
  }
  Timed t(*this, RealPhase::grad_accumulation);
  for (const auto& [id, block] : partial_at_) {
    float* dst = grad_acc_.data() + offset_.at(id);
    const float* src = grad_part_.data() + block.first;
    for (std::int64_t i = 0; i < block.second; ++i) dst[i] += src[i];
  }
  std::fill(grad_part_.begin(), grad_part_.end(), 0.0f);
  return Status::success();
}

// A micro-batch's activations and gradients, freed after its last B step here.
void Runner::free_micro_batch(int mb) {
  values_.erase(mb);
  grads_.erase(mb);
  partials_.erase(mb);
  made_.erase(mb);
}

}  // namespace planner::executor::real_detail
