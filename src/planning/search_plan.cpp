// The layout search turned into a plan (search_plan.hpp).

#include "planner/planning/search_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "planner/core/sha256.hpp"
#include "planner/graph/analysis.hpp"
#include "planner/planning/candidates.hpp"
#include "planner/planning/model_source.hpp"
#include "planner/planning/plan_build.hpp"

namespace planner::planning {
namespace {

std::string why_lost(const search::Scored& alt, const search::Scored& best) {
  const auto& a = alt.estimate;
  const auto& b = best.estimate;
  const double pct = 100.0 * (a.step_time.value / b.step_time.value - 1.0);
  // The component that grew most.
  const std::vector<std::pair<const char*, double>> diffs = {
      {"compute", (a.compute - b.compute).value},
      {"recompute", (a.recompute - b.recompute).value},
      {"model-parallel communication", (a.model_parallel.total() - b.model_parallel.total()).value},
      {"pipeline bubble", (a.bubble - b.bubble).value},
      {"ZeRO-3 gathers", (a.zero3_exposed - b.zero3_exposed).value},
      {"gradient accumulation passes", (a.grad_accumulation - b.grad_accumulation).value},
      {"data-parallel sync", (a.dp_exposed - b.dp_exposed).value},
      {"optimizer step", (a.optimizer - b.optimizer).value}};
  const auto* worst = &diffs.front();
  for (const auto& d : diffs)
    if (d.second > worst->second) worst = &d;
  return fmt::format("+{:.1f} % step time, most from {} (+{:.3g} s)", pct, worst->first, worst->second);
}

// Binds the micro-batch and the global batch of `space` to the model.
Status bind_batches(const SearchRequest& req, const ModelSource& src, search::Space& space) {
  if (const auto mb = src.fixed_micro_batch()) {
    // A batch the user bound, or one the file fixes: the micro-batch.
    if (space.fixed.micro_batch && *space.fixed.micro_batch != *mb)
      return make_error("`fix` mb={} differs from the model's batch {}", *space.fixed.micro_batch, *mb);
    space.fixed.micro_batch = *mb;
  } else if (src.static_batch() && !req.max_micro_batch_given) {
    // A rebindable static batch: the file's batch is one of the micro-batches tried.
    space.max_micro_batch =
        static_cast<int>(std::clamp<std::int64_t>(*src.static_batch(), space.max_micro_batch, std::int64_t{1} << 30));
  }
  // The model's batch (bound, static or 1) x N.
  const std::int64_t model_batch = space.fixed.micro_batch ? *space.fixed.micro_batch : src.static_batch().value_or(1);
  space.global_batch = req.global_batch > 0 ? req.global_batch : model_batch * space.devices;
  // Every layout runs at least B / (N x largest micro-batch) micro-batches.
  const std::int64_t largest_mb = space.fixed.micro_batch.value_or(space.max_micro_batch);
  if (space.global_batch / (static_cast<std::int64_t>(space.devices) * std::max(1, static_cast<int>(largest_mb))) >
      estimate::kMaxMicroBatches)
    return make_error("`global_batch` {} needs more than {} micro-batches per step on {} devices (micro-batch at most "
                      "{}): above the planner's limit",
                      space.global_batch, estimate::kMaxMicroBatches, space.devices, largest_mb);
  return {};
}

}  // namespace

Result<const cost::CostModel*> CostModels::at(cost::RecomputePolicy rc) {
  auto it = models_.find(rc);
  if (it == models_.end()) {
    PLANNER_TRY(cost::ProfileCostModel m, make_(rc));
    it = models_.emplace(rc, std::make_unique<cost::ProfileCostModel>(std::move(m))).first;
  }
  return it->second.get();
}

Result<SearchFound> search_plan(SearchRequest req) {
  auto status = [&](const std::string& s) {
    if (req.status) req.status(s);
  };
  status(fmt::format("importing {}", req.model));
  PLANNER_TRY(ModelSource source, ModelSource::open(req.model, req.import));
  search::Space& space = req.space;
  PLANNER_TRY_STATUS(bind_batches(req, source, space));

  auto graph_at = [&](int mb) { return source.graph_at(mb); };
  CostModels::Factory make = req.cost_model;
  std::string modules_note;
  if (!req.recompute_modules_given) {
    PLANNER_TRY(const graph::OpGraph* g, source.graph_at(space.fixed.micro_batch.value_or(1)));
    if (graph::has_expert_activations(*g)) {
      const auto mods = ops::RecomputeModules::moe(req.attention == "unfused");
      req.recompute_modules = mods.text();
      make = [inner = req.cost_model, m = mods](cost::RecomputePolicy rc) -> Result<cost::ProfileCostModel> {
        PLANNER_TRY(cost::ProfileCostModel model, inner(rc));
        model.set_recompute_modules(m);
        return model;
      };
      modules_note = fmt::format("selective recompute here is Megatron's {} modules (the model has experts, as "
                                 "NVIDIA's MoE recipes set recompute_modules); --recompute-modules chooses others",
                                 req.recompute_modules);
    }
  }
  CostModels models(make);
  auto model_for = [&](cost::RecomputePolicy rc) { return models.at(rc); };
  search::Options so = req.options;
  if (req.solver) so.solver = &req.solver;
  if (!so.progress && req.status)
    so.progress = [&status](std::size_t done, std::size_t total) {
      status(fmt::format("searching: {}/{} layouts", done, total));
    };
  status("searching");
  PLANNER_TRY(search::Outcome r, search::search(space, graph_at, model_for, so));
  const auto& best = r.best.front();
  std::vector<std::string> notes =
      source.notes_at(best.candidate.config.micro_batch, req.global_batch > 0, space.devices);
  if (!modules_note.empty()) notes.push_back(modules_note);

  PLANNER_TRY(std::string sha, sha256_file(req.model));
  PlanSources src{"search", req.model, sha, req.import, req.profile, req.precision,
                  std::string(cost::recompute_name(best.candidate.recompute)), req.attention};
  src.memory_format = req.memory_format;
  src.recompute_modules = req.recompute_modules;
  // No wall-clock time in the plan: the same inputs give the same bytes.
  src.search_time_s = 0;
  src.layouts_scored = static_cast<std::int64_t>(r.scored);
  src.lower_bound_s = r.lower_bound.value;
  for (std::size_t i = 1; i < r.best.size(); ++i)
    src.alternatives.push_back({search::describe(r.best[i].candidate, req.recompute_modules),
                                r.best[i].estimate.step_time.value,
                                r.best[i].estimate.fits, why_lost(r.best[i], best)});
  src.import.batch = best.candidate.config.micro_batch;
  // A scored layout scored once more, with its timeline: a plan's
  // prediction, schedule and spans all come from that one estimate.
  auto with_timeline = [&](const search::Scored& s) -> Result<search::Scored> {
    PLANNER_TRY(const graph::OpGraph* g, source.graph_at(s.candidate.config.micro_batch));
    PLANNER_TRY(const cost::CostModel* model, models.at(s.candidate.recompute));
    const estimate::EstimateOptions eo{.advise = false, .solver = so.solver, .timeline = true};
    PLANNER_TRY(estimate::Estimate e, estimate::estimate(*g, *model, s.candidate.config, eo));
    if (e.step_time != s.estimate.step_time)
      return make_error("internal: {} re-estimates at {} s, not {} s", search::describe(s.candidate), e.step_time.value,
                        s.estimate.step_time.value);
    return search::Scored{s.candidate, std::move(e)};
  };
  PLANNER_TRY(const search::Scored winner, with_timeline(best));
  PLANNER_TRY(plan::Plan plan, build_plan(winner.estimate, src));
  if (auto st = plan::validate(plan); !st) return Error{"internal: the plan does not validate: " + st.error().message};
  std::vector<std::pair<std::size_t, plan::Plan>> candidates;
  for (std::size_t i : distinct_layouts(r.best, req.candidate_plans, req.candidate_min_gap)) {
    if (i == 0) {
      candidates.emplace_back(i, plan);
      continue;
    }
    PLANNER_TRY(const search::Scored s, with_timeline(r.best[i]));
    PLANNER_TRY(plan::Plan p, plan_of(s, src));
    candidates.emplace_back(i, std::move(p));
  }
  return SearchFound{std::move(plan), std::move(r),   space.devices_per_node, space.global_batch,
                     std::move(notes), std::move(src), std::move(candidates)};
}

}  // namespace planner::planning
