// The layouts planner validate runs (candidates.hpp).

#include "planner/planning/candidates.hpp"

#include <algorithm>

namespace planner::planning {

std::vector<int> distinct_key(const search::Candidate& c) {
  const auto& k = c.config;
  const int schedule = k.pp > 1 ? static_cast<int>(k.schedule) : -1;
  const int zero = std::max(k.zero, k.distributed_optimizer ? 1 : 0);
  return {k.dp, k.tp, k.pp, k.cp, k.ep, k.vp, k.micro_batch, schedule, zero, static_cast<int>(c.recompute)};
}

std::vector<std::size_t> distinct_layouts(const std::vector<search::Scored>& scored, std::size_t k,
                                          double min_gap) {
  std::vector<std::size_t> out;
  std::vector<std::vector<int>> seen;
  for (std::size_t i = 0; i < scored.size() && out.size() < k; ++i) {
    auto key = distinct_key(scored[i].candidate);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    if (!out.empty() && min_gap > 0 &&
        scored[i].estimate.step_time.value < (1 + min_gap) * scored[out.back()].estimate.step_time.value)
      continue;
    seen.push_back(std::move(key));
    out.push_back(i);
  }
  return out;
}

Result<plan::Plan> plan_of(const search::Scored& s, const PlanSources& winner) {
  PlanSources src = winner;
  src.recompute = std::string(cost::recompute_name(s.candidate.recompute));
  src.import.batch = s.candidate.config.micro_batch;
  src.alternatives.clear();
  PLANNER_TRY(plan::Plan p, build_plan(s.estimate, src));
  if (auto st = plan::validate(p); !st) return Error{"internal: the plan does not validate: " + st.error().message};
  return p;
}

search::Fixed baseline_space(const search::Fixed& baseline, const search::Fixed& user) {
  search::Fixed f = baseline;
  for (auto* d : {&f.tp, &f.pp, &f.cp, &f.ep, &f.vp})
    if (!*d) *d = 1;
  if (!f.micro_batch) f.micro_batch = user.micro_batch;
  if (!f.zero) f.zero = user.zero;
  if (!f.recompute) f.recompute = user.recompute;
  if (!f.schedule) f.schedule = user.schedule;
  if (!f.sequence_parallel) f.sequence_parallel = user.sequence_parallel;
  return f;
}

}  // namespace planner::planning
