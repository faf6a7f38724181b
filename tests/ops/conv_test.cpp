// Convolutions and pools. f32 = 4 bytes.
#include <catch2/catch.hpp>

#include "ops/builder.hpp"

using namespace planner;
using namespace planner::ops::testing;

TEST_CASE("Conv: stride, pad, group and dilation via the output shape", "[ops][conv]") {
  Builder b;
  // X[2, 4, 9, 9], W[8, 4/2, 3, 3] (group 2), stride 2, pad 1, dilation 2:
  // effective kernel 5, Hout = (9 + 2 - 5) / 2 + 1 = 4.
  b.act("x", {2, 4, 9, 9}).param("w", {8, 2, 3, 3}).param("bias", {8}).act("y", {2, 8, 4, 4});
  auto id = b.op("Conv", {"x", "w", "bias"}, {"y"},
                 {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})},
                  {"dilations", ints({2, 2})}, {"group", i64(2)}});
  // forward 2 * N*Cout*Hout*Wout * (Cin/group)*kH*kW = 2 * 2*8*4*4 * 2*3*3
  //         = 2 * 256 * 18 = 9216, + bias N*Cout*Hout*Wout = 256: 9472.
  // backward dX 9216 + dW 9216 + dB 256 = 18688.
  // bytes: X 648*4 = 2592, W 144*4 = 576, B 32, Y 256*4 = 1024.
  // forward reads 2592 + 576 + 32 = 3200, writes 1024.
  // backward reads (dY + W) 1600 + (dY + X) 3616 + dY 1024 = 6240;
  //          writes dX + dW + dB = 2592 + 576 + 32 = 3200.
  CHECK_COST(b.cost(id), 9472, 18688, 3200, 1024, 6240, 3200);
  CHECK(b.op_class(id) == graph::OpClass::conv);
}

TEST_CASE("Conv on a graph input: no dX", "[ops][conv]") {
  Builder b;
  b.input("x", {1, 3, 8, 8}).param("w", {4, 3, 3, 3}).act("y", {1, 4, 6, 6});
  auto id = b.op("Conv", {"x", "w"}, {"y"});
  // 2 * 1*4*6*6 * 3*3*3 = 2 * 144 * 27 = 7776 forward; backward dW only = 7776.
  CHECK(b.cost(id).forward_flops.value == 7776);
  CHECK(b.cost(id).backward_flops.value == 7776);
}

TEST_CASE("ConvTranspose counts per input pixel", "[ops][conv]") {
  Builder b;
  b.act("x", {1, 4, 3, 3}).param("w", {4, 2, 2, 2}).act("y", {1, 2, 6, 6});
  auto id = b.op("ConvTranspose", {"x", "w"}, {"y"}, {{"strides", ints({2, 2})}});
  // 2 * numel(X) * (Cout/group)*kH*kW = 2 * 36 * 8 = 576.
  CHECK(b.cost(id).forward_flops.value == 576);
  CHECK(b.cost(id).backward_flops.value == 1152);
}

TEST_CASE("MaxPool and GlobalAveragePool are memory-bound reductions", "[ops][conv]") {
  Builder b;
  b.act("x", {1, 2, 4, 4}).act("y", {1, 2, 2, 2}).act("g", {1, 2, 1, 1});
  auto mp = b.op("MaxPool", {"x"}, {"y"}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  auto gp = b.op("GlobalAveragePool", {"x"}, {"g"});
  // MaxPool: numel(Y) * K = 8 * 4 = 32 compares; backward 64.
  // bytes: X 128, Y 32; backward reads dY 32 + X 128 + Y 32 = 192, writes dX 128.
  CHECK_COST(b.cost(mp), 32, 64, 128, 32, 192, 128);
  CHECK(b.op_class(mp) == graph::OpClass::reduction);
  // GlobalAveragePool: numel(X) + numel(Y) = 32 + 2 = 34; backward 68,
  // reads dY 8, writes dX 128.
  CHECK_COST(b.cost(gp), 34, 68, 128, 8, 8, 128);
}
