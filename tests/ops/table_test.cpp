// The rule table, lookup, the fallback, gradient propagation and annotate().
#include <catch2/catch.hpp>

#include <set>
#include <tuple>

#include "ops/builder.hpp"

using namespace planner;
using namespace planner::ops::testing;

TEST_CASE("all_rules is sorted, unique and complete", "[ops][table]") {
  auto rules = ops::all_rules();
  REQUIRE(rules.size() > 150);
  for (std::size_t i = 1; i < rules.size(); ++i) {
    INFO(rules[i].domain << ":" << rules[i].type);
    CHECK(std::tie(rules[i - 1].domain, rules[i - 1].type) < std::tie(rules[i].domain, rules[i].type));
  }
  for (const auto& r : rules) {
    INFO(r.domain << ":" << r.type);
    CHECK(r.fn != nullptr);
    CHECK(r.domain != "ai.onnx");
    CHECK(ops::find_rule(r.domain, r.type) == &r);
  }
}

TEST_CASE("find_rule: domains", "[ops][table]") {
  const auto* mm = ops::find_rule("", "MatMul");
  REQUIRE(mm);
  CHECK(ops::find_rule("ai.onnx", "MatMul") == mm);
  // A contrib spelling of a default-domain op finds the ONNX rule.
  CHECK(ops::find_rule("com.microsoft", "Gelu") == ops::find_rule("", "Gelu"));
  CHECK(ops::find_rule("com.microsoft", "LayerNormalization") == ops::find_rule("", "LayerNormalization"));
  // com.microsoft Attention has its own rule, distinct from ONNX Attention.
  const auto* ms_attn = ops::find_rule("com.microsoft", "Attention");
  REQUIRE(ms_attn);
  CHECK(ms_attn->domain == "com.microsoft");
  CHECK(ms_attn != ops::find_rule("", "Attention"));
  // com.microsoft-only kinds are not found in the default domain.
  CHECK(ops::find_rule("", "FastGelu") == nullptr);
  CHECK(ops::find_rule("", "NoSuchOp") == nullptr);
  CHECK(ops::canonical_domain("ai.onnx").empty());
}

TEST_CASE("Every rule survives degenerate ops", "[ops][table]") {
  // No inputs and outputs, then one [2, 3] input and output: no crash, and an
  // op whose rule cannot cost it falls back to known = false, never to NaN.
  for (const auto& r : ops::all_rules()) {
    INFO(r.domain << ":" << r.type);
    Builder b;
    b.act("x", {2, 3}).act("y", {2, 3});
    auto empty = b.op(std::string(r.type), {}, {}, {}, std::string(r.domain));
    auto one = b.op(std::string(r.type), {"x"}, {"y"}, {}, std::string(r.domain));
    for (auto id : {empty, one}) {
      auto c = b.cost(id);
      CHECK(c.forward_flops.value >= 0);
      CHECK(c.backward_flops.value >= 0);
      CHECK(c.forward_bytes_read.value >= 0);
      CHECK(c.backward_bytes_written.value >= 0);
      CHECK(c.forward_flops.value == c.forward_flops.value);  // not NaN
    }
  }
}

TEST_CASE("Unknown op: memory-bound fallback, known = false, counted", "[ops][table]") {
  Builder b;
  b.act("x", {4, 8}).act("y", {4, 8}).act("z", {4, 8});
  b.op("FooBar", {"x"}, {"y"}, {}, "com.example");
  b.op("Frobnicate", {"y"}, {"z"});
  const auto& op = b.g.op(graph::OpId{0});
  auto c = ops::fallback_cost(op, b.g);
  // 1 FLOP per output element = 32; reads x 128, writes y 128;
  // backward 64, reads dY 128 + x 128 = 256, writes dx 128.
  CHECK_COST(c, 32, 64, 128, 128, 256, 128);
  CHECK_FALSE(c.known);

  auto unknown = ops::annotate(b.g);
  CHECK(unknown == std::map<std::string, int>{{"com.example:FooBar", 1}, {"Frobnicate", 1}});
  CHECK(b.g.op(graph::OpId{0}).op_class == graph::OpClass::other);
  CHECK_FALSE(b.g.op(graph::OpId{0}).cost.known);
  CHECK(b.g.op(graph::OpId{0}).cost.forward_flops.value == 32);
  CHECK(graph::totals(b.g).unknown_ops == unknown);
}

TEST_CASE("gradient_mask: only paths from parameters need gradients", "[ops][table][grad]") {
  Builder b;
  // x (graph input) -> Cast -> xc; xc x W -> h; h + bias -> y;
  // mask (graph input) -> Mul by constant -> m (floating, no gradient).
  b.input("x", {4, 16}, DType::f16).act("xc", {4, 16}).param("w", {16, 8}).act("h", {4, 8})
      .param("bias", {8}).act("y", {4, 8}).input("mask", {4, 8}).constant("k", {1}).act("m", {4, 8})
      .act("out", {4, 8});
  auto cast = b.op("Cast", {"x"}, {"xc"}, {{"to", i64(1)}});
  auto mm = b.op("MatMul", {"xc", "w"}, {"h"});
  auto add = b.op("Add", {"h", "bias"}, {"y"});
  auto mul = b.op("Mul", {"mask", "k"}, {"m"});
  auto add2 = b.op("Add", {"y", "m"}, {"out"});

  auto mask = ops::gradient_mask(b.g);
  auto needs = [&](const char* n) { return static_cast<bool>(mask[b.g.find_tensor(n)->value]); };
  CHECK_FALSE(needs("x"));
  CHECK_FALSE(needs("xc"));
  CHECK(needs("w"));
  CHECK(needs("h"));
  CHECK(needs("y"));
  CHECK_FALSE(needs("m"));
  CHECK(needs("out"));

  CHECK(ops::annotate(b.g).empty());
  // Cast of a graph input: nothing backward.
  CHECK(b.g.op(cast).cost.backward_flops.value == 0);
  CHECK(b.g.op(cast).cost.backward_bytes_written.value == 0);
  // MatMul: xc needs no gradient, so only dW: 2*4*8*16 = 1024 (role alone would say 2048).
  CHECK(b.g.op(mm).cost.backward_flops.value == 1024);
  CHECK(b.cost(mm).backward_flops.value == 2048);
  // Add h + bias: 2*32 + 32 (dbias reduction) = 96.
  CHECK(b.g.op(add).cost.backward_flops.value == 96);
  // Mul of a graph input by a constant: nothing backward.
  CHECK(b.g.op(mul).cost.backward_flops.value == 0);
  // y + m: only dy is written (128 bytes), not dm.
  CHECK(b.g.op(add2).cost.backward_bytes_written.value == 128);
}

TEST_CASE("annotate leaves importer-costed control flow alone", "[ops][table]") {
  Builder b;
  b.input("cond", {}, DType::boolean).act("x", {4}).act("y", {4}).act("z", {4});
  auto costed = b.op("If", {"cond"}, {"y"});
  auto unmarked = b.op("Loop", {"", "cond", "x"}, {"z"});
  auto& op = b.g.op(costed);
  op.op_class = graph::OpClass::control_flow;
  op.cost.forward_flops = Flops(123);
  op.cost.backward_flops = Flops(246);

  auto unknown = ops::annotate(b.g);
  CHECK(b.g.op(costed).cost.forward_flops.value == 123);
  CHECK(b.g.op(costed).cost.backward_flops.value == 246);
  CHECK(b.g.op(costed).op_class == graph::OpClass::control_flow);
  // The unmarked Loop: boundary tensors only, known = false, counted.
  CHECK_FALSE(b.g.op(unmarked).cost.known);
  CHECK(b.g.op(unmarked).cost.forward_flops.value == 4);
  CHECK(unknown == std::map<std::string, int>{{"Loop", 1}});
}

TEST_CASE("annotate sets classes and costs from the rules", "[ops][table]") {
  Builder b;
  b.param("table", {50, 8}).input("ids", {2, 3}, DType::i64).act("e", {2, 3, 8}).act("s", {2, 3, 8})
      .act("shape", {3}, DType::i64).act("r", {6, 8});
  auto gather = b.op("Gather", {"table", "ids"}, {"e"});
  auto softmax = b.op("Softmax", {"e"}, {"s"});
  auto shape = b.op("Shape", {"s"}, {"shape"});
  auto reshape = b.op("Reshape", {"s", "shape"}, {"r"});
  CHECK(ops::annotate(b.g).empty());
  CHECK(b.g.op(gather).op_class == graph::OpClass::embedding);
  CHECK(b.g.op(softmax).op_class == graph::OpClass::softmax);
  CHECK(b.g.op(shape).op_class == graph::OpClass::constant);
  CHECK(b.g.op(reshape).op_class == graph::OpClass::data_movement);
  // Softmax over 48 elements: 5 * 48 = 240; the table needs a gradient, so
  // e does too and Softmax has a backward: 480.
  CHECK(b.g.op(softmax).cost.forward_flops.value == 240);
  CHECK(b.g.op(softmax).cost.backward_flops.value == 480);
  CHECK(b.g.op(shape).cost.forward_bytes_read.value == 0);
  auto t = graph::totals(b.g);
  // Gather 0 + Softmax 240 forward; training adds Gather's 48 adds and 480.
  CHECK(t.forward_flops.value == 240);
  CHECK(t.training_flops.value == 240 + 48 + 480);
}
