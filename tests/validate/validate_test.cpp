// planner validate's arithmetic on hand-made timings (validate.hpp's design
// note); every expected value is worked out in the comment beside it.

#include "planner/validate/validate.hpp"

#include <cmath>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace planner::validate;

namespace {
Row row(std::string name, double predicted, std::vector<double> rounds, std::string role = "candidate") {
  Row r;
  r.name = std::move(name);
  r.role = std::move(role);
  r.layout = "dp=2";
  r.predicted_s = predicted;
  r.rounds_s = std::move(rounds);
  if (!r.rounds_s.empty()) r.mode = "replay";
  return r;
}
}  // namespace

TEST_CASE("median and spread") {
  CHECK(median({3, 1, 2}) == 2);        // sorted 1 2 3: the middle
  CHECK(median({4, 1, 3, 2}) == 2.5);   // sorted 1 2 3 4: (2 + 3) / 2
  const Spread s = spread({0.9, 1.0, 1.2});
  CHECK(s.median == 1.0);
  CHECK(s.min == 0.9);
  CHECK(s.max == 1.2);
  CHECK(s.pct() == Approx(30.0));  // (1.2 - 0.9) / 1.0 = 30 %
}

TEST_CASE("ranks: fastest first, ties share the lower rank") {
  CHECK(ranks({3.0, 1.0, 2.0}) == std::vector<int>{3, 1, 2});
  CHECK(ranks({1.0, 2.0, 2.0, 3.0}) == std::vector<int>{1, 2, 2, 4});
  CHECK(ranks({}).empty());
}

TEST_CASE("Kendall tau-b") {
  // Same order: every one of the 3 pairs concordant: (3 - 0) / sqrt(3 x 3) = 1.
  CHECK(*kendall_tau({1, 2, 3}, {10, 20, 30}) == Approx(1.0));
  // Reversed: 3 discordant: -1.
  CHECK(*kendall_tau({1, 2, 3}, {30, 20, 10}) == Approx(-1.0));
  // x = 1 2 3 4, y = 1 3 2 4: pairs (1,2) C, (1,3) C, (1,4) C, (2,3) D,
  // (2,4) C, (3,4) C: (5 - 1) / 6 = 2/3.
  CHECK(*kendall_tau({1, 2, 3, 4}, {1, 3, 2, 4}) == Approx(2.0 / 3.0));
  // A tie in x: x = 1 1 2, y = 1 2 3. n0 = 3; pair (1,2) tied in x (n1 = 1),
  // (1,3) C, (2,3) C: (2 - 0) / sqrt((3 - 1)(3 - 0)) = 2 / sqrt(6) = 0.8165.
  CHECK(*kendall_tau({1, 1, 2}, {1, 2, 3}) == Approx(2.0 / std::sqrt(6.0)));
  // Ties on both sides in the same pair: x = 1 1 2, y = 5 5 6: n1 = n2 = 1,
  // C = 2: 2 / sqrt(2 x 2) = 1.
  CHECK(*kendall_tau({1, 1, 2}, {5, 5, 6}) == Approx(1.0));
  // Undefined: one row, or one side all ties.
  CHECK(!kendall_tau({1}, {1}));
  CHECK(!kendall_tau({1, 1, 1}, {1, 2, 3}));
}

TEST_CASE("run_interleaved runs A B C A B C and keeps each round's median") {
  std::string order;
  int call = 0;
  auto measure = [&](std::size_t row) -> planner::Result<std::vector<double>> {
    order += static_cast<char>('A' + row);
    ++call;
    // Steps of this run: call, call + 10, call + 1 -> median call + 1.
    return std::vector<double>{double(call), double(call + 10), double(call + 1)};
  };
  auto r = run_interleaved(3, 2, measure);
  REQUIRE(r.ok());
  CHECK(order == "ABCABC");
  // Row A ran as call 1 and 4: medians 2 and 5.
  CHECK((*r)[0] == std::vector<double>{2, 5});
  CHECK((*r)[2] == std::vector<double>{4, 7});
  CHECK(!run_interleaved(3, 0, measure).ok());
  auto failing = [](std::size_t row) -> planner::Result<std::vector<double>> {
    if (row == 1) return planner::make_error("row 2 failed");
    return std::vector<double>{1.0};
  };
  auto f = run_interleaved(3, 2, failing);
  REQUIRE(!f.ok());
  CHECK(f.error().message == "row 2 failed");
}

TEST_CASE("summarize: ranks, tau, regret, speedups from given timings") {
  // Row 0 (the search's choice) predicted fastest but measured second;
  // row 3, the baseline, slowest both ways; row 2 did not run.
  std::vector<Row> rows = {
      row("best", 1.0, {1.2, 1.1, 1.3}),        // measured median 1.2, spread (1.3 - 1.1) / 1.2
      row("candidate 2", 1.5, {1.0, 1.0, 1.0}),  // measured 1.0
      row("candidate 3", 1.6, {}),               // not run
      row("baseline 1", 2.0, {2.4, 2.4, 2.4}, "baseline"),
  };
  const Summary s = summarize(rows, 3, 0);
  REQUIRE(s.measured_rows == 3);
  CHECK(*s.rows[0].measured_s == Approx(1.2));
  CHECK(*s.rows[0].spread_pct == Approx(100.0 * 0.2 / 1.2));
  // error = (1.0 - 1.2) / 1.2 = -16.67 %
  CHECK(*s.rows[0].error_pct == Approx(-100.0 / 6.0));
  // Predicted order among the measured rows: 1.0, 1.5, 2.0 -> ranks 1 2 3;
  // measured 1.2, 1.0, 2.4 -> ranks 2 1 3.
  CHECK(*s.rows[0].predicted_rank == 1);
  CHECK(*s.rows[0].measured_rank == 2);
  CHECK(*s.rows[1].measured_rank == 1);
  CHECK(*s.rows[3].measured_rank == 3);
  CHECK(!s.rows[2].measured_rank);
  CHECK(!s.rows[2].measured_s);
  // Pairs (0,1) D, (0,3) C, (1,3) C: (2 - 1) / 3 = 1/3.
  CHECK(*s.tau == Approx(1.0 / 3.0));
  // Predicted-best row 0 measured 1.2; measured-best row 1 measured 1.0: 1.2.
  CHECK(*s.predicted_best == 0);
  CHECK(*s.measured_best == 1);
  CHECK(*s.regret == Approx(1.2));
  // Speedups over the baseline: predicted 2.0 / 1.0 = 2, measured 2.4 / 1.2 = 2.
  CHECK(*s.baseline == 3);
  CHECK(*s.choice_predicted_speedup == Approx(2.0));
  CHECK(*s.choice_measured_speedup == Approx(2.0));
  CHECK(*s.rows[1].measured_speedup == Approx(2.4));
  CHECK(*s.rows[2].predicted_speedup == Approx(2.0 / 1.6));  // predicted even when not run
  CHECK(!s.rows[2].measured_speedup);
}

TEST_CASE("summarize: a baseline that did not run gives no speedups, ties in prediction go to the first row") {
  std::vector<Row> rows = {row("best", 1.0, {2.0}), row("candidate 2", 1.0, {1.0}),
                           row("baseline 1", 3.0, {}, "baseline")};
  const Summary s = summarize(rows, 2, 0);
  CHECK(!s.baseline);
  CHECK(!s.choice_measured_speedup);
  CHECK(!s.rows[0].measured_speedup);
  // Both predicted 1.0: the predicted-best is row 0 (lowest index), measured
  // 2.0 against the best 1.0: regret 2.
  CHECK(*s.predicted_best == 0);
  CHECK(*s.regret == Approx(2.0));
  // x = 1 1 (tied), y = 2 1: n0 = 1, n1 = 1: undefined.
  CHECK(!s.tau);
}

TEST_CASE("summarize: rows measured in the other mode are timed, not ranked") {
  // The baseline (row 3) and rows 0 and 1 ran in the real mode; row 2 could
  // only be replayed, and the replay is much faster than the real mode.
  std::vector<Row> rows = {
      row("best", 1.0, {2.0}),         // real 2.0
      row("candidate 2", 1.1, {1.8}),  // real 1.8
      row("candidate 3", 1.2, {0.9}),  // replay 0.9: fastest of all, but not comparable
      row("baseline 1", 2.0, {4.0}, "baseline"),  // real 4.0
  };
  for (auto i : {0, 1, 3}) rows[static_cast<std::size_t>(i)].mode = "real";
  const Summary s = summarize(rows, 3, 0);
  CHECK(s.ranked_mode == "real");
  REQUIRE(s.other_mode_rows == std::vector<std::size_t>{2});
  CHECK(s.measured_rows == 3);
  // Row 2 keeps its time and error: (1.2 - 0.9) / 0.9 = +33.3 %.
  CHECK(*s.rows[2].measured_s == Approx(0.9));
  CHECK(*s.rows[2].error_pct == Approx(100.0 / 3.0));
  CHECK(!s.rows[2].measured_rank);
  CHECK(!s.rows[2].measured_speedup);
  CHECK(*s.rows[2].predicted_speedup == Approx(2.0 / 1.2));
  // Among rows 0, 1, 3: predicted 1.0 1.1 2.0, measured 2.0 1.8 4.0: pairs
  // (0,1) D, (0,3) C, (1,3) C: tau 1/3; the measured-best is row 1, not row
  // 2: regret 2.0 / 1.8.
  CHECK(*s.tau == Approx(1.0 / 3.0));
  CHECK(*s.measured_best == 1);
  CHECK(*s.regret == Approx(2.0 / 1.8));
  CHECK(*s.rows[1].measured_rank == 1);
  CHECK(*s.choice_measured_speedup == Approx(2.0));
  // With every row in one mode nothing is left out (the case above).
  for (auto& r : rows) r.mode = "replay";
  CHECK(summarize(rows, 3, 0).other_mode_rows.empty());
  CHECK(*summarize(rows, 3, 0).measured_best == 2);
}

TEST_CASE("gate: --min-tau and --max-regret") {
  CHECK(check_thresholds({}).ok());
  CHECK(check_thresholds({0.5, 1.1}).ok());
  CHECK(check_thresholds({-1.5, std::nullopt}).error().message == "--min-tau must be in [-1, 1] (got -1.5)");
  CHECK(check_thresholds({std::nullopt, 0.9}).error().message ==
        "--max-regret is a ratio of step times, at least 1 (got 0.9)");

  std::vector<Row> rows = {row("best", 1.0, {1.2}), row("candidate 2", 1.5, {1.0}),
                           row("baseline 1", 2.0, {2.4}, "baseline")};
  const Summary s = summarize(rows, 2);  // tau 1/3, regret 1.2 (previous case's arithmetic)
  auto checks = gate(s, {0.5, 1.25});
  REQUIRE(checks.size() == 2);
  CHECK(!checks[0].passed);
  CHECK(checks[0].text == "Kendall tau 0.333 < 0.5 (--min-tau)");
  CHECK(checks[1].passed);
  CHECK(checks[1].text == "regret 1.200 <= 1.25 (--max-regret)");
  // At equality a threshold holds.
  CHECK(gate(s, {1.0 / 3.0, std::nullopt})[0].passed);
  checks = gate(s, {std::nullopt, 1.1});
  REQUIRE(checks.size() == 1);
  CHECK(!checks[0].passed);
  CHECK(checks[0].text == "regret 1.200 > 1.1 (--max-regret)");
  // Undefined tau fails the gate, with a line that says why.
  const Summary one = summarize({row("best", 1.0, {1.0})}, std::nullopt);
  checks = gate(one, {0.0, std::nullopt});
  CHECK(!checks[0].passed);
  CHECK(checks[0].text == "Kendall tau undefined (1 measured row(s), or every time tied) (--min-tau 0)");
  CHECK(gate(one, {}).empty());
}

TEST_CASE("to_json: planner.validate/v1 fields") {
  std::vector<Row> rows = {row("best", 1.0, {1.2}), row("baseline 1", 2.0, {}, "baseline")};
  rows[1].spec = "tp=2,pp=1";
  rows[1].note = "does not fit";
  const Summary s = summarize(rows, 1);
  const auto checks = gate(s, {0.5, std::nullopt});
  RunInfo info;
  info.model = "m.onnx";
  info.devices = 2;
  info.steps = 3;
  info.rounds = 2;
  info.candidates = 8;
  info.min_gap_pct = 3.0;
  const auto j = nlohmann::json::parse(to_json(info, rows, s, checks));
  CHECK(j["format"] == "planner.validate/v1");
  CHECK(j["measurement"]["rounds"] == 2);
  CHECK(j["selection"]["candidates"] == 8);
  CHECK(j["selection"]["min_gap_pct"] == 3.0);
  CHECK(j["rows"].size() == 2);
  CHECK(j["rows"][0]["index"] == 1);
  CHECK(j["rows"][0]["measured_s"] == 1.2);
  CHECK(j["rows"][0]["mode"] == "replay");
  CHECK(j["rows"][1]["ran"] == false);
  CHECK(j["rows"][1]["spec"] == "tp=2,pp=1");
  CHECK(j["rows"][1]["measured_s"].is_null());
  CHECK(j["summary"]["kendall_tau"].is_null());
  CHECK(j["summary"]["predicted_best"] == 1);
  CHECK(j["summary"]["ranked_mode"] == "replay");
  CHECK(j["summary"]["other_mode_rows"] == nlohmann::json::array());
  CHECK(j["checks"][0]["passed"] == false);
  CHECK(j["passed"] == false);
}
