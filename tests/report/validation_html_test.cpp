// html_report() with planner validate's points: the chart's circles carry
// the points' numbers and sit where the log axes put them.

#include <cmath>
#include <regex>
#include <string>

#include <catch2/catch.hpp>

#include "planner/report/report.hpp"
#include "report_fixtures.hpp"

using namespace planner;

TEST_CASE("html_report: predicted against measured", "[report]") {
  const plan::Plan p = report_test::tiny_plan();
  CHECK(report::html_report(p).find("id=\"validation\"") == std::string::npos);  // no points, no section
  const std::vector<report::ValidationPoint> pts = {
      {"best", "dp=2", 1e-3, 1e-3, false},       // on the diagonal
      {"candidate 2", "tp=2", 1e-3, 1e-2, false},  // measured 10 x slower
      {"baseline 1", "pp=2", 2e-3, 0, true},     // not measured: table only
  };
  const std::string h = report::html_report(p, pts);
  const auto begin = h.find("<svg id=\"validation\"");
  REQUIRE(begin != std::string::npos);
  const std::string svg = h.substr(begin, h.find("</svg>", begin) - begin);
  static const std::regex circle(
      R"re(<circle cx="([0-9.]+)" cy="([0-9.]+)" r="5" fill="[^"]+" data-name="([^"]+)" data-predicted-s="([^"]+)" data-measured-s="([^"]+)")re");
  std::vector<std::smatch> found;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it)
    found.push_back(*it);
  REQUIRE(found.size() == 2);
  CHECK(found[0][3] == "best");
  CHECK(std::stod(found[1][5]) == Approx(1e-2));
  // The range is [1e-3, 1e-2] widened by 0.15 decades each side: 1.3
  // decades over 320 px. best at (1e-3, 1e-3): x = 70 + 0.15 / 1.3 x 320,
  // y = 10 + 320 - 0.15 / 1.3 x 320; candidate 2 one decade higher.
  const double d = 320 / 1.3;
  CHECK(std::stod(found[0][1]) == Approx(70 + 0.15 * d).margin(1e-3));
  CHECK(std::stod(found[0][2]) == Approx(330 - 0.15 * d).margin(1e-3));
  CHECK(std::stod(found[1][1]) == Approx(std::stod(found[0][1])).margin(1e-3));
  CHECK(std::stod(found[0][2]) - std::stod(found[1][2]) == Approx(d).margin(1e-3));
  // Every point in the table, the unmeasured one with "-".
  CHECK(h.find("<tr><td>baseline 1</td><td class=\"n\">2.000 ms</td><td class=\"n\">-</td>") != std::string::npos);
  CHECK(h.find("<script") == std::string::npos);
}
