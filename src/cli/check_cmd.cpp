// planner check MODEL.onnx|plan.json [search flags] [thresholds]: the CI
// gate. A model is searched exactly as `planner search` would (same flags,
// search_flags.cpp) and its best plan gated; a plan file is gated as it is.
// Exit 0 when every threshold holds, 1 when one is violated (one line each),
// 2 for bad input or usage.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/cli/flag_names.hpp"
#include "planner/cli/search_flags.hpp"
#include "planner/cli/terminal.hpp"
#include "planner/core/io.hpp"
#include "planner/gate/gate.hpp"
#include "planner/plan/plan.hpp"

namespace planner::cli {
namespace {

struct CheckArgs {
  std::string input;
  SearchFlags search;
  std::string baseline;
  double max_step_time = 0, max_regression = 0;
  std::string junit;
  std::string output;
  bool force = false;
  CLI::Option* step_opt = nullptr;
  CLI::Option* regression_opt = nullptr;
  CLI::Option* memory_opt = nullptr;
  /// Flags that only steer a search (refused with a plan file).
  std::vector<const CLI::Option*> search_only;
};

/// Whether the file is a plan (JSON text) rather than an ONNX protobuf: its
/// first non-blank byte is '{'. Error: unreadable (names the path).
Result<bool> is_plan_file(const std::string& path) {
  std::error_code ec;
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path, ec)) {
    auto r = io::read_file(path);  // its error names the path and the cause
    return r ? make_error("{}: cannot be read", path) : r.error();
  }
  char c = 0;
  while (in.get(c))
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  return make_error("{}: empty file", path);
}

Result<plan::Plan> read_plan(const std::string& path) {
  PLANNER_TRY(std::string text, io::read_file(path));
  PLANNER_TRY(plan::Plan p, plan::from_json(text, path));
  if (auto st = plan::validate(p); !st) return make_error("{}: {}", path, st.error().message);
  return p;
}

/// One line for a plan's layout, e.g. "dp=8 tp=1 pp=1 micro-batch=2 global-batch=64 1f1b".
std::string layout_line(const plan::Plan& p) {
  const auto& l = p.layout;
  std::string s = fmt::format("dp={} tp={} pp={}", l.dp, l.tp, l.pp);
  if (l.cp > 1) s += fmt::format(" cp={}", l.cp);
  if (l.vp > 1) s += fmt::format(" vp={}", l.vp);
  if (l.sequence_parallel) s += " sp";
  s += fmt::format(" micro-batch={} global-batch={} {}", p.training.micro_batch, p.training.global_batch, l.schedule);
  if (l.zero > 0) s += fmt::format(" zero={}", l.zero);
  if (l.distributed_optimizer) s += " distributed_optimizer";
  s += " recompute=" + p.training.recompute;
  return s;
}

/// Prints the checks and writes the JUnit file; the exit status.
int report(const gate::Report& r, const CheckArgs& a, Verbosity v, io::Overwrite mode) {
  if (!a.junit.empty()) {
    const std::string suite = "planner check " + a.input;
    if (auto st = io::write_file(a.junit, gate::junit_xml(r, suite), mode); !st) return fail("check", st.error().message);
  }
  for (const auto& c : r.checks)
    if (!c.passed || v != Verbosity::quiet) fmt::print("{}  {}\n", c.passed ? "ok  " : "FAIL", c.text);
  if (v != Verbosity::quiet) {
    for (const auto& n : r.notes) fmt::print("note: {}\n", with_flags(n));
    if (r.passed()) fmt::print("check        passed: {} threshold(s) hold\n", r.checks.size());
    else fmt::print("check        failed: {} of {} threshold(s) violated\n", r.violations(), r.checks.size());
  }
  return r.passed() ? kExitOk : kExitViolation;
}

int run_check(CheckArgs& a, const CLI::App& sub) {
  const Verbosity verbosity = verbosity_of(sub);
  gate::Thresholds t;
  if (a.step_opt->count() > 0) t.max_step_time = Seconds(a.max_step_time);
  if (a.memory_opt->count() > 0) t.max_memory_fraction = a.search.max_memory_fraction;
  if (a.regression_opt->count() > 0) t.max_regression_pct = a.max_regression;
  if (auto st = gate::validate(t, !a.baseline.empty()); !st) return fail("check", st.error().message);
  auto is_plan = is_plan_file(a.input);
  if (!is_plan) return fail("check", is_plan.error().message);
  std::optional<plan::Plan> baseline;
  if (!a.baseline.empty()) {
    auto b = read_plan(a.baseline);
    if (!b) return fail("check", "--baseline: " + b.error().message);
    baseline = std::move(b).value();
  }
  const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  if (!a.junit.empty())
    if (auto st = io::check_writable(a.junit, mode); !st) return fail("check", "--junit: " + st.error().message);

  plan::Plan gated;
  if (*is_plan) {
    if (!a.output.empty()) return fail("check", fmt::format("{}: -o writes a searched plan; give a model", a.input));
    for (const auto* o : a.search_only)
      if (o->count() > 0)
        return fail("check", fmt::format("{}: a plan file is gated as it is; {} applies only to a model", a.input,
                                         o->get_name()));
    auto p = read_plan(a.input);
    if (!p) return fail("check", p.error().message);
    gated = std::move(p).value();
  } else {
    if (a.search.devices_opt->count() == 0)
      return fail("check", fmt::format("{}: a model is searched first: --devices is required", a.input));
    auto setup = prepare_search(a.search);
    if (!setup) return fail("check", setup.error().message);
    if (!a.output.empty())
      if (auto st = io::check_writable(a.output, mode); !st) return fail("check", st.error().message);
    ProgressLine progress(progress_wanted(sub));
    auto found = search_best_plan(a.search, *setup, a.input, progress);
    progress.finish();
    if (!found) {
      if (!found.error().message.starts_with(search::kNoLayoutFits)) return fail("check", found.error().message);
      // Nothing fits in memory: the gate fails, it is not bad input.
      gate::Report r;
      r.checks.push_back(gate::no_layout_fits(t, found.error().message));
      return report(r, a, verbosity, mode);
    }
    if (verbosity == Verbosity::verbose)
      fmt::print(stderr, "planner check: {} layouts scored in {:.2f} s\n", found->outcome.scored, found->outcome.elapsed_s);
    gated = std::move(found->plan);
    if (!a.output.empty())
      if (auto st = io::write_file(a.output, plan::to_json(gated), mode); !st) return fail("check", st.error().message);
  }
  auto r = gate::evaluate(gated, t, baseline ? &*baseline : nullptr);
  if (!r) return fail("check", r.error().message);
  if (verbosity != Verbosity::quiet) {
    fmt::print("plan         {}{}\n", *is_plan ? a.input : "best layout of " + a.input,
               a.output.empty() ? "" : " (written to " + a.output + ")");
    fmt::print("layout       {}\n", layout_line(gated));
    fmt::print("cluster      {} x {}\n", gated.cluster.devices, gated.cluster.profile);
    if (!*is_plan && !a.search.train.defaults_note.empty())
      fmt::print("defaults     {}\n", a.search.train.defaults_note);
    if (baseline) fmt::print("baseline     {}: {}\n", a.baseline, layout_line(*baseline));
  }
  return report(*r, a, verbosity, mode);
}

}  // namespace

Runner setup_check(CLI::App& sub) {
  auto a = std::make_shared<CheckArgs>();
  sub.add_option("input", a->input, "ONNX model (searched as `planner search` would) or plan file")->required();
  const auto before = sub.get_options();
  a->search.add_to(sub, /*devices_required=*/false,
                   "Threshold: peak memory at most this fraction of capacity (a model is also searched within it)");
  for (const auto* o : sub.get_options())
    if (std::find(before.begin(), before.end(), o) == before.end() && o->get_name() != "--max-memory-fraction")
      a->search_only.push_back(o);
  a->memory_opt = sub.get_option("--max-memory-fraction");
  a->step_opt = sub.add_option("--max-step-time", a->max_step_time, "Threshold: predicted step time in seconds");
  sub.add_option("--baseline", a->baseline, "Plan file to compare against (with --max-regression)");
  a->regression_opt = sub.add_option("--max-regression", a->max_regression,
                                     "Threshold: percent the step time and the peak memory may grow over --baseline");
  sub.add_option("--junit", a->junit, "Write the checks as JUnit XML (one testcase per threshold)");
  sub.add_option("-o,--output", a->output, "Also write the searched plan (model input only)");
  sub.add_flag("--force", a->force, "Replace existing --junit and -o files");
  return [a, &sub]() -> int { return run_check(*a, sub); };
}

}  // namespace planner::cli
