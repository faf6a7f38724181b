#pragma once
/// Turns an estimate (and what produced it) into a plan file's data.

#include <string>
#include <vector>

#include "planner/cluster/profile.hpp"
#include "planner/core/result.hpp"
#include "planner/estimate/estimate.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/plan/plan.hpp"

namespace planner::cli {

/// Everything a plan records that the estimate does not know.
struct PlanSources {
  std::string command;        ///< "search" or "estimate"
  std::string model_path;
  std::string model_sha256;
  onnx::ImportOptions import;
  const cluster::ClusterProfile& profile;
  std::string precision, recompute, attention;
  std::uint64_t seed = 1234;
  double search_time_s = 0;
  std::int64_t layouts_scored = 0;
  /// 0: use the estimate's speed of light.
  double lower_bound_s = 0;
  std::vector<plan::Alternative> alternatives;
};

/// The plan of `e`. Errors: the schedule cannot be laid out (invalid shape).
Result<plan::Plan> build_plan(const estimate::Estimate& e, const PlanSources& src);

}  // namespace planner::cli
