// The real execution mode (include/planner/executor/real.hpp,
// docs/executor.md "Real mode and --check").

#include "planner/executor/real.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "planner/executor/replay.hpp"
#include "planner/runtime_cpu/elementwise.hpp"
#include "planner/runtime_cpu/interpreter.hpp"
#include "planner/runtime_cpu/rng.hpp"
#include "real_check.hpp"
#include "real_data.hpp"
#include "real_recompute.hpp"
#include "real_tp.hpp"

namespace planner::executor {

namespace {

using graph::OpGraph;
using graph::TensorId;
using runtime_cpu::IndexTensor;
using runtime_cpu::Shape;
using runtime_cpu::Tensor;
using runtime_cpu::Value;
using namespace real_detail;  // NOLINT: the module's own helpers

constexpr int kTagAct = 0, kTagGrad = 1, kTagCheck = 5;

}  // namespace

runtime_cpu::InterpreterOptions real_interpreter_options(const plan::Plan& p) {
  return {.seed = p.training.seed, .stddev = kStddev};
}

runtime_cpu::OptimizerConfig real_optimizer(const plan::Plan& p) { return optimizer_of(p.training.optimizer); }

Status real_supported(const plan::Plan& p, const graph::OpGraph& g) {
  const auto& l = p.layout;
  const auto no = [&](std::string_view what) {
    return make_error("the real mode cannot run {} yet (it runs data, tensor and pipeline parallelism, ZeRO "
                      "0-3, recomputation and context parallelism without tp); --replay can time this plan",
                      what);
  };
  if (l.cp > 1 && l.tp > 1)
    return no(fmt::format("context parallelism with tensor parallelism (layout.cp = {}, layout.tp = {})", l.cp, l.tp));
  if (l.ep > 1) return no(fmt::format("expert parallelism (layout.ep = {})", l.ep));
  if (p.model.batch && *p.model.batch != p.training.micro_batch)
    return make_error("model.batch {} differs from training.micro_batch {}: the real mode runs the graph as one "
                      "micro-batch",
                      *p.model.batch, p.training.micro_batch);
  const auto& rc = p.training.recompute;
  if (rc != "none" && rc != "selective" && rc != "full")
    return make_error("training.recompute '{}' is none of none, selective, full", rc);
  for (const auto& op : g.ops())
    if (auto st = runtime_cpu::check_supported(op); !st)
      return make_error("the real mode cannot run {}; --replay can time this plan", st.error().message);
  const auto chunk_of = chunk_of_ops(p, g);
  for (std::size_t o = 0; o < g.num_ops(); ++o)
    if (chunk_of[o] < 0) return make_error("op '{}' of the model is in no chunk of layout.chunks", g.ops()[o].name);
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const auto& t = g.tensor(TensorId{i});
    if (t.producer) continue;
    if (t.role == graph::TensorRole::parameter) {
      if (t.dtype != graph::DType::f32)
        return make_error("parameter '{}' is {}: the real mode trains fp32 only", t.name, graph::dtype_name(t.dtype));
      std::set<int> stages;
      for (auto c : t.consumers) stages.insert(chunk_of[c.value] % l.pp);
      if (stages.size() > 1)
        return no(fmt::format("parameter '{}' read on pipeline ranks {} and {} (weights shared across stages)", t.name,
                              *stages.begin(), *stages.rbegin()));
    } else if (t.role == graph::TensorRole::input && !t.values) {
      if (t.shape.empty() && l.dp * p.training.micro_batches > 1)
        return make_error("graph input '{}' is a scalar: the real mode splits inputs along their first axis", t.name);
      if (!graph::is_floating(t.dtype) && !runtime_cpu::index_bound(g, TensorId{i}))
        return make_error("integer input '{}' indexes no Gather table or loss classes, so its range is unknown",
                          t.name);
    }
  }
  if (l.tp > 1) PLANNER_TRY_STATUS(derive_tp_layout(p, g));
  if (l.cp > 1) PLANNER_TRY_STATUS(derive_cp_layout(p, g));
  return Status::success();
}

namespace {

class Runner {
 public:
  Runner(const plan::Plan& p, const RankProgram& prog, const OpGraph& g, runtime::Communicator& world)
      : p_(p), prog_(prog), g_(g), world_(world) {}

  Status init() {
    const auto& l = p_.layout;
    rank_ = world_.rank();
    dp_ = l.dp;
    M_ = static_cast<int>(p_.training.micro_batches);
    C_ = static_cast<int>(l.chunks.size());
    pp_rank_ = coordinate(p_, rank_, "pp");
    dp_rank_ = coordinate(p_, rank_, "dp");
    // The group sharing an op's work: tp, or cp (the sequence; tp = 1).
    shard_axis_ = l.cp > 1 ? "cp" : "tp";
    tp_rank_ = coordinate(p_, rank_, shard_axis_);
    if (l.cp > 1) {
      PLANNER_TRY(tpl_, derive_cp_layout(p_, g_));
    } else {
      PLANNER_TRY(tpl_, derive_tp_layout(p_, g_));
    }
    tp_.emplace(tpl_, g_, tp_rank_, &world_);  // its group comes below, after the dp group
    seed_ = p_.training.seed;
    opt_ = optimizer_of(p_.training.optimizer);
    chunk_of_ = chunk_of_ops(p_, g_);
    for (const auto& c : l.chunks) {
      std::vector<graph::OpId> ops;
      for (const auto& name : c.ops) ops.push_back(*g_.find_op(name));
      chunk_ops_.push_back(std::move(ops));
    }
    PLANNER_TRY(rc_, plan_recompute(g_, p_.training.recompute, chunk_ops_));
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
        if (out && g_.tensor(*out).dtype == graph::DType::f32) needs_grad_[out->value] = any;
    }
    for (const auto& out : g_.graph_outputs)
      if (g_.tensor(out).name == "loss") loss_ = out;
    if (!loss_)
      for (const auto& out : g_.graph_outputs)
        if (g_.tensor(out).dtype == graph::DType::f32 && g_.tensor(out).numel() == 1) loss_ = out;
    if (!loss_) return make_error("the model has no scalar loss output");
    // Boundary c: tensors made in chunks <= c and read in chunks > c.
    boundary_.assign(static_cast<std::size_t>(std::max(C_ - 1, 0)), {});
    grad_boundary_ = boundary_;
    for (std::uint32_t i = 0; i < g_.num_tensors(); ++i) {
      const auto& t = g_.tensor(TensorId{i});
      if (!t.producer) continue;
      const int pc = chunk_of_[t.producer->value];
      int last = -1;
      for (auto c : t.consumers) last = std::max(last, chunk_of_[c.value]);
      for (int c = pc; c < last; ++c) {
        boundary_[static_cast<std::size_t>(c)].push_back(TensorId{i});
        if (t.dtype == graph::DType::f32 && needs_grad_[i]) grad_boundary_[static_cast<std::size_t>(c)].push_back(TensorId{i});
      }
    }
    // Parameters of this rank, flattened by name; the flat buffer is padded
    // to a multiple of dp so that reduce-scatter shares it evenly.
    params_ = stage_parameters(p_, g_, chunk_of_, pp_rank_);
    std::int64_t off = 0;
    for (auto id : params_) {
      offset_[id.value] = off;
      off += tp().numel(id);
    }
    flat_size_ = off;
    padded_ = (off + dp_ - 1) / dp_ * dp_;
    shard_ = padded_ / dp_;
    flat_w_.assign(static_cast<std::size_t>(padded_), 0.0f);
    for (auto id : params_) {
      const Tensor w = tp().shard(id, init_parameter(seed_, g_.tensor(id)));
      std::copy(w.data.begin(), w.data.end(), flat_w_.begin() + offset_[id.value]);
    }
    // The data-parallel group: the world when it is all of it.
    if (dp_ > 1) {
      if (dp_ == world_.size()) {
        dp_comm_ = &world_;
      } else {
        PLANNER_TRY(owned_dp_, world_.split(with_coordinate(p_, rank_, "dp", 0), rank_));
        dp_comm_ = owned_dp_.get();
      }
    }
    // The tensor-parallel group, split after the dp group on every rank.
    runtime::Communicator* tp_comm = &world_;
    if (tpl_.tp > 1 && tpl_.tp != world_.size()) {
      PLANNER_TRY(owned_tp_, world_.split(with_coordinate(p_, rank_, shard_axis_, 0), rank_));
      tp_comm = owned_tp_.get();
    }
    tp_.emplace(tpl_, g_, tp_rank_, tp_comm);
    zero3_ = l.zero == 3 && dp_ > 1;
    if (zero3_) shard_w_.assign(flat_w_.begin() + dp_rank_ * shard_, flat_w_.begin() + (dp_rank_ + 1) * shard_);
    if (zero3_) release_weights();
    inputs_ = draw_global_inputs(g_, seed_, static_cast<std::int64_t>(dp_) * M_);
    return Status::success();
  }

  /// One training step; returns the loss summed over this rank's micro-batches
  /// (0 on ranks without the loss).
  Status step(double& loss_sum) {
    values_.clear();
    grads_.clear();
    grad_acc_.assign(static_cast<std::size_t>(padded_), 0.0f);
    loss_sum = 0;
    recomputed_ops_ = recomputed_flops_ = 0;
    // A micro-batch's activations and gradients are freed after its last B step here.
    std::map<int, std::size_t> last_b;
    for (std::size_t i = 0; i < prog_.steps.size(); ++i)
      if (prog_.steps[i].step.kind == 'B') last_b[prog_.steps[i].step.micro_batch] = i;
    for (std::size_t i = 0; i < prog_.steps.size(); ++i) {
      const auto& sp = prog_.steps[i];
      const auto& st = sp.step;
      const Task* recv = nullptr;
      const Task* send = nullptr;
      for (const auto& t : sp.tasks) {
        if (t.kind == TaskKind::recv) recv = &t;
        if (t.kind == TaskKind::send) send = &t;
      }
      if (recv) PLANNER_TRY_STATUS(flush_sends(recv->order));
      if (st.kind == 'F') {
        if (recv) PLANNER_TRY_STATUS(receive_activations(st, *recv));
        if (zero3_) PLANNER_TRY_STATUS(gather_weights());
        PLANNER_TRY_STATUS(forward(st, loss_sum));
        if (send) queue_activations(st, *send);
      } else {
        if (recv) PLANNER_TRY_STATUS(receive_gradients(st, *recv));
        if (zero3_) PLANNER_TRY_STATUS(gather_weights());
        PLANNER_TRY_STATUS(backward(st));
        if (send) PLANNER_TRY_STATUS(queue_gradients(st, *send));
      }
      if (zero3_) {
        // Only the shard stays between uses: drop the gathered weights and
        // the copies the chunk's ops read (backward gathers them again).
        release_weights();
        auto& v = vals(st.micro_batch);
        for (auto id : params_) v[id.value].reset();
      }
      if (st.kind == 'B' && last_b[st.micro_batch] == i) {
        values_.erase(st.micro_batch);
        grads_.erase(st.micro_batch);
        partials_.erase(st.micro_batch);
        made_.erase(st.micro_batch);
      }
    }
    PLANNER_TRY_STATUS(flush_sends(-1));
    return sync_and_update();
  }

  /// The gradients (scaled) and weights of this rank's parameters, whole:
  /// gathered over dp when sharded. Every member of the dp group calls it.
  Status full_state(std::vector<float>& grad, std::vector<float>& w) {
    grad = grad_full_;
    if ((l().zero >= 1 || l().distributed_optimizer) && dp_ > 1) {
      grad.assign(static_cast<std::size_t>(padded_), 0.0f);
      PLANNER_TRY_STATUS(dp_comm_->all_gather(grad_shard_.data(), grad.data(), static_cast<std::size_t>(shard_),
                                              runtime::DType::f32));
    }
    if (zero3_) {
      PLANNER_TRY_STATUS(gather_weights());
      w = flat_w_;
      release_weights();
    } else {
      w = flat_w_;
    }
    if (tpl_.tp > 1) {  // whole tensors from the tp (cp) shares (a tp collective each)
      std::vector<float> local;
      local.swap(grad);
      PLANNER_TRY_STATUS(tp().gather_full(params_, local, grad));
      local.swap(w);
      PLANNER_TRY_STATUS(tp().gather_full(params_, local, w));
    }
    return Status::success();
  }

  bool holds_loss() const {
    return chunk_of_[g_.tensor(*loss_).producer->value] % l().pp == pp_rank_ && tp_rank_ == 0;
  }
  int dp_rank() const { return dp_rank_; }
  /// Recompute: ops run again in the last step and their unsharded forward
  /// FLOPs (0 on tp ranks other than 0); the activation bytes held at peak.
  double recomputed_ops() const { return recomputed_ops_; }
  double recomputed_flops() const { return recomputed_flops_; }
  double peak_held_bytes() const { return peak_held_; }
  int pp_rank() const { return pp_rank_; }
  const std::vector<int>& chunk_of() const { return chunk_of_; }
  const runtime_cpu::OptimizerConfig& optimizer() const { return opt_; }

 private:
  const plan::Layout& l() const { return p_.layout; }
  int peer_rank(int peer_pp) const { return with_coordinate(p_, rank_, "pp", peer_pp); }

  std::vector<std::optional<Value>>& vals(int mb) {
    auto& v = values_[mb];
    if (v.empty()) v.resize(g_.num_tensors());
    return v;
  }
  std::vector<std::optional<Tensor>>& grs(int mb) {
    auto& v = grads_[mb];
    if (v.empty()) v.resize(g_.num_tensors());
    return v;
  }
  // Partial-sum gradients (tp) not yet all-reduced.
  std::vector<std::optional<Tensor>>& gps(int mb) {
    auto& v = partials_[mb];
    if (v.empty()) v.resize(g_.num_tensors());
    return v;
  }
  real_detail::TpRank& tp() { return *tp_; }
  const real_detail::TpRank& tp() const { return *tp_; }
  // The value op `o` reads at input port i: the stored one, or its tp block.
  const Value* port(std::vector<std::optional<Value>>& v, graph::OpId o, std::size_t i, std::vector<Value>& keep) {
    const TensorId id = *g_.op(o).inputs[i];
    if (auto b = tp().port_input(o, i, *v[id.value])) {
      keep.push_back(std::move(*b));
      return &keep.back();
    }
    return &*v[id.value];
  }

  // A tensor made by no op: a parameter, a constant or this chunk's rows of an input.
  Status provide(std::vector<std::optional<Value>>& v, TensorId id, int mb) {
    const auto& t = g_.tensor(id);
    if (t.role == graph::TensorRole::parameter && !t.producer) {
      const auto it = offset_.find(id.value);
      if (it == offset_.end() || (zero3_ && !gathered_))
        return make_error("parameter '{}' is not held by pipeline rank {}", t.name, pp_rank_);
      Tensor w(tp().shape(id));
      std::copy(flat_w_.begin() + it->second, flat_w_.begin() + it->second + w.size(), w.data.begin());
      v[id.value] = std::move(w);
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

  Status forward(const plan::ScheduleStep& st, double& loss_sum) {
    auto& v = vals(st.micro_batch);
    const auto& ops = chunk_ops_[static_cast<std::size_t>(st.chunk)];
    for (std::size_t j = 0; j < ops.size(); ++j) {
      PLANNER_TRY_STATUS(run_op(ops[j], st.micro_batch));
      note_held();
      // Recompute: a group's inner tensors go once its last op has run.
      const int gi = rc_.group_of[ops[j].value];
      if (gi >= 0 && (j + 1 == ops.size() || rc_.group_of[ops[j + 1].value] != gi)) drop_group(gi, st.micro_batch);
    }
    if (chunk_of_[g_.tensor(*loss_).producer->value] == st.chunk) {
      const Tensor* x = runtime_cpu::as_float(v[loss_->value] ? &*v[loss_->value] : nullptr);
      if (!x || x->size() != 1) return make_error("the loss '{}' is not a scalar", g_.tensor(*loss_).name);
      loss_sum += (*x)[0];
    }
    return Status::success();
  }

  // Forward of one op of micro-batch mb: its outputs stored in vals(mb).
  Status run_op(graph::OpId oid, int mb) {
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
      if (!v[t->value] || (g_.tensor(*t).role == graph::TensorRole::parameter && !g_.tensor(*t).producer))
        PLANNER_TRY_STATUS(provide(v, *t, mb));
      in.push_back(port(v, oid, i, keep));
    }
    std::vector<runtime_cpu::OutputSpec> specs;
    for (std::size_t k = 0; k < op.outputs.size(); ++k) {
      const auto& t = op.outputs[k];
      if (!t) return make_error("op '{}' ({}): omitted outputs are not supported", op.name, op.type);
      const auto& x = g_.tensor(*t);
      specs.push_back({tp().out_shape(oid, k), x.dtype, x.values ? &*x.values : nullptr});
    }
    PLANNER_TRY(auto outs, tp().forward(oid, in, specs));
    for (std::size_t k = 0; k < outs.size(); ++k) {
      // tp: a partial sum is all-reduced, a split read whole all-gathered;
      // the op's own output is kept for its backward.
      Value stored;
      PLANNER_TRY(const bool converted, tp().store_output(oid, k, outs[k], stored));
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
  void drop_group(int gi, int mb) {
    auto& v = vals(mb);
    auto& m = made_[mb];
    for (TensorId t : rc_.groups[static_cast<std::size_t>(gi)].dropped) {
      v[t.value].reset();
      if (!m.empty()) m[t.value].reset();
    }
  }

  // Recompute: run group gi's ops forward again (their tp collectives too),
  // counted once per tp group: ops and the unsharded ops' forward FLOPs.
  Status recompute_group(int gi, int mb) {
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
  void note_held() {
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

  Status backward(const plan::ScheduleStep& st) {
    auto& v = vals(st.micro_batch);
    auto& gr = grs(st.micro_batch);
    if (chunk_of_[g_.tensor(*loss_).producer->value] == st.chunk) {
      Tensor one(g_.tensor(*loss_).shape);
      std::fill(one.data.begin(), one.data.end(), 1.0f);
      gr[loss_->value] = std::move(one);
    }
    const auto& ops = chunk_ops_[static_cast<std::size_t>(st.chunk)];
    auto& gp = gps(st.micro_batch);
    auto& made = made_[st.micro_batch];
    int live = -1;  // the recomputed group whose inner tensors are held
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      const graph::OpId oid = *it;
      const graph::Op& op = g_.op(oid);
      if (const int gi = rc_.group_of[oid.value]; gi != live) {
        if (live >= 0) drop_group(live, st.micro_batch);
        live = gi;
        if (gi >= 0) PLANNER_TRY_STATUS(recompute_group(gi, st.micro_batch));
      }
      std::vector<const Tensor*> dout;
      std::vector<const Value*> outs;
      std::vector<Tensor> out_keep;
      out_keep.reserve(op.outputs.size());
      bool any = false;
      for (std::size_t k = 0; k < op.outputs.size(); ++k) {
        const auto id = op.outputs[k]->value;
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
      if (!any) continue;
      std::vector<const Value*> in;
      std::vector<Value> keep;
      keep.reserve(op.inputs.size());
      std::vector<bool> needs;
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        const auto& t = op.inputs[i];
        if (t && !v[t->value]) PLANNER_TRY_STATUS(provide(v, *t, st.micro_batch));
        in.push_back(t ? port(v, oid, i, keep) : nullptr);
        needs.push_back(t && needs_grad_[t->value]);
      }
      PLANNER_TRY(auto gin, tp().backward(oid, in, outs, dout, needs));
      for (std::size_t k = 0; k < gin.size(); ++k) {
        if (!gin[k]) continue;
        using C = real_detail::TpRank::Contribution;
        const C c = tp().contribution(oid, k);
        if (c == C::scatter) gin[k] = tp().scatter(oid, k, *gin[k]);
        auto& slot = (c == C::whole ? gr : gp)[op.inputs[k]->value];
        if (slot) runtime_cpu::accumulate(*slot, *gin[k]);
        else slot = std::move(gin[k]);
      }
    }
    if (live >= 0) drop_group(live, st.micro_batch);
    // Parameter gradients join the step's accumulator, micro-batch by micro-batch.
    for (auto id : params_) {
      PLANNER_TRY_STATUS(tp().finalize(gr[id.value], gp[id.value]));
      auto& slot = gr[id.value];
      if (!slot) continue;
      float* dst = grad_acc_.data() + offset_.at(id.value);
      for (std::int64_t i = 0; i < slot->size(); ++i) dst[i] += (*slot)[i];
      slot.reset();
    }
    return Status::success();
  }

  // Transfers: float tensors as their words, integer ones as raw 8-byte words
  // (two f32 words each; send and recv never look at the bits).
  std::int64_t words(TensorId id) const {
    return g_.tensor(id).dtype == graph::DType::f32 ? tp().numel(id) : 2 * tp().numel(id);
  }

  void queue_activations(const plan::ScheduleStep& st, const Task& send) {
    auto& v = vals(st.micro_batch);
    std::vector<float> buf;
    for (TensorId id : boundary_[static_cast<std::size_t>(st.chunk)]) {
      const Value& x = *v[id.value];
      if (const auto* f = std::get_if<Tensor>(&x)) buf.insert(buf.end(), f->data.begin(), f->data.end());
      else {
        const auto& ix = std::get<IndexTensor>(x);
        const std::size_t at = buf.size();
        buf.resize(at + 2 * ix.data.size());
        std::memcpy(buf.data() + at, ix.data.data(), ix.data.size() * sizeof(std::int64_t));
      }
    }
    sends_.push_back({send.order, peer_rank(send.peer_pp), kTagAct, std::move(buf)});
  }

  Status receive_activations(const plan::ScheduleStep& st, const Task& recv) {
    const auto& list = boundary_[static_cast<std::size_t>(st.chunk - 1)];
    std::int64_t n = 0;
    for (TensorId id : list) n += words(id);
    std::vector<float> buf(static_cast<std::size_t>(n));
    PLANNER_TRY_STATUS(world_.recv(buf.data(), buf.size(), runtime::DType::f32, peer_rank(recv.peer_pp), kTagAct));
    auto& v = vals(st.micro_batch);
    std::int64_t at = 0;
    for (TensorId id : list) {
      const auto& t = g_.tensor(id);
      const auto shape = tp().shape(id);
      const auto n = runtime_cpu::numel(shape);
      if (t.dtype == graph::DType::f32) {
        v[id.value] = Tensor(shape, std::vector<float>(buf.begin() + at, buf.begin() + at + n));
      } else {
        IndexTensor ix{shape, std::vector<std::int64_t>(static_cast<std::size_t>(n))};
        std::memcpy(ix.data.data(), buf.data() + at, ix.data.size() * sizeof(std::int64_t));
        v[id.value] = std::move(ix);
      }
      at += words(id);
    }
    return Status::success();
  }

  Status queue_gradients(const plan::ScheduleStep& st, const Task& send) {
    auto& gr = grs(st.micro_batch);
    auto& gp = gps(st.micro_batch);
    std::vector<float> buf;
    for (TensorId id : grad_boundary_[static_cast<std::size_t>(st.chunk - 1)]) {
      PLANNER_TRY_STATUS(tp().finalize(gr[id.value], gp[id.value]));
      if (gr[id.value]) buf.insert(buf.end(), gr[id.value]->data.begin(), gr[id.value]->data.end());
      else buf.resize(buf.size() + static_cast<std::size_t>(tp().numel(id)), 0.0f);
    }
    sends_.push_back({send.order, peer_rank(send.peer_pp), kTagGrad, std::move(buf)});
    return Status::success();
  }

  Status receive_gradients(const plan::ScheduleStep& st, const Task& recv) {
    const auto& list = grad_boundary_[static_cast<std::size_t>(st.chunk)];
    std::int64_t n = 0;
    for (TensorId id : list) n += tp().numel(id);
    std::vector<float> buf(static_cast<std::size_t>(n));
    PLANNER_TRY_STATUS(world_.recv(buf.data(), buf.size(), runtime::DType::f32, peer_rank(recv.peer_pp), kTagGrad));
    auto& gr = grs(st.micro_batch);
    std::int64_t at = 0;
    for (TensorId id : list) {
      const auto n_id = tp().numel(id);
      Tensor x(tp().shape(id), std::vector<float>(buf.begin() + at, buf.begin() + at + n_id));
      if (gr[id.value]) runtime_cpu::accumulate(*gr[id.value], x);
      else gr[id.value] = std::move(x);
      at += n_id;
    }
    return Status::success();
  }

  // Deferred sends ordered before `before` (all when -1), as the replay does.
  Status flush_sends(std::int64_t before) {
    while (!sends_.empty() && (before < 0 || sends_.front().order < before)) {
      auto& s = sends_.front();
      PLANNER_TRY_STATUS(world_.send(s.buf.data(), s.buf.size(), runtime::DType::f32, s.peer, s.tag));
      sends_.pop_front();
    }
    return Status::success();
  }

  Status gather_weights() {
    flat_w_.assign(static_cast<std::size_t>(padded_), 0.0f);
    PLANNER_TRY_STATUS(dp_comm_->all_gather(shard_w_.data(), flat_w_.data(), static_cast<std::size_t>(shard_),
                                            runtime::DType::f32));
    gathered_ = true;
    return Status::success();
  }
  void release_weights() {
    std::vector<float>().swap(flat_w_);
    gathered_ = false;
  }

  Status sync_and_update() {
    const float scale = 1.0f / static_cast<float>(static_cast<std::int64_t>(dp_) * M_);
    if ((l().zero == 0 && !l().distributed_optimizer) || dp_ == 1) {
      if (dp_ > 1)
        PLANNER_TRY_STATUS(dp_comm_->all_reduce(grad_acc_.data(), grad_acc_.size(), runtime::DType::f32,
                                                runtime::ReduceOp::sum));
      for (auto& x : grad_acc_) x *= scale;
      grad_full_ = grad_acc_;
      optimizer_step(opt_, flat_w_, grad_full_, state_);
      return Status::success();
    }
    // ZeRO: reduce-scatter the gradients, update this rank's shard of the
    // weights and optimizer state, all-gather the weights (ZeRO-3: keep the shard).
    grad_shard_.assign(static_cast<std::size_t>(shard_), 0.0f);
    PLANNER_TRY_STATUS(dp_comm_->reduce_scatter(grad_acc_.data(), grad_shard_.data(), static_cast<std::size_t>(shard_),
                                                runtime::DType::f32, runtime::ReduceOp::sum));
    for (auto& x : grad_shard_) x *= scale;
    std::span<float> w = zero3_ ? std::span<float>(shard_w_)
                                : std::span<float>(flat_w_).subspan(static_cast<std::size_t>(dp_rank_ * shard_),
                                                                    static_cast<std::size_t>(shard_));
    optimizer_step(opt_, w, grad_shard_, state_);
    if (!zero3_) {
      std::vector<float> mine(w.begin(), w.end());
      PLANNER_TRY_STATUS(dp_comm_->all_gather(mine.data(), flat_w_.data(), static_cast<std::size_t>(shard_),
                                              runtime::DType::f32));
    }
    return Status::success();
  }

  struct PendingSend {
    std::int64_t order;
    int peer, tag;
    std::vector<float> buf;
  };

  const plan::Plan& p_;
  const RankProgram& prog_;
  const OpGraph& g_;
  runtime::Communicator& world_;
  int rank_ = 0, dp_ = 1, M_ = 1, C_ = 1, pp_rank_ = 0, dp_rank_ = 0, tp_rank_ = 0;  // tp_rank_: in the tp or cp group
  const char* shard_axis_ = "tp";
  std::uint64_t seed_ = 0;
  runtime_cpu::OptimizerConfig opt_;
  std::vector<int> chunk_of_;
  std::vector<std::vector<graph::OpId>> chunk_ops_;
  std::vector<bool> needs_grad_;
  std::optional<TensorId> loss_;
  std::vector<std::vector<TensorId>> boundary_, grad_boundary_;
  std::vector<TensorId> params_;
  std::map<std::uint32_t, std::int64_t> offset_;
  std::int64_t flat_size_ = 0, padded_ = 0, shard_ = 0;
  std::vector<float> flat_w_, shard_w_, grad_acc_, grad_full_, grad_shard_;
  bool zero3_ = false, gathered_ = true;
  runtime_cpu::OptimState state_;
  runtime::Communicator* dp_comm_ = nullptr;
  std::unique_ptr<runtime::Communicator> owned_dp_, owned_tp_;
  real_detail::TpLayout tpl_;
  std::optional<real_detail::TpRank> tp_;
  std::map<std::uint32_t, Value> inputs_;
  std::map<int, std::vector<std::optional<Value>>> values_;
  std::map<int, std::vector<std::optional<Tensor>>> grads_, partials_;
  std::map<int, std::vector<std::optional<Value>>> made_;  // tp: outputs as made, when stored converted
  std::deque<PendingSend> sends_;
  RecomputePlan rc_;
  double recomputed_ops_ = 0, recomputed_flops_ = 0, peak_held_ = 0;
};

}  // namespace

Result<RealResult> run_real(const plan::Plan& p, const RankProgram& prog, const graph::OpGraph& micro_graph,
                            runtime::Communicator& world, const RealOptions& opts) {
  PLANNER_TRY_STATUS(real_supported(p, micro_graph));
  const int rank = world.rank();
  const bool checking = opts.check && rank == 0;
  std::optional<Reference> ref;
  if (checking) {
    PLANNER_TRY(auto it, runtime_cpu::Interpreter::create(micro_graph, {.seed = p.training.seed, .stddev = kStddev}));
    ref.emplace(std::move(it), p, micro_graph);
  }
  Runner run(p, prog, micro_graph, world);
  PLANNER_TRY_STATUS(run.init());
  // Every stage's parameters, for rank 0 to read the gathered state.
  std::vector<std::vector<TensorId>> stage_params;
  for (int s = 0; s < p.layout.pp; ++s) stage_params.push_back(stage_parameters(p, micro_graph, run.chunk_of(), s));
  const double chunks = static_cast<double>(p.layout.dp) * static_cast<double>(p.training.micro_batches);

  RealResult out;
  const int total = opts.warmup + opts.steps;
  for (int step = 1; step <= total; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    double local_loss = 0;
    PLANNER_TRY_STATUS(run.step(local_loss));
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The step's loss (mean over the global batch) and time (max over ranks).
    float loss = run.holds_loss() ? static_cast<float>(local_loss) : 0.0f;
    PLANNER_TRY_STATUS(world.all_reduce(&loss, 1, runtime::DType::f32, runtime::ReduceOp::sum));
    float t = static_cast<float>(dt);
    PLANNER_TRY_STATUS(world.all_reduce(&t, 1, runtime::DType::f32, runtime::ReduceOp::max));
    out.losses.push_back(static_cast<double>(loss) / chunks);
    if (step > opts.warmup) out.step_times_s.push_back(t);
    if (!opts.check || step > kMaxCheckedSteps) continue;

    // --check: every stage's dp-rank-0 member sends its whole state to rank 0.
    std::vector<float> grad, w;
    PLANNER_TRY_STATUS(run.full_state(grad, w));
    std::vector<std::vector<float>> stage_grad(static_cast<std::size_t>(p.layout.pp)), stage_w = stage_grad;
    if (rank == 0) {
      stage_grad[0] = grad, stage_w[0] = w;
      for (int s = 1; s < p.layout.pp; ++s) {
        std::int64_t n = 0;
        for (auto id : stage_params[static_cast<std::size_t>(s)]) n += micro_graph.tensor(id).numel();
        const int src = with_coordinate(p, 0, "pp", s);
        auto& sg = stage_grad[static_cast<std::size_t>(s)];
        auto& sw = stage_w[static_cast<std::size_t>(s)];
        sg.resize(static_cast<std::size_t>(n)), sw.resize(static_cast<std::size_t>(n));
        PLANNER_TRY_STATUS(world.recv(sg.data(), sg.size(), runtime::DType::f32, src, kTagCheck));
        PLANNER_TRY_STATUS(world.recv(sw.data(), sw.size(), runtime::DType::f32, src, kTagCheck));
      }
    } else if (run.dp_rank() == 0 && coordinate(p, rank, "tp") == 0 && coordinate(p, rank, "cp") == 0) {
      std::int64_t n = 0;
      for (auto id : stage_params[static_cast<std::size_t>(run.pp_rank())]) n += micro_graph.tensor(id).numel();
      PLANNER_TRY_STATUS(world.send(grad.data(), static_cast<std::size_t>(n), runtime::DType::f32, 0, kTagCheck));
      PLANNER_TRY_STATUS(world.send(w.data(), static_cast<std::size_t>(n), runtime::DType::f32, 0, kTagCheck));
    }
    float verdict = 0;
    if (rank == 0) {
      // The reference's step from the run's weights, its optimizer on the
      // run's gradients; then the next step starts from the run's weights.
      PLANNER_TRY(auto r, ref->step(by_name(micro_graph, stage_params, stage_grad)));
      CheckedStep cs;
      const std::string failure =
          compare_step(p, micro_graph, stage_params, stage_grad, stage_w, r, step, out.losses.back(), opts.tolerance, cs);
      out.checked.push_back(cs);
      if (!failure.empty()) {
        out.check_failure = failure;
        verdict = 1;
      } else {
        PLANNER_TRY_STATUS(ref->sync(by_name(micro_graph, stage_params, stage_w)));
      }
    }
    PLANNER_TRY_STATUS(world.broadcast(&verdict, 1, runtime::DType::f32, 0));
    if (verdict != 0) {
      if (out.check_failure.empty()) out.check_failure = "--check failed (rank 0 prints why)";
      return out;
    }
  }
  // Peak RSS and peak activations of every rank (as the replay reports it),
  // the recomputed work of the last step summed over ranks.
  float mine[2] = {static_cast<float>(peak_rss_bytes()), static_cast<float>(run.peak_held_bytes())};
  std::vector<float> all(2 * static_cast<std::size_t>(world.size()));
  PLANNER_TRY_STATUS(world.all_gather(mine, all.data(), 2, runtime::DType::f32));
  for (std::size_t r = 0; r < all.size(); r += 2) {
    out.peak_rss_bytes.push_back(all[r]);
    out.peak_activation_bytes.push_back(all[r + 1]);
  }
  // (doubles gathered as their raw bits, two f32 words each: exact sums)
  const double work[2] = {run.recomputed_ops(), run.recomputed_flops()};
  std::vector<double> works(2 * static_cast<std::size_t>(world.size()));
  PLANNER_TRY_STATUS(world.all_gather(work, works.data(), 4, runtime::DType::f32));
  for (std::size_t r = 0; r < works.size(); r += 2) {
    out.recomputed_ops_per_step += works[r];
    out.recomputed_flops_per_step += works[r + 1];
  }
  return out;
}

}  // namespace planner::executor
