#pragma once
/// The layouts `planner validate` runs: the search's best few distinct
/// layouts as plans, and the baselines' search spaces.
///
/// Two scored layouts are near-duplicates when they agree on every degree
/// (dp, tp, pp, cp, ep, vp), the micro-batch, the schedule (only where
/// pp > 1: a one-stage pipeline has none), the optimizer sharding (ZeRO
/// stage, the distributed optimizer counted as stage 1) and the recompute
/// policy; they may still differ in sequence parallelism or whether tp
/// splits the batch. Validating both would measure the same program twice,
/// so only the faster is kept.
///
/// A layout is also a near-duplicate *for a measurement* when its
/// predicted step time is within `min_gap` of the previous layout taken:
/// a measured order between two layouts predicted 0.5 % apart is the
/// host's noise, not the cost model's (planner validate's `--min-gap`;
/// on this 2-core host the spread of one layout over rounds is 2-14 %).
/// The list is fastest first, so each layout taken is at least
/// (1 + min_gap) times the one before.

#include <cstddef>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/plan/plan.hpp"
#include "planner/planning/plan_build.hpp"
#include "planner/search/search.hpp"

namespace planner::planning {

/// What makes two layouts distinct (the header's note), as one comparable value.
std::vector<int> distinct_key(const search::Candidate& c);

/// Indices into `scored` (fastest first, as search::Outcome::best) of the
/// first `k` layouts no earlier one near-duplicates, in that order; with
/// `min_gap` > 0 (a fraction, 0.03 = 3 %) each one taken after the first
/// is predicted at least (1 + min_gap) times the previous one taken.
std::vector<std::size_t> distinct_layouts(const std::vector<search::Scored>& scored, std::size_t k,
                                          double min_gap = 0);

/// The plan of a scored layout of the search whose winner's plan was built
/// from `winner` (SearchFound::sources): the same model, profile and
/// settings, its own recompute policy and micro-batch, no alternatives.
/// `s.estimate` carries its timeline (search_plan re-scores it so:
/// SearchRequest::candidate_plans). Errors: build_plan's, or the plan does
/// not validate (internal).
Result<plan::Plan> plan_of(const search::Scored& s, const PlanSources& winner);

/// The space of a baseline: the baseline's own pins; each of tp, pp, cp,
/// ep, vp it does not name is 1 (dp takes the rest of the devices); the
/// micro-batch, ZeRO stage, recompute, schedule and sequence parallelism it
/// does not name stay as `user` (the --fix of the search) pins them, else
/// searched.
search::Fixed baseline_space(const search::Fixed& baseline, const search::Fixed& user);

}  // namespace planner::planning
