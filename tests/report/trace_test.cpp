// chrome_trace() on the tiny plan (report_fixtures.hpp): the trace is parsed
// back and its events checked against the hand-computed step.
#include <map>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "planner/report/report.hpp"
#include "report_fixtures.hpp"

using namespace planner;
using nlohmann::json;

namespace {

json trace_of(const plan::Plan& p) {
  auto t = report::chrome_trace(p);
  REQUIRE(t.ok());
  return json::parse(*t);
}

/// The one "X" event with this pid and name.
json event(const json& t, int pid, const std::string& name) {
  json found;
  int n = 0;
  for (const auto& e : t.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("pid") == pid && e.at("name") == name) found = e, ++n;
  REQUIRE(n == 1);
  return found;
}

}  // namespace

TEST_CASE("chrome trace: processes, threads and complete events of the tiny plan", "[report][trace]") {
  const json t = trace_of(report_test::tiny_plan());
  REQUIRE(t.at("traceEvents").is_array());
  CHECK(t.at("displayTimeUnit") == "ms");
  CHECK(t.at("otherData").at("step_time_s") == 10.5);

  std::map<int, std::string> process;
  std::map<std::pair<int, int>, std::string> thread;
  int complete = 0;
  for (const auto& e : t.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "process_name") process[e.at("pid")] = e.at("args").at("name");
    if (ph == "M" && e.at("name") == "thread_name") thread[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
    if (ph != "X") continue;
    ++complete;
    // Inside the step: 0 <= ts, ts + dur <= 10.5 s = 10,500,000 us.
    CHECK(e.at("ts").get<double>() >= 0);
    CHECK(e.at("ts").get<double>() + e.at("dur").get<double>() <= 10.5e6);
    CHECK(thread.count({e.at("pid"), e.at("tid")}) == 1);  // its thread was named before it
  }
  CHECK(complete == 30);  // 15 spans per stage
  // pp=2 outermost with stride 2: stage 0 holds devices 0-1, stage 1 2-3.
  CHECK(process == std::map<int, std::string>{{0, "stage 0 (devices 0-1)"}, {1, "stage 1 (devices 2-3)"}});
  CHECK(thread.at({0, 0}) == "compute");
  CHECK(thread.at({0, 100}) == "tp/cp collectives");
  CHECK(thread.at({0, 200}) == "pp send/recv");
  CHECK(thread.at({1, 300}) == "dp/ZeRO collectives");
  CHECK(thread.count({0, 300}) == 0);  // stage 0 has no dp span

  // F0 on stage 0: [0, 0.75] s = ts 0, dur 750,000 us, compute thread.
  const json f0 = event(t, 0, "F0");
  CHECK(f0.at("tid") == 0);
  CHECK(f0.at("cat") == "compute");
  CHECK(f0.at("ts") == 0);
  CHECK(f0.at("dur") == 750000);
  CHECK(f0.at("args").at("micro_batch") == 0);
  CHECK(f0.at("args").at("chunk") == 0);
  CHECK(f0.at("args").at("kind") == "forward");
  // B1 on stage 1: [6, 7.5] s.
  const json b1 = event(t, 1, "B1");
  CHECK(b1.at("ts") == 6e6);
  CHECK(b1.at("dur") == 1.5e6);
  CHECK(b1.at("args").at("micro_batch") == 1);
  // R0 on stage 1: [2.5, 3] s.
  CHECK(event(t, 1, "R0").at("dur") == 5e5);
  // The activation of F0 on the wire [1, 1.5] s, on both stages.
  const json send = event(t, 0, "send act F0 -> stage 1");
  CHECK(send.at("tid") == 200);
  CHECK(send.at("ts") == 1e6);
  CHECK(send.at("dur") == 5e5);
  CHECK(send.at("args").at("peer_stage") == 1);
  CHECK(event(t, 1, "recv act F0 <- stage 0").at("ts") == 1e6);
  // tp collectives of F1 on stage 0: [1.75, 2] s.
  const json tp = event(t, 0, "tp F1");
  CHECK(tp.at("tid") == 100);
  CHECK(tp.at("ts") == 1.75e6);
  CHECK(tp.at("dur") == 2.5e5);
  CHECK(event(t, 0, "optimizer").at("ts") == 10e6);

  // Busy compute per stage (forward + recompute + backward + optimizer):
  //   stage 0: 0.75 + 0.75 + 1.5 + 1.5 + 0.5 = 5 s; bubbles 3 + 1 = 4 s
  //   stage 1: 1 + 0.5 + 1.5 + 1 + 0.5 + 1.5 + 0.5 = 6.5 s; bubbles 1.5 + 2.25 = 3.75 s
  std::map<int, double> busy, bubble;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("cat") != "compute") continue;
    (e.at("name") == "bubble" ? bubble : busy)[e.at("pid")] += e.at("dur").get<double>();
  }
  CHECK(busy[0] == Approx(5e6));
  CHECK(busy[1] == Approx(6.5e6));
  CHECK(bubble[0] == Approx(4e6));
  CHECK(bubble[1] == Approx(3.75e6));
}

TEST_CASE("chrome trace: overlapping spans of a stream get another lane", "[report][trace]") {
  plan::Plan p = report_test::tiny_plan();
  // A second transfer on stage 1 at [2.25, 3]: overlaps recv F1 [2, 2.5].
  auto& spans = p.prediction.timeline[1].spans;
  spans.push_back(report_test::span("pp", "send_gradient", 0, 1, 0, 2.25, 3));
  const json t = trace_of(p);
  std::map<double, int> tid_at;  // ts -> tid of the two "send grad B0" events on stage 1
  std::string lane2;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("pid") == 1 && e.at("name") == "send grad B0 -> stage 0")
      tid_at[e.at("ts").get<double>()] = e.at("tid");
    if (e.at("ph") == "M" && e.at("name") == "thread_name" && e.at("pid") == 1 && e.at("tid") == 201)
      lane2 = e.at("args").at("name");
  }
  CHECK(tid_at == std::map<double, int>{{2.25e6, 201}, {4.5e6, 200}});
  CHECK(lane2 == "pp send/recv #2");
}

TEST_CASE("chrome trace with measured spans: one process per rank beside the prediction", "[report][trace]") {
  // Rank 0: forward 0-1 ms on compute, an all-reduce 1-1.5 ms on tp; rank 1:
  // one send 0.25-2 ms on pp. Times in microseconds in the trace.
  const std::vector<std::vector<report::MeasuredSpan>> ranks{
      {{0.0, 1e-3, "compute", "F0 c0"}, {1e-3, 1.5e-3, "tp", "tp_comm F0 c0"}},
      {{0.25e-3, 2e-3, "pp", "pp_comm flush"}}};
  auto text = report::chrome_trace_with_measured(report_test::tiny_plan(), ranks, "replay");
  REQUIRE(text.ok());
  const json t = json::parse(*text);
  const json plain = trace_of(report_test::tiny_plan());
  int predicted = 0, plain_spans = 0;
  std::map<int, std::string> process;
  std::vector<json> measured;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") process[e.at("pid")] = e.at("args").at("name");
    if (e.at("ph") != "X") continue;
    if (e.at("pid").get<int>() >= 1000) measured.push_back(e);
    else ++predicted;
  }
  for (const auto& e : plain.at("traceEvents")) plain_spans += e.at("ph") == "X";
  CHECK(predicted == plain_spans);  // the prediction is unchanged
  CHECK(process.at(1000) == "measured rank 0 (replay)");
  CHECK(process.at(1001) == "measured rank 1 (replay)");
  REQUIRE(measured.size() == 3);
  CHECK(measured[0].at("name") == "F0 c0");
  CHECK(measured[0].at("tid") == 0);  // compute
  CHECK(measured[0].at("dur").get<double>() == Approx(1000));
  CHECK(measured[1].at("tid") == 100);  // tp: stream 1 x lane stride 100
  CHECK(measured[1].at("ts").get<double>() == Approx(1000));
  CHECK(measured[1].at("dur").get<double>() == Approx(500));
  CHECK(measured[2].at("pid") == 1001);
  CHECK(measured[2].at("tid") == 200);  // pp
  CHECK(measured[2].at("dur").get<double>() == Approx(1750));
}

TEST_CASE("chrome trace: a plan without a timeline is an error", "[report][trace]") {
  plan::Plan p = report_test::tiny_plan();
  p.prediction.timeline.clear();
  auto t = report::chrome_trace(p);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message ==
        "the plan has no prediction.timeline (write it again with planner estimate --plan FILE -o NEW)");
}

TEST_CASE("stage devices and span labels", "[report]") {
  plan::Plan p = report_test::tiny_plan();
  CHECK(report::stage_devices(p, 1) == "2-3");
  // dp outermost, pp inside: stage 0 = 0, 1, 4, 5 of 8.
  p.cluster.devices = 8;
  p.layout.mesh = {{"dp", 2, 4}, {"pp", 2, 2}, {"tp", 2, 1}};
  CHECK(report::stage_devices(p, 0) == "0-1, 4-5");
  const auto s = report_test::span("pp", "recv_gradient", 3, 5, 2, 0, 1);
  CHECK(report::span_label(s, false) == "recv grad B3 <- stage 2");
  CHECK(report::span_label(s, true) == "recv grad B3 c5 <- stage 2");
}
