#pragma once
/// Turns an estimate (and what produced it) into a plan file's data.

#include <string>
#include <vector>

#include "planner/cluster/profile.hpp"
#include "planner/core/io.hpp"
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
  std::string memory_format = "nchw";  ///< nchw | nhwc (--memory-format)
  std::uint64_t seed = 1234;
  double search_time_s = 0;
  std::int64_t layouts_scored = 0;
  /// 0: use the estimate's speed of light.
  double lower_bound_s = 0;
  std::vector<plan::Alternative> alternatives{};
};

/// The plan of `e`. Errors: the schedule cannot be laid out (invalid shape).
Result<plan::Plan> build_plan(const estimate::Estimate& e, const PlanSources& src);

/// The estimate's step as plan timeline spans, one entry per pipeline rank
/// (estimate::step_timeline: simulates the step again with events).
Result<std::vector<plan::StageTimeline>> plan_timeline(const estimate::Estimate& e);

/// Writes the plan's timeline as a Chrome trace (`--trace FILE`,
/// docs/report.md). Errors: no timeline, or the file cannot be written.
Status write_trace(const plan::Plan& p, const std::string& path, io::Overwrite mode);

}  // namespace planner::cli
