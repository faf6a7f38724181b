#include <catch2/catch.hpp>

#include <unordered_set>

#include "enumerate.hpp"
#include "planner/layout/tensor_layout.hpp"

using namespace planner::layout;
using Shape64 = std::vector<std::int64_t>;

namespace {
DeviceMesh mesh_of(std::string_view text) {
  auto m = DeviceMesh::parse(text);
  REQUIRE(m.ok());
  return *m;
}
TensorLayout layout_of(std::string_view text, const DeviceMesh& mesh) {
  auto l = parse_layout(text, mesh);
  INFO(text << ": " << (l.ok() ? "" : l.error().message));
  REQUIRE(l.ok());
  return *l;
}
std::string error_of(const TensorLayout& l, const Shape64& shape, const DeviceMesh& mesh) {
  auto s = l.validate(shape, mesh);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find('\n') == std::string::npos);
  return s.error().message;
}
}  // namespace

TEST_CASE("named factories build the expected layouts", "[layout][tensor_layout]") {
  DeviceMesh m = mesh_of("mesh(dp=2,cp=2,tp=4)");
  MeshAxis dp(0), cp(1), tp(2);
  CHECK(to_string(TensorLayout::replicated(3), m) == "[-,-,-]");
  CHECK(to_string(TensorLayout(), m) == "[]");
  CHECK(to_string(TensorLayout::split(3, 1, tp), m) == "[-,tp,-]");
  CHECK(to_string(TensorLayout::split(2, 0, dp).with_split(0, cp), m) == "[dp*cp,-]");
  CHECK(to_string(TensorLayout::split(2, 0, cp).with_split(0, dp), m) == "[cp*dp,-]");
  CHECK(to_string(TensorLayout::partial(2, tp).with_partial(dp), m) == "[-,-]partial(dp,tp)");
  CHECK(to_string(TensorLayout::split(2, 0, dp).with_partial(tp), m) == "[dp,-]partial(tp)");

  TensorLayout l = TensorLayout::split(3, 0, dp).with_split(0, cp).with_split(2, tp).with_partial(cp);
  CHECK(l.rank() == 3);
  CHECK(l.split_dim(dp) == 0);
  CHECK(l.split_dim(tp) == 2);
  CHECK(l.is_partial(cp));
  CHECK(l.partial_axes() == std::vector<MeshAxis>{cp});
  CHECK(l.partial_mask() == 2U);
  CHECK(l.without(cp) == TensorLayout::split(3, 0, dp).with_split(2, tp));
  CHECK(TensorLayout::replicated(2).is_replicated());
  CHECK_FALSE(TensorLayout::partial(2, dp).is_replicated());
}

TEST_CASE("validate names the dim and axis at fault", "[layout][tensor_layout]") {
  DeviceMesh m = mesh_of("mesh(dp=2,tp=4)");
  MeshAxis dp(0), tp(1);
  CHECK(TensorLayout::split(2, 0, dp).validate(Shape64{8, 6}, m).ok());
  CHECK(TensorLayout::replicated(0).validate(Shape64{}, m).ok());
  CHECK(TensorLayout::split(1, 0, tp).validate(Shape64{0}, m).ok());  // empty dims divide

  CHECK_THAT(error_of(TensorLayout::split(2, 0, dp), {8, 6, 4}, m),
             Catch::Equals("layout [dp,-] has rank 2 but the tensor has rank 3 (shape [8,6,4])"));
  CHECK_THAT(error_of(TensorLayout::split(2, 0, dp).with_split(1, dp), {8, 8}, m),
             Catch::Equals("layout [dp,dp]: mesh axis dp splits both dim 0 and dim 1"));
  CHECK_THAT(error_of(TensorLayout::split(2, 1, tp).with_split(1, tp), {8, 8}, m),
             Catch::Equals("layout [-,tp*tp]: mesh axis tp appears twice in dim 1"));
  CHECK_THAT(error_of(TensorLayout::split(2, 1, tp).with_partial(tp), {8, 8}, m),
             Catch::Equals("layout [-,tp]partial(tp): mesh axis tp splits dim 1 and is also partial"));
  CHECK_THAT(error_of(TensorLayout::split(2, 1, dp).with_split(1, tp), {8, 6}, m),
             Catch::Equals("layout [-,dp*tp]: dim 1 of size 6 is not divisible by its 8-way split over dp*tp"));
  CHECK_THAT(error_of(TensorLayout::split(2, 1, tp), {8, 6}, m),
             Catch::Equals("layout [-,tp]: dim 1 of size 6 is not divisible by its 4-way split over tp"));
  CHECK_THAT(error_of(TensorLayout::split(2, 1, MeshAxis(5)), {8, 8}, m),
             Catch::Equals("layout [-,#5]: dim 1 uses mesh axis #5 but mesh(dp=2,tp=4) has 2 axes"));
  CHECK_THAT(error_of(TensorLayout::partial(1, MeshAxis(3)), {8}, m),
             Catch::Equals("layout [-]partial(#3): partial over mesh axis #3 but mesh(dp=2,tp=4) has 2 axes"));
}

TEST_CASE("local shapes and blocks, hand-computed", "[layout][tensor_layout]") {
  DeviceMesh m = mesh_of("mesh(dp=2,tp=4)");
  Shape64 shape{8, 12, 16};
  auto local = [&](std::string_view text) { return layout_of(text, m).local_shape(shape, m); };
  CHECK(local("[-,-,-]") == Shape64{8, 12, 16});
  CHECK(local("[dp,tp,-]") == Shape64{4, 3, 16});
  CHECK(local("[dp*tp,-,-]") == Shape64{1, 12, 16});
  CHECK(local("[-,-,tp*dp]") == Shape64{8, 12, 2});
  CHECK(local("[-,-,-]partial(dp,tp)") == Shape64{8, 12, 16});  // addends are full size
  CHECK(local("[dp,-,-]partial(tp)") == Shape64{4, 12, 16});

  // [dp*tp] on 8 elements, mesh(dp=2,tp=4): block index = 4 dp + tp = rank.
  // [tp*dp]: block index = 2 tp + dp; rank 1 (dp 0, tp 1) holds block 2.
  Shape64 v{8};
  for (int r = 0; r < 8; ++r) CHECK(layout_of("[dp*tp]", m).local_block(v, m, r).offset == Shape64{r});
  CHECK(layout_of("[tp*dp]", m).local_block(v, m, 1).offset == Shape64{2});
  CHECK(layout_of("[tp*dp]", m).local_block(v, m, 4).offset == Shape64{1});
  Block b = layout_of("[dp,-,tp]", m).local_block(shape, m, 7);  // dp 1, tp 3
  CHECK(b.offset == Shape64{4, 0, 12});
  CHECK(b.extent == Shape64{4, 12, 4});
  CHECK(layout_of("[dp,tp,-]", m).shard_count(1, m) == 4);
}

TEST_CASE("equality and hash distinguish every layout", "[layout][tensor_layout]") {
  DeviceMesh m = mesh_of("mesh(dp=2,cp=2,tp=2)");
  for (int rank = 0; rank <= 3; ++rank) {
    auto all = testing::all_layouts(m, rank);
    std::unordered_set<TensorLayout> set(all.begin(), all.end());
    CHECK(set.size() == all.size());  // no two enumerated layouts are equal
    std::unordered_set<std::size_t> hashes;
    for (const auto& l : all) {
      hashes.insert(std::hash<TensorLayout>{}(l));
      TensorLayout copy = TensorLayout::replicated(rank);
      for (int d = 0; d < rank; ++d)
        for (MeshAxis a : l.dim_axes(d)) copy = copy.with_split(d, a);
      for (MeshAxis a : l.partial_axes()) copy = copy.with_partial(a);
      CHECK(copy == l);
      CHECK(copy.hash() == l.hash());
    }
    CHECK(hashes.size() == all.size());  // and FNV-1a separates them all
  }
  // Order within a dim matters.
  CHECK_FALSE(TensorLayout::split(1, 0, MeshAxis(0)).with_split(0, MeshAxis(1)) ==
              TensorLayout::split(1, 0, MeshAxis(1)).with_split(0, MeshAxis(0)));
}

TEST_CASE("MindSpore shard strategies convert both ways", "[layout][tensor_layout]") {
  DeviceMesh tp4 = mesh_of("mesh(tp=4)");
  // MatMul with strategy ((1,4),(4,1)): x split on K, w split on K.
  std::vector<std::int64_t> x{1, 4}, w{4, 1};
  CHECK(to_string(*from_shard_strategy(x, tp4), tp4) == "[-,tp]");
  CHECK(to_string(*from_shard_strategy(w, tp4), tp4) == "[tp,-]");

  DeviceMesh m = mesh_of("mesh(dp=2,tp=4)");
  CHECK(to_shard_strategy(layout_of("[dp,-,tp]", m), m) == Shape64{2, 1, 4});
  CHECK(to_shard_strategy(layout_of("[tp*dp,-]", m), m) == Shape64{8, 1});
  CHECK(to_shard_strategy(layout_of("[-,tp]partial(dp)", m), m) == Shape64{1, 4});  // partial dropped
  std::vector<std::int64_t> s1{2, 4}, s2{8, 1}, s3{1, 1}, s4{4, 2};
  CHECK(to_string(*from_shard_strategy(s1, m), m) == "[dp,tp]");
  CHECK(to_string(*from_shard_strategy(s2, m), m) == "[dp*tp,-]");  // mesh order
  CHECK(to_string(*from_shard_strategy(s3, m), m) == "[-,-]");
  CHECK(to_string(*from_shard_strategy(s4, m), m) == "[tp,dp]");
  for (const auto& l : testing::valid_layouts(m, Shape64{8, 8}, false)) {
    auto counts = to_shard_strategy(l, m);
    auto back = from_shard_strategy(counts, m);
    REQUIRE(back.ok());  // axes of distinct sizes: never ambiguous
    CHECK(to_shard_strategy(*back, m) == counts);
  }

  std::vector<std::int64_t> three{3, 1}, ambiguous{2, 1}, zero{0};
  auto e1 = from_shard_strategy(three, m);
  REQUIRE_FALSE(e1.ok());
  CHECK_THAT(e1.error().message, Catch::Contains("(3,1): no assignment of the axes of mesh(dp=2,tp=4)"));
  DeviceMesh sq = mesh_of("mesh(dp=2,tp=2)");
  auto e2 = from_shard_strategy(ambiguous, sq);
  REQUIRE_FALSE(e2.ok());
  CHECK_THAT(e2.error().message,
             Catch::Equals("shard strategy (2,1) is ambiguous on mesh(dp=2,tp=2): [dp,-] and [tp,-] both give it"));
  CHECK_FALSE(from_shard_strategy(zero, sq).ok());
  // A size-1 axis is never chosen, so it adds no ambiguity.
  DeviceMesh with1 = mesh_of("mesh(pp=1,tp=2)");
  CHECK(to_string(*from_shard_strategy(ambiguous, with1), with1) == "[tp,-]");
}
