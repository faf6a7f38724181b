// Sharding of embeddings and losses (src/ops/shard_embedding.cpp):
// vocabulary-parallel and row-sharded tables, hidden splits, the
// vocabulary-parallel cross-entropy.
#include <catch2/catch.hpp>

#include <algorithm>

#include "ops/builder.hpp"
#include "ops/shard_helpers.hpp"
#include "planner/ops/sharding.hpp"

using namespace planner;
using namespace planner::ops;
using planner::ops::testing::Builder;
using namespace planner::ops::testing;


TEST_CASE("an embedding table splits by vocabulary, by hidden, or follows the batch", "[ops][sharding]") {
  Builder b;
  b.param("table", {1000, 64}).input("ids", {4, 16}, core::DType::i64).act("e", {4, 16, 64});
  const auto id = b.op("Gather", {"table", "ids"}, {"e"});
  const auto s = shard(b, id, "mesh(dp=2,tp=4)");
  CHECK(s.op.spec.family == "embedding");
  CHECK(s.assignments() ==
        std::vector<std::string>{"", "tp:v", "tp:h", "dp:i0", "dp:i0 tp:v", "dp:i0 tp:h"});
  // Vocabulary parallel: 250 rows each, zeros for ids elsewhere: partial.
  const auto& vocab = s.by("tp:v");
  CHECK(vocab.name == "((4,1),(1,1))");
  CHECK(s.text(vocab.outputs[0]) == "[-,-,-]partial(tp)");
  // Hidden split: the table's columns.
  CHECK(s.text(s.by("tp:h").outputs[0]) == "[-,-,tp]");
  CHECK(s.text(s.by("tp:h").inputs[0]) == "[-,tp]");
  // Batch split: the table's gradient is partial over dp, a 256000 B sync.
  const auto& batch = s.by("dp:i0");
  CHECK(s.text(batch.input_grads[0]) == "[-,-]partial(dp)");
  CHECK(weight_grad_sync(s.op, batch, 0, b.g, s.mesh).at(0).bytes.value == 256000.0);
  CHECK_FALSE(batch.input_grads[1]);  // integer ids: no gradient
}

TEST_CASE("a row-sharded table over every device (the seed's Wide&Deep)", "[ops][sharding]") {
  Builder b;
  b.param("table", {800, 16}).input("ids", {32, 4}, core::DType::i64).act("e", {32, 4, 16});
  const auto id = b.op("Gather", {"table", "ids"}, {"e"});
  const auto s = shard(b, id, "mesh(dp=2,tp=4)", any_role(2));
  const auto& rows = s.by("dp:v tp:v");
  CHECK(rows.name == "((8,1),(1,1))");
  CHECK(s.text(rows.inputs[0]) == "[dp*tp,-]");
  CHECK(s.text(rows.outputs[0]) == "[-,-,-]partial(dp,tp)");
}

TEST_CASE("vocabulary-parallel cross-entropy all-reduces 3 statistics per row", "[ops][sharding]") {
  Builder b;
  b.input("x", {64, 16}).param("w", {16, 1000}).act("logits", {64, 1000}).input("labels", {64}, core::DType::i64);
  b.act("loss", {});
  b.op("MatMul", {"x", "w"}, {"logits"});
  const auto id = b.op("SoftmaxCrossEntropyLoss", {"logits", "labels"}, {"loss"}, {{"reduction", testing::str("mean")}});
  const auto s = shard(b, id, "mesh(dp=2,tp=4)");
  const auto& vp = s.by("dp:n tp:c");
  // 32 rows per dp rank: max, sum of exp and the target logit: 32 x 3 x 4 B.
  REQUIRE(vp.forward_comm.size() == 1);
  CHECK(vp.forward_comm[0].bytes.value == 384.0);
  CHECK(s.mesh.name(vp.forward_comm[0].axis) == "tp");
  CHECK(vp.backward_comm.empty());
  // The mean loss is partial over dp only (the vocabulary is reduced inside).
  CHECK(s.text(vp.outputs[0]) == "[]partial(dp)");
  CHECK(s.text(vp.inputs[1]) == "[dp]");
}

TEST_CASE("NLL loss: a class split is a masked pick, partial", "[ops][sharding]") {
  Builder b;
  b.input("lp", {64, 10}).input("t", {64}, core::DType::i64).act("loss", {});
  const auto id = b.op("NegativeLogLikelihoodLoss", {"lp", "t"}, {"loss"});
  const auto s = shard(b, id, "mesh(tp=2)", any_role(1));
  CHECK(s.text(s.by("tp:c").outputs[0]) == "[]partial(tp)");
  CHECK(s.by("tp:c").forward_comm.empty());
}
