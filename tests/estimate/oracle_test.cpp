// local_scaling(): the share of an op a device runs and its local GEMM
// shape under a strategy; CostModelOracle: the cost model as the op-sharding
// search sees it.

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"
#include "planner/ops/sharding.hpp"

using namespace estimate_test;

namespace {

// x[b=2, s=8, h=48] -> fc1 (48 x 192, column-parallel candidate) -> Relu ->
// fc2 (192 x 48, row-parallel candidate). b*s = 16, h = 48, 4h = 192.
struct Mlp {
  ModelBuilder b;
  Mlp() {
    auto x = b.input("x", {2, 8, 48}, core::DType::f32);
    auto u = b.linear("fc1", x, 48, 192, false);
    auto r = b.op("relu", "Relu", {u}, b.shape(u));
    b.linear("fc2", r, 192, 48, false);
    b.finish();
  }
  graph::OpId id(const std::string& name) const {
    for (std::uint32_t i = 0; i < b.g.num_ops(); ++i)
      if (b.g.op(graph::OpId{i}).name == name) return graph::OpId{i};
    FAIL("no op " << name);
    return graph::OpId{0};
  }
};

struct Sharded {
  layout::DeviceMesh mesh;
  ops::OpSharding op;
  // The strategy whose input layouts print as `x` and `w`.
  const ops::Strategy& with(const std::string& x, const std::string& w) const {
    for (const auto& s : op.strategies)
      if (s.inputs.size() >= 2 && s.inputs[0] && s.inputs[1] && layout::to_string(*s.inputs[0], mesh) == x &&
          layout::to_string(*s.inputs[1], mesh) == w)
        return s;
    FAIL("no strategy with inputs " << x << " " << w);
    return op.strategies.front();
  }
};

Sharded shard(const graph::OpGraph& g, graph::OpId id, const char* mesh) {
  auto m = layout::DeviceMesh::parse(mesh).value();
  auto op = ops::enumerate_strategies(ops::op_spec(g, id), g, m, {}, ops::dim_kinds(g));
  return Sharded{m, std::move(op)};
}

}  // namespace

TEST_CASE("estimate oracle: local_scaling: column-parallel keeps k and divides n, row-parallel divides k",
          "[estimate][oracle]") {
  const Mlp m;
  const auto& g = m.b.g;
  const auto fc1 = m.id("fc1/MatMul"), fc2 = m.id("fc2/MatMul");
  const auto s1 = shard(g, fc1, "mesh(tp=4)");
  const auto s2 = shard(g, fc2, "mesh(tp=4)");

  SECTION("replicated: the graph's shape, all of it") {
    const auto sc = estimate::local_scaling(g.op(fc1), g, s1.op.strategies.front(), s1.mesh);
    CHECK(sc.flops == 1.0);
    REQUIRE(sc.gemm);
    CHECK(*sc.gemm == cost::GemmShape{16, 192, 48});
  }
  SECTION("column-parallel fc1 over tp = 4: m = b*s = 16, n = 4h/4 = 48, k = h = 48") {
    const auto& s = s1.with("[-,-,-]", "[-,tp]");
    const auto sc = estimate::local_scaling(g.op(fc1), g, s, s1.mesh);
    CHECK(sc.flops == 0.25);
    CHECK(sc.bytes == 0.25);
    REQUIRE(sc.gemm);
    CHECK(sc.gemm->m == 16);
    CHECK(sc.gemm->n == 48);
    CHECK(sc.gemm->k == 48);
  }
  SECTION("row-parallel fc2 over tp = 4: k = 4h/4 = 48, n = h = 48, m = 16") {
    const auto& s = s2.with("[-,-,tp]", "[tp,-]");
    const auto sc = estimate::local_scaling(g.op(fc2), g, s, s2.mesh);
    CHECK(sc.flops == 0.25);
    REQUIRE(sc.gemm);
    CHECK(*sc.gemm == cost::GemmShape{16, 48, 48});
  }
  SECTION("tp = 2 tells n from k: column n = 96, k = 48; row k = 96, n = 48") {
    const auto c2 = shard(g, fc1, "mesh(tp=2)");
    const auto r2 = shard(g, fc2, "mesh(tp=2)");
    const auto col = estimate::local_scaling(g.op(fc1), g, c2.with("[-,-,-]", "[-,tp]"), c2.mesh);
    const auto row = estimate::local_scaling(g.op(fc2), g, r2.with("[-,-,tp]", "[tp,-]"), r2.mesh);
    REQUIRE(col.gemm);
    REQUIRE(row.gemm);
    CHECK(*col.gemm == cost::GemmShape{16, 96, 48});
    CHECK(*row.gemm == cost::GemmShape{16, 48, 96});
  }
  SECTION("a batch split over dp divides m only") {
    const auto s = shard(g, fc1, "mesh(dp=2,tp=4)");
    const auto& st = s.with("[dp,-,-]", "[-,tp]");
    const auto sc = estimate::local_scaling(g.op(fc1), g, st, s.mesh);
    CHECK(sc.flops == 0.125);
    REQUIRE(sc.gemm);
    CHECK(*sc.gemm == cost::GemmShape{8, 48, 48});
  }
  SECTION("a non-GEMM op gets its share and no shape") {
    const auto relu = m.id("relu");
    const auto s = shard(g, relu, "mesh(tp=4)");
    REQUIRE(s.op.strategies.size() > 1);
    const auto sc = estimate::local_scaling(g.op(relu), g, s.op.strategies.back(), s.mesh);
    CHECK(sc.flops == 0.25);
    CHECK_FALSE(sc.gemm);
  }
}

TEST_CASE("estimate oracle: CostModelOracle: op time, collectives and memory from the cost model",
          "[estimate][oracle]") {
  const Mlp m;
  const auto& g = m.b.g;
  const auto fc1 = m.id("fc1/MatMul");
  const auto s = shard(g, fc1, "mesh(tp=4)");
  const FakeCostModel fake;
  // 16 B per parameter (Adam, no sharding).
  const estimate::CostModelOracle oracle(fake, s.mesh, 16.0);
  const auto& col = s.with("[-,-,-]", "[-,tp]");
  // (1 ms + 2 ms) x 1/4.
  CHECK(oracle.op_time(g.op(fc1), g, col).value == Approx(0.75e-3));
  CHECK(oracle.op_time(g.op(fc1), g, s.op.strategies.front()).value == Approx(3e-3));
  // Memory: the weight's local block, 48 x 192 / 4 = 2,304 elements x 16 B =
  // 36,864 B; the activation input is not counted.
  CHECK(oracle.memory(s.op, col, g, s.mesh).value == Approx(36864));
  CHECK(oracle.memory(s.op, s.op.strategies.front(), g, s.mesh).value == Approx(48 * 192 * 16.0));
  // Collectives: an all-reduce of 4,096 B over the 4 tp ranks of one node
  // at 1 GB/s; local steps and single ranks are free.
  layout::CommStep ar;
  ar.kind = core::Collective::all_reduce;
  ar.axis = layout::MeshAxis(0);
  ar.group_size = 4;
  ar.bytes = Bytes(4096);
  fake.clear_calls();
  CHECK(oracle.comm_time(ar, s.mesh).value == Approx(4.096e-6));
  const auto calls = fake.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].kind == core::Collective::all_reduce);
  CHECK(calls[0].where.ranks == 4);
  CHECK(calls[0].where.ranks_per_node == 4);
  layout::CommStep local = ar;
  local.kind = layout::kLocalSlice;
  CHECK(oracle.comm_time(local, s.mesh).value == 0);
  layout::CommStep one = ar;
  one.group_size = 1;
  CHECK(oracle.comm_time(one, s.mesh).value == 0);
}
