// planner compare plan.json measured.json [--json]: the plan's predicted
// step time, components and peak memory against what `planner run -o`
// measured, with percentage errors (docs/executor.md).

#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/cli/command.hpp"
#include "planner/core/io.hpp"
#include "planner/core/sha256.hpp"
#include "planner/executor/measured.hpp"
#include "planner/executor/program.hpp"
#include "planner/plan/plan.hpp"

namespace planner::cli {
namespace {

struct CompareArgs {
  std::string plan_file, measured_file;
  bool json = false;
};

std::string show(const std::optional<double>& v, const std::string& unit) {
  if (!v) return "-";
  if (unit == "B") return fmt::format("{:.1f} MiB", *v / (1024.0 * 1024.0));
  return fmt::format("{:.6f} s", *v);
}

int run_compare(const CompareArgs& a) {
  auto text = io::read_file(a.plan_file);
  if (!text) return fail("compare", text.error().message);
  auto p = plan::from_json(*text, a.plan_file);
  if (!p) return fail("compare", p.error().message);
  auto mtext = io::read_file(a.measured_file);
  if (!mtext) return fail("compare", mtext.error().message);
  auto m = executor::measured_from_json(*mtext, a.measured_file);
  if (!m) return fail("compare", m.error().message);
  std::vector<int> rank_pp;
  for (int r = 0; r < p->cluster.devices; ++r) rank_pp.push_back(executor::coordinate(*p, r, "pp"));
  auto rows = executor::compare(*p, sha256_hex(*text), *m, rank_pp);
  if (!rows) return fail("compare", fmt::format("{}: {}", a.measured_file, rows.error().message));
  if (a.json) {
    nlohmann::ordered_json j;
    j["plan"] = a.plan_file;
    j["measured"] = a.measured_file;
    j["mode"] = m->mode;
    j["backend"] = m->backend;
    auto arr = nlohmann::ordered_json::array();
    for (const auto& r : *rows) {
      nlohmann::ordered_json o;
      o["name"] = r.name;
      o["unit"] = r.unit;
      o["predicted"] = r.predicted ? nlohmann::ordered_json(*r.predicted) : nlohmann::ordered_json();
      o["measured"] = r.measured ? nlohmann::ordered_json(*r.measured) : nlohmann::ordered_json();
      o["error_pct"] = r.error_pct ? nlohmann::ordered_json(*r.error_pct) : nlohmann::ordered_json();
      arr.push_back(o);
    }
    j["rows"] = arr;
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  fmt::print("{} (predicted, profile {}) vs {} (measured, mode {}{}, {} ranks on {})\n", a.plan_file,
             p->cluster.profile, a.measured_file, m->mode, m->backend == "cpu" ? "" : ", backend " + m->backend,
             m->ranks, m->host);
  fmt::print("{:<20} {:>16} {:>16} {:>10}\n", "", "predicted", "measured", "error");
  for (const auto& r : *rows)
    fmt::print("{:<20} {:>16} {:>16} {:>10}\n", r.name, show(r.predicted, r.unit), show(r.measured, r.unit),
               r.error_pct ? fmt::format("{:+.1f} %", *r.error_pct) : std::string("-"));
  return kExitOk;
}

}  // namespace

Runner setup_compare(CLI::App& sub) {
  auto a = std::make_shared<CompareArgs>();
  sub.add_option("plan", a->plan_file, "Plan file (planner.plan/v1)")->required();
  sub.add_option("measured", a->measured_file, "Measurements from planner run -o (planner.measured/v1)")->required();
  sub.add_flag("--json", a->json, "JSON output");
  return [a] { return run_compare(*a); };
}

}  // namespace planner::cli
