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

#include "planner/core/sha256.hpp"

TEST_CASE("sha256 matches the FIPS 180-4 examples", "[core]") {
  CHECK(planner::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(planner::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(planner::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a' (FIPS 180-2 appendix B.3): crosses many 64-byte blocks.
  CHECK(planner::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
