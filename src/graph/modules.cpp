// Recompute modules: normalisations and experts' activations
// (include/planner/graph/analysis.hpp).
//
// Both are found as closures over the ops that read nothing but the unit's
// own tensors, parameters and constants. A decomposed RMSNorm (modelgen's
// llama, torch exports):
//
//   x ─┬─► Mul(x,x) ─► ReduceMean ─► Add eps ─► Sqrt ─┐
//      └──────────────────────────────────────────────► Div ─► Mul w ─► y ─► MatMul
//      └─► Add (residual: also reads the attention's output, so not the norm's)
//
// An expert's SwiGLU: the outputs of its gate and up GEMMs seed the closure,
// Sigmoid, Mul and Mul join it, and only ops whose output reaches the
// expert's down GEMM stay (a bias Add after the last GEMM does not).

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "planner/graph/analysis.hpp"

namespace planner::graph {
namespace {

bool is_separator(char ch) { return ch == '/' || ch == '.' || ch == '_'; }

bool runtime(const Tensor& t) { return t.role == TensorRole::activation || t.role == TensorRole::input; }

// The distinct tensors produced at run time that `op` reads.
std::vector<TensorId> runtime_inputs(const OpGraph& g, const Op& op) {
  std::vector<TensorId> out;
  for (const auto& in : op.inputs)
    if (in && runtime(g.tensor(*in)) && std::find(out.begin(), out.end(), *in) == out.end()) out.push_back(*in);
  return out;
}

// A mean over the last axis that keeps it: a normalisation's statistic.
bool row_mean(const OpGraph& g, const Op& op) {
  if (op.type != "ReduceMean" || !op.domain.empty()) return false;
  const Tensor* in = g.input(op, 0);
  const Tensor* out = g.output(op, 0);
  return in && out && in->shape.size() >= 2 && out->shape.size() == in->shape.size() && out->shape.back() == 1 &&
         in->shape.back() > 1;
}

// The ops reached from `seeds` through consumers that `joins(id, op)` accepts and
// whose run-time inputs are all seeds or outputs of ops already reached.
template <class Joins>
std::vector<OpId> closure(const OpGraph& g, std::vector<TensorId> seeds, Joins&& joins) {
  std::set<std::uint32_t> have;
  for (auto t : seeds) have.insert(t.value);
  std::set<std::uint32_t> in_unit;
  std::vector<OpId> ops;
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    for (OpId c : g.tensor(seeds[k]).consumers) {
      const Op& op = g.op(c);
      if (in_unit.count(c.value) || !joins(c, op)) continue;
      const auto ins = runtime_inputs(g, op);
      if (!std::all_of(ins.begin(), ins.end(), [&](TensorId t) { return have.count(t.value) > 0; })) continue;
      in_unit.insert(c.value);
      ops.push_back(c);
      for (const auto& out : op.outputs)
        if (out && have.insert(out->value).second) seeds.push_back(*out);
    }
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

// Views a norm's output may pass through on its way to a linear layer.
bool is_view(const Op& op) {
  return op.domain.empty() && (op.type == "Reshape" || op.type == "Flatten" || op.type == "Squeeze" ||
                               op.type == "Unsqueeze" || op.type == "Identity");
}

// Every op past views that reads the unit's outputs' values (Shape and Size
// read none) is a GEMM: Transformer Engine fuses such a norm into the linear
// layer (LayerNormLinear).
bool read_by_gemms_only(const OpGraph& g, const std::vector<OpId>& unit) {
  std::vector<TensorId> outs;
  for (OpId o : unit)
    for (const auto& t : g.op(o).outputs)
      if (t) outs.push_back(*t);
  bool any = false;
  for (std::size_t k = 0; k < outs.size(); ++k)
    for (OpId c : g.tensor(outs[k]).consumers) {
      if (std::find(unit.begin(), unit.end(), c) != unit.end()) continue;
      const Op& op = g.op(c);
      if (op.domain.empty() && (op.type == "Shape" || op.type == "Size")) continue;  // read no values
      if (is_view(op)) {
        for (const auto& t : op.outputs)
          if (t) outs.push_back(*t);
        continue;
      }
      if (op.op_class != OpClass::matmul) return false;
      any = true;
    }
  return any;
}

// A norm Megatron-Core's `layernorm` module recomputes: one inside a
// transformer layer (not the final norm) that Transformer Engine leaves
// separate, i.e. not read by linear layers alone (the pre-MLP norm of a MoE
// layer, which the router and the dispatch read; gpt_layer_specs.py:
// input_layernorm fused into linear_qkv, pre_mlp_layernorm a separate
// TENorm only with experts).
bool recomputable_norm(const OpGraph& g, const std::vector<OpId>& unit) {
  return !g.op(unit.front()).outside_layers && !read_by_gemms_only(g, unit);
}

void find_norms(OpGraph& g) {
  int next = 0;
  for (std::uint32_t i = 0; i < g.num_ops(); ++i)
    if (g.op(OpId{i}).op_class == OpClass::normalization && recomputable_norm(g, {OpId{i}}))
      g.op(OpId{i}).norm_unit = next++;
  std::set<std::uint32_t> seen;
  for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
    const Op& r = g.op(OpId{i});
    if (seen.count(i) || r.fused_group || !row_mean(g, r) || !r.inputs[0]) continue;
    // The norm's input: back from the mean through elementwise ops of one
    // run-time input (x*x, x^2), at most a few.
    TensorId x = *r.inputs[0];
    for (int hop = 0; hop < 3; ++hop) {
      const auto prod = g.tensor(x).producer;
      if (!prod) break;
      const Op& p = g.op(*prod);
      const auto ins = runtime_inputs(g, p);
      if (p.op_class != OpClass::elementwise || p.fused_group || ins.size() != 1) break;
      x = ins[0];
    }
    const auto ops = closure(g, {x}, [&](OpId id, const Op& op) {
      return !seen.count(id.value) && !op.fused_group && !op.norm_unit && op.layer == r.layer &&
             (op.op_class == OpClass::elementwise || row_mean(g, op));
    });
    if (std::find(ops.begin(), ops.end(), OpId{i}) == ops.end()) continue;
    for (OpId o : ops) seen.insert(o.value);  // one norm, whichever of its means is met first
    if (!recomputable_norm(g, ops)) continue;
    const int id = next++;
    for (OpId o : ops) g.op(o).norm_unit = id;
  }
}

void find_expert_activations(OpGraph& g) {
  // The GEMMs of each (layer, expert).
  std::map<std::pair<int, int>, std::vector<OpId>> gemms;
  for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.op(OpId{i});
    if (op.op_class != OpClass::matmul || op.fused_group) continue;
    if (const auto e = expert_index(op.name)) gemms[{op.layer.value_or(-1), *e}].push_back(OpId{i});
  }
  int next = 0;
  for (const auto& [key, mms] : gemms) {
    const auto [layer, expert] = key;
    std::vector<TensorId> seeds;
    for (OpId m : mms)
      for (const auto& out : g.op(m).outputs)
        if (out) seeds.push_back(*out);
    auto ops = closure(g, seeds, [&, layer = layer, expert = expert](OpId, const Op& op) {
      return op.op_class == OpClass::elementwise && !op.fused_group && op.layer.value_or(-1) == layer &&
             expert_index(op.name) == expert;
    });
    // Keep the ops whose output reaches one of the expert's GEMMs.
    std::set<std::uint32_t> keep;
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      bool reaches = false;
      for (const auto& out : g.op(*it).outputs) {
        if (!out) continue;
        for (OpId c : g.tensor(*out).consumers)
          reaches = reaches || keep.count(c.value) ||
                    std::find(mms.begin(), mms.end(), c) != mms.end();
      }
      if (reaches) keep.insert(it->value);
    }
    if (keep.empty()) continue;
    const int id = next++;
    for (auto o : keep) g.op(OpId{o}).expert_act_unit = id;
  }
}

}  // namespace

std::optional<int> expert_index(std::string_view name) {
  constexpr std::string_view kWord = "experts";
  for (std::size_t at = name.find(kWord); at != std::string_view::npos; at = name.find(kWord, at + 1)) {
    if (at > 0 && name[at - 1] != '/' && name[at - 1] != '.') continue;
    std::size_t p = at + kWord.size();
    if (p >= name.size() || !is_separator(name[p])) continue;
    ++p;
    std::size_t q = p;
    long long n = 0;
    while (q < name.size() && name[q] >= '0' && name[q] <= '9' && q - p < 6) n = n * 10 + (name[q++] - '0');
    if (q == p || (q < name.size() && name[q] != '/' && name[q] != '.' && name[q] != '_')) continue;
    return static_cast<int>(n);
  }
  return std::nullopt;
}

bool has_expert_activations(const OpGraph& g) {
  const auto ops = g.ops();
  return std::any_of(ops.begin(), ops.end(), [](const Op& op) { return op.expert_act_unit.has_value(); });
}

void find_recompute_modules(OpGraph& g) {
  for (auto& op : g.mutable_ops()) {
    op.norm_unit.reset();
    op.expert_act_unit.reset();
  }
  find_norms(g);
  find_expert_activations(g);
}

}  // namespace planner::graph
