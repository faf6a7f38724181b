#include <catch2/catch.hpp>

#include "planner/core/precision.hpp"

using namespace planner;

TEST_CASE("Precision names round-trip", "[core]") {
  for (core::Precision p : core::kPrecisions) {
    auto back = core::parse_precision(core::precision_name(p));
    REQUIRE(back);
    CHECK(*back == p);
  }
  for (std::size_t i = 0; i < core::kPrecisionCount; ++i)
    CHECK(static_cast<std::size_t>(core::kPrecisions[i]) == i);
  // A device runs the first four; fp8 is last.
  CHECK(core::kPrecisions.back() == core::Precision::fp8);
}

TEST_CASE("Precision bytes", "[core]") {
  CHECK(core::precision_bytes(core::Precision::fp32) == 4);
  CHECK(core::precision_bytes(core::Precision::tf32) == 4);
  CHECK(core::precision_bytes(core::Precision::bf16) == 2);
  CHECK(core::precision_bytes(core::Precision::fp16) == 2);
  CHECK(core::precision_bytes(core::Precision::fp8) == 1);
}

TEST_CASE("Precision parse rejects other text", "[core]") {
  CHECK_FALSE(core::parse_precision(""));
  CHECK_FALSE(core::parse_precision("int8"));
  CHECK_FALSE(core::parse_precision("FP32"));
  CHECK_FALSE(core::parse_precision("bfloat16"));
}
