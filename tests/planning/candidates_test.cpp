// The distinct layouts planner validate runs, and its baselines' spaces
// (planning/candidates.hpp).

#include "planner/planning/candidates.hpp"

#include <catch2/catch.hpp>

using namespace planner;

namespace {
search::Scored scored(int dp, int tp, int pp, int mb, cost::RecomputePolicy rc = cost::RecomputePolicy::none) {
  search::Scored s;
  s.candidate.config.dp = dp;
  s.candidate.config.tp = tp;
  s.candidate.config.pp = pp;
  s.candidate.config.micro_batch = mb;
  s.candidate.recompute = rc;
  return s;
}
}  // namespace

TEST_CASE("distinct_layouts keeps the first of near-duplicates, fastest first") {
  std::vector<search::Scored> v = {scored(4, 2, 1, 1), scored(4, 2, 1, 1), scored(8, 1, 1, 1), scored(4, 2, 1, 2),
                                   scored(4, 2, 1, 1, cost::RecomputePolicy::full)};
  // 1: same degrees and micro-batch as 0, sequence parallel only: a near-duplicate.
  v[1].candidate.config.sequence_parallel = true;
  CHECK(planning::distinct_layouts(v, 10) == std::vector<std::size_t>{0, 2, 3, 4});
  CHECK(planning::distinct_layouts(v, 2) == std::vector<std::size_t>{0, 2});
  // The distributed optimizer counts as ZeRO 1.
  auto a = scored(8, 1, 1, 1), b = scored(8, 1, 1, 1);
  a.candidate.config.zero = 1;
  b.candidate.config.distributed_optimizer = true;
  CHECK(planning::distinct_key(a.candidate) == planning::distinct_key(b.candidate));
  // A one-stage pipeline has no schedule; two stages do.
  auto c = scored(8, 1, 1, 1), d = scored(8, 1, 1, 1);
  d.candidate.config.schedule = sim::Schedule::gpipe;
  CHECK(planning::distinct_key(c.candidate) == planning::distinct_key(d.candidate));
  c.candidate.config.pp = d.candidate.config.pp = 2;
  CHECK(planning::distinct_key(c.candidate) != planning::distinct_key(d.candidate));
}

TEST_CASE("distinct_layouts with a gap takes a ladder of predicted times") {
  // Predicted 1.00, 1.01, 1.02, 1.05, 1.06, 1.20 s, all distinct layouts.
  std::vector<search::Scored> v = {scored(8, 1, 1, 1), scored(8, 1, 1, 2), scored(4, 2, 1, 1),
                                   scored(4, 2, 1, 2), scored(2, 4, 1, 1), scored(2, 2, 2, 1)};
  const double t[] = {1.00, 1.01, 1.02, 1.05, 1.06, 1.20};
  for (std::size_t i = 0; i < v.size(); ++i) v[i].estimate.step_time = Seconds{t[i]};
  // Gap 3 %: 1.00; 1.01 and 1.02 are under 1.03; 1.05 >= 1.03; then the
  // next must reach 1.05 x 1.03 = 1.0815: 1.06 is under, 1.20 is taken.
  CHECK(planning::distinct_layouts(v, 10, 0.03) == std::vector<std::size_t>{0, 3, 5});
  CHECK(planning::distinct_layouts(v, 2, 0.03) == std::vector<std::size_t>{0, 3});
  // Gap 0: every distinct layout.
  CHECK(planning::distinct_layouts(v, 10, 0.0).size() == 6);
  // A near-duplicate layout is skipped before the gap is measured from it:
  // 1.05 is index 3's duplicate here, so the ladder goes 1.00, 1.06, 1.20.
  v[3] = scored(8, 1, 1, 1);
  v[3].estimate.step_time = Seconds{1.05};
  CHECK(planning::distinct_layouts(v, 10, 0.03) == std::vector<std::size_t>{0, 4, 5});
}

TEST_CASE("baseline_space: unnamed degrees are 1, other pins follow --fix") {
  search::Fixed user;
  user.tp = 4;
  user.recompute = cost::RecomputePolicy::full;
  user.micro_batch = 2;
  search::Fixed base;
  base.tp = 2;
  base.micro_batch = 1;
  const auto f = planning::baseline_space(base, user);
  CHECK(f.tp == 2);       // the baseline's own
  CHECK(f.pp == 1);       // unnamed degrees: 1
  CHECK(f.cp == 1);
  CHECK(!f.dp);           // the rest of the devices
  CHECK(f.micro_batch == 1);
  CHECK(f.recompute == cost::RecomputePolicy::full);  // from --fix
  const auto dp_only = planning::baseline_space(search::Fixed{}, search::Fixed{});
  CHECK(dp_only.tp == 1);
  CHECK(dp_only.pp == 1);
  CHECK(!dp_only.zero);
}
