// Losses. f32 = 4 bytes, i64 = 8 bytes.
#include <catch2/catch.hpp>

#include "ops/builder.hpp"

using namespace planner;
using namespace planner::ops::testing;

TEST_CASE("SoftmaxCrossEntropyLoss", "[ops][loss]") {
  Builder b;
  b.act("logits", {4, 10}).input("labels", {4}, DType::i64).act("loss", {});
  auto id = b.op("SoftmaxCrossEntropyLoss", {"logits", "labels"}, {"loss"}, {{"reduction", str("mean")}});
  // N=4 rows of C=10: log-softmax 5 * 40 = 200, + 2 per label * 4 = 8: 208; backward 416.
  // bytes: logits 160, labels 32, loss 4, log-probs (kept though not an output) 160.
  // forward reads 160 + 32 = 192, writes loss 4 + log-probs 160 = 164.
  // backward reads dLoss 4 + log-probs 160 + labels 32 = 196, writes dlogits 160.
  CHECK_COST(b.cost(id), 208, 416, 192, 164, 196, 160);
  CHECK(b.op_class(id) == graph::OpClass::loss);
  // Special functions: forward 40 exps + 4 logs (one per row) = 44;
  // backward the row's log-sum-exp again (40 exps + 4 logs) and
  // exp(score - lse) (40): 84.
  CHECK(b.cost(id).forward_special == 44);
  CHECK(b.cost(id).backward_special == 84);
}

TEST_CASE("SoftmaxCrossEntropyLossInternal (com.microsoft) with a log_prob output", "[ops][loss]") {
  Builder b;
  b.act("logits", {4, 10}).input("labels", {4}, DType::i64).act("loss", {}).act("logp", {4, 10});
  auto id = b.op("SoftmaxCrossEntropyLossInternal", {"logits", "labels"}, {"loss", "logp"}, {}, "com.microsoft");
  // Same FLOPs; writes loss 4 + logp 160 = 164 (no extra copy).
  CHECK(b.cost(id).forward_flops.value == 208);
  CHECK(b.cost(id).forward_bytes_written.value == 164);
  CHECK(b.op_class(id) == graph::OpClass::loss);
}

TEST_CASE("NegativeLogLikelihoodLoss", "[ops][loss]") {
  Builder b;
  b.act("logp", {4, 10}).input("target", {4}, DType::i64).act("loss", {});
  auto id = b.op("NegativeLogLikelihoodLoss", {"logp", "target"}, {"loss"});
  // 2 per target * 4 = 8; reads 4 picked elements 16 + targets 32 = 48, writes 4;
  // backward 4 FLOPs, reads dLoss 4 + targets 32 = 36, writes dense dlogp 160.
  CHECK_COST(b.cost(id), 8, 4, 48, 4, 36, 160);
}
