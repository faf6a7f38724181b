// Memory-bound families: normalisation, softmax, elementwise, integer-only
// ops, views. f32 = 4 bytes.
#include <catch2/catch.hpp>

#include "ops/builder.hpp"

using namespace planner;
using namespace planner::ops::testing;

TEST_CASE("LayerNormalization", "[ops][norm]") {
  Builder b;
  b.act("x", {4, 8}).param("gamma", {8}).param("beta", {8}).act("y", {4, 8});
  auto id = b.op("LayerNormalization", {"x", "gamma", "beta"}, {"y"}, {{"axis", i64(-1)}});
  // 7 FLOPs/elem * 32 = 224 forward, 448 backward.
  // rows = 4: statistics 4 * 8 bytes = 32 (no Mean/InvStdDev outputs).
  // forward reads x 128 + gamma 32 + beta 32 = 192, writes y 128 + stats 32 = 160.
  // backward reads dY 128 + x, gamma, beta 192 + stats 32 = 352;
  //          writes dx 128 + dgamma 32 + dbeta 32 = 192.
  CHECK_COST(b.cost(id), 224, 448, 192, 160, 352, 192);
  CHECK(b.op_class(id) == graph::OpClass::normalization);
}

TEST_CASE("LayerNormalization in a contrib domain uses the ONNX rule", "[ops][norm]") {
  Builder b;
  b.act("x", {4, 8}).param("gamma", {8}).param("beta", {8}).act("y", {4, 8});
  auto id = b.op("LayerNormalization", {"x", "gamma", "beta"}, {"y"}, {}, "com.microsoft");
  CHECK(b.cost(id).forward_flops.value == 224);
  CHECK(b.cost(id).known);
}

TEST_CASE("SkipLayerNormalization and RMS norm", "[ops][norm]") {
  Builder b;
  b.act("x", {4, 8}).act("skip", {4, 8}).param("gamma", {8}).param("beta", {8}).act("y", {4, 8}).act("r", {4, 8});
  auto skip = b.op("SkipLayerNormalization", {"x", "skip", "gamma", "beta"}, {"y"}, {}, "com.microsoft");
  auto rms = b.op("SimplifiedLayerNormalization", {"x", "gamma"}, {"r"}, {}, "com.microsoft");
  // Skip: (7 + 1 skip add) * 32 = 256. RMS: 4 * 32 = 128.
  CHECK(b.cost(skip).forward_flops.value == 256);
  CHECK(b.cost(rms).forward_flops.value == 128);
  // Skip backward writes dx, dskip (both 128), dgamma, dbeta (32 each) = 320.
  CHECK(b.cost(skip).backward_bytes_written.value == 320);
}

TEST_CASE("BatchNormalization costs batch statistics", "[ops][norm]") {
  Builder b;
  b.act("x", {2, 3, 4, 4}).param("s", {3}).param("bias", {3}).constant("m", {3}).constant("v", {3}).act("y", {2, 3, 4, 4});
  auto id = b.op("BatchNormalization", {"x", "s", "bias", "m", "v"}, {"y"});
  // 7 * 96 = 672 forward; stats C=3 rows * 8 = 24 bytes written.
  // Two-pass kernels: forward reads X for the statistics and again to
  // normalise: 2 * 384 + 4 * 12 = 816; writes 384 + 24 = 408.
  CHECK(b.cost(id).forward_flops.value == 672);
  CHECK(b.cost(id).forward_bytes_read.value == 816);
  CHECK(b.cost(id).forward_bytes_written.value == 408);
  // Backward: the reduction pass reads dY 384 and X 384, the elementwise pass
  // dY 384, X, s, bias, m, v 432 and the statistics 24: 1608.
  CHECK(b.cost(id).backward_bytes_read.value == 1608);
}

TEST_CASE("Softmax", "[ops][softmax]") {
  Builder b;
  b.act("x", {2, 4, 8}).act("y", {2, 4, 8});
  auto id = b.op("Softmax", {"x"}, {"y"}, {{"axis", i64(-1)}});
  // 5 FLOPs/elem (max, sub, exp, sum, div) * 64 = 320; backward 640.
  // forward reads 256, writes 256; backward reads dY 256 + Y 256 = 512, writes dX 256.
  CHECK_COST(b.cost(id), 320, 640, 256, 256, 512, 256);
  CHECK(b.op_class(id) == graph::OpClass::softmax);
  // Special functions: one exp per element forward (64), none backward.
  CHECK(b.cost(id).forward_special == 64);
  CHECK(b.cost(id).backward_special == 0);
}

TEST_CASE("LogSoftmax counts a log per row and an exp per element backward", "[ops][softmax]") {
  Builder b;
  b.act("x", {2, 4, 8}).act("y", {2, 4, 8});
  auto id = b.op("LogSoftmax", {"x"}, {"y"}, {{"axis", i64(1)}});
  // Rows along axis 1 (length 4): 64 / 4 = 16 rows. Forward 64 exps + 16
  // logs = 80; backward dy - exp(y) sum(dy): 64 exps.
  CHECK(b.cost(id).forward_special == 80);
  CHECK(b.cost(id).backward_special == 64);
}

TEST_CASE("Special functions of elementwise ops follow the reference kernels", "[ops][elementwise]") {
  Builder b;
  b.act("x", {4, 8}).act("e", {4, 8}).act("f", {4, 8}).act("g", {4, 8}).act("t", {4, 8}).act("r", {4, 8});
  auto exp = b.op("Exp", {"x"}, {"e"});
  auto erf = b.op("Erf", {"x"}, {"f"});
  auto gelu = b.op("Gelu", {"x"}, {"g"});
  auto tanh_gelu = b.op("Gelu", {"x"}, {"t"}, {{"approximate", str("tanh")}});
  auto relu = b.op("Relu", {"x"}, {"r"});
  // 32 elements each. Exp: 32 forward, 0 backward (dy * y). Erf: 32 and 32
  // (its derivative is an exp). Gelu: erf forward 32; erf and exp backward
  // 64. tanh Gelu: 32 and 32. Relu: none.
  CHECK(b.cost(exp).forward_special == 32);
  CHECK(b.cost(exp).backward_special == 0);
  CHECK(b.cost(erf).forward_special == 32);
  CHECK(b.cost(erf).backward_special == 32);
  CHECK(b.cost(gelu).forward_special == 32);
  CHECK(b.cost(gelu).backward_special == 64);
  CHECK(b.cost(tanh_gelu).forward_special == 32);
  CHECK(b.cost(tanh_gelu).backward_special == 32);
  CHECK(b.cost(relu).forward_special == 0);
  CHECK(b.cost(relu).backward_special == 0);
}

TEST_CASE("Elementwise Add with a broadcast bias", "[ops][elementwise]") {
  Builder b;
  b.act("x", {4, 8}).param("bias", {8}).act("y", {4, 8});
  auto id = b.op("Add", {"x", "bias"}, {"y"});
  // forward 1 * numel(Y) = 32; reads x 128 + bias 32 = 160 (bias read at its
  // own size), writes 128.
  // backward 2 * 32 = 64, + 32 to reduce dY over the broadcast axis for dbias: 96;
  // reads dY 128 (Add keeps nothing), writes dx 128 + dbias 32 = 160.
  CHECK_COST(b.cost(id), 32, 96, 160, 128, 128, 160);
  CHECK(b.op_class(id) == graph::OpClass::elementwise);
}

TEST_CASE("Elementwise Mul by a constant keeps its operands", "[ops][elementwise]") {
  Builder b;
  b.act("x", {4, 8}).constant("s", {1}).act("y", {4, 8});
  auto id = b.op("Mul", {"x", "s"}, {"y"});
  // forward 32; backward 64 (constant gets no gradient, so no reduction);
  // reads dY 128 + floating inputs 128 + 4 = 260; writes dx 128.
  CHECK_COST(b.cost(id), 32, 64, 132, 128, 260, 128);
}

TEST_CASE("Gelu and com.microsoft FastGelu", "[ops][elementwise]") {
  Builder b;
  b.act("x", {4, 8}).param("bias", {8}).act("y", {4, 8}).act("z", {4, 8}).act("t", {4, 8});
  auto gelu = b.op("Gelu", {"x"}, {"y"});
  auto fast = b.op("FastGelu", {"x", "bias"}, {"z"}, {}, "com.microsoft");
  auto tanh_gelu = b.op("Gelu", {"x"}, {"t"}, {{"approximate", str("tanh")}});
  // Gelu 5/elem * 32 = 160; FastGelu (9 + 1 bias) * 32 = 320; tanh Gelu 9 * 32 = 288.
  CHECK(b.cost(gelu).forward_flops.value == 160);
  CHECK(b.cost(fast).forward_flops.value == 320);
  CHECK(b.cost(tanh_gelu).forward_flops.value == 288);
}

TEST_CASE("Dropout writes and re-reads its mask", "[ops][elementwise]") {
  Builder b;
  b.act("x", {4, 8}).act("y", {4, 8});
  auto id = b.op("Dropout", {"x"}, {"y"});
  // 2/elem * 32 = 64; writes y 128 + implicit 1-byte mask 32 = 160;
  // backward reads dY 128 + mask 32 = 160, writes dx 128.
  CHECK_COST(b.cost(id), 64, 128, 128, 160, 160, 128);
}

TEST_CASE("Integer-only shape arithmetic has no backward", "[ops][elementwise]") {
  Builder b;
  b.act("s", {3}, DType::i64).constant("one", {1}, DType::i64).act("t", {3}, DType::i64);
  auto id = b.op("Add", {"s", "one"}, {"t"});
  // 3 adds; reads 24 + 8 = 32 bytes, writes 24; nothing backward.
  CHECK_COST(b.cost(id), 3, 0, 32, 24, 0, 0);
}

TEST_CASE("Cast of a float activation to int has no backward", "[ops][elementwise]") {
  Builder b;
  b.act("x", {4, 8}).act("i", {4, 8}, DType::i32);
  auto id = b.op("Cast", {"x"}, {"i"}, {{"to", i64(6)}});
  CHECK_COST(b.cost(id), 0, 0, 128, 128, 0, 0);
}

TEST_CASE("Reductions and ArgMax", "[ops][reduce]") {
  Builder b;
  b.act("x", {4, 8}).act("m", {4, 1}).act("a", {4, 1}, DType::i64);
  auto mean = b.op("ReduceMean", {"x"}, {"m"}, {{"axes", ints({1})}});
  auto arg = b.op("ArgMax", {"x"}, {"a"}, {{"axis", i64(1)}});
  // ReduceMean: 32 adds + 4 divides = 36; backward 72, reads dY 16, writes dX 128.
  CHECK_COST(b.cost(mean), 36, 72, 128, 16, 16, 128);
  // ArgMax: 32 compares; integer output: no backward.
  CHECK_COST(b.cost(arg), 32, 0, 128, 32, 0, 0);
  CHECK(b.op_class(mean) == graph::OpClass::reduction);
}
