#pragma once
// Private to src/ops: the sharding families' entry points and the small
// helpers they share to write a ShardSpec.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "planner/ops/semantics.hpp"
#include "planner/ops/sharding.hpp"

namespace planner::ops {

// One span of rows per family file (shard_table.cpp concatenates them).
std::span<const ShardRule> matmul_shard_rules();
std::span<const ShardRule> elementwise_shard_rules();
std::span<const ShardRule> norm_shard_rules();
std::span<const ShardRule> attention_shard_rules();
std::span<const ShardRule> embedding_shard_rules();
std::span<const ShardRule> conv_shard_rules();
std::span<const ShardRule> movement_shard_rules();

namespace shard_detail {

// The numpy-broadcasting spec of an elementwise op (shard_elementwise.cpp):
// one letter per output dim; an input dim of size 1 against a larger output
// dim is never split. nullopt when some output is not the broadcast shape.
std::optional<ShardSpec> broadcast_spec(const graph::OpGraph& g, graph::OpId id);

// The spec of a fused attention pattern (shard_attention.cpp).
std::optional<ShardSpec> attention_pattern_spec(const graph::OpGraph& g, const graph::FusedPattern& p);

// Builds specs: letters by name, ports by letter lists.
class SpecBuilder {
 public:
  SpecBuilder(const graph::OpGraph& g, graph::OpId id, std::string family) : g_(g) {
    spec_.family = std::move(family);
    spec_.ops = {id};
  }
  // Adds a letter; returns its index.
  int letter(std::string name, SplitRule rule = SplitRule::free) {
    Letter l;
    l.name = std::move(name);
    l.rule = rule;
    spec_.letters.push_back(std::move(l));
    return static_cast<int>(spec_.letters.size()) - 1;
  }
  Letter& at(int l) { return spec_.letters[static_cast<std::size_t>(l)]; }
  // Input/output port with a letter per dim (-1: never split). The tensor
  // comes from the op's own position `pos` (absent when omitted).
  SpecBuilder& in(std::size_t pos, std::vector<int> dims) {
    add(spec_.inputs, op_tensor(true, pos), std::move(dims));
    return *this;
  }
  SpecBuilder& out(std::size_t pos, std::vector<int> dims) {
    add(spec_.outputs, op_tensor(false, pos), std::move(dims));
    return *this;
  }
  // Every remaining input/output position as a port of unsplit dims.
  SpecBuilder& rest_unsplit() {
    const auto& op = g_.op(spec_.ops.front());
    while (spec_.inputs.size() < op.inputs.size()) in(spec_.inputs.size(), unsplit(op_tensor(true, spec_.inputs.size())));
    while (spec_.outputs.size() < op.outputs.size())
      out(spec_.outputs.size(), unsplit(op_tensor(false, spec_.outputs.size())));
    return *this;
  }
  ShardSpec done() { rest_unsplit(); return std::move(spec_); }
  ShardSpec& spec() { return spec_; }

  std::optional<graph::TensorId> op_tensor(bool input, std::size_t pos) const {
    const auto& op = g_.op(spec_.ops.front());
    const auto& v = input ? op.inputs : op.outputs;
    return pos < v.size() ? v[pos] : std::nullopt;
  }
  std::vector<int> unsplit(std::optional<graph::TensorId> t) const {
    return std::vector<int>(t ? g_.tensor(*t).shape.size() : 0, -1);
  }

 private:
  static void add(std::vector<ShardPort>& v, std::optional<graph::TensorId> t, std::vector<int> dims) {
    ShardPort p;
    p.tensor = t;
    if (t) p.dims = std::move(dims);
    v.push_back(std::move(p));
  }
  const graph::OpGraph& g_;
  ShardSpec spec_;
};

// Shape of input/output `pos` of `op` (empty when absent).
inline const std::vector<std::int64_t>* shape_of(const graph::OpGraph& g, const graph::Op& op, bool input,
                                                 std::size_t pos) {
  const graph::Tensor* t = input ? g.input(op, pos) : g.output(op, pos);
  return t ? &t->shape : nullptr;
}

// Axis attribute normalised into [0, rank).
inline std::optional<int> norm_axis(std::int64_t a, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (a < 0) a += r;
  if (a < 0 || a >= r) return std::nullopt;
  return static_cast<int>(a);
}

}  // namespace shard_detail
}  // namespace planner::ops
