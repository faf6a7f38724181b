// The single-GPU interpreter (gpu_interpreter.hpp): runtime_cpu's
// interpreter loop over the GPU op layer (gpu_ops.hpp).

#include "planner/runtime_cuda/gpu_interpreter.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gpu_ops.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"

namespace planner::runtime {

using graph::OpGraph;
using graph::TensorId;
using gpu_ops::DeviceBuffer;
using gpu_ops::DTensor;
using gpu_ops::GValue;

struct GpuInterpreter::Impl {
  const OpGraph* g = nullptr;
  int device = 0;
  gpu_ops::Context ctx;
  std::vector<graph::OpId> order;
  std::vector<std::optional<GValue>> values;  ///< per tensor
  std::vector<bool> needs_grad;               ///< per tensor
  std::map<std::string, TensorId, std::less<>> params;
  struct OptState {
    DeviceBuffer m, v;  ///< fp32, sized on first use
    std::int64_t step = 0;
  };
  std::map<std::string, OptState> optim;
  std::map<std::string, DTensor> last_grads;
  TensorId loss;
  double peak = 0;

  ~Impl() {
    if (ctx.blas) cublasDestroy(ctx.blas);
  }

  void note_memory() {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) peak = std::max(peak, static_cast<double>(total - free));
  }

  Status init(const OpGraph& graph, const runtime_cpu::InterpreterOptions& opt);
  Result<double> forward();
  Status backward();
  Status optimize(const runtime_cpu::OptimizerConfig& o);
};

Status GpuInterpreter::Impl::init(const OpGraph& graph, const runtime_cpu::InterpreterOptions& opt) {
  g = &graph;
  // The op layer's support is runtime_cpu's (the same kinds and variants):
  // refused here, before the device is touched.
  for (const auto& op : graph.ops()) PLANNER_TRY_STATUS(runtime_cpu::check_supported(op));
  PLANNER_TRY_STATUS(gpu_ops::cuda_status(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device)));
  PLANNER_TRY_STATUS(gpu_ops::cublas_status(cublasCreate(&ctx.blas), "cublasCreate"));
  // fp32: no TF32 or other reduced-precision shortcut (--check compares to 1e-5).
  PLANNER_TRY_STATUS(gpu_ops::cublas_status(
      cublasSetMathMode(ctx.blas, ctx.store == gpu_ops::Store::f32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH),
      "cublasSetMathMode"));
  // The CPU interpreter's draws, uploaded.
  PLANNER_TRY(auto cpu, runtime_cpu::Interpreter::create(graph, opt));
  PLANNER_TRY(order, graph.topological_order());
  loss = cpu.loss_tensor();
  values.resize(graph.num_tensors());
  needs_grad.assign(graph.num_tensors(), false);
  for (std::uint32_t i = 0; i < graph.num_tensors(); ++i) {
    const graph::Tensor& t = graph.tensor(TensorId{i});
    if (t.producer) continue;
    const runtime_cpu::Value* v = cpu.value(TensorId{i});
    if (!v) continue;
    if (const auto* f = runtime_cpu::as_float(v)) {
      PLANNER_TRY(DTensor d, gpu_ops::upload(*f, ctx.store));
      values[i] = GValue(std::move(d));
    } else {
      values[i] = GValue(*runtime_cpu::as_index(v));
    }
    if (t.role == graph::TensorRole::parameter) {
      params.emplace(t.name, TensorId{i});
      needs_grad[i] = true;
    }
  }
  for (graph::OpId oid : order) {
    const graph::Op& op = graph.op(oid);
    bool any = false;
    for (const auto& in : op.inputs) any = any || (in && needs_grad[in->value]);
    for (const auto& out : op.outputs)
      if (out && graph.tensor(*out).dtype == core::DType::f32) needs_grad[out->value] = any;
  }
  note_memory();
  return Status::success();
}

Result<double> GpuInterpreter::Impl::forward() {
  for (graph::OpId oid : order) {
    const graph::Op& op = g->op(oid);
    gpu_ops::GInputs in;
    for (const auto& t : op.inputs) {
      if (!t) {
        in.push_back(nullptr);
        continue;
      }
      if (!values[t->value])
        return make_error("op '{}' ({}) reads '{}', which has no value", op.name, op.type, g->tensor(*t).name);
      in.push_back(&*values[t->value]);
    }
    std::vector<runtime_cpu::OutputSpec> specs;
    for (const auto& t : op.outputs) {
      if (!t) return make_error("op '{}' ({}): omitted outputs are not supported", op.name, op.type);
      const graph::Tensor& x = g->tensor(*t);
      specs.push_back(runtime_cpu::OutputSpec{x.shape, x.dtype, x.values ? &*x.values : nullptr});
    }
    PLANNER_TRY(auto outs, gpu_ops::forward_op(ctx, op, in, specs));
    for (std::size_t k = 0; k < outs.size(); ++k) values[op.outputs[k]->value] = std::move(outs[k]);
  }
  note_memory();
  const DTensor* l = values[loss.value] ? gpu_ops::as_device(&*values[loss.value]) : nullptr;
  if (!l || l->size() != 1) return make_error("the loss '{}' is not a scalar", g->tensor(loss).name);
  PLANNER_TRY(runtime_cpu::Tensor h, gpu_ops::download(*l));
  return static_cast<double>(h[0]);
}

Status GpuInterpreter::Impl::backward() {
  std::vector<std::optional<DTensor>> grads(g->num_tensors());
  {
    runtime_cpu::Tensor seed(g->tensor(loss).shape);
    std::fill(seed.data.begin(), seed.data.end(), 1.0f);
    PLANNER_TRY(grads[loss.value], gpu_ops::upload(seed, ctx.store));
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const graph::Op& op = g->op(*it);
    std::vector<const DTensor*> dout;
    gpu_ops::GInputs outs;
    bool any = false;
    for (const auto& t : op.outputs) {
      dout.push_back(grads[t->value] ? &*grads[t->value] : nullptr);
      outs.push_back(values[t->value] ? &*values[t->value] : nullptr);
      any = any || dout.back();
    }
    if (!any) continue;
    gpu_ops::GInputs in;
    std::vector<bool> needs;
    for (const auto& t : op.inputs) {
      in.push_back(t && values[t->value] ? &*values[t->value] : nullptr);
      needs.push_back(t && needs_grad[t->value]);
    }
    PLANNER_TRY(auto gin, gpu_ops::backward_op(ctx, op, in, outs, dout, needs));
    for (std::size_t k = 0; k < gin.size(); ++k) {
      if (!gin[k]) continue;
      auto& slot = grads[op.inputs[k]->value];
      if (slot) {
        PLANNER_TRY_STATUS(gpu_ops::cuda_status(gpu_ops::accumulate(ctx.store, slot->data(), gin[k]->data(), slot->size()),
                                                fmt::format("op '{}' ({}): gradient sum", op.name, op.type)));
      } else {
        slot = std::move(gin[k]);
      }
    }
    // Gradients of tensors no earlier op reads again are not freed early:
    // the interpreter keeps every forward value anyway (as on the CPU).
  }
  note_memory();
  last_grads.clear();
  for (const auto& [name, id] : params) {
    if (grads[id.value]) {
      last_grads.emplace(name, std::move(*grads[id.value]));
    } else {
      PLANNER_TRY(DTensor z, gpu_ops::zero_tensor(g->tensor(id).shape, ctx.store));
      last_grads.emplace(name, std::move(z));
    }
  }
  return Status::success();
}

Status GpuInterpreter::Impl::optimize(const runtime_cpu::OptimizerConfig& o) {
  for (const auto& [name, id] : params) {
    DTensor& w = std::get<DTensor>(*values[id.value]);
    const DTensor& gr = last_grads.at(name);
    OptState& s = optim[name];
    const std::size_t bytes = static_cast<std::size_t>(w.size()) * sizeof(float);
    auto zeros = [&](DeviceBuffer& b) -> Status {
      if (b) return Status::success();
      PLANNER_TRY(b, gpu_ops::device_alloc(bytes));
      return gpu_ops::cuda_status(cudaMemset(b.get(), 0, bytes), "cudaMemset");
    };
    cudaError_t e = cudaSuccess;
    if (const auto* sgd = std::get_if<runtime_cpu::SgdConfig>(&o)) {
      const bool first = s.step == 0;
      ++s.step;
      if (sgd->momentum != 0.0f) PLANNER_TRY_STATUS(zeros(s.m));
      e = gpu_ops::sgd(ctx.store, w.data(), gr.data(), static_cast<float*>(s.m.get()), w.size(), first, sgd->lr,
                       sgd->momentum, sgd->weight_decay);
    } else {
      const auto& c = std::get<runtime_cpu::AdamWConfig>(o);
      PLANNER_TRY_STATUS(zeros(s.m));
      PLANNER_TRY_STATUS(zeros(s.v));
      ++s.step;
      const double t = static_cast<double>(s.step);
      const double bc1 = 1.0 - std::pow(static_cast<double>(c.beta1), t);
      const double bc2 = 1.0 - std::pow(static_cast<double>(c.beta2), t);
      e = gpu_ops::adamw(ctx.store, w.data(), gr.data(), static_cast<float*>(s.m.get()), static_cast<float*>(s.v.get()),
                         w.size(), c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, bc1, bc2);
    }
    PLANNER_TRY_STATUS(gpu_ops::cuda_status(e, fmt::format("optimizer on '{}'", name)));
  }
  return gpu_ops::cuda_status(cudaDeviceSynchronize(), "optimizer step");
}

GpuInterpreter::GpuInterpreter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuInterpreter::GpuInterpreter(GpuInterpreter&&) noexcept = default;
GpuInterpreter& GpuInterpreter::operator=(GpuInterpreter&&) noexcept = default;
GpuInterpreter::~GpuInterpreter() = default;

Result<GpuInterpreter> GpuInterpreter::create(const graph::OpGraph& g, const runtime_cpu::InterpreterOptions& opt,
                                              GpuStorage storage, int device) {
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  impl->ctx.store = storage == GpuStorage::f32 ? gpu_ops::Store::f32 : gpu_ops::Store::bf16;
  PLANNER_TRY_STATUS(impl->init(g, opt));
  return GpuInterpreter(std::move(impl));
}

Result<double> GpuInterpreter::forward() { return impl_->forward(); }

Result<std::map<std::string, runtime_cpu::Tensor>> GpuInterpreter::backward() {
  PLANNER_TRY_STATUS(impl_->backward());
  return last_gradients();
}

Result<double> GpuInterpreter::step(const runtime_cpu::OptimizerConfig& optimizer) {
  PLANNER_TRY(double loss, impl_->forward());
  PLANNER_TRY_STATUS(impl_->backward());
  PLANNER_TRY_STATUS(impl_->optimize(optimizer));
  return loss;
}

Result<runtime_cpu::StepResult> GpuInterpreter::train_step(const runtime_cpu::OptimizerConfig& optimizer) {
  runtime_cpu::StepResult r;
  PLANNER_TRY(r.loss, step(optimizer));
  PLANNER_TRY(r.gradients, last_gradients());
  PLANNER_TRY(r.weights, weights());
  return r;
}

Result<std::map<std::string, runtime_cpu::Tensor>> GpuInterpreter::last_gradients() const {
  std::map<std::string, runtime_cpu::Tensor> out;
  for (const auto& [name, d] : impl_->last_grads) {
    PLANNER_TRY(auto h, gpu_ops::download(d));
    out.emplace(name, std::move(h));
  }
  return out;
}

Result<std::map<std::string, runtime_cpu::Tensor>> GpuInterpreter::weights() const {
  std::map<std::string, runtime_cpu::Tensor> out;
  for (const auto& [name, id] : impl_->params) {
    PLANNER_TRY(auto h, gpu_ops::download(std::get<DTensor>(*impl_->values[id.value])));
    out.emplace(name, std::move(h));
  }
  return out;
}

std::vector<std::string> GpuInterpreter::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& [name, id] : impl_->params) names.push_back(name);
  return names;
}

double GpuInterpreter::peak_device_bytes() const { return impl_->peak; }

}  // namespace planner::runtime
