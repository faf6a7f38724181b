#pragma once
/// Lowering an OpGraph to the flat op-sharding problem (op_sharding.hpp),
/// and reading a solution back as per-op strategies and collectives.
///
/// Design note
///   1. Active ops: an op takes part when it reads a parameter, a graph
///      input or an active op's output, and is not Shape/Size. Shape
///      arithmetic and constant subgraphs (causal masks) take no part: their
///      outputs are free for any consumer to slice locally.
///   2. Units: a fused attention pattern (graph::FusedPattern) is one unit;
///      every other active op is one.
///   3. Repeated layers (graph::RepeatedBlocks) share strategies: copy c's
///      op at position k maps onto copy 0's op at position k, and every
///      number of that node is summed over the copies. Edges fold the same
///      way, which gives the boundary condition for free:
///
///        emb ──► [ln1 .. add2]₀ ──► [ln1 .. add2]₁ ──► ... ──► [..add2]ₗ₋₁ ──► final_ln
///                  one node per position; the layer-to-layer edges
///                  add2ₖ ──► ln1ₖ₊₁ become ONE edge add2 ──► ln1 of weight
///                  l-1 between two nodes of the same block, so the layout
///                  leaving a layer is paid for entering the next; emb ──► ln1
///                  (weight 1) and add2 ──► final_ln (weight 1) bind the ends.
///      An edge from a copy's op to the same position of the next copy
///      (a ResNet's residual Add) folds into that node's own cost.
///   4. Node costs per strategy: compute = oracle.op_time of its ops; op_comm =
///      the strategy's own collectives; grad_sync = the parameters' gradient
///      synchronisation (ops::weight_grad_sync) times grad_sync_weight; memory
///      = oracle.memory. Edge matrices: forward redistribute(producer output ->
///      consumer input) plus, when the tensor carries a gradient, backward
///      redistribute(consumer's returned gradient -> producer output without
///      its partial axes), each through oracle.comm_time.
///   5. A parameter read by several units (tied embeddings) couples them: an
///      edge charging the weight's redistribution between their layouts,
///      both ways.
///
/// Architecture invariant: search reaches costs only through
/// ShardingCostOracle; no profile, singleton or global is read here.

#include <optional>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/graph/graph.hpp"
#include "planner/layout/mesh.hpp"
#include "planner/layout/redistribute.hpp"
#include "planner/ops/sharding.hpp"
#include "planner/sharding/op_sharding.hpp"

namespace planner::sharding {

/// Costs as the op-sharding search sees them (injected; the cost module's
/// CostModel is adapted to it by the caller). Implementations are immutable
/// and side-effect free.
class ShardingCostOracle {
 public:
  virtual ~ShardingCostOracle() = default;
  /// Forward + backward time of `op` on one device running strategy `s` of
  /// its unit: s.compute_fraction of its FLOPs and bytes (cost::OpScaling's
  /// flops = bytes = compute_fraction). Requires: ops::annotate(g) ran.
  virtual Seconds op_time(const graph::Op& op, const graph::OpGraph& g, const ops::Strategy& s) const = 0;
  /// Time of one collective: step.kind over step.group_size ranks of
  /// step.axis, step.bytes by the convention of layout/redistribute.hpp.
  /// Must be 0 for local_slice.
  virtual Seconds comm_time(const layout::CommStep& step, const layout::DeviceMesh& mesh) const = 0;
  /// Bytes one device holds for `unit` under `s`: its weights with their
  /// gradients and optimizer states, and the activations kept for backward.
  virtual Bytes memory(const ops::OpSharding& unit, const ops::Strategy& s, const graph::OpGraph& g,
                       const layout::DeviceMesh& mesh) const = 0;
};

/// How to lower.
struct LoweringOptions {
  /// Which axis may split which letter (roles, sequence parallelism).
  ops::ShardingOptions sharding;
  /// Copies of a repeated layer share one strategy per position.
  bool share_repeated_layers = true;
  /// Fused attention patterns are one unit.
  bool fuse_attention = true;
  /// Per-device memory bound for ShardingProblem::memory_limit.
  std::optional<Bytes> memory_limit;
  /// Weight of the memory of units outside the repeated layers (embedding,
  /// head, loss). Under pipelining the layers spread over the stages while
  /// these sit whole on the first or last one, so with memory_limit =
  /// budget x pp a weight of pp bounds layers/pp + embedding + head by the
  /// budget of one device (estimate.cpp); 1 counts every unit as it is.
  double outside_layers_memory_weight = 1.0;
  /// Share of the gradient sync counted as time (1 = fully exposed; less
  /// when it overlaps backward).
  double grad_sync_weight = 1.0;
  /// Per mesh axis (by index), a weight replacing grad_sync_weight for the
  /// syncs over that axis; shorter than the mesh: grad_sync_weight.
  std::vector<double> axis_grad_sync_weight;
  /// Gradients are synchronised in buckets (PyTorch DDP's 25 MB buckets,
  /// MindSpore's gradient fusion, Megatron's coalesced layer-norm grads), so
  /// one tensor's sync pays the bandwidth part only:
  /// comm_time(step) - comm_time(the same step of 0 bytes).
  bool bucket_grad_sync = true;
};

/// One crossing of a tensor over an edge (or folded into a node).
struct EdgeUse {
  /// The tensor as copy 0 (the representative) names it.
  graph::TensorId tensor;
  std::size_t out_port = 0;  ///< producer node's output port (tied: its input port)
  std::size_t in_port = 0;   ///< consumer node's input port
  /// Times per training step this crossing happens.
  int count = 1;
  /// A gradient flows back (the tensor needs one).
  bool backward = false;
  /// A parameter read by both nodes rather than a produced tensor.
  bool tied = false;
};

/// A unit of the lowered problem (aligned with problem.nodes).
struct LoweredNode {
  /// Spec and strategies of the representative (copy 0).
  ops::OpSharding sharding;
  /// Ops of every copy it stands for; instances[0] is the representative.
  std::vector<std::vector<graph::OpId>> instances;
  /// Crossings from one copy of this node to the next, folded into its cost.
  std::vector<EdgeUse> self_uses;
};

/// One gradient synchronisation of a strategy's weights, before its weight
/// (LoweringOptions::grad_sync_weight / axis_grad_sync_weight) is applied.
struct GradSyncTerm {
  std::size_t axis = 0;  ///< mesh axis index of the collective
  double seconds = 0;    ///< its time (the bandwidth part under bucket_grad_sync)
};

/// The flat problem and the map back to the graph.
struct LoweredSharding {
  ShardingProblem problem;
  layout::DeviceMesh mesh;
  std::vector<LoweredNode> nodes;
  /// Crossings per problem edge (aligned with problem.edges).
  std::vector<std::vector<EdgeUse>> edge_uses;
  /// Node of each op (by OpId::value); nullopt for inactive ops.
  std::vector<std::optional<std::size_t>> node_of_op;
  /// Per node, per strategy: the gradient syncs of one copy, unweighted.
  std::vector<std::vector<std::vector<GradSyncTerm>>> grad_syncs;
};

/// Lowers `g` (annotated: ops::annotate; analysed: graph::analyze for
/// patterns and blocks) on `mesh`. Errors name the op at fault.
/// Equal to lower_times followed by add_state_costs on its problem.
Result<LoweredSharding> lower_sharding(const graph::OpGraph& g, const layout::DeviceMesh& mesh,
                                       const ShardingCostOracle& oracle, const LoweringOptions& options = {});

/// The part of the lowering that depends on the graph, the mesh, the
/// strategies and the oracle's times only: nodes, edges, and the compute,
/// op_comm and reshard costs. grad_sync and memory are left 0 and
/// memory_limit unset; grad_syncs holds the syncs unweighted. Reads
/// options.sharding, fuse_attention, share_repeated_layers and
/// bucket_grad_sync. A caller scoring many layouts that share these keeps
/// the result and prices each layout's state with add_state_costs.
Result<LoweredSharding> lower_times(const graph::OpGraph& g, const layout::DeviceMesh& mesh,
                                    const ShardingCostOracle& oracle, const LoweringOptions& options = {});

/// Adds to `problem` (lowered.problem or a copy of it) the costs that
/// depend on the weights and the memory options: each strategy's grad_sync
/// (lowered.grad_syncs weighted by options.grad_sync_weight and
/// axis_grad_sync_weight), its memory (oracle.memory, units outside the
/// layers weighted by outside_layers_memory_weight), and memory_limit.
/// Requires: problem's nodes and strategies are lowered's, grad_sync and
/// memory 0.
void add_state_costs(ShardingProblem& problem, const LoweredSharding& lowered, const graph::OpGraph& g,
                     const ShardingCostOracle& oracle, const LoweringOptions& options);

/// One collective of a chosen plan.
struct PlannedComm {
  /// op_comm, grad_sync or reshard.
  CostTerm source = CostTerm::reshard;
  bool backward = false;
  layout::CommStep step;
  /// Times per training step.
  int count = 1;
  /// `node fc1` or `edge fc1 -> gelu (t)`.
  std::string where;
  /// The node it belongs to: its own node, or an edge's consumer.
  std::size_t node = 0;
};

/// Every collective a choice implies, forward and backward (local slices
/// left out). Requires: choice fits lowered.problem.
std::vector<PlannedComm> planned_comms(const LoweredSharding& lowered, const graph::OpGraph& g, const Choice& choice);

/// The chosen strategy of node `node`.
const ops::Strategy& chosen(const LoweredSharding& lowered, const Choice& choice, std::size_t node);

/// The node standing for the op named `op_name` (any copy), if active.
std::optional<std::size_t> find_node(const LoweredSharding& lowered, const graph::OpGraph& g, std::string_view op_name);

/// One line per node: `name (xN): describe(strategy)`.
std::string describe_plan(const LoweredSharding& lowered, const Choice& choice);

}  // namespace planner::sharding
