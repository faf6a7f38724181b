#pragma once
/// Op-level sharding: for one op (or one fused attention pattern) on a device
/// mesh, the strategies it may run under -- what MindSpore's `shard()` sets by
/// hand (`MatMul.shard(((1,4),(4,1)))`), here enumerated so that a search
/// (sharding/op_sharding.hpp) can pick one per op.
///
/// Design note
///   Every rule describes its op as an einsum over named LETTERS (its
///   iteration space) -- a ShardSpec. MatMul `x[b,s,k] W[k,n] -> y[b,s,n]`;
///   LayerNorm `x[b,s,h] -> y[b,s,h]` with h normalised; Gather
///   `T[V,h] ids[b,s] -> y[b,s,h]`. Rules live in a table, one file per op
///   family (src/ops/shard_matmul.cpp, shard_elementwise.cpp, shard_norm.cpp,
///   shard_attention.cpp, shard_embedding.cpp, shard_conv.cpp,
///   shard_movement.cpp), concatenated by src/ops/shard_table.cpp. A rule
///   only says which letters exist, which tensor dims carry them and which
///   may be split; ONE engine (src/ops/shard_engine.cpp) derives everything
///   else mechanically, so no family re-implements layouts or gradients:
///
///   strategy = each mesh axis (size > 1) assigned to one letter, or to none
///
///     MatMul x[m,k] W[k,n], mesh(dp=2,tp=4), dp->m, tp->n  ("column parallel")
///       x  [dp,-]        W [-,tp]        y [dp,tp]           compute 1/8
///       dx [dp,-]partial(tp)   n is in y, not in x: dX = dY W^T sums over n
///       dW [-,tp]partial(dp)   m is in y, not in W: the data-parallel sync
///     ... dp->m, tp->k ("row parallel")
///       x  [dp,tp]       W [tp,-]        y [dp,-]partial(tp) k is in no output
///
///   - input and output layouts: a dim carrying letter l is split over the
///     axes assigned to l, in mesh order (so dp and tp on one letter give
///     [dp*tp]);
///   - an output is a partial sum over the axes of every letter it lacks
///     (the contraction k above; the vocabulary of a row-sharded embedding);
///   - the gradient an op returns for input i is partial over the axes of
///     every letter that is in an output but not in input i (Megatron's f:
///     a column-parallel MatMul returns dX partial over tp). Whoever produced
///     input i receives it through resharding: all-reduce when the producer
///     holds it replicated, reduce-scatter when sequence-split. For a
///     parameter the same partial gradient is the data-parallel gradient
///     synchronisation (weight_grad_sync());
///   - a letter marked SplitRule::costed (a norm's or softmax's normalised
///     dim, the vocabulary of a cross-entropy) may be split at the price of
///     all-reduces of per-row statistics, forward and backward, listed in the
///     strategy's own collectives;
///   - compute fraction = 1 / (product of the assigned axes' sizes).
///   Consumers never take partial inputs: a partial output is resolved on the
///   outgoing edge (all-reduce to replicated, reduce-scatter to a split), and
///   the backward of every edge is the redistribution of the consumer's
///   returned gradient into the producer's output layout, so the transposes
///   (all-reduce <-> nothing, reduce-scatter <-> all-gather, slice <->
///   all-gather) follow from layout::redistribute without a table.
///
///   Which axis may split which letter is a policy (ShardingOptions): each
///   letter has a DimKind propagated through the graph from its inputs
///   (batch, sequence, hidden = the residual stream's feature dim, inner =
///   weight-owned dims: heads, ffn, vocabulary, channels). A data axis splits
///   batch letters; a model axis splits inner letters, and sequence letters
///   when sequence parallelism is on; `any` splits everything. Keeping model
///   axes off the hidden dim is what "tensor parallelism without sequence
///   parallelism" means: the residual stream stays whole over tp.
///
/// Architecture invariant: ops depends on graph and layout only; nothing
/// here knows costs in seconds (the search's oracle does).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "planner/ops/assignment.hpp"
#include "planner/core/units.hpp"
#include "planner/graph/graph.hpp"
#include "planner/layout/mesh.hpp"
#include "planner/layout/redistribute.hpp"
#include "planner/layout/tensor_layout.hpp"

namespace planner::ops {

/// What a tensor dim (or an op's letter) is to the model; a letter's kind is
/// the highest of its input dims' kinds (batch > sequence > hidden > inner).
enum class DimKind : std::uint8_t {
  inner,     ///< owned by weights: heads, ffn width, vocabulary, channels
  hidden,    ///< the residual stream's feature dim (graph features, embedding width)
  sequence,  ///< tokens other than the batch: sequence positions
  batch,     ///< the dim that scales with the batch size
};
/// "inner", "hidden", "sequence", "batch".
std::string_view dim_kind_name(DimKind k);

/// Per tensor id, the kind of each dim (empty for tensors of inactive ops).
using DimKinds = std::vector<std::vector<DimKind>>;

/// How a mesh axis may be used by op-level sharding.
enum class AxisRole : std::uint8_t {
  data,      ///< batch letters only (data parallelism)
  model,     ///< inner letters; sequence letters too when sequence parallelism is on
  sequence,  ///< sequence letters only (context parallelism)
  any,       ///< every splittable letter
};
/// "data", "model", "sequence", "any".
std::string_view axis_role_name(AxisRole r);

/// The policy strategies are enumerated under.
struct ShardingOptions {
  /// Role per mesh axis index; axes beyond the vector take role_from_name().
  std::vector<AxisRole> roles;
  /// Model axes may split sequence letters (Korthikanti et al.'s sequence
  /// parallelism: norms and elementwise ops between the tensor-parallel
  /// regions run on a slice of the sequence).
  bool sequence_parallel = false;

  /// The role of `axis`.
  AxisRole role(layout::MeshAxis axis, const layout::DeviceMesh& mesh) const;
  /// Default role of an axis name: dp/data/batch -> data; tp/mp/model ->
  /// model; cp/context/seq -> sequence; anything else -> any.
  static AxisRole role_from_name(std::string_view name);
};

/// Whether and how a letter may be split.
enum class SplitRule : std::uint8_t {
  free,       ///< split it if every dim carrying it divides
  forbidden,  ///< never split (spatial dims, a Concat axis, attention's key length)
  costed,     ///< split at the price of statistics all-reduces (normalised dims)
};

/// One letter of an op's iteration space.
struct Letter {
  std::string name;
  SplitRule rule = SplitRule::free;
  /// When > 0 the split count must also divide this (attention heads hidden
  /// inside a [b,s,h] dim).
  std::int64_t granule = 0;
  /// SplitRule::costed only: input port whose per-row statistics are
  /// reduced (fp32, the port's size without this letter's dim), and how many
  /// such statistics are all-reduced forward and backward per split axis.
  int stats_port = 0;
  int forward_stats = 0;
  int backward_stats = 0;
  /// Kind given to output dims carrying this letter, when it is not the
  /// letter's own (an embedding's output width is hidden although its table
  /// column is inner).
  std::optional<DimKind> output_kind;
};

/// A tensor the op reads or writes, and the letter of each of its dims.
struct ShardPort {
  /// Absent for an omitted optional input or output.
  std::optional<graph::TensorId> tensor;
  /// Letter index per dim; -1 = this dim is never split (broadcast size-1
  /// dims, minor dims of a reshape group, spatial dims).
  std::vector<int> dims;
};

struct ShardSpec;
struct Strategy;
/// Op-specific collectives an assignment needs beyond what the engine
/// derives (context-parallel com.microsoft Attention gathers k and v).
/// `axis_letter[a]` is the letter mesh axis a is assigned to, or -1.
using ExtraCommFn = void (*)(const ShardSpec& spec, const graph::OpGraph& g, const layout::DeviceMesh& mesh,
                             std::span<const int> axis_letter, Strategy& s);

/// An op (or a fused pattern) as an einsum over letters.
struct ShardSpec {
  /// Family that wrote it: "matmul", "elementwise", "attention", ...,
  /// "replicated" for an op without a rule.
  std::string family;
  /// The ops it stands for (one, or a fused pattern's ops in order).
  std::vector<graph::OpId> ops;
  std::vector<Letter> letters;
  /// For a single op: its inputs and outputs by position. For a fused
  /// pattern: the tensors crossing its boundary.
  std::vector<ShardPort> inputs;
  std::vector<ShardPort> outputs;
  ExtraCommFn extra = nullptr;
};

/// One way to run an op on the mesh.
struct Strategy {
  /// MindSpore `shard()` notation: blocks per dim of each input, e.g.
  /// `((1,4),(4,1))` (integer constant inputs and scalars left out).
  std::string name;
  /// Which axis splits which letter (text form `dp:m tp:n`; replicated when
  /// no axis is assigned).
  Assignment assignment;
  /// Layout of each input port (nullopt: absent port).
  std::vector<std::optional<layout::TensorLayout>> inputs;
  /// Layout of the gradient the op returns for each input port: the input's
  /// layout, partial over the axes whose letters the input lacks but an
  /// output has (nullopt: absent or non-floating port).
  std::vector<std::optional<layout::TensorLayout>> input_grads;
  /// Layout of each output port; may be partial (contractions).
  std::vector<std::optional<layout::TensorLayout>> outputs;
  /// Share of the op's FLOPs and bytes one device executes.
  double compute_fraction = 1.0;
  /// Collectives the op issues itself (not resharding), per direction.
  std::vector<layout::CommStep> forward_comm;
  std::vector<layout::CommStep> backward_comm;
};

/// An op's (or pattern's) spec and its strategies. strategies[0] is always
/// the replicated one.
struct OpSharding {
  ShardSpec spec;
  std::vector<Strategy> strategies;
};

/// Writes the spec of one op. Returns nullopt when the rule does not apply
/// to this instance (unsupported attributes or shapes).
using ShardSpecFn = std::optional<ShardSpec> (*)(const graph::OpGraph& g, graph::OpId op);

/// One row of the sharding rule table.
struct ShardRule {
  std::string_view domain;  ///< "" = default ONNX domain
  std::string_view type;
  ShardSpecFn fn;
};

/// All rows, sorted by (domain, type). Ops of OpClass elementwise that have
/// no row of their own use the broadcasting rule (see op_spec()).
std::span<const ShardRule> shard_rules();

/// The spec of `op`: its row's, else the broadcasting rule for elementwise
/// ops whose outputs have the broadcast shape of their inputs, else the
/// replicated spec (no letters: correct but costly).
ShardSpec op_spec(const graph::OpGraph& g, graph::OpId op);

/// The spec of a fused attention pattern (graph::FusedPattern): letters
/// batch, heads and query length over its boundary tensors. nullopt when the
/// pattern's shapes are not [b,n,s,d]-like; its ops are then specced singly.
std::optional<ShardSpec> pattern_spec(const graph::OpGraph& g, const graph::FusedPattern& p);

/// The spec with no letters: every port whole on every device.
ShardSpec replicated_spec(const graph::OpGraph& g, graph::OpId op);

/// Kinds of every dim of every tensor, propagated in topological order
/// through op_spec() of each op from the graph inputs (batch_axis -> batch;
/// other dims of integer inputs -> sequence; of float inputs: last ->
/// hidden, middle -> sequence), parameters and constants (inner).
/// A dim with batch_axis set is batch whatever the propagation says.
DimKinds dim_kinds(const graph::OpGraph& g);

/// dim_kinds(g), computed once per graph and kept with it
/// (OpGraph::derived): what repeated lowerings of one graph read.
std::shared_ptr<const DimKinds> shared_dim_kinds(const graph::OpGraph& g);

/// Every strategy of `spec` on `mesh` under `options`: assignments of the
/// axes of size > 1 to letters their role allows (or to none) whose splits
/// divide every dim carrying the letter (and its granule). Deduplicated by
/// layouts; the replicated strategy first.
OpSharding enumerate_strategies(ShardSpec spec, const graph::OpGraph& g, const layout::DeviceMesh& mesh,
                                const ShardingOptions& options, const DimKinds& kinds);

/// Bytes one device holds of `t` laid out as `l` (a partial tensor holds a
/// full-size addend of its block). Requires: l valid for t's shape.
Bytes local_bytes(const graph::Tensor& t, const layout::TensorLayout& l, const layout::DeviceMesh& mesh);

/// The gradient synchronisation of input port `port` (a parameter): the
/// steps from input_grads[port] to inputs[port] -- an all-reduce over every
/// axis that splits the op's work but not the weight (data parallelism).
/// Empty when the port is absent, not floating, or needs no sync.
std::vector<layout::CommStep> weight_grad_sync(const OpSharding& op, const Strategy& s, std::size_t port,
                                               const graph::OpGraph& g, const layout::DeviceMesh& mesh);

/// One line: `((1,4),(4,1)) [dp:m tp:n] in [dp,-] [-,tp] out [dp,tp]`.
std::string describe(const OpSharding& op, const Strategy& s, const layout::DeviceMesh& mesh);

}  // namespace planner::ops
