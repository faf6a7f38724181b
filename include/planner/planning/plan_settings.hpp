#pragma once
/// A plan file read back as the estimate's inputs: the layout config
/// (degrees, batches, the plan's own cut of the layers into chunks, schedule,
/// optimizer, framework), the cost-model settings, the cluster it was made
/// for and the model binding. `planner estimate --plan` re-scores it.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/estimate/config.hpp"
#include "planner/graph/graph.hpp"
#include "planner/plan/plan.hpp"

namespace planner::planning {

struct PlanSettings {
  estimate::ParallelConfig config;
  /// cluster.devices (plan::validate checks it is dp * tp * pp * cp).
  int devices = 1;
  /// Cost-model settings as the plan records them: precision (fp8 when the
  /// plan runs its matmuls in fp8), attention, recompute, memory format.
  std::string precision, attention, recompute, memory_format;
  /// training.recompute_modules ("" = core_attn).
  std::string recompute_modules;
  std::string model_path;
  /// The plan's cluster profile and the overrides it recorded.
  std::string profile;
  std::optional<int> gpus_per_node;
  std::optional<double> inter_node_GBps;
  std::optional<int> nodes_per_leaf;
  std::optional<double> oversubscription;
  /// The model's named dims ("name=value") and binding.
  std::vector<std::string> dims;
  std::vector<std::string> params_from_inputs;
  /// The ops the plan's chunks place, as ("layout.chunks[i].ops[j]", name).
  std::vector<std::pair<std::string, std::string>> ops;
};

/// The settings of plan `p`, read from `path` (errors name it and the field).
Result<PlanSettings> plan_settings(const plan::Plan& p, const std::string& path);

/// A plan names the ops of the model it was made for: every name must be an
/// op of `g` (imported from `model`), and every op of `g` must be in the plan.
Status check_plan_ops(const PlanSettings& s, const std::string& path, const std::string& model,
                      const graph::OpGraph& g);

}  // namespace planner::planning
