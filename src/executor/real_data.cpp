// Helpers of the real mode (real_data.hpp).

#include "real_data.hpp"

#include <algorithm>
#include <cmath>

#include "planner/runtime_cpu/rng.hpp"

namespace planner::executor::real_detail {

using graph::OpGraph;
using graph::TensorId;
using runtime_cpu::IndexTensor;
using runtime_cpu::Shape;
using runtime_cpu::Tensor;
using runtime_cpu::Value;

namespace {
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

// A parameter by the interpreter's rule: "*.bias" of rank 1 zeros, other
// rank-1 parameters ones, the rest normal(0, 0.02), all keyed by name.
Tensor init_parameter(std::uint64_t seed, const graph::Tensor& t) {
  const bool bias = t.shape.size() == 1 && ends_with(t.name, ".bias");
  const bool scale = t.shape.size() == 1 && !bias;
  Tensor w = runtime_cpu::normal_tensor(seed, t.name, t.shape, 0.0f, (bias || scale) ? 0.0f : kStddev);
  if (scale)
    for (auto& v : w.data) v += 1.0f;
  return w;
}

runtime_cpu::OptimizerConfig optimizer_of(const plan::OptimizerSettings& o) {
  const auto f = [](double x) { return static_cast<float>(x); };
  if (o.name == "adam")
    return runtime_cpu::AdamWConfig{f(o.learning_rate), f(o.beta1), f(o.beta2), f(o.epsilon), f(o.weight_decay)};
  return runtime_cpu::SgdConfig{f(o.learning_rate), o.name == "sgd_momentum" ? f(o.momentum) : 0.0f,
                                f(o.weight_decay)};
}

void optimizer_step(const runtime_cpu::OptimizerConfig& c, std::span<float> w, std::span<const float> g,
                    runtime_cpu::OptimState& s) {
  if (const auto* sgd = std::get_if<runtime_cpu::SgdConfig>(&c)) runtime_cpu::sgd_step(*sgd, w, g, s);
  else runtime_cpu::adamw_step(std::get<runtime_cpu::AdamWConfig>(c), w, g, s);
}

double rel_error(double a, double b, double scale) {
  return std::fabs(a - b) / std::max({std::fabs(b), scale, 1e-6});
}

// Which chunk runs each op (index = OpId), -1 for none.
std::vector<int> chunk_of_ops(const plan::Plan& p, const OpGraph& g) {
  std::vector<int> out(g.num_ops(), -1);
  for (const auto& c : p.layout.chunks)
    for (const auto& name : c.ops)
      if (auto id = g.find_op(name)) out[id->value] = c.index;
  return out;
}

// Parameters read by the ops of pipeline rank `stage`, sorted by name.
std::vector<TensorId> stage_parameters(const plan::Plan& p, const OpGraph& g, const std::vector<int>& chunk_of,
                                       int stage) {
  std::map<std::string, TensorId> by_name;
  for (std::size_t o = 0; o < g.num_ops(); ++o) {
    if (chunk_of[o] < 0 || chunk_of[o] % p.layout.pp != stage) continue;
    for (const auto& in : g.ops()[o].inputs)
      if (in && g.tensor(*in).role == graph::TensorRole::parameter && !g.tensor(*in).producer)
        by_name.emplace(g.tensor(*in).name, *in);
  }
  std::vector<TensorId> out;
  for (const auto& [n, id] : by_name) out.push_back(id);
  return out;
}

// Every graph input at the global batch (dim 0 times `chunks`), drawn as the
// interpreter draws an input of that shape.
std::map<std::uint32_t, Value> draw_global_inputs(const OpGraph& g, std::uint64_t seed, std::int64_t chunks) {
  std::map<std::uint32_t, Value> out;
  for (TensorId id : g.graph_inputs) {
    const auto& t = g.tensor(id);
    if (t.values || t.role != graph::TensorRole::input) continue;
    Shape full = t.shape;
    if (!full.empty()) full[0] *= chunks;
    if (t.dtype == core::DType::f32) out[id.value] = runtime_cpu::normal_tensor(seed, t.name, full, 0.0f, 1.0f);
    else if (!core::is_floating(t.dtype))
      out[id.value] = runtime_cpu::uniform_indices(seed, t.name, full, runtime_cpu::index_bound(g, id).value_or(1));
  }
  return out;
}

// Global micro-batch chunk q of an input: its rows [q n, (q + 1) n) as a
// tensor of the micro-batch graph's shape.
Value slice_rows(const Value& full, const graph::Tensor& t, std::int64_t q) {
  const std::int64_t n = t.numel();
  if (const auto* f = std::get_if<Tensor>(&full)) {
    Tensor s(t.shape);
    std::copy(f->data.begin() + q * n, f->data.begin() + (q + 1) * n, s.data.begin());
    return s;
  }
  const auto& x = std::get<IndexTensor>(full);
  return IndexTensor{t.shape, std::vector<std::int64_t>(x.data.begin() + q * n, x.data.begin() + (q + 1) * n)};
}

}  // namespace planner::executor::real_detail
