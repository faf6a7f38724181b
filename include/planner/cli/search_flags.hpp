#pragma once
/// The layout search's flags and the run they drive, shared by `planner
/// search` (which writes the best plan) and `planner check` (which gates it).
/// Both take exactly the same flags and search exactly the same way, so a
/// plan `check` gates is the plan `search` would write.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "planner/cli/import_flags.hpp"
#include "planner/cli/terminal.hpp"
#include "planner/cli/train_flags.hpp"
#include "planner/cluster/profile.hpp"
#include "planner/core/result.hpp"
#include "planner/plan/plan.hpp"
#include "planner/planning/search_plan.hpp"
#include "planner/search/search.hpp"

namespace planner::cli {

struct SearchFlags {
  ImportFlags import;
  TrainFlags train;
  int devices = 0;
  std::int64_t global_batch = 0;
  std::string fix;
  std::string framework = "megatron";
  double max_memory_fraction = 1.0;
  /// --memory-margin: the fraction of device memory a plan leaves free;
  /// absent: the profile's device.memory_margin_fraction (0 without one).
  std::optional<double> memory_margin;
  double time_limit = 60;
  int threads = 0;
  std::size_t top_k = 5;
  /// Plans of this many distinct layouts (planner validate; 0: the winner's only).
  std::size_t candidate_plans = 0;
  /// Their min_gap (planner validate --min-gap, a fraction).
  double candidate_min_gap = 0;
  int max_micro_batch = 16;
  bool exact = false;
  bool tp_comm_overlap = false, fused_loss = false;
  int grad_reduce_bytes = 0;
  std::string optimizer = "adam";
  std::string optimizer_state_dtype = "fp32";
  std::string master_weights = "fp32";
  std::string hints_file;
  CLI::Option* devices_opt = nullptr;
  CLI::Option* global_batch_opt = nullptr;
  CLI::Option* max_micro_batch_opt = nullptr;
  CLI::Option* threads_opt = nullptr;

  /// Adds the flags to `app` (the importer's and training flags included);
  /// `devices_required`: --devices must be given (search; check needs it
  /// only for a model). `memory_help` describes --max-memory-fraction.
  void add_to(CLI::App& app, bool devices_required,
              const std::string& memory_help = "Fraction of device memory a plan may use");
};

/// What is known before any model is read: flags validated, profile loaded.
struct SearchSetup {
  estimate::Framework framework = estimate::Framework::megatron;
  search::Fixed fixed;
  cluster::ClusterProfile profile;
  onnx::ImportOptions import;
};

/// Validates the flags that need no model and loads the profile. Errors name the flag.
/// Resolves the "auto" precision and attention of f.train for the profile.
Result<SearchSetup> prepare_search(SearchFlags& f);

/// Imports `model` as the micro-batches need it and searches the space the
/// flags describe; `progress` receives the status text. Errors: import,
/// hints or flag errors naming the file or flag, no layout fits
/// (search::kNoLayoutFits), or the plan does not validate (internal).
Result<planning::SearchFound> search_best_plan(const SearchFlags& f, const SearchSetup& setup, const std::string& model,
                                               ProgressLine& progress);

}  // namespace planner::cli
