#include "planner/cost/optimizer_time.hpp"

#include <algorithm>

#include "planner/cost/fastest.hpp"

namespace planner::cost {

Seconds optimizer_step_time(const ComputeContext& ctx, Optimizer optimizer, double params, double bytes_per_param) {
  Seconds t(params * bytes_per_param / streaming_bandwidth(ctx).value);
  // The update rate is planner's executor's Adam (ComputeContext::executor_kernels).
  if (const auto rate = ctx.device().adam_update_rate_params_per_s;
      rate && optimizer == Optimizer::adam && ctx.executor_kernels())
    t = std::max(t, Seconds(params / *rate));
  return t;
}

}  // namespace planner::cost
