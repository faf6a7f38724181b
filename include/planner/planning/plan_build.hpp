#pragma once
/// Turns an estimate (and what produced it) into a plan file's data.

#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/plan/plan.hpp"

namespace planner::planning {

/// The cluster profile a plan names (cluster.profile, profile_hash, overrides).
struct ProfileRef {
  std::string name;
  std::string content_hash;
  std::string overrides;  ///< "" or e.g. "gpus_per_node=4, inter_node_GBps=100"
};

/// Everything a plan records that the estimate does not know.
struct PlanSources {
  std::string command;        ///< "search" or "estimate"
  std::string model_path;
  std::string model_sha256;
  onnx::ImportOptions import;
  ProfileRef profile;
  std::string precision, recompute, attention;
  /// ops::RecomputeModules::text of selective recompute; "" = core_attn.
  std::string recompute_modules{};
  std::string memory_format = "nchw";  ///< nchw | nhwc (--memory-format)
  std::uint64_t seed = 1234;
  double search_time_s = 0;
  std::int64_t layouts_scored = 0;
  /// 0: use the estimate's speed of light.
  double lower_bound_s = 0;
  std::vector<plan::Alternative> alternatives{};
};

/// The plan of `e`: its prediction, and its schedule and timeline from the
/// estimate's own simulation (`e.timeline`). Errors: `e` was made without
/// a timeline (estimate::EstimateOptions::timeline).
Result<plan::Plan> build_plan(const estimate::Estimate& e, const PlanSources& src);

/// A step timeline as plan timeline spans, one entry per pipeline rank.
std::vector<plan::StageTimeline> plan_timeline(const estimate::StepTimeline& tl);


}  // namespace planner::planning
