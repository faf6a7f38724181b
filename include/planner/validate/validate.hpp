#pragma once
/// `planner validate`'s arithmetic: predicted against measured step times of
/// a few layouts, as values (docs/validate-format.md).
///
/// Design note. The command runs K candidates of the search and the
/// baselines on the executor and hands this module one `Row` per layout:
/// its predicted step time and, when it ran, the median step time of every
/// measurement round. Everything printed after that is computed here, from
/// those numbers alone, so tests give hand-made timings:
///
///   rounds   A B C A B C ...  (run_interleaved: each round runs every row
///            once, in row order; a row's value per round is the median of
///            its measured steps; its measured time the median over rounds,
///            its spread (max - min) / median over rounds)
///   ranks    1 = fastest; equal times share the lower rank ("1 2 2 4")
///   tau      Kendall's tau-b over the measured rows, predicted against
///            measured: (C - D) / sqrt((n0 - n1)(n0 - n2)) with n0 = n(n-1)/2
///            pairs, C concordant, D discordant, n1 / n2 pairs tied in the
///            prediction / the measurement (a tied pair is neither C nor D).
///            Ties are exact equality. Undefined (nullopt) with fewer than 2
///            measured rows or when either side is all ties.
///   regret   measured time of the predicted-best row over the measured-best
///            row's (>= 1; 1 when the prediction picked the fastest);
///            predicted-best ties go to the lowest row index
///   speedup  the baseline's time over a row's, predicted and measured
///   modes    rows measured in the real mode and in the replay are not
///            compared with each other (the replay runs GEMMs, collectives
///            and memory traffic at the plan's shapes, not the model's
///            kernels: on a 2-layer-per-rank llama the replay of a tp=2
///            layout took 321 ms where the real mode of its neighbours took
///            about 600 ms). Ranks, tau, regret and measured speedups cover
///            the rows measured in the *ranked mode*: the baseline's when it
///            ran, else the search's choice's, else the first measured row's;
///            the others keep their time, spread and error only.
///
/// A gate (`--min-tau`, `--max-regret`) is a list of checks with one line
/// each, as gate::Report is for `planner check`.
///
/// Architecture invariant: validate depends on core only: no plan, graph,
/// executor or communicator; the command measures, this module judges.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/result.hpp"

namespace planner::validate {

/// The median of `v` (mean of the two middle values for an even count).
/// Requires: v non-empty.
double median(std::vector<double> v);

/// Median, smallest and largest of a set of measurements.
struct Spread {
  double median = 0, min = 0, max = 0;
  /// (max - min) / median, percent (0 when the median is 0).
  double pct() const { return median > 0 ? 100.0 * (max - min) / median : 0.0; }
};
/// Requires: v non-empty.
Spread spread(const std::vector<double>& v);

/// 1-based ranks, fastest (smallest) first; equal values share the lower
/// rank and the next rank skips ("competition" ranking: 1.0 2.0 2.0 3.0 -> 1 2 2 4).
std::vector<int> ranks(const std::vector<double>& v);

/// Kendall's tau-b of x against y (design note). Requires: equal sizes.
std::optional<double> kendall_tau(const std::vector<double>& x, const std::vector<double>& y);

/// Runs `measure(row)` for every row, `rounds` times, interleaved: round 1
/// runs rows 0, 1, ..., n-1, then round 2 again, and so on. `measure`
/// returns the step times of one run (warm-up steps already left out); a
/// row's value in a round is their median. Returns, per row, its value in
/// each round. Errors: the first error of `measure` (naming its row by
/// the caller), or rounds < 1.
Result<std::vector<std::vector<double>>> run_interleaved(
    std::size_t rows, int rounds, const std::function<Result<std::vector<double>>(std::size_t row)>& measure);

/// One layout of the table.
struct Row {
  std::string name;     ///< "best", "candidate 2", "baseline 1"
  std::string role;     ///< "candidate" or "baseline"
  std::string layout;   ///< the search's description of the layout
  std::string spec;     ///< a baseline's spec as given ("tp=2,pp=1"); "" for candidates
  double predicted_s = 0;
  /// Per-round medians (empty: not run).
  std::vector<double> rounds_s;
  std::string mode;     ///< "real" or "replay" ("" when not run)
  std::string note;     ///< why it did not run, or what else to know
  bool measured() const { return !rounds_s.empty(); }
};

/// What the table prints per row, derived from all rows.
struct RowStats {
  std::optional<double> measured_s;    ///< median over rounds
  std::optional<double> spread_pct;    ///< (max - min) / median over rounds
  std::optional<double> error_pct;     ///< (predicted - measured) / measured x 100
  std::optional<double> predicted_speedup, measured_speedup;  ///< over the baseline
  std::optional<int> predicted_rank, measured_rank;           ///< among measured rows
};

struct Summary {
  std::vector<RowStats> rows;  ///< parallel to the input rows
  /// Rows ranked: measured in `ranked_mode`.
  std::size_t measured_rows = 0;
  /// The mode the ranked rows were measured in (design note, "modes").
  std::string ranked_mode;
  /// Rows measured in another mode: timed, not ranked.
  std::vector<std::size_t> other_mode_rows;
  std::optional<double> tau;
  /// Measured time of the predicted-best over the measured-best.
  std::optional<double> regret;
  std::optional<std::size_t> predicted_best, measured_best;
  /// The row speedups are relative to (the first baseline that ran).
  std::optional<std::size_t> baseline;
  /// The search's choice (row `choice`) against the baseline.
  std::optional<double> choice_measured_speedup, choice_predicted_speedup;
};

/// Ranks, tau, regret and speedups of `rows`. `baseline`: the row the
/// speedups are relative to (used only if it was measured); `choice`: the
/// row of the search's choice.
Summary summarize(const std::vector<Row>& rows, std::optional<std::size_t> baseline, std::size_t choice = 0);

/// --min-tau, --max-regret; unset ones are not checked.
struct Thresholds {
  std::optional<double> min_tau;     ///< in [-1, 1]
  std::optional<double> max_regret;  ///< >= 1
};

/// Errors name the flag: --min-tau outside [-1, 1], --max-regret below 1.
Status check_thresholds(const Thresholds& t);

/// One threshold against the summary.
struct Check {
  std::string name;  ///< "min-tau" or "max-regret"
  std::optional<double> value;  ///< nullopt: undefined (a violation)
  double threshold = 0;
  bool passed = true;
  std::string text;  ///< "Kendall tau 0.333 < 0.5 (--min-tau)"
};

/// The checks of the thresholds that are set, in flag order (min-tau, max-regret).
std::vector<Check> gate(const Summary& s, const Thresholds& t);

/// What the JSON file records besides the rows.
struct RunInfo {
  std::string model;
  int devices = 0;
  std::string profile;
  std::string backend = "cpu";
  int steps = 0, warmup = 0, rounds = 0;
  /// --candidates asked for, and --min-gap (percent; nullopt: the
  /// candidates are --plan files, no gap applies).
  std::size_t candidates = 0;
  std::optional<double> min_gap_pct;
  std::string host, date;
};

/// The `planner.validate/v1` document (docs/validate-format.md), 2-space
/// indented with a final newline.
std::string to_json(const RunInfo& info, const std::vector<Row>& rows, const Summary& s,
                    const std::vector<Check>& checks);

}  // namespace planner::validate
