#include <catch2/catch.hpp>

#include "planner/core/result.hpp"
#include "planner/core/units.hpp"

using namespace planner;

namespace {
Result<int> parse_positive(int x) {
  if (x <= 0) return make_error("value {} is not positive", x);
  return x;
}
Result<int> doubled(int x) {
  PLANNER_TRY(int v, parse_positive(x));
  return 2 * v;
}
}  // namespace

TEST_CASE("Result carries a value or an error", "[core]") {
  auto ok = doubled(4);
  REQUIRE(ok.ok());
  CHECK(*ok == 8);
  auto bad = doubled(-1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "value -1 is not positive");
}

TEST_CASE("Units combine only meaningfully", "[core]") {
  Flops f(2e12);
  FlopsPerSecond r(1e12);
  Seconds t = f / r;  // 2e12 / 1e12 = 2 s
  CHECK(t.value == Approx(2.0));
  Bytes b(3e9);
  BytesPerSecond bw(1.5e9);
  CHECK((b / bw).value == Approx(2.0));  // 3e9 / 1.5e9 = 2 s
  CHECK((Seconds(1) + Seconds(2)).value == Approx(3.0));
  CHECK(Bytes(10) / Bytes(4) == Approx(2.5));
  CHECK(gib(1).value == 1073741824.0);
}
