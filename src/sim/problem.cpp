#include "planner/sim/problem.hpp"

#include <cmath>

namespace planner::sim {

std::string_view schedule_name(Schedule s) {
  switch (s) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved: return "interleaved";
  }
  return "?";
}

Status validate_shape(Schedule schedule, int stages, int micro_batches, int virtual_stages) {
  if (stages < 1) return make_error("pipeline: stages must be >= 1, got {}", stages);
  if (micro_batches < 1) return make_error("pipeline: micro_batches must be >= 1, got {}", micro_batches);
  if (virtual_stages < 1) return make_error("pipeline: virtual_stages must be >= 1, got {}", virtual_stages);
  if (schedule != Schedule::interleaved && virtual_stages != 1)
    return make_error("pipeline: virtual_stages = {} needs the interleaved schedule ({} runs one chunk per device)",
                      virtual_stages, schedule_name(schedule));
  if (schedule == Schedule::interleaved && micro_batches % stages != 0)
    return make_error(
        "pipeline: the interleaved schedule requires micro_batches % stages == 0 (m = {} is not a multiple of p = {})",
        micro_batches, stages);
  return Status::success();
}

namespace {

// True for a time or byte count that is negative, NaN or infinite.
bool bad(double x) { return !std::isfinite(x) || x < 0.0; }

}  // namespace

Status validate(const PipelineProblem& pr) {
  PLANNER_TRY_STATUS(validate_shape(pr.schedule, pr.stages, pr.micro_batches, pr.virtual_stages));
  const auto chunks = static_cast<std::size_t>(pr.num_chunks());
  if (pr.chunks.size() != chunks)
    return make_error("pipeline: chunks has {} entries, expected stages x virtual_stages = {}", pr.chunks.size(),
                      chunks);
  if (!pr.boundaries.empty() && pr.boundaries.size() != chunks - 1)
    return make_error("pipeline: boundaries has {} entries, expected 0 or chunks - 1 = {}", pr.boundaries.size(),
                      chunks - 1);
  if (!pr.extra.empty() && pr.extra.size() != static_cast<std::size_t>(pr.stages))
    return make_error("pipeline: extra has {} entries, expected 0 or stages = {}", pr.extra.size(), pr.stages);
  for (std::size_t c = 0; c < chunks; ++c) {
    const ChunkCost& k = pr.chunks[c];
    if (bad(k.forward.value)) return make_error("pipeline: chunk {} forward time {} is not finite >= 0", c, k.forward.value);
    if (bad(k.backward.value))
      return make_error("pipeline: chunk {} backward time {} is not finite >= 0", c, k.backward.value);
    if (bad(k.activation.value))
      return make_error("pipeline: chunk {} activation bytes {} is not finite >= 0", c, k.activation.value);
  }
  for (std::size_t c = 0; c < pr.boundaries.size(); ++c) {
    if (bad(pr.boundaries[c].forward.value) || bad(pr.boundaries[c].backward.value))
      return make_error("pipeline: boundary {} transfer time (forward {}, backward {}) is not finite >= 0", c,
                        pr.boundaries[c].forward.value, pr.boundaries[c].backward.value);
  }
  for (std::size_t d = 0; d < pr.extra.size(); ++d) {
    if (bad(pr.extra[d].value)) return make_error("pipeline: extra time of device {} ({}) is not finite >= 0", d, pr.extra[d].value);
  }
  return Status::success();
}

PipelineProblem uniform_problem(Schedule schedule, int stages, int micro_batches, int virtual_stages,
                                ChunkCost chunk, BoundaryCost boundary) {
  PipelineProblem pr;
  pr.stages = stages;
  pr.micro_batches = micro_batches;
  pr.schedule = schedule;
  pr.virtual_stages = virtual_stages;
  const int chunks = stages * virtual_stages;
  if (chunks >= 1) {
    pr.chunks.assign(static_cast<std::size_t>(chunks), chunk);
    pr.boundaries.assign(static_cast<std::size_t>(chunks - 1), boundary);
  }
  return pr;
}

}  // namespace planner::sim
