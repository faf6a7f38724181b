#include "planner/sim/schedule.hpp"

#include <algorithm>

namespace planner::sim {

int warmup_forwards(Schedule schedule, int p, int m, int v, int rank) {
  switch (schedule) {
    case Schedule::gpipe: return m;
    case Schedule::one_f_one_b: return std::min(p - rank - 1, m);
    case Schedule::interleaved: {
      const int total = m * v;
      if (m == p) return total;  // Megatron: all forwards, then all backwards
      return std::min((p - rank - 1) * 2 + (v - 1) * p, total);
    }
  }
  return 0;
}

namespace {

// Interleaved unit k of device `rank`: micro-batches in groups of p, each
// group visiting the device's local chunks 0..v-1 (forward) or v-1..0
// (backward), p micro-batches per chunk.
ScheduleStep interleaved_unit(int k, StepKind kind, int p, int v, int rank) {
  const int group_size = p * v;
  const int in_group = k % group_size;
  int local = in_group / p;
  if (kind == StepKind::backward) local = v - 1 - local;
  const int micro_batch = (k / group_size) * p + in_group % p;
  return {kind, micro_batch, local * p + rank};
}

}  // namespace

Result<DeviceOrders> device_orders(Schedule schedule, int p, int m, int v) {
  PLANNER_TRY_STATUS(validate_shape(schedule, p, m, v));
  DeviceOrders orders(static_cast<std::size_t>(p));
  for (int rank = 0; rank < p; ++rank) {
    std::vector<ScheduleStep>& out = orders[static_cast<std::size_t>(rank)];
    out.reserve(static_cast<std::size_t>(2 * m * v));
    const int units = m * v;  // forward (and backward) units of this device
    auto fwd = [&](int k) {
      return schedule == Schedule::interleaved ? interleaved_unit(k, StepKind::forward, p, v, rank)
                                               : ScheduleStep{StepKind::forward, k, rank};
    };
    auto bwd = [&](int k) {
      return schedule == Schedule::interleaved ? interleaved_unit(k, StepKind::backward, p, v, rank)
                                               : ScheduleStep{StepKind::backward, k, rank};
    };
    const int warmup = warmup_forwards(schedule, p, m, v, rank);
    for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
    for (int k = 0; k < units - warmup; ++k) {  // steady state: one forward, one backward
      out.push_back(fwd(warmup + k));
      out.push_back(bwd(k));
    }
    for (int k = units - warmup; k < units; ++k) out.push_back(bwd(k));  // cool-down
  }
  return orders;
}

Result<DeviceOrders> device_orders(const PipelineProblem& problem) {
  return device_orders(problem.schedule, problem.stages, problem.micro_batches, problem.virtual_stages);
}

}  // namespace planner::sim
