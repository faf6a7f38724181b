// The CPU backend's memory-bound kernels, op class by op class
// (measure.hpp, CpuMeasurements::class_kernels): single-op graphs costed by
// the ops rules (ops::annotate, the bytes the cost model prices) and run
// forward and backward by runtime_cpu's kernels, as the executor runs them.
// The cost model prices a memory-bound op at the triad's rate; the
// backend's kernels reach less (a strided transpose, a norm's passes over
// each row, zero-filled outputs), and the profile says how much less per
// op type and class (profile_out.cpp: memory_bound_op_efficiency and
// memory_bound_class_efficiency).

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/graph/graph.hpp"
#include "planner/ops/semantics.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"
#include "sweep.hpp"

namespace planner::calibrate::detail {

namespace {

using graph::OpGraph;
using graph::TensorId;
using runtime_cpu::IndexTensor;
using runtime_cpu::Tensor;
using runtime_cpu::Value;

// One op in a graph of its own, costed by the ops rules.
struct OneOp {
  OpGraph g;
  graph::OpId op;
  std::string label;
  /// Integer inputs with set values (a Split's sizes, a Slice's bounds, an
  /// Expand's shape), by input slot; other integer inputs are ids.
  std::map<std::size_t, std::vector<std::int64_t>> ints;
};

using Ins = std::vector<std::pair<std::vector<std::int64_t>, core::DType>>;

TensorId add(OpGraph& g, const std::string& name, std::vector<std::int64_t> shape, graph::TensorRole role,
             core::DType dt = core::DType::f32) {
  graph::Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.role = role;
  t.dtype = dt;
  return g.add_tensor(std::move(t));
}

OneOp make(const std::string& type, const Ins& ins, const std::vector<std::vector<std::int64_t>>& outs,
           std::map<std::string, graph::AttrValue, std::less<>> attrs, std::vector<graph::TensorRole> roles = {},
           std::map<std::size_t, std::vector<std::int64_t>> ints = {}) {
  OneOp o;
  o.ints = std::move(ints);
  graph::Op op;
  op.name = type;
  op.type = type;
  op.attrs = std::move(attrs);
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const auto role = i < roles.size() ? roles[i] : graph::TensorRole::input;
    op.inputs.push_back(add(o.g, fmt::format("in{}", i), ins[i].first, role, ins[i].second));
  }
  for (std::size_t k = 0; k < outs.size(); ++k)
    op.outputs.push_back(add(o.g, fmt::format("out{}", k), outs[k], graph::TensorRole::activation));
  o.op = o.g.add_op(std::move(op));
  const auto& added = o.g.op(o.op);
  for (const auto& t : added.inputs) o.g.tensor(*t).consumers.push_back(o.op);
  for (const auto& t : added.outputs) o.g.tensor(*t).producer = o.op;
  ops::annotate(o.g);
  std::string shapes;
  for (const auto& [s, dt] : ins) shapes += (shapes.empty() ? "" : " ") + fmt::format("[{}]", fmt::join(s, ","));
  o.label = fmt::format("{} {}", type, shapes);
  return o;
}

// The representative ops of each class, at the activations of a small
// transformer block ([b, 128, 256] f32: b x 128 KiB, as the executor's
// models): the kernels a GPT, a Llama (RMSNorm, RoPE, SwiGLU, grouped
// KV heads) and a recommender run. Each op type's samples make its own
// table: the kernels of one class stream at rates 10x apart (a strided
// transpose against a row split), so a class's table read between two
// different kernels' rows would follow the kernel, not the size.
std::vector<OneOp> representative_ops(std::int64_t b) {
  const std::int64_t s = 128, h = 256, heads = 8, hd = h / heads, kv = 2, v = 2048;
  const auto f = core::DType::f32;
  const auto i64 = core::DType::i64;
  using R = graph::TensorRole;
  std::vector<OneOp> all;
  // elementwise: a residual add, a bias add (broadcast), gelu's product, the
  // attention scores' scale, SiLU's sigmoid, a ReLU (Erf is its erfs:
  // erf_rate_per_s, measured apart).
  // Each in the broadcasts models use: same shapes, a bias, a scalar
  // constant (gelu's 0.5, 1 and sqrt 2; the scores' scale), the causal
  // mask over batch and heads.
  all.push_back(make("Add", {{{b, s, h}, f}, {{b, s, h}, f}}, {{b, s, h}}, {}));
  all.push_back(make("Add", {{{b, s, 4 * h}, f}, {{4 * h}, f}}, {{b, s, 4 * h}}, {}, {R::input, R::parameter}));
  all.push_back(make("Add", {{{b, s, 4 * h}, f}, {{1}, f}}, {{b, s, 4 * h}}, {}, {R::input, R::constant}));
  all.push_back(make("Add", {{{b, heads, s, s}, f}, {{1, 1, s, s}, f}}, {{b, heads, s, s}}, {},
                     {R::input, R::constant}));
  all.push_back(make("Mul", {{{b, s, 4 * h}, f}, {{b, s, 4 * h}, f}}, {{b, s, 4 * h}}, {}));
  all.push_back(make("Mul", {{{b, s, 4 * h}, f}, {{1}, f}}, {{b, s, 4 * h}}, {}, {R::input, R::constant}));
  all.push_back(make("Div", {{{b, s, 4 * h}, f}, {{1}, f}}, {{b, s, 4 * h}}, {}, {R::input, R::constant}));
  all.push_back(make("Sigmoid", {{{b, s, 4 * h}, f}}, {{b, s, 4 * h}}, {}));
  all.push_back(make("Relu", {{{b, s, 4 * h}, f}}, {{b, s, 4 * h}}, {}));
  // data_movement: the heads' transpose, the fused QKV split, RoPE's halves
  // (a slice, a concat), the grouped KV heads' expand.
  all.push_back(make("Transpose", {{{b, s, heads, hd}, f}}, {{b, heads, s, hd}},
                     {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}}));
  all.push_back(make("Split", {{{b, s, 3 * h}, f}, {{3}, i64}}, {{b, s, h}, {b, s, h}, {b, s, h}},
                     {{"axis", std::int64_t{2}}}, {R::input, R::constant}, {{1, {h, h, h}}}));
  all.push_back(make("Slice", {{{b, heads, s, hd}, f}, {{1}, i64}, {{1}, i64}, {{1}, i64}},
                     {{b, heads, s, hd / 2}}, {}, {R::input, R::constant, R::constant, R::constant},
                     {{1, {0}}, {2, {hd / 2}}, {3, {3}}}));
  all.push_back(make("Concat", {{{b, heads, s, hd / 2}, f}, {{b, heads, s, hd / 2}, f}}, {{b, heads, s, hd}},
                     {{"axis", std::int64_t{3}}}));
  all.push_back(make("Expand", {{{b, kv, 1, s, hd}, f}, {{5}, i64}}, {{b, kv, heads / kv, s, hd}}, {},
                     {R::input, R::constant}, {{1, {b, kv, heads / kv, s, hd}}}));
  // A view the backend copies (the heads' reshape): the cost model prices
  // its copy where the runtime copies views (ComputeContext::executor_kernels).
  all.push_back(make("Reshape", {{{b, s, h}, f}, {{4}, i64}}, {{b, s, heads, hd}}, {}, {R::input, R::constant},
                     {{1, {b, s, heads, hd}}}));
  // reduction: RMSNorm's mean of squares.
  all.push_back(make("ReduceMean", {{{b, s, h}, f}}, {{b, s, 1}},
                     {{"axes", std::vector<std::int64_t>{-1}}, {"keepdims", std::int64_t{1}}}));
  // normalization: a LayerNorm with its weight and bias.
  all.push_back(make("LayerNormalization", {{{b, s, h}, f}, {{h}, f}, {{h}, f}}, {{b, s, h}},
                     {{"axis", std::int64_t{-1}}}, {R::input, R::parameter, R::parameter}));
  // softmax: the attention probabilities.
  all.push_back(make("Softmax", {{{b, heads, s, s}, f}}, {{b, heads, s, s}}, {{"axis", std::int64_t{-1}}}));
  // loss: cross-entropy over a vocabulary.
  all.push_back(make("SoftmaxCrossEntropyLoss", {{{b * s, v}, f}, {{b * s}, i64}}, {{}},
                     {{"reduction", std::string("mean")}}, {R::input, R::input}));
  // embedding: a token lookup.
  all.push_back(make("Gather", {{{v, h}, f}, {{b, s}, i64}}, {{b, s, h}}, {{"axis", std::int64_t{0}}},
                     {R::parameter, R::input}));
  return all;
}

// An input of smooth values (softmax-like arguments in [-2, 2)), or of ids
// below `id_limit` for an integer one.
Value input_value(const graph::Tensor& t, std::int64_t id_limit) {
  if (t.dtype != core::DType::f32) {
    IndexTensor x{t.shape, std::vector<std::int64_t>(static_cast<std::size_t>(runtime_cpu::numel(t.shape)))};
    for (std::size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<std::int64_t>(i * 7) % id_limit;
    return x;
  }
  Tensor x(t.shape);
  for (std::int64_t i = 0; i < x.size(); ++i) x[i] = -2.0f + 4.0f * static_cast<float>(i % 997) / 997.0f;
  return x;
}

}  // namespace

Status measure_class_kernels(runtime::Communicator& comm, bool quick, Budget kb,
                             const std::function<void(const std::string&)>& progress, CpuMeasurements& m) {
  // Two batch sizes: the kernels' rate depends on the bytes a pass moves
  // (a per-call cost, the cache), and the table is read at every size.
  for (const std::int64_t batch : quick ? std::vector<std::int64_t>{1, 2} : std::vector<std::int64_t>{2, 8}) {
    for (auto& o : representative_ops(batch)) {
      const auto& op = o.g.op(o.op);
      std::vector<Value> in;
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        const auto& x = o.g.tensor(*op.inputs[i]);
        if (const auto set = o.ints.find(i); set != o.ints.end()) in.push_back(IndexTensor{x.shape, set->second});
        else in.push_back(input_value(x, 2048));  // token ids and labels below the vocabulary
      }
      std::vector<const Value*> in_ptr;
      for (const auto& x : in) in_ptr.push_back(&x);
      std::vector<runtime_cpu::OutputSpec> specs;
      for (const auto& t : op.outputs) specs.push_back({o.g.tensor(*t).shape, core::DType::f32, nullptr});
      std::vector<bool> needs;
      for (const auto& t : op.inputs)  // a constant (the scores' scale) takes no gradient, as in a model
        needs.push_back(o.g.tensor(*t).dtype == core::DType::f32 && o.g.tensor(*t).role != graph::TensorRole::constant);
      progress(fmt::format("{} forward and backward (the CPU backend's kernels)", o.label));

      // Forward alone, then backward alone (on the forward's outputs).
      std::vector<Value> outs;
      Status failed = Status::success();
      PLANNER_TRY(double fwd, time_kernel(comm, [&] {
        auto r = runtime_cpu::forward_op(op, in_ptr, specs);
        if (!r) failed = r.error();
        else outs = std::move(*r);
      }, kb));
      PLANNER_TRY_STATUS(failed);
      std::vector<const Value*> out_ptr;
      std::vector<Tensor> dy;
      for (const auto& y : outs) {
        const auto& t = std::get<Tensor>(y);
        Tensor d(t.shape);
        for (std::int64_t i = 0; i < d.size(); ++i) d[i] = 1e-3f * static_cast<float>(i % 13);
        dy.push_back(std::move(d));
      }
      std::vector<const Tensor*> dy_ptr;
      for (std::size_t k = 0; k < outs.size(); ++k) {
        out_ptr.push_back(&outs[k]);
        dy_ptr.push_back(&dy[k]);
      }
      PLANNER_TRY(double bwd, time_kernel(comm, [&] {
        auto r = runtime_cpu::backward_op(op, in_ptr, out_ptr, dy_ptr, needs);
        if (!r) failed = r.error();
      }, kb));
      PLANNER_TRY_STATUS(failed);
      ClassKernelSample s;
      s.op_class = std::string(graph::op_class_name(op.op_class));
      s.op_type = op.type;
      s.op = o.label;
      s.batch = batch;
      s.forward_bytes = op.cost.forward_bytes_read + op.cost.forward_bytes_written;
      s.backward_bytes = op.cost.backward_bytes_read + op.cost.backward_bytes_written;
      if (op.type == "Reshape") {  // a view to the ops rules: the bytes its copy moves, read and written
        const auto& y = o.g.tensor(*op.outputs[0]);
        s.forward_bytes = s.backward_bytes = Bytes(2.0 * static_cast<double>(y.numel()) * 4.0);
      }
      s.forward_special = op.cost.forward_special;
      s.backward_special = op.cost.backward_special;
      s.forward_erf = op.cost.forward_erf;
      s.backward_erf = op.cost.backward_erf;
      s.forward = Seconds(fwd);
      s.backward = Seconds(bwd);
      m.class_kernels.push_back(std::move(s));
    }
  }
  return Status::success();
}

}  // namespace planner::calibrate::detail
