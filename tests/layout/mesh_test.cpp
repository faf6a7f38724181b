#include <catch2/catch.hpp>

#include "planner/layout/mesh.hpp"

using namespace planner::layout;

namespace {
DeviceMesh mesh_of(std::string_view text) {
  auto m = DeviceMesh::parse(text);
  INFO(text << ": " << (m.ok() ? "" : m.error().message));
  REQUIRE(m.ok());
  return *m;
}
MeshAxis axis(const DeviceMesh& m, std::string_view name) {
  auto a = m.find(name);
  REQUIRE(a.has_value());
  return *a;
}
}  // namespace

TEST_CASE("ranks are row-major with the last axis fastest", "[layout][mesh]") {
  DeviceMesh m = mesh_of("mesh(dp=4,tp=2)");
  REQUIRE(m.devices() == 8);
  REQUIRE(m.num_axes() == 2);
  MeshAxis dp = axis(m, "dp"), tp = axis(m, "tp");
  CHECK(dp.index() == 0);
  CHECK(m.stride(dp) == 2);
  CHECK(m.stride(tp) == 1);
  std::vector<int> c{3, 1};
  CHECK(m.rank_of(c) == 7);
  CHECK(m.coords_of(5) == std::vector<int>{2, 1});
  for (int r = 0; r < m.devices(); ++r) CHECK(m.rank_of(m.coords_of(r)) == r);
  CHECK(m.group_ranks(tp, 5) == std::vector<int>{4, 5});
  CHECK(m.group_ranks(dp, 5) == std::vector<int>{1, 3, 5, 7});
  CHECK(m.coord(6, dp) == 3);
  CHECK_FALSE(m.find("pp").has_value());
}

TEST_CASE("axes record how their groups sit on nodes", "[layout][mesh]") {
  SECTION("one node: every axis intra-node") {
    DeviceMesh m = mesh_of("mesh(dp=4,tp=2)");
    CHECK(m.nodes() == 1);
    for (MeshAxis a : m.axes()) {
      CHECK(m.level(a) == AxisLevel::intra_node);
      CHECK(m.ranks_per_node(a) == m.size(a));
    }
  }
  SECTION("tp inside nodes, dp half in, pp across") {
    // Strides 8, 2, 1: rank = 8 pp + 2 dp + tp; nodes of 4 ranks.
    DeviceMesh m = mesh_of("mesh(pp=2,dp=4,tp=2;per_node=4)");
    CHECK(m.devices() == 16);
    CHECK(m.nodes() == 4);
    MeshAxis pp = axis(m, "pp"), dp = axis(m, "dp"), tp = axis(m, "tp");
    // tp group {0,1}: node 0.
    CHECK(m.ranks_per_node(tp) == 2);
    CHECK(m.level(tp) == AxisLevel::intra_node);
    // dp group {0,2,4,6}: nodes 0,0,1,1.
    CHECK(m.ranks_per_node(dp) == 2);
    CHECK(m.nodes_spanned(dp) == 2);
    CHECK(m.level(dp) == AxisLevel::mixed);
    // pp group {0,8}: nodes 0 and 2.
    CHECK(m.ranks_per_node(pp) == 1);
    CHECK(m.level(pp) == AxisLevel::inter_node);
    CHECK(m.node_of(9) == 2);
  }
  SECTION("tp larger than a node spans two") {
    DeviceMesh m = mesh_of("mesh(dp=2,tp=16;per_node=8)");
    CHECK(m.ranks_per_node(axis(m, "tp")) == 8);
    CHECK(m.level(axis(m, "tp")) == AxisLevel::mixed);
    CHECK(m.level(axis(m, "dp")) == AxisLevel::inter_node);
  }
  SECTION("a size-1 axis is intra-node") {
    DeviceMesh m = mesh_of("mesh(pp=1,dp=2;per_node=1)");
    CHECK(m.level(axis(m, "pp")) == AxisLevel::intra_node);
    CHECK(m.level(axis(m, "dp")) == AxisLevel::inter_node);
    CHECK(axis_level_name(AxisLevel::mixed) == "mixed");
  }
}

TEST_CASE("mesh text form round-trips", "[layout][mesh]") {
  for (std::string_view text : {"mesh()", "mesh(tp=8)", "mesh(dp=4,tp=2)", "mesh(pp=2,dp=4,tp=2;per_node=4)",
                                "mesh(dp=2,cp=2,ep=2,tp=2;per_node=8)"}) {
    DeviceMesh m = mesh_of(text);
    CHECK(to_string(m) == text);
    CHECK(mesh_of(to_string(m)) == m);
  }
  // A node as large as the mesh (or larger) is the single-node form.
  CHECK(to_string(mesh_of("mesh(dp=4,tp=2;per_node=16)")) == "mesh(dp=4,tp=2)");
  CHECK(mesh_of(" mesh ( dp = 4 , tp=2 ; per_node = 4 ) ") == mesh_of("mesh(dp=4,tp=2;per_node=4)"));
  CHECK(DeviceMesh() == mesh_of("mesh()"));
  CHECK_FALSE(mesh_of("mesh(dp=4,tp=2)") == mesh_of("mesh(tp=2,dp=4)"));
  CHECK_FALSE(mesh_of("mesh(dp=4,tp=2)") == mesh_of("mesh(dp=4,tp=2;per_node=4)"));
}

TEST_CASE("bad meshes are rejected with one-line errors", "[layout][mesh]") {
  auto error_of = [](std::string_view text) {
    auto m = DeviceMesh::parse(text);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().message.find('\n') == std::string::npos);
    return m.error().message;
  };
  CHECK_THAT(error_of("mesh(dp=4,tp=2"), Catch::Contains("column 15"));
  CHECK_THAT(error_of("mesh(dp=4 tp=2)"), Catch::Contains("expected ',', ';' or ')' at column 11"));
  CHECK_THAT(error_of("mesh(dp=0)"), Catch::Contains("axis size >= 1 at column 9, found 0"));
  CHECK_THAT(error_of("mesh(4=dp)"), Catch::Contains("axis name at column 6"));
  CHECK_THAT(error_of("grid(dp=4)"), Catch::Contains("expected 'mesh' at column 1"));
  CHECK_THAT(error_of("mesh(dp=2,dp=2)"), Catch::Contains("\"dp\" appears twice"));
  CHECK_THAT(error_of("mesh(dp=3;per_node=2)"), Catch::Contains("3 devices do not fill whole nodes of 2"));
  CHECK_THAT(error_of("mesh(dp=2) x"), Catch::Contains("unexpected text"));
  // dp groups {0,2,4} and {1,3,5} sit 2+1 on nodes 0 and 1: uneven.
  CHECK_THAT(error_of("mesh(dp=3,tp=2;per_node=3)"),
             Catch::Contains("groups of axis dp are spread unevenly over nodes of 3 devices"));
  // Only tp is uneven here: its groups {0,1,2} and {3,4,5} on nodes of 2.
  CHECK_THAT(error_of("mesh(dp=2,tp=3;per_node=2)"), Catch::Contains("groups of axis tp are spread unevenly"));
  auto bad = DeviceMesh::create({{"d-p", 2}});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("not an identifier"));
  auto zero = DeviceMesh::create({{"dp", 2}}, 0);
  REQUIRE_FALSE(zero.ok());
  CHECK_THAT(zero.error().message, Catch::Contains("devices per node is 0"));
}
