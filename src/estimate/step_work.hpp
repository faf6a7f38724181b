#pragma once
// The step of estimate(), split along its own numbered steps. step.cpp
// builds a StepWork from the resolved layout and runs them in order; each
// step reads what the steps before it left there and adds its part:
//
//   1. add_compute             per-op compute at local shapes   step_compute.cpp
//   2. add_model_parallel_comm tp/cp/ep collectives, tp overlap  step_comm.cpp
//   3. count_local_parameters  local parameters per chunk        step_sharded.cpp
//      add_sharded_fetches     ZeRO-3 / FSDP gathers, scatters
//   4. add_pipeline            chunk costs, stage boundaries     step_pipeline.cpp
//   5. add_data_parallel       dp sync and optimizer per rank    step_data_parallel.cpp
//      simulate_step           the pipeline simulated, the bottleneck's breakdown, FLOPs
//   6. add_memory_and_units    memory per stage, op strategies   step_units.cpp
//
// Private to the estimate module.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "internal.hpp"
#include "planner/cost/fastest.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/estimate/optimizer_bytes.hpp"
#include "planner/sim/pipeline.hpp"

namespace planner::estimate::detail {

/// Bytes per activation element at the policy's default precision (4 for
/// fp32/tf32, 2 otherwise).
double activation_element_bytes(const cost::ComputeContext& ctx);
/// Bytes per gradient element reduced over data parallelism.
double grad_reduce_bytes(const ParallelConfig& c, const cost::ComputeContext& ctx);
/// ZeRO-3 (and FSDP SHARD_GRAD_OP): weights gathered and gradients
/// reduce-scattered per micro-batch.
bool per_micro_batch_sharding(const ParallelConfig& c);
/// Bytes per parameter element of the gathered (compute) weights.
double gathered_param_bytes(const cost::ComputeContext& ctx);

/// A collective over one of the data-parallel groups (0 for one rank or no
/// bytes); errors name the group.
Result<Seconds> dp_collective(const cost::CostModel& model, const Layout& L, const ParallelConfig& c,
                              core::Collective kind, Bytes bytes, bool single_ring = false,
                              DataGroup group = DataGroup::data);

/// What one pipeline chunk does per micro-batch beyond its ops' compute.
struct ChunkWork {
  Seconds fwd_comm, bwd_comm;
  Seconds fwd_gemm, bwd_gemm;  // MatMul/Gemm time (what TP overlap can hide behind)
  std::map<std::string, Seconds> comm_kind;  // per micro-batch, fwd + bwd
  double local_params = 0;                   // elements
  int layers = 0;
  /// Local parameter elements per gather unit: one entry per layer (FSDP
  /// flattens each wrapped block into one buffer) or per tensor (DeepSpeed
  /// ZeRO-3 fetches parameters one by one).
  std::map<std::int64_t, double> gather_units;
  /// Under expert parallelism (ep > 1): the experts' share of local_params
  /// (already divided by ep) and their gather units, synchronised over the
  /// expert-data-parallel group instead.
  double expert_params = 0;
  std::map<std::int64_t, double> expert_gather_units;
};

/// The step as it is worked out, step by step (the file comment).
struct StepWork {
  StepWork(const graph::OpGraph& graph, const cost::CostModel& cost_model, const ParallelConfig& config, Layout layout,
           bool with_timeline = false, bool with_description = true);

  const graph::OpGraph& g;
  const cost::CostModel& model;
  const ParallelConfig& c;
  const Layout L;
  const cost::ComputeContext& ctx;
  const int C;             ///< chunks (pp x vp)
  const int pp;
  const std::int64_t m;    ///< micro-batches per replica
  const double md;         ///< m as a double
  const bool full_rc;      ///< full recompute
  const bool timeline;     ///< lay out the step's spans (EstimateOptions::timeline)
  const bool describe;     ///< describe the choice as text (EstimateOptions::describe)
  Estimate e;              ///< the result, filled by the steps
  StepParts parts;         ///< how each chunk's and rank's time splits (steps 3-5)
  std::vector<ChunkWork> work;  ///< per chunk

  // 1. compute
  Flops model_flops_replica, hardware_flops_replica;
  // 2. model-parallel collectives
  double wire = 1;                    ///< detail::wire_scale
  std::vector<Seconds> mp_grad_sync;  ///< per pipeline rank, once per step
  // 3. ZeRO-3 / FSDP per micro-batch
  bool per_mb_sharding = false;
  double grad_bytes = 0, param_bytes = 0;
  std::vector<Seconds> fwd_extra, bwd_extra, dp_per_mb;  ///< per chunk
  // 4. the pipeline
  double stream_bw = 0;  ///< HBM bytes/s of streaming passes
  sim::PipelineProblem prob;
  // 5. data parallelism, optimizer, simulation
  std::vector<Seconds> dp_exposed, dp_total, opt_time;  ///< per pipeline rank
  sim::PipelineResult res;
  // 6. memory
  std::vector<double> in_flight;  ///< per pipeline rank
  std::vector<Bytes> peak_act;    ///< per pipeline rank
};

void add_compute(StepWork& s);
Status add_model_parallel_comm(StepWork& s);
void count_local_parameters(StepWork& s);
Status add_sharded_fetches(StepWork& s);
Status add_pipeline(StepWork& s);
Status add_data_parallel(StepWork& s);
Status simulate_step(StepWork& s);
void add_memory_and_units(StepWork& s);

}  // namespace planner::estimate::detail
