#include <catch2/catch.hpp>

#include "planner/core/dtype.hpp"

using namespace planner;

TEST_CASE("DType names round-trip", "[core]") {
  for (std::size_t i = 0; i < core::kDTypeCount; ++i) {
    const auto t = static_cast<core::DType>(i);
    auto back = core::parse_dtype(core::dtype_name(t));
    REQUIRE(back);
    CHECK(*back == t);
  }
  CHECK(core::dtype_name(core::DType::bf16) == "bf16");
  CHECK(core::dtype_name(core::DType::boolean) == "bool");
}

TEST_CASE("DType sizes and floating types", "[core]") {
  CHECK(core::dtype_size(core::DType::f32) == 4);
  CHECK(core::dtype_size(core::DType::bf16) == 2);
  CHECK(core::dtype_size(core::DType::f16) == 2);
  CHECK(core::dtype_size(core::DType::f8) == 1);
  CHECK(core::dtype_size(core::DType::c128) == 16);
  CHECK(core::dtype_size(core::DType::string) == 8);
  CHECK(core::is_floating(core::DType::bf16));
  CHECK_FALSE(core::is_floating(core::DType::i64));
  CHECK_FALSE(core::is_floating(core::DType::c64));
}

TEST_CASE("DType parse rejects other text", "[core]") {
  CHECK_FALSE(core::parse_dtype(""));
  CHECK_FALSE(core::parse_dtype("float32"));
  CHECK_FALSE(core::parse_dtype("F32"));
  CHECK_FALSE(core::parse_dtype("boolean"));
}
