// Sharding strategies of contractions (src/ops/shard_matmul.cpp) and the
// engine's mechanics: layouts, partial outputs, gradient layouts, the
// data-parallel sync, MindSpore names, axis roles and divisibility.
#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>

#include "ops/builder.hpp"
#include "ops/shard_helpers.hpp"
#include "planner/ops/sharding.hpp"

using namespace planner;
using namespace planner::ops;
using planner::ops::testing::Builder;
using namespace planner::ops::testing;


TEST_CASE("MatMul x[8,64] W[64,32] on dp=2 x tp=4: batch and column splits", "[ops][sharding]") {
  Builder b;
  b.input("x", {8, 64}).param("w", {64, 32}).act("y", {8, 32});
  const auto id = b.op("MatMul", {"x", "w"}, {"y"});
  const auto s = shard(b, id, "mesh(dp=2,tp=4)");
  // x's last dim is hidden (a graph input's features): tp, a model axis,
  // splits only the weight's columns; dp, a data axis, only the batch.
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:n", "dp:m", "dp:m tp:n"});
  CHECK(s.op.strategies[0].name == "((1,1),(1,1))");
  const auto& col = s.by("dp:m tp:n");
  CHECK(col.name == "((2,1),(1,4))");
  CHECK(s.text(col.inputs[0]) == "[dp,-]");
  CHECK(s.text(col.inputs[1]) == "[-,tp]");
  CHECK(s.text(col.outputs[0]) == "[dp,tp]");
  CHECK(col.compute_fraction == 1.0 / 8);
  // dX = dY W^T sums over n: partial over tp (Megatron's f); dW = X^T dY
  // sums over m: partial over dp, synchronised by an all-reduce of the
  // local [64,8] f32 = 2048 B.
  CHECK(s.text(col.input_grads[0]) == "[dp,-]partial(tp)");
  CHECK(s.text(col.input_grads[1]) == "[-,tp]partial(dp)");
  const auto sync = weight_grad_sync(s.op, col, 1, b.g, s.mesh);
  REQUIRE(sync.size() == 1);
  CHECK(sync[0].kind == core::Collective::all_reduce);
  CHECK(s.mesh.name(sync[0].axis) == "dp");
  CHECK(sync[0].bytes.value == 2048.0);
  CHECK(weight_grad_sync(s.op, col, 0, b.g, s.mesh).empty());  // x is no parameter
  CHECK(describe(s.op, col, s.mesh) == "((2,1),(1,4)) [dp:m tp:n] in [dp,-] [-,tp] out [dp,tp]");
}

TEST_CASE("row parallel is the seed's MatMul.shard(((1,4),(4,1)))", "[ops][sharding]") {
  Builder b;
  b.input("x", {8, 64}).param("w", {64, 32}).act("y", {8, 32});
  const auto id = b.op("MatMul", {"x", "w"}, {"y"});
  const auto s = shard(b, id, "mesh(tp=4)", any_role(1));
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:m", "tp:k", "tp:n"});
  const auto& row = s.by("tp:k");
  CHECK(row.name == "((1,4),(4,1))");
  CHECK(s.text(row.outputs[0]) == "[-,-]partial(tp)");
  CHECK(s.text(row.input_grads[0]) == "[-,tp]");  // no partial: k is in x
  CHECK(s.text(row.input_grads[1]) == "[tp,-]");
  CHECK(s.by("tp:m").name == "((4,1),(1,1))");
  CHECK(s.text(s.by("tp:m").input_grads[1]) == "[-,-]partial(tp)");
}

TEST_CASE("a 3-D MatMul splits the sequence only with sequence parallelism", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 16, 64}).param("w", {64, 32}).act("y", {2, 16, 32});
  const auto id = b.op("MatMul", {"x", "w"}, {"y"});
  // Letters b (batch), m (sequence), k (hidden), n (inner).
  CHECK(shard(b, id, "mesh(tp=4)").assignments() == std::vector<std::string>{"", "tp:n"});
  ShardingOptions sp;
  sp.sequence_parallel = true;
  const auto s = shard(b, id, "mesh(tp=4)", sp);
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:m", "tp:n"});
  CHECK(s.text(s.by("tp:m").inputs[0]) == "[-,tp,-]");
  // A data axis takes the batch.
  CHECK(shard(b, id, "mesh(dp=2)").assignments() == std::vector<std::string>{"", "dp:b"});
}

TEST_CASE("Gemm keeps its bias whole under a k split", "[ops][sharding]") {
  Builder b;
  b.input("a", {8, 16}).param("w", {32, 16}).param("c", {32}).act("y", {8, 32});
  const auto id = b.op("Gemm", {"a", "w", "c"}, {"y"}, {{"transB", testing::i64(1)}});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  // B is [N,K] (transB): a column split cuts its rows.
  CHECK(s.text(s.by("tp:n").inputs[1]) == "[tp,-]");
  CHECK(s.text(s.by("tp:n").inputs[2]) == "[tp]");
  // Row parallel: the output is partial, the bias added by one member; its
  // gradient (dY summed over rows) is whole on every member.
  CHECK(s.text(s.by("tp:k").outputs[0]) == "[-,-]partial(tp)");
  CHECK(s.text(s.by("tp:k").input_grads[2]) == "[-]");
  // Batch split: the bias gradient is partial.
  CHECK(s.text(s.by("tp:m").input_grads[2]) == "[-]partial(tp)");
}

TEST_CASE("Einsum letters come from the equation", "[ops][sharding]") {
  Builder b;
  b.input("x", {2, 8, 16}).param("w", {16, 32}).act("y", {2, 8, 32});
  const auto id = b.op("Einsum", {"x", "w"}, {"y"}, {{"equation", testing::str("bsh,hf->bsf")}});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  CHECK(s.assignments() == std::vector<std::string>{"", "tp:b", "tp:s", "tp:h", "tp:f"});
  CHECK(s.text(s.by("tp:h").outputs[0]) == "[-,-,-]partial(tp)");
}

TEST_CASE("splits must divide every dim carrying the letter", "[ops][sharding]") {
  Builder b;
  b.input("x", {6, 64}).param("w", {64, 30}).act("y", {6, 30});
  const auto id = b.op("MatMul", {"x", "w"}, {"y"});
  // 30 columns do not divide by 4, 6 rows neither: only k (64) may split.
  CHECK(shard(b, id, "mesh(tp=4)", any_role(1)).assignments() == std::vector<std::string>{"", "tp:k"});
  // Two axes on one letter: [dp*tp], dp major.
  const auto s = shard(b, id, "mesh(dp=2,tp=2)", any_role(2));
  CHECK(s.text(s.by("dp:k tp:k").inputs[1]) == "[dp*tp,-]");
  CHECK(s.by("dp:k tp:k").name == "((1,4),(4,1))");
}

TEST_CASE("the rule table is sorted and every family has rows", "[ops][sharding]") {
  const auto rows = shard_rules();
  CHECK(std::is_sorted(rows.begin(), rows.end(), [](const ShardRule& a, const ShardRule& b) {
    return std::tie(a.domain, a.type) < std::tie(b.domain, b.type);
  }));
  for (const char* type : {"MatMul", "Gemm", "LayerNormalization", "Softmax", "Gather", "SoftmaxCrossEntropyLoss",
                           "Conv", "Reshape", "Transpose", "Split", "Concat", "Slice", "Add"})
    CHECK(std::any_of(rows.begin(), rows.end(), [&](const ShardRule& r) { return r.domain.empty() && r.type == type; }));
  // An op without a rule is replicated only: correct but costly.
  Builder b;
  b.input("x", {4, 8}).act("y", {4, 8}).act("i", {4, 8}, core::DType::i64);
  const auto id = b.op("TopK", {"x"}, {"y", "i"});
  const auto s = shard(b, id, "mesh(dp=2,tp=2)", any_role(2));
  CHECK(s.op.spec.family == "replicated");
  REQUIRE(s.op.strategies.size() == 1);
  CHECK(s.op.strategies[0].assignment.is_replicated());
}
