#pragma once
/// Time of one device's optimizer step (docs/cost-model.md, "Optimizer
/// step"): the step streams its bytes (master weights, states, gradient) at
/// the streaming bandwidth; on a device whose Adam update is slower than
/// that (a CPU's scalar update in double), at the profile's measured update
/// rate instead.

#include "planner/core/units.hpp"
#include "planner/cost/compute.hpp"
#include "planner/cost/memory.hpp"

namespace planner::cost {

/// max(params x bytes_per_param / streaming_bandwidth(ctx),
///     params / device.adam_update_rate_params_per_s) for Adam where the
/// profile gives that rate; the first term otherwise. Requires params >= 0.
Seconds optimizer_step_time(const ComputeContext& ctx, Optimizer optimizer, double params, double bytes_per_param);

}  // namespace planner::cost
