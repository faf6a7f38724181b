#pragma once
/// The operator graph: ops and tensors with static shapes, built by the ONNX
/// importer (or by tests in code) and read by every later stage.
///
/// Design note: the graph is plain data held in two vectors indexed by strong
/// ids (OpId, TensorId). Dependency queries (topological order, cycles) go
/// through Boost.Graph on a view built from these vectors. Nothing here knows
/// about ONNX protobufs, devices or costs beyond the per-op cost descriptor.
///
/// Architecture invariant: this module includes no ONNX, CUDA or MPI header.

#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_map>
#include <variant>
#include <vector>

#include "planner/core/dtype.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

namespace planner::graph {

/// Index of a tensor in OpGraph::tensors().
struct TensorId {
  std::uint32_t value = 0;
  friend auto operator<=>(TensorId, TensorId) = default;
};
/// Index of an op in OpGraph::ops().
struct OpId {
  std::uint32_t value = 0;
  friend auto operator<=>(OpId, OpId) = default;
};

/// What a tensor is to training.
enum class TensorRole : std::uint8_t {
  activation,   ///< produced by an op at run time
  parameter,    ///< trainable weight (float initializer, or a graph input named by --params-from-inputs)
  constant,     ///< non-trainable initializer (integer tables, shapes, masks)
  input,        ///< graph input carrying data (tokens, images, labels)
};

/// Values of a small constant, row-major: integers in `ints` (is_float
/// false) or floating values in `floats` (is_float true).
struct ConstantValues {
  bool is_float = false;
  std::vector<std::int64_t> ints;
  std::vector<double> floats;
  std::size_t size() const { return is_float ? floats.size() : ints.size(); }
};

/// Largest constant whose values the importer keeps (Tensor::values).
inline constexpr std::int64_t kMaxConstantValues = 4096;

struct Tensor {
  std::string name;
  core::DType dtype = core::DType::f32;
  /// Static shape; every dim >= 0 once import succeeded. Empty = scalar.
  std::vector<std::int64_t> shape;
  TensorRole role = TensorRole::activation;
  /// The op writing this tensor; empty for initializers and graph inputs.
  std::optional<OpId> producer;
  /// Ops reading this tensor, in graph order (an op reading it twice appears twice).
  std::vector<OpId> consumers;
  /// The axis that scales with the batch size, when the tensor has one.
  std::optional<int> batch_axis;
  /// Initializer whose bytes live in an external file (never opened).
  bool external_data = false;
  /// Values of an initializer with inline data or a `Constant` node output,
  /// when it has at most kMaxConstantValues elements (shape tables, masks,
  /// scales, position ids); the executor's interpreter reads them. Planning
  /// never does (weights are never read for planning).
  std::optional<ConstantValues> values;

  std::int64_t numel() const;
  Bytes bytes() const;
};

using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>,
                               std::vector<double>, std::vector<std::string>>;

/// Work and traffic of one op, per training step of one sample batch as the
/// graph is shaped. backward_* covers the gradients of every floating input
/// (activations and parameters); a frozen or integer input costs nothing.
struct OpCost {
  Flops forward_flops;
  Flops backward_flops;
  Bytes forward_bytes_read;
  Bytes forward_bytes_written;
  Bytes backward_bytes_read;
  Bytes backward_bytes_written;
  /// Special-function evaluations (exp, log, erf, tanh, sin, ...) of each
  /// pass, counted as the reference kernels compute them (docs/cost-model.md,
  /// "Special functions"): priced only where the device profile gives a
  /// rate (a CPU's libm; a GPU's special-function units outpace its memory).
  double forward_special = 0;
  double backward_special = 0;
  /// Of those, the erf evaluations (Erf, Gelu): libm's erf costs about
  /// three exps on the CPU backend, priced at the profile's erf_rate_per_s
  /// where it has one.
  double forward_erf = 0;
  double backward_erf = 0;
  /// False when no semantics rule exists for the op kind: then the op is
  /// costed as memory-bound from its tensor sizes (never as zero).
  bool known = true;

  OpCost& operator+=(const OpCost& o);
};

/// Coarse class of an op, used by cost models (compute-bound vs memory-bound)
/// and reports.
enum class OpClass : std::uint8_t {
  matmul, conv, attention, normalization, softmax, elementwise, reduction,
  data_movement, embedding, loss, control_flow, constant, other,
};
std::string_view op_class_name(OpClass c);

struct Op {
  /// Unique within the graph (the importer names unnamed nodes).
  std::string name;
  std::string type;
  /// "" for the default ONNX domain, else e.g. "com.microsoft".
  std::string domain;
  /// Positional inputs; std::nullopt for an omitted optional input.
  std::vector<std::optional<TensorId>> inputs;
  /// Positional outputs; std::nullopt for an omitted optional output.
  std::vector<std::optional<TensorId>> outputs;
  std::map<std::string, AttrValue, std::less<>> attrs;
  OpClass op_class = OpClass::other;
  OpCost cost;
  /// Index of the repeated block (layer) this op belongs to, if any.
  std::optional<int> layer;
  /// The graph has repeated blocks and this op is in none of them (the
  /// embedding, a final norm, the LM head): set with `layer` by
  /// find_repeated_blocks.
  bool outside_layers = false;
  /// Id of the fused pattern (e.g. one attention) this op belongs to, if any.
  std::optional<int> fused_group;
  /// Id of the normalisation this op belongs to (a norm op, or the ops of a
  /// decomposed RMSNorm / LayerNorm), if any: the unit of Megatron-Core's
  /// `layernorm` recompute module. Set by find_recompute_modules.
  std::optional<int> norm_unit;
  /// Id of the expert activation this op belongs to (the elementwise ops
  /// between one expert's GEMMs: bias and GeLU, or SwiGLU), if any: the unit
  /// of Megatron-Core's `moe_act` recompute module.
  std::optional<int> expert_act_unit;

  /// Attribute accessors; std::nullopt when absent or of another type.
  std::optional<std::int64_t> attr_int(std::string_view n) const;
  std::optional<double> attr_float(std::string_view n) const;
  std::optional<std::string> attr_string(std::string_view n) const;
  std::optional<std::vector<std::int64_t>> attr_ints(std::string_view n) const;
};

/// A recognised fused pattern (attention: Q*K^T, scale, mask, Softmax, *V).
struct FusedPattern {
  enum class Kind : std::uint8_t { attention };
  Kind kind = Kind::attention;
  std::vector<OpId> ops;
  /// For attention: batch, heads, query length, key length, head dim (q/k), head dim (v).
  std::int64_t batch = 0, heads = 0, seq_q = 0, seq_k = 0, head_dim = 0, head_dim_v = 0;
  /// Key/value heads: fewer than `heads` under grouped-query attention (each
  /// K/V head repeated for heads / kv_heads query heads before the score
  /// MatMul), equal to `heads` otherwise; 0 when not found.
  std::int64_t kv_heads = 0;
  /// Bytes of the s x s score/probability activations the unfused form keeps.
  Bytes score_bytes;
};

/// A run of structurally identical consecutive blocks (the layers of a GPT).
struct RepeatedBlocks {
  /// Number of copies found.
  int count = 0;
  /// Ops per copy.
  int ops_per_block = 0;
  /// First layer index given to the copies (layers are numbered graph-wide).
  int first_layer = 0;
  /// Signature text of the block's op types, e.g. "MatMul,Add,Softmax,...".
  std::string signature;
};

/// Model-level facts the importer records.
struct ModelInfo {
  std::string producer_name;
  std::string producer_version;
  std::int64_t ir_version = 0;
  /// Opset version per domain ("" = default ONNX domain).
  std::map<std::string, std::int64_t> opsets;
};

/// Values computed from a graph alone (topological order, gradient mask,
/// saved activations, ...), kept with it so that the many estimates of one
/// search compute each once. One entry per (key type, value type, key
/// value); thread-safe (two threads asking at once may both compute, the
/// first stored wins: the values are equal).
class DerivedCache {
 public:
  template <class Key, class Value, class Make>
  std::shared_ptr<const Value> get(const Key& key, Make&& make) {
    auto find = [&]() -> std::shared_ptr<const Value> {
      for (const auto& s : slots_)
        if (*s.type == typeid(Tag<Key, Value>) && *static_cast<const Key*>(s.key.get()) == key)
          return std::static_pointer_cast<const Value>(s.value);
      return nullptr;
    };
    {
      std::lock_guard lock(mu_);
      if (auto v = find()) return v;
    }
    auto v = std::make_shared<const Value>(make());
    std::lock_guard lock(mu_);
    if (auto w = find()) return w;
    slots_.push_back(Slot{&typeid(Tag<Key, Value>), std::make_shared<const Key>(key), v});
    filled_.store(true, std::memory_order_relaxed);
    return v;
  }
  bool filled() const { return filled_.load(std::memory_order_relaxed); }

 private:
  template <class K, class V>
  struct Tag {};
  struct Slot {
    const std::type_info* type;
    std::shared_ptr<const void> key, value;
  };
  std::mutex mu_;
  std::vector<Slot> slots_;
  std::atomic<bool> filled_{false};
};

/// The graph. Add tensors first, then ops referring to them; add_op fills
/// producers and consumers.
class OpGraph {
 public:
  TensorId add_tensor(Tensor t);
  /// Requires: every id in op.inputs/outputs exists. Sets producer/consumers.
  OpId add_op(Op op);

  const Tensor& tensor(TensorId id) const { return tensors_[id.value]; }
  Tensor& tensor(TensorId id) {
    drop_derived();
    return tensors_[id.value];
  }
  const Op& op(OpId id) const { return ops_[id.value]; }
  Op& op(OpId id) {
    drop_derived();
    return ops_[id.value];
  }
  std::span<const Tensor> tensors() const { return tensors_; }
  std::span<const Op> ops() const { return ops_; }
  std::span<Op> mutable_ops() {
    drop_derived();
    return ops_;
  }
  std::size_t num_ops() const { return ops_.size(); }
  std::size_t num_tensors() const { return tensors_.size(); }

  std::optional<TensorId> find_tensor(std::string_view name) const;
  std::optional<OpId> find_op(std::string_view name) const;

  /// Input `i` of `op`, or nullptr when absent/omitted.
  const Tensor* input(const Op& op, std::size_t i) const;
  /// Output `i` of `op`, or nullptr when absent/omitted.
  const Tensor* output(const Op& op, std::size_t i) const;

  /// Ops in dependency order (Boost.Graph topological sort; ties by id, so
  /// the order is deterministic). Error names an op on a cycle. Kept with
  /// the graph (derived()) until it changes.
  Result<std::vector<OpId>> topological_order() const;

  /// Reorders ops_ into topological order (ids change; tensors are remapped).
  Status sort_topologically();

  std::vector<TensorId> graph_inputs;
  std::vector<TensorId> graph_outputs;
  ModelInfo info;
  std::vector<FusedPattern> fused;
  std::vector<RepeatedBlocks> blocks;

  /// The value `make()` derived from this graph alone, computed on the first
  /// call with an equal `key` (a type with ==; its type and Value name the
  /// computation, its value the options) and kept until the graph changes.
  /// Every mutable accessor (add_*, non-const op/tensor, mutable_ops,
  /// sort_topologically) drops the kept values; code that edits the public
  /// fields above in place after a derived value was read calls
  /// drop_derived() (graph::analyze does). A copy shares the kept values
  /// until either changes.
  template <class Key, class Value, class Make>
  std::shared_ptr<const Value> derived(const Key& key, Make&& make) const {
    if (!derived_) return std::make_shared<const Value>(make());
    return derived_->template get<Key, Value>(key, std::forward<Make>(make));
  }
  /// Forgets the derived values (a later derived() call computes afresh).
  void drop_derived() {
    if (!derived_ || derived_->filled()) derived_ = std::make_shared<DerivedCache>();
  }

 private:
  Result<std::vector<OpId>> compute_topological_order() const;
  std::shared_ptr<DerivedCache> derived_ = std::make_shared<DerivedCache>();
  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
  std::unordered_map<std::string, std::uint32_t> tensor_index_;
  std::unordered_map<std::string, std::uint32_t> op_index_;
};

/// Sums over the graph.
struct GraphTotals {
  std::int64_t parameter_count = 0;
  Bytes parameter_bytes;
  Flops forward_flops;
  /// forward + backward.
  Flops training_flops;
  /// Bytes of all activations (op outputs that are floating point).
  Bytes activation_bytes;
  /// Op count per "domain:type" (default domain without prefix).
  std::map<std::string, int> op_histogram;
  /// Ops without semantics rules, by kind, with counts.
  std::map<std::string, int> unknown_ops;
};
GraphTotals totals(const OpGraph& g);

/// "Type" or "domain:Type" for display and histograms.
std::string op_kind(const Op& op);

}  // namespace planner::graph
