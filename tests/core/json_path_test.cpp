#include <catch2/catch.hpp>

#include "planner/core/json_path.hpp"

using namespace planner;

TEST_CASE("JSON paths join members with dots", "[core]") {
  CHECK(core::json_path("", "training") == "training");
  CHECK(core::json_path("training", "precision") == "training.precision");
  CHECK(core::json_path("layout.strategies[2]", "kind") == "layout.strategies[2].kind");
  CHECK(core::json_path(core::json_path("a", "b"), "c") == "a.b.c");
}

TEST_CASE("JSON paths name the top level", "[core]") {
  CHECK(core::describe_json_path("") == "(top level)");
  CHECK(core::describe_json_path("device.hbm") == "device.hbm");
}
