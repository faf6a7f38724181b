// planner report PLAN.json -o report.html: one self-contained HTML page of a
// plan (layout, pipeline timeline, memory per device, alternatives), with
// inline SVG and CSS, no script (docs/report.md).

#include <memory>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/core/io.hpp"
#include "planner/plan/plan.hpp"
#include "planner/report/report.hpp"

namespace planner::cli {
namespace {

struct ReportArgs {
  std::string plan;
  std::string output = "report.html";
  bool force = false;
};

int run_report(const ReportArgs& a) {
  const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  if (auto st = io::check_writable(a.output, mode); !st) return fail("report", st.error().message);
  auto text = io::read_file(a.plan);
  if (!text) return fail("report", text.error().message);
  auto p = plan::from_json(*text, a.plan);
  if (!p) return fail("report", p.error().message);
  if (auto st = io::write_file(a.output, report::html_report(*p), mode); !st) return fail("report", st.error().message);
  fmt::print("report       {}{}\n", a.output,
             p->prediction.timeline.empty() ? " (the plan has no timeline: that section is empty)" : "");
  return kExitOk;
}

}  // namespace

Runner setup_report(CLI::App& sub) {
  auto a = std::make_shared<ReportArgs>();
  sub.add_option("plan", a->plan, "Plan file (planner.plan/v1)")->required();
  sub.add_option("-o,--output", a->output, "HTML file to write (replaced only with --force)")->capture_default_str();
  sub.add_flag("--force", a->force, "Replace an existing HTML file");
  return [a]() -> int { return run_report(*a); };
}

}  // namespace planner::cli
