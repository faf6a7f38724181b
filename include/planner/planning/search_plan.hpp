#pragma once
/// The layout search turned into a plan: what `planner search` writes and
/// `planner check` gates. The CLI builds a SearchRequest from its flags;
/// this module binds the micro-batch to the model (ModelSource), provides the
/// graphs and cost models the search asks for, runs search::search and
/// builds the winner's plan.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/cost/cost_model.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/plan/plan.hpp"
#include "planner/planning/plan_build.hpp"
#include "planner/search/search.hpp"

namespace planner::planning {

/// The cost model of each recompute policy, built on first use by `make`.
class CostModels {
 public:
  using Factory = std::function<Result<cost::ProfileCostModel>(cost::RecomputePolicy)>;
  explicit CostModels(Factory make) : make_(std::move(make)) {}
  Result<const cost::CostModel*> at(cost::RecomputePolicy rc);

 private:
  Factory make_;
  std::map<cost::RecomputePolicy, std::unique_ptr<cost::ProfileCostModel>> models_;
};

struct SearchRequest {
  std::string model;          ///< ONNX file
  onnx::ImportOptions import; ///< import.batch: a batch the user bound (pins the micro-batch)
  /// The profile the cost models are built from, as the plan names it.
  ProfileRef profile;
  /// The space, all but its micro-batch binding and global batch, which
  /// follow from the model (space.fixed.micro_batch, max_micro_batch,
  /// global_batch are completed here).
  search::Space space;
  /// 0: the model's batch (bound, static or 1) x devices.
  std::int64_t global_batch = 0;
  /// space.max_micro_batch was given by the user (a static batch does not raise it).
  bool max_micro_batch_given = false;
  /// options.solver is set from `solver` (leave it null).
  search::Options options;
  /// The op-level sharding solver (empty: the search's default).
  estimate::ShardingSolver solver;
  /// The cost model of a recompute policy (precision, attention and memory
  /// format as the user set them).
  CostModels::Factory cost_model;
  /// Recorded in the plan: precision, attention, memory format as given.
  std::string precision, attention, memory_format = "nchw";
  /// ops::RecomputeModules::text of selective recompute ("" = core_attn).
  std::string recompute_modules;
  /// The user chose the modules (--recompute-modules). When not, and the
  /// model has experts' activations (graph::find_recompute_modules), the
  /// search's selective recompute is Megatron's MoE modules, layernorm and
  /// moe_act (with core_attn under unfused attention), as NVIDIA's MoE
  /// recipes set them, and a note says so.
  bool recompute_modules_given = false;
  /// Also the plans of the first this many distinct layouts of the search
  /// (distinct_layouts, candidates.hpp), the winner's first; 0: none.
  std::size_t candidate_plans = 0;
  /// distinct_layouts' min_gap for those plans (a fraction; 0: none).
  double candidate_min_gap = 0;
  /// Status text while importing and searching (may be empty).
  std::function<void(const std::string&)> status;
};

/// The search's result: the best layout as a validated plan, and the figures
/// the summaries print.
struct SearchFound {
  plan::Plan plan;
  search::Outcome outcome;
  int devices_per_node = estimate::kDefaultDevicesPerNode;
  std::int64_t global_batch = 1;
  /// The importer's notes for the winner's graph, plus the static-batch note.
  std::vector<std::string> notes;
  /// What the winner's plan was built from.
  PlanSources sources;
  /// SearchRequest::candidate_plans: the plans of the first distinct
  /// layouts (index into outcome.best, plan), each re-scored with its
  /// timeline; the winner's first.
  std::vector<std::pair<std::size_t, plan::Plan>> candidates;
};

/// Imports the model as the micro-batches need it and searches. Errors:
/// import errors naming the file, a fixed micro-batch that contradicts the
/// model's batch, too many micro-batches, no layout fits
/// (search::kNoLayoutFits), or the plan does not validate (internal).
Result<SearchFound> search_plan(SearchRequest req);

}  // namespace planner::planning
