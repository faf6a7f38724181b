#pragma once
/// Files the commands write beside a plan.

#include <string>

#include "planner/core/io.hpp"
#include "planner/core/result.hpp"
#include "planner/plan/plan.hpp"

namespace planner::cli {

/// Writes the plan's timeline as a Chrome trace (`--trace FILE`,
/// docs/report.md). Errors: no timeline, or the file cannot be written.
Status write_trace(const plan::Plan& p, const std::string& path, io::Overwrite mode);

}  // namespace planner::cli
