#pragma once
/// Memory of one device in training (BRIEF §2).
///
/// Model state, bytes per parameter (W weight, G gradient, O optimizer):
///
///                          16-bit parameter        parameter kept in fp32
///   Adam                   2 + 2 (4) + 12          4 + 4 + 8
///   SGD with momentum      2 + 2 (4) + 8           4 + 4 + 4
///   SGD                    2 + 2 (4) + 4           4 + 4 + 0
///
/// 16-bit parameters carry an fp32 master copy (4 B) in O (2 B as a 16-bit
/// remainder, 0 without one: OptimizerSetup::master) and their states may
/// be 16-bit (OptimizerSetup::state_bytes: bf16 Adam 2 + 2 + 4 without a
/// master copy, NeMo's Nemotron-4 340B recipe); G is 4 with
/// fp32 main gradients (Megatron). "Kept in fp32": a parameter read by an op
/// class the precision policy keeps in fp32 (the embedding by default), and
/// every parameter under a uniform fp32 policy (fp32 training: 4 + 4 + 8).
/// Sharding over the data-parallel degree d (Rajbhandari et al., SC'20):
///   none                   W + G + O
///   ZeRO-1                 W + G + O/d
///   ZeRO-2                 W + (G + O)/d
///   ZeRO-3                 (W + G + O)/d, plus the gathered 16-bit weights
///                          of the largest layer, twice (current + prefetch)
///   distributed optimizer  W + 4 + O/d: Megatron keeps fp32 main gradients,
///                          so 6 + 12/d for bf16 Adam
///
/// Activations: saved_activations() per micro-batch times the micro-batches
/// in flight (the caller's schedule says how many: 1F1B's first stage holds
/// p, GPipe all m), plus the loss buffer per micro-batch in flight, the
/// recompute working set, and the largest transient of one op (its outputs
/// and its inputs' gradients while it runs backward; not the loss, whose
/// backward writes the logits' gradient into the loss buffer in place).
///
/// Framework reserve: the CUDA context and the communicator buffers from the
/// profile, plus allocator fragmentation: what the caching allocator holds
/// reserved beyond the live tensors at the peak. With the profile's
/// device.allocator_fragmentation_fraction f (1 - peak active / peak
/// reserved) it is f / (1 - f) of every allocation above; without one,
/// kDefaultFragmentation of them. The allocated peak (everything but the
/// fragmentation) must fit: the allocator frees its cached blocks and
/// retries before it reports out-of-memory, so the reserved peak may press
/// against capacity at a cost in time, but not fail (at risk).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/cluster/profile.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/activations.hpp"
#include "planner/cost/compute.hpp"
#include "planner/graph/graph.hpp"

namespace planner::cost {

/// The optimizer whose states are held (Adam: m, v; SGD with momentum: one buffer).
enum class Optimizer : std::uint8_t { adam, sgd_momentum, sgd };

/// What the optimizer keeps of a 16-bit parameter beyond the parameter
/// itself: an fp32 master copy (Megatron, DeepSpeed, PyTorch AMP O2), the
/// low 16 bits of it (Apex DistributedFusedAdam `store_param_remainders`,
/// NeMo's default for bf16 models: the bf16 parameter holds the high 16
/// bits), or nothing (optimizer states in the parameter's dtype update it in
/// place: NeMo distributed_fused_adam with `dtype: bf16`).
enum class MasterWeights : std::uint8_t { fp32, remainder, none };

/// "fp32", "remainder", "none".
std::string_view master_weights_name(MasterWeights m);
/// Optimizer-state elements per parameter: Adam 2 (m, v), SGD with momentum
/// 1, plain SGD 0.
double state_elements(Optimizer o);
/// Bytes per parameter of the master copy: 4, 2, 0.
double master_weight_bytes(MasterWeights m);

/// How weights, gradients and optimizer states are sharded over data parallelism.
enum class StateSharding : std::uint8_t { none, zero1, zero2, zero3, distributed_optimizer };

/// "adam", "sgd_momentum", "sgd".
std::string_view optimizer_name(Optimizer o);
/// "none", "zero1", "zero2", "zero3", "distributed_optimizer".
std::string_view sharding_name(StateSharding s);

/// Optimizer and its sharding.
struct OptimizerSetup {
  Optimizer optimizer = Optimizer::adam;
  StateSharding sharding = StateSharding::none;
  /// Data-parallel degree d the states are sharded over. Requires: >= 1.
  int data_parallel = 1;
  /// Keep 16-bit parameters' gradients in fp32 (Megatron main grads); the
  /// distributed optimizer does unless grads_16bit.
  bool fp32_grads = false;
  /// The gradient buffer is 16-bit even under the distributed optimizer
  /// (Megatron-Core with grad_reduce_in_fp32 off; NeMo grad_sync_dtype bf16).
  bool grads_16bit = false;
  /// Bytes per optimizer-state element of a 16-bit parameter (Adam's m and
  /// v, the momentum buffer): 4 (fp32) or 2 (bf16: Megatron-Core's
  /// precision-aware optimizer, NeMo distributed_fused_adam `dtype: bf16`).
  /// Parameters kept in fp32 keep fp32 states.
  double state_bytes = 4.0;
  /// Master copy of 16-bit parameters.
  MasterWeights master = MasterWeights::fp32;
};

/// The optimizer's name with what differs from fp32 states and master
/// copy, e.g. "adam" or "adam (bf16 states, no master copy)".
std::string optimizer_label(const OptimizerSetup& s);

/// Bytes per parameter before sharding.
struct StateBytes {
  double weight = 0, gradient = 0, optimizer = 0;
  /// weight + gradient + optimizer.
  double total() const { return weight + gradient + optimizer; }
};

/// W, G, O per parameter for one parameter kind (see the table above); a
/// 16-bit parameter's O is its master copy (master_weight_bytes) plus its
/// states at `state_bytes` each.
StateBytes state_bytes_per_param(Optimizer o, bool kept_fp32, bool fp32_grads, double state_bytes = 4.0,
                                 MasterWeights master = MasterWeights::fp32);

/// Parameters of the graph by kind.
struct ParamCounts {
  /// Stored in 16 bit (or fp8 compute with 16-bit storage), with an fp32 master copy.
  double low_precision = 0;
  /// Stored in fp32: read by a class the policy keeps in fp32.
  double fp32 = 0;
  /// Both kinds.
  double total() const { return low_precision + fp32; }
};

/// The ops reading parameter `t`'s values, through Cast / CastLike /
/// Identity / Transpose chains (up to 4 deep), in consumer order; Shape and
/// Size, which read only its shape, do not count.
std::vector<graph::OpId> parameter_readers(const graph::OpGraph& g, graph::TensorId t);

/// True when parameter `t` is stored in fp32: an op reading it (through
/// Cast/Identity/Transpose too) computes in fp32 or tf32 under `policy`.
bool is_kept_fp32(const graph::OpGraph& g, graph::TensorId t, const PrecisionPolicy& policy);

/// Counts floating parameters; a parameter is fp32 when any op reading it
/// (through Cast/Identity/Transpose too) computes in fp32 or tf32.
ParamCounts count_parameters(const graph::OpGraph& g, const PrecisionPolicy& policy);

/// Model state after sharding.
struct ModelState {
  Bytes weights, gradients, optimizer_states;
  /// The three together.
  Bytes total() const { return weights + gradients + optimizer_states; }
};

/// Weights, gradients and optimizer states of `params` on one device.
ModelState model_state(const ParamCounts& params, const OptimizerSetup& setup);

/// Fragmentation over the allocated bytes for a profile that gives none: an
/// estimate within the 5-10 % PyTorch's caching allocator typically loses.
inline constexpr double kDefaultFragmentation = 0.07;

/// The allocator's fragmentation as a fraction of the allocated bytes:
/// f / (1 - f) for the device's allocator_fragmentation f, else
/// kDefaultFragmentation.
double fragmentation_over_allocated(const cluster::DeviceProfile& device);

/// What share of the graph this device holds, until layouts compose it
/// exactly: e.g. parameters 1/t and activations 1/t under tensor + sequence
/// parallelism, a stage's share under pipelining; activations scale linearly
/// with the micro-batch, so b'/b turns the graph's batch into another.
struct DeviceShare {
  double parameters = 1.0;
  double activations = 1.0;
};

/// Everything memory() needs beyond the graph and the compute context.
struct MemorySetup {
  OptimizerSetup optimizer;
  /// Micro-batches whose activations are held at the peak. Requires: >= 1.
  int in_flight_micro_batches = 1;
  DeviceShare share;
  bool fuse_elementwise = true;
  /// Allocator fragmentation as a fraction of the allocated bytes; absent:
  /// fragmentation_over_allocated(the context's device).
  std::optional<double> fragmentation;
  /// Reserve the communicator's buffers (any collective on this device).
  bool communicator = true;
  /// Fused cross-entropy: the 16-bit logits are the loss buffer (their
  /// gradient is written in place), so the op producing them adds no
  /// transient. Unfused, the 16-bit logits live beside their fp32 copy.
  bool fused_loss = false;
};

/// What a memory item is, for advice on how to shrink it.
enum class MemoryKind : std::uint8_t {
  weights, gradients, optimizer_states, gathered_weights, activations, loss_buffer,
  recompute_working_set, temporary, cuda_context, communicator, fragmentation,
};
/// The enumerator's name, e.g. "optimizer_states".
std::string_view memory_kind_name(MemoryKind k);

/// One line of the breakdown.
struct MemoryItem {
  MemoryKind kind;
  Bytes bytes;
  /// E.g. "optimizer states (adam, zero1 over d=8)" or the op of the temporary.
  std::string label;
};

/// Peak memory of one device, by item.
struct MemoryBreakdown {
  Bytes weights, gradients, optimizer_states;
  /// ZeRO-3: the largest layer's weights gathered (twice: prefetch).
  Bytes gathered_weights;
  /// Activations per micro-batch x micro-batches in flight.
  Bytes activations;
  Bytes loss_buffer;
  Bytes recompute_working_set;
  /// Largest transient of one op, and that op's name.
  Bytes temporary;
  std::string temporary_op;
  Bytes cuda_context, communicator, fragmentation;
  /// Activations of one micro-batch, with per-layer detail.
  ActivationReport per_micro_batch;
  /// The setup's labels, kept for largest_items().
  std::string state_label;

  /// Sum of every item: the reserved peak the device shows (nvidia-smi).
  Bytes total() const;
  /// total() without the fragmentation: the live tensors plus the context
  /// and communicator, what must fit.
  Bytes allocated() const { return total() - fragmentation; }
  /// allocated() <= capacity (pass the device's visible memory).
  bool fits(Bytes capacity) const { return allocated() <= capacity; }
  /// Every non-zero item, largest first (ties in MemoryKind order).
  std::vector<MemoryItem> largest_items() const;
};

/// Peak memory of one device training `g` (one micro-batch = the graph's
/// batch) under `ctx` (device, precision, attention, recompute).
/// Requires: ops::annotate(g) ran; graph::analyze(g) for patterns and layers;
/// setup.optimizer.data_parallel >= 1, in_flight_micro_batches >= 1.
MemoryBreakdown memory(const graph::OpGraph& g, const ComputeContext& ctx, const MemorySetup& setup);

}  // namespace planner::cost
