// html_report() on the tiny plan (report_fixtures.hpp): the SVG itself is
// parsed (rect attributes) and checked against the plan.
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "planner/report/report.hpp"
#include "report_fixtures.hpp"

using namespace planner;
using Catch::Matchers::Contains;

namespace {

using Attrs = std::map<std::string, std::string>;

/// The attributes of every <rect ...> inside the <svg id="ID"> element.
std::vector<Attrs> rects(const std::string& html, const std::string& id) {
  const auto begin = html.find("<svg id=\"" + id + "\"");
  REQUIRE(begin != std::string::npos);
  const auto end = html.find("</svg>", begin);
  const std::string svg = html.substr(begin, end - begin);
  std::vector<Attrs> out;
  static const std::regex rect(R"(<rect ([^>]*)>)"), attr(R"(([a-z][a-z-]*)="([^"]*)\")");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it) {
    Attrs a;
    const std::string body = (*it)[1];
    for (auto jt = std::sregex_iterator(body.begin(), body.end(), attr); jt != std::sregex_iterator(); ++jt)
      a[(*jt)[1]] = (*jt)[2];
    out.push_back(std::move(a));
  }
  return out;
}

/// The value of attribute `name` of the <svg id="ID"> element.
double svg_attr(const std::string& html, const std::string& id, const std::string& name) {
  const auto begin = html.find("<svg id=\"" + id + "\"");
  const auto close = html.find('>', begin);
  const std::string tag = html.substr(begin, close - begin);
  const auto at = tag.find(name + "=\"");
  REQUIRE(at != std::string::npos);
  return std::stod(tag.substr(at + name.size() + 2));
}

constexpr double G = 1073741824.0;

}  // namespace

TEST_CASE("report: one timeline bar per device group and micro-batch step", "[report][html]") {
  const plan::Plan p = report_test::tiny_plan();
  const std::string html = report::html_report(p);
  // Steps: per stage, m = 2 micro-batches x (forward + backward) x vp = 1.
  std::map<std::string, std::set<std::pair<std::string, std::string>>> steps;  // stage -> (kind, mb)
  int bars = 0;
  for (const auto& r : rects(html, "timeline")) {
    if (r.at("class") != "step") continue;
    ++bars;
    CHECK(steps[r.at("data-stage")].insert({r.at("data-kind"), r.at("data-mb")}).second);  // no duplicate
  }
  CHECK(bars == 8);
  const std::set<std::pair<std::string, std::string>> expected{
      {"forward", "0"}, {"forward", "1"}, {"backward", "0"}, {"backward", "1"}};
  CHECK(steps.at("0") == expected);
  CHECK(steps.at("1") == expected);
  // x and width follow the times: 1150 px for the 10.5 s step from x = 170.
  //   stage 1 B1 [6, 7.5]: x = 170 + 6 / 10.5 * 1150 = 827.143, width 164.286
  for (const auto& r : rects(html, "timeline")) {
    if (r.at("class") != "step" || r.at("data-stage") != "1" || r.at("data-kind") != "backward" || r.at("data-mb") != "1")
      continue;
    CHECK(r.at("data-start-s") == "6");
    CHECK(r.at("data-end-s") == "7.5");
    CHECK(std::stod(r.at("x")) == Approx(170 + 6 / 10.5 * 1150).margin(1e-3));
    CHECK(std::stod(r.at("width")) == Approx(1.5 / 10.5 * 1150).margin(1e-3));
  }
  // The other spans are drawn too: bubbles on compute, transfers in their lane.
  int bubbles = 0, others = 0;
  for (const auto& r : rects(html, "timeline")) {
    if (r.at("class") == "bubble") ++bubbles;
    if (r.at("class") == "span") ++others;
  }
  CHECK(bubbles == 4);
  CHECK(others == 30 - 8 - 4);
}

TEST_CASE("report: memory bars add up to the predicted peak", "[report][html]") {
  const plan::Plan p = report_test::tiny_plan();
  const std::string html = report::html_report(p);
  const double scale = svg_attr(html, "memory", "data-px-per-byte");
  // Scale: 320 px for max(capacity 80 GiB, peaks 51 and 52.5 GiB) = 80 GiB.
  CHECK(scale == Approx(320 / (80 * G)));
  std::map<std::string, double> bytes, height;
  std::map<std::string, std::map<std::string, double>> by_category;
  for (const auto& r : rects(html, "memory")) {
    REQUIRE(r.at("class") == "mem");
    const std::string st = r.at("data-stage");
    bytes[st] += std::stod(r.at("data-bytes"));
    height[st] += std::stod(r.at("height"));
    by_category[st][r.at("data-category")] += std::stod(r.at("data-bytes"));
  }
  for (const auto& s : p.prediction.stages) {
    const std::string st = std::to_string(s.stage);
    INFO("stage " << st);
    CHECK(bytes.at(st) == Approx(s.peak_bytes).epsilon(1e-12));
    CHECK(height.at(st) == Approx(s.peak_bytes * scale).margin(0.01));
  }
  // Stage 0: 51 GiB = 8 weights + 4 grads + 24 optimizer + 12 activations + 2 temporaries + 1 reserve.
  CHECK(by_category.at("0") == std::map<std::string, double>{{"activations", 12 * G},
                                                             {"grads", 4 * G},
                                                             {"optimizer", 24 * G},
                                                             {"reserve", 1 * G},
                                                             {"temporaries", 2 * G},
                                                             {"weights", 8 * G}});
  // Stage 1: the loss buffer counts as activations: 6 + 0.5 = 6.5 GiB; 52.5 GiB in all.
  CHECK(by_category.at("1").at("activations") == 6.5 * G);
  CHECK(bytes.at("1") == 52.5 * G);
  // Segments stack bottom-up from y = 14 + 320 = 334 in category order:
  // stage 0's weights (8 GiB = 32 px) span [302, 334].
  for (const auto& r : rects(html, "memory"))
    if (r.at("data-stage") == "0" && r.at("data-category") == "weights") {
      CHECK(std::stod(r.at("y")) == Approx(302).margin(1e-3));
      CHECK(std::stod(r.at("height")) == Approx(32).margin(1e-3));
    }
  CHECK_THAT(html, Contains("class=\"capacity\""));
}

TEST_CASE("report: layout, alternatives, self-contained", "[report][html]") {
  plan::Plan p = report_test::tiny_plan();
  p.model.path = "models/<tiny>&.onnx";
  const std::string html = report::html_report(p);
  CHECK_THAT(html, Contains("<title>planner report: models/&lt;tiny&gt;&amp;.onnx</title>"));
  CHECK_THAT(html, Contains("stage 0: 0-1; stage 1: 2-3"));
  CHECK_THAT(html, Contains("<td>matmul</td><td><code>tp:n</code></td><td class=\"n\">1</td><td class=\"n\">2</td>"));
  CHECK_THAT(html, Contains("<td>gather</td><td><code>replicated</code></td>"));
  // Alternatives: 12.6 / 10.5 - 1 = +20.0 %, 11 / 10.5 - 1 = +4.8 %.
  CHECK_THAT(html, Contains("<td class=\"n\">+20.0 %</td><td class=\"ok\">yes</td>"
                            "<td>+20.0 % step time, most from model-parallel communication</td>"));
  CHECK_THAT(html, Contains("<td class=\"n\">+4.8 %</td><td class=\"bad\">no</td><td>does not fit</td>"));
  // No script, no external resource (the SVG namespace is a name, not a fetch).
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("href") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
}

TEST_CASE("report: a plan without a timeline still renders", "[report][html]") {
  plan::Plan p = report_test::tiny_plan();
  p.prediction.timeline.clear();
  p.prediction.alternatives.clear();
  const std::string html = report::html_report(p);
  CHECK_THAT(html, Contains("This plan has no <code>prediction.timeline</code>"));
  CHECK(html.find("<svg id=\"timeline\"") == std::string::npos);
  CHECK_THAT(html, Contains("<svg id=\"memory\""));
  CHECK_THAT(html, Contains("None recorded (the search kept no runner-up)"));
}

TEST_CASE("memory categories of the plan's item kinds", "[report]") {
  CHECK(report::memory_category("gathered_weights") == "weights");
  CHECK(report::memory_category("gradients") == "grads");
  CHECK(report::memory_category("optimizer_states") == "optimizer");
  CHECK(report::memory_category("recompute_working_set") == "activations");
  CHECK(report::memory_category("temporary") == "temporaries");
  CHECK(report::memory_category("fragmentation") == "reserve");
  CHECK(report::memory_category("communicator") == "reserve");
  CHECK(report::memory_category("something_new") == "other");
}
