#pragma once
/// The CI gate (`planner check`): thresholds held against a plan's
/// prediction, each with its verdict, as values.
///
/// Design note. A gate is a list of checks, one per threshold the user set:
///
///   --max-step-time S          predicted step time <= S
///   --max-memory-fraction F    peak memory (fullest pipeline stage) <= F x capacity
///   --max-regression PCT       vs a baseline plan: step time and peak memory
///                              each at most PCT % above the baseline's (two checks)
///
/// A threshold holds at equality. `evaluate` only compares numbers already in
/// the plans (no model, no profile), so it is exact and instant; the caller
/// decides the exit status (0 all hold, 1 one is violated) and prints the
/// lines. `junit_xml` renders the same checks as JUnit XML, one testcase per
/// check, with no timestamps (same report, same bytes).
///
/// Architecture invariant: gate depends on plan and core only.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/plan/plan.hpp"

namespace planner::gate {

/// The thresholds; unset ones are not checked.
struct Thresholds {
  std::optional<Seconds> max_step_time;
  /// In (0, 1].
  std::optional<double> max_memory_fraction;
  /// Percent; needs a baseline. Negative demands an improvement.
  std::optional<double> max_regression_pct;
};

enum class Kind { step_time, memory_fraction, step_time_regression, memory_regression, fits };

/// One threshold against the plan.
struct Check {
  Kind kind = Kind::step_time;
  /// The testcase name: max-step-time, max-memory-fraction,
  /// max-regression.step-time, max-regression.peak-memory.
  std::string name;
  /// Compared quantities in the threshold's unit: seconds, a fraction of
  /// capacity, or percent above the baseline (NaN: no value, see no_layout_fits).
  double value = 0, threshold = 0;
  bool passed = true;
  /// One line naming the value and the threshold, e.g.
  /// "step time 0.02414 s > 0.02 s (--max-step-time)".
  std::string text;
};

struct Report {
  std::vector<Check> checks;
  /// Caveats, e.g. the baseline is of a different model.
  std::vector<std::string> notes;
  std::size_t violations() const;
  bool passed() const { return violations() == 0; }
};

/// Peak memory of the fullest pipeline stage of a prediction (0 without stages).
Bytes peak_memory(const plan::Prediction& p);

/// Checks the thresholds alone (before any work): at least one is set, each
/// in range, --max-regression exactly when there is a baseline. Errors name the flag.
Status validate(const Thresholds& t, bool have_baseline);

/// The failed check of a search that found no layout fitting in memory
/// (`why`: the search's message): named max-memory-fraction when that
/// threshold is set (else "fits"), with no value.
Check no_layout_fits(const Thresholds& t, std::string_view why);

/// Checks `plan` against `t` (and `baseline`, when given). Errors (usage or
/// bad input, one line naming the flag or field): no threshold set, a
/// threshold out of range, --max-regression without a baseline or a baseline
/// without --max-regression, a plan without capacity or stages, a baseline
/// with a non-positive step time or peak memory.
Result<Report> evaluate(const plan::Plan& plan, const Thresholds& t, const plan::Plan* baseline = nullptr);

/// The report as JUnit XML: one <testsuite name="suite"> with a <testcase>
/// per check, a <failure> on each violated one, the notes in <system-out>.
std::string junit_xml(const Report& r, std::string_view suite);

}  // namespace planner::gate
