// Validation of PipelineProblem: each error names the field at fault.
#include "planner/sim/problem.hpp"

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "planner/sim/pipeline.hpp"

using namespace planner;
using namespace planner::sim;

namespace {

const ChunkCost kUnit{Seconds(1), Seconds(2), Bytes(1)};

std::string error_of(const PipelineProblem& pr) {
  Status s = validate(pr);
  REQUIRE_FALSE(s.ok());
  auto r = simulate(pr);  // simulate refuses the same problems
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == s.error().message);
  return s.error().message;
}

}  // namespace

TEST_CASE("uniform_problem sizes chunks and boundaries from p and v", "[sim][problem]") {
  const PipelineProblem pr = uniform_problem(Schedule::interleaved, 4, 8, 3, kUnit, {Seconds(1), Seconds(2)});
  CHECK(pr.num_chunks() == 12);
  CHECK(pr.chunks.size() == 12);
  CHECK(pr.boundaries.size() == 11);
  CHECK(pr.extra.empty());
  CHECK(validate(pr).ok());
  CHECK(schedule_name(Schedule::one_f_one_b) == "1f1b");
}

TEST_CASE("validate names the bad field", "[sim][problem]") {
  PipelineProblem pr = uniform_problem(Schedule::one_f_one_b, 4, 8, 1, kUnit);
  REQUIRE(validate(pr).ok());

  SECTION("chunk count") {
    pr.chunks.pop_back();
    CHECK_THAT(error_of(pr), Catch::Contains("chunks has 3 entries") && Catch::Contains("= 4"));
  }
  SECTION("boundary count") {
    pr.boundaries.pop_back();
    CHECK_THAT(error_of(pr), Catch::Contains("boundaries has 2 entries"));
  }
  SECTION("no boundaries at all means free transfers") {
    pr.boundaries.clear();
    CHECK(validate(pr).ok());
  }
  SECTION("extra count") {
    pr.extra = {Seconds(1)};
    CHECK_THAT(error_of(pr), Catch::Contains("extra has 1 entries"));
  }
  SECTION("negative forward time") {
    pr.chunks[2].forward = Seconds(-1);
    CHECK_THAT(error_of(pr), Catch::Contains("chunk 2 forward"));
  }
  SECTION("NaN backward time") {
    pr.chunks[1].backward = Seconds(std::nan(""));
    CHECK_THAT(error_of(pr), Catch::Contains("chunk 1 backward"));
  }
  SECTION("infinite activation bytes") {
    pr.chunks[0].activation = Bytes(std::numeric_limits<double>::infinity());
    CHECK_THAT(error_of(pr), Catch::Contains("chunk 0 activation"));
  }
  SECTION("negative transfer") {
    pr.boundaries[1].backward = Seconds(-0.5);
    CHECK_THAT(error_of(pr), Catch::Contains("boundary 1"));
  }
  SECTION("negative extra") {
    pr.extra = {Seconds(0), Seconds(0), Seconds(-1), Seconds(0)};
    CHECK_THAT(error_of(pr), Catch::Contains("extra time of device 2"));
  }
  SECTION("virtual stages outside the interleaved schedule") {
    pr.virtual_stages = 2;
    CHECK_THAT(error_of(pr), Catch::Contains("virtual_stages = 2"));
  }
  SECTION("no stages") {
    pr.stages = 0;
    CHECK_THAT(error_of(pr), Catch::Contains("stages must be >= 1"));
  }
  SECTION("no micro-batches") {
    pr.micro_batches = 0;
    CHECK_THAT(error_of(pr), Catch::Contains("micro_batches must be >= 1"));
  }
}
