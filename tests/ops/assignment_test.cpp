#include <catch2/catch.hpp>

#include "planner/ops/assignment.hpp"

using namespace planner;
using ops::Assignment;

TEST_CASE("assignments round-trip through their text form", "[ops][assignment]") {
  for (std::string_view text : {"", "tp:n", "dp:m tp:n", "dp:d0 cp:s tp:d1", "ep:e"}) {
    auto a = ops::parse_assignment(text);
    REQUIRE(a.ok());
    CHECK(ops::to_string(*a) == text);
    auto again = ops::parse_assignment(ops::to_string(*a));
    REQUIRE(again.ok());
    CHECK(*again == *a);
  }
  Assignment built{{{"dp", "m"}, {"tp", "n"}}};
  CHECK(ops::to_string(built) == "dp:m tp:n");
  CHECK(ops::to_string(Assignment::replicated()).empty());
}

TEST_CASE("assignment queries", "[ops][assignment]") {
  auto a = ops::parse_assignment("dp:m tp:n");
  REQUIRE(a.ok());
  CHECK_FALSE(a->is_replicated());
  CHECK(a->uses_axis("tp"));
  CHECK(a->uses_axis("dp"));
  CHECK_FALSE(a->uses_axis("t"));    // a prefix of an axis is not the axis
  CHECK_FALSE(a->uses_axis("tp:"));
  CHECK_FALSE(a->uses_axis("n"));    // letters are not axes
  CHECK(a->letter_of("tp") == "n");
  CHECK_FALSE(a->letter_of("cp"));
  CHECK(Assignment::replicated().is_replicated());
  CHECK_FALSE(Assignment::replicated().uses_axis("tp"));
}

TEST_CASE("bad assignment text is an error naming it", "[ops][assignment]") {
  auto bad = [](std::string_view text, std::string_view fragment) {
    auto a = ops::parse_assignment(text);
    REQUIRE_FALSE(a.ok());
    CHECK_THAT(a.error().message, Catch::Contains(std::string(fragment)));
  };
  bad("tp", "item 'tp' is not axis:letter");
  bad("tp:", "item 'tp:' is not axis:letter");
  bad(":n", "item ':n' is not axis:letter");
  bad("tp:n:m", "is not axis:letter");
  bad("dp:m  tp:n", "empty item");
  bad(" tp:n", "empty item");
  bad("tp:n ", "empty item");
  bad("tp:n tp:m", "axis 'tp' assigned twice");
  bad("((1,4),(4,1))", "is not axis:letter");
}
