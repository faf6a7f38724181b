// measured.json round trip, its reader's errors, and compare()'s arithmetic.

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "planner/executor/measured.hpp"

namespace planner::executor {
namespace {

Measured sample() {
  Measured m;
  m.plan_path = "plan.json";
  m.plan_sha256 = "abc";
  m.ranks = 2;
  m.steps = 3;
  m.warmup = 1;
  m.step_times_s = {0.004, 0.003, 0.005};
  m.step_time_s = median(m.step_times_s);
  m.components_s = {{"compute", 0.002}, {"tp_comm", 0.0005}, {"pp_comm", 0.0}, {"dp_comm", 0.0}, {"optimizer", 0.0001}};
  m.peak_memory_bytes = {100.0 * 1048576, 120.0 * 1048576};
  m.host = "h";
  m.date = "2026-12-03T08:00:00Z";
  m.versions = {{"planner", "0.1.0"}, {"mpi", "Open MPI v4.1.4"}, {"openblas", "OpenBLAS 0.3.21"}};
  return m;
}

TEST_CASE("median", "[executor]") {
  CHECK(median({0.004, 0.003, 0.005}) == 0.004);
  CHECK(median({1, 4, 2, 3}) == 2.5);  // (2 + 3) / 2
  CHECK(median({}) == 0);
}

TEST_CASE("measured.json round trip", "[executor]") {
  const Measured m = sample();
  const std::string text = to_json(m);
  CHECK(text.rfind("{\n  \"format\": \"planner.measured/v1\",\n  \"mode\": \"replay\",", 0) == 0);
  auto back = measured_from_json(text, "m.json");
  REQUIRE(back);
  CHECK(*back == m);
}

TEST_CASE("measured.json reader errors name the field", "[executor]") {
  CHECK(measured_from_json("{\"format\": \"planner.measured/v2\"}", "m.json").error().message ==
        "m.json: format 'planner.measured/v2' is not supported (this planner reads planner.measured/v1)");
  std::string text = to_json(sample());
  auto bad = text;
  bad.replace(bad.find("\"steps\": 3"), 10, "\"steps\": 2");
  CHECK(measured_from_json(bad, "m.json").error().message == "m.json: step_times_s: expected 2 entries (steps), got 3");
  bad = text;
  bad.replace(bad.find("\"host\""), 6, "\"hots\"");
  CHECK(measured_from_json(bad, "m.json").error().message == "m.json: (top level): unknown key 'hots'");
  bad = text;
  bad.replace(bad.find("\"backend\": \"cpu\""), 16, "\"backend\": \"tpu\"");
  CHECK(measured_from_json(bad, "m.json").error().message == "m.json: backend: expected \"cpu\" or \"cuda\"");
}

TEST_CASE("measured.json: backend is written after mode, and optional when read", "[executor]") {
  Measured m = sample();
  m.backend = "cuda";
  const std::string text = to_json(m);
  CHECK(text.find("\"mode\": \"replay\",\n  \"backend\": \"cuda\",") != std::string::npos);
  auto back = measured_from_json(text, "m.json");
  REQUIRE(back);
  CHECK(back->backend == "cuda");
  // A file written before the field existed reads as cpu.
  std::string old = text;
  old.erase(old.find("  \"backend\": \"cuda\",\n"), 21);
  auto read_old = measured_from_json(old, "m.json");
  REQUIRE(read_old);
  CHECK(read_old->backend == "cpu");
}

TEST_CASE("compare: percentage errors per component and peak memory per stage", "[executor]") {
  auto p = testing::load_plan("gpt_pp2.json");
  p.prediction.step_time_s = 0.002;
  p.prediction.breakdown_s = {{"compute", 0.0015}, {"recompute", 0.0005}, {"bubble", 0.0004},
                              {"model_parallel.all_reduce", 0.0001}, {"model_parallel.all_gather", 0.0001},
                              {"data_parallel_exposed", 0.0}, {"optimizer", 0.0001}};
  p.prediction.stages = {{0, 200.0 * 1048576, true, 0, 1, {}}, {1, 60.0 * 1048576, true, 0, 1, {}}};
  const Measured m = sample();
  auto rows = compare(p, "abc", m, {0, 1});
  REQUIRE(rows);
  REQUIRE(rows->size() == 8);
  const auto& r = *rows;
  CHECK(r[0].name == "step_time");
  CHECK(*r[0].error_pct == Approx(100.0));    // (0.004 - 0.002) / 0.002
  CHECK(r[1].name == "compute");
  CHECK(*r[1].predicted == Approx(0.002));    // compute + recompute
  CHECK(*r[1].error_pct == Approx(0.0));
  CHECK(*r[2].predicted == Approx(0.0002));   // tp_comm: both model_parallel entries
  CHECK(*r[2].error_pct == Approx(150.0));    // (0.0005 - 0.0002) / 0.0002
  CHECK(*r[3].error_pct == Approx(-100.0));   // pp_comm 0 against a bubble of 0.0004
  CHECK_FALSE(r[4].error_pct);                // dp_comm: predicted 0, no percentage
  // A predicted time below a microsecond is rounding, not a prediction.
  auto p2 = p;
  p2.prediction.breakdown_s["data_parallel_exposed"] = 1e-17;
  CHECK_FALSE((*compare(p2, "abc", m, {0, 1}))[4].error_pct);
  CHECK(r[6].name == "peak_memory[pp 0]");
  CHECK(*r[6].error_pct == Approx(-50.0));    // 100 MiB against 200 MiB
  CHECK(*r[7].error_pct == Approx(100.0));    // 120 MiB against 60 MiB
  CHECK(compare(p, "def", m, {0, 1}).error().message ==
        "the measurement is of another plan (plan.sha256 abc in the measurement, def for this plan)");
}

}  // namespace
}  // namespace planner::executor
