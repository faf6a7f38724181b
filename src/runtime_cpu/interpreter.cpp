#include "planner/runtime_cpu/interpreter.hpp"

#include <algorithm>
#include <deque>

#include "planner/runtime_cpu/elementwise.hpp"
#include "planner/runtime_cpu/rng.hpp"

namespace planner::runtime_cpu {

namespace {

using graph::OpGraph;
using graph::TensorId;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// The graph output holding the loss.
Result<TensorId> find_loss(const OpGraph& g) {
  for (TensorId t : g.graph_outputs)
    if (g.tensor(t).name == "loss") return t;
  std::optional<TensorId> only;
  for (TensorId t : g.graph_outputs) {
    const auto& x = g.tensor(t);
    if (x.dtype == core::DType::f32 && x.numel() == 1) {
      if (only) return make_error("the graph has several scalar outputs and none is named 'loss'");
      only = t;
    }
  }
  if (!only) return make_error("the graph has no scalar fp32 output to train on (a 'loss')");
  return *only;
}


}  // namespace

std::optional<std::int64_t> index_bound(const OpGraph& g, TensorId input) {
  std::optional<std::int64_t> bound;
  std::deque<TensorId> todo{input};
  std::vector<bool> seen(g.num_tensors(), false);
  while (!todo.empty()) {
    const TensorId t = todo.front();
    todo.pop_front();
    if (seen[t.value]) continue;
    seen[t.value] = true;
    for (graph::OpId oid : g.tensor(t).consumers) {
      const graph::Op& op = g.op(oid);
      const auto slot = std::find(op.inputs.begin(), op.inputs.end(), std::optional<TensorId>(t)) - op.inputs.begin();
      std::optional<std::int64_t> b;
      if (op.type == "Gather" && slot == 1 && op.inputs[0]) {
        const auto& data = g.tensor(*op.inputs[0]).shape;
        const std::int64_t a = op.attr_int("axis").value_or(0);
        const auto r = static_cast<std::int64_t>(data.size());
        if (a >= -r && a < r) b = data[static_cast<std::size_t>(a < 0 ? a + r : a)];
      } else if (op.type == "SoftmaxCrossEntropyLoss" && slot == 1 && op.inputs[0]) {
        const auto& scores = g.tensor(*op.inputs[0]).shape;
        if (scores.size() >= 2) b = scores[1];
      } else if ((op.type == "Reshape" || op.type == "Flatten" || op.type == "Squeeze" || op.type == "Unsqueeze" ||
                  op.type == "Identity") &&
                 slot == 0 && !op.outputs.empty() && op.outputs[0]) {
        todo.push_back(*op.outputs[0]);
      }
      if (b) bound = bound ? std::min(*bound, *b) : *b;
    }
  }
  return bound;
}

Result<Interpreter> Interpreter::create(const graph::OpGraph& g, const InterpreterOptions& opt) {
  Interpreter it(g);
  PLANNER_TRY_STATUS(it.init(opt));
  return it;
}

Status Interpreter::init(const InterpreterOptions& opt) {
  const OpGraph& g = *g_;
  PLANNER_TRY(order_, g.topological_order());
  PLANNER_TRY(loss_, find_loss(g));
  for (const auto& op : g.ops()) PLANNER_TRY_STATUS(check_supported(op));
  values_.assign(g.num_tensors(), std::nullopt);
  needs_grad_.assign(g.num_tensors(), false);
  for (std::uint32_t i = 0; i < g.num_tensors(); ++i) {
    const graph::Tensor& t = g.tensor(TensorId{i});
    if (t.producer) continue;
    const bool is_float = t.dtype == core::DType::f32;
    if (t.role == graph::TensorRole::parameter) {
      if (!is_float) return make_error("parameter '{}' is {}; the CPU kernels train fp32 only", t.name, core::dtype_name(t.dtype));
      const bool bias = t.shape.size() == 1 && ends_with(t.name, ".bias");
      const bool scale = t.shape.size() == 1 && !bias;
      Tensor w = normal_tensor(opt.seed, t.name, t.shape, 0.0f,
                               (bias || scale) && !opt.jitter ? 0.0f : opt.stddev);
      if (scale)
        for (auto& v : w.data) v += 1.0f;
      values_[i] = std::move(w);
      needs_grad_[i] = true;
      params_.emplace(t.name, TensorId{i});
    } else if (t.values) {
      PLANNER_TRY(Value v, constant_value(*t.values, t.shape, t.dtype, t.name));
      values_[i] = std::move(v);
    } else if (t.role == graph::TensorRole::input) {
      if (is_float) {
        values_[i] = normal_tensor(opt.seed, t.name, t.shape, 0.0f, 1.0f);
      } else {
        auto bound = index_bound(g, TensorId{i});
        if (!bound || *bound < 1)
          return make_error("integer input '{}' indexes no Gather table or loss classes, so its range is unknown", t.name);
        values_[i] = uniform_indices(opt.seed, t.name, t.shape, *bound);
      }
    } else if (!t.consumers.empty()) {
      return make_error("constant '{}' has no values (external data, or more than {} elements)", t.name,
                        graph::kMaxConstantValues);
    }
  }
  for (graph::OpId oid : order_) {
    const graph::Op& op = g.op(oid);
    bool any = false;
    for (const auto& in : op.inputs) any = any || (in && needs_grad_[in->value]);
    for (const auto& out : op.outputs)
      if (out && g.tensor(*out).dtype == core::DType::f32) needs_grad_[out->value] = any;
  }
  if (!needs_grad_[loss_.value]) return make_error("the loss '{}' depends on no parameter", g.tensor(loss_).name);
  return Status::success();
}

Result<double> Interpreter::forward() {
  const OpGraph& g = *g_;
  for (graph::OpId oid : order_) {
    const graph::Op& op = g.op(oid);
    std::vector<const Value*> in;
    for (const auto& t : op.inputs) {
      if (!t) {
        in.push_back(nullptr);
        continue;
      }
      if (!values_[t->value])
        return make_error("op '{}' ({}) reads '{}', which has no value", op.name, op.type, g.tensor(*t).name);
      in.push_back(&*values_[t->value]);
    }
    std::vector<OutputSpec> specs;
    for (const auto& t : op.outputs) {
      if (!t) return make_error("op '{}' ({}): omitted outputs are not supported", op.name, op.type);
      const graph::Tensor& x = g.tensor(*t);
      specs.push_back(OutputSpec{x.shape, x.dtype, x.values ? &*x.values : nullptr});
    }
    PLANNER_TRY(auto outs, forward_op(op, in, specs));
    for (std::size_t k = 0; k < outs.size(); ++k) values_[op.outputs[k]->value] = std::move(outs[k]);
  }
  const Tensor* loss = as_float(values_[loss_.value] ? &*values_[loss_.value] : nullptr);
  if (!loss || loss->size() != 1) return make_error("the loss '{}' is not a scalar", g.tensor(loss_).name);
  return static_cast<double>((*loss)[0]);
}

Result<std::map<std::string, Tensor>> Interpreter::backward() {
  const OpGraph& g = *g_;
  std::vector<std::optional<Tensor>> grads(g.num_tensors());
  {
    Tensor seed(g.tensor(loss_).shape);
    std::fill(seed.data.begin(), seed.data.end(), 1.0f);
    grads[loss_.value] = std::move(seed);
  }
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const graph::Op& op = g.op(*it);
    std::vector<const Tensor*> dout;
    std::vector<const Value*> outs;
    bool any = false;
    for (const auto& t : op.outputs) {
      dout.push_back(grads[t->value] ? &*grads[t->value] : nullptr);
      outs.push_back(values_[t->value] ? &*values_[t->value] : nullptr);
      any = any || dout.back();
    }
    if (!any) continue;
    std::vector<const Value*> in;
    std::vector<bool> needs;
    for (const auto& t : op.inputs) {
      in.push_back(t && values_[t->value] ? &*values_[t->value] : nullptr);
      needs.push_back(t && needs_grad_[t->value]);
    }
    PLANNER_TRY(auto gin, backward_op(op, in, outs, dout, needs));
    for (std::size_t k = 0; k < gin.size(); ++k) {
      if (!gin[k]) continue;
      auto& slot = grads[op.inputs[k]->value];
      if (slot) accumulate(*slot, *gin[k]);
      else slot = std::move(gin[k]);
    }
  }
  std::map<std::string, Tensor> out;
  for (const auto& [name, id] : params_)
    out.emplace(name, grads[id.value] ? std::move(*grads[id.value]) : Tensor(g.tensor(id).shape));
  return out;
}

Result<StepResult> Interpreter::train_step(const OptimizerConfig& optimizer) {
  StepResult r;
  PLANNER_TRY(r.loss, forward());
  PLANNER_TRY(r.gradients, backward());
  for (const auto& [name, id] : params_) {
    Tensor& w = std::get<Tensor>(*values_[id.value]);
    const Tensor& gr = r.gradients.at(name);
    OptimState& st = optim_[name];
    if (const auto* sgd = std::get_if<SgdConfig>(&optimizer)) sgd_step(*sgd, w.span(), gr.span(), st);
    else adamw_step(std::get<AdamWConfig>(optimizer), w.span(), gr.span(), st);
    r.weights.emplace(name, w);
  }
  return r;
}

std::vector<std::string> Interpreter::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& [name, id] : params_) names.push_back(name);
  return names;
}

Tensor* Interpreter::parameter(std::string_view name) {
  auto it = params_.find(name);
  if (it == params_.end()) return nullptr;
  return &std::get<Tensor>(*values_[it->second.value]);
}

Status Interpreter::set_input(std::string_view name, Value v) {
  for (graph::TensorId id : g_->graph_inputs) {
    const graph::Tensor& t = g_->tensor(id);
    if (t.name != name || t.role != graph::TensorRole::input || t.values) continue;
    const bool is_float = std::holds_alternative<Tensor>(v);
    if (is_float != (t.dtype == core::DType::f32) || value_shape(v) != t.shape)
      return make_error("input '{}': the value given is {} {}, the graph's {} {}", t.name, is_float ? "f32" : "int64",
                        shape_str(value_shape(v)), core::dtype_name(t.dtype), shape_str(t.shape));
    values_[id.value] = std::move(v);
    return Status::success();
  }
  return make_error("'{}' is not a graph input", name);
}

const Value* Interpreter::value(graph::TensorId id) const {
  return id.value < values_.size() && values_[id.value] ? &*values_[id.value] : nullptr;
}

}  // namespace planner::runtime_cpu
