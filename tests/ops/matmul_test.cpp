// Contractions: MatMul, Gemm, Einsum, integer MatMul. f32 = 4 bytes.
#include <catch2/catch.hpp>

#include "ops/builder.hpp"

using namespace planner;
using namespace planner::ops::testing;

TEST_CASE("MatMul: activation x weight is 3x forward", "[ops][matmul]") {
  Builder b;
  b.act("a", {4, 16}).param("w", {16, 8}).act("y", {4, 8});
  auto id = b.op("MatMul", {"a", "w"}, {"y"});
  // M=4, K=16, N=8. forward 2*M*N*K = 2*4*8*16 = 1024.
  // backward dA 1024 + dW 1024 = 2048.
  // bytes: A 64*4 = 256, W 128*4 = 512, Y 32*4 = 128.
  // forward reads A + W = 768, writes Y = 128.
  // backward dA reads dY + W = 128 + 512, dW reads dY + A = 128 + 256: 1024;
  //          writes dA + dW = 256 + 512 = 768.
  CHECK_COST(b.cost(id), 1024, 2048, 768, 128, 1024, 768);
  CHECK(b.op_class(id) == graph::OpClass::matmul);
}

TEST_CASE("MatMul: weight applied to a graph input has no dX", "[ops][matmul]") {
  Builder b;
  b.input("x", {4, 16}).param("w", {16, 8}).act("y", {4, 8});
  auto id = b.op("MatMul", {"x", "w"}, {"y"});
  // forward 1024 as above; backward dW only: 1024, reads dY + X = 128 + 256 = 384,
  // writes dW = 512.
  CHECK_COST(b.cost(id), 1024, 1024, 768, 128, 384, 512);
}

TEST_CASE("MatMul: batched, broadcast, both operands activations", "[ops][matmul]") {
  Builder b;
  b.act("a", {2, 3, 4, 5}).act("b", {3, 5, 6}).act("y", {2, 3, 4, 6});
  auto id = b.op("MatMul", {"a", "b"}, {"y"});
  // batch = 2*3 = 6 (B broadcast over the leading 2), M=4, K=5, N=6.
  // forward 2*batch*M*N*K = 2*6*4*6*5 = 1440; backward dA + dB = 2*1440 = 2880.
  // bytes: A 120*4 = 480, B 90*4 = 360, Y 144*4 = 576.
  // backward reads (dY + B) + (dY + A) = 576+360 + 576+480 = 1992;
  //          writes dA + dB (dB reduced to B's shape) = 480 + 360 = 840.
  CHECK_COST(b.cost(id), 1440, 2880, 840, 576, 1992, 840);
}

TEST_CASE("MatMul: 1-D operand", "[ops][matmul]") {
  Builder b;
  b.act("a", {16}).param("w", {16, 8}).act("y", {8});
  auto id = b.op("MatMul", {"a", "w"}, {"y"});
  // M=1, K=16, N=8: 2*1*8*16 = 256 forward, 512 backward.
  CHECK(b.cost(id).forward_flops.value == 256);
  CHECK(b.cost(id).backward_flops.value == 512);
}

TEST_CASE("MatMulInteger: integer operands get no gradient", "[ops][matmul]") {
  Builder b;
  b.act("a", {4, 16}, DType::i8).constant("w", {16, 8}, DType::i8).act("y", {4, 8}, DType::i32);
  auto id = b.op("MatMulInteger", {"a", "w"}, {"y"});
  // 2*4*8*16 = 1024; reads 64 + 128 = 192 bytes, writes 32*4 = 128; no backward.
  CHECK_COST(b.cost(id), 1024, 0, 192, 128, 0, 0);
}

TEST_CASE("Gemm: transB with bias", "[ops][matmul]") {
  Builder b;
  b.act("a", {4, 16}).param("w", {8, 16}).param("c", {8}).act("y", {4, 8});
  auto id = b.op("Gemm", {"a", "w", "c"}, {"y"}, {{"transB", i64(1)}});
  // M=4, K=16, N=8 (B is [N, K] under transB).
  // forward 2MNK + MN (bias) = 1024 + 32 = 1056.
  // backward dA 1024 + dB 1024 + dC 32 (reduce dY over M) = 2080.
  // bytes: A 256, B 512, C 32, Y 128.
  // forward reads 256 + 512 + 32 = 800, writes 128.
  // backward reads (dY + B) 640 + (dY + A) 384 + dY 128 = 1152;
  //          writes dA 256 + dB 512 + dC 32 = 800.
  CHECK_COST(b.cost(id), 1056, 2080, 800, 128, 1152, 800);
}

TEST_CASE("Gemm: alpha, beta and transA", "[ops][matmul]") {
  Builder b;
  b.act("a", {16, 4}).param("w", {16, 8}).param("c", {4, 8}).act("y", {4, 8});
  auto id = b.op("Gemm", {"a", "w", "c"}, {"y"},
                 {{"transA", i64(1)}, {"alpha", f64(0.5)}, {"beta", f64(2.0)}});
  // K = A's dim 0 = 16 under transA: 2MNK = 1024; alpha != 1: + MN 32;
  // beta C with beta not in {0, 1}: + 2MN 64. Total 1120.
  CHECK(b.cost(id).forward_flops.value == 1120);
}

TEST_CASE("FusedMatMul (com.microsoft) honours transA and alpha", "[ops][matmul]") {
  Builder b;
  b.act("a", {2, 16, 4}).param("w", {16, 8}).act("y", {2, 4, 8});
  auto id = b.op("FusedMatMul", {"a", "w"}, {"y"}, {{"transA", i64(1)}, {"alpha", f64(0.125)}}, "com.microsoft");
  // batch 2, M=4, K=16, N=8: 2*2*4*8*16 = 2048, + alpha scaling numel(Y) 64 = 2112.
  // backward 2*2048 + 2*64 = 4224.
  CHECK(b.cost(id).forward_flops.value == 2112);
  CHECK(b.cost(id).backward_flops.value == 4224);
}

TEST_CASE("Einsum: batched contraction matches MatMul", "[ops][matmul]") {
  Builder b;
  b.act("a", {2, 3, 4}).param("w", {2, 4, 5}).act("y", {2, 3, 5});
  auto id = b.op("Einsum", {"a", "w"}, {"y"}, {{"equation", str("bij, bjk -> bik")}});
  // letters b=2 i=3 j=4 k=5: T = 120; j is summed: 2T = 240 (= 2*2*3*5*4).
  // backward one einsum of the same letters per operand: 480.
  CHECK(b.cost(id).forward_flops.value == 240);
  CHECK(b.cost(id).backward_flops.value == 480);
  CHECK(b.cost(id).known);
}

TEST_CASE("Einsum: ellipsis and implicit output", "[ops][matmul]") {
  Builder b;
  b.act("a", {2, 3, 4}).param("w", {4, 5}).act("y", {2, 3, 5});
  auto id = b.op("Einsum", {"a", "w"}, {"y"}, {{"equation", str("...j,jk")}});
  // ellipsis 2*3 = 6, j=4, k=5: T = 120; implicit output "...k" sums j: 240.
  CHECK(b.cost(id).forward_flops.value == 240);
}

TEST_CASE("A GPT layer matches Megatron's 24bsh^2 + 4bs^2h", "[ops][matmul][attention]") {
  // b=2, s=8, h=16, 2 heads; no biases. Fused attention (QKV projection,
  // scores, softmax, context), output projection, FFN 4h.
  Builder b;
  b.act("x", {2, 8, 16}).param("wqkv", {16, 48}).act("a", {2, 8, 16}).param("wo", {16, 16}).act("o", {2, 8, 16})
      .param("w1", {16, 64}).act("f", {2, 8, 64}).param("w2", {64, 16}).act("y", {2, 8, 16});
  std::vector<graph::OpId> ids{
      b.op("Attention", {"x", "wqkv"}, {"a"}, {{"num_heads", i64(2)}}, "com.microsoft"),
      b.op("MatMul", {"a", "wo"}, {"o"}), b.op("MatMul", {"o", "w1"}, {"f"}), b.op("MatMul", {"f", "w2"}, {"y"})};
  double fwd = 0, bwd = 0;
  for (auto id : ids) {
    fwd += b.cost(id).forward_flops.value;
    bwd += b.cost(id).backward_flops.value;
  }
  // 24*b*s*h^2 = 24*2*8*256 = 98304; 4*b*s^2*h = 4*2*64*16 = 8192;
  // plus the fused softmax 5*b*heads*s^2 = 5*2*2*64 = 1280: 107776.
  CHECK(fwd == 98304 + 8192 + 1280);
  // Every operand is an activation or a weight: backward is 2x forward.
  CHECK(bwd == 2 * fwd);
}

TEST_CASE("LSTM", "[ops][matmul]") {
  Builder b;
  // S=3, B=2, I=4, H=4, one direction, no bias: G*H = 16.
  b.act("x", {3, 2, 4}).param("w", {1, 16, 4}).param("r", {1, 16, 4}).act("y", {3, 1, 2, 4});
  auto id = b.op("LSTM", {"x", "w", "r"}, {"y"}, {{"hidden_size", i64(4)}});
  // steps = 3*2 = 6; per step 2*16*(4+4) = 256 + gates 18*4 = 72: 328 * 6 = 1968.
  // backward per step: dh_prev 2*16*4 = 128 + dX 128 + dW 128 + dR 128 + 2*72 = 656; * 6 = 3936.
  CHECK(b.cost(id).forward_flops.value == 1968);
  CHECK(b.cost(id).backward_flops.value == 3936);
}
