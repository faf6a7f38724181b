#pragma once
/// Predicting one training step of a layout: step time with its breakdown,
/// throughput and MFU, memory per pipeline stage, and advice when it does not
/// fit. Formulas and their sources: docs/estimate.md.
///
/// Design note. estimate() composes the lower modules, in order:
///   1. op-level sharding (sharding::lower_sharding + solve) on the model-
///      parallel mesh `mesh(cp=C,tp=T)`, with costs from the injected
///      cost::CostModel (ShardingCostOracle adapter below): every op gets its
///      strategy, every collective its place;
///   2. layers to pipeline chunks: even when the layer count divides, else a
///      balanced partition; ops outside the repeated layers go with the layer
///      before them (the embedding to the first chunk, the head and loss to
///      the last);
///   3. per chunk and micro-batch, forward and backward time = its ops'
///      times at their local shapes + their tensor/context-parallel
///      collectives (on the critical path) + ZeRO-3 weight gathers where
///      they exceed the compute they overlap;
///   4. the schedule simulated event by event (sim::simulate) with the
///      point-to-point transfers between stages;
///   5. after the last backward, per device: the exposed part of the
///      data-parallel gradient reduction (framework-dependent overlap) and
///      the optimizer step (memory-bound);
///   6. memory per pipeline rank from local (sharded) parameter and
///      activation sizes, activations times what the schedule keeps in
///      flight (the simulator's peak).
///
/// The data-parallel axis does not enter the op-level search: each replica
/// runs the graph at the micro-batch (the importer binds the batch to it).
///
/// Architecture invariant: no ONNX, no profile file, no CLI here; costs come
/// only through cost::CostModel.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/cost_model.hpp"
#include "planner/estimate/config.hpp"
#include "planner/estimate/lowering_cache.hpp"
#include "planner/estimate/timeline.hpp"
#include "planner/graph/graph.hpp"
#include "planner/layout/mesh.hpp"
#include "planner/sharding/lower_sharding.hpp"
#include "planner/sim/pipeline.hpp"

namespace planner::estimate {

/// Adapts a CostModel to the op-sharding search's oracle on `mesh`: op time
/// at the strategy's local GEMM shape, collectives placed by the mesh's
/// nodes, memory = the unit's local parameters times bytes_per_param (model
/// state after ZeRO sharding).
class CostModelOracle final : public sharding::ShardingCostOracle {
 public:
  /// `wire_scale`: bytes on the wire per byte of a graph tensor (0.5 when
  /// an f32 export trains in 16 bit).
  /// `expert_batch`: the experts' ops (named experts.<n>) run that many to
  /// a kernel (expert_batch(); cost::OpScaling::batch).
  CostModelOracle(const cost::CostModel& model, layout::DeviceMesh mesh, double bytes_per_param, double wire_scale = 1.0,
                  int expert_batch = 1)
      : model_(model), mesh_(std::move(mesh)), bytes_per_param_(bytes_per_param), wire_scale_(wire_scale),
        expert_batch_(expert_batch) {}
  Seconds op_time(const graph::Op& op, const graph::OpGraph& g, const ops::Strategy& s) const override;
  int expert_batch() const { return expert_batch_; }
  Seconds comm_time(const layout::CommStep& step, const layout::DeviceMesh& mesh) const override;
  Bytes memory(const ops::OpSharding& unit, const ops::Strategy& s, const graph::OpGraph& g,
               const layout::DeviceMesh& mesh) const override;

 private:
  const cost::CostModel& model_;
  layout::DeviceMesh mesh_;
  double bytes_per_param_;
  double wire_scale_;
  int expert_batch_;
};

/// How much of `op` a device runs under strategy `s` of its (single-op)
/// unit: fraction of FLOPs and bytes and, for MatMul/Gemm, the local GEMM
/// shape (k and n from the local operand shapes, m from the local FLOPs).
/// An op of a fused pattern gets its FLOP share only.
cost::OpScaling local_scaling(const graph::Op& op, const graph::OpGraph& g, const ops::Strategy& s,
                              const layout::DeviceMesh& mesh);

/// How many experts' ops of one MoE layer a rank runs as one kernel, given
/// `experts` per layer (0: none) and the layout: all of them where the
/// framework groups local experts (groups_local_experts: one grouped GEMM
/// over every local expert's tokens), else ep (each local expert its own
/// kernel over the tokens of all ep ranks, ep graph experts' worth; the
/// graph holds every expert over its own device's tokens). 1 without experts.
int expert_batch(int experts, const ParallelConfig& c);

/// One collective kind's exposed time.
struct CommTotals {
  std::map<std::string, Seconds> by_kind;  ///< "all_reduce", "all_gather", ...
  Seconds total() const;
};

/// Per micro-batch times of one pipeline chunk.
struct ChunkTimes {
  int first_layer = 0, last_layer = -1;  ///< layer positions [first, last]; none when last < first
  bool has_embedding = false, has_head = false;
  Seconds forward_compute, backward_compute, recompute;
  /// Tensor/context-parallel collectives on the critical path (fwd + bwd).
  Seconds model_parallel_comm;
  /// ZeRO-3 weight gathers and gradient reduce-scatters not hidden by compute.
  Seconds zero3_exposed;
  /// The framework's gradient accumulation passes after the backward
  /// (memory-bound; docs/estimate.md).
  Seconds grad_accumulation;
  Flops model_flops, hardware_flops;
  /// Forward + backward + recompute time per op class ("matmul",
  /// "attention", "elementwise", ...), per micro-batch.
  std::map<std::string, Seconds> by_class;
};

/// One collective of the chosen op-level sharding (per micro-batch, or per
/// step for gradient syncs).
struct UnitCollective {
  std::string kind;  ///< all_reduce, all_gather, ...
  std::string axis;  ///< mesh axis name
  int group_size = 1;
  Bytes bytes;       ///< per device, at the training precision
  int count = 1;     ///< times per micro-batch (per step when per_step), summed over copies
  bool backward = false;
  bool per_step = false;
  std::string where;
};

/// The chosen strategy of one op-sharding unit (shared by the copies of a
/// repeated layer).
struct UnitStrategy {
  std::string unit;                    ///< representative op (copy 0)
  std::vector<std::string> instances;  ///< first op of each copy
  std::vector<std::string> ops;        ///< the representative's ops
  std::string family, strategy, assignment;
  std::vector<std::string> inputs, outputs;  ///< layout text per port ("" absent)
  std::vector<UnitCollective> collectives;
};

/// Memory of one pipeline rank's device.
struct StageMemory {
  int stage = 0;
  cost::MemoryBreakdown breakdown;
  /// The reserved peak (with the allocator's fragmentation).
  Bytes peak() const { return breakdown.total(); }
  /// The allocated peak (without it): what must fit.
  Bytes allocated() const { return breakdown.allocated(); }
  /// Micro-batches whose activations are held at the peak (simulated).
  double in_flight = 0;
  double parameters = 0;  ///< local parameter elements
};

/// A change that would make a layout fit, with its saving on the fullest stage.
struct Advice {
  std::string change;  ///< e.g. "--zero 1" or "--recompute full"
  Bytes saves;
  bool fits = false;  ///< the layout fits after this change alone
};

/// The prediction.
struct Estimate {
  ParallelConfig config;
  std::int64_t micro_batches = 1;
  Seconds step_time;
  /// Breakdown of the step on the critical device (sums to step_time).
  Seconds compute;        ///< forward + backward (without recompute) of its busiest device
  Seconds recompute;      ///< forward again under the recompute policy
  CommTotals model_parallel;  ///< tp/cp/ep collectives on the critical path
  Seconds pipeline_p2p;   ///< point-to-point transfers on the critical path
  Seconds bubble;         ///< pipeline idle time of the critical device
  Seconds zero3_exposed;  ///< ZeRO-3 gathers/reduce-scatters not hidden
  Seconds grad_accumulation;  ///< per-micro-batch gradient passes outside the GEMMs
  Seconds dp_exposed;     ///< data-parallel gradient sync not hidden by backward
  Seconds dp_total;       ///< the data-parallel sync's whole duration
  Seconds optimizer;      ///< optimizer step
  /// Expected wait for the slowest of the N devices (straggler.hpp): the
  /// profile's device.step_time_cv x E[max of N standard normals] x the
  /// step of the typical device; 0 without a cv. Part of step_time.
  Seconds straggler;
  /// Median and 95th percentile of the step under that spread (equal to
  /// step_time without a cv).
  Seconds step_time_p50, step_time_p95;
  /// Compute time per op class on the bottleneck device (all micro-batches).
  std::map<std::string, Seconds> compute_by_class;
  /// Model FLOPs of the step (all devices), and with recompute.
  Flops model_flops, hardware_flops;
  double model_tflops_per_device = 0, hardware_tflops_per_device = 0;
  double mfu = 0, hfu = 0;
  std::int64_t parameters = 0;
  /// Parameters several ops read (a tied LM head's token embedding), by name.
  std::vector<std::string> shared_weights;
  std::vector<ChunkTimes> chunks;
  std::vector<StageMemory> stages;
  Bytes capacity;
  bool fits = true;
  /// The cost model's memory margin (CostModel::memory_margin): a layout
  /// that fits with its peak above (1 - margin) x capacity is at risk.
  double memory_margin = 0;
  /// "fits", "at risk" (fits, but within the margin of capacity) or "does
  /// not fit".
  std::string_view memory_status() const;
  std::vector<Advice> advice;
  /// One line per op-sharding unit: `name (xN): strategy`. The three
  /// descriptions below are empty under EstimateOptions::describe = false.
  std::string sharding;
  /// The same, as data (for plan files).
  std::vector<UnitStrategy> units;
  /// Op names per pipeline chunk, in topological order.
  std::vector<std::vector<std::string>> chunk_ops;
  /// The model-parallel mesh the units' layouts refer to (axes cp, tp > 1).
  layout::DeviceMesh model_mesh;
  /// Speed-of-light bound: model FLOPs / (devices x peak).
  Seconds speed_of_light;
  std::vector<std::string> notes;
  /// The step as spans per pipeline rank, laid out from this estimate's
  /// own simulation; only when asked (EstimateOptions::timeline).
  std::optional<StepTimeline> timeline;
  /// The highest stage memory.
  const StageMemory& peak_stage() const;
};

/// Predicts one training step of `g` (annotated and analysed, batch = the
/// micro-batch) under `config`, with costs from `model`. Errors (one line)
/// name the violated constraint: degrees, divisibility of heads / sequence /
/// layers by their split, an impossible placement.
/// Solves an op-sharding problem: sharding::solve (the default, fast) or an
/// exact MILP (sharding_milp's solve_milp, `--exact`), injected so this
/// module does not link CBC.
using ShardingSolver = std::function<Result<sharding::Solution>(const sharding::ShardingProblem&)>;

/// What estimate() works out beyond the step time, memory and breakdown.
struct EstimateOptions {
  /// When it does not fit, evaluate the changes that would make it fit
  /// (re-runs the estimate for other degrees).
  bool advise = true;
  /// The op-sharding solver; null = sharding::solve.
  const ShardingSolver* solver = nullptr;
  /// Lay out the step as spans (Estimate::timeline, timeline.hpp) from the
  /// simulation that times it; off, the simulation records no events.
  bool timeline = false;
  /// Where to keep and find op-level lowerings shared by the layouts of a
  /// search (lowering_cache.hpp); null: lower afresh. Same results either way.
  LoweringCache* lowering_cache = nullptr;
  /// Describe the choice (Estimate::sharding, units, chunk_ops: names and
  /// layouts as text, which a search scoring thousands of layouts only
  /// needs for the ones it keeps); off, they stay empty and every number is
  /// the same.
  bool describe = true;
};

Result<Estimate> estimate(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& config,
                          const EstimateOptions& options);
/// The same with EstimateOptions{advise, solver}: no timeline.
Result<Estimate> estimate(const graph::OpGraph& g, const cost::CostModel& model, const ParallelConfig& config,
                          bool advise = true, const ShardingSolver* solver = nullptr);

/// A lower bound on one micro-batch's work on `config`'s model-parallel
/// mesh, whatever op-level sharding estimate() chooses: the least, over
/// every choice, of its ops' times (forward, backward and recompute under
/// the model's policy) plus its model-parallel collectives (op-issued and
/// resharding, x 0.1 under tp_comm_overlap, which exposes at least 10 % of
/// each), summed over the pipeline chunks. It is the op-level lowering's
/// time-only optimum (sharding::solve_time_only without gradient syncs),
/// so nullopt when the solver cannot prove it (its beam cut). `cache` keeps
/// the lowering and the result for the layouts sharing its key. Errors, as
/// estimate() gives them: the model-parallel mesh's, heads or sequence not
/// divisible (the whole cluster's mesh is not built).
/// The search adds it to the layout's bound (search::layout_bound).
Result<std::optional<Seconds>> model_parallel_floor(const graph::OpGraph& g, const cost::CostModel& model,
                                                    const ParallelConfig& config, LoweringCache* cache = nullptr);

/// What one micro-batch of `g` (the graph's batch) keeps for backward under
/// `recompute`, whole (the search's memory floor).
struct SavedBytes {
  /// The activations: the items whose local shares (at least 1 / (tp cp) of
  /// each: a mesh axis splits one dim) a pipeline rank's stage memory holds
  /// per micro-batch in flight.
  Bytes activations;
  /// The cross-entropy buffer (the loss ops' log-probabilities, b s V):
  /// the last pipeline rank holds its local share (at least 1 / (tp cp)),
  /// halved by a fused loss, once (m times under GPipe).
  Bytes loss_buffer;
};
SavedBytes saved_bytes(const graph::OpGraph& g, const cost::CostModel& model, cost::RecomputePolicy recompute);

}  // namespace planner::estimate
