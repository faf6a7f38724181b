#pragma once
/// Output of `planner estimate`: the text report and the JSON document
/// (format planner.estimate/v1, fields in docs/estimate-json.md).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/cli/train_flags.hpp"
#include "planner/cluster/profile.hpp"
#include "planner/estimate/estimate.hpp"

namespace planner::cli {

/// What the report says besides the estimate.
struct ReportContext {
  std::string model_path;
  const cluster::ClusterProfile& profile;
  const TrainFlags& train;
  const std::vector<std::string>& import_notes;
};

/// The text report on stdout.
void print_estimate(const estimate::Estimate& e, const ReportContext& ctx);

/// The JSON document.
nlohmann::json estimate_json(const estimate::Estimate& e, const ReportContext& ctx);

}  // namespace planner::cli
