// Precision policy and byte scaling.

#include "planner/cost/precision.hpp"

#include <algorithm>

namespace planner::cost {
namespace {

std::size_t index(graph::OpClass c) { return static_cast<std::size_t>(c); }

static_assert(kOpClassCount == 13, "update kOpClassCount users when OpClass changes");

}  // namespace

PrecisionPolicy::PrecisionPolicy() {
  set(graph::OpClass::embedding, core::Precision::fp32);
  set(graph::OpClass::loss, core::Precision::fp32);
}

PrecisionPolicy PrecisionPolicy::uniform(core::Precision p) {
  PrecisionPolicy r;
  r.default_ = p;
  r.overrides_ = {};
  return r;
}

PrecisionPolicy PrecisionPolicy::mixed(core::Precision p) {
  PrecisionPolicy r;
  r.default_ = p;
  return r;
}

PrecisionPolicy& PrecisionPolicy::set(graph::OpClass c, core::Precision p) {
  overrides_[index(c)] = p;
  return *this;
}

PrecisionPolicy& PrecisionPolicy::clear(graph::OpClass c) {
  overrides_[index(c)].reset();
  return *this;
}

core::Precision PrecisionPolicy::of(graph::OpClass c) const { return overrides_[index(c)].value_or(default_); }

core::Precision PrecisionPolicy::of(const graph::Op& op) const {
  const core::Precision p = of(op.op_class);
  // Transformer Engine runs its linears in fp8: not the LM head (outside the
  // layers) nor the attention core's batched GEMMs (DotProductAttention
  // computes in the 16-bit type unless fp8 attention is asked for).
  return fp8_layers_only_ && p == core::Precision::fp8 && (op.outside_layers || op.fused_group) ? default_ : p;
}

PrecisionPolicy& PrecisionPolicy::fp8_in_layers_only(bool on) {
  fp8_layers_only_ = on;
  return *this;
}

bool PrecisionPolicy::keeps_fp32(graph::OpClass c) const {
  const core::Precision p = of(c);
  return p == core::Precision::fp32 || p == core::Precision::tf32;
}

std::vector<core::Precision> PrecisionPolicy::used() const {
  std::vector<core::Precision> r{default_};
  for (const auto& o : overrides_)
    if (o && std::find(r.begin(), r.end(), *o) == r.end()) r.push_back(*o);
  return r;
}

std::size_t graph_float_size(const graph::Op& op, const graph::OpGraph& g) {
  for (const auto& t : op.outputs)
    if (t && core::is_floating(g.tensor(*t).dtype)) return core::dtype_size(g.tensor(*t).dtype);
  for (const auto& t : op.inputs)
    if (t && core::is_floating(g.tensor(*t).dtype)) return core::dtype_size(g.tensor(*t).dtype);
  return 0;
}

double byte_scale(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy) {
  const std::size_t size = graph_float_size(op, g);
  if (size == 0) return 1.0;
  return static_cast<double>(activation_bytes(policy.of(op))) / static_cast<double>(size);
}

Bytes bytes_at(const graph::Tensor& t, core::Precision p) {
  if (!core::is_floating(t.dtype)) return t.bytes();
  return Bytes(static_cast<double>(t.numel()) * activation_bytes(p));
}

}  // namespace planner::cost
