// The CI gate: each threshold against hand-made predictions, at, above and
// below the limit; the regression arithmetic; usage errors; JUnit XML.

#include <string>

#include <catch2/catch.hpp>

#include "planner/gate/gate.hpp"

using namespace planner;
using namespace planner::gate;
using Catch::Matchers::Contains;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// A plan predicting `step` seconds with two stages peaking at `peak0` and
/// `peak1` GiB of an 80 GiB device.
plan::Plan make_plan(double step, double peak0, double peak1, std::string sha = std::string(64, 'a')) {
  plan::Plan p;
  p.model.path = "m.onnx";
  p.model.sha256 = std::move(sha);
  p.cluster.profile = "a100-sxm4-80gb";
  p.cluster.devices = 8;
  p.training.global_batch = 64;
  p.prediction.step_time_s = step;
  p.prediction.capacity_bytes = 80 * kGiB;
  p.prediction.stages = {{0, peak0 * kGiB, true, 0, 1, {}}, {1, peak1 * kGiB, true, 0, 1, {}}};
  return p;
}

}  // namespace

TEST_CASE("peak memory is the fullest stage") {
  CHECK(peak_memory(make_plan(1, 10, 30).prediction).value == 30 * kGiB);
  CHECK(peak_memory(plan::Prediction{}).value == 0);
}

TEST_CASE("max step time holds at equality and fails above") {
  const auto p = make_plan(0.5, 10, 20);
  Thresholds t;
  t.max_step_time = Seconds(0.5);
  auto r = evaluate(p, t);
  REQUIRE(r);
  REQUIRE(r->checks.size() == 1);
  CHECK(r->checks[0].name == "max-step-time");
  CHECK(r->checks[0].passed);
  CHECK(r->passed());
  CHECK(r->checks[0].text == "step time 0.5 s <= 0.5 s (--max-step-time)");

  t.max_step_time = Seconds(0.4);
  r = evaluate(p, t);
  REQUIRE(r);
  CHECK_FALSE(r->passed());
  CHECK(r->violations() == 1);
  CHECK(r->checks[0].value == 0.5);
  CHECK(r->checks[0].threshold == 0.4);
  CHECK(r->checks[0].text == "step time 0.5 s > 0.4 s (--max-step-time)");
}

TEST_CASE("max memory fraction uses the fullest stage over capacity") {
  // Fullest stage 20 GiB of 80 GiB: 20 / 80 = 0.25.
  const auto p = make_plan(0.5, 10, 20);
  Thresholds t;
  t.max_memory_fraction = 0.25;
  auto r = evaluate(p, t);
  REQUIRE(r);
  CHECK(r->checks[0].value == 0.25);
  CHECK(r->checks[0].passed);
  t.max_memory_fraction = 0.2;
  r = evaluate(p, t);
  REQUIRE(r);
  CHECK_FALSE(r->checks[0].passed);
  CHECK(r->checks[0].text == "peak memory 20.00 GiB = 0.25 of 80.00 GiB > 0.2 (--max-memory-fraction)");
}

TEST_CASE("regression against a baseline: step time and peak memory, each a check") {
  // Baseline 0.40 s, 20 GiB; now 0.41 s (+2.5 %), 20.2 GiB (+1 %).
  const auto base = make_plan(0.40, 5, 20);
  const auto now = make_plan(0.41, 5, 20.2);
  Thresholds t;
  t.max_regression_pct = 2;
  auto r = evaluate(now, t, &base);
  REQUIRE(r);
  REQUIRE(r->checks.size() == 2);
  CHECK(r->checks[0].name == "max-regression.step-time");
  CHECK(r->checks[0].value == Approx(2.5));
  CHECK_FALSE(r->checks[0].passed);
  CHECK(r->checks[0].text == "step time 0.41 s vs baseline 0.4 s: +2.50 % > 2 % (--max-regression)");
  CHECK(r->checks[1].name == "max-regression.peak-memory");
  CHECK(r->checks[1].value == Approx(1.0));
  CHECK(r->checks[1].passed);
  CHECK(r->violations() == 1);
  CHECK(r->notes.empty());

  // An improvement is a negative regression: -10 % <= 0 % holds.
  const auto faster = make_plan(0.36, 5, 20);
  t.max_regression_pct = 0;
  r = evaluate(faster, t, &base);
  REQUIRE(r);
  CHECK(r->checks[0].value == Approx(-10.0));
  CHECK(r->passed());
}

TEST_CASE("a baseline of another model or cluster is said") {
  const auto base = make_plan(0.4, 5, 20, std::string(64, 'b'));
  auto now = make_plan(0.4, 5, 20);
  now.cluster.devices = 16;
  Thresholds t;
  t.max_regression_pct = 1;
  auto r = evaluate(now, t, &base);
  REQUIRE(r);
  CHECK(r->passed());
  REQUIRE(r->notes.size() == 2);
  CHECK_THAT(r->notes[0], Contains("different model (sha256 bbbbbbbbbbbb vs aaaaaaaaaaaa)"));
  CHECK_THAT(r->notes[1], Contains("another cluster (8 x a100-sxm4-80gb vs 16 x a100-sxm4-80gb)"));
}

TEST_CASE("usage errors name the flag") {
  const auto p = make_plan(0.5, 10, 20);
  const auto base = make_plan(0.5, 10, 20);
  Thresholds none;
  CHECK_THAT(evaluate(p, none).error().message, Contains("no threshold given"));
  Thresholds t;
  t.max_regression_pct = 2;
  CHECK(evaluate(p, t).error().message == "--max-regression needs --baseline PLAN");
  t = {};
  t.max_step_time = Seconds(1);
  CHECK(evaluate(p, t, &base).error().message == "--baseline needs --max-regression PCT");
  t = {};
  t.max_step_time = Seconds(0);
  CHECK_THAT(evaluate(p, t).error().message, Contains("--max-step-time must be a positive"));
  t = {};
  t.max_memory_fraction = 1.5;
  CHECK_THAT(evaluate(p, t).error().message, Contains("--max-memory-fraction must be in (0, 1]"));
  auto zero = make_plan(0, 10, 20);
  t = {};
  t.max_regression_pct = 1;
  CHECK(evaluate(p, t, &zero).error().message == "baseline: prediction.step_time_s: must be positive");
}

TEST_CASE("JUnit XML: one testcase per check, failures carry the line, text escaped") {
  const auto base = make_plan(0.40, 5, 20, std::string(64, 'b'));
  const auto now = make_plan(0.41, 5, 20);
  Thresholds t;
  t.max_step_time = Seconds(1);
  t.max_regression_pct = 2;
  auto r = evaluate(now, t, &base);
  REQUIRE(r);
  const std::string xml = junit_xml(*r, "planner check <m.onnx>");
  CHECK(xml ==
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<testsuites tests=\"3\" failures=\"1\">\n"
        "  <testsuite name=\"planner check &lt;m.onnx&gt;\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"0\">\n"
        "    <testcase classname=\"planner.check\" name=\"max-step-time\"/>\n"
        "    <testcase classname=\"planner.check\" name=\"max-regression.step-time\">\n"
        "      <failure type=\"threshold\" message=\"step time 0.41 s vs baseline 0.4 s: +2.50 % &gt; 2 % "
        "(--max-regression)\">value 2.5, threshold 2</failure>\n"
        "    </testcase>\n"
        "    <testcase classname=\"planner.check\" name=\"max-regression.peak-memory\"/>\n"
        "    <system-out>note: the baseline is of a different model (sha256 bbbbbbbbbbbb vs aaaaaaaaaaaa): the "
        "comparison crosses models</system-out>\n"
        "  </testsuite>\n"
        "</testsuites>\n");
}

TEST_CASE("no layout fits: one failed check without a value, named after the memory threshold") {
  Thresholds t;
  t.max_step_time = Seconds(1);
  auto c = no_layout_fits(t, "no layout fits: even the model state needs 2.00 GiB");
  CHECK(c.name == "fits");
  CHECK_FALSE(c.passed);
  CHECK(c.text == "no layout fits: even the model state needs 2.00 GiB");
  t.max_memory_fraction = 0.5;
  c = no_layout_fits(t, "no layout fits: x");
  CHECK(c.name == "max-memory-fraction");
  CHECK(c.threshold == 0.5);
  CHECK(c.text == "no layout fits: x (--max-memory-fraction 0.5)");
  Report r;
  r.checks.push_back(c);
  // No value to print: the failure's body repeats the line.
  CHECK_THAT(junit_xml(r, "s"), Contains("<failure type=\"threshold\" message=\"no layout fits: x (--max-memory-fraction "
                                         "0.5)\">no layout fits: x (--max-memory-fraction 0.5)</failure>"));
}
