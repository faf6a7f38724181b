// Fused attention ops. f32 = 4 bytes.
#include <catch2/catch.hpp>

#include "ops/builder.hpp"

using namespace planner;
using namespace planner::ops::testing;

TEST_CASE("com.microsoft Attention: projection, scores, softmax, context", "[ops][attention]") {
  Builder b;
  // B=2, S=4, H=8, 2 heads of d=4; weights [H, 3H], bias [3H].
  b.act("x", {2, 4, 8}).param("w", {8, 24}).param("bias", {24}).act("y", {2, 4, 8});
  auto id = b.op("Attention", {"x", "w", "bias"}, {"y"}, {{"num_heads", i64(2)}}, "com.microsoft");
  // proj    2*B*S*H*3H     = 2*2*4*8*24  = 3072
  // bias    B*S*3H         = 2*4*24      =  192
  // scores  2*B*h*S*S*d    = 2*2*2*4*4*4 =  512
  // softmax 5*B*h*S*S      = 5*2*2*4*4   =  320
  // context 2*B*h*S*S*dv   = 2*2*2*4*4*4 =  512
  // forward 3072 + 192 + 512 + 320 + 512 = 4608
  // backward 2*(512 + 512 + 320) = 2688, + proj for dX 3072 + proj for dW 3072,
  //          + dBias 192 = 9024
  // bytes: x 64*4 = 256, w 192*4 = 768, bias 96, y 256, QKV = B*S*3H*4 = 768,
  //        stats = B*h*S*4 = 64.
  // forward reads x + w + bias + QKV = 256 + 768 + 96 + 768 = 1888;
  //         writes y + QKV + stats = 256 + 768 + 64 = 1088.
  // backward reads dY 256 + Y 256 + QKV 768 + stats 64
  //         + (dX: dQKV 768 + w 768) + (dW: dQKV 768 + x 256) = 3904;
  //         writes dQKV 768 + dx 256 + dw 768 + dbias 96 = 1888.
  CHECK_COST(b.cost(id), 4608, 9024, 1888, 1088, 3904, 1888);
  CHECK(b.op_class(id) == graph::OpClass::attention);
}

TEST_CASE("com.microsoft Attention with a KV cache uses the present length", "[ops][attention]") {
  Builder b;
  b.act("x", {1, 2, 8}).param("w", {8, 24}).act("past", {2, 1, 2, 3, 4}).act("y", {1, 2, 8}).act("present", {2, 1, 2, 5, 4});
  auto id = b.op("Attention", {"x", "w", "", "", "past"}, {"y", "present"}, {{"num_heads", i64(2)}}, "com.microsoft");
  // B=1, S=2, L=3+2=5, h=2, d=4: proj 2*1*2*8*24 = 768, scores 2*1*2*2*5*4 = 160,
  // softmax 5*1*2*2*5 = 100, context 160: 1188.
  CHECK(b.cost(id).forward_flops.value == 1188);
}

TEST_CASE("com.microsoft MultiHeadAttention on projected Q, K, V", "[ops][attention]") {
  Builder b;
  b.act("q", {2, 4, 8}).act("k", {2, 6, 8}).act("v", {2, 6, 8}).act("y", {2, 4, 8});
  auto id = b.op("MultiHeadAttention", {"q", "k", "v"}, {"y"}, {{"num_heads", i64(2)}}, "com.microsoft");
  // B=2, S=4, L=6, h=2, d=dv=4.
  // scores 2*2*2*4*6*4 = 768, softmax 5*2*2*4*6 = 480, context 768: 2016.
  // backward 2*(768 + 768 + 480) = 4032.
  // bytes: q 256, k 384, v 384, y 256, stats 2*2*4*4 = 64.
  // forward reads 1024, writes 256 + 64 = 320.
  // backward reads dY 256 + Y 256 + q,k,v 1024 + stats 64 = 1600; writes 1024.
  CHECK_COST(b.cost(id), 2016, 4032, 1024, 320, 1600, 1024);
}

TEST_CASE("ONNX Attention (opset 23), 4-D inputs", "[ops][attention]") {
  Builder b;
  b.act("q", {1, 2, 3, 4}).act("k", {1, 2, 5, 4}).act("v", {1, 2, 5, 6}).act("y", {1, 2, 3, 6});
  auto id = b.op("Attention", {"q", "k", "v"}, {"y"});
  // B=1, h=2, S=3, L=5, d=4, dv=6: scores 2*1*2*3*5*4 = 240, softmax 5*1*2*3*5 = 150,
  // context 2*1*2*3*5*6 = 360: 750.
  CHECK(b.cost(id).forward_flops.value == 750);
  CHECK(b.op_class(id) == graph::OpClass::attention);
}

TEST_CASE("Attention without num_heads falls back", "[ops][attention]") {
  Builder b;
  b.act("x", {1, 2, 8}).param("w", {8, 24}).act("y", {1, 2, 8});
  auto id = b.op("Attention", {"x", "w"}, {"y"}, {}, "com.microsoft");
  CHECK_FALSE(b.cost(id).known);
  CHECK(b.cost(id).forward_flops.value > 0);
}
