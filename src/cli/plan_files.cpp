// Files the commands write beside a plan (plan_files.hpp).

#include "planner/cli/plan_files.hpp"

#include "planner/report/report.hpp"

namespace planner::cli {

Status write_trace(const plan::Plan& p, const std::string& path, io::Overwrite mode) {
  PLANNER_TRY(std::string trace, report::chrome_trace(p));
  return io::write_file(path, trace, mode);
}

}  // namespace planner::cli
