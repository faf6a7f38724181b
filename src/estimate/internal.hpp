#pragma once
// Helpers shared by the estimate sources.

#include <optional>

#include "planner/core/collective.hpp"
#include "planner/cost/cost_model.hpp"
#include "planner/layout/mesh.hpp"
#include "planner/layout/redistribute.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/sharding/lower_sharding.hpp"

#include <memory>
#include <vector>

namespace planner::estimate::detail {

/// Bytes on the wire per byte of a graph tensor: exporters write f32, a
/// 16-bit policy moves 2-byte activations (0.5); 1 when they agree.
double wire_scale(const graph::OpGraph& g, const cost::CostModel& model);

/// Time of one step on the mesh's nodes (0 for a local step or one rank),
/// its bytes multiplied by `scale` (wire_scale).
Seconds step_time(const cost::CostModel& model, const layout::CommStep& step, const layout::DeviceMesh& mesh,
                  double scale);

// How planner's executor (framework `executor`; src/executor/real_tp.cpp,
// real_compute.cpp) carries out a planned resharding step over a group of
// n ranks: the collective it issues, that collective's bytes (CommStep's
// convention) and the memory streams (bytes read or written) around it.
// It keeps every tensor either whole or split in one way, so a change of
// split dim (all_to_all) is an all-gather of the whole in the forward and
// an all-reduce of the zero-padded partial gradient in the backward; the
// backward of a forward all-gather is an all-reduce of the whole gradient
// (finalize) before the op's block is taken (out_grad), not a reduce-scatter.
// Streams, W the whole tensor's bytes: a gather fills a zeroed whole from
// a zeroed receive buffer, row by row where the blocks interleave (gather
// dim > 0: W + W + 2W; dim 0: straight into the whole, W); a block taken
// out of a whole (out_grad, port_input) is zeroed, read and written
// (3W/n); a block scattered into a zeroed partial whole (TpRank::scatter)
// is W + 3W/n; a reduced partial output is copied first (2W); a reduce-
// scatter's send buffer is laid out rank after rank (zeroed, read, written:
// 3W where blocks interleave) and its block zeroed (W/n).
struct ExecutorStep {
  core::Collective kind;
  Bytes bytes;    ///< CommStep's convention for `kind`
  Bytes streams;  ///< bytes read or written around it
};
/// A planned resharding step (its backward when `backward`) as the
/// executor runs it; nullopt for a local step.
std::optional<ExecutorStep> executor_step(const layout::CommStep& st, bool backward);

/// The layout resolved against the graph: meshes, op-level sharding and
/// the pipeline chunk of every op.
struct Layout {
  layout::DeviceMesh full;  ///< mesh(pp, dp, cp, tp) over all devices
  layout::DeviceMesh mp;    ///< the model-parallel mesh (cp, tp axes > 1)
  int chunks = 1;           ///< pp * vp
  int layers = 0;           ///< repeated layers found
  std::vector<graph::OpId> order;  ///< topological
  std::vector<int> chunk_of_op;    ///< by OpId::value
  /// The op-level lowering's time part (shared with the other layouts of a
  /// search through a LoweringCache) and its problem with this layout's
  /// state costs, hints and sequence-parallel penalties added.
  std::shared_ptr<const sharding::LoweredSharding> lowered;
  sharding::ShardingProblem problem;
  sharding::Choice choice;
  /// The chosen sharding's model state as the op-level search bounds it
  /// (units outside the layers counted pp times).
  Bytes state_bound;
  /// The least that bound can be: every unit at its smallest strategy.
  Bytes min_state_bound;
  bool exact = true;
  /// Chosen strategy of each op (nullptr: takes no part, runs whole).
  std::vector<const ops::Strategy*> strategy_of_op;
  /// Time of each op (by OpId::value) at its chosen strategy's local shape.
  std::vector<cost::OpTime> op_times;
  /// Layout of op outputs and parameters under the chosen strategies, by
  /// TensorId::value (nullptr: none, replicated); points into `lowered`.
  std::vector<const layout::TensorLayout*> layout_of_tensor;
  /// local_fraction of each tensor (by TensorId::value), worked out once
  /// the layouts are chosen (the step and memory read it several times).
  std::vector<double> fraction_of_tensor;
  /// Expert index of each op (by OpId::value), -1 outside experts (experts.hpp).
  std::vector<int> expert_of_op;
  int experts = 0;  ///< experts per MoE layer (0: no MoE)
};

/// The consumer deciding where a parameter lives: the first reader that is
/// not a pass-through (Cast, Identity, Transpose, CastLike; up to 4 deep).
std::optional<graph::OpId> param_reader(const graph::OpGraph& g, graph::TensorId t, int depth = 0);

/// Per pipeline rank (chunk % pp) other than its owner's (param_reader's)
/// whose chunks also read parameter `t` (through the same pass-throughs),
/// the first such chunk, by rank: a tied weight (the token embedding read again by the LM head
/// on the last stage) has a copy there, with its own gradient and optimizer
/// state, and the copies' gradients are all-reduced once a step (Megatron's
/// embedding group, DeepSpeed's tied modules). Empty for most parameters.
std::vector<int> param_copy_chunks(const graph::OpGraph& g, const Layout& L, graph::TensorId t, int pp);

/// Whether parameter `t` has more than one reader (through the same
/// pass-throughs): a tied weight, whatever the layout.
bool param_shared(const graph::OpGraph& g, graph::TensorId t);

/// Sets L.expert_of_op and L.experts from the op names.
void find_experts(const graph::OpGraph& g, Layout& L);
/// Experts per MoE layer of `g` (0: none), as find_experts sets L.experts.
int experts_per_layer(const graph::OpGraph& g);

/// Whether `op` (a parameter's reader) belongs to an expert.
bool is_expert_op(const Layout& L, std::optional<graph::OpId> op);

/// Tokens one micro-batch sends through a chunk's expert all-to-alls, per
/// device (local shares of the tensors at `element_bytes` per element).
struct ExpertTraffic {
  Bytes dispatch;      ///< the activations the experts' first GEMMs read
  Bytes combine;       ///< what the experts' last GEMMs write
  int moe_layers = 0;  ///< MoE layers in the chunk (one dispatch and one combine each)
};
std::vector<ExpertTraffic> expert_traffic(const graph::OpGraph& g, const Layout& L, double element_bytes);

/// Groups over the dp*cp ranks (cp fastest, as the mesh orders them): all
/// of them, the expert-parallel group (ep consecutive ranks) and the
/// expert-data-parallel group (the dp*cp/ep ranks holding the same experts,
/// stride ep).
enum class DataGroup : std::uint8_t { data, expert, expert_data };
core::Placement data_group(const Layout& L, const ParallelConfig& c, DataGroup which);

/// The repeated layers of a graph: how many distinct op.layer values, and
/// each op's position among them (ascending layer id; -1: outside layers).
struct LayerIndex {
  int layers = 0;
  std::vector<int> pos_of_op;
};
/// Computed once per graph (OpGraph::derived).
std::shared_ptr<const LayerIndex> layers_of(const graph::OpGraph& g);

/// The layout's two meshes (L.full, L.mp) on nodes of c.devices_per_node;
/// the error when an axis's groups cannot be placed evenly
/// (estimate::placement_error).
Status make_meshes(const ParallelConfig& c, Layout& L);
/// The model-parallel sub-mesh alone (cp, tp; L.mp of make_meshes).
Result<layout::DeviceMesh> model_parallel_mesh(const ParallelConfig& c);

/// Divisibility the op-level search cannot choose around: every attention
/// pattern's heads over tp, its sequence over cp (and tp under sequence
/// parallelism). The error names the pattern's first op.
Status check_attention_split(const graph::OpGraph& g, const ParallelConfig& c);

/// The lowering options of `c`'s time part on its model-parallel mesh `mp`
/// (sequence parallelism, the axis roles of tp_splits_batch); the state
/// options (grad-sync weights, memory) are the caller's.
sharding::LoweringOptions lowering_options(const ParallelConfig& c, const layout::DeviceMesh& mp);

/// A lowering's time part, and its cache entry when one is kept.
struct KeptLowering {
  std::shared_ptr<const sharding::LoweredSharding> lowered;
  std::shared_ptr<LoweringCache::Entry> kept;  ///< null: not kept
};
/// sharding::lower_times of `g` on `mp`, found in or kept in `cache` (may
/// be null) under c's key.
Result<KeptLowering> lowered_times(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                                   const layout::DeviceMesh& mp, const CostModelOracle& oracle,
                                   const sharding::LoweringOptions& lo, LoweringCache* cache);

/// Resolves `c` on `g`: meshes, divisibility, chunks, op-level sharding.
/// The op-level search bounds model state by 3/4 of the pp devices' memory,
/// or by `state_limit` (in the same units: Layout::state_bound) when given.
/// `cache`: where to keep and find the lowering's time part (may be null).
Result<Layout> build_layout(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                            const ShardingSolver* solver = nullptr, std::optional<Bytes> state_limit = std::nullopt,
                            LoweringCache* cache = nullptr);

/// The balanced cut of layers into `chunks` pipeline chunks: layer i takes
/// layer_time[i], the first chunk also `pre` (embedding), the last `post`
/// (head, loss); minimises the slowest chunk, ties to the earliest cut.
/// Layers per chunk, each >= 1. Requires: 1 <= chunks <= layers, times >= 0.
/// O(chunks x layers x log layers).
std::vector<int> balanced_chunk_sizes(const std::vector<double>& layer_time, double pre, double post, int chunks);

/// Megatron-Core's cut with the embedding and the loss each counted as a
/// layer (ParallelConfig::split_embedding_loss): (layers + 2) / chunks per
/// chunk, one fewer on the first and the last. Error: (layers + 2) not
/// divisible by chunks, or fewer than 2 slots per chunk. Requires chunks > 1.
Result<std::vector<int>> embedding_loss_chunk_sizes(int layers, int chunks);

/// Local share (0..1] of tensor `t` on one device under the chosen layouts
/// (1 when the tensor has no layout: replicated).
double local_fraction(const Layout& L, const graph::OpGraph& g, graph::TensorId t);

/// Per-pipeline-rank memory; `recompute` (and `modules`, for selective)
/// override the model's (for advice). Per rank r: `in_flight[r]`
/// micro-batches (reported) and `peak_activation[r]` bytes of activations
/// held at its peak (simulated).
std::vector<StageMemory> stage_memory(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& c,
                                      const Layout& L, cost::RecomputePolicy recompute,
                                      const std::vector<double>& in_flight, const std::vector<Bytes>& peak_activation,
                                      std::optional<cost::RecomputeModules> modules = std::nullopt);

/// Activation bytes of one micro-batch per chunk under `recompute` (and
/// `modules`; default the model's).
std::vector<Bytes> chunk_activations(const graph::OpGraph& g, const cost::CostModel& model, const Layout& L,
                                     cost::RecomputePolicy recompute,
                                     std::optional<cost::RecomputeModules> modules = std::nullopt);

}  // namespace planner::estimate::detail
