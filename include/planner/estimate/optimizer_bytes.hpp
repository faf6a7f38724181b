#pragma once
/// The optimizer step's and the gradient accumulation passes' HBM traffic
/// per parameter, shared by the estimate (step.cpp) and the search's lower
/// bound (search/bound.cpp).

#include <cstdint>

#include "planner/cost/compute.hpp"
#include "planner/cost/memory.hpp"
#include "planner/estimate/config.hpp"

namespace planner::estimate {

/// Bytes the optimizer step streams through HBM per local parameter element
/// (Adam 38, SGD with momentum 30, plain SGD 22 with fp32 states and master
/// copy; `docs/estimate.md`). `state_bytes` per state element and `master`
/// change the states' and the master copy's share.
double optimizer_bytes_per_param(cost::Optimizer o, double state_bytes = 4.0,
                                 cost::MasterWeights master = cost::MasterWeights::fp32);

/// The gradient handling a framework runs outside the GEMMs on every
/// micro-batch (`docs/estimate.md`, "Gradient accumulation passes"):
/// memory-bound passes over the whole local (for FSDP and ZeRO-3: gathered)
/// gradient.
struct GradPass {
  double bytes = 0;         ///< HBM bytes per local parameter element and micro-batch
  bool first_free = false;  ///< the first micro-batch's gradient is assigned, not added
  /// The share of a pass each of `m` micro-batches pays on average.
  double share(std::int64_t m) const {
    return first_free && m > 0 ? static_cast<double>(m - 1) / static_cast<double>(m) : 1.0;
  }
};

/// The passes of `c.framework` at the context's training precision.
GradPass grad_pass(const ParallelConfig& c, const cost::ComputeContext& ctx);

/// Gradient buffers a framework keeps per local 16-bit parameter beyond the
/// model state, whatever the state sharding: DeepSpeed's BF16Optimizer keeps
/// the bf16 gradients next to its fp32 accumulation buffer (2 bytes under
/// bf16); 0 otherwise. Stage memory (estimate) and the search's memory floor
/// both count it.
double framework_gradient_bytes(const ParallelConfig& c, core::Precision training);

}  // namespace planner::estimate
