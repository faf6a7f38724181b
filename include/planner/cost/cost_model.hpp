#pragma once
/// The cost model: time of each op and memory of a training setup on one
/// device, from a cluster profile. Formulas and sources: docs/cost-model.md.
///
/// Design note. The module is four layers of plain functions over value
/// types, and one interface on top:
///
///   precision.hpp    PrecisionPolicy: compute dtype per op class
///   compute.hpp      time_of(op, graph, OpScaling, ComputeContext): roofline
///                    + launch per op; attention patterns as one flash kernel
///   activations.hpp  saved_activations(graph, options): what backward keeps
///   memory.hpp       memory(graph, context, MemorySetup): weights, grads,
///                    optimizer states (ZeRO / distributed optimizer),
///                    activations, buffers, reserve
///   cost_model.hpp   CostModel: the only way search code sees costs
///
/// The search receives a `const CostModel&` and asks it; it never reads a
/// profile, a global or a singleton. ProfileCostModel answers from a
/// ClusterProfile; tests inject their own implementation.
///
/// Costs are per device: how an op is split over devices enters as OpScaling
/// (time) and DeviceShare (memory), set by the layout/sharding code that
/// composes this module. Nothing here knows about meshes or schedules.
///
/// Architecture invariant: cost depends on graph, ops and cluster (and core);
/// it includes no ONNX header and knows nothing about search, layouts or
/// pipelines.

#include <optional>

#include "planner/cluster/collective.hpp"
#include "planner/cluster/profile.hpp"
#include "planner/core/collective.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/cost/activations.hpp"
#include "planner/cost/compute.hpp"
#include "planner/cost/memory.hpp"
#include "planner/cost/precision.hpp"

namespace planner::cost {

/// Costs as the search sees them. Implementations are immutable after
/// construction and safe to call from several threads.
class CostModel {
 public:
  virtual ~CostModel() = default;

  /// Time of `op` (forward, backward, recompute) on one device executing
  /// `scaling` of it. Requires: ops::annotate(g) ran.
  virtual OpTime op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling) const = 0;

  /// Time of one collective of `message` bytes over the ranks in `where`.
  /// Errors (one line) for an impossible placement.
  virtual Result<Seconds> collective(core::Collective kind, Bytes message, core::Placement where) const = 0;

  /// Peak memory of one device training `g`.
  virtual MemoryBreakdown memory(const graph::OpGraph& g, const MemorySetup& setup) const = 0;

  /// Memory a device offers (what MemoryBreakdown::fits is checked against).
  virtual Bytes device_memory() const = 0;

  /// Peak FLOP/s of the default precision, for model FLOPs utilisation.
  virtual FlopsPerSecond peak() const = 0;

  /// Device, precision policy, attention mode and recompute policy the
  /// times are for (memory-bound work such as the optimizer step streams at
  /// context().device()'s achievable bandwidth).
  virtual const ComputeContext& context() const = 0;

  /// Coefficient of variation of one device's step time (the profile's
  /// device.step_time_cv, with its source), when the profile gives one: the
  /// synchronous step waits for the slowest of N devices (estimate/straggler.hpp).
  virtual std::optional<double> step_time_cv() const { return context().device().step_time_cv; }

  /// Fraction of device_memory() a plan should leave free for what the
  /// memory prediction misses (the profile's device.memory_margin_fraction,
  /// with its source; 0 when absent).
  virtual double memory_margin() const { return context().device().memory_margin.value_or(0.0); }

  /// The caching allocator's fragmentation over the allocated bytes (the
  /// profile's device.allocator_fragmentation_fraction f as f / (1 - f),
  /// with its source; kDefaultFragmentation when absent).
  virtual double fragmentation() const { return fragmentation_over_allocated(context().device()); }
};

/// CostModel from a cluster profile.
class ProfileCostModel final : public CostModel {
 public:
  /// Validates the context (see ComputeContext::create); `channels_last`:
  /// ComputeContext::set_channels_last.
  static Result<ProfileCostModel> create(cluster::ClusterProfile profile, PrecisionPolicy precision,
                                         AttentionMode attention = AttentionMode::flash,
                                         RecomputePolicy recompute = RecomputePolicy::none,
                                         bool fuse_elementwise = false, bool channels_last = false);

  /// time_of() under the model's context.
  OpTime op_time(const graph::Op& op, const graph::OpGraph& g, const OpScaling& scaling) const override;
  /// cluster::collective_time() on the profile's interconnect.
  Result<Seconds> collective(core::Collective kind, Bytes message, core::Placement where) const override;
  /// cost::memory() under the model's context.
  MemoryBreakdown memory(const graph::OpGraph& g, const MemorySetup& setup) const override;
  /// The device's visible memory (cudaMemGetInfo total).
  Bytes device_memory() const override;
  /// Peak of the policy's default precision.
  FlopsPerSecond peak() const override;

  /// ComputeContext::set_executor_kernels.
  void set_executor_kernels(bool on) { ctx_.set_executor_kernels(on); }
  /// ComputeContext::set_recompute_modules.
  void set_recompute_modules(RecomputeModules m) { ctx_.set_recompute_modules(m); }
  /// The profile it answers from.
  const cluster::ClusterProfile& profile() const { return profile_; }
  /// Device, precision, attention mode and recompute policy.
  const ComputeContext& context() const override { return ctx_; }

 private:
  ProfileCostModel(cluster::ClusterProfile profile, ComputeContext ctx)
      : profile_(std::move(profile)), ctx_(std::move(ctx)) {}
  cluster::ClusterProfile profile_;
  ComputeContext ctx_;
};

/// Sum of op_time over every op of `g` (each op whole): a single-device step
/// of one micro-batch, without communication or optimizer.
OpTime graph_time(const CostModel& model, const graph::OpGraph& g);

}  // namespace planner::cost
