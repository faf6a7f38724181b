#pragma once
/// Compute precision per op class (mixed precision), and what it does to the
/// bytes an op moves and the activations it keeps.
///
/// Exporters write f32 tensors; a mixed-precision run computes most ops in a
/// 16-bit type and keeps chosen classes in fp32. The default policy is the
/// seed article's advice (section 5.2: keep the embedding in fp32, the rest
/// in 16 bit) plus the loss in fp32, as Megatron and PyTorch autocast do for
/// the cross-entropy.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "planner/cluster/profile.hpp"
#include "planner/core/precision.hpp"
#include "planner/graph/graph.hpp"

namespace planner::cost {

/// Number of graph::OpClass values (OpClass::other is the last).
inline constexpr std::size_t kOpClassCount = static_cast<std::size_t>(graph::OpClass::other) + 1;

/// Compute dtype per op class: a default and per-class overrides. A value
/// type: copy it freely, compare with ==.
class PrecisionPolicy {
 public:
  /// bf16 everywhere except embedding and loss, kept in fp32.
  PrecisionPolicy();

  /// `p` for every class, no override (e.g. uniform(Precision::fp32) for
  /// plain fp32 training, uniform(Precision::bf16) for Korthikanti's
  /// all-16-bit accounting).
  static PrecisionPolicy uniform(core::Precision p);
  /// `p` by default, with embedding and loss kept in fp32.
  static PrecisionPolicy mixed(core::Precision p);

  /// Sets the precision of one class (returns *this for chaining).
  PrecisionPolicy& set(graph::OpClass c, core::Precision p);
  /// Removes the override of one class.
  PrecisionPolicy& clear(graph::OpClass c);

  /// The default precision.
  core::Precision default_precision() const { return default_; }
  /// The compute precision of ops of class `c`.
  core::Precision of(graph::OpClass c) const;
  /// The compute precision of `op`: by its class, except that under
  /// fp8_in_layers_only an fp8 class computes in the default precision
  /// outside the repeated blocks (Op::outside_layers) and inside a fused
  /// pattern (the attention core, Op::fused_group).
  core::Precision of(const graph::Op& op) const;
  /// fp8 only inside the repeated blocks (Transformer Engine's recipes:
  /// Megatron-Core builds each transformer layer's linears from TE modules,
  /// the output layer (LM head) from its own ColumnParallelLinear in the
  /// 16-bit type). Returns *this for chaining.
  PrecisionPolicy& fp8_in_layers_only(bool on);
  bool fp8_in_layers_only() const { return fp8_layers_only_; }
  /// True when `c` computes in fp32 or tf32 (4-byte activations, 4-byte
  /// weights: no separate fp32 master copy needed).
  bool keeps_fp32(graph::OpClass c) const;

  /// Every precision the policy uses (default and overrides), each once.
  std::vector<core::Precision> used() const;

  friend bool operator==(const PrecisionPolicy&, const PrecisionPolicy&) = default;

 private:
  core::Precision default_ = core::Precision::bf16;
  std::array<std::optional<core::Precision>, kOpClassCount> overrides_{};
  bool fp8_layers_only_ = false;
};

/// Bytes per element of an activation computed in `p`: 4 (fp32, tf32), 2
/// (fp16, bf16), 1 (fp8).
inline int activation_bytes(core::Precision p) { return core::precision_bytes(p); }

/// Element size of the op's floating tensors as the graph holds them: the
/// first floating output, else the first floating input; 0 when the op has
/// no floating tensor (pure integer shape arithmetic).
std::size_t graph_float_size(const graph::Op& op, const graph::OpGraph& g);

/// Factor turning the graph's floating bytes of `op` into bytes at the op's
/// compute precision: activation_bytes(p) / graph_float_size(op); 1 when the
/// op has no floating tensor.
double byte_scale(const graph::Op& op, const graph::OpGraph& g, const PrecisionPolicy& policy);

/// Bytes of `t` held at precision `p`: floating tensors numel x
/// activation_bytes(p); integer and bool tensors at their own size.
Bytes bytes_at(const graph::Tensor& t, core::Precision p);

}  // namespace planner::cost
