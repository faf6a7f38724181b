#pragma once
/// The importer's flags, shared by every subcommand that reads a model:
/// --dim NAME=VALUE (repeatable), --batch N, --params-from-inputs PATTERN.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "planner/core/result.hpp"
#include "planner/onnx/importer.hpp"

namespace planner::cli {

struct ImportFlags {
  std::vector<std::string> dims;
  long long batch = 0;
  std::vector<std::string> params_from_inputs;
  CLI::Option* batch_opt = nullptr;

  /// Adds the flags to `app`.
  void add_to(CLI::App& app);
  /// Validates and converts them. Error names the flag.
  Result<onnx::ImportOptions> options() const;
};

}  // namespace planner::cli
