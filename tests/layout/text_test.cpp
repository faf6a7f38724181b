// The canonical text form: exhaustive round trips and parse errors.

#include <catch2/catch.hpp>

#include <unordered_set>

#include "enumerate.hpp"
#include "planner/layout/tensor_layout.hpp"

using namespace planner::layout;

namespace {
DeviceMesh mesh_of(std::string_view text) {
  auto m = DeviceMesh::parse(text);
  REQUIRE(m.ok());
  return *m;
}
// The same text with spaces around every token.
std::string spaced(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("[],*()-").find(c) != std::string_view::npos) {
      out += ' ';
      out += c;
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

TEST_CASE("every layout of small meshes round-trips through text", "[layout][text]") {
  std::size_t total = 0;
  for (auto [mesh_text, max_rank] : {std::pair{"mesh(dp=2,tp=2)", 3}, std::pair{"mesh(dp=2,cp=2,tp=2)", 3},
                                     std::pair{"mesh(pp=2,dp=2,cp=2,tp=2;per_node=4)", 2}}) {
    DeviceMesh m = mesh_of(mesh_text);
    for (int rank = 0; rank <= max_rank; ++rank) {
      auto all = testing::all_layouts(m, rank);
      std::unordered_set<std::string> texts;
      for (const TensorLayout& l : all) {
        std::string text = to_string(l, m);
        texts.insert(text);
        auto back = parse_layout(text, m);
        INFO(mesh_text << " " << text);
        REQUIRE(back.ok());
        CHECK(*back == l);
        CHECK(std::hash<TensorLayout>{}(*back) == std::hash<TensorLayout>{}(l));
        CHECK(to_string(*back, m) == text);
        auto loose = parse_layout(spaced(text), m);
        REQUIRE(loose.ok());
        CHECK(*loose == l);
      }
      CHECK(texts.size() == all.size());  // distinct values print distinctly
      total += all.size();
    }
  }
  // 1+4+18+28 on 2x2, 1+... on 2x2x2: the enumeration is not vacuous.
  CHECK(total > 1000);
}

TEST_CASE("partial axes parse in any order and print in mesh order", "[layout][text]") {
  DeviceMesh m = mesh_of("mesh(dp=2,cp=2,tp=2)");
  auto l = parse_layout("[-,-]partial(tp,dp)", m);
  REQUIRE(l.ok());
  CHECK(to_string(*l, m) == "[-,-]partial(dp,tp)");
  CHECK(*l == *parse_layout("[ - , - ] partial ( dp , tp )", m));
}

TEST_CASE("parse errors are one line and name the column", "[layout][text]") {
  DeviceMesh m = mesh_of("mesh(dp=2,tp=2)");
  auto error_of = [&](std::string_view text) {
    auto l = parse_layout(text, m);
    REQUIRE_FALSE(l.ok());
    CHECK(l.error().message.find('\n') == std::string::npos);
    return l.error().message;
  };
  CHECK_THAT(error_of("[dp,xx]"),
             Catch::Equals("layout \"[dp,xx]\": unknown mesh axis \"xx\" at column 5 (mesh(dp=2,tp=2))"));
  CHECK_THAT(error_of("[dp,dp]"),
             Catch::Equals("layout \"[dp,dp]\": mesh axis dp used again at column 5 (first at column 2)"));
  CHECK_THAT(error_of("[dp]partial(dp)"), Catch::Contains("mesh axis dp used again at column 13"));
  CHECK_THAT(error_of("[tp*tp]"), Catch::Contains("used again at column 5"));
  CHECK_THAT(error_of("[dp"), Catch::Equals("layout \"[dp\": expected '*', ',' or ']' at column 4, found end of text"));
  CHECK_THAT(error_of("dp]"), Catch::Contains("expected '[' at column 1, found d"));
  CHECK_THAT(error_of("[dp,]"), Catch::Contains("expected a mesh axis name at column 5, found ]"));
  CHECK_THAT(error_of("[dp**tp]"), Catch::Contains("expected a mesh axis name at column 5"));
  CHECK_THAT(error_of("[-*dp]"), Catch::Contains("at column 3"));
  CHECK_THAT(error_of("[dp]partial()"), Catch::Contains("expected a mesh axis name at column 13"));
  CHECK_THAT(error_of("[dp]partial(tp"), Catch::Contains("expected ',' or ')' at column 15"));
  CHECK_THAT(error_of("[dp] x"), Catch::Contains("expected 'partial(' or end of text at column 6"));
  CHECK_THAT(error_of("[dp]partialx(tp)"), Catch::Contains("at column 5"));
  CHECK_THAT(error_of(""), Catch::Contains("expected '[' at column 1, found end of text"));
}

TEST_CASE("layouts print axes outside the mesh as #i", "[layout][text]") {
  DeviceMesh m = mesh_of("mesh(tp=2)");
  std::string text = to_string(TensorLayout::split(1, 0, MeshAxis(3)), m);
  CHECK(text == "[#3]");
  CHECK_FALSE(parse_layout(text, m).ok());
}
